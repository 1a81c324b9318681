"""Quality against context cost: for each run, a metric at K against the tokens its top K chunks put in the
model's context (the run's chunk texts, else the corpus; the tokenizer named), one point per run with the 95%
intervals of both means (:func:`ragmetrics.analysis.stats.mean_interval`). Chunkings of one corpus compare fairly here: bigger chunks win recall@K by
holding more text, and the x axis shows what that text costs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import base_layout, run_colors, safe
from dashboard.core.intervals import mean_ci
from dashboard.core.results import Alignment
from dashboard.core.specs import MetricSpec
from dashboard.core.text import md_escape
from ragmetrics.analysis.chunkings import EVIDENCE_WORDS, ChunkingComparison
from ragmetrics.analysis.compare import intervals_name
from ragmetrics.analysis.stats import delta_interval_method, family_text
from ragmetrics.analysis.verdicts import VERDICT_TERMS
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
        mean, low, high = mean_ci(np.column_stack([counted, np.asarray(values, dtype=np.float64)]), within=None)
        rows.append(
            {"run": alignment.name, "tokens": float(mean[0]), "tokens_ci_low": float(low[0]),
             "tokens_ci_high": float(high[0]), "mean": float(mean[1]), "ci_low": float(low[1]),
             "ci_high": float(high[1]), "tokenizer": tokenizer(alignment).name}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def _fitted(low: float, high: float, floor: float, ceiling: float | None) -> list[float]:
    """An axis range around ``[low, high]`` with a margin, within ``[floor, ceiling]``: close runs stay apart."""
    span = max(high - low, 1e-9)
    start = max(floor, low - 0.15 * span - 1e-3)
    end = high + 0.15 * span + 1e-3
    return [start, min(end, ceiling) if ceiling is not None else end]


def cost_figure(frame: pd.DataFrame, spec: MetricSpec, k: int) -> go.Figure:
    """The metric against the mean context tokens, one point per run (named in the legend), both intervals as error
    bars; the axes fit the points, so runs a few tokens or points apart are told apart."""
    runs = frame["run"].tolist()
    colors = run_colors(runs)
    traces = []
    for row in frame.itertuples(index=False):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [row.tokens],
                "y": [row.mean],
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
    fig.update_layout(title={"text": f"{spec.title} against the context it costs"}, showlegend=True)
    fig.update_xaxes(title_text=f"mean tokens in the top {k} chunks ({tokenizer_name})")
    fig.update_yaxes(title_text=spec.title)
    if len(frame):
        fig.update_xaxes(range=_fitted(frame["tokens_ci_low"].min(), frame["tokens_ci_high"].max(), 0.0, None))
        fig.update_yaxes(range=_fitted(frame["ci_low"].min(), frame["ci_high"].max(), 0.0, 1.0 + 1e-3))
    return fig


# --- chunkings compared ----------------------------------------------------------------------------------------

CHUNKING_COLUMNS = ["level", "metric", "run", "n", "mean", "delta", "ci_low_adjusted", "ci_high_adjusted",
                    "p_value_corrected", "verdict"]  # fmt: skip
CHUNKING_NUMBERS = {"mean": "mean", "delta": "Δ vs baseline", "ci_low_adjusted": "Δ CI low (corrected as p)",
                    "ci_high_adjusted": "Δ CI high (corrected as p)", "p_value_corrected": "p (corrected)"}  # fmt: skip
"""The table's number columns and their headings: the interval beside the corrected p-value is corrected the same
way (:func:`ragmetrics.analysis.compare.adjusted_level`)."""


def is_chunk_run(alignment: Alignment) -> bool:
    """True when the run's rows are chunks of documents (it names each chunk's document: ``source_doc``)."""
    return "source_doc" in alignment.run.table.column_names


def chunking_frame(found: ChunkingComparison) -> pd.DataFrame:
    """The comparison's rows, document level first, with the mean tokens of each run's top K chunks beside."""
    table = found.table[CHUNKING_COLUMNS].copy()
    table["verdict"] = table["verdict"].map(VERDICT_TERMS)  # the words of every table, never the code
    tokens = found.tokens.set_index("run")["mean_tokens"]
    table.insert(3, f"tokens in top {found.k}", table["run"].map(tokens).round(1))
    return table


def chunking_verdict(found: ChunkingComparison) -> str:
    """The winner at equal token cost, in the library's words (names escaped for markdown)."""
    return md_escape(found.summary)


def chunking_caption(found: ChunkingComparison) -> str:
    """What the table reads: the two levels, the evidence, the family, the tokenizer."""
    return md_escape(
        f"Document level: chunks merged into their documents (a document ranks at its first chunk), read against "
        f"the qrels at K = {found.k} and within {found.budget} tokens. Span level: the share of the gold evidence "
        f"the chunks hand over; evidence: {EVIDENCE_WORDS[found.evidence]}. Δ against {found.baseline} on the same "
        f"queries, with its {intervals_name(found.correction, found.alpha)} ({delta_interval_method(found.correction)}); "
        f"p-values {family_text(found.correction, found.family_size)} (every run × metric × level of the table). "
        f"Tokens counted with {found.tokenizer}."
    )
