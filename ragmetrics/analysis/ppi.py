"""Bias-corrected means from a judge's labels and a small human sample: prediction-powered inference.

A judge (a model, a rule) labels every query's unjudged documents; humans label those of a sample of ``n`` of the
``N`` queries. For any per-query metric, ``f_i`` is query i's value under the judge's labels (every query) and
``y_j`` its value under the human labels (the labelled queries). The judge-only mean ``mean(f)`` is biased by the
judge's errors; the human-only mean ``mean(y)`` is unbiased but rests on n queries. Prediction-powered inference
(Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 2023) keeps the judge's
reach and removes its bias::

    estimate = lam * mean(f over all N) + mean(y - lam * f over the n labelled)

with ``lam = 1`` the paper's estimator (the one the issue states: the judge's mean plus the mean human-minus-judge
difference) and, by default, ``lam`` tuned to the data (PPI++, Angelopoulos, Duchi & Zrnic 2023, the default of
the authors' library ``ppi_py``): ``lam = Cov(y, f) / Var(f)``, the covariance over the labelled queries and the
judge's variance over all N, clipped to [0, 1]. Any fixed ``lam`` gives an
unbiased estimate; ``lam = 0`` is the human-only mean, so a judge that knows nothing (f independent of y) costs
nothing but the tuning's noise, and a good one narrows the interval.

**Why not ``ppi_py`` itself.** Its formulas for a mean are a few lines (reproduced here, and checked against it in
``tests/test_ppi.py``), while importing it loads numba, statsmodels and scikit-learn and turns every warning of
the process off (``warnings.simplefilter("ignore")`` at import). It also treats the labelled and the unlabelled
queries as disjoint samples, where here the judge's mean runs over all N queries; the interval below is the exact
one for that estimator (rewritten over disjoint sets, ``c = lam * (N - n) / N`` is ``ppi_py``'s lambda).

**The interval** is ``estimate +- q * se``, for one of two targets (``population``), with ``q`` the Student-t quantile
at the Welch-Satterthwaite degrees of freedom of ``se^2``: the human-minus-judge part of a stratum with ``n_h``
labelled queries has ``n_h - 1`` of them, the judge's part over the unlabelled queries (hundreds) is taken as known.
On one stratum and a judge that adds little this is the t interval of ``n - 1`` degrees of freedom; on many
labelled queries it is the normal (CLT) interval. The p-value is the same t test's. An ``se`` of 0 (the labelled
queries' human-minus-judge differences all alike, and nothing else varying) measures nothing: its p-value is NaN.
The variance, per target:

* ``"queries"`` (default): the mean over the population of queries the dataset's queries are a sample of, as every
  other interval here (``compare``'s Student's t): ``se^2 = Var(y - c f) / n + c^2 Var(f) / (N - n)``. With strata,
  each stratum's share of that population is either given (``shares``: known, e.g. from the sampling frame) or
  estimated by its share of the N queries; estimated, the shares vary from sample to sample and ``se^2`` adds
  that variance, ``sum_h W_h (m_h - m)^2 / N`` (``m_h`` the stratum's estimate, ``m`` the overall one);
* ``"dataset"``: the mean over exactly these N queries, had humans labelled them all (a finite population; the
  difference estimator of survey sampling): ``se^2 = (1 - n / N) Var(y - lam f) / n``. The judge-only mean is then
  exact for its own labels (an interval of width 0: its error is all bias).

**The human sample must be random**: the n labelled queries a simple random sample of the N (or, with ``strata``,
a random sample within each stratum; the estimate weights each stratum by its share of the N queries, so the
sampling rates may differ between strata). Queries chosen for being hard, or the ones a judge was unsure of, void
the interval. :func:`sample_plan` draws such a sample, seeded; any prefix of its order is again a random sample.

Per-query values are float arrays aligned by query, NaN where a query has no value: a NaN judge value leaves the
query out of N, a NaN human value means "not labelled".
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ragmetrics.analysis import stats
from ragmetrics.analysis.values import QueryValues
from ragmetrics.analysis.verdicts import SAID, verdict
from ragmetrics.engine.metrics import better_sign
from ragmetrics.engine.queries import at_queries
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning

if TYPE_CHECKING:
    import pandas as pd

Population = Literal["queries", "dataset"]
POPULATIONS: dict[str, str] = {
    "queries": "the mean over the population of queries these are a sample of (as compare's intervals)",
    "dataset": "the mean over exactly these queries, had humans labelled them all",
}
"""The targets an interval can be for: the one place one is added (the CLI's choices)."""

MIN_LABELLED = 2
"""Fewer labelled queries (in a stratum) give no variance: the estimate is refused."""
MIN_TESTED = stats.MIN_GROUP
"""Fewer labelled queries give a corrected delta no verdict: "too few to tell", as a segment of fewer queries; the
test on so few is not to be trusted, so the CLI, its JSON and the dashboard show neither its p-values nor its
intervals (the adjusted interval excludes 0 exactly when the corrected p-value is below alpha: the same test), only
the delta (:func:`ragmetrics.analysis.compare.untested_shown`); a corrected mean of so few keeps its estimate and
loses its interval the same way (:func:`corrected_means`)."""
JUDGE_ONLY_WORDS = (
    "judge-only: the judge's labels taken as truth, its interval allowing nothing for the judge's bias (only the "
    "human labels measure it)"
)
"""What a judge-only interval is, beside the corrected one: the CLI's words (docs/ppi.md measures its coverage)."""
TOO_FEW_WORDS = f"{SAID['too few'].term} (fewer than {MIN_TESTED} human-labelled queries: no interval, no p-value)"
"""A too-few corrected delta's words, the CLI's and the dashboard's (:data:`MIN_TESTED`)."""
FEW_LABELLED = 30
"""Below this many human-labelled queries the interval of a mean is rough: it can be too narrow (a skewed metric on
so few values), or of width 0 when they all score alike (docs/ppi.md measures it); the CLI and the dashboard say
so."""


TUNED_FROM = 100
"""Below this many human-labelled queries a corrected delta's interval with the tuned lambda can be too narrow where
the deltas are skewed, whatever the judge: it covered 0.77-0.80 at 10 labelled queries and 0.90-0.92 at 30, where
plain PPI (lambda 1) covered 0.93-0.96 (docs/ppi.md's limits). The CLI says so."""


def tuned_lambda_note(n_labelled: int, lam: float | None, remedy: str = "--ppi-lambda 1") -> str | None:
    """What a corrected delta's reader is told of the tuned lambda (``lam`` None) on fewer than :data:`TUNED_FROM`
    human-labelled queries, or None; ``remedy``: how the reader asks for lambda 1 where they read it."""
    if lam is not None or n_labelled >= TUNED_FROM:
        return None
    return (
        f"with the tuned lambda and {n_labelled} human-labelled queries (fewer than {TUNED_FROM}), a delta's interval "
        f"can be too narrow where the deltas are skewed, mostly 0 and now and then large (docs/ppi.md measures it); "
        f"{remedy} holds its level there"
    )


FLAT = 1e-12
"""An ``se`` (or an interval's width) this small is 0: the rounding of a variance of values all alike."""
MIN_DIFFERING = 15
"""Under the ``dataset`` target, fewer labelled queries than this on which the human and the judge's values differ
leave the interval too narrow: it rests on the few disagreements the sample caught, whose spread it underestimates
when it caught fewer than usual (docs/ppi.md measures it for an accurate judge). The CLI says so."""
MIN_DIFFERING_QUERIES = 5
"""Under the ``queries`` target, which adds the judge's own variance, fewer labelled queries than this on which the
human and the judge's values differ leave a mean's interval short of its confidence (0.92-0.93 for a 95% interval
against 0.94-0.95 with more, measured in docs/ppi.md): it rests on the few disagreements the sample caught. The CLI
and the dashboard say so. Not of a paired difference's: measured alike, it covers 0.95 either way."""


def unreadable(
    n_labelled: int,
    widths: Sequence[float] | np.ndarray,
    differing: int | None = None,
    population: str = "queries",
    n_queries: int | None = None,
    paired: bool = False,
    fewest_where: str = "",
) -> tuple[str, str] | None:
    """Why corrected intervals of these ``widths`` (high minus low), from ``n_labelled`` human-labelled queries of
    ``n_queries``, cannot be read yet, as ``(kind, words)``; None when they can, and under the ``dataset`` target
    when every query is labelled (the mean is then exact: an interval of width 0 is the truth, no sample to
    enlarge). Else ``("flat", ...)`` when one has width 0 (the labelled queries all
    score alike: no spread to measure the judge's error with; such an interval gives no p-value and no verdict),
    ``("agree", ...)`` when fewer than :data:`MIN_DIFFERING` labelled queries (under the ``dataset`` target;
    :data:`MIN_DIFFERING_QUERIES` under ``queries``, for means, not ``paired`` differences) have human and judge
    values that differ (``differing``, the fewest of the intervals'; below :data:`FEW_LABELLED` labelled queries
    the words say that too; ``fewest_where``: which interval has the fewest, in words), ``("few", ...)`` below
    :data:`FEW_LABELLED`. The CLI and the dashboard say these words."""
    if population == "dataset" and n_queries is not None and n_labelled >= n_queries:
        return None
    if (np.abs(np.asarray(widths, dtype=np.float64)) <= FLAT).any():
        return "flat", (
            f"the {n_labelled} human-labelled queries score alike here, so an interval has width 0: it measures "
            "nothing yet, least of all certainty (no p-value, no verdict: cannot tell)"
        )
    least = MIN_DIFFERING if population == "dataset" else 0 if paired else MIN_DIFFERING_QUERIES
    few = (
        f"{n_labelled} human-labelled queries: below {FEW_LABELLED} the interval is rough (it can be too narrow)"
        if n_labelled < FEW_LABELLED
        else None
    )
    if differing is not None and differing < least:
        return "agree", (
            f"the judge and the humans differ on only {differing} of the {n_labelled} human-labelled queries"
            f"{fewest_where}: "
            f"with fewer than {least} such queries the interval for "
            + ("these queries' mean is too narrow" if population == "dataset" else "the mean can be too narrow")
            + " (it rests on the few disagreements the sample happened to catch: docs/ppi.md measures it)"
            + ("" if few is None else f"; and below {FEW_LABELLED} labelled queries the interval is rough too")
        )
    return None if few is None else ("few", few)


def sample_ends(low: float, high: float) -> tuple[float, float]:
    """A sample's interval as it is shown: its ends, or NaN for both where its width is 0 (a stratified one that
    scored alike: it measures nothing; an exact mean's point is shown by its caller as such)."""
    return (low, high) if high > low else (math.nan, math.nan)


def unreadable_rows(
    rows: pd.DataFrame, low: str = "ci_low", high: str = "ci_high", population: str = "queries", paired: bool = False
) -> list[tuple[str, str]]:
    """:func:`unreadable` of a table of corrected intervals (of means, or ``paired`` differences: a comparison's;
    columns ``low``, ``high``, ``n_labelled``; read when
    present: ``differing``, ``n_queries``, ``no_spread``), over the rows a sample measures and that show an interval: an
    ``exact`` row's width 0 is the truth, a ``too_few`` row shows none (its words say why). Each caution once: the
    rows of width 0 (``no_spread``, or their ends equal) get the ``flat`` words, and the other rows what their own
    fewest labelled, differing and queries call for (a flat row does not hide a narrow one's caution)."""
    for flag in ("exact", "too_few"):
        if flag in rows:
            rows = rows[~rows[flag].astype(bool)]
    if not len(rows):
        return []
    flat = (rows["no_spread"].astype(bool) if "no_spread" in rows else rows[high] == rows[low]).to_numpy()
    notes = []
    if flat.any():
        said = unreadable(int(rows.loc[flat, "n_labelled"].min()), [0.0], population=population, paired=paired)
        notes.append(said if said is not None else ("flat", ""))
    rows = rows[~flat]
    if not len(rows):
        return notes
    where = ""
    if "differing" in rows and {"metric", "run"} <= set(rows.columns):
        fewest = rows.loc[rows["differing"].idxmin()]
        against = f" against {fewest['baseline']!r}" if paired and "baseline" in rows else ""
        where = f" (on {fewest['metric']} of run {fewest['run']!r}{against}, the fewest of the table's rows)"
    said = unreadable(
        int(rows["n_labelled"].min()),
        (rows[high] - rows[low]).to_numpy(),
        int(rows["differing"].min()) if "differing" in rows else None,
        population,
        int(rows["n_queries"].min()) if "n_queries" in rows else None,
        paired,
        where,
    )
    return notes if said is None else [*notes, said]


def _quantile(confidence: float, df: float = math.inf) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom (inf: the normal's)."""
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    level = 0.5 + confidence / 2
    return float(sps.norm.ppf(level) if math.isinf(df) else sps.t.ppf(level, df))


def _two_sided_p(estimate: float, se: float, df: float = math.inf) -> float:
    """The t test's two-sided p-value of "the mean is 0"; NaN when ``se`` is 0 (an interval of width 0 from a
    sample measures nothing: it supports no verdict) or either number is not finite."""
    if not math.isfinite(estimate) or not math.isfinite(se) or se <= FLAT:
        return float("nan")
    from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

    statistic = abs(estimate) / se
    return float(2 * (sps.norm.sf(statistic) if math.isinf(df) else sps.t.sf(statistic, df)))


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval ``estimate +- q * se`` at ``confidence``, ``q`` Student's t quantile at ``df``
    degrees of freedom (inf: the normal's), the two-sided p-value of "the mean is 0" (the paired differences'
    test; NaN when ``se`` is 0), and ``n`` the queries behind it."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    df: float = math.inf

    @classmethod
    def of(cls, estimate: float, se: float, n: int, confidence: float, df: float = math.inf) -> Interval:
        q = _quantile(confidence, df)
        return cls(float(estimate), float(se), float(estimate - q * se), float(estimate + q * se),
                   _two_sided_p(estimate, se, df), int(n), float(df))  # fmt: skip

    @property
    def flat(self) -> bool:
        """An interval of width 0 (``se`` at most :data:`FLAT`): it measures nothing, and its p-value is NaN."""
        return not self.se > FLAT

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


@dataclass(frozen=True)
class Stratum:
    """One stratum's sizes and moments: ``big_n`` queries, ``n`` of them labelled, ``weight`` its share of all;
    ``var_f`` over all its queries, ``var_f_rest`` over the unlabelled ones; ``var_y``, ``var_f_labelled`` and
    ``cov`` (of y and f) over the labelled ones."""

    big_n: int
    n: int
    weight: float
    var_y: float
    var_f: float
    var_f_rest: float
    var_f_labelled: float
    cov: float


def _variance(stratum: Stratum, lam: float, n: float, population: str) -> tuple[float, float]:
    """The estimator's variance in ``stratum`` with ``n`` labelled queries, in two parts: the human-minus-judge
    part (estimated from the labelled queries: ``n - 1`` degrees of freedom) and the judge's part over the
    unlabelled queries. Each part's moments come from the queries it is about, as measured now: the labelled
    queries' variances and covariance of ``y`` and ``f`` (one sample, so ``Var(y - c f)`` is never negative), the
    unlabelled queries' variance of ``f``. With another ``n`` (a projection) only ``n`` and ``c`` change, so the
    projection of 0 more labels is the interval measured."""
    big_n = stratum.big_n
    c = lam if population == "dataset" else lam * (big_n - n) / big_n
    residual = max(stratum.var_y - 2 * c * stratum.cov + c**2 * stratum.var_f_labelled, 0.0)
    if population == "dataset":
        return residual * (1 - n / big_n) / n, 0.0
    rest = c**2 * stratum.var_f_rest / (big_n - n) if big_n > n else 0.0
    return residual / n, rest


def _satterthwaite(sampled: Sequence[float], dfs: Sequence[float], known: float = 0.0) -> tuple[float, float]:
    """The variance ``sum(sampled) + known`` and its Welch-Satterthwaite degrees of freedom, each term of
    ``sampled`` estimated with ``dfs`` degrees of freedom, ``known`` taken as exact (inf degrees of freedom when
    nothing is estimated)."""
    variance = float(sum(sampled)) + known
    spread = sum(v**2 / df for v, df in zip(sampled, dfs) if df > 0)
    return variance, (variance**2 / spread if spread > 0 else math.inf)


def _design(
    strata: Sequence[Stratum],
    lam: float,
    ns: Sequence[float],
    population: str,
    between: float,
    *,
    tuned: bool,
) -> tuple[float, float]:
    """The PPI estimate's variance and degrees of freedom with ``ns`` labelled queries in ``strata``, ``between``
    the variance of the strata's estimated shares (0 when known). A ``tuned`` lam is a slope fitted to the labelled
    queries: a stratum's human-minus-judge variance then has ``n - 2`` degrees of freedom, not ``n - 1``, and is
    scaled by ``(n - 1) / (n - 2)`` as a regression's residual variance is (per stratum, though the slope is
    shared: conservative with strata)."""
    parts = [_variance(s, lam, n, population) for s, n in zip(strata, ns)]
    dfs = [max(n - 1 - int(tuned), 1) for n in ns]
    sampled = [s.weight**2 * r * (n - 1) / df for s, (r, _), n, df in zip(strata, parts, ns, dfs)]
    known = sum(s.weight**2 * rest for s, (_, rest) in zip(strata, parts)) + between
    return _satterthwaite(sampled, dfs, known)


LABELS_GRID = 256
"""The counts of more labels :meth:`Corrected.labels_for` projects first (then it narrows between two of them)."""


@dataclass(frozen=True)
class Corrected:
    """One mean (a run's metric, or the paired difference of two runs') three ways: ``ppi`` (the corrected
    estimate), ``judge_only`` (the judge's labels taken as truth: ``mean(f)`` over the N queries) and
    ``human_only`` (``mean(y)`` over the n labelled queries; stratified when strata are given), with the tuning
    ``lam`` the correction used. ``bias`` is what the correction moved: ``ppi - judge_only``. ``between``: the
    variance the strata's estimated shares add (0 with one stratum, known shares or the ``dataset`` target).
    ``differing``: the labelled queries whose human and judge values differ (:data:`MIN_DIFFERING`); ``tuned``:
    ``lam`` was fitted to the labelled queries (PPI++)."""

    ppi: Interval
    judge_only: Interval
    human_only: Interval
    lam: float
    n_labelled: int
    n_queries: int
    confidence: float
    population: str
    strata: tuple[Stratum, ...]
    between: float = 0.0
    differing: int = 0
    tuned: bool = False

    @property
    def exact(self) -> bool:
        """The ``dataset`` target with every query human-labelled: the estimate is the human labels' mean over
        exactly these queries, the truth the target asks for (an interval of width 0 with no sampling error, not
        one that measures nothing)."""
        return self.population == "dataset" and self.n_labelled >= self.n_queries

    @property
    def bias(self) -> float:
        return self.ppi.estimate - self.judge_only.estimate

    def projected_half_width(self, more: int) -> float:
        """The PPI interval's half width with ``more`` labelled queries beyond these (spread over the strata in
        proportion to their unlabelled queries), from the variances estimated now: "label ``more`` more and the
        interval is about +- this"."""
        if more < 0:
            raise RagMetricsError(f"more: expected a number of queries of 0 or more, got {more!r}")
        rest = np.array([s.big_n - s.n for s in self.strata], dtype=np.float64)
        total_rest = rest.sum()
        extra = rest * min(more, total_rest) / total_rest if total_rest else rest
        ns = [s.n + e for s, e in zip(self.strata, extra)]
        variance, df = _design(self.strata, self.lam, ns, self.population, self.between, tuned=self.tuned)
        return _quantile(self.confidence, df) * math.sqrt(variance)

    def labels_for(self, half_width: float) -> int | None:
        """How many more labelled queries would bring the half width to ``half_width`` or below (None: not even
        labelling every query would). The projection need not fall at every step (with a fixed ``lam`` and an
        accurate judge, labels that replace judge values can widen it a little), so the counts are scanned on a grid
        of :data:`LABELS_GRID` steps and the first step that reaches it narrowed down by bisection: the fewest up to
        the grid's resolution (exactly the fewest where the projection falls between two grid counts)."""
        if not half_width >= 0:
            raise RagMetricsError(f"half_width: expected a number of 0 or more, got {half_width!r}")
        reach = half_width * (1 + 1e-12)  # the projection of 0 more is the measured width up to rounding
        total = sum(s.big_n - s.n for s in self.strata)
        grid = sorted({round(total * i / LABELS_GRID) for i in range(LABELS_GRID + 1)})
        reached = next((m for m in grid if self.projected_half_width(m) <= reach), None)
        if reached is None:
            return None
        low, high = grid[max(grid.index(reached) - 1, 0)], reached  # low fails (or is the first grid count)
        while high - low > 1:  # between two grid counts: the first one that reaches it
            middle = (low + high) // 2
            if self.projected_half_width(middle) <= reach:
                high = middle
            else:
                low = middle
        return high

    def to_dict(self) -> dict[str, Any]:
        return {
            "ppi": asdict(self.ppi),
            "judge_only": asdict(self.judge_only),
            "human_only": asdict(self.human_only),
            "lam": self.lam,
            "n_labelled": self.n_labelled,
            "n_queries": self.n_queries,
            "confidence": self.confidence,
            "population": self.population,
            "differing": self.differing,
        }


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if len(x) > 1 else 0.0


def ppi_mean(
    judge: np.ndarray,
    human: np.ndarray,
    *,
    lam: float | None = None,
    confidence: float = 0.95,
    population: Population | str = "queries",
    strata: np.ndarray | None = None,
    shares: Mapping[str, float] | None = None,
    differences: bool = False,
) -> Corrected:
    """The prediction-powered mean of a per-query metric, beside the judge-only and human-only means.

    ``judge``: each query's value under the judge's labels (NaN: the query has none and is left out); ``human``:
    its value under the human labels, NaN where the query is not labelled. ``lam``: None tunes it (PPI++), 1 is
    plain PPI, 0 the human-only mean. ``strata``: each query's stratum (e.g. its category) when the human sample
    was drawn per stratum; each stratum needs at least :data:`MIN_LABELLED` labelled queries. ``shares``: each
    stratum's known share of the population of queries (target ``queries`` only; they must sum to 1), the weights
    of the stratified estimate; None weights each by its share of the N queries, an estimate whose variance the
    interval adds. See the module documentation for the target (``population``) and the sampling the interval
    assumes. The human-only mean of a simple random sample (one stratum, target ``queries``) of a metric's values
    has the interval every mean has (:func:`ragmetrics.analysis.stats.mean_interval`); of ``differences`` (a paired
    delta's, :func:`ppi_paired`), t's.
    """
    if population not in POPULATIONS:
        raise RagMetricsError(f"population: expected one of {list(POPULATIONS)}, got {population!r}")
    if not 0 < confidence < 1:
        raise RagMetricsError(f"confidence: expected a number strictly between 0 and 1, got {confidence!r}")
    if lam is not None and not 0 <= lam <= 1:
        raise RagMetricsError(f"lam: expected a number in [0, 1] or None (tuned), got {lam!r}")
    f = np.asarray(judge, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    if f.shape != y.shape or f.ndim != 1:
        raise RagMetricsError(
            f"judge and human values: expected two 1-d arrays of one length, got {f.shape}, {y.shape}"
        )
    for which, values in (("judge", f), ("human", y)):
        if np.isinf(values).any():
            raise RagMetricsError(
                f"{which} values: expected finite numbers (NaN for none), got {int(np.isinf(values).sum())} infinite"
            )
    unjudged_labelled = int((np.isnan(f) & ~np.isnan(y)).sum())
    if unjudged_labelled:
        warnings.warn(
            f"{unjudged_labelled} labelled quer{'y has' if unjudged_labelled == 1 else 'ies have'} no judge value: "
            "left out with the human labels (the correction reads both values of a query)",
            RagMetricsWarning,
            stacklevel=2,
        )
    names, groups = (
        (np.array([""]), np.zeros(len(f), dtype=np.int64))
        if strata is None
        else np.unique(np.asarray(strata), return_inverse=True)
    )
    if len(groups) != len(f):
        raise RagMetricsError(f"strata: expected one per query ({len(f)}), got {len(groups)}")
    if shares is not None:
        if population != "queries":
            raise RagMetricsError("shares: the strata's shares of a population, for the target 'queries' only")
        if strata is None:
            raise RagMetricsError("shares: expected with strata")
        unknown = sorted(str(name) for name in names if str(name) not in shares)
        if unknown:
            raise RagMetricsError(f"shares: no share given for the strata {unknown}")
        total = sum(float(shares[str(name)]) for name in names)
        if not math.isclose(total, 1.0, abs_tol=1e-6) or any(float(shares[str(name)]) <= 0 for name in names):
            raise RagMetricsError(f"shares: expected positive shares of the strata summing to 1, got {total!r}")
    kept = ~np.isnan(f)
    f, y, groups = f[kept], y[kept], groups[kept]
    labelled = ~np.isnan(y)
    big_n, n = len(f), int(labelled.sum())
    parts = []
    for g in np.unique(groups):
        inside = groups == g
        mine = inside & labelled
        if mine.sum() < MIN_LABELLED:
            which = "" if strata is None else f" in stratum {str(names[g])!r}"
            raise RagMetricsError(
                f"{int(mine.sum())} labelled quer{'y' if mine.sum() == 1 else 'ies'}{which} of {int(inside.sum())}: "
                f"a corrected estimate needs at least {MIN_LABELLED} (label more queries of the human sample plan)"
            )
        fl, yl = f[mine], y[mine]
        cov = float(np.cov(yl, fl, ddof=1)[0, 1])
        parts.append(
            Stratum(
                big_n=int(inside.sum()),
                n=int(mine.sum()),
                weight=float(shares[str(names[g])]) if shares is not None else inside.sum() / big_n,
                var_y=_var(yl),
                var_f=_var(f[inside]),
                var_f_rest=_var(f[inside & ~labelled]),
                var_f_labelled=_var(fl),
                cov=cov,
            )
        )
    tuned = lam is None
    if lam is None:
        # PPI++'s tuning: the weighted within-stratum regression slope of y on f, clipped to [0, 1] as ppi_py does
        var_f = sum(s.weight**2 * s.var_f / s.n for s in parts)
        cov = sum(s.weight**2 * s.cov / s.n for s in parts)
        lam = float(np.clip(cov / var_f, 0.0, 1.0)) if var_f > 0 else 0.0
    means, human_means, judge_variance, human_parts = [], [], 0.0, []
    for g, s in zip(np.unique(groups), parts):
        inside = groups == g
        mine = inside & labelled
        means.append(lam * f[inside].mean() + (y[mine] - lam * f[mine]).mean())
        human_means.append(y[mine].mean())
        judge_variance += s.weight**2 * (0.0 if population == "dataset" else s.var_f / s.big_n)
        fpc = 1 - s.n / s.big_n if population == "dataset" else 1.0
        human_parts.append(s.weight**2 * s.var_y * fpc / s.n)
    weights = np.array([s.weight for s in parts])
    estimate, human_mean = float(weights @ means), float(weights @ human_means)
    estimated_shares = population == "queries" and shares is None and len(parts) > 1
    # the shares N_h / N of a sample of N queries vary as a multinomial's: Var(sum W_h m_h) = sum W_h (m_h - m)^2 / N
    between = float(weights @ (np.array(means) - estimate) ** 2) / big_n if estimated_shares else 0.0
    human_between = float(weights @ (np.array(human_means) - human_mean) ** 2) / big_n if estimated_shares else 0.0
    ns = [s.n for s in parts]
    variance, df = _design(parts, lam, ns, population, between, tuned=tuned)
    human_variance, human_df = _satterthwaite(human_parts, [n - 1 for n in ns], human_between)
    human_only = Interval.of(human_mean, math.sqrt(human_variance), n, confidence, human_df)
    if len(parts) == 1 and population == "queries" and not differences:
        # the mean of a simple random sample's values: the interval every mean gets (stats.mean_interval: the exact
        # binomial one where every value is 0 or 1, which t's point [1, 1] of two labelled queries scoring 1 is not)
        low, high = stats.mean_interval(y[labelled], confidence=confidence)
        human_only = replace(human_only, ci_low=float(low), ci_high=float(high))
    # the judge's N values taken as truth: t's interval, each stratum's variance on its N_h - 1 degrees of freedom
    # (the interval compare gives a difference of them)
    judge_df = (
        _satterthwaite([s.weight**2 * s.var_f / s.big_n for s in parts], [s.big_n - 1 for s in parts])[1]
        if population != "dataset"
        else math.inf
    )
    judge_only = Interval.of(float(f.mean()), math.sqrt(judge_variance), big_n, confidence, judge_df)
    if population == "queries" and shares is None and not differences:
        # the judge's labels taken as truth: the plain mean of the N values (the strata weighted by their shares of
        # them), with the interval the Overview gives it (the exact binomial one for values of 0 or 1)
        low, high = stats.mean_interval(f, confidence=confidence)
        judge_only = replace(judge_only, ci_low=float(low), ci_high=float(high))
    return Corrected(
        ppi=Interval.of(estimate, math.sqrt(variance), n, confidence, df),
        judge_only=judge_only,
        human_only=human_only,
        lam=lam,
        n_labelled=n,
        n_queries=big_n,
        confidence=confidence,
        population=str(population),
        strata=tuple(parts),
        between=between,
        differing=int(np.count_nonzero(np.abs(y[labelled] - f[labelled]) > FLAT)),
        tuned=tuned,
    )


def ppi_paired(
    judge: np.ndarray,
    judge_baseline: np.ndarray,
    human: np.ndarray,
    human_baseline: np.ndarray,
    **options: Any,
) -> Corrected:
    """The prediction-powered mean of the per-query differences of a run and a baseline (run minus baseline),
    under the judge's labels and under the human labels: :func:`ppi_mean` of the differences (``options`` pass
    through). Its intervals' p-values test "no difference", and :data:`ragmetrics.analysis.stats.CORRECTIONS`
    apply to them as to ``compare``'s."""
    return ppi_mean(
        np.asarray(judge, np.float64) - np.asarray(judge_baseline, np.float64),
        np.asarray(human, np.float64) - np.asarray(human_baseline, np.float64),
        differences=True,
        **options,
    )


def sample_plan(
    query_ids: Sequence[str] | np.ndarray,
    size: int | None = None,
    *,
    seed: int = 0,
    strata: Sequence[str] | np.ndarray | None = None,
    labelled: Collection[str] = (),
) -> list[str]:
    """The queries to label next, in the order to label them: a seeded random order of the queries not yet
    ``labelled`` (the first ``size`` of it; None: all). With ``strata`` (each query's stratum, e.g. its category),
    the order interleaves the strata in proportion to their sizes, each in random order within, so that any
    prefix is a stratified sample with about proportional allocation. The same arguments give the same plan."""
    ids = np.asarray([str(q) for q in query_ids], dtype=object)
    if len(set(ids)) < len(ids):
        twice = sorted(q for q, count in Counter(ids).items() if count > 1)
        raise RagMetricsError(f"query ids: each once; given more than once: {', '.join(twice[:5])}")
    if size is not None and size < 0:
        raise RagMetricsError(f"size: expected a number of queries of 0 or more, got {size!r}")
    rng = np.random.default_rng(seed)
    done = {str(q) for q in labelled}
    open_ = np.array([q not in done for q in ids], dtype=bool)
    jitter = rng.random(len(ids))
    if strata is None:
        key = jitter
    else:
        labels = np.asarray([str(s) for s in strata], dtype=object)
        if len(labels) != len(ids):
            raise RagMetricsError(f"strata: expected one per query ({len(ids)}), got {len(labels)}")
        key = np.zeros(len(ids))
        for value in np.unique(labels):
            inside = np.flatnonzero(labels == value)
            order = inside[np.argsort(jitter[inside], kind="stable")]
            # the k-th of a stratum of m is due at (k + u) / m: the strata advance together, ties broken at random
            key[order] = (np.arange(len(order)) + rng.random()) / len(order)
    chosen = np.flatnonzero(open_)
    chosen = chosen[np.lexsort((jitter[chosen], key[chosen]))]
    return [str(q) for q in ids[chosen[:size]]]


def _values_at(run: QueryValues, metric: str, wanted: np.ndarray) -> np.ndarray:
    if run.query_ids is None:
        raise RagMetricsError(f"run {run.name!r}: its per-query values were written to a file, not collected")
    arrays = run.arrays
    if metric not in arrays:
        raise RagMetricsError(f"run {run.name!r} has no values of {metric}; it has {', '.join(run.metrics)}")
    return at_queries(arrays[metric], run.query_ids, wanted)


def corrected_means(
    judge: Mapping[str, QueryValues],
    human: Mapping[str, QueryValues],
    labelled: Collection[str],
    *,
    metrics: Sequence[str] | None = None,
    strata: Mapping[str, str] | None = None,
    more: int | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Each run's and metric's corrected mean beside its judge-only and human-only means.

    ``judge``: each run's per-query values under the judge's labels (its queries are the N); ``human``: the same
    runs' values under the human labels, read at the ``labelled`` queries only. ``options`` pass to
    :func:`ppi_mean`; ``strata``: each query's stratum (query id to stratum). One row per (metric, run):
    ``estimate, ci_low, ci_high`` (PPI; no p-value: "the mean is 0" is no question of a metric's mean), ``judge,
    judge_low, judge_high``, ``human, human_low,
    human_high``, ``lam, n_labelled, n_queries``, ``differing`` (:data:`MIN_DIFFERING`), ``too_few`` (fewer than
    :data:`MIN_TESTED` labelled queries, unless the mean is exact: too few to tell, as a corrected delta of so few;
    the interval is kept here and shown by no output, :func:`ragmetrics.analysis.compare.untested_shown`),
    ``no_spread`` (an interval of width 0 from labelled queries that all score alike: it measures nothing, least of
    all certainty; shown as no interval, as a corrected delta's), ``exact``
    (:attr:`Corrected.exact`: its interval the point itself, said "exact" as a comparison's), and
    ``more, projected``: the interval's half width were ``more`` queries labelled beyond these (default: as many
    again).
    """
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    rows = []
    for name, run in judge.items():
        if name not in human:
            raise RagMetricsError(f"run {name!r} has values under the judge's labels but not under the human labels")
        ids = run.query_ids
        if ids is None:
            raise RagMetricsError(f"run {name!r}: its per-query values were written to a file, not collected")
        sampled = np.isin(np.asarray(ids, dtype=object).astype(str), np.asarray(list(labelled), dtype=str))
        for metric in metrics or run.metrics:
            f = _values_at(run, metric, ids)
            y = np.where(sampled, _values_at(human[name], metric, ids), np.nan)
            result = ppi_mean(f, y, strata=_strata_of(strata, ids), **options)
            row = _within(_row(result), 0.0, 1.0)
            del row["p_value"]  # the test of "the mean is 0": it means nothing for a mean of a metric
            too_few = result.n_labelled < MIN_TESTED and not result.exact
            no_spread = result.ppi.flat and not result.exact and not too_few
            rows.append(
                {"metric": metric, "run": name, **row, "too_few": too_few, "no_spread": no_spread,
                 "exact": result.exact, **_projected(result, more)}
            )  # fmt: skip
    return pd.DataFrame(rows)


BOUNDED = ("estimate", "ci_low", "ci_high", "judge", "judge_low", "judge_high", "human", "human_low", "human_high")
"""The columns of :func:`_row` that are a metric's mean or an interval's end."""


def _within(row: dict[str, Any], low: float, high: float) -> dict[str, Any]:
    """``row`` with its estimates and their intervals' ends clipped to ``[low, high]``: every metric's per-query
    values lie in [0, 1] (``tests/test_properties.py``), so a mean lies there and a difference in [-1, 1]. The
    corrected estimate and the interval of few labelled queries can pass them; clipped, an interval covers
    the truth whenever it did before (the truth is inside the range)."""
    return {k: (min(max(v, low), high) if k in BOUNDED else v) for k, v in row.items()}


def _ends_at(interval: Interval, level: float) -> tuple[float, float]:
    """``interval``'s ends at ``level`` (its estimate, standard error and degrees of freedom kept)."""
    span = _quantile(level, interval.df) * interval.se
    return interval.estimate - span, interval.estimate + span


def _strata_of(strata: Mapping[str, str] | None, ids: np.ndarray) -> np.ndarray | None:
    return None if strata is None else np.array([str(strata.get(str(q), "")) for q in ids], dtype=object)


def _projected(result: Corrected, more: int | None) -> dict[str, Any]:
    more = result.n_labelled if more is None else more
    more = min(more, result.n_queries - result.n_labelled)
    return {"more": more, "projected": result.projected_half_width(more)}


def _row(result: Corrected) -> dict[str, Any]:
    return {
        "estimate": result.ppi.estimate,
        "ci_low": result.ppi.ci_low,
        "ci_high": result.ppi.ci_high,
        "p_value": result.ppi.p_value,
        "judge": result.judge_only.estimate,
        "judge_low": result.judge_only.ci_low,
        "judge_high": result.judge_only.ci_high,
        "human": result.human_only.estimate,
        "human_low": result.human_only.ci_low,
        "human_high": result.human_only.ci_high,
        "lam": result.lam,
        "n_labelled": result.n_labelled,
        "n_queries": result.n_queries,
        "differing": result.differing,
    }


def _tested(result: Corrected) -> float:
    """``result``'s p-value as its correction's family counts it: an interval of width 0 from a sample (no p-value)
    stays in the family as p = 1, so the family is the compared pairs whatever the sample shows and the others'
    correction is no weaker for it; an exact delta (:attr:`Corrected.exact`) tests nothing and is left out (NaN)."""
    interval = result.ppi
    if result.exact:
        return math.nan
    return 1.0 if interval.flat and math.isfinite(interval.estimate) else interval.p_value


def corrected_comparison(
    judge: Mapping[str, QueryValues],
    human: Mapping[str, QueryValues],
    labelled: Collection[str],
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    correction: str | None = "holm",
    alpha: float = 0.05,
    family: str = "pairs",
    strata: Mapping[str, str] | None = None,
    more: int | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Each run against ``baseline`` (default: the first), corrected: per (metric, run), the PPI estimate of the
    mean paired difference (``delta, ci_low, ci_high, p_value``, as ``compare``'s table names them) and the
    judge-only and human-only differences beside it (``judge_delta, judge_low, judge_high, human_delta, ...``).

    ``p_value_corrected`` applies ``correction`` (:data:`ragmetrics.analysis.stats.CORRECTIONS`) over ``family``,
    as ``compare`` does (:data:`ragmetrics.analysis.compare.FAMILIES`): ``pairs`` (default) every pair of the runs
    on every metric, ``baseline`` the runs against the baseline on every metric; ``family_size`` says how many
    p-values it covered, ``family_covers`` what it covered in words (:func:`ragmetrics.analysis.compare.family_scope`
    of the family computed, for every output that names it). ``ci_low_adjusted, ci_high_adjusted`` at ``ci_level_adjusted``: the t interval at the
    level the correction tested the comparison at (:func:`ragmetrics.analysis.compare.adjusted_level`), so it
    excludes 0 exactly when ``p_value_corrected`` is below ``alpha``; uncorrected, the interval at 1 - alpha; the
    judge-only and human-only intervals at that level too (``judge_low_adjusted, ..., human_high_adjusted``), so
    the three read side by side (``judge_low, ...`` stay at ``confidence``, and so do the adjusted ones of a row
    that shows no level: too few, or exact);
    ``ci_method_adjusted``: ``t``, its method (:data:`ragmetrics.analysis.stats.DeltaIntervalMethod`), or
    ``exact`` for an ``exact`` delta (its interval the point itself, at no level: ``ci_level_adjusted`` NaN).
    ``significant`` compares the corrected p-value with ``alpha`` unless ``too_few`` (fewer than
    :data:`MIN_TESTED` labelled queries, unless ``exact``: too few to tell), ``no_spread`` (an interval of width 0
    from a sample: its p-value is NaN, and counts as 1 in the correction's family; it cannot tell) or ``exact``
    (the ``dataset`` target with every query human-labelled: the delta is these queries' own, with no sampling
    error to test; no p-value, and left out of the correction's family: ``family_size`` does not count it,
    ``family_exact`` counts the family's pairs left out so): the
    columns :func:`ragmetrics.analysis.verdicts.verdict` reads, and ``verdict`` its code. ``strata``, ``more`` and ``options``: as
    :func:`corrected_means`. The baseline's own row is left out. A ``too_few`` row keeps its p-values and intervals
    here (they count in the family); every output shows it by :func:`ragmetrics.analysis.compare.untested_shown`."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    from ragmetrics.analysis.compare import FAMILIES, adjusted_level, family_scope  # noqa: PLC0415 (it loads pandas: on use)

    names = list(judge)
    baseline = baseline or (names[0] if names else "")
    if baseline not in judge or baseline not in human:
        raise RagMetricsError(f"baseline {baseline!r} is not among the runs {names}")
    missing = [name for name in names if name not in human]
    if missing:
        raise RagMetricsError(f"run {missing[0]!r} has values under the judge's labels but not the human labels")
    if family not in FAMILIES:
        raise RagMetricsError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}")
    correction = stats.checked_correction(correction)
    base_ids = judge[baseline].query_ids
    if base_ids is None:
        raise RagMetricsError(f"run {baseline!r}: its per-query values were written to a file, not collected")
    sampled = np.isin(np.asarray(base_ids, dtype=object).astype(str), np.asarray(list(labelled), dtype=str))
    strata_at = _strata_of(strata, base_ids)

    def paired(run: str, other: str, metric: str) -> Corrected:
        """``run`` minus ``other`` on ``metric``, at the baseline's queries."""
        f, f_other = (_values_at(judge[r], metric, base_ids) for r in (run, other))
        y, y_other = (np.where(sampled, _values_at(human[r], metric, base_ids), np.nan) for r in (run, other))
        return ppi_paired(f, f_other, y, y_other, strata=strata_at, **options)

    others = [name for name in names if name != baseline]
    metric_names = list(metrics or judge[baseline].metrics)
    rows, results = [], []
    for metric in metric_names:
        for name in others:
            result = paired(name, baseline, metric)
            row = _within(_row(result), -1.0, 1.0)
            results.append(result)
            rows.append(
                {
                    "metric": metric,
                    "baseline": baseline,
                    "run": name,
                    "delta": row["estimate"],
                    "ci_low": row["ci_low"],
                    "ci_high": row["ci_high"],
                    "p_value": row["p_value"],
                    "judge_delta": row["judge"],
                    "judge_low": row["judge_low"],
                    "judge_high": row["judge_high"],
                    "judge_p_value": result.judge_only.p_value,
                    "human_delta": row["human"],
                    "human_low": row["human_low"],
                    "human_high": row["human_high"],
                    "human_p_value": result.human_only.p_value,
                    "lam": result.lam,
                    "n_labelled": result.n_labelled,
                    "n_queries": result.n_queries,
                    "differing": result.differing,
                    **_projected(result, more),
                }
            )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    # family "pairs": the other runs against each other too, which the correction covers with the baseline's
    beyond = (
        [
            _tested(paired(a, b, metric))
            for metric in metric_names
            for i, a in enumerate(others)
            for b in others[i + 1 :]
        ]
        if family == "pairs"
        else []
    )
    family_p = np.array([*(_tested(r) for r in results), *beyond], dtype=np.float64)
    size = int(np.count_nonzero(~np.isnan(family_p)))
    frame["p_value_corrected"] = np.where(
        frame["p_value"].isna(), np.nan, stats.CORRECTIONS[correction](family_p)[: len(frame)]
    )
    frame["family_size"] = size
    frame["family_exact"] = len(family_p) - size
    frame["family_covers"] = family_scope(family, len(names), len(metric_names), len(family_p) - size)
    levels = [
        adjusted_level(correction, alpha, p, q, size) for p, q in zip(frame["p_value"], frame["p_value_corrected"])
    ]
    for prefix, side in (("ci", "ppi"), ("judge", "judge_only"), ("human", "human_only")):
        ends = [_ends_at(getattr(r, side), level) for r, level in zip(results, levels)]
        frame[f"{prefix}_low_adjusted"] = np.clip([low for low, _ in ends], -1.0, 1.0)
        frame[f"{prefix}_high_adjusted"] = np.clip([high for _, high in ends], -1.0, 1.0)
    exact = [r.exact for r in results]
    frame["ci_level_adjusted"] = np.where(exact, np.nan, levels)
    frame["ci_method_adjusted"] = np.where(exact, "exact", "t")
    frame["exact"] = exact
    frame["too_few"] = (frame["n_labelled"] < MIN_TESTED) & ~frame["exact"]
    levelless = frame["too_few"] | frame["exact"]  # no level shown beside them: their sides stay at ``confidence``
    for side in ("judge", "human"):
        for end in ("low", "high"):
            frame[f"{side}_{end}_adjusted"] = frame[f"{side}_{end}_adjusted"].where(~levelless, frame[f"{side}_{end}"])
    frame["no_spread"] = [r.ppi.flat and not r.exact for r in results]
    frame["significant"] = (
        (frame["p_value_corrected"] < alpha) & ~frame["too_few"] & ~frame["no_spread"] & ~frame["exact"]
    )
    frame["verdict"] = [
        verdict(r.run, r.baseline, r.delta, r.p_value_corrected, alpha, too_few=r.too_few, no_spread=r.no_spread,
                exact=r.exact, sign=better_sign(r.metric))
        for r in frame.itertuples(index=False)
    ]  # fmt: skip
    return frame
