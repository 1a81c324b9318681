"""Partitioned evaluation: the same exact numbers for inputs larger than memory (DuckDB) or a cluster (Spark).

Every metric is per query, so nothing is rewritten for an engine: the run and the qrels are split by a hash of the
query id (the same function on both sides), each bucket is evaluated by the unchanged engine
(:func:`ragmetrics.align`), and the per-query values are concatenated back in dataset order. Means, intervals and
paired tests need only those vectors; the coverage report (missing and unknown queries, duplicates, ties) and the
run's health are folded from per-query flags and per-bucket totals, so they equal the in-process ones.

* :func:`evaluate_files` (:mod:`.files`): files through an engine of :data:`ENGINES` (``inprocess``, ``duckdb``,
  ``polars``, ``stream``, ``spark``; ``stream`` needs no hash: a run whose queries' lines are together is cut into
  slices of whole queries as it is read);
* :func:`ragmetrics.spark.evaluate`: Spark DataFrames a user already has;
* :func:`ragmetrics.polars.evaluate`: Polars DataFrames and LazyFrames a user already has.

Datasets are qrels (TREC, CSV, TSV or Parquet): a run query is matched to a judged query by its id.

This module is the engines' registry and the package's face; it loads nothing heavy, so the CLI reads the engines'
names without loading the loaders or pandas. The names below are imported from their modules when first used.
"""

from __future__ import annotations

import importlib
from typing import Any

ENGINES: dict[str, tuple[str, str]] = {
    "inprocess": ("ragmetrics.partitioned.local:InProcess", "this process, every input in memory (the default)"),
    "duckdb": (
        "ragmetrics.partitioned.duck:DuckDB",
        "DuckDB, out of core: buckets in a work folder (ragmetrics[duckdb])",
    ),
    "polars": (
        "ragmetrics.partitioned.polar:Polars",
        "Polars, out of core: buckets in a work folder (ragmetrics[polars])",
    ),
    "stream": (
        "ragmetrics.partitioned.stream:Stream",
        "this process, the run read in order in slices of whole queries (out of core, bounded memory; each query's "
        "lines together)",
    ),
    "spark": (
        "ragmetrics.partitioned.spark:Spark",
        "Spark, local or a cluster, an Arrow UDF per bucket (ragmetrics[spark])",
    ),
}
"""name -> (``module:class``, what it is), imported when used (DuckDB, Polars and PySpark are optional extras)."""

_PUBLIC = {
    "evaluate_files": "ragmetrics.partitioned.files",
    "canonical_metrics": "ragmetrics.partitioned.files",
    "run_name": "ragmetrics.partitioned.files",
    "Options": "ragmetrics.partitioned.engine",
    "PartitionedResult": "ragmetrics.partitioned.result",
    "PartitionedRun": "ragmetrics.partitioned.result",
}

__all__ = ["ENGINES", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
