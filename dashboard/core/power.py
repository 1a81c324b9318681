"""Dataset power: can this query set tell the runs apart, and how many queries would it take?

Across every pair of runs (:attr:`ragmetrics.analysis.compare.Comparison.pairs`, the family the Overview and Compare
correct over too): the share whose difference is significant at alpha (discriminative power); from the observed SD of per-query differences, the smallest
difference the dataset detects and the queries needed for a given one (:mod:`ragmetrics.analysis.stats`), against the
rules of thumb (20-30 queries to prototype, 50-100 in development, 100-200 before release).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import base_layout
from dashboard.core.results import Alignment, common_query_ids
from dashboard.core.share import DELTA_RANGE, POWER_LEVELS
from dashboard.core.specs import MetricSpec, label_title, title
from ragmetrics.analysis import stats

__all__ = [
    "DELTA_RANGE",
    "POWER_COLUMNS",
    "POWER_LEVELS",
    "RULES_COLUMNS",
    "RULES_OF_THUMB",
    "TARGET_DELTAS",
    "Plan",
    "curve_range",
    "metric_row",
    "needed_frame",
    "pair_sds",
    "pairs_table",
    "plan",
    "power_curve_frame",
    "power_figure",
    "power_table",
    "queries_needed",
    "queries_of",
    "rules_frame",
    "stage_of",
    "typical_sd",
]


RULES_OF_THUMB: tuple[tuple[str, int, int], ...] = (
    ("prototype", 20, 30),
    ("development", 50, 100),
    ("release", 100, 200),
)
"""Query-set sizes teams use as rules of thumb."""


def metric_row(table: pd.DataFrame, spec: MetricSpec) -> pd.Series:
    """One metric's row of :func:`power_table`."""
    return table[table["metric"] == str(spec)].iloc[0]


def _mdd(sd: float, n: int, alpha: float, power: float) -> float:
    if sd is None or math.isnan(sd):
        return float("nan")
    return float(stats.min_detectable_delta(sd, n, alpha=alpha, power=power))


def queries_needed(delta: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """:func:`ragmetrics.analysis.stats.queries_needed` for |delta|; None when delta is 0 or either value is unknown."""
    if sd is None or math.isnan(sd) or delta is None or math.isnan(delta) or abs(delta) <= 0:
        return None
    return stats.queries_needed(abs(delta), sd, alpha=alpha, power=power)


POWER_COLUMNS = ["metric", "label", "pairs", "significant", "share", "sd_median", "mdd"]


def power_table(pairs: pd.DataFrame, n_queries: int, *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Per metric: run pairs, how many differ significantly (``pairs``' own ``significant``: its correction's p
    below its alpha), their ``share`` (the discriminative power), the median SD of per-query differences, and
    ``mdd``: the smallest mean difference the dataset's ``n_queries`` detect with that SD at ``alpha`` (the
    planning level, :func:`ragmetrics.analysis.compare.planning_alpha`) and ``power``."""
    rows = []
    for metric, part in pairs.groupby("metric", sort=False):
        sd = float(part["sd_difference"].median()) if len(part) else float("nan")
        rows.append(
            {
                "metric": metric,
                "label": label_title(str(metric)),
                "pairs": len(part),
                "significant": int(part["significant"].sum()),
                "share": float(part["significant"].mean()) if len(part) else float("nan"),
                "sd_median": sd,
                "mdd": _mdd(sd, n_queries, alpha, power),
            }
        )
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def pairs_table(
    pairs: pd.DataFrame, spec: MetricSpec, n_queries: int, *, alpha: float = 0.05, power: float = 0.8
) -> pd.DataFrame:
    """The run pairs of one metric: ``delta`` (a − b), p, ``significant``, the pair's SD, its smallest
    detectable difference ``mdd`` and ``queries_needed`` to detect the observed |delta|."""
    part = _pairs_of(pairs, spec)
    out = part[["run_a", "run_b", "delta", "p_value", "p_value_corrected", "significant", "sd_difference"]].copy()
    out["mdd"] = [_mdd(sd, n_queries, alpha, power) for sd in part["sd_difference"]]
    out["queries_needed"] = pd.array(
        [queries_needed(d, sd, alpha, power) for d, sd in zip(part["delta"], part["sd_difference"])], dtype="Int64"
    )
    return out


def _pairs_of(pairs: pd.DataFrame, spec: MetricSpec) -> pd.DataFrame:
    return pairs[pairs["metric"] == str(spec)].reset_index(drop=True)


def pair_sds(pairs: pd.DataFrame, spec: MetricSpec) -> tuple[float, ...]:
    """The SDs of per-query differences of ``spec``'s run pairs, in :func:`pairs_table`'s order (what
    :func:`power_curve_frame` draws)."""
    return tuple(float(sd) for sd in _pairs_of(pairs, spec)["sd_difference"])


def stage_of(n_queries: int) -> str:
    """Where a query-set size sits against :data:`RULES_OF_THUMB`."""
    if n_queries < RULES_OF_THUMB[0][1]:
        return "below prototype size"
    for name, low, high in reversed(RULES_OF_THUMB):
        if low <= n_queries <= high:
            return f"{name} size"
    if n_queries > RULES_OF_THUMB[-1][2]:
        return "beyond release size"
    for (name, _, high), (nxt, low, _) in itertools.pairwise(RULES_OF_THUMB):
        if high < n_queries < low:
            return f"between {name} and {nxt} size"
    return ""


RULES_COLUMNS = ["stage", "queries", "mdd_low_end", "mdd_high_end"]


def rules_frame(sd: float, n_queries: int, *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """The rules of thumb with the smallest detectable difference at each end of the range, and this dataset."""
    rows: list[dict[str, object]] = [
        {
            "stage": name,
            "queries": f"{low}–{high}",
            "mdd_low_end": _mdd(sd, low, alpha, power),
            "mdd_high_end": _mdd(sd, high, alpha, power),
        }
        for name, low, high in RULES_OF_THUMB
    ]
    here = _mdd(sd, n_queries, alpha, power)
    rows.append({"stage": "this dataset", "queries": f"{n_queries}", "mdd_low_end": here, "mdd_high_end": here})
    return pd.DataFrame(rows, columns=RULES_COLUMNS)


def needed_frame(sd: float, deltas: Sequence[float], *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Queries needed to detect each difference in ``deltas`` with SD ``sd``: ``delta, queries_needed, stage``."""
    rows = []
    for delta in deltas:
        n = queries_needed(delta, sd, alpha, power)
        rows.append({"delta": float(delta), "queries_needed": n, "stage": stage_of(n) if n is not None else ""})
    out = pd.DataFrame(rows, columns=["delta", "queries_needed", "stage"])
    out["queries_needed"] = pd.array(out["queries_needed"], dtype="Int64")
    return out


def typical_sd(sds: Sequence[float]) -> float:
    """The median of the run pairs' SDs of per-query differences (NaN when there is none)."""
    values = [float(s) for s in sds if s is not None and not math.isnan(s)]
    return float(np.median(values)) if values else float("nan")


def power_curve_frame(
    sds: Sequence[float], *, alpha: float = 0.05, power: float = 0.8, n_min: int = 10, n_max: int = 1000
) -> pd.DataFrame:
    """Smallest detectable difference (:func:`ragmetrics.analysis.stats.min_detectable_delta`) against query count
    ``n`` for the median (``mdd``), lowest and highest SD of ``sds``."""
    values = [float(s) for s in sds if s is not None and not math.isnan(s)]
    if not values:
        return pd.DataFrame(columns=["n", "mdd", "mdd_low", "mdd_high"])
    ns = [int(n) for n in np.unique(np.round(np.geomspace(n_min, n_max, 80)).astype(int))]
    levels = {"mdd": typical_sd(values), "mdd_low": min(values), "mdd_high": max(values)}
    effects = [stats.detectable_effect(n, alpha, power) for n in ns]  # one search per n, scaled by each SD
    return pd.DataFrame({"n": ns, **{col: [effect * sd for effect in effects] for col, sd in levels.items()}})


def power_figure(
    curve: pd.DataFrame,
    n_queries: int,
    sd: float,
    *,
    metric: MetricSpec,
    target_delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> go.Figure:
    """The smallest detectable Δ against the number of queries (log x), with the rules-of-thumb ranges shaded,
    this dataset's size marked and, with ``target_delta``, how many queries that difference needs (SD ``sd``).

    ``curve`` is :func:`power_curve_frame`. Traces: ``range over run pairs`` (band), ``median run pair``,
    ``this dataset``.
    """
    label = title(metric)
    fig = go.Figure()
    shades = ("rgba(255,193,7,0.18)", "rgba(156,39,176,0.10)", "rgba(76,175,80,0.16)")
    for (name, low, high), color in zip(RULES_OF_THUMB, shades):
        # on a log axis plotly.js places shapes by data value but annotations by log10 of it
        fig.add_vrect(x0=low, x1=high, fillcolor=color, line_width=0, layer="below")
        fig.add_annotation(
            x=math.log10(math.sqrt(low * high)),
            y=0.99,
            yref="paper",
            yanchor="top",
            showarrow=False,
            text=f"{name}<br>{low}–{high}",
            font={"size": 11, "color": "#555"},
        )
    top = 0.0
    if len(curve):
        ns = curve["n"].tolist()
        fig.add_trace(
            go.Scatter(
                x=ns + ns[::-1],
                y=curve["mdd_high"].tolist() + curve["mdd_low"].tolist()[::-1],
                fill="toself",
                fillcolor="rgba(31,119,180,0.15)",
                line={"width": 0},
                hoverinfo="skip",
                name="range over run pairs",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=ns,
                y=curve["mdd"].tolist(),
                mode="lines",
                line={"color": "#1f77b4", "width": 2.5},
                name="median run pair",
                hovertemplate="%{x} queries → detects Δ ≥ %{y:.3f}<extra></extra>",
            )
        )
        top = float(curve["mdd_high"].max())
    here = _mdd(sd, n_queries, alpha, power)
    # the dataset's label and the target line's on opposite sides of that line, so neither crosses the other
    below_target = bool(target_delta) and not math.isnan(here) and here < float(target_delta or 0.0)
    if not math.isnan(here):
        fig.add_trace(
            go.Scatter(
                x=[n_queries],
                y=[here],
                mode="markers+text",
                name="this dataset",
                marker={"size": 13, "color": "#d62728", "symbol": "diamond"},
                text=[f"{n_queries} queries: Δ ≥ {here:.3f}"],
                textposition="bottom left" if below_target else "top right",
                hovertemplate="this dataset: %{x} queries → Δ ≥ %{y:.3f}<extra></extra>",
            )
        )
    needed = queries_needed(target_delta or 0.0, sd, alpha, power)
    if target_delta and needed is not None:
        # on the left, where the curves stand far from the line (at the right they cross it, through the words):
        # below the line while the band at the fewest queries is above it, unless the dataset's label is there
        above_left = len(curve) > 0 and float(curve["mdd_low"].iloc[0]) > float(target_delta) and not below_target
        fig.add_hline(
            y=target_delta,
            line_dash="dot",
            line_color="#444",
            annotation_text=f"Δ = {target_delta:g} needs ≈ {needed:,} queries",
            annotation_position="bottom left" if above_left else "top left",
        )
    fig.update_yaxes(range=[0, max(top, target_delta or 0.0, 0.01) * 1.08])
    n_max = max([1000, n_queries * 1.2, *(curve["n"].tolist() if len(curve) else [])])
    fig.update_xaxes(
        type="log",
        title_text="queries in the dataset",
        range=[1.0, math.log10(n_max)],
        tickvals=[v for v in (10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000) if v <= n_max],
    )
    fig.update_yaxes(title_text=f"smallest detectable Δ {label}")
    fig.update_layout(
        title={"text": f"Smallest difference in {label} a paired test detects (α = {alpha:.2g}, power {power:.0%})"},
        legend={"orientation": "h", "y": -0.2, "x": 0},
    )
    base_layout(fig, 440)
    return fig


def queries_of(alignments: Sequence[Alignment]) -> int:
    """How many queries every run was evaluated on (the n of the power analysis)."""
    return len(common_query_ids(alignments))


TARGET_DELTAS = (0.01, 0.02, 0.03, 0.05, 0.1)
"""The differences :attr:`Plan.needed_table` always lists, beside the one asked for."""


@dataclass(frozen=True, eq=False)
class Plan:
    """Dataset power on one metric of a comparison, everything at the planning level ``alpha`` and ``power``.

    ``n_queries``: the queries every run was evaluated on; ``pairs``: :func:`pairs_table` of the metric; ``metrics``: :func:`power_table`; ``here``: the metric's row of
    it; ``sd``: the median pair's SD of per-query differences; ``needed``: the queries that detect ``target``
    (None when it cannot be planned); ``rules``: :func:`rules_frame`; ``needed_table``: :func:`needed_frame` of
    :data:`TARGET_DELTAS` and ``target``; ``curve``: :func:`power_curve_frame` up to twice the queries (at least
    1,000); ``figure``: :func:`power_figure` of it. A cached plan is shared by every page that reads it: read, never
    changed."""

    n_queries: int
    pairs: pd.DataFrame
    metrics: pd.DataFrame
    here: pd.Series
    sd: float
    needed: int | None
    rules: pd.DataFrame
    needed_table: pd.DataFrame
    curve: pd.DataFrame
    figure: go.Figure


def curve_range(n_queries: int) -> int:
    """The largest query count :attr:`Plan.curve` reaches."""
    return max(1000, 2 * n_queries)


def plan(
    pairs: pd.DataFrame,
    spec: MetricSpec,
    n_queries: int,
    *,
    alpha: float,
    power: float,
    target: float,
    curve: pd.DataFrame | None = None,
) -> Plan:
    """The :class:`Plan` of ``spec`` from a comparison's ``pairs`` (every metric's), for ``n_queries`` queries;
    ``curve``: its :func:`power_curve_frame` when already made (it depends on neither ``spec``'s name nor
    ``target``, only on the pairs' SDs, ``alpha``, ``power`` and :func:`curve_range`)."""
    chosen = pairs_table(pairs, spec, n_queries, alpha=alpha, power=power)
    sd = typical_sd(chosen["sd_difference"])
    metrics = power_table(pairs, n_queries, alpha=alpha, power=power)
    if curve is None:
        curve = power_curve_frame(list(pair_sds(pairs, spec)), alpha=alpha, power=power, n_max=curve_range(n_queries))
    return Plan(
        n_queries=n_queries,
        pairs=chosen,
        metrics=metrics,
        here=metric_row(metrics, spec),
        sd=sd,
        needed=queries_needed(target, sd, alpha=alpha, power=power),
        rules=rules_frame(sd, n_queries, alpha=alpha, power=power),
        needed_table=needed_frame(sd, sorted({*TARGET_DELTAS, round(target, 4)}), alpha=alpha, power=power),
        curve=curve,
        figure=power_figure(curve, n_queries, sd, metric=spec, target_delta=target, alpha=alpha, power=power),
    )
