"""TREC runs (``qid Q0 docid rank score tag``) and qrels (``qid iter docid rel``).

Conventions (research/metric-anchors.md, sections 2 and 5.1):

* fields are split on C whitespace as trec_eval's ``sscanf`` does: space, tab, vertical tab and form feed
  (never on Unicode whitespace; a carriage return inside a line is refused);
  ids are kept byte for byte (UTF-8), case-sensitive, never normalised;
* blank lines and lines whose first non-blank character is ``#`` are skipped;
  a ``#`` anywhere else (inside a docid, say) is data;
* runs: at least 6 fields, extra fields ignored, the score (field 5) must be a
  finite number; the rank (field 4), ``Q0`` and the tag are not used;
* qrels: exactly 4 fields, the label must be an integer (negative allowed),
  one label per (query, document).

Speed: the whole file is handed to Arrow's multithreaded C CSV reader with a
single-space delimiter. Tabs are turned into spaces and comment lines emptied
with bytes operations (line numbers are kept). If Arrow refuses the file or
an empty field shows up (several spaces in a row, leading or trailing blanks),
runs of spaces are collapsed with ``bytes.replace`` and Arrow tries once more.
Runs whose lines carry different numbers of extra fields then go through
pandas' C parser. Only when that fails too does a Python scan run over the
lines: it finds the first bad line and names it. A bad value found after a C
parse (a NaN score, a repeated judgment) is mapped back to its line with numpy.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.foundation.grades import LABEL_DIGITS, LABEL_INT, LABEL_LIMIT
from ragmetrics.foundation.ids import as_strings, dictionary_codes, first_duplicate, table_of, to_arrow, to_numpy
from ragmetrics.foundation.kernels import aggregate, cast, elementwise, match_regex, sort_indices, take
from ragmetrics.foundation.memory import reading_pool
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io.source import (
    Source,
    at_lines,
    check_line_rows,
    nonempty_line_numbers,
    shorten,
)

_TAB_TO_SPACE = bytes.maketrans(b"\t\v\f", b"   ")
# unambiguous: "[0-9]+\.?[0-9]*" takes time quadratic in a digit run that fails to match
FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE_RE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)

RUN_LINE = "'qid Q0 docid rank score tag'"
QRELS_LINE = "'qid iter docid rel'"
FIELDS_READ = 16
"""Fields of a line the scans split at most (a message counts up to this many): a line of millions costs no more."""


_FIELD = re.compile(r"[^ \t\v\f]+")


def split_fields(line: str, at_most: int | None = None) -> list[str]:
    """Split on runs of C whitespace within a line (space, tab, vertical tab, form feed), as trec_eval does.
    ``at_most``: only the first ``at_most + 1`` fields (one more than the caller takes says there are more), so a
    line of millions of fields costs no more than a line of seven."""
    if at_most is not None:
        return [m.group() for m in itertools.islice(_FIELD.finditer(line), at_most + 1)]
    if "\t" in line or "\v" in line or "\f" in line:
        line = line.replace("\t", " ").replace("\v", " ").replace("\f", " ")
    fields = line.split(" ")
    return fields if "" not in fields else [f for f in fields if f]


def _count(fields: list[str], at_most: int) -> str:
    return f"more than {at_most}" if len(fields) > at_most else str(len(fields))


def _data_lines(source: Source, at_most: int) -> Iterator[tuple[int, list[str], str]]:
    """``(line number, fields, line)`` of every non-blank, non-comment line.

    The text is decoded in one go; bytes that are not UTF-8 are reported at
    their line, after the lines before it were checked.
    """
    data = source.data
    bad_line = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = data.rfind(b"\n", 0, exc.start) + 1
        text = data[:cut].decode("utf-8", errors="replace")
        bad_line = data.count(b"\n", 0, cut) + 1
        bad_byte = data[exc.start]
    for lineno, line in enumerate(text.split("\n"), 1):
        if bad_line is not None and lineno == bad_line:
            break
        line = line.removesuffix("\r")
        if "\r" in line:  # Arrow and every tool would break the line there; we would not
            raise ParseError(
                source.name, lineno, "lines ending in \\n or \\r\\n", "a carriage return (\\r) inside the line"
            )
        fields = split_fields(line, at_most)
        if fields and not fields[0].startswith("#"):
            yield lineno, fields, line
    if bad_line is not None:
        raise ParseError(source.name, bad_line, "UTF-8 text", f"byte 0x{bad_byte:02x}")


# --------------------------------------------------------------------------
# fast path helpers
# --------------------------------------------------------------------------
def _blank_comments(data: bytes) -> bytes:
    """Empty every line that starts with ``#``, keeping its line break."""
    parts = data.split(b"\n#")
    first = parts[0]
    if first.startswith(b"#"):
        nl = first.find(b"\n")
        first = b"" if nl < 0 else first[nl:]
    out = [first]
    for part in parts[1:]:
        nl = part.find(b"\n")
        out.append(b"" if nl < 0 else part[nl:])
    return b"\n".join(out)


def _has(data: Any, pattern: bytes) -> bool:
    """``pattern in data`` at memchr speed for a mapped file too (an ``mmap``'s ``in`` compares byte by byte)."""
    return bool(data.find(pattern) >= 0)


def _normalise(data: Any, *, collapse: bool) -> Any:
    """Single-space separated lines, comments emptied; ``None``: use the slow scan. ``data``: bytes, or a mapped
    file (:meth:`Source.mapped`), returned as it is when nothing changes (else the changed bytes)."""
    if _has(data, b"\t") or _has(data, b"\v") or _has(data, b"\f"):
        data = bytes(data).translate(_TAB_TO_SPACE)
    if _has(data, b"\r"):
        data = bytes(data).replace(b"\r\n", b"\n")
        if b"\r" in data:  # a lone CR: Arrow would take it for a line break
            return None
    if collapse:
        data = bytes(data)
        while b"  " in data:
            data = data.replace(b"  ", b" ")
        if data.startswith(b" "):
            data = data[1:]
        if data.endswith(b" "):
            data = data[:-1]
        data = data.replace(b"\n ", b"\n").replace(b" \n", b"\n")
    if _has(data, b"#") and (data[:1] == b"#" or _has(data, b"\n#")):
        data = _blank_comments(bytes(data))
    return data


def _first_field_count(data: Any) -> int | None:
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        if end > start:
            return bytes(data[start:end]).count(b" ") + 1
        start = end + 1
    return None


_ARROW_MAX_COLUMNS = 64


class _EmptyField(Exception):
    """A field of some line is empty (runs of blanks, or a blank at a line's start or end)."""


def _line_slices(data: bytes, parts: int) -> list[memoryview]:
    """``data`` cut into about ``parts`` pieces, each ending with a line break (the last one may not)."""
    view = memoryview(data)
    cuts = [0]
    for i in range(1, parts):
        cut = data.find(b"\n", max(len(data) * i // parts, cuts[-1])) + 1
        if cut <= 0:
            break
        cuts.append(cut)
    cuts.append(len(data))
    return [view[a:b] for a, b in itertools.pairwise(cuts) if b > a]


BYTES_PER_READER = 32 << 20  # below this a file is read by one reader (thread start-up would not pay)


def _reader_threads(size: int) -> int:
    """Parallel readers for ``size`` bytes: one per core, at most 4, each with ``BYTES_PER_READER`` at least."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4, size // BYTES_PER_READER))


def _arrow_read(
    data: bytes,
    ncols: int,
    typed: dict[int, pa.DataType],
    keep: tuple[int, ...] | None = None,
    rows_read: Callable[[int, bool], None] | None = None,
) -> pa.Table:
    """Arrow's C reader, every field as text unless ``typed``; returns the ``keep`` fields
    (``None``: all) as 64-bit-offset strings, one chunk per 16 MiB block.

    With ``keep``, an empty field anywhere raises :class:`_EmptyField`: every field is
    parsed and checked block by block, and only the kept ones are held (no substring scans
    of the whole file). Streaming readers, not ``read_csv``: each holds a block or two of
    scratch space at a time, where ``read_csv`` peaks at several times the table it returns.
    A large file is cut at line breaks into one piece per core,
    read by parallel streaming readers (Arrow releases the GIL); rows keep file order."""
    names = [f"f{i}" for i in range(ncols)]
    # kept text: 64-bit offsets, as pandas' string columns hold them (no cast, a copy, when the frame is built);
    # fields read only to see that none is empty: bytes, which Arrow neither checks as UTF-8 nor keeps
    types = {
        name: typed.get(i, pa.large_string() if keep is None or i in keep else pa.binary())
        for i, name in enumerate(names)
    }
    # 16 MiB blocks for big files; a small file is one block of its own size (no big allocation, no line across blocks)
    block = 1 << 24 if len(data) > BYTES_PER_READER else max(1 << 16, len(data) + 1)
    read_options = pacsv.ReadOptions(column_names=names, block_size=block, use_threads=False)
    parse_options = pacsv.ParseOptions(
        delimiter=" ",
        quote_char=False,
        double_quote=False,
        escape_char=False,
        newlines_in_values=False,
        ignore_empty_lines=True,
    )
    convert_options = pacsv.ConvertOptions(
        column_types=types,
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
        true_values=[],
        false_values=[],
    )
    selected = list(range(ncols)) if keep is None else list(keep)
    counted = [0]
    counting = threading.Lock()

    def read(piece: memoryview) -> list[pa.RecordBatch]:
        reader = pacsv.open_csv(
            pa.BufferReader(piece),
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
            memory_pool=reading_pool(),
        )
        batches = []
        blocks = iter(reader)
        batch = next(blocks, None)
        while batch is not None:
            following = next(blocks, None)
            if keep is not None and any(column.null_count for column in batch.columns):
                raise _EmptyField
            batches.append(batch.select(selected))
            if rows_read is not None:  # the row limit, block by block: no count of the file's lines first
                with counting:
                    counted[0] += batch.num_rows
                    total = counted[0]
                if following is not None:
                    rows_read(total, True)  # more to come: "at least"
            batch = following
        return batches

    pieces = _line_slices(data, _reader_threads(len(data)))
    if len(pieces) > 1:
        with ThreadPoolExecutor(len(pieces)) as pool:
            parts = list(pool.map(read, pieces))
    else:
        parts = [read(piece) for piece in pieces]
    schema = pa.schema([pa.field(names[i], types[names[i]]) for i in selected])
    table = pa.Table.from_batches([batch for part in parts for batch in part], schema=schema)
    if rows_read is not None:
        rows_read(table.num_rows, False)
    return table


def _fast_table(
    source: Source, *, min_cols: int, max_cols: int | None, typed: dict[int, pa.DataType], keep: tuple[int, ...]
) -> tuple[pa.Table | None, bytes | None]:
    """Arrow-parse the file: ``(table, data)``, or ``(None, collapsed data)``
    when Arrow could not (the collapsed data is ``None`` if a lone CR was seen).

    Only the ``keep`` fields become columns (memory: a run keeps 3 of 6). That
    is exact because no field may be empty when Arrow reads (:func:`_arrow_read`
    checks every field): data with runs of blanks or blanks at line ends is
    collapsed first."""
    first_length = -1
    data: bytes | None = None
    for collapse in (False, True):
        mapped = None if collapse else source.mapped()
        data = _normalise(source.data if mapped is None else mapped, collapse=collapse)
        if data is None:
            return None, None
        if len(data) == first_length:  # collapsing changed nothing: Arrow would fail again
            break
        first_length = len(data)
        ncols = _first_field_count(data)
        if ncols is None or ncols < min_cols or ncols > (max_cols or _ARROW_MAX_COLUMNS):
            continue  # a line of thousands of fields: the scan splits it faster than Arrow builds columns
        try:
            table = _arrow_read(
                data,
                ncols,
                typed,
                keep,
                rows_read=lambda rows, more: source.limits.check_rows(source.name, rows, at_least=more),
            )
            reading_pool().release_unused()  # the parser's scratch space: numpy cannot reuse it
        except _EmptyField:
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            if "conversion error" in str(exc):
                _locate_bad_value(source, data, ncols, typed)
            continue
        return table, data
    return None, data


# what a typed field must look like, and how to say so
_FIELD_RULES = {
    pa.float64(): (r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$", "a finite number as score"),
    pa.int64(): (f"^{LABEL_DIGITS}$", "an integer relevance label"),
}


def _locate_bad_value(source: Source, data: bytes, ncols: int, typed: dict[int, pa.DataType]) -> None:
    """After Arrow refused a value: read the fields as text (still in C), find
    the first value that breaks its field's rule and raise at its line.
    Returns quietly when nothing is found (the caller falls back)."""
    try:
        table = _arrow_read(data, ncols, {})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return
    if any(col.null_count for col in table.columns):
        return
    for index, kind in sorted(typed.items()):
        pattern, what = _FIELD_RULES[kind]
        ok = match_regex(table.column(f"f{index}"), pattern).to_numpy(zero_copy_only=False)
        if not ok.all():
            row = int(np.argmin(ok))
            line = int(nonempty_line_numbers(data, [row])[0])
            value = table.column(f"f{index}")[row].as_py()
            raise ParseError(source.name, line, f"{what} (field {index + 1})", shorten(value))


def _empty_file(source: Source, what: str) -> ParseError:
    return ParseError(source.name, None, f"at least one line {what}", "no data lines")


# --------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------
def _score_error(source: Source, line: int, text: str) -> ParseError:
    return ParseError(source.name, line, "a finite number as score (field 5)", shorten(text))


def _run_table(query_id: Any, doc_id: Any, score: np.ndarray) -> pa.Table:
    return table_of({"query_id": as_strings(query_id), "doc_id": as_strings(doc_id), "score": to_arrow(score)})


def parse_run_table(source: Source) -> pa.Table:
    """``query_id``, ``doc_id``, ``score`` from a TREC run file."""
    table, data = _fast_table(source, min_cols=6, max_cols=None, typed={4: pa.float64()}, keep=(0, 2, 4))
    if table is not None and data is not None:
        if table.num_rows == 0:
            raise _empty_file(source, RUN_LINE)
        score = to_numpy(table.column("f4"))
        finite = np.isfinite(score)
        if not finite.all():
            row = int(np.argmin(finite))
            line = int(nonempty_line_numbers(data, [row])[0])
            fields = split_fields(source.line_text(line), 5)
            raise _score_error(source, line, fields[4] if len(fields) > 4 else str(score[row]))
        return _run_table(table.column("f0"), table.column("f2"), score)
    check_line_rows(source, min_row_bytes=len("q Q0 d 1 1 t\n"))  # Arrow counted as it read; these parsers do not
    found = _pandas_run(source, data) if data is not None else None
    return found if found is not None else _slow_run(source)


def _pandas_run(source: Source, data: bytes | None = None) -> pa.Table | None:
    """Second C reader, for lines with different numbers of extra fields.

    pandas' C parser ignores fields beyond the ``usecols``; a line with fewer
    than 6 fields leaves an empty tag or score, which sends us to the scan.
    ``data``: the normalised (collapsed) bytes.
    """
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    if data is None:
        data = _normalise(source.data, collapse=True)
    if data is None or _first_field_count(data) is None:
        return None
    try:
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=" ",
            header=None,
            names=range(6),
            usecols=[0, 2, 4, 5],
            index_col=False,
            dtype={0: "str", 2: "str", 4: "float64", 5: "str"},
            engine="c",
            quoting=csv.QUOTE_NONE,
            na_filter=False,
            skip_blank_lines=True,
            encoding="utf-8",
        )
    except (ValueError, IndexError, pd.errors.ParserError):
        return None
    if frame.empty:
        return None
    for column in (0, 2, 5):
        if (frame[column].str.len() == 0).any():
            return None
    score = frame[4].to_numpy(dtype="float64")
    finite = np.isfinite(score)
    if not finite.all():
        row = int(np.argmin(finite))
        line = int(nonempty_line_numbers(data, [row])[0])
        fields = split_fields(source.line_text(line), 5)
        raise _score_error(source, line, fields[4] if len(fields) > 4 else str(score[row]))
    return _run_table(frame[0], frame[2], score)


def _slow_run(source: Source) -> pa.Table:
    qids: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    for lineno, fields, line in _data_lines(source, FIELDS_READ):
        if len(fields) < 6:
            raise ParseError(source.name, lineno, f"6 fields {RUN_LINE}", f"{len(fields)} field(s) in {shorten(line)}")
        text = fields[4]
        if not FLOAT_RE.match(text):
            raise _score_error(source, lineno, text)
        value = float(text)
        if not math.isfinite(value):
            raise _score_error(source, lineno, text)
        qids.append(fields[0])
        docs.append(fields[2])
        scores.append(value)
    if not qids:
        raise _empty_file(source, RUN_LINE)
    return _run_table(
        pa.array(qids, type=pa.large_string()),
        pa.array(docs, type=pa.large_string()),
        np.asarray(scores, dtype="float64"),
    )


def _data_line(source: Source, row: int) -> int | None:
    """The file line of data row ``row`` (blank and comment lines are not rows); read only for an error message."""
    seen = -1
    for number, line in enumerate(source.data.split(b"\n"), 1):
        stripped = line.strip(b" \t\r\v\f")
        if stripped and not stripped.startswith(b"#"):
            seen += 1
            if seen == row:
                return number
    return None


def read_run(source: Source, *, name: str) -> Run:
    table = parse_run_table(source)
    limit = source.limits.max_id_bytes
    run = at_lines(
        source, lambda row: _data_line(source, row), lambda: Run.from_table(table, name=name, max_id_bytes=limit)
    )
    source.release()
    return run


# --------------------------------------------------------------------------
# qrels
# --------------------------------------------------------------------------
def parse_qrels_table(source: Source) -> pa.Table:
    """``query_id``, ``doc_id``, ``relevance`` from a TREC qrels file; a second label of a pair is refused,
    naming both lines."""
    table, data = _fast_table(source, min_cols=4, max_cols=4, typed={3: pa.int64()}, keep=(0, 2, 3))
    lines: list[int] | None = None
    if table is None or data is None:
        check_line_rows(source, min_row_bytes=len("q 0 d 1\n"))  # Arrow counted as it read; the scan does not
        qrels, lines = _slow_qrels(source)
    else:
        qrels = table_of(
            {
                "query_id": as_strings(table.column("f0")),
                "doc_id": as_strings(table.column("f2")),
                "relevance": table.column("f3").combine_chunks(),
            }
        )
        if qrels.num_rows == 0:
            raise _empty_file(source, QRELS_LINE)
        labels = to_numpy(qrels.column("relevance"))
        big = np.flatnonzero((labels > LABEL_LIMIT) | (labels < -LABEL_LIMIT))
        if len(big):
            line = int(nonempty_line_numbers(data, [int(big[0])])[0])
            raise ParseError(
                source.name, line, f"a relevance label of at most {LABEL_LIMIT:,} (field 4)", str(labels[big[0]])
            )
    found = first_duplicate(qrels.column("query_id"), qrels.column("doc_id"))
    if found is not None:
        row, first = found
        q, d = qrels.column("query_id")[row].as_py(), qrels.column("doc_id")[row].as_py()
        if lines is None:
            assert data is not None
            line, first_line = (int(x) for x in nonempty_line_numbers(data, [row, first]))
        else:
            line, first_line = lines[row], lines[first]
        raise ParseError(
            source.name,
            line,
            "one label per query and document",
            f"a second label for query {shorten(q)}, document {shorten(d)}",
            first_line=first_line,
        )
    return qrels


def _slow_qrels(source: Source) -> tuple[pa.Table, list[int]]:
    qids: list[str] = []
    docs: list[str] = []
    labels: list[int] = []
    lines: list[int] = []
    for lineno, fields, line in _data_lines(source, FIELDS_READ):
        if len(fields) != 4:
            raise ParseError(
                source.name,
                lineno,
                f"4 fields {QRELS_LINE}",
                f"{_count(fields, FIELDS_READ)} field(s) in {shorten(line)}",
            )
        label = fields[3]
        if not LABEL_INT.fullmatch(label) or len(label) > 20 or not -(2**63) <= int(label) < 2**63:
            raise ParseError(source.name, lineno, "an integer relevance label (field 4)", shorten(label))
        if abs(int(label)) > LABEL_LIMIT:
            raise ParseError(source.name, lineno, f"a relevance label of at most {LABEL_LIMIT:,} (field 4)", label)
        qids.append(fields[0])
        docs.append(fields[2])
        labels.append(int(label))
        lines.append(lineno)
    if not qids:
        raise _empty_file(source, QRELS_LINE)
    table = table_of(
        {
            "query_id": pa.array(qids, type=pa.large_string()),
            "doc_id": pa.array(docs, type=pa.large_string()),
            "relevance": to_arrow(np.asarray(labels, dtype="int64")),
        }
    )
    return table, lines


def read_qrels(source: Source, *, name: str) -> Dataset:
    table = parse_qrels_table(source)
    limit = source.limits.max_id_bytes
    dataset = at_lines(
        source,
        lambda row: _data_line(source, row),
        lambda: Dataset.from_tables(table, name=name, judged_once=True, max_id_bytes=limit),
    )
    source.release()
    return dataset


# --------------------------------------------------------------------------
# sniffing
# --------------------------------------------------------------------------
def _first_fields(source: Source) -> list[str] | None:
    for raw in source.head.split(b"\n")[:100]:
        fields = split_fields(raw.rstrip(b"\r").decode("utf-8", errors="replace"), FIELDS_READ)
        if fields and not fields[0].startswith("#"):
            return fields
    return None


def sniff_run(source: Source) -> bool:
    fields = _first_fields(source)
    return bool(
        fields
        and len(fields) >= 6
        and LABEL_INT.fullmatch(fields[3])
        and (FLOAT_RE.match(fields[4]) or _NONFINITE_RE.match(fields[4]))
    )


def sniff_qrels(source: Source) -> bool:
    fields = _first_fields(source)
    return bool(fields and len(fields) == 4 and LABEL_INT.fullmatch(fields[3]))


# --------------------------------------------------------------------------
# writers
# --------------------------------------------------------------------------
_WS_RE = r"[ \t\r\n]"


def _whitespace_problem(values: pa.ChunkedArray | pa.Array, what: str) -> str | None:
    bad = match_regex(values, _WS_RE)
    if aggregate("any", bad):
        row = int(np.argmax(bad.to_numpy(zero_copy_only=False)))
        return f"{what} {values[row].as_py()!r} (row {row + 1}) contains whitespace; a TREC file cannot hold it"
    return None


def _check_no_whitespace(values: pa.ChunkedArray | pa.Array, what: str) -> None:
    problem = _whitespace_problem(values, what)
    if problem is not None:
        raise RagMetricsError(problem)


def trec_run_problem(run: Run) -> str | None:
    """Why :func:`write_trec_run` would refuse ``run`` (an id holding whitespace), or None: for a caller that
    offers the file before writing it."""
    return _whitespace_problem(run.column("query_id"), "query_id") or _whitespace_problem(
        run.column("doc_id"), "doc_id"
    )


class _NamelessGzip(gzip.GzipFile):
    """A gzip stream whose header names no file (a file written under a temporary name, then renamed, would keep
    that name there), closing the file it writes to when it is closed."""

    def __init__(self, path: str) -> None:
        self._raw = open(path, "wb")  # noqa: SIM115 (closed by close())
        super().__init__(filename="", mode="wb", fileobj=self._raw)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _open_for_write(dest: Any) -> tuple[Any, bool, bool]:
    """(stream, close_it, binary)."""

    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        if str(path).lower().endswith((".gz", ".gzip")):
            return _NamelessGzip(path), True, True
        return open(path, "wb"), True, True
    if isinstance(dest, io.TextIOBase):
        return dest, False, False
    if hasattr(dest, "write"):
        return dest, False, True
    raise TypeError(f"dest must be a path or a writable file-like object; got {type(dest).__name__}")


def _write_lines(lines: pa.Array | pa.ChunkedArray, dest: Any) -> None:
    """Write the strings, one per line, joined in Arrow (no Python str per line)."""
    stream, close, binary = _open_for_write(dest)
    lines = cast(lines, pa.large_string())
    newline = pa.scalar("\n", pa.large_string())
    try:
        step = 1 << 20
        for start in range(0, len(lines), step):
            chunk = lines[start : start + step]
            if isinstance(chunk, pa.ChunkedArray):
                chunk = chunk.combine_chunks()
            joined = elementwise(
                "binary_join", pa.LargeListArray.from_arrays(pa.array([0, len(chunk)], pa.int64()), chunk), newline
            )[0]
            data = bytes(joined.as_buffer()) + b"\n"
            stream.write(data if binary else data.decode("utf-8"))
    finally:
        if close:
            stream.close()


def _lit(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def trec_tag(name: str) -> str:
    """The TREC tag a run named ``name`` is written with: its whitespace runs as ``_`` (a tag is one field)."""
    return re.sub(r"\s+", "_", str(name).strip()) or "run"


def tag_words(name: str) -> str:
    """``run 'name'`` for the note a command writes beside a TREC run, saying when the tag written is not the name
    (``fuse --name "my run"`` writes ``my_run``: eval reads the run back under that name)."""
    tag = trec_tag(name)
    if tag == name:
        return f"run {name!r}"
    return f"run {tag!r}: the name {name!r} as a TREC tag, which holds no whitespace"


def write_trec_run(run: Run, dest: Any, *, tag: str | None = None) -> None:
    """Write ``run`` as ``qid Q0 docid rank score tag`` lines.

    Queries keep their order of first appearance; within a query rows go by
    score descending, ties by doc_id descending (trec_eval's order, byte-wise),
    and the rank is 1..n in that order. Scores are written in their shortest
    round-trip form. ``tag`` defaults to the run's name (whitespace -> ``_``).
    """
    tag = trec_tag(run.name if tag is None else tag)
    qcodes, _ = dictionary_codes(run.column("query_id"), grouped=True)
    table = table_of({"q": to_arrow(qcodes), "score": run.column("score"), "doc": run.column("doc_id")})
    order = sort_indices(table, [("q", "ascending"), ("score", "descending"), ("doc", "descending")])
    qid = take(run.column("query_id"), order)
    did = take(table.column("doc"), order)
    _check_no_whitespace(qid, "query_id")
    _check_no_whitespace(did, "doc_id")
    sorted_q = qcodes[to_numpy(order)]
    n = len(sorted_q)
    starts = np.flatnonzero(np.r_[True, sorted_q[1:] != sorted_q[:-1]]) if n else np.array([], dtype=np.int64)
    rank = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n])) + 1
    lines = elementwise(
        "binary_join_element_wise",
        qid,
        _lit("Q0"),
        did,
        cast(pa.array(rank), pa.large_string()),
        cast(take(table.column("score"), order), pa.large_string()),
        _lit(tag),
        _lit(" "),
    )
    _write_lines(lines, dest)


def write_trec_qrels(qrels: Dataset | Any, dest: Any) -> None:
    """Write ``qid 0 docid rel`` lines, in the table's row order."""
    table = qrels.qrels_table if isinstance(qrels, Dataset) else Dataset.from_frames(qrels).qrels_table
    qid, did, rel = (table.column(c) for c in ("query_id", "doc_id", "relevance"))
    _check_no_whitespace(qid, "query_id")
    _check_no_whitespace(did, "doc_id")
    lines = elementwise("binary_join_element_wise", qid, _lit("0"), did, cast(rel, pa.large_string()), _lit(" "))
    _write_lines(lines, dest)
