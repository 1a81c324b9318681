"""Plotly figure builders: frames from :mod:`dashboard.core.frames` in, figures out; no Streamlit.

Conventions every figure follows: one colour per run, stable across figures
(the run's position in ``runs``); a trace's ``name`` is the run name, and
helper traces (confidence bands) are named ``"<run> · 95% CI"`` with
``showlegend=False``, so tests and the browser can tell them apart.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from dashboard.core.evaluation import metric_title, pretty
from dashboard.core.frames import CURVE_PANEL_METRICS

PALETTE: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
BAND_SUFFIX = " · 95% CI"
PR_LABEL_KS: tuple[int, ...] = (1, 5, 10, 20, 50, 100)
_TEXT_POSITIONS = ("top right", "bottom left", "middle right", "top left", "bottom right")
FONT = "Source Sans Pro, Noto Sans CJK SC, Noto Sans, sans-serif"
TEMPLATE = pio.templates["plotly_white"]  # built with this module, not by the first chart a page draws


def safe(text: object) -> str:
    """User text for a plotly label: ``<`` and ``&`` escaped, so no markup from a file is rendered."""
    return html.escape(str(text), quote=False)


def run_colors(runs: Sequence[str]) -> dict[str, str]:
    return {run: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _base_layout(fig: go.Figure, height: int) -> None:
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin={"l": 50, "r": 20, "t": 50, "b": 50},
        font={"family": FONT},
        hoverlabel={"namelength": -1},
    )


def _runs_in(frame: pd.DataFrame, runs: Sequence[str] | None) -> list[str]:
    present = list(dict.fromkeys(frame["run"])) if "run" in frame.columns else []
    return [r for r in runs if r in present] if runs is not None else present


def curves_figure(
    curves: pd.DataFrame,
    metrics: Sequence[str] = CURVE_PANEL_METRICS,
    runs: Sequence[str] | None = None,
    *,
    k_mark: int | None = None,
    log_x: bool | None = None,
) -> go.Figure:
    """Small multiples of metric@K against K, one line per run with its 95% bootstrap band.

    ``curves`` is :func:`dashboard.core.frames.curve_frame`. Panels follow
    ``metrics`` in a grid of three columns; the legend sits in the free cell.
    ``k_mark`` draws a dotted vertical line at the chosen K.
    """
    runs = _runs_in(curves, runs)
    colors = run_colors(runs)
    cols = 3
    rows = max(1, -(-len(metrics) // cols))
    titles = [f"{metric_title(m)}@K" for m in metrics]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.07, vertical_spacing=0.2)
    k_max = int(curves["k"].max()) if len(curves) else 10
    if log_x is None:
        log_x = k_max > 20
    for i, metric in enumerate(metrics):
        row, col = i // cols + 1, i % cols + 1
        part = curves[curves["metric"] == metric]
        for run in runs:
            data = part[part["run"] == run]
            if data.empty:
                continue
            ks = data["k"].tolist()
            fig.add_trace(
                go.Scatter(
                    x=ks + ks[::-1],
                    y=data["ci_high"].tolist() + data["ci_low"].tolist()[::-1],
                    fill="toself",
                    fillcolor=_rgba(colors[run], 0.15),
                    line={"width": 0},
                    hoverinfo="skip",
                    name=safe(run) + BAND_SUFFIX,
                    legendgroup=run,
                    showlegend=False,
                ),
                row=row,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=ks,
                    y=data["value"].tolist(),
                    mode="lines",
                    line={"color": colors[run], "width": 2},
                    name=safe(run),
                    legendgroup=run,
                    showlegend=i == 0,
                    customdata=list(zip(data["ci_low"], data["ci_high"])),
                    hovertemplate=f"{metric_title(metric)}@%{{x}} = %{{y:.3f}}"
                    "<br>95% CI %{customdata[0]:.3f}–%{customdata[1]:.3f}<extra>%{fullData.name}</extra>",
                ),
                row=row,
                col=col,
            )
        axis_type = "log" if log_x else "linear"
        tickvals = [v for v in (1, 2, 5, 10, 20, 50, 100) if v <= k_max] if log_x else None
        fig.update_xaxes(type=axis_type, tickvals=tickvals, title_text="K", row=row, col=col)
        fig.update_yaxes(range=[0, 1.02], row=row, col=col)
        if k_mark is not None:
            fig.add_vline(x=k_mark, line_dash="dot", line_color="#888", row=row, col=col)  # type: ignore[arg-type]
    _base_layout(fig, 300 * rows + 60)
    free = rows * cols - len(metrics)
    if free > 0:
        fig.update_layout(
            legend={
                "x": 1.0 - free / cols + 0.04,
                "y": 0.42,
                "xanchor": "left",
                "yanchor": "top",
                "title": {"text": "runs"},
            }
        )
    return fig


def pr_figure(pr: pd.DataFrame, runs: Sequence[str] | None = None, label_ks: Sequence[int] = PR_LABEL_KS) -> go.Figure:
    """Precision@K against Recall@K, one line per run, points labelled ``K=…`` at ``label_ks``."""
    runs = _runs_in(pr, runs)
    colors = run_colors(runs)
    fig = go.Figure()
    shown = set(label_ks)
    for i, run in enumerate(runs):
        data = pr[pr["run"] == run]
        fig.add_trace(
            go.Scatter(
                x=data["recall"].tolist(),
                y=data["precision"].tolist(),
                mode="lines+markers+text",
                marker={"size": [8 if k in shown else 3 for k in data["k"]], "color": colors[run]},
                line={"color": colors[run], "width": 2},
                text=[label if k in shown else "" for k, label in zip(data["k"], data["label"])],
                textposition=_TEXT_POSITIONS[i % len(_TEXT_POSITIONS)],
                textfont={"size": 10, "color": colors[run]},
                customdata=data["k"].tolist(),
                name=safe(run),
                hovertemplate="K=%{customdata}<br>Recall=%{x:.3f}<br>Precision=%{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(title_text="Recall@K", range=[0, 1.02])
    fig.update_yaxes(title_text="Precision@K", range=[0, 1.05])
    _base_layout(fig, 420)
    fig.update_layout(title={"text": "Precision–recall over K"})
    return fig


def group_label(group: str, n: int, too_few: bool) -> str:
    return f"{safe(group)}<br>n={n}" + (" ⚠ too few" if too_few else "")


def breakdown_figure(
    breakdown: pd.DataFrame,
    metric: str,
    by: str = "category",
    runs: Sequence[str] | None = None,
) -> go.Figure:
    """Grouped bars of one metric per group, runs side by side, with 95% CI error bars.

    ``breakdown`` is :func:`dashboard.core.frames.breakdown_frame`. Tick labels
    carry n; groups flagged ``too_few`` are hatched and labelled "⚠ too few".
    """
    runs = _runs_in(breakdown, runs)
    colors = run_colors(runs)
    groups = list(dict.fromkeys(breakdown["group"]))
    sizes = breakdown.groupby("group", sort=False)["n"].max()
    flags = breakdown.groupby("group", sort=False)["too_few"].any()
    labels = {g: group_label(str(g), int(sizes[g]), bool(flags[g])) for g in groups}
    fig = go.Figure()
    for run in runs:
        data = breakdown[breakdown["run"] == run].set_index("group").reindex(groups)
        mean = data["mean"].astype(float)
        fig.add_trace(
            go.Bar(
                x=[labels[g] for g in groups],
                y=mean.tolist(),
                name=safe(run),
                marker={
                    "color": colors[run],
                    "pattern": {"shape": ["/" if f else "" for f in data["too_few"].fillna(False)]},
                    "opacity": [0.55 if f else 1.0 for f in data["too_few"].fillna(False)],
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (data["ci_high"].astype(float) - mean).clip(lower=0).fillna(0).tolist(),
                    "arrayminus": (mean - data["ci_low"].astype(float)).clip(lower=0).fillna(0).tolist(),
                    "thickness": 1.2,
                    "width": 3,
                },
                customdata=list(zip(data["n"].fillna(0).astype(int), data["ci_low"], data["ci_high"])),
                hovertemplate="%{x}<br>mean %{y:.3f} (n=%{customdata[0]})"
                "<br>95% CI %{customdata[1]:.3f}–%{customdata[2]:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    label = pretty(metric)
    fig.update_layout(barmode="group", title={"text": f"{label} by {by}"}, bargap=0.25)
    fig.update_yaxes(title_text=label, range=[0, 1.08])
    fig.update_xaxes(title_text=by)
    _base_layout(fig, 420)
    if bool(flags.any()):
        fig.add_annotation(
            text="hatched ⚠: fewer than 10 queries, too few to tell",
            xref="paper",
            yref="paper",
            x=1,
            y=1.08,
            showarrow=False,
            xanchor="right",
            font={"size": 11, "color": "#666"},
        )
    return fig


def rank_histogram_figure(
    tables: dict[str, pd.DataFrame], k: int, runs: Sequence[str] | None = None, limit: int = 20
) -> go.Figure:
    """Where the first relevant document sits, per run: ranks 1..limit, ``>limit`` and ``none``.

    ``tables`` maps a run to its :func:`dashboard.core.frames.query_table`.
    """
    buckets = [str(i) for i in range(1, limit + 1)] + [f">{limit}", "none"]
    counts: dict[str, tuple[list, list]] = {}
    for run in [r for r in (runs or list(tables)) if r in tables]:
        ranks = tables[run].loc[tables[run]["n_relevant"] > 0, "first_relevant_rank"]
        per_rank = [int((ranks == i).sum()) for i in range(1, limit + 1)]
        counts[run] = (buckets, per_rank + [int((ranks > limit).sum()), int((ranks <= 0).sum())])
    fig = _query_count_bars(counts, title=f"Rank of the first relevant document (dotted: K={k})", height=360)
    fig.add_vline(x=k - 0.5, line_dash="dot", line_color="#888")
    fig.update_xaxes(title_text="rank", type="category")
    return fig


def depth_figure(depths: pd.DataFrame, runs: Sequence[str] | None = None) -> go.Figure:
    """Queries per number of documents retrieved, one bar colour per run (:func:`dashboard.core.frames.depth_frame`).

    A run cut short for some queries, or missing some, shows here before any metric is read."""
    counts = {}
    for run in _runs_in(depths, runs):
        part = depths[depths["run"] == run]
        counts[run] = (part["retrieved"].tolist(), part["queries"].tolist())
    fig = _query_count_bars(
        counts,
        title="Documents retrieved per query",
        height=300,
        hovertemplate="%{y:,} queries with %{x} documents<extra>%{fullData.name}</extra>",
    )
    fig.update_layout(showlegend=True)
    fig.update_xaxes(title_text="documents retrieved (after merging chunks)", rangemode="tozero")
    return fig


def _query_count_bars(
    counts: dict[str, tuple[list, list]], *, title: str, height: int, hovertemplate: str | None = None
) -> go.Figure:
    """Grouped bars of query counts, one trace per run (``counts``: run -> (x, y)) in the run's colour."""
    colors = run_colors(list(counts))
    fig = go.Figure()
    for run, (x, y) in counts.items():
        fig.add_trace(go.Bar(x=x, y=y, name=safe(run), marker={"color": colors[run]}, hovertemplate=hovertemplate))
    fig.update_layout(barmode="group", title={"text": title})
    fig.update_yaxes(title_text="queries")
    _base_layout(fig, height)
    return fig
