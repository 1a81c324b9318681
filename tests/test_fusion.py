"""Fusion: RRF of the real SciFact runs, parity with ranx, determinism, no mutation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ragmetrics as rm
from ragmetrics.analysis.fusion import fuse, ranked_frame
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


def _as_ranx(frame: pd.DataFrame, score_column: str):
    from ranx import Run as RanxRun

    out: dict[str, dict[str, float]] = {}
    for qid, doc, score in frame[["query_id", "doc_id", score_column]].itertuples(index=False):
        out.setdefault(qid, {})[doc] = float(score)
    return RanxRun(out)


def test_rrf_equals_ranx_on_the_same_ranking(scifact):
    """ranx breaks score ties by its own argsort; it gets minus our rank so only the fusion is compared."""
    ranx = pytest.importorskip("ranx")
    _, bm25, dense, _ = scifact
    inputs = [ranked_frame(r).assign(neg_rank=lambda f: -f["rank"].astype(float)) for r in (bm25, dense)]
    theirs = ranx.fuse([_as_ranx(f, "neg_rank") for f in inputs], method="rrf", params={"k": 60}).to_dict()
    ours = fuse([bm25, dense], method="rrf", k=60).frame
    assert len(ours) == sum(len(d) for d in theirs.values())
    diffs = [abs(s - theirs[q][d]) for q, d, s in ours[["query_id", "doc_id", "score"]].itertuples(index=False)]
    assert max(diffs) < 1e-12


@pytest.mark.parametrize("method", ["combsum", "combmnz"])
@pytest.mark.parametrize("norm", ["minmax", "zscore"])
def test_score_fusion_equals_ranx(scifact, method, norm):
    ranx = pytest.importorskip("ranx")
    _, bm25, dense, _ = scifact
    runs = [r.frame.drop_duplicates(["query_id", "doc_id"]) for r in (bm25, dense)]
    theirs = ranx.fuse(
        [_as_ranx(f, "score") for f in runs],
        method={"combsum": "sum", "combmnz": "mnz"}[method],
        norm="zmuv" if norm == "zscore" else "min-max",
    ).to_dict()
    ours = fuse([bm25, dense], method=method, norm=norm).frame
    diffs = [abs(s - theirs[q][d]) for q, d, s in ours[["query_id", "doc_id", "score"]].itertuples(index=False)]
    assert max(diffs) < 1e-9


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
