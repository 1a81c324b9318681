"""The upload page's validation report: what aligning each run with the dataset found, before anything is
scored (the alignment's :class:`ragmetrics.Coverage`), and how deep each run ranks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import query_count_bars, runs_in
from dashboard.core.queries import NO_GROUP, labels_of
from dashboard.core.results import Alignment
from ragmetrics.analysis.compare import MIN_GROUP
from ragmetrics.foundation.model import Dataset
from ragmetrics.foundation.numbers import share

__all__ = ["VALIDATION_COLUMNS", "depth_figure", "depth_frame", "to_look_at", "validation_frame"]

VALIDATION_COLUMNS = ["scope", "check", "count", "status", "effect", "examples"]


def _examples(items: Sequence[str], limit: int = 5) -> str:
    items = [str(i) for i in items]
    shown = ", ".join(items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def validation_frame(dataset: Dataset, alignments: Sequence[Alignment], *, min_group: int = MIN_GROUP) -> pd.DataFrame:
    """The pre-scoring report: one row per check and scope (``dataset`` or a run name).

    Columns: ``scope, check, count, status`` (ok / info / warning / error: a run whose ids do not meet the
    qrels, :attr:`ragmetrics.engine.health.Health.no_overlap`), ``effect`` (what the evaluation does about it), then
    ``examples`` (up to five ids: the widest, last, so what happens stays in view).
    """
    rows: list[dict[str, object]] = []

    def add(
        scope: str,
        check: str,
        items: Sequence[str] | int,
        effect: str,
        severity: str = "warning",
        examples: Sequence[str] = (),
    ) -> None:
        count = items if isinstance(items, int) else len(items)
        shown = examples if examples else ([] if isinstance(items, int) else items)
        rows.append(
            {
                "scope": scope,
                "check": check,
                "count": int(count),
                "status": "ok" if count == 0 else severity,
                "effect": effect if count else "",
                "examples": _examples(list(shown)),
            }
        )

    rel_level = alignments[0].conventions.rel_level if alignments else 1
    queries = dataset.queries_table
    ids = pd.Series(queries.column("query_id").to_pandas(), dtype="str")
    qrels = dataset.qrels_table
    best = pd.Series(
        qrels.column("relevance").to_numpy(), index=pd.Index(qrels.column("query_id").to_pandas(), dtype="str")
    )
    best_of_query = best.groupby(level=0, sort=False).max().reindex(ids)
    judged = best_of_query.notna().to_numpy()
    no_judgments = ids[~judged].tolist()
    no_relevant = ids[judged & (best_of_query.fillna(0).to_numpy() < rel_level)].tolist()
    add("dataset", "queries without judgments", no_judgments, "left out of every mean", "info")
    add("dataset", "queries without a relevant document", no_relevant, "scored 0 in every metric")
    categories = labels_of(dataset, "category").replace("", NO_GROUP).value_counts()
    small = [f"{c} ({n})" for c, n in categories.items() if n < min_group]
    add(
        "dataset", f"categories with fewer than {min_group} queries", small, "their breakdown is marked too few to tell"
    )

    for alignment in alignments:
        cov, name = alignment.coverage, alignment.name
        add(name, "dataset queries with no results in the run", cov.missing_in_run, "scored 0 (an empty ranking)")
        add(
            name,
            "run queries not in the dataset (id mismatch)",
            cov.not_in_dataset,
            f"{cov.rows_not_in_dataset} rows dropped",
        )
        add(name, "run queries matched by query text, not id", cov.matched_by_text, "matched", "info")
        add(
            name,
            "duplicate (query, document) rows",
            cov.duplicates_dropped,
            "best-ranked occurrence kept",
            examples=cov.duplicate_queries,
        )
        add(
            name,
            "chunks merged into their document",
            cov.chunks_merged,
            "a document counts at its first chunk's rank",
            "info",
        )
        health = alignment.health
        unmet = health.queries_ranked - health.queries_meeting
        rows.append(
            {
                "scope": name,
                "check": "ranked queries with no judged document (id overlap)",
                "count": int(unmet),
                "status": "error" if health.no_overlap else ("info" if unmet else "ok"),
                "examples": f"{share(health.overlap)} of {health.queries_ranked:,} ranked queries meet the qrels"
                + (
                    ""
                    if health.run_queries_known == 1.0
                    else f"; {share(health.run_queries_known)} of the run's queries are dataset queries"
                ),
                "effect": "no overlap: every metric 0, the numbers mean nothing (see the message below)"
                if health.no_overlap
                else ("scored as ranked: those rankings hold only unjudged documents" if unmet else ""),
            }
        )
        thin = health.thinly_judged and not health.no_overlap  # no overlap says more, above
        rows.append(
            {
                "scope": name,
                "check": "top 10 mostly unjudged (judged@10 below 50%)",
                "count": int(thin),
                "status": "warning" if thin else "ok",
                "examples": f"judged@10 = {health.judged_at_10:.2f}",
                "effect": "the unjudged documents are scored by the unjudged convention (non-relevant by default): "
                "the Overview's 'if judged' bounds and the Judge page say how much they could move"
                if thin
                else "",
            }
        )
        add(
            name,
            "tied scores (adjacent pairs)",
            cov.tied_pairs,
            "ties broken by doc_id descending, as trec_eval",
            "info",
            examples=cov.tied_queries,
        )
    return pd.DataFrame(rows, columns=VALIDATION_COLUMNS)


def to_look_at(report: pd.DataFrame) -> int:
    """How many checks of :func:`validation_frame` are warnings or errors (a run whose ids do not meet the qrels)."""
    return int(report["status"].isin(["warning", "error"]).sum())


def depth_frame(alignments: Sequence[Alignment]) -> pd.DataFrame:
    """How deep each run ranks its evaluated queries: ``run, retrieved, queries`` (queries that got that many
    documents, after chunks were merged into documents; 0 for a query the run left out)."""
    parts = []
    for alignment in alignments:
        counts = np.bincount(alignment.ranking.n_ret, minlength=1)
        depths = np.flatnonzero(counts)
        parts.append(pd.DataFrame({"run": alignment.name, "retrieved": depths, "queries": counts[depths]}))
    if not parts:
        return pd.DataFrame(columns=["run", "retrieved", "queries"])
    return pd.concat(parts, ignore_index=True)


def depth_figure(depths: pd.DataFrame, runs: Sequence[str] | None = None) -> go.Figure:
    """Queries per number of documents retrieved, one bar colour per run (:func:`depth_frame`).

    A run cut short for some queries, or missing some, shows here before any metric is read."""
    counts = {}
    for run in runs_in(depths, runs):
        part = depths[depths["run"] == run]
        counts[run] = (part["retrieved"].tolist(), part["queries"].tolist())
    fig = query_count_bars(
        counts,
        title="Documents retrieved per query",
        height=300,
        hovertemplate="%{y:,} queries with %{x} documents<extra>%{fullData.name}</extra>",
    )
    fig.update_layout(showlegend=True)
    fig.update_xaxes(title_text="documents retrieved (after merging chunks)", rangemode="tozero")
    return fig
