"""How well each run meets the judgments (:attr:`ragmetrics.Alignment.health`): the upload page's health table,
and the runs whose ids do not meet the qrels at all, with the library's explanation (a result page shows those
in red instead of plotting their zeros as if they meant something), and the runs the upload refuses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from dashboard.core.results import Alignment
from ragmetrics.engine.health import no_overlap_fix

__all__ = ["HEALTH_COLUMNS", "Refusal", "health_frame", "no_overlap_messages", "refusal"]

HEALTH_COLUMNS = [
    "run",
    "status",
    "judged@10",
    "relevant_retrieved",
    "overlap",
    "queries_ranked",
    "queries_meeting",
    "run_queries_known",
]


def health_frame(alignments: Sequence[Alignment]) -> pd.DataFrame:
    """One row per run: ``status`` (``ok``, ``mostly unjudged`` or ``no overlap``), ``judged@10`` (mean share of the top 10 that is
    judged), ``relevant_retrieved`` (share of the relevant judgments retrieved at any rank), ``overlap`` (share of
    the ranked queries whose ranking holds a judged document), the counts behind it, and ``run_queries_known``
    (share of the run's queries that are dataset queries)."""
    rows = []
    for alignment in alignments:
        health = alignment.health
        rows.append(
            {
                "run": alignment.name,
                "status": "no overlap" if health.no_overlap else ("mostly unjudged" if health.thinly_judged else "ok"),
                "judged@10": health.judged_at_10,
                "relevant_retrieved": health.relevant_retrieved,
                "overlap": health.overlap,
                "queries_ranked": health.queries_ranked,
                "queries_meeting": health.queries_meeting,
                "run_queries_known": health.run_queries_known,
            }
        )
    return pd.DataFrame(rows, columns=HEALTH_COLUMNS)


def no_overlap_messages(alignments: Sequence[Alignment]) -> dict[str, str]:
    """``{run name: message}`` of the runs whose ids do not meet the qrels (:attr:`Health.no_overlap`): what does
    not meet, the likely cause and a fix tried on the data (:meth:`ragmetrics.Alignment.explain_no_overlap`)."""
    return {a.name: a.explain_no_overlap("dashboard") for a in alignments if a.health.no_overlap}


@dataclass(frozen=True)
class Refusal:
    """Why the upload refuses a run: the library's explanation (:meth:`ragmetrics.Alignment.explain_no_overlap`),
    the chunk pattern that would make it meet the qrels when one does, and whether the user may store it anyway
    (its queries are the dataset's: its numbers are trec_eval's, though they mean nothing)."""

    reason: str
    chunk_pattern: str | None
    insistable: bool


def refusal(alignment: Alignment) -> Refusal | None:
    """Why the upload refuses a run, or None: its ids do not meet the qrels (:attr:`Health.no_overlap`), so
    every number it gives is a zero that means nothing; when none of its queries is a query of the dataset, it
    was made for another dataset and cannot be stored here at all."""
    health = alignment.health
    if not health.no_overlap:
        return None
    if health.run_queries_known == 0.0:
        return Refusal(
            f"{alignment.explain_no_overlap('dashboard')} Not stored; upload it under the dataset it was made for.",
            None,
            insistable=False,
        )
    fix = no_overlap_fix(alignment, "dashboard")
    return Refusal(
        f"{alignment.explain_no_overlap('dashboard')} Not stored.",
        fix.chunk_pattern if fix is not None else None,
        insistable=True,
    )
