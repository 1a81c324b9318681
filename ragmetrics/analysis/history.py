"""History and leaderboards over the store: every run of a dataset placed in time, and systems across datasets.

* :func:`timeline`: a dataset's runs (filtered by tags) in ``date`` order (or another tag's), the chosen metric's
  mean with its 95% interval (:func:`ragmetrics.analysis.stats.mean_interval`), and each step's paired test against the previous run and against a
  pinned baseline (:func:`ragmetrics.analysis.compare.compare_result`). A *drop* is a step significantly below the run
  before it. By default each step is its own question (no correction over the steps: the nightly gate asks about
  the last one); ``correction="holm"`` corrects over the steps.
* :func:`leaderboard`: systems (the values of one tag) x datasets: each dataset's mean and rank (1 = best), the
  mean rank and the mean over the datasets (only for a system that has a run on each of them), and, per
  dataset, whether each system differs significantly from that dataset's best (paired test, Holm-corrected over
  every pair of the dataset's systems, the family of every page: :data:`ragmetrics.analysis.compare.FAMILIES`).
  Exports: Markdown, CSV, LaTeX and JSON.

The store's side (naming a stored dataset, reading its runs and tags) is :mod:`ragmetrics.store.history`; this
module computes on datasets and runs given to it, so the dashboard's builders can use it.

Run order: ``by="date"`` orders by the ``date`` tag (ISO 8601), a run without one at the time it was stored;
another tag orders by its values (as numbers when every value is one, else as text), and runs without it are
left out with a note.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.analysis import stats
from ragmetrics.analysis.compare import (
    adjusted_intervals,
    bounds_text,
    compare_result,
    family_scope,
    interval_at_level,
    intervals_name,
    mean_bounds_text,
)
from ragmetrics.analysis.evaluate import evaluate
from ragmetrics.analysis.verdicts import SAID, verdict
from ragmetrics.engine.metrics import MetricSpec, better_sign, parse_metric
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io.export import markdown_table, to_safe_csv
from ragmetrics.io.runmeta import parse_date

DATE_TAG = "date"
DEFAULT_SYSTEM_TAG = "system"


@dataclass(frozen=True)
class StoredRun:
    """A stored run of a dataset, with its tags; ``load`` reads its rows (named as stored)."""

    id: str
    name: str
    created_at: float
    tags: Mapping[str, str]
    load: Callable[[], Run] = field(repr=False, compare=False)


def matching(runs: Sequence[StoredRun], where: Mapping[str, str]) -> list[StoredRun]:
    """The runs whose tags hold every ``key=value`` of ``where``."""
    return [r for r in runs if all(r.tags.get(k) == v for k, v in where.items())]


def order_runs(runs: Sequence[StoredRun], by: str = DATE_TAG) -> tuple[list[StoredRun], list[str], list[str]]:
    """``runs`` in ``by`` order, the value each was ordered by (shown on the timeline), and notes."""
    if by == DATE_TAG:
        keyed = []
        for run in runs:
            when = parse_date(run.tags[DATE_TAG]) if DATE_TAG in run.tags else None
            shown = run.tags.get(DATE_TAG, "") if when is not None else ""
            if when is None:
                when = datetime.fromtimestamp(run.created_at, timezone.utc)
                shown = f"{when:%Y-%m-%d %H:%M:%S} (stored)"
            keyed.append((when, run.created_at, run.id, run, shown))
        keyed.sort(key=lambda item: item[:3])
        notes = []
        stored = sum(s.endswith("(stored)") for *_, s in keyed)
        if stored:
            notes.append(f"{stored} run(s) without a readable 'date' tag are placed at the time they were stored")
        return [k[3] for k in keyed], [k[4] for k in keyed], notes
    tagged = [r for r in runs if by in r.tags]
    notes = [f"{len(runs) - len(tagged)} run(s) without a {by!r} tag are left out"] if len(tagged) < len(runs) else []
    numbers = [_number(r.tags[by]) for r in tagged]
    numeric = all(n is not None for n in numbers)
    order = sorted(
        range(len(tagged)),
        key=lambda i: ((numbers[i], "") if numeric else (0.0, tagged[i].tags[by]), tagged[i].created_at),
    )
    return [tagged[i] for i in order], [tagged[i].tags[by] for i in order], notes


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _evaluate(dataset: Dataset, runs: Sequence[StoredRun], metric: str, **options: Any) -> Any:
    """One evaluation of the runs, each named by its id (two versions of a run may share a name); a warning that
    names a run by its id names it by its name too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate(dataset, [r.load().with_name(r.id) for r in runs], [metric], **options)
    for warning in caught:
        text = str(warning.message)
        for run in runs:
            text = text.replace(f"run {run.id!r}", f"run {run.name!r} ({run.id})")
        warnings.warn(text, warning.category, stacklevel=2)
    return result


def _check_choice(value: str, choices: Mapping[str, Any], what: str) -> None:
    if value not in choices:
        raise RagMetricsError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")


# --- the timeline ------------------------------------------------------------------------------------------

TIMELINE_COLUMNS = [
    "step", "run_id", "run", "order", "mean", "ci_low", "ci_high", "ci_method",
    "delta", "delta_low", "delta_high", "delta_level", "delta_method", "direction", "p_value", "p_value_corrected",
    "significant", "verdict", "drop",
    "baseline_delta", "baseline_low", "baseline_high", "baseline_level", "baseline_method", "baseline_p_value",
    "baseline_p_value_corrected", "baseline_significant",
]  # fmt: skip


@dataclass(eq=False)
class Timeline:
    """``frame``: one row per run in order (:data:`TIMELINE_COLUMNS`): its mean and 95% CI (``ci_method``, of
    :data:`ragmetrics.analysis.stats.IntervalMethod`); ``delta``, its CI (``delta_method``, of
    :data:`ragmetrics.analysis.stats.DeltaIntervalMethod`: ``none`` for the first run),
    ``direction`` (the test's side: :func:`ragmetrics.analysis.stats.test_direction`), ``p_value`` (and corrected),
    ``significant`` and ``verdict`` (:func:`ragmetrics.analysis.verdicts.verdict`) against the run before; ``drop``:
    significantly below it on the side the test found (``verdict`` ``worse``);
    ``baseline_*``: the same against the pinned baseline (NaN without one), its p-values corrected by
    :data:`BASELINE_CORRECTION` over the runs tested against it (the question every other page asks of a pair, so
    never left uncorrected as a step is by default). ``tags``: each run's tags."""

    dataset: str
    dataset_name: str
    metric: str
    by: str
    where: dict[str, str]
    baseline: str | None
    test: str
    alpha: float
    correction: str
    frame: pd.DataFrame
    tags: dict[str, dict[str, str]]
    notes: list[str]

    @property
    def family_text(self) -> str:
        """The correction and its family in the words of every page and command
        (:func:`ragmetrics.analysis.stats.family_text`): ``uncorrected`` by default, or ``Holm-corrected over 5
        comparison(s) (each step against the run before)``."""
        size = int(self.frame["p_value"].notna().sum()) if "p_value" in self.frame else 0
        return stats.family_text(self.correction, size, STEPS_FAMILY)

    @property
    def baseline_family_text(self) -> str:
        """The pinned baseline's correction and family, in the same words: ``Holm-corrected over 3 comparison(s)
        (3 runs against the baseline x 1 metric)``; empty without a baseline."""
        if not self.baseline or "baseline_p_value" not in self.frame:
            return ""
        size = int(self.frame["baseline_p_value"].notna().sum())
        return stats.family_text(BASELINE_CORRECTION, size, family_scope("baseline", size + 1, 1))

    @property
    def drops(self) -> list[int]:
        """The steps (1-based) that are significant drops."""
        return [int(s) for s in self.frame.loc[self.frame["drop"], "step"]]

    @property
    def first_drop(self) -> int | None:
        drops = self.drops
        return drops[0] if drops else None

    @property
    def last_step_drops(self) -> bool:
        """True when the last run is significantly below the one before it (the nightly gate's failure)."""
        return len(self.frame) > 1 and bool(self.frame["drop"].iloc[-1])

    @property
    def last_below_baseline(self) -> bool | None:
        """True when the last run is significantly worse than the pinned baseline (its Holm-corrected p-value, the
        ``*`` of the table, on the worse side of the metric); None without a baseline, or when the last run is it."""
        if not self.baseline or self.frame.empty or math.isnan(self.frame["baseline_p_value"].iloc[-1]):
            return None
        last = self.frame.iloc[-1]
        return bool(last["baseline_significant"]) and better_sign(self.metric) * float(last["baseline_delta"]) < 0

    @property
    def interval_text(self) -> str:
        """How the steps' intervals were computed, in the words of every page and command
        (:func:`ragmetrics.analysis.stats.delta_interval_method` of the rows' ``delta_method``)."""
        return stats.delta_interval_method(self.correction, self.frame.get("delta_method"))

    @property
    def baseline_interval_text(self) -> str:
        """How the intervals against the pinned baseline were computed, in the same words; empty without one."""
        if not self.baseline or "baseline_method" not in self.frame:
            return ""
        return stats.delta_interval_method(BASELINE_CORRECTION, self.frame["baseline_method"])

    @property
    def mean_interval_text(self) -> str:
        """How the means' 95% intervals were computed (:func:`ragmetrics.analysis.stats.interval_words` of the
        rows' ``ci_method``)."""
        return stats.interval_words(self.frame.get("ci_method", ()))

    def to_dict(self) -> dict[str, Any]:
        rows: list[dict[str, Any]] = [
            {str(k): (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in self.frame.to_dict(orient="records")
        ]
        for row in rows:
            row["tags"] = self.tags.get(str(row["run_id"]), {})
        return {
            "dataset": self.dataset,
            "dataset_name": self.dataset_name,
            "metric": self.metric,
            "by": self.by,
            "where": self.where,
            "baseline": self.baseline,
            "test": self.test,
            "alpha": self.alpha,
            "correction": self.correction,
            "family": self.family_text,
            "baseline_family": self.baseline_family_text,
            "intervals": self.interval_text,
            "baseline_intervals": self.baseline_interval_text,
            "mean_intervals": self.mean_interval_text,
            "first_drop": self.first_drop,
            "last_step_drops": self.last_step_drops,
            "last_below_baseline": self.last_below_baseline,
            "notes": self.notes,
            "steps": rows,
        }


def timeline(
    dataset: Dataset,
    runs: Sequence[StoredRun],
    metric: str | MetricSpec,
    *,
    dataset_id: str = "",
    by: str = DATE_TAG,
    where: Mapping[str, str] | None = None,
    baseline: str | None = None,
    test: str = "t",
    alpha: float = 0.05,
    correction: str = "none",
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    **evaluate_options: Any,
) -> Timeline:
    """The timeline of ``runs`` on ``dataset`` (see the module). ``baseline``: a run id among ``runs`` (any tag
    filter aside) to test every run against."""

    metric = str(parse_metric(metric))
    _check_choice(test, stats.TESTS, "test")
    _check_choice(correction, stats.CORRECTIONS, "correction")
    where = dict(where or {})
    chosen, shown, notes = order_runs(matching(runs, where), by)
    pinned = next((r for r in runs if r.id == baseline), None) if baseline else None
    if baseline and pinned is None:
        raise RagMetricsError(f"baseline {baseline!r} is not a run of this dataset")
    evaluated = list(chosen) + ([pinned] if pinned is not None and pinned not in chosen else [])
    frame = pd.DataFrame(columns=TIMELINE_COLUMNS)
    if chosen:
        result = _evaluate(dataset, evaluated, metric, **evaluate_options)
        options: dict[str, Any] = {"metrics": [metric], "test": test, "correction": "none", "alpha": alpha, "seed": seed,
                   "n_resamples": n_resamples, "segments": ()}  # fmt: skip
        rows = []
        for i, run in enumerate(chosen):
            values = result.runs[run.id].values[metric].to_numpy(dtype=np.float64)
            values = values[~np.isnan(values)]  # the queries the metric has a value for, as eval's mean
            low, high = stats.mean_interval(values, within=stats.METRIC_RANGE)
            row: dict[str, Any] = {"step": i + 1, "run_id": run.id, "run": run.name, "order": shown[i],
                                   "mean": float(values.mean()) if len(values) else math.nan,
                                   "ci_low": float(low), "ci_high": float(high),
                                   "ci_method": stats.interval_methods(values)[0]}  # fmt: skip
            step = compare_result(result, baseline=chosen[i - 1].id, runs=[run.id], **options) if i else None
            row.update(_step(step, ""))
            against = compare_result(result, baseline=pinned.id, runs=[run.id], **options) if pinned else None
            row.update(_step(against, "baseline_"))
            rows.append(row)
        frame = pd.DataFrame(rows)
        frame["p_value_corrected"] = _corrected(frame["p_value"], correction)
        _adjust(frame, "delta", "p_value_corrected", correction, alpha)
        frame["significant"] = frame["p_value_corrected"] < alpha
        frame["verdict"] = [
            verdict("step", "before", d, p, alpha, direction=side, sign=better_sign(metric))
            for d, p, side in zip(frame["delta"], frame["p_value_corrected"], frame["direction"])
        ]
        frame["drop"] = [SAID[code].fails for code in frame["verdict"]]
        frame["baseline_p_value_corrected"] = _corrected(frame["baseline_p_value"], BASELINE_CORRECTION)
        _adjust(frame, "baseline", "baseline_p_value_corrected", BASELINE_CORRECTION, alpha)
        frame["baseline_significant"] = frame["baseline_p_value_corrected"] < alpha
        frame = frame[TIMELINE_COLUMNS]
    return Timeline(
        dataset=dataset_id,
        dataset_name=dataset.name,
        metric=metric,
        by=by,
        where=where,
        baseline=baseline,
        test=test,
        alpha=alpha,
        correction=correction,
        frame=frame,
        tags={r.id: dict(r.tags) for r in chosen},
        notes=notes,
    )


BASELINE_CORRECTION = "holm"
"""The correction of the tests against a pinned baseline (the default of every page and command that compares runs
against a baseline)."""
STEPS_FAMILY = "each step against the run before"
"""A timeline's family: its steps (a step's p-value is its own question unless a correction is asked for)."""


def _corrected(p_values: pd.Series, correction: str) -> np.ndarray:
    """``p_values`` corrected by ``correction`` over those that were tested (NaN, no comparison, stays NaN)."""
    p = p_values.to_numpy(dtype=np.float64)
    corrected = np.full_like(p, np.nan)
    tested = ~np.isnan(p)
    corrected[tested] = stats.CORRECTIONS[correction](p[tested])
    return corrected


_STEP_COLUMNS = {
    "delta": "delta",
    "ci_low": "low",
    "ci_high": "high",
    "p_value": "p_value",
    "sd_difference": "sd_difference",
    "n": "n",
    "ci_method": "ci_method",
}


def _adjust(frame: pd.DataFrame, prefix: str, corrected: str, correction: str, alpha: float) -> None:
    """Put in ``frame`` the interval beside the ``corrected`` p-values adjusted the same way, as ``compare`` adjusts
    it (:func:`ragmetrics.analysis.compare.adjusted_intervals`: Student's t at the level the correction tested each
    step at, 1 - alpha * p / p_corrected, over the family of the steps tested; uncorrected, its Student's t at 1 - alpha
    interval), its bounds in ``{prefix}_low``/``{prefix}_high``, its level in ``{prefix}_level`` and its method in
    ``{prefix}_method`` (``ci_method_adjusted``); the helper columns of spread, count and the unadjusted method
    (``{prefix}_sd_difference``, ``{prefix}_n``, ``{prefix}_ci_method``) are dropped; no p-value (the first step,
    the baseline itself): the unadjusted interval, NaN level, method ``none``."""
    named = "" if prefix == "delta" else f"{prefix}_"
    p = frame[f"{named}p_value"]
    table = pd.DataFrame({
        "run": np.where(p.notna(), "run", "baseline"), "baseline": "baseline",
        "delta": frame[f"{named}delta"], "sd_difference": frame.pop(f"{prefix}_sd_difference"), "n": frame.pop(f"{prefix}_n"),
        "ci_method": frame.pop(f"{prefix}_ci_method"), "p_value": p, "p_value_corrected": frame[corrected],
        "ci_low": frame[f"{prefix}_low"], "ci_high": frame[f"{prefix}_high"],
    })  # fmt: skip
    adjusted = adjusted_intervals(table, correction, alpha, int(p.notna().sum()))
    tested = p.notna().to_numpy()
    frame[f"{prefix}_low"] = np.where(tested, adjusted["ci_low_adjusted"], frame[f"{prefix}_low"])
    frame[f"{prefix}_high"] = np.where(tested, adjusted["ci_high_adjusted"], frame[f"{prefix}_high"])
    frame[f"{prefix}_level"] = np.where(tested, adjusted["ci_level_adjusted"], np.nan)
    frame[f"{prefix}_method"] = np.where(tested, adjusted["ci_method_adjusted"], "none")


def _step(comparison: Any, prefix: str) -> dict[str, float | str]:
    """A one-row comparison's delta, CI, its method and p-value under the timeline's names (``delta_low`` for the
    step's, ``baseline_low`` for the baseline's); NaN (method ``none``) without a comparison."""
    row = None if comparison is None else comparison.table.iloc[0]
    out: dict[str, float | str] = {}
    for column, short in _STEP_COLUMNS.items():
        key = (
            prefix + short
            if prefix
            else ("delta_" + short if short in ("low", "high", "sd_difference", "n", "ci_method") else short)
        )
        if column == "ci_method":
            out[key] = "none" if row is None else str(row[column])
        else:
            out[key] = math.nan if row is None else float(row[column])
    if not prefix:
        out["direction"] = math.nan if row is None else float(row["direction"])
    return out


def timeline_csv(line: Timeline) -> str:
    """The timeline as formula-neutral CSV (one row per run, its tags as ``tag:KEY`` columns); numbers to 10
    significant digits, so a p-value of 1.4e-13 is not written as 0 (was fixed-point, 6 decimals)."""

    frame = line.frame.copy()
    keys = sorted({k for tags in line.tags.values() for k in tags})
    for key in keys:
        frame[f"tag:{key}"] = [line.tags.get(r, {}).get(key, "") for r in frame["run_id"]]
    return str(to_safe_csv(frame, encoding=None, float_format="%.10g"))


def timeline_text(line: Timeline) -> str:
    """The terminal table: one line per step with its mean, its difference from the run before (with the CI and
    p-value), and the verdict; the first significant drop is marked."""
    lines = [
        f"{line.metric} on {line.dataset_name} ({line.dataset}), {len(line.frame)} run(s) by {line.by}"
        + (", where " + ", ".join(f"{k}={v}" for k, v in line.where.items()) if line.where else "")
    ]
    first = line.first_drop
    # a corrected p-value says so where it is printed, as check's "p=0.01 Holm-corrected over 2" does (the family:
    # the footer)
    corrected = "" if stats.is_uncorrected(line.correction) else f" ({stats.correction_title(line.correction)})"
    for row in line.frame.itertuples(index=False):
        # 28: a stored time, "2026-01-31 12:00:00 (stored)", whole
        head = f"{row.step:>3}  {str(row.order)[:28]:<28}  {row.run[:24]:<24}  {row.mean:.4f} {mean_bounds_text(row.ci_low, row.ci_high)}"
        if row.step == 1:
            step = "  (first)"
        else:
            verdict = "DROP" if row.drop else SAID[row.verdict].step
            mark = "  <- first significant drop" if row.step == first else ""
            step = (
                f"  delta {row.delta:+.4f} {interval_at_level(line.correction, row.delta_level)} "
                f"{bounds_text(row.delta_low, row.delta_high)} "
                f"p={row.p_value_corrected:.4g}{corrected}  {verdict}{mark}"
            )
        base = ""
        if line.baseline and not math.isnan(row.baseline_p_value):
            star = "*" if row.baseline_significant else ""
            base = (
                f"  vs baseline {row.baseline_delta:+.4f} p={row.baseline_p_value:.4g} "
                f"({BASELINE_CORRECTION} {row.baseline_p_value_corrected:.4g}){star}"
            )
        lines.append(head + step + base)
    lines.append(f"test: {line.test}, alpha {line.alpha:g}, {line.family_text}")
    lines.append(
        f"intervals: delta {intervals_name(line.correction, line.alpha)} ({line.interval_text}); mean 95% CI "
        f"({line.mean_interval_text})"
    )
    if line.baseline_family_text:
        lines.append(f"vs baseline: * = {line.baseline_family_text}, p < {line.alpha:g}")
    verdict = "the last step is a significant drop" if line.last_step_drops else "the last step is no significant drop"
    lines.append(verdict)
    if line.last_below_baseline is not None:
        below = "significantly" if line.last_below_baseline else "not significantly"
        lines.append(f"the last run is {below} worse than the baseline")
    return "\n".join(lines) + "\n"


# --- the leaderboard -----------------------------------------------------------------------------------------


@dataclass(eq=False)
class Leaderboard:
    """Systems x datasets. ``means``, ``ranks`` and ``tied`` (not significantly different from the dataset's
    best; False for the best itself) are frames indexed by system with one column per dataset name; ``runs``:
    the run each cell was computed from; ``tests``: each system's paired test against the dataset's best."""

    metric: str
    system_tag: str
    test: str
    alpha: float
    datasets: dict[str, str]  # id -> name, in column order
    means: pd.DataFrame
    ranks: pd.DataFrame
    tied: pd.DataFrame
    runs: pd.DataFrame
    tests: pd.DataFrame
    notes: list[str]
    families: dict[str, str] = field(default_factory=dict)
    """Per dataset name, the family its p-values were corrected over in words
    (:attr:`ragmetrics.analysis.compare.Comparison.family_text`): every pair of its systems."""

    @property
    def summary(self) -> pd.DataFrame:
        """``system``, each dataset's mean and rank, ``mean_rank`` and ``mean`` (over every dataset; NaN when the
        system misses one), best first."""
        frame = pd.DataFrame(index=self.means.index)
        for name in self.datasets.values():
            frame[name] = self.means[name]
            frame[f"{name} rank"] = self.ranks[name]
        complete = self.means.notna().all(axis=1)
        frame["mean_rank"] = self.ranks.astype("float64").mean(axis=1).where(complete)
        frame["mean"] = self.means.mean(axis=1).where(complete)
        lower_first = better_sign(self.metric) < 0  # the best first: the lowest where lower is better (unj@k)
        frame = frame.sort_values(
            ["mean_rank", "mean"], ascending=[True, lower_first], na_position="last", kind="stable"
        )
        return frame.rename_axis("system").reset_index()

    def cells(self, fmt: str = "{:.4f}", mark: str = "†") -> pd.DataFrame:
        """The table as text: ``mean (rank)`` per dataset, ``mark`` where the system is not significantly
        different from the dataset's best; ``–`` where it has no run."""
        summary = self.summary
        out = pd.DataFrame({"system": summary["system"]})
        for name in self.datasets.values():
            texts = []
            for system in summary["system"]:
                value = self.means.at[system, name]
                if pd.isna(value):
                    texts.append("–")
                    continue
                tie = mark if bool(self.tied.at[system, name]) else ""
                texts.append(f"{fmt.format(value)}{tie} ({int(self.ranks.at[system, name])})")
            out[name] = texts
        out["mean rank"] = [("–" if pd.isna(v) else f"{v:.2f}") for v in summary["mean_rank"]]
        out["mean"] = [("–" if pd.isna(v) else fmt.format(v)) for v in summary["mean"]]
        return out

    def footnote(self, mark: str = "†") -> str:
        """The table's key; the correction named from each dataset's family (:attr:`families`), once when every
        dataset's is the same."""
        texts = set(self.families.values())
        if len(texts) == 1:
            family = texts.pop()
        else:
            family = "; ".join(f"{name}: {text}" for name, text in self.families.items()) or "no comparison"
        return (
            f"{self.metric}; (n) = rank on the dataset; {mark} = not significantly different from the dataset's best "
            f"({self.test} test, {family}, alpha {self.alpha:g})"
        )

    def to_markdown(self) -> str:

        return markdown_table(self.cells()) + "\n" + self.footnote() + "\n"

    def to_csv(self) -> str:
        """Numbers bare (means to 6 decimals, ranks whole), ``True``/``False`` for a tie with the best, an empty
        cell where a system has no run on a dataset; text quoted (:func:`ragmetrics.io.export.to_safe_csv`)."""
        summary = self.summary
        for name in self.datasets.values():
            summary[f"{name} rank"] = summary[f"{name} rank"].astype("Int64")
            tied = [
                bool(self.tied.at[s, name]) if pd.notna(self.means.at[s, name]) else None for s in summary["system"]
            ]
            summary.insert(
                summary.columns.get_loc(f"{name} rank") + 1, f"{name} tied with best", pd.array(tied, dtype="boolean")
            )
        return str(to_safe_csv(summary.round(6), encoding=None))

    def to_latex(self) -> str:
        """A ``tabular`` (plain LaTeX, no package needed): one row per system, ``mean$^\\dagger$ (rank)`` cells; LaTeX specials
        in names are escaped."""
        cells = self.cells(mark="$^\\dagger$")
        header = ["System", *(latex_escape(n) for n in self.datasets.values()), "Mean rank", "Mean"]
        spec = "l" + "r" * (len(header) - 1)
        lines = [f"\\begin{{tabular}}{{{spec}}}", "\\hline", " & ".join(header) + " \\\\", "\\hline"]
        for row in cells.itertuples(index=False):
            values = [latex_escape(str(row[0]))]
            for value in row[1:]:
                text = str(value)
                values.append("--" if text == "–" else text.replace("†", "$^\\dagger$"))
            lines.append(" & ".join(values) + " \\\\")
        lines += ["\\hline", "\\end{tabular}"]
        return "\n".join(lines) + "\n" + f"% {self.footnote(mark='dagger')}\n"

    def to_dict(self) -> dict[str, Any]:
        def plain(v: Any) -> Any:
            if isinstance(v, (float, np.floating)):
                return None if math.isnan(v) else float(v)
            if isinstance(v, np.integer):
                return int(v)
            if isinstance(v, np.bool_):
                return bool(v)
            return v

        return {
            "metric": self.metric,
            "system_tag": self.system_tag,
            "test": self.test,
            "alpha": self.alpha,
            "datasets": [{"id": k, "name": v} for k, v in self.datasets.items()],
            "rows": [{k: plain(v) for k, v in r.items()} for r in self.summary.to_dict(orient="records")],
            "runs": [{k: plain(v) for k, v in r.items()} for r in self.runs.to_dict(orient="records")],
            "tests": [{k: plain(v) for k, v in r.items()} for r in self.tests.to_dict(orient="records")],
            "families": self.families,
            "notes": self.notes,
        }


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip


def latex_escape(text: str) -> str:
    """``text`` safe in LaTeX body text: the ten specials escaped, line breaks as spaces."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in " ".join(str(text).split()))


def leaderboard(
    datasets: Sequence[tuple[str, Dataset, Sequence[StoredRun]]],
    metric: str | MetricSpec,
    *,
    system_tag: str = DEFAULT_SYSTEM_TAG,
    test: str = "t",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    **evaluate_options: Any,
) -> Leaderboard:
    """The leaderboard of the runs tagged ``system_tag`` over ``datasets`` (``(id, dataset, its runs)``). A system
    with several runs on a dataset is scored by its latest (``date`` order), with a note."""

    metric = str(parse_metric(metric))
    _check_choice(test, stats.TESTS, "test")
    notes: list[str] = []
    names: dict[str, str] = {}
    means: dict[str, dict[str, float]] = {}
    run_rows, test_rows = [], []
    families: dict[str, str] = {}
    taken = set()
    for ident, dataset, runs in datasets:
        name = dataset.name if dataset.name not in taken else f"{dataset.name} ({ident[:6]})"
        taken.add(name)
        tagged, _, _ = order_runs([r for r in runs if r.tags.get(system_tag)], DATE_TAG)
        if not tagged:
            notes.append(f"dataset {name!r} has no run tagged {system_tag!r}: left out")
            continue
        untagged = len(runs) - len(tagged)
        if untagged:
            notes.append(f"{name}: {untagged} run(s) without a {system_tag!r} tag left out")
        latest: dict[str, StoredRun] = {}
        counted: dict[str, int] = {}
        for run in tagged:  # in date order: the last one wins
            system = run.tags[system_tag]
            latest[system] = run
            counted[system] = counted.get(system, 0) + 1
        for system, count in counted.items():
            if count > 1:
                notes.append(
                    f"{name}: system {system!r} has {count} runs; scored by the latest, {latest[system].name!r}"
                )
        names[ident] = name
        result = _evaluate(dataset, list(latest.values()), metric, **evaluate_options)
        scores = {s: float(result.runs[r.id].means[metric]) for s, r in latest.items()}
        for system, run in latest.items():
            means.setdefault(system, {})[name] = scores[system]
            run_rows.append({"dataset": name, "dataset_id": ident, "system": system, "run": run.name,
                             "run_id": run.id, "mean": scores[system]})  # fmt: skip
        sign = better_sign(metric)  # the best is the lowest where lower is better (unj@k)
        best = max(scores, key=lambda s: (sign * scores[s], s))
        others = [latest[s].id for s in latest if s != best]
        if others:
            comparison = compare_result(
                result, baseline=latest[best].id, runs=others, metrics=[metric], test=test, correction="holm",
                alpha=alpha, seed=seed, n_resamples=n_resamples, segments=(),
            )  # fmt: skip
            families[name] = comparison.family_text
            by_id = {r.id: s for s, r in latest.items()}
            for row in comparison.table.itertuples(index=False):
                test_rows.append({"dataset": name, "system": by_id[row.run], "best": best, "delta": row.delta,
                                  "p_value": row.p_value, "p_value_corrected": row.p_value_corrected,
                                  "significant": bool(row.significant)})  # fmt: skip
    systems = sorted(means)
    columns = list(names.values())
    mean_frame = pd.DataFrame(
        [[means[s].get(c, np.nan) for c in columns] for s in systems], index=systems, columns=columns
    )
    ranks = mean_frame.rank(axis=0, ascending=better_sign(metric) < 0, method="min").astype("Int64")
    tests = pd.DataFrame(
        test_rows, columns=["dataset", "system", "best", "delta", "p_value", "p_value_corrected", "significant"]
    )
    tied = pd.DataFrame(False, index=systems, columns=columns)
    for row in tests.itertuples(index=False):
        tied.at[row.system, row.dataset] = not row.significant
    return Leaderboard(
        metric=metric,
        system_tag=system_tag,
        test=test,
        alpha=alpha,
        datasets=names,
        means=mean_frame,
        ranks=ranks,
        tied=tied,
        runs=pd.DataFrame(run_rows, columns=["dataset", "dataset_id", "system", "run", "run_id", "mean"]),
        tests=tests,
        notes=notes,
        families=families,
    )
