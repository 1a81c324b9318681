"""CSV / TSV with a header line, and Parquet, with case-insensitive column
aliases (see ``columns.ALIASES``).

A table with a relevance column (relevance/label/rel/grade) is a qrels table
(``load_dataset``); otherwise it is a run (``load_run``). Parsing is Arrow's C
reader with every column read as text; values are then checked column-wise,
and a bad cell is reported with its line (the header is line 1).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.ids import whole_decimals
from ragmetrics.foundation.kernels import aggregate, cast, elementwise, fill_null, take
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io.columns import (
    ALIASES,
    QUERY_FACETS,
    QUERY_TEXT_NAMES,
    dataset_from_columns,
    id_texts,
    normalise_name,
    run_from_columns,
)
from ragmetrics.io.source import (
    PARQUET_MAGIC,
    Source,
    check_line_rows,
    decode,
    nonempty_line_numbers,
    shorten,
)

_KNOWN = {alias for names in ALIASES.values() for alias in names}
_LONE_CR = re.compile(rb"\r(?!\n)")
MAX_COLUMNS = 1000
ColumnArray = TypeVar("ColumnArray", pa.Array, pa.ChunkedArray)


def _check_lone_cr(source: Source, data: bytes, first_line: int, start: int = 0) -> None:
    """A CR that does not end a CRLF line break: Arrow would split the row there.
    ``data[start:]`` is checked; ``first_line`` is the line number at ``start``."""
    if data.find(b"\r", start) >= 0:
        match = _LONE_CR.search(data, start)
        if match is not None:
            raise ParseError(
                source.name,
                data.count(b"\n", start, match.start()) + first_line,
                "lines ending in \\n or \\r\\n",
                "a carriage return (\\r) inside the line",
            )


def _csv_error(name: str, line: int, exc: csv.Error) -> ParseError:
    text = str(exc)
    if "field larger than field limit" in text:
        return ParseError(name, line, f"fields of at most {csv.field_size_limit():,} characters", "a longer one")
    return ParseError(name, line, "a well-formed CSV line", text)


def _header(source: Source, delimiter: str) -> tuple[list[str], int, int]:
    """(column names, header line number, byte offset where the body starts)."""
    data = source.data
    start, line = 0, 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end].rstrip(b"\r")
        if raw.strip(b" \t"):
            _check_lone_cr(source, raw, line)
            text = decode(raw, source.name, first_line=line)
            try:
                names = [n.strip() for n in next(csv.reader([text], delimiter=delimiter))]
            except csv.Error as exc:
                raise _csv_error(source.name, line, exc) from None
            if len(names) > MAX_COLUMNS:
                raise ParseError(source.name, line, f"a header of at most {MAX_COLUMNS:,} columns", f"{len(names):,}")
            if any(not n for n in names):
                raise ParseError(source.name, line, "a header line with a name for every column", shorten(text))
            seen: set[str] = set()
            for n in names:
                if n in seen:
                    raise ParseError(source.name, line, "unique column names in the header", f"{shorten(n)} twice")
                seen.add(n)
            return names, line, min(end + 1, len(data))
        start, line = end + 1, line + 1
    raise ParseError(source.name, None, "a header line and rows", "no data")


def csv_records(name: str, lines: Iterable[str], delimiter: str, first_line: int) -> Iterator[tuple[int, list[str]]]:
    """Python ``csv`` scan of a table's body (``lines`` with their ends, as ``open(..., newline="")`` gives them):
    (the file's line the record starts on, its fields) per non-empty record; ``first_line`` is the file's line
    number of the first of ``lines``. A malformed line is the loader's error, said of ``name``."""
    reader = csv.reader(lines, delimiter=delimiter)
    previous = 0
    try:
        for record in reader:
            if record:
                yield previous + first_line, record
            previous = reader.line_num
    except csv.Error as exc:
        raise _csv_error(name, previous + first_line, exc) from None


def ragged_record(
    name: str, lines: Iterable[str], delimiter: str, names: Sequence[str], first_line: int
) -> ParseError | None:
    """The loader's error for the first record of a table's body whose fields are not the header's (``lines`` and
    ``first_line`` as :func:`csv_records`); None when every record has them. A malformed line anywhere in the body
    is raised first, as the loader, scanning the whole body, raises it (one record is kept meanwhile)."""
    found = None
    for line, record in csv_records(name, lines, delimiter, first_line):
        if found is None and len(record) != len(names):
            found = ParseError(
                name,
                line,
                f"{len(names)} fields like the header",
                f"{len(record)} in {shorten(delimiter.join(record))}",
            )
    return found


def csv_options(
    names: Sequence[str], delimiter: str, quoted: bool
) -> tuple[pacsv.ReadOptions, pacsv.ParseOptions, pacsv.ConvertOptions]:
    """How a table's body (the lines below its header) is read: every cell as text (an empty cell an empty string,
    never missing), ``"`` quoting a cell that starts with it (doubled inside it), blank lines skipped. ``quoted``: a
    cell may hold a line break (the body holds a quote)."""
    return (
        pacsv.ReadOptions(column_names=list(names), block_size=1 << 24),
        pacsv.ParseOptions(
            delimiter=delimiter,
            quote_char='"',
            double_quote=True,
            escape_char=False,
            newlines_in_values=quoted,
            ignore_empty_lines=True,
        ),
        pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


def read_delimited(source: Source, delimiter: str) -> tuple[pd.DataFrame, Callable[[int], int | None], int]:
    """All columns as strings; ``line_of(row)`` gives a data row's line; the header line."""
    names, header_line, body_start = _header(source, delimiter)
    data = source.data
    check_line_rows(source, data, header_lines=header_line)
    _check_lone_cr(source, data, header_line + 1, body_start)
    quoted = data.find(b'"', body_start) >= 0

    def body() -> bytes:  # a copy, made only to report an error
        return data[body_start:]

    if body_start >= len(data):  # nothing below the header (blank lines below it read as no rows, as before)
        raise ParseError(source.name, None, "rows below the header line", "the header only")
    try:
        read, parse, convert = csv_options(names, delimiter, quoted)
        table = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(data).slice(body_start)),
            read_options=read,
            parse_options=parse,
            convert_options=convert,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        text = decode(body(), source.name, first_line=header_line + 1)
        ragged = ragged_record(source.name, io.StringIO(text, newline=""), delimiter, names, header_line + 1)
        if ragged is not None:
            raise ragged from None
        raise ParseError(source.name, None, "a well-formed table", str(exc).splitlines()[0]) from None

    pa.default_memory_pool().release_unused()  # the parser's scratch space: numpy cannot reuse it
    cache: list[list[int]] = []

    def line_of(row: int) -> int | None:
        if not quoted:
            return int(nonempty_line_numbers(body(), [row])[0]) + header_line
        if not cache:
            text = body().decode("utf-8", errors="replace")
            try:
                body_lines = io.StringIO(text, newline="")
                cache.append([line for line, _ in csv_records(source.name, body_lines, delimiter, header_line + 1)])
            except ParseError:
                cache.append([])
        return cache[0][row] if row < len(cache[0]) else None

    return table.to_pandas(), line_of, header_line


# the columns a Parquet table is read for (other columns are never decoded)
PARQUET_WANTED = _KNOWN | set(QUERY_TEXT_NAMES) | set(QUERY_FACETS)


def _parquet_failure(source: Source, exc: BaseException) -> ParseError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ParseError(source.name, None, "a Parquet file", first if len(first) <= 200 else first[:197] + "...")


def _decoded(column: ColumnArray) -> ColumnArray:
    """Dictionaries decoded, decimals as :func:`ragmetrics.foundation.ids.whole_decimals` reads them (whole ones
    exactly), half floats as float64: the types a table's values are read as."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = cast(column, kind.value_type)
        kind = column.type
    if pa.types.is_decimal(kind):
        return whole_decimals(column)
    if pa.types.is_float16(kind):
        return cast(column, pa.float64(), safe=False)
    return column


def _plain_column(source: Source, name: str, column: ColumnArray) -> ColumnArray:
    """Text or numbers: dictionaries decoded, binary checked as UTF-8, decimals
    as floats; nested, temporal and other types refused."""
    column = _decoded(column)
    kind = column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        try:
            column = cast(cast(column, pa.large_binary()), pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ParseError(
                source.name, None, f"UTF-8 text in column {shorten(name)}", "bytes that are not UTF-8"
            ) from None
        return column
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
    ):
        return column
    raise ParseError(source.name, None, f"text or numbers in column {shorten(name)}", f"type {shorten(str(kind), 60)}")


def _is_text(kind: pa.DataType) -> bool:
    return any(
        check(kind)
        for check in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    )


def _decoded_bytes(column: pa.ChunkedArray) -> int:
    """The bytes ``column`` takes once its dictionaries are decoded (each row a copy of its value): a small file
    whose dictionary holds one long text repeated over many rows is a decompression bomb the footer does not show."""
    if not pa.types.is_dictionary(column.type):
        return int(column.nbytes)
    total = 0
    for chunk in column.chunks:
        lengths = elementwise("binary_length", chunk.dictionary)
        per_row = take(lengths, fill_null(chunk.indices, pa.scalar(0, chunk.indices.type)))
        total += int(aggregate("sum", per_row) or 0) + int(chunk.indices.nbytes)
    return total


def read_parquet(source: Source, columns: Collection[str] | None = None, *, every: bool = False) -> pd.DataFrame:
    """The useful columns of a Parquet file (or those of ``columns`` it has, or all of them with ``every``), checked against the limits (rows and
    declared size, from the footer) before any data page is decompressed, and their size once decoded (text kept
    as dictionaries until then) before any dictionary is expanded."""
    data = source.data
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        names = list(parquet.schema_arrow.names)
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as exc:
        raise _parquet_failure(source, exc) from None
    source.limits.check_rows(source.name, meta.num_rows)
    if declared > source.limits.inflate_cap(len(data)):
        raise source.limits.inflate_error(source.name, len(data), declared)
    if every:
        wanted = names
    else:
        wanted = [n for n in names if (n in columns if columns is not None else normalise_name(n) in PARQUET_WANTED)]
    repeated = sorted(n for n, times in Counter(wanted).items() if times > 1)
    if repeated:
        raise ParseError(source.name, None, "unique column names", f"{shorten(repeated[0])} more than once")
    schema = parquet.schema_arrow
    texts = [n for n in wanted if _is_text(schema.field(n).type)]
    try:  # text read as dictionaries: a dictionary page expands only when decoded, after the check below
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=texts) if texts else parquet
        table = reader.read(columns=wanted, use_threads=True)
        table.validate(full=True)  # invalid UTF-8, offsets out of range: refused here, not in pandas
    except Exception as exc:
        raise _parquet_failure(source, exc) from None
    if table.num_rows > source.limits.max_rows:  # the footer may understate it
        source.limits.check_rows(source.name, table.num_rows)
    decoded = sum(_decoded_bytes(table.column(i)) for i in range(table.num_columns))
    if decoded > source.limits.inflate_cap(len(data)):
        raise source.limits.inflate_error(source.name, len(data), decoded)
    frame = plain_table(source, table).to_pandas() if table.num_columns else pd.DataFrame(index=range(table.num_rows))
    frame.attrs["all_columns"] = names
    return frame


def read_labels_table(source: Source, format: str) -> tuple[pd.DataFrame, Callable[[int], int | None]] | None:
    """Every column of a labels table in ``format`` (a dataset format's name, as :func:`ragmetrics.io.formats.detect`
    gives it): CSV and TSV as text, Parquet as stored; and ``line_of(row)``, a row's line (None in Parquet). None for
    a format that is no table (TREC qrels, an evaluation set): its loader reads its labels."""
    if format == "parquet":
        return read_parquet(source, every=True), _no_line
    if format in ("csv", "tsv"):
        frame, line_of, _ = read_delimited(source, "," if format == "csv" else "\t")
        return frame, line_of
    return None


def plain_table(source: Source, table: pa.Table) -> pa.Table:
    """A table's columns as a Parquet file's are read (text or numbers; see :func:`read_parquet`)."""
    columns = [_plain_column(source, name, table.column(i)) for i, name in enumerate(table.column_names)]
    return pa.Table.from_arrays(columns, names=table.column_names)


def id_keys(column: ColumnArray) -> pa.Array:
    """The id each value of a table's column is read as (the types of :func:`read_parquet`, the text of
    :func:`ragmetrics.io.columns.id_texts`; a missing value: an empty text), as large strings: the key an engine
    that buckets rows before the loader reads them puts a row's query id under."""
    plain = _decoded(column)
    if isinstance(plain, pa.ChunkedArray):
        plain = plain.combine_chunks()
    kind = plain.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        try:
            plain = cast(cast(plain, pa.large_binary()), pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # the loader refuses the file: any bucket will do
            return pa.array([""] * len(plain), pa.large_string())
    texts = id_texts(plain.to_pandas())
    return pa.array(texts.where(texts.notna(), ""), pa.large_string())


def _no_line(row: int) -> None:
    return None


# -- readers for the format table -----------------------------------------
def read_csv_run(source: Source, *, name: str) -> Run:
    frame, line_of, header = read_delimited(source, ",")
    return run_from_columns(source, frame, line_of, name=name, header_line=header)


def read_tsv_run(source: Source, *, name: str) -> Run:
    frame, line_of, header = read_delimited(source, "\t")
    return run_from_columns(source, frame, line_of, name=name, header_line=header)


def read_parquet_run(source: Source, *, name: str) -> Run:
    return run_from_columns(source, read_parquet(source), _no_line, name=name, header_line=None)


def read_csv_dataset(source: Source, *, name: str) -> Dataset:
    frame, line_of, header = read_delimited(source, ",")
    return dataset_from_columns(source, frame, line_of, name=name, header_line=header)


def read_tsv_dataset(source: Source, *, name: str) -> Dataset:
    frame, line_of, header = read_delimited(source, "\t")
    return dataset_from_columns(source, frame, line_of, name=name, header_line=header)


def read_parquet_dataset(source: Source, *, name: str) -> Dataset:
    return dataset_from_columns(source, read_parquet(source), _no_line, name=name, header_line=None)


# -- sniffing ---------------------------------------------------------------
def _header_names(source: Source, delimiter: str) -> set[str]:
    for raw in source.head.split(b"\n")[:20]:
        raw = raw.rstrip(b"\r")
        if raw.strip(b" \t"):
            if delimiter.encode() not in raw:
                return set()
            return {normalise_name(n) for n in raw.decode("utf-8", errors="replace").split(delimiter)}
    return set()


def _has(names: set[str], *canonical: str) -> bool:
    return all(any(a in names for a in ALIASES[c]) for c in canonical)


def sniff_csv_run(source: Source) -> bool:
    return _has(_header_names(source, ","), "query_id", "doc_id")


def sniff_tsv_run(source: Source) -> bool:
    return _has(_header_names(source, "\t"), "query_id", "doc_id")


def sniff_csv_dataset(source: Source) -> bool:
    names = _header_names(source, ",")
    return _has(names, "query_id", "doc_id") and (_has(names, "relevance") or "score" in names)


def sniff_tsv_dataset(source: Source) -> bool:
    names = _header_names(source, "\t")
    return _has(names, "query_id", "doc_id") and (_has(names, "relevance") or "score" in names)


def sniff_parquet(source: Source) -> bool:
    return not source.is_dir and source.magic[:4] == PARQUET_MAGIC


__all__ = [
    "read_csv_dataset",
    "read_csv_run",
    "read_labels_table",
    "read_parquet_dataset",
    "read_parquet_run",
    "read_tsv_dataset",
    "read_tsv_run",
    "sniff_csv_dataset",
    "sniff_csv_run",
    "sniff_parquet",
    "sniff_tsv_dataset",
    "sniff_tsv_run",
]
