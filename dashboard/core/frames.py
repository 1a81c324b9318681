"""Table builders: :class:`RunEval` s in, pandas DataFrames out; no Streamlit.

Metric columns use canonical names (``recall@5``); the views map them to
display names with :func:`dashboard.core.evaluation.pretty`. Every mean comes
with a 95% percentile-bootstrap interval (:mod:`dashboard.core.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dashboard.core.bootstrap import bootstrap_ci
from dashboard.core.evaluation import K_MAX, RunEval, metric_spec
from ragmetrics import diagnosis
from ragmetrics.metrics import MetricSpec, parse_metric
from ragmetrics.model import Dataset

MIN_GROUP = 10
"""Groups with fewer queries are flagged "too few to tell"."""

NEAR_MISS_LIMIT = 20
"""A missed query whose first relevant document is at rank K+1..max(20, 2K) is a near miss."""

OVERVIEW_METRICS: tuple[str, ...] = ("recall", "precision", "f1", "hits", "ndcg", "mrr", "map")
CURVE_PANEL_METRICS: tuple[str, ...] = ("recall", "precision", "f1", "hits", "ndcg")
DIFFICULTY_ORDER: tuple[str, ...] = ("easy", "medium", "hard")
NO_GROUP = diagnosis.NO_GROUP


# --- dataset facts -----------------------------------------------------------------------


def group_values(dataset: Dataset, by: str) -> list[str]:
    """Distinct values of ``category`` or ``difficulty`` (empty as ``(none)``), in display order."""
    values = dataset.queries[by].fillna("").astype("str").replace("", NO_GROUP)
    counts = values.value_counts(sort=False)
    if by == "difficulty":
        known = [d for d in DIFFICULTY_ORDER if d in counts.index]
        rest = sorted(v for v in counts.index if v not in DIFFICULTY_ORDER)
        return known + rest
    return sorted(counts.index, key=lambda v: (-int(counts[v]), v))


def dataset_summary(dataset: Dataset) -> dict[str, int]:
    """Counts for the page header: queries, judged queries, judgments, relevant judgments, categories."""
    qrels = dataset.qrels
    return {
        "queries": len(dataset.queries),
        "judged_queries": int(qrels["query_id"].nunique()),
        "judgments": len(qrels),
        "relevant": int((qrels["relevance"] >= 1).sum()),
        "categories": int(dataset.queries["category"].replace("", np.nan).nunique()),
        "documents": 0 if dataset.documents is None else len(dataset.documents),
    }


def _query_facets(ev: RunEval) -> pd.DataFrame:
    return diagnosis.query_facets(ev.dataset, ev.query_ids)


# --- means, curves, PR -------------------------------------------------------------------


def overview_specs(k: int) -> list[MetricSpec]:
    """The overview's metrics at K: Recall, P, F1, Hits, nDCG, MRR and MAP, each @K."""
    return [metric_spec(m, k) for m in OVERVIEW_METRICS]


def summary_frame(evals: Sequence[RunEval], specs: Sequence[MetricSpec | str]) -> pd.DataFrame:
    """Mean and 95% CI of each metric per run: ``run, metric, n, mean, ci_low, ci_high`` (long)."""
    rows = []
    parsed = [parse_metric(s) for s in specs]
    for ev in evals:
        matrix = np.column_stack([ev.values(s) for s in parsed]) if parsed else np.zeros((ev.n_queries, 0))
        mean, low, high = bootstrap_ci(matrix)
        for i, spec in enumerate(parsed):
            rows.append(
                {
                    "run": ev.name,
                    "metric": str(spec),
                    "n": ev.n_queries,
                    "mean": mean[i],
                    "ci_low": low[i],
                    "ci_high": high[i],
                }
            )
    return pd.DataFrame(rows, columns=["run", "metric", "n", "mean", "ci_low", "ci_high"])


def overview_frame(evals: Sequence[RunEval], k: int) -> pd.DataFrame:
    """One row per run: ``run``, ``queries``, then the mean of each overview metric at K (canonical names)."""
    specs = overview_specs(k)
    rows = []
    for ev in evals:
        row: dict[str, object] = {"run": ev.name, "queries": ev.n_queries}
        for spec in specs:
            row[str(spec)] = ev.mean(spec)
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "queries", *[str(s) for s in specs]])


def curve_frame(
    evals: Sequence[RunEval], metrics: Sequence[str] = CURVE_PANEL_METRICS, k_max: int = K_MAX
) -> pd.DataFrame:
    """Mean ``metric@k`` for k = 1..k_max with a 95% bootstrap band: ``run, metric, k, value, ci_low, ci_high``.

    Every curve is resampled with the same seed, so on the same queries: bands of
    one run are coherent across K and metrics (one curve at a time, not one
    matrix of all: that copy was 400 MB at 100,000 queries).
    """
    parts = []
    ks = np.arange(1, k_max + 1)
    for ev in evals:
        if ev.n_queries == 0:
            continue
        for metric in metrics:
            mean, low, high = bootstrap_ci(ev.kept_curve(metric, k_max))
            parts.append(
                pd.DataFrame({"run": ev.name, "metric": metric, "k": ks, "value": mean, "ci_low": low, "ci_high": high})
            )
    if not parts:
        return pd.DataFrame(columns=["run", "metric", "k", "value", "ci_low", "ci_high"])
    return pd.concat(parts, ignore_index=True)


def pr_frame(evals: Sequence[RunEval], k_max: int = K_MAX) -> pd.DataFrame:
    """Mean precision@k against mean recall@k, one point per K: ``run, k, recall, precision, label``."""
    parts = []
    ks = np.arange(1, k_max + 1)
    for ev in evals:
        if ev.n_queries == 0:
            continue
        parts.append(
            pd.DataFrame(
                {
                    "run": ev.name,
                    "k": ks,
                    "recall": ev.kept_curve("recall", k_max).mean(axis=0, dtype=np.float64),
                    "precision": ev.kept_curve("precision", k_max).mean(axis=0, dtype=np.float64),
                    "label": [f"K={k}" for k in ks],
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=["run", "k", "recall", "precision", "label"])
    return pd.concat(parts, ignore_index=True)


def display_k_max(evals: Sequence[RunEval], floor: int = 10) -> int:
    """Deepest K worth plotting: the deepest ranking among the runs, between ``floor`` and K_MAX."""
    deepest = max((ev.depth for ev in evals), default=floor)
    return int(min(K_MAX, max(floor, deepest)))


# --- breakdown ---------------------------------------------------------------------------


def breakdown_frame(
    evals: Sequence[RunEval], spec: MetricSpec | str, by: str = "category", *, min_n: int = MIN_GROUP
) -> pd.DataFrame:
    """Mean and 95% CI of one metric per group and run.

    ``by`` is ``category`` or ``difficulty`` (or any query column). Returns
    ``run, group, n, mean, ci_low, ci_high, too_few`` with groups in display
    order; ``too_few`` is True when n < ``min_n``.
    """
    spec = parse_metric(spec)
    rows = []
    for ev in evals:
        facets = _query_facets(ev) if by in ("category", "difficulty") else _extra_facet(ev, by)
        values = ev.values(spec)
        groups = facets[by].to_numpy()
        order = group_values(ev.dataset, by) if by in ("category", "difficulty") else sorted(set(groups))
        for group in order:
            mask = groups == group
            n = int(mask.sum())
            if n == 0:
                continue
            mean, low, high = bootstrap_ci(values[mask])
            rows.append(
                {
                    "run": ev.name,
                    "group": group,
                    "n": n,
                    "mean": float(mean[0]),
                    "ci_low": float(low[0]),
                    "ci_high": float(high[0]),
                    "too_few": n < min_n,
                }
            )
    return pd.DataFrame(rows, columns=["run", "group", "n", "mean", "ci_low", "ci_high", "too_few"])


def _extra_facet(ev: RunEval, column: str) -> pd.DataFrame:
    queries = ev.dataset.queries.set_index("query_id")
    values = queries[column].reindex(pd.Index(ev.query_ids, dtype="str")).fillna("").astype("str")
    return pd.DataFrame({column: values.replace("", NO_GROUP).to_numpy()})


# --- per query ---------------------------------------------------------------------------


def query_table(ev: RunEval, k: int, spec: MetricSpec | str | None = None) -> pd.DataFrame:
    """:func:`ragmetrics.diagnosis.query_table` of one cached evaluation (``recall_deep``: recall at the
    run's depth, at most K_MAX; ``value``: ``spec``'s values)."""
    deep = min(K_MAX, max(ev.depth, 1))
    return diagnosis.query_table(
        ev.dataset,
        ev.query_ids,
        n_relevant=ev.n_rel,
        first_relevant_rank=ev.first_rel_rank,
        rr=ev.values("mrr"),
        recall_deep=ev.values(f"recall@{deep}"),
        k=k,
        value=None if spec is None else ev.values(spec),
    )


def run_findings(
    ev: RunEval, k: int, spec: str, label: str, low_mrr: float, table: pd.DataFrame | None = None
) -> list[diagnosis.Finding]:
    """Plain-language findings for one run at K: :func:`ragmetrics.diagnosis.diagnose` over its
    :func:`query_table` (pass ``table`` when it is at hand)."""
    table = query_table(ev, k, spec) if table is None else table
    return diagnosis.diagnose(
        ev.name, table, k=k, deep_k=min(K_MAX, max(ev.depth, 1)), metric_label=label, low_mrr=low_mrr
    )


def _relevant_lists(ev: RunEval, query_ids: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    qrels = ev.dataset.qrels
    rel = qrels[(qrels["relevance"] >= ev.ranking.rel_level) & qrels["query_id"].isin(list(query_ids))]
    rel = rel.sort_values(["query_id", "relevance", "doc_id"], ascending=[True, False, True])
    out: dict[str, list[tuple[str, int]]] = {}
    for qid, doc, grade in zip(rel["query_id"], rel["doc_id"], rel["relevance"]):
        out.setdefault(str(qid), []).append((str(doc), int(grade)))
    return out


def _top_k_lists(ev: RunEval, qs: np.ndarray, k: int) -> dict[int, list[tuple[str, bool]]]:
    ranking = ev.ranking
    wanted = np.isin(ranking.q, qs) & (ranking.pos < k)
    q = ranking.q[wanted]
    docs = ranking.docs(wanted)
    rel = ranking.rel[wanted]
    out: dict[int, list[tuple[str, bool]]] = {}
    for qi, doc, r in zip(q.tolist(), docs.tolist(), rel.tolist()):
        out.setdefault(qi, []).append((str(doc), bool(r)))
    return out


def keyword_hits(keywords: Sequence[str], text: str) -> tuple[list[str], list[str]]:
    """Which expected keywords occur (case-insensitively) in ``text``: (found, missing)."""
    haystack = text.casefold()
    found = [kw for kw in keywords if kw and kw.casefold() in haystack]
    missing = [kw for kw in keywords if kw and kw.casefold() not in haystack]
    return found, missing


def _top_k_text(ev: RunEval, qs: np.ndarray, k: int) -> dict[int, str]:
    if not ev.has_text:
        return {}
    rows = ev.rows
    rows = rows[rows["q"].isin(qs) & (rows["rank"] <= k)]
    texts = rows["text"].fillna("").astype("str")
    return {int(q): "\n".join(group) for q, group in texts.groupby(rows["q"].to_numpy(), sort=False)}


def near_miss_limit(k: int) -> int:
    return max(NEAR_MISS_LIMIT, 2 * k)


def miss_status(first_rank: int, k: int) -> str:
    """``hit`` (rank <= K), ``near miss`` (K < rank <= max(20, 2K)), ``deeper``, or ``not retrieved``."""
    if first_rank <= 0:
        return "not retrieved"
    if first_rank <= k:
        return "hit"
    if first_rank <= near_miss_limit(k):
        return "near miss"
    return "deeper"


MISSED_COLUMNS = [
    "query_id",
    "query",
    "category",
    "difficulty",
    "status",
    "first_relevant_rank",
    "relevant_docs",
    "top_k",
    "keywords_found",
    "keywords_missing",
]


def missed_frame(ev: RunEval, k: int) -> pd.DataFrame:
    """Queries with relevant documents but none in the top K.

    Columns: ``query_id, query, category, difficulty``; ``status`` (near miss /
    deeper / not retrieved, see :func:`miss_status`); ``first_relevant_rank``
    (nullable; NA = never retrieved); ``relevant_docs`` ("doc (grade)", best
    first); ``top_k`` (retrieved documents, a relevant one marked "✓");
    ``keywords_found`` ("2/3") and ``keywords_missing`` when the run carries
    chunk text, else empty.
    """
    table = query_table(ev, k)
    missed_mask = (~table["hit"].to_numpy()) & (ev.n_rel > 0)
    qs = np.flatnonzero(missed_mask)
    if len(qs) == 0:
        return pd.DataFrame(columns=MISSED_COLUMNS)
    part = table.iloc[qs].reset_index(drop=True)
    first = part["first_relevant_rank"].to_numpy()
    relevant = _relevant_lists(ev, part["query_id"].tolist())
    tops = _top_k_lists(ev, qs, k)
    texts = _top_k_text(ev, qs, k)
    keywords = ev.dataset.queries.set_index("query_id")["expected_keywords"]
    found_col: list[str] = []
    missing_col: list[str] = []
    for qi, qid in zip(qs.tolist(), part["query_id"].tolist()):
        kws = [str(w) for w in (keywords.get(qid) or [])] if qid in keywords.index else []
        if not ev.has_text or not kws:
            found_col.append("")
            missing_col.append("")
            continue
        found, missing = keyword_hits(kws, texts.get(qi, ""))
        found_col.append(f"{len(found)}/{len(kws)}")
        missing_col.append(", ".join(missing))
    return pd.DataFrame(
        {
            "query_id": part["query_id"],
            "query": part["query"],
            "category": part["category"],
            "difficulty": part["difficulty"],
            "status": [miss_status(int(r), k) for r in first],
            "first_relevant_rank": pd.array([int(r) if r > 0 else None for r in first], dtype="Int64"),
            "relevant_docs": [", ".join(f"{d} ({g})" for d, g in relevant.get(q, [])) for q in part["query_id"]],
            "top_k": [", ".join(("✓ " if r else "") + d for d, r in tops.get(qi, [])) for qi in qs.tolist()],
            "keywords_found": found_col,
            "keywords_missing": missing_col,
        },
        columns=MISSED_COLUMNS,
    )


def filter_queries(
    frame: pd.DataFrame, *, category: str | None = None, difficulty: str | None = None, search: str = ""
) -> pd.DataFrame:
    """Rows matching the category and difficulty (None = all) whose query text or id contains ``search``."""
    mask = pd.Series(True, index=frame.index)
    if category:
        mask &= frame["category"] == category
    if difficulty:
        mask &= frame["difficulty"] == difficulty
    if search:
        needle = search.casefold()
        mask &= frame["query"].astype("str").str.casefold().str.contains(needle, regex=False) | frame[
            "query_id"
        ].astype("str").str.casefold().str.contains(needle, regex=False)
    return frame[mask].reset_index(drop=True)


def query_info(dataset: Dataset, query_id: str) -> dict[str, object]:
    """The dataset's record of one query: text, category, difficulty, expected answer and keywords."""
    queries = dataset.queries
    match = queries[queries["query_id"] == query_id]
    if match.empty:
        return {}
    row = match.iloc[0]
    return {
        "query_id": query_id,
        "query": str(row["query"]),
        "category": str(row["category"]) or NO_GROUP,
        "difficulty": str(row["difficulty"]) or NO_GROUP,
        "expected_answer": str(row["expected_answer"]),
        "expected_keywords": [str(v) for v in row["expected_keywords"]],
    }


def _doc_titles(dataset: Dataset) -> pd.Series | None:
    docs = dataset.documents
    if docs is None or "doc_id" not in docs.columns:
        return None
    column = "title" if "title" in docs.columns else None
    if column is None:
        return None
    return docs.drop_duplicates("doc_id").set_index("doc_id")[column].astype("str")


def query_detail_frame(ev: RunEval, query_id: str, depth: int = 20) -> pd.DataFrame:
    """The run's ranked documents for one query, to ``depth``.

    Columns: ``rank, doc_id, judgment`` (the label as text, or ``unjudged``), ``relevant``,
    ``score`` (best chunk's), ``chunks`` (how many of the document's chunks were
    retrieved), ``chunk_id`` (the best one), ``title`` when the dataset has
    documents, ``text`` (the best chunk's text) when the run carries text.
    """
    columns = ["rank", "doc_id", "judgment", "relevant", "score", "chunks", "chunk_id"]
    where = np.flatnonzero(ev.query_ids == query_id)
    if len(where) == 0:
        return pd.DataFrame(columns=columns)
    qi = int(where[0])
    rows = ev.rows
    rows = rows[(rows["q"] == qi) & (rows["rank"] <= depth)]
    grouped = rows.groupby("rank", sort=True)
    first = grouped.head(1).set_index("rank")
    out = pd.DataFrame(
        {
            "rank": first.index.to_numpy(dtype=np.int64),
            "doc_id": first["doc_id"].to_numpy(),
            "score": first["score"].to_numpy(),
            "chunks": grouped.size().reindex(first.index).to_numpy(),
            "chunk_id": first["chunk_id"].to_numpy(),
        }
    )
    qrels = ev.dataset.qrels
    labels = qrels[qrels["query_id"] == query_id].set_index("doc_id")["relevance"]
    grades = pd.array(labels.reindex(out["doc_id"]).to_numpy(), dtype="Int64")
    out["judgment"] = ["unjudged" if pd.isna(g) else str(int(g)) for g in grades]
    out["relevant"] = (grades.fillna(-1) >= ev.ranking.rel_level).to_numpy(dtype=bool)
    titles = _doc_titles(ev.dataset)
    if titles is not None:
        out["title"] = titles.reindex(out["doc_id"]).fillna("").to_numpy()
        columns.append("title")
    if "text" in rows.columns:
        out["text"] = first["text"].fillna("").astype("str").to_numpy()
        columns.append("text")
    return out[columns]


def relevant_docs_frame(evals: Sequence[RunEval], query_id: str) -> pd.DataFrame:
    """Each relevant document of a query and its rank in each run (NA = not retrieved).

    Columns: ``doc_id, relevance``, ``title`` when known, then one column per run.
    """
    if not evals:
        return pd.DataFrame(columns=["doc_id", "relevance"])
    dataset = evals[0].dataset
    rel_level = evals[0].ranking.rel_level
    qrels = dataset.qrels
    rel = qrels[(qrels["query_id"] == query_id) & (qrels["relevance"] >= rel_level)]
    rel = rel.sort_values(["relevance", "doc_id"], ascending=[False, True])
    out = pd.DataFrame({"doc_id": rel["doc_id"].to_numpy(), "relevance": rel["relevance"].to_numpy()})
    titles = _doc_titles(dataset)
    if titles is not None:
        out["title"] = titles.reindex(out["doc_id"]).fillna("").to_numpy()
    for ev in evals:
        where = np.flatnonzero(ev.query_ids == query_id)
        ranks: dict[str, int] = {}
        if len(where):
            ranking = ev.ranking
            mask = ranking.q == int(where[0])
            docs = ranking.docs(mask)
            ranks = {str(d): int(p) + 1 for d, p in zip(docs, ranking.pos[mask])}
        out[ev.name] = pd.array([ranks.get(str(d)) for d in out["doc_id"]], dtype="Int64")
    return out


def query_metrics_frame(evals: Sequence[RunEval], query_id: str, k: int) -> pd.DataFrame:
    """One row per run for one query: ``run, first_relevant_rank, status`` and the overview metrics at K."""
    specs = overview_specs(k)
    rows = []
    for ev in evals:
        where = np.flatnonzero(ev.query_ids == query_id)
        if len(where) == 0:
            continue
        qi = int(where[0])
        first = int(ev.first_rel_rank[qi])
        row: dict[str, object] = {
            "run": ev.name,
            "first_relevant_rank": first if first > 0 else None,
            "status": miss_status(first, k),
        }
        for spec in specs:
            row[str(spec)] = float(ev.values(spec)[qi])
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "first_relevant_rank", "status", *[str(s) for s in specs]])


# --- validation --------------------------------------------------------------------------

VALIDATION_COLUMNS = ["scope", "check", "count", "status", "examples", "effect"]


def _examples(items: Sequence[str], limit: int = 5) -> str:
    items = [str(i) for i in items]
    shown = ", ".join(items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def validation_frame(dataset: Dataset, evals: Sequence[RunEval], *, min_group: int = MIN_GROUP) -> pd.DataFrame:
    """The pre-scoring report: one row per check and scope (``dataset`` or a run name).

    Columns: ``scope, check, count, status`` (ok / warning / info),
    ``examples`` (up to five ids), ``effect`` (what the evaluation does about it).
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
                "examples": _examples(list(shown)),
                "effect": effect if count else "",
            }
        )

    queries = dataset.queries
    qrels = dataset.qrels
    rel_level = evals[0].ranking.rel_level if evals else 1
    best = qrels.groupby("query_id", sort=False)["relevance"].max()
    best_of_query = best.reindex(queries["query_id"])
    judged = best_of_query.notna().to_numpy()
    no_judgments = queries["query_id"][~judged].tolist()
    no_relevant = queries["query_id"][judged & (best_of_query.fillna(0).to_numpy() < rel_level)].tolist()
    add("dataset", "queries without judgments", no_judgments, "left out of every mean", "info")
    add("dataset", "queries without a relevant document", no_relevant, "scored 0 in every metric")
    categories = queries["category"].replace("", NO_GROUP).value_counts()
    small = [f"{c} ({n})" for c, n in categories.items() if n < min_group]
    add(
        "dataset", f"categories with fewer than {min_group} queries", small, "their breakdown is marked too few to tell"
    )

    for ev in evals:
        cov = ev.coverage
        add(ev.name, "dataset queries with no results in the run", cov.missing_in_run, "scored 0 (an empty ranking)")
        add(
            ev.name,
            "run queries not in the dataset (id mismatch)",
            cov.not_in_dataset,
            f"{cov.rows_not_in_dataset} rows dropped",
        )
        add(ev.name, "run queries matched by query text, not id", cov.matched_by_text, "matched", "info")
        add(
            ev.name,
            "duplicate (query, document) rows",
            cov.duplicates_dropped,
            "best-ranked occurrence kept",
            examples=cov.duplicate_queries,
        )
        add(
            ev.name,
            "chunks merged into their document",
            cov.chunks_merged,
            "a document counts at its first chunk's rank",
            "info",
        )
        add(
            ev.name,
            "tied scores (adjacent pairs)",
            cov.tied_pairs,
            "ties broken by doc_id descending, as trec_eval",
            "info",
            examples=cov.tied_queries,
        )
    return pd.DataFrame(rows, columns=VALIDATION_COLUMNS)


def depth_frame(evals: Sequence[RunEval]) -> pd.DataFrame:
    """How deep each run ranks its evaluated queries: ``run, retrieved, queries`` (queries that got that many
    documents, after chunks were merged into documents; 0 for a query the run left out)."""
    parts = []
    for ev in evals:
        counts = np.bincount(ev.ranking.n_ret, minlength=1)
        depths = np.flatnonzero(counts)
        parts.append(pd.DataFrame({"run": ev.name, "retrieved": depths, "queries": counts[depths]}))
    if not parts:
        return pd.DataFrame(columns=["run", "retrieved", "queries"])
    return pd.concat(parts, ignore_index=True)


def query_labels(frame: pd.DataFrame, limit: int = 60) -> dict[str, str]:
    """``{query_id: "query_id · text…"}`` for pickers."""
    from dashboard.core.text import snippet

    return {str(q): f"{q} · {snippet(t, limit)}" for q, t in zip(frame["query_id"], frame["query"])}


def miss_counts(missed: pd.DataFrame, total: int) -> dict[str, int]:
    """``{"missed", "near miss", "deeper", "not retrieved", "total"}`` counts of a :func:`missed_frame`."""
    counts = missed["status"].value_counts() if len(missed) else pd.Series(dtype=int)
    return {
        "total": int(total),
        "missed": len(missed),
        "near miss": int(counts.get("near miss", 0)),
        "deeper": int(counts.get("deeper", 0)),
        "not retrieved": int(counts.get("not retrieved", 0)),
    }


def metrics_reference_frame() -> pd.DataFrame:
    """The registry for people: ``name, display, cutoff, formula, conventions, aliases, trec_eval``."""
    from ragmetrics.metrics import METRICS

    cutoff = {"required": "required (name@k)", "optional": "optional (name or name@k)", "none": "none"}
    return pd.DataFrame(
        [
            {
                "name": m.name,
                "display": m.pretty,
                "cutoff": cutoff[m.k],
                "formula": m.formula,
                "conventions": m.conventions,
                "aliases": ", ".join(m.aliases),
                "trec_eval": m.trec_eval or "",
            }
            for m in METRICS.values()
        ],
        columns=["name", "display", "cutoff", "formula", "conventions", "aliases", "trec_eval"],
    )


def with_text_for_missing(frame: pd.DataFrame, columns: Sequence[str], text: str) -> pd.DataFrame:
    """A display copy where NA in ``columns`` reads ``text`` (numbers become text)."""
    out = frame.copy()
    for column in columns:
        if column in out.columns:
            out[column] = [text if pd.isna(v) else _plain_number(v) for v in out[column]]
    return out


def has_groups(dataset: Dataset, by: str) -> bool:
    """True when some query has a non-empty ``by`` label."""
    return by in dataset.queries.columns and bool((dataset.queries[by].fillna("").astype("str") != "").any())


def unevaluated_groups(dataset: Dataset, evaluated: Sequence[str], by: str) -> dict[str, int]:
    """Groups with queries left out of the evaluation (no judgments): ``{group: count}``."""
    queries = dataset.queries
    left_out = queries[~queries["query_id"].isin(list(evaluated))]
    values = left_out[by].fillna("").astype("str").replace("", NO_GROUP)
    return {str(k): int(v) for k, v in values.value_counts().items()}


def _plain_number(value: object) -> str:
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return str(int(value))  # type: ignore[arg-type]
    return str(value)


def style_relevant(detail: pd.DataFrame) -> Any:
    """A Styler of :func:`query_detail_frame` with relevant documents' rows tinted green."""

    def tint(row: pd.Series) -> list[str]:
        return ["background-color: #e6f4ea" if bool(row.get("relevant")) else ""] * len(row)

    return detail.style.apply(tint, axis=1).format({"score": "{:.4f}"})
