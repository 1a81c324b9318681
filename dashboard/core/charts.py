"""What every figure shares: one colour per run, the base layout, and escaping of user text in labels.

Conventions every figure follows: one colour per run, stable across figures (the run's position in ``runs``);
a trace's ``name`` is the run name (escaped with :func:`safe`), and helper traces (confidence bands) are named
``"<run> · 95% CI"`` with ``showlegend=False``, so tests and the browser can tell them apart.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

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
FONT = "Source Sans Pro, Noto Sans CJK SC, Noto Sans, sans-serif"


def safe(text: object) -> str:
    """User text for a plotly label: ``<`` and ``&`` escaped, so no markup from a file is rendered."""
    return html.escape(str(text), quote=False)


def run_colors(runs: Sequence[str], every: Sequence[str] | None = None) -> dict[str, str]:
    """Each run's colour: by its place among ``every`` run of the dataset (stored order) when given, so a run keeps
    its colour whichever others are selected; else by its place in ``runs``."""
    order = {run: i for i, run in enumerate(dict.fromkeys(every or ()))}
    return {run: PALETTE[order.get(run, i) % len(PALETTE)] for i, run in enumerate(runs)}


def rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def base_layout_settings(height: int) -> dict[str, object]:
    """Height, margins, font and full run names in hover labels. A figure keeps the template it was made with
    (Streamlit's own, the process default), which the browser restyles to the page's theme: a template set here
    would be validated again for every figure and sent with it, and then restyled all the same."""
    return {
        "height": height,
        "margin": {"l": 50, "r": 20, "t": 50, "b": 50},
        "font": {"family": FONT},
        "hoverlabel": {"namelength": -1},
    }


def base_layout(fig: go.Figure, height: int) -> None:
    """:func:`base_layout_settings` applied to ``fig``."""
    fig.update_layout(base_layout_settings(height))


def runs_in(frame: pd.DataFrame, runs: Sequence[str] | None) -> list[str]:
    """The runs of ``frame`` in the order of ``runs`` (all of them, in frame order, when None)."""
    present = list(dict.fromkeys(frame["run"])) if "run" in frame.columns else []
    return [r for r in runs if r in present] if runs is not None else present


def query_count_bars(
    counts: dict[str, tuple[list, list]], *, title: str, height: int, hovertemplate: str | None = None
) -> go.Figure:
    """Grouped bars of query counts, one trace per run (``counts``: run -> (x, y)) in the run's colour."""
    colors = run_colors(list(counts))
    fig = go.Figure()
    for run, (x, y) in counts.items():
        fig.add_trace(go.Bar(x=x, y=y, name=safe(run), marker={"color": colors[run]}, hovertemplate=hovertemplate))
    fig.update_layout(barmode="group", title={"text": title})
    fig.update_yaxes(title_text="queries")
    base_layout(fig, height)
    return fig


DASHBOARD_TRACES = frozenset({"scatter", "bar"})
"""The trace types the dashboard's figures are made of: what a bundle of Plotly's JavaScript must draw (Plotly's
"basic" bundle draws them too). tests/dashboard/test_figures.py checks every figure builder against it."""


def trace_types(fig: go.Figure) -> set[str]:
    """The trace types of ``fig`` (``scatter`` for a trace that names none, as plotly.js reads it)."""
    return {str(getattr(trace, "type", None) or "scatter") for trace in fig.data}


def classic_drawable(fig: go.Figure, bundle_traces: frozenset[str] | None) -> bool:
    """Whether a bundle drawing ``bundle_traces`` (None: every type, the full bundle) draws every trace of ``fig``."""
    return bundle_traces is None or trace_types(fig) <= bundle_traces
