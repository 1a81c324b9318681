"""Diagnosis: the library's deterministic rules (:mod:`ragmetrics.analysis.diagnosis`) over each run at K, and where
the first relevant document sits."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import query_count_bars
from dashboard.core.missed import deep_k, query_table
from dashboard.core.results import Alignment
from dashboard.core.specs import MetricSpec
from ragmetrics.analysis.diagnosis import (
    LOW_MRR,
    THRESHOLDS,
    Advice,
    Finding,
    RunTraits,
    diagnose,
    evidence_words,
    findings_frame,
    run_traits,
)

__all__ = [
    "LOW_MRR",
    "THRESHOLDS",
    "Advice",
    "Finding",
    "RunTraits",
    "evidence_words",
    "findings_frame",
    "rank_histogram_figure",
    "run_findings",
    "run_traits",
    "suggests_bm25",
]


def suggests_bm25(traits: RunTraits) -> bool:
    """Whether fusing the run with BM25 can help: not for a run that is fused already, nor for a lexical one."""
    return not traits.fused and not traits.lexical


def run_findings(
    alignment: Alignment,
    k: int,
    spec: MetricSpec,
    label: str,
    low_mrr: float = LOW_MRR,
    table: pd.DataFrame | None = None,
    traits: RunTraits | None = None,
) -> list[Finding]:
    """Plain-language findings for one run at K: :func:`ragmetrics.analysis.diagnosis.diagnose` over its
    :func:`dashboard.core.missed.query_table` (pass ``table`` when it is at hand), advice fitted to ``traits``
    (default: :func:`ragmetrics.analysis.diagnosis.run_traits` of the run without tags)."""
    table = query_table(alignment, k, spec) if table is None else table
    traits = traits or run_traits(alignment.run)
    return diagnose(
        alignment.name, table, k=k, deep_k=deep_k(alignment), metric_label=label, low_mrr=low_mrr, traits=traits
    )


def rank_histogram_figure(
    tables: dict[str, pd.DataFrame], k: int, runs: Sequence[str] | None = None, limit: int = 20
) -> go.Figure:
    """Where the first relevant document sits, per run: ranks 1..limit, ``>limit`` and ``none``.

    ``tables`` maps a run to its :func:`dashboard.core.missed.query_table`.
    """
    buckets = [str(i) for i in range(1, limit + 1)] + [f">{limit}", "none"]
    counts: dict[str, tuple[list, list]] = {}
    for run in [r for r in (runs or list(tables)) if r in tables]:
        ranks = tables[run].loc[tables[run]["n_relevant"] > 0, "first_relevant_rank"]
        per_rank = [int((ranks == i).sum()) for i in range(1, limit + 1)]
        counts[run] = (buckets, [*per_rank, int((ranks > limit).sum()), int((ranks <= 0).sum())])
    fig = query_count_bars(counts, title=f"Rank of the first relevant document (dotted: K={k})", height=360)
    fig.add_vline(x=k - 0.5, line_dash="dot", line_color="#888")
    fig.update_xaxes(title_text="rank", type="category")
    highest = max((max(y) for _x, y in counts.values()), default=1)
    # the tail stays visible beside rank 1: a log axis, ticked at powers of ten only (its minor digits crowded the
    # axis), from 0.5 so that a bar of one query stands as tall as a tenth of the axis from 1 to 10
    fig.update_yaxes(
        type="log", title_text="queries (log scale)", dtick=1, range=[math.log10(0.5), math.log10(max(highest, 1) * 2)]
    )
    return fig
