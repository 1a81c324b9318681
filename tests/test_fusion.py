"""Fusion: RRF of the real SciFact runs, parity with ranx, determinism, no mutation."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ragmetrics as rm
from ragmetrics.analysis.fusion import fuse
from ragmetrics.io import load_dataset, load_run

SCIFACT = Path(__file__).parent / "data" / "scifact"


@pytest.fixture(scope="module")
def scifact():
    dataset = load_dataset(SCIFACT / "qrels.tsv")
    bm25 = load_run(SCIFACT / "bm25-stem.trec.gz")
    dense = load_run(SCIFACT / "dense-all-minilm-l6-v2.trec.gz")
    hybrid = load_run(SCIFACT / "hybrid-rrf60.trec.gz")
    return dataset, bm25, dense, hybrid


def test_rrf_of_scifact_bm25_and_dense_reproduces_the_published_hybrid(scifact):
    dataset, bm25, dense, hybrid = scifact
    fused = fuse([bm25, dense], method="rrf", k=60)
    means = rm.evaluate(dataset, [fused, hybrid], ["ndcg@10", "recall@100"]).mean()
    assert round(means.loc[fused.name, "ndcg@10"], 4) == 0.7132
    assert round(means.loc[fused.name, "recall@100"], 4) == round(means.loc["hybrid-rrf60", "recall@100"], 4) == 0.9483


RANX = SCIFACT / "ranx-fusion.json.gz"
"""ranx's fusions of the same inputs, written by ``tests/data/scifact/make_ranx_fusion.py`` (ranx compiles its
fusion with numba on first use: half a minute on a fresh machine)."""


@pytest.fixture(scope="module")
def ranx_fused() -> dict:
    with gzip.open(RANX, "rt", encoding="utf-8") as f:
        return json.load(f)


def _equals_ranx(ours: pd.DataFrame, theirs: dict, tolerance: float) -> None:
    """Every query has as many fused documents as ranx's, the same score sum and sum of squares; the queries the file
    keeps whole have every document's score."""
    counts = ours.groupby("query_id")["score"].agg(["size", "sum"])
    assert set(counts.index) == set(theirs["per_query"])
    squares = (ours["score"] ** 2).groupby(ours["query_id"]).sum()
    for query, (size, total, total_of_squares) in theirs["per_query"].items():
        assert counts.loc[query, "size"] == size, query
        assert abs(counts.loc[query, "sum"] - total) < tolerance * size, query
        assert abs(squares[query] - total_of_squares) < tolerance * size * max(1.0, abs(total_of_squares)), query
    kept = ours[ours["query_id"].isin(list(theirs["scores"]))]
    assert len(kept) == sum(len(d) for d in theirs["scores"].values()) > 0
    diffs = [
        abs(s - theirs["scores"][q][d]) for q, d, s in kept[["query_id", "doc_id", "score"]].itertuples(index=False)
    ]
    assert max(diffs) < tolerance


def test_rrf_equals_ranx_on_the_same_ranking(scifact, ranx_fused):
    """ranx breaks score ties by its own argsort; it was given minus our rank so only the fusion is compared."""
    _, bm25, dense, _ = scifact
    _equals_ranx(fuse([bm25, dense], method="rrf", k=60).frame, ranx_fused["methods"]["rrf"], 1e-12)


@pytest.mark.parametrize("method", ["combsum", "combmnz"])
@pytest.mark.parametrize("norm", ["minmax", "zscore"])
def test_score_fusion_equals_ranx(scifact, ranx_fused, method, norm):
    _, bm25, dense, _ = scifact
    _equals_ranx(fuse([bm25, dense], method=method, norm=norm).frame, ranx_fused["methods"][f"{method}-{norm}"], 1e-9)


def test_the_kept_ranx_output_fuses_every_document_of_the_inputs(scifact, ranx_fused):
    """The file belongs to these runs: each fusion holds every document of the two inputs, query by query."""
    _, bm25, dense, _ = scifact
    union = pd.concat([bm25.frame, dense.frame])[["query_id", "doc_id"]].drop_duplicates()
    sizes = union.groupby("query_id").size()
    for name, fused in ranx_fused["methods"].items():
        assert {q: n for q, (n, *_) in fused["per_query"].items()} == sizes.to_dict(), name
    assert ranx_fused["ranx"]


def test_fusion_is_deterministic_on_ties_and_leaves_inputs_alone():
    a = rm.Run.from_frame(
        pd.DataFrame({"query_id": "q", "doc_id": ["x", "y", "z"], "score": [1.0, 1.0, 0.5]}), name="a"
    )
    b = rm.Run.from_frame(
        pd.DataFrame({"query_id": "q", "doc_id": ["z", "y", "x"], "score": [2.0, 2.0, 2.0]}), name="b"
    )
    before = a.frame.copy(), b.frame.copy()
    first = fuse([a, b], k=1)
    # a ranks y(1) x(2) z(3) (ties by doc_id descending); b ranks z, y, x
    expected = {"y": 1 / 2 + 1 / 3, "x": 1 / 3 + 1 / 4, "z": 1 / 4 + 1 / 2}
    assert dict(zip(first.frame.doc_id, first.frame.score)) == pytest.approx(expected)
    assert first.frame.equals(fuse([a, b], k=1).frame)
    pd.testing.assert_frame_equal(a.frame, before[0])
    pd.testing.assert_frame_equal(b.frame, before[1])


def test_weights_depth_and_bad_parameters():
    a = rm.Run.from_lists({"q": ["x", "y"]}, name="a")
    b = rm.Run.from_lists({"q": ["y", "x"]}, name="b")
    fused = fuse([a, b], k=0, weights=[2.0, 1.0], depth=1)
    assert dict(zip(fused.frame.doc_id, fused.frame.score)) == {"x": 2.0, "y": 1.0}
    with pytest.raises(rm.RagMetricsError, match="at least two runs"):
        fuse([a])
    with pytest.raises(rm.RagMetricsError, match="one weight per run"):
        fuse([a, b], weights=[1.0])
    with pytest.raises(rm.RagMetricsError, match="'method' parameter"):
        fuse([a, b], method="borda")
    assert np.isclose(fuse([a, b], method="combmnz", norm="minmax").frame.score.max(), 2.0)


def test_a_run_weighted_0_is_left_out():
    """Was: CombMNZ counted a run weighted 0 among those that retrieved a document (b = 2 x 0.8 passed a = 1), and
    every method added the documents only that run retrieved, at score 0."""
    first = rm.Run.from_dict({"q1": {"a": 1.0, "b": 0.8, "c": 0.0}}, name="first")
    other = rm.Run.from_dict({"q1": {"b": 5.0, "e": 4.0}}, name="other")
    alone = fuse([first, first], method="combmnz", weights=[1.0, 0.0]).frame
    assert fuse([first, other], weights=[1.0, 0.0]).name == "rrf(first)"  # named after the runs it fused
    for method in ("rrf", "combsum", "combmnz"):
        fused = fuse([first, other], method=method, weights=[1.0, 0.0]).frame
        assert list(fused.doc_id) == ["a", "b", "c"], method  # first's order; e not added
        if method == "combmnz":
            assert dict(zip(fused.doc_id, fused.score)) == dict(zip(alone.doc_id, alone.score)) == {
                "a": 1.0, "b": 0.8, "c": 0.0
            }  # fmt: skip


def test_fused_chunk_runs_keep_their_documents_and_text():
    a = rm.Run.from_frame(
        pd.DataFrame(
            {
                "query_id": "q",
                "doc_id": ["d1#0", "d2#0"],
                "score": [2.0, 1.0],
                "source_doc": ["d1", "d2"],
                "text": ["one", "two"],
            }
        ),
        name="a",
    )
    b = rm.Run.from_frame(
        pd.DataFrame({"query_id": "q", "doc_id": ["d2#0", "d3#1"], "score": [2.0, 1.0], "source_doc": ["d2", "d3"]}),
        name="b",
    )
    fused = fuse([a, b]).frame.set_index("doc_id")
    assert fused["source_doc"].to_dict() == {"d1#0": "d1", "d2#0": "d2", "d3#1": "d3"}
    assert fused.loc["d3#1", "text"] is None or pd.isna(fused.loc["d3#1", "text"])
    assert fused.loc["d2#0", "text"] == "two"
    ds = rm.Dataset.from_frames(pd.DataFrame({"query_id": ["q"], "doc_id": ["d2"], "relevance": [1]}))
    assert rm.evaluate(ds, fuse([a, b]), ["mrr"]).mean().iloc[0, 0] == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"weights": [1, float("nan")]}, "finite numbers of 0 or more. Got nan"),  # was: the run dropped in silence
        ({"weights": [0, 0]}, "one weight above 0 at least"),
        ({"weights": 1.0}, "a sequence of numbers, one per run"),
        ({"weights": ["a", "b"]}, "must hold numbers. Got 'a'"),
        ({"depth": 0}, "'depth' parameter must be an int >= 1 or None. Got 0"),  # was: an empty run, scored 0
        ({"depth": 1.5}, "'depth' parameter must be an int >= 1 or None. Got 1.5"),
        ({"k": True}, "'k' parameter must be an int >= 0. Got True"),
    ],
)
def test_fusion_refuses_parameters_that_mean_nothing(options, message):
    a = rm.Run.from_dict({"q": {"d": 1.0, "e": 0.5}}, name="a")
    b = rm.Run.from_dict({"q": {"e": 1.0}}, name="b")
    with pytest.raises(rm.RagMetricsError, match=re.escape(message)):
        fuse([a, b], **options)
    assert fuse([{"q": {"d": 1.0}}, {"q": {"e": 1.0}}]).frame["doc_id"].tolist() == ["d", "e"]  # as evaluate takes
