"""Diagnosis rules: each fires on its pattern, stays quiet otherwise, and cites its numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.core import missed
from ragmetrics.analysis import diagnosis


def table(
    rows: list[tuple[str, str, int]],
    *,
    rr: float | None = None,
    recall_deep: float | None = None,
    query: str = "a fairly long question about the product",
) -> pd.DataFrame:
    """rows: (category, difficulty, first relevant rank); hit = rank in 1..5."""
    out = pd.DataFrame(
        {
            "query_id": [f"q{i:03d}" for i in range(len(rows))],
            "query": query,
            "category": [r[0] for r in rows],
            "difficulty": [r[1] for r in rows],
            "n_relevant": 1,
            "first_relevant_rank": [r[2] for r in rows],
        }
    )
    out["hit"] = (out["first_relevant_rank"] > 0) & (out["first_relevant_rank"] <= 5)
    out["rr"] = rr if rr is not None else [1.0 / r if r > 0 else 0.0 for r in out["first_relevant_rank"]]
    out["recall_deep"] = recall_deep if recall_deep is not None else (out["first_relevant_rank"] > 0).astype(float)
    return out


def rules(findings):
    return [f.rule for f in findings]


def test_quiet_on_a_good_run() -> None:
    good = table([("x", "easy", 1)] * 20 + [("y", "hard", 1)] * 20)
    assert diagnosis.diagnose("r", good, k=5, deep_k=100) == []


def test_easy_missed_needs_more_than_two() -> None:
    base = [("x", "easy", 1)] * 17
    two = table(base + [("x", "easy", 0)] * 2)
    assert "easy_missed" not in rules(diagnosis.diagnose("r", two, k=5, deep_k=100))
    three = table(base + [("x", "easy", 0), ("x", "easy", 0), ("x", "easy", 40)])
    found = [f for f in diagnosis.diagnose("r", three, k=5, deep_k=100) if f.rule == "easy_missed"]
    assert len(found) == 1
    f = found[0]
    assert "3 of 20 easy queries (15%)" in f.evidence and "2 of them never retrieve" in f.evidence
    assert any("indexed" in a for a in f.advice) and any("chunk size" in a for a in f.advice)
    assert any("embedding model" in a for a in f.advice)
    assert f.queries == ("q017", "q018", "q019")


def test_hard_missed_mentions_hyde_for_short_queries() -> None:
    rows = [("x", "hard", 1)] * 6 + [("x", "hard", 0)] * 4
    f = next(
        f
        for f in diagnosis.diagnose("r", table(rows, query="退款多久到账"), k=5, deep_k=100)
        if f.rule == "hard_missed"
    )
    assert "4 of 10 hard queries (40%)" in f.evidence and "4 of them are short" in f.evidence
    joined = " ".join(f.advice)
    assert "HyDE" in joined and "rerank" in joined and "BM25" in joined
    two = table([("x", "hard", 1)] * 8 + [("x", "hard", 0)] * 2)
    assert "hard_missed" not in rules(diagnosis.diagnose("r", two, k=5, deep_k=100))


def test_near_misses() -> None:
    rows = [("x", "medium", 1)] * 20 + [("x", "medium", 7), ("x", "medium", 9), ("x", "medium", 15), ("x", "medium", 0)]
    f = next(f for f in diagnosis.diagnose("r", table(rows), k=5, deep_k=100) if f.rule == "near_miss")
    assert "3 of 4 missed queries (75%)" in f.evidence and "ranks 6–20" in f.evidence and "median rank 9" in f.evidence
    assert "Hits@20 = 0.958" in f.evidence and "Hits@5 = 0.833" in f.evidence
    assert any("Rerank" in a for a in f.advice) and any("raise K" in a for a in f.advice)
    deep = table([("x", "medium", 1)] * 20 + [("x", "medium", 50)] * 3 + [("x", "medium", 7)])
    assert "near_miss" not in rules(diagnosis.diagnose("r", deep, k=5, deep_k=100))


def test_ranking_not_recall() -> None:
    rows = [("x", "medium", 3)] * 10 + [("x", "medium", 1)] * 2
    f = next(
        f
        for f in diagnosis.diagnose("r", table(rows, recall_deep=0.95), k=5, deep_k=100)
        if f.rule == "ranking_not_recall"
    )
    assert "Recall@100 = 0.950" in f.evidence and "MRR = 0.444" in f.evidence and "17% of queries" in f.evidence
    assert "ranking_not_recall" not in rules(diagnosis.diagnose("r", table(rows, recall_deep=0.5), k=5, deep_k=100))
    # the MRR bar follows the targets in force
    assert "ranking_not_recall" not in rules(
        diagnosis.diagnose("r", table(rows, recall_deep=0.95), k=5, deep_k=100, low_mrr=0.4)
    )


def test_weak_category_is_named() -> None:
    rows = [("good", "medium", 1)] * 20 + [("pricing", "medium", 1)] * 2 + [("pricing", "medium", 30)] * 4
    f = next(f for f in diagnosis.diagnose("r", table(rows), k=5, deep_k=100) if f.rule == "weak_category")
    assert "'pricing'" in f.title
    assert "Hits@5 = 0.333 on 'pricing' (n=6) against 1.000 on the other 20 queries (-0.667)" in f.evidence
    assert "too few to be sure" in f.evidence
    tiny_group = table([("good", "medium", 1)] * 20 + [("rare", "medium", 0)] * 4)
    assert "weak_category" not in rules(diagnosis.diagnose("r", tiny_group, k=5, deep_k=100))


def test_on_real_runs_and_findings_frame(tiny_alignments) -> None:
    ev = tiny_alignments[0]
    found = diagnosis.diagnose(ev.name, missed.query_table(ev, 5), k=5, deep_k=30)
    assert "easy_missed" not in rules(found)
    frame = diagnosis.findings_frame(found)
    assert list(frame.columns) == ["run", "rule", "severity", "title", "evidence", "advice", "advice_ids", "queries"]
    assert len(frame) == len(found)


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("退款多久到账", True),
        ("免费版最多能在几台设备上同步数据？", False),
        ("refund time", True),
        ("how long does a refund take to arrive", False),
    ],
)
def test_is_short(text: str, short: bool) -> None:
    assert diagnosis.is_short(text) is short


@pytest.mark.parametrize("k", [1, 3, 5])
def test_the_library_and_the_dashboard_give_the_same_findings(faq, faq_alignments, k: int) -> None:
    """``ragmetrics.analysis.diagnosis.diagnose_run`` (CLI) and the dashboard's cached route apply the same rules to the same table."""
    fired = 0
    for (run, _), ev in zip(faq.runs, faq_alignments, strict=True):
        deep = min(100, ev.depth)
        from_dashboard = diagnosis.diagnose(
            ev.name, missed.query_table(ev, k, "ndcg@10"), k=k, deep_k=deep, metric_label="ndcg@10"
        )
        from_library = diagnosis.diagnose_run(faq.dataset, run, k=k, metric="nDCG@10")
        assert from_library == from_dashboard
        fired += len(from_library)
    assert fired > 0  # the sample runs do trip rules (hard queries missed, near misses)


def test_rank_histogram(tiny_alignments) -> None:
    from dashboard.core import diagnosis as builders

    tables = {a.name: missed.query_table(a, 5) for a in tiny_alignments}
    fig = builders.rank_histogram_figure(tables, 5)
    assert [t.name for t in fig.data] == ["run-a", "run-b"]
    a = dict(zip(fig.data[0].x, fig.data[0].y))
    assert a["1"] == 4 and a["7"] == 1 and a[">20"] == 1 and a["none"] == 1
    assert sum(fig.data[0].y) == 11  # q12 has no relevant document


def test_advice_looks_at_the_run_and_carries_its_evidence() -> None:
    hard = [("x", "hard", 1)] * 6 + [("x", "hard", 0)] * 4

    def advice(run, rows, **kwargs):
        return {a.id: a for f in diagnosis.diagnose(run, rows, k=5, deep_k=100, **kwargs) for a in f.advice}

    long_queries = table(hard, query="a long question about several things at once")
    dense = advice("dense-e5", long_queries)
    assert "hard_missed.hyde" not in dense  # no short query among the misses: no HyDE
    assert (
        dense["hard_missed.fuse_bm25"].evidence["hard_missed"] == 4 and dense["hard_missed.fuse_bm25"].evidence["dense"]
    )
    assert "hard_missed.fuse_bm25" not in advice("hybrid-rrf60", long_queries)  # already a fusion
    assert "hard_missed.fuse_dense" in advice("bm25-stem", long_queries)
    assert advice("dense-e5", table(hard, query="退款"))["hard_missed.hyde"].evidence["short"] == 4
    ranking = table([("x", "medium", 3)] * 10 + [("x", "medium", 1)] * 2, recall_deep=0.95)
    assert set(advice("bm25", ranking)) == {"ranking_not_recall.rerank"}  # no fusion weights nor e5 prefix
    assert {"ranking_not_recall.fusion_weights"} <= set(advice("rrf", ranking))
    assert {"ranking_not_recall.query_prompt"} <= set(advice("dense-e5", ranking))


def test_most_near_misses_means_more_than_half() -> None:
    half = [("x", "medium", 1)] * 20 + [("x", "medium", 7)] * 3 + [("x", "medium", 0)] * 3
    assert "near_miss" not in rules(diagnosis.diagnose("r", table(half), k=5, deep_k=100))
    more = [("x", "medium", 1)] * 20 + [("x", "medium", 7)] * 4 + [("x", "medium", 0)] * 3
    assert "near_miss" in rules(diagnosis.diagnose("r", table(more), k=5, deep_k=100))
