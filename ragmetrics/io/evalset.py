"""The hand-written evaluation set: a JSON list or JSONL of records

    {"query": ..., "expected_answer": ..., "expected_keywords": [...],
     "relevant_docs": [...] or {doc: grade}, "difficulty": ..., "category": ...}

with an optional ``"query_id"`` (or ``"id"``). Without one, the id is
``query_id_from_text(query)``. ``relevant_docs`` as a list gives grade 1 to
each document; as a map it gives the grades. It may be empty or missing (a
query without judgments, for example category "negative"). Other keys are kept
as extra query columns. Errors name the line and, for a JSON list, the record
number and its query.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ragmetrics.foundation.errors import ParseError, RagMetricsWarning
from ragmetrics.foundation.grades import is_json_label
from ragmetrics.foundation.model import Dataset, query_id_from_text
from ragmetrics.io._json import first_char, first_record, records, whole_array
from ragmetrics.io.source import Source, check_id, check_text, names_of, shorten

ID_KEYS = ("query_id", "id")
GRADE_LIMIT = 2**53
#: each distinct extra key becomes a column for every query: a file naming a
#: new key on each line would otherwise grow as lines x keys
MAX_EXTRA_KEYS = 100
TEXT_FIELDS = ("expected_answer", "category", "difficulty")
KNOWN = {"query", "expected_answer", "expected_keywords", "relevant_docs", "difficulty", "category", *ID_KEYS}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_doc_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if _is_int(value):
        return str(value)
    return None


def record_query_id(record: Mapping[str, Any]) -> str | None:
    """A record's query id: its ``query_id`` (or ``id``), else ``query_id_from_text(query)``; None when the id it
    gives is not a non-empty string or an integer."""
    for key in ID_KEYS:
        if record.get(key) is not None:
            return _as_doc_id(record[key])
    return query_id_from_text(record["query"])


def with_judgments(source: Source, dataset: Dataset) -> list[dict[str, Any]]:
    """The evaluation set's records in their order, each query's ``relevant_docs`` now its judgments in ``dataset``
    (a ``{doc: grade}`` map; none: ``{}``), every other key as it was (its answer, keywords, category,
    provenance). The set was read before (:func:`read_evalset`): its records are valid."""
    table = dataset.qrels_table
    judgments: dict[str, dict[str, int]] = {}
    for query, doc, grade in zip(*(table.column(c).to_pylist() for c in ("query_id", "doc_id", "relevance"))):
        judgments.setdefault(query, {})[doc] = int(grade)
    items = whole_array(source)
    found = [item for _, _, item in records(source)] if items is None else items
    return [record | {"relevant_docs": judgments.get(record_query_id(record) or "", {})} for record in found]


def write_evalset(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Records as an evaluation set (or any JSON records: synth's chunks): a JSON list for a ``.json`` path, else
    JSONL (UTF-8, not ASCII-escaped)."""
    rows = list(rows)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        if str(path).lower().endswith(".json"):
            json.dump(rows, handle, ensure_ascii=False, indent=1)
            handle.write("\n")
        else:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def read_evalset(source: Source, *, name: str) -> Dataset:
    items = whole_array(source)
    if items is not None:
        try:
            return _read(source, name, ((0, number, item) for number, item in enumerate(items, 1)))
        except ParseError:
            pass  # read again item by item: the message names the item's line
    return _read(source, name, records(source))


def _read(source: Source, name: str, items: Iterable[tuple[int, int, Any]]) -> Dataset:
    """The dataset of ``(line, record_number, record)`` items (line 0: not known, see :func:`read_evalset`)."""
    is_list = first_char(source) == "["
    query_rows: list[dict[str, Any]] = []
    qrels: list[tuple[str, str, int]] = []
    seen: dict[str, tuple[int, int]] = {}
    extra_keys: set[str] = set()
    hashed: list[int] = []  # the lines of records without an id

    for line, number, record in items:
        where = f" in record {number}" if is_list else ""

        def fail(expected: str, found: str, query: Any = None) -> ParseError:
            about = f" (query {shorten(query, 50)})" if is_list and query is not None else ""
            return ParseError(source.name, line, expected + where, found + about)  # noqa: B023 - raised in this iteration

        if not isinstance(record, dict):
            raise fail("a JSON object", type(record).__name__)
        query = record.get("query")
        if not isinstance(query, str) or not query.strip():
            if "query" not in record:
                raise fail('a "query" key', f"keys {names_of(record)}")
            raise fail('a non-empty "query" string', shorten(query))
        check_text(source, line or None, query, 'a "query"' + where)

        qid = record_query_id(record)
        if qid is None:
            key = next(k for k in ID_KEYS if record.get(k) is not None)
            raise fail(f'"{key}" as a non-empty string or an integer', shorten(record[key]), query)
        check_id(source, line or None, qid, "a query id")
        if qid in seen:
            first_line, first_number = seen[qid]
            first = f"record {first_number}, line {first_line}" if is_list else f"line {first_line}"
            raise fail(
                'a unique query id (give the records distinct "query_id"s)',
                f"{shorten(qid)} again, as on {first}",
                query,
            )
        seen[qid] = (line, number)
        if not any(record.get(k) is not None for k in ID_KEYS):
            hashed.append(line)

        row: dict[str, Any] = {"query_id": qid, "query": query}
        for key in TEXT_FIELDS:
            value = record.get(key)
            if value is None:
                row[key] = ""
            elif isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                row[key] = check_text(source, line or None, str(value), f'a "{key}"' + where)
            else:
                raise fail(f'"{key}" as a string', shorten(value), query)

        keywords = record.get("expected_keywords")
        if keywords is None:
            row["expected_keywords"] = []
        elif isinstance(keywords, str):
            row["expected_keywords"] = [check_text(source, line or None, keywords, '"expected_keywords"' + where)]
        elif isinstance(keywords, list) and all(
            isinstance(k, (str, int, float)) and not isinstance(k, bool) for k in keywords
        ):
            row["expected_keywords"] = [
                check_text(source, line or None, str(k), 'an "expected_keywords" item' + where) for k in keywords
            ]
        else:
            raise fail('"expected_keywords" as a list of strings', shorten(keywords), query)

        docs = record.get("relevant_docs")
        judged: dict[str, int] = {}
        if docs is None:
            pass
        elif isinstance(docs, list):
            for item in docs:
                doc = _as_doc_id(item)
                if doc is None:
                    raise fail('"relevant_docs" items as document ids (strings)', shorten(item), query)
                if doc in judged:
                    raise fail('each document once in "relevant_docs"', f"{shorten(doc)} twice", query)
                judged[doc] = 1
        elif isinstance(docs, dict):
            for key, grade in docs.items():
                doc = _as_doc_id(key)
                if doc is None:
                    raise fail('"relevant_docs" keys as document ids', shorten(key), query)
                if not is_json_label(grade) or abs(grade) > GRADE_LIMIT:
                    raise fail(f'an integer grade for {shorten(doc)} in "relevant_docs"', shorten(grade), query)
                if doc in judged:
                    raise fail('each document once in "relevant_docs"', f"{shorten(doc)} twice", query)
                judged[doc] = grade
        else:
            raise fail('"relevant_docs" as a list of ids or a {doc: grade} map', shorten(docs), query)
        for doc in judged:
            check_id(source, line or None, doc, "a document id")
        qrels.extend((qid, doc, grade) for doc, grade in judged.items())

        for key, value in record.items():
            if key not in KNOWN:
                if key not in extra_keys:
                    if len(extra_keys) >= MAX_EXTRA_KEYS:
                        raise fail(
                            f"at most {MAX_EXTRA_KEYS} distinct extra keys (kept as query columns)",
                            f"one more, {shorten(key)}",
                            query,
                        )
                    extra_keys.add(key)
                row[key] = value
        query_rows.append(row)

    if not query_rows:
        raise ParseError(source.name, None, "at least one record", "none")
    if hashed and len(hashed) < len(query_rows):  # some records named, some not: likely an id left out
        shown = ", ".join(str(line) for line in hashed[:5]) + (", ..." if len(hashed) > 5 else "")
        warnings.warn(
            f'{source.name}: {len(hashed)} of {len(query_rows)} records have no "query_id" (line(s) {shown}): '
            "each gets an id made from its query text (a run that names the query by its id will not meet it)",
            RagMetricsWarning,
            stacklevel=3,
        )
    queries = pd.DataFrame(query_rows)
    qrels_frame = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    qrels_frame = qrels_frame.astype({"query_id": "str", "doc_id": "str", "relevance": "int64"})
    return Dataset.from_frames(qrels_frame, queries, name=name)


def sniff_evalset(source: Source) -> bool:
    if source.is_dir:
        return False
    start = first_char(source)
    if start == "[":
        return b'"query"' in source.head
    record = first_record(source)
    return isinstance(record, dict) and "query" in record and "retrieved" not in record
