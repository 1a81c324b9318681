"""The ranx / pytrec_eval dictionary JSON: ``{qid: {docid: score}}`` for runs,
``{qid: {docid: label}}`` for qrels. Errors name the line of the query's key
(or of the document's key when it can be found)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.grades import LABEL_LIMIT, is_json_label
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io._json import first_char, first_record, scan_object
from ragmetrics.io.source import RowLines, Source, at_lines, shorten

LineOf = Callable[[int], int | None]


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        return False


def _doc_line(text_cache: list[str], source: Source, qline: int, doc: str) -> int:
    """Best effort: the line of ``"doc":`` at or after the query's line."""
    if not text_cache:
        text_cache.append(source.text())
    text = text_cache[0]
    start = 0
    for _ in range(qline - 1):
        start = text.find("\n", start) + 1
    for needle in (json.dumps(doc, ensure_ascii=False), json.dumps(doc)):
        pos = text.find(needle, start)
        if pos >= 0:
            return text.count("\n", 0, pos) + 1
    return qline


def _read(source: Source, *, labels: bool) -> tuple[pd.DataFrame, list[str], LineOf]:
    text = source.text()
    cache = [text]
    qids: list[str] = []
    docs: list[str] = []
    values: list[Any] = []
    order: list[str] = []
    seen: dict[str, int] = {}
    what = "an integer label" if labels else "a finite number as score"
    query_lines = RowLines()
    for line, qid, inner in scan_object(source, text):
        if qid in seen:
            raise ParseError(source.name, line, "each query once", f"{shorten(qid)} again", first_line=seen[qid])
        seen[qid] = line
        if not isinstance(inner, dict):
            raise ParseError(
                source.name,
                line,
                f"a {{doc_id: {'label' if labels else 'score'}}} object for query {shorten(qid)}",
                shorten(inner),
            )
        if not qid.strip():
            raise ParseError(source.name, line, "a non-empty query id", repr(qid))
        order.append(qid)
        query_lines.add(len(qids), line)
        if len(qids) + len(inner) > source.limits.max_rows:
            source.limits.check_rows(source.name, len(qids) + len(inner), at_least=True)
        for doc, value in inner.items():
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if labels:
                ok = is_json_label(value) and abs(value) <= LABEL_LIMIT
            elif ok:
                ok = _finite(value)
            if not ok or not doc.strip():
                found = shorten(value) if doc.strip() else "an empty document id"
                raise ParseError(
                    source.name,
                    _doc_line(cache, source, line, doc),
                    f"{what} for query {shorten(qid)}, document {shorten(doc)}"
                    if doc.strip()
                    else "a non-empty document id",
                    found,
                )
            qids.append(qid)
            docs.append(doc)
            values.append(value)
    if not order:
        raise ParseError(source.name, None, "at least one query", "an empty object")
    frame = pd.DataFrame({"query_id": pd.Series(qids, dtype="str"), "doc_id": pd.Series(docs, dtype="str")})
    if labels:
        frame["relevance"] = np.asarray(values, dtype="float64").astype("int64")
    else:
        frame["score"] = np.asarray(values, dtype="float64")

    def line_of(row: int) -> int | None:
        line = query_lines(row)
        return None if line is None else _doc_line(cache, source, line, docs[row])

    return frame, order, line_of


def read_dict_run(source: Source, *, name: str) -> Run:
    frame, _, line_of = _read(source, labels=False)
    limit = source.limits.max_id_bytes
    return at_lines(source, line_of, lambda: Run.from_frame(frame, name=name, max_id_bytes=limit))


def read_dict_dataset(source: Source, *, name: str) -> Dataset:
    frame, order, line_of = _read(source, labels=True)
    queries = pd.DataFrame({"query_id": order})
    limit = source.limits.max_id_bytes
    return at_lines(source, line_of, lambda: Dataset.from_frames(frame, queries, name=name, max_id_bytes=limit))


def sniff_dict_json(source: Source) -> bool:
    if source.is_dir or first_char(source) != "{":
        return False
    record = first_record(source)
    if record is None:  # pretty-printed, or a first line longer than the sniffed head
        return _DICT_START.match(source.head) is not None
    return isinstance(record, dict) and bool(record) and all(isinstance(v, dict) for v in record.values())


# '{', a quoted key, ':', '{' : the opening of {qid: {docid: value}}
_DICT_START = re.compile(rb'\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')
