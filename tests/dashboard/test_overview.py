"""Overview builders (means, intervals, curves, PR) and figures, checked against ragmetrics' own numbers; the
alignment is the only result model (float64 values, curves computed once under threads, prefetched)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import ragmetrics
from dashboard.core import charts, overview, results
from dashboard.core.intervals import mean_ci
from dashboard.core.specs import K_MAX, METRIC_CHOICES, label_title, metric_spec, metric_title, title
from ragmetrics.engine import metrics as registry


@pytest.fixture(scope="module")
def curves(faq_alignments):
    return overview.curve_frame(faq_alignments, k_max=20)


def _lines(fig):
    return [t for t in fig.data if not t.name.endswith(charts.BAND_SUFFIX)]


def test_metric_spec_and_titles_come_from_the_registry() -> None:
    assert str(metric_spec("recall", 5)) == "recall@5"
    assert str(metric_spec("nDCG", 10)) == "ndcg@10"
    assert str(metric_spec("rprec", 10)) == "rprec"
    assert str(metric_spec("mrr@3", 10)) == "mrr@3"
    assert title(registry.parse_metric("P@5")) == "Precision@5" == label_title("precision@5")
    assert label_title("ndcg@10") == "nDCG@10"
    with pytest.raises(TypeError, match="label_title"):
        title("ndcg@10")  # type: ignore[arg-type]
    assert metric_title("precision") == "Precision" and metric_title("map") == "MAP"
    assert set(METRIC_CHOICES) == {*registry.CURVE_METRICS, "rprec"} and METRIC_CHOICES[0] == "recall"


def test_values_are_the_librarys_float64(faq, faq_alignments, faq_result) -> None:
    for alignment in faq_alignments:
        expected = faq_result.per_query(alignment.name)
        assert list(alignment.query_ids) == list(expected.index)
        for metric in faq_result.metrics:
            values = alignment.value(metric)
            assert values.dtype == np.float64 and not values.flags.writeable
            np.testing.assert_array_equal(values, expected[metric].to_numpy(), err_msg=metric)
        # beyond the curves' depth: computed on demand
        direct = ragmetrics.evaluate(faq.dataset, [alignment.run], ["recall@150"], warn=False)
        np.testing.assert_array_equal(alignment.value("recall@150"), direct.per_query(alignment.name)["recall@150"])


def test_overview_frame_columns_and_means(faq_alignments, faq_result) -> None:
    frame = overview.overview_frame(faq_alignments, 5)
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
        np.testing.assert_allclose(frame[metric].to_numpy(), means[metric].to_numpy(), rtol=0, atol=1e-15)
    assert (frame["queries"] == 91).all()


def test_summary_frame_has_ci_around_mean(faq_alignments, faq_result) -> None:
    specs = [registry.parse_metric(m) for m in ("recall@5", "mrr", "hits@5")]
    frame = overview.summary_frame(faq_alignments, specs)
    assert list(frame.columns) == ["run", "metric", "n", "mean", "ci_low", "ci_high", "interval"]
    assert len(frame) == 3 * len(faq_alignments)
    # each row names the method that computed it: hits (0 or 1) Clopper-Pearson, the graded mrr Student's t
    methods = frame.groupby("metric")["interval"].unique()
    assert list(methods["hits@5"]) == ["Clopper-Pearson"] and list(methods["mrr"]) == ["t"]
    hits = frame[(frame["run"] == faq_alignments[0].name) & (frame["metric"] == "hits@5")].iloc[0]
    counted = faq_alignments[0].value("hits@5")
    exact = ragmetrics.analysis.stats.proportion_interval(int(counted.sum()), len(counted))
    assert (hits["ci_low"], hits["ci_high"]) == pytest.approx(exact)
    assert (frame["ci_low"] <= frame["mean"]).all() and (frame["mean"] <= frame["ci_high"]).all()
    recall = frame[frame["metric"] == "recall@5"].set_index("run")["mean"]
    np.testing.assert_allclose(recall.to_numpy(), faq_result.mean()["recall@5"].to_numpy(), atol=1e-12)
    # the intervals are the library's
    values = faq_alignments[0].value("mrr")
    low, high = ragmetrics.analysis.stats.mean_t_interval(values)
    row = frame[(frame["run"] == faq_alignments[0].name) & (frame["metric"] == "mrr")].iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((float(low), float(high)))


def test_curve_frame(faq_alignments, faq_result, curves) -> None:
    assert list(curves.columns) == ["run", "metric", "k", "value", "ci_low", "ci_high", "interval"]
    assert set(curves.loc[curves["metric"] == "hits", "interval"]) == {"Clopper-Pearson"}
    assert set(curves.loc[curves["metric"] == "ndcg", "interval"]) == {"t"}
    assert len(curves) == len(faq_alignments) * 5 * 20
    one = curves[(curves["run"] == "bm25") & (curves["metric"] == "recall")]
    assert one["k"].tolist() == list(range(1, 21))
    means = faq_result.mean()
    assert one.set_index("k").loc[5, "value"] == pytest.approx(means.loc["bm25", "recall@5"], abs=1e-12)
    assert one.set_index("k").loc[10, "value"] == pytest.approx(means.loc["bm25", "recall@10"], abs=1e-12)
    assert (curves["ci_low"] <= curves["value"] + 1e-12).all() and (curves["value"] <= curves["ci_high"] + 1e-12).all()
    # recall never decreases with K; the band is reproducible (seeded)
    assert (np.diff(one["value"].to_numpy()) >= -1e-12).all()
    pd.testing.assert_frame_equal(curves, overview.curve_frame(faq_alignments, k_max=20))


def test_pr_frame(faq_alignments, faq_result) -> None:
    pr = overview.pr_frame(faq_alignments, 10)
    assert list(pr.columns) == ["run", "k", "recall", "precision", "label"]
    row = pr[(pr["run"] == "dense-e5") & (pr["k"] == 5)].iloc[0]
    assert row["label"] == "K=5"
    assert row["recall"] == pytest.approx(faq_result.mean().loc["dense-e5", "recall@5"], abs=1e-12)
    assert row["precision"] == pytest.approx(faq_result.mean().loc["dense-e5", "precision@5"], abs=1e-12)


def test_display_k_max(faq_alignments, tiny_alignments) -> None:
    assert overview.display_k_max(faq_alignments) == 20  # the FAQ runs return 20 chunks per query
    assert overview.display_k_max(tiny_alignments) == 30


def test_graded_values_take_scipy_s_t_interval_and_0_1_values_clopper_pearson() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(200) * 0.8
    mean, low, high = mean_ci(values)
    ref = scipy_stats.t.interval(0.95, 199, loc=values.mean(), scale=scipy_stats.sem(values))
    assert mean[0] == pytest.approx(values.mean())
    assert (low[0], high[0]) == pytest.approx(ref, abs=1e-12)
    hits = (rng.random(200) < 0.7).astype(float)
    exact = scipy_stats.binomtest(int(hits.sum()), 200).proportion_ci(0.95, method="exact")
    _, low, high = mean_ci(np.column_stack([hits, values]))
    assert (low[0], high[0]) == pytest.approx((exact.low, exact.high))  # eval --ci's and check's interval
    assert low[1] == pytest.approx(ref[0], abs=1e-12)
    constant = np.full((50, 3), 0.5)
    m, lo, hi = mean_ci(constant)
    assert np.isnan(lo).all() and np.isnan(hi).all() and (m == 0.5).all()  # no spread: no interval, not a point
    _, lo, hi = mean_ci(np.ones((50, 1)))  # every query a hit: not the point [1, 1]
    assert lo[0] == pytest.approx(scipy_stats.binomtest(50, 50).proportion_ci(0.95, method="exact").low)
    assert lo[0] < 0.93
    m, lo, hi = mean_ci(np.array([0.5]))
    assert m[0] == 0.5 and np.isnan(lo[0]) and np.isnan(hi[0])


# --- figures -----------------------------------------------------------------------------


def test_curves_figure_one_line_per_run_per_panel(curves, faq_alignments) -> None:
    runs = [a.name for a in faq_alignments]
    fig = overview.curves_figure(curves, runs=runs)
    assert [a.text for a in fig.layout.annotations if a.text.endswith("@K")] == [
        "Recall@K",
        "Precision@K",
        "F1@K",
        "Hits@K",
        "nDCG@K",
    ]
    lines = _lines(fig)
    bands = [t for t in fig.data if t.name.endswith(charts.BAND_SUFFIX)]
    assert len(lines) == len(bands) == 5 * len(runs)
    legend = [t.name for t in lines if t.showlegend]
    assert legend == runs  # one legend entry (trace) per run
    first_panel = [t for t in lines if t.xaxis == "x"]
    assert [t.name for t in first_panel] == runs
    recall_bm25 = curves[(curves["run"] == "bm25") & (curves["metric"] == "recall")]
    assert list(first_panel[0].x) == list(range(1, 21))
    np.testing.assert_allclose(first_panel[0].y, recall_bm25["value"].to_numpy())
    band = bands[0]
    assert band.fill == "toself" and band.showlegend is False and len(band.x) == 40
    assert fig.layout.xaxis.title.text == "K" and fig.layout.yaxis.autorange is True  # saturated runs stay apart
    # one colour per run, shared by line and band
    assert first_panel[0].line.color == charts.PALETTE[0] and first_panel[1].line.color == charts.PALETTE[1]


def test_curves_figure_log_axis_for_deep_curves(faq_alignments) -> None:
    deep = overview.curve_frame(faq_alignments[:1], metrics=("recall",), k_max=100)
    fig = overview.curves_figure(deep, metrics=("recall",))
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 5, 10, 20, 50, 100]
    shallow = overview.curves_figure(
        overview.curve_frame(faq_alignments[:1], metrics=("recall",), k_max=10), metrics=("recall",)
    )
    assert shallow.layout.xaxis.type == "linear"


def test_pr_figure(faq_alignments) -> None:
    pr = overview.pr_frame(faq_alignments, 20)
    fig = overview.pr_figure(pr)
    assert [t.name for t in fig.data] == ["bm25", "dense-e5", "hybrid-rrf"]
    trace = fig.data[0]
    labelled = [t for t in trace.text if t]
    assert labelled == ["K=1", "K=5", "K=10", "K=20"]
    assert list(trace.customdata) == list(range(1, 21))
    bm25 = pr[pr["run"] == "bm25"]
    np.testing.assert_allclose(trace.x, bm25["recall"].to_numpy())
    np.testing.assert_allclose(trace.y, bm25["precision"].to_numpy())
    assert fig.layout.xaxis.title.text == "Recall@K" and fig.layout.yaxis.title.text == "Precision@K"
    assert fig.layout.xaxis.autorange is True  # the data spread: Plotly fits it
    # every run's recall 1 at every K (a set its retriever finds whole): a range about 1, not Plotly's 0 to 2
    whole = pr.assign(recall=1.0)
    axis = overview.pr_figure(whole).layout.xaxis
    assert axis.autorange is False and 0.85 <= axis.range[0] < 1.0 < axis.range[1] <= 1.05


def test_user_text_is_not_markup_in_figures(tiny, tiny_runs) -> None:
    alignments = [ragmetrics.align(tiny, tiny_runs[0].with_name("<b>bold</b> & co"))]
    fig = overview.pr_figure(overview.pr_frame(alignments, 10))
    assert fig.data[0].name == "&lt;b&gt;bold&lt;/b&gt; &amp; co"


# --- one alignment, computed once --------------------------------------------------------


def _counting(monkeypatch, *, sleep: float = 0.0, fail: str | None = None) -> list[str]:
    """Count (and optionally slow down or fail) the registry's curve kernel calls."""
    calls: list[str] = []
    real = registry.curve

    def curve(ranking, metric, k_max, **kw):
        calls.append(metric)
        time.sleep(sleep)
        if metric == fail:
            raise MemoryError(f"no room for {metric}")
        return real(ranking, metric, k_max, **kw)

    monkeypatch.setattr(registry, "curve", curve)
    return calls


def test_curves_are_computed_to_k_max_once_and_sliced(faq, monkeypatch) -> None:
    alignment = ragmetrics.align(faq.dataset, faq.runs[0][0])
    calls = _counting(monkeypatch)
    before = {m: alignment.value(f"{m}@7") for m in registry.CURVE_METRICS}
    assert calls == []  # a value at one K does not build the curve
    for m in registry.CURVE_METRICS:
        part = results.curve(alignment, m, 20)
        full = alignment.curve(m, K_MAX)
        assert part.shape == (alignment.n_queries, 20) and full.shape == (alignment.n_queries, K_MAX)
        assert np.shares_memory(part, full) and part.dtype == np.float64 and not part.flags.writeable
        np.testing.assert_array_equal(alignment.value(f"{m}@7"), before[m])
        np.testing.assert_array_equal(part[:, 6], before[m])
        results.curve(alignment, m, 10)  # another depth: the same curve, sliced
    assert sorted(calls) == sorted(registry.CURVE_METRICS)


def test_a_curve_raced_by_threads_is_computed_once(faq, monkeypatch) -> None:
    """Sessions and the upload page's prefetch share one alignment: concurrent callers wait for one computation."""
    real = registry.curve
    calls = _counting(monkeypatch, sleep=0.05)  # long enough for every thread to arrive while the first computes
    alignment = ragmetrics.align(faq.dataset, faq.runs[0][0])
    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(alignment.curve("recall", K_MAX))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["recall"]
    # one kept curve: every caller gets it (or a view of it), not a copy
    assert len(got) == 4 and all(np.shares_memory(g, got[0]) for g in got)
    np.testing.assert_array_equal(got[0], real(alignment.ranking, "recall", K_MAX))


def _join_prefetch_threads() -> None:
    from dashboard.data.prefetch import THREAD_NAME

    for t in [t for t in threading.enumerate() if t.name == THREAD_NAME]:
        t.join(timeout=60)


def test_prefetch_computes_the_overview_curves_in_the_background(faq, monkeypatch) -> None:
    from dashboard.ui import cache

    alignment = ragmetrics.align(faq.dataset, faq.runs[0][0])
    calls = _counting(monkeypatch)
    cache.prefetch_curves([alignment])
    _join_prefetch_threads()
    assert sorted(calls) == sorted(overview.CURVE_PANEL_METRICS)
    fresh = ragmetrics.align(faq.dataset, faq.runs[0][0])
    for metric in overview.CURVE_PANEL_METRICS:
        np.testing.assert_array_equal(alignment.curve(metric, K_MAX), fresh.curve(metric, K_MAX), err_msg=metric)
    assert sorted(calls) == sorted([*overview.CURVE_PANEL_METRICS] * 2)  # the prefetched ones were not computed again
    cache.prefetch_curves([alignment])  # all done: nothing is started
    assert not [t for t in threading.enumerate() if t.name == "ragmetrics-prefetch"]


def test_prefetch_asked_again_and_again_computes_each_curve_once_and_survives_a_failure(
    faq, monkeypatch, caplog
) -> None:
    """The upload page reruns often: a curve being prefetched is not started again; a failing one is logged,
    the others are still computed, and the overview meets the error itself."""
    from dashboard.ui import cache

    calls = _counting(monkeypatch, sleep=0.05, fail="precision")
    alignment = ragmetrics.align(faq.dataset, faq.runs[0][0])
    with caplog.at_level("WARNING", logger="dashboard.data.prefetch"):
        for _ in range(5):
            cache.prefetch_curves([alignment])
        _join_prefetch_threads()
    assert sorted(calls) == sorted(overview.CURVE_PANEL_METRICS)
    for metric in set(overview.CURVE_PANEL_METRICS) - {"precision"}:
        alignment.curve(metric, K_MAX)  # computed: no new call
    assert sorted(calls) == sorted(overview.CURVE_PANEL_METRICS)
    assert any("precision" in r.getMessage() and r.exc_info for r in caplog.records)
    with pytest.raises(MemoryError):
        alignment.curve("precision", K_MAX)


def test_pr_labels_that_would_overlap_are_left_to_the_hover() -> None:
    """Was: K=20, K=50 and K=100 drawn on top of each other in the deep corner (CMRC's runs)."""
    ks = list(range(1, 101))
    recall = [min(1.0, 0.8 + 0.2 * (k / 10)) if k <= 10 else 0.999 + k / 1e6 for k in ks]
    precision = [0.8 / k for k in ks]
    pr = pd.DataFrame({"run": "r", "k": ks, "recall": recall, "precision": precision, "label": [f"K={k}" for k in ks]})
    labelled = [t for t in overview.pr_figure(pr).data[0].text if t]
    assert labelled[:3] == ["K=1", "K=5", "K=10"] and not {"K=50", "K=100"} <= set(labelled)


def test_a_verdict_at_k_says_when_runs_rank_to_different_depths_short_of_k(tiny) -> None:
    """Was: "dense-e5 + BM25 (RRF) beats bm25 on Recall@100", a 70-deep fused run against 20-deep runs, unsaid."""
    deep = ragmetrics.Run.from_dict({"q1": {f"d{i}": -i for i in range(30)}}, name="deep")
    shallow = ragmetrics.Run.from_dict({"q1": {f"d{i}": -i for i in range(10)}}, name="shallow")
    dataset = ragmetrics.Dataset.from_dict({"q1": {"d1": 1}})
    alignments = [ragmetrics.align(dataset, run) for run in (deep, shallow)]
    said = overview.unequal_depths(alignments, 20)
    assert said == (
        "At K = 20 the runs rank to different depths: shallow ranks at most 10 documents per query, deep 30. A metric "
        "at K reads what each run ranked, so part of a difference may be depth alone."
    )
    assert overview.unequal_depths(alignments, 10) is None and overview.unequal_depths(alignments[:1], 50) is None


def test_the_curves_say_which_queries_their_mean_leaves_out(faq_alignments, tiny, tiny_runs) -> None:
    """Was: "Mean over 91 queries" of a dataset of 106, its negative queries left out without a word."""
    assert overview.left_out_words(faq_alignments[0]) == (
        " (15 of the dataset's 106 left out: 15 negative (nothing relevant to find))"
    )
    assert (
        overview.left_out_words(ragmetrics.align(tiny, tiny_runs[0]))
        == " (1 of the dataset's 13 left out: 1 without judgments)"
    )
