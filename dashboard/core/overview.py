"""Overview: each run's means at K with 95% intervals, curves over K with 95% bands, precision against recall.

Alignments in, frames and figures out. Metric columns use canonical names (``recall@5``); the pages show the
registry's titles (:func:`dashboard.core.specs.title`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.core.charts import BAND_SUFFIX, base_layout, base_layout_settings, rgba, run_colors, runs_in, safe
from dashboard.core.intervals import interval_methods, mean_ci
from dashboard.core.results import Alignment, curve
from dashboard.core.specs import K_MAX, metric_spec, metric_title
from ragmetrics.engine.metrics import MetricSpec

__all__ = [
    "CURVE_PANEL_METRICS",
    "OVERVIEW_METRICS",
    "PR_LABEL_KS",
    "curve_frame",
    "curves_figure",
    "display_k_max",
    "overview_frame",
    "overview_specs",
    "pr_figure",
    "pr_frame",
    "summary_frame",
    "unequal_depths",
]

OVERVIEW_METRICS: tuple[str, ...] = ("recall", "precision", "f1", "hits", "ndcg", "mrr", "map")
CURVE_PANEL_METRICS: tuple[str, ...] = ("recall", "precision", "f1", "hits", "ndcg")
PR_LABEL_KS: tuple[int, ...] = (1, 5, 10, 20, 50, 100)
_TEXT_POSITIONS = ("top right", "bottom left", "middle right", "top left", "bottom right")


def unequal_depths(alignments: Sequence[Alignment], k: int | None) -> str | None:
    """What a verdict at K leaves unsaid when the runs rank to different depths and some rank fewer than K documents
    (a fused run 70 deep against runs 20 deep, at Recall@100): their metric at K reads the documents they ranked, so
    the deeper run may be ahead by its depth alone. None when the depths are alike or all reach K."""
    depths = {a.name: a.depth for a in alignments}
    if k is None or len(set(depths.values())) < 2:
        return None
    shallow = [name for name, depth in depths.items() if depth < k]
    if not shallow:
        return None
    deepest = max(depths, key=lambda name: depths[name])
    listed = ", ".join(f"{name} ranks at most {depths[name]:,}" for name in shallow)
    return (
        f"At K = {k:,} the runs rank to different depths: {listed} documents per query, {deepest} "
        f"{depths[deepest]:,}. A metric at K reads what each run ranked, so part of a difference may be depth alone."
    )


def overview_specs(k: int) -> list[MetricSpec]:
    """The overview's metrics at K: Recall, Precision, F1, Hits, nDCG, MRR and MAP, each @K."""
    return [metric_spec(m, k) for m in OVERVIEW_METRICS]


def overview_frame(alignments: Sequence[Alignment], k: int) -> pd.DataFrame:
    """One row per run: ``run``, ``queries``, then the mean of each overview metric at K (canonical names)."""
    specs = overview_specs(k)
    rows = []
    for alignment in alignments:
        row: dict[str, object] = {"run": alignment.name, "queries": alignment.n_queries}
        row.update({str(spec): alignment.mean(spec) for spec in specs})
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "queries", *[str(s) for s in specs]])


def summary_frame(
    alignments: Sequence[Alignment], specs: Sequence[MetricSpec], bounds_depth: int | None = None
) -> pd.DataFrame:
    """Mean and 95% CI of each metric per run: ``run, metric, n, mean, ci_low, ci_high, interval`` (long;
    ``interval``: the method of :func:`ragmetrics.analysis.stats.mean_interval` for that run's metric, as
    :func:`ragmetrics.analysis.stats.interval_methods` names it); with ``bounds_depth``, ``worst, best`` too: the
    mean's ends over every way of judging the unjudged documents in each run's top ``bounds_depth``
    (:meth:`ragmetrics.Alignment.bounds`)."""
    rows = []
    parsed = list(specs)
    for alignment in alignments:
        n = alignment.n_queries
        values = alignment.values(parsed)
        matrix = np.column_stack([values[s] for s in parsed]) if parsed else np.zeros((n, 0))
        mean, low, high = mean_ci(matrix)
        methods = interval_methods(matrix)
        for i, spec in enumerate(parsed):
            row = {"run": alignment.name, "metric": str(spec), "n": n, "mean": mean[i], "ci_low": low[i],
                   "ci_high": high[i], "interval": methods[i]}  # fmt: skip
            if bounds_depth is not None:
                row["worst"], row["best"] = alignment.mean_bounds(spec, bounds_depth)
            rows.append(row)
    columns = ["run", "metric", "n", "mean", "ci_low", "ci_high", "interval"]
    return pd.DataFrame(rows, columns=columns + (["worst", "best"] if bounds_depth is not None else []))


def curve_frame(
    alignments: Sequence[Alignment], metrics: Sequence[str] = CURVE_PANEL_METRICS, k_max: int = K_MAX
) -> pd.DataFrame:
    """Mean ``metric@k`` for k = 1..k_max with its 95% band: ``run, metric, k, value, ci_low, ci_high, interval``
    (``interval``: each point's method, as in :func:`summary_frame`)."""
    parts = []
    ks = np.arange(1, k_max + 1)
    for alignment in alignments:
        if alignment.n_queries == 0:
            continue
        for metric in metrics:
            values = curve(alignment, metric, k_max)
            mean, low, high = mean_ci(values)
            parts.append(
                pd.DataFrame(
                    {
                        "run": alignment.name,
                        "metric": metric,
                        "k": ks,
                        "value": mean,
                        "ci_low": low,
                        "ci_high": high,
                        "interval": interval_methods(values),
                    }
                )
            )
    if not parts:
        return pd.DataFrame(columns=["run", "metric", "k", "value", "ci_low", "ci_high", "interval"])
    return pd.concat(parts, ignore_index=True)


def pr_frame(alignments: Sequence[Alignment], k_max: int = K_MAX) -> pd.DataFrame:
    """Mean precision@k against mean recall@k, one point per K: ``run, k, recall, precision, label``."""
    parts = []
    ks = np.arange(1, k_max + 1)
    for alignment in alignments:
        if alignment.n_queries == 0:
            continue
        parts.append(
            pd.DataFrame(
                {
                    "run": alignment.name,
                    "k": ks,
                    "recall": curve(alignment, "recall", k_max).mean(axis=0),
                    "precision": curve(alignment, "precision", k_max).mean(axis=0),
                    "label": [f"K={k}" for k in ks],
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=["run", "k", "recall", "precision", "label"])
    return pd.concat(parts, ignore_index=True)


def left_out_words(alignment: Alignment) -> str:
    """Why a mean is over fewer queries than the dataset holds, in words: its negative queries (an answer not in the
    corpus: nothing relevant to find) and the others without judgments; "" when every query is evaluated."""
    dataset = alignment.dataset
    left = len(dataset) - alignment.n_queries
    if left <= 0:
        return ""
    negative = len(dataset.negative_queries())
    parts = ([f"{negative:,} negative (nothing relevant to find)"] if negative else []) + (
        [f"{left - negative:,} without judgments"] if left > negative else []
    )
    return f" ({left:,} of the dataset's {len(dataset):,} left out: {', '.join(parts)})"


def display_k_max(alignments: Sequence[Alignment], floor: int = 10) -> int:
    """Deepest K worth plotting: the deepest ranking among the runs, between ``floor`` and K_MAX."""
    deepest = max((a.depth for a in alignments), default=floor)
    return int(min(K_MAX, max(floor, deepest)))


# --- figures -----------------------------------------------------------------------------


def curves_figure(
    curves: pd.DataFrame,
    metrics: Sequence[str] = CURVE_PANEL_METRICS,
    runs: Sequence[str] | None = None,
    *,
    log_x: bool | None = None,
    every: Sequence[str] | None = None,
) -> go.Figure:
    """Small multiples of metric@K against K, one line per run with its 95% band (:func:`curve_frame`).

    ``curves`` is :func:`curve_frame`. Panels follow ``metrics`` in a grid of three columns; the legend sits in
    the free cell. Nothing in it depends on the chosen K: a change of K leaves the drawn figure as it is.
    """
    runs = runs_in(curves, runs)
    colors = run_colors(runs, every)
    cols = 3
    rows = max(1, -(-len(metrics) // cols))
    k_max = int(curves["k"].max()) if len(curves) else 10
    if log_x is None:
        log_x = k_max > 20
    tickvals = [v for v in (1, 2, 5, 10, 20, 50, 100) if v <= k_max] if log_x else None
    layout = _panel_grid(rows, cols, tuple(f"{metric_title(m)}@K" for m in metrics))
    traces = []
    for i, metric in enumerate(metrics):
        n = "" if i == 0 else str(i + 1)  # make_subplots numbers the panels' axes row by row
        part = curves[curves["metric"] == metric]
        label = metric_title(metric)
        for run in runs:
            data = part[part["run"] == run]
            if data.empty:
                continue
            ks = data["k"].tolist()
            traces.append(
                {
                    "type": "scatter",
                    "x": ks + ks[::-1],
                    "y": data["ci_high"].tolist() + data["ci_low"].tolist()[::-1],
                    "fill": "toself",
                    "fillcolor": rgba(colors[run], 0.15),
                    "line": {"width": 0},
                    "hoverinfo": "skip",
                    "name": safe(run) + BAND_SUFFIX,
                    "legendgroup": run,
                    "showlegend": False,
                    "xaxis": f"x{n}",
                    "yaxis": f"y{n}",
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "x": ks,
                    "y": data["value"].tolist(),
                    "mode": "lines",
                    "line": {"color": colors[run], "width": 2},
                    "name": safe(run),
                    "legendgroup": run,
                    "showlegend": i == 0,
                    "customdata": list(zip(data["ci_low"], data["ci_high"])),
                    "hovertemplate": f"{label}@%{{x}} = %{{y:.3f}}"
                    "<br>95% CI %{customdata[0]:.3f}–%{customdata[1]:.3f}<extra>%{fullData.name}</extra>",
                    "xaxis": f"x{n}",
                    "yaxis": f"y{n}",
                }
            )
        layout[f"xaxis{n}"].update({"type": "log" if log_x else "linear", "tickvals": tickvals, "title": {"text": "K"}})
        layout[f"yaxis{n}"]["autorange"] = True  # saturated runs stay apart
    layout.update(base_layout_settings(300 * rows + 60))
    free = rows * cols - len(metrics)
    if free > 0:
        layout["legend"] = {
            "x": 1.0 - free / cols + 0.04,
            "y": 0.42,
            "xanchor": "left",
            "yanchor": "top",
            "title": {"text": "runs"},
        }
    return go.Figure(data=traces, layout=layout)  # one pass of validation over the whole figure


@functools.lru_cache(maxsize=8)
def _panel_grid_of(rows: int, cols: int, titles: tuple[str, ...]) -> str:
    grid = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.07, vertical_spacing=0.2)
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)
    return json.dumps(layout)


def _panel_grid(rows: int, cols: int, titles: tuple[str, ...]) -> dict:
    """The layout of a ``rows`` x ``cols`` grid of panels titled ``titles`` (axes and title annotations), made by
    plotly's ``make_subplots`` once per shape and handed out as a new dict each time."""
    return json.loads(_panel_grid_of(rows, cols, titles))


LABEL_APART = 0.07
"""How far apart (a share of the axes' spans) two labelled points of the precision-recall chart must be."""


def _apart(first: pd.DataFrame, pr: pd.DataFrame, label_ks: Sequence[int]) -> set[int]:
    """The ``label_ks`` whose points on ``first`` (a run of ``pr``) stand at least :data:`LABEL_APART` of the axes
    from the last one labelled: at the deep end K=20, 50 and 100 crowd into one corner, and their labels overlapped
    (the hover names K on every point)."""
    spans = [max(float(pr[c].max() - pr[c].min()), 1e-9) for c in ("recall", "precision")]
    kept: set[int] = set()
    last: tuple[float, float] | None = None
    for k, x, y in zip(first["k"], first["recall"], first["precision"]):
        if k not in label_ks:
            continue
        point = (float(x) / spans[0], float(y) / spans[1])
        if last is None or math.dist(point, last) >= LABEL_APART:
            kept.add(int(k))
            last = point
    return kept


def _fitted(values: pd.Series) -> dict[str, object]:
    """An axis that fits ``values``; where they are all one value (every run's recall 1 at every K), a narrow range
    around it within [0, 1] (Plotly's autorange pads a single value by 1 on each side: recall read 0 to 2)."""
    if len(values) and float(values.max() - values.min()) < 1e-9:
        middle = float(values.iloc[0])
        return {"range": [max(0.0, middle - 0.1), min(1.0, middle + 0.1) + 0.02], "autorange": False}
    return {"autorange": True}


def pr_figure(
    pr: pd.DataFrame,
    runs: Sequence[str] | None = None,
    label_ks: Sequence[int] = PR_LABEL_KS,
    every: Sequence[str] | None = None,
) -> go.Figure:
    """Precision@K against Recall@K, one line per run; the first run's points at ``label_ks`` are labelled
    ``K=…`` (every run's would pile up on each other; the hover names K on every point). Axes fit the data."""
    runs = runs_in(pr, runs)
    colors = run_colors(runs, every)
    fig = go.Figure()
    shown = set(label_ks)
    labelled = _apart(pr[pr["run"] == runs[0]], pr, label_ks) if runs else set()
    for i, run in enumerate(runs):
        data = pr[pr["run"] == run]
        fig.add_trace(
            go.Scatter(
                x=data["recall"].tolist(),
                y=data["precision"].tolist(),
                mode="lines+markers+text" if i == 0 else "lines+markers",  # text nodes only where labels are
                marker={"size": [8 if k in shown else 3 for k in data["k"]], "color": colors[run]},
                line={"color": colors[run], "width": 2},
                text=[label if k in labelled else "" for k, label in zip(data["k"], data["label"])] if i == 0 else None,
                textposition=_TEXT_POSITIONS[i % len(_TEXT_POSITIONS)],
                textfont={"size": 10, "color": colors[run]},
                customdata=data["k"].tolist(),
                name=safe(run),
                hovertemplate="K=%{customdata}<br>Recall=%{x:.3f}<br>Precision=%{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(title_text="Recall@K", **_fitted(pr["recall"]))
    fig.update_yaxes(title_text="Precision@K", **_fitted(pr["precision"]))
    base_layout(fig, 420)
    fig.update_layout(title={"text": "Precision–recall over K"})
    return fig
