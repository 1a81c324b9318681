"""Quality against context cost: for each run, a metric at K against the tokens its top K chunks put in the
model's context (the run's chunk texts, else the corpus; the tokenizer named), one point per run with the 95%
bootstrap interval of the metric. Chunkings of one corpus compare fairly here: bigger chunks win recall@K by
holding more text, and the x axis shows what that text costs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.bootstrap import bootstrap_ci
from dashboard.core.charts import base_layout, run_colors, safe
from dashboard.core.results import Alignment
from dashboard.core.specs import MetricSpec
from ragmetrics.engine.budgets import tokenizer, tokens_at_depth

COST_COLUMNS = ["run", "tokens", "tokens_ci_low", "tokens_ci_high", "mean", "ci_low", "ci_high", "tokenizer"]


def cost_frame(alignments: Sequence[Alignment], spec: MetricSpec, k: int) -> pd.DataFrame:
    """One row per run: the mean tokens of its top ``k`` chunks per query and their 95% interval, the mean of
    ``spec`` and its 95% interval, and the tokenizer that counted. A run whose chunks have no text (in the run or
    the corpus) raises the library's error, never a 0."""
    rows = []
    for alignment in alignments:
        counted = tokens_at_depth(alignment, k)
        values = alignment.value(spec)
        mean, low, high = bootstrap_ci(np.column_stack([counted, np.asarray(values, dtype=np.float64)]))
        rows.append(
            {"run": alignment.name, "tokens": float(mean[0]), "tokens_ci_low": float(low[0]),
             "tokens_ci_high": float(high[0]), "mean": float(mean[1]), "ci_low": float(low[1]),
             "ci_high": float(high[1]), "tokenizer": tokenizer(alignment).name}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def cost_figure(frame: pd.DataFrame, spec: MetricSpec, k: int) -> go.Figure:
    """The metric against the mean context tokens, one point per run, both intervals as error bars."""
    runs = frame["run"].tolist()
    colors = run_colors(runs)
    traces = []
    for row in frame.itertuples(index=False):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "x": [row.tokens],
                "y": [row.mean],
                "text": [safe(row.run)],
                "textposition": "top center",
                "name": safe(row.run),
                "marker": {"size": 12, "color": colors[row.run]},
                "error_y": {"type": "data", "symmetric": False, "array": [row.ci_high - row.mean],
                            "arrayminus": [row.mean - row.ci_low]},
                "error_x": {"type": "data", "symmetric": False, "array": [row.tokens_ci_high - row.tokens],
                            "arrayminus": [row.tokens - row.tokens_ci_low]},
                "hovertemplate": f"{safe(row.run)}<br>{spec.title} %{{y:.3f}}<br>%{{x:,.0f}} tokens in the top {k}"
                "<extra></extra>",
            }
        )  # fmt: skip
    tokenizer_name = frame["tokenizer"].iloc[0] if len(frame) else ""
    fig = go.Figure(data=traces)
    base_layout(fig, 420)
    fig.update_layout(title={"text": f"{spec.title} against the context it costs"}, showlegend=False)
    fig.update_xaxes(title_text=f"mean tokens in the top {k} chunks ({tokenizer_name})", rangemode="tozero")
    fig.update_yaxes(title_text=spec.title, range=[0, 1.05])
    return fig
