"""How much two runs agree, without judgments: rank-biased overlap, overlap@k and churn@k, per query and their mean.

Nothing here reads qrels: two runs (or the runs of two alignments) and, optionally, the queries to compare.

**RBO.** Rank-biased overlap (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite rankings") with
persistence ``p``: the expected agreement ``A_d = X_d / d`` (``X_d``: the items the two top-d prefixes share) of a user
who reads on to depth d + 1 with probability ``p``. The value given is the *extrapolated* RBO_EXT: the lists are seen
to their ends only, and the agreement past them is assumed to go on as at the end of the shorter list.

Lists of different lengths (s < l) are handled as Webber et al.'s equation 32: between depths s + 1 and l the items
the shorter list did not show are assumed to agree at its last agreement A_s, and past l the agreement is
``(X_l + (l - s) · A_s) / l``. A list shorter than the other is thus not read as disagreeing.

Ties (equal scores within a query of a run that has scores) follow Corsi & Urbano, "The Treatment of Ties in
Rank-Biased Overlap" (SIGIR 2024), variant **RBO^a**: a group of t items tied over ranks r..r+t-1 is in the top d
with weight (d - r + 1) / t for d inside the group (the chance that a given one of them is, over the group's orders),
``X_d`` sums the products of the two lists' weights, and ``A_d = X_d / d``; past the shorter list, the unseen items'
share is scaled by the mean weight of the longer list's new items. Why this variant: a tie in a retrieval run is
uncertainty (the system could not order the documents), not equality, and for ties that mean uncertainty Corsi &
Urbano advise RBO^a (the mean RBO over every order of the tied documents; exactly that for lists of equal length) or
RBO^b (corrected for the information the ties lose). RBO^a is chosen because it keeps RBO's meaning: the value a
user of one of the tie orders would see, averaged. Webber et al.'s own treatment (RBO^w: a tied group enters whole at
its first rank, agreement ``2 X_d / (|S_d| + |L_d|)``) is for ties that mean equality (sports rankings). Without
ties the a, b and w variants are all Webber et al.'s RBO_EXT. A run without scores (a list of ids) has no
ties.

**overlap@k** = |A_k ∩ B_k| / max(|A_k|, |B_k|), A_k and B_k the two top k in ranking order (score descending, ties
by doc id descending, as every metric here): the share of the top k both runs hold, counted over the longer of the
two when a run retrieved fewer than k. **churn@k** = 1 − overlap@k: the share of the top k that changed.

**Queries only one run ranks** are left out (NaN; not in the mean), as a query neither run ranks is: without
judgments nothing says the other run was asked it, and a 0 there would read as a disagreement that was never
measured. ``missing="zero"`` scores them 0 (churn 1) instead, as trec_eval ``-c`` scores a judged query a run lacks
(:class:`ragmetrics.Conventions`' ``missing``, the same two values).
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.engine.alignment import Alignment
from ragmetrics.engine.conventions import CHOICES, Missing
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Run

if TYPE_CHECKING:
    import pandas as pd

RBO_PERSISTENCE = 0.9
"""RBO's default p: the top 10 carry about 86% of the weight (Webber et al.)."""
DEFAULT_DEPTHS = (10,)


@dataclass(frozen=True)
class Rankings:
    """Rankings of many queries as flat arrays sorted by (query, rank): each row's query index ``q``, item code
    ``item`` (equal codes: the same item), and the first and last 0-based rank of its tie group (``top``,
    ``bottom``: equal when untied); ``length`` is each query's number of items."""

    q: np.ndarray
    item: np.ndarray
    top: np.ndarray
    bottom: np.ndarray
    length: np.ndarray

    @property
    def pos(self) -> np.ndarray:
        """Each row's 0-based rank in its query."""
        return np.arange(len(self.q), dtype=np.int64) - np.concatenate(([0], np.cumsum(self.length)))[self.q]

    @classmethod
    def of(cls, q: np.ndarray, item: np.ndarray, score: np.ndarray | None, n_queries: int) -> Rankings:
        """Rows sorted by (query, rank); ``score`` (descending within a query, equal within a tie) gives the tie
        groups, None: no ties."""
        n = len(q)
        length = np.bincount(q, minlength=n_queries)
        starts = np.concatenate(([0], np.cumsum(length)))
        pos = np.arange(n, dtype=np.int64) - starts[q]
        if score is None or n == 0:
            return cls(q, item, pos, pos, length)
        new = np.ones(n, dtype=bool)
        new[1:] = (q[1:] != q[:-1]) | (score[1:] != score[:-1])
        group_start = np.flatnonzero(new)
        group = np.cumsum(new) - 1
        group_end = np.append(group_start[1:], n) - 1
        return cls(q, item, pos[group_start][group], pos[group_end][group], length)

    @classmethod
    def of_groups(cls, ranking: Sequence[str | Collection[str]], codes: dict[str, int]) -> Rankings:
        """One query: ``["a", {"b", "c"}, "d"]``, a string an item, a collection a group of tied items (Corsi &
        Urbano's notation); ``codes`` numbers the items (shared by the two rankings compared)."""
        items: list[str] = []
        top: list[int] = []
        bottom: list[int] = []
        for entry in ranking:
            group = [entry] if isinstance(entry, str) else sorted(entry)
            start = len(items)
            items += group
            top += [start] * len(group)
            bottom += [start + len(group) - 1] * len(group)
        if len(set(items)) < len(items):
            twice = next(item for item in items if items.count(item) > 1)
            raise RagMetricsError(f"a ranking holds {twice!r} twice; expected each item once")
        code = np.array([codes.setdefault(item, len(codes)) for item in items], dtype=np.int64)
        as_int = np.asarray
        n = len(items)
        return cls(np.zeros(n, dtype=np.int64), code, as_int(top, dtype=np.int64), as_int(bottom, dtype=np.int64),
                   np.array([n]))  # fmt: skip


def _common(a: Rankings, b: Rankings) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``a`` and of ``b`` that hold the same item for the same query."""
    shift = int(max(a.item.max(initial=0), b.item.max(initial=0))) + 1
    keys_a, keys_b = a.q * shift + a.item, b.q * shift + b.item
    _, ia, ib = np.intersect1d(keys_a, keys_b, assume_unique=True, return_indices=True)
    return ia, ib


def _weight(d: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """An item's weight in the top d + 1 (0-based column d): 0 above its group, 1 from its group's last rank on."""
    return np.clip((d - top + 1) / (bottom - top + 1), 0.0, 1.0)


def _segment_cumsum(values: np.ndarray, starts: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``values`` restarted at each segment (``starts``: each segment's first column)."""
    total = np.cumsum(values)
    before = np.concatenate(([0.0], total))[starts]
    return total - before[segment]


def _sum_over_columns(
    offset: np.ndarray, width: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, value: Any
) -> np.ndarray:
    """Per query and column d (flat: ``offset[q] + d``, d < ``width[q]``), Σ over items of f_i(d): 0 before ``lo``,
    ``value(d, i)`` on [lo, hi), 1 from ``hi`` on. The full items are a step, the partial ones are summed over
    their window only (a tie group's width at most)."""
    columns = int(offset[-1] + width[-1]) if len(width) else 0
    column_q = np.repeat(np.arange(len(width)), width)
    stepped = hi < width[q]
    steps = np.bincount(offset[q[stepped]] + hi[stepped], minlength=columns).astype(np.float64)
    total = _segment_cumsum(steps, offset, column_q)
    span = hi - lo
    inside = np.flatnonzero(span > 0)
    if len(inside):
        which = np.repeat(inside, span[inside])
        d = lo[which] + np.arange(len(which)) - np.repeat(np.cumsum(span[inside]) - span[inside], span[inside])
        total += np.bincount(offset[q[which]] + d, weights=value(d, which), minlength=columns)
    return total


def rbo_ext(a: Rankings, b: Rankings, p: float = RBO_PERSISTENCE) -> np.ndarray:
    """RBO^a_EXT of each query's two rankings (module docstring); NaN when both are empty, 0 when one is. One pass
    over every query: flat arrays, no loop per query."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 < float(p) < 1.0:
        raise RagMetricsError(f"The 'p' parameter must be a number between 0 and 1. Got {p!r} instead.")
    n_queries = len(a.length)
    s = np.minimum(a.length, b.length)
    l = np.maximum(a.length, b.length)  # noqa: E741 (the paper's names)
    offset = np.concatenate(([0], np.cumsum(l)))[:-1].astype(np.int64)
    column_q = np.repeat(np.arange(n_queries), l)
    d = np.arange(len(column_q), dtype=np.int64) - offset[column_q]  # each column's 0-based depth in its query
    ia, ib = _common(a, b)
    q = a.q[ia]
    ta, ba, tb, bb = a.top[ia], a.bottom[ia], b.top[ib], b.bottom[ib]

    def both(depth: np.ndarray, i: np.ndarray) -> np.ndarray:
        return _weight(depth, ta[i], ba[i]) * _weight(depth, tb[i], bb[i])

    lo, hi = np.maximum(ta, tb), np.maximum(ba, bb) + 1
    overlap = _sum_over_columns(offset, l, q, lo, hi, both)  # X_d (the shorter list's items count fully past s)
    agreement = overlap / (d + 1.0)
    answered = s > 0
    a_s = np.zeros(n_queries)
    a_s[answered] = agreement[offset[answered] + s[answered] - 1]
    # past the shorter list: the longer list's items the shorter lacks, and the mean weight of those present
    unseen_a = np.ones(len(a.q), dtype=bool)
    unseen_a[ia] = False
    unseen_a &= a.length[a.q] > b.length[a.q]
    unseen_b = np.ones(len(b.q), dtype=bool)
    unseen_b[ib] = False
    unseen_b &= b.length[b.q] > a.length[b.q]
    uq = np.concatenate([a.q[unseen_a], b.q[unseen_b]])
    ut = np.concatenate([a.top[unseen_a], b.top[unseen_b]])
    ub = np.concatenate([a.bottom[unseen_a], b.bottom[unseen_b]])
    mass = _sum_over_columns(offset, l, uq, ut, ub + 1, lambda depth, i: _weight(depth, ut[i], ub[i]))
    present = _segment_cumsum(np.bincount(offset[uq] + ut, minlength=len(d)).astype(np.float64), offset, column_q)
    later = d >= s[column_q]
    mean_weight = mass[later] / present[later]  # the longer list's new items are present past s: never 0 / 0
    agreement[later] = (overlap[later] + (d[later] + 1 - s[column_q][later]) * a_s[column_q][later] * mean_weight) / (
        d[later] + 1.0
    )
    weighted = np.bincount(column_q, weights=agreement * p ** (d + 1.0), minlength=n_queries)
    last = np.zeros(n_queries)
    last[answered] = overlap[offset[answered] + l[answered] - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = (last + (l - s) * a_s) / l * p ** (l + 1.0) / (1.0 - p)
    out = np.where(answered, (1.0 - p) / p * (weighted + tail), 0.0)
    out[l == 0] = np.nan
    return out


def rbo(x: Sequence[str | Collection[str]], y: Sequence[str | Collection[str]], p: float = RBO_PERSISTENCE) -> float:
    """RBO^a_EXT of two rankings given as lists whose entries are items or collections of tied items
    (``["a", {"b", "c"}]``); see the module docstring."""
    codes: dict[str, int] = {}
    return float(rbo_ext(Rankings.of_groups(x, codes), Rankings.of_groups(y, codes), p)[0])


def overlap_at(a: Rankings, b: Rankings, ks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """overlap@k and churn@k, shape (n_queries, len(ks)): the documents both top k hold, and those only one holds,
    over the longer of the two top k (NaN when both are empty)."""
    ia, ib = _common(a, b)
    rank = np.maximum(a.pos[ia], b.pos[ib])
    n_queries = len(a.length)
    overlap = np.full((n_queries, len(ks)), np.nan)
    churn = np.full((n_queries, len(ks)), np.nan)
    for j, k in enumerate(ks):
        shared = np.bincount(a.q[ia][rank < k], minlength=n_queries)
        longest = np.maximum(np.minimum(a.length, k), np.minimum(b.length, k))
        some = longest > 0
        overlap[some, j] = shared[some] / longest[some]
        churn[some, j] = (longest[some] - shared[some]) / longest[some]
    return overlap, churn


def _ranked_frame(run: Run, queries: dict[str, int]) -> pd.DataFrame:
    """The run's rows of ``queries`` (query id -> index) in ranking order: best score per document, score
    descending, doc id descending."""
    frame = run.table.select(["query_id", "doc_id", "score"]).to_pandas()
    frame["q"] = frame["query_id"].map(queries)
    frame = frame[frame["q"].notna()].astype({"q": np.int64})
    frame = frame.sort_values(["q", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    return frame.drop_duplicates(["q", "doc_id"], keep="first")


def _run_of(value: Run | Alignment, which: str) -> Run:
    if isinstance(value, Alignment):
        return value.run
    if isinstance(value, Run):
        return value
    raise RagMetricsError(f"The {which!r} parameter must be a Run or an Alignment. Got {type(value).__name__} instead.")


def _depths(k: int | Sequence[int]) -> tuple[int, ...]:
    depths = (k,) if isinstance(k, (int, np.integer)) else tuple(k)
    if not depths or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in depths):
        raise RagMetricsError(f"The 'k' parameter must be an int >= 1 or a list of them. Got {k!r} instead.")
    return tuple(dict.fromkeys(int(d) for d in depths))


@dataclass(frozen=True)
class Agreement:
    """Two runs' agreement: ``values`` has one row per query (``rbo``, ``overlap@k``, ``churn@k``), NaN where
    neither run answers the query and, under ``missing="skip"``, where only one does (``one_sided`` counts those);
    :meth:`mean` averages the rest."""

    names: tuple[str, str]
    p: float
    ks: tuple[int, ...]
    values: pd.DataFrame
    missing: Missing = "skip"
    one_sided: int = 0
    unranked: int = 0  # queries asked about that neither run ranks (NaN whatever ``missing`` says)

    def mean(self) -> pd.Series:
        return self.values.mean(skipna=True)

    @property
    def queries_compared(self) -> int:
        return int(self.values["rbo"].notna().sum())

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runs": list(self.names),
            "p": self.p,
            "num_q": self.queries_compared,
            "missing": self.missing,
            "one_sided": self.one_sided,
            "unranked": self.unranked,
            "mean": {name: _plain(v) for name, v in self.mean().items()},
        }
        if per_query:
            data["per_query"] = {
                str(qid): {name: _plain(v) for name, v in row.items()} for qid, row in self.values.iterrows()
            }
        return data


def _plain(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def agreement(
    a: Run | Alignment,
    b: Run | Alignment,
    *,
    p: float = RBO_PERSISTENCE,
    k: int | Sequence[int] = DEFAULT_DEPTHS,
    queries: Sequence[str] | None = None,
    missing: Missing = "skip",
) -> Agreement:
    """RBO (``p``), overlap@k and churn@k (each ``k``) of runs ``a`` and ``b`` per query, reading no judgments (an
    Alignment gives its run). ``queries``: the queries compared, in that order (default: every query of ``a``,
    then those only ``b`` has, each in query id order). ``missing``: a query only one run ranks is left out
    (``skip``) or scores 0 (``zero``, as trec_eval ``-c``); see the module docstring."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: the result is a frame)

    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 < float(p) < 1.0:
        raise RagMetricsError(f"The 'p' parameter must be a number between 0 and 1. Got {p!r} instead.")
    if missing not in CHOICES["missing"]:
        listed = ", ".join(repr(c) for c in CHOICES["missing"])
        raise RagMetricsError(f"The 'missing' parameter must be one of {listed}. Got {missing!r} instead.")
    depths = _depths(k)
    run_a, run_b = _run_of(a, "a"), _run_of(b, "b")
    if queries is None:
        ids_a = run_a.table.column("query_id").unique().to_pylist()
        ids_b = run_b.table.column("query_id").unique().to_pylist()
        order = sorted(ids_a) + sorted(set(ids_b) - set(ids_a))
    elif isinstance(queries, (str, bytes)):  # one id would be read character by character
        raise RagMetricsError(f"The 'queries' parameter must be a sequence of query ids. Got the text {queries!r}.")
    else:
        order = list(dict.fromkeys(str(q) for q in queries))
    if not order:
        raise RagMetricsError("no query to compare: the 'queries' parameter is empty")
    index = {qid: i for i, qid in enumerate(order)}
    frame_a, frame_b = _ranked_frame(run_a, index), _ranked_frame(run_b, index)
    codes = pd.factorize(pd.concat([frame_a["doc_id"], frame_b["doc_id"]], ignore_index=True))[0].astype(np.int64)
    ranked_a, ranked_b = (
        Rankings.of(frame["q"].to_numpy(), part, frame["score"].to_numpy() if run.has_scores else None, len(order))
        for frame, part, run in ((frame_a, codes[: len(frame_a)], run_a), (frame_b, codes[len(frame_a) :], run_b))
    )
    overlap, churn = overlap_at(ranked_a, ranked_b, depths)
    columns = ["rbo"] + [f"overlap@{d}" for d in depths] + [f"churn@{d}" for d in depths]
    matrix = np.column_stack([rbo_ext(ranked_a, ranked_b, p), overlap, churn])
    one_sided = (ranked_a.length > 0) != (ranked_b.length > 0)
    if missing == "skip":
        matrix[one_sided] = np.nan
        if np.isnan(matrix[:, 0]).all():
            raise RagMetricsError(
                f"no query to compare: none of the {len(order)} queries compared is ranked by both runs "
                f"({int(np.count_nonzero(one_sided))} only one run ranks: --missing zero, missing='zero' in Python, "
                "scores those 0)"
            )
    values = pd.DataFrame(matrix, columns=columns, index=pd.Index(order, name="query_id"), dtype=np.float64)
    unranked = int(np.count_nonzero((ranked_a.length == 0) & (ranked_b.length == 0)))
    return Agreement(
        (run_a.name, run_b.name), float(p), depths, values, missing, int(np.count_nonzero(one_sided)), unranked
    )
