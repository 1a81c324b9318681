"""The DuckDB engine: out of core on one machine.

DuckDB reads each input (TREC lines, Parquet columns; CSV/TSV cells as text, parsed by the loader's own CSV reader,
streamed: :func:`csv_rows`), numbers its rows in file order and writes them to Parquet in a work folder, one folder
per bucket (``COPY ... PARTITION_BY``), under its ``memory_limit`` (it spills to the work folder beyond it). Buckets
are then evaluated one at a time, so the memory this process needs is a bucket's, not the run's. A CSV row whose
fields are not the header's is refused with the loader's error, at its line.

A TREC line's fields are split by the TREC loader itself, on the bucket's lines: DuckDB only finds the first field
(the query id) to bucket on, with the loader's rule (C whitespace). DuckDB breaks lines at a lone carriage return
where the loader refuses the line: such a file is refused here too, before DuckDB reads it. Its strict mode is off for
TREC lines, as it refuses a file mixing \r\n and \n line ends, which the loader reads (a lone \r being refused
first, nothing else in a line of one cell is lenient there: no quote, no delimiter).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io.columns import ID_BLANKS
from ragmetrics.io.tables import csv_options, id_keys
from ragmetrics.partitioned.buckets import POSITION, Plan, evaluate_bucket
from ragmetrics.partitioned.engine import Engine, Options, read_bucket, work_folder
from ragmetrics.partitioned.inputs import (
    FIRST_FIELD,
    Input,
    buckets_by_size,
    check_line_breaks,
    keyed_as_text,
    open_plain,
    ragged_record,
    with_columns,
)

DEFAULT_MEMORY_LIMIT = "2GB"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _duckdb_error(path: str, exc: Exception) -> RagMetricsError:
    text = str(exc)
    line = re.search(r"on Line: (\d+)", text)
    if "unicode" in text.lower():
        return ParseError(path, int(line.group(1)) if line else None, "UTF-8 text", "bytes that are not UTF-8")
    first = text.splitlines()[0] if text else type(exc).__name__
    detail = next((s.strip() for s in text.splitlines()[1:] if s.strip()), "")
    return ParseError(path, int(line.group(1)) if line else None, "a file DuckDB can read", f"{first} {detail}".strip())


def csv_rows(found: Input) -> pa.RecordBatchReader:
    """The records below a CSV or TSV file's header, every cell as text, read as the loader reads them
    (:func:`ragmetrics.io.tables.csv_options`), in batches as they are read, with :data:`POSITION`."""
    handle = open_plain(found.path)
    for _ in range(found.side.header_line or 0):
        handle.readline()
    read, parse, convert = csv_options(found.columns, found.delimiter, quoted=True)
    names = [*found.columns, POSITION]
    schema = pa.schema([*(pa.field(c, pa.string()) for c in found.columns), pa.field(POSITION, pa.int64())])

    def batches() -> Iterator[pa.RecordBatch]:
        with handle:
            reader = pacsv.open_csv(handle, read_options=read, parse_options=parse, convert_options=convert)
            read_rows = 0
            for batch in reader:
                positions = pa.array(np.arange(read_rows, read_rows + batch.num_rows, dtype=np.int64))
                read_rows += batch.num_rows
                yield pa.RecordBatch.from_arrays([*batch.columns, positions], names=names)

    return pa.RecordBatchReader.from_batches(schema, batches())


def _id_keys(values: Any) -> Any:
    return id_keys(values)


class DuckDB(Engine):
    name = "duckdb"
    bounds_memory = True
    writes_work_files = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)

        self.work = work_folder(options.work_dir, self.name)
        config: dict[str, str | bool | int | float | list[str]] = {
            "memory_limit": options.memory_limit or DEFAULT_MEMORY_LIMIT,
            "temp_directory": str(self.work / "spill"),
            "preserve_insertion_order": True,
        }
        try:
            self.con = duckdb.connect(config=config)
        except duckdb.Error as exc:
            shutil.rmtree(self.work, ignore_errors=True)
            raise RagMetricsError(f"DuckDB: {str(exc).splitlines()[0]} (--memory-limit takes e.g. 2GB)") from None
        self._partitioned: dict[tuple[str, int], tuple[Path, pa.Schema]] = {}
        self._functions: set[str] = set()

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def buckets_for(self, qrels: Input, run: Input) -> int:
        return buckets_by_size(qrels, run)

    def _select(self, found: Input, buckets: int) -> tuple[str, Input]:
        """The query that reads ``found``: its columns, ``position`` and ``bucket``."""
        path = _literal(found.path)
        if found.format == "trec":
            check_line_breaks(found.path)
            lines = (
                f"SELECT line, row_number() OVER () - 1 AS {POSITION}, regexp_extract(line, {_literal(FIRST_FIELD)}, 1)"
                f" AS key FROM read_csv({path}, columns={{'line': 'VARCHAR'}}, header=false, delim='\\0', quote='',"
                " escape='', auto_detect=false, strict_mode=false)"
            )
            # blank and comment lines carry no row: the loader skips them
            query = (
                f"SELECT line, {POSITION}, hash(key) % {buckets} AS bucket FROM ({lines}) "
                "WHERE key <> '' AND NOT starts_with(key, '#')"
            )
            return query, found
        trimmed = _literal(ID_BLANKS)
        if found.format == "parquet":
            described = self.con.execute(f"DESCRIBE SELECT * FROM read_parquet({path})").fetchall()
            types = {str(row[0]): str(row[1]) for row in described}
            found = with_columns(found, list(types))
            q = _name(found.query_column or "")
            if keyed_as_text(self.con.sql(f"SELECT {q} FROM read_parquet({path}) LIMIT 0").arrow().schema[0].type):
                key = f"trim(CAST({q} AS VARCHAR), {trimmed})"
            else:
                key = f"coalesce({self._id_keys(types[found.query_column or ''])}({q}), '')"
            columns = ", ".join(_name(c) for c in found.columns)
            query = (
                f"SELECT {columns}, file_row_number AS {POSITION}, hash({key}) % {buckets} AS bucket "
                f"FROM read_parquet({path}, file_row_number=true)"
            )
            return query, found
        # CSV, TSV: the cells as the loader's reader reads them (DuckDB's own reader reads `, "x" ,` as the quoted
        # x, where the loader keeps the quotes)
        check_line_breaks(found.path)
        stream = f"csv_{len(self._partitioned)}"
        self.con.register(stream, csv_rows(found))
        columns = ", ".join(_name(c) for c in found.columns)
        q = _name(found.query_column or "")
        query = f"SELECT {columns}, {POSITION}, hash(trim({q}, {trimmed})) % {buckets} AS bucket FROM {stream}"
        return query, found

    def _id_keys(self, column_type: str) -> str:
        """The name of a function giving a column of ``column_type``'s values the ids the loader reads
        (:func:`ragmetrics.io.tables.id_keys`)."""
        name = "ragmetrics_id_" + re.sub(r"\W", "_", column_type)
        if name not in self._functions:
            # the UDF type by name: its enum's module moved between DuckDB versions
            self.con.create_function(name, _id_keys, [duckdb.sqltype(column_type)], "VARCHAR", type="arrow")  # type: ignore[call-overload]
            self._functions.add(name)
        return name

    def _partition(self, found: Input, buckets: int) -> tuple[Path, pa.Schema]:
        key = (found.path, buckets)
        if key not in self._partitioned:
            folder = self.work / f"input-{len(self._partitioned)}"
            query, found = self._select(found, buckets)

            try:
                self.con.execute(f"COPY ({query}) TO {_literal(str(folder))} (FORMAT parquet, PARTITION_BY (bucket))")
                fields = self.con.execute(f"DESCRIBE {query}").fetchall()
            except (duckdb.Error, pa.ArrowException) as exc:
                raise (ragged_record(found) or _duckdb_error(found.path, exc)) from None
            types = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "UBIGINT": pa.uint64()}
            schema = pa.schema([(name, types.get(kind, pa.string())) for name, kind, *_ in fields if name != "bucket"])
            self._partitioned[key] = (folder, schema)
        return self._partitioned[key]

    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:
        qrels_folder, qrels_schema = self._partition(qrels, buckets)
        run_folder, run_schema = self._partition(run, buckets)
        for bucket in range(buckets):
            yield evaluate_bucket(
                plan, read_bucket(qrels_folder, bucket, qrels_schema), read_bucket(run_folder, bucket, run_schema)
            )
