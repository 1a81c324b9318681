"""The Polars engine: out of core on one machine, and Polars frames a user already has.

Each input becomes a LazyFrame (a TREC file's lines, a CSV/TSV file's cells as text, a Parquet file's columns, or a
user's own DataFrame or LazyFrame) with its row number in file order (:data:`POSITION`) and its bucket, a hash of the
query id. A LazyFrame is written by Polars' streaming engine, hash-partitioned, as Parquet into a work folder (one
folder per bucket, ``sink_parquet(PartitionBy(...))``), and the buckets are evaluated one at a time by
:func:`ragmetrics.partitioned.buckets.evaluate_bucket`, the bucket evaluator every engine uses; a DataFrame already in
memory is split in memory instead. This process then holds one bucket (and, for a DataFrame, the frame), not the run.

As with DuckDB, a TREC line's fields are split by the TREC loader itself, on the bucket's lines: Polars only finds
the first field (the query id) to bucket on, with the loader's rule (C whitespace). Polars keeps a lone carriage
return inside its line and refuses bytes that are not UTF-8 without naming the line: both are refused here at the
input file's line. A gzipped input is decompressed into the work folder first, so it is read in bounded memory.

The bucket of a query id is Polars' own hash (stable within a Polars version): the bucket numbers differ from
DuckDB's and Spark's, the per-query values, the coverage report and the merged sums do not.
"""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa

from ragmetrics.analysis.evaluate import DEFAULT_METRICS
from ragmetrics.engine import Conventions
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.foundation.ids import MAX_ID_BYTES
from ragmetrics.io.columns import ID_BLANKS, describe_aliases, normalise_name, resolve
from ragmetrics.io.source import BOM
from ragmetrics.io.tables import id_keys
from ragmetrics.partitioned.buckets import POSITION, Plan, evaluate_bucket
from ragmetrics.partitioned.engine import Engine, Options, read_bucket, with_per_query_written, work_folder
from ragmetrics.partitioned.files import budget_tokenizer, canonical_metrics, counting
from ragmetrics.partitioned.inputs import (
    FIRST_FIELD,
    Input,
    Side,
    buckets_by_size,
    check_line_breaks,
    empty_records,
    first_line_not_utf8,
    is_gzipped,
    keyed_as_text,
    ragged_record,
    with_columns,
)
from ragmetrics.partitioned.result import PartitionedRun, combine
from ragmetrics.partitioned.scripts import BATCH_ROWS, script_sides

ROWS_PER_BUCKET = 1 << 20
"""Rows per bucket of a user's frames when the number is not given (about what a bucket of a file holds)."""
REQUIRED = {"run": ("query_id", "doc_id"), "dataset": ("query_id", "doc_id", "relevance")}
"""The columns a run and a qrels frame need (canonical names; the aliases of :mod:`ragmetrics.io.columns`)."""
WORK_COMPRESSION: Final = "lz4"
"""The work files' compression: written once and read once, lz4 is the quickest Polars writes (zstd, its default,
took twice as long to write a run's buckets)."""
_SEED = 0
"""The seed of Polars' hash of the bucket key (both sides and every input use the same)."""


def query_key(frame: pl.LazyFrame, column: str) -> pl.Expr:
    """The query id of a table cell as the bucket key, the id the loader reads (a missing value: an empty text):
    text and integers cast by Polars, blanks around them stripped; other types by
    :func:`ragmetrics.io.tables.id_keys`."""
    value = pl.col(column)
    kind = pl.DataFrame(schema={column: frame.collect_schema()[column]}).to_arrow().schema[0].type
    if keyed_as_text(kind):
        return value.cast(pl.String).str.strip_chars(ID_BLANKS).fill_null("")
    return value.map_batches(_id_keys, return_dtype=pl.String, is_elementwise=True).fill_null("")


def _id_keys(values: pl.Series) -> pl.Series:
    keys = pl.from_arrow(id_keys(values.to_arrow()))
    assert isinstance(keys, pl.Series)
    return keys


def bucketed(frame: pl.LazyFrame, columns: Sequence[str], key: pl.Expr, buckets: int) -> pl.LazyFrame:
    """``columns``, :data:`POSITION` (int64) and ``bucket`` (the key's hash modulo ``buckets``)."""
    return frame.select(
        *(pl.col(c) for c in columns),
        pl.col(POSITION).cast(pl.Int64),
        (key.hash(_SEED) % buckets).cast(pl.Int64).alias("bucket"),
    )


def _polars_error(path: str, exc: Exception) -> RagMetricsError:
    text = str(exc)
    if "utf8" in text.lower() or "utf-8" in text.lower():
        return ParseError(path, first_line_not_utf8(path), "UTF-8 text", "bytes that are not UTF-8")
    if "CSV malformed" in text:  # a quote inside a cell that does not start with one: the loader reads it as text
        return ParseError(
            path,
            None,
            "a CSV file Polars can read",
            "a quote inside a cell that does not start with one, which Polars refuses and the loader reads as "
            "text: use --engine duckdb or --engine inprocess",
        )
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return ParseError(path, None, "a file Polars can read", first)


def _arrow_schema(frame: pl.LazyFrame) -> pa.Schema:
    empty = pl.DataFrame(schema=frame.collect_schema()).drop("bucket")
    return empty.to_arrow(compat_level=pl.CompatLevel.oldest()).schema


def sink_buckets(frame: pl.LazyFrame, folder: Path, source: str) -> pa.Schema:
    """Write a bucketed LazyFrame to ``folder``, one folder of Parquet per bucket (Polars' streaming engine);
    returns the schema of its rows. A read error is said of ``source``."""
    try:
        partitioned = pl.PartitionBy(str(folder), key="bucket", include_key=False)
        frame.sink_parquet(partitioned, mkdir=True, compression=WORK_COMPRESSION)
        schema = _arrow_schema(frame)
    except pl.exceptions.PolarsError as exc:
        raise _polars_error(source, exc) from None
    folder.mkdir(parents=True, exist_ok=True)  # no row at all: no bucket was written
    return schema


def _in_memory_buckets(frame: pl.DataFrame, buckets: int) -> list[pa.Table]:
    """A bucketed DataFrame's rows, split in memory, one Arrow table per bucket (empty where no row falls)."""
    schema = _arrow_schema(frame.lazy())
    found = frame.partition_by("bucket", as_dict=True, include_key=False)
    tables = [schema.empty_table()] * buckets
    for (bucket, *_), part in found.items():
        tables[int(bucket)] = part.to_arrow(compat_level=pl.CompatLevel.oldest())
    return tables


def _last_cell_empty(folder: Path, column: str) -> bool:
    """True when a row of the buckets in ``folder`` has an empty ``column``."""
    if not any(folder.rglob("*.parquet")):
        return False
    found = pl.scan_parquet(folder / "**" / "*.parquet").select((pl.col(column) == "").any()).collect().item()
    return bool(found)


class Polars(Engine):
    name = "polars"
    writes_work_files = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.work = work_folder(options.work_dir, self.name)
        self._partitioned: dict[tuple[str, int], tuple[Path, pa.Schema]] = {}

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def buckets_for(self, qrels: Input, run: Input) -> int:
        return buckets_by_size(qrels, run)

    def _plain(self, path: str) -> str:
        """``path``, or its decompressed copy in the work folder when it is gzipped."""
        if not is_gzipped(path):
            return path
        target = self.work / f"plain-{len(list(self.work.glob('plain-*')))}"
        with gzip.open(path, "rb") as packed, open(target, "wb") as plain:
            shutil.copyfileobj(packed, plain, 1 << 24)
        return str(target)

    def _frame(self, found: Input, buckets: int) -> pl.LazyFrame:
        """The LazyFrame that reads ``found``: its columns, :data:`POSITION` and ``bucket``."""
        path = self._plain(found.path)
        if found.format == "trec":
            try:
                check_line_breaks(path)
            except ParseError as exc:  # said of the input file, not of its decompressed copy
                raise exc.said_of(found.path, lambda line: line) from None
            scanned = pl.scan_lines(path, name="line", row_index_name=POSITION)
            # the loader drops a byte-order mark at the start of the file (Polars keeps it in the first line)
            first = pl.col(POSITION) == 0
            lines = scanned.with_columns(
                pl.when(first).then(pl.col("line").str.strip_prefix(BOM.decode())).otherwise(pl.col("line"))
            )
            key = pl.col("line").str.extract(FIRST_FIELD, 1).fill_null("")
            # blank and comment lines carry no row: the loader skips them
            kept = lines.filter((key != "") & ~key.str.starts_with("#"))
            return bucketed(kept, ["line"], key, buckets)
        if found.format == "parquet":
            frame = pl.scan_parquet(path).with_row_index(POSITION)
            found = with_columns(found, [c for c in frame.collect_schema().names() if c != POSITION])
        else:  # CSV, TSV: every cell as text, as the in-process reader reads it (an empty cell is an empty string)
            cells = pl.scan_csv(
                path,
                has_header=True,
                skip_lines=(found.side.header_line or 1) - 1,
                separator=found.delimiter,
                quote_char='"',
                infer_schema=False,
                empty_string_is_null=False,
            ).with_columns(pl.col(c).fill_null("") for c in found.columns)
            # a blank line holds no record for the loader (Polars reads a row of empty cells); a line of delimiters
            # only, read as the same row, is a record the loader refuses: kept
            blank = pl.all_horizontal(pl.col(c) == "" for c in found.columns)
            records = empty_records(found)
            keep = ~blank | pl.col(POSITION).is_in(records) if records else ~blank
            frame = cells.with_row_index(POSITION).filter(keep).drop(POSITION).with_row_index(POSITION)
        assert found.query_column is not None
        return bucketed(frame, found.columns, query_key(frame, found.query_column), buckets)

    def _partition(self, found: Input, buckets: int) -> tuple[Path, pa.Schema]:
        key = (found.path, buckets)
        if key not in self._partitioned:
            folder = self.work / f"input-{len(self._partitioned)}"
            try:
                frame = self._frame(found, buckets)
                schema = sink_buckets(frame, folder, found.path)
            except pl.exceptions.PolarsError as exc:
                raise (ragged_record(found) or _polars_error(found.path, exc)) from None
            except ParseError as exc:
                raise (ragged_record(found) or exc) from None
            if found.format in ("csv", "tsv") and _last_cell_empty(folder, found.columns[-1]):
                # Polars fills a row short of fields with empty cells: the loader refuses it
                ragged = ragged_record(found)
                if ragged is not None:
                    raise ragged
            self._partitioned[key] = (folder, schema)
        return self._partitioned[key]

    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:
        qrels_folder, qrels_schema = self._partition(qrels, buckets)
        run_folder, run_schema = self._partition(run, buckets)
        for bucket in range(buckets):
            yield evaluate_bucket(
                plan, read_bucket(qrels_folder, bucket, qrels_schema), read_bucket(run_folder, bucket, run_schema)
            )


# --- frames a user already has ----------------------------------------------------------------------------------


def _columns_of(frame: pl.LazyFrame, what: str, kind: str) -> tuple[list[str], str]:
    """The columns of a user's frame and its query id column; a missing column is named with its aliases."""
    names = frame.collect_schema().names()
    if POSITION in names or "bucket" in names:
        taken = POSITION if POSITION in names else "bucket"
        raise RagMetricsError(f"the {what} has a column {taken!r}, a name the Polars engine uses: rename it")
    found = resolve(names)
    if kind == "dataset" and "relevance" not in found and "score" in found:  # BEIR qrels: query-id corpus-id score
        found["relevance"] = found["score"]
    missing = [c for c in REQUIRED[kind] if c not in found]
    if missing:
        raise RagMetricsError(
            f"the {what} has no column {describe_aliases(missing)}; its columns: {', '.join(map(repr, names))}"
        )
    if normalise_name(found["query_id"]) == "query":
        raise RagMetricsError(
            f"the {what} names its queries by their text (column {found['query_id']!r}); the Polars engine buckets "
            "rows by a query id column (query_id/qid/topic): add one"
        )
    return names, found["query_id"]


def text_sides(run: pl.LazyFrame) -> Iterator[tuple[bool, bool]]:
    """The :func:`ragmetrics.partitioned.scripts.script_sides` of a run frame's texts (its ``text``/``chunk_text``/
    ``content`` column), a batch at a time (Polars' streaming engine); nothing when it has no text column."""
    column = resolve(run.collect_schema().names()).get("text")
    if column is None:
        return
    for batch in run.select(pl.col(column).cast(pl.String)).collect_batches(chunk_size=BATCH_ROWS):
        yield script_sides(batch.to_arrow().column(0))


def evaluate(
    qrels: pl.DataFrame | pl.LazyFrame,
    run: pl.DataFrame | pl.LazyFrame,
    metrics: Sequence[str] | None = None,
    *,
    name: str = "run",
    conventions: Conventions | None = None,
    buckets: int | None = None,
    work_dir: str | None = None,
    per_query_out: str | None = None,
    corpus_size: int | None = None,
    max_id_bytes: int = MAX_ID_BYTES,
    resamples: int = 0,
    seed: int = 0,
    tokenizer: TokenizerLike = "auto",
    **changes: Any,
) -> PartitionedRun:
    """Evaluate a run frame against a qrels frame (Polars DataFrames or LazyFrames), bucket by bucket.

    Columns are named as in a CSV file (``query_id``/``qid``, ``doc_id``/``docno``, ``relevance``/``label``,
    ``score``; see :mod:`ragmetrics.io.columns`). When both are DataFrames the buckets are split in memory;
    otherwise both are written hash-partitioned by Polars' streaming engine into a folder inside ``work_dir``
    (default: a temporary folder; removed afterwards) and read back one bucket at a time. ``buckets`` defaults to one
    per :data:`ROWS_PER_BUCKET` rows (a LazyFrame's rows are counted first). ``per_query_out``: a Parquet file the
    per-query values are written to as the buckets are done (the result then keeps the values, not the ids);
    ``resamples`` and ``seed``: the merged sums each bucket emits (as :func:`ragmetrics.partitioned.evaluate_files`).
    ``tokenizer``: what the token budgets count with (as :func:`ragmetrics.partitioned.evaluate_files`; ``auto``
    resolved on the run frame's texts, :func:`text_sides`). Conventions as :func:`ragmetrics.analysis.evaluate`."""
    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    names = canonical_metrics(list(metrics or DEFAULT_METRICS), conventions)
    sides = []
    for frame, what, kind in ((qrels, "qrels frame", "dataset"), (run, "run frame", "run")):
        if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
            raise RagMetricsError(f"the {what}: expected a Polars DataFrame or LazyFrame, got {type(frame).__name__}")
        sides.append(frame.lazy())
        _columns_of(sides[-1], what, kind)
    counted_with = budget_tokenizer(names, conventions, tokenizer, "polars", text_sides(sides[1]))
    in_memory = isinstance(qrels, pl.DataFrame) and isinstance(run, pl.DataFrame)
    if buckets is None:
        rows = sum(
            f.height if isinstance(f, pl.DataFrame) else f.select(pl.len()).collect().item() for f in (qrels, run)
        )
        buckets = max(1, -(-rows // ROWS_PER_BUCKET))
    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
        raise RagMetricsError(f"buckets must be an int >= 1; got {buckets!r}")
    plan = Plan(
        name,
        Side("<run frame>", "columns"),
        Side("<qrels frame>", "columns"),
        names,
        conventions,
        corpus_size,
        None,
        max_id_bytes,
        resamples,
        seed,
        counting(tokenizer, counted_with),
    )
    framed = []
    for frame, what, kind in zip(sides, ("qrels frame", "run frame"), ("dataset", "run")):
        columns, query = _columns_of(frame, what, kind)
        positioned = frame.with_row_index(POSITION)
        framed.append(bucketed(positioned, columns, query_key(positioned, query), buckets))

    def tables(engine: Polars) -> Iterator[pa.Table]:
        if in_memory:
            qrels_parts, run_parts = (_in_memory_buckets(f.collect(), buckets) for f in framed)
            for bucket in range(buckets):
                yield evaluate_bucket(plan, qrels_parts[bucket], run_parts[bucket])
            return
        folders = [engine.work / "qrels", engine.work / "run"]
        schemas = [
            sink_buckets(f, folder, what) for f, folder, what in zip(framed, folders, ("qrels frame", "run frame"))
        ]
        for bucket in range(buckets):
            yield evaluate_bucket(plan, *(read_bucket(f, bucket, s) for f, s in zip(folders, schemas)))

    engine = Polars(Options(buckets=buckets, work_dir=work_dir))
    with engine:
        made = tables(engine)
        written = made if per_query_out is None else with_per_query_written(made, names, per_query_out)
        return combine(
            name,
            names,
            conventions,
            written,
            keep_ids=per_query_out is None,
            per_query_file=per_query_out,
            tokenizer=counted_with,
        )
