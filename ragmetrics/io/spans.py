"""Evidence spans: relevance given as character spans of a document (a qrels extension, see docs/formats.md).

A span is ``(query_id, doc_id, start, end)``: the characters ``text[start:end]`` of the document's corpus ``text``
field (0-based, ``end`` excluded, counted in Unicode code points as Python indexes a ``str``). Three layouts:

* TREC qrels with two more columns, whitespace-separated: ``query_id iteration doc_id relevance start end``
  (one line per span; a line whose relevance is below 1 is read as a judgment without evidence and skipped);
* JSONL (or a JSON array): ``{"query_id": .., "doc_id": .., "spans": [[start, end], ...]}``, or one span per record
  with ``"start"`` and ``"end"``;
* CSV/TSV with a header naming ``query_id``, ``doc_id``, ``start`` and ``end`` (the header line says the
  delimiter; CSV quoting as Python's csv module reads it).

An offset is a whole number from 0 to :data:`MAX_OFFSET`: in a text layout, ASCII digits only (no sign, ``_``,
exponent or other script's digits); in JSON, an integer (not a float such as ``17.0``, a string or a boolean).
"""

from __future__ import annotations

import csv
import re
from typing import Any

import pyarrow as pa

from ragmetrics.foundation.errors import SOURCE_METADATA, ParseError
from ragmetrics.foundation.model import Dataset
from ragmetrics.io._json import first_char, records
from ragmetrics.io.source import names_of, open_source, shorten

SPAN_COLUMNS = ("query_id", "doc_id", "start", "end")


MAX_OFFSET = 2**63 - 1
"""The largest offset read (an int64: what the span tables hold)."""

_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_GRADE = re.compile(r"-?[0-9]{1,18}", re.ASCII)


def _offset(value: Any, name: str, line: int | None, what: str, *, text: bool) -> int:
    """``value`` read as an offset (see the module): ``text``, a cell of a text layout, else a JSON value."""
    expected = f"{what} as a whole number >= 0 ({'ASCII digits' if text else 'a JSON integer'})"
    if text:
        digits = isinstance(value, str) and _DIGITS.fullmatch(value) is not None
        if digits and len(value.lstrip("0")) > len(str(MAX_OFFSET)):  # int() of a long digit run may be refused
            raise ParseError(name, line, f"{what} of at most {MAX_OFFSET}", shorten(value))
        number = int(value) if digits else None
    else:
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if number is None or number < 0:
        raise ParseError(name, line, expected, shorten(value))
    if number > MAX_OFFSET:
        raise ParseError(name, line, f"{what} of at most {MAX_OFFSET}", shorten(value))
    return number


class _Rows:
    def __init__(self, name: str) -> None:
        self.name = name
        self.columns: dict[str, list[Any]] = {c: [] for c in SPAN_COLUMNS}
        self.lines: list[int | None] = []

    def add(self, line: int | None, query: Any, doc: Any, start: Any, end: Any, *, text: bool) -> None:
        """One span; ``text``: its offsets are cells of a text layout (else JSON values)."""
        if query is None or str(query).strip() == "" or doc is None or str(doc).strip() == "":
            raise ParseError(self.name, line, "a query id and a document id", shorten((query, doc)))
        first = _offset(start, self.name, line, "a span start", text=text)
        last = _offset(end, self.name, line, "a span end", text=text)
        if last <= first:
            raise ParseError(self.name, line, "a span end after its start", f"start {first}, end {last}")
        for column, value in zip(SPAN_COLUMNS, (str(query).strip(), str(doc).strip(), first, last)):
            self.columns[column].append(value)
        self.lines.append(line)

    def table(self) -> pa.Table:
        return pa.table(
            {
                "query_id": pa.array(self.columns["query_id"], type=pa.large_string()),
                "doc_id": pa.array(self.columns["doc_id"], type=pa.large_string()),
                "start": pa.array(self.columns["start"], type=pa.int64()),
                "end": pa.array(self.columns["end"], type=pa.int64()),
                "line": pa.array(self.lines, type=pa.int64()),
            }
        )


def _json(source: Any, rows: _Rows, key: str = "query_id") -> None:
    for line, _number, item in records(source):
        if not isinstance(item, dict):
            raise ParseError(rows.name, line, f"a JSON object with {key}, doc_id and spans", type(item).__name__)
        if key != "query_id" and key not in item:
            raise ParseError(
                rows.name, line, f"a JSON object with {key}, doc_id, start and end", f"keys {sorted(item)}"
            )
        query = item.get(key, item.get("qid")) if key == "query_id" else item.get(key)
        doc = item.get("doc_id", item.get("docid"))
        if "spans" in item:
            spans = item["spans"]
            if not isinstance(spans, list):
                raise ParseError(rows.name, line, "spans as a list of [start, end] pairs", shorten(spans))
            for span in spans:
                pair = [span.get("start"), span.get("end")] if isinstance(span, dict) else span
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ParseError(rows.name, line, "a span as [start, end]", shorten(span))
                rows.add(line, query, doc, pair[0], pair[1], text=False)
        elif "start" in item and "end" in item:
            rows.add(line, query, doc, item["start"], item["end"], text=False)
        else:
            raise ParseError(rows.name, line, "a 'spans' list or 'start' and 'end'", f"keys {sorted(item)}")


def _cells(raw: str, delimiter: str | None) -> list[str]:
    """The cells of one line: split at white space (``None``), else read as CSV with ``delimiter`` (quotes as the
    csv module reads them: a quoted cell may hold the delimiter)."""
    if delimiter is None:
        return raw.split()
    return [c.strip() for c in next(csv.reader([raw], delimiter=delimiter), [])]


def _header_like(raw: str, wanted: set[str]) -> list[str] | None:
    """The cells of ``raw`` when it reads as a header that names some of ``wanted`` (a table with other columns, a
    run's ``query_id,doc_id,score``), split at its tab or comma; else None (a data line)."""
    for candidate in ("\t", ","):
        names = [c.lower() for c in _cells(raw, candidate)]
        if len(names) > 1 and wanted & set(names):
            return names
    return None


def _delimited(text: str, rows: _Rows, key: str = "query_id") -> None:
    """A table with a header naming ``key``, ``doc_id``, ``start`` and ``end`` (its delimiter, tab, comma or white
    space, read off the header line), else TREC qrels with a span."""
    wanted = {key, "doc_id", "start", "end"}
    header: dict[str, int] | None = None
    delimiter: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if header is None:
            for candidate in ("\t", ",", None):
                names = [c.lower() for c in _cells(raw, candidate)]
                if wanted <= set(names):
                    header, delimiter = {c: i for i, c in enumerate(names)}, candidate
                    break
            if header is not None:
                continue
            named = _header_like(raw, wanted)
            if named is not None:
                missing = ", ".join(c for c in (key, "doc_id", "start", "end") if c not in named)
                raise ParseError(
                    rows.name,
                    number,
                    f"a header naming {key}, doc_id, start, end",
                    f"the columns {', '.join(named)} (no {missing})",
                )
        if header is not None:
            cells = _cells(raw, delimiter)
            if len(cells) < len(header):
                raise ParseError(rows.name, number, f"{len(header)} columns", f"{len(cells)}: {shorten(raw)}")
            rows.add(number, *(cells[header[c]] for c in (key, "doc_id", "start", "end")), text=True)
            continue
        if key != "query_id":
            raise ParseError(rows.name, number, f"a header naming {key}, doc_id, start, end", shorten(raw))
        cells = raw.split()
        if len(cells) != 6:
            raise ParseError(
                rows.name,
                number,
                "query_id iteration doc_id relevance start end (TREC qrels with a span), or a header naming "
                "query_id, doc_id, start, end",
                f"{len(cells)} columns: {shorten(raw)}",
            )
        query, _iteration, doc, relevance, start, end = cells
        if _GRADE.fullmatch(relevance) is None:
            raise ParseError(rows.name, number, "an integer relevance (ASCII digits)", shorten(relevance))
        if int(relevance) >= 1:
            rows.add(number, query, doc, start, end, text=True)


def load_spans(source: Any, *, filename: str | None = None) -> pa.Table:
    """Read evidence spans (:data:`SPAN_COLUMNS`: ``query_id``, ``doc_id``, ``start``, ``end``, and ``line``: where
    each was read, for :func:`check_spans`) from a file, bytes or file-like; a bad line raises
    :class:`ragmetrics.foundation.errors.ParseError` naming it."""
    opened = open_source(source, filename)
    rows = _Rows(opened.name)
    if first_char(opened) in "{[":
        _json(opened, rows)
    else:
        _delimited(opened.text(), rows)
    if not rows.columns["query_id"]:
        raise ParseError(opened.name, None, "at least one evidence span", "none")
    return rows.table()


def load_chunk_spans(source: Any, *, filename: str | None = None) -> pa.Table:
    """Where each chunk lies in its document: ``chunk_id, doc_id, start, end`` (CSV/TSV with that header, or JSONL
    records with those keys), offsets into the document's corpus ``text`` as for :func:`load_spans`."""
    opened = open_source(source, filename)
    rows = _Rows(opened.name)
    if first_char(opened) in "{[":
        _json(opened, rows, "chunk_id")
    else:
        _delimited(opened.text(), rows, "chunk_id")
    if not rows.columns["query_id"]:
        raise ParseError(opened.name, None, "at least one chunk with its span", "none")
    table = rows.table().rename_columns(["chunk_id", "doc_id", "start", "end", "line"])
    return table.replace_schema_metadata({SOURCE_METADATA: opened.name})


def check_spans(spans: pa.Table, name: str, dataset: Dataset, *, key: str = "query_id") -> None:
    """Spans read by :func:`load_spans` (or chunk spans, ``key="chunk_id"``) against ``dataset``: some span's query
    is the dataset's (evidence spans only), and where the dataset holds its documents' text, every span's document
    is among them and ends within its text, and an evidence span holds more than white space. A span that does not
    is a :class:`ParseError` naming ``name`` and the
    line it was read from."""
    lines = spans.column("line").to_pylist() if "line" in spans.column_names else [None] * spans.num_rows
    if key == "query_id":
        known = set(dataset.queries_table.column("query_id").to_pylist())
        queries = set(spans.column("query_id").to_pylist())
        if not queries & known:
            raise ParseError(
                name, None, f"spans of the dataset's queries {names_of(known, 3)}", f"queries {names_of(queries, 3)}"
            )
    if key == "chunk_id":
        seen: dict[str, tuple[str, int, int]] = {}
        places = zip(*(spans.column(c).to_pylist() for c in ("chunk_id", "doc_id", "start", "end")), lines, strict=True)
        for chunk, doc, start, end, line in places:
            place = (doc, start, end)
            if seen.setdefault(chunk, place) != place:
                before = seen[chunk]
                raise ParseError(
                    name,
                    line,
                    f"one place per chunk (chunk {shorten(chunk)} lies at {shorten(before[0])} {before[1]}-{before[2]}; "
                    "two chunkings in one file need chunk ids of their own)",
                    f"{shorten(doc)} {start}-{end}",
                )
    documents = dataset.documents
    if documents is None or "text" not in documents.columns:
        return
    texts = documents.drop_duplicates("doc_id").set_index("doc_id")["text"].fillna("").astype(str)
    by_id = dict(zip(texts.index.astype(str), texts))
    docs = spans.column("doc_id").to_pylist()
    starts = spans.column("start").to_pylist()
    ends = spans.column("end").to_pylist()
    for doc, start, end, line in zip(docs, starts, ends, lines, strict=True):
        text = by_id.get(doc)
        if text is None:
            raise ParseError(name, line, "a document of the corpus", f"document {shorten(doc)}, not in the corpus")
        if end > len(text):
            size = len(text.encode("utf-8"))
            bytes_hint = (
                f" (offsets count characters, not UTF-8 bytes: the document is {size} bytes long)"
                if end <= size
                else ""
            )
            raise ParseError(
                name,
                line,
                f"a span within the {len(text)} characters of document {shorten(doc)}",
                f"end {end}{bytes_hint}",
            )
        if key == "query_id" and not text[start:end].strip():
            raise ParseError(
                name, line, "a span holding evidence text", f"characters {start}-{end} of {shorten(doc)}: white space"
            )
