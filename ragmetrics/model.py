"""The data model: an evaluation :class:`Dataset` and ranked retrieval :class:`Run` s.

Both are thin, immutable wrappers over columnar pandas frames, validated once on
construction so the engine can trust them:

* ``Dataset.qrels``: ``query_id`` (str), ``doc_id`` (str), ``relevance`` (int64).
  A label >= ``rel_level`` (default 1) is relevant, 0 is judged non-relevant,
  a negative label is "in the pool but unjudged" (trec_eval semantics).
  Duplicate (query_id, doc_id) judgments are an error.
* ``Dataset.queries``: ``query_id``, ``query``, ``category``, ``difficulty``,
  ``expected_answer``, ``expected_keywords`` (a list per row), and any extra
  columns (kept as facets). Queries may have no judgments at all (for example a
  "negative" query whose answer is not in the corpus).
* ``Run.frame``: ``query_id``, ``doc_id``, ``score`` (float64), and optionally
  ``rank``, ``text`` (the chunk's text) and ``source_doc`` (the document a chunk
  came from). Rows need not be sorted; the engine sorts (see ``evaluate``).
"""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ragmetrics.errors import RagMetricsError

QUERY_COLUMNS = ("query_id", "query", "category", "difficulty", "expected_answer", "expected_keywords")
QRELS_COLUMNS = ("query_id", "doc_id", "relevance")
RUN_COLUMNS = ("query_id", "doc_id", "score")
RUN_OPTIONAL_COLUMNS = ("rank", "text", "source_doc")


def query_id_from_text(text: str) -> str:
    """A stable id for a query that has none: ``q`` + 12 hex digits of SHA-1.

    The text is NFC-normalised and stripped first, so the same question typed
    on two machines gets the same id.
    """
    normalized = unicodedata.normalize("NFC", str(text)).strip()
    return "q" + hashlib.sha1(normalized.encode("utf-8")).hexdigest()[:12]


def _as_str_column(values: Any) -> pd.Series:
    series = pd.Series(values)
    if series.dtype != "str":
        series = series.astype("str")
    return series.reset_index(drop=True)


def _require_columns(frame: pd.DataFrame, required: Iterable[str], what: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise RagMetricsError(f"{what} is missing column(s) {missing} (found {list(frame.columns)})")


def _chunks(array: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def _offsets(chunk: pa.Array) -> np.ndarray:
    """The string chunk's offsets as a numpy view (``len(chunk) + 1`` of them, slicing applied)."""
    width = np.int64 if pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type) else np.int32
    return np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset : chunk.offset + len(chunk) + 1]


def _has_empty_string(array: pa.Array | pa.ChunkedArray) -> bool:
    """True if some string is empty: two equal neighbouring offsets (no lengths array is built)."""
    for chunk in _chunks(array):
        offsets = _offsets(chunk)
        if len(chunk) and np.any(offsets[1:] == offsets[:-1]):
            return True
    return False


def _check_ids(series: pd.Series, column: str, what: str) -> None:
    """No missing or empty id (Arrow's offsets, no Python strings)."""
    try:
        array = pa.array(series)
        if (
            not array.null_count
            and (pa.types.is_string(array.type) or pa.types.is_large_string(array.type))
            and not _has_empty_string(array)
        ):
            return
    except (pa.ArrowException, TypeError, ValueError):
        pass
    if series.isna().any() or (series.str.len() == 0).any():
        bad = int((series.isna() | (series.str.len() == 0)).to_numpy().argmax())
        raise RagMetricsError(f"{what}: row {bad + 1} has an empty {column}")


def first_duplicate(first: pd.Series, second: pd.Series) -> tuple[int, int] | None:
    """``(row, earlier_row)`` of the first row whose (first, second) pair already
    appeared, or ``None``.

    Arrow sorts the pairs (stable) and compares neighbours: about 0.6 s and
    100 MB for 5M rows, where ``DataFrame.duplicated`` (Python objects) takes
    ~1 GB and hashing 5M distinct strings in Arrow ~800 MB."""
    if len(first) < 2:
        return None
    a, b = pa.chunked_array(pa.array(first)), pa.chunked_array(pa.array(second))
    order = pc.sort_indices(pa.table({"a": a, "b": b}), sort_keys=[("a", "ascending"), ("b", "ascending")])
    sorted_a, sorted_b = pc.take(a, order), pc.take(b, order)
    n = len(order)
    same = pc.and_(
        pc.equal(sorted_a.slice(1), sorted_a.slice(0, n - 1)), pc.equal(sorted_b.slice(1), sorted_b.slice(0, n - 1))
    )
    same = (
        same.to_numpy(zero_copy_only=False)
        if isinstance(same, pa.Array)
        else np.concatenate([c.to_numpy(zero_copy_only=False) for c in same.chunks] or [np.zeros(0, dtype=bool)])
    )
    del sorted_a, sorted_b
    pa.default_memory_pool().release_unused()  # numpy and pandas cannot reuse Arrow's freed pages
    if not same.any():
        return None
    row = int(order.to_numpy()[1:][same].min())
    match = pc.and_(pc.equal(a, a[row]), pc.equal(b, b[row]))
    earlier = int(pc.index(match, True).as_py())
    return row, earlier


def arrow_strings(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray | None:
    """The column as Arrow strings, zero-copy for Arrow-backed columns (chunks kept);
    ``None`` if it holds nulls or non-strings."""
    try:
        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    if array.null_count or not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return None
    return array


def positions_in(values: pd.Series, names: pd.Series | np.ndarray | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each value's position among the distinct ``names``, -1 when absent: Arrow's hash lookup when both
    are strings (5x pandas' ``get_indexer`` on 650k judgments), pandas' otherwise."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(names) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    array, known = arrow_strings(values), arrow_strings(names)
    if array is not None and known is not None:
        return (
            pc.index_in(array, value_set=known.cast(array.type)).fill_null(-1).to_numpy().astype(np.int64, copy=False)
        )
    if isinstance(names, (pa.Array, pa.ChunkedArray)):
        names = np.asarray(names.to_numpy(zero_copy_only=False), dtype=object)
    return pd.Index(names).get_indexer(values).astype(np.int64, copy=False)


def _once(cache: dict, key: Any, compute: Callable[[], Any]) -> Any:
    """``cache[key]``, computed on first use (what a Run or Dataset derives from its frames).

    Thread-safe per key: a thread that asks while another computes the same key waits for that result
    (the dashboard hashes a run for the store while another thread aligns it; both need its fingerprints)."""
    try:
        return cache[key]
    except KeyError:
        pass
    with _ONCE_GUARD:
        lock = cache.setdefault(("computing", key), threading.Lock())
    with lock:
        if key not in cache:
            cache[key] = compute()
        cache.pop(("computing", key), None)  # later callers find the value; the waiting ones hold the lock already
    return cache[key]


_ONCE_GUARD = threading.Lock()


def strings_of(values: pd.Series | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`arrow_strings`, or the values converted to Arrow strings when they are not (ids of other types)."""
    array = arrow_strings(values)
    if array is None:
        array = pa.array(pd.Series(values).astype(str).to_numpy(dtype=object), type=pa.large_string())
    return array


def factorize_ids(
    values: pd.Series | pa.Array | pa.ChunkedArray, *, grouped: bool = False
) -> tuple[np.ndarray, pa.Array | np.ndarray]:
    """``(codes, names)``: int32 codes in first-seen order and the distinct values (``names[codes]`` is the column).

    Strings are hashed by Arrow's dictionary encoder in C++ and the names stay an
    Arrow array; anything else goes through ``pd.factorize`` (names: an object array).
    ``grouped``: the column comes in blocks of equal values (a run's query ids), so
    only the first value of each block is hashed.
    """
    array = arrow_strings(values)
    if array is None:
        codes, uniques = pd.factorize(values)
        return codes.astype(np.int32, copy=False), np.asarray(uniques, dtype=object)
    if grouped and len(array) > 1:
        pieces = [
            pc.run_end_encode(c) for c in (array.chunks if isinstance(array, pa.ChunkedArray) else [array]) if len(c)
        ]
        if sum(len(p.values) for p in pieces) * 4 < len(array):
            codes, names = _dictionary_encode(pa.concat_arrays([p.values for p in pieces]))
            lengths = np.concatenate([np.diff(p.run_ends.to_numpy(), prepend=0) for p in pieces])
            return np.repeat(codes, lengths), names
    return _dictionary_encode(array)


_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_FP_SEED, _FP_MIX, _FP_SHIFT = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(31)


def _mix(h: np.ndarray, word: np.ndarray) -> None:
    """One step of the fingerprint, in place: h = f(h xor word) with f a bijection of 64-bit words."""
    h ^= word
    h *= _FP_MIX
    h ^= h >> _FP_SHIFT


FINGERPRINT_BLOCK = 1 << 15
"""Rows fingerprinted at a time: the block's temporaries stay in the core's cache and are reused, where
whole-column temporaries (80 MB each at 10M rows) were fresh pages to fault in at every step."""


def string_fingerprints(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit fingerprint of each string (its UTF-8 bytes and length), uint64.

    Equal strings always get equal fingerprints; different strings almost never
    do, so whoever needs exactness checks fingerprint matches against the
    strings. Read straight from Arrow's buffers eight bytes at a time, a block of
    rows at a time: about 0.3-0.4 s for 10M ids where hashing them into a dictionary took 1.0-1.2 s.
    """
    chunks = _chunks(array)
    out = np.empty(sum(len(c) for c in chunks), dtype=np.uint64)
    at = 0
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if not pa.types.is_large_string(chunk.type):
            chunk = chunk.cast(pa.large_string())
        offsets = _offsets(chunk)
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
        for first in range(0, len(chunk), FINGERPRINT_BLOCK):
            block = offsets[first : first + FINGERPRINT_BLOCK + 1]
            _fingerprint_block(data, block, out[at + first : at + first + len(block) - 1])
        at += len(chunk)
    return out


def _fingerprint_block(data: np.ndarray, offsets: np.ndarray, h: np.ndarray) -> None:
    """Fingerprints of the strings ``data[offsets[i]:offsets[i + 1]]`` into ``h``."""
    base, end = int(offsets[0]), int(offsets[-1])
    start = offsets[:-1] - base
    length = np.diff(offsets)
    shortest, longest = int(length.min()), int(length.max())
    # zero bytes past the end: every word read below lies inside the copy (words of ids that have ended are masked off)
    padded = np.zeros(end - base + longest + 16, dtype=np.uint8)
    padded[: end - base] = data[base:end]
    words = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    n = len(h)
    np.multiply(length.astype(np.uint64), _FP_SEED, out=h)
    for k in range(0, longest, 8):
        # an id of L bytes mixes in its ceil(L / 8) words, whatever the other ids' lengths
        if shortest > k:  # every id goes on: all rows, masked only where an id ends within the word
            _mix(h, words[start + k] & _BYTE_MASKS[np.minimum(length - k, 8)] if shortest < k + 8 else words[start + k])
        elif np.count_nonzero(live := length > k) * 4 > n:  # most go on: mix all, keep the ended ones' values
            mixed = h.copy()
            _mix(mixed, words[start + k] & _BYTE_MASKS[np.clip(length - k, 0, 8)])
            np.copyto(h, mixed, where=live)
        else:  # a few long ids: only their rows
            rows = np.flatnonzero(live)
            mixed = h[rows]
            _mix(mixed, words[start[rows] + k] & _BYTE_MASKS[np.minimum(length[rows] - k, 8)])
            h[rows] = mixed


def take_strings(values: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """``values[rows]``; rows in ascending order are taken chunk by chunk (4x faster than Arrow's
    take over a chunked array, which locates each row among the chunks)."""
    if (
        not isinstance(values, pa.ChunkedArray)
        or values.num_chunks < 2
        or len(rows) < 2
        or np.any(rows[1:] < rows[:-1])
    ):
        return pc.take(values, rows)
    bounds = np.cumsum([0] + [len(c) for c in values.chunks])
    cuts = np.searchsorted(rows, bounds)
    return pa.chunked_array(
        [
            chunk.take(rows[cuts[i] : cuts[i + 1]] - bounds[i])
            for i, chunk in enumerate(values.chunks)
            if cuts[i + 1] > cuts[i]
        ],
        type=values.type,
    )


def _dictionary_encode(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    encoded = pc.dictionary_encode(array)
    if isinstance(encoded, pa.ChunkedArray):  # chunks share one growing dictionary: the last is complete
        if encoded.num_chunks == 0:
            return np.zeros(0, dtype=np.int32), pa.array([], type=array.type)
        codes = np.concatenate([chunk.indices.to_numpy() for chunk in encoded.chunks])
        return codes.astype(np.int32, copy=False), encoded.chunk(encoded.num_chunks - 1).dictionary
    return encoded.indices.to_numpy().astype(np.int32, copy=False), encoded.dictionary


@dataclass(frozen=True, eq=False)
class Dataset:
    """Queries with their judged documents.

    Build it with :meth:`from_frames` (validates) or a loader from
    ``ragmetrics.io``. ``corpus_size`` (number of documents in the collection)
    is needed only by ``accuracy@k``; ``documents`` optionally holds the corpus
    (``doc_id``, ``title``, ``text``) for display.
    """

    qrels: pd.DataFrame
    queries: pd.DataFrame
    name: str = "dataset"
    corpus_size: int | None = None
    documents: pd.DataFrame | None = field(default=None, repr=False)
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def qrels_query_rows(self) -> np.ndarray:
        """Each judgment's row in ``queries`` (every qrels query is there), computed once per dataset."""
        return _once(
            self._derived, "query_rows", lambda: positions_in(self.qrels["query_id"], self.queries["query_id"])
        )

    def qrels_doc_values(self) -> pa.Array | pa.ChunkedArray:
        """The judged documents' ids as Arrow strings (qrels order)."""
        return _once(self._derived, "doc_values", lambda: strings_of(self.qrels["doc_id"]))

    def qrels_doc_fingerprints(self) -> np.ndarray:
        """:func:`string_fingerprints` of each judgment's document, computed once per dataset."""
        return _once(self._derived, "doc_fingerprints", lambda: string_fingerprints(self.qrels_doc_values()))

    def forget_derived(self) -> None:
        """Drop what was computed from the qrels (it is rebuilt on demand)."""
        self._derived.clear()

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
    ) -> Dataset:
        """Validate and normalise the frames.

        Without ``queries``, the query set is the qrels' query ids (text unknown).
        Queries named in the qrels but absent from ``queries`` are added.
        ``judged_once``: the caller already proved that no (query, document) pair is
        judged twice (the TREC reader does, naming the file's lines), so it is not checked again.
        """
        _require_columns(qrels, QRELS_COLUMNS, "qrels")
        qrels_out = pd.DataFrame(
            {
                "query_id": _as_str_column(qrels["query_id"]),
                "doc_id": _as_str_column(qrels["doc_id"]),
            }
        )
        relevance = pd.to_numeric(qrels["relevance"].reset_index(drop=True), errors="coerce")
        if relevance.isna().any() or not np.all(np.mod(relevance.to_numpy(dtype=float), 1) == 0):
            bad = relevance.isna() | (np.mod(relevance.fillna(0.5).to_numpy(dtype=float), 1) != 0)
            row = int(bad.to_numpy().argmax())
            raise RagMetricsError(
                f"qrels: row {row + 1} has relevance {qrels['relevance'].iloc[row]!r}; expected an integer"
            )
        qrels_out["relevance"] = relevance.astype("int64").to_numpy()
        _check_ids(qrels_out["query_id"], "query_id", "qrels")
        _check_ids(qrels_out["doc_id"], "doc_id", "qrels")
        found = None if judged_once else first_duplicate(qrels_out["query_id"], qrels_out["doc_id"])
        if found is not None:
            row = found[0]
            raise RagMetricsError(
                f"qrels: row {row + 1} judges ({qrels_out['query_id'][row]!r}, "
                f"{qrels_out['doc_id'][row]!r}) a second time; expected one label per query and document"
            )

        if queries is None:
            queries = pd.DataFrame({"query_id": pd.unique(qrels_out["query_id"])})
        _require_columns(queries, ("query_id",), "queries")
        queries_out = queries.reset_index(drop=True).copy()
        queries_out["query_id"] = _as_str_column(queries_out["query_id"])
        _check_ids(queries_out["query_id"], "query_id", "queries")
        dup = queries_out["query_id"].duplicated()
        if dup.any():
            row = int(dup.to_numpy().argmax())
            raise RagMetricsError(
                f"queries: row {row + 1} repeats query_id {queries_out['query_id'][row]!r}; expected unique ids"
            )
        judged = pa.array(pd.unique(qrels_out["query_id"]), type=pa.large_string())
        known = pc.is_in(judged, value_set=pa.array(queries_out["query_id"], type=pa.large_string()))
        extra = judged.filter(pc.invert(known)).to_pylist()
        if extra:
            queries_out = pd.concat([queries_out, pd.DataFrame({"query_id": extra})], ignore_index=True)
        given_keywords = "expected_keywords" in queries_out.columns
        for column in QUERY_COLUMNS[1:]:
            if column not in queries_out.columns:
                queries_out[column] = [[] for _ in range(len(queries_out))] if column == "expected_keywords" else ""
        for column in ("query", "category", "difficulty", "expected_answer"):
            queries_out[column] = queries_out[column].fillna("").astype("str")
        if given_keywords:
            queries_out["expected_keywords"] = [
                list(v)
                if isinstance(v, (list, tuple, np.ndarray))
                else ([] if v is None or v == "" or (isinstance(v, float) and np.isnan(v)) else [str(v)])
                for v in queries_out["expected_keywords"]
            ]
        ordered = list(QUERY_COLUMNS) + [c for c in queries_out.columns if c not in QUERY_COLUMNS]
        if corpus_size is not None and (not isinstance(corpus_size, (int, np.integer)) or corpus_size < 1):
            raise RagMetricsError(
                f"The 'corpus_size' parameter must be an int >= 1 or None. Got {corpus_size!r} instead."
            )
        return cls(
            qrels=qrels_out,
            queries=queries_out[ordered],
            name=name,
            corpus_size=None if corpus_size is None else int(corpus_size),
            documents=documents,
        )

    @classmethod
    def from_dict(
        cls,
        qrels: Mapping[str, Mapping[str, int]],
        *,
        name: str = "dataset",
        corpus_size: int | None = None,
    ) -> Dataset:
        """From a pytrec_eval / ranx style ``{query_id: {doc_id: label}}`` mapping."""
        rows = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
        frame = pd.DataFrame(rows, columns=list(QRELS_COLUMNS))
        queries = pd.DataFrame({"query_id": list(qrels.keys())})
        return cls.from_frames(frame, queries, name=name, corpus_size=corpus_size)

    @property
    def query_ids(self) -> pd.Series:
        return self.queries["query_id"]

    def __len__(self) -> int:
        return len(self.queries)


@dataclass(frozen=True, eq=False)
class Run:
    """One system's ranked results.

    ``has_scores`` is False when the source gave only an order (a list of ids);
    the loader then sets ``score`` to minus the position so that sorting keeps
    the given order.
    """

    name: str
    frame: pd.DataFrame
    has_scores: bool = True
    _derived: dict[tuple[str, str], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def id_values(self, column: str) -> pa.Array | pa.ChunkedArray:
        """``query_id``, ``doc_id`` or ``document`` (``source_doc`` where a row names one,
        else ``doc_id``) as Arrow strings, zero-copy where the frame holds Arrow strings."""

        def compute():
            frame = self.frame
            values = frame[column if column != "document" else "doc_id"]
            if column == "document" and "source_doc" in frame.columns:
                values = frame["source_doc"].fillna(frame["doc_id"])
            return strings_of(values)

        return _once(self._derived, ("values", column), compute)

    def id_codes(self, column: str) -> tuple[np.ndarray, pa.Array | np.ndarray]:
        """:func:`factorize_ids` of ``query_id``, ``doc_id`` or ``document`` (see :meth:`id_values`),
        computed once per run: every alignment of this run (with any dataset, any settings) reuses it."""
        return _once(
            self._derived,
            ("codes", column),
            lambda: factorize_ids(self.id_values(column), grouped=column == "query_id"),
        )

    def id_fingerprints(self, column: str) -> np.ndarray:
        """:func:`string_fingerprints` of each row's ``query_id``, ``doc_id`` or ``document``, computed once per run
        (query ids: each distinct id once, from :meth:`id_codes`)."""

        def compute():
            if column == "query_id":
                codes, names = self.id_codes(column)
                names = names if isinstance(names, pa.Array) else pa.array(names, type=pa.large_string())
                return string_fingerprints(names)[codes]
            return string_fingerprints(self.id_values(column))

        return _once(self._derived, ("fingerprints", column), compute)

    def forget_derived(self) -> None:
        """Drop the encoded ids, fingerprints and alignments remembered for this run (they are rebuilt on demand)."""
        self._derived.clear()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, name: str = "run", has_scores: bool | None = None) -> Run:
        """Validate a frame with ``query_id``, ``doc_id`` and ``score`` (or ``rank``).

        Without a ``score`` column but with ``rank``, the score is ``-rank``;
        with neither, the score is minus the row's position within its query
        (file order).
        """
        _require_columns(frame, ("query_id", "doc_id"), f"run {name!r}")
        out = pd.DataFrame(
            {
                "query_id": _as_str_column(frame["query_id"]),
                "doc_id": _as_str_column(frame["doc_id"]),
            }
        )
        _check_ids(out["query_id"], "query_id", f"run {name!r}")
        _check_ids(out["doc_id"], "doc_id", f"run {name!r}")
        if "score" in frame.columns:
            given = frame["score"]
            score = (
                given.to_numpy()
                if given.dtype == np.float64
                else pd.to_numeric(given.reset_index(drop=True), errors="coerce").to_numpy(dtype="float64")
            )
            scored = True if has_scores is None else has_scores
        elif "rank" in frame.columns:
            score = -pd.to_numeric(frame["rank"].reset_index(drop=True), errors="coerce").to_numpy(dtype="float64")
            scored = False
        else:
            score = -out.groupby("query_id", sort=False).cumcount().to_numpy(dtype="float64")
            scored = False
        if not np.all(np.isfinite(score)):
            row = int((~np.isfinite(score)).argmax())
            raise RagMetricsError(
                f"run {name!r}: row {row + 1} has score {frame['score'].iloc[row] if 'score' in frame.columns else frame['rank'].iloc[row]!r}; expected a finite number"
            )
        out = out.assign(score=pd.Series(score, copy=False))
        for column in RUN_OPTIONAL_COLUMNS:
            if column in frame.columns:
                values = frame[column].reset_index(drop=True)
                if column == "rank":
                    out[column] = pd.to_numeric(values, errors="coerce").astype("Int64")
                else:
                    out[column] = values.astype("str").where(values.notna(), None)
        return cls(name=name, frame=out, has_scores=scored)

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, name: str = "run") -> Run:
        """From a pytrec_eval / ranx style ``{query_id: {doc_id: score}}`` mapping."""
        rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
        return cls.from_frame(pd.DataFrame(rows, columns=list(RUN_COLUMNS)), name=name)

    @classmethod
    def from_lists(cls, ranked: Mapping[str, Iterable[str]], *, name: str = "run") -> Run:
        """From ``{query_id: [doc_id, ...]}`` in rank order (no scores)."""
        rows = [(q, d) for q, docs in ranked.items() for d in docs]
        return cls.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id"]), name=name)

    def with_name(self, name: str) -> Run:
        renamed = Run(name=name, frame=self.frame, has_scores=self.has_scores)
        renamed._derived.update(self._derived)  # same frame, same ids
        return renamed

    @property
    def has_chunks(self) -> bool:
        """True when some rows name the document their chunk came from."""
        return "source_doc" in self.frame.columns and bool(self.frame["source_doc"].notna().any())

    def __len__(self) -> int:
        return len(self.frame)
