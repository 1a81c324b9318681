"""The library's result values over the dashboard's alignments: no result model of the dashboard's own.

The dashboard holds one :class:`ragmetrics.Alignment` per (dataset, run, name) and reads everything from it:
per-query values (``alignment.value``), curves (``alignment.curve``), aligned rows (``alignment.rows``). The
library's helpers that take an :class:`~ragmetrics.analysis.evaluate.RunResult` or an
:class:`~ragmetrics.analysis.evaluate.EvalResult` get one built around those alignments (nothing is aligned again).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dashboard.core.share import K_MAX
from ragmetrics import Alignment
from ragmetrics.analysis.diagnosis import query_facets
from ragmetrics.analysis.evaluate import EvalResult, RunResult
from ragmetrics.engine.metrics import MetricSpec
from ragmetrics.foundation.errors import RagMetricsError

__all__ = ["Alignment", "common_query_ids", "curve", "eval_result", "facets", "position", "run_result"]


def run_result(alignment: Alignment, metrics: Sequence[MetricSpec | str]) -> RunResult:
    """A :class:`ragmetrics.RunResult` of ``metrics`` on ``alignment``: parsed values pass as they are, the texts a
    stored target names are read by the alignment's mode."""
    return RunResult(alignment, tuple(dict.fromkeys(alignment.mode.parse(m) for m in metrics)))


def eval_result(alignments: Sequence[Alignment], specs: Sequence[MetricSpec]) -> EvalResult:
    """The runs' per-query values of ``specs`` as one :class:`ragmetrics.EvalResult` (run names are unique per
    dataset in the workspace). Every run of one dataset is evaluated on the same queries (its judged queries,
    trec_eval ``-c``), so the runs line up query by query."""
    if not alignments:
        raise RagMetricsError("eval_result needs at least one run")
    first = alignments[0].query_ids
    for other in alignments[1:]:
        if len(other.query_ids) != len(first) or not np.array_equal(other.query_ids, first):
            raise RagMetricsError(f"run {other.name!r} was evaluated on other queries than {alignments[0].name!r}")
    runs = {a.name: run_result(a, specs) for a in alignments}
    return EvalResult(alignments[0].dataset, list(specs), runs, K_MAX)


def common_query_ids(alignments: Sequence[Alignment]) -> np.ndarray:
    """Evaluated query ids shared by all runs, in the first run's order."""
    if not alignments:
        return np.array([], dtype=object)
    ids = alignments[0].query_ids
    for other in alignments[1:]:
        ids = ids[np.isin(ids, other.query_ids)]
    return ids


def position(alignment: Alignment, query_id: str) -> int | None:
    """The evaluated-query index of ``query_id`` (None when the query was not evaluated)."""
    where = np.flatnonzero(alignment.query_ids == query_id)
    return int(where[0]) if len(where) else None


def facets(alignment: Alignment) -> pd.DataFrame:
    """``query_id, query, category, difficulty`` of each evaluated query, in evaluation order."""
    return query_facets(alignment.dataset, alignment.query_ids)


def curve(alignment: Alignment, metric: str, k_max: int) -> np.ndarray:
    """Per-query ``metric@k`` for k = 1..k_max (float64, read-only). Curves are computed to :data:`K_MAX` once per
    run and metric and sliced, so every page and the upload page's prefetch share one."""
    if k_max <= K_MAX:
        return alignment.curve(metric, K_MAX)[:, :k_max]
    return alignment.curve(metric, k_max)
