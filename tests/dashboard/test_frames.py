"""Table builders, checked against ragmetrics' own numbers and against hand-computed answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import ragmetrics
from dashboard.core import frames
from dashboard.core.bootstrap import bootstrap_ci
from dashboard.core.evaluation import K_MAX, evaluate_run, metric_spec, pretty
from dashboard.core.workspace import Workspace
from ragmetrics import Run
from ragmetrics.store import dataset_id, run_id

from .conftest import RANKS_A


def test_metric_spec_and_pretty() -> None:
    assert str(metric_spec("recall", 5)) == "recall@5"
    assert str(metric_spec("nDCG", 10)) == "ndcg@10"
    assert str(metric_spec("rprec", 10)) == "rprec"
    assert str(metric_spec("mrr@3", 10)) == "mrr@3"
    assert pretty("precision@5") == "Precision@5"
    assert pretty("ndcg@10") == "nDCG@10"


def test_values_slice_equals_ragmetrics(faq, faq_evals, faq_result) -> None:
    for ev in faq_evals:
        expected = faq_result.per_query(ev.name)
        assert list(ev.query_ids) == list(expected.index)
        for metric in faq_result.metrics:
            np.testing.assert_allclose(ev.values(metric), expected[metric].to_numpy(), atol=1e-6, err_msg=metric)
        # beyond the stored curves: computed on demand
        direct = ragmetrics.evaluate(faq.dataset, [ev.run], ["recall@150"], warn=False).per_query(ev.name)["recall@150"]
        np.testing.assert_allclose(ev.values("recall@150"), direct.to_numpy())


def test_overview_frame_columns_and_means(faq_evals, faq_result) -> None:
    frame = frames.overview_frame(faq_evals, 5)
    assert list(frame.columns) == [
        "run",
        "queries",
        "recall@5",
        "precision@5",
        "f1@5",
        "hits@5",
        "ndcg@5",
        "mrr@5",
        "map@5",
    ]
    assert list(frame["run"]) == faq_result.run_names
    means = faq_result.mean()
    for metric in frame.columns[2:]:
        np.testing.assert_allclose(frame[metric].to_numpy(), means[metric].to_numpy(), atol=1e-6)
    assert (frame["queries"] == 91).all()


def test_summary_frame_has_ci_around_mean(faq_evals, faq_result) -> None:
    frame = frames.summary_frame(faq_evals, ["recall@5", "mrr"])
    assert list(frame.columns) == ["run", "metric", "n", "mean", "ci_low", "ci_high"]
    assert len(frame) == 2 * len(faq_evals)
    assert (frame["ci_low"] <= frame["mean"]).all() and (frame["mean"] <= frame["ci_high"]).all()
    recall = frame[frame["metric"] == "recall@5"].set_index("run")["mean"]
    np.testing.assert_allclose(recall.to_numpy(), faq_result.mean()["recall@5"].to_numpy(), atol=1e-9)


def test_curve_frame(faq_evals, faq_result) -> None:
    curves = frames.curve_frame(faq_evals, k_max=20)
    assert list(curves.columns) == ["run", "metric", "k", "value", "ci_low", "ci_high"]
    assert len(curves) == len(faq_evals) * 5 * 20
    one = curves[(curves["run"] == "bm25") & (curves["metric"] == "recall")]
    assert one["k"].tolist() == list(range(1, 21))
    means = faq_result.mean()
    assert one.set_index("k").loc[5, "value"] == pytest.approx(means.loc["bm25", "recall@5"], abs=1e-6)
    assert one.set_index("k").loc[10, "value"] == pytest.approx(means.loc["bm25", "recall@10"], abs=1e-6)
    assert (curves["ci_low"] <= curves["value"] + 1e-12).all() and (curves["value"] <= curves["ci_high"] + 1e-12).all()
    # recall never decreases with K; the band is reproducible (seeded)
    assert (np.diff(one["value"].to_numpy()) >= -1e-12).all()
    pd.testing.assert_frame_equal(curves, frames.curve_frame(faq_evals, k_max=20))


def test_pr_frame(faq_evals, faq_result) -> None:
    pr = frames.pr_frame(faq_evals, 10)
    assert list(pr.columns) == ["run", "k", "recall", "precision", "label"]
    row = pr[(pr["run"] == "dense-e5") & (pr["k"] == 5)].iloc[0]
    assert row["label"] == "K=5"
    assert row["recall"] == pytest.approx(faq_result.mean().loc["dense-e5", "recall@5"], abs=1e-6)
    assert row["precision"] == pytest.approx(faq_result.mean().loc["dense-e5", "precision@5"], abs=1e-6)


def test_display_k_max(faq_evals, tiny_evals) -> None:
    assert frames.display_k_max(faq_evals) == 20  # the FAQ runs return 20 chunks per query
    assert frames.display_k_max(tiny_evals) == 30


def test_breakdown_frame_matches_groupby(faq, faq_evals, faq_result) -> None:
    table = frames.breakdown_frame(faq_evals, "recall@5", "category")
    assert list(table.columns) == ["run", "group", "n", "mean", "ci_low", "ci_high", "too_few"]
    per_query = faq_result.per_query("hybrid-rrf").join(faq.dataset.queries.set_index("query_id")["category"])
    expected = per_query.groupby("category")["recall@5"].agg(["mean", "size"])
    got = table[table["run"] == "hybrid-rrf"].set_index("group")
    for category, row in expected.iterrows():
        assert got.loc[category, "mean"] == pytest.approx(row["mean"], abs=1e-6)
        assert got.loc[category, "n"] == row["size"]
    assert got["n"].sum() == 91
    assert "negative" not in set(table["group"])  # negative queries have no judgments: not evaluated
    assert frames.unevaluated_groups(faq.dataset, faq_evals[0].query_ids, "category") == {"negative": 15}


def test_breakdown_marks_small_groups_and_orders_difficulty(tiny_evals) -> None:
    table = frames.breakdown_frame(tiny_evals, "hits@5", "difficulty")
    assert list(dict.fromkeys(table["group"])) == ["easy", "hard"]
    assert table["too_few"].all()  # 6 queries each
    cat = frames.breakdown_frame(tiny_evals, "hits@5", "category")
    a = cat[(cat["run"] == "run-a") & (cat["group"] == "a")].iloc[0]
    # run-a, category a = q01..q08: first ranks 1,7,2,0,12,1,3,25 -> 4 hits in the top 5
    assert a["n"] == 8 and a["mean"] == pytest.approx(4 / 8)
    assert a["too_few"]


def test_missed_frame_tiny(tiny_evals) -> None:
    missed = frames.missed_frame(tiny_evals[0], 5)
    assert list(missed.columns) == frames.MISSED_COLUMNS
    expected = {q for q, r in RANKS_A.items() if r == 0 or r > 5}
    assert set(missed["query_id"]) == {f"q{i:02d}" for i in expected}
    by_id = missed.set_index("query_id")
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
    assert set(frames.missed_frame(tiny_evals[1], 1)["keywords_found"]) == {""}


def test_missed_frame_faq_agrees_with_hits(faq_evals, faq_result) -> None:
    for k in (1, 5, 10):
        ev = faq_evals[0]
        missed = frames.missed_frame(ev, k)
        hits = ragmetrics.evaluate(ev.dataset, [ev.run], [f"hits@{k}"], warn=False).per_query(ev.name)[f"hits@{k}"]
        assert set(missed["query_id"]) == set(hits[hits == 0].index)
        assert all(len(top.split(", ")) == k for top in missed["top_k"])
        assert not any("✓" in top for top in missed["top_k"])
        assert set(missed["status"]) <= {"near miss", "deeper", "not retrieved"}
        assert all(kw == "" or "/" in kw for kw in missed["keywords_found"])


def test_miss_status() -> None:
    assert frames.miss_status(0, 5) == "not retrieved"
    assert frames.miss_status(5, 5) == "hit"
    assert frames.miss_status(6, 5) == "near miss"
    assert frames.miss_status(20, 5) == "near miss"
    assert frames.miss_status(21, 5) == "deeper"
    assert frames.miss_status(40, 20) == "near miss"


def test_filter_queries(tiny_evals) -> None:
    missed = frames.missed_frame(tiny_evals[0], 5)
    assert set(frames.filter_queries(missed, category="b")["query_id"]) == {"q10"}
    assert set(frames.filter_queries(missed, difficulty="easy")["query_id"]) == {"q05"}
    assert set(frames.filter_queries(missed, search="QUESTION 8")["query_id"]) == {"q08"}
    assert set(frames.filter_queries(missed, search="q04")["query_id"]) == {"q04"}
    assert len(frames.filter_queries(missed)) == len(missed)


def test_query_detail_frame_merges_chunks(faq, faq_evals) -> None:
    ev = faq_evals[0]
    qid = "q009"
    detail = frames.query_detail_frame(ev, qid, 20)
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
    first = int(ev.first_rel_rank[list(ev.query_ids).index(qid)])
    assert detail["relevant"].to_numpy().argmax() + 1 == first
    assert (np.diff(detail["score"].to_numpy()) <= 0).all()


def test_relevant_docs_and_query_metrics(faq_evals) -> None:
    qid = "q009"
    relevant = frames.relevant_docs_frame(faq_evals, qid)
    assert list(relevant.columns)[:2] == ["doc_id", "relevance"]
    assert [c for c in relevant.columns if c in {"bm25", "dense-e5", "hybrid-rrf"}] == [
        "bm25",
        "dense-e5",
        "hybrid-rrf",
    ]
    per_run = frames.query_metrics_frame(faq_evals, qid, 5).set_index("run")
    for run in ("bm25", "dense-e5", "hybrid-rrf"):
        ranks = relevant[run].dropna()
        best = int(ranks.min()) if len(ranks) else None
        assert per_run.loc[run, "first_relevant_rank"] == best
    assert frames.query_info(faq_evals[0].dataset, qid)["category"] == "factual"
    assert frames.query_info(faq_evals[0].dataset, "nope") == {}


def test_validation_frame_counts() -> None:
    qrels = pd.DataFrame(
        [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 0)], columns=["query_id", "doc_id", "relevance"]
    )
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "query": ["one", "two", "three", "four"],
            "category": ["x", "x", "y", "y"],
        }
    )
    dataset = ragmetrics.Dataset.from_frames(qrels, queries)
    run = Run.from_frame(
        pd.DataFrame(
            [
                ("q1", "d1", 2.0),
                ("q1", "d9", 2.0),
                ("q1", "d1", 1.0),  # a tie and a duplicate
                ("zz", "d1", 1.0),  # unknown query
                ("two", "d2", 1.0),  # matched by text
            ],
            columns=["query_id", "doc_id", "score"],
        ),
        name="r",
    )
    report = frames.validation_frame(dataset, [evaluate_run(dataset, run)])
    assert list(report.columns) == frames.VALIDATION_COLUMNS
    counts = {(s, c.split(" (")[0]): n for s, c, n in zip(report["scope"], report["check"], report["count"])}
    assert counts[("dataset", "queries without judgments")] == 1
    assert counts[("dataset", "queries without a relevant document")] == 1
    assert counts[("dataset", "categories with fewer than 10 queries")] == 2
    assert counts[("r", "dataset queries with no results in the run")] == 1  # q3
    assert counts[("r", "run queries not in the dataset")] == 1
    assert counts[("r", "run queries matched by query text, not id")] == 1
    assert counts[("r", "duplicate")] == 1
    assert counts[("r", "tied scores")] == 1
    row = report[report["check"].str.startswith("run queries not in")].iloc[0]
    assert row["examples"] == "zz" and row["status"] == "warning"
    ok = report[report["count"] == 0]
    assert (ok["status"] == "ok").all() and (ok["effect"] == "").all()


def test_bootstrap_matches_scipy_percentile() -> None:
    rng = np.random.default_rng(3)
    values = (rng.random(200) < 0.7).astype(float)
    mean, low, high = bootstrap_ci(values)
    ref = scipy_stats.bootstrap(
        (values,), np.mean, method="percentile", n_resamples=4000, random_state=1
    ).confidence_interval
    assert mean[0] == pytest.approx(values.mean())
    assert low[0] == pytest.approx(ref.low, abs=0.02) and high[0] == pytest.approx(ref.high, abs=0.02)
    constant = np.ones((50, 3))
    m, lo, hi = bootstrap_ci(constant)
    assert (lo == 1).all() and (hi == 1).all() and (m == 1).all()
    m, lo, hi = bootstrap_ci(np.array([0.5]))
    assert m[0] == 0.5 and np.isnan(lo[0]) and np.isnan(hi[0])


def test_workspace_ids_and_names(tiny, tiny_runs) -> None:
    ws = Workspace()
    entry = ws.add_dataset(tiny, name="tiny")
    assert ws.add_dataset(tiny).id == entry.id == dataset_id(tiny)
    first = ws.add_run(entry.id, tiny_runs[0])
    shuffled = Run.from_frame(tiny_runs[0].frame.sample(frac=1.0, random_state=0), name="other name")
    assert run_id(shuffled) == first.id  # row order and name are not content
    assert ws.add_run(entry.id, shuffled) is first
    renamed = ws.add_run(entry.id, Run.from_frame(tiny_runs[1].frame, name="run-a"))
    assert renamed.name == "run-a (2)" and renamed.run.name == "run-a (2)"
    assert [r.name for r in ws.runs(entry.id)] == ["run-a", "run-a (2)"]
    assert ws.dataset_table()["runs"].tolist() == [2]
    assert ws.run_table(entry.id)["name"].tolist() == ["run-a", "run-a (2)"]


def test_curves_to_k_max_are_stored(faq_evals) -> None:
    ev = faq_evals[0]
    assert all(c.shape == (ev.n_queries, K_MAX) for c in ev.curves.values())


def test_with_text_for_missing_keeps_whole_numbers() -> None:
    frame = pd.DataFrame({"run": ["a", "b"], "rank": [46.0, None]})
    shown = frames.with_text_for_missing(frame, ["rank"], "not retrieved")
    assert shown["rank"].tolist() == ["46", "not retrieved"]


def test_style_relevant_tints_relevant_rows(faq_evals) -> None:
    detail = frames.query_detail_frame(faq_evals[0], "q009", 20)
    assert detail["relevant"].sum() == 1
    assert "#e6f4ea" in frames.style_relevant(detail).to_html()
    assert "#e6f4ea" not in frames.style_relevant(detail.assign(relevant=False)).to_html()


def test_curves_are_computed_on_first_use_and_values_agree_before_and_after(faq) -> None:
    from dashboard.core.evaluation import CURVE_METRICS, evaluate_run

    run, _ = faq.runs[0]
    ev = evaluate_run(faq.dataset, run)
    assert ev.curves == {}
    before = {m: ev.values(f"{m}@7") for m in CURVE_METRICS}
    assert ev.curves == {}  # a value at one K does not build the curve
    for m in CURVE_METRICS:
        curve = ev.curve(m, 20)
        assert curve.shape == (ev.n_queries, 20) and m in ev.curves
        np.testing.assert_array_equal(ev.values(f"{m}@7"), before[m])
        np.testing.assert_array_equal(curve[:, 6], before[m])


def test_depth_frame_counts_queries_per_ranking_depth(tiny, tiny_runs) -> None:
    from dashboard.core.evaluation import evaluate_run
    from ragmetrics import Run

    frame = tiny_runs[1].frame
    rank = frame.groupby("query_id").cumcount()
    # q01 cut to 5 documents, q02 left out, q03 given one duplicate row (kept once): 1 query at 0, 1 at 5, 10 at 30
    cut = frame[~((frame["query_id"] == "q01") & (rank >= 5)) & (frame["query_id"] != "q02")]
    cut = pd.concat([cut, cut[cut["query_id"] == "q03"].head(1).assign(score=0.5)], ignore_index=True)
    ev = evaluate_run(tiny, Run.from_frame(cut, name="cut"))
    depths = frames.depth_frame([ev, *[evaluate_run(tiny, r) for r in tiny_runs[:1]]])
    assert depths.to_dict("records") == [
        {"run": "cut", "retrieved": 0, "queries": 1},
        {"run": "cut", "retrieved": 5, "queries": 1},
        {"run": "cut", "retrieved": 30, "queries": 10},
        {"run": "run-a", "retrieved": 30, "queries": 12},
    ]
    assert frames.depth_frame([]).columns.tolist() == ["run", "retrieved", "queries"]


def test_a_curve_raced_by_threads_is_computed_once(faq, monkeypatch) -> None:
    """Sessions and the upload page's prefetch share one evaluation: concurrent callers wait for one computation."""
    import threading
    import time

    from dashboard.core import evaluation

    calls: list[str] = []
    real = evaluation.registry.curve

    def slow_curve(ranking, metric, k_max, **kw):
        calls.append(metric)
        time.sleep(0.05)  # long enough for every thread to arrive while the first computes
        return real(ranking, metric, k_max, **kw)

    monkeypatch.setattr(evaluation.registry, "curve", slow_curve)
    run, _ = faq.runs[0]
    ev = evaluate_run(faq.dataset, run)
    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(ev.kept_curve("recall", K_MAX))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["recall"]
    assert len(got) == 4 and all(g is not None and np.shares_memory(g, got[0]) for g in got)
    np.testing.assert_array_equal(got[0], real(ev.ranking, "recall", K_MAX, dtype=np.float32))


def _join_prefetch_threads() -> None:
    import threading

    for t in [t for t in threading.enumerate() if t.name == "ragmetrics-prefetch"]:
        t.join(timeout=60)


def test_prefetch_computes_the_overview_curves_in_the_background(faq) -> None:
    from dashboard.ui import cache

    run, _ = faq.runs[0]
    ev = evaluate_run(faq.dataset, run)
    assert not set(frames.CURVE_PANEL_METRICS) & set(ev.curves)
    cache.prefetch_curves([ev])
    _join_prefetch_threads()
    assert set(frames.CURVE_PANEL_METRICS) <= set(ev.curves)
    fresh = evaluate_run(faq.dataset, run)
    for metric in frames.CURVE_PANEL_METRICS:
        np.testing.assert_array_equal(ev.curves[metric], fresh.kept_curve(metric, K_MAX), err_msg=metric)


def test_prefetch_asked_again_and_again_computes_each_curve_once_and_survives_a_failure(
    faq, monkeypatch, caplog
) -> None:
    """The upload page reruns often: a curve being prefetched is not started again; a failing one is logged,
    the others are still computed, and the overview meets the error itself."""
    import time

    from dashboard.core import evaluation
    from dashboard.ui import cache

    calls: list[str] = []
    real = evaluation.registry.curve

    def curve(ranking, metric, k_max, **kw):
        calls.append(metric)
        time.sleep(0.05)
        if metric == "precision":
            raise MemoryError("no room for precision")
        return real(ranking, metric, k_max, **kw)

    monkeypatch.setattr(evaluation.registry, "curve", curve)
    run, _ = faq.runs[0]
    ev = evaluate_run(faq.dataset, run)
    with caplog.at_level("WARNING", logger="dashboard.ui.cache"):
        for _ in range(5):
            cache.prefetch_curves([ev])
        _join_prefetch_threads()
    assert sorted(calls) == sorted(frames.CURVE_PANEL_METRICS)
    assert set(ev.curves) == set(frames.CURVE_PANEL_METRICS) - {"precision"}
    assert any("precision" in r.getMessage() and r.exc_info for r in caplog.records)
    with pytest.raises(MemoryError):
        ev.kept_curve("precision", K_MAX)
