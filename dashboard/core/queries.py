"""The dataset's queries as pages show them: groups (category, difficulty), counts, one query's record.

Read from the dataset's Arrow tables one column at a time (no whole pandas frame per page run).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from dashboard.core.text import md_escape, snippet
from ragmetrics.analysis.diagnosis import NO_GROUP
from ragmetrics.foundation.model import Dataset

__all__ = [
    "DIFFICULTY_ORDER",
    "NO_GROUP",
    "dataset_summary",
    "doc_titles",
    "group_values",
    "has_groups",
    "labels_of",
    "query_info",
    "query_labels",
    "unevaluated_groups",
]

DIFFICULTY_ORDER: tuple[str, ...] = ("easy", "medium", "hard")


def labels_of(dataset: Dataset, by: str) -> pd.Series:
    """A query column as text, one value per query (missing: "")."""
    table = dataset.queries_table
    if by not in table.column_names:
        return pd.Series([""] * table.num_rows, dtype="str")
    return table.column(by).to_pandas().fillna("").astype("str")


def group_values(dataset: Dataset, by: str) -> list[str]:
    """Distinct values of ``category`` or ``difficulty`` (empty as ``(none)``), in display order: difficulties
    easy → hard, then others by name; categories by size, largest first."""
    counts = labels_of(dataset, by).replace("", NO_GROUP).value_counts(sort=False)
    if by == "difficulty":
        known = [d for d in DIFFICULTY_ORDER if d in counts.index]
        rest = sorted(v for v in counts.index if v not in DIFFICULTY_ORDER)
        return known + rest
    return sorted(counts.index, key=lambda v: (-int(counts[v]), v))


def judged_group_values(dataset: Dataset, by: str) -> list[str]:
    """:func:`group_values` of the queries the qrels judge: a group of unjudged queries only (a built set's
    ``negative`` ones) can hold no missed query, so a filter does not offer it."""
    judged = set(dataset.qrels_table.column("query_id").to_pylist())
    ids = dataset.queries_table.column("query_id").to_pylist()
    present = {v for q, v in zip(ids, labels_of(dataset, by).replace("", NO_GROUP)) if q in judged}
    return [v for v in group_values(dataset, by) if v in present]


def has_groups(dataset: Dataset, by: str) -> bool:
    """True when some query has a non-empty ``by`` label."""
    return by in dataset.queries_table.column_names and bool((labels_of(dataset, by) != "").any())


def unevaluated_groups(dataset: Dataset, evaluated: Sequence[str] | np.ndarray, by: str) -> dict[str, int]:
    """Groups with queries left out of the evaluation (no judgments): ``{group: count}``."""
    ids = dataset.queries_table.column("query_id")
    left_out = ~pd.Series(ids.to_pandas()).isin(list(evaluated)).to_numpy()
    values = labels_of(dataset, by)[left_out].replace("", NO_GROUP)
    return {str(k): int(v) for k, v in values.value_counts().items()}


def dataset_summary(dataset: Dataset) -> dict[str, int]:
    """Counts for the page header: queries, judged queries, judgments, relevant judgments, categories, documents."""
    qrels = dataset.qrels_table
    categories = labels_of(dataset, "category")
    return {
        "queries": dataset.queries_table.num_rows,
        "judged_queries": int(pc.count_distinct(qrels.column("query_id")).as_py()) if qrels.num_rows else 0,
        "judgments": qrels.num_rows,
        "relevant": int(pc.sum(pc.greater_equal(qrels.column("relevance"), 1)).as_py() or 0),
        "categories": int(categories[categories != ""].nunique()),
        "documents": 0 if dataset.documents is None else len(dataset.documents),
    }


def query_info(dataset: Dataset, query_id: str) -> dict[str, object]:
    """The dataset's record of one query: text, category, difficulty, expected answer and keywords ({} if unknown)."""
    table = dataset.queries_table
    rows = np.flatnonzero(pc.equal(table.column("query_id"), query_id).to_numpy(zero_copy_only=False))
    if len(rows) == 0:
        return {}
    row = table.slice(int(rows[0]), 1).to_pylist()[0]
    return {
        "query_id": query_id,
        "query": str(row.get("query") or ""),
        "category": str(row.get("category") or "") or NO_GROUP,
        "difficulty": str(row.get("difficulty") or "") or NO_GROUP,
        "expected_answer": str(row.get("expected_answer") or ""),
        "expected_keywords": [str(v) for v in row.get("expected_keywords") or []],
    }


def has_keywords(dataset: Dataset) -> bool:
    """True when some query lists expected keywords."""
    if "expected_keywords" not in dataset.queries_table.column_names:
        return False
    column = dataset.queries_table.column("expected_keywords")
    try:
        return bool(pc.max(pc.list_value_length(column)).as_py() or 0)
    except Exception:  # not a list column
        return bool(pc.any(pc.is_valid(column)).as_py())


def query_line(query_id: str, info: dict[str, object]) -> str:
    r"""``\`q012\` · category **billing** · difficulty **hard**``: the id, and the facets the query has (escaped)."""
    parts = [f"`{query_id.replace('`', 'ʼ')}`"]
    for by in ("category", "difficulty"):
        value = str(info.get(by) or "")
        if value and value != NO_GROUP:
            parts.append(f"{by} **{md_escape(value)}**")
    return " · ".join(parts)


def query_header(
    query_id: str, info: dict[str, object], *, after_line: str = "", keywords: Sequence[object] = (), then: str = ""
) -> str:
    """One Markdown element heading a query's detail (a page draws each element at a cost, so these are one): its
    text as a heading, :func:`query_line` followed by ``after_line`` (Markdown the caller escaped), its expected
    answer and ``keywords`` when it has them, then ``then`` (the caller's Markdown: the label of what follows)."""
    blocks = [f"#### {md_escape(info.get('query', query_id))}", query_line(query_id, info) + after_line]
    if info.get("expected_answer"):
        blocks.append(f"**Expected answer:** {md_escape(info['expected_answer'])}")
    if keywords:
        blocks.append("**Expected keywords:** " + ", ".join(md_escape(str(word)) for word in keywords))
    if then:
        blocks.append(then)
    return "\n\n".join(blocks)


def search_example(dataset: Dataset) -> str:
    """A hint for the search box from the data at hand: a word of the first query, or its id."""
    table = dataset.queries_table
    if table.num_rows == 0:
        return ""
    first = table.slice(0, 1).to_pylist()[0]
    words = [w for w in str(first.get("query") or "").split() if len(w) > 3]
    text = words[0] if words else str(first.get("query") or "")[:4]
    ident = str(first.get("query_id") or "")
    return " or ".join(snippet(t, 20) for t in (text, ident) if t)


def doc_titles(dataset: Dataset) -> pd.Series | None:
    """Document titles by doc_id, when the dataset carries its corpus with titles."""
    docs = dataset.documents
    if docs is None or "doc_id" not in docs.columns or "title" not in docs.columns:
        return None
    return docs.drop_duplicates("doc_id").set_index("doc_id")["title"].astype("str")


def query_labels(frame: pd.DataFrame, limit: int = 60) -> dict[str, str]:
    """``{query_id: "query_id · text…"}`` for pickers (``frame`` has ``query_id`` and ``query``)."""
    return {str(q): f"{q} · {snippet(t, limit)}" for q, t in zip(frame["query_id"], frame["query"])}
