"""Chunkings compared: SciFact's corpus chunked two ways (128 and 512 words), each chunking indexed by the built-in
BM25 and run on SciFact's queries, then compared at document and span level by the library
(:mod:`ragmetrics.analysis.chunkings`) and in one Compare view of the dashboard."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from dashboard.core import cost
from ragmetrics.analysis.chunkings import chunk_spans_table, compare_chunkings, gold_evidence, level_metrics
from ragmetrics.cli import main
from ragmetrics.engine import align
from ragmetrics.engine.evidence import evaluate_evidence, spans_from_documents
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_run
from ragmetrics.store.database import Store, dataset_id, default_url
from scripts import make_chunk_runs
from scripts.make_chunk_runs import SCIFACT
from tests.dashboard.apptest import no_problems, open_page


@pytest.fixture(scope="module")
def scifact() -> Dataset:
    return make_chunk_runs.scifact()


@pytest.fixture(scope="module")
def chunked(scifact: Dataset) -> tuple[list[Run], list[make_chunk_runs.Place]]:
    """One BM25 run per chunking (top 100 chunks, each row with its chunk's text and document), and where every
    chunk of both chunkings lies in its document: as docs/conventions.md's example makes them."""
    return make_chunk_runs.chunk_runs(scifact)


def test_two_chunkings_compared_at_document_and_span_level(scifact, chunked) -> None:
    runs, places = chunked
    found = compare_chunkings(scifact, runs, k=10, budget=512, chunk_spans=chunk_spans_table(places))
    table = found.table
    expected = level_metrics(10, 512)
    assert set(table["level"]) == {"document", "span"}
    for level, metrics in expected.items():
        assert set(table.loc[table["level"] == level, "metric"]) == set(metrics)
        assert set(table.loc[table["level"] == level, "run"]) == {r.name for r in runs}

    # comparable at document level: the same queries, read against the same qrels, every query in both
    document = table[table["level"] == "document"]
    assert set(document["n"]) == {len(scifact)}
    one, two = (align(scifact, run) for run in runs)
    assert np.array_equal(one.query_ids, two.query_ids) and one.dataset is two.dataset
    assert dict(document[document["metric"] == "ndcg@10"].set_index("run")["mean"]) == pytest.approx(
        {run.name: align(scifact, run).mean("ndcg@10") for run in runs}
    )

    # bigger chunks cost more tokens in the top 10; the budget rows are read at equal cost
    tokens = found.tokens.set_index("run")["mean_tokens"]
    assert tokens["chunks-512"] > tokens["chunks-128"]

    # SciFact's qrels are at document level: the evidence is each relevant document as a whole
    assert found.evidence == "documents"
    assert found.deciding_metric == "evidence_recall@512tok"
    decided = table[table["metric"] == found.deciding_metric].set_index("run")
    assert found.winner == decided["mean"].idxmax()
    assert found.summary.startswith(f"At 512 tokens of context, {found.winner} has the highest evidence_recall@512tok")
    other = next(r.name for r in runs if r.name != found.baseline)
    assert decided.at[other, "verdict"] in {"better", "worse", "not significant"}
    assert found.family_size == len(table) - table["metric"].nunique()  # every row but the baseline's
    # beside the corrected p-value, the interval corrected the same way (default test t: it leaves 0 exactly where
    # the corrected p-value is below alpha)
    compared = table[table["run"] != found.baseline]
    clear = (compared["ci_low_adjusted"] > 0) | (compared["ci_high_adjusted"] < 0)
    assert (clear == (compared["p_value_corrected"] < 0.05)).all()
    assert "uncorrected" not in found.summary


def test_whole_document_evidence_is_document_recall_with_one_chunk_per_document(scifact) -> None:
    """With each relevant document as the span and a run of whole documents, evidence recall is recall."""
    alignment = align(scifact, load_run(SCIFACT.parents[1] / "tests" / "data" / "scifact" / "bm25-stem.trec.gz"))
    result = evaluate_evidence(alignment, spans_from_documents(scifact), ["evidence_recall@10"])
    evidence = result.values["evidence_recall@10"]
    with_spans = ~np.isnan(evidence)
    assert with_spans.sum() == len(scifact)
    np.testing.assert_allclose(evidence[with_spans], np.asarray(alignment.value("recall@10"))[with_spans])


def test_the_gold_evidence_is_chosen_in_order_and_fewer_than_two_runs_is_an_error(scifact, chunked) -> None:
    runs, _ = chunked
    given = spans_from_documents(scifact).slice(0, 5)
    assert gold_evidence(scifact, given) == (given, "given")
    assert gold_evidence(scifact)[1] == "documents"
    with pytest.raises(RagMetricsError, match="at least two runs"):
        compare_chunkings(scifact, runs[:1])


def test_compare_shows_the_chunkings_in_one_view(scifact, chunked, tmp_path, monkeypatch) -> None:
    # a store of its own: a dataset added to the session's store would become other tests' default
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    runs, _ = chunked
    store = Store(default_url())
    ds = store.put_dataset(scifact, ident=dataset_id(scifact))
    ids = [store.put_run(run, ds) for run in runs]
    at = open_page("compare", {"ds": ds, "runs": ",".join(ids), "m": "recall", "k": "10", "tb": "1024"})
    no_problems(at)
    assert any(e.label.startswith("Chunked runs compared: 2 runs whose rows are chunks") for e in at.expander)
    assert at.selectbox(key="compare.budget").value == 1024
    verdicts = [m.value for m in at.markdown if "At 1024 tokens of context" in m.value]
    assert len(verdicts) == 1
    shown = [d.value for d in at.dataframe if "level" in d.value.columns]
    assert len(shown) == 1
    frame = shown[0]
    assert set(frame["level"]) == {"document", "span"} and set(frame["run"]) == {r.name for r in runs}
    assert "recall@1024tok" in set(frame["metric"]) and "evidence_recall@1024tok" in set(frame["metric"])
    assert list(frame.columns[:4]) == ["level", "metric", "run", "tokens in top 10"]
    assert list(frame.columns) == [*cost.CHUNKING_COLUMNS[:3], "tokens in top 10", *cost.CHUNKING_COLUMNS[3:]]
    # the caption names the interval the table shows: adjusted as its p-values are (was: "its 95% interval")
    caption = next(c.value.replace("\\", "") for c in at.caption if c.value.startswith("Document level"))
    assert "with its Holm-adjusted CI (Student's t at each comparison's level)" in caption
    assert "95% interval" not in caption


def test_the_command_line_compares_chunkings_from_files(tmp_path, chunked) -> None:
    """``ragmetrics evidence --baseline``: the same comparison from run files with their chunk texts and documents,
    and a chunk spans file; the table names both levels and the last line says which chunking wins."""
    runs, places = chunked
    paths = [str(path) for path in make_chunk_runs.write(runs, places, tmp_path)]
    spans = tmp_path / "chunk-spans.tsv"
    argv = ["evidence", "--dataset", str(SCIFACT / "qrels.tsv"), "--queries", str(SCIFACT / "queries.jsonl"),
            "--corpus", str(SCIFACT / "corpus.jsonl.gz"), "--baseline", paths[0], "--run", paths[1],
            "--chunk-spans", str(spans), "--tokenizer", "whitespace"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    print(out.getvalue())
    assert lines[0].split()[:4] == ["level", "metric", "run", "n"]
    rows = [line.split() for line in lines[1:15]]
    assert {r[0] for r in rows} == {"document", "span"} and {r[2] for r in rows} == {"chunks-128", "chunks-512"}
    assert lines[-1].startswith("At 512 tokens of context, ")
    assert "evidence: the relevant documents as a whole" in lines[-2]
    # beside each corrected p-value, the interval corrected the same way, so the two agree (the t-test, Holm): it
    # used to be the uncorrected bootstrap's, when that was the uncorrected interval (recall@10: [+0.0046, +0.0384] beside "not significant")
    assert "Holm-adjusted CI" in lines[0]
    compared = [line for line in lines[1:15] if "baseline" not in line]
    for line in compared:
        low, high = map(float, re.search(r"\[([-+][\d.]+), ([-+][\d.]+)\]", line).groups())
        significant = line.rstrip().endswith(("better", "worse"))
        assert (low > 0 or high < 0) == significant, line

    out = io.StringIO()
    assert main([*argv, "--format", "json", "--budget", "256"], out, err) == 0
    data = json.loads(out.getvalue())
    assert data["budget_tokens"] == 256 and data["baseline"] == "chunks-128" and len(data["comparisons"]) == 14
    assert data["summary"].startswith("At 256 tokens of context")
