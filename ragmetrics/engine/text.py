"""What the ranked texts hold: each ranked document's text against its query's expected keywords and answer.

Read by ``keyword_recall@k`` and ``answer_in@k``. A ranked document's text is the text of every chunk of it the
run retrieved (a chunk run's ``text`` column) or else the dataset's corpus text (title and text). Matching is
case-insensitive (``str.casefold``) and literal; every keyword of a query counts, however many.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    from ragmetrics.engine.alignment import Alignment


@dataclass(frozen=True)
class TextEvidence:
    """Per found keyword: ``keyword_q`` (its query) and ``keyword_first`` (the 0-based rank of the first ranked text
    holding it); per ranked row (the alignment's ranking order): ``answer_found``; per query: ``n_keywords`` and
    ``has_answer``."""

    keyword_q: np.ndarray
    keyword_first: np.ndarray
    answer_found: np.ndarray
    n_keywords: np.ndarray
    has_answer: np.ndarray


def ranked_texts(alignment: Alignment) -> list[str]:
    """The text of each ranked row of the alignment's ranking, in its order."""
    ranking = alignment.ranking
    rows = alignment.rows()
    if "text" in rows.columns and rows["text"].notna().any():
        joined = rows.assign(text=rows["text"].fillna("").astype(str)).groupby(["q", "rank"], sort=False)["text"]
        texts = joined.agg("\n".join)
        keys = list(zip(ranking.q.tolist(), (ranking.pos + 1).tolist()))
        return [texts.get(key, "") for key in keys]
    full = alignment.dataset.document_texts()
    if full is None:
        raise RagMetricsError(
            "keyword and answer metrics read the retrieved text: give a run with a text column, or the dataset's "
            "corpus (--corpus corpus.jsonl, a BEIR folder; in Python load_dataset(..., corpus=...))"
        )
    lookup = full.to_dict()
    return [lookup.get(doc, "") for doc in ranking.docs().tolist()]


def evidence(alignment: Alignment) -> TextEvidence:
    ranking = alignment.ranking
    queries = alignment.dataset.queries_table
    position = {q: i for i, q in enumerate(queries.column("query_id").to_pylist())}
    rows = [position[q] for q in ranking.query_ids.tolist()]
    all_keywords = queries.column("expected_keywords").to_pylist()
    all_answers = queries.column("expected_answer").to_pylist()
    keywords = [[str(w).casefold() for w in (all_keywords[r] or []) if str(w).strip()] for r in rows]
    answers = [str(all_answers[r] or "").strip().casefold() for r in rows]
    texts = ranked_texts(alignment)
    found = np.zeros(len(texts), dtype=bool)
    first: dict[tuple[int, int], int] = {}  # (query, keyword) -> the first rank whose text holds it
    for i, (q, pos, text) in enumerate(zip(ranking.q.tolist(), ranking.pos.tolist(), texts)):
        haystack = text.casefold()
        for j, word in enumerate(keywords[q]):
            if word in haystack and (q, j) not in first:
                first[(q, j)] = pos
        found[i] = bool(answers[q]) and answers[q] in haystack
    return TextEvidence(
        keyword_q=np.array([q for q, _ in first], dtype=np.int64),
        keyword_first=np.array(list(first.values()), dtype=np.int64),
        answer_found=found,
        n_keywords=np.array([len(k) for k in keywords], dtype=np.int64),
        has_answer=np.array([bool(a) for a in answers], dtype=bool),
    )
