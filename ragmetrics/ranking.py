"""Aligning a run with a dataset into a columnar :class:`Ranking`, the engine's core.

The run is sorted once (score descending as float64, ties by doc_id descending in
byte order, as trec_eval; the file's rank column and line order are ignored),
duplicate (query, doc) rows keep their best-ranked occurrence, and each row's
label is looked up per query: document ids are compared by 64-bit fingerprints
within each query (every match confirmed on the strings), with dictionary-encoded
ids as the exact fallback when a fingerprint collides or the run is too ragged.
Every metric at every cut-off then comes from per-query cumulative sums: flat
arrays for whole-ranking metrics, a dense query-by-rank matrix (built once per
depth) for cut-off metrics and curves.
"""

from __future__ import annotations

import dataclasses
import unicodedata
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ragmetrics.errors import RagMetricsError
from ragmetrics.model import Dataset, Run, factorize_ids, positions_in, query_id_from_text, take_strings

UNJUDGED = np.iinfo(np.int64).min
"""The label of a row whose document is not judged: the smallest value of the labels' dtype
(``np.iinfo(ranking.label.dtype).min``, this constant when labels are int64), below every judged
label and below the relevance level, so an unjudged document is never relevant."""
GainMode = Literal["linear", "exponential"]
Missing = Literal["zero", "skip"]
Level = Literal["auto", "document", "chunk"]
Order = Literal["score", "file"]


@dataclass
class Coverage:
    """What alignment found; every count comes with up to ``EXAMPLES`` example ids."""

    queries_evaluated: int = 0
    missing_in_run: list[str] = field(default_factory=list)
    not_in_dataset: list[str] = field(default_factory=list)
    rows_not_in_dataset: int = 0
    no_judgments: list[str] = field(default_factory=list)
    no_relevant: list[str] = field(default_factory=list)
    matched_by_text: int = 0
    duplicates_dropped: int = 0
    duplicate_queries: list[str] = field(default_factory=list)
    chunks_merged: int = 0
    tied_pairs: int = 0
    tied_queries: list[str] = field(default_factory=list)
    empty_run: bool = False

    def notes(self) -> list[str]:
        """What a user should know about this alignment, one short phrase per issue found."""
        found = []
        if self.missing_in_run:
            found.append(f"{len(self.missing_in_run)} judged queries missing from the run (scored 0)")
        if self.not_in_dataset:
            found.append(f"{len(self.not_in_dataset)} run queries not in the dataset (dropped)")
        if self.duplicates_dropped:
            found.append(f"{self.duplicates_dropped} duplicate rows dropped")
        if self.no_relevant:
            found.append(f"{len(self.no_relevant)} queries without a relevant document (scored 0)")
        return found

    def summary(self) -> dict[str, int]:
        """Counts only, for tables and warnings."""
        return {
            "queries_evaluated": self.queries_evaluated,
            "missing_in_run": len(self.missing_in_run),
            "not_in_dataset": len(self.not_in_dataset),
            "no_judgments": len(self.no_judgments),
            "no_relevant": len(self.no_relevant),
            "matched_by_text": self.matched_by_text,
            "duplicates_dropped": self.duplicates_dropped,
            "chunks_merged": self.chunks_merged,
            "tied_pairs": self.tied_pairs,
            "tied_queries": len(self.tied_queries),
        }


def _segment_starts(q: np.ndarray, n_queries: int) -> np.ndarray:
    """Index of each query's first row in a q-sorted flat array."""
    return np.searchsorted(q, np.arange(n_queries + 1))


def _positions(starts: np.ndarray, n_queries: int) -> np.ndarray:
    """Each row's 0-based place within its query (rows sorted by query), int32."""
    width = int(starts[1] - starts[0]) if n_queries else 0
    if n_queries and int(starts[-1]) == n_queries * width and np.all(np.diff(starts) == width):
        return np.tile(np.arange(width, dtype=np.int32), n_queries)  # every query has `width` rows
    pos = np.arange(int(starts[-1]), dtype=np.int32)
    pos -= np.repeat(starts[:-1].astype(np.int32), np.diff(starts))
    return pos


def _within(values: np.ndarray, q: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``values`` restarted at each query (inclusive)."""
    cs = np.cumsum(values, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    before = np.concatenate(([0], cs))[starts[:-1]]
    return cs - before[q]


def _discount(pos: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(pos + 2.0)


def _gain(label: np.ndarray, mode: GainMode) -> np.ndarray:
    positive = np.where(label > 0, label, 0).astype(np.float64)
    return positive if mode == "linear" else np.exp2(positive) - 1.0


@dataclass(eq=False)
class Ranking:
    """One run aligned with one dataset: flat arrays sorted by (query, rank).

    ``q`` is the evaluated-query index (0..n_queries-1, in dataset order),
    ``pos`` the 0-based rank after sorting and de-duplication, ``label`` the
    qrels label (``UNJUDGED`` when the document is not judged).
    """

    query_ids: np.ndarray
    q: np.ndarray
    pos: np.ndarray
    label: np.ndarray
    rel_level: int
    n_rel: np.ndarray
    n_nonrel: np.ndarray
    n_ret: np.ndarray
    ideal_q: np.ndarray
    ideal_pos: np.ndarray
    ideal_label: np.ndarray
    corpus_size: int | None
    doc_values: pa.Array | pa.ChunkedArray | None = None
    doc_rows: FrameRows | None = None
    _dense: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def docs(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The document id of each row (``rows``: a boolean mask or row numbers; all rows by default),
        as a Python object array, taken from the run on demand."""
        if self.doc_values is None:
            raise RagMetricsError("this ranking was built without document ids")
        if rows is not None:
            rows = np.asarray(rows)
            rows = np.flatnonzero(rows) if rows.dtype == bool else rows
        if self.doc_rows is not None:
            rows = self.doc_rows.array() if rows is None else self.doc_rows.of(rows)
        return _as_objects(self.doc_values if rows is None else take_strings(self.doc_values, rows))

    @property
    def doc_code(self) -> np.ndarray:
        """Each row's document as an int32 code (equal codes: equal ids), encoded on first use."""
        if "doc_code" not in self.__dict__:
            if self.doc_values is None:
                raise RagMetricsError("this ranking was built without document ids")
            order = None if self.doc_rows is None else self.doc_rows.array()
            values = self.doc_values if order is None else take_strings(self.doc_values, order)
            self.__dict__["doc_code"] = factorize_ids(values)[0]
        return self.__dict__["doc_code"]

    @property
    def rel(self) -> np.ndarray:
        if "rel" not in self.__dict__:
            self.__dict__["rel"] = self.label >= self.rel_level
        return self.__dict__["rel"]

    def _gain_rows(self) -> np.ndarray:
        """Rows with a positive label (the only ones with a gain)."""
        if "gain_rows" not in self.__dict__:
            self.__dict__["gain_rows"] = np.flatnonzero(self.label > 0)
        return self.__dict__["gain_rows"]

    def _relevant_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The relevant rows, and each one's 1-based count among its query's relevant rows (TP at its rank)."""
        if "relevant_rows" not in self.__dict__:
            rows = np.flatnonzero(self.rel)
            rq = self.q[rows]
            self.__dict__["relevant_rows"] = (
                rows,
                np.arange(1, len(rows) + 1) - _segment_starts(rq, self.n_queries)[:-1][rq],
            )
        return self.__dict__["relevant_rows"]

    @property
    def first_rel_rank(self) -> np.ndarray:
        """1-based rank of the first relevant document, 0 when none was retrieved."""
        if "first" not in self.__dict__:
            first = np.zeros(self.n_queries, dtype=np.int64)
            rel = self.rel
            rows = np.flatnonzero(rel)
            # rows are sorted by (q, pos), so the first row per query wins
            qs, idx = np.unique(self.q[rows], return_index=True)
            first[qs] = self.pos[rows[idx]] + 1
            self.__dict__["first"] = first
        return self.__dict__["first"]

    def _dense_cumulative(self, kind: str, depth: int) -> np.ndarray:
        """(n_queries, depth) cumulative sums along rank of a per-row value."""
        cached = [(d, m) for (k, d), m in self._dense.items() if k == kind and d >= depth]
        if cached:
            return min(cached, key=lambda dm: dm[0])[1][:, :depth]
        # only rows with a nonzero value are written into the zeroed matrix (relevant or positive-gain rows: few)
        if kind == "rel":
            rows = self._relevant_rows()[0]
            rows = rows[self.pos[rows] < depth]
            q, pos = self.q[rows], self.pos[rows]
            values = np.ones(len(rows), dtype=np.int32)
            matrix = np.zeros((self.n_queries, depth), dtype=np.int32)
        elif kind == "precision":
            rows, tp = self._relevant_rows()
            shallow = self.pos[rows] < depth
            rows, tp = rows[shallow], tp[shallow]
            q, pos = self.q[rows], self.pos[rows]
            values = tp / (pos + 1.0)
            matrix = np.zeros((self.n_queries, depth), dtype=np.float64)
        elif kind.startswith("dcg:"):
            rows = self._gain_rows()
            rows = rows[self.pos[rows] < depth]
            q, pos = self.q[rows], self.pos[rows]
            values = _gain(self.label[rows], kind[4:]) * _discount(pos)  # type: ignore[arg-type]
            matrix = np.zeros((self.n_queries, depth), dtype=np.float64)
        elif kind.startswith("ideal:"):
            ik = self.ideal_pos < depth
            q, pos = self.ideal_q[ik], self.ideal_pos[ik]
            values = _gain(self.ideal_label[ik], kind[6:]) * _discount(pos)  # type: ignore[arg-type]
            matrix = np.zeros((self.n_queries, depth), dtype=np.float64)
        else:  # pragma: no cover - internal
            raise KeyError(kind)
        matrix[q, pos] = values
        np.cumsum(matrix, axis=1, out=matrix)
        # a new dict swapped in whole: a thread reading the cache (the dashboard shares rankings) never sees it change
        dense = {key: m for key, m in self._dense.items() if key[0] != kind}
        dense[(kind, depth)] = matrix
        self._dense = dense
        return matrix

    def _at(self, kind: str, ks: np.ndarray) -> np.ndarray:
        """Columns ``ks`` (1-based) of a cumulative matrix; the whole curve 1..k is a read-only view
        of the cached matrix (no 80 MB copy at 100,000 queries)."""
        depth = int(ks.max())
        matrix = self._dense_cumulative(kind, depth)
        if len(ks) == depth and np.array_equal(ks, np.arange(1, depth + 1)):
            view = matrix[:, :depth]
            view.flags.writeable = False
            return view
        return matrix[:, ks - 1]

    def hits_at(self, ks: np.ndarray) -> np.ndarray:
        """Relevant documents in the top k (TP@k), shape (n_queries, len(ks)), int32."""
        return self._at("rel", ks)

    def precision_sum_at(self, ks: np.ndarray) -> np.ndarray:
        """Σ over relevant ranks i <= k of TP@i / i (AP@k times R)."""
        return self._at("precision", ks)

    def dcg_at(self, ks: np.ndarray, mode: GainMode) -> np.ndarray:
        return self._at(f"dcg:{mode}", ks)

    def ideal_dcg_at(self, ks: np.ndarray, mode: GainMode) -> np.ndarray:
        return self._at(f"ideal:{mode}", ks)

    def _per_query(self, q: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(q, weights=weights, minlength=self.n_queries).astype(np.float64)

    def precision_sum_full(self) -> np.ndarray:
        rows, tp = self._relevant_rows()
        return self._per_query(self.q[rows], tp / (self.pos[rows] + 1.0))

    def dcg_full(self, mode: GainMode) -> np.ndarray:
        rows = self._gain_rows()
        return self._per_query(self.q[rows], _gain(self.label[rows], mode) * _discount(self.pos[rows]))

    def ideal_dcg_full(self, mode: GainMode) -> np.ndarray:
        return self._per_query(self.ideal_q, _gain(self.ideal_label, mode) * _discount(self.ideal_pos))

    def hits_at_own_r(self) -> np.ndarray:
        """Relevant documents in the top R, R = the query's number of relevant documents."""
        return self._per_query(self.q, (self.rel & (self.pos < self.n_rel[self.q])).astype(np.float64))

    def bpref_sum(self) -> np.ndarray:
        rel = self.rel
        judged_nonrel = (self.label >= 0) & ~rel
        above = _within(judged_nonrel.astype(np.int64), self.q, _segment_starts(self.q, self.n_queries))
        above = above - judged_nonrel  # judged non-relevant strictly above each row
        r = self.n_rel[self.q].astype(np.float64)
        n = np.minimum(self.n_nonrel[self.q], self.n_rel[self.q]).astype(np.float64)
        term = np.ones(len(self.q))
        safe = (above > 0) & (n > 0)
        term[safe] = 1.0 - np.minimum(above[safe], r[safe]) / n[safe]
        return self._per_query(self.q, np.where(rel, term, 0.0))


def _string_order(names: np.ndarray | pa.Array, which: np.ndarray) -> np.ndarray:
    """Rank of each of ``names[which]`` among them in byte (code point) order, computed by Arrow in C++."""
    if isinstance(names, pa.Array):
        array = names.take(pa.array(which))
    else:
        array = pa.array(np.asarray(names[which], dtype=object), type=pa.large_string())
    order = pc.sort_indices(array).to_numpy()
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


def match_queries(queries: pd.DataFrame, run_query_ids: pd.Series) -> tuple[np.ndarray, int]:
    """The dataset row of each run row's query (-1 when unknown), and how many distinct ids matched by text.

    A run names a query by its id, else by its text or the id derived from its
    text (:func:`ragmetrics.query_id_from_text`).
    """
    rows = pd.Index(queries["query_id"]).get_indexer(run_query_ids)
    unknown = rows < 0
    matched = 0
    if unknown.any():
        rows[unknown], matched = _match_by_text(queries["query"], run_query_ids[unknown])
    return rows, matched


def _match_by_text(texts: pd.Series, run_ids: pd.Series) -> tuple[np.ndarray, int]:
    """Dataset positions for run query ids that are a query's text, or the id derived from it.

    Texts are compared after NFC normalisation and stripping (as
    ``query_id_from_text`` does); a text shared by two dataset queries matches neither.
    """
    distinct = pd.Series(pd.unique(texts[texts.str.len() > 0]))
    normalized = {t: unicodedata.normalize("NFC", t).strip() for t in distinct}
    keys = texts.map(lambda t: normalized.get(t, ""))
    hashed = keys.map(lambda t: query_id_from_text(t) if t else "")
    positions = np.full(len(run_ids), -1, dtype=np.int64)
    run_keys = run_ids.map(lambda t: unicodedata.normalize("NFC", t).strip()).to_numpy(dtype=object)
    for column in (keys, hashed):
        usable = (column.str.len() > 0) & ~column.duplicated(keep=False)
        index = pd.Index(column[usable])
        found = index.get_indexer(run_keys)
        take = (positions < 0) & (found >= 0)
        positions[take] = np.flatnonzero(usable.to_numpy())[found[take]]
    return positions, int(pd.unique(run_ids[positions >= 0]).size)


def _as_objects(names: np.ndarray | pa.Array | pa.ChunkedArray) -> np.ndarray:
    return names if isinstance(names, np.ndarray) else np.asarray(names.to_numpy(zero_copy_only=False), dtype=object)


class FrameRows:
    """Which row of the run's frame each sorted row comes from: ``order[i]`` (``order`` None: row ``i``
    itself), except the sorted rows ``moved_to``, which come from ``moved_from``.

    Reordering tied scores by doc id moves a few rows (3% of a 10M-row BM25-like run) within their
    blocks; keeping those as a patch spares a full-size permutation and the gathers through it."""

    def __init__(self, order: np.ndarray | None, n: int, moved: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        if moved is not None and order is not None:
            order = order.copy()
            order[moved[0]] = order[moved[1]]
            moved = None
        self.order, self.n = order, n
        self.moved_to, self.moved_from = moved if moved is not None else (None, None)

    @property
    def identity(self) -> bool:
        return self.order is None and self.moved_to is None

    def of(self, rows: np.ndarray) -> np.ndarray:
        """The frame rows of sorted rows ``rows``."""
        if self.order is not None:
            return self.order[rows]
        if self.moved_to is None or len(rows) == 0 or len(self.moved_to) == 0:
            return rows
        at = np.minimum(np.searchsorted(self.moved_to, rows), len(self.moved_to) - 1)
        moved = self.moved_to[at] == rows
        out = np.array(rows, dtype=np.int64)
        out[moved] = self.moved_from[at[moved]]
        return out

    def take(self, values: np.ndarray, start: int = 0, stop: int | None = None, *, copy: bool = False) -> np.ndarray:
        """``values`` (one per frame row) in sorted order, of the sorted rows ``start..stop-1``
        (``copy``: an array of the caller's own, never a view of ``values``)."""
        stop = self.n if stop is None else stop
        if self.order is not None:
            return values[self.order[start:stop]]
        if self.moved_to is None:
            return values[start:stop].copy() if copy else values[start:stop]
        out = values[start:stop].copy()
        lo, hi = np.searchsorted(self.moved_to, [start, stop])
        out[self.moved_to[lo:hi] - start] = values[self.moved_from[lo:hi]]
        return out

    def array(self) -> np.ndarray | None:
        """The frame row of every sorted row (None: each its own)."""
        if self.moved_to is None:
            return self.order
        order = np.arange(self.n)
        order[self.moved_to] = self.moved_from
        return order

    def subset(self, keep: np.ndarray) -> FrameRows:
        """The rows ``keep`` (a boolean mask over the sorted rows) alone, in the same order."""
        if self.identity:
            return FrameRows(np.flatnonzero(keep), int(np.count_nonzero(keep)))
        return FrameRows(self.array()[keep], int(np.count_nonzero(keep)))


def _trec_order(
    q: np.ndarray, score: np.ndarray, doc_values: pa.Array | pa.ChunkedArray, src: np.ndarray | None
) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """How to put rows in trec_eval order (query, score desc, doc_id desc): ``(perm, ties)``.

    ``perm`` sorts by (query, score desc), None when already so; ``ties`` = ``(rows, from_rows, pairs)``
    then orders the tied rows by doc_id desc: ``column[rows] = column[from_rows]``, ``pairs`` being
    the rows tied with the next one; None when no score ties. Tied rows share query and score, so
    only the document columns need it.
    ``doc_values[src]`` are the rows' documents (``src`` None: the rows are ``doc_values``' own).

    Runs usually arrive grouped by query with scores descending, so this checks
    that in O(n) first and sorts only what needs it: the whole run by (query,
    score) when scores are out of order, then each block of tied scores by doc_id
    (Arrow compares the id strings' bytes, as trec_eval's ``strcmp``).
    """
    n = len(q)
    if n < 2:
        return None, None
    perm: np.ndarray | None = None
    if np.any(q[1:] < q[:-1]):
        perm = np.argsort(q, kind="stable")
    qs, ss = (q, score) if perm is None else (q[perm], score[perm])
    same = qs[1:] == qs[:-1]
    if np.any(same & (ss[1:] > ss[:-1])):
        table = pa.table({"q": q, "s": score})
        perm = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending")]).to_numpy().astype(np.int64)
        qs, ss = q[perm], score[perm]
        same = qs[1:] == qs[:-1]
    tie = same & (ss[1:] == ss[:-1])
    if not tie.any():
        return perm, None
    in_tie = np.zeros(n, dtype=bool)
    in_tie[1:] |= tie
    in_tie[:-1] |= tie
    rows = np.flatnonzero(in_tie)
    tied_with_previous = np.zeros(n, dtype=bool)
    tied_with_previous[1:] = tie
    group = np.cumsum(~tied_with_previous[rows])
    before = rows if perm is None else perm[rows]
    docs = take_strings(doc_values, before if src is None else src[before])
    # within each block of tied rows: doc_id descending (a stable sort)
    local = pc.sort_indices(pa.table({"g": group, "d": docs}), sort_keys=[("g", "ascending"), ("d", "descending")])
    return perm, (rows, rows[local.to_numpy()], np.flatnonzero(tie))


def _later_duplicates(q: np.ndarray, code: np.ndarray, pos: np.ndarray, n_ret: np.ndarray) -> np.ndarray:
    """True for every row whose (query, code) pair appeared on an earlier row (rows sorted by query;
    ``pos``: each row's place in its query, ``n_ret``: rows per query)."""
    if len(q) == 0:
        return np.zeros(0, dtype=bool)
    width = int(n_ret.max())
    if len(n_ret) * width <= 2 * len(q) + 4096:
        # the usual case, proved in one small sort: each query's codes in a row of a padded matrix
        # (padding -1, -2, ... never equals a code or another pad), sorted along the rows
        slots = np.empty((len(n_ret), width), dtype=code.dtype)
        slots[:] = -1 - np.arange(width, dtype=code.dtype)
        slots[q, pos] = code
        slots.sort(axis=1)
        if not np.any(slots[:, 1:] == slots[:, :-1]):
            return np.zeros(len(q), dtype=bool)
    key = q * (int(code.max(initial=0)) + 1) + code
    ordered = np.sort(key)
    if not np.any(ordered[1:] == ordered[:-1]):  # a plain sort proves there is none
        return np.zeros(len(key), dtype=bool)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    repeat = np.zeros(len(key), dtype=bool)
    repeat[1:] = ordered[1:] == ordered[:-1]
    out = np.zeros(len(key), dtype=bool)
    out[order[repeat]] = True
    return out


_PAD = np.uint64((1 << 64) - 1)


class _FingerprintRows:
    """Each query's rows sorted by document fingerprint, for duplicate and label lookups
    without encoding the ids: row ``r`` of a padded (n_queries, width) uint64 matrix holds
    query ``r``'s keys, a key being the fingerprint's high bits with the row's place in its
    query in the low bits, sorted (pads, all ones, last). ``None`` from :meth:`build` when the
    run is too ragged for a matrix, or a key cannot be told from a pad.

    Fingerprints may collide: what this finds is a candidate that the caller checks
    against the strings."""

    def __init__(self, keys: np.ndarray, bits: int, starts: np.ndarray, n_ret: np.ndarray) -> None:
        self.keys, self.starts, self.n_ret = keys, starts, n_ret
        self.low = np.uint64((1 << bits) - 1)  # the key's low bits: the row's place in its query

    @classmethod
    def build(
        cls, fp: np.ndarray, q: np.ndarray, pos: np.ndarray, starts: np.ndarray, n_ret: np.ndarray, first: int = 0
    ) -> _FingerprintRows | None:
        """The index of rows sorted by (query, rank) whose query is ``q - first``; ``fp`` is the rows'
        fingerprints, an array of the caller's that becomes the keys (overwritten)."""
        if len(q) == 0:
            return None
        width = int(n_ret.max())
        if len(n_ret) * width > 2 * len(q) + 4096:
            return None
        bits = max(width - 1, 1).bit_length()
        high = ~np.uint64((1 << bits) - 1)
        if len(q) == len(n_ret) * width:  # every query has `width` rows: the rows are the matrix, no pads
            keys = np.bitwise_and(fp, high, out=fp).reshape(len(n_ret), width)
            keys |= np.arange(width, dtype=np.uint64)
        else:
            keys = np.full((len(n_ret), width), _PAD, dtype=np.uint64)
            keys[q - first, pos] = (fp & high) | pos.astype(np.uint64)
        keys.sort(axis=1)
        filled = np.flatnonzero(n_ret)
        if np.any(keys[filled, n_ret[filled] - 1] == _PAD):
            return None
        return cls(keys, bits, starts, n_ret)

    def _row(self, r: np.ndarray, key: np.ndarray) -> np.ndarray:
        return self.starts[r] + (key & self.low).astype(np.int64)

    def repeats(self) -> tuple[np.ndarray, np.ndarray]:
        """``(later, earlier)`` rows: neighbours in fingerprint order within a query whose fingerprints agree
        (``earlier`` ranks above ``later``); a row repeating an earlier one is in ``later``."""
        keys, n_ret = self.keys, self.n_ret
        if keys.shape[1] < 2:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        places = np.arange(1, keys.shape[1])
        step = max(1, (1 << 16) // keys.shape[1])  # queries at a time: the temporaries stay in the core's cache
        found = []
        for b in range(0, len(keys), step):
            high = keys[b : b + step] & ~self.low
            same = high[:, 1:] == high[:, :-1]
            same &= places < n_ret[b : b + step, None]
            r, j = np.nonzero(same)
            found.append((r + b, j))
        r, j = (np.concatenate(parts) for parts in zip(*found))
        return self._row(r, keys[r, j + 1]), self._row(r, keys[r, j])

    def find(self, r: np.ndarray, fp: np.ndarray) -> np.ndarray:
        """The best-ranked row of query ``r`` whose fingerprint agrees with ``fp``; -1 when none."""
        keys, n_ret = self.keys, self.n_ret
        target = fp & ~self.low
        flat = keys.ravel()
        base = r * keys.shape[1]
        n = n_ret[r]
        # branchless lower bound: how many of the row's keys are below the target
        below = np.zeros(len(r), dtype=np.int64)
        step = 1 << (int(keys.shape[1]).bit_length() - 1)
        while step:
            ahead = below + step
            below += step * ((ahead <= n) & (flat[base + np.minimum(ahead, keys.shape[1]) - 1] < target))
            step >>= 1
        key = flat[base + np.minimum(below, keys.shape[1] - 1)]
        hit = (below < n) & ((key & ~self.low) == target)
        return np.where(hit, self._row(r, key), -1)


def _same_strings(
    left: pa.Array | pa.ChunkedArray, left_rows: np.ndarray, right: pa.Array | pa.ChunkedArray, right_rows: np.ndarray
) -> bool:
    """``left[left_rows] == right[right_rows]`` element-wise, for every pair (byte equality, in Arrow)."""
    if len(left_rows) == 0:
        return True
    order = np.argsort(left_rows, kind="stable")
    a = take_strings(left, left_rows[order])
    b = take_strings(right, right_rows[order])
    if a.type != b.type:
        b = b.cast(a.type)
    return bool(pc.all(pc.equal(a, b)).as_py())


def _label_dtype(qrels_label: np.ndarray, rel_level: int) -> type:
    """The narrowest integer type whose smallest value, the unjudged mark, lies below every judged label and
    below ``rel_level`` (int8 for the usual 0..3 grades: 10 MB at 10M rows where int64 took 80 MB)."""
    low = min(int(qrels_label.min()), rel_level) if len(qrels_label) else min(0, rel_level)
    high = int(qrels_label.max()) if len(qrels_label) else 0
    return next(
        (t for t in (np.int8, np.int16, np.int32) if np.iinfo(t).min < low and high <= np.iinfo(t).max), np.int64
    )


def _unjudged_labels(n: int, dtype: type) -> np.ndarray:
    return np.full(n, np.iinfo(dtype).min, dtype=dtype)


def _labels(
    q: np.ndarray,
    doc: np.ndarray,
    qrels_q: np.ndarray,
    qrels_doc: np.ndarray,
    qrels_label: np.ndarray,
    n_docs: int,
    label_dtype: type,
) -> np.ndarray:
    """Each row's qrels label (``UNJUDGED`` when not judged); only rows of judged documents are looked up."""
    label = _unjudged_labels(len(q), label_dtype)
    retrieved = qrels_doc >= 0
    if not retrieved.any() or len(q) == 0:
        return label
    judged_doc = np.zeros(n_docs, dtype=bool)
    judged_doc[qrels_doc[retrieved]] = True
    rows = np.flatnonzero(judged_doc[doc])
    keys = qrels_q[retrieved] * n_docs + qrels_doc[retrieved]
    lookup = pd.Index(keys).get_indexer(q[rows] * n_docs + doc[rows])
    found = lookup >= 0
    label[rows[found]] = qrels_label[retrieved][lookup[found]]
    return label


@dataclass(frozen=True)
class _SortedRows:
    """What the alignment reads: a run's rows sorted by (query, rank) (``q``: each row's query, ``pos``: its 0-based
    position, ``starts``/``n_ret``: each query's first row and row count; ``frame_rows``: the frame row of each)
    and the judgments of the evaluated queries (``qrels_q``: their query, ``qrels_rows``: their row in the qrels)."""

    run: Run
    dataset: Dataset
    doc_column: str
    use_source: bool
    frame_rows: FrameRows
    q: np.ndarray
    pos: np.ndarray
    starts: np.ndarray
    n_ret: np.ndarray
    qrels_q: np.ndarray
    qrels_rows: np.ndarray
    qrels_label: np.ndarray


def _align_documents(rows: _SortedRows, label_dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(chunk_dups, doc_dups, label)``: the rows repeating an earlier chunk id, the rows repeating an earlier
    document, and each row's qrels label (``UNJUDGED`` when not judged; a repeated document carries its label
    on every row).

    By fingerprints, each query's rows sorted in a small matrix (no id encoding), every match
    checked against the strings; by encoded ids when the run is too ragged for that or a
    fingerprint collided (both give the same answer)."""
    found = _align_by_fingerprints(rows, label_dtype)
    if found is not None:
        return found
    run, q, pos, n_ret = rows.run, rows.q, rows.pos, rows.n_ret

    def codes_of(column: str) -> np.ndarray:
        return rows.frame_rows.take(run.id_codes(column)[0])

    doc_code, doc_names = codes_of(rows.doc_column), run.id_codes(rows.doc_column)[1]
    chunk_dups = _later_duplicates(q, codes_of("doc_id") if rows.use_source else doc_code, pos, n_ret)
    doc_dups = _later_duplicates(q, doc_code, pos, n_ret) if rows.use_source else chunk_dups
    qrels_code = positions_in(rows.dataset.qrels["doc_id"].iloc[rows.qrels_rows], doc_names)
    label = _labels(q, doc_code, rows.qrels_q, qrels_code, rows.qrels_label, max(len(doc_names), 1), label_dtype)
    return chunk_dups, doc_dups, label


def _align_by_fingerprints(rows: _SortedRows, label_dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_align_documents` by fingerprints; ``None`` when it cannot be proved exact that way.

    Queries are independent here: a large run is aligned in two halves of its queries, one on the
    background thread (numpy and Arrow release the GIL in their loops), each half writing its own rows."""
    n_rows, n_queries = len(rows.q), len(rows.n_ret)
    doc_dups = np.zeros(n_rows, dtype=bool)
    chunk_dups = np.zeros(n_rows, dtype=bool) if rows.use_source else doc_dups
    out = (chunk_dups, doc_dups, _unjudged_labels(n_rows, label_dtype))
    retrieved = rows.n_ret[rows.qrels_q] > 0
    rows = dataclasses.replace(
        rows,
        qrels_q=rows.qrels_q[retrieved],
        qrels_rows=rows.qrels_rows[retrieved],
        qrels_label=rows.qrels_label[retrieved],
    )
    if n_rows < BACKGROUND_ROWS or n_queries < 2:
        return out if _align_queries(rows, out, 0, n_queries) else None
    half = int(np.searchsorted(rows.starts, rows.starts[-1] // 2))  # two halves of about as many rows
    other = _BACKGROUND.submit(_align_queries, rows, out, half, n_queries)
    ok = _align_queries(rows, out, 0, half)
    return out if other.result() and ok else None


def _align_queries(rows: _SortedRows, out: tuple[np.ndarray, np.ndarray, np.ndarray], first: int, stop: int) -> bool:
    """Align queries ``first..stop-1`` (their rows ``starts[first]..starts[stop]-1``) into those rows of ``out``
    = ``(chunk_dups, doc_dups, label)``; False when a fingerprint match is not confirmed by the strings."""
    r0, r1 = int(rows.starts[first]), int(rows.starts[stop])
    if r0 == r1:
        return True
    run, frame_rows, doc_column = rows.run, rows.frame_rows, rows.doc_column
    q, pos, starts, n_ret = rows.q[r0:r1], rows.pos[r0:r1], rows.starts[first : stop + 1] - r0, rows.n_ret[first:stop]
    chunk_dups, doc_dups, label = (column[r0:r1] for column in out)
    mine = (rows.qrels_q >= first) & (rows.qrels_q < stop)
    qrels_q, qrels_rows, qrels_label = rows.qrels_q[mine], rows.qrels_rows[mine], rows.qrels_label[mine]

    def repeated(column: str) -> tuple[_FingerprintRows, np.ndarray] | None:
        index = _FingerprintRows.build(
            frame_rows.take(run.id_fingerprints(column), r0, r1, copy=True), q, pos, starts, n_ret, first
        )
        if index is None:
            return None
        later, earlier = index.repeats()
        values = run.id_values(column)
        if not _same_strings(values, frame_rows.of(later + r0), values, frame_rows.of(earlier + r0)):
            return None
        return index, later

    found = repeated(doc_column)
    if found is None:
        return False
    index, later = found
    doc_dups[later] = True
    if rows.use_source:
        chunks = repeated("doc_id")
        if chunks is None:
            return False
        chunk_dups[chunks[1]] = True

    hit_rows = index.find(qrels_q - first, rows.dataset.qrels_doc_fingerprints()[qrels_rows])
    hit = hit_rows >= 0
    hit_rows = hit_rows[hit]
    if not _same_strings(
        run.id_values(doc_column), frame_rows.of(hit_rows + r0), rows.dataset.qrels_doc_values(), qrels_rows[hit]
    ):
        return False
    label[hit_rows] = qrels_label[hit]
    if len(later):
        label[later] = label[index.find(q[later] - first, run.id_fingerprints(doc_column)[frame_rows.of(later + r0)])]
    return True


BACKGROUND_ROWS = 1_000_000  # below this a second thread would not pay for itself
_BACKGROUND = ThreadPoolExecutor(1, thread_name_prefix="ragmetrics-alignment")


def _examples(values, limit: int = 0) -> list[str]:
    return [str(v) for v in values] if limit == 0 else [str(v) for v in list(values)[:limit]]


def build_ranking(
    dataset: Dataset,
    run: Run,
    *,
    rel_level: int = 1,
    missing: Missing = "zero",
    level: Level = "auto",
    order: Order = "score",
    score_precision: Literal["float64", "float32"] = "float64",
    duplicates: Literal["best", "error", "keep"] = "best",
) -> tuple[Ranking, Coverage]:
    """Align ``run`` with ``dataset``; see :func:`ragmetrics.evaluate` for the conventions.

    ``order="file"`` keeps each query's rows in the order given (by the rank
    column when there is one), for pipelines whose scores are not comparable.
    ``duplicates="keep"`` keeps repeated documents (LlamaIndex semantics).
    """
    if missing not in ("zero", "skip"):
        raise RagMetricsError(f"The 'missing' parameter must be 'zero' or 'skip'. Got {missing!r} instead.")
    if level not in ("auto", "document", "chunk"):
        raise RagMetricsError(f"The 'level' parameter must be 'auto', 'document' or 'chunk'. Got {level!r} instead.")
    coverage = Coverage()
    queries = dataset.queries
    qrels = dataset.qrels
    frame = run.frame
    coverage.empty_run = len(frame) == 0
    if level == "document" and "source_doc" not in frame.columns:
        raise RagMetricsError(
            f"run {run.name!r}: level='document' needs a source_doc column or a chunk mapping "
            "(see ragmetrics.io.attach_source_docs)"
        )
    if order not in ("score", "file"):
        raise RagMetricsError(f"The 'order' parameter must be 'score' or 'file'. Got {order!r} instead.")

    use_source = level in ("auto", "document") and "source_doc" in frame.columns
    doc_column = "document" if use_source else "doc_id"
    # the documents' fingerprints, the alignment's largest step, are computed on another core meanwhile
    # (numpy releases the GIL in its loops); the alignment waits for them below
    ahead = _BACKGROUND.submit(run.id_fingerprints, doc_column) if len(frame) >= BACKGROUND_ROWS else None

    # queries: match each distinct run query id once, then spread to the rows
    query_codes, query_names = run.id_codes("query_id")
    query_names = _as_objects(query_names)
    unique_rows, coverage.matched_by_text = match_queries(queries, pd.Series(query_names, dtype="str"))
    unknown = unique_rows < 0
    if unknown.any():
        coverage.not_in_dataset = _examples(query_names[unknown])
        coverage.rows_not_in_dataset = int(np.bincount(query_codes, minlength=len(query_names))[unknown].sum())

    qrels_query = dataset.qrels_query_rows()
    judged = np.zeros(len(queries), dtype=bool)
    judged[qrels_query] = True
    coverage.no_judgments = _examples(queries["query_id"][~judged])
    in_run = np.zeros(len(queries), dtype=bool)
    in_run[unique_rows[~unknown]] = True
    coverage.missing_in_run = _examples(queries["query_id"][judged & ~in_run])
    evaluated = judged & in_run if missing == "skip" else judged
    eval_of_query = np.full(len(queries), -1, dtype=np.int64)
    eval_of_query[evaluated] = np.arange(int(evaluated.sum()))
    query_ids = queries["query_id"].to_numpy(dtype=object)[evaluated]
    n_queries = len(query_ids)
    coverage.queries_evaluated = n_queries

    eval_of_unique = np.where(unknown, -1, eval_of_query[np.maximum(unique_rows, 0)])
    q = eval_of_unique[query_codes]
    everything = not np.any(eval_of_unique < 0)  # every distinct query id occurs on some row
    doc_values = run.id_values(doc_column)
    score = frame["score"].to_numpy(dtype=np.float64)
    if score_precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    file_rank = (
        frame["rank"].to_numpy(dtype=np.float64, na_value=np.nan)
        if order == "file" and "rank" in frame.columns
        else None
    )
    src: np.ndarray | None = None  # each row's row in the run's frame (None: the same)
    if not everything:
        keep = q >= 0
        src = np.flatnonzero(keep)
        q, score = q[keep], score[keep]
        file_rank = None if file_rank is None else file_rank[keep]

    # qrels of evaluated queries
    qrels_eval = eval_of_query[qrels_query]
    qk = qrels_eval >= 0
    qrels_q = qrels_eval[qk]
    qrels_label = qrels["relevance"].to_numpy(dtype=np.int64)[qk]
    qrels_rows = np.flatnonzero(qk)

    ties = None
    if order == "score":
        perm, ties = _trec_order(q, score, doc_values, src)
    elif file_rank is not None and not np.isnan(file_rank).any():
        perm = np.lexsort((file_rank, q))
    else:
        perm = np.argsort(q, kind="stable")
    if perm is not None:
        q, score = q[perm], score[perm]
        src = perm if src is None else src[perm]
    frame_rows = FrameRows(src, len(q), None if ties is None else ties[:2])
    tie_pairs = None if ties is None else ties[2]  # rows tied with the next row

    starts = _segment_starts(q, n_queries)
    pos = _positions(starts, n_queries)
    n_ret = np.diff(starts)
    if ahead is not None:
        ahead.result()
    aligned = _align_documents(
        _SortedRows(
            run, dataset, doc_column, use_source, frame_rows, q, pos, starts, n_ret, qrels_q, qrels_rows, qrels_label
        ),
        _label_dtype(qrels_label, rel_level),
    )
    chunk_dups, doc_dups, label = aligned
    if len(q):
        coverage.duplicates_dropped = int(chunk_dups.sum())
        if coverage.duplicates_dropped:
            coverage.duplicate_queries = _examples(pd.unique(query_ids[q[chunk_dups]]))
            if duplicates == "error":
                first = int(np.flatnonzero(chunk_dups)[0])
                doc = pc.take(doc_values, frame_rows.of(np.array([first])))[0].as_py()
                raise RagMetricsError(
                    f"run {run.name!r}: query {query_ids[q[first]]!r} lists document "
                    f"{doc!r} more than once; expected each document once per "
                    "query (duplicates='best' keeps the best-ranked occurrence)"
                )
        if duplicates != "keep":
            coverage.chunks_merged = int(doc_dups.sum()) - coverage.duplicates_dropped
            if doc_dups.any():
                unique_rows = ~doc_dups
                q, score, label = q[unique_rows], score[unique_rows], label[unique_rows]
                frame_rows = frame_rows.subset(unique_rows)
                starts = _segment_starts(q, n_queries)
                pos = _positions(starts, n_queries)
                if tie_pairs is not None:  # rows moved up: count the pairs again
                    tie_pairs = np.flatnonzero((q[1:] == q[:-1]) & (score[1:] == score[:-1]))
    if order == "score" and tie_pairs is not None:
        coverage.tied_pairs = len(tie_pairs)
        if coverage.tied_pairs:
            tied_q = q[tie_pairs]  # ascending
            coverage.tied_queries = _examples(query_ids[tied_q[np.r_[True, tied_q[1:] != tied_q[:-1]]]])

    n_ret = np.diff(starts)

    is_rel = qrels_label >= rel_level
    n_rel = np.bincount(qrels_q[is_rel], minlength=n_queries).astype(np.int64)
    is_nonrel = (qrels_label >= 0) & ~is_rel
    n_nonrel = np.bincount(qrels_q[is_nonrel], minlength=n_queries).astype(np.int64)
    coverage.no_relevant = _examples(query_ids[n_rel == 0])

    ideal_order = np.lexsort((-qrels_label, qrels_q))
    ideal_q = qrels_q[ideal_order]
    ideal_label = qrels_label[ideal_order]
    ideal_starts = _segment_starts(ideal_q, n_queries)
    ideal_pos = np.arange(len(ideal_q), dtype=np.int64) - ideal_starts[:-1][ideal_q]

    ranking = Ranking(
        query_ids=query_ids,
        q=q,
        pos=pos,
        label=label,
        rel_level=rel_level,
        n_rel=n_rel,
        n_nonrel=n_nonrel,
        n_ret=n_ret,
        ideal_q=ideal_q,
        ideal_pos=ideal_pos,
        ideal_label=ideal_label,
        corpus_size=dataset.corpus_size,
        doc_values=doc_values,
        doc_rows=None if frame_rows.identity else frame_rows,
    )
    return ranking, coverage


# Each run remembers its latest alignment (per dataset object and settings), so evaluating the same
# Run and Dataset objects again (more metrics, compare, check) skips build_ranking. Runs and datasets
# are immutable values (frozen dataclasses); a frame changed in place after evaluation is not noticed.
_ALIGNED: weakref.WeakKeyDictionary[Run, tuple[weakref.ref[Dataset], tuple, Ranking, Coverage]] = (
    weakref.WeakKeyDictionary()
)


def aligned_ranking(dataset: Dataset, run: Run, **settings) -> tuple[Ranking, Coverage]:
    """:func:`build_ranking`, remembered per run: the same run, dataset object and settings reuse it."""
    key = tuple(sorted(settings.items()))
    hit = _ALIGNED.get(run)
    if hit is not None and hit[0]() is dataset and hit[1] == key:
        return hit[2], hit[3]
    ranking, coverage = build_ranking(dataset, run, **settings)
    _ALIGNED[run] = (weakref.ref(dataset), key, ranking, coverage)
    return ranking, coverage
