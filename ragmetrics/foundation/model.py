"""The data model: an evaluation :class:`Dataset` and ranked retrieval :class:`Run` s.

Both are immutable values over Arrow tables, validated once on construction so the engine can trust
them, and carrying no state: whatever is derived from them (an alignment, its metrics) is a value of
its own that the caller holds (:func:`ragmetrics.align`). ``.frame``, ``.qrels`` and ``.queries`` give
pandas views (built on each call; pandas is imported only then).

* ``Dataset.qrels_table``: ``query_id``, ``doc_id`` (strings), ``relevance`` (int64). A label >= ``rel_level``
  (default 1) is relevant, 0 is judged non-relevant, a negative label is "in the pool but unjudged"
  (trec_eval semantics). Duplicate (query_id, doc_id) judgments are an error.
* ``Dataset.queries_table``: ``query_id``, ``query``, ``category``, ``difficulty``, ``expected_answer``,
  ``expected_keywords`` (a list per row), and any extra columns (kept as facets). Queries may have no
  judgments at all (for example a "negative" query whose answer is not in the corpus).
* ``Run.table``: ``query_id``, ``doc_id``, ``score`` (float64), and optionally ``rank``, ``text`` (the
  chunk's text) and ``source_doc`` (the document a chunk came from). Rows need not be sorted.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ragmetrics.foundation.columns import alias_renames
from ragmetrics.foundation.errors import FieldError, RagMetricsError
from ragmetrics.foundation.ids import (
    MAX_ID_BYTES,
    Strings,
    as_strings,
    dictionary_codes,
    empty_lists,
    empty_strings,
    first_duplicate,
    id_problem,
    positions_in,
    scalar_like,
    table_of,
    to_arrow,
    to_numpy,
)
from ragmetrics.foundation.kernels import cast, coalesce, elementwise, fill_null, filter_rows, is_in, unique

if TYPE_CHECKING:
    import pandas as pd

QUERY_COLUMNS = ("query_id", "query", "category", "difficulty", "expected_answer", "expected_keywords")
QUERY_TEXT_COLUMNS = QUERY_COLUMNS[1:5]
QRELS_COLUMNS = ("query_id", "doc_id", "relevance")
RUN_COLUMNS = ("query_id", "doc_id", "score")
RUN_OPTIONAL_COLUMNS = ("rank", "text", "source_doc")
KEYWORDS_TYPE = pa.list_(pa.large_string())
NEGATIVE = "negative"
"""The category of a query the corpus does not answer: no relevant document, no expected answer
(:meth:`Dataset.negative_queries`)."""


def query_id_from_text(text: str) -> str:
    """A stable id for a query that has none: ``q`` + 12 hex digits of SHA-1.

    The text is NFC-normalised and stripped first, so the same question typed on two machines gets the same id.
    """

    import hashlib  # noqa: PLC0415 (start-up: it loads OpenSSL, and only queries without ids need it)

    normalized = unicodedata.normalize("NFC", str(text)).strip()
    return "q" + hashlib.sha1(normalized.encode("utf-8")).hexdigest()[:12]


def _require_columns(columns: Iterable[str], required: Iterable[str], what: str) -> None:
    found = list(columns)
    missing = [c for c in required if c not in found]
    if missing:
        raise RagMetricsError(f"{what} is missing column(s) {missing} (found {found})")


def _check_ids(values: Strings, column: str, what: str, max_bytes: int = MAX_ID_BYTES) -> None:
    found = id_problem(values, max_bytes)
    if found is not None:
        raise FieldError(what, found[0], column, found[1])


def _column(source: Any, name: str) -> Any:
    """A column of a pandas frame or an Arrow table, as Arrow where it is one (pandas: its values)."""
    if isinstance(source, pa.Table):
        return source.column(name)
    values = source[name]
    return values.reset_index(drop=True)


def _pandas_columns(frame: Any) -> list[str]:
    return [str(c) for c in frame.columns] if not isinstance(frame, pa.Table) else frame.column_names


def _canonical_columns(table: Any) -> Any:
    """``table`` (Arrow or pandas) with its columns named as a file's are read (:mod:`ragmetrics.foundation.columns`:
    ``qid`` as ``query_id``, ``docno`` as ``doc_id``, ``label`` as ``relevance``); unchanged when they already
    are. Runs and qrels only: a query table's ``query`` is its text, not its id."""
    names = _pandas_columns(table)
    renames = alias_renames(names)
    if not renames:
        return table
    if isinstance(table, pa.Table):
        return table.rename_columns([renames.get(c, c) for c in names])
    return table.rename(columns=renames)


def _floats(values: Any) -> np.ndarray:
    """A numeric column (Arrow, pandas or a sequence) as float64, NaN where a value is not a number."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_floating(values.type) or pa.types.is_integer(values.type):
            floats = cast(values, pa.float64())
            return to_numpy(fill_null(floats, scalar_like(np.nan, pa.float64())) if floats.null_count else floats)
        values = values.to_pylist()
    dtype = getattr(values, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "O") in "fiu":
        return np.asarray(
            values.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(values, "to_numpy") else values,
            dtype=np.float64,
        )
    return np.array([_float(v) for v in values], dtype=np.float64)


def _float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _nested(mapping: Any, name: str, expected: str, *, listed: bool = False) -> list[tuple[Any, Any]]:
    """``mapping``'s ``(query_id, value)`` items, each value what ``expected`` says (a mapping, or with ``listed`` a
    sequence of ids: a string is one id, never split into characters); else a clear error."""
    if not isinstance(mapping, Mapping):
        raise RagMetricsError(f"{name!r}: expected {{query_id: {expected}}}, got {type(mapping).__name__}")
    for query, value in mapping.items():
        fits = (
            isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))
            if listed
            else isinstance(value, Mapping)
        )
        if not fits:
            raise RagMetricsError(
                f"{name!r}: query {query!r} maps to {type(value).__name__}; expected {{query_id: {expected}}}"
            )
    return list(mapping.items())


def _is_id_list(value: Any) -> bool:
    return isinstance(value, (list, tuple, set, frozenset))


def _value_at(values: Any, row: int) -> Any:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values[row].as_py()
    value = values.iloc[row] if hasattr(values, "iloc") else values[row]
    return value.item() if isinstance(value, np.generic) else value


# --- runs --------------------------------------------------------------------------------------


def _positions_in_query(query_ids: Strings) -> np.ndarray:
    """Each row's 0-based position among the rows of its query, in row order."""
    codes, _ = dictionary_codes(query_ids)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if len(codes) else np.zeros(0, int)
    within = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    out = np.empty(len(codes), dtype=np.int64)
    out[order] = within
    return out


@dataclass(frozen=True, eq=False)
class Run:
    """One system's ranked results.

    Build it with :meth:`from_frame`, :meth:`from_table`, :meth:`from_dict` or a loader from
    ``ragmetrics.io``; all validate. ``has_scores`` is False when the source gave only an order (a list of
    ids); ``score`` is then minus the position, so that sorting keeps the given order.
    """

    name: str
    table: pa.Table
    has_scores: bool = True

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, rows={self.table.num_rows:,}, has_scores={self.has_scores})"

    @classmethod
    def from_table(
        cls,
        table: pa.Table | Any,
        *,
        name: str = "run",
        has_scores: bool | None = None,
        max_id_bytes: int = MAX_ID_BYTES,
    ) -> Run:
        """Validate a table (Arrow, or a pandas frame) with ``query_id``, ``doc_id`` and ``score`` (or ``rank``).

        Without a ``score`` column but with ``rank``, the score is ``-rank``; with neither, the score is minus
        the row's position within its query (file order).
        """
        table = _canonical_columns(table)
        columns = _pandas_columns(table)
        what = f"run {name!r}"
        _require_columns(columns, ("query_id", "doc_id"), what)
        query_id, doc_id = as_strings(_column(table, "query_id")), as_strings(_column(table, "doc_id"))
        _check_ids(query_id, "query_id", what, max_id_bytes)
        _check_ids(doc_id, "doc_id", what, max_id_bytes)
        if "score" in columns:
            given = _column(table, "score")
            score = _floats(given)
            scored = True if has_scores is None else has_scores
        elif "rank" in columns:
            given = _column(table, "rank")
            score = -_floats(given)
            scored = False
        else:
            given = None
            score = -_positions_in_query(query_id).astype(np.float64)
            scored = False
        if not np.all(np.isfinite(score)):
            row = int((~np.isfinite(score)).argmax())
            column = "score" if "score" in columns else "rank"
            raise RagMetricsError(
                f"{what}: row {row + 1} has {column} {_value_at(given, row)!r}; expected a finite number"
            )
        if not isinstance(table, pa.Table):
            score = np.array(score, dtype=np.float64)  # the run's own copy: changing the frame later changes nothing
        out = {"query_id": query_id, "doc_id": doc_id, "score": to_arrow(score.astype(np.float64, copy=False))}
        for column in RUN_OPTIONAL_COLUMNS:
            if column in columns:
                values = _column(table, column)
                if column == "rank":
                    ranks = _floats(values)
                    integral = np.isfinite(ranks) & (np.mod(ranks, 1) == 0)
                    out[column] = (
                        pa.array(np.where(integral, ranks, 0).astype(np.int64), mask=~integral)
                        if not integral.all()
                        else to_arrow(ranks.astype(np.int64))
                    )
                else:
                    out[column] = as_strings(values)
        return cls(name=name, table=table_of(out), has_scores=scored)

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, *, name: str = "run", has_scores: bool | None = None, max_id_bytes: int = MAX_ID_BYTES
    ) -> Run:
        """:meth:`from_table` of a pandas frame (the frame is copied: changing it later changes nothing here)."""
        return cls.from_table(frame, name=name, has_scores=has_scores, max_id_bytes=max_id_bytes)

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, name: str = "run") -> Run:
        """From a pytrec_eval / ranx style ``{query_id: {doc_id: score}}`` mapping (ids as a frame's are read:
        bytes decoded, other values as ``str`` prints them); a score that is no number is an error naming it."""
        rows = [(q, d, s) for q, docs in _nested(run, name, "{doc_id: score}") for d, s in docs.items()]
        for q, d, s in rows:
            if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)):
                several = " (several runs: {name: Run.from_dict(...)}, one Run each)" if isinstance(s, Mapping) else ""
                raise RagMetricsError(
                    f"run {name!r}: query {q!r}, document {d!r} has score {str(s)[:80]!r}; expected a number{several}"
                )
        table = pa.table(
            {
                "query_id": as_strings([r[0] for r in rows]),
                "doc_id": as_strings([r[1] for r in rows]),
                "score": pa.array([float(r[2]) for r in rows], type=pa.float64()),
            }
        )
        return cls.from_table(table, name=name)

    @classmethod
    def from_lists(cls, ranked: Mapping[str, Iterable[str]], *, name: str = "run") -> Run:
        """From ``{query_id: [doc_id, ...]}`` in rank order (no scores)."""
        rows = [(q, d) for q, docs in _nested(ranked, name, "[doc_id, ...]", listed=True) for d in docs]
        table = pa.table({"query_id": as_strings([q for q, _ in rows]), "doc_id": as_strings([d for _, d in rows])})
        return cls.from_table(table, name=name)

    @property
    def frame(self) -> pd.DataFrame:
        """The rows as a pandas frame (``rank`` as nullable ``Int64``), built on each call."""
        return table_frame(self.table)

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def documents(self) -> pa.ChunkedArray:
        """Each row's document: ``source_doc`` where the row names one, else ``doc_id``."""
        if "source_doc" not in self.table.column_names:
            return self.table.column("doc_id")
        return coalesce(self.table.column("source_doc"), self.table.column("doc_id"))

    def with_name(self, name: str) -> Run:
        return replace(self, name=name)

    def of_queries(self, query_ids: Iterable[str]) -> Run:
        """The same run with the rows of ``query_ids`` only (in the run's own order)."""
        wanted = pa.array(sorted(set(query_ids)), type=pa.string())
        return replace(
            self, table=filter_rows(self.table, is_in(cast(self.table.column("query_id"), pa.string()), wanted))
        )

    def with_columns(self, **columns: Strings) -> Run:
        """The same run with string columns added or replaced (``source_doc``, ``text``)."""
        table = self.table
        for key, values in columns.items():
            values = as_strings(values)
            table = (
                table.set_column(table.column_names.index(key), key, values)
                if key in table.column_names
                else table.append_column(key, values)
            )
        return replace(self, table=table)

    @property
    def has_chunks(self) -> bool:
        """True when some rows name the document their chunk came from."""
        return "source_doc" in self.table.column_names and self.table.column("source_doc").null_count < len(self.table)

    def __len__(self) -> int:
        return self.table.num_rows


# --- datasets ----------------------------------------------------------------------------------


def _labels(values: Any) -> np.ndarray:
    """Integer labels (int64), or the row of the first value that is not an integer."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)) and pa.types.is_integer(values.type) and not values.null_count:
        return to_numpy(cast(values, pa.int64()))
    numbers = _floats(values)
    bad = ~np.isfinite(numbers) | (np.mod(np.nan_to_num(numbers, nan=0.5), 1) != 0)
    if bad.any():
        row = int(bad.argmax())
        raise RagMetricsError(f"qrels: row {row + 1} has relevance {_value_at(values, row)!r}; expected an integer")
    return numbers.astype(np.int64)


def _keyword_lists(values: Any) -> pa.Array:
    def as_list(v: Any) -> list[str]:
        if isinstance(v, (list, tuple, np.ndarray)):
            return [str(w) for w in v]
        if v is None or (isinstance(v, float) and np.isnan(v)) or v == "":
            return []
        return [str(v)]

    items = values.to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else list(values)
    return pa.array([as_list(v) for v in items], type=KEYWORDS_TYPE)


def _facet(values: Any) -> pa.Array | pa.ChunkedArray:
    """An extra query column as Arrow: its own type where Arrow infers one, else its values as strings."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    try:
        array = pa.array(values, from_pandas=True)
        if not (pa.types.is_struct(array.type) or (pa.types.is_null(array.type) and len(array))):
            return array
    except (pa.ArrowException, TypeError, ValueError):
        pass

    return pa.array(
        [
            None
            if v is None or (isinstance(v, float) and np.isnan(v))
            else v
            if isinstance(v, str)
            else json.dumps(v, ensure_ascii=False, default=str)
            for v in values
        ],
        type=pa.large_string(),
    )


def _text(values: Any) -> Strings:
    array = as_strings(values)
    return fill_null(array, empty_strings(1)[0]) if array.null_count else array


def repeats_title(title: str, text: str) -> bool:
    """Whether ``text`` begins with its ``title`` as a Markdown heading (``# Title``): a folder corpus's title is
    its first heading, which its text holds, and is not given twice. (A text that merely starts with its title's
    words, as a Wikipedia paragraph starts with its subject, keeps its title.)"""
    head = text.lstrip()
    return head.startswith("#") and head.lstrip("#").lstrip().startswith(title)


@dataclass(frozen=True, eq=False)
class Dataset:
    """Queries with their judged documents.

    Build it with :meth:`from_frames` / :meth:`from_tables` (both validate) or a loader from
    ``ragmetrics.io``. ``corpus_size`` (number of documents in the collection) is needed only by
    ``accuracy@k``; ``documents`` optionally holds the corpus (``doc_id``, ``title``, ``text``) for display.
    """

    qrels_table: pa.Table
    queries_table: pa.Table
    name: str = "dataset"
    corpus_size: int | None = None
    documents: pd.DataFrame | None = None

    def __repr__(self) -> str:
        corpus = "" if self.corpus_size is None else f", corpus_size={self.corpus_size:,}"
        return (
            f"Dataset(name={self.name!r}, queries={self.queries_table.num_rows:,}, "
            f"judgments={self.qrels_table.num_rows:,}{corpus})"
        )

    @classmethod
    def from_tables(
        cls,
        qrels: pa.Table | Any,
        queries: pa.Table | Any | None = None,
        *,
        name: str = "dataset",
        corpus_size: int | None = None,
        documents: pd.DataFrame | None = None,
        judged_once: bool = False,
        max_id_bytes: int = MAX_ID_BYTES,
    ) -> Dataset:
        """Validate and normalise the tables (Arrow tables or pandas frames).

        Without ``queries``, the query set is the qrels' query ids (text unknown). Queries named in the
        qrels but absent from ``queries`` are added. ``judged_once``: the caller already proved that no
        (query, document) pair is judged twice (the TREC reader does, naming the file's lines).
        """
        qrels = _canonical_columns(qrels)
        _require_columns(_pandas_columns(qrels), QRELS_COLUMNS, "qrels")
        query_id, doc_id = as_strings(_column(qrels, "query_id")), as_strings(_column(qrels, "doc_id"))
        relevance = _labels(_column(qrels, "relevance"))
        _check_ids(query_id, "query_id", "qrels", max_id_bytes)
        _check_ids(doc_id, "doc_id", "qrels", max_id_bytes)
        found = None if judged_once else first_duplicate(query_id, doc_id)
        if found is not None:
            row = found[0]
            raise RagMetricsError(
                f"qrels: row {row + 1} judges ({query_id[row].as_py()!r}, {doc_id[row].as_py()!r}) a second time; "
                "expected one label per query and document"
            )
        qrels_table = table_of({"query_id": query_id, "doc_id": doc_id, "relevance": to_arrow(relevance)})
        if corpus_size is not None and (not isinstance(corpus_size, (int, np.integer)) or corpus_size < 1):
            raise RagMetricsError(
                f"The 'corpus_size' parameter must be an int >= 1 or None. Got {corpus_size!r} instead."
            )
        return cls(
            qrels_table=qrels_table,
            queries_table=_query_table(queries, query_id),
            name=name,
            corpus_size=None if corpus_size is None else int(corpus_size),
            documents=documents,
        )

    @classmethod
    def from_frames(
        cls,
        qrels: pd.DataFrame,
        queries: pd.DataFrame | None = None,
        *,
        name: str = "dataset",
        corpus_size: int | None = None,
        documents: pd.DataFrame | None = None,
        judged_once: bool = False,
        max_id_bytes: int = MAX_ID_BYTES,
    ) -> Dataset:
        """:meth:`from_tables` of pandas frames (copied: changing them later changes nothing here)."""
        return cls.from_tables(
            qrels,
            queries,
            name=name,
            corpus_size=corpus_size,
            documents=documents,
            judged_once=judged_once,
            max_id_bytes=max_id_bytes,
        )

    @classmethod
    def from_dict(
        cls, qrels: Mapping[str, Mapping[str, int]], *, name: str = "dataset", corpus_size: int | None = None
    ) -> Dataset:
        """From a pytrec_eval / ranx style ``{query_id: {doc_id: label}}`` mapping, or LlamaIndex's and RAGAS'
        ``{query_id: [doc_id, ...]}`` (each relevant, label 1); ids as a frame's are read (bytes decoded, other values
        as ``str`` prints them)."""
        if not isinstance(qrels, Mapping):
            raise RagMetricsError(f"expected {{query_id: {{doc_id: label}}}}, got {type(qrels).__name__}")
        judged = {q: dict.fromkeys(docs, 1) if _is_id_list(docs) else docs for q, docs in qrels.items()}
        rows = [
            (q, d, r) for q, docs in _nested(judged, name, "{doc_id: label} or [doc_id, ...]") for d, r in docs.items()
        ]
        for q, d, r in rows:  # pytrec_eval's rule, as the qrels files': a label is a whole number, not "1" nor 2.0
            whole = not isinstance(r, bool) and isinstance(r, (int, np.integer))
            if not whole or not -(2**63) <= int(r) < 2**63:
                expected = "a 64-bit integer" if whole else "a whole number (an int, as pytrec_eval's qrels)"
                raise RagMetricsError(
                    f"qrels {name!r}: query {q!r}, document {d!r} has label {str(r)[:80]!r} "
                    f"({type(r).__name__}); expected {expected}"
                )
        table = pa.table(
            {
                "query_id": as_strings([r[0] for r in rows]),
                "doc_id": as_strings([r[1] for r in rows]),
                "relevance": pa.array([int(r[2]) for r in rows], type=pa.int64()),
            }
        )
        queries = pa.table({"query_id": as_strings(list(qrels))})
        return cls.from_tables(table, queries, name=name, corpus_size=corpus_size)

    def with_queries(self, queries: pa.Table | pd.DataFrame) -> Dataset:
        """The same judgments with another query table (validated; judged queries it lacks are added)."""
        return replace(self, queries_table=_query_table(queries, self.qrels_table.column("query_id")))

    @property
    def qrels(self) -> pd.DataFrame:
        """The judgments as a pandas frame (``query_id``, ``doc_id``, ``relevance``), built on each call."""
        return table_frame(self.qrels_table)

    @property
    def queries(self) -> pd.DataFrame:
        """The queries as a pandas frame (``expected_keywords`` as Python lists), built on each call."""
        return table_frame(self.queries_table)

    def document_texts(self) -> pd.Series | None:
        """Each document's text as every reader of the corpus takes it (token budgets, keyword and answer
        metrics, pools, judges), indexed by document id: its title, a newline and its text; the text alone when
        it has no title, or when the text begins with it already (:func:`repeats_title`: a folder corpus's title is
        its first heading). None when the dataset holds no document text. A document listed twice counts once (the
        first)."""
        documents = self.documents
        if documents is None or "text" not in documents.columns:
            return None
        corpus = documents.drop_duplicates("doc_id").set_index("doc_id")
        text = corpus["text"].fillna("").astype(str)
        if "title" in corpus.columns:
            title = corpus["title"].fillna("").astype(str)
            kept = [bool(t) and not repeats_title(t, x) for t, x in zip(title, text)]
            text = (title + "\n" + text).where(kept, text)
        return text

    @property
    def query_ids(self) -> np.ndarray:
        """The query ids in dataset order, as a Python object array."""
        return np.array(self.queries_table.column("query_id").to_pylist(), dtype=object)

    def negative_queries(self) -> list[str]:
        """The queries whose ``category`` is :data:`NEGATIVE` and that the dataset judges no document of: their
        answer is not in the corpus (a generated negative query's, or a set's), so nothing is to be pooled or
        judged for them and no metric of theirs means anything. In the dataset's order."""
        table = self.queries_table
        if "category" not in table.column_names:
            return []
        judged = set(self.qrels_table.column("query_id").to_pylist())
        return [
            str(q)
            for q, category in zip(table.column("query_id").to_pylist(), table.column("category").to_pylist())
            if isinstance(category, str) and category.strip().casefold() == NEGATIVE and q not in judged
        ]

    def facet(self, column: str, query_ids: Any) -> np.ndarray:
        """The text of a query column (``category``, ``difficulty``) for each of ``query_ids``, in their order: an
        object array of str, "" where a query has none or is not a query of this dataset."""
        table = self.queries_table
        where = positions_in(as_strings(query_ids), table.column("query_id"))
        labels = np.array(["" if v is None else str(v) for v in table.column(column).to_pylist()] + [""], dtype=object)
        return labels[where]

    def __len__(self) -> int:
        return self.queries_table.num_rows


def _query_table(queries: pa.Table | Any | None, judged_ids: Strings) -> pa.Table:
    judged = unique(judged_ids)
    if queries is None:
        columns: dict[str, Any] = {
            "query_id": judged if isinstance(judged, pa.Array) else pa.concat_arrays(judged.chunks)
        }
        given_keywords = False
        extras: list[str] = []
    else:
        names = _pandas_columns(queries)
        _require_columns(names, ("query_id",), "queries")
        ids = as_strings(_column(queries, "query_id"))
        _check_ids(ids, "query_id", "queries")
        codes, distinct = dictionary_codes(ids)
        if len(distinct) < len(ids):
            _, first = np.unique(codes, return_index=True)
            row = int(np.flatnonzero(first[codes] != np.arange(len(codes)))[0])
            raise RagMetricsError(f"queries: row {row + 1} repeats query_id {ids[row].as_py()!r}; expected unique ids")
        columns = {"query_id": ids}
        for column in QUERY_TEXT_COLUMNS:
            if column in names:
                columns[column] = _text(_column(queries, column))
        given_keywords = "expected_keywords" in names
        if given_keywords:
            columns["expected_keywords"] = _keyword_lists(_column(queries, "expected_keywords"))
        extras = [c for c in names if c not in QUERY_COLUMNS]
        for column in extras:
            columns[column] = _facet(_column(queries, column))
    n = len(columns["query_id"])
    table = table_of(columns)
    missing = filter_rows(judged, elementwise("invert", is_in(judged, table.column("query_id"))))
    for column in QUERY_TEXT_COLUMNS:
        if column not in table.column_names:
            table = table.append_column(column, empty_strings(n))
    if "expected_keywords" not in table.column_names:
        table = table.append_column("expected_keywords", empty_lists(n, KEYWORDS_TYPE))
    table = table.select([*QUERY_COLUMNS, *extras])
    if len(missing):
        added = {"query_id": as_strings(missing)}
        for column in table.column_names[1:]:
            kind = table.schema.field(column).type
            if column in QUERY_TEXT_COLUMNS:
                added[column] = cast(empty_strings(len(missing)), kind)
            elif column == "expected_keywords":
                added[column] = empty_lists(len(missing), kind)
            else:
                added[column] = pa.nulls(len(missing), type=kind)
        added_table = table_of(added)
        table = pa.concat_tables(
            [table, table_of({c: cast(added_table.column(c), table.schema.field(c).type) for c in table.column_names})]
        )
    return table.combine_chunks()


def table_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as pandas: strings as pandas' ``str``, nullable integers as ``Int64``, lists as Python lists."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    columns: dict[str, Any] = {}
    for name in table.column_names:
        values = table.column(name)
        kind = values.type
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            columns[name] = pd.Series(values.to_pylist(), dtype=object)
        elif pa.types.is_integer(kind) and values.null_count:
            columns[name] = pd.Series(pd.arrays.ArrowExtensionArray(values)).astype("Int64")
        else:
            columns[name] = values.to_pandas()
    return pd.DataFrame(columns, index=pd.RangeIndex(table.num_rows), copy=False)
