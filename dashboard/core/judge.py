"""The Judge page's builders: the queue of unjudged pairs, the grade scale, the rule-based suggestions.

The queue pools the unjudged (query, document) pairs of the selected runs' top ``depth``
(:func:`ragmetrics.analysis.judging.pool`) and orders them by how much labelling each relevant would move the
comparison on the page's metric against the baseline (:func:`ragmetrics.analysis.judging.label_impact`): first what
can change the verdict, last the pairs that cannot change anything. Pairs already labelled (on this dataset's
lineage, pending or saved) or skipped in this session leave it. A suggestion is the text's evidence read by a rule (the expected
answer, or the expected keywords, found in the document); it is shown with the rule's name and becomes a label
only when the judge accepts it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.core import share
from dashboard.core.results import Alignment
from dashboard.core.specs import MetricSpec
from dashboard.core.text import Marks
from ragmetrics.analysis import judging
from ragmetrics.foundation.model import Dataset
from ragmetrics.judges.rule import one_word

__all__ = [
    "DEFAULT_DEPTH",
    "QUEUE_COLUMNS",
    "RULES",
    "Suggestion",
    "grade_scale",
    "grade_title",
    "next_pair",
    "open_pairs",
    "pair_key",
    "pending_table",
    "queue_frame",
    "queue_summary",
    "suggest",
]

DEFAULT_DEPTH = share.DEFAULT_DEPTH
RULES = ("answer", "keywords")
"""The suggestion rules, stored as ``suggestion:<rule>`` labels when a judge accepts one."""
QUEUE_COLUMNS = ["query_id", "doc_id", "best_rank", "runs", "impact", "can_change"]


def grade_scale(dataset: Dataset) -> list[int]:
    """The grades a judge can give: the distinct non-negative labels of the dataset's qrels, and at least 0 and 1
    (a binary dataset gets 0 1, a graded one e.g. 0 1 2 3)."""
    labels = dataset.qrels_table.column("relevance").to_numpy()
    return sorted({0, 1, *(int(v) for v in np.unique(labels) if v >= 0)})


def grade_title(grade: int, scale: Sequence[int], rel_level: int = 1) -> str:
    """A grade button's label: ``0 · not relevant``, ``1 · relevant``, the top of a graded scale ``3 · highly
    relevant``."""
    if grade < rel_level:
        return f"{grade} · not relevant"
    if grade == max(scale) and grade > rel_level:
        return f"{grade} · highly relevant"
    return f"{grade} · relevant"


def queue_frame(
    alignments: Mapping[str, Alignment], depth: int, metric: MetricSpec, baseline: str | None
) -> pd.DataFrame:
    """The unjudged pairs of the runs' top ``depth``, the most consequential first: ``query_id, doc_id,
    best_rank, runs, impact`` (the change of the mean difference on ``metric`` against ``baseline`` if the pair
    were judged relevant) and ``can_change`` (impact > 0). Pairs that cannot change anything keep the pool's
    order (query, then best rank) at the end."""
    runs = list(alignments.values())
    if not runs:
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    pairs = judging.pool(runs[0].dataset, runs, depth)
    if pairs.empty:
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    impact = judging.label_impact(alignments, pairs, metric, baseline if baseline in alignments else None)
    merged = pairs[["query_id", "doc_id", "best_rank", "runs"]].reset_index(drop=True)
    merged["order"] = np.arange(len(merged))
    merged = merged.merge(impact[["query_id", "doc_id", "impact"]], on=["query_id", "doc_id"], how="left")
    merged["impact"] = merged["impact"].fillna(0.0).astype(np.float64)
    merged["can_change"] = merged["impact"] > 1e-12
    merged = merged.sort_values(["can_change", "impact", "order"], ascending=[False, False, True], kind="stable")
    return merged[QUEUE_COLUMNS].reset_index(drop=True)


def open_pairs(queue: pd.DataFrame, pending: pd.DataFrame, skipped: Collection[tuple[str, str]] = ()) -> pd.DataFrame:
    """The queue without the pairs labelled already (``pending``: ``query_id, doc_id``, the pairs labelled on this
    version's lineage, pending or saved) or ``skipped`` in this session."""
    if queue.empty:
        return queue
    done = set(zip(pending["query_id"].astype("str"), pending["doc_id"].astype("str"))) if len(pending) else set()
    done |= {(str(q), str(d)) for q, d in skipped}
    if not done:
        return queue
    keep = [(q, d) not in done for q, d in zip(queue["query_id"].astype("str"), queue["doc_id"].astype("str"))]
    return queue[keep].reset_index(drop=True)


def pair_key(query_id: str, doc_id: str) -> str:
    """A short token naming one (query, document) pair, for the keys of the widgets that act on it: a widget's
    identity then carries its pair, so a press is applied to the pair shown when it was pressed, whatever the page
    has rerun to since (a shared key would take the arguments of the latest run's pair)."""
    return hashlib.blake2b(f"{query_id}\x1f{doc_id}".encode(), digest_size=6).hexdigest()


def next_pair(left: pd.DataFrame, at: tuple[str, str] | None = None) -> dict[str, object] | None:
    """The pair to judge now (the head of :func:`open_pairs`, or the pair ``at`` names) as plain values:
    ``query_id, doc_id`` (str), ``best_rank, runs`` (int), ``impact`` (float), ``can_change`` (bool) and
    ``position`` (its index in ``left``); None when nothing is left (or ``at`` is not in ``left``)."""
    if left.empty:
        return None
    position = 0
    if at is not None:
        found = ((left["query_id"].astype("str") == at[0]) & (left["doc_id"].astype("str") == at[1])).to_numpy()
        if not found.any():
            return None
        position = int(found.argmax())
    row = left.iloc[position]
    return {
        "position": position,
        "query_id": str(row["query_id"]),
        "doc_id": str(row["doc_id"]),
        "best_rank": int(row["best_rank"]),
        "runs": int(row["runs"]),
        "impact": float(row["impact"]),
        "can_change": bool(row["can_change"]),
    }


def queue_summary(queue: pd.DataFrame, left: pd.DataFrame, pending: pd.DataFrame | None = None) -> dict[str, int]:
    """Counts for the page: ``pooled`` (pairs in the pool), ``left`` (still to judge), ``labelled`` (the pool's
    pairs people labelled: ``pooled - left``), ``can_change`` (of those left, how many can move the comparison),
    ``cannot`` (how many cannot change anything) and ``pending_outside`` (of the labels ``pending`` on the version,
    those on pairs outside this pool: deeper ranks, or runs not selected)."""
    can = int(left["can_change"].sum()) if len(left) else 0
    outside = 0
    if pending is not None and len(pending):
        pooled = set(zip(queue["query_id"].astype(str), queue["doc_id"].astype(str)))
        labels = set(zip(pending["query_id"].astype(str), pending["doc_id"].astype(str)))
        outside = len(labels - pooled)
    return {
        "pooled": len(queue),
        "left": len(left),
        "labelled": len(queue) - len(left),
        "can_change": can,
        "cannot": len(left) - can,
        "pending_outside": outside,
    }


@dataclass(frozen=True)
class Suggestion:
    """A grade a rule reads in the text: ``rule`` (``answer`` or ``keywords``, stored as ``suggestion:<rule>``),
    the grade, and why (what it found)."""

    rule: str
    grade: int
    reason: str

    @property
    def kind(self) -> str:
        return f"suggestion:{self.rule}"


def suggest(marks: Marks, text: str, scale: Sequence[int], rel_level: int = 1) -> Suggestion | None:
    """The rule-based suggestion for a document's text, or None: the expected answer found in it suggests the top
    grade (rule ``answer``), the smallest relevant one when the answer is one word (a cloze's blank, a name: a text
    may mention it without answering, :func:`ragmetrics.judges.rule.one_word`, as the rule judge reads it); else
    more than half of the expected keywords found (both of two, two of three) suggests the smallest relevant grade
    (rule ``keywords``). Matching is case-insensitive and literal, as ``answer_in@k`` and ``keyword_recall@k`` read
    text."""
    haystack = (text or "").casefold()
    relevant = [g for g in scale if g >= rel_level] or [rel_level]
    answer = (marks.answer or "").strip()
    if answer and answer.casefold() in haystack:
        if one_word(answer):
            return Suggestion(
                "answer", min(relevant), f"the expected answer “{answer}” is in the text (one word: a mention, maybe)"
            )
        return Suggestion("answer", max(relevant), f"the expected answer “{answer}” is in the text")
    keywords = [k for k in dict.fromkeys(str(w).strip() for w in marks.keywords) if k]
    found = [k for k in keywords if k.casefold() in haystack]
    if keywords and 2 * len(found) > len(keywords):
        listed = ", ".join(f"“{k}”" for k in found)
        return Suggestion(
            "keywords", min(relevant), f"{len(found)} of {len(keywords)} expected keywords are in the text: {listed}"
        )
    return None


def pending_table(pending: pd.DataFrame, suggestions: pd.DataFrame | None = None) -> pd.DataFrame:
    """The labels given and not saved yet, newest first, for the page: ``query_id, doc_id, label, author, given``
    and ``suggested_by`` (the rule whose suggestion the judge accepted, "" for a label given by hand)."""
    columns = ["query_id", "doc_id", "label", "author", "given", "suggested_by"]
    if pending is None or pending.empty:
        return pd.DataFrame(columns=columns)
    out = pending.copy()
    out["given"] = pd.to_datetime(out["created_at"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M:%S UTC")
    out["suggested_by"] = ""
    if suggestions is not None and len(suggestions):
        by_pair = {
            (str(q), str(d), int(g)): str(rule)
            for q, d, g, rule in zip(
                suggestions["query_id"], suggestions["doc_id"], suggestions["label"], suggestions["rule"]
            )
        }
        out["suggested_by"] = [
            by_pair.get((str(q), str(d), int(g)), "") for q, d, g in zip(out["query_id"], out["doc_id"], out["label"])
        ]
    out = out.sort_values("created_at", ascending=False, kind="stable")
    return out[columns].reset_index(drop=True)


def not_pooled_note(dataset: Dataset) -> str:
    """What the pool leaves out of ``dataset``, as a sentence after the page's counts
    (:func:`ragmetrics.analysis.judging.not_pooled_words`), or ""."""
    words = judging.not_pooled_words(dataset.negative_queries(), named=False)
    return f" {words}." if words else ""
