"""The executor interface and its registry: THE one place an engine is added (the CLI's ``--engine`` choices are read
from :data:`ENGINES`).

An engine reads both inputs, puts each row in the bucket of its query id (the same function on both sides, so a
query's judgments and its ranking always meet), and yields one bucket table per bucket
(:func:`ragmetrics.partitioned.buckets.evaluate_bucket`, run where the engine runs). The tables are folded by
:func:`ragmetrics.partitioned.result.combine`.
"""

from __future__ import annotations

import importlib
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import dictionary_codes
from ragmetrics.partitioned import ENGINES
from ragmetrics.partitioned.buckets import Plan, per_query_rows, without_ids
from ragmetrics.partitioned.inputs import Input, describe


@dataclass(frozen=True)
class Options:
    """``buckets``: how many (None: the engine's default); ``memory_limit``: DuckDB's (e.g. ``"2GB"``), and what the
    stream engine sizes its slices from;
    ``work_dir``: where DuckDB and Polars write their buckets (and DuckDB spills; default: a temporary folder); ``spark_master``: the
    Spark master URL (``local[*]`` by default) when no session is running."""

    buckets: int | None = None
    memory_limit: str | None = None
    work_dir: str | None = None
    spark_master: str | None = None


class Engine(ABC):
    """Reads inputs and yields bucket tables; a context manager that frees what it made (work folders, sessions)."""

    name: ClassVar[str]
    local: ClassVar[bool] = True
    """The engine reads files of this machine (it sniffs them); False: paths the cluster reads."""
    same_buckets_for_every_run: ClassVar[bool] = True
    """Bucket ``k`` of any two runs holds the same queries (a hash of the query id); False: buckets are cut from
    each run as it is read (paired statistics cannot take them in step)."""
    bounds_memory: ClassVar[bool] = False
    """The engine holds itself to ``Options.memory_limit``; an engine that cannot refuses one (never ignores it)."""
    writes_work_files: ClassVar[bool] = False
    """The engine writes its buckets in ``Options.work_dir``; an engine that does not refuses one."""
    starts_spark: ClassVar[bool] = False
    """The engine starts a Spark session on ``Options.spark_master``; an engine that does not refuses one."""

    def __init__(self, options: Options) -> None:
        if options.buckets is not None and (not isinstance(options.buckets, int) or options.buckets < 1):
            raise RagMetricsError(f"buckets must be an int >= 1; got {options.buckets!r}")
        if options.memory_limit is not None and not self.bounds_memory:
            bounded = ", ".join(name for name in ENGINES if engine_class(name).bounds_memory)
            raise RagMetricsError(
                f"--memory-limit: the {self.name} engine has no memory limit to set (it would be ignored); engines "
                f"with one: {bounded}. With {self.name}, more --buckets make each bucket smaller"
            )
        if options.work_dir is not None and not self.writes_work_files:
            writing = ", ".join(name for name in ENGINES if engine_class(name).writes_work_files)
            raise RagMetricsError(
                f"--work-dir: the {self.name} engine writes no work file (it would be ignored); engines that do: "
                f"{writing}; leave it out"
            )
        if options.spark_master is not None and not self.starts_spark:
            raise RagMetricsError(
                f"--spark-master: the {self.name} engine starts no Spark session (it would be ignored); use --engine "
                "spark, or leave it out"
            )
        self.options = options

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # noqa: B027 - engines without resources keep nothing
        """Free the work folder, the connection or the session the engine started."""

    def describe(self, path: str, kind: str) -> Input:
        """The input at ``path`` as this engine reads it."""

        return describe(path, kind, local=self.local)  # type: ignore[arg-type]

    @abstractmethod
    def buckets_for(self, qrels: Input, run: Input) -> int:
        """The number of buckets used when none is given."""

    @abstractmethod
    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:
        """One bucket table per bucket."""

    def tables(
        self, plan: Plan, qrels: Input, run: Input, buckets: int, per_query_out: str | None = None
    ) -> Iterator[pa.Table]:
        """The bucket tables; with ``per_query_out``, each bucket's per-query rows are written there (Parquet) as
        the bucket is done and the tables keep only the ids a coverage list names."""
        tables = self.bucket_tables(plan, qrels, run, buckets)
        yield from tables if per_query_out is None else with_per_query_written(tables, plan.metrics, per_query_out)


def with_per_query_written(
    tables: Iterator[pa.Table], metrics: Sequence[str], per_query_out: str
) -> Iterator[pa.Table]:
    """``tables``, each bucket's per-query rows written to ``per_query_out`` (Parquet) as the bucket is done; the
    tables keep only the ids a coverage list names."""
    writer = None
    try:
        for table in tables:
            rows = per_query_rows(table, metrics)
            if writer is None:
                writer = pq.ParquetWriter(per_query_out, rows.schema)
            writer.write_table(rows)
            yield without_ids(table)
    finally:
        if writer is not None:
            writer.close()


def work_folder(work_dir: str | None, engine: str) -> Path:
    """A new folder of ``engine``'s own for its buckets (inside ``work_dir``, made when missing; default: the
    system's temporary folder); the engine removes it when closed."""
    if work_dir:
        try:
            Path(work_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RagMetricsError(f"work folder {work_dir}: cannot be made ({exc.strerror or exc})") from None
    return Path(tempfile.mkdtemp(prefix=f"ragmetrics-{engine}-", dir=work_dir))


def read_bucket(folder: Path, bucket: int, schema: pa.Schema) -> pa.Table:
    """A bucket's rows as written by a partitioned Parquet write (``folder/bucket=K/*.parquet``; none: an empty
    table of the input's columns)."""
    part = folder / f"bucket={bucket}"
    if not part.exists():
        return schema.empty_table()
    table = pq.read_table(part)
    return table.drop_columns([c for c in table.column_names if c == "bucket"])


def bucket_of(query_ids: pa.ChunkedArray | pa.Array, buckets: int) -> np.ndarray:
    """The in-process engine's bucket of each row (a hash of the query id; each distinct id hashed once)."""

    codes, uniques = dictionary_codes(query_ids)
    hashes = pd.util.hash_array(np.array(uniques.to_pylist(), dtype=object))
    return (hashes % np.uint64(buckets)).astype(np.int64)[codes]


def engine_class(name: str) -> type[Engine]:
    if name not in ENGINES:
        raise RagMetricsError(f"unknown engine {name!r}; expected one of {', '.join(ENGINES)}")
    module, cls = ENGINES[name][0].split(":")
    try:
        found: type[Engine] = getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        raise RagMetricsError(
            f"engine {name!r} needs {exc.name or 'a package'}: pip install 'ragmetrics[{name}]'"
        ) from None
    return found
