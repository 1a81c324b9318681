"""One shape for per-query values, whatever produced them: an alignment in this process
(:class:`ragmetrics.analysis.evaluate.RunResult`), a partitioned engine
(:class:`ragmetrics.partitioned.result.PartitionedRun`) or a stored Parquet file of them
(:class:`ragmetrics.analysis.per_query.PerQueryResults`).

Each has a ``name``, its ``metrics`` (canonical names, in the order asked for), the ``query_ids`` in the engine's
order (the dataset's evaluated queries; None when an engine wrote them to a file instead) and one float64 array per
metric aligned with them, NaN where the metric leaves a query out. What is derived from them (means, the per-query
frame, the JSON form) is derived here, once, for all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    import pandas as pd


class QueryValues(Protocol):
    """Per-query values of one run (see the module documentation)."""

    @property
    def name(self) -> str: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...

    @property
    def query_ids(self) -> np.ndarray | None: ...

    @property
    def arrays(self) -> Mapping[str, np.ndarray]: ...


def mean_of(values: np.ndarray) -> float:
    """The mean over the queries with a value (NaN left out); NaN when none has one."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if len(kept) else float("nan")


def means(result: QueryValues) -> dict[str, float]:
    """Each metric's mean over the queries with a value, ``{metric: mean}``."""
    return {metric: mean_of(values) for metric, values in result.arrays.items()}


def values_frame(result: QueryValues) -> pd.DataFrame:
    """The per-query values as a frame indexed by ``query_id``, one column per metric."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    if result.query_ids is None:
        raise RagMetricsError(f"run {result.name!r}: its per-query values were written to a file, not collected")
    index = pd.Index(result.query_ids, name="query_id", dtype="str")
    return pd.DataFrame(dict(result.arrays), index=index, columns=list(result.metrics))


def results_dict(runs: Iterable[QueryValues], per_query: bool) -> dict[str, Any]:
    """``{"runs": {RUN: {"mean": {METRIC: v}, "per_query": {QID: {METRIC: v}}}}}`` (NaN as null)."""
    out: dict[str, Any] = {}
    for result in runs:
        entry: dict[str, Any] = {"mean": {m: plain(v) for m, v in means(result).items()}}
        tokenizer = getattr(result, "tokenizer", None)
        if tokenizer is not None:  # the token budgets' (recall@512tok) counting
            entry["tokenizer"] = tokenizer
        if per_query and result.query_ids is not None:
            arrays = result.arrays
            entry["per_query"] = per_query_dict(result.query_ids, {m: arrays[m] for m in result.metrics})
        out[result.name] = entry
    return {"runs": out}


def per_query_dict(query_ids: Iterable[Any], arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """``{QID: {METRIC: v}}`` (NaN as null), the queries in the order given, the metrics in ``arrays``' order: the
    per-query values of every command's JSON."""
    return {str(qid): {m: plain(values[i]) for m, values in arrays.items()} for i, qid in enumerate(query_ids)}


def plain(value: Any) -> float | None:
    """A float for JSON: NaN as None."""
    value = float(value)
    return None if np.isnan(value) else value
