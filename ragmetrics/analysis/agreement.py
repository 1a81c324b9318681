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

A query that neither run answers is left out (NaN; not in the mean); a query only one run answers scores 0 (churn 1).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.engine.alignment import Alignment
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Run

if TYPE_CHECKING:
    import pandas as pd

RBO_PERSISTENCE = 0.9
"""RBO's default p: the top 10 carry about 86% of the weight (Webber et al.)."""
DEFAULT_DEPTHS = (10,)


@dataclass(frozen=True)
class Tied:
    """A ranking as flat items with the first and last 0-based rank of each one's tie group (equal when untied)."""

    items: np.ndarray
    top: np.ndarray
    bottom: np.ndarray

    @classmethod
    def of(cls, items: Sequence[str], scores: np.ndarray | None) -> Tied:
        """``items`` in ranking order; ``scores`` (descending, equal within a tie) give the groups, None: no ties."""
        n = len(items)
        positions = np.arange(n, dtype=np.int64)
        if scores is None or n == 0:
            return cls(np.asarray(items, dtype=object), positions, positions)
        new = np.ones(n, dtype=bool)
        new[1:] = scores[1:] != scores[:-1]
        starts = np.flatnonzero(new)
        group = np.cumsum(new) - 1
        ends = np.append(starts[1:], n) - 1
        return cls(np.asarray(items, dtype=object), starts[group], ends[group])

    @classmethod
    def of_groups(cls, ranking: Sequence[str | Collection[str]]) -> Tied:
        """``["a", {"b", "c"}, "d"]``: a string is an item, a collection a group of tied items (Corsi & Urbano)."""
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
        return cls(np.asarray(items, dtype=object), np.asarray(top, dtype=np.int64), np.asarray(bottom, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.items)


def _weight(d: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """An item's weight in the top d + 1 (0-based column d): 0 above its group, 1 from its group's last rank on."""
    return np.clip((d - top + 1) / (bottom - top + 1), 0.0, 1.0)


def _sum_over_depths(
    depth: int, lo: np.ndarray, hi: np.ndarray, value: Any, weights: np.ndarray | None = None
) -> np.ndarray:
    """Σ over items of f_i(d) for d = 0..depth-1, where f_i is 0 before ``lo``, ``value(d, i)`` on [lo, hi) and 1
    (times ``weights``) from ``hi`` on: the full items as a step, the partial ones over their window only."""
    ones = np.ones(len(lo)) if weights is None else weights
    total = np.cumsum(np.bincount(np.minimum(hi, depth), weights=ones, minlength=depth + 1)[:depth])
    span = hi - lo
    inside = np.flatnonzero(span > 0)
    if len(inside):
        which = np.repeat(inside, span[inside])
        offsets = np.arange(len(which)) - np.repeat(np.cumsum(span[inside]) - span[inside], span[inside])
        d = lo[which] + offsets
        keep = d < depth
        total += np.bincount(d[keep], weights=value(d[keep], which[keep]), minlength=depth)[:depth]
    return total


def rbo_ext(x: Tied, y: Tied, p: float = RBO_PERSISTENCE) -> float:
    """RBO^a_EXT of two rankings (module docstring); NaN when both are empty, 0 when one is."""
    if not 0.0 < p < 1.0:
        raise RagMetricsError(f"The 'p' parameter must be a number between 0 and 1. Got {p!r} instead.")
    if len(x) == 0 and len(y) == 0:
        return float("nan")
    if len(x) == 0 or len(y) == 0:
        return 0.0
    short, long = (x, y) if len(x) <= len(y) else (y, x)
    s, l = len(short), len(long)  # noqa: E741 (the paper's names)
    common, in_short, in_long = np.intersect1d(short.items, long.items, assume_unique=True, return_indices=True)
    del common
    ts, bs = short.top[in_short], short.bottom[in_short]
    tl, bl = long.top[in_long], long.bottom[in_long]
    lo, hi = np.maximum(ts, tl), np.maximum(bs, bl) + 1

    def both(d: np.ndarray, i: np.ndarray) -> np.ndarray:
        return _weight(d, ts[i], bs[i]) * _weight(d, tl[i], bl[i])

    overlap = _sum_over_depths(l, lo, hi, both)  # X_d, d = 1..l (the short list's items all count fully past s)
    depth = np.arange(1, l + 1, dtype=np.float64)
    agreement = overlap / depth
    a_s = agreement[s - 1]
    if l > s:
        unseen = np.ones(l, dtype=bool)
        unseen[in_long] = False
        ut, ub = long.top[unseen], long.bottom[unseen]
        mass = _sum_over_depths(l, ut, ub + 1, lambda d, i: _weight(d, ut[i], ub[i]))
        present = np.cumsum(np.bincount(ut, minlength=l)[:l])
        later = np.arange(s, l)
        mean_weight = mass[later] / present[later]  # the longer list's new items are present past s: no 0 here
        agreement[later] = (overlap[later] + (later + 1 - s) * a_s * mean_weight) / depth[later]
    tail = (overlap[-1] + (l - s) * a_s) / l * p ** (l + 1) / (1.0 - p)
    return float((1.0 - p) / p * (np.sum(agreement * p**depth) + tail))


def rbo(x: Sequence[str | Collection[str]], y: Sequence[str | Collection[str]], p: float = RBO_PERSISTENCE) -> float:
    """RBO^a_EXT of two rankings given as lists whose entries are items or collections of tied items
    (``["a", {"b", "c"}]``); see the module docstring."""
    return rbo_ext(Tied.of_groups(x), Tied.of_groups(y), p)


def _overlap_at(x: Tied, y: Tied, k: int) -> tuple[float, float]:
    """overlap@k and churn@k (each over the longer top k, NaN when both are empty)."""
    top_x, top_y = x.items[:k], y.items[:k]
    longest = max(len(top_x), len(top_y))
    if longest == 0:
        return float("nan"), float("nan")
    shared = len(np.intersect1d(top_x, top_y, assume_unique=True))
    return shared / longest, (longest - shared) / longest


def _rankings(run: Run) -> dict[str, Tied]:
    """Each query's documents in ranking order (best score per document; score descending, doc id descending)."""
    frame = run.table.select(["query_id", "doc_id", "score"]).to_pandas()
    frame = frame.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    frame = frame.drop_duplicates(["query_id", "doc_id"], keep="first")
    out: dict[str, Tied] = {}
    for qid, group in frame.groupby("query_id", sort=False):
        scores = group["score"].to_numpy() if run.has_scores else None
        out[str(qid)] = Tied.of(group["doc_id"].tolist(), scores)
    return out


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
    neither run answers the query; :meth:`mean` averages the rest."""

    names: tuple[str, str]
    p: float
    ks: tuple[int, ...]
    values: pd.DataFrame

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
) -> Agreement:
    """RBO (``p``), overlap@k and churn@k (each ``k``) of runs ``a`` and ``b`` per query, reading no judgments (an
    Alignment gives its run). ``queries``: the queries compared, in that order (default: every query of ``a``,
    then those only ``b`` has, each in query id order)."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: the result is a frame)

    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p < 1.0:
        raise RagMetricsError(f"The 'p' parameter must be a number between 0 and 1. Got {p!r} instead.")
    depths = _depths(k)
    run_a, run_b = _run_of(a, "a"), _run_of(b, "b")
    ranked_a, ranked_b = _rankings(run_a), _rankings(run_b)
    if queries is None:
        order = list(dict.fromkeys([*ranked_a, *ranked_b]))
    else:
        order = list(dict.fromkeys(str(q) for q in queries))
    empty = Tied.of([], None)
    columns = ["rbo"] + [f"overlap@{d}" for d in depths] + [f"churn@{d}" for d in depths]
    rows = []
    for qid in order:
        x, y = ranked_a.get(qid, empty), ranked_b.get(qid, empty)
        pairs = [_overlap_at(x, y, d) for d in depths]
        rows.append([rbo_ext(x, y, p), *(o for o, _ in pairs), *(c for _, c in pairs)])
    values = pd.DataFrame(rows, columns=columns, index=pd.Index(order, name="query_id"), dtype=np.float64)
    return Agreement((run_a.name, run_b.name), float(p), depths, values)
