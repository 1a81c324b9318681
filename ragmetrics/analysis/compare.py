"""``compare``: is run B better than the baseline, or is that noise?

Per metric and run: mean with its 95% interval (:func:`ragmetrics.analysis.stats.mean_interval`, by
:data:`ragmetrics.analysis.stats.MEAN_INTERVAL_RULE`), the delta against the baseline with its own interval
(Student's t interval of the per-query differences, :func:`ragmetrics.analysis.stats.mean_t_interval`, its method
in ``ci_method``), a
paired p-value, the corrected p-value, and win/tie/loss counts with the query
ids behind them. Values are aligned by query id; the evaluated queries are the
same for every run of one evaluation.

**The family** a p-value is corrected over (:data:`FAMILIES`) is by default every pair of the compared runs x
every compared metric (within a segment facet, x every group of it), though the table shows each run against the
baseline only: a pair's corrected p-value then depends neither on which run is the baseline nor on the page or
command that shows it (Dataset power tests every pair; Compare and the Overview show the baseline's; all read
:attr:`Comparison.pairs` of the same computation). ``family="baseline"`` corrects over the baseline's comparisons
only (smaller, so more powerful, but a pair's p-value then changes with the baseline). Beside a corrected p-value
the delta's interval is adjusted the same way (``ci_low_adjusted``/``ci_high_adjusted`` at ``ci_level_adjusted``):
Student's t at 1 - alpha * p / p_corrected, the level the correction gave that comparison, so it excludes 0 exactly
when the corrected t-test p-value is below alpha (for Bonferroni that is 1 - alpha/m, the simultaneous interval over
the m comparisons; for Holm it follows the step each comparison was tested at). Uncorrected, it is the delta's own
95% interval. ``ci_method_adjusted`` records which computed it, and
:func:`ragmetrics.analysis.stats.delta_interval_method` names it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.analysis import stats
from ragmetrics.analysis.evaluate import EvalResult, evaluate
from ragmetrics.analysis.verdicts import refuse_too_few_pairs
from ragmetrics.engine.metrics import UNIT_RANGE, MetricSpec, better_sign, delta_range, parse_metric, value_range
from ragmetrics.engine.queries import at_positions, at_queries, query_positions
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.numbers import signed

MIN_GROUP = stats.MIN_GROUP
BOUND_COLUMNS = ("mean_worst", "mean_best", "delta_worst", "delta_best", "could_flip")
"""The columns ``bounds=True`` adds."""


FAMILIES: dict[str, str] = {
    "pairs": "all pairs of {runs} runs x {metrics}",
    "baseline": "{others} runs against the baseline x {metrics}",
}
"""The families a correction may cover, by name, with the words that name one (the module says why ``pairs`` is
the default); the one place a family is added."""
DEFAULT_FAMILY = "pairs"

PAIR_COLUMNS = [
    "metric",
    "run_a",
    "run_b",
    "n",
    "delta",
    "sd_difference",
    "direction",
    "p_value",
    "p_value_corrected",
    "significant",
]
"""The columns of :attr:`Comparison.pairs` (``delta`` = run_a - run_b; ``direction``: the statistic whose sign is the
side the test found, :func:`ragmetrics.analysis.stats.test_direction`, the delta itself but for Wilcoxon)."""


@dataclass(eq=False)
class Comparison:
    """``table``: one row per (metric, run), overall; ``segments``: the same per group; ``pairs``: every pair of
    the family, overall (:data:`PAIR_COLUMNS`), the table's own pairs (run, baseline) among them with the same
    p-values; ``family_size``: how many p-values the whole-set correction covered; ``scope``: the family in words
    (:data:`FAMILIES`)."""

    table: pd.DataFrame
    segments: pd.DataFrame
    baseline: str
    test: str
    alpha: float
    correction: str = "holm"
    family: str = DEFAULT_FAMILY
    family_size: int = 0
    scope: str = ""
    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_COLUMNS))

    @property
    def family_text(self) -> str:
        """``Holm-corrected over 15 comparison(s) (all pairs of 3 runs x 5 metrics)``, ``uncorrected``: the
        words the CLI and every dashboard page use (:func:`ragmetrics.analysis.stats.family_text`)."""
        return stats.family_text(self.correction, self.family_size, self.scope)

    def adjusted_interval_name(self, level: float) -> str:
        """What an adjusted interval at ``level`` is, in words: ``95% CI`` uncorrected, ``99.17% CI (Holm-adjusted)``,
        ``99.17% CI (Bonferroni-adjusted)``."""
        return interval_at_level(self.correction, level)

    @property
    def interval_method(self) -> str:
        """How the table's delta intervals were computed, in words (:func:`ragmetrics.analysis.stats.delta_interval_method`
        of their ``ci_method_adjusted``)."""
        return stats.delta_interval_method(self.correction, self.table.get("ci_method_adjusted"))

    @property
    def family_dict(self) -> dict[str, Any]:
        """The family in the JSON's words (:func:`family_fields`)."""
        return family_fields(self.correction, self.family_size, self.scope)

    def to_dict(self) -> dict[str, Any]:
        """``comparisons`` (each row's :data:`COMPARISON_FIELDS`, and :data:`BOUND_COLUMNS` with bounds) and
        ``family``: what ``compare --format json`` prints, with the engine and the test."""
        keys = [k for k in [*COMPARISON_FIELDS, *BOUND_COLUMNS] if k in self.table.columns]
        rows = [json_row(record) for record in self.table[keys].to_dict(orient="records")]
        return {"comparisons": rows, "family": self.family_dict}


COMPARISON_FIELDS = (
    "metric", "baseline", "run", "n", "mean", "baseline_mean", "delta", "sd_difference",
    "ci_low", "ci_high", "ci_method", "ci_low_adjusted", "ci_high_adjusted", "ci_level_adjusted", "ci_method_adjusted",
    "p_value", "p_t", "p_value_corrected", "wins", "ties", "losses",
)  # fmt: skip
"""The fields of a row of ``compare --format json``, in process and on the partitioned engines alike (docs/conventions.md
lists them): ``n`` the queries both runs have a value for; the means over them; ``delta`` (run minus baseline) and
the differences' sample ``sd_difference``; the delta's 95% interval (``ci_low``, ``ci_high`` by ``ci_method``) and
the one beside the corrected p-value (``ci_*_adjusted``); ``p_value`` the chosen test's, ``p_t`` the paired t
test's (the adjusted intervals are t's); ``p_value_corrected`` over the family; ``wins``, ``ties``, ``losses``
the queries the run is above, within :data:`ragmetrics.analysis.stats.TIE_TOLERANCE` of, and below the baseline
on."""


def family_fields(correction: str | None, size: int, scope: str) -> dict[str, Any]:
    """The family of ``compare --format json``: its ``correction``, its ``size`` (how many p-values it covered) and
    what it ``covers`` (:func:`family_scope`; for one pair of runs, where the text leaves it out, the words of its
    ``size`` metrics: ``all pairs of 2 runs x 1 metric``)."""
    covers = scope or FAMILIES[DEFAULT_FAMILY].format(runs=2, others=1, metrics=f"{size} metric{'s' * (size != 1)}")
    return {"correction": correction, "size": size, "covers": covers}


UNTESTED_COLUMNS = (
    "ci_low", "ci_high", "ci_method", "ci_low_adjusted", "ci_high_adjusted", "ci_level_adjusted", "ci_method_adjusted",
    "p_value", "p_t", "p_value_corrected", "projected",
)  # fmt: skip
"""What a row too few to tell (``too_few``: a segment of fewer than :data:`MIN_GROUP` queries, a corrected delta of
fewer human-labelled ones) does not show: its intervals, its p-values and the half-width projected from its interval
(a corrected mean's), the test on so few not being trusted (:func:`untested_shown`)."""


NO_INTERVAL_COLUMNS = tuple(c for c in UNTESTED_COLUMNS if c.startswith("ci_")) + ("projected",)
"""What a ``no_spread`` row (a corrected estimate whose labelled queries all score alike: an interval of width 0,
which measures nothing) does not show: its intervals and the half-width projected from one."""


def untested_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as every page and output shows it: a ``too_few`` row keeps its delta, its counts and the flag, and
    has none of :data:`UNTESTED_COLUMNS` (NaN, None in JSON) and is not ``significant``; a ``no_spread`` row has
    none of :data:`NO_INTERVAL_COLUMNS`; the rows are otherwise as computed."""
    hidden = [(flag, columns) for flag, columns in (("too_few", UNTESTED_COLUMNS), ("no_spread", NO_INTERVAL_COLUMNS))
              if flag in frame.columns and frame[flag].astype(bool).any()]  # fmt: skip
    if frame.empty or not hidden:
        return frame
    shown = frame.copy()
    for flag, columns in hidden:
        rows = shown[flag].astype(bool).to_numpy()
        for column in columns:
            if column in shown.columns:
                shown.loc[rows, column] = np.nan
        if "significant" in shown.columns:
            shown.loc[rows, "significant"] = False
    return shown


def json_row(record: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON holds it: NaN as None."""
    return {str(k): (None if isinstance(v, float) and np.isnan(v) else v) for k, v in record.items()}


SEGMENTS = ("category", "difficulty")
"""The query columns whose groups are compared too (``Comparison.segments``); the comparisons of one column's
groups are one family."""


def paired_row(
    metric: str,
    run: str,
    baseline: str,
    ids: np.ndarray,
    values: np.ndarray,
    base: np.ndarray,
    test: str,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """One run against the baseline on one metric, over queries both have a value for (``values`` and ``base``
    in the order of ``ids``): means with their 95% intervals (:func:`ragmetrics.analysis.stats.mean_interval`), the
    delta with its 95% interval (:func:`ragmetrics.analysis.stats.mean_t_interval`) and the method that computed it
    (``ci_method``, :func:`ragmetrics.analysis.stats.delta_method`), the paired p-value (uncorrected: the caller
    corrects over its family) and the paired t test's (``p_t``), win/tie/loss counts and the ids behind them."""
    diff = values - base
    mean_low, mean_high = stats.mean_interval(values, within=value_range(metric))
    low, high = np.clip(stats.mean_t_interval(diff), *delta_range(metric))
    better = better_sign(metric) * diff  # a win is a query the run is better on: lower, where lower is better
    wins = better > stats.TIE_TOLERANCE
    losses = better < -stats.TIE_TOLERANCE
    pair = _pair(metric, run, baseline, values, base, test, n_resamples, seed)
    return {
        "metric": metric,
        "baseline": baseline,
        "run": run,
        "n": pair["n"],
        "mean": float(values.mean()) if len(values) else float("nan"),
        "mean_ci_low": float(mean_low),
        "mean_ci_high": float(mean_high),
        "baseline_mean": float(base.mean()) if len(base) else float("nan"),
        "delta": pair["delta"],
        "sd_difference": pair["sd_difference"],
        "direction": pair["direction"],
        "ci_low": float(low),
        "ci_high": float(high),
        "ci_method": stats.delta_method(len(diff)),
        "p_value": pair["p_value"],
        "p_t": pair["p_value"] if test == "t" or run == baseline else stats.paired_p_value(values, base, test="t"),
        "wins": int(wins.sum()),
        "ties": int((~wins & ~losses).sum()),
        "losses": int(losses.sum()),
        "win_ids": [str(q) for q in ids[wins]],
        "loss_ids": [str(q) for q in ids[losses]],
        "too_few": len(values) < MIN_GROUP,
    }


def _bounded(row: dict[str, Any], ends: tuple[np.ndarray, np.ndarray], base_ends: tuple[np.ndarray, np.ndarray]):
    """``row`` with the columns of :data:`BOUND_COLUMNS` (``ends``: the run's per-query worst and best)."""
    (worst, best), (base_worst, base_best) = ends, base_ends
    low = float((worst - base_best).mean()) if len(worst) else float("nan")
    high = float((best - base_worst).mean()) if len(worst) else float("nan")
    delta = row["delta"]
    compared = row["run"] != row["baseline"]
    flip = compared and (
        (delta > stats.TIE_TOLERANCE and low <= stats.TIE_TOLERANCE)
        or (delta < -stats.TIE_TOLERANCE and high >= -stats.TIE_TOLERANCE)
    )
    return {
        **row,
        "mean_worst": float(worst.mean()) if len(worst) else float("nan"),
        "mean_best": float(best.mean()) if len(best) else float("nan"),
        "delta_worst": low if compared else 0.0,
        "delta_best": high if compared else 0.0,
        "could_flip": bool(flip),
    }


def corrected_rows(frame: pd.DataFrame, correction: str, alpha: float, by: Sequence[str] = ()) -> pd.DataFrame:
    """``frame`` (rows of :func:`paired_row`) with ``p_value_corrected`` (``correction`` over each family: the whole
    frame, or each group of the ``by`` columns) and ``significant`` (corrected p below ``alpha``)."""
    if frame.empty:
        frame["p_value_corrected"] = []
        frame["significant"] = []
        return frame
    adjust = stats.CORRECTIONS[correction]
    if by:
        frame["p_value_corrected"] = frame.groupby(list(by), sort=False)["p_value"].transform(
            lambda p: adjust(p.to_numpy())
        )
    else:
        frame["p_value_corrected"] = adjust(frame["p_value"].to_numpy())
    frame["significant"] = frame["p_value_corrected"] < alpha
    return frame


def compare_result(
    result: EvalResult,
    *,
    baseline: str | None = None,
    runs: Sequence[str] | None = None,
    metrics: Sequence[str | MetricSpec] | None = None,
    test: str = "t",
    correction: str | None = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    segments: Sequence[str] = SEGMENTS,
    bounds: bool = False,
    bounds_depth: int | None = None,
    family: str = DEFAULT_FAMILY,
) -> Comparison:
    """Compare the runs of an existing :class:`EvalResult` against ``baseline``.

    ``baseline`` defaults to the first run. The baseline's own row is kept (delta 0, no p-value). ``bounds``: add
    the columns of :data:`BOUND_COLUMNS` (what the unjudged documents leave open; in each run's top
    ``bounds_depth`` when given). ``family``: what the correction covers (:data:`FAMILIES`; the module says why
    every pair of the compared runs is the default).
    """
    stats.checked_test(test)
    correction = stats.checked_correction(correction)
    alpha, seed = stats.checked_alpha(alpha), stats.checked_seed(seed)
    if family not in FAMILIES:
        raise RagMetricsError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}")
    names = result.run_names
    baseline = baseline or names[0]
    if baseline not in result.runs:
        raise RagMetricsError(f"baseline {baseline!r} is not among the runs {names}")
    chosen = list(runs) if runs else names
    unknown = [r for r in chosen if r not in result.runs]
    if unknown:
        raise RagMetricsError(f"unknown run(s) {unknown}; the runs are {names}")
    metric_names = list(dict.fromkeys(str(parse_metric(m)) for m in metrics)) if metrics else result.metrics
    base_ids = result.runs[baseline].query_ids  # the queries compared: the baseline's, in the engine's order

    @functools.cache
    def where_of(run: str) -> np.ndarray | None:
        """The baseline's queries among the run's (None: the same, in the same order)."""
        return query_positions(result.runs[run].query_ids, base_ids)

    @functools.cache
    def values_of(run: str, metric: str) -> np.ndarray:
        """The run's values at the baseline's queries (NaN where it skipped one, ``missing="skip"``)."""
        return at_positions(result.runs[run].array(metric), where_of(run))

    @functools.cache
    def ends_of(run: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
        worst, best = result.runs[run].alignment.bounds(metric, bounds_depth)
        return at_positions(worst, where_of(run)), at_positions(best, where_of(run))

    def rows_for(rows_of: np.ndarray, group: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows of the queries at positions ``rows_of`` of the baseline's."""
        rows = []
        for metric in metric_names:
            base = values_of(baseline, metric)[rows_of]
            for run in chosen:
                values = values_of(run, metric)[rows_of]
                keep = ~(np.isnan(values) | np.isnan(base))
                row = paired_row(
                    metric,
                    run,
                    baseline,
                    base_ids[rows_of][keep],
                    values[keep],
                    base[keep],
                    test,
                    n_resamples,
                    seed,
                )
                if bounds:
                    (worst, best), (base_worst, base_best) = ends_of(run, metric), ends_of(baseline, metric)
                    row = _bounded(
                        row,
                        (worst[rows_of][keep], best[rows_of][keep]),
                        (base_worst[rows_of][keep], base_best[rows_of][keep]),
                    )
                rows.append({**group, **row})
        return rows

    others = [r for r in dict.fromkeys(chosen) if r != baseline]

    def other_pairs(rows_of: np.ndarray, group: dict[str, Any]) -> list[dict[str, Any]]:
        """The family's pairs beyond the table's (``family="pairs"``): every two compared runs but the baseline,
        on the same queries, p-value only."""
        if family != "pairs":
            return []
        rows = []
        for metric in metric_names:
            for i, a in enumerate(others):
                for b in others[i + 1 :]:
                    x, y = values_of(a, metric)[rows_of], values_of(b, metric)[rows_of]
                    keep = ~(np.isnan(x) | np.isnan(y))
                    rows.append({**group, **_pair(metric, a, b, x[keep], y[keep], test, n_resamples, seed)})
        return rows

    def corrected(
        rows: list[dict[str, Any]], pairs: list[dict[str, Any]], by: list[str]
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``rows`` (the table's) and ``pairs`` (the family's others) corrected as one family per ``by`` group."""
        frame = pd.DataFrame(rows)
        extra = pd.DataFrame(pairs, columns=[*by, *PAIR_COLUMNS[:-2]])
        if frame.empty:
            return corrected_rows(frame, correction, alpha, by), extra
        keys = [*by, "p_value"]
        joint = corrected_rows(pd.concat([frame[keys], extra[keys]], ignore_index=True), correction, alpha, by)
        for part, rows_at in ((frame, slice(0, len(frame))), (extra, slice(len(frame), None))):
            part["p_value_corrected"] = joint["p_value_corrected"].to_numpy()[rows_at]
            part["significant"] = joint["significant"].to_numpy()[rows_at]
        return frame, extra

    every = np.arange(len(base_ids))
    table, extra = corrected(rows_for(every, {}), other_pairs(every, {}), [])
    size = int(table["p_value"].notna().sum() + extra["p_value"].notna().sum()) if not table.empty else 0
    if not table.empty:
        table = adjusted_intervals(table, correction, alpha, size)
    segment_rows: list[dict[str, Any]] = []
    segment_pairs: list[dict[str, Any]] = []
    for facet in segments:
        if facet not in result.dataset.queries_table.column_names:
            continue
        labels = result.dataset.facet(facet, base_ids)
        for value in sorted(v for v in set(labels) if v):
            rows_of, group = np.flatnonzero(labels == value), {"segment": facet, "group": value}
            segment_rows += rows_for(rows_of, group)
            segment_pairs += other_pairs(rows_of, group)
    seg = (
        _segment_intervals(*corrected(segment_rows, segment_pairs, ["segment"]), correction, alpha)
        if segment_rows
        else pd.DataFrame(columns=list(table.columns) + ["segment", "group"])
    )
    names_in = [baseline, *others]
    scope = family_scope(family, len(names_in), len(metric_names))
    return Comparison(
        table=table,
        segments=seg,
        baseline=baseline,
        test=test,
        alpha=alpha,
        correction=correction,
        family=family,
        family_size=size,
        scope=scope,
        pairs=_pairs_frame(table, extra),
    )


def family_scope(family: str, runs: int, metrics: int, exact: int = 0) -> str:
    """The family in words (:data:`FAMILIES`), less its ``exact`` comparisons (exact deltas test nothing and are left
    out: :func:`ragmetrics.analysis.ppi.corrected_comparison`'s ``family_exact``), so the words hold what the count
    does; empty for one pair of runs with none left out, where every family is the same."""
    if runs <= 2 and not exact:
        return ""
    words = FAMILIES[family if runs > 2 else DEFAULT_FAMILY].format(
        runs=runs, others=runs - 1, metrics=f"{metrics} metric{'s' * (metrics != 1)}"
    )
    return f"{words}, less {exact} exact" if exact else words


def percent(level: float) -> str:
    """A confidence level as a percentage, to four significant digits or as many more as keep it below 100 (0.99999
    is ``99.999``, never ``100``: no interval claims certainty)."""
    shown = f"{100 * level:.4g}"
    digits = 4
    while level < 1 and float(shown) >= 100 and digits < 15:
        digits += 1
        shown = f"{100 * level:.{digits}g}"
    return shown


def intervals_name(correction: str | None, alpha: float = 0.05) -> str:
    """What the intervals beside p-values corrected by ``correction`` at ``alpha`` are, in the words every page and
    the CLI use: ``95% CI`` uncorrected at alpha 0.05 (``99% CI`` at 0.01), ``Holm-adjusted CI`` (each at its
    comparison's level, :func:`adjusted_level`); how they are computed:
    :func:`ragmetrics.analysis.stats.delta_interval_method`."""
    if stats.is_uncorrected(correction):
        return f"{percent(1 - alpha)}% CI"
    return f"{stats.correction_title(correction)}-adjusted CI"


def bounds_text(low: float, high: float, separator: str = ", ", digits: int = 4, none: str = "[no bound]") -> str:
    """A paired interval's ends as the CLI and every dashboard page print them, ``[+0.0106, +0.0576]`` (``digits``
    decimals; an end too small for them keeps 2 significant digits, so an interval that excludes 0 never reads
    ``+0.000``: :func:`ragmetrics.foundation.numbers.signed`); ``[no bound]`` where the interval has none (a
    constant difference at a level its exact test cannot reach: :func:`ragmetrics.analysis.stats.constant_difference_p`),
    said with :func:`no_bound_words`); a caller whose ends are missing for another reason says so with ``none``."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return none
    return f"[{signed(low, digits)}{separator}{signed(high, digits)}]"


def mean_bounds_text(
    low: float, high: float, separator: str = ", ", digits: int = 4, none: str = "[no interval]"
) -> str:
    """A mean's interval as the CLI and the pages print it, ``[0.6351, 0.7231]`` (unsigned: a difference's is
    :func:`bounds_text`'s); ``none`` where it has none (below 2 queries, or every query scored the same other than
    0 or 1: :func:`ragmetrics.analysis.stats.mean_interval`; a table's cell reads ``—``)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return none
    return f"[{low:.{digits}f}{separator}{high:.{digits}f}]"


def no_bound_words(n: int) -> str:
    """Why an interval of :func:`bounds_text` has no bound, in the words the CLI's note and the dashboard use."""
    return (
        f"no interval: the difference is the same on each of the {n} queries, and the exact sign-flip test bounds "
        "no shift at this level"
    )


def interval_at_level(correction: str | None, level: float, method: object = None) -> str:
    """One interval at ``level`` beside a p-value corrected by ``correction``, in words: ``95% CI`` uncorrected,
    ``99.17% CI (Holm-adjusted)`` (the kind of every such interval: :func:`intervals_name`); an ``exact`` one
    (``method``, a row's ``ci_method_adjusted``) has no level and no correction: ``exact``
    (:data:`ragmetrics.analysis.stats.DELTA_INTERVAL_NAMES`)."""
    if method == "exact":
        return stats.DELTA_INTERVAL_NAMES["exact"]
    name = f"{percent(level)}% CI"
    return name if stats.is_uncorrected(correction) else f"{name} ({stats.correction_title(correction)}-adjusted)"


def adjusted_level(correction: str | None, alpha: float, p_value: float, p_corrected: float, family_size: int) -> float:
    """The confidence of the interval beside a corrected p-value, 1 - alpha uncorrected (the level the test is read
    at, so the two agree: 0.95 at alpha 0.05): 1 - alpha * p / p_corrected, the
    level the correction tested the comparison at (p_corrected is p times its factor: Bonferroni's m, so 1 - alpha/m
    for every comparison, the simultaneous interval over the family; Holm's step's, higher where its running maximum
    raised p_corrected, the interval wider); where the ratio says nothing (p = 0, or p_corrected capped at 1, where
    it would understate the factor and narrow the interval), 1 - alpha/m. Each excludes 0 exactly when p_corrected <
    alpha (a capped row has p >= 1/m, above alpha/m)."""
    if stats.is_uncorrected(correction):
        return 1 - alpha
    strictest = 1 - alpha / max(family_size, 1)
    if p_value > 0 and np.isfinite(p_value) and np.isfinite(p_corrected) and 0 < p_corrected < 1:
        return 1 - alpha * p_value / p_corrected
    return strictest


def planning_alpha(correction: str | None, alpha: float, family_size: int) -> float:
    """The level a difference is planned at (smallest detectable difference, queries needed), so that "detectable"
    means found by the family's own correction: ``alpha`` uncorrected; ``alpha / m`` under Holm or Bonferroni over
    ``m`` comparisons (Bonferroni's level for each one, Holm's first and strictest step), so a difference planned
    this way is found whatever its rank among the family's p-values."""
    if stats.is_uncorrected(correction):
        return alpha
    return alpha / max(family_size, 1)


def planning_words(correction: str | None, alpha: float, family_size: int) -> str:
    """:func:`planning_alpha` in words: ``α = 0.05, uncorrected``; ``α / 6 = 0.0083, the level of Holm's first and
    strictest step``; ``α / 6 = 0.0083, Bonferroni's level for every comparison``."""
    if stats.is_uncorrected(correction):
        return f"α = {alpha:g}, uncorrected"
    level = planning_alpha(correction, alpha, family_size)
    return f"α / {max(family_size, 1)} = {level:.2g}, {stats.STRICTEST_LEVEL[stats.checked_correction(correction)]}"


def _pair(
    metric: str, a: str, b: str, x: np.ndarray, y: np.ndarray, test: str, n_resamples: int, seed: int
) -> dict[str, Any]:
    """One pair: ``delta`` = a - b, its SD and the paired p-value (NaN for a run against itself); the table's rows
    (:func:`paired_row`) and the family's other pairs are both made of it."""
    diff = x - y
    return {
        "metric": metric,
        "run_a": a,
        "run_b": b,
        "n": len(diff),
        "delta": float(diff.mean()) if len(diff) else float("nan"),
        "sd_difference": float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan"),
        "direction": stats.test_direction(diff, test) if a != b else float("nan"),
        "p_value": stats.paired_p_value(x, y, test=test, n_resamples=n_resamples, seed=seed)
        if a != b
        else float("nan"),
    }


def _pairs_frame(table: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    """Every pair of the whole-set family (:data:`PAIR_COLUMNS`): the table's rows as (run, baseline) pairs, then
    the others."""
    if table.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    own = table[table["run"] != table["baseline"]]
    own = own.assign(run_a=own["run"], run_b=own["baseline"])
    return pd.concat([own[PAIR_COLUMNS], extra[PAIR_COLUMNS]], ignore_index=True)


def _segment_intervals(rows: pd.DataFrame, pairs: pd.DataFrame, correction: str | None, alpha: float) -> pd.DataFrame:
    """The segments' rows with their adjusted intervals; each facet (``segment``) is its own family, as its p-values
    were corrected, so a p-value of 0 takes its level from its facet's rows and other pairs, not the whole table's."""
    parts = []
    for facet, part in rows.groupby("segment", sort=False):
        others = pairs.loc[pairs["segment"] == facet, "p_value"].notna().sum() if len(pairs) else 0
        parts.append(adjusted_intervals(part, correction, alpha, int(part["p_value"].notna().sum() + others)))
    return pd.concat(parts).sort_index()


DELTA_RANGE = (UNIT_RANGE[0] - UNIT_RANGE[1], UNIT_RANGE[1] - UNIT_RANGE[0])
"""Where the difference of two values of a metric of the registry lies: the ends of a delta's interval in a table
that names no metric (a history's steps)."""


def adjusted_intervals(
    table: pd.DataFrame, correction: str | None, alpha: float, family_size: int | None = None
) -> pd.DataFrame:
    """``table`` with ``ci_low_adjusted``/``ci_high_adjusted`` at ``ci_level_adjusted`` (:func:`adjusted_level`) and
    the method that computed them in ``ci_method_adjusted`` (:data:`ragmetrics.analysis.stats.DeltaIntervalMethod`;
    None where ``table`` has no ``ci_method``): Student's t interval of the mean difference at the level the test is
    read at, 1 - alpha uncorrected (at alpha 0.05 the delta's own ``ci_low``/``ci_high``), corrected the comparison's
    level, so the interval excludes 0 exactly when the (corrected) t-test p-value is below alpha.
    ``family_size``: how many p-values the correction covered (default: the table's; more with ``family="pairs"``),
    the level of a comparison whose p-value is 0.

    A constant difference (zero variance) has a point for either interval while its p-value is the exact sign-flip
    p, 2^(1 - n) (:func:`ragmetrics.analysis.stats.constant_difference_p`), or 1 for a difference of 0; its interval
    is then that test's, inverted (a shift of the differences by any other value is a constant difference too): the
    point where 2^(1 - n) is below 1 - level, else no bound at all (NaN: the test rejects no shift at that level, 2
    queries never), so the interval and the p-value agree; two runs alike on every query are no exception."""
    own = (table["run"] == table["baseline"]).to_numpy()
    if stats.is_uncorrected(correction):
        levels = np.full(len(table), 1 - alpha)
        methods = table["ci_method"].to_numpy(dtype=object) if "ci_method" in table else np.full(len(table), None)
    else:
        methods = np.full(len(table), "t", dtype=object)
        size = int(table["p_value"].notna().sum()) if family_size is None else family_size
        levels = np.array(
            [
                adjusted_level(correction, alpha, p, q, size)
                for p, q in zip(table["p_value"], table["p_value_corrected"])
            ]
        )
        levels = np.where(own, 1 - alpha, levels)
    metrics = table["metric"] if "metric" in table else [None] * len(table)  # none named: every metric a share's
    ends = np.array([delta_range(m) if m else DELTA_RANGE for m in metrics], dtype=np.float64).reshape(-1, 2)
    low, high = np.clip(
        stats.t_interval(table["delta"], table["sd_difference"], table["n"], levels), ends[:, 0], ends[:, 1]
    )
    delta = table["delta"].to_numpy(dtype=np.float64)
    n = table["n"].to_numpy(dtype=np.float64)
    sd = table["sd_difference"].to_numpy(dtype=np.float64)
    tolerance = stats.CONSTANT_TOLERANCE * np.maximum(1.0, np.abs(delta))
    constant = ~own & (n >= 2) & (sd <= tolerance)
    flip_p = np.array([stats.constant_difference_p(int(k)) if c else 0.0 for k, c in zip(n, constant)])
    unbounded = constant & (flip_p >= 1 - levels)
    return table.assign(
        ci_low_adjusted=np.where(own, delta, np.where(unbounded, np.nan, low)),
        ci_high_adjusted=np.where(own, delta, np.where(unbounded, np.nan, high)),
        ci_level_adjusted=levels,
        ci_method_adjusted=np.where(own | unbounded, "none", methods),
    )


def compare(
    dataset: Any,
    runs: Any,
    metrics: Sequence[str],
    *,
    baseline: str | None = None,
    test: str = "t",
    correction: str | None = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    bounds: bool = False,
    bounds_depth: int | None = None,
    **evaluate_options: Any,
) -> Comparison:
    """Evaluate ``runs`` on ``dataset`` and compare each with ``baseline`` (default: the first run).

    ``test``: ``"t"`` (paired t-test), ``"wilcoxon"``, ``"randomization"`` (Fisher,
    seeded) or ``"bootstrap"`` (paired, seeded). ``bounds``: as :func:`compare_result`. Evaluation options
    (``missing``, ``rel_level``, ...) pass through to :func:`ragmetrics.analysis.evaluate`. A run sharing fewer than
    2 queries with a value with the baseline is an error, as on the command line (a paired test on fewer means
    nothing); :func:`compare_result` keeps such rows (NaN) for callers that show them.
    """
    result = evaluate(dataset, runs, metrics, **evaluate_options)
    comparison = compare_result(
        result,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        seed=seed,
        n_resamples=n_resamples,
        bounds=bounds,
        bounds_depth=bounds_depth,
    )
    refuse_too_few_pairs(comparison.table)
    return comparison


def discriminative_power(
    result: EvalResult,
    metric: str | MetricSpec,
    *,
    test: str = "t",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> pd.DataFrame:
    """Every run pair's p-value for ``metric``; the share below ``alpha`` is the dataset's discriminative power.
    ``n``: the queries the pair is compared on (those with a value in both runs)."""
    names = result.run_names
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ids = result.runs[a].query_ids
            x, y = (at_queries(result.runs[r].array(metric), result.runs[r].query_ids, ids) for r in (a, b))
            keep = ~(np.isnan(x) | np.isnan(y))
            row = _pair(str(metric), a, b, x[keep], y[keep], test, n_resamples, seed)
            rows.append({**row, "significant": row["p_value"] < alpha, "n": int(keep.sum())})
    return pd.DataFrame(rows, columns=["run_a", "run_b", "delta", "p_value", "significant", "sd_difference", "n"])
