"""What the judgments leave open: a metric's worst and best value over every way of judging the unjudged documents
a run retrieved (or those in its top ``depth``: what judging a pool of that depth can change).

A labeling judges each of those documents non-relevant (0) or relevant at the relevance threshold (``rel_level``, at
least 1); every other document keeps its judgment, and an unjudged one below ``depth`` stays unjudged. Every metric here is
*swap-monotone*: with the number ``m`` of documents judged relevant fixed (so R and the ideal ranking are fixed),
moving a relevant label to a better-ranked unjudged document never lowers the value. So, per query,

* the best value is the largest over ``m`` of "the top ``m`` unjudged documents within the cut-off relevant, the
  rest non-relevant" (relevant documents below a cut-off only raise R or the ideal DCG);
* the worst value is the smallest over ``m`` of "every unjudged document below the cut-off relevant and the
  bottom ``m`` within it" (below the cut-off they only raise R or the ideal DCG, which only lowers the value).

A metric that rises with every relevant label (precision, hits, MRR; the set measures too, whose R rises with
their TP) has its two ends at ``m = 0`` and at every unjudged document within the cut-off. The ends are exact per
query, and a mean's ends are the means of the per-query ends (each query's documents are judged on their own). judged@k,
unj@k, rbp_resid and the text metrics read no relevance label: their ends are their value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.engine import metrics as registry
from ragmetrics.engine.order import segment_starts

if TYPE_CHECKING:
    from ragmetrics.engine.accumulators import Ranking
    from ragmetrics.engine.metrics import MetricSpec


JUDGMENT_COVERAGE = ("judged", "unj", "rbp_resid")
"""Metrics of which documents are judged, not of their labels: judging one changes them, labeling one does not."""


def label_free(spec: MetricSpec) -> bool:
    """True when no relevance label enters the metric (judged@k, unj@k, rbp_resid, the text metrics)."""
    return spec.info.needs_text or spec.name in JUDGMENT_COVERAGE


def bounds(ranking: Ranking, spec: MetricSpec, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-query ``(worst, best)`` of ``spec`` over every labeling of the unjudged documents ``ranking`` holds in
    its top ``depth`` (None: all of them)."""

    unjudged = ~ranking.judged
    if depth is not None:
        unjudged &= ranking.pos < depth

    def value(relevant: np.ndarray) -> np.ndarray:
        return registry.compute(ranking.judged_as(relevant, unjudged), [spec])[spec]

    inside = unjudged if spec.k is None else unjudged & (ranking.pos < spec.k)
    rows = np.flatnonzero(inside)  # sorted by (query, rank), as the ranking's rows are
    starts = segment_starts(ranking.q[rows], ranking.n_queries)
    from_top = np.arange(len(rows)) - starts[:-1][ranking.q[rows]]
    from_bottom = np.diff(starts)[ranking.q[rows]] - 1 - from_top
    deepest = int(np.diff(starts).max(initial=0))
    steps = range(deepest + 1) if spec.info.reads_relevant_count else sorted({0, deepest})
    worst = np.full(ranking.n_queries, np.inf)
    best = np.full(ranking.n_queries, -np.inf)
    for m in steps:
        top = np.zeros(len(unjudged), dtype=bool)
        top[rows[from_top < m]] = True
        bottom = unjudged & ~inside
        bottom[rows[from_bottom < m]] = True
        np.maximum(best, value(top), out=best)
        np.minimum(worst, value(bottom), out=worst)
    return worst, best
