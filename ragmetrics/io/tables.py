"""CSV / TSV with a header line, and Parquet, with case-insensitive column
aliases (see ``_columns.ALIASES``).

A table with a relevance column (relevance/label/rel/grade) is a qrels table
(``load_dataset``); otherwise it is a run (``load_run``). Parsing is Arrow's C
reader with every column read as text; values are then checked column-wise,
and a bad cell is reported with its line (the header is line 1).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ragmetrics.errors import ParseError
from ragmetrics.io._columns import ALIASES, dataset_from_columns, normalise_name, run_from_columns
from ragmetrics.io._source import PARQUET_MAGIC, Source, decode, nonempty_line_numbers, shorten
from ragmetrics.model import Dataset, Run

_KNOWN = {alias for names in ALIASES.values() for alias in names}


def _header(source: Source, delimiter: str) -> tuple[list[str], int, int]:
    """(column names, header line number, byte offset where the body starts)."""
    data = source.data
    start, line = 0, 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end].rstrip(b"\r")
        if raw.strip(b" \t"):
            text = decode(raw, source.name, first_line=line)
            names = [n.strip() for n in next(csv.reader([text], delimiter=delimiter))]
            if any(not n for n in names):
                raise ParseError(source.name, line, "a header line with a name for every column", shorten(text))
            seen: set[str] = set()
            for n in names:
                if n in seen:
                    raise ParseError(source.name, line, "unique column names in the header", f"{n!r} twice")
                seen.add(n)
            return names, line, min(end + 1, len(data))
        start, line = end + 1, line + 1
    raise ParseError(source.name, None, "a header line and rows", "no data")


def _csv_lines(text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    """Python ``csv`` scan of the body: (first line, fields) per non-empty record."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    out = []
    previous = 0
    for record in reader:
        if record:
            out.append((previous + 1, record))
        previous = reader.line_num
    return out


def read_delimited(source: Source, delimiter: str) -> tuple[pd.DataFrame, Callable[[int], int | None], int]:
    """All columns as strings; ``line_of(row)`` gives a data row's line; the header line."""
    names, header_line, body_start = _header(source, delimiter)
    body = source.data[body_start:]
    quoted = b'"' in body
    try:
        table = pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, quote_char='"', double_quote=True, escape_char=False,
                newlines_in_values=quoted, ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, null_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        text = decode(body, source.name, first_line=header_line + 1)
        for line, record in _csv_lines(text, delimiter):
            if len(record) != len(names):
                raise ParseError(
                    source.name, line + header_line,
                    f"{len(names)} fields like the header", f"{len(record)} in {shorten(delimiter.join(record))}",
                ) from None
        raise ParseError(source.name, None, "a well-formed table", str(exc).splitlines()[0]) from None

    cache: list[list[int]] = []

    def line_of(row: int) -> int | None:
        if not quoted:
            return int(nonempty_line_numbers(body, [row])[0]) + header_line
        if not cache:
            text = body.decode("utf-8", errors="replace")
            cache.append([line for line, _ in _csv_lines(text, delimiter)])
        return cache[0][row] + header_line

    return table.to_pandas(), line_of, header_line


def read_parquet(source: Source) -> pd.DataFrame:
    try:
        table = pq.read_table(pa.BufferReader(source.data))
    except (pa.ArrowException, OSError) as exc:
        raise ParseError(source.name, None, "a Parquet file", str(exc).splitlines()[0]) from None
    return table.to_pandas()


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
    return not source.is_dir and source.raw[:4] == PARQUET_MAGIC


__all__ = [
    "read_csv_run", "read_tsv_run", "read_parquet_run",
    "read_csv_dataset", "read_tsv_dataset", "read_parquet_dataset",
    "sniff_csv_run", "sniff_tsv_run", "sniff_csv_dataset", "sniff_tsv_dataset", "sniff_parquet",
]
