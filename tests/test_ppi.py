"""Prediction-powered means (ragmetrics.analysis.ppi), checked by seeded simulation and against ppi_py.

The coverage study simulates SciFact-like queries (one relevant document, sometimes two, in a pool of 12 that two
runs rank), a judge that labels the pool with known error rates, and a human sample of a tenth of the queries; each
query's nDCG@10 is computed in numpy, vectorised over every seed (the same values as ragmetrics.evaluate gives:
checked below), and the intervals are those of :func:`ragmetrics.analysis.ppi.ppi_mean` on them. The figures are in
docs/ppi.md (``python tests/test_ppi.py`` prints them).
"""

from __future__ import annotations

import functools
import io
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, ttest_1samp

import ragmetrics as rm
from ragmetrics.analysis import ppi, stats
from ragmetrics.analysis.compare import family_scope
from ragmetrics.analysis.ppi import (
    FEW_LABELLED,
    MIN_DIFFERING,
    TOO_FEW_WORDS,
    Corrected,
    corrected_comparison,
    corrected_means,
    ppi_mean,
    ppi_paired,
    sample_plan,
    unreadable,
    unreadable_rows,
)
from ragmetrics.analysis.verdicts import SAID, verdict
from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning

SEEDS = 1_000
QUERIES = 500
LABELLED = 50  # a tenth
POOL = 12
DISCOUNT = 1 / np.log2(np.arange(10) + 2)
IDEAL = np.concatenate([[0.0], np.cumsum(DISCOUNT)])
SIGNALS = (1.0, 1.4)  # run A, run B (the better one)


def simulate_queries(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each query's pool with its true labels (``shape + (POOL,)``: the first 1 + Poisson(0.2) documents are
    relevant) and the two runs' top 10 (pool positions, best first: relevant documents score ``signal`` higher)."""
    n_rel = np.minimum(1 + rng.poisson(0.2, shape), POOL)
    truth = (np.arange(POOL) < n_rel[..., None]).astype(np.int8)
    tops = []
    for signal in SIGNALS:
        score = signal * truth + rng.normal(size=(*shape, POOL))
        tops.append(np.argsort(-score, axis=-1)[..., :10])
    return truth, tops


def judge(rng: np.random.Generator, truth: np.ndarray, missed: float, invented: float) -> np.ndarray:
    """A judge that calls a relevant document non-relevant with probability ``missed`` and a non-relevant one
    relevant with probability ``invented``."""
    u = rng.random(truth.shape)
    return np.where(truth == 1, u >= missed, u < invented).astype(np.int8)


def know_nothing(rng: np.random.Generator, truth: np.ndarray) -> np.ndarray:
    """A judge that knows nothing: each document relevant with probability 0.2, whatever it is."""
    return (rng.random(truth.shape) < 0.2).astype(np.int8)


def ndcg10(labels: np.ndarray, top: np.ndarray) -> np.ndarray:
    """nDCG@10 with binary gains, the pool's labels as the qrels (0 where nothing is relevant)."""
    dcg = np.take_along_axis(labels, top, axis=-1) @ DISCOUNT
    ideal = IDEAL[np.minimum(labels.sum(-1), 10)]
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1), 0.0)


@functools.cache
def population_means() -> tuple[float, float]:
    """Run A's mean nDCG@10 and the mean difference B - A over the population of queries (200,000 drawn)."""
    truth, (a, b) = simulate_queries(np.random.default_rng(12345), (200_000,))
    return float(ndcg10(truth, a).mean()), float((ndcg10(truth, b) - ndcg10(truth, a)).mean())


@functools.cache
def study(kind: str, population: str = "queries", labelled: int = LABELLED, lams: tuple = (None, 1.0)):
    """The intervals of :data:`SEEDS` seeds: each draws the queries (for ``population="dataset"``, one draw is
    kept), the judge's labels and the human sample. Returns ``{lam: (means, differences)}`` (``lam`` None: tuned)
    and the true mean and difference of each seed."""
    rng = np.random.default_rng(7)
    shape = (SEEDS, QUERIES)
    if population == "dataset":  # one set of queries, judged and sampled anew each seed
        truth1, tops1 = simulate_queries(rng, (QUERIES,))
        truth = np.broadcast_to(truth1, (*shape, POOL))
        tops = [np.broadcast_to(t, (*shape, 10)) for t in tops1]
    else:
        truth, tops = simulate_queries(rng, shape)
    labels = judge(rng, truth, 0.2, 0.05) if kind == "judge" else know_nothing(rng, truth)
    f = [ndcg10(labels, t) for t in tops]
    y = [ndcg10(truth, t) for t in tops]
    results: dict = {lam: ([], []) for lam in lams}
    for s in range(SEEDS):
        sampled = np.zeros(QUERIES, dtype=bool)
        sampled[rng.choice(QUERIES, labelled, replace=False)] = True
        human = [np.where(sampled, v[s], np.nan) for v in y]
        for lam, (means, diffs) in results.items():
            means.append(ppi_mean(f[0][s], human[0], lam=lam, population=population))
            diffs.append(ppi_paired(f[1][s], f[0][s], human[1], human[0], lam=lam, population=population))
    if population == "dataset":
        true_means, true_diffs = y[0].mean(axis=1), (y[1] - y[0]).mean(axis=1)
    else:
        pop_mean, pop_diff = population_means()
        true_means, true_diffs = np.full(SEEDS, pop_mean), np.full(SEEDS, pop_diff)
    return results, true_means, true_diffs


def outcome(kind: str, lam: float | None = None, **options):
    """One study's ``means, differences, true means, true differences`` for one ``lam``."""
    results, truths, true_diffs = study(kind, **options)
    return (*results[lam], truths, true_diffs)


def coverage(results: list[Corrected], truths: np.ndarray, which: str = "ppi") -> float:
    ends = np.array([(getattr(r, which).ci_low, getattr(r, which).ci_high) for r in results])
    return float(np.mean((ends[:, 0] <= truths) & (truths <= ends[:, 1])))


def half_width(results: list[Corrected], which: str = "ppi") -> float:
    return float(np.mean([getattr(r, which).half_width for r in results]))


def test_the_simulated_ndcg_is_ragmetrics_evaluate_s():
    rng = np.random.default_rng(3)
    truth, (top, _) = simulate_queries(rng, (40,))
    labels = judge(rng, truth, 0.2, 0.05)
    qrels = {f"q{i}": {f"d{j}": int(labels[i, j]) for j in range(POOL)} for i in range(40)}
    run = {f"q{i}": {f"d{j}": float(10 - r) for r, j in enumerate(top[i])} for i in range(40)}
    result = rm.evaluate(rm.Dataset.from_dict(qrels), rm.Run.from_dict(run), ["ndcg@10"], warn=False)
    values = result.per_query()["ndcg@10"].to_numpy()
    np.testing.assert_allclose(values, ndcg10(labels, top), atol=1e-12)


def test_ppi_covers_the_true_mean_and_the_judge_alone_does_not():
    means, _, truths, _ = outcome("judge")
    ppi = coverage(means, truths)
    assert 0.93 <= ppi <= 0.97, ppi
    assert coverage(means, truths, "judge_only") < 0.5  # the judge's bias: its own interval misses
    assert 0.93 <= coverage(means, truths, "human_only") <= 0.97
    assert half_width(means) < 0.9 * half_width(means, "human_only")  # a good judge narrows the interval


def test_plain_ppi_covers_too():
    means, diffs, truths, true_diffs = outcome("judge", 1.0)
    assert 0.93 <= coverage(means, truths) <= 0.97
    assert 0.93 <= coverage(diffs, true_diffs) <= 0.97


def test_the_paired_difference_covers_the_true_difference():
    _, diffs, _, true_diffs = outcome("judge")
    assert 0.93 <= coverage(diffs, true_diffs) <= 0.97
    assert coverage(diffs, true_diffs, "judge_only") < 0.5
    assert np.mean([d.ppi.p_value < 0.05 for d in diffs]) > 0.5  # B's real gain is found most of the time


def test_a_judge_that_knows_nothing_costs_the_tuned_estimate_almost_nothing():
    means, _, truths, _ = outcome("random")
    assert 0.93 <= coverage(means, truths) <= 0.97
    estimates = np.array([m.ppi.estimate for m in means])
    human = np.array([m.human_only.estimate for m in means])
    # as unbiased as the human sample: the mean error within 3 Monte-Carlo standard errors
    assert abs(estimates.mean() - truths[0]) < 3 * estimates.std() / np.sqrt(SEEDS)
    assert abs(human.mean() - truths[0]) < 3 * human.std() / np.sqrt(SEEDS)
    # no narrower than the human-only interval: the tuning finds lam near 0 (its noise narrows it by < 2%)
    assert half_width(means) >= 0.98 * half_width(means, "human_only")
    assert np.mean([m.lam for m in means]) < 0.2
    plain, _, _, _ = outcome("random", 1.0)
    assert half_width(plain) > 1.1 * half_width(plain, "human_only")  # untuned, its noise is added


def test_the_dataset_target_covers_the_mean_over_these_queries():
    means, diffs, truths, true_diffs = outcome("judge", population="dataset", labelled=2 * LABELLED)
    assert 0.93 <= coverage(means, truths) <= 0.97
    assert 0.93 <= coverage(diffs, true_diffs) <= 0.97
    assert all(m.judge_only.half_width == 0 for m in means)  # exact for the judge's labels: its error is bias


def test_the_projected_interval_matches_the_one_more_labels_give():
    means, _, _, _ = outcome("judge")
    more, _, _, _ = outcome("judge", labelled=3 * LABELLED, lams=(None,))
    projected = np.mean([m.projected_half_width(2 * LABELLED) for m in means])
    assert projected == pytest.approx(half_width(more), rel=0.1)
    one = means[0]
    assert one.projected_half_width(0) == pytest.approx(one.ppi.half_width, rel=1e-12)  # the interval measured
    needed = one.labels_for(one.projected_half_width(2 * LABELLED))
    assert needed is not None and abs(needed - 2 * LABELLED) <= 2
    assert one.labels_for(0.0) is None
    with pytest.raises(RagMetricsError, match="half_width: expected a number of 0 or more, got nan"):
        one.labels_for(float("nan"))


def test_the_projection_of_an_accurate_judge_matches_the_labels_it_asks_for():
    """Was: the projection mixed the judge's variance over every query with the labelled queries' covariance, so
    with an accurate judge the human-minus-judge variance went negative and was clipped to 0: 0 more labels
    projected 26% narrower than the interval measured, and labels_for said 0 were needed to reach a width not
    reached. Each projection is held against the mean half width of 300 samples of that many labels."""
    rng = np.random.default_rng(0)
    truth = rng.random(200)
    judge = np.clip(truth + rng.normal(0, 0.1, 200), 0, 1)
    labelled = np.full(200, np.nan)
    labelled[:30] = truth[:30]
    now = ppi.ppi_mean(judge, labelled)
    assert now.projected_half_width(0) == pytest.approx(now.ppi.half_width, rel=1e-12)
    for more in (30, 100):
        widths = []
        for seed in range(300):
            picked = np.random.default_rng(100 + seed).permutation(200)[: 30 + more]
            sample = np.full(200, np.nan)
            sample[picked] = truth[picked]
            widths.append(ppi.ppi_mean(judge, sample).ppi.half_width)
        assert now.projected_half_width(more) == pytest.approx(np.mean(widths), rel=0.05)
    target = now.projected_half_width(30)
    needed = now.labels_for(target)
    assert needed is not None and now.projected_half_width(needed) <= target < now.projected_half_width(needed - 1)
    assert now.labels_for(now.ppi.half_width) == 0  # the width measured is reached with no more


def test_matches_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")  # the test extra pins it: the authors' reference implementation
    rng = np.random.default_rng(5)
    y = rng.random(400)
    f = np.clip(y + rng.normal(0.1, 0.2, 400), 0, 1)
    sampled = rng.choice(400, 60, replace=False)
    rest = np.setdiff1d(np.arange(400), sampled)
    human = np.full(400, np.nan)
    human[sampled] = y[sampled]
    for lam in (1.0, 0.5, 0.0):
        ours = ppi_mean(f, human, lam=lam)
        c = lam * len(rest) / 400  # ppi_py's lambda: its unlabelled set is the rest, ours every query
        assert ours.ppi.estimate == pytest.approx(
            ppi_py.ppi_mean_pointestimate(y[sampled], f[sampled], f[rest], lam=c)[0]
        )
        low, high = ppi_py.ppi_mean_ci(y[sampled], f[sampled], f[rest], alpha=0.05, lam=c)
        # their interval is the normal one (ours Student's t at about n - 1 degrees of freedom), their std ddof 0
        normal = ours.ppi.se * norm.ppf(0.975)
        assert normal == pytest.approx((high[0] - low[0]) / 2, rel=0.02)
    tuned = ppi_mean(f, human)
    assert tuned.ppi.estimate == pytest.approx(
        ppi_py.ppi_mean_pointestimate(y[sampled], f[sampled], f[rest])[0], abs=2e-3
    )


def test_strata_weight_each_by_its_share():
    rng = np.random.default_rng(11)
    strata = np.repeat(["a", "b"], [300, 100])
    y = np.where(strata == "a", 0.2, 0.8) + rng.normal(0, 0.05, 400)
    f = y + 0.1
    human = np.full(400, np.nan)
    chosen = np.r_[rng.choice(300, 10, replace=False), 300 + rng.choice(100, 30, replace=False)]  # b oversampled
    human[chosen] = y[chosen]
    stratified = ppi_mean(f, human, strata=strata)
    assert stratified.ppi.estimate == pytest.approx(y.mean(), abs=0.02)
    assert stratified.human_only.estimate == pytest.approx(y.mean(), abs=0.03)
    naive = ppi_mean(f, human, lam=0.0)  # unstratified, the oversampled stratum pulls the human mean up
    assert naive.human_only.estimate > y.mean() + 0.1


def test_sample_plan_is_seeded_excludes_the_labelled_and_keeps_strata_in_proportion():
    ids = [f"q{i}" for i in range(200)]
    plan = sample_plan(ids, 20, seed=1)
    assert plan == sample_plan(ids, 20, seed=1) != sample_plan(ids, 20, seed=2)
    assert len(set(plan)) == 20
    assert plan[:10] == sample_plan(ids, 10, seed=1)  # a prefix of the plan is the smaller plan
    again = sample_plan(ids, None, seed=1, labelled=plan[:5])
    assert not set(plan[:5]) & set(again) and len(again) == 195
    strata = ["big"] * 150 + ["small"] * 50
    chosen = sample_plan(ids, 40, seed=3, strata=strata)
    small = sum(int(q[1:]) >= 150 for q in chosen)
    assert small == 10  # a quarter of the queries, a quarter of any prefix (within one)
    assert all(abs(sum(int(q[1:]) >= 150 for q in chosen[:k]) - k / 4) <= 1 for k in range(1, 41))


@dataclass(frozen=True)
class Values:
    """Per-query values of one run (the QueryValues shape)."""

    name: str
    query_ids: np.ndarray
    arrays: dict

    @property
    def metrics(self) -> tuple:
        return tuple(self.arrays)


def test_corrected_comparison_feeds_the_corrections_and_the_verdicts():
    rng = np.random.default_rng(2)
    ids = np.array([f"q{i}" for i in range(400)], dtype=object)
    truth = {"base": rng.random(400)}
    truth["same"] = truth["base"] + rng.normal(0, 0.05, 400)
    truth["better"] = np.clip(truth["base"] + 0.1 + rng.normal(0, 0.05, 400), 0, 1.2)
    judged = {n: Values(n, ids, {"ndcg@10": v + 0.2 + rng.normal(0, 0.05, 400)}) for n, v in truth.items()}
    human = {n: Values(n, ids, {"ndcg@10": v}) for n, v in truth.items()}
    labelled = sample_plan(ids, 60, seed=4)
    frame = corrected_comparison(judged, human, labelled, baseline="base", correction="holm")
    assert list(frame["run"]) == ["same", "better"]
    # the family is compare's default: every pair of the three runs, "better" against "same" too
    other = corrected_comparison(judged, human, labelled, baseline="same", correction="none", family="baseline")
    family = np.r_[frame["p_value"].to_numpy(), other.set_index("run").loc["better", "p_value"]]
    np.testing.assert_array_equal(frame["p_value_corrected"], stats.holm(family)[:2])
    assert (frame["family_size"] == 3).all()
    alone = corrected_comparison(judged, human, labelled, baseline="base", correction="holm", family="baseline")
    np.testing.assert_array_equal(alone["p_value_corrected"], stats.holm(alone["p_value"].to_numpy()))
    assert (alone["family_size"] == 2).all()
    # the interval beside a corrected p-value is adjusted the same way: it excludes 0 exactly when the p is below
    # alpha, at the level the correction tested it at; uncorrected, it is the 95% interval
    for table in (frame, alone):
        excludes = (table["ci_low_adjusted"] > 0) | (table["ci_high_adjusted"] < 0)
        assert (excludes == (table["p_value_corrected"] < 0.05)).all()
        assert (table["ci_level_adjusted"] >= 0.95).all() and (table["ci_level_adjusted"] > 0.95).any()
    raw = corrected_comparison(judged, human, labelled, baseline="base", correction="none")
    assert (raw["ci_low_adjusted"] == raw["ci_low"]).all() and (raw["ci_level_adjusted"] == 0.95).all()
    said = {
        row.run: verdict(row.run, row.baseline, row.delta, row.p_value_corrected, 0.05) for row in frame.itertuples()
    }
    assert said == {"same": "not significant", "better": "better"}
    better = frame.set_index("run").loc["better"]
    assert better["ci_low"] <= (truth["better"] - truth["base"]).mean() <= better["ci_high"]
    means = corrected_means(judged, human, labelled).set_index("run")
    assert (means["judge"] - means["estimate"]).between(0.15, 0.25).all()  # the judge's +0.2, removed


def test_refuses_what_it_cannot_estimate():
    f = np.linspace(0, 1, 10)
    with pytest.raises(RagMetricsError, match="at least 2"):
        ppi_mean(f, np.r_[0.5, [np.nan] * 9])
    with pytest.raises(RagMetricsError, match="population"):
        ppi_mean(f, f, population="everyone")
    with pytest.raises(RagMetricsError, match="lam"):
        ppi_mean(f, f, lam=2.0)


if __name__ == "__main__":  # the figures of docs/ppi.md
    for name, kind, lam, options in [
        ("good judge, PPI++", "judge", None, {}),
        ("good judge, plain PPI", "judge", 1.0, {}),
        ("good judge, PPI++, dataset target", "judge", None, {"population": "dataset"}),
        (
            "good judge, PPI++, dataset target, a fifth labelled",
            "judge",
            None,
            {"population": "dataset", "labelled": 100},
        ),
        ("judge that knows nothing, PPI++", "random", None, {}),
        ("judge that knows nothing, plain PPI", "random", 1.0, {}),
    ]:
        means, diffs, truths, true_diffs = outcome(kind, lam, **options)
        print(f"{name}:")
        for label, results, true in (("mean", means, truths), ("difference", diffs, true_diffs)):
            print(
                f"  {label:<10} coverage ppi {coverage(results, true):.3f} judge-only "
                f"{coverage(results, true, 'judge_only'):.3f} human-only {coverage(results, true, 'human_only'):.3f}"
                f"; half width ppi {half_width(results):.4f} judge-only {half_width(results, 'judge_only'):.4f} "
                f"human-only {half_width(results, 'human_only'):.4f}"
            )


def test_a_stratum_with_too_few_labelled_queries_is_named():
    f = np.linspace(0, 1, 12)
    y = np.where(np.arange(12) < 7, f, np.nan)  # queries 0-6 labelled: stratum "b" (6-11) holds one of them
    strata = np.array(["a"] * 6 + ["b"] * 6, dtype=object)
    with pytest.raises(RagMetricsError, match=r"^1 labelled query in stratum 'b' of 6: a corrected estimate needs"):
        ppi_mean(f, y, strata=strata)


def test_eval_says_an_interval_of_width_0_measures_nothing_however_many_queries_are_labelled(tmp_path):
    """40 queries, each run's relevant document at rank 1: 30 human-labelled queries all score 1, so the corrected
    interval has width 0; the CLI says so (not only below 30 labelled queries) and forecasts no shrinking."""
    ids = [f"q{i:02d}" for i in range(40)]
    (tmp_path / "known.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n" for q in ids[:20]))
    (tmp_path / "judge.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[20:]))
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[:30]))
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {q}-rel 1 2.0 r\n{q} Q0 {q}-other 2 1.0 r\n" for q in ids))
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(tmp_path / "known.qrels"), "--run", str(tmp_path / "run.trec"), "-m", "ndcg@10",
            "--judge-qrels", str(tmp_path / "judge.qrels"), "--human-qrels", str(tmp_path / "human.qrels")]  # fmt: skip
    assert main(argv, out, err) == 0, err.getvalue()
    assert "30 of 40 queries human-labelled" in out.getvalue()
    # no interval beside the mean: its width 0 claimed certainty (was "corrected 1.0000 [1.0000, 1.0000]")
    assert "corrected 1.0000 no interval (width 0: the labelled queries score alike)" in out.getvalue()
    assert "corrected 1.0000 [" not in out.getvalue()
    assert "the 30 human-labelled queries score alike here, so an interval has width 0" in err.getvalue()
    assert "more labelled" not in out.getvalue()  # no forecast for an interval with no width to shrink
    json_out = io.StringIO()
    assert main([*argv, "--format", "json"], json_out, io.StringIO()) == 0
    row = json.loads(json_out.getvalue())["corrected"][0]
    assert row["no_spread"] is True and row["too_few"] is False and row["exact"] is False
    assert row["ci_low"] is None and row["ci_high"] is None and row["projected"] is None  # no interval here either
    assert row["judge_low"] is not None  # the judge's own interval is a sample's: it stays
    # a human label of a query neither the dataset nor the judge has (a typo) is said, not dropped unseen
    with (tmp_path / "human.qrels").open("a") as handle:
        handle.write("nosuchq 0 docx 1\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert "labels 1 query that neither the dataset nor the judge's labels have ['nosuchq']" in err.getvalue()
    assert "30 of 40 queries human-labelled" in out.getvalue()
    # a query only the judge's labels judge, none relevant (a negative one pooled): counted, and said so
    assert "judged by the judge's labels alone" not in err.getvalue()
    with (tmp_path / "judge.qrels").open("a") as handle:
        handle.write("neg1 0 neg1-x 0\nneg2 0 neg2-x 0\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert (
        "2 queries the dataset does not judge are judged by the judge's labels alone, none relevant" in err.getvalue()
    )
    assert "none relevant (neg1, neg2): the corrected means count them" in err.getvalue()
    assert "30 of 42 queries human-labelled" in out.getvalue()
    # every query human-labelled, for the mean over exactly these queries: the width 0 is an exact mean, not a
    # sample that measures nothing, so no note (and no "label more")
    every = "".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids)
    (tmp_path / "human.qrels").write_text(every + "neg1 0 neg1-x 0\nneg2 0 neg2-x 0\n")
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-target", "dataset"], out, err) == 0, err.getvalue()
    assert "all 42 queries human-labelled" in out.getvalue() and "corrected 0.9524 exact  judge-only" in out.getvalue()
    assert "score alike" not in err.getvalue() and "label more" not in err.getvalue()
    assert unreadable(FEW_LABELLED, [0.1, 0.0])[0] == "flat"
    assert unreadable(FEW_LABELLED - 1, [0.1])[0] == "few"
    assert unreadable(FEW_LABELLED, [0.1, 0.2]) is None
    assert unreadable(12, [0.0], 0, "dataset", n_queries=12) is None  # exact: flat, few and alike as it may be
    assert unreadable(12, [0.0], 0, "queries", n_queries=12)[0] == "flat"  # a sample of a larger population


def test_a_corrected_delta_from_too_few_labelled_queries_or_an_interval_of_width_0_gets_no_verdict(tmp_path):
    """Run a always finds the relevant document, run b never: a difference of 1 on every query, under the judge's
    labels and the human ones alike, so the corrected delta's se is 0. With 5 human-labelled queries it is too few
    to tell (as a segment of fewer than 10 queries); with 12 an interval of width 0 from a sample measures nothing:
    no p-value, no star, no verdict ("cannot tell"), where it used to be "better" at p = 0."""
    ids = [f"q{i:02d}" for i in range(40)]
    qrels = rm.Dataset.from_dict({q: {f"{q}-rel": 1, f"{q}-other": 0} for q in ids})
    runs = [
        rm.Run.from_dict({q: {f"{q}-rel": 2.0, f"{q}-other": 1.0} for q in ids}, name="a"),
        rm.Run.from_dict({q: {f"{q}-other": 2.0, f"{q}-rel": 1.0} for q in ids}, name="b"),
    ]
    judged = rm.evaluate(qrels, runs, ["ndcg@1"], warn=False).runs
    for n, too_few, said in ((5, True, "too few"), (12, False, "cannot tell")):
        frame = corrected_comparison(judged, judged, ids[:n], baseline="b", correction="holm")
        (row,) = frame.to_dict("records")
        assert row["n_labelled"] == n and row["delta"] == pytest.approx(1.0)
        assert row["too_few"] is too_few and row["no_spread"] is True and row["significant"] is False, row
        assert np.isnan(row["p_value"]) and np.isnan(row["p_value_corrected"]) and row["family_size"] == 1
        got = verdict(
            "a", "b", row["delta"], row["p_value_corrected"], 0.05, too_few=row["too_few"], no_spread=row["no_spread"]
        )
        assert got == said
    one = ppi_mean(np.ones(40), np.r_[np.ones(12), [np.nan] * 28])
    assert one.ppi.flat and np.isnan(one.ppi.p_value)


def test_a_comparison_with_exact_and_sampled_rows_says_each_in_its_own_words_and_corrects_the_sampled_only(tmp_path):
    """Under the ``dataset`` target with ``--missing skip``, run c has no value on exactly the 10 queries humans did
    not label: its pairs (c against b, a and d) are exact, the others (a and d against b, a against d) sampled. The
    correction's family holds the 3 sampled pairs only; c's row says "exact" and its verdict, without a level or a
    correction (was "98.33% CI (Holm-adjusted)"); the footer counts the most queries a pair scores (was c's, the
    first row's: "all 30 queries human-labelled") and the note on the sampled intervals stays (an exact row hid it)."""
    ids = [f"q{i:02d}" for i in range(40)]
    (tmp_path / "known.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n" for q in ids[:20]))
    (tmp_path / "judge.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[20:]))
    (tmp_path / "human.qrels").write_text(
        "".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other {int(i % 3 == 0)}\n" for i, q in enumerate(ids[:30]))
    )
    first, second = (
        "{q} Q0 {q}-rel 1 2.0 {r}\n{q} Q0 {q}-other 2 1.0 {r}\n",
        "{q} Q0 {q}-other 1 2.0 {r}\n{q} Q0 {q}-rel 2 1.0 {r}\n",
    )
    runs = {
        "b": [second] * 40,
        "c": [first] * 30,
        "a": [first] * 40,
        "d": [first if i % 2 else second for i in range(40)],
    }
    for name, lines in runs.items():
        (tmp_path / f"{name}.trec").write_text("".join(line.format(q=q, r=name) for q, line in zip(ids, lines)))
    argv = ["compare", "--dataset", str(tmp_path / "known.qrels"), "--baseline", str(tmp_path / "b.trec"),
            *(arg for name in "cad" for arg in ("--run", str(tmp_path / f"{name}.trec"))), "-m", "ndcg@10",
            "--judge-qrels", str(tmp_path / "judge.qrels"), "--human-qrels", str(tmp_path / "human.qrels"),
            "--ppi-target", "dataset", "--missing", "skip"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--format", "json"], out, err) == 0, err.getvalue()
    rows = {row["run"]: row for row in json.loads(out.getvalue())["comparisons"]}
    assert [rows[r]["exact"] for r in "cad"] == [True, False, False]
    assert {row["family_size"] for row in rows.values()} == {3}  # a-b, d-b, a-d: c's pairs are exact
    assert rows["c"]["verdict"] == "exactly better" and rows["c"]["p_value_corrected"] is None
    assert rows["c"]["ci_method_adjusted"] == "exact" and rows["c"]["ci_level_adjusted"] is None
    assert rows["c"]["n_labelled"] == rows["c"]["n_queries"] == 30 and rows["a"]["n_queries"] == 40
    for r in "ad":
        assert rows[r]["verdict"] == "better" and rows[r]["ci_method_adjusted"] == "t"
        assert 1 - 0.05 / 2 <= rows[r]["ci_level_adjusted"] <= 1 - 0.05 / 3  # Holm's steps over 3, not over 6
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    c, a, d = lines[:3]
    assert f"exact [{rows['c']['delta']:+.4f}, {rows['c']['delta']:+.4f}]  {SAID['exactly better'].term}  " in c, c
    assert "CI" not in c and "p=" not in c
    for line, r in ((a, "a"), (d, "d")):
        level = f"{100 * rows[r]['ci_level_adjusted']:.4g}% CI (Holm-adjusted)"
        assert f"{level} [" in line and f"(holm {rows[r]['p_value_corrected']:.4g})*" in line, line
    assert lines[3].startswith("30 of 40 queries human-labelled, the rest the judge's;"), lines[3]
    # the human-only and judge-only intervals at the row's level (was the human-only at 95% beside a 98.33% CI)
    for line, r in ((a, "a"), (d, "d")):
        row = rows[r]
        assert f"human-only {row['human_delta']:+.4f} [{row['human_low_adjusted']:+.4f}, " in line, line
        assert row["human_high_adjusted"] - row["human_low_adjusted"] > row["human_high"] - row["human_low"]
    assert lines[3].endswith(ppi.JUDGE_ONLY_WORDS), lines[3]  # a judge-only interval leaves out the judge's bias
    # the family in words holds what its count does: 6 pairs of 4 runs, c's 3 exact ones left out
    assert "Holm-corrected over 3 comparison(s) (all pairs of 4 runs x 1 metric, less 3 exact);" in lines[4], lines[4]
    assert [rows[r]["family_exact"] for r in "cad"] == [3, 3, 3]
    assert {row["family_covers"] for row in rows.values()} == {"all pairs of 4 runs x 1 metric, less 3 exact"}
    # one pair of runs names its family only when some of it is left out
    assert [family_scope("baseline", 2, 2, exact) for exact in (0, 1)] == [
        "",
        "all pairs of 2 runs x 2 metrics, less 1 exact",
    ]
    intervals = f"intervals: Holm-adjusted CI ({stats.delta_interval_method('holm', ['t'])}); "
    assert intervals + stats.delta_interval_method("holm", ["exact"]) + "; exact: " in lines[4], lines[4]
    assert "the judge and the humans differ on only 5 of the 30 human-labelled queries" in err.getvalue()


def _strata_study(
    seeds: int, labelled: int, *, fixed: bool, lam: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Stratified PPI++ on queries of two kinds, 60% "easy" (relevant documents score 3.0 higher) and 40% "hard"
    (0.2 higher), N = 500, the human sample drawn in proportion (:func:`sample_plan` with strata). ``fixed``: every
    seed has exactly 300 easy queries and the interval is given the population's shares; else each query's kind is
    drawn and the shares are estimated. Returns each seed's interval (low, high) and se, and the population mean."""
    rng = np.random.default_rng(21)
    saved = globals()["SIGNALS"]

    def draw(shape: tuple[int, ...], signal: float) -> tuple[np.ndarray, np.ndarray]:
        globals()["SIGNALS"] = (signal,)
        truth, (top,) = simulate_queries(rng, shape)
        return truth, top

    try:
        big = 100_000
        (easy_truth, easy_top), (hard_truth, hard_top) = draw((big,), 3.0), draw((big,), 0.2)
        target = 0.6 * ndcg10(easy_truth, easy_top).mean() + 0.4 * ndcg10(hard_truth, hard_top).mean()
        ids = [str(i) for i in range(QUERIES)]
        estimates, ses = [], []
        for seed in range(seeds):
            easy = np.arange(QUERIES) < 300 if fixed else rng.random(QUERIES) < 0.6
            truth, top = np.empty((QUERIES, POOL), np.int8), np.empty((QUERIES, 10), np.int64)
            truth[easy], top[easy] = draw((int(easy.sum()),), 3.0)
            truth[~easy], top[~easy] = draw((int((~easy).sum()),), 0.2)
            f, y = ndcg10(judge(rng, truth, 0.2, 0.05), top), ndcg10(truth, top)
            strata = np.where(easy, "easy", "hard")
            chosen = [int(q) for q in sample_plan(ids, labelled, seed=seed, strata=strata)]
            human = np.full(QUERIES, np.nan)
            human[chosen] = y[chosen]
            shares = {"easy": 0.6, "hard": 0.4} if fixed else None
            result = ppi_mean(f, human, strata=strata, shares=shares, lam=lam)
            assert (result.between == 0) is fixed
            estimates.append((result.ppi.ci_low, result.ppi.estimate, result.ppi.ci_high))
            ses.append(result.ppi.se)
    finally:
        globals()["SIGNALS"] = saved
    return np.array(estimates), np.array(ses), float(target)


@pytest.mark.parametrize("fixed", [False, True])
def test_the_stratified_interval_covers_whether_the_strata_s_shares_are_estimated_or_known(fixed):
    """Estimated from the sample, the strata's shares vary from sample to sample; the interval adds that variance
    (it left it out: coverage 0.90 here, 600 seeds, 100 of 500 queries labelled) and covers the population's mean as the unstratified one does."""
    intervals, ses, target = _strata_study(600, 100, fixed=fixed)
    covered = np.mean((intervals[:, 0] <= target) & (target <= intervals[:, 2]))
    assert 0.925 <= covered <= 0.98, covered  # measured: 0.943 estimated, 0.928 known
    assert np.sqrt(np.mean(ses**2)) == pytest.approx(intervals[:, 1].std(), rel=0.12)  # the se: the spread


def test_known_shares_are_the_stratified_weights_and_are_checked():
    f = np.linspace(0, 1, 20)
    human = np.where(np.arange(20) % 2 == 0, f, np.nan)
    strata = np.array(["a"] * 10 + ["b"] * 10, dtype=object)
    known = ppi_mean(f, human, strata=strata, shares={"a": 0.2, "b": 0.8}, lam=1.0)
    assert known.ppi.estimate == pytest.approx(0.2 * f[:10].mean() + 0.8 * f[10:].mean())
    assert known.between == 0 and ppi_mean(f, human, strata=strata).between > 0
    with pytest.raises(RagMetricsError, match="summing to 1"):
        ppi_mean(f, human, strata=strata, shares={"a": 0.2, "b": 0.7})
    with pytest.raises(RagMetricsError, match="no share given"):
        ppi_mean(f, human, strata=strata, shares={"a": 1.0})
    with pytest.raises(RagMetricsError, match="target 'queries' only"):
        ppi_mean(f, human, strata=strata, shares={"a": 0.5, "b": 0.5}, population="dataset")


def test_compare_gives_an_interval_of_width_0_no_p_value_and_warns_when_judge_and_humans_rarely_differ(tmp_path):
    """Run a ranks each query's relevant document first, run b second: under labels the judge and the humans share
    the delta is the same on every query, its interval has width 0, and compare prints no p-value and no star
    ("cannot tell", said in words). Where the humans differ from the judge on 2 of 30 labelled queries, the
    ``dataset`` target's interval has a width but rests on those 2: said too."""
    ids = [f"q{i:02d}" for i in range(40)]
    argv = _corrected_compare(_small_corrected_inputs(tmp_path), "b.trec", "a.trec")
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert "p=n/a (cannot tell)?" in out.getvalue() and "*" not in out.getvalue().splitlines()[0]
    # no interval beside "cannot tell" (was its width-0 [+0.3691, +0.3691], which the footer says measures nothing)
    assert "corrected delta +0.3691 no interval (width 0)  p=n/a (cannot tell)?" in out.getvalue()
    assert "? = cannot tell: an interval of width 0" in out.getvalue()
    # the footer names the method in the registry's words (was its own "Student's t, at each comparison's level")
    assert "intervals: Holm-adjusted CI (Student's t at each comparison's level)" in out.getvalue()
    assert "no p-value, no verdict: cannot tell" in err.getvalue()
    # 6 labelled queries, on 3 of which the humans differ from the judge: a p-value, but from a test on too few to
    # be trusted, so neither it nor the interval at its level is shown (was "95% CI (Holm-adjusted) [...]  p=...")
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-other {i % 2}\n" for i, q in enumerate(ids[20:26])))
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--format", "json"], out, err) == 0, err.getvalue()
    (row,) = json.loads(out.getvalue())["comparisons"]
    assert row["too_few"] is True and row["no_spread"] is False and row["delta"] is not None, row
    # the JSON reads the rule as the text and the panel do: the delta and the flag, no interval and no p-value (it
    # kept both, flagged); the judge-only and human-only deltas keep theirs
    untested = ["ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted", "ci_level_adjusted", "ci_method_adjusted"]
    assert all(row[k] is None for k in [*untested, "p_value", "p_value_corrected"]) and row["significant"] is False, row
    assert row["human_low"] is not None and row["judge_low"] is not None, row
    assert row["projected"] is None and row["more"] is not None, row  # no projection from an untrusted interval
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    first = out.getvalue().splitlines()[0]
    assert f"corrected delta {row['delta']:+.4f} no interval  p=n/a (too few to tell)?  judge-only" in first, first
    assert f"? = {TOO_FEW_WORDS}" in out.getvalue() and "(fewer than 10 human-labelled queries: " in TOO_FEW_WORDS
    # the humans find q00's and q01's other document relevant too, the judge does not
    (tmp_path / "human.qrels").write_text(
        "".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other {int(q in ('q00', 'q01'))}\n" for q in ids[:30])
    )
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-target", "dataset"], out, err) == 0, err.getvalue()
    # which row has so few is named (was: no run or metric named, and a number that moved with the runs given)
    assert (
        "the judge and the humans differ on only 2 of the 30 human-labelled queries (on ndcg@10 of run 'a' against "
        "'b', the fewest of the table's rows)" in err.getvalue()
    ), err.getvalue()
    assert "p=n/a" not in out.getvalue()
    # every query human-labelled, for the mean over exactly these queries: the delta is exact, not "cannot tell"
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids))
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-target", "dataset"], out, err) == 0, err.getvalue()
    first = out.getvalue().splitlines()[0]
    # an exact delta is better by exactly itself, in the registry's words; it tests nothing, so no family is corrected
    assert "corrected delta +0.3691" in first and f"{SAID['exactly better'].term}  " in first, first
    # its interval is the point itself, named so (was "95% CI (Holm-adjusted)", though no correction applies to it)
    assert f"delta +0.3691 {stats.DELTA_INTERVAL_NAMES['exact']} [+0.3691, +0.3691]" in first, first
    assert "CI" not in out.getvalue() and "Student's t" not in out.getvalue(), out.getvalue()
    assert f"intervals: {stats.delta_interval_method('holm', ['exact'])};" in out.getvalue(), out.getvalue()
    assert "exact: every query the pair scores human-labelled" in out.getvalue()
    assert "all 40 queries human-labelled" in out.getvalue()
    assert "cannot tell" not in out.getvalue() and "?" not in first and "*" not in first
    assert "p: none, every delta is exact;" in out.getvalue() and "comparison(s)" not in out.getvalue()
    assert "score alike" not in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-target", "dataset", "--format", "json"], out, err) == 0, err.getvalue()
    (row,) = json.loads(out.getvalue())["comparisons"]
    assert row["exact"] is True and row["no_spread"] is False and row["too_few"] is False and row["p_value"] is None
    assert row["verdict"] == "exactly better" and row["family_size"] == 0 and row["p_value_corrected"] is None
    assert row["ci_method_adjusted"] == "exact" and row["ci_level_adjusted"] is None
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[:30]))
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--correction", "none"], out, err) == 0, err.getvalue()
    assert "differ on only" not in err.getvalue()
    assert (
        "intervals: 95% CI (Student's t, uncorrected)" in out.getvalue()
    )  # the queries target carries the judge's own variance


def _small_corrected_inputs(tmp_path):
    """40 queries: the dataset judges 20, a judge the other 20, people 30 of them; two runs."""
    ids = [f"q{i:02d}" for i in range(40)]
    (tmp_path / "known.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n" for q in ids[:20]))
    (tmp_path / "judge.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[20:]))
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids[:30]))
    (tmp_path / "a.trec").write_text("".join(f"{q} Q0 {q}-rel 1 2.0 a\n{q} Q0 {q}-other 2 1.0 a\n" for q in ids))
    (tmp_path / "b.trec").write_text("".join(f"{q} Q0 {q}-other 1 2.0 b\n{q} Q0 {q}-rel 2 1.0 b\n" for q in ids))
    return tmp_path


def _corrected_compare(folder, baseline: str, run: str) -> list[str]:
    """``compare`` of ``run`` against ``baseline`` (files in ``folder``, :func:`_small_corrected_inputs`) on ndcg@10,
    corrected by the judge's and people's labels there."""
    return ["compare", "--dataset", str(folder / "known.qrels"), "--baseline", str(folder / baseline), "--run",
            str(folder / run), "-m", "ndcg@10", "--judge-qrels", str(folder / "judge.qrels"), "--human-qrels",
            str(folder / "human.qrels")]  # fmt: skip


def test_compare_on_another_engine_refuses_the_labels_it_would_not_read(tmp_path):
    """Was: compare --engine duckdb with --judge-qrels and --human-qrels printed the plain comparison on the
    dataset's judgments alone, the labels accepted and ignored."""
    folder = _small_corrected_inputs(tmp_path)
    argv = _corrected_compare(folder, "a.trec", "b.trec")
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert "corrected delta" in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--engine", "duckdb"], out, err) == 2
    assert not out.getvalue()
    assert f"--judge-qrels {folder / 'judge.qrels'}, --human-qrels" in err.getvalue()
    assert "read only with --engine inprocess, not --engine duckdb" in err.getvalue()


def test_the_corrected_estimates_options_without_the_labels_are_refused(tmp_path):
    """Was: eval and compare took --plan, --strata, --ppi-target and --ppi-lambda without --judge-qrels and
    --human-qrels and printed the plain numbers, the options ignored."""
    d = _small_corrected_inputs(tmp_path)
    for command, runs in (("eval", ["--run", str(d / "a.trec")]), ("compare", ["--baseline", str(d / "a.trec"),
                                                                              "--run", str(d / "b.trec")])):  # fmt: skip
        argv = [command, "--dataset", str(d / "known.qrels"), *runs, "-m", "ndcg@10"]
        for extra in (["--plan", "5"], ["--ppi-target", "dataset", "--ppi-lambda", "1"], ["--strata", "category"]):
            out, err = io.StringIO(), io.StringIO()
            assert main([*argv, *extra], out, err) == 2, (command, extra, out.getvalue())
            named = ", ".join(" ".join(extra[i : i + 2]) for i in range(0, len(extra), 2))
            if command == "eval" and extra[0] in ("--plan", "--strata"):  # the first plan needs the judge's alone
                said = f"{named}: read only with --judge-qrels (the queries to label"
                assert said in err.getvalue() and "give --judge-qrels, or drop" in err.getvalue(), err.getvalue()
                continue
            said = f"{named}: read only with --judge-qrels and --human-qrels (the estimates corrected by a human sample"
            assert said in err.getvalue() and "give --judge-qrels and --human-qrels, or drop" in err.getvalue()
        labels = ["--judge-qrels", str(d / "judge.qrels"), "--human-qrels", str(d / "human.qrels")]
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, *labels, "--ppi-target", "dataset", "--ppi-lambda", "1"], out, err) == 0, err.getvalue()
        assert "for the mean over exactly these queries" in out.getvalue() and "lambda 1" in out.getvalue()
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, *labels], out, err) == 0, err.getvalue()  # the defaults: target queries, lambda tuned
        assert "for the mean over the population of queries" in out.getvalue() and "lambda tuned" in out.getvalue()


def test_under_the_queries_target_an_interval_on_few_disagreements_is_said_to_be_too_narrow():
    """Binary per-query values (a hit or not), an accurate judge (right on 90% or 95% of queries), 30 to 200 of 1,000
    queries labelled, the ``queries`` target (each sample draws its queries): the samples that caught fewer than
    ``MIN_DIFFERING_QUERIES`` queries where the judge and the humans differ cover the mean less often than the
    others, and are the ones :func:`ppi.unreadable` flags (was: under ``queries`` only the ``dataset`` target's rule,
    never met here)."""
    rng = np.random.default_rng(1)
    covered: dict[bool, list[bool]] = {True: [], False: []}
    flagged = []
    for n in (30, 50, 100, 200):
        for accuracy in (0.9, 0.95):
            for p in (0.2, 0.5):
                for _ in range(250):
                    y = (rng.random(1000) < p).astype(float)
                    f = np.where(rng.random(1000) < accuracy, y, 1 - y)
                    human = np.full(1000, np.nan)
                    pick = rng.choice(1000, n, replace=False)
                    human[pick] = y[pick]
                    result = ppi.ppi_mean(f, human)
                    few = result.differing < ppi.MIN_DIFFERING_QUERIES
                    covered[few].append(result.ppi.ci_low <= p <= result.ppi.ci_high)
                    said = ppi.unreadable(n, [result.ppi.ci_high - result.ppi.ci_low], result.differing, "queries")
                    flagged.append((few, said is not None and said[0] == "agree"))
    few_rate, others = float(np.mean(covered[True])), float(np.mean(covered[False]))
    assert len(covered[True]) > 1000 and len(covered[False]) > 1000
    assert few_rate < 0.94 <= others <= 0.97, (few_rate, others)
    assert all(few == said for few, said in flagged)
    words = ppi.unreadable(40, [0.1], 4, "queries")
    assert words is not None and words[1].startswith("the judge and the humans differ on only 4 of the 40")
    assert "with fewer than 5 such queries the interval for the mean can be too narrow" in words[1]
    assert ppi.unreadable(40, [0.1], 5, "queries") is None


def test_under_the_queries_target_a_paired_difference_on_few_disagreements_covers_and_is_not_flagged():
    """The same study for a paired difference (a run that hits where a baseline does, mostly; each run's judge right
    on 90% or 95% of queries): its interval covers the true difference about 95% of the time whether the sample
    caught fewer than ``MIN_DIFFERING_QUERIES`` disagreements or not, so a comparison's rows are not flagged for it."""
    rng = np.random.default_rng(5)
    truth = 0.5 * 0.9 + 0.5 * 0.3 - 0.5
    covered: dict[bool, list[bool]] = {True: [], False: []}
    for n in (30, 50, 100, 200):
        for accuracy in (0.9, 0.95):
            for _ in range(250):
                yb = (rng.random(1000) < 0.5).astype(float)
                ya = np.where(yb == 1, rng.random(1000) < 0.9, rng.random(1000) < 0.3).astype(float)
                fa, fb = (np.where(rng.random(1000) < accuracy, y, 1 - y) for y in (ya, yb))
                ha, hb = np.full(1000, np.nan), np.full(1000, np.nan)
                pick = rng.choice(1000, n, replace=False)
                ha[pick], hb[pick] = ya[pick], yb[pick]
                result = ppi.ppi_paired(fa, fb, ha, hb)
                covered[result.differing < ppi.MIN_DIFFERING_QUERIES].append(
                    result.ppi.ci_low <= truth <= result.ppi.ci_high
                )
    assert len(covered[True]) > 300 and len(covered[False]) > 1000
    assert all(0.93 <= float(np.mean(rates)) <= 0.97 for rates in covered.values()), covered
    assert ppi.unreadable(40, [0.1], 4, "queries", paired=True) is None
    rows = pd.DataFrame({"ci_low": [0.1], "ci_high": [0.3], "n_labelled": [40], "differing": [4]})
    assert ppi.unreadable_rows(rows, paired=True) == []
    assert [kind for kind, _ in ppi.unreadable_rows(rows)] == ["agree"]


def test_eval_s_plan_is_drawn_with_the_seed_given(tmp_path):
    """Was: ``eval --plan`` under the label files was drawn with seed 0 whatever was asked (``--seed`` refused there
    as without ``--ci``), though its help said "seeded": ``--seed`` draws it, and is refused with the labels only
    without ``--plan``."""
    d = _small_corrected_inputs(tmp_path)
    argv = ["eval", "--dataset", str(d / "known.qrels"), "--run", str(d / "a.trec"), "-m", "ndcg@10",
            "--judge-qrels", str(d / "judge.qrels"), "--human-qrels", str(d / "human.qrels")]  # fmt: skip

    def plan(*extra: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, "--plan", "5", *extra], out, err) == 0, err.getvalue()
        return next(line for line in out.getvalue().splitlines() if line.startswith("label next"))

    assert plan() == plan("--seed", "0")
    drawn = {plan("--seed", str(seed)) for seed in range(1, 6)}
    assert len(drawn) > 1 and all(line.startswith("label next (5 of the ") for line in drawn), drawn
    assert plan("--seed", "3") == plan("--seed", "3")
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--seed", "3"], out, err) == 2 and not out.getvalue()
    assert err.getvalue().startswith(
        "ragmetrics: error: --seed 3: read only with --judge-qrels and --plan (the draw of --plan's sample); give "
        "--plan, or drop --seed\n"
    ), err.getvalue()


def test_a_pool_not_yet_labelled_given_as_labels_is_named_as_such(tmp_path):
    """Was: a pool file (query_id, doc_id, best_rank, runs) given as --human-qrels or --judge-qrels was read as TREC
    qrels with a header it did not have; judge merge already named it a pool not yet labelled."""
    d = _small_corrected_inputs(tmp_path)
    (d / "pool.tsv").write_text("query_id\tdoc_id\tbest_rank\truns\nq20\tq20-rel\t1\t1\n")
    for judge, human in (("pool.tsv", "human.qrels"), ("judge.qrels", "pool.tsv")):
        out, err = io.StringIO(), io.StringIO()
        argv = ["eval", "--dataset", str(d / "known.qrels"), "--run", str(d / "a.trec"), "-m", "ndcg@10",
                "--judge-qrels", str(d / judge), "--human-qrels", str(d / human)]  # fmt: skip
        assert main(argv, out, err) == 2
        assert (
            f"{d / 'pool.tsv'}: no label column (its columns: query_id, doc_id, best_rank, runs): the pairs of a "
            in (err.getvalue())
        )


def test_a_corrected_comparison_of_a_run_with_itself_says_there_is_nothing_to_compare(tmp_path):
    """Was: only "the 30 human-labelled queries score alike here ... label more (--plan)", which more labels would
    never change; the plain comparison's warning was not given."""
    d = _small_corrected_inputs(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(_corrected_compare(d, "a.trec", "a.trec"), out, err) == 0, err.getvalue()
    assert "warning: run 'a-2' has the same rows as the baseline: nothing to compare" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(_corrected_compare(d, "a.trec", "b.trec"), out, err) == 0, err.getvalue()
    assert "same rows as the baseline" not in err.getvalue()


def test_labels_that_name_none_of_a_run_s_documents_as_it_is_evaluated_are_refused(tmp_path):
    """Was: labels at another level than the run is evaluated at (chunk ids against a run mapped to its documents,
    document ids against a chunk run) were taken silently, then with a warning and the numbers printed (exit 0), the
    corrected numbers computed from labels of nothing the run ranks. Now refused (exit 2), a warning with
    --allow-no-overlap. The run is read as it is evaluated: its chunks mapped to documents meet document-level
    labels."""
    ids = [f"q{i:02d}" for i in range(40)]
    (tmp_path / "a.trec").write_text("".join(f"{q} Q0 {q}-rel#0 1 2.0 a\n{q} Q0 {q}-other#1 2 1.0 a\n" for q in ids))
    (tmp_path / "known.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n" for q in ids[:20]))
    (tmp_path / "known-chunks.qrels").write_text("".join(f"{q} 0 {q}-rel#0 1\n" for q in ids[:20]))
    for name, tail, queries in (("judge", "", ids[20:]), ("human", "", ids[:30]), ("human-chunks", "#0", ids[:30])):
        other = "#1" if tail else ""
        labels = "".join(f"{q} 0 {q}-rel{tail} 1\n{q} 0 {q}-other{other} 0\n" for q in queries)
        (tmp_path / f"{name}.qrels").write_text(labels)

    def corrected_eval(dataset: str, human: str, *extra: str) -> str:
        argv = ["eval", "--dataset", str(tmp_path / dataset), "--run", str(tmp_path / "a.trec"), "-m", "ndcg@10",
                "--judge-qrels", str(tmp_path / "judge.qrels"), "--human-qrels", str(tmp_path / human), *extra]  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        if main(argv, out, err) == 2:  # labels of nothing the run ranks: refused, numbers only when insisted on
            assert not out.getvalue() and "; --allow-no-overlap computes them anyway" in err.getvalue()
            assert "labelled (query, document) pairs are documents run 'a' retrieved" in err.getvalue()
            out, err = io.StringIO(), io.StringIO()
            assert main([*argv, "--allow-no-overlap"], out, err) == 0, err.getvalue()
        assert "corrected" in out.getvalue()
        return err.getvalue()

    # chunks mapped to their documents: document-level labels meet them, though no id is written alike
    assert "labelled (query, document) pairs" not in corrected_eval(
        "known.qrels", "human.qrels", "--chunk-pattern", "#"
    )
    said = corrected_eval("known.qrels", "human-chunks.qrels", "--chunk-pattern", "#")
    assert (
        f"warning: {tmp_path / 'human-chunks.qrels'}: 0 of its 60 labelled (query, document) pairs are documents run "
        "'a' retrieved, its ids read as it is evaluated (read against these labels alone: the qrels judge chunks, but "
        "the run was mapped to documents" in said
    )
    assert "label the ids the run is evaluated at (a chunk run against document-level labels" in said
    assert f"{tmp_path / 'judge.qrels'}:" not in said
    # a chunk run evaluated as chunks, both label files judging documents
    said = corrected_eval("known-chunks.qrels", "human.qrels")
    for name, pairs in (("judge", 40), ("human", 60)):
        assert (
            f"warning: {tmp_path / f'{name}.qrels'}: 0 of its {pairs} labelled (query, document) pairs are documents "
            "run 'a' retrieved, its ids read as it is evaluated (read against these labels alone: the run names "
            "chunks and the qrels judge the documents they come from)" in said
        ), said


def test_eval_s_options_the_corrected_estimates_do_not_read_are_refused(tmp_path):
    """Was: eval --ci and --fingerprint with --judge-qrels and --human-qrels printed the corrected table alone, the
    options accepted and ignored."""
    d = _small_corrected_inputs(tmp_path)
    argv = ["eval", "--dataset", str(d / "known.qrels"), "--run", str(d / "a.trec"), "-m", "ndcg@10",
            "--judge-qrels", str(d / "judge.qrels"), "--human-qrels", str(d / "human.qrels")]  # fmt: skip
    for option in ("--ci", "--fingerprint"):
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, option], out, err) == 2 and not out.getvalue()
        said = f"{option}: read only without --judge-qrels and --human-qrels"
        assert said in err.getvalue() and f"or drop {option}" in err.getvalue(), err.getvalue()


def test_the_unreadable_note_of_a_table_reads_only_the_rows_that_show_a_sample_interval() -> None:
    """One rule for the CLI's note and the dashboard's warning: a too-few row (no interval shown) and an exact row
    (width 0 is the truth) leave the table before :func:`unreadable` reads it; the fewest labelled, differing and
    queries of the rows left decide."""
    rows = pd.DataFrame(
        {
            "ci_low": [0.1, 0.5, 0.2, 0.3],
            "ci_high": [0.3, 0.5, 0.4, 0.3],
            "n_labelled": [40, 5, 35, 50],
            "differing": [20, 0, 18, 0],
            "n_queries": [100, 100, 100, 50],
            "too_few": [False, True, False, False],
            "exact": [False, False, False, True],
        }
    )

    def kinds(table: pd.DataFrame, **options: str) -> list[str]:
        return [kind for kind, _ in unreadable_rows(table, **options)]

    assert kinds(rows) == []  # the width-0 rows are the too-few and the exact one
    assert kinds(rows.assign(n_labelled=[20, 5, 35, 50])) == ["few"]
    assert kinds(rows, population="dataset") == []  # 18 and 20 differing: enough
    fewer = rows.assign(differing=[20, 0, MIN_DIFFERING - 1, 0])
    assert kinds(fewer, population="dataset") == ["agree"]
    assert kinds(fewer) == []  # the rule of a mean over exactly these queries only
    # both reasons at once are both said (was the first only: the "rough below 30" note hidden by the other)
    [(kind, words)] = unreadable_rows(fewer.assign(n_labelled=[20, 5, 25, 50]), population="dataset")
    assert kind == "agree" and words.endswith("; and below 30 labelled queries the interval is rough too")
    # a flat row (its width 0, or flagged no_spread once shown without ends) says its caution, and does not hide
    # the other rows' (was: one metric's "width 0" note hid another's "too narrow")
    assert kinds(rows.drop(columns="too_few")) == ["flat"]
    flagged = rows.drop(columns="too_few").assign(no_spread=[False, True, False, False], ci_low=[0.1, None, 0.2, 0.3])
    assert kinds(flagged) == ["flat"]
    assert kinds(flagged.assign(n_labelled=[20, 5, 35, 50])) == ["flat", "few"]


def test_compare_says_when_the_tuned_lambda_rests_on_fewer_than_100_labelled_queries(tmp_path):
    """On skewed deltas and a biased judge the tuned lambda's delta interval covered 0.79 at 10 labelled queries and
    0.91 at 50, plain PPI 0.95 (docs/ppi.md's limits): compare says so with the tuned lambda below 100 labelled
    queries, and not with --ppi-lambda 1."""
    from ragmetrics.analysis.ppi import TUNED_FROM, tuned_lambda_note

    argv = _corrected_compare(_small_corrected_inputs(tmp_path), "b.trec", "a.trec")
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert "with the tuned lambda and 30 human-labelled queries (fewer than 100)" in err.getvalue(), err.getvalue()
    assert "--ppi-lambda 1 holds its level there" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-lambda", "1"], out, err) == 0, err.getvalue()
    assert "tuned lambda" not in err.getvalue()
    assert tuned_lambda_note(TUNED_FROM, None) is None and tuned_lambda_note(99, 1.0) is None
    # every delta exact (every query human-labelled, the dataset target): no interval, so nothing to be too narrow
    ids = [f"q{i:02d}" for i in range(40)]
    (tmp_path / "human.qrels").write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-other 0\n" for q in ids))
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--ppi-target", "dataset"], out, err) == 0, err.getvalue()
    assert " exact [" in out.getvalue() and "tuned lambda" not in err.getvalue(), (out.getvalue(), err.getvalue())


def test_the_human_only_mean_has_the_interval_every_mean_has_and_a_paired_delta_t_s():
    """The human-only mean of an unstratified sample is a plain mean of the labelled queries' values: its interval
    is :func:`stats.mean_interval`'s, as ``eval`` gives any mean (was t's always, so two labelled queries scoring 1
    read as a certain [1.0000, 1.0000]); a paired delta's human-only interval stays t's, as compare's deltas."""
    judge = np.linspace(0.2, 0.9, 40)
    human = np.full(40, np.nan)
    human[:2] = 1.0
    result = ppi_mean(judge, human)
    assert result.human_only.estimate == 1.0
    assert (result.human_only.ci_low, result.human_only.ci_high) == pytest.approx(stats.proportion_interval(2, 2, 0.95))
    assert result.human_only.ci_low < 0.2  # two queries cannot say the mean is 1
    human[:5] = [0.2, 0.4, 0.9, 0.6, 0.7]  # values other than 0 and 1: t's interval, as before
    result = ppi_mean(judge, human)
    low, high = stats.mean_t_interval(human[:5], 0.95)
    assert (result.human_only.ci_low, result.human_only.ci_high) == pytest.approx((float(low), float(high)))
    # a paired delta (run right, baseline wrong on the 2 labelled queries): its human-only interval stays t's, here
    # the point of differences all 1, as compare's t interval of such a delta
    human[:] = np.nan
    human[:2] = 1.0
    paired = ppi_paired(judge, judge * 0, human, np.where(np.isnan(human), np.nan, 0.0))
    assert paired.human_only.ci_low == paired.human_only.ci_high == 1.0 and paired.human_only.flat


@pytest.mark.parametrize("which", ["judge", "human"])
def test_labels_made_for_another_dataset_are_refused_before_their_grades_are_read(tmp_path, which):
    """Was: eval and compare took label files none of whose queries is the dataset's, exited 0 and printed
    "corrected 0.0000 [0.0000, 0.0000]" under warnings; labels on another scale were refused for their grades, a
    cause that was not the one. They are refused as judge merge and judge run refuse them."""
    folder = _small_corrected_inputs(tmp_path)
    (folder / f"{which}.qrels").write_text(
        "".join(f"x{i:02d} 0 x{i:02d}-rel 2\nx{i:02d} 0 other 0\n" for i in range(12))
    )
    for argv in (
        _corrected_compare(folder, "a.trec", "b.trec"),
        ["eval", "--dataset", str(folder / "known.qrels"), "--run", str(folder / "a.trec"), "-m", "ndcg@10",
         "--judge-qrels", str(folder / "judge.qrels"), "--human-qrels", str(folder / "human.qrels")],
    ):  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out, err) == 2, err.getvalue()
        assert not out.getvalue()
        of = (
            "the dataset or the runs ['q00', 'q01', 'q02'] and 37"
            if which == "judge"
            else ("the dataset or the judge's labels ['q00', 'q01', 'q02'] and 37")
        )
        assert err.getvalue() == (
            f"ragmetrics: error: {folder / f'{which}.qrels'}: none of its 12 labelled queries ['x00', 'x01', 'x02'] "
            f"and 9 more is a query of {of} more: the labels were likely made for another dataset\n"
        ), err.getvalue()


def test_the_judge_only_mean_gets_the_interval_every_mean_gets():
    """Was: a t interval cut at 1 ("Hits@5 judge-only 0.978 [0.948, 1.000]") where the Overview gives the same 0/1
    values the exact binomial one; stratified or not, the judge's labels taken as truth are the plain mean."""
    from ragmetrics.analysis.stats import mean_interval

    judge = np.array([1.0] * 89 + [0.0] * 2)
    human = np.full(91, np.nan)
    human[:20] = judge[:20]
    human[3] = 0.0
    expected = mean_interval(judge)
    for strata in (None, np.array(["a", "b"] * 45 + ["a"])):
        found = ppi.ppi_mean(judge, human, strata=strata).judge_only
        assert (found.ci_low, found.ci_high) == (float(expected[0]), float(expected[1]))
        assert found.estimate == pytest.approx(89 / 91) and found.ci_high < 1.0  # exact binomial: below 1


def test_a_difference_s_judge_only_interval_is_t_s_as_compare_gives_it():
    """Was: the judge-only interval of a paired difference took the normal quantile (``df=inf``), a little narrower
    than the t interval ``compare`` gives the same judge-labelled differences (about 6% at 20 queries)."""
    rng = np.random.default_rng(0)
    run, baseline = rng.random(20), rng.random(20)
    human, human_baseline = np.full(20, np.nan), np.full(20, np.nan)
    human[:8], human_baseline[:8] = run[:8] + 0.1, baseline[:8]
    result = ppi.ppi_paired(run, baseline, human, human_baseline)
    t = ttest_1samp(run - baseline, 0.0)
    ci = t.confidence_interval(0.95)
    assert (result.judge_only.ci_low, result.judge_only.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert result.judge_only.p_value == pytest.approx(t.pvalue, rel=1e-12) and result.judge_only.df == 19


def test_the_python_api_says_what_it_leaves_out_and_refuses_what_means_nothing():
    """Was: a labelled query without a judge value was dropped with its human label in silence, an infinite value
    gave a NaN estimate, and a plan of query ids given twice repeated them."""
    judge = np.array([0.1, 0.2, np.nan, 0.4, 0.5, 0.6, 0.3, 0.2])
    human = np.array([0.1, np.nan, 0.3, 0.5, np.nan, 0.7, 0.4, 0.1])
    with pytest.warns(RagMetricsWarning, match="1 labelled query has no judge value: left out with the human labels"):
        result = ppi.ppi_mean(judge, human)
    assert result.n_labelled == 5 and result.n_queries == 7
    for which, values in (("judge", [np.inf, 1.0, 0.5]), ("human", [1.0, np.nan, -np.inf])):
        arrays = (
            (np.array(values), np.array([0.5, np.nan, 0.5])) if which == "judge" else (np.ones(3), np.array(values))
        )
        with pytest.raises(RagMetricsError, match=f"{which} values: expected finite numbers .*1 infinite"):
            ppi.ppi_mean(*arrays)
    with pytest.raises(RagMetricsError, match="query ids: each once; given more than once: a"):
        ppi.sample_plan(["a", "a", "b"])
