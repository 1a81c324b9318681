"""Missed queries and one query's detail, from the alignment (its ranking and its rows), against hand-made answers."""

from __future__ import annotations

import numpy as np
import pandas as pd

import ragmetrics
from dashboard.core import missed
from dashboard.core.queries import query_info
from ragmetrics.analysis.diagnosis import NEAR_MISS_LIMIT

from .conftest import RANKS_A


def test_missed_frame_tiny(tiny_alignments) -> None:
    frame = missed.missed_frame(tiny_alignments[0], 5)
    assert list(frame.columns) == missed.MISSED_COLUMNS
    expected = {q for q, r in RANKS_A.items() if r == 0 or r > 5}
    assert set(frame["query_id"]) == {f"q{i:02d}" for i in expected}
    by_id = frame.set_index("query_id")
    assert by_id.loc["q02", "status"] == "near miss" and by_id.loc["q02", "first_relevant_rank"] == 7
    assert by_id.loc["q04", "status"] == "not retrieved" and pd.isna(by_id.loc["q04", "first_relevant_rank"])
    assert by_id.loc["q08", "status"] == "deeper"
    assert by_id.loc["q02", "relevant_docs"] == "d2 (2), e2 (1)"
    assert by_id.loc["q02", "top_k"].split(", ") == [f"x2_{j}" for j in range(5)]
    # run-a carries text; only the rank-1 chunk mentions its keyword
    assert by_id.loc["q02", "keywords_found"] == "1/2"
    assert by_id.loc["q02", "keywords_missing"] == "common"
    assert "q12" not in by_id.index  # no relevant document: cannot be missed
    # run-b has no text: keyword columns empty
    assert set(missed.missed_frame(tiny_alignments[1], 1)["keywords_found"]) == {""}


def test_missed_frame_faq_agrees_with_hits(faq_alignments) -> None:
    for k in (1, 5, 10):
        alignment = faq_alignments[0]
        frame = missed.missed_frame(alignment, k)
        result = ragmetrics.evaluate(alignment.dataset, [alignment.run], [f"hits@{k}"], warn=False)
        hits = result.per_query(alignment.name)[f"hits@{k}"]
        assert set(frame["query_id"]) == set(hits[hits == 0].index)
        assert all(len(top.split(", ")) == k for top in frame["top_k"])
        assert not any("✓" in top for top in frame["top_k"])
        assert set(frame["status"]) <= {"near miss", "deeper", "not retrieved"}
        assert all(kw == "" or "/" in kw for kw in frame["keywords_found"])


def test_miss_status() -> None:
    assert missed.NEAR_MISS_LIMIT is NEAR_MISS_LIMIT == 20  # the library's limit, not a copy
    assert missed.miss_status(0, 5) == "not retrieved"
    assert missed.miss_status(5, 5) == "hit"
    assert missed.miss_status(6, 5) == "near miss"
    assert missed.miss_status(20, 5) == "near miss"
    assert missed.miss_status(21, 5) == "deeper"
    assert missed.miss_status(40, 20) == "near miss"


def test_filter_queries(tiny_alignments) -> None:
    frame = missed.missed_frame(tiny_alignments[0], 5)
    assert set(missed.filter_queries(frame, category="b")["query_id"]) == {"q10"}
    assert set(missed.filter_queries(frame, difficulty="easy")["query_id"]) == {"q05"}
    assert set(missed.filter_queries(frame, search="QUESTION 8")["query_id"]) == {"q08"}
    assert set(missed.filter_queries(frame, search="q04")["query_id"]) == {"q04"}
    assert len(missed.filter_queries(frame)) == len(frame)


def test_query_detail_frame_merges_chunks(faq, faq_alignments) -> None:
    alignment = faq_alignments[0]
    qid = "q009"
    detail = missed.query_detail_frame(alignment, qid, 20)
    assert list(detail.columns) == [
        "rank",
        "doc_id",
        "judgment",
        "relevant",
        "score",
        "chunks",
        "chunk_id",
        "title",
        "text",
    ]
    assert detail["rank"].tolist() == list(range(1, len(detail) + 1))
    assert detail["doc_id"].is_unique  # documents, not chunks
    assert all(c.startswith(d) for c, d in zip(detail["chunk_id"], detail["doc_id"]))
    qrels = faq.dataset.qrels[faq.dataset.qrels["query_id"] == qid].set_index("doc_id")["relevance"]
    for doc, relevant, judgment in zip(detail["doc_id"], detail["relevant"], detail["judgment"]):
        assert relevant == (qrels.get(doc, 0) >= 1)
        assert judgment == (str(qrels[doc]) if doc in qrels.index else "unjudged")
    first = int(alignment.first_rel_rank[list(alignment.query_ids).index(qid)])
    assert detail["relevant"].to_numpy().argmax() + 1 == first
    assert (np.diff(detail["score"].to_numpy()) <= 0).all()
    # the rows are the alignment's own: the run's chunks, every chunk at its document's rank
    rows = alignment.rows()
    part = rows[rows["query_id"] == qid]
    assert detail["chunks"].sum() == int((part["rank"] <= 20).sum())
    assert missed.query_detail_frame(alignment, "nope").empty


def test_relevant_docs_and_query_metrics(faq_alignments) -> None:
    qid = "q009"
    relevant = missed.relevant_docs_frame(faq_alignments, qid)
    assert list(relevant.columns)[:2] == ["doc_id", "relevance"]
    assert [c for c in relevant.columns if c in {"bm25", "dense-e5", "hybrid-rrf"}] == [
        "bm25",
        "dense-e5",
        "hybrid-rrf",
    ]
    per_run = missed.query_metrics_frame(faq_alignments, qid, 5).set_index("run")
    for run in ("bm25", "dense-e5", "hybrid-rrf"):
        ranks = relevant[run].dropna()
        best = int(ranks.min()) if len(ranks) else None
        assert per_run.loc[run, "first_relevant_rank"] == best
    assert (
        per_run.loc["bm25", "mrr@5"] == faq_alignments[0].value("mrr@5")[list(faq_alignments[0].query_ids).index(qid)]
    )
    assert query_info(faq_alignments[0].dataset, qid)["category"] == "factual"
    assert query_info(faq_alignments[0].dataset, "nope") == {}


def test_with_text_for_missing_keeps_whole_numbers() -> None:
    frame = pd.DataFrame({"run": ["a", "b"], "rank": [46.0, None]})
    shown = missed.with_text_for_missing(frame, ["rank"], "not retrieved")
    assert shown["rank"].tolist() == ["46", "not retrieved"]


def test_style_relevant_tints_relevant_rows(faq_alignments) -> None:
    detail = missed.query_detail_frame(faq_alignments[0], "q009", 20)
    assert detail["relevant"].sum() == 1
    assert "#e6f4ea" in missed.style_relevant(detail).to_html()
    assert "#e6f4ea" not in missed.style_relevant(detail.assign(relevant=False)).to_html()


def test_a_run_named_like_a_column_does_not_overwrite_the_grades(faq_alignments) -> None:
    renamed = [ragmetrics.align(a.dataset, a.run.with_name("relevance")) for a in faq_alignments[:1]]
    relevant = missed.relevant_docs_frame(renamed, "q009")
    truth = missed.relevant_docs_frame(faq_alignments[:1], "q009")
    assert relevant["relevance"].tolist() == truth["relevance"].tolist()
    assert relevant.attrs["run_columns"] == ["relevance (run)"]
    assert relevant["relevance (run)"].tolist() == truth[faq_alignments[0].name].tolist()


def test_the_filters_offer_no_group_of_unjudged_queries_only():
    """Was: Missed queries' Category filter offered "negative" (a built set's queries with no judgment), whose
    queries can never be missed: always an empty table."""
    import pyarrow as pa

    from dashboard.core.queries import group_values, judged_group_values

    queries = pa.table({"query_id": ["q1", "q2", "q3"], "category": ["factual", "negative", "factual"]})
    qrels = pa.table({"query_id": ["q1", "q3"], "doc_id": ["d1", "d3"], "relevance": [1, 1]})
    dataset = ragmetrics.Dataset.from_tables(qrels, queries)
    assert group_values(dataset, "category") == ["factual", "negative"]
    assert judged_group_values(dataset, "category") == ["factual"]
