"""Runs as JSONL (or a JSON list of the same records).

Nested, one query per line::

    {"query_id": "q1", "retrieved": ["d3", "d1"]}                 # ranked ids, no scores
    {"query": "what is ...", "retrieved": [{"doc_id": "d3", "score": 0.9,
                                            "text": "...", "source_doc": "d"}]}

``query`` without ``query_id`` gives ``query_id_from_text(query)`` (the id the
evaluation set derives). Items may name the id ``doc_id``, ``id``, ``docid`` or
``chunk_id``; an item with both ``chunk_id`` and ``doc_id`` (and no
``source_doc``) is the chunk ``chunk_id`` of document ``doc_id``. Either every
item has a score or none does (then the file order is the ranking).

Flat, one retrieved document per line: ``{"query_id", "doc_id", "score"}``
with the column aliases of CSV tables.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.model import Run, query_id_from_text
from ragmetrics.io._json import first_char, first_record, records
from ragmetrics.io.columns import ALIASES, normalise_name, run_from_columns
from ragmetrics.io.source import RowLines, Source, at_lines, names_of, shorten

ITEM_ID_KEYS = ("doc_id", "id", "docid", "chunk_id")
SOURCE_KEYS = ALIASES["source_doc"]
# the keys a flat row is read for; others are dropped at once (a new key on each
# line would otherwise make a lines x keys frame)
FLAT_KEYS = {alias for names in ALIASES.values() for alias in names}


def _id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return number if math.isfinite(number) else None


def read_jsonl_run(source: Source, *, name: str) -> Run:
    qids: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    texts: list[str | None] = []
    sources: list[str | None] = []
    flat_rows: list[dict[str, Any]] = []
    flat_lines: list[int] = []
    mode: str | None = None  # "nested" or "flat"
    scored: bool | None = None
    scored_line = 0
    any_text = any_source = False
    first_keys: list[str] = []
    row_lines = RowLines()
    query_lines: dict[str, int] = {}

    for line, _number, record in records(source):
        if not isinstance(record, dict):
            raise ParseError(source.name, line, "a JSON object", type(record).__name__)
        this_mode = "nested" if "retrieved" in record else "flat"
        if mode is None:
            mode = this_mode
        elif this_mode != mode:
            expected = (
                'a "retrieved" list as on the lines before'
                if mode == "nested"
                else "one flat row per line as on the lines before"
            )
            raise ParseError(source.name, line, expected, f"keys {names_of(record)}")
        if mode == "flat":
            if not flat_rows:
                first_keys = list(record)
            flat_rows.append({k: v for k, v in record.items() if normalise_name(k) in FLAT_KEYS})
            flat_lines.append(line)
            continue

        qid = None
        for key in ("query_id", "qid"):
            if record.get(key) is not None:
                qid = _id(record[key])
                if qid is None:
                    raise ParseError(
                        source.name, line, f'"{key}" as a non-empty string or integer', shorten(record[key])
                    )
                break
        if qid is None:
            query = record.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ParseError(source.name, line, 'a "query_id" or a non-empty "query"', f"keys {names_of(record)}")
            qid = query_id_from_text(query)
        first = query_lines.setdefault(qid, line)
        if first != line:
            raise ParseError(
                source.name,
                line,
                'one record per query (its whole ranking in one "retrieved" list)',
                f"query {shorten(qid)} again",
                first_line=first,
            )
        retrieved = record["retrieved"]
        if not isinstance(retrieved, list):
            raise ParseError(source.name, line, '"retrieved" as a list', shorten(retrieved))
        row_lines.add(len(qids), line)
        for position, item in enumerate(retrieved, 1):
            doc: str | None
            text = source_doc = None
            score: float | None = None
            if isinstance(item, dict):
                id_key = next((k for k in ITEM_ID_KEYS if item.get(k) is not None), None)
                doc = _id(item[id_key]) if id_key else None
                if doc is None:
                    raise ParseError(
                        source.name,
                        line,
                        f'a "doc_id" (or id/docid/chunk_id) in retrieved item {position}',
                        f"keys {names_of(item)}" if id_key is None else shorten(item[id_key]),
                    )
                if "chunk_id" in item and id_key != "chunk_id":
                    # {"chunk_id": c, "doc_id": d}: the chunk c of document d was retrieved
                    chunk = _id(item["chunk_id"])
                    if chunk is not None:
                        doc, source_doc = chunk, doc
                for skey in SOURCE_KEYS:
                    if item.get(skey) is not None:
                        source_doc = _id(item[skey])
                        if source_doc is None:
                            raise ParseError(
                                source.name,
                                line,
                                f'"{skey}" of retrieved item {position} as a non-empty text or an integer',
                                shorten(item[skey]),
                            )
                        break
                if item.get("text") is not None:
                    if not isinstance(item["text"], str):
                        raise ParseError(
                            source.name, line, f'"text" of retrieved item {position} as a text', shorten(item["text"])
                        )
                    text = item["text"]
                has_score = item.get("score") is not None
                if has_score:
                    score = _score(item["score"])
                    if score is None:
                        raise ParseError(
                            source.name,
                            line,
                            f"a finite number as score of retrieved item {position}",
                            shorten(item["score"]),
                        )
            else:
                doc = _id(item)
                if doc is None:
                    raise ParseError(source.name, line, f"a document id as retrieved item {position}", shorten(item))
                has_score = False
            if scored is None:
                scored, scored_line = has_score, line
            elif has_score != scored:
                raise ParseError(
                    source.name,
                    line,
                    f"{'a score on every' if scored else 'no score on any'} retrieved item (as on line {scored_line})",
                    f"{'none' if scored else 'a score'} on item {position}",
                )
            qids.append(qid)
            docs.append(doc)
            scores.append(score if score is not None else 0.0)
            texts.append(text)
            sources.append(source_doc)
            any_text |= text is not None
            any_source |= source_doc is not None
        if len(qids) > source.limits.max_rows:
            source.limits.check_rows(source.name, len(qids), at_least=True)

    if mode is None:
        raise ParseError(source.name, None, "at least one JSON record", "none")
    if mode == "flat":
        frame = pd.DataFrame.from_records(flat_rows)
        _refuse_values_not_text(source, frame, flat_lines)
        frame.attrs["all_columns"] = first_keys
        return run_from_columns(source, frame, lambda row: flat_lines[row], name=name, header_line=flat_lines[0])
    frame = pd.DataFrame({"query_id": pd.Series(qids, dtype="str"), "doc_id": pd.Series(docs, dtype="str")})
    if scored:
        frame["score"] = scores
    if any_text:
        frame["text"] = texts
    if any_source:
        frame["source_doc"] = sources
    limit = source.limits.max_id_bytes
    return at_lines(source, row_lines, lambda: Run.from_frame(frame, name=name, max_id_bytes=limit))


TEXT_KEYS = frozenset(ALIASES["text"])
"""A flat row's keys whose value is a text, never a number."""
_FINE = {"string", "integer", "floating", "mixed-integer-float", "empty"}
_TEXT_ONLY = {"string", "empty"}


def _refuse_values_not_text(source: Source, frame: pd.DataFrame, lines: list[int]) -> None:
    """Refuse a flat row's value that is neither a text nor a number (an object, a list, true or false; a text
    column's value that is not a text), at its line: it would be read as Python's text of it (``{'a': 1}``). One
    pass over each column in pandas' own code; the rows are looked at one by one only to find a bad one."""
    for column in frame.columns:
        text_only = normalise_name(column) in TEXT_KEYS
        kind = pd.api.types.infer_dtype(frame[column], skipna=True)
        if kind in (_TEXT_ONLY if text_only else _FINE):
            continue
        for row, value in enumerate(frame[column]):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            if isinstance(value, (dict, list, bool)) or (text_only and not isinstance(value, str)):
                expected = f'"{column}" as a text' if text_only else f'"{column}" as a text or a number'
                raise ParseError(source.name, lines[row], expected, shorten(value))


def sniff_jsonl_run(source: Source) -> bool:
    if source.is_dir or first_char(source) != "{":
        return False
    record = first_record(source)
    if not isinstance(record, dict):
        return False
    if "retrieved" in record:
        return True
    names = {normalise_name(k) for k in record}
    return any(a in names for a in ALIASES["query_id"]) and any(a in names for a in ALIASES["doc_id"])
