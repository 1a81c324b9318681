"""Putting a run's rows in ranking order: per-query segments, trec_eval's tie rule, the rows' origin."""

from __future__ import annotations

import numpy as np

from ragmetrics.foundation.ids import Strings, table_of, take_strings, to_arrow, to_numpy
from ragmetrics.foundation.kernels import sort_indices


def segment_starts(q: np.ndarray, n_queries: int) -> np.ndarray:
    """Index of each query's first row in a q-sorted flat array (``n_queries + 1`` bounds)."""
    return np.searchsorted(q, np.arange(n_queries + 1))


def positions(starts: np.ndarray, n_queries: int) -> np.ndarray:
    """Each row's 0-based place within its query (rows sorted by query), int32."""
    width = int(starts[1] - starts[0]) if n_queries else 0
    if n_queries and int(starts[-1]) == n_queries * width and np.all(np.diff(starts) == width):
        return np.tile(np.arange(width, dtype=np.int32), n_queries)  # every query has `width` rows
    pos = np.arange(int(starts[-1]), dtype=np.int32)
    pos -= np.repeat(starts[:-1].astype(np.int32), np.diff(starts))
    return pos


def running_sum(values: np.ndarray, q: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``values`` restarted at each query (inclusive)."""
    cs = np.cumsum(values, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    before = np.concatenate(([0], cs))[starts[:-1]]
    return cs - before[q]


class FrameRows:
    """Which row of the run's table each sorted row comes from: ``order[i]`` (``order`` None: row ``i``
    itself), except the sorted rows ``moved[0]``, which come from ``moved[1]``.

    Reordering tied scores by doc id moves a few rows (3% of a 10M-row BM25-like run) within their
    blocks; keeping those as a patch spares a full-size permutation and the gathers through it."""

    def __init__(self, order: np.ndarray | None, n: int, moved: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        if moved is not None and order is not None:
            order = order.copy()
            order[moved[0]] = order[moved[1]]
            moved = None
        self.order, self.n = order, n
        self.moved = moved

    @property
    def identity(self) -> bool:
        return self.order is None and self.moved is None

    def of(self, rows: np.ndarray) -> np.ndarray:
        """The table rows of sorted rows ``rows``."""
        if self.order is not None:
            return self.order[rows]
        if self.moved is None or len(rows) == 0 or len(self.moved[0]) == 0:
            return rows
        moved_to, moved_from = self.moved
        at = np.minimum(np.searchsorted(moved_to, rows), len(moved_to) - 1)
        moved = moved_to[at] == rows
        out = np.array(rows, dtype=np.int64)
        out[moved] = moved_from[at[moved]]
        return out

    def take(self, values: np.ndarray, start: int = 0, stop: int | None = None, *, copy: bool = False) -> np.ndarray:
        """``values`` (one per table row) in sorted order, of the sorted rows ``start..stop-1``
        (``copy``: an array of the caller's own, never a view of ``values``)."""
        stop = self.n if stop is None else stop
        if self.order is not None:
            return values[self.order[start:stop]]
        if self.moved is None:
            return values[start:stop].copy() if copy else values[start:stop]
        moved_to, moved_from = self.moved
        out = values[start:stop].copy()
        lo, hi = np.searchsorted(moved_to, [start, stop])
        out[moved_to[lo:hi] - start] = values[moved_from[lo:hi]]
        return out

    def strings(self, values: Strings) -> Strings:
        """A string column in sorted order."""
        order = self.array()
        return values if order is None else take_strings(values, order)

    def array(self) -> np.ndarray | None:
        """The table row of every sorted row (None: each its own)."""
        if self.moved is None:
            return self.order
        order = np.arange(self.n)
        order[self.moved[0]] = self.moved[1]
        return order

    def subset(self, keep: np.ndarray) -> FrameRows:
        """The rows ``keep`` (a boolean mask over the sorted rows) alone, in the same order."""
        if self.identity:
            return FrameRows(np.flatnonzero(keep), int(np.count_nonzero(keep)))
        order = self.array()
        assert order is not None
        return FrameRows(order[keep], int(np.count_nonzero(keep)))


def trec_order(
    q: np.ndarray, score: np.ndarray, doc_values: Strings, src: np.ndarray | None
) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """How to put rows in trec_eval order (query, score desc, doc_id desc): ``(perm, ties)``.

    ``perm`` sorts by (query, score desc), None when already so; ``ties`` = ``(rows, from_rows, pairs)``
    then orders the tied rows by doc_id desc: ``column[rows] = column[from_rows]``, ``pairs`` being
    the rows tied with the next one; None when no score ties. Tied rows share query and score, so
    only the document columns need it. ``doc_values[src]`` are the rows' documents (``src`` None: the
    rows are ``doc_values``' own).

    Runs usually arrive grouped by query with scores descending, so this checks that in O(n) first and
    sorts only what needs it: the whole run by (query, score) when scores are out of order, then each
    block of tied scores by doc_id (Arrow compares the id strings' bytes, as trec_eval's ``strcmp``).
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
        table = table_of({"q": to_arrow(q), "s": to_arrow(score)})
        perm = to_numpy(sort_indices(table, [("q", "ascending"), ("s", "descending")])).astype(np.int64)
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
    local = sort_indices(table_of({"g": to_arrow(group), "d": docs}), [("g", "ascending"), ("d", "descending")])
    return perm, (rows, rows[to_numpy(local)], np.flatnonzero(tie))
