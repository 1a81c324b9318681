"""Values the dashboard shows and exports are the CLI's, float64 to 1e-9: its CSV downloads read back against
``ragmetrics eval --format json --per-query`` and ``--format csv`` on the same files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ragmetrics
from dashboard.core import breakdown, compare_queries, overview
from ragmetrics.cli import main
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.export import to_safe_csv

SCIFACT = Path(__file__).resolve().parents[1] / "data" / "scifact"
QRELS, QUERIES = SCIFACT / "qrels.tsv", SCIFACT / "queries.jsonl"
RUNS = (SCIFACT / "bm25-stem.trec.gz", SCIFACT / "hybrid-rrf60.trec.gz")
METRICS = ("recall@10", "precision@10", "ndcg@10", "map@10", "mrr@10", "hits@10", "f1@10")


def cli(*argv: object) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main([str(a) for a in argv], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def downloaded(frame: pd.DataFrame) -> pd.DataFrame:
    """What the page's Download CSV button gives (``dashboard.ui.layout.show_table``), read back."""
    return pd.read_csv(io.BytesIO(to_safe_csv(frame)), encoding="utf-8-sig", dtype={"query_id": str})


@pytest.fixture(scope="module")
def cli_values() -> dict:
    args = ["eval", "--dataset", QRELS, "--queries", QUERIES, *(a for r in RUNS for a in ("--run", r))]
    return json.loads(cli(*args, *(a for m in METRICS for a in ("-m", m)), "--per-query", "--format", "json"))["runs"]


@pytest.fixture(scope="module")
def alignments() -> list[ragmetrics.Alignment]:
    dataset = load_dataset(QRELS, queries=QUERIES)
    return [ragmetrics.align(dataset, load_run(r)) for r in RUNS]


def test_overview_download_equals_the_cli_means(alignments, cli_values) -> None:
    table = downloaded(overview.overview_frame(alignments, 10))
    for row in table.to_dict("records"):
        for metric in METRICS:
            assert row[metric] == pytest.approx(cli_values[row["run"]]["mean"][metric], abs=1e-9)
            assert abs(row[metric] - cli_values[row["run"]]["mean"][metric]) <= 1e-12  # float64, not float32


def test_curve_download_equals_the_cli_at_each_k(alignments, cli_values) -> None:
    curves = downloaded(overview.curve_frame(alignments, ["recall", "ndcg", "precision"], 10))
    for metric in ("recall", "ndcg", "precision"):
        for run in cli_values:
            value = curves[(curves["run"] == run) & (curves["metric"] == metric) & (curves["k"] == 10)]["value"]
            assert abs(float(value.iloc[0]) - cli_values[run]["mean"][f"{metric}@10"]) <= 1e-12


def test_per_query_downloads_equal_the_cli_per_query(alignments, cli_values) -> None:
    base, run = alignments
    for metric in ("ndcg@10", "recall@10", "mrr@10"):
        table = downloaded(compare_queries.per_query_frame(base, run, metric)).set_index("query_id")
        for name, column in ((base.name, "baseline"), (run.name, "run")):
            expected = pd.Series({q: v[metric] for q, v in cli_values[name]["per_query"].items()})
            got = table[column].reindex(expected.index)
            assert np.abs(got.to_numpy() - expected.to_numpy()).max() <= 1e-12, (metric, name)


def test_breakdown_download_is_the_mean_of_the_cli_per_query_values() -> None:
    folder = Path(__file__).resolve().parents[2] / "sample_runs" / "product_faq_zh"
    eval_set, run_file = folder / "eval_set.json", folder / "runs" / "bm25.jsonl"
    dataset = load_dataset(eval_set)
    table = downloaded(breakdown.breakdown_frame([ragmetrics.align(dataset, load_run(run_file))], "ndcg@10"))
    per_query = json.loads(cli("eval", "--dataset", eval_set, "--run", run_file, "-m", "ndcg@10", "--per-query",
                               "--format", "json"))["runs"]["bm25"]["per_query"]  # fmt: skip
    groups = dataset.queries.set_index("query_id")["category"]
    assert len(table) >= 3
    for row in table.to_dict("records"):
        inside = [v["ndcg@10"] for q, v in per_query.items() if groups.get(q) == row["group"]]
        assert abs(row["mean"] - float(np.mean(inside))) <= 1e-12, row["group"]


def test_the_cli_csv_is_float64_exact(cli_values) -> None:
    text = cli("eval", "--dataset", QRELS, "--run", RUNS[0], "-m", "ndcg@10", "--per-query", "--format", "csv")
    table = pd.read_csv(io.StringIO(text), dtype={"query_id": str})
    per_query = table[table["query_id"] != "all"].set_index("query_id")["ndcg@10"]
    expected = pd.Series({q: v["ndcg@10"] for q, v in cli_values[load_run(RUNS[0]).name]["per_query"].items()})
    assert (per_query.reindex(expected.index).to_numpy() == expected.to_numpy()).all()  # repr round-trips
