"""Compare: is a run better than the baseline, or is that noise? The table, its marks, the forest plot, segments.

The numbers are the library's (:func:`ragmetrics.analysis.compare.compare_result` on an
:class:`~ragmetrics.analysis.evaluate.EvalResult` built around the dashboard's alignments); this module shapes them for
tables and draws them. Test and alpha choices are the library's (:data:`ragmetrics.analysis.stats.TESTS`,
:data:`dashboard.core.share.ALPHAS`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import base_layout, safe
from dashboard.core.queries import group_values
from dashboard.core.results import Alignment, eval_result
from dashboard.core.share import ALPHAS, DEFAULT_ALPHA, DEFAULT_TEST, K_MAX, OUTCOMES
from dashboard.core.specs import METRIC_CHOICES, label_title, metric_spec, title
from dashboard.core.text import md_escape, signed
from ragmetrics.analysis import stats
from ragmetrics.analysis.compare import (
    BOUND_COLUMNS,
    MIN_GROUP,
    SEGMENTS,
    Comparison,
    bounds_text,
    compare_result,
    intervals_name,
    mean_bounds_text,
    no_bound_words,
    percent,
    planning_alpha,
    planning_words,
    untested_shown,
)
from ragmetrics.analysis.stats import correction_title, delta_interval_method, is_uncorrected
from ragmetrics.analysis.stats import family_text as family_words
from ragmetrics.analysis.verdicts import SAID, interval_disagreement, mixed_words
from ragmetrics.analysis.verdicts import verdict as verdict_of
from ragmetrics.engine.metrics import CURVE_METRICS, MetricSpec, better_sign
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset

__all__ = [
    "ALPHAS",
    "BASELINE",
    "BETTER",
    "CANNOT_TELL",
    "COMPARISON_COLUMNS",
    "COULD_FLIP",
    "DEFAULT_ALPHA",
    "DEFAULT_TEST",
    "MIN_GROUP",
    "NOT_SIGNIFICANT",
    "OUTCOMES",
    "SEED",
    "SEGMENT_COLUMNS",
    "SETTLED",
    "TESTS",
    "TOO_FEW",
    "WORSE",
    "Comparison",
    "against_baseline",
    "compare_specs",
    "compared_specs",
    "comparison_display",
    "comparison_frame",
    "correction_title",
    "default_baseline",
    "delta_interval_method",
    "family_size",
    "family_text",
    "family_words",
    "focus_spec",
    "forest_figure",
    "format_ci",
    "format_p",
    "intervals_name",
    "is_uncorrected",
    "metric_options",
    "planning_alpha",
    "planning_words",
    "row_of",
    "run_comparison",
    "segment_frame",
    "segment_labels",
    "significance_mark",
    "style_marks",
    "test_title",
    "verdict",
]

SEED = 0
"""Every resampling test and interval on these pages is seeded, so a view repeats exactly."""

TESTS = stats.TESTS
STANDARD_METRICS: tuple[str, ...] = ("recall", "precision", "ndcg", "hits", "mrr")
"""Compared besides the sidebar metric, all at the sidebar's K."""

BETTER = SAID["better"].mark
WORSE = SAID["worse"].mark
NOT_SIGNIFICANT = SAID["not significant"].mark
BASELINE = SAID["baseline"].mark
TOO_FEW = SAID["too few"].mark
CANNOT_TELL = SAID["cannot tell"].mark
MIXED = SAID["mixed"].mark
MARK_COLORS: dict[str, str] = {
    BETTER: "#2ca02c",
    WORSE: "#d62728",
    NOT_SIGNIFICANT: "#7f7f7f",
    TOO_FEW: "#bbbbbb",
    CANNOT_TELL: "#bbbbbb",
    BASELINE: "#1f77b4",
    MIXED: "#ff7f0e",
}


def test_title(test: str) -> str:
    """The paired test's title from the library's registry (``t`` -> ``Paired t-test``)."""
    return TESTS[test].title if test in TESTS else test


def compare_specs(metric: str, k: int, chosen: Sequence[MetricSpec] = ()) -> list[MetricSpec]:
    """The metrics compared: ``chosen`` (each with its own cut-off) when the view names a set, else the sidebar
    metric and the standard ones, all at ``k``, in a fixed order (so table rows stay put)."""
    if chosen:
        return list(dict.fromkeys(chosen))
    names = [m for m in METRIC_CHOICES if m in STANDARD_METRICS or m == metric]
    return list(dict.fromkeys(metric_spec(m, k) for m in names))


def compared_specs(
    alignments: Sequence[Alignment], metric: str, k: int, chosen: Sequence[MetricSpec] = ()
) -> tuple[list[MetricSpec], list[str]]:
    """The metrics Overview, Compare and Dataset power compare (one family on every page): ``chosen`` (the view's
    metric set) or the sidebar metric and the standard ones at ``k``, less those the runs cannot give (with a note
    each); the computable defaults when none of ``chosen`` is."""
    default = compare_specs(metric, k)
    specs, notes = computable_specs(alignments, list(chosen) or default)
    return specs or computable_specs(alignments, default)[0], notes


def focus_spec(specs: Sequence[MetricSpec], metric: str, k: int) -> MetricSpec:
    """The compared metric a page's verdict and focus are on: the sidebar's metric at K when compared, else the
    first compared."""
    sidebar = metric_spec(metric, k)
    return sidebar if sidebar in specs else specs[0]


def default_baseline(run_ids: Sequence[str], value: str | None, avoid: Collection[str] = ()) -> str | None:
    """The baseline run id: ``value`` when it is among ``run_ids``, else the first run not in ``avoid`` (runs whose
    numbers mean nothing)."""
    if value in run_ids:
        return value
    return next((i for i in run_ids if i not in avoid), run_ids[0] if run_ids else None)


def computable_specs(
    alignments: Sequence[Alignment], specs: Sequence[MetricSpec]
) -> tuple[list[MetricSpec], list[str]]:
    """``specs`` that every one of ``alignments`` can compute, and a note for each left out (a keyword or answer
    metric on runs without text, a metric a link names that this dataset cannot give)."""
    kept: list[MetricSpec] = []
    notes: list[str] = []
    for spec in specs:
        try:
            for alignment in alignments:
                alignment.values([spec])
        except (RagMetricsError, ValueError) as err:
            notes.append(f"{spec} is left out: {err}")
        else:
            kept.append(spec)
    return kept, notes


def metric_options(k: int, chosen: Sequence[MetricSpec] = ()) -> list[str]:
    """What the metric-set picker offers: every picker metric at each preset cut-off and at ``k``, the chosen
    ones, then the whole-ranking metrics (a typed ``metric@K`` is accepted too)."""
    cuts = sorted({1, 3, 5, 10, 20, K_MAX, int(k)})
    specs = [f"{m}@{c}" for m in METRIC_CHOICES if m in CURVE_METRICS for c in cuts]
    whole = [m for m in ("mrr", "map", "ndcg", "rprec") if m not in specs]
    return list(dict.fromkeys([*map(str, chosen), *specs, *whole]))


def family_size(comparison: Comparison) -> int:
    """How many comparisons the correction covered (:data:`ragmetrics.analysis.compare.FAMILIES`: every pair of
    the selected runs × every compared metric)."""
    return comparison.family_size


def family_text(comparison: Comparison) -> str:
    """``Holm-corrected over 6 comparison(s) (all pairs of 3 runs x 2 metrics)``
    (:attr:`ragmetrics.analysis.compare.Comparison.family_text`, the CLI's words)."""
    return comparison.family_text


def verdict(comparison: Comparison, spec: MetricSpec, *, markdown: bool = True) -> str | None:
    """The best run against the baseline on ``spec``, in words: which run, by how much, the 95% CI of the
    difference, and whether it is significant after the correction, with the family named. ``markdown``: names
    escaped and bold (else plain text). None when there is no other run or ``spec`` is not compared."""
    bold = (lambda t: f"**{t}**") if markdown else (lambda t: t)
    name = md_escape if markdown else str
    table = comparison.table
    rows = table[(table["metric"] == str(spec)) & (table["run"] != comparison.baseline)] if not table.empty else table
    if rows.empty:
        return None
    sign = better_sign(spec)  # the best is the lowest where lower is better (unj@k)
    best = rows.loc[(sign * rows["mean"].astype(float)).idxmax()]
    delta, base = float(best["delta"]), bold(name(comparison.baseline))
    run = bold(name(str(best["run"])))
    p = float(best["p_value_corrected"])
    significant = bool(p < comparison.alpha)
    # beside the corrected p-value, the interval adjusted for the same family (its name says how)
    ci = (
        f"{comparison.adjusted_interval_name(float(best['ci_level_adjusted']))} "
        f"{bounds_text(float(best['ci_low_adjusted']), float(best['ci_high_adjusted']), digits=3)}"
    )
    said = verdict_of(
        str(best["run"]), comparison.baseline, delta, p, comparison.alpha, direction=float(best["direction"]), sign=sign
    )
    if said == "mixed":
        words = f"No verdict on {title(spec)} for {run} against {base}: " + mixed_words(
            comparison.test, float(best["direction"]), delta
        )
    elif abs(delta) <= 0:
        words = f"{run} ties {base} on {title(spec)}"
    elif not significant:
        side = "ahead of" if sign * delta > 0 else "behind"
        words = f"No significant difference on {title(spec)}: {run} is {side} {base} by {bold(signed(delta))}"
    elif sign * delta > 0:
        words = f"{run} beats {base} on {title(spec)} by {bold(signed(delta))}"
    else:
        words = f"No run beats {base} on {title(spec)}: the best, {run}, is behind by {bold(signed(delta))}"
    judged = bold("significant" if significant else "not significant")
    text = (
        f"{words} ({ci}), {judged} at α = {comparison.alpha:g} ({p_equals(p)}, {family_text(comparison)}; "
        f"{test_title(comparison.test)})."
    )
    disagreement = interval_disagreement(
        float(best["ci_low_adjusted"]),
        float(best["ci_high_adjusted"]),
        significant,
        comparison.correction,
        comparison.test,
        best.get("ci_method_adjusted"),
    )
    if disagreement:
        text += " " + disagreement
    if math.isnan(float(best["ci_low_adjusted"])) and not math.isnan(delta):
        text += f" {no_bound_words(int(best['n'])).capitalize()}."
    if "could_flip" in best.index and abs(delta) > 0:
        ends = f"Δ from {signed(float(best['delta_worst']))} to {signed(float(best['delta_best']))}"
        if bool(best["could_flip"]):
            text += f" The unjudged documents could {bold('flip')} it: judged, they could give {ends}."
        else:
            text += f" No way of judging the unjudged documents flips it ({ends})."
    return text


def run_comparison(
    alignments: Sequence[Alignment],
    baseline: str,
    specs: Sequence[MetricSpec],
    *,
    test: str = DEFAULT_TEST,
    alpha: float = DEFAULT_ALPHA,
    seed: int = SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    correction: str = "holm",
    bounds: bool = False,
    bounds_depth: int | None = None,
    segments: bool = True,
) -> Comparison:
    """:func:`ragmetrics.analysis.compare.compare_result` on the alignments (``baseline`` is a run name); ``bounds``: with
    what the unjudged documents (in each run's top ``bounds_depth``) leave open
    (:data:`ragmetrics.analysis.compare.BOUND_COLUMNS`); ``segments=False``: without the per-category and per-difficulty
    comparisons (an empty ``segments`` table)."""
    return compare_result(
        eval_result(alignments, specs),
        baseline=baseline,
        metrics=list(specs),
        test=test,
        alpha=alpha,
        seed=seed,
        n_resamples=n_resamples,
        correction=correction,
        bounds=bounds,
        bounds_depth=bounds_depth,
        segments=SEGMENTS if segments else (),
    )


# --- the comparison table ----------------------------------------------------------------


def significance_mark(
    run: str,
    baseline: str,
    delta: float,
    p_corrected: float,
    alpha: float,
    too_few: bool = False,
    direction: float | None = None,
) -> str:
    """The library's verdict (:func:`ragmetrics.analysis.verdicts.verdict`) as the page marks it: ``baseline``,
    ``too few to tell``, ``▲ better`` / ``▼ worse`` (corrected p < alpha, on the side the test found),
    ``test and mean disagree`` or ``not significant``."""
    return SAID[verdict_of(run, baseline, delta, p_corrected, alpha, too_few=too_few, direction=direction)].mark


COMPARISON_COLUMNS = [
    "metric",
    "run",
    "n",
    "mean",
    "mean_ci_low",
    "mean_ci_high",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_value_corrected",
    "ci_low_adjusted",
    "ci_high_adjusted",
    "ci_level_adjusted",
    "significance",
    "wins",
    "ties",
    "losses",
]


def comparison_frame(comparison: Comparison) -> pd.DataFrame:
    """One row per (metric, run), the baseline first within each metric; ``significance`` from
    :func:`significance_mark`. Numbers are :attr:`Comparison.table`'s (the baseline row keeps its mean and CI;
    its delta is 0 and it has no p); with bounds, the columns of :data:`ragmetrics.analysis.compare.BOUND_COLUMNS` after."""
    table = comparison.table
    columns = COMPARISON_COLUMNS + [c for c in BOUND_COLUMNS if c in table.columns]
    if table.empty:
        return pd.DataFrame(columns=columns)
    metrics = list(dict.fromkeys(table["metric"]))
    order = sorted(
        range(len(table)),
        key=lambda i: (metrics.index(table["metric"].iloc[i]), table["run"].iloc[i] != comparison.baseline, i),
    )
    part = table.iloc[order].reset_index(drop=True)
    out = part[[c for c in columns if c in part.columns and c != "significance"]].copy()
    out["significance"] = [
        significance_mark(r, comparison.baseline, d, p, comparison.alpha, direction=side)
        for r, d, p, side in zip(part["run"], part["delta"], part["p_value_corrected"], part["direction"])
    ]
    return out[columns]


def row_of(frame: pd.DataFrame, metric: MetricSpec, run: str) -> int | None:
    """The row of :func:`comparison_frame` for ``metric`` and ``run`` (None when it has none)."""
    matches = frame.index[(frame["metric"] == str(metric)) & (frame["run"] == run)].tolist()
    return int(matches[0]) if matches else None


def against_baseline(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The rows of :func:`comparison_frame` that compare a run with the baseline (the forest plot's)."""
    return frame[frame["run"] != baseline].reset_index(drop=True)


def format_p(p: float) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"


def p_equals(p: float) -> str:
    """``p = 0.0123`` or ``p < 0.0001`` in running text (never ``p = <0.0001``)."""
    shown = format_p(p)
    return f"p {shown[0]} {shown[1:]}" if shown.startswith("<") else f"p = {shown}"


def format_ci(low: float, high: float) -> str:
    """An interval in a table's cell: :func:`ragmetrics.analysis.compare.mean_bounds_text` to 3 decimals, ``—`` where
    there is none."""
    return mean_bounds_text(low, high, digits=3, none="—")


def comparison_display(frame: pd.DataFrame, baseline: str, correction: str = "holm") -> pd.DataFrame:
    """:func:`comparison_frame` for reading (same rows, same order): the verdict (``significance``) next to the
    delta, where a narrow window still shows it, and beside the verdict the interval that agrees with it: the
    delta's interval adjusted as its p-value is (``Δ CI (Holm-adjusted)``, at its level,
    :func:`ragmetrics.analysis.compare.adjusted_level`), then the corrected and the raw p-value, then the
    uncorrected ``Δ 95% CI (uncorrected)``; uncorrected, the delta's interval at 1 - alpha beside the verdict
    (``Δ 95% CI`` at alpha 0.05, the level the test is read at). CIs (signed, as everywhere) and p-values as text,
    W / T / L in one column."""
    is_base = frame["run"] == baseline
    corrected = not stats.is_uncorrected(correction)
    levels = frame.loc[~is_base, "ci_level_adjusted"].dropna()
    level = float(levels.iloc[0]) if len(levels) else 0.95
    raw_interval = "Δ 95% CI (uncorrected)" if corrected else f"Δ {percent(level)}% CI"
    raw_ends = (
        (frame["ci_low"], frame["ci_high"]) if corrected else (frame["ci_low_adjusted"], frame["ci_high_adjusted"])
    )
    p_corrected = f"p ({correction_title(correction)})"
    out = pd.DataFrame(
        {
            "metric": [label_title(m) for m in frame["metric"]],
            "run": frame["run"].astype("str"),
            "n": frame["n"].astype(int),
            "mean": frame["mean"].astype(float),
            "mean 95% CI": [format_ci(lo, hi) for lo, hi in zip(frame["mean_ci_low"], frame["mean_ci_high"])],
            "Δ vs baseline": ["" if b else signed(d) for b, d in zip(is_base, frame["delta"])],
            "significance": frame["significance"],
            # uncorrected, beside the verdict: the interval at the test's level (a constant difference's is the
            # exact test's, no bound where it rejects no shift)
            raw_interval: ["" if b else bounds_text(lo, hi, digits=3) for b, lo, hi in zip(is_base, *raw_ends)],
            "p": [format_p(p) for p in frame["p_value"]],
            p_corrected: [format_p(p) for p in frame["p_value_corrected"]],
            "W / T / L": [
                "" if b else f"{w} / {t} / {lo}"
                for b, w, t, lo in zip(is_base, frame["wins"], frame["ties"], frame["losses"])
            ],
        }
    )
    adjusted = f"Δ CI ({correction_title(correction)}-adjusted)"
    if corrected:
        ends = zip(is_base, frame["ci_low_adjusted"], frame["ci_high_adjusted"], frame["ci_level_adjusted"])
        out[adjusted] = [
            "" if b else f"{bounds_text(lo, hi, digits=3)} at {percent(level)}%" for b, lo, hi, level in ends
        ]
    if "could_flip" in frame.columns:  # each beside what it qualifies
        for column, values in _judged_columns(frame, is_base).items():
            out[column] = values
    head = ["metric", "run", "n", "mean", "mean 95% CI", "mean if judged", "Δ vs baseline", "significance", "judgments"]
    if corrected:
        tail = [adjusted, p_corrected, "p", raw_interval, "Δ if judged", "W / T / L"]
    else:
        tail = [raw_interval, "Δ if judged", "p", p_corrected, "W / T / L"]
    return out[[c for c in head + tail if c in out.columns]]


COULD_FLIP = "could flip"
SETTLED = "settled"


def _judged_columns(frame: pd.DataFrame, is_base: pd.Series) -> dict[str, list[str]]:
    """The mean's and the delta's worst and best over every way of judging the unjudged documents, and whether
    the delta's sign could flip."""
    return {
        "mean if judged": [format_ci(lo, hi) for lo, hi in zip(frame["mean_worst"], frame["mean_best"])],
        "Δ if judged": [
            "" if b else format_ci(lo, hi) for b, lo, hi in zip(is_base, frame["delta_worst"], frame["delta_best"])
        ],
        "judgments": [
            "" if b or d == 0 else (COULD_FLIP if flip else SETTLED)
            for b, d, flip in zip(is_base, frame["delta"], frame["could_flip"])
        ],
    }


def style_marks(display: pd.DataFrame, focus_row: int | None = None) -> Any:
    """A Styler colouring the ``significance`` column; ``focus_row`` (the row the charts below show) in bold."""

    def colour(value: object) -> str:
        color = MARK_COLORS.get(str(value))
        return (
            f"color: {color}; font-weight: 600"
            if color and value not in (NOT_SIGNIFICANT, TOO_FEW, CANNOT_TELL)
            else ""
        )

    styler = display.style.map(colour, subset=["significance"]).format({"mean": "{:.3f}"})
    if "judgments" in display.columns:
        styler = styler.map(
            lambda v: "color: #b36b00; font-weight: 600" if v == COULD_FLIP else "", subset=["judgments"]
        )
    if focus_row is not None and 0 <= focus_row < len(display):
        styler = styler.apply(
            lambda row: ["font-weight: 700; background-color: #eef4fb" if row.name == focus_row else "" for _ in row],
            axis=1,
        )
    return styler


def forest_figure(
    frame: pd.DataFrame, *, labels: Sequence[str], title: str, x_title: str = "Δ vs baseline"
) -> go.Figure:
    """Deltas with their intervals as horizontal error bars, one row per ``labels`` entry (top to bottom).

    ``frame`` has ``delta, ci_low_adjusted, ci_high_adjusted, ci_level_adjusted, significance`` (and ``n``): the
    interval the verdict's correction gives (:func:`ragmetrics.analysis.compare.adjusted_level`), so a point is
    marked significant exactly where its interval leaves 0 under the t test; traces are named by significance
    (``▲ better``, ``▼ worse``, ``not significant``, ``too few to tell``: a point with no interval), a dotted line
    marks 0.
    """
    fig = go.Figure()
    data = frame.reset_index(drop=True).assign(label=[safe(x) for x in labels])
    data = data.assign(ci_low=data["ci_low_adjusted"], ci_high=data["ci_high_adjusted"])
    level = 100 * data["ci_level_adjusted"].astype(float)
    for mark in (BETTER, WORSE, NOT_SIGNIFICANT, TOO_FEW):
        part = data[data["significance"] == mark]
        if part.empty:
            continue
        delta = part["delta"].astype(float)
        fig.add_trace(
            go.Scatter(
                x=delta.tolist(),
                y=part["label"].tolist(),
                mode="markers",
                name=mark,
                marker={
                    "color": MARK_COLORS[mark],
                    "size": 10,
                    "symbol": "circle-open" if mark == TOO_FEW else "circle",
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": (part["ci_high"].astype(float) - delta).clip(lower=0).fillna(0).tolist(),
                    "arrayminus": (delta - part["ci_low"].astype(float)).clip(lower=0).fillna(0).tolist(),
                    "color": MARK_COLORS[mark],
                    "thickness": 1.5,
                    "width": 4,
                },
                customdata=list(
                    zip(part["ci_low"], part["ci_high"], part.get("n", pd.Series([0] * len(part))), level[part.index])
                ),
                hovertemplate="%{y}<br>Δ %{x:+.3f}<br>"
                + (
                    "no interval"
                    if mark == TOO_FEW
                    else "%{customdata[3]:.4g}% CI %{customdata[0]:+.3f} – %{customdata[1]:+.3f}"
                )
                + "<br>n=%{customdata[2]}<extra>%{fullData.name}</extra>",
            )
        )
    fig.add_vline(x=0, line_dash="dot", line_color="#666")
    fig.update_yaxes(categoryorder="array", categoryarray=list(data["label"])[::-1], type="category")
    fig.update_xaxes(title_text=x_title, zeroline=False)
    base_layout(fig, 90 + 32 * max(len(data), 2))
    fig.update_layout(
        title={"text": safe(title)},
        showlegend=True,
        legend={"orientation": "h", "y": -0.25 if len(data) > 4 else -0.5, "x": 0},
    )
    return fig


# --- segments ----------------------------------------------------------------------------

SEGMENT_COLUMNS = [
    "segment",
    "group",
    "n",
    "baseline_mean",
    "mean",
    "delta",
    "ci_low",
    "ci_high",
    "ci_low_adjusted",
    "ci_high_adjusted",
    "ci_level_adjusted",
    "p_value",
    "p_value_corrected",
    "significance",
    "wins",
    "ties",
    "losses",
    "too_few",
]


def segment_frame(comparison: Comparison, spec: MetricSpec, run: str, dataset: Dataset | None = None) -> pd.DataFrame:
    """One run against the baseline on one metric, per category and per difficulty.

    Groups in the dashboard's order (categories by size, difficulties easy → hard when ``dataset`` is given);
    ``significance`` is ``too few to tell`` when n < :data:`ragmetrics.analysis.compare.MIN_GROUP`, and such a group
    shows its delta with no interval and no p-value (:func:`ragmetrics.analysis.compare.untested_shown`, the rule of
    every output); the correction is the library's (within a facet, across runs × metrics × groups).
    """
    seg = comparison.segments
    if seg.empty or "segment" not in seg.columns:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    part = seg[(seg["metric"] == str(spec)) & (seg["run"] == run)].copy()
    if part.empty:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    if dataset is not None:
        rank = {}
        for facet in part["segment"].unique():
            if facet in dataset.queries_table.column_names:
                rank.update({(facet, g): i for i, g in enumerate(group_values(dataset, facet))})
        part["_order"] = [rank.get((s, g), 10_000) for s, g in zip(part["segment"], part["group"])]
        facets = list(dict.fromkeys(part["segment"]))
        part["_facet"] = [facets.index(s) for s in part["segment"]]
        part = part.sort_values(["_facet", "_order", "group"], kind="stable")
    part["significance"] = [
        significance_mark(run, comparison.baseline, d, p, comparison.alpha, bool(tf), side)
        for d, p, tf, side in zip(part["delta"], part["p_value_corrected"], part["too_few"], part["direction"])
    ]
    return untested_shown(part[SEGMENT_COLUMNS]).reset_index(drop=True)


def segment_labels(frame: pd.DataFrame) -> list[str]:
    return [f"{s}: {g} (n={n})" for s, g, n in zip(frame["segment"], frame["group"], frame["n"])]
