"""Missed queries: the queries with no relevant document in the top K, and one query in detail.

Each missed query: where its first relevant document did appear (a near miss at K+1..max(20, 2K), deeper, or
never retrieved), its relevant documents, the retrieved top K, and which expected keywords the retrieved text
contains (the run's chunk text, else the dataset's corpus). The detail of a query: its ranked documents with their judgments (from the
alignment's rows, every chunk of a document at the document's rank) and each relevant document's rank in
every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from dashboard.core.documents import corpus_frame
from dashboard.core.overview import overview_specs
from dashboard.core.queries import doc_titles
from dashboard.core.results import Alignment, position
from dashboard.core.specs import MetricSpec
from ragmetrics.analysis import diagnosis
from ragmetrics.analysis.diagnosis import NEAR_MISS_LIMIT

__all__ = [
    "MISSED_COLUMNS",
    "NEAR_MISS_LIMIT",
    "TEXT_DEPTH",
    "deep_k",
    "doc_ranks",
    "filter_queries",
    "keyword_hits",
    "miss_counts",
    "miss_status",
    "missed_frame",
    "near_miss_limit",
    "query_detail_frame",
    "query_metrics_frame",
    "query_table",
    "relevant_docs_frame",
    "style_relevant",
    "text_known",
    "with_text_for_missing",
]

TEXT_DEPTH = 20
"""The deepest rank whose text the query detail shows."""

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


MISSED_ORDER = [
    "query_id",
    "query",
    "status",
    "first_relevant_rank",
    "keywords_found",
    "keywords_missing",
    "category",
    "difficulty",
    "relevant_docs",
    "top_k",
]
"""The columns in the order they are shown: the short ones first, so that keywords stay on screen."""


def deep_k(alignment: Alignment) -> int:
    """The depth the diagnosis reads recall at: the run's depth, at most :data:`ragmetrics.analysis.diagnosis.DEEP_K_MAX`."""
    return min(diagnosis.DEEP_K_MAX, max(alignment.depth, 1))


def query_table(alignment: Alignment, k: int, spec: MetricSpec | None = None) -> pd.DataFrame:
    """:func:`ragmetrics.analysis.diagnosis.query_table` of one alignment (``recall_deep``: recall at :func:`deep_k`;
    ``value``: ``spec``'s values)."""
    wanted = [MetricSpec("mrr"), MetricSpec("recall", deep_k(alignment)), *([] if spec is None else [spec])]
    values = list(alignment.values(wanted).values())
    return diagnosis.query_table(
        alignment.dataset,
        alignment.query_ids,
        n_relevant=alignment.n_rel,
        first_relevant_rank=alignment.first_rel_rank,
        rr=values[0],
        recall_deep=values[1],
        k=k,
        value=None if spec is None else alignment.value(spec),
    )


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


def _ids(query_ids: Sequence[str], kind: pa.DataType) -> pa.Array:
    return pa.array([str(q) for q in query_ids], type=kind)


def _qrels_of(alignment: Alignment, query_ids: Sequence[str], *, relevant: bool = True) -> pd.DataFrame:
    """The judgments of ``query_ids`` (only relevant ones by default), best grade first."""
    qrels = alignment.dataset.qrels_table
    mask = pc.is_in(qrels.column("query_id"), value_set=_ids(query_ids, qrels.schema.field("query_id").type))
    if relevant:
        mask = pc.and_(mask, pc.greater_equal(qrels.column("relevance"), alignment.conventions.rel_level))
    frame = qrels.filter(mask).to_pandas()
    return frame.sort_values(["query_id", "relevance", "doc_id"], ascending=[True, False, True], kind="stable")


def _relevant_lists(alignment: Alignment, query_ids: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    rel = _qrels_of(alignment, query_ids)
    out: dict[str, list[tuple[str, int]]] = {}
    for qid, doc, grade in zip(rel["query_id"], rel["doc_id"], rel["relevance"]):
        out.setdefault(str(qid), []).append((str(doc), int(grade)))
    return out


def _top_k_lists(alignment: Alignment, qs: np.ndarray, k: int) -> dict[int, list[tuple[str, bool]]]:
    ranking = alignment.ranking
    wanted = np.isin(ranking.q, qs) & (ranking.pos < k)
    out: dict[int, list[tuple[str, bool]]] = {}
    for qi, doc, r in zip(ranking.q[wanted].tolist(), ranking.docs(wanted).tolist(), ranking.rel[wanted].tolist()):
        out.setdefault(qi, []).append((str(doc), bool(r)))
    return out


def keyword_hits(keywords: Sequence[str], text: str) -> tuple[list[str], list[str]]:
    """Which expected keywords occur (case-insensitively) in ``text``: (found, missing)."""
    haystack = text.casefold()
    found = [kw for kw in keywords if kw and kw.casefold() in haystack]
    missing = [kw for kw in keywords if kw and kw.casefold() not in haystack]
    return found, missing


def _top_k_text(alignment: Alignment, qs: np.ndarray, k: int) -> dict[int, str]:
    """The text of each query's top ``k``: the run's chunk text, else the corpus text of the chunks' (or their
    documents') ids; {} when neither is known."""
    rows = alignment.rows()
    rows = rows[rows["q"].isin(qs) & (rows["rank"] <= k)]
    if alignment.has_text:
        texts = rows["text"].fillna("").astype("str")
    elif alignment.dataset.documents is not None and "text" in alignment.dataset.documents.columns:
        chunks, docs = rows["chunk_id"].astype("str"), rows["doc_id"].astype("str")
        corpus = corpus_frame(alignment.dataset, [*chunks, *docs])
        full = (corpus["title"] + "\n" + corpus["text"]).to_dict()
        texts = pd.Series([full.get(c) or full.get(d, "") for c, d in zip(chunks, docs)], index=rows.index)
    else:
        return {}
    return {int(q): "\n".join(group) for q, group in texts.groupby(rows["q"].to_numpy(), sort=False)}


def text_known(alignment: Alignment) -> bool:
    """True when the retrieved documents' text is known (the run's chunk text, or the dataset's corpus)."""
    documents = alignment.dataset.documents
    return alignment.has_text or (documents is not None and "text" in documents.columns)


def _keywords(alignment: Alignment, query_ids: Sequence[str]) -> dict[str, list[str]]:
    table = alignment.dataset.queries_table
    mask = pc.is_in(table.column("query_id"), value_set=_ids(query_ids, table.schema.field("query_id").type))
    part = table.filter(mask).select(["query_id", "expected_keywords"]).to_pylist()
    return {str(r["query_id"]): [str(w) for w in r["expected_keywords"] or []] for r in part}


def missed_frame(alignment: Alignment, k: int) -> pd.DataFrame:
    """Queries with relevant documents but none in the top K.

    Columns: ``query_id, query, category, difficulty``; ``status`` (near miss / deeper / not retrieved, see
    :func:`miss_status`); ``first_relevant_rank`` (nullable; NA = never retrieved); ``relevant_docs`` ("doc
    (grade)", best first); ``top_k`` (retrieved documents, a relevant one marked "✓"); ``keywords_found``
    ("2/3") and ``keywords_missing`` when the retrieved text is known (the run's chunk text, else the dataset's
    corpus: title and text), else empty.
    """
    table = query_table(alignment, k)
    qs = np.flatnonzero((~table["hit"].to_numpy()) & (alignment.n_rel > 0))
    if len(qs) == 0:
        return pd.DataFrame(columns=MISSED_COLUMNS)
    part = table.iloc[qs].reset_index(drop=True)
    ids = [str(q) for q in part["query_id"]]
    first = part["first_relevant_rank"].to_numpy()
    relevant = _relevant_lists(alignment, ids)
    tops = _top_k_lists(alignment, qs, k)
    texts = _top_k_text(alignment, qs, k)
    keywords = _keywords(alignment, ids) if text_known(alignment) else {}
    found_col: list[str] = []
    missing_col: list[str] = []
    for qi, qid in zip(qs.tolist(), ids):
        kws = keywords.get(qid, [])
        if not kws:
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
            "relevant_docs": [", ".join(f"{d} ({g})" for d, g in relevant.get(q, [])) for q in ids],
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
        text = frame["query"].astype("str").str.casefold().str.contains(needle, regex=False)
        ident = frame["query_id"].astype("str").str.casefold().str.contains(needle, regex=False)
        mask &= text | ident
    return frame[mask].reset_index(drop=True)


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


# --- one query ---------------------------------------------------------------------------

DETAIL_COLUMNS = ["rank", "doc_id", "judgment", "relevant", "score", "chunks", "chunk_id"]


def query_detail_frame(alignment: Alignment, query_id: str, depth: int = 20) -> pd.DataFrame:
    """The run's ranked documents for one query, to ``depth``, from the alignment's rows.

    Columns: ``rank, doc_id, judgment`` (the label as text, or ``unjudged``), ``relevant``, ``score`` (best
    chunk's), ``chunks`` (how many of the document's chunks were retrieved), ``chunk_id`` (the best one),
    ``title`` when the dataset has documents, ``text`` (the best chunk's text) when the run carries text.
    """
    columns = list(DETAIL_COLUMNS)
    qi = position(alignment, query_id)
    if qi is None:
        return pd.DataFrame(columns=columns)
    rows = alignment.rows()
    rows = rows[(rows["q"] == qi) & (rows["rank"] <= depth)]
    grouped = rows.groupby("rank", sort=True)
    first = grouped.head(1).set_index("rank")
    label = first["label"].array
    out = pd.DataFrame(
        {
            "rank": first.index.to_numpy(dtype=np.int64),
            "doc_id": first["doc_id"].to_numpy(dtype=object),
            "judgment": ["unjudged" if pd.isna(g) else str(int(g)) for g in label],
            "relevant": (label.fillna(np.iinfo(np.int64).min) >= alignment.conventions.rel_level).to_numpy(dtype=bool),
            "score": first["score"].to_numpy(dtype=np.float64),
            "chunks": grouped.size().reindex(first.index).to_numpy(),
            "chunk_id": first["chunk_id"].to_numpy(dtype=object),
        }
    )
    titles = doc_titles(alignment.dataset)
    if titles is not None:
        out["title"] = titles.reindex(out["doc_id"]).fillna("").to_numpy()
        columns.append("title")
    if "text" in rows.columns:
        out["text"] = first["text"].fillna("").astype("str").to_numpy()
        columns.append("text")
    return out[columns]


def doc_ranks(alignment: Alignment, query_id: str) -> dict[str, int]:
    """``{doc_id: rank}`` of one query's ranked documents (empty when the query was not evaluated)."""
    qi = position(alignment, query_id)
    if qi is None:
        return {}
    ranking = alignment.ranking
    mask = ranking.q == qi
    return {str(d): int(p) + 1 for d, p in zip(ranking.docs(mask), ranking.pos[mask])}


def relevant_docs_frame(alignments: Sequence[Alignment], query_id: str) -> pd.DataFrame:
    """Each relevant document of a query and its rank in each run (NA = not retrieved).

    Columns: ``doc_id, relevance``, ``title`` when known, then one column per run (named after it; a run named
    like a column before it gets `` (run)`` after its name, so it never overwrites the qrels' grades); the run
    columns are listed in ``attrs["run_columns"]``.
    """
    if not alignments:
        return pd.DataFrame(columns=["doc_id", "relevance"])
    rel = _qrels_of(alignments[0], [query_id])
    out = pd.DataFrame({"doc_id": rel["doc_id"].to_numpy(dtype=object), "relevance": rel["relevance"].to_numpy()})
    titles = doc_titles(alignments[0].dataset)
    if titles is not None:
        out["title"] = titles.reindex(out["doc_id"]).fillna("").to_numpy()
    for alignment in alignments:
        ranks = doc_ranks(alignment, query_id)
        column = alignment.name
        while column in out.columns:
            column = f"{column} (run)"
        out[column] = pd.array([ranks.get(str(d)) for d in out["doc_id"]], dtype="Int64")
        out.attrs.setdefault("run_columns", []).append(column)
    return out


def query_metrics_frame(alignments: Sequence[Alignment], query_id: str, k: int) -> pd.DataFrame:
    """One row per run for one query: ``run, first_relevant_rank, status`` and the overview metrics at K."""
    specs = overview_specs(k)
    rows = []
    for alignment in alignments:
        qi = position(alignment, query_id)
        if qi is None:
            continue
        first = int(alignment.first_rel_rank[qi])
        row: dict[str, object] = {
            "run": alignment.name,
            "first_relevant_rank": first if first > 0 else None,
            "status": miss_status(first, k),
        }
        values = alignment.values(specs)
        row.update({str(spec): float(values[spec][qi]) for spec in specs})
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "first_relevant_rank", "status", *[str(s) for s in specs]])


def with_text_for_missing(frame: pd.DataFrame, columns: Sequence[str], text: str) -> pd.DataFrame:
    """A display copy where NA in ``columns`` reads ``text`` (numbers become text)."""
    out = frame.copy()
    for column in columns:
        if column in out.columns:
            out[column] = [text if pd.isna(v) else _plain_number(v) for v in out[column]]
    return out


def _plain_number(value: object) -> str:
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return str(int(value))
    return str(value)


def style_relevant(detail: pd.DataFrame) -> Any:
    """A Styler of :func:`query_detail_frame` with relevant documents' rows tinted green."""

    def tint(row: pd.Series) -> list[str]:
        return ["background-color: #e6f4ea" if bool(row.get("relevant")) else ""] * len(row)

    return detail.style.apply(tint, axis=1).format({"score": "{:.4f}"})
