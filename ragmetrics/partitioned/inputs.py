"""What an input file is, for an engine that reads it itself: its layout (:class:`Side`),
its columns, and the column whose value is the query id (what a row is bucketed on).

Only the file's head is read here (format detection sniffs it as the in-process loaders do).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io import tables
from ragmetrics.io.columns import describe_aliases, missing_columns_error, normalise_name, resolve
from ragmetrics.io.formats import KNOWN_EXTENSIONS, detect
from ragmetrics.io.limits import Limits
from ragmetrics.io.source import GZIP_CUT_SHORT, open_source
from ragmetrics.io.tables import PARQUET_WANTED

HEAD_BYTES = 1 << 16
FORMATS = ("trec", "csv", "tsv", "parquet")
"""The formats an engine reads itself."""
WHITESPACE = "[ \\t\\x0B\\f]"
"""A TREC field separator (C whitespace: space, tab, vertical tab, form feed), as a regular expression both RE2
(DuckDB) and Java (Spark) read the same way."""
FIRST_FIELD = f"^{WHITESPACE}*([^ \\t\\x0B\\f]*)"
"""A TREC line's first field (its query id), group 1."""
BUCKET_BYTES = 48 << 20
"""Input bytes per bucket when the number is not given (a bucket of a TREC run then takes a few hundred MB here)."""
GZIP_RATIO = 5
"""A gzipped input's bytes counted this many times (a TREC run compresses about so much)."""


@dataclass(frozen=True)
class Side:
    """How one input's rows, a bucket at a time, become a :class:`Run` or a :class:`Dataset`.

    ``layout``: ``"trec"``, rows of one ``line`` column (the file's lines, read by the TREC loader itself, so every
    rule of :mod:`ragmetrics.io.trec` holds); ``"columns"``, rows of the table's own columns (named as a CSV, TSV or
    Parquet file or a DataFrame names them; the aliases and checks of :mod:`ragmetrics.io.columns` apply).
    ``header_line``: the line a CSV or TSV header is on, None where rows have no lines; ``delimiter``: a CSV's or a
    TSV's. A row's :data:`POSITION` is then its record's place among the records below the header (blank lines
    hold none; a quoted cell may hold line breaks), found again in the file when its line is asked for."""

    file: str
    layout: Literal["trec", "columns"]
    header_line: int | None = None
    delimiter: str = ","
    numbered: bool = True
    """:data:`POSITION` counts the records (a Parquet file's rows) from 0; False: it only increases with the file
    (Spark's row ids), and a row's line is taken to be its position's."""

    def line_of(self, positions: np.ndarray, row: int) -> int | None:
        if self.layout == "columns" and self.header_line is not None and 0 <= row < len(positions):
            record = int(positions[row])
            if self.numbered and os.path.isfile(self.file):
                return record_line(self, record)
            return record + self.header_line + 1
        return None


@dataclass(frozen=True)
class Input:
    """An input file as an engine reads it: ``format`` (one of :data:`FORMATS`), the :class:`Side` each bucket is
    read with, the table's column names (none for TREC) and the column holding the query id."""

    path: str
    kind: Literal["run", "dataset"]
    format: str
    side: Side
    columns: tuple[str, ...] = ()
    query_column: str | None = None

    @property
    def delimiter(self) -> str:
        return "\t" if self.format == "tsv" else ","


def is_gzipped(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


class _CheckedGzip(io.RawIOBase):
    """A gzipped file's bytes, whose truncated or corrupt stream is a :class:`ParseError` naming the file, as the
    in-process loaders say it (``gzip`` raises ``EOFError``, ``BadGzipFile`` or ``zlib.error`` without the name)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._file = gzip.open(path, "rb")  # noqa: SIM115 (closed by close(), as the reader that holds it is)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self._file.readinto(buffer)
        except EOFError:
            raise ParseError(self._path, None, *GZIP_CUT_SHORT) from None
        except (OSError, zlib.error) as exc:
            raise ParseError(self._path, None, "a valid gzip stream", f"corrupt data ({exc})") from None

    def close(self) -> None:
        self._file.close()
        super().close()


def open_plain(path: str) -> BinaryIO:
    """The file's bytes, decompressed when it is gzipped (detected by its magic bytes, as the loaders do)."""
    if is_gzipped(path):
        return io.BufferedReader(_CheckedGzip(path), buffer_size=1 << 20)
    return open(path, "rb")


def _head(path: str) -> bytes:
    with open_plain(path) as handle:
        return handle.read(HEAD_BYTES)


def describe(path: str, kind: Literal["run", "dataset"], *, local: bool = True) -> Input:
    """The input at ``path``. ``local``: the file is on this machine (sniffed); otherwise (a cluster's path) its
    format is taken from its extension."""

    if local and not os.path.exists(path):
        raise ParseError(path, None, "an existing file", "nothing at that path")
    if local and os.path.isdir(path):
        raise RagMetricsError(f"{path}: a folder; the partitioned engines read one file per input")
    head = _head(path) if local else b""
    # the head only: the name (its extension) and the first bytes decide the format, as for the in-process loaders
    source = open_source(head, filename=os.path.basename(path), limits=Limits.from_env())
    if not local:
        suffixes = [s for s in source.suffixes if s in KNOWN_EXTENSIONS]
        by_extension = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
        fmt = next((by_extension[s] for s in reversed(suffixes) if s in by_extension), "trec")
    else:
        fmt = detect(source, kind, None).name
    if fmt not in FORMATS:
        raise RagMetricsError(
            f"{path}: a {fmt} {kind}; the partitioned engines read {', '.join(FORMATS)} files "
            "(--engine inprocess reads every format)"
        )
    if fmt == "trec":
        return Input(path, kind, fmt, Side(path, "trec"))
    if fmt == "parquet":
        if local:
            _check_parquet(path)
        return Input(path, kind, fmt, Side(path, "columns"))

    delimiter = "\t" if fmt == "tsv" else ","
    names, header_line, _ = tables._header(source, delimiter)
    side = Side(path, "columns", header_line, delimiter)
    return Input(path, kind, fmt, side, tuple(names), _query_column(path, names))


def _check_parquet(path: str) -> None:
    """Refuse a file whose Parquet footer cannot be read (not Parquet, or cut short), naming it: the engines' own
    readers raise their errors without the name."""
    try:
        pq.ParquetFile(path).close()
    except (OSError, pa.ArrowException) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ParseError(path, None, "a complete Parquet file", problem[:160]) from None


def keyed_as_text(kind: pa.DataType) -> bool:
    """True when an engine's own cast of a column of this type to text, :data:`ragmetrics.io.columns.ID_BLANKS`
    stripped, is the id the loader reads (text and integers); a column of any other type (floats, decimals,
    booleans, bytes) is keyed by :func:`ragmetrics.io.tables.id_keys`, the loader's rule, where the engine runs."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or (pa.types.is_string_view(kind))
    )


def with_columns(found: Input, names: list[str]) -> Input:
    """``found`` with its columns as the engine reports them (Parquet)."""

    wanted = tuple(n for n in names if normalise_name(n) in PARQUET_WANTED)
    missing = [c for c in ("query_id", "doc_id") if c not in resolve(names)]
    if missing:  # named here, beside every column the file has: the engine reads only those it wants
        raise missing_columns_error(found.path, None, missing, names)
    return Input(found.path, found.kind, found.format, found.side, wanted, _query_column(found.path, wanted))


def _query_column(path: str, names: list[str] | tuple[str, ...]) -> str:

    column = resolve(names).get("query_id")
    if column is None:
        raise ParseError(path, None, f"a column {describe_aliases(['query_id'])}", f"columns {list(names)}")
    if normalise_name(column) == "query":
        raise RagMetricsError(
            f"{path}: queries are named by their text (column {column!r}); the partitioned engines bucket rows by a "
            "query id column (query_id/qid/topic): add one, or use --engine inprocess"
        )
    return column


def buckets_by_size(qrels: Input, run: Input) -> int:
    """The bucket count of an engine that holds one bucket at a time: one per :data:`BUCKET_BYTES` of input."""

    def weight(path: str) -> int:
        return os.path.getsize(path) * (GZIP_RATIO if is_gzipped(path) else 1)

    return max(1, -(-(weight(qrels.path) + weight(run.path)) // BUCKET_BYTES))


def _body_lines(side: Side) -> Iterator[str]:
    """The lines below a CSV or TSV file's header, ends kept (UTF-8; bytes that are not UTF-8 replaced: the engine
    reports them). Read as the file is iterated."""
    with open_plain(side.file) as handle:
        for number, line in enumerate(io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline=""), 1):
            if number > (side.header_line or 0):
                yield line


def _records(side: Side) -> Iterator[tuple[int, list[str]]]:
    return tables.csv_records(side.file, _body_lines(side), side.delimiter, (side.header_line or 0) + 1)


def record_line(side: Side, record: int) -> int | None:
    """The line of the file's record ``record`` (0-based, below the header) as the loader counts it. Read until
    it is found."""
    try:
        for at, (line, _fields) in enumerate(_records(side)):
            if at == record:
                return line
    except ParseError:
        return None
    return None


def ragged_record(found: Input) -> ParseError | None:
    """The loader's error for a local CSV or TSV file's first record whose fields are not the header's (or a
    malformed line); None when there is none. Read whole, in bounded memory."""
    side = found.side
    if found.format not in ("csv", "tsv") or side.header_line is None or not os.path.isfile(found.path):
        return None
    try:
        return tables.ragged_record(found.path, _body_lines(side), side.delimiter, found.columns, side.header_line + 1)
    except ParseError as exc:
        return exc


def empty_records(found: Input) -> list[int]:
    """The records of a local CSV or TSV file whose every field is empty (a line of delimiters only, ``,,``), which
    the loader refuses where it skips a blank line: their rows below the header, a blank line counted as a row (as a
    reader that reads a blank line as a row of empty cells counts it). The bytes are searched first: a file without
    a line of delimiters and quotes only is read no further. Empty when the file cannot be read here or is
    malformed (the engine's reader or :func:`ragged_record` tells that)."""
    side = found.side
    if found.format not in ("csv", "tsv") or side.header_line is None or not os.path.isfile(found.path):
        return []
    # a line break, then delimiters and quotes only: a literal first character keeps the search quick
    only_delimiters = re.compile(rb"\n[" + re.escape(side.delimiter.encode()) + rb'"]+\r?(?=\n|\Z)')
    with open_plain(found.path) as handle:
        tail = b"\n"  # every line is searched after its line break
        while block := handle.read(1 << 24):
            data = tail + block
            cut = data.rfind(b"\n")
            if only_delimiters.search(data, 0, cut + 1):
                break
            tail = data[cut:]
        else:
            if not only_delimiters.search(tail):
                return []
    rows = []
    try:
        for row, fields in enumerate(csv.reader(_body_lines(side), delimiter=side.delimiter)):
            if fields and not any(fields):
                rows.append(row)
    except csv.Error:
        return []
    return rows


def check_line_breaks(path: str) -> None:
    """Refuse a carriage return that does not end a line (the TREC loader refuses it; DuckDB would break the line
    there, Polars keep it), naming its line. Read in blocks; a block without a carriage return is only searched for
    one (the lines are counted only when one is found)."""
    with open_plain(path) as handle:
        offset, carry = 0, b""
        while block := handle.read(1 << 24):
            data = carry + block
            carry = data[-1:] if data.endswith(b"\r") else b""
            body = data[: len(data) - len(carry)]
            if b"\r" in body and body.count(b"\r") != body.count(b"\r\n"):
                at = re.search(rb"\r(?!\n)", body)
                assert at is not None
                raise ParseError(
                    path,
                    line_at(path, offset + at.start()),
                    "lines ending in \\n or \\r\\n",
                    "a carriage return (\\r) inside the line",
                )
            offset += len(body)
        if carry:
            raise ParseError(
                path, line_at(path, offset), "lines ending in \\n or \\r\\n", "a carriage return (\\r) inside the line"
            )


def line_at(path: str, offset: int) -> int:
    """The line (1-based) of the byte at ``offset`` of the file's plain bytes. Read in blocks."""
    with open_plain(path) as handle:
        lines_before = 0
        while offset > 0 and (block := handle.read(min(1 << 24, offset))):
            lines_before += block.count(b"\n")
            offset -= len(block)
    return lines_before + 1


def first_line_not_utf8(path: str) -> int | None:
    """The line of the first byte that is not UTF-8 (None: the whole file is UTF-8), for an engine whose reader
    refuses such a file without naming the line. Read in blocks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open_plain(path) as handle:
        lines_before = 0
        while block := handle.read(1 << 24):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                return lines_before + block.count(b"\n", 0, exc.start) + 1
            lines_before += block.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return lines_before + 1
    return None
