"""Timeline: a dataset's stored runs in time (or tag) order, built on :func:`ragmetrics.analysis.history.timeline`.

The figure draws the chosen metric's mean per run with its 95% CI band, the significant drops in red and the
pinned baseline's level as a dashed line; the table gives each step's difference, CI and p-value against the run
before and the baseline, with a link that opens Compare on that step (the previous run as baseline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import BAND_SUFFIX, PALETTE, base_layout, rgba, safe
from dashboard.core.compare import format_p, p_equals
from dashboard.core.share import ViewState, share_query
from ragmetrics.analysis.compare import bounds_text, interval_at_level, intervals_name, mean_bounds_text
from ragmetrics.analysis.history import DATE_TAG, StoredRun, Timeline
from ragmetrics.analysis.verdicts import SAID

__all__ = [
    "ALL",
    "DROP_TRACE",
    "MEAN_TRACE",
    "drop_message",
    "intervals_name",
    "order_choices",
    "step_links",
    "tag_filters",
    "timeline_figure",
    "timeline_table",
]

ALL = "All runs"
MEAN_TRACE = "mean"
DROP_TRACE = "significant drop"
BASELINE_TRACE = "baseline"


def order_choices(runs: Sequence[StoredRun]) -> list[str]:
    """What the runs can be ordered by: ``date``, then every tag key some run has."""
    keys = sorted({k for r in runs for k in r.tags} - {DATE_TAG})
    return [DATE_TAG, *keys]


def tag_filters(runs: Sequence[StoredRun], keys: Sequence[str] = ("branch", "system")) -> list[str]:
    """``KEY=VALUE`` filters the runs offer: the values of ``keys`` first, then of every other tag with 2 to 20
    values (a tag every run shares, or one per run, filters nothing useful)."""
    values: dict[str, set[str]] = {}
    for run in runs:
        for key, value in run.tags.items():
            values.setdefault(key, set()).add(value)
    first = [k for k in keys if k in values]
    rest = sorted(k for k, v in values.items() if k not in first and 2 <= len(v) <= 20)
    return [f"{k}={v}" for k in [*first, *rest] for v in sorted(values[k])]


def timeline_figure(line: Timeline, label: str) -> go.Figure:
    """Mean per step with its 95% CI band; significant drops marked; the pinned baseline's mean dashed."""
    frame = line.frame
    fig = go.Figure()
    x = [f"{int(s)} · {safe(o)}" for s, o in zip(frame["step"], frame["order"])]
    color = PALETTE[0]
    if len(frame):
        fig.add_trace(
            go.Scatter(
                x=[*x, *x[::-1]],
                y=[*frame["ci_high"], *frame["ci_low"][::-1]],
                fill="toself",
                fillcolor=rgba(color, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                name=MEAN_TRACE + BAND_SUFFIX,
                showlegend=False,
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=frame["mean"],
            mode="lines+markers",
            name=MEAN_TRACE,
            line={"color": color},
            customdata=[safe(r) for r in frame["run"]],
            hovertemplate="%{x}<br>%{customdata}: %{y:.4f}<extra></extra>",
        )
    )
    drops = frame[frame["drop"].astype(bool)] if len(frame) else frame
    if len(drops):
        fig.add_trace(
            go.Scatter(
                x=[x[int(i)] for i in drops.index],
                y=drops["mean"],
                mode="markers",
                name=DROP_TRACE,
                marker={"color": "#d62728", "size": 14, "symbol": "x"},
                hovertemplate="significant drop: %{y:.4f}<extra></extra>",
            )
        )
    if line.baseline:
        base = frame.loc[frame["run_id"] == line.baseline, "mean"]
        if len(base):
            fig.add_hline(y=float(base.iloc[0]), line_dash="dash", line_color="#7f7f7f", annotation_text=BASELINE_TRACE)
    base_layout(fig, 420)
    fig.update_layout(
        title=f"{safe(label)} over {len(frame)} run(s), by {safe(line.by)}",
        xaxis_title=f"step · {safe(line.by)}",
        yaxis_title=safe(label),
        xaxis={"type": "category"},
    )
    return fig


def step_view(line: Timeline, view: ViewState, step: int) -> ViewState | None:
    """The Compare view of step ``step`` (1-based): its run against the one before it; None for the first step or
    one the timeline does not have."""
    ids = list(line.frame["run_id"])
    if not 1 < step <= len(ids):
        return None
    before, after = ids[step - 2], ids[step - 1]
    return view.with_(page="compare", runs=(before, after), baseline=before, focus_run=after, query=None)


def step_links(line: Timeline, view: ViewState) -> list[str]:
    """Per step, the ``compare?...`` link (relative to the app's root) of that run against the one before it
    ("" for the first)."""
    views = [step_view(line, view, step) for step in range(1, len(line.frame) + 1)]
    return ["" if state is None else share_query(state) for state in views]


def clicked_step(points: Sequence[Mapping[str, Any]]) -> int | None:
    """The step of the first clicked point of :func:`timeline_figure` (its x label starts with the step)."""
    for point in points:
        head = str(point.get("x", "")).split(" · ", 1)[0]
        if head.isdigit():
            return int(head)
    return None


def timeline_table(line: Timeline, links: Sequence[str] = (), tags: Sequence[str] = ()) -> pd.DataFrame:
    """One row per step: ``step, order, run, mean, CI, delta, its CI, p, verdict``, the baseline's ``vs baseline``
    and ``p vs baseline``, the chosen ``tags`` and the ``compare`` link."""
    frame = line.frame
    rows = []
    for i, row in enumerate(frame.itertuples(index=False)):
        first = i == 0
        verdict = "" if first else SAID[row.verdict].step
        out: dict[str, object] = {
            "step": int(row.step),
            line.by: row.order,
            "run": row.run,
            "mean": row.mean,
            "95% CI": mean_bounds_text(row.ci_low, row.ci_high),
            "Δ previous": row.delta,
            f"Δ {intervals_name(line.correction, line.alpha)}": ""
            if first
            else bounds_text(row.delta_low, row.delta_high),
            "p": None if first else format_p(row.p_value_corrected),  # as Compare writes it: <0.0001, not 1.29e-7
            "verdict": verdict,
        }
        if line.baseline:
            out["Δ baseline"] = row.baseline_delta
            out["p baseline"] = (
                None if pd.isna(row.baseline_p_value_corrected) else format_p(row.baseline_p_value_corrected)
            )
        for key in tags:
            out[f"tag: {key}"] = line.tags.get(row.run_id, {}).get(key, "")
        out["compare"] = links[i] if i < len(links) and links[i] else None
        out["run id"] = row.run_id
        rows.append(out)
    return pd.DataFrame(rows)


def drop_message(line: Timeline, label: str) -> str | None:
    """What the page says about the first significant drop (None without one)."""
    first = line.first_drop
    if first is None:
        return None
    row = line.frame.iloc[first - 1]
    before = line.frame.iloc[first - 2]
    p = row.p_value_corrected
    return (
        f"First significant drop at step {first} ({row.order}): {label} {before['mean']:.4f} → {row['mean']:.4f} "
        f"(Δ {row.delta:+.4f}, {interval_at_level(line.correction, row.delta_level)} "
        f"{bounds_text(row.delta_low, row.delta_high)}, "
        f"{p_equals(p)}) in run “{row.run}”."
    )
