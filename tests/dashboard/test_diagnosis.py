"""Diagnosis rules: each fires on its pattern, stays quiet otherwise, and cites its numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.core import missed
from ragmetrics.analysis import diagnosis
from ragmetrics.io import load_run
from tests.dashboard.apptest import no_problems, open_page


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
    assert "3 of 20 easy queries (15%)" in f.evidence and "most of them (2 of 3) never retrieve" in f.evidence
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
    assert "4 of 10 hard queries (40%)" in f.evidence and "all 4 of them are short" in f.evidence
    joined = " ".join(f.advice)
    assert "HyDE" in joined and "rerank" in joined and "BM25" in joined
    two = table([("x", "hard", 1)] * 8 + [("x", "hard", 0)] * 2)
    assert "hard_missed" not in rules(diagnosis.diagnose("r", two, k=5, deep_k=100))


def test_near_misses() -> None:
    rows = [("x", "medium", 1)] * 20 + [("x", "medium", 7), ("x", "medium", 9), ("x", "medium", 15), ("x", "medium", 0)]
    f = next(f for f in diagnosis.diagnose("r", table(rows), k=5, deep_k=100) if f.rule == "near_miss")
    assert "most missed queries (3 of 4, 75%)" in f.evidence and "ranks 6–20" in f.evidence
    assert "median rank 9" in f.evidence and "4 of 24 queries (17%) are missed at K=5" in f.evidence
    assert f.title == "Most of the 4 misses are near misses (ranks 6–20)" and f.severity == "warning"
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
    assert "Recall@100 = 0.950" in f.evidence and "MRR = 0.444" in f.evidence
    assert "only 2 of 12 queries (17%) have one at rank 1" in f.evidence
    # above half at rank 1 (with a low MRR still): said without "only" (was: "but only most queries ...")
    most = [("x", "medium", 20)] * 5 + [("x", "medium", 1)] * 7  # MRR 0.604
    found = diagnosis.diagnose("r", table(most, recall_deep=0.95), k=5, deep_k=100)
    said = next(f.evidence for f in found if f.rule == "ranking_not_recall")
    assert "are retrieved; most queries (7 of 12, 58%) have one at rank 1" in said and "only" not in said
    # the reranker's evidence names the queries it would move, not those already at rank 1 (was: "ranked low
    # (most queries ... have one at rank 1)")
    rerank = next(f for f in found if f.rule == "ranking_not_recall").to_dict()["advice"][0]["because"]
    assert (
        "ranked low where it counts: 5 of 12 queries (42%) have their first relevant document below rank 1 " in rerank
    )
    assert "(median rank 20), 7 at rank 1. A reranker" in rerank
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
    # ticks at powers of ten (was 100 9 8 7 6 5 ...), and a bar of one query stands clear of the axis's foot
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.dtick == 1
    assert fig.layout.yaxis.range[0] == pytest.approx(np.log10(0.5)) and 10 ** fig.layout.yaxis.range[1] >= 8


HARD = [("x", "hard", 1)] * 6 + [("x", "hard", 0)] * 2 + [("x", "hard", 30)] * 2
RANKING = [("x", "medium", 3)] * 10 + [("x", "medium", 1)] * 2


def advice(run, rows, **kwargs) -> dict[str, diagnosis.Advice]:
    return {a.id: a for f in diagnosis.diagnose(run, rows, k=5, deep_k=100, **kwargs) for a in f.advice}


def test_advice_looks_at_the_run_and_carries_its_evidence() -> None:
    long_queries = table(HARD, query="a long question about several things at once")
    dense = advice("dense-e5", long_queries)
    assert "hard_missed.hyde" not in dense  # no short query among the misses: no HyDE
    fuse = dense["hard_missed.fuse_bm25"]
    assert fuse.evidence["hard_missed"] == 4 and fuse.evidence["kind"] == "dense" and fuse.evidence["family"] == "e5"
    assert fuse.because == (
        "4 of 10 hard queries (40%) are missed at K=5, and the run is dense (e5), from its name 'dense-e5': a dense "
        "retriever blurs exact terms (names, codes, numbers) that BM25 matches."
    )
    rerank = dense["hard_missed.rerank"]
    assert "half of them (2 of 4) have a relevant document deeper in the run" in rerank.because
    assert set(advice("dense-e5", table(HARD, query="退款"))) >= {"hard_missed.hyde", "hard_missed.fuse_bm25"}
    assert advice("dense-e5", table(HARD, query="退款"))["hard_missed.hyde"].evidence["short"] == 4


@pytest.mark.parametrize(
    ("run", "given", "refused"),
    [
        ("hybrid-rrf60", {"hard_missed.rerank"}, {"hard_missed.fuse_bm25", "hard_missed.fuse_dense"}),  # fused
        ("bm25-stem", {"hard_missed.fuse_dense", "hard_missed.expand"}, {"hard_missed.fuse_bm25", "hard_missed.hyde"}),
        ("dense-minilm", {"hard_missed.fuse_bm25", "hard_missed.hyde"}, {"hard_missed.fuse_dense"}),
        ("r", {"hard_missed.fuse_other", "hard_missed.hyde"}, {"hard_missed.fuse_bm25", "hard_missed.fuse_dense"}),
    ],
)
def test_hard_missed_advice_fits_the_run(run, given, refused) -> None:
    found = advice(run, table(HARD, query="refund time"))
    assert given <= set(found) and not refused & set(found), sorted(found)
    assert all(a.because and any(c.isdigit() for c in a.because) for a in found.values())  # numbers, in words


def test_a_run_of_unknown_kind_is_advised_conditionally() -> None:
    found = advice("r", table(HARD))
    assert "If this run uses one kind of retriever only" in found["hard_missed.fuse_other"]
    assert "the run is of unknown kind" in found["hard_missed.fuse_other"].because
    easy = table([("x", "easy", 1)] * 17 + [("x", "easy", 0)] * 3)
    assert advice("r", easy)["easy_missed.embedding_coverage"].startswith("If this run is dense: ")
    assert advice("dense-e5", easy)["easy_missed.embedding_coverage"].startswith("Check that the embedding model")
    assert "easy_missed.embedding_coverage" not in advice("bm25", easy)
    assert "easy_missed.embedding_coverage" not in advice("hybrid-rrf", easy)


@pytest.mark.parametrize(
    ("run", "extra"),
    [
        ("bm25", {"ranking_not_recall.bm25_params"}),  # k1 and b for BM25 only
        ("splade-v3", set()),  # lexical, not BM25: no BM25 parameters
        ("rrf", {"ranking_not_recall.fusion_weights"}),
        ("dense-e5", {"ranking_not_recall.query_prompt"}),
        ("dense-all-minilm-l6-v2", set()),  # MiniLM takes no query prefix: none advised
        ("dense-mystery", {"ranking_not_recall.query_prompt"}),  # a dense run of unknown family: asked to check
        ("r", set()),  # unknown kind: no kind-specific advice
    ],
)
def test_ranking_advice_fits_the_run_and_its_model_family(run, extra) -> None:
    found = advice(run, table(RANKING, recall_deep=0.95))
    assert set(found) == {"ranking_not_recall.rerank"} | extra
    if run == "dense-e5":
        assert "e5's query prefix 'query: ' and passage prefix 'passage: '" in found["ranking_not_recall.query_prompt"]
    if run == "dense-mystery":
        assert "its model family is not known" in found["ranking_not_recall.query_prompt"].because


def test_the_run_is_read_from_its_tags_then_its_name_then_its_scores() -> None:
    read = diagnosis.RunTraits.read
    assert read("bm25-stem").words() == "lexical (BM25), from its name 'bm25-stem'"
    assert read("my-run", {"fusion": "rrf"}).words() == "fused, from its tag fusion=rrf"
    assert read("my-run", {"retriever.kind": "bm25", "model": "bm25s"}).family == "BM25"
    tagged = read("bm25-like-name", {"model": "intfloat/multilingual-e5-base"})
    assert (tagged.kind, tagged.family, tagged.source) == ("dense", "e5", "its tag model=intfloat/multilingual-e5-base")
    assert read("run", {"retriever.kind": "dense"}).kind == "dense"
    assert read("x + BM25 (RRF)").fused  # the name "Try hybrid" gives
    rrf = np.array([2 / 61] * 40 + [1 / 61 + 1 / 62] * 30 + [1 / 61 + 1 / 64] * 30)
    fused = read("my-run", top_scores=rrf, scores_in_unit=True)
    assert fused.fused and "the top score of 40 of 100 queries is 2/61" in fused.source
    assert not read("my-run", top_scores=rrf, scores_in_unit=False).fused  # a score outside (0, 1]: not RRF
    cosine = np.random.default_rng(0).uniform(0.3, 0.9, 100)
    unknown = read("my-run", top_scores=cosine, scores_in_unit=True)
    assert unknown.kind == "unknown" and "tag it retriever.kind=dense" in unknown.words()


def test_run_traits_read_a_fusion_from_its_scores_when_its_name_says_nothing() -> None:
    bm25, hybrid = (load_run(f"tests/data/scifact/{name}.trec.gz") for name in ("bm25-stem", "hybrid-rrf60"))
    assert diagnosis.run_traits(bm25).family == "BM25"
    traits = diagnosis.run_traits(hybrid.with_name("my-run"))
    assert traits.fused and "as reciprocal rank fusion of 2 runs with k = 60 gives" in traits.source
    assert diagnosis.run_traits(bm25.with_name("my-run")).kind == "unknown"  # BM25's scores are not fusion's
    assert diagnosis.run_traits(hybrid.with_name("my-run"), {"model": "e5-base"}).fused  # a fusion of an e5 run


@pytest.mark.parametrize(
    ("part", "whole", "word", "words"),
    [
        (0, 12, "none", "none of the 12 queries"),
        (12, 12, "all", "all 12 queries"),
        (7, 12, "most", "most queries (7 of 12, 58%)"),
        (6, 12, "half", "half of the 12 queries (6)"),
        (5, 12, "some", "5 of 12 queries (42%)"),
        (51, 100, "most", "most queries (51 of 100, 51%)"),
        (50, 100, "half", "half of the 100 queries (50)"),
        (1, 1, "all", "1 of 1 queries (100%)"),
    ],
)
def test_most_is_said_only_above_half(part, whole, word, words) -> None:
    assert diagnosis.quantifier(part, whole) == word
    assert diagnosis.share_words(part, whole, "queries") == words


def test_share_words_of_them() -> None:
    assert [diagnosis.share_words(p, 4) for p in (0, 1, 2, 3, 4)] == [
        "none of them", "1 of them", "half of them (2 of 4)", "most of them (3 of 4)", "all 4 of them",
    ]  # fmt: skip


def test_few_misses_are_worth_knowing_not_a_warning() -> None:
    """9 misses among 200 queries, most of them near: "most" of the misses, said with how few they are."""
    rows = [("x", "medium", 1)] * 191 + [("x", "medium", 7)] * 6 + [("x", "medium", 0)] * 3
    f = next(f for f in diagnosis.diagnose("r", table(rows), k=5, deep_k=100) if f.rule == "near_miss")
    assert f.title == "Most of the 9 misses are near misses (ranks 6–20)" and f.severity == "info"
    assert f.evidence.startswith("9 of 200 queries (4%) are missed at K=5; most missed queries (6 of 9, 67%)")
    assert "3 of them are not retrieved at all" in f.evidence


def test_most_near_misses_means_more_than_half() -> None:
    half = [("x", "medium", 1)] * 20 + [("x", "medium", 7)] * 3 + [("x", "medium", 0)] * 3
    assert "near_miss" not in rules(diagnosis.diagnose("r", table(half), k=5, deep_k=100))
    more = [("x", "medium", 1)] * 20 + [("x", "medium", 7)] * 4 + [("x", "medium", 0)] * 3
    assert "near_miss" in rules(diagnosis.diagnose("r", table(more), k=5, deep_k=100))


@pytest.mark.apptest
def test_the_page_says_what_each_run_is_and_offers_bm25_only_where_it_fits(faq_ids) -> None:
    """On the FAQ sample (bm25, dense-e5, hybrid-rrf, with a corpus): each run's kind above its findings, each
    advice's evidence in words, and "Try hybrid (+BM25)" for the dense run only."""
    at = open_page("diagnosis")
    no_problems(at)
    captions = [c.value.replace("\\", "") for c in at.caption]  # as shown: Markdown's escapes dropped
    kinds = [c for c in captions if c.startswith("The run is")]
    assert len(kinds) == 3, kinds
    assert "lexical (BM25)" in kinds[0] and "dense (e5)" in kinds[1] and "fused" in kinds[2]
    because = [c for c in captions if c.startswith("Because ")]
    assert because and not any("hard_missed." in c or "near_miss." in c for c in captions)  # words, not rule ids
    hybrid = [b for b in at.button if b.label == "Try hybrid (+BM25)"]
    assert [b.key for b in hybrid] == [f"diagnosis.hybrid.{faq_ids['dense-e5']}"]


def test_evidence_words_keep_a_metric_s_capitals() -> None:
    said = {key: diagnosis.evidence_words(a) for key, a in advice("r", table(HARD)).items()}
    assert said["hard_missed.rerank"].startswith("Because 4 of 10 hard queries (40%) are missed at K=5;")
    near = [("x", "medium", 1)] * 20 + [("x", "medium", 7)] * 4 + [("x", "medium", 0)]
    assert advice("r", table(near))["near_miss.raise_k"].because.startswith("Hits@20 = ")
    assert diagnosis.evidence_words(advice("r", table(near))["near_miss.raise_k"]).startswith("Because Hits@20 = ")
    assert diagnosis.evidence_words("plain advice") == ""


def test_a_share_never_reads_as_half_all_or_none_when_it_is_not():
    """Was: "most queries (151 of 300, 50%)" on SciFact's dense run, and the validation report's "100% of 812
    ranked queries meet the qrels" with 4 of them meeting none."""
    from ragmetrics.analysis.diagnosis import share_words
    from ragmetrics.foundation.numbers import share

    assert share_words(151, 300, "queries") == "most queries (151 of 300, 50.3%)"
    assert share_words(150, 300, "queries") == "half of the 300 queries (150)"
    assert [share(x) for x in (0, 0.001, 0.5, 0.4999, 0.75, 808 / 812, 1, float("nan"))] == [
        "0%", "<1%", "50%", "50.0%", "75%", ">99%", "100%", "—"
    ]  # fmt: skip


def test_a_weak_category_none_of_whose_queries_is_missed_is_sent_to_its_ranks_not_to_an_empty_missed_list() -> None:
    """Was: "Open the missed queries filtered to 'summary'" beside "none of the 12 'summary' queries are missed at
    K=5" (the FAQ's Recall@5): the Missed page then showed nothing."""
    rows = [("good", "medium", 1)] * 20 + [("summary", "medium", 4)] * 12
    frame = table(rows)
    frame["value"] = frame["rr"]
    found = next(f for f in diagnosis.diagnose("r", frame, k=5, deep_k=100, metric_label="MRR@5")
                 if f.rule == "weak_category")  # fmt: skip
    assert [a.id for a in found.advice] == ["weak_category.ranks", "weak_category.indexing"]
    assert "none of the 12 'summary' queries are missed at K=5, so the gap is in the ranks" in found.advice[0].because
    assert "Open the missed queries" not in " ".join(str(a) for a in found.advice)
