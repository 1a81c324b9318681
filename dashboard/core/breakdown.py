"""Breakdown: one metric per category or difficulty, runs side by side, n per group, 95% CI error bars.

Groups with fewer than :data:`ragmetrics.analysis.compare.MIN_GROUP` queries are flagged "too few to tell".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import base_layout, run_colors, runs_in, safe
from dashboard.core.intervals import mean_ci
from dashboard.core.queries import NO_GROUP, group_values
from dashboard.core.results import Alignment, facets
from dashboard.core.specs import title
from ragmetrics.analysis.compare import MIN_GROUP
from ragmetrics.engine.metrics import MetricSpec

__all__ = ["BREAKDOWN_COLUMNS", "MIN_GROUP", "breakdown_figure", "breakdown_frame", "group_label"]

BREAKDOWN_COLUMNS = ["run", "group", "n", "mean", "ci_low", "ci_high", "too_few"]


def _groups(alignment: Alignment, by: str) -> tuple[np.ndarray, list[str]]:
    """Each evaluated query's group and the groups in display order."""
    if by in ("category", "difficulty"):
        return facets(alignment)[by].to_numpy(), group_values(alignment.dataset, by)
    table = alignment.dataset.queries_table
    column = table.column(by).to_pandas() if by in table.column_names else pd.Series([None] * table.num_rows)
    labels = pd.Series(column.to_numpy(), index=pd.Index(table.column("query_id").to_pandas(), dtype="str"))
    values = labels.reindex(pd.Index(alignment.query_ids, dtype="str")).fillna("").astype("str").replace("", NO_GROUP)
    groups = values.to_numpy()
    return groups, sorted(set(groups))


def breakdown_frame(
    alignments: Sequence[Alignment], spec: MetricSpec, by: str = "category", *, min_n: int = MIN_GROUP
) -> pd.DataFrame:
    """Mean and 95% CI of one metric per group and run.

    ``by`` is ``category`` or ``difficulty`` (or any query column). Returns ``run, group, n, mean, ci_low,
    ci_high, too_few`` with groups in display order; ``too_few`` is True when n < ``min_n``.
    """
    rows = []
    for alignment in alignments:
        values = alignment.value(spec)
        groups, order = _groups(alignment, by)
        for group in order:
            mask = groups == group
            n = int(mask.sum())
            if n == 0:
                continue
            mean, low, high = mean_ci(values[mask])
            rows.append(
                {
                    "run": alignment.name,
                    "group": group,
                    "n": n,
                    "mean": float(mean[0]),
                    "ci_low": float(low[0]),
                    "ci_high": float(high[0]),
                    "too_few": n < min_n,
                }
            )
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)


def group_label(group: str, n: int, too_few: bool) -> str:
    return f"{safe(group)}<br>n={n}" + (" ⚠ too few" if too_few else "")


def breakdown_figure(
    breakdown: pd.DataFrame,
    metric: MetricSpec,
    by: str = "category",
    runs: Sequence[str] | None = None,
    every: Sequence[str] | None = None,
) -> go.Figure:
    """Grouped bars of one metric per group, runs side by side, with 95% CI error bars.

    ``breakdown`` is :func:`breakdown_frame`. Tick labels carry n; groups flagged ``too_few`` are hatched and
    labelled "⚠ too few".
    """
    runs = runs_in(breakdown, runs)
    colors = run_colors(runs, every)
    groups = list(dict.fromkeys(breakdown["group"]))
    sizes = breakdown.groupby("group", sort=False)["n"].max()
    flags = breakdown.groupby("group", sort=False)["too_few"].any()
    labels = {g: group_label(str(g), int(sizes[g]), bool(flags[g])) for g in groups}
    fig = go.Figure()
    for run in runs:
        data = breakdown[breakdown["run"] == run].set_index("group").reindex(groups)
        mean = data["mean"].astype(float)
        too_few = data["too_few"].astype("boolean").fillna(False).astype(bool)
        fig.add_trace(
            go.Bar(
                x=[labels[g] for g in groups],
                y=mean.tolist(),
                name=safe(run),
                marker={
                    "color": colors[run],
                    "pattern": {"shape": ["/" if f else "" for f in too_few]},
                    "opacity": [0.55 if f else 1.0 for f in too_few],
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
    label = title(metric)
    fig.update_layout(barmode="group", title={"text": f"{label} by {by}"}, bargap=0.25)
    fig.update_yaxes(title_text=label, range=[0, 1.08])
    fig.update_xaxes(title_text=by)
    base_layout(fig, 420)
    if bool(flags.any()):
        fig.add_annotation(
            text=f"hatched ⚠: fewer than {MIN_GROUP} queries, too few to tell",
            xref="paper",
            yref="paper",
            x=1,
            y=1.08,
            showarrow=False,
            xanchor="right",
            font={"size": 11, "color": "#666"},
        )
    return fig
