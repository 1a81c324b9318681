"""A run aligned with a dataset as flat arrays, and the per-query cumulative sums every metric is read from.

Rows are sorted by (query, rank). Whole-ranking metrics sum flat arrays per query; cut-off metrics and
curves read a dense query-by-rank matrix of cumulative sums (:class:`Cumulative`), built once per kind at
the deepest cut-off asked for, so K = 1..100 costs about what one cut-off costs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.engine.once import Once
from ragmetrics.engine.order import FrameRows, positions, running_sum, segment_starts
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import Strings, dictionary_codes, take_strings

if TYPE_CHECKING:
    from ragmetrics.engine.text import TextEvidence


class Gain(Enum):
    """nDCG's gain of a label: the label itself (trec_eval) or 2^label - 1 (Burges)."""

    LINEAR = "linear"
    EXPONENTIAL = "exponential"

    def of(self, label: np.ndarray) -> np.ndarray:
        positive = np.where(label > 0, label, 0).astype(np.float64)
        return positive if self is Gain.LINEAR else np.exp2(positive) - 1.0


class Cumulative(Enum):
    """What a dense (n_queries, depth) matrix accumulates along rank."""

    RELEVANT = "relevant documents in the top k (TP@k)"
    JUDGED = "judged documents in the top k"
    PRECISION = "sum of TP@i / i over relevant ranks i <= k"
    DCG = "DCG@k, linear gain"
    DCG_EXPONENTIAL = "DCG@k, exponential gain"
    IDEAL_DCG = "ideal DCG@k, linear gain"
    IDEAL_DCG_EXPONENTIAL = "ideal DCG@k, exponential gain"

    @staticmethod
    def dcg(gain: Gain, *, ideal: bool = False) -> Cumulative:
        exponential = gain is Gain.EXPONENTIAL
        if ideal:
            return Cumulative.IDEAL_DCG_EXPONENTIAL if exponential else Cumulative.IDEAL_DCG
        return Cumulative.DCG_EXPONENTIAL if exponential else Cumulative.DCG

    @property
    def gain(self) -> Gain:
        return Gain.EXPONENTIAL if self.name.endswith("EXPONENTIAL") else Gain.LINEAR

    @property
    def ideal(self) -> bool:
        """Accumulated along the ideal ranking (the judgments sorted by label), not the run's."""
        return self.name.startswith("IDEAL")


def discount(pos: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(pos + 2.0)


@dataclass(frozen=True, eq=False)
class Ranking:
    """One run aligned with one dataset: flat arrays sorted by (query, rank).

    ``q`` is the evaluated-query index (0..n_queries-1, in dataset order), ``pos`` the 0-based rank after
    sorting and de-duplication, ``label`` the qrels label (the label type's minimum when the document is not
    judged: below every label and below ``rel_level``). ``documents`` are the run's document ids in table
    order and ``doc_rows`` the table row of each ranked row (None: the same).
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
    documents: Strings | None = None
    doc_rows: FrameRows | None = None
    judged_rows: np.ndarray | None = None
    """Which rows were judged, when that is not what the labels say (a ranking completed by :meth:`completed`)."""
    evidence: TextEvidence | None = None
    """What each ranked row's text holds, for the text metrics (:mod:`ragmetrics.engine.text`)."""
    _once: Once = field(default_factory=Once, init=False, repr=False)
    _sums: dict[Cumulative, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _sum_locks: dict[Cumulative, threading.Lock] = field(
        default_factory=lambda: {kind: threading.Lock() for kind in Cumulative}, init=False, repr=False
    )

    @property
    def derived_count(self) -> int:
        """How many derived values (relevance flags, document codes, cumulative sums, ...) it keeps: it only
        grows."""
        return len(self._once) + len(self._sums)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def unjudged_label(self) -> int:
        return int(np.iinfo(self.label.dtype).min)

    @property
    def judged(self) -> np.ndarray:
        """True where the row's document is judged."""
        if self.judged_rows is not None:
            return self.judged_rows
        return self._once.get("judged", lambda: self.label != self.unjudged_label)

    def condensed(self) -> Ranking:
        """The ranking with its unjudged documents removed (Sakai's condensed lists; trec_eval's -J, ir_measures'
        judged_only): the judged ones move up, the judgments stay as they are. A negative label (below a
        non-negative ``rel_level``) is unjudged here, as trec_eval -J reads it."""
        keep = self.judged & (self.label >= min(0, self.rel_level))
        q = self.q[keep]
        starts = segment_starts(q, self.n_queries)
        rows = (self.doc_rows or FrameRows(None, len(self.q))).subset(keep)
        return replace(
            self,
            q=q,
            pos=positions(starts, self.n_queries),
            label=self.label[keep],
            n_ret=np.diff(starts),
            doc_rows=None if rows.identity else rows,
            judged_rows=None,
        )

    def completed(self, depth: int | None) -> Ranking:
        """The ranking as if every unjudged document in the top ``depth`` (None: all of them) were judged relevant,
        with the smallest relevant grade (``rel_level``, at least 1): the unjudged documents below it stay
        unjudged. The added judgments count in R and in the ideal ranking."""
        relevant = ~self.judged
        if depth is not None:
            relevant &= self.pos < depth
        return self.judged_as(relevant)

    def judged_as(self, relevant: np.ndarray, nonrelevant: np.ndarray | None = None) -> Ranking:
        """The ranking with the unjudged rows where ``relevant`` is True judged relevant at the smallest relevant
        grade (``rel_level``, at least 1), counted in R and in the ideal ranking, and those where ``nonrelevant``
        is True judged non-relevant (label 0, counted among the judged non-relevant, which bpref reads); other
        unjudged rows stay unjudged. judged@k still reads the judgments as aligned."""
        grade = max(self.rel_level, 1)
        unjudged = ~self.judged
        relevant = relevant & unjudged
        label = self.label.astype(np.promote_types(self.label.dtype, np.min_scalar_type(grade)))
        n_nonrel = self.n_nonrel
        if nonrelevant is not None and self.rel_level > 0:
            rest = nonrelevant & unjudged & ~relevant
            label[rest] = 0
            n_nonrel = n_nonrel + np.bincount(self.q[rest], minlength=self.n_queries)
        label[relevant] = grade
        added = self.q[relevant]
        ideal_q = np.concatenate([self.ideal_q, added])
        ideal_label = np.concatenate([self.ideal_label, np.full(len(added), grade, dtype=self.ideal_label.dtype)])
        order = np.lexsort((-ideal_label, ideal_q))
        ideal_q, ideal_label = ideal_q[order], ideal_label[order]
        ideal_pos = np.arange(len(ideal_q), dtype=np.int64) - segment_starts(ideal_q, self.n_queries)[:-1][ideal_q]
        return replace(
            self,
            label=label,
            n_rel=self.n_rel + np.bincount(added, minlength=self.n_queries),
            n_nonrel=n_nonrel,
            ideal_q=ideal_q,
            ideal_pos=ideal_pos,
            ideal_label=ideal_label,
            judged_rows=self.judged,
        )

    def docs(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The document id of each row (``rows``: a boolean mask or row numbers; all rows by default), as a
        Python object array, taken from the run on demand."""
        if self.documents is None:
            raise RagMetricsError("this ranking was built without document ids")
        if rows is not None:
            rows = np.asarray(rows)
            rows = np.flatnonzero(rows) if rows.dtype == bool else rows
        if self.doc_rows is not None:
            rows = self.doc_rows.array() if rows is None else self.doc_rows.of(rows)
        values = self.documents if rows is None else take_strings(self.documents, rows)
        return np.array(values.to_pylist(), dtype=object)

    @property
    def doc_code(self) -> np.ndarray:
        """Each row's document as an int32 code (equal codes: equal ids)."""

        def encode() -> np.ndarray:
            if self.documents is None:
                raise RagMetricsError("this ranking was built without document ids")
            ordered = self.documents if self.doc_rows is None else self.doc_rows.strings(self.documents)
            return dictionary_codes(ordered)[0]

        return self._once.get("doc_code", encode)

    @property
    def rel(self) -> np.ndarray:
        return self._once.get("rel", lambda: self.label >= self.rel_level)

    def _gain_rows(self) -> np.ndarray:
        """Rows with a positive label (the only ones with a gain)."""
        return self._once.get("gain_rows", lambda: np.flatnonzero(self.label > 0))

    def _relevant_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The relevant rows, and each one's 1-based count among its query's relevant rows (TP at its rank)."""

        def compute() -> tuple[np.ndarray, np.ndarray]:
            rows = np.flatnonzero(self.rel)
            rq = self.q[rows]
            return rows, np.arange(1, len(rows) + 1) - segment_starts(rq, self.n_queries)[:-1][rq]

        return self._once.get("relevant_rows", compute)

    @property
    def first_rel_rank(self) -> np.ndarray:
        """1-based rank of the first relevant document, 0 when none was retrieved."""

        def compute() -> np.ndarray:
            first = np.zeros(self.n_queries, dtype=np.int64)
            rows = np.flatnonzero(self.rel)
            qs, idx = np.unique(self.q[rows], return_index=True)  # rows are sorted by (q, pos): the first wins
            first[qs] = self.pos[rows[idx]] + 1
            return first

        return self._once.get("first", compute)

    # --- cumulative sums ----------------------------------------------------------------------

    def cumulative(self, kind: Cumulative, depth: int) -> np.ndarray:
        """The (n_queries, depth) cumulative sums of ``kind``, read-only; built at the deepest depth asked so far."""
        kept = self._sums.get(kind)
        if kept is None or kept.shape[1] < depth:
            with self._sum_locks[kind]:
                kept = self._sums.get(kind)
                if kept is None or kept.shape[1] < depth:
                    kept = self._build(kind, depth)
                    kept.flags.writeable = False
                    self._sums[kind] = kept
        return kept[:, :depth]

    def _build(self, kind: Cumulative, depth: int) -> np.ndarray:
        # only rows with a nonzero value are written into the zeroed matrix (relevant or positive-gain rows: few)
        dtype: type = np.float64
        if kind is Cumulative.JUDGED:
            rows = np.flatnonzero(self.judged & (self.pos < depth))
            q, pos = self.q[rows], self.pos[rows]
            values: np.ndarray = np.ones(len(rows), dtype=np.int32)
            dtype = np.int32
        elif kind is Cumulative.RELEVANT:
            rows = self._relevant_rows()[0]
            rows = rows[self.pos[rows] < depth]
            q, pos = self.q[rows], self.pos[rows]
            values = np.ones(len(rows), dtype=np.int32)
            dtype = np.int32
        elif kind is Cumulative.PRECISION:
            rows, tp = self._relevant_rows()
            shallow = self.pos[rows] < depth
            rows, tp = rows[shallow], tp[shallow]
            q, pos = self.q[rows], self.pos[rows]
            values = tp / (pos + 1.0)
        elif kind in (Cumulative.DCG, Cumulative.DCG_EXPONENTIAL):
            rows = self._gain_rows()
            rows = rows[self.pos[rows] < depth]
            q, pos = self.q[rows], self.pos[rows]
            values = kind.gain.of(self.label[rows]) * discount(pos)
        else:
            shallow = self.ideal_pos < depth
            q, pos = self.ideal_q[shallow], self.ideal_pos[shallow]
            values = kind.gain.of(self.ideal_label[shallow]) * discount(pos)
        matrix: np.ndarray = np.zeros((self.n_queries, depth), dtype=dtype)
        matrix[q, pos] = values
        np.cumsum(matrix, axis=1, out=matrix)
        return matrix

    def reach(self, kind: Cumulative) -> int:
        """The deepest cut-off at which ``kind``'s sums can still grow (at least 1): past it, every column equals
        the one at it."""
        ideal = kind.ideal
        positions = self.ideal_pos if ideal else self.pos
        return self._once.get(("reach", ideal), lambda: max(1, int(positions.max(initial=-1)) + 1))

    def at(self, kind: Cumulative, ks: np.ndarray) -> np.ndarray:
        """Columns ``ks`` (1-based cut-offs) of a cumulative matrix, read-only; the whole curve 1..k is a view. A
        cut-off past :meth:`reach` reads the column at it, so memory follows the rankings, not the cut-off asked."""
        depth = int(ks.max())
        reach = self.reach(kind)
        if depth > reach:
            columns = self.cumulative(kind, reach)[:, np.minimum(ks, reach) - 1]
            columns.flags.writeable = False
            return columns
        matrix = self.cumulative(kind, depth)
        if len(ks) == depth and np.array_equal(ks, np.arange(1, depth + 1)):
            return matrix
        return matrix[:, ks - 1]

    def hits_at(self, ks: np.ndarray) -> np.ndarray:
        """Relevant documents in the top k (TP@k), shape (n_queries, len(ks)), int32."""
        return self.at(Cumulative.RELEVANT, ks)

    def judged_at(self, ks: np.ndarray) -> np.ndarray:
        """Judged documents in the top k, shape (n_queries, len(ks)), int32."""
        return self.at(Cumulative.JUDGED, ks)

    def precision_sum_at(self, ks: np.ndarray) -> np.ndarray:
        """Σ over relevant ranks i <= k of TP@i / i (AP@k times R)."""
        return self.at(Cumulative.PRECISION, ks)

    def dcg_at(self, ks: np.ndarray, gain: Gain) -> np.ndarray:
        return self.at(Cumulative.dcg(gain), ks)

    def ideal_dcg_at(self, ks: np.ndarray, gain: Gain) -> np.ndarray:
        return self.at(Cumulative.dcg(gain, ideal=True), ks)

    # --- whole-ranking sums -------------------------------------------------------------------

    def _per_query(self, q: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(q, weights=weights, minlength=self.n_queries).astype(np.float64)

    def precision_sum_full(self) -> np.ndarray:
        rows, tp = self._relevant_rows()
        return self._per_query(self.q[rows], tp / (self.pos[rows] + 1.0))

    def dcg_full(self, gain: Gain) -> np.ndarray:
        rows = self._gain_rows()
        return self._per_query(self.q[rows], gain.of(self.label[rows]) * discount(self.pos[rows]))

    def ideal_dcg_full(self, gain: Gain) -> np.ndarray:
        return self._per_query(self.ideal_q, gain.of(self.ideal_label) * discount(self.ideal_pos))

    def hits_full(self) -> np.ndarray:
        """Relevant documents retrieved, at any rank (counted once, for every set measure)."""

        def compute() -> np.ndarray:
            rows, _ = self._relevant_rows()
            return self._per_query(self.q[rows], np.ones(len(rows)))

        return self._once.get("hits_full", compute)

    def hits_at_own_r(self) -> np.ndarray:
        """Relevant documents in the top R, R = the query's number of relevant documents."""
        return self._per_query(self.q, (self.rel & (self.pos < self.n_rel[self.q])).astype(np.float64))

    def bpref_sum(self) -> np.ndarray:
        rel = self.rel
        judged_nonrel = (self.label >= 0) & ~rel
        above = running_sum(judged_nonrel.astype(np.int64), self.q, segment_starts(self.q, self.n_queries))
        above = above - judged_nonrel  # judged non-relevant strictly above each row
        r = self.n_rel[self.q].astype(np.float64)
        n = np.minimum(self.n_nonrel[self.q], self.n_rel[self.q]).astype(np.float64)
        term = np.ones(len(self.q))
        safe = (above > 0) & (n > 0)
        term[safe] = 1.0 - np.minimum(above[safe], r[safe]) / n[safe]
        return self._per_query(self.q, np.where(rel, term, 0.0))
