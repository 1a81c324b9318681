"""Matching each ranked row's document with the judgments of its query, and finding repeated documents.

Two ways give the same answer (``tests/test_alignment_paths.py`` holds them to it):

* by fingerprints (:func:`by_fingerprints`, the fast one): each query's rows sorted by a 64-bit hash of the
  id in a small padded matrix, no id encoding; every match is confirmed on the strings, and ``None`` is
  returned when a match is not (a collision) or the run is too ragged for a matrix;
* by dictionary codes (:func:`by_codes`, exact by construction), the fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.engine.order import FrameRows
from ragmetrics.foundation.ids import (
    Strings,
    dictionary_codes,
    positions_in,
    same_strings,
    string_fingerprints,
    to_arrow,
)
from ragmetrics.foundation.kernels import take

Aligned = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(chunk_dups, doc_dups, label)``: rows repeating an earlier chunk id, rows repeating an earlier document,
and each row's label (the label type's minimum when not judged; a repeated document carries its label)."""

SPLIT_ROWS = 1_000_000
"""Runs with at least this many rows are aligned in two halves of their queries when an executor is given."""

if TYPE_CHECKING:
    from concurrent.futures import Executor


@dataclass(frozen=True)
class SortedRows:
    """What the matching reads: the run's rows sorted by (query, rank) and the evaluated queries' judgments.

    ``q``: each row's query, ``pos``: its 0-based place, ``starts``/``n_ret``: each query's first row and row
    count, ``frame_rows``: each row's row in the run's table; ``documents`` (and ``chunks`` when chunks are
    mapped to documents) the run's id columns in table order, with what ``fingerprint`` gives for them;
    ``qrels_q``, ``qrels_docs``, ``qrels_label``: the judgments of the evaluated queries."""

    documents: Strings
    chunks: Strings | None
    document_fingerprints: np.ndarray
    chunk_fingerprints: np.ndarray | None
    frame_rows: FrameRows
    q: np.ndarray
    pos: np.ndarray
    starts: np.ndarray
    n_ret: np.ndarray
    qrels_q: np.ndarray
    qrels_docs: Strings
    qrels_label: np.ndarray
    label_dtype: type
    fingerprint: Callable[[Strings], np.ndarray] = string_fingerprints


def label_dtype(qrels_label: np.ndarray, rel_level: int) -> type:
    """The narrowest integer type whose smallest value, the unjudged mark, lies below every judged label and
    below ``rel_level`` (int8 for the usual 0..3 grades: an eighth of int64's memory)."""
    low = min(int(qrels_label.min()), rel_level) if len(qrels_label) else min(0, rel_level)
    high = int(qrels_label.max()) if len(qrels_label) else 0
    kinds = (np.int8, np.int16, np.int32)
    return next((t for t in kinds if np.iinfo(t).min < low and high <= np.iinfo(t).max), np.int64)


def unjudged(n: int, dtype: type) -> np.ndarray:
    return np.full(n, np.iinfo(dtype).min, dtype=dtype)


def match(rows: SortedRows, executor: Executor | None = None) -> Aligned:
    """:data:`Aligned` for ``rows``: by fingerprints where that is proved exact, else by codes."""
    found = by_fingerprints(rows, executor)
    return found if found is not None else by_codes(rows)


# --- by dictionary codes -----------------------------------------------------------------------


def by_codes(rows: SortedRows) -> Aligned:
    """:data:`Aligned` from dictionary-encoded ids."""
    doc_code, doc_names = dictionary_codes(rows.documents)
    doc_code = rows.frame_rows.take(doc_code)
    q, pos, n_ret = rows.q, rows.pos, rows.n_ret
    doc_dups = later_duplicates(q, doc_code, pos, n_ret)
    if rows.chunks is not None:
        chunk_dups = later_duplicates(q, rows.frame_rows.take(dictionary_codes(rows.chunks)[0]), pos, n_ret)
    else:
        chunk_dups = doc_dups
    qrels_code = positions_in(rows.qrels_docs, doc_names)
    label = _labels(q, doc_code, rows.qrels_q, qrels_code, rows.qrels_label, max(len(doc_names), 1), rows.label_dtype)
    return chunk_dups, doc_dups, label


def later_duplicates(q: np.ndarray, code: np.ndarray, pos: np.ndarray, n_ret: np.ndarray) -> np.ndarray:
    """True for every row whose (query, code) pair appeared on an earlier row (rows sorted by query)."""
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
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    repeat = np.zeros(len(key), dtype=bool)
    repeat[1:] = ordered[1:] == ordered[:-1]
    out = np.zeros(len(key), dtype=bool)
    out[order[repeat]] = True
    return out


def _labels(
    q: np.ndarray,
    doc: np.ndarray,
    qrels_q: np.ndarray,
    qrels_doc: np.ndarray,
    qrels_label: np.ndarray,
    n_docs: int,
    dtype: type,
) -> np.ndarray:
    """Each row's label; only rows of judged documents are looked up (keys sorted once, then a binary search)."""
    label = unjudged(len(q), dtype)
    retrieved = qrels_doc >= 0
    if not retrieved.any() or len(q) == 0:
        return label
    judged_doc = np.zeros(n_docs, dtype=bool)
    judged_doc[qrels_doc[retrieved]] = True
    rows = np.flatnonzero(judged_doc[doc])
    keys = qrels_q[retrieved].astype(np.int64) * n_docs + qrels_doc[retrieved]
    order = np.argsort(keys)
    keys = keys[order]
    wanted = q[rows].astype(np.int64) * n_docs + doc[rows]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    found = keys[at] == wanted
    label[rows[found]] = qrels_label[retrieved][order][at[found]]
    return label


# --- by fingerprints ---------------------------------------------------------------------------


def by_fingerprints(rows: SortedRows, executor: Executor | None = None) -> Aligned | None:
    """:data:`Aligned` by fingerprints; ``None`` when it cannot be proved exact that way.

    Queries are independent here: with an ``executor``, a large run is aligned in two halves of its queries,
    one on the executor (numpy and Arrow release the GIL in their loops), each half writing its own rows."""
    n_rows, n_queries = len(rows.q), len(rows.n_ret)
    doc_dups = np.zeros(n_rows, dtype=bool)
    chunk_dups = np.zeros(n_rows, dtype=bool) if rows.chunks is not None else doc_dups
    out = (chunk_dups, doc_dups, unjudged(n_rows, rows.label_dtype))
    retrieved = rows.n_ret[rows.qrels_q] > 0
    kept = np.flatnonzero(retrieved)
    rows = replace(
        rows,
        qrels_q=rows.qrels_q[kept],
        qrels_docs=take(rows.qrels_docs, to_arrow(kept)),
        qrels_label=rows.qrels_label[kept],
    )
    qrels_fingerprints = rows.fingerprint(rows.qrels_docs)
    if executor is None or n_rows < SPLIT_ROWS or n_queries < 2:
        return out if _align_queries(rows, qrels_fingerprints, out, 0, n_queries) else None
    half = int(np.searchsorted(rows.starts, rows.starts[-1] // 2))  # two halves of about as many rows
    other = executor.submit(_align_queries, rows, qrels_fingerprints, out, half, n_queries)
    ok = _align_queries(rows, qrels_fingerprints, out, 0, half)
    return out if other.result() and ok else None


def _align_queries(rows: SortedRows, qrels_fp: np.ndarray, out: Aligned, first: int, stop: int) -> bool:
    """Align queries ``first..stop-1`` (their rows ``starts[first]..starts[stop]-1``) into those rows of ``out``;
    False when a fingerprint match is not confirmed by the strings."""
    r0, r1 = int(rows.starts[first]), int(rows.starts[stop])
    if r0 == r1:
        return True
    frame_rows = rows.frame_rows
    q, pos, starts, n_ret = rows.q[r0:r1], rows.pos[r0:r1], rows.starts[first : stop + 1] - r0, rows.n_ret[first:stop]
    chunk_dups, doc_dups, label = (column[r0:r1] for column in out)
    mine = np.flatnonzero((rows.qrels_q >= first) & (rows.qrels_q < stop))
    qrels_q, qrels_label = rows.qrels_q[mine], rows.qrels_label[mine]

    def repeated(fingerprints: np.ndarray, values: Strings) -> tuple[_FingerprintRows, np.ndarray] | None:
        keys = frame_rows.take(fingerprints, r0, r1, copy=True)
        index = _FingerprintRows.build(keys, q, pos, starts, n_ret, first)
        if index is None:
            return None
        later, earlier = index.repeats()
        if not same_strings(values, frame_rows.of(later + r0), values, frame_rows.of(earlier + r0)):
            return None
        return index, later

    found = repeated(rows.document_fingerprints, rows.documents)
    if found is None:
        return False
    index, later = found
    doc_dups[later] = True
    if rows.chunks is not None:
        assert rows.chunk_fingerprints is not None
        chunks = repeated(rows.chunk_fingerprints, rows.chunks)
        if chunks is None:
            return False
        chunk_dups[chunks[1]] = True

    hit_rows = index.find(qrels_q - first, qrels_fp[mine])
    hit = hit_rows >= 0
    hit_rows = hit_rows[hit]
    if not same_strings(rows.documents, frame_rows.of(hit_rows + r0), rows.qrels_docs, mine[hit]):
        return False
    label[hit_rows] = qrels_label[hit]
    if len(later):
        label[later] = label[index.find(q[later] - first, rows.document_fingerprints[frame_rows.of(later + r0)])]
    return True


_PAD = np.uint64((1 << 64) - 1)


class _FingerprintRows:
    """Each query's rows sorted by document fingerprint, for duplicate and label lookups without encoding
    the ids: row ``r`` of a padded (n_queries, width) uint64 matrix holds query ``r``'s keys, a key being the
    fingerprint's high bits with the row's place in its query in the low bits, sorted (pads, all ones, last).
    ``None`` from :meth:`build` when the run is too ragged for a matrix, or a key cannot be told from a pad.

    Fingerprints may collide: what this finds is a candidate that the caller checks against the strings."""

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
