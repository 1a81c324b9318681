"""Per-query results without their rankings: the values a partitioned engine wrote where it ran
(``ragmetrics eval --per-query-out``), checked against the dataset, so a run too large to upload can be stored
(``ragmetrics push --per-query``) and its means and intervals shown.

A results file is Parquet (a file, or the folder Spark writes): a ``query_id`` column and one float column per
metric, named as the registry names them (``ndcg@10``). Every query id must be a query of the dataset; the rows are
kept in the dataset's query order. Nothing here can be recomputed (no ranking is kept): another metric, a curve, a
missed query or a judgment needs the run itself.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ragmetrics.analysis.values import mean_of
from ragmetrics.engine.metrics import metric_name, parse_metric
from ragmetrics.foundation.errors import MetricNameError, ParseError, RagMetricsError
from ragmetrics.foundation.model import Dataset

__all__ = ["PerQueryResults", "read_per_query", "results_id"]

RESULTS_HASH_VERSION = b"ragmetrics-per-query-v1"


@dataclass(frozen=True, eq=False)
class PerQueryResults:
    """``frame``: ``query_id`` and one float64 column per metric (NaN where the engine left a query out), in the
    dataset's query order."""

    name: str
    frame: pd.DataFrame

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.frame.columns if c != "query_id")

    @property
    def query_ids(self) -> np.ndarray:
        return self.frame["query_id"].to_numpy(dtype=object)

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return {metric: self.frame[metric].to_numpy(dtype=np.float64) for metric in self.metrics}

    def value(self, metric: str) -> np.ndarray:
        spec = str(parse_metric(metric))
        if spec not in self.frame.columns:
            raise RagMetricsError(f"results {self.name!r} hold {', '.join(self.metrics)}, not {spec}")
        return self.frame[spec].to_numpy(dtype=np.float64)

    def mean(self, metric: str) -> float:
        return mean_of(self.value(metric))

    def __len__(self) -> int:
        return len(self.frame)


ABOVE_ONE = ("map", "ndcg")
"""The metrics whose per-query value may exceed 1: LlamaIndex mode counts a duplicate retrieved id again in ``ap``
and ``ndcg``; every other value lies in [0, 1]."""


def _in_range(values: np.ndarray, spec: str, where: str) -> np.ndarray:
    """``values`` of metric ``spec`` when each is a value a metric can take (NaN: the query has none), else a
    :class:`ParseError` naming the first that is not, by its row."""
    ceiling = np.inf if metric_name(spec) in ABOVE_ONE else 1.0
    bad = np.flatnonzero(~np.isnan(values) & ~((values >= 0) & (values <= ceiling) & np.isfinite(values)))
    if len(bad):
        row = int(bad[0])
        expected = "finite values of 0 or more" if ceiling == np.inf else "values from 0 to 1"
        raise ParseError(
            where,
            None,
            f"{expected} in column {spec} (NaN where a query has none)",
            f"{float(values[row])!r} in row {row + 1}",
        )
    return values


def read_per_query(
    source: str | os.PathLike[str] | bytes, dataset: Dataset, *, name: str, filename: str = ""
) -> PerQueryResults:
    """The per-query results in ``source`` (a path or the file's bytes), checked against ``dataset``."""
    where = filename or (str(source) if not isinstance(source, bytes) else "per-query results")
    try:
        table = pq.read_table(pa.BufferReader(source) if isinstance(source, bytes) else Path(source))
    except (OSError, pa.ArrowException) as err:
        raise ParseError(
            where, None, "a Parquet file of per-query values (ragmetrics eval --per-query-out)", str(err)[:200]
        ) from None
    index = (table.schema.pandas_metadata or {}).get("index_columns", [])  # a pandas index written beside the data
    table = table.drop_columns([c for c in index if isinstance(c, str) and c in table.column_names])
    if "query_id" not in table.column_names:
        raise ParseError(where, None, "a query_id column", f"columns {', '.join(table.column_names[:10])}")
    columns: dict[str, np.ndarray] = {}
    for column in table.column_names:
        if column == "query_id":
            continue
        try:
            spec = str(parse_metric(column))
        except MetricNameError:
            raise ParseError(
                where, None, "metric columns named as the registry names them (e.g. ndcg@10)", repr(column)
            ) from None
        kind = table.schema.field(column).type
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
            raise ParseError(where, None, f"numbers in column {column}", str(kind))
        values = table.column(column).to_numpy(zero_copy_only=False).astype(np.float64)
        columns[spec] = _in_range(values, spec, where)
    if not columns:
        raise ParseError(where, None, "at least one metric column beside query_id", "query_id only")
    ids = pd.Series(table.column("query_id").to_pylist(), dtype=object).astype(str)
    repeated = ids[ids.duplicated()]
    if len(repeated):
        raise ParseError(where, None, "each query once", f"query {repeated.iloc[0]!r} again")
    order = pd.Index(dataset.queries_table.column("query_id").to_pylist())
    position = order.get_indexer(ids)
    unknown = ids[position < 0]
    if len(unknown) == len(ids):
        raise RagMetricsError(
            f"{where}: none of its queries is a query of dataset {dataset.name!r} (results: "
            f"{', '.join(ids[:3])}; dataset: {', '.join(order[:3].astype(str))}); they were made for another dataset"
        )
    if len(unknown):
        raise RagMetricsError(
            f"{where}: {len(unknown):,} of its {len(ids):,} queries are not queries of dataset {dataset.name!r} "
            f"(e.g. {', '.join(unknown[:3])})"
        )
    frame = pd.DataFrame({"query_id": ids, **columns}).iloc[np.argsort(position, kind="stable")]
    return PerQueryResults(name, frame.reset_index(drop=True))


def results_id(dataset: str, results: PerQueryResults) -> str:
    """The content id of per-query results on a dataset (a dataset id): its query ids, metrics and values (the
    name is not content)."""
    h = hashlib.sha256(RESULTS_HASH_VERSION)
    h.update(dataset.encode("ascii"))
    frame = results.frame.sort_values("query_id", kind="stable")
    h.update("\0".join(frame["query_id"]).encode("utf-8", "surrogatepass"))
    for metric in sorted(results.metrics):
        h.update(b"\1" + metric.encode("utf-8"))
        h.update((frame[metric].to_numpy(dtype=np.float64) + 0.0).tobytes())
    return h.hexdigest()[:16]


def results_parquet(results: PerQueryResults) -> bytes:
    """The results as the store keeps them (Parquet, zstd)."""
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(results.frame, preserve_index=False), sink, compression="zstd")
    return sink.getvalue()


def results_from_parquet(data: bytes, name: str) -> PerQueryResults:
    return PerQueryResults(name, pq.read_table(pa.BufferReader(data)).to_pandas())
