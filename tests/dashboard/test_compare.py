"""Compare, query-by-query, power and fusion builders without Streamlit: columns, values equal to
ragmetrics.analysis.compare / stats / fusion, trace names."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import ragmetrics
from dashboard.core import compare as cmp
from dashboard.core import compare_queries as by_query
from dashboard.core import fusion, power
from dashboard.core.results import eval_result
from dashboard.core.text import signed
from ragmetrics import Alignment
from ragmetrics.analysis import stats
from ragmetrics.analysis.compare import compare, compare_result, discriminative_power
from ragmetrics.analysis.fusion import fuse
from ragmetrics.engine.metrics import parse_metric as M
from ragmetrics.io import load_run

SPECS = [M("recall@5"), M("ndcg@5"), M("mrr@5")]


@pytest.fixture(scope="module")
def faq_cmp(faq_alignments: list[Alignment]):
    return cmp.run_comparison(faq_alignments, "bm25", SPECS, test="t", alpha=0.05)


# --- specs and alignment -----------------------------------------------------------------


def test_compare_specs_keep_a_fixed_order_and_include_the_sidebar_metric() -> None:
    assert list(map(str, cmp.compare_specs("recall", 5))) == ["recall@5", "precision@5", "hits@5", "ndcg@5", "mrr@5"]
    assert list(map(str, cmp.compare_specs("ndcg", 10))) == [
        "recall@10",
        "precision@10",
        "hits@10",
        "ndcg@10",
        "mrr@10",
    ]
    assert list(map(str, cmp.compare_specs("map", 3))) == [
        "recall@3",
        "precision@3",
        "hits@3",
        "ndcg@3",
        "mrr@3",
        "map@3",
    ]
    assert cmp.compare_specs("rprec", 5)[-1] == M("rprec")


def test_the_table_equals_ragmetrics_compare_on_the_same_runs(faq, faq_alignments, faq_cmp) -> None:
    library = compare(faq.dataset, [r for r, _ in faq.runs], SPECS, baseline="bm25", test="t", warn=False).table
    ours = faq_cmp.table
    assert list(ours["metric"]) == list(library["metric"]) and list(ours["run"]) == list(library["run"])
    for column in (
        "n",
        "mean",
        "mean_ci_low",
        "mean_ci_high",
        "delta",
        "ci_low",
        "ci_high",
        "p_value",
        "p_value_corrected",
        "wins",
        "ties",
        "losses",
    ):
        np.testing.assert_allclose(
            ours[column].to_numpy(dtype=float),
            library[column].to_numpy(dtype=float),
            rtol=1e-6,
            atol=1e-6,
            err_msg=column,
        )
    assert list(ours["win_ids"]) == list(library["win_ids"])


def test_without_segments_the_whole_set_table_and_its_family_are_the_same(faq_alignments) -> None:
    specs = cmp.compare_specs("recall", 5)
    both = cmp.run_comparison(faq_alignments, "bm25", specs)
    only = cmp.run_comparison(faq_alignments, "bm25", specs, segments=False)
    assert not both.segments.empty and only.segments.empty
    pd.testing.assert_frame_equal(only.table, both.table)
    assert cmp.family_text(only) == cmp.family_text(both)


def test_comparison_frame_puts_the_baseline_first_and_marks_significance(faq_cmp) -> None:
    frame = cmp.comparison_frame(faq_cmp)
    assert list(frame.columns) == cmp.COMPARISON_COLUMNS
    assert len(frame) == len(SPECS) * 3
    assert list(frame["run"][:3]) == ["bm25", "dense-e5", "hybrid-rrf"]
    assert list(frame["significance"][frame["run"] == "bm25"]) == [cmp.BASELINE] * len(SPECS)
    others = frame[frame["run"] != "bm25"]
    for _, row in others.iterrows():
        significant = row["p_value_corrected"] < 0.05
        expected = (cmp.BETTER if row["delta"] > 0 else cmp.WORSE) if significant else cmp.NOT_SIGNIFICANT
        assert row["significance"] == expected
    # the hybrid run beats BM25 on nDCG@5 beyond doubt; dense-e5's recall gain is noise
    assert frame.set_index(["metric", "run"]).loc[("ndcg@5", "hybrid-rrf"), "significance"] == cmp.BETTER
    assert frame.set_index(["metric", "run"]).loc[("recall@5", "dense-e5"), "significance"] == cmp.NOT_SIGNIFICANT


def test_comparison_display_keeps_rows_and_formats_text(faq_cmp, faq_alignments) -> None:
    frame = cmp.comparison_frame(faq_cmp)
    display = cmp.comparison_display(frame, "bm25")
    assert len(display) == len(frame)
    assert list(display.columns) == [
        "metric",
        "run",
        "n",
        "mean",
        "mean 95% CI",
        "Δ vs baseline",
        "significance",
        "Δ CI (Holm-adjusted)",  # beside the verdict, the interval that agrees with it
        "p (Holm)",
        "p",
        "Δ 95% CI (uncorrected)",
        "W / T / L",
    ]
    assert display["metric"][0] == "Recall@5"
    row = display.iloc[1]
    src = frame.iloc[1]
    assert row["Δ vs baseline"] == f"{src['delta']:+.3f}"
    assert row["Δ 95% CI (uncorrected)"] == f"[{src['ci_low']:+.3f}, {src['ci_high']:+.3f}]"  # signed, as Δ is
    level = f"{100 * src['ci_level_adjusted']:.4g}%"
    # signed, as the verdict and the CLI print a paired interval (compare.bounds_text)
    assert row["Δ CI (Holm-adjusted)"] == f"[{src['ci_low_adjusted']:+.3f}, {src['ci_high_adjusted']:+.3f}] at {level}"
    for alpha in (0.05, 0.01):  # uncorrected, beside the verdict, the interval at the level the test is read at
        uncorrected = cmp.run_comparison(faq_alignments, "bm25", SPECS, test="t", alpha=alpha, correction="none")
        plain = cmp.comparison_display(cmp.comparison_frame(uncorrected), "bm25", "none")
        named = f"Δ {100 * (1 - alpha):g}% CI"
        assert "Δ CI (Holm-adjusted)" not in plain.columns
        assert list(plain.columns).index(named) == list(plain.columns).index("significance") + 1
    assert row["W / T / L"] == f"{src['wins']} / {src['ties']} / {src['losses']}"
    assert display.iloc[0]["p"] == "—" and display.iloc[0]["Δ vs baseline"] == ""
    assert cmp.format_p(3e-7) == "<0.0001" and cmp.format_p(0.04321) == "0.0432"
    styled = cmp.style_marks(display, focus_row=1).to_html()
    assert "font-weight: 700" in styled


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_resampling_tests_repeat_exactly(faq_alignments, test) -> None:
    a = cmp.run_comparison(faq_alignments, "bm25", [M("ndcg@5")], test=test).table["p_value"].to_numpy()
    b = cmp.run_comparison(faq_alignments, "bm25", [M("ndcg@5")], test=test).table["p_value"].to_numpy()
    np.testing.assert_array_equal(a, b)


def test_forest_figure_names_traces_by_significance(faq_cmp) -> None:
    frame = cmp.comparison_frame(faq_cmp)
    deltas = frame[frame["run"] != "bm25"]
    fig = cmp.forest_figure(deltas, labels=[f"{m} · {r}" for m, r in zip(deltas["metric"], deltas["run"])], title="Δ")
    names = [t.name for t in fig.data]
    assert set(names) <= {cmp.BETTER, cmp.WORSE, cmp.NOT_SIGNIFICANT, cmp.TOO_FEW} and cmp.BETTER in names
    assert sum(len(t.x) for t in fig.data) == len(deltas)
    assert list(fig.layout.yaxis.categoryarray)[-1] == "recall@5 · dense-e5"  # first row on top


def test_forest_intervals_are_the_verdicts_own(faq_alignments) -> None:
    """Was: the uncorrected 95% interval drawn, coloured by the Holm-corrected p-value (bars clear of 0 marked
    "not significant"). Under the t test the drawn interval leaves 0 exactly where the point is significant."""
    specs = [M(s) for s in ("recall@5", "precision@5", "ndcg@5", "mrr@5")]
    comparison = cmp.run_comparison(faq_alignments, "bm25", specs, test="t", correction="holm")
    frame = cmp.comparison_frame(comparison)
    deltas = frame[frame["run"] != "bm25"].reset_index(drop=True)
    fig = cmp.forest_figure(deltas, labels=[f"{m} · {r}" for m, r in zip(deltas["metric"], deltas["run"])], title="Δ")
    marks = set()
    for trace in fig.data:
        for x, plus, minus in zip(trace.x, trace.error_x.array, trace.error_x.arrayminus):
            clear_of_zero = x - minus > 0 or x + plus < 0
            assert clear_of_zero == (trace.name in (cmp.BETTER, cmp.WORSE)), (trace.name, x, minus, plus)
            marks.add(trace.name)
    assert cmp.NOT_SIGNIFICANT in marks and marks & {cmp.BETTER, cmp.WORSE}
    uncorrected = ((deltas["ci_low"] > 0) | (deltas["ci_high"] < 0)) & (deltas["significance"] == cmp.NOT_SIGNIFICANT)
    assert uncorrected.any()  # the case the uncorrected bars got wrong is in this data


# --- per query ---------------------------------------------------------------------------


def test_per_query_outcomes_are_the_librarys_wins_ties_and_losses(faq_alignments, faq_cmp) -> None:
    base, run = faq_alignments[0], faq_alignments[2]
    pq = by_query.per_query_frame(base, run, M("ndcg@5"))
    assert list(pq.columns) == by_query.PER_QUERY_COLUMNS
    row = faq_cmp.table.set_index(["metric", "run"]).loc[("ndcg@5", "hybrid-rrf")]
    assert by_query.outcome_counts(pq) == {"win": row["wins"], "tie": row["ties"], "loss": row["losses"]}
    assert sorted(by_query.queries_with(pq, "win")["query_id"]) == sorted(row["win_ids"])
    assert sorted(by_query.queries_with(pq, "loss")["query_id"]) == sorted(row["loss_ids"])
    np.testing.assert_allclose(pq["delta"], pq["run"] - pq["baseline"])
    assert pq["delta"].is_monotonic_decreasing
    assert pq["delta"].mean() == pytest.approx(row["delta"])
    losses = by_query.queries_with(pq, "loss")
    assert losses["delta"].is_monotonic_increasing  # the worst loss first
    order = by_query.query_order(pq)
    assert order[: len(losses)] == list(losses["query_id"]) and len(order) == len(pq)


def test_per_query_first_ranks(tiny_alignments) -> None:
    from tests.dashboard.conftest import RANKS_A, RANKS_B

    pq = by_query.per_query_frame(tiny_alignments[0], tiny_alignments[1], M("hits@5")).set_index("query_id")
    assert pq.loc["q02", "baseline_first_rank"] == RANKS_A[2] and pq.loc["q02", "run_first_rank"] == RANKS_B[2]
    assert pq.loc["q04", "baseline_first_rank"] == 0  # not retrieved by run-a
    assert pq.loc["q02", "outcome"] == "win" and pq.loc["q09", "outcome"] == "tie"


def test_delta_and_scatter_figures(faq_alignments) -> None:
    pq = by_query.per_query_frame(faq_alignments[0], faq_alignments[1], M("ndcg@5"))
    counts = by_query.outcome_counts(pq)
    fig = by_query.delta_figure(pq, run="dense-e5", baseline="bm25", spec=M("ndcg@5"))
    assert [t.name for t in fig.data] == [
        f"wins ({counts['win']})",
        f"ties ({counts['tie']})",
        f"losses ({counts['loss']})",
    ]
    xs = [x for t in fig.data for x in t.x]
    assert sorted(xs) == list(range(1, len(pq) + 1))
    ys = [y for t in fig.data for y in t.y]
    assert max(ys) == pytest.approx(pq["delta"].max()) and min(ys) == pytest.approx(pq["delta"].min())
    assert "nDCG@5" in fig.layout.title.text
    scatter = by_query.scatter_figure(pq, run="dense-e5", baseline="bm25", spec=M("ndcg@5"))
    assert scatter.data[0].name == "no change"
    assert [t.name.split(" ")[0] for t in scatter.data[1:]] == ["wins", "ties", "losses"]
    # markers group queries with the same pair of values; the counts add up to every query
    assert sum(c for t in scatter.data[1:] for c, _ in t.customdata) == len(pq)
    for trace in scatter.data[1:]:
        outcome = trace.name.split(" ")[0]
        for x, y in zip(trace.x, trace.y):
            assert (y > x) if outcome == "wins" else (y < x) if outcome == "losses" else y == pytest.approx(x)


def test_ranking_pair_marks_relevant_documents_and_the_other_runs_rank(tiny_alignments) -> None:
    left, right = by_query.ranking_pair(tiny_alignments[0], tiny_alignments[1], "q02", depth=10)
    assert list(left.columns[:6]) == by_query.RANKING_COLUMNS and "text" in left.columns and "text" not in right.columns
    assert len(left) == len(right) == 10
    hit = left[left["relevant"]]
    assert list(hit["doc_id"]) == ["d2"] and list(hit["rank"]) == [7] and list(hit["other_rank"]) == [1]
    assert right.iloc[0]["doc_id"] == "d2" and bool(right.iloc[0]["relevant"]) and right.iloc[0]["other_rank"] == 7
    assert right.iloc[0]["judgment"] == "2"
    # a document only one run retrieved has no rank in the other (run-b put d2 where run-a had x2_0)
    assert left.iloc[0]["doc_id"] == "x2_0" and pd.isna(left.iloc[0]["other_rank"])
    assert pd.isna(right.set_index("doc_id").loc["x2_6", "other_rank"]) and left["other_rank"].notna().sum() == 9


def test_pair_depth_reaches_the_first_relevant_document() -> None:
    assert by_query.pair_depth([1, 3], 5) == 10
    assert by_query.pair_depth([11, 2], 5) == 11
    assert by_query.pair_depth([0, 45], 20) == 20  # beyond the limit (or not retrieved): no deeper


# --- segments ----------------------------------------------------------------------------


def test_segments_flag_small_groups_too_few_to_tell(tiny, tiny_alignments) -> None:
    comparison = cmp.run_comparison(tiny_alignments, "run-a", [M("hits@5")], test="t")
    seg = cmp.segment_frame(comparison, M("hits@5"), "run-b", tiny)
    assert list(seg.columns) == cmp.SEGMENT_COLUMNS
    assert list(seg["segment"]) == ["category", "category", "difficulty", "difficulty"]
    by = seg.set_index(["segment", "group"])
    assert by.loc[("category", "a"), "n"] == 8 and by.loc[("category", "b"), "n"] == 4
    assert set(seg["significance"]) == {cmp.TOO_FEW} and seg["too_few"].all()
    labels = cmp.segment_labels(seg)
    assert labels[0] == "category: a (n=8)"
    # too few to tell: the delta, with no p-value and no interval (was the library's beside the mark), as the
    # corrected rows show a too-few delta
    shown = ["p_value", "p_value_corrected", "ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted"]
    assert seg[shown + ["ci_level_adjusted"]].isna().all().all() and seg["delta"].notna().all()
    library = comparison.segments[comparison.segments["run"] == "run-b"]
    assert library[shown].notna().all().all()  # computed, and counted in the facet's family
    fig = cmp.forest_figure(seg, labels=labels, title="per group")
    assert [t.name for t in fig.data] == [cmp.TOO_FEW] and fig.data[0].marker.symbol == "circle-open"
    assert set(fig.data[0].error_x.array) == {0} and "no interval" in fig.data[0].hovertemplate


def test_segments_equal_the_library_and_follow_the_dashboard_order(faq, faq_alignments, faq_cmp) -> None:
    seg = cmp.segment_frame(faq_cmp, M("ndcg@5"), "hybrid-rrf", faq.dataset)
    assert list(seg["group"][seg["segment"] == "difficulty"]) == ["easy", "medium", "hard"]
    library = faq_cmp.segments
    library = library[(library["metric"] == "ndcg@5") & (library["run"] == "hybrid-rrf")].set_index(
        ["segment", "group"]
    )
    for _, row in seg.iterrows():
        ref = library.loc[(row["segment"], row["group"])]
        assert row["n"] == ref["n"] and row["delta"] == pytest.approx(ref["delta"])
        assert row["p_value_corrected"] == pytest.approx(ref["p_value_corrected"])
    assert (seg["significance"] != cmp.TOO_FEW).all()  # every FAQ group has at least 10 judged queries
    assert cmp.segment_frame(faq_cmp, M("ndcg@5"), "nope").empty


# --- dataset power -----------------------------------------------------------------------


def test_the_pairs_of_a_comparison_are_every_pair_whatever_the_baseline(faq_alignments) -> None:
    result = eval_result(faq_alignments, SPECS)
    names = result.run_names
    first, second = (compare_result(result, baseline=b, metrics=SPECS, segments=()) for b in names[:2])
    assert first.family == "pairs" and first.family_size == 3 * len(SPECS) == len(first.pairs)
    assert first.family_text == f"Holm-corrected over 9 comparison(s) (all pairs of 3 runs x {len(SPECS)} metrics)"

    def by_pair(comparison) -> dict:
        return {
            (row.metric, frozenset((row.run_a, row.run_b))): (row.p_value, row.p_value_corrected, abs(row.delta))
            for row in comparison.pairs.itertuples(index=False)
        }

    ours, theirs = by_pair(first), by_pair(second)
    assert ours.keys() == theirs.keys()
    for key, (p, corrected, delta) in ours.items():  # a pair's numbers do not depend on the baseline
        assert theirs[key][0] == pytest.approx(p, rel=1e-12) and theirs[key][1] == pytest.approx(corrected, rel=1e-12)
        assert theirs[key][2] == pytest.approx(delta, abs=1e-12)
    for spec in SPECS:  # and they are discriminative power's, corrected over the whole family
        ref = discriminative_power(result, spec)
        for row in ref.itertuples(index=False):
            p, corrected, _ = ours[(str(spec), frozenset((row.run_a, row.run_b)))]
            assert p == pytest.approx(row.p_value, rel=1e-12)
    every = np.concatenate([discriminative_power(result, spec)["p_value"].to_numpy() for spec in SPECS])
    assert sorted(first.pairs["p_value_corrected"]) == pytest.approx(sorted(stats.holm(every)), rel=1e-12)
    table = first.table.dropna(subset=["p_value"])  # the table's corrected p-values are the family's
    for row in table.itertuples(index=False):
        assert row.p_value_corrected == pytest.approx(ours[(row.metric, frozenset((row.run, row.baseline)))][1])
    narrow = compare_result(result, baseline=names[0], metrics=SPECS, segments=(), family="baseline")
    assert narrow.family_size == 2 * len(SPECS) and len(narrow.pairs) == 2 * len(SPECS)
    assert (narrow.table["p_value_corrected"].fillna(0) <= first.table["p_value_corrected"].fillna(0) + 1e-15).all()


def test_power_table_reads_the_pairs(faq_alignments) -> None:
    pairs = compare_result(eval_result(faq_alignments, SPECS), metrics=SPECS, segments=()).pairs
    table = power.power_table(pairs, 91)
    assert (
        list(table.columns) == power.POWER_COLUMNS
        and list(table["metric"]) == list(map(str, SPECS))
        and table["label"][1] == "nDCG@5"
    )
    row = table.set_index("metric").loc["ndcg@5"]
    part = pairs[pairs["metric"] == "ndcg@5"]
    assert row["share"] == pytest.approx(part["significant"].mean())
    assert row["mdd"] == pytest.approx(stats.min_detectable_delta(float(part["sd_difference"].median()), 91))


def test_pairs_table_and_queries_needed(faq_alignments) -> None:
    pairs = compare_result(eval_result(faq_alignments, SPECS), metrics=SPECS, segments=()).pairs
    chosen = power.pairs_table(pairs, M("ndcg@5"), 91, alpha=0.05, power=0.9)
    assert list(chosen.columns) == [
        "run_a",
        "run_b",
        "delta",
        "p_value",
        "p_value_corrected",
        "significant",
        "sd_difference",
        "mdd",
        "queries_needed",
    ]
    for _, row in chosen.iterrows():
        assert row["mdd"] == pytest.approx(stats.min_detectable_delta(row["sd_difference"], 91, power=0.9))
        assert row["queries_needed"] == stats.queries_needed(abs(row["delta"]), row["sd_difference"], power=0.9)
        # an observed difference below the smallest detectable one needs more queries than the dataset has
        assert (row["queries_needed"] > 91) == (abs(row["delta"]) < row["mdd"])


def test_stages_rules_and_needed() -> None:
    assert [power.stage_of(n) for n in (10, 25, 40, 91, 100, 150, 500)] == [
        "below prototype size",
        "prototype size",
        "between prototype and development size",
        "development size",
        "release size",
        "release size",
        "beyond release size",
    ]
    rules = power.rules_frame(0.2, 91)
    assert list(rules["stage"][:3]) == ["prototype", "development", "release"] and rules["stage"][3] == "this dataset"
    assert rules["mdd_low_end"][0] == pytest.approx(stats.min_detectable_delta(0.2, 20))
    assert rules["mdd_high_end"][2] == pytest.approx(stats.min_detectable_delta(0.2, 200))
    needed = power.needed_frame(0.2, [0.01, 0.05, 0.1])
    assert list(needed["queries_needed"]) == [stats.queries_needed(d, 0.2) for d in (0.01, 0.05, 0.1)]
    assert power.queries_needed(0.0, 0.2) is None and power.queries_needed(0.05, float("nan")) is None


def test_power_curve_and_figure() -> None:
    curve = power.power_curve_frame([0.1, 0.2, 0.3], n_max=1000)
    assert list(curve.columns) == ["n", "mdd", "mdd_low", "mdd_high"]
    assert (
        curve["mdd"].is_monotonic_decreasing
        and (curve["mdd_low"] <= curve["mdd"]).all()
        and (curve["mdd"] <= curve["mdd_high"]).all()
    )
    assert curve["mdd"].iloc[0] == pytest.approx(stats.min_detectable_delta(0.2, int(curve["n"].iloc[0])))
    fig = power.power_figure(curve, 91, 0.2, metric=M("ndcg@10"), target_delta=0.05)
    assert [t.name for t in fig.data] == ["range over run pairs", "median run pair", "this dataset"]
    assert fig.data[2].x == (91,) and fig.data[2].y[0] == pytest.approx(stats.min_detectable_delta(0.2, 91))
    assert fig.data[2].textposition == "top right"  # above the target line, whose label sits below it
    below = power.power_figure(curve, 300, 0.2, metric=M("ndcg@10"), target_delta=0.05)
    assert below.data[2].y[0] < 0.05 and below.data[2].textposition == "bottom left"  # the label does not cross it
    assert below.layout.annotations[-1].yanchor == "bottom"  # and the line's label goes above the line
    # at the left, where the curves stand far above the line (at the right they cross it, through its words)
    assert below.layout.annotations[-1].xanchor == "left" and fig.layout.annotations[-1].xanchor == "left"
    assert fig.layout.annotations[-1].yanchor == "top"  # below the line: the band is above it there
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    # shaded ranges (data values) labelled above the plot (annotations on a log axis take log10 values)
    assert [(r.x0, r.x1) for r in rects] == [(20, 30), (50, 100), (100, 200)]
    labels = {a.text.split("<br>")[0]: 10**a.x for a in fig.layout.annotations if "<br>" in (a.text or "")}
    assert labels.keys() == {"prototype", "development", "release"} and 20 < labels["prototype"] < 30
    needed = stats.queries_needed(0.05, 0.2)
    assert any(f"{needed:,} queries" in (a.text or "") for a in fig.layout.annotations)
    assert power.power_curve_frame([]).empty


def test_plan_holds_what_the_power_page_shows(faq_alignments) -> None:
    pairs = compare_result(eval_result(faq_alignments, SPECS), metrics=SPECS, segments=()).pairs
    spec, level = M("ndcg@5"), 0.05 / 6
    planned = power.plan(pairs, spec, 91, alpha=level, power=0.9, target=0.04)
    chosen = power.pairs_table(pairs, spec, 91, alpha=level, power=0.9)
    pd.testing.assert_frame_equal(planned.pairs, chosen)
    sd = float(chosen["sd_difference"].median())
    assert planned.sd == pytest.approx(sd) and planned.needed == stats.queries_needed(0.04, sd, alpha=level, power=0.9)
    pd.testing.assert_frame_equal(planned.metrics, power.power_table(pairs, 91, alpha=level, power=0.9))
    assert planned.here["metric"] == "ndcg@5" and planned.here["mdd"] == pytest.approx(
        stats.min_detectable_delta(sd, 91, alpha=level, power=0.9)
    )
    pd.testing.assert_frame_equal(planned.rules, power.rules_frame(sd, 91, alpha=level, power=0.9))
    assert list(planned.needed_table["delta"]) == [0.01, 0.02, 0.03, 0.04, 0.05, 0.1]  # the one asked for among them
    curve = power.power_curve_frame(list(chosen["sd_difference"]), alpha=level, power=0.9, n_max=1000)
    pd.testing.assert_frame_equal(planned.curve, curve)
    assert planned.figure.data[2].y[0] == pytest.approx(planned.here["mdd"])
    given = curve.head(3)  # a curve made before is used as given, not searched again
    assert power.plan(pairs, spec, 91, alpha=level, power=0.9, target=0.04, curve=given).curve is given


# --- fusion ------------------------------------------------------------------------------


def test_fuse_runs_equals_the_library_and_keeps_chunk_columns(faq) -> None:
    runs = [r for r, _ in faq.runs][:2]
    fused = fusion.fuse_runs(runs, method="rrf", k=60)
    assert fused.name == "rrf60(bm25+dense-e5)"
    assert {"source_doc", "text"} <= set(fused.frame.columns)
    reference = fuse(runs, method="rrf", k=60).frame
    merged = fused.frame.merge(reference, on=["query_id", "doc_id"], suffixes=("", "_ref"))
    assert len(merged) == len(reference) == len(fused.frame)
    np.testing.assert_allclose(merged["score"], merged["score_ref"])
    # the chunk ids map to documents, so the fused run scores like a hybrid should
    result = ragmetrics.evaluate(faq.dataset, [*runs, fused], ["ndcg@10"], warn=False).mean()["ndcg@10"]
    assert result[fused.name] > max(result["bm25"], result["dense-e5"]) - 0.05 and result[fused.name] > 0.5
    # inputs are untouched
    assert list(runs[0].frame.columns) == ["query_id", "doc_id", "score", "text", "source_doc"]


def test_weighted_combsum_name_and_norm(faq) -> None:
    runs = [r for r, _ in faq.runs][:2]
    fused = fusion.fuse_runs(runs, method="combsum", norm="zscore", weights=[0.7, 0.3])
    assert fused.name == "combsum-zscore(0.7·bm25+0.3·dense-e5)"
    reference = fuse(runs, method="combsum", norm="zscore", weights=[0.7, 0.3]).frame.set_index(["query_id", "doc_id"])[
        "score"
    ]
    ours = fused.frame.set_index(["query_id", "doc_id"])["score"]
    np.testing.assert_allclose(ours.loc[reference.index], reference)
    raw = fusion.fuse_runs(runs, method="combmnz", norm="none")
    assert raw.name == "combmnz-raw(bm25+dense-e5)"
    assert fusion.fused_name(["a", "b"], "rrf", k=10, weights=[2, 2]) == "rrf10(a+b)"


def test_trec_download_round_trips(faq, tmp_path) -> None:
    fused = fusion.fuse_runs([r for r, _ in faq.runs][:2], method="rrf", k=60)
    data = fusion.trec_bytes(fused)
    first = data.decode("utf-8").splitlines()[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1" and first[5] == "rrf60(bm25+dense-e5)"
    path = tmp_path / f"{fusion.file_stem(fused.name)}.trec"
    path.write_bytes(data)
    back = load_run(path)
    merged = back.frame.merge(fused.frame, on=["query_id", "doc_id"], suffixes=("", "_fused"))
    assert len(merged) == len(fused.frame)
    np.testing.assert_allclose(merged["score"], merged["score_fused"])
    assert (
        fusion.file_stem("rrf60(0.5·bm25+dense)") == "rrf60_0.5_bm25+dense" and fusion.file_stem("混合") == "fused-run"
    )


def test_fusion_preview_and_source(faq) -> None:
    runs = [r for r, _ in faq.runs][:2]
    fused = fusion.fuse_runs(runs, method="rrf", k=60)
    inputs = [ragmetrics.align(faq.dataset, r) for r in runs]
    preview = fusion.fusion_preview(inputs, ragmetrics.align(faq.dataset, fused), [M("recall@5"), M("ndcg@5")])
    assert list(preview.columns) == ["run", "role", "recall@5", "ndcg@5"]
    assert list(preview["role"]) == ["input", "input", "fused"]
    reference = ragmetrics.evaluate(faq.dataset, [*runs, fused], ["ndcg@5"], warn=False).mean()["ndcg@5"]
    assert preview.set_index("run").loc[fused.name, "ndcg@5"] == pytest.approx(reference[fused.name])
    assert (
        fusion.fusion_source(["bm25", "dense"], "rrf", k=60, norm=None, weights=[1, 1])
        == "fusion: rrf k=60 of bm25, dense"
    )
    assert (
        fusion.fusion_source(["a", "b"], "combsum", k=60, norm="minmax", weights=[0.5, 1])
        == "fusion: combsum norm=minmax weights=0.5/1 of a, b"
    )


def test_compare_result_on_tiny_matches_the_eval_result_path(tiny, tiny_runs, tiny_alignments) -> None:
    """The dashboard's aligned EvalResult gives the library's numbers on hand-made data too."""
    ours = cmp.run_comparison(tiny_alignments, "run-a", [M("mrr@10")], test="wilcoxon").table
    ref = compare_result(
        ragmetrics.evaluate(tiny, tiny_runs, ["mrr@10"], warn=False), baseline="run-a", test="wilcoxon"
    ).table
    np.testing.assert_allclose(
        ours["p_value"].to_numpy(dtype=float), ref["p_value"].to_numpy(dtype=float), equal_nan=True
    )
    assert not math.isnan(ours["p_value"].iloc[1])


def test_choices_and_labels_come_from_the_library_registries(faq_cmp) -> None:
    from dashboard.core import share
    from ragmetrics.analysis import compare as library_compare
    from ragmetrics.analysis import fusion as library_fusion

    assert list(cmp.TESTS) == list(stats.TESTS) and cmp.test_title("randomization") == "Fisher randomization"
    assert all(cmp.test_title(t) == stats.TESTS[t].title for t in stats.TESTS)
    assert cmp.ALPHAS is share.ALPHAS and cmp.MIN_GROUP is library_compare.MIN_GROUP
    assert faq_cmp.correction == "holm"
    display = cmp.comparison_display(cmp.comparison_frame(faq_cmp), "bm25", faq_cmp.correction)
    assert "p (Holm)" in display.columns
    assert fusion.NORM_CHOICES == ("minmax", "zscore", "none") and fusion.FUSION_METHODS is library_fusion.METHODS


def test_metrics_the_runs_cannot_give_are_left_out_with_the_librarys_reason() -> None:
    import pandas as pd

    import ragmetrics

    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 1]})
    dataset = ragmetrics.Dataset.from_frames(qrels)
    rows = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "x"], "score": [1.0, 1.0]})
    alignments = [ragmetrics.align(dataset, ragmetrics.Run.from_frame(rows, name=n)) for n in ("a", "b")]
    kept, notes = cmp.computable_specs(alignments, [M("ndcg@5"), M("answer_in@3"), M("recall@5")])
    assert kept == [M("ndcg@5"), M("recall@5")]
    assert len(notes) == 1 and notes[0].startswith("answer_in@3 is left out: keyword and answer metrics read")


def test_a_tiny_difference_never_reads_as_zero() -> None:
    from dashboard.core.text import signed

    assert signed(0.0341) == "+0.034"
    assert signed(0.00042) == "+0.00042"
    assert signed(-0.0000123) == "-0.000012"
    assert signed(0.0) == "+0.000"


def test_a_difference_that_is_not_significant_is_never_worded_as_a_win() -> None:
    """The verdict words a non-significant result as such ("No significant difference"), never "beats"; beside the
    corrected p-value is the delta's interval adjusted the same way, at the level the correction tested it at
    (one comparison: 95%), named so; uncorrected, the 95% t interval, named without an adjustment."""
    import ragmetrics as rm
    from ragmetrics.analysis.compare import compare

    dataset = rm.Dataset.from_dict({f"q{i}": {"a": 1} for i in range(12)})
    base = rm.Run.from_dict(
        {f"q{i}": {"a": 2.0, "b": 1.0} if i % 2 else {"b": 2.0, "a": 1.0} for i in range(12)}, name="base"
    )
    other = rm.Run.from_dict(
        {f"q{i}": {"a": 2.0, "b": 1.0} if i % 2 or i == 0 else {"b": 2.0, "a": 1.0} for i in range(12)}, name="other"
    )
    comparison = compare(dataset, [base, other], ["mrr"], warn=False)
    said = cmp.verdict(comparison, M("mrr"), markdown=False)
    assert said is not None and said.startswith("No significant difference on MRR: other is ahead of base by +0.04")
    assert "beats" not in said and "95% CI (Holm-adjusted) [" in said and "not significant at α = 0.05" in said
    row = comparison.table.iloc[1]
    assert f"[{signed(row['ci_low_adjusted'])}, {signed(row['ci_high_adjusted'])}]" in said
    assert "over 1 comparison(s)" in said

    plain = compare(dataset, [base, other], ["mrr"], correction="none", warn=False)
    said = cmp.verdict(plain, M("mrr"), markdown=False)
    row = plain.table.iloc[1]
    assert f"95% CI [{signed(row['ci_low'])}, {signed(row['ci_high'])}]" in said and "uncorrected" in said

    comparison = compare(dataset, [base, other], ["mrr", "recall@1"], warn=False)  # a family of two
    said = cmp.verdict(comparison, M("mrr"), markdown=False)
    row = comparison.table[comparison.table["metric"] == "mrr"].iloc[1]
    level = row["ci_level_adjusted"]
    assert 0.95 < level <= 0.975 and f"{100 * level:.4g}% CI (Holm-adjusted) [" in said
    assert f"[{signed(row['ci_low_adjusted'])}, {signed(row['ci_high_adjusted'])}]" in said
    assert "Holm-corrected over 2 comparison(s);" in said  # one pair of runs: no family to name beyond it


def test_p_values_in_running_text() -> None:
    assert cmp.p_equals(0.01234) == "p = 0.0123" and cmp.p_equals(0.00001) == "p < 0.0001"
    assert cmp.p_equals(float("nan")) == "p = —"


def test_a_verdict_says_when_its_interval_and_its_test_disagree() -> None:
    """The Wilcoxon test finds hybrid-rrf60 significantly above bm25-stem on MAP (Holm over all pairs of three
    SciFact runs x eight metrics) while the Holm-adjusted t interval beside it holds 0: said, not left to look like a
    contradiction; with the t-test the two agree and nothing is added."""
    folder = "tests/data/scifact"
    dataset = ragmetrics.io.load_dataset(f"{folder}/qrels.tsv")
    runs = [load_run(f"{folder}/{n}.trec.gz") for n in ("bm25-stem", "hybrid-rrf60", "dense-all-minilm-l6-v2")]
    metrics = ["ndcg@10", "recall@100", "mrr", "map", "precision@5", "hits@10", "recall@10", "ndcg@5"]
    result = ragmetrics.evaluate(dataset, runs, metrics, warn=False)
    wilcoxon = cmp.verdict(compare_result(result, baseline="bm25-stem", test="wilcoxon"), M("map"), markdown=False)
    assert wilcoxon is not None and "significant at α = 0.05" in wilcoxon and "CI (Holm-adjusted) [-0.009" in wilcoxon
    assert "The interval (Student's t at each comparison's level) and the verdict (Wilcoxon" in wilcoxon
    assert "they disagree, the interval holding 0." in wilcoxon
    paired_t = cmp.verdict(compare_result(result, baseline="bm25-stem", test="t"), M("map"), markdown=False)
    assert paired_t is not None and "disagree" not in paired_t


def test_the_verdict_and_marks_say_when_wilcoxon_and_the_mean_disagree():
    """40 queries gain a little, 4 lose a lot: Wilcoxon finds the run significantly better on the typical query while
    the mean delta is negative. Was: the page would call it "▼ worse"; now the mark and the verdict say the test and
    the mean disagree."""
    ids = [f"q{i}" for i in range(44)]
    dataset = ragmetrics.Dataset.from_frames(pd.DataFrame({"query_id": ids, "doc_id": "rel", "relevance": 1}))

    def run(name: str, ranks: list[int]) -> ragmetrics.Run:
        rows = [(q, "rel" if r == rank else f"x{r}", 100.0 - r) for q, rank in zip(ids, ranks) for r in range(1, 21)]
        return ragmetrics.Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name=name)

    runs = [run("base", [20] * 40 + [1] * 4), run("new", [10] * 40 + [20] * 4)]
    result = ragmetrics.evaluate(dataset, runs, ["mrr"], warn=False)
    comparison = compare_result(result, baseline="base", test="wilcoxon", segments=())
    marks = cmp.comparison_frame(comparison)
    assert list(marks.loc[marks["run"] == "new", "significance"]) == [cmp.MIXED]
    said = cmp.verdict(comparison, M("mrr"), markdown=False)
    assert (
        said is not None and said.startswith("No verdict on ") and "Wilcoxon signed-rank finds the run better" in said
    )
    assert "mean delta is -0.0409" in said
