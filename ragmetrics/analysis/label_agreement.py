"""How far a judge's labels agree with people's, on the pairs both labelled (not :mod:`.agreement`, which compares
two runs' rankings).

* Cohen's kappa, unweighted, and for a graded scale (more than two grades) weighted, linearly and quadratically
  (scikit-learn's :func:`sklearn.metrics.cohen_kappa_score` over the grades ``0..max``); NaN when it is undefined
  (every label the same grade on both sides);
* the confusion matrix: people's grades in rows, the judge's in columns;
* where the judge errs: for each group of pairs by the pair's rank (:data:`RANK_BUCKETS`), its query's category
  and its document's length in tokens (:data:`LENGTH_BUCKETS`, :data:`LENGTH_UNIT`), how many pairs, the share the judge graded
  differently from people, and the judge's mean grade minus people's (positive: it grades too high).

A pair the judge gave no grade (``label`` empty) is counted apart (``ungraded``), never as a disagreement; a pair
people labelled that the judge's labels do not hold at all is counted apart too (``unjudged``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ragmetrics.foundation.columns import alias_renames, resolve
from ragmetrics.foundation.errors import RagMetricsError

RANK_BUCKETS = ((1, 1, "1"), (2, 3, "2-3"), (4, 10, "4-10"), (11, 20, "11-20"), (21, None, "21+"))
"""Rank groups: (first, last or None, name); a rank of 0 or none is ``unknown``."""
LENGTH_UNIT = "tokens: a word, or one Chinese, Japanese or Korean character"
"""What ``doc_length`` counts (``judge run`` counts it so): a CJK text is counted in characters, not words."""
LENGTH_BUCKETS = (
    (0, 49, "<50 tokens"),
    (50, 149, "50-149 tokens"),
    (150, 399, "150-399 tokens"),
    (400, None, "400+ tokens"),
)
"""Document length groups, in tokens (:data:`LENGTH_UNIT`): (first, last or None, name)."""
FEW_PER_SIDE = 10
"""Below this many pairs people graded relevant (or not relevant), the agreement is said to be a rough figure too:
kappa corrects for chance by the two sides' shares, and a side of a few pairs swings it."""
FEW_PAIRS = 30
"""Below this many pairs graded by both, the agreement is said to be a rough figure (docs/judging.md: on 30 pairs a
kappa varies by a standard deviation of 0.16-0.30)."""


@dataclass(frozen=True)
class LabelAgreement:
    """The agreement of a judge with people on the ``pairs`` both graded (``ungraded``: pairs the judge was asked
    about and gave no grade; ``unjudged``: people's pairs its labels do not hold). ``kappa_linear`` and
    ``kappa_quadratic`` equal ``kappa`` on a binary scale. ``confusion``: people's grades (rows) by the judge's
    (columns), ``0..max_grade``. ``errors``: ``facet, group, pairs, disagree, judge_minus_human``."""

    pairs: int
    ungraded: int
    unjudged: int
    max_grade: int
    accuracy: float
    kappa: float
    kappa_linear: float
    kappa_quadratic: float
    confusion: pd.DataFrame
    errors: pd.DataFrame

    @property
    def rough(self) -> str:
        """What to say of an agreement read on fewer than :data:`FEW_PAIRS` pairs, from a judge that gave every pair
        one grade (kappa 0 by construction), or on fewer than :data:`FEW_PER_SIDE` pairs people graded relevant (or
        not relevant): kappa then rests on those few ("" when none of these)."""
        if self.pairs < FEW_PAIRS:
            return f"only {self.pairs} pair(s) both labelled: a rough figure (label {FEW_PAIRS} or more to read kappa)"
        given = self.confusion.sum(axis=0)
        if int((given > 0).sum()) == 1:
            return (
                f"the judge gave all {self.pairs} pairs grade {int(given.idxmax())}: kappa is 0 by construction (it "
                "tells nothing apart), whatever share of grades is the same"
            )
        relevant = int(self.confusion.iloc[1:].to_numpy().sum())
        fewer = min(relevant, self.pairs - relevant)
        if fewer < FEW_PER_SIDE:
            side = "relevant" if relevant == fewer else "not relevant"
            return (
                f"only {fewer} of the {self.pairs} pairs people graded {side}: kappa rests on them, a rough figure "
                f"(label pairs until {FEW_PER_SIDE} or more are {side})"
            )
        return ""


def _bucket(value: float, buckets: tuple[tuple[int, int | None, str], ...]) -> str:
    if value is None or not math.isfinite(value) or (value <= 0 and buckets is RANK_BUCKETS):
        return "unknown"
    for low, high, name in buckets:
        if value >= low and (high is None or value <= high):
            return name
    return "unknown"


def _kappa(human: np.ndarray, judge: np.ndarray, grades: list[int], weights: str | None) -> float:
    try:
        from sklearn.metrics import cohen_kappa_score  # noqa: PLC0415 (the judges extra, loaded on use)
    except ImportError as exc:
        raise RagMetricsError(f"kappa needs scikit-learn: pip install 'ragmetrics[judges]' ({exc})") from None

    if len(human) == 0 or (len(set(human.tolist())) == 1 and set(human.tolist()) == set(judge.tolist())):
        return float("nan")
    return float(cohen_kappa_score(human, judge, labels=grades, weights=weights))


def _as_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its columns named as this module reads them: ``label`` for the grade, whatever a file or a
    qrels frame calls it (``relevance``, ``rel``, ``grade``: :func:`ragmetrics.foundation.columns.alias_renames`),
    ``query_id`` and ``doc_id`` alike."""
    renames = alias_renames(frame.columns, ("query_id", "doc_id"))
    grade = resolve(frame.columns).get("relevance")
    if "label" not in frame.columns and grade is not None:  # this module's name for the grade
        renames[grade] = "label"
    return frame.rename(columns=renames) if renames else frame


def label_agreement(human: pd.DataFrame, judge: pd.DataFrame, *, max_grade: int | None = None) -> LabelAgreement:
    """Agreement of ``judge`` (``query_id, doc_id, label`` and optionally ``rank``, ``category``, ``doc_length``
    in tokens, :data:`LENGTH_UNIT`) with ``human`` (``query_id, doc_id, label``) on the pairs in both. ``max_grade``: the top of the
    scale (default: the largest grade either gave, at least 1)."""
    human, judge = (_as_labels(frame) for frame in (human, judge))
    for frame, what in ((human, "human labels"), (judge, "judge labels")):
        missing = [c for c in ("query_id", "doc_id", "label") if c not in frame.columns]
        if missing:
            raise RagMetricsError(f"{what}: no column {', '.join(missing)}; expected query_id, doc_id, label")
    people = human[["query_id", "doc_id", "label"]].astype({"query_id": str, "doc_id": str})
    people = people.dropna(subset=["label"]).drop_duplicates(["query_id", "doc_id"], keep="last")
    theirs = judge.astype({"query_id": str, "doc_id": str}).drop_duplicates(["query_id", "doc_id"], keep="last")
    both = people.merge(theirs, on=["query_id", "doc_id"], suffixes=("_human", "_judge"))
    graded = both.dropna(subset=["label_judge"])
    ungraded = len(both) - len(graded)
    h = graded["label_human"].to_numpy(dtype=np.int64)
    j = graded["label_judge"].to_numpy(dtype=np.int64)
    top = max_grade if max_grade is not None else int(max([1, *h.tolist(), *j.tolist()]))
    if len(h) and (min(h.min(), j.min()) < 0 or max(h.max(), j.max()) > top):
        raise RagMetricsError(f"a label outside the scale 0..{top}")
    grades = list(range(top + 1))
    confusion = pd.DataFrame(
        np.zeros((len(grades), len(grades)), dtype=np.int64),
        index=pd.Index(grades, name="human"),
        columns=pd.Index(grades, name="judge"),
    )
    for a, b in zip(h, j, strict=True):
        confusion.loc[int(a), int(b)] += 1
    kappa = _kappa(h, j, grades, None)
    graded_scale = top > 1
    return LabelAgreement(
        pairs=len(h),
        ungraded=ungraded,
        unjudged=len(people) - len(both),
        max_grade=top,
        accuracy=float((h == j).mean()) if len(h) else float("nan"),
        kappa=kappa,
        kappa_linear=_kappa(h, j, grades, "linear") if graded_scale else kappa,
        kappa_quadratic=_kappa(h, j, grades, "quadratic") if graded_scale else kappa,
        confusion=confusion,
        errors=_errors(graded, h, j),
    )


def _errors(graded: pd.DataFrame, h: np.ndarray, j: np.ndarray) -> pd.DataFrame:
    facets: dict[str, list[str]] = {}
    if "rank" in graded.columns:
        facets["rank"] = [_bucket(float(v), RANK_BUCKETS) for v in pd.to_numeric(graded["rank"], errors="coerce")]
    if "category" in graded.columns:
        facets["category"] = [v if isinstance(v, str) and v else "(none)" for v in graded["category"]]
    if "doc_length" in graded.columns:
        lengths = pd.to_numeric(graded["doc_length"], errors="coerce")
        facets["length"] = [_bucket(float(v), LENGTH_BUCKETS) for v in lengths]
    rows = []
    order = {name: i for i, (_, _, name) in enumerate((*RANK_BUCKETS, *LENGTH_BUCKETS))}
    for facet, groups in facets.items():
        labels = np.array(groups, dtype=object)
        for group in sorted(set(groups), key=lambda g: (order.get(g, len(order)), g)):
            rows_in = labels == group
            rows.append({
                "facet": facet, "group": group, "pairs": int(rows_in.sum()),
                "disagree": float((h[rows_in] != j[rows_in]).mean()),
                "judge_minus_human": float((j[rows_in] - h[rows_in]).mean()),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=["facet", "group", "pairs", "disagree", "judge_minus_human"])
