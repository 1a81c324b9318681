"""Paired significance tests, intervals of means and multiple-comparison correction.

All functions take per-query arrays already aligned by query id (the same
query at the same index) and are seeded where they resample, so that a
comparison repeats exactly. scipy does the work where it has the procedure.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragmetrics.engine.metrics import UNIT_RANGE
from ragmetrics.foundation.errors import RagMetricsError

Test = Literal["t", "wilcoxon", "randomization", "bootstrap"]
DEFAULT_RESAMPLES = 10_000


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise RagMetricsError(
            f"paired tests need two 1-d arrays of the same length; got shapes {a.shape} and {b.shape}"
        )
    return a, b


def _t(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    return float(sps.ttest_rel(a, b).pvalue)


WILCOXON_EXACT_UP_TO = 13
"""Up to this many non-zero differences with ties or zeros, Wilcoxon's p is the exact sign-flip permutation p of the
signed-rank statistic (all 2^n flips: 0.06 s at 13), as scipy's ``auto`` method gives it."""
WILCOXON_NORMAL_ABOVE = 50
"""Above this many non-zero differences with ties or zeros, Wilcoxon's p is the normal approximation with continuity
correction, as R's and scipy's; from :data:`WILCOXON_EXACT_UP_TO` to here, the seeded Monte-Carlo permutation p. The
approximation rejected 6.6% of 19 differences of +-1 under the null at alpha 0.05 (``tests/test_stats.py``)."""


RANKED_DECIMALS = 12
"""Wilcoxon's differences are ranked rounded to this many decimals: float arithmetic leaves equal metric differences
a last bit apart (1/3 - 0 is 0.3333333333333333, 1/2 - 1/6 is 0.33333333333333337), and equal differences must tie
at their mid-rank, and a difference of 5e-17 count as a zero, as the wins, ties and losses take them
(:data:`TIE_TOLERANCE`)."""


def ranked_differences(diff: np.ndarray) -> np.ndarray:
    """``diff`` as Wilcoxon ranks it (:data:`RANKED_DECIMALS`; -0.0 made 0.0)."""
    return np.round(np.asarray(diff, dtype=np.float64), RANKED_DECIMALS) + 0.0


def _signed_rank_permutation(nonzero: np.ndarray, n_resamples: int, seed: int) -> float:
    """Two-sided p of the signed-rank statistic T+ - T- over sign flips of ``nonzero`` (scipy's ``permutation_test``;
    the ranks of |d|, ties at their mid-rank, do not change under a flip): every flip up to
    :data:`WILCOXON_EXACT_UP_TO` differences, else ``n_resamples`` seeded ones, p = (hits + 1) / (resamples + 1)."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    if len(nonzero) < 2:
        return 1.0  # one difference: both flips reach it
    ranks = sps.rankdata(np.abs(nonzero))
    exact = len(nonzero) <= WILCOXON_EXACT_UP_TO
    return float(
        sps.permutation_test(
            (nonzero,),
            lambda d, axis: np.sum(np.sign(d) * ranks, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=1 << WILCOXON_EXACT_UP_TO if exact else n_resamples,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        ).pvalue
    )


def _wilcoxon(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    diff = ranked_differences(a - b)
    nonzero = diff[diff != 0]
    magnitudes = np.abs(nonzero)
    if len(nonzero) < len(diff) or len(np.unique(magnitudes)) < len(magnitudes):
        if len(nonzero) <= WILCOXON_NORMAL_ABOVE:
            # scipy's own PermutationMethod calls the statistic once per flip: a second at 12 differences
            return _signed_rank_permutation(nonzero, n_resamples, seed)
        return float(sps.wilcoxon(diff, zero_method="wilcox", method="approx", correction=True).pvalue)
    if len(nonzero) > WILCOXON_NORMAL_ABOVE:  # as with ties: R's continuity-corrected approximation (scipy's has none)
        return float(sps.wilcoxon(diff, zero_method="wilcox", method="approx", correction=True).pvalue)
    return float(sps.wilcoxon(diff, zero_method="wilcox", method="exact").pvalue)


RESAMPLE_BYTES = 512 << 20
"""What the resampling tests hold at once, about: their resamples go in batches of at most this many bytes of
values (10,000 resamples of 50,000 queries at once were tens of GB). The p-values do not depend on it: the batches
draw the same numbers one whole draw would. Smaller batches cost time (each of SciPy's permutation batches has a
cost of its own: 50,000 queries, 10,000 resamples, 250 a batch 26 s and 1.0 GB, 80 a batch 49 s and 0.4 GB)."""


def resample_batch(n: int, copies: int) -> int:
    """Resamples per batch of ``n`` values, when a batch holds about ``copies`` arrays of them (8 bytes a value)."""
    return max(1, RESAMPLE_BYTES // (8 * max(n, 1) * copies))


def _randomization(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    result = sps.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
        batch=resample_batch(len(a), 10),  # the permuted pair, their difference, SciPy's indices and masks
    )
    return float(result.pvalue)


BOOTSTRAP_MIN_QUERIES = 10
"""Below this many queries the bootstrap's p-value is the exact randomization test's: resampling 3 queries draws
from 10 distinct samples, so a constant difference gets p = 1/(resamples + 1) where every one of the 2^3 sign flips
is as likely and the exact p is 0.25."""


def exact_randomization(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the sign-flip randomization test over all 2^n flips (n below 20)."""
    diff = a - b
    n = len(diff)
    if n >= 20:
        raise RagMetricsError(f"the exact randomization test enumerates 2^n sign flips: n = {n} is too many")
    flips = 1.0 - 2.0 * ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1)  # every +-1 vector
    means = flips @ diff / n
    observed = abs(diff.mean())
    return float(np.count_nonzero(np.abs(means) >= observed - 1e-12) / len(means))


def _bootstrap(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """The studentized paired bootstrap (bootstrap-t): each resample's t of its mean about the observed mean,
    (mean* - mean) / (sd* / sqrt(n)), against the observed t, mean / (sd / sqrt(n)); p = (hits + 1) / (resamples + 1).
    A resample of one repeated value (sd* = 0) away from the mean counts as a hit (t* infinite), so the test errs
    conservative on binary values. Centring the resampled means alone (Sakai 2006) rejected a true null too often:
    0.105 at 10 queries, 0.077 at 15, 0.080 at 20, 0.074 at 30, 0.065 at 50 (graded exchangeable values, 2,000
    seeded samples); studentized, 0.042, 0.040, 0.052, 0.059, 0.056, as the t-test's (``tests/test_stats.py``)."""
    diff = a - b
    n = len(diff)
    if n < BOOTSTRAP_MIN_QUERIES:
        return exact_randomization(a, b)
    rng = np.random.default_rng(seed)
    mean, sd = diff.mean(), diff.std(ddof=1)
    observed = abs(mean) / (sd / np.sqrt(n))
    tolerance = CONSTANT_TOLERANCE * max(1.0, float(np.abs(diff).max()))
    hits = 0
    batch = resample_batch(n, 4)  # the indices drawn, the values they take, and the deviations std computes
    for start in range(0, n_resamples, batch):
        drawn = diff[rng.integers(0, n, size=(min(batch, n_resamples - start), n))]
        shift = np.abs(drawn.mean(axis=1) - mean)
        spread = drawn.std(axis=1, ddof=1) / np.sqrt(n)
        degenerate = spread <= tolerance
        t = np.divide(shift, spread, out=np.zeros_like(shift), where=~degenerate)
        hit = np.where(degenerate, shift > tolerance, t >= observed * (1 - 1e-12))
        hits += int(np.count_nonzero(hit))
    return (hits + 1) / (n_resamples + 1)  # the observed difference counts as one resample: never p = 0


def _mean_direction(diff: np.ndarray) -> float:
    return float(diff.mean())


def signed_rank_direction(diff: np.ndarray) -> float:
    """What the Wilcoxon signed-rank test tests the side of: T+ - T-, the ranks of |diff| (rounded to
    :data:`RANKED_DECIMALS`, zeros dropped, ties at their mid-rank, scipy's ``rankdata``) summed with the differences'
    signs. It is positive when more Walsh averages (d_i + d_j) / 2, i <= j, are positive than negative: the side of
    their median, the Hodges-Lehmann pseudo-median.
    40 differences of +0.05 and 4 of -0.95 give T+ - T- = 820 - 170 = +650 (the typical query wins) while the mean is -0.041."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    rounded = ranked_differences(diff)
    nonzero = rounded[rounded != 0]
    if not len(nonzero):
        return 0.0
    return float(np.sum(np.sign(nonzero) * sps.rankdata(np.abs(nonzero))))


@dataclass(frozen=True)
class PairedTest:
    """A paired significance test: its name, a title for people, what it tests (``null``, of the differences
    a - b), how, its p-value, and ``direction``: the statistic whose sign says which side the test found (the mean
    for the tests of the mean, T+ - T- for Wilcoxon's), which a verdict takes its direction from."""

    name: str
    title: str
    null: str
    description: str
    p_value: Callable[[np.ndarray, np.ndarray, int, int], float]
    direction: Callable[[np.ndarray], float] = _mean_direction
    resampled: bool = False
    direction_name: str = "mean(a - b)"
    p_floor: int = 0
    """Where the p-value always counts resamples, its floor over ``resamples + 1``: 1 for p = (hits + 1) /
    (resamples + 1), 2 for scipy's two-sided permutation p (twice the smaller side's); 0 when it counts none, or only
    sometimes (Wilcoxon resamples only with ties and 14 to 50 non-zero differences)."""
    merged_p_floor: int = 0
    """The same floor of the p-value the partitioned engines' merged sums give (the sign-flip test's, (hits + 1) /
    (resamples + 1): 1), 0 when they do not compute this test."""

    def smallest_p(self, n_resamples: int, *, merged: bool = False) -> float:
        """The smallest p-value the test can give with ``n_resamples`` (0 when it does not count resamples), in this
        process or, ``merged``, from the partitioned engines' sums."""
        return (self.merged_p_floor if merged else self.p_floor) / (n_resamples + 1)


TESTS: dict[str, PairedTest] = {
    t.name: t
    for t in (
        PairedTest(
            "t",
            "Paired t-test",
            "mean(a - b) = 0",
            "scipy.stats.ttest_rel on the per-query values; a constant difference (zero variance: t undefined) "
            "takes the exact sign-flip p, 2^(1 - n)",
            _t,
        ),
        PairedTest(
            "wilcoxon",
            "Wilcoxon signed-rank",
            "the differences are symmetric about 0 (pseudo-median 0): about the typical query, not the mean",
            f"differences rounded to {RANKED_DECIMALS} decimals, zeros dropped; exact without ties up to "
            f"{WILCOXON_NORMAL_ABOVE} differences; with ties or zeros, the sign-flip permutation p of the "
            f"signed ranks (exact up to {WILCOXON_EXACT_UP_TO} non-zero differences, seeded resamples up to "
            f"{WILCOXON_NORMAL_ABOVE}), above that the normal approximation with continuity correction, as R "
            "does; its side is that of the signed ranks, T+ - T-",
            _wilcoxon,
            direction=signed_rank_direction,
            resampled=True,
            direction_name="signed ranks T+ - T-",
        ),
        PairedTest(
            "randomization",
            "Fisher randomization",
            "a and b exchangeable within each query, tested on mean(a - b)",
            "sign-flip permutation test of the mean difference (exact when 2^n <= resamples), seeded",
            _randomization,
            resampled=True,
            p_floor=2,
            merged_p_floor=1,
        ),
        PairedTest(
            "bootstrap",
            "Paired bootstrap",
            "mean(a - b) = 0",
            "studentized bootstrap (bootstrap-t) of the mean difference about the observed mean, seeded; "
            "p = (hits + 1) / (resamples + 1); "
            f"below {BOOTSTRAP_MIN_QUERIES} queries, the exact randomization test's p (too few to resample)",
            _bootstrap,
            resampled=True,
            p_floor=1,
        ),
    )
}
"""The registry of paired tests: the one place a test is added (the CLI's and the dashboard's choices)."""


def test_direction(diff: np.ndarray, test: str) -> float:
    """The side ``test`` found the differences ``diff`` on (:attr:`PairedTest.direction`); NaN without one."""
    return TESTS[checked_test(test)].direction(np.asarray(diff, dtype=np.float64)) if len(diff) else float("nan")


def checked_test(test: str) -> str:
    """``test`` when :data:`TESTS` names it, else the error every caller gives."""
    if test not in TESTS:
        raise RagMetricsError(f"The 'test' parameter must be one of {list(TESTS)}. Got {test!r} instead.")
    return test


def checked_alpha(alpha: object) -> float:
    """``alpha`` when it is a significance level (a number strictly between 0 and 1), else the error every caller
    gives (1.5 passed every difference as significant, with an interval at a level below 0)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise RagMetricsError(
            f"The 'alpha' parameter must be a number strictly between 0 and 1. Got {alpha!r} instead."
        )
    return float(alpha)


def checked_seed(seed: object) -> int:
    """``seed`` when it is a whole number of 0 or more (numpy's generators take those), else a clear error."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise RagMetricsError(f"The 'seed' parameter must be a whole number of 0 or more. Got {seed!r} instead.")
    return int(seed)


def is_uncorrected(correction: str | None) -> bool:
    """Whether ``correction`` names no correction: None, ``""`` or ``"none"`` (each p-value alone)."""
    return correction in (None, "", "none")


def correction_title(correction: str | None) -> str:
    """How p-values corrected by ``correction`` are labelled: ``Holm``, ``Bonferroni``, ``uncorrected``."""
    return "uncorrected" if is_uncorrected(correction) else str(correction).capitalize()


def checked_correction(correction: str | None) -> str:
    """``correction`` (None: ``none``) when :data:`CORRECTIONS` names it, else the error every caller gives."""
    correction = correction or "none"
    if correction not in CORRECTIONS:
        raise RagMetricsError(
            f"The 'correction' parameter must be one of {list(CORRECTIONS)} or None. Got {correction!r} instead."
        )
    return correction


TIE_TOLERANCE = 1e-12
"""A paired difference within this of 0 is a tie; above it the run wins the query, below it the run loses it
(``wins``, ``ties``, ``losses`` in process and on the partitioned engines alike)."""

CONSTANT_TOLERANCE = 1e-12
"""Differences whose spread (largest minus smallest) is at most this times their largest magnitude (at least 1) are
constant: 0.3 - 0.2 and 0.2 - 0.1 differ by 2.8e-17, a rounding, not a variance."""


def is_constant(diff: np.ndarray) -> bool:
    """Whether the paired differences ``diff`` have zero variance, up to :data:`CONSTANT_TOLERANCE` (the rule of
    :func:`constant_columns`, for one column)."""
    return bool(constant_columns(np.asarray(diff, dtype=np.float64).reshape(-1, 1))[0])


def constant_difference_p(n: int) -> float:
    """The p-value of a constant non-zero difference over ``n`` queries, whatever the test: the exact sign-flip
    (randomization) p. Of the 2^n sign flips only the two that keep every sign or flip every one reach the observed
    mean, so p = 2^(1 - n) (0.5 at 2 queries, 0.25 at 3), the sign test's (scipy's ``binomtest(n, n)``). The t-test's
    own p is undefined there (t = mean / 0), and a bootstrap centred on the mean resamples nothing but 0."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    return float(sps.binomtest(n, n, 0.5).pvalue)


def paired_p_value(
    a: np.ndarray,
    b: np.ndarray,
    *,
    test: Test | str = "t",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float:
    """Two-sided p-value of a :data:`TESTS` test on paired per-query values.

    Identical inputs (every difference 0) give p = 1; fewer than 2 queries, or a NaN value (drop the queries a run
    has no value for first, as ``compare`` does), give NaN with every test. A constant non-zero difference
    (zero variance, up to :data:`CONSTANT_TOLERANCE`) gives the exact sign-flip p, 2^(1 - n), whatever the test
    (:func:`constant_difference_p`): never p = 0 from a variance that rounds to nothing.
    """
    checked_test(test)
    if TESTS[test].resampled and (
        isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 1
    ):
        raise RagMetricsError(f"n_resamples: expected a whole number of at least 1, got {n_resamples!r}")
    a, b = _paired(a, b)
    diff = a - b
    if len(diff) < 2 or np.isnan(diff).any():
        return float("nan")
    if float(np.abs(diff).max()) <= CONSTANT_TOLERANCE:
        return 1.0
    if is_constant(diff):
        return constant_difference_p(len(diff))
    return TESTS[test].p_value(a, b, n_resamples, seed)


def mean_t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of the mean along axis 0, mean +- t(n - 1) * s / sqrt(n) (:func:`t_interval`).

    ``values`` is (n_queries,) or (n_queries, n_points), e.g. a curve over K, one interval per column. Returns
    (low, high) shaped like one row; NaN below two queries (one value measures no spread); a constant column's is
    its point (:func:`mean_interval` gives it none). Why t and not the percentile bootstrap: on seeded synthetic
    per-query values (graded values, graded and reciprocal-rank paired differences; ``tests/test_stats.py``, figures
    in docs/conventions.md) the percentile bootstrap's "95%" covered the true mean 50%, 73-76%, 83-84% and 87-90% of
    the time at 2, 3, 5 and 10 queries and 93-94% at 30 (its intervals are too narrow by about
    sqrt((n - 1) / n) * z / t), where t's covered 93-97% from 2 queries on; on sparse differences (85% ties) both
    fall short below about 10 queries (t: 43% at 2, 74% at 5, 91% at 10). Both agree at thousands of queries. It
    is also the interval the paired t-test (the default test) inverts, so a difference's interval at 1 - alpha
    excludes 0 exactly when that test's uncorrected p-value is below alpha."""
    values = np.asarray(values, dtype=np.float64)
    n, shape = values.shape[0], values.shape[1:]
    if n < 2:  # one value shows no spread: an interval of width 0 would claim certainty
        nan = np.full(shape, np.nan)
        return nan, nan.copy()
    matrix = values.reshape(n, -1)
    mean = matrix.mean(axis=0)
    low, high = t_interval(mean, matrix.std(axis=0, ddof=1), np.full(mean.shape, n), confidence)
    # rounding can put a constant column's bound a hair past its mean
    low, high = np.minimum(low, mean), np.maximum(high, mean)
    return low.reshape(shape), high.reshape(shape)


def proportion_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial (Clopper-Pearson) interval of a proportion, ``successes`` of ``n``: it covers the true
    proportion at least ``confidence`` of the time at every n and p, where t's interval of n hits is the point [1, 1].
    One of :func:`proportion_intervals`."""
    low, high = proportion_intervals(np.array([successes]), n, confidence)
    return float(low[0]), float(high[0])


def proportion_intervals(
    successes: np.ndarray, n: int | np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise :func:`proportion_interval`, by the beta quantiles the exact interval is (statsmodels'
    ``proportion_confint(method="beta")``): the lower end is 0 at no successes, the upper 1 at all. scipy's
    ``binomtest(...).proportion_ci(method="exact")`` finds the same ends by root finding, within 1e-12
    (``tests/test_stats.py`` compares them), a few hundred times slower."""
    from scipy import special  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    k = np.asarray(successes, dtype=np.float64)
    total = np.broadcast_to(np.asarray(n, dtype=np.float64), k.shape)
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):  # the beta of a zero shape, where the end is 0 or 1 instead
        low = np.where(k > 0, special.betaincinv(k, total - k + 1, alpha / 2), 0.0)
        high = np.where(k < total, special.betaincinv(k + 1, total - k, 1 - alpha / 2), 1.0)
    return low, high


def zero_or_one(values: np.ndarray) -> np.ndarray:
    """Element-wise: the value is exactly 0 or 1 (-0.0 is 0; NaN is neither). A column of these is what
    :func:`mean_interval` gives the exact binomial interval, and what the merged sums count
    (:class:`ragmetrics.analysis.merged.Sums`)."""
    return (values == 0) | (values == 1)


IntervalMethod = Literal["Clopper-Pearson", "t", "none"]
"""A method of :func:`mean_interval` (``none``: no interval, below 2 values or every value the same other than 0 or
1)."""

INTERVAL_NAMES: dict[str, str] = {
    "Clopper-Pearson": "Clopper-Pearson",
    "t": "Student's t",
}
"""Each method of :func:`mean_interval` by the name a page or a command gives its intervals (``95% {name}
intervals``)."""

INTERVAL_WHERE: dict[str, str] = {
    "Clopper-Pearson": "where every query scored 0 or 1",
    "t": "",
}
"""Where each method of :func:`mean_interval` applies, said beside its name when intervals of several methods are
shown together."""

MEAN_INTERVAL_RULE = (
    f"{INTERVAL_NAMES['Clopper-Pearson']} {INTERVAL_WHERE['Clopper-Pearson']}, else {INTERVAL_NAMES['t']}"
)
"""How :func:`mean_interval` picks its method, for a text that names a mean's interval before any data is at hand."""


DeltaIntervalMethod = Literal["t", "exact", "none"]
"""A method of a paired difference's interval (``ci_method`` of :func:`ragmetrics.analysis.compare.paired_row` and
``ci_method_adjusted`` of :func:`ragmetrics.analysis.compare.adjusted_intervals`): ``t`` for Student's t interval
(:func:`mean_t_interval`, :func:`t_interval` at an adjusted level, and the prediction-powered one of
:mod:`ragmetrics.analysis.ppi`), or ``exact`` for a difference with no sampling error (the prediction-powered one
of exactly the queries asked about, every one labelled: :attr:`ragmetrics.analysis.ppi.Corrected.exact`), whose
interval is the point itself at no level and under no correction."""


def delta_method(n: int) -> DeltaIntervalMethod:
    """The method of a paired difference's 95% interval over ``n`` queries: ``t`` (:func:`mean_t_interval`), or
    ``none`` below 2 queries."""
    return "none" if n < 2 else "t"


DELTA_INTERVAL_NAMES: dict[str, str] = {
    "t": "Student's t",
    "exact": "exact",
}
"""Each method of a paired difference's interval by the name a footer, a caption or a note gives it."""


def delta_interval_method(correction: str | None, methods: Iterable[object] | None = None) -> str:
    """How the intervals of paired differences beside p-values corrected by ``correction`` were computed, in the
    words every page, the CLI and :func:`ragmetrics.analysis.verdicts.interval_disagreement` use (the one place
    they are written): the names of ``methods`` (of :data:`DELTA_INTERVAL_NAMES`; ``none``, NaN and None ignored),
    then ``, uncorrected`` or `` at each comparison's level``; an ``exact`` difference has no level and no
    correction, and is named after them (``Student's t at each comparison's level; exact (the delta itself: no
    level, no correction)``), or alone. Without a method, the rule ``compare`` follows: Student's t, at 95%
    uncorrected, at each comparison's level corrected (:func:`ragmetrics.analysis.compare.adjusted_level`)."""
    level = ", uncorrected" if is_uncorrected(correction) else " at each comparison's level"
    seen = {m for m in (() if methods is None else methods) if isinstance(m, str) and m and m != "none"}
    unknown = seen - set(DELTA_INTERVAL_NAMES)
    if unknown:
        raise RagMetricsError(
            f"interval method {sorted(unknown)[0]!r}: expected one of {', '.join(DELTA_INTERVAL_NAMES)}"
        )
    exact = f"{DELTA_INTERVAL_NAMES['exact']} (the delta itself: no level, no correction)"
    if seen == {"exact"}:
        return exact
    return DELTA_INTERVAL_NAMES["t"] + level + (f"; {exact}" if "exact" in seen else "")


def interval_methods(values: np.ndarray) -> list[IntervalMethod]:
    """The method :func:`mean_interval` uses for each column of ``values`` (one for a 1-d array): ``Clopper-Pearson``
    for a column whose every value is 0 or 1 with at least 2 values, ``none`` below 2 values or for a column whose
    every value is the same other than 0 or 1 (:func:`constant_columns`), else ``t``."""
    values = np.asarray(values)
    n = values.shape[0]
    if n < 2:
        return ["none"] * math.prod(values.shape[1:])
    matrix = values.reshape(n, -1)
    binary = np.asarray(zero_or_one(matrix).all(axis=0), dtype=bool)
    constant = constant_columns(matrix)
    return ["Clopper-Pearson" if exact else "none" if same else "t" for exact, same in zip(binary, constant)]


def constant_columns(matrix: np.ndarray) -> np.ndarray:
    """Element-wise over the columns of ``matrix`` (n, m): every value the same, up to :data:`CONSTANT_TOLERANCE` of
    their size. Such a column's values show no spread, so t's interval is the point itself whatever the truth
    (5 queries of precision 2/3 each: [0.667, 0.667]): it gets no interval (NaN) from :func:`mean_interval`, and a
    target gate cannot pass on it. One of 0s or of 1s takes the exact binomial interval instead."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if not len(matrix):
        return np.zeros(matrix.shape[1:], dtype=bool)
    scale = np.maximum(1.0, np.abs(matrix).max(axis=0))
    return np.asarray(np.ptp(matrix, axis=0) <= CONSTANT_TOLERANCE * scale)


def interval_words(methods: Iterable[str]) -> str:
    """The name of intervals computed by ``methods`` (of :func:`interval_methods`; ``none``, NaN and empty
    ignored), as a text says it after ``95% intervals:``: one method by its name (``Clopper-Pearson``,
    ``Student's t``), both by their names in a fixed order, each with where it applies (``Clopper-Pearson (where
    every query scored 0 or 1) and Student's t``); no method: the rule, :data:`MEAN_INTERVAL_RULE`."""
    seen = {method for method in methods if isinstance(method, str) and method and method != "none"}
    unknown = seen - set(INTERVAL_NAMES)
    if unknown:
        raise RagMetricsError(f"interval method {sorted(unknown)[0]!r}: expected one of {', '.join(INTERVAL_NAMES)}")
    used = [method for method in INTERVAL_NAMES if method in seen]
    if not used:
        return MEAN_INTERVAL_RULE
    if len(used) == 1:
        return INTERVAL_NAMES[used[0]]
    named = [
        f"{INTERVAL_NAMES[method]} ({INTERVAL_WHERE[method]})" if INTERVAL_WHERE[method] else INTERVAL_NAMES[method]
        for method in used
    ]
    return ", ".join(named[:-1]) + " and " + named[-1]


def mean_interval(
    values: np.ndarray, *, confidence: float = 0.95, within: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of a run's mean, on every page and command that shows one (``check --targets``, ``compare``'s
    means, the dashboard's; ``eval --ci`` reads the same rule from merged sums on every engine,
    :meth:`ragmetrics.analysis.merged.Sums.interval`): for a column whose every value is 0 or 1 (hits, success,
    recall at 1, any metric every query scored 0 or 1) and that holds at least 2 values, the exact binomial
    (Clopper-Pearson) interval (:func:`proportion_interval`); for a column whose every value is the same other than
    0 or 1, none (NaN: :func:`constant_columns` says why); for any other column, Student's t interval
    (:func:`mean_t_interval`, same shapes). :func:`interval_methods` says which, column by column, and
    :func:`interval_words` names them. t's interval of values all 1 is the point [1, 1] at any n (55 queries all
    hits: [1, 1], where the exact interval is [0.935, 1]) and covers a true mean near 1 far less than it claims; the
    exact interval covers at least ``confidence`` at every n and p (``tests/test_stats.py`` simulates both).
    ``within``: the range the values lie in, and so their mean (a metric's: :data:`METRIC_RANGE`), to clip t's
    interval to (on few queries it can pass 1: [0.191, 1.087] for a recall of 7 queries), which keeps its
    coverage."""
    values = np.asarray(values)
    if values.shape[0] < 2:
        return _clipped(*mean_t_interval(values, confidence), within)
    matrix = values.reshape(values.shape[0], -1)
    methods = np.asarray(interval_methods(matrix))
    low, high = mean_t_interval(matrix, confidence)
    exact = np.asarray(methods == "Clopper-Pearson", dtype=bool)
    if exact.any():
        successes = np.rint(matrix[:, exact].sum(axis=0))
        low[exact], high[exact] = proportion_intervals(successes, matrix.shape[0], confidence)
    low[methods == "none"] = high[methods == "none"] = np.nan
    shape = values.shape[1:]
    return _clipped(low.reshape(shape), high.reshape(shape), within)


METRIC_RANGE = UNIT_RANGE
"""Where every metric of the registry has its per-query values, and so its mean and the ends of the interval
:func:`mean_interval` gives it (one metric's: :func:`ragmetrics.engine.metrics.value_range`)."""


def _clipped(low: np.ndarray, high: np.ndarray, within: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """An interval clipped to ``within`` (None: as it is; NaN kept)."""
    if within is None:
        return low, high
    return np.clip(low, *within), np.clip(high, *within)


def t_interval(
    mean: np.ndarray, sd: np.ndarray, n: np.ndarray, confidence: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of a mean at ``confidence`` (one, or one per mean): mean +- t(n - 1) * sd / sqrt(n),
    element-wise (NaN below two values). At 1 - alpha/m for each of m means it is Bonferroni's simultaneous
    interval over the m."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    mean, sd, n = (np.asarray(v, dtype=np.float64) for v in (mean, sd, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        quantile = sps.t.ppf(0.5 + np.asarray(confidence, dtype=np.float64) / 2, np.maximum(n - 1, 1))
        half = np.where(n > 1, quantile * sd / np.sqrt(n), np.nan)
    return mean - half, mean + half


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN stays NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out[order] = np.minimum(adjusted, 1.0)
    return out


def bonferroni(p_values: np.ndarray) -> np.ndarray:
    """Bonferroni adjusted p-values (each times the number of valid p-values, capped at 1); NaN stays NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    return np.minimum(p * int(np.count_nonzero(~np.isnan(p))), 1.0)


def uncorrected(p_values: np.ndarray) -> np.ndarray:
    return np.asarray(p_values, dtype=np.float64).copy()


MIN_GROUP = 10
"""Fewer queries behind a comparison (a segment, a corrected delta's human sample) are too few to tell: no verdict
is given, whatever the p-value."""

CORRECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "holm": holm,
    "bonferroni": bonferroni,
    "none": uncorrected,
}
"""Multiple-comparison corrections by name: the one place one is added."""
STRICTEST_LEVEL: dict[str, str] = {
    "holm": "the level of Holm's first and strictest step",
    "bonferroni": "Bonferroni's level for every comparison",
}
"""What ``alpha / m`` is to each correction of :data:`CORRECTIONS` (but ``none``): the words a plan made at that
level gives (``ragmetrics.analysis.compare.planning_words``); a correction added there is described here."""


def family_text(correction: str | None, size: int, scope: str = "") -> str:
    """The correction and the family it covers, in the words the CLI and every dashboard page use:
    ``Holm-corrected over 4 comparison(s)``, ``Holm-corrected over 6 comparison(s) (all pairs of 3 runs x 2
    metrics)``, ``uncorrected``; a family of none (every row too few to test, or exact) says so."""
    if is_uncorrected(correction):
        return "uncorrected"
    if size == 0:
        return f"{correction_title(correction)}-corrected over no comparison: none was tested"
    return f"{correction_title(correction)}-corrected over {size} comparison(s)" + (f" ({scope})" if scope else "")


@dataclass(frozen=True)
class PowerEstimate:
    """What a dataset can detect, from the observed per-query standard deviation of differences."""

    n_queries: int
    sd_difference: float
    min_detectable_delta: float
    alpha: float
    power: float

    def queries_needed(self, delta: float) -> int:
        """Queries a paired t-test needs to detect ``delta`` at this alpha and power."""
        return queries_needed(delta, self.sd_difference, alpha=self.alpha, power=self.power)


def paired_t_power(effect: float, n_queries: int, *, alpha: float = 0.05) -> float:
    """The power of a two-sided paired t-test at level ``alpha`` on ``n_queries`` queries to detect a mean
    difference of ``effect`` standard deviations of the differences: the chance that ``|T|`` passes the critical
    value when ``T`` follows the noncentral t distribution (``n - 1`` degrees of freedom, noncentrality
    ``effect * sqrt(n)``). NaN below 2 queries."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    if n_queries < 2:
        return float("nan")
    df = n_queries - 1
    critical = sps.t.ppf(1 - alpha / 2, df)
    shift = effect * np.sqrt(n_queries)
    wrong_side = float(sps.nct.cdf(-critical, df, shift))  # NaN where it underflows, far below the other side
    return float(sps.nct.sf(critical, df, shift)) + (0.0 if math.isnan(wrong_side) else wrong_side)


def detectable_effect(n_queries: int, alpha: float, power: float) -> float:
    """The effect (in standard deviations of the differences) :func:`paired_t_power` reaches ``power`` at on
    ``n_queries`` queries: the smallest detectable difference is this times the differences' standard deviation."""
    from scipy import optimize  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    low = (sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) / np.sqrt(n_queries)  # the t-test needs more
    high = 1.25 * low
    while paired_t_power(high, n_queries, alpha=alpha) < power:
        low, high = high, 2 * high
    shortfall = lambda d: paired_t_power(d, n_queries, alpha=alpha) - power  # noqa: E731
    return float(optimize.brentq(shortfall, low, high, xtol=1e-9, rtol=1e-9))


def min_detectable_delta(sd_difference: float, n_queries: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean difference a two-sided paired t-test at ``alpha`` detects with ``power`` on ``n_queries``
    queries whose differences have standard deviation ``sd_difference`` (the noncentral t distribution:
    :func:`paired_t_power`); infinite below 2 queries."""
    if n_queries < 2:
        return float("inf")
    return detectable_effect(int(n_queries), float(alpha), float(power)) * sd_difference


def queries_needed(delta: float, sd_difference: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Queries a two-sided paired t-test at ``alpha`` needs to detect a mean difference ``delta`` with ``power``
    (the noncentral t distribution: :func:`paired_t_power`; at least 2)."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    if delta <= 0:
        raise RagMetricsError(f"The 'delta' parameter must be > 0. Got {delta!r} instead.")
    if sd_difference <= 0:
        return 2
    effect = delta / sd_difference
    normal = (sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) / effect
    n = max(2, int(np.ceil(normal**2)))  # the normal approximation: never more than the t-test needs
    while paired_t_power(effect, n, alpha=alpha) < power:
        n += 1
    return n
