"""Significance tests, intervals, Holm, power, and compare() on real and textbook data."""

from __future__ import annotations

import io
import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import ragmetrics as rm
from dashboard.core.intervals import mean_ci as dashboard_interval
from ragmetrics.analysis import stats
from ragmetrics.analysis.compare import (
    Comparison,
    adjusted_intervals,
    bounds_text,
    compare,
    compare_result,
    corrected_rows,
    discriminative_power,
    intervals_name,
    paired_row,
    planning_alpha,
    planning_words,
)
from ragmetrics.analysis.stability import _verdict
from ragmetrics.analysis.verdicts import interval_disagreement, verdict
from ragmetrics.cli import main
from ragmetrics.cli.compare import interval_words, row_notes
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io import load_dataset, load_run
from tests.partitioned_cases import SCIFACT

# Student's sleep data (Cushny & Peebles 1905): extra hours of sleep under two drugs, paired.
SLEEP_A = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
SLEEP_B = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])


def test_paired_t_matches_the_textbook_value_and_scipy():
    p = stats.paired_p_value(SLEEP_A, SLEEP_B, test="t")
    assert p == sps.ttest_rel(SLEEP_A, SLEEP_B).pvalue
    assert p == pytest.approx(0.002833, abs=1e-6)  # t = -4.0621, df = 9 (R's t.test(paired=TRUE))


def test_wilcoxon_is_exact_with_ties_at_few_queries_and_scipy_exact_without():
    # the sleep data: ties and a zero, 9 non-zero differences all of one sign: 2 of the 2^9 sign flips reach it
    # (R's wilcox.test gives the normal approximation's 0.009091)
    assert stats.paired_p_value(SLEEP_A, SLEEP_B, test="wilcoxon") == pytest.approx(2 / 2**9, abs=1e-12)
    # five tied +1 differences and a zero: the exact minimum is 2/32 = 0.0625 (the normal approximation: 0.037)
    assert stats.paired_p_value(np.array([1.0] * 5 + [0.0]), np.zeros(6), test="wilcoxon") == pytest.approx(0.0625)
    rng = np.random.default_rng(11)
    for n in (4, 8, 13):
        diff = rng.integers(-2, 3, n).astype(np.float64)
        scipy_exact = sps.wilcoxon(diff, method=sps.PermutationMethod()).pvalue  # exact: 2^n <= its resamples
        assert stats.paired_p_value(diff, np.zeros(n), test="wilcoxon") == pytest.approx(scipy_exact, abs=1e-12)
    a = np.array([0.11, 0.52, 0.33, 0.94, 0.25, 0.66, 0.17, 0.08])
    b = a + np.array([0.01, 0.03, -0.02, 0.05, 0.04, 0.06, 0.07, 0.08])
    assert stats.paired_p_value(a, b, test="wilcoxon") == sps.wilcoxon(a, b, method="exact").pvalue


def test_wilcoxon_with_tied_integer_differences_keeps_its_size():
    """Under the null (integer differences symmetric about 0, so ties; and one or two queries tied at 0), Wilcoxon
    rejects at most alpha of the time, up to simulation error, at 5, 10 and 20 queries. The normal approximation it
    used with ties rejected 7.4% of 10 queries (8 differences of +-1, 2 zeros) and 6.6% of 20 (19 and a zero)."""
    rng = np.random.default_rng(2024)
    draws, alpha = 4000, 0.05
    error = 2 * np.sqrt(alpha * (1 - alpha) / draws)
    cases = [((-1.0, 1.0), zeros, n) for zeros in (1, 2) for n in (5, 10, 20)]
    cases += [((-2.0, -1.0, 1.0, 2.0), 1, n) for n in (5, 10)]  # at 20, thousands of multisets: minutes
    for support, zeros, n in cases:
        p_of: dict[tuple[float, ...], float] = {}  # the p-value depends on the differences' multiset only
        rejected = 0
        for _ in range(draws):
            diff = np.sort(np.concatenate([rng.choice(support, n - zeros), np.zeros(zeros)]))
            key = tuple(diff)
            if key not in p_of:
                p_of[key] = stats.paired_p_value(diff, np.zeros(n), test="wilcoxon")
            rejected += bool(p_of[key] < alpha)
        assert rejected / draws <= alpha + error, (support, zeros, n, rejected / draws)


def test_randomization_is_exact_on_small_samples_and_seeded():
    # 10 pairs, one zero difference: 2^10 sign flips <= n_resamples -> scipy enumerates them all
    p = stats.paired_p_value(SLEEP_A, SLEEP_B, test="randomization", n_resamples=5000)
    exact = sps.permutation_test(
        (SLEEP_A, SLEEP_B), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples", vectorized=True
    ).pvalue
    assert p == exact
    assert p == pytest.approx(4 / 1024, abs=1e-12)


def test_randomization_and_bootstrap_converge_to_the_t_test_on_large_samples():
    rng = np.random.default_rng(3)
    a = rng.normal(0.50, 0.2, 1500)
    b = a + rng.normal(-0.01, 0.2, 1500)
    p_t = stats.paired_p_value(a, b, test="t")
    assert 0.005 < p_t < 0.2
    # 10,000 resamples: a Monte-Carlo standard error of about 0.003 at p = 0.1, a third of the tolerance
    p_rand = stats.paired_p_value(a, b, test="randomization", n_resamples=10_000, seed=1)
    p_boot = stats.paired_p_value(a, b, test="bootstrap", n_resamples=10_000, seed=1)
    assert p_rand == pytest.approx(p_t, abs=0.01)
    assert p_boot == pytest.approx(p_t, abs=0.01)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_seeded_tests_repeat_exactly_and_depend_on_the_seed(test):
    rng = np.random.default_rng(0)
    a, b = rng.random(200), rng.random(200)
    first = stats.paired_p_value(a, b, test=test, seed=42, n_resamples=3000)
    assert first == stats.paired_p_value(a, b, test=test, seed=42, n_resamples=3000)
    assert first != stats.paired_p_value(a, b, test=test, seed=43, n_resamples=3000)


def test_the_bootstrap_on_too_few_queries_gives_the_exact_randomization_p():
    """Was: three queries with a constant difference gave p = 1/10,001 (every resample of 3 is centred on 0), a
    'significant' verdict where the exact randomization test, over all 2^3 sign flips, gives 0.25."""
    a, b = np.array([0.5, 0.6, 0.7]), np.array([0.2, 0.3, 0.4])
    assert stats.paired_p_value(a, b, test="bootstrap") == 0.25
    rng = np.random.default_rng(7)
    for n in range(2, stats.BOOTSTRAP_MIN_QUERIES):
        a, b = rng.random(n), rng.random(n)
        exact = sps.permutation_test(
            (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples", vectorized=True,
            n_resamples=np.inf, alternative="two-sided",
        ).pvalue  # fmt: skip
        assert stats.paired_p_value(a, b, test="bootstrap", seed=n) == pytest.approx(exact), n
    a, b = rng.random(stats.BOOTSTRAP_MIN_QUERIES), rng.random(stats.BOOTSTRAP_MIN_QUERIES)
    assert stats.paired_p_value(a, b, test="bootstrap", seed=1) != stats.paired_p_value(a, b, test="bootstrap", seed=2)


def test_compare_says_when_the_bootstrap_had_too_few_queries(tmp_path):
    qrels, base, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(3)))
    base.write_text("".join(f"q{i} Q0 x 1 3 b\nq{i} Q0 d{i} 2 2 b\n" for i in range(3)))
    run.write_text("".join(f"q{i} Q0 d{i} 1 2 a\nq{i} Q0 y 2 1 a\n" for i in range(3)))
    out, err = io.StringIO(), io.StringIO()
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(base), "--run", str(run), "-m", "mrr"]
    assert main([*argv, "--test", "bootstrap"], out, err) == 0, err.getvalue()
    assert "p=0.25 " in out.getvalue() and "*" not in out.getvalue().splitlines()[0]
    assert "bootstrap: below 10 queries too few to resample; p is the exact randomization test's" in out.getvalue()


@pytest.mark.parametrize("test", list(stats.TESTS))
def test_a_constant_difference_takes_the_exact_sign_flip_p_whatever_the_test(test):
    """Was: a constant difference (zero variance) gave the t-test p = 0, and one that is constant only up to
    rounding (0.3 - 0.2, 0.2 - 0.1, ...) slipped past an exact-equality guard to p = 3.5e-32 on 3 queries. The
    t-test's p is undefined there; every test gives the exact sign-flip p, 2^(1 - n) (2 of the 2^n flips)."""
    assert stats.paired_p_value(np.array([1.0, 1.0]), np.array([0.0, 0.0]), test=test) == 0.5
    a, b = np.array([0.3, 0.2, 0.7]), np.array([0.2, 0.1, 0.6])
    assert np.ptp(a - b) > 0  # rounding: not exactly constant
    assert stats.paired_p_value(a, b, test=test) == 0.25
    assert stats.paired_p_value(b, a, test=test) == 0.25
    assert stats.paired_p_value(np.full(12, 0.4), np.full(12, 0.1), test=test) == 2.0**-11
    assert stats.paired_p_value(np.array([0.1 + 0.2, 0.5]), np.array([0.3, 0.5]), test=test) == 1.0  # 5.6e-17: 0


def test_check_does_not_fail_on_a_constant_difference_of_two_queries(tmp_path):
    """Was: 2 queries, hits@1 going 1 -> 0 on both: the t-test gave p = 0 and ``check`` said FAIL regression; the exact
    sign-flip p is 0.5."""
    qrels, base, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(2)))
    base.write_text("".join(f"q{i} Q0 d{i} 1 2 b\nq{i} Q0 x 2 1 b\n" for i in range(2)))
    run.write_text("".join(f"q{i} Q0 x 1 2 a\nq{i} Q0 d{i} 2 1 a\n" for i in range(2)))
    for test in stats.TESTS:
        out, err = io.StringIO(), io.StringIO()
        argv = ["check", "--dataset", str(qrels), "--run", str(run), "--baseline", str(base), "-m", "hits@1"]
        assert main([*argv, "--test", test], out, err) == 0, (test, out.getvalue(), err.getvalue())
        assert "PASS no significant change: hits@1" in out.getvalue() and "p=0.5 " in out.getvalue(), out.getvalue()
        # its interval is the sign-flip test's, inverted: at p = 0.5 it bounds nothing (it was the point [-1, -1])
        assert "[no bound]" in out.getvalue() and "note: no interval: the difference is the same on each of the 2" in (
            out.getvalue()
        )
        assert "disagree" not in out.getvalue()


def test_a_constant_difference_s_interval_is_the_inverted_sign_flip_test_s():
    """2 queries: p = 0.5, no interval at any level; 12 queries: p = 2^-11, below 1 - 0.95 and below Bonferroni's
    0.05 / 6, the point."""
    table = pd.DataFrame({"run": ["b", "c"], "baseline": ["a", "a"], "delta": [-1.0, 0.3], "sd_difference": [0.0, 0.0],
                          "n": [2, 12], "p_value": [0.5, 2.0**-11], "p_value_corrected": [1.0, 6 * 2.0**-11],
                          "ci_low": [-1.0, 0.3], "ci_high": [-1.0, 0.3]})  # fmt: skip
    for correction in ("none", "bonferroni"):
        out = adjusted_intervals(table, correction, 0.05, family_size=6)
        assert np.isnan(out["ci_low_adjusted"].iloc[0]) and np.isnan(out["ci_high_adjusted"].iloc[0])
        assert out["ci_low_adjusted"].iloc[1] == out["ci_high_adjusted"].iloc[1] == 0.3


def test_two_runs_alike_on_every_query_follow_the_constant_difference_s_rule():
    """Was: a difference of 0 on each of 3 queries printed the point [+0.0000, +0.0000] (p = 1) while any other
    constant difference of 3 queries printed [no bound]; a shift of the zeros by any value is a constant difference
    whose sign-flip p, 2^-2, rejects none at 95%. Now both have no bound at 3 queries and the point at 12."""
    table = pd.DataFrame({"run": ["b", "c"], "baseline": ["a", "a"], "delta": [0.0, 0.0], "sd_difference": [0.0, 0.0],
                          "n": [3, 12], "p_value": [1.0, 1.0], "p_value_corrected": [1.0, 1.0],
                          "ci_low": [0.0, 0.0], "ci_high": [0.0, 0.0]})  # fmt: skip
    for correction in ("none", "holm"):
        out = adjusted_intervals(table, correction, 0.05)
        assert np.isnan(out["ci_low_adjusted"].iloc[0]) and np.isnan(out["ci_high_adjusted"].iloc[0])
        assert out["ci_method_adjusted"].iloc[0] == "none"
        assert out["ci_low_adjusted"].iloc[1] == out["ci_high_adjusted"].iloc[1] == 0.0


@pytest.mark.parametrize(
    ("low", "high", "digits", "shown"),
    [
        (0.00042, 0.065, 3, "[+0.00042, +0.065]"),  # excludes 0: its end keeps 2 significant digits
        (-0.0000123, 0.5, 4, "[-0.000012, +0.5000]"),
        (0.0, 0.0106, 4, "[+0.0000, +0.0106]"),  # a true 0 reads 0
        (-0.0106, 0.0576, 4, "[-0.0106, +0.0576]"),
        (float("nan"), float("nan"), 3, "[no bound]"),
    ],
)
def test_an_interval_that_excludes_0_never_reads_as_touching_it(low, high, digits, shown):
    """The dashboard's verdict prints its interval to 3 decimals: a lower end of +0.0004 beside "significant" read
    "[+0.000, ...]" as if the interval touched 0."""
    assert bounds_text(low, high, digits=digits) == shown


def test_identical_runs_give_p_one_and_unknown_test_is_refused():
    x = np.array([0.1, 0.5, 1.0])
    for test in stats.TESTS:
        assert stats.paired_p_value(x, x, test=test) == 1.0
    with pytest.raises(rm.RagMetricsError, match="must be one of"):
        stats.paired_p_value(x, x + 1, test="z")


def test_holm_on_a_textbook_example():
    # Holm (1979) step-down: sorted p * (m, m-1, ...), running max, capped at 1
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan])
    assert np.allclose(stats.holm(p)[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(stats.holm(p)[4])


def test_t_interval_brackets_the_mean_vectorised_over_points():
    """Each column's interval is scipy's Student's t interval of its mean; a constant column is its point."""
    rng = np.random.default_rng(1)
    values = rng.random((300, 5))
    values[:, 4] = 0.25
    low, high = stats.mean_t_interval(values)
    mean = values.mean(axis=0)
    assert low.shape == (5,) and np.all(low[:4] < mean[:4]) and np.all(mean[:4] < high[:4])
    for column in range(4):
        expected = sps.t.interval(0.95, 299, loc=mean[column], scale=sps.sem(values[:, column]))
        assert (low[column], high[column]) == pytest.approx(expected, abs=1e-12)
    assert low[4] == high[4] == 0.25
    assert stats.mean_t_interval(values.reshape(300, 5, 1))[0].shape == (5, 1)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
def test_a_mean_s_interval_and_a_delta_s_cover_what_they_claim_on_few_queries(n):
    """Simulated: 2,000 seeded samples of n queries from each of four populations of per-query values (graded
    values, Beta(2, 3); paired differences of graded values; of reciprocal ranks; sparse differences, 85% ties), the
    95% interval of the mean (:func:`stats.mean_interval`, Student's t for these) covers the population's mean at
    least 92% of the time on the first three, from 2 queries on; the percentile bootstrap the intervals used to be
    covered 49-74% at 2 and 3 queries and 82-90% at 10. Sparse differences: at 2-5 queries most samples are all ties
    and no interval can cover (t: 41-74%); from 30 queries on t's covers 93% or more."""
    rng = np.random.default_rng([7, n])
    size = 400_000
    base = rng.beta(2, 3, size)
    reciprocal = [1 / rng.integers(1, k, size) * (rng.random(size) < 0.8) for k in (11, 8)]
    ties = rng.random(size)
    sparse = np.where(ties < 0.15, rng.uniform(0, 1, size), np.where(ties < 0.25, -rng.uniform(0, 1, size), 0.0))
    populations = {
        "graded": base,
        "graded differences": np.clip(base + rng.normal(0.03, 0.15, size), 0, 1) - base,
        "reciprocal-rank differences": reciprocal[1] - reciprocal[0],
        "sparse differences": sparse,
    }
    draws = 2000
    for name, population in populations.items():
        samples = population[rng.integers(0, size, (draws, n))]
        low, high = stats.mean_t_interval(samples.T)  # one interval per sample (column)
        truth = population.mean()
        covered = float(np.mean((low <= truth) & (truth <= high)))
        if name != "sparse differences":
            assert covered >= 0.92, (name, n, covered)
            if n >= 5:
                assert covered <= 0.985, (name, n, covered)  # not wider than it claims either
        elif n >= 30:
            assert covered >= 0.92, (name, n, covered)
        low_b, high_b = np.quantile(  # the percentile bootstrap, 200 resamples, on 200 of the samples
            samples[:200, rng.integers(0, n, (200, n))].mean(axis=2), [0.025, 0.975], axis=1
        )
        if n <= 3 and name != "sparse differences":
            assert np.mean((low_b <= truth) & (truth <= high_b)) < 0.85, name  # the simulation tells them apart


def test_t_interval_on_thousands_of_queries_is_the_normal_one():
    """At 20,001 queries t's interval and the normal one differ by under 0.01% of the half-width: no separate
    large-sample method is needed (the intervals used to switch from the bootstrap to the normal above 20,000)."""
    rng = np.random.default_rng(1)
    n = 20_001
    matrix = np.column_stack([rng.beta(0.5, 0.5, n), 1 / np.maximum(1, rng.geometric(0.3, n))])
    low, high = stats.mean_interval(matrix)
    half = sps.norm.ppf(0.975) * matrix.std(axis=0, ddof=1) / np.sqrt(n)
    np.testing.assert_allclose(high - matrix.mean(axis=0), half, rtol=1e-4)
    np.testing.assert_allclose(matrix.mean(axis=0) - low, half, rtol=1e-4)


def test_power_helpers_are_consistent():
    n = stats.queries_needed(0.05, 0.25)
    assert n == 199  # the normal approximation's 197 ((1.96 + 0.8416)^2 * 0.25^2 / 0.05^2 = 196.2) falls short
    assert stats.min_detectable_delta(0.25, n) <= 0.05 < stats.min_detectable_delta(0.25, n - 1)


@pytest.mark.parametrize(("n", "alpha"), [(5, 0.05), (10, 0.05), (20, 0.05), (10, 0.05 / 18), (30, 0.05 / 18)])
def test_the_smallest_detectable_difference_is_detected_with_the_power_it_claims(n, alpha):
    """Simulated: a paired t-test at ``alpha`` on ``n`` normal differences whose mean is the smallest detectable
    difference rejects in 80% of 4,000 seeded samples (the normal approximation gave 0.57 at n = 5 with alpha
    0.05, and 0.46 at n = 10 and 0.17 at n = 5 with alpha / 18); so do the queries planned for a difference."""
    from scipy import stats as sps

    rng = np.random.default_rng(n)
    delta = stats.min_detectable_delta(1.0, n, alpha=alpha)
    p = sps.ttest_1samp(rng.normal(delta, 1.0, size=(4000, n)), 0, axis=1).pvalue
    assert abs((p < alpha).mean() - 0.8) < 0.025
    needed = stats.queries_needed(0.2, 0.25, alpha=alpha)
    p = sps.ttest_1samp(rng.normal(0.2, 0.25, size=(4000, needed)), 0, axis=1).pvalue
    assert (p < alpha).mean() > 0.775


def _frame_dataset(n=60, seed=0):
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "doc_id": "rel", "relevance": 1})
    queries = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(n)],
            "category": ["faq" if i % 3 else "howto" for i in range(n)],
            "difficulty": ["easy" if i < n // 2 else "hard" for i in range(n)],
        }
    )
    return rm.Dataset.from_frames(qrels, queries), rng


def _run_with_rank(name, ranks):
    rows = []
    for i, rank in enumerate(ranks):
        for pos in range(1, 11):
            rows.append((f"q{i}", "rel" if pos == rank else f"x{pos}", -float(pos)))
    return rm.Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name=name)


def test_compare_reports_deltas_tests_and_the_queries_behind_wins():
    ds, rng = _frame_dataset()
    base_ranks = rng.integers(1, 11, 60)
    better_ranks = np.maximum(1, base_ranks - rng.integers(0, 4, 60))
    runs = [_run_with_rank("base", base_ranks), _run_with_rank("better", better_ranks)]
    comparison = compare(ds, runs, ["mrr", "ndcg@10"], baseline="base", seed=5)
    row = comparison.table.set_index(["metric", "run"]).loc[("mrr", "better")]
    result = rm.evaluate(ds, runs, ["mrr"])
    diff = result.per_query("better")["mrr"].to_numpy() - result.per_query("base")["mrr"].to_numpy()
    assert row["delta"] == pytest.approx(diff.mean())
    assert row["p_value"] == pytest.approx(
        sps.ttest_rel(result.per_query("better")["mrr"], result.per_query("base")["mrr"]).pvalue
    )
    assert row["wins"] == (diff > 0).sum() and row["losses"] == 0 and row["ties"] == (diff == 0).sum()
    assert sorted(row["win_ids"]) == sorted(result.per_query("base").index[diff > 0])
    assert row["ci_low"] > 0 and row["significant"]
    seg = comparison.segments
    assert set(seg["segment"]) == {"category", "difficulty"}
    assert set(seg[seg.segment == "category"]["group"]) == {"faq", "howto"}
    assert seg["n"].sum() == 2 * 2 * 2 * 60  # two facets x two metrics x two runs, every query once per facet
    listed = comparison.to_dict()["comparisons"]
    assert listed[0].keys() >= {"metric", "baseline", "run", "p_value_corrected", "wins"}
    # the JSON names its intervals' methods, as the partitioned engines' does (none: the baseline against itself)
    methods = {(r["run"], r["ci_method"], r["ci_method_adjusted"]) for r in listed}
    assert methods == {("base", "t", "none"), ("better", "t", "t")}
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        sps.t.interval(0.95, len(diff) - 1, loc=diff.mean(), scale=sps.sem(diff)), abs=1e-12
    )
    again = compare_result(result, baseline="base", seed=5)
    assert again.table.equals(compare_result(result, baseline="base", seed=5).table)
    # metrics named in any spelling are the result's own, once each
    spelled = compare_result(result, baseline="base", seed=5, metrics=["nDCG@10", "ndcg_cut_10", "ndcg@10"])
    assert set(spelled.table["metric"]) == {"ndcg@10"} and len(spelled.table) == 2


def test_segments_flag_small_groups():
    ds, rng = _frame_dataset(n=14)
    runs = [_run_with_rank("a", rng.integers(1, 11, 14)), _run_with_rank("b", rng.integers(1, 11, 14))]
    seg = compare(ds, runs, ["mrr"], baseline="a").segments
    small = seg[(seg.segment == "category") & (seg.group == "howto")]
    assert small["n"].iloc[0] == 5 and small["too_few"].all()


def test_discriminative_power_lists_every_pair():
    ds, rng = _frame_dataset()
    runs = [_run_with_rank(n, rng.integers(1, 11, 60)) for n in "abc"]
    power = discriminative_power(rm.evaluate(ds, runs, ["mrr"]), "mrr")
    assert list(zip(power.run_a, power.run_b)) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert power["p_value"].between(0, 1).all()


def test_bonferronis_simultaneous_t_interval_covers_every_true_difference_at_once_95_percent_of_the_time():
    """The interval shown beside a corrected p-value claims joint coverage. Seeded synthetic families of m = 6
    paired differences shaped like metric differences (each query's quality shared by both runs, graded values in
    [0, 1] in steps of 0.2, so bounded and tied; true means from 400,000 draws): all six intervals at 1 - 0.05/6
    cover their true means together in about 95% of 2,000 families of 100 queries (Bonferroni is conservative:
    not far above), while six plain 95% intervals cover all six together far less often. (On strongly skewed
    differences, an exponential's, the t interval undercovers that far out: docs/conventions.md, Significance.)"""
    rng = np.random.default_rng(7)
    m, n, families = 6, 100, 2_000
    shift = np.linspace(-0.05, 0.05, m)

    def differences(shape: tuple[int, ...]) -> np.ndarray:
        quality = rng.beta(2, 2, size=(*shape, 1))
        graded = [np.round(np.clip(quality + rng.normal(0, 0.15, (*shape, m)) + s, 0, 1) * 5) / 5 for s in (shift, 0)]
        return graded[0] - graded[1]

    truth = differences((400_000,)).mean(axis=0)
    draws = differences((families, n))
    mean, sd = draws.mean(axis=1), draws.std(axis=1, ddof=1)
    joint = {}
    for confidence in (0.95, 1 - 0.05 / m):
        low, high = stats.t_interval(mean, sd, np.full_like(mean, n), confidence)
        joint[confidence] = float(((low <= truth) & (truth <= high)).all(axis=1).mean())
    assert 0.94 <= joint[1 - 0.05 / m] <= 0.975, joint
    assert joint[0.95] < 0.85, joint


@pytest.mark.parametrize("correction", ["holm", "bonferroni"])
def test_the_interval_beside_a_corrected_p_value_excludes_zero_exactly_when_it_is_significant(correction):
    """Adjusted the same way: at the level the correction tested each comparison at (1 - alpha * p / p_corrected),
    Student's t interval of the delta excludes 0 exactly when the corrected t-test p-value is below alpha, on
    SciFact's three runs and eight metrics, at three alphas; Bonferroni's level is 1 - alpha/m for every row whose p-value is not capped at 1."""
    runs = [
        load_run(str(SCIFACT / f))
        for f in ("bm25-stem.trec.gz", "dense-all-minilm-l6-v2.trec.gz", "hybrid-rrf60.trec.gz")
    ]
    metrics = ["ndcg@10", "ndcg@3", "recall@5", "recall@100", "precision@5", "mrr", "map", "hits@1"]
    result = rm.evaluate(load_dataset(str(SCIFACT / "qrels.tsv")), runs, metrics)
    decided = 0
    for alpha in (0.01, 0.05, 0.1):
        table = compare_result(
            result, baseline=runs[1].name, test="t", correction=correction, alpha=alpha, segments=()
        ).table
        rows = table.dropna(subset=["p_value"])
        excludes = (rows["ci_low_adjusted"] > 0) | (rows["ci_high_adjusted"] < 0)
        assert (excludes == (rows["p_value_corrected"] < alpha)).all(), rows
        decided += int(excludes.sum())
        if correction == "bonferroni":  # 3 pairs x 8 metrics; a p-value capped at 1 was tested at a lower level
            uncapped = rows["p_value_corrected"] < 1
            assert uncapped.any() and np.allclose(rows.loc[uncapped, "ci_level_adjusted"], 1 - alpha / 24)
    assert 0 < decided < 3 * 16  # some significant, some not: the check could fail either way


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_a_segment_p_value_of_zero_takes_its_level_from_its_own_facet_and_its_other_pairs(correction):
    """Each facet's groups are one family (``compare.SEGMENTS``): with the default ``family="pairs"`` and two facets of two
    groups, a facet's family is 2 groups x (2 rows + 1 other pair) = 6 p-values, not the 8 rows of both facets."""
    ids = [f"q{i}" for i in range(12)]
    qrels = pd.DataFrame({"query_id": ids, "doc_id": [f"d{i}" for i in range(12)], "relevance": 1})
    queries = pd.DataFrame({"query_id": ids, "query": ids, "category": ["x", "y"] * 6,
                            "difficulty": ["easy"] * 6 + ["hard"] * 6})  # fmt: skip
    dataset = rm.Dataset.from_frames(qrels, queries)

    def run(name: str, found: set[int]) -> rm.Run:
        rows = [(q, f"d{i}" if i in found else f"z{i}", 1.0) for i, q in enumerate(ids)]
        return rm.Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name=name)

    runs = [run("a", set()), run("b", set(range(12))), run("c", {0, 1, 4, 6, 9})]
    segments = compare(dataset, runs, ["hits@1"], baseline="a", correction=correction).segments
    assert segments["p_value"].notna().sum() == 8  # 2 facets x 2 groups x (b, c); a against itself has none
    always = segments[(segments["run"] == "b")]  # b finds every document, a none: a constant difference
    assert (always["p_value"] == 2.0**-5).all()  # the exact sign-flip p over a group's 6 queries
    corrected = stats.CORRECTIONS[correction](np.r_[always["p_value"].iloc[:1], np.ones(5)])[0]
    assert np.allclose(always["ci_level_adjusted"], 1 - 0.05 * 2.0**-5 / always["p_value_corrected"]), always
    assert correction == "holm" or np.isclose(always["p_value_corrected"].iloc[0], corrected)  # x 6, not x 8


def test_a_difference_is_planned_at_the_level_the_family_s_correction_tests_its_strictest_comparison_at():
    """Dataset power's smallest detectable difference: at alpha / m under Holm (its first step) and Bonferroni (every
    comparison), at alpha uncorrected; and the words say which."""
    assert planning_alpha("none", 0.05, 6) == planning_alpha(None, 0.05, 6) == 0.05
    assert planning_alpha("holm", 0.05, 6) == planning_alpha("bonferroni", 0.05, 6) == pytest.approx(0.05 / 6)
    assert planning_alpha("holm", 0.05, 0) == 0.05  # an empty family plans at alpha, never divides by 0
    assert planning_words("none", 0.05, 6) == "α = 0.05, uncorrected"
    assert planning_words("holm", 0.05, 6) == "α / 6 = 0.0083, the level of Holm's first and strictest step"
    assert planning_words("bonferroni", 0.05, 6) == "α / 6 = 0.0083, Bonferroni's level for every comparison"
    # every correction of the registry has its words
    assert set(stats.STRICTEST_LEVEL) == {c for c in stats.CORRECTIONS if not stats.is_uncorrected(c)}
    # a difference found at alpha / m is significant under Holm whatever its rank: its corrected p is below alpha
    p = np.array([0.05 / 6 * 0.999, 0.0001, 0.3, 0.8, 0.04, 0.01])
    assert stats.holm(p)[0] < 0.05 and stats.bonferroni(p)[0] < 0.05


def test_a_p_value_of_zero_takes_its_interval_level_from_the_whole_family():
    """A constant non-zero difference has a t-test p of 0: its level is 1 - alpha/m over the family the correction
    covered (with --family pairs, more than the table's rows), not over the table alone."""
    table = pd.DataFrame({"run": ["b", "c"], "baseline": ["a", "a"], "delta": [0.1, 0.02], "sd_difference": [0.0, 0.1],
                          "n": [50, 50], "p_value": [0.0, 0.2], "p_value_corrected": [0.0, 0.4],
                          "ci_low": [0.1, -0.01], "ci_high": [0.1, 0.05]})  # fmt: skip
    alone = adjusted_intervals(table, "bonferroni", 0.05)
    family = adjusted_intervals(table, "bonferroni", 0.05, family_size=6)
    assert alone["ci_level_adjusted"].iloc[0] == pytest.approx(1 - 0.05 / 2)
    assert family["ci_level_adjusted"].iloc[0] == pytest.approx(1 - 0.05 / 6)
    assert family["ci_level_adjusted"].iloc[1] == pytest.approx(1 - 0.05 * 0.2 / 0.4)  # p > 0: its own step


def test_bonferroni_intervals_are_simultaneous_when_the_p_value_is_capped():
    """Was: a Bonferroni p-value capped at 1 (p > 1/m) gave its interval the level 1 - alpha * p, lower than 1 -
    alpha/m, so the family's intervals covered all six true differences in 86% of seeds. Simulated: six
    comparisons of 30 queries with small true differences (most p-values capped); every level is 1 - alpha/6 and
    the six intervals cover the six truths together in at least 93% of 400 seeded samples."""
    rng = np.random.default_rng(8)
    deltas = np.array([0.11, -0.11, 0.10, 0.12, -0.10, 0.11])
    truths = np.clip(rng.normal(deltas[:, None], 0.3, size=(6, 400_000)), -1, 1).mean(axis=1)
    covered, levels = 0, set()
    for _ in range(400):
        d = np.clip(rng.normal(deltas[:, None], 0.3, size=(6, 30)), -1, 1)
        rows = pd.DataFrame([{"metric": f"m{j}", "run": "r", "baseline": "b", "n": 30, "delta": d[j].mean(),
                              "sd_difference": d[j].std(ddof=1), "p_value": stats.paired_p_value(d[j], np.zeros(30)),
                              "ci_low": np.nan, "ci_high": np.nan, "ci_method": "bootstrap"} for j in range(6)])  # fmt: skip
        table = adjusted_intervals(corrected_rows(rows, "bonferroni", 0.05), "bonferroni", 0.05, 6)
        levels |= {round(v, 12) for v in table["ci_level_adjusted"]}
        covered += bool(np.all((table["ci_low_adjusted"] <= truths) & (truths <= table["ci_high_adjusted"])))
    assert levels == {round(1 - 0.05 / 6, 12)}
    assert covered / 400 >= 0.93, covered / 400


@pytest.mark.parametrize(("target", "n"), [(0.9, 10), (0.95, 30), (0.98, 30), (0.98, 100)])
def test_a_target_gate_passes_a_run_no_better_than_its_target_rarely(target, n):
    """Simulated: a hit-or-miss metric whose true rate is the target passes "the 95% interval's lower end clears
    it" in at most 2.5% of 1,000 seeded runs (the percentile bootstrap passed 34% at 0.90 on 10 queries and 54% at
    0.98 on 30: all hits gave the point interval [1, 1])."""
    from ragmetrics.analysis.targets import target_interval

    rng = np.random.default_rng(int(target * 1000) + n)
    passed = sum(target_interval((rng.random(n) < target).astype(float))[0] > target for _ in range(1000))
    assert passed / 1000 <= 0.025


@pytest.mark.parametrize("n", [10, 30, 100])
def test_a_run_s_mean_interval_of_0_1_values_covers_what_it_claims_near_1(n):
    """Simulated: over 2,000 seeded runs of n hit-or-miss queries whose true rate is near 1, the 95% interval of the
    mean (:func:`stats.mean_interval`: Clopper-Pearson on 0/1 values) covers the rate at least 95% of the time, up to
    simulation error; the percentile bootstrap ``eval --ci`` once printed covered it far less (all hits: the point
    [1, 1]), and so would t's."""
    draws = 2000
    error = 2 * np.sqrt(0.05 * 0.95 / draws)
    for rate in (0.9, 0.97, 0.99):
        rng = np.random.default_rng([n, int(rate * 100)])
        runs = (rng.random((draws, n)) < rate).astype(np.float64)
        interval_of: dict[int, tuple[float, float]] = {}  # the interval of 0/1 values depends on their count of 1s
        for values in runs:
            if int(values.sum()) not in interval_of:
                interval_of[int(values.sum())] = stats.mean_interval(values)
        covered = np.mean([interval_of[int(k)][0] <= rate <= interval_of[int(k)][1] for k in runs.sum(axis=1)])
        assert covered >= 0.95 - error, (n, rate, covered)
        if rate == 0.99:  # t's point interval at all hits: covers only when some query misses
            t = [stats.mean_t_interval(values) for values in runs[:100]]
            assert np.mean([low <= rate <= high for low, high in t]) < 0.8


def test_eval_ci_check_targets_compare_and_the_dashboard_give_one_interval_of_a_0_1_mean(tmp_path):
    """Was: 55 queries all hits printed ``hits@10:ci_low 1.0000`` in ``eval --ci`` (the percentile bootstrap) while
    ``check --targets`` checked the exact lower end 0.9351."""
    qrels, _, run = _ranked(tmp_path, [1] * 55, [1] * 50 + [0] * 5)
    exact = stats.proportion_interval(55, 55)
    assert exact[0] == pytest.approx(0.93512924, abs=1e-8)
    common = ["--dataset", str(qrels), "--run", str(qrels.with_name("base.trec")), "-m", "hits@10"]
    out = io.StringIO()
    assert main(["eval", *common, "--ci", "--format", "json"], out, io.StringIO()) == 0
    assert json.loads(out.getvalue())["runs"]["base"]["ci"]["hits@10"] == pytest.approx(list(exact))
    for engine in ("duckdb", "polars"):
        out = io.StringIO()
        assert main(["eval", *common, "--ci", "--engine", engine], out, io.StringIO()) == 0
        assert "hits@10:ci_low\tall\t0.9351" in out.getvalue().replace(" ", ""), engine
    out = io.StringIO()
    assert main(["check", *common[:4], "--targets", "hits@10>0.9"], out, io.StringIO()) == 0  # the targets' metric
    assert "(95% CI 0.9351-1.0000)" in out.getvalue()
    low, high = dashboard_interval(np.ones(55))[1:]
    assert (float(low[0]), float(high[0])) == pytest.approx(exact)
    # 50 hits of 55 (a value 0 or 1): compare's mean interval is the same convention
    result = rm.evaluate(load_dataset(str(qrels)), [load_run(str(run))], ["hits@10"])
    row = compare_result(result).table.iloc[0]
    assert (row["mean_ci_low"], row["mean_ci_high"]) == pytest.approx(stats.proportion_interval(50, 55))


def test_the_exact_interval_by_beta_quantiles_is_scipys_root_found_one():
    """The exact binomial interval is computed from beta quantiles, every column at once (was one root-finding call
    of scipy's ``binomtest`` per column: 2.4 ms each); it equals scipy's, at every count of small n and along large
    ones, at 95% and 99%."""
    for n in (1, 2, 3, 5, 8, 13, 21, 34, 100, 1_000, 5_000):
        counts = np.unique(np.linspace(0, n, min(n + 1, 21)).round().astype(int))
        for confidence in (0.95, 0.99):
            low, high = stats.proportion_intervals(counts, n, confidence)
            for k, lo, hi in zip(counts, low, high):
                scipys = sps.binomtest(int(k), n).proportion_ci(confidence, method="exact")
                assert (lo, hi) == pytest.approx((scipys.low, scipys.high), abs=1e-11), (n, k, confidence)
    assert stats.proportion_interval(0, 10)[0] == 0.0 and stats.proportion_interval(10, 10)[1] == 1.0


def test_interval_methods_name_what_mean_interval_computes_column_by_column():
    """Was: every page said "bootstrap" of a mean's interval that is Clopper-Pearson for a 0/1 metric."""
    rng = np.random.default_rng(5)
    hits, graded = rng.integers(0, 2, 40).astype(np.float64), rng.random(40)
    matrix = np.column_stack([hits, graded, np.ones(40)])
    assert stats.interval_methods(matrix) == ["Clopper-Pearson", "t", "Clopper-Pearson"]
    low, high = stats.mean_interval(matrix)
    assert (low[0], high[0]) == stats.proportion_interval(int(hits.sum()), 40)
    assert (low[2], high[2]) == stats.proportion_interval(40, 40)
    assert (low[1], high[1]) == tuple(float(end) for end in stats.mean_t_interval(graded))
    assert stats.interval_methods(graded[:1]) == stats.interval_methods(np.empty(0)) == ["none"]
    assert stats.interval_methods(np.empty((0, 3))) == ["none"] * 3
    assert stats.interval_words(["Clopper-Pearson", "Clopper-Pearson", "none"]) == "Clopper-Pearson"
    assert stats.interval_words(stats.interval_methods(matrix)) == (
        "Clopper-Pearson (where every query scored 0 or 1) and Student's t"
    )
    assert stats.interval_words(["t"]) == "Student's t"
    assert stats.interval_words([np.nan, "none"]) == stats.MEAN_INTERVAL_RULE
    assert stats.MEAN_INTERVAL_RULE == "Clopper-Pearson where every query scored 0 or 1, else Student's t"
    with pytest.raises(RagMetricsError, match="interval method 'bca': expected one of Clopper-Pearson, t"):
        stats.interval_words(["bca"])


def test_one_query_s_mean_has_no_interval_on_any_engine(tmp_path):
    """Was: ``eval --ci`` on one query printed ``ci_low 1.0000 ci_high 1.0000``, an interval of width 0 that claims
    certainty from one value. Now NaN (JSON null), in process and on the partitioned engines, as the dashboard's."""
    qrels, run, _ = _ranked(tmp_path, [1], [1])
    assert all(np.isnan(end) for end in stats.mean_interval(np.array([0.7])))
    assert all(np.isnan(end).all() for end in stats.mean_t_interval(np.array([[0.7, 0.2]])))
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "ndcg@10", "--ci"]
    out = io.StringIO()
    assert main([*common, "--format", "json"], out, io.StringIO()) == 0
    assert json.loads(out.getvalue())["runs"]["base"]["ci"]["ndcg@10"] == [None, None]
    for engine in ("inprocess", "duckdb"):
        out = io.StringIO()
        assert main([*common, "--engine", engine], out, io.StringIO()) == 0
        assert "ndcg@10:ci_low\tall\tnan" in out.getvalue().replace(" ", ""), engine


def _ranked(tmp_path, base_ranks, new_ranks, depth=20):
    """qrels, a baseline and a run of one relevant document per query, found at the given ranks (0: not at all)."""
    qrels, base, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"

    def ranking(q, rank):
        return "".join(f"{q} Q0 {'rel' + q if r == rank else f'x{r}'} {r} {100 - r} r\n" for r in range(1, depth + 1))

    qrels.write_text("".join(f"q{i} 0 relq{i} 1\n" for i in range(len(base_ranks))))
    base.write_text("".join(ranking(f"q{i}", r) for i, r in enumerate(base_ranks)))
    run.write_text("".join(ranking(f"q{i}", r) for i, r in enumerate(new_ranks)))
    return qrels, base, run


def test_wilcoxon_s_verdict_takes_its_side_from_the_signed_ranks_and_says_when_the_mean_disagrees(tmp_path):
    """Was: ``check --test wilcoxon`` took significance from Wilcoxon (p = 2.8e-05: 40 queries gain a little) and the
    side from the mean delta (-0.041: 4 queries lose a lot), and said FAIL regression. Now the side is the signed
    ranks' (T+ - T- = +650), the verdict ``mixed`` and the words say the two disagree; the t-test still finds nothing."""
    diff = np.r_[np.full(40, 0.05), np.full(4, -0.95)]
    assert stats.test_direction(diff, "wilcoxon") == 650.0 and stats.test_direction(diff, "t") == diff.mean() < 0
    assert verdict("r", "b", diff.mean(), 2.8e-05, 0.05, direction=650.0) == "mixed"
    assert verdict("r", "b", -0.1, 2.8e-05, 0.05, direction=-3.0) == "worse"
    # an exact delta (every query of the dataset target labelled) has no p-value and needs none: it is its own verdict
    # (was "not significant" whatever the delta)
    nan = float("nan")
    exact = [verdict("r", "b", d, nan, 0.05, exact=True) for d in (0.25, -0.25, 0.0, 1e-15)]
    assert exact == ["exactly better", "exactly worse", "no difference", "no difference"]
    assert verdict("b", "b", 0.0, nan, 0.05, exact=True) == "baseline"
    assert _verdict("r", "b", diff.mean(), 2.8e-05, 0.05, 650.0, 1) == "the test and the mean disagree"  # the Workspace
    qrels, base, run = _ranked(tmp_path, [20] * 40 + [1] * 4, [10] * 40 + [20] * 4)
    argv = ["check", "--dataset", str(qrels), "--run", str(run), "--baseline", str(base), "-m", "mrr"]
    out = io.StringIO()
    assert main([*argv, "--test", "wilcoxon"], out, io.StringIO()) == 0, out.getvalue()
    text = out.getvalue()
    assert "FAIL" not in text and "PASS no verdict, the test and the mean disagree: mrr" in text, text
    assert (
        "Wilcoxon signed-rank finds the run better (signed ranks T+ - T- = +650) while the mean delta is -0.0409"
        in text
    )
    out = io.StringIO()
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(base), "--run", str(run), "-m", "mrr"]
    assert main([*argv, "--test", "wilcoxon"], out, io.StringIO()) == 0
    assert "note: Wilcoxon signed-rank finds the run better" in out.getvalue()


def test_the_registry_says_what_each_test_tests():
    """Was: every test was described as one of "mean(a - b) = 0"; Wilcoxon's is about the typical query."""
    assert stats.TESTS["t"].null == stats.TESTS["bootstrap"].null == "mean(a - b) = 0"
    assert "mean" not in stats.TESTS["wilcoxon"].null.split(":")[0]
    assert "exchangeable" in stats.TESTS["randomization"].null
    assert "mean(a - b)" not in stats.PairedTest.__doc__.split("\n")[0]


def test_compare_and_check_say_when_the_interval_and_the_p_value_disagree(tmp_path):
    """Was: the CLI printed a 95% interval leaving out 0 beside a p-value above alpha and said nothing, though the
    dashboard's verdict says so; the words are now the one function both use. With the default t test the two
    cannot disagree (the interval is the one the test inverts); with Wilcoxon they can: four queries found at rank
    10 by the baseline, three at rank 2 and one at rank 3 by the run, give t's interval [+0.23, +0.49] and
    Wilcoxon's exact p = 2/16."""
    qrels, base, run = _ranked(tmp_path, [10, 10, 10, 10], [2, 2, 2, 3], depth=10)
    said = interval_disagreement(0.23, 0.49, False, "none", "wilcoxon", "t")
    assert said == (
        "The interval (Student's t, uncorrected) and the verdict (Wilcoxon signed-rank) are computed apart: here "
        "they disagree, the interval leaving out 0."
    )
    assert (
        interval_disagreement(0.0306, 0.45, True, "none", "t")
        == interval_disagreement(-0.1, 0.4, False, "holm", "t")
        == interval_disagreement(0.25, 0.25, False, "holm", "t", "exact")  # an exact delta: not a disagreement
        == ""
    )
    printed = {}
    for command in ("compare", "check"):
        argv = [command, "--dataset", str(qrels), "--baseline", str(base), "--run", str(run), "-m", "mrr"]
        for test in ("wilcoxon", "t"):
            out = io.StringIO()
            assert main([*argv, "--correction", "none", "--test", test], out, io.StringIO()) == 0, out.getvalue()
            assert (f"note: {said}" in out.getvalue()) == (test == "wilcoxon"), out.getvalue()
            printed[command, test] = out.getvalue()
    assert "intervals: 95% CI (Student's t, uncorrected)" in printed["compare", "wilcoxon"]  # its footer: the same


def test_the_disagreement_names_the_interval_by_the_words_of_its_method():
    """Was: the sentence said "a paired bootstrap's" and "Student's t" where every footer and caption said
    ``delta_interval_method``'s words; the sentence now reads that function, for every test and correction."""
    for correction in stats.CORRECTIONS:
        method = stats.delta_interval_method(correction)
        for test, paired in stats.TESTS.items():
            said = interval_disagreement(-0.2, 0.4, True, correction, test)
            assert said.startswith(f"The interval ({method}) and the verdict ({paired.title}) are computed apart: ")
    assert [stats.delta_interval_method(c) for c in ("none", "holm")] == [
        "Student's t, uncorrected",
        "Student's t at each comparison's level",
    ]
    assert stats.delta_interval_method("none", ["t", "none", None]) == "Student's t, uncorrected"
    # an exact difference has no level and no correction: named alone, or after the sampled ones' level
    exact = "exact (the delta itself: no level, no correction)"
    assert stats.delta_interval_method("holm", ["exact"]) == exact
    assert stats.delta_interval_method("holm", ["t", "exact"]) == f"Student's t at each comparison's level; {exact}"
    with pytest.raises(RagMetricsError, match="interval method 'bootstrap': expected one of t, exact"):
        stats.delta_interval_method("none", ["bootstrap"])


def test_the_words_of_a_delta_s_interval_name_the_method_that_computed_it():
    """Each row records the method that computed its interval (``ci_method``, ``ci_method_adjusted``) and the words
    are read from it: Student's t, uncorrected at 95% and corrected at each comparison's level, at any number of
    queries (the intervals once switched from the bootstrap to the normal approximation above 20,000)."""
    rng = np.random.default_rng(11)
    for n in (60, 20_001):
        base = rng.random(n)
        run = np.clip(base + rng.normal(0.01, 0.2, n), 0, 1)
        row = paired_row("m", "run", "base", np.arange(n).astype(str), run, base, "t", 100, 0)
        assert row["ci_method"] == "t"
        diff = run - base
        expected = sps.t.interval(0.95, n - 1, loc=diff.mean(), scale=sps.sem(diff))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(expected, abs=1e-12)
        table = adjusted_intervals(corrected_rows(pd.DataFrame([row]), "none", 0.05), "none", 0.05)
        assert table["ci_method_adjusted"].tolist() == ["t"]
        words = "Student's t, uncorrected"
        assert interval_words("none", table["ci_method_adjusted"]) == f"intervals: 95% CI ({words})"
        assert Comparison(table, pd.DataFrame(), "base", "t", 0.05, "none").interval_method == words
        disagreeing = {**table.iloc[0].to_dict(), "ci_low_adjusted": 0.5, "p_value_corrected": 0.5}
        assert f"note: The interval ({words}) and the verdict" in row_notes(disagreeing, 0.05, "none", "t")
        holm = adjusted_intervals(corrected_rows(pd.DataFrame([row]), "holm", 0.05), "holm", 0.05)
        assert interval_words("holm", holm["ci_method_adjusted"]) == (
            "intervals: Holm-adjusted CI (Student's t at each comparison's level)"
        )


def test_the_paired_bootstrap_rejects_a_true_null_at_about_alpha_on_few_queries():
    """Size of the bootstrap test at alpha 0.05 on a true null (exchangeable graded values: a query's quality
    q ~ Beta(2, 2) shared, each run q + N(0, 0.2) clipped to [0, 1]), 1,000 seeded samples per size. Was (the
    resampled means centred on the observed mean): 0.105 at 10 queries, 0.080 at 20 (2,000 samples); studentized it
    stays near the t-test's."""
    for n in (10, 20):
        rng = np.random.default_rng(2024 + n)
        rejected = {"bootstrap": 0, "t": 0}
        for seed in range(1_000):
            q = rng.beta(2, 2, n)
            a, b = (np.clip(q + rng.normal(0, 0.2, n), 0, 1) for _ in range(2))
            for test in rejected:
                rejected[test] += stats.paired_p_value(a, b, test=test, seed=seed, n_resamples=500) < 0.05
        assert 0.025 <= rejected["bootstrap"] / 1_000 <= 0.07, (n, rejected)
        assert abs(rejected["bootstrap"] - rejected["t"]) / 1_000 <= 0.02, (n, rejected)


def test_a_nan_value_gives_every_test_a_nan_p_value():
    """Was: the randomization and bootstrap tests gave p = 0 (or their smallest p) where t and Wilcoxon gave NaN."""
    a, b = np.array([1.0, np.nan, 0.5, 0.2]), np.array([0.0, 0.0, 0.0, 0.1])
    assert all(np.isnan(stats.paired_p_value(a, b, test=test)) for test in stats.TESTS)


def test_wilcoxon_without_ties_is_exact_to_50_differences_then_rs_approximation():
    rng = np.random.default_rng(3)
    for n in (12, 50, 60):
        diff = rng.permutation(np.arange(1, n + 1)) * rng.choice([-1, 1], n) / 100  # distinct magnitudes, no zero
        diff[0] = abs(diff[0])
        ours = stats.paired_p_value(diff, np.zeros(n), test="wilcoxon")
        method = {"method": "exact"} if n <= 50 else {"method": "approx", "correction": True}
        assert ours == pytest.approx(sps.wilcoxon(diff, np.zeros(n), **method).pvalue, rel=1e-12), n


def test_wilcoxon_ranks_equal_differences_equal_whatever_their_last_bit():
    """Was: 1/3 - 0 and 1/2 - 1/6 (0.3333333333333333 and 0.33333333333333337) took ranks 1 and 2 instead of their
    mid-rank, and a difference of 5e-17 was ranked where the wins, ties and losses count it a tie: seven queries of
    average precision 1/rank gave p = 0.734375 where the exact sign-flip p with mid-ranks is 0.75."""
    spec = [(None, 3), (6, 2), (1, 2), (4, 1), (2, 5), (1, 4), (3, 1)]  # (baseline's rank, run's rank)
    base = np.array([0.0 if b is None else 1 / b for b, _ in spec])
    run = np.array([1 / r for _, r in spec])
    assert stats.paired_p_value(run, base, test="wilcoxon") == pytest.approx(0.75, abs=1e-12)
    # by hand: every sign flip of the rounded non-zero differences, ranked with ties at their mid-rank
    diff = np.round(run - base, 12)
    nonzero = diff[diff != 0]
    ranks = sps.rankdata(np.abs(nonzero))
    observed = abs(np.sum(np.sign(nonzero) * ranks))
    flips = np.array(list(itertools.product([-1, 1], repeat=len(nonzero))))
    assert np.mean(np.abs(flips @ ranks) >= observed - 1e-9) == 0.75
    assert stats.signed_rank_direction(np.array([5e-17, 0.25, -0.25])) == 0.0  # a tie of two, the 5e-17 a zero


def test_a_mean_of_one_repeated_value_has_no_interval():
    """Was: five queries of precision 2/3 each gave the 95% interval [0.667, 0.667], covering a true mean of 0.567
    never (59% and 75% coverage at 3 and 5 such queries, simulated), and a target just below 2/3 passed. Such a
    column has no interval, in process and from merged sums, and a target cannot pass on it."""
    from ragmetrics.analysis.merged import sums_of
    from ragmetrics.analysis.targets import TargetCheck, target_interval

    same = np.full(5, 2 / 3)
    assert np.isnan(stats.mean_interval(same)).all() and stats.interval_methods(same) == ["none"]
    assert np.isnan(sums_of([f"q{i}" for i in range(5)], [same]).interval(0)).all()
    low, high = target_interval(same)
    check = TargetCheck("P@10", 0.6, float(same.mean()), low, high, n=5)
    assert check.status == "uncertain" and not check.passed
    assert "(no interval: every one of the 5 queries scored the same)" in check.reason()
    mixed = np.column_stack([same, np.ones(5), np.r_[same[:4], 0.5]])
    assert stats.interval_methods(mixed) == ["none", "Clopper-Pearson", "t"]
    low, high = stats.mean_interval(mixed)
    assert np.isnan(low[0]) and low[1] == pytest.approx(0.478, abs=1e-3) and low[2] < 0.634 < high[2]


@pytest.mark.parametrize("alpha", [0.01, 0.10])
def test_the_uncorrected_interval_is_read_at_the_tests_alpha(alpha):
    """Was: without correction the interval beside the t-test's p-value was 95% whatever ``alpha``, so at 0.01 an
    interval leaving out 0 stood beside "not significant" (SciFact, recall@5, hybrid: p = 0.018) with a note blaming
    two methods computed apart. It is now at 1 - alpha, and leaves out 0 exactly where the row is significant."""
    runs = [
        load_run(str(SCIFACT / f))
        for f in ("bm25-stem.trec.gz", "dense-all-minilm-l6-v2.trec.gz", "hybrid-rrf60.trec.gz")
    ]
    result = rm.evaluate(load_dataset(str(SCIFACT / "qrels.tsv")), runs, ["recall@5", "mrr", "ndcg@10"])
    table = compare_result(result, correction="none", alpha=alpha).table
    compared = table[table["run"] != table["baseline"]]
    assert (compared["ci_level_adjusted"] == 1 - alpha).all()
    leaves_out_0 = (compared["ci_low_adjusted"] > 0) | (compared["ci_high_adjusted"] < 0)
    assert (leaves_out_0 == (compared["p_value"] < alpha)).all()
    assert (leaves_out_0 == compared["significant"]).all()
    assert intervals_name("none", alpha) == f"{100 * (1 - alpha):g}% CI"


def test_a_metric_s_mean_interval_stays_within_0_and_1_on_every_page_and_command(tmp_path):
    """Was: Compare's "Recall@5 mean 95% CI [0.191, 1.087]" and the Overview's bands above 1 on a built set of 7
    queries, where the Judge page clipped the same kind of interval. A metric's mean lies in [0, 1]: t's interval
    is clipped there, by compare, eval --ci and the dashboard alike; other values (token counts) keep theirs."""
    recall = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.2])
    low, high = stats.mean_t_interval(recall)
    assert high > 1.05  # t's own interval passes 1 here
    assert stats.mean_interval(recall, within=stats.METRIC_RANGE) == (pytest.approx(low), 1.0)
    assert dashboard_interval(recall)[2][0] == 1.0
    assert dashboard_interval(recall * 100, within=None)[2][0] == pytest.approx(high * 100)
    ids = [f"q{i}" for i in range(7)]
    (tmp_path / "qrels.tsv").write_text("".join(f"{q} 0 rel-{q} 1\n" for q in ids))
    rank = dict.fromkeys(ids[:5], 1) | {ids[5]: 2, ids[6]: 3}  # ndcg@5: five 1s, 0.631, 0.5
    lines = [f"{q} Q0 {'rel-' + q if k == rank[q] else f'x{k}'} {k} {9 - k} a\n" for q in ids for k in (1, 2, 3)]
    (tmp_path / "a.trec").write_text("".join(lines))
    (tmp_path / "b.trec").write_text("".join(f"{q} Q0 x 1 2.0 b\n" for q in ids))
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(tmp_path / "qrels.tsv"), "--run", str(tmp_path / "a.trec"), "-m", "ndcg@5",
            "--ci", "--format", "json"]  # fmt: skip
    assert main(argv, out, err) == 0, err.getvalue()
    low, high = json.loads(out.getvalue())["runs"]["a"]["ci"]["ndcg@5"]
    assert low > 0 and high == 1.0, (low, high)
    dataset, a, b = load_dataset(tmp_path / "qrels.tsv"), load_run(tmp_path / "a.trec"), load_run(tmp_path / "b.trec")
    row = compare_result(rm.evaluate(dataset, [a, b], ["ndcg@5"]), baseline="b").table.set_index("run").loc["a"]
    assert row["mean_ci_high"] == 1.0 and row["mean_ci_low"] == pytest.approx(low), row.to_dict()


def test_a_delta_s_interval_stays_within_the_difference_a_metric_can_show(tmp_path):
    """Was: "delta -0.0667 97.5% [-2.5830, +2.4497]" for precision@5 on 3 queries (a t interval at a Holm-adjusted
    level), where a difference of two values in [0, 1] lies in [-1, 1] (and eval --ci clipped its means)."""
    from ragmetrics.analysis.compare import compare_result

    dataset = rm.Dataset.from_dict({q: {"d1": 1} for q in ("q1", "q2", "q3")})
    base = rm.Run.from_dict({"q1": {"d1": 1.0}, "q2": {"d2": 1.0}, "q3": {"d1": 1.0}}, name="base")
    run = rm.Run.from_dict({"q1": {"d2": 1.0}, "q2": {"d1": 1.0}, "q3": {"d3": 1.0}}, name="run")
    result = rm.evaluate(dataset, [base, run], ["precision@1", "mrr"], warn=False)
    table = compare_result(result, baseline="base", runs=["run"], metrics=["precision@1", "mrr"]).table
    compared = table[table["run"] == "run"]
    for column in ("ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted"):
        assert compared[column].between(-1, 1).all(), compared[column].tolist()
    assert (compared["ci_low_adjusted"] == -1).any()  # the t interval of 3 queries reached past -1: clipped


def test_a_count_of_tokens_keeps_its_whole_interval():
    """Was: ``tokens_to_evidence`` (tokens, not a share) had its mean's and its delta's intervals clipped to a
    share's [0, 1] and [-1, 1]: a delta of +40 tokens read "95% CI [+1, +1]". Each metric is clipped to its own range
    (:func:`ragmetrics.engine.metrics.value_range`)."""
    from ragmetrics.analysis.compare import adjusted_intervals, paired_row
    from ragmetrics.engine.metrics import delta_range, value_range

    assert value_range("tokens_to_evidence") == (0, np.inf) and delta_range("ndcg@10") == (-1, 1)
    rng = np.random.default_rng(7)
    base = rng.integers(20, 200, 40).astype(np.float64)
    values = base + rng.integers(0, 80, 40)
    ids = np.array([f"q{i}" for i in range(40)])
    row = paired_row("tokens_to_evidence", "run", "base", ids, values, base, "t", 1000, 0)
    diff = values - base
    half = sps.t.ppf(0.975, 39) * diff.std(ddof=1) / np.sqrt(40)
    assert row["ci_low"] == pytest.approx(diff.mean() - half) and row["ci_high"] == pytest.approx(diff.mean() + half)
    assert row["ci_low"] > 1 and row["mean_ci_high"] > 1
    table = pd.DataFrame([row | {"p_value_corrected": row["p_value"]}])
    adjusted = adjusted_intervals(table, "holm", 0.05).iloc[0]  # a family of one: its level is 95%
    assert adjusted["ci_low_adjusted"] == pytest.approx(row["ci_low"])
    assert adjusted["ci_high_adjusted"] == pytest.approx(row["ci_high"])


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_the_resampling_tests_hold_a_bounded_batch_and_give_the_same_p_value(monkeypatch, test):
    """Was: 10,000 resamples of every query at once (50,000 queries: killed at 20 GB). The resamples go in batches
    of about ``RESAMPLE_BYTES``, drawing what one whole draw would: the same p-value at any batch size."""
    import tracemalloc

    rng = np.random.default_rng(4)
    a = rng.random(4_000)
    b = a + rng.normal(0, 0.05, a.size)
    whole = stats.paired_p_value(a[:300], b[:300], test=test, n_resamples=400, seed=2)
    monkeypatch.setattr(stats, "RESAMPLE_BYTES", 1 << 20)  # some forty resamples a batch
    assert stats.paired_p_value(a[:300], b[:300], test=test, n_resamples=400, seed=2) == whole
    monkeypatch.setattr(stats, "RESAMPLE_BYTES", 4 << 20)
    tracemalloc.start()
    stats.paired_p_value(a, b, test=test, n_resamples=400, seed=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * (4 << 20), f"{peak / 2**20:.0f} MiB"  # all at once: 400 x 4,000 values, over 100 MB
