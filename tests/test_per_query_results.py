"""Per-query results without rankings: written where a partitioned engine runs (``eval --per-query-out``), pushed
to the store (``push --per-query``, SQLite and PostgreSQL) with the values the in-process engine gives, and bad
files refused with the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragmetrics import align
from ragmetrics.analysis.per_query import read_per_query, results_id
from ragmetrics.cli import main
from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import Store

SCIFACT = Path(__file__).resolve().parent / "data" / "scifact"
QRELS, RUN = SCIFACT / "qrels.tsv", SCIFACT / "bm25-stem.trec.gz"


def test_pushed_per_query_results_hold_the_in_process_values(tmp_path, store_url, capsys) -> None:
    out = tmp_path / "bm25.parquet"
    argv = ["eval", "--engine", "duckdb", "--dataset", str(QRELS), "--run", str(RUN), "-m", "ndcg@10", "-m", "mrr"]
    assert main([*argv, "--per-query-out", str(out)]) == 0
    assert main(["push", "--dataset", str(QRELS), "--per-query", str(out), "--store", store_url]) == 0
    assert "1 per-query result(s) without rankings" in capsys.readouterr().err

    store = Store(store_url)
    dataset_id = store.list_datasets()["id"].item()
    listing = store.list_results(dataset_id)
    assert listing[["name", "metrics", "n_queries"]].values.tolist() == [["bm25", "ndcg@10,mrr", 300]]
    stored = store.get_results(listing["id"].item())
    expected = align(load_dataset(QRELS), load_run(RUN))
    assert stored.frame["query_id"].tolist() == list(expected.query_ids)  # the dataset's order, not the buckets'
    for metric in ("ndcg@10", "mrr"):
        np.testing.assert_array_equal(stored.value(metric), expected.value(metric))
    assert round(stored.mean("ndcg@10"), 4) == 0.6791

    # history and the leaderboard say they leave such results out (they have no ranking to test or tag)
    assert (
        main(["push", "--dataset", str(QRELS), "--run", str(RUN), "--store", store_url, "--meta", "system=bm25"]) == 0
    )
    capsys.readouterr()
    for command in (["history", "--dataset", dataset_id, "-m", "ndcg@10"], ["leaderboard", "-m", "ndcg@10"]):
        assert main([*command, "--store", store_url]) == 0, command
        assert "1 stored per-query result(s) without their run are not compared here" in capsys.readouterr().err

    # the same file again: one copy (the id is the content's, whatever the row order)
    assert main(["push", "--dataset", str(QRELS), "--per-query", str(out), "--store", store_url]) == 0
    assert len(store.list_results(dataset_id)) == 1
    store.delete_results(listing["id"].item())
    assert store.list_results(dataset_id).empty


def test_the_content_id_does_not_depend_on_row_order(tmp_path) -> None:
    dataset = load_dataset(QRELS)
    ids = dataset.queries_table.column("query_id").to_pylist()
    frame = pd.DataFrame({"query_id": ids, "ndcg@10": np.linspace(0, 1, len(ids))})
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    frame.to_parquet(a)
    frame.sample(frac=1.0, random_state=1).to_parquet(b)
    first, second = (read_per_query(p, dataset, name=p.stem) for p in (a, b))
    assert results_id("0123456789abcdef", first) == results_id("0123456789abcdef", second)
    assert first.frame["query_id"].tolist() == second.frame["query_id"].tolist() == ids


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (pd.DataFrame({"qid": ["1"], "ndcg@10": [1.0]}), "expected a query_id column"),
        (pd.DataFrame({"query_id": ["1"], "quality": [1.0]}), "metric columns named as the registry names them"),
        (pd.DataFrame({"query_id": ["1"], "ndcg@10": ["high"]}), "expected numbers in column ndcg@10"),
        (pd.DataFrame({"query_id": ["1", "1"], "ndcg@10": [1.0, 0.5]}), "expected each query once"),
        (pd.DataFrame({"query_id": ["x1", "x2"], "ndcg@10": [1.0, 0.5]}), "none of its queries is a query of"),
        (pd.DataFrame({"query_id": ["1", "x2"], "ndcg@10": [1.0, 0.5]}), "1 of its 2 queries are not queries of"),
        (pd.DataFrame({"query_id": ["1", "3"], "recall@5": [0.5, 5.0]}), r"values from 0 to 1 .* 5\.0 in row 2"),
        (pd.DataFrame({"query_id": ["1", "3"], "map": [-1.0, 0.5]}), r"finite values of 0 or more .* -1\.0 in row 1"),
        (pd.DataFrame({"query_id": ["1", "3"], "mrr": [np.inf, 0.5]}), r"values from 0 to 1 .* inf in row 1"),
    ],
)
def test_a_bad_results_file_is_refused_with_the_reason(tmp_path, frame: pd.DataFrame, expected: str) -> None:
    path = tmp_path / "results.parquet"
    frame.to_parquet(path)
    with pytest.raises((ParseError, RagMetricsError), match=expected):
        read_per_query(path, load_dataset(QRELS), name="results")


def test_push_needs_a_run_or_results(tmp_path, capsys) -> None:
    store = f"sqlite:///{tmp_path / 's.sqlite'}"
    assert main(["push", "--dataset", str(QRELS), "--store", store]) == 2
    assert "give a --run or a --per-query file to push" in capsys.readouterr().err
