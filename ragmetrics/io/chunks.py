"""Chunk runs evaluated at document level: give each retrieved chunk the
document it came from (``source_doc``).

The engine, not this module, collapses chunks to documents (a document counts
at the rank of its first chunk); here we only fill the column.
"""

from __future__ import annotations

import itertools
import os
import re
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import regex as regex_engine

from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Run
from ragmetrics.io import tables
from ragmetrics.io._json import first_char, first_record, records, scan_object
from ragmetrics.io.columns import normalise_name
from ragmetrics.io.source import Source, names_of, open_source, shorten

CHUNK_COLUMNS = ("chunk_id", "chunk", "chunkid", "passage_id")
DOC_COLUMNS = ("source_doc", "doc_id", "document_id", "parent_doc", "docid", "doc")
_PAIR_KEYS = set(CHUNK_COLUMNS) | set(DOC_COLUMNS)


PATTERN_EXAMPLES = 3
"""The ids a chunk pattern that matched none of a run's ids is shown with (:func:`pattern_missed`)."""
PATTERN_SECONDS = 2.0
"""The time a chunk pattern may take over a run's chunk ids, plus :data:`PATTERN_SECONDS_PER_ID` for each distinct
id: a pattern that backtracks catastrophically (``(a|a)+$``) is stopped and named instead of holding the process."""
PATTERN_SECONDS_PER_ID = 2e-5


def _compile(pattern: str | re.Pattern[str]) -> tuple[Any, int | str]:
    """The regex (the ``regex`` engine, which takes a time limit and releases the GIL while it matches) and the
    group holding the document id."""
    text, flags = (pattern.pattern, pattern.flags & ~re.UNICODE) if isinstance(pattern, re.Pattern) else (pattern, 0)
    try:
        compiled = regex_engine.compile(text, flags)
    except (regex_engine.error, TypeError) as exc:
        raise RagMetricsError(f"chunk pattern {text!r} is not a valid regular expression: {exc}") from None
    if compiled.groups == 0 and not isinstance(pattern, re.Pattern):
        # a plain separator: the document id is everything before its last occurrence
        compiled = regex_engine.compile(r"(?s)^(?P<doc>.+)" + regex_engine.escape(text))
    if compiled.groups == 0:
        raise RagMetricsError(
            f"chunk pattern {compiled.pattern!r} needs a group for the document id, e.g. r'(?P<doc>.+)#\\d+$'"
        )
    return compiled, ("doc" if "doc" in compiled.groupindex else 1)


def _extract(uniques: pd.Series, pattern: str | re.Pattern[str]) -> pd.Series:
    """The document id each chunk id's match gives (None where it does not match), within :data:`PATTERN_SECONDS`."""
    compiled, group = _compile(pattern)
    search = compiled.search
    limit = PATTERN_SECONDS + PATTERN_SECONDS_PER_ID * len(uniques)
    deadline = time.monotonic() + limit
    found: list[str | None] = []
    for value in uniques.tolist():
        left = deadline - time.monotonic()
        try:
            match = search(value, timeout=max(left, 1e-3))
        except TimeoutError:
            raise RagMetricsError(
                f"chunk pattern {compiled.pattern!r} is too slow: it took more than {limit:.1f} s on the chunk ids "
                f"(stopped at {shorten(value)}); it backtracks without end, as nested repetition such as (a|a)+ "
                "does: write it without repeating a group that can match the same text in several ways"
            ) from None
        doc = match.group(group) if match else None
        found.append(doc or None)
    return pd.Series(found, dtype=object)


def _frame_pairs(frame: pd.DataFrame, what: str, source: Source | None = None, line_of: Any = None) -> pd.DataFrame:
    norm = {normalise_name(c): c for c in frame.columns}
    chunk = next((norm[c] for c in CHUNK_COLUMNS if c in norm), None)
    doc = next((norm[c] for c in DOC_COLUMNS if c in norm and norm[c] != chunk), None)
    if chunk is None or doc is None:
        expected = "a chunk_id column and a doc_id (or source_doc) column"
        if source is not None:
            raise ParseError(source.name, 1, expected, f"columns {names_of(frame.columns, 20, sort=False)}")
        raise RagMetricsError(f"{what}: expected {expected}, found columns {names_of(frame.columns, 20, sort=False)}")
    pairs = pd.DataFrame(
        {
            "chunk_id": frame[chunk].astype("str").str.strip().to_numpy(),
            "doc_id": frame[doc].astype("str").str.strip().to_numpy(),
        }
    )
    bad = (
        (frame[chunk].isna() | frame[doc].isna()).to_numpy()
        | (pairs["chunk_id"].str.len() == 0).to_numpy()
        | (pairs["doc_id"].str.len() == 0).to_numpy()
    )
    if bad.any():
        row = int(bad.argmax())
        if source is not None:
            raise ParseError(
                source.name,
                line_of(row) if line_of else None,
                "a chunk id and a document id",
                f"row {row + 1}: {shorten(tuple(frame.iloc[row][[chunk, doc]]))}",
            )
        raise RagMetricsError(f"{what}: row {row + 1} has an empty chunk or document id")
    return _check_pairs(pairs, what, source, line_of)


def _check_pairs(pairs: pd.DataFrame, what: str, source: Source | None, line_of: Any) -> pd.DataFrame:
    unique = pairs.drop_duplicates()
    dup = unique["chunk_id"].duplicated(keep="first")
    if dup.any():
        chunk = unique["chunk_id"][dup].iloc[0]
        docs = sorted(set(unique["doc_id"][unique["chunk_id"] == chunk]))
        rows = np.flatnonzero((pairs["chunk_id"] == chunk).to_numpy())
        if source is not None:
            line = line_of(int(rows[-1])) if line_of else None
            raise ParseError(
                source.name, line, "one document per chunk", f"chunk {shorten(chunk)} mapped to {names_of(docs)}"
            )
        raise RagMetricsError(f"{what}: chunk {shorten(chunk)} is mapped to several documents {names_of(docs)}")
    return unique.reset_index(drop=True)


def _file_pairs(source: Source) -> pd.DataFrame:
    if source.extension in (".csv", ".tsv", ".tab", ".txt") or first_char(source) not in "{[":
        delimiter = "," if source.extension == ".csv" else "\t"
        frame, line_of, _ = tables.read_delimited(source, delimiter)
        return _frame_pairs(frame, source.name, source, line_of)
    record = first_record(source)
    if (
        first_char(source) == "{"
        and not _several_values(source)
        and (
            record is None
            or (
                isinstance(record, dict)
                and all(isinstance(v, str) for v in record.values())
                and not ({normalise_name(k) for k in record} & set(CHUNK_COLUMNS))
            )
        )
    ):
        # one JSON object {chunk_id: doc_id}
        lines, chunks, docs = [], [], []
        for line, key, value in scan_object(source, source.text()):
            if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
                raise ParseError(source.name, line, f"a document id for chunk {shorten(key)}", shorten(value))
            lines.append(line)
            chunks.append(key)
            docs.append(str(value))
        pairs = pd.DataFrame({"chunk_id": chunks, "doc_id": docs}, dtype="str")
        return _check_pairs(pairs, source.name, source, lambda row: lines[row])
    rows, lines = [], []
    for line, _n, item in records(source):
        if not isinstance(item, dict):
            raise ParseError(source.name, line, "a JSON object", type(item).__name__)
        kept = {k: v for k, v in item.items() if normalise_name(k) in _PAIR_KEYS}
        if not kept:  # a corpus's records ({_id, title, text}), say: named by their keys
            raise ParseError(
                source.name, line, "a record with a chunk_id and a doc_id (or source_doc)", f"keys {sorted(item)}"
            )
        rows.append(kept)
        lines.append(line)
    return _frame_pairs(pd.DataFrame.from_records(rows), source.name, source, lambda row: lines[row])


def _several_values(source: Source) -> bool:
    """Whether the JSON file holds more than one value (JSON lines), not one object mapping chunks to documents."""
    try:
        return next(itertools.islice(records(source), 1, 2), None) is not None
    except RagMetricsError:  # one value over several lines: not records
        return False


def _mapping_pairs(mapping: Any) -> pd.DataFrame:
    if isinstance(mapping, pd.DataFrame):
        return _frame_pairs(mapping, "chunk mapping")
    if isinstance(mapping, dict):
        pairs = pd.DataFrame(
            {"chunk_id": [str(k) for k in mapping], "doc_id": [str(v) for v in mapping.values()]}, dtype="str"
        )
        return pairs
    if isinstance(mapping, (str, os.PathLike, bytes, Source)) or hasattr(mapping, "read"):
        return _file_pairs(open_source(mapping))
    raise TypeError(f"chunk mapping must be a dict, a DataFrame or a file; got {type(mapping).__name__}")


def attach_source_docs(
    run: Run,
    *,
    mapping: Any = None,
    pattern: str | re.Pattern[str] | None = None,
    mapping_name: str | None = None,
    warn: bool = True,
) -> Run:
    """A new Run whose ``source_doc`` column names each chunk's document.

    ``mapping``: a ``{chunk_id: doc_id}`` dict, a DataFrame with ``chunk_id``
    and ``doc_id`` (or ``source_doc``) columns, or a CSV/TSV/JSONL/JSON file
    of such pairs. ``pattern``: a regex whose group ``doc`` (else its first
    group) extracts the document id from the chunk id, e.g.
    ``r"(?P<doc>.+)#\\d+$"``; a string without groups is a separator, the
    document id being what precedes its last occurrence (``"#"``, ``"_C"``).
    The mapping wins over the pattern. Chunks matched by neither keep the
    ``source_doc`` they had, else their own id. Unless ``warn`` is False, a
    :class:`RagMetricsWarning` says so when the pattern matches none of the
    run's ids, and, with a mapping, how many of the run's chunk ids are left so
    (they count as unjudged unless the qrels name them), naming the mapping by
    ``mapping_name``, else its file.
    """
    return _attached(run, mapping, pattern, mapping_name, warn)[0]


def attach_pattern(run: Run, pattern: str | re.Pattern[str]) -> tuple[Run, int]:
    """:func:`attach_source_docs` by ``pattern`` alone, saying nothing, and how many distinct ids it matched: what
    a partitioned engine's bucket, which holds some of the run's ids only, reports for :func:`pattern_missed`."""
    return _attached(run, None, pattern, None, False)


def pattern_missed(run_name: str, pattern: str | re.Pattern[str], rows: int, examples: Sequence[str]) -> str:
    """The words of a chunk pattern that matched none of a run's ids: the run's ``rows`` and its first distinct ids
    in its order (``examples``, :data:`PATTERN_EXAMPLES` at most). One sentence in process and on every partitioned
    engine: both numbers add up over buckets (the rows, and each bucket's first ids by their place in the file)."""
    listed = ", ".join(shorten(c) for c in examples)
    return (
        f"run {run_name!r}: the chunk pattern {getattr(pattern, 'pattern', pattern)!r} matched none of the ids of its "
        f"{rows} rows (such as {listed}): each is evaluated under its own id"
    )


def _attached(
    run: Run, mapping: Any, pattern: str | re.Pattern[str] | None, mapping_name: str | None, warn: bool
) -> tuple[Run, int]:
    """:func:`attach_source_docs`, and the distinct ids ``pattern`` matched (0 without a pattern)."""
    if mapping is None and pattern is None:
        raise RagMetricsError("attach_source_docs needs a mapping or a pattern")
    frame = run.frame
    codes, uniques = pd.factorize(frame["doc_id"])
    uniques = pd.Series(uniques, dtype="str")
    resolved = pd.Series([None] * len(uniques), dtype=object)
    matched = 0
    if pattern is not None:
        extracted = _extract(uniques, pattern)
        resolved = extracted.astype(object).where(extracted.notna(), None)
        matched = int(extracted.notna().sum())
        if warn and len(uniques) and not matched:
            examples = list(uniques.head(PATTERN_EXAMPLES))
            warnings.warn(pattern_missed(run.name, pattern, len(frame), examples), RagMetricsWarning, stacklevel=3)
    if mapping is not None:
        if mapping_name is None and isinstance(mapping, Source):
            mapping_name = mapping.name
        pairs = _mapping_pairs(mapping)
        index = pd.Index(pairs["chunk_id"]).get_indexer(uniques)
        hit = index >= 0
        docs = pairs["doc_id"].to_numpy(dtype=object)
        values = resolved.to_numpy(dtype=object).copy()
        values[hit] = docs[index[hit]]
        resolved = pd.Series(values, dtype=object)
    per_row = resolved.to_numpy(dtype=object)[codes]
    fallback = frame["source_doc"].to_numpy(dtype=object) if "source_doc" in frame.columns else None
    if mapping is not None and warn:
        _warn_unmapped(run.name, uniques, resolved, codes, fallback, mapping_name or "the chunk mapping")
    ids = frame["doc_id"].to_numpy(dtype=object)
    missing = pd.isna(per_row)
    if fallback is not None:
        per_row = np.where(missing, fallback, per_row)
        missing = pd.isna(per_row)
    per_row = np.where(missing, ids, per_row)
    return run.with_columns(source_doc=pa.array(per_row.astype(str), type=pa.large_string())), matched


def _warn_unmapped(
    run: str, uniques: pd.Series, resolved: pd.Series, codes: np.ndarray, fallback: np.ndarray | None, name: str
) -> None:
    """Warn of the run's chunk ids that neither the mapping nor the pattern nor a ``source_doc`` of theirs maps."""
    left = pd.isna(resolved.to_numpy(dtype=object))
    if fallback is not None:
        given = np.zeros(len(uniques), dtype=bool)
        given[codes[~pd.isna(fallback)]] = True
        left &= ~given
    if left.any():
        examples = ", ".join(shorten(c) for c in uniques[left].head(3))
        warnings.warn(
            f"run {run!r}: {int(left.sum())} of its {len(uniques)} retrieved chunks are not in {name} (such as "
            f"{examples}): they keep their own ids, so they count as unjudged unless the qrels name them",
            RagMetricsWarning,
            stacklevel=4,
        )
