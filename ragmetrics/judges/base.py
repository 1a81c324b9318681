"""What a judge sees and what it gives back.

A judge grades (query, document) :class:`Pair` s on the dataset's label scale ``0..max_grade`` (the largest grade
of its qrels, at least 1). Each grade it gives becomes a :class:`JudgeLabel` stamped with its :class:`Provenance`:
which judge, its version, the hash of its prompt or configuration and of the scale, and when. A pair the judge could not grade
(an endpoint's answer that never parsed) has ``label`` None and says why in ``problem``: it is reported, never a
silent 0.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.grades import grade_problem
from ragmetrics.foundation.grades import max_grade as max_grade  # where it was defined before
from ragmetrics.foundation.provenance import Provenance

if TYPE_CHECKING:
    import pandas as pd

    from ragmetrics.foundation.model import Dataset


@dataclass(frozen=True)
class Pair:
    """One (query, document) pair to grade. ``rank``: its best rank in the pooled runs (0 when unknown); ``runs``:
    how many of the pooled runs retrieved it (0 when unknown); ``score``: a retriever's score when known (NaN
    otherwise); ``category``: the query's category ("" when none)."""

    query_id: str
    query: str
    doc_id: str
    text: str
    expected_answer: str = ""
    expected_keywords: tuple[str, ...] = ()
    rank: int = 0
    score: float = float("nan")
    category: str = ""
    runs: int = 0


@dataclass(frozen=True)
class Grade:
    """A judge's answer for one pair: ``label`` on the scale, or None with the ``problem`` that kept it from one."""

    label: int | None
    problem: str = ""


@dataclass(frozen=True)
class JudgeLabel:
    """A grade with the pair it grades and its provenance."""

    pair: Pair
    label: int | None
    provenance: Provenance
    problem: str = ""


class Judge(Protocol):
    """A judge: ``name`` (its registry name), ``version`` (changes when its rule or code changes), ``config`` (what
    else decides its grades: a prompt, a model, features; hashed into the provenance)."""

    name: str
    version: str

    def config(self) -> Mapping[str, Any]: ...

    def grade(self, pairs: Sequence[Pair], max_grade: int) -> list[Grade]: ...


def config_hash(config: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of ``config`` as canonical JSON."""
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def provenance_of(judge: Judge, max_grade: int, at: float | None = None) -> Provenance:
    """The provenance of ``judge``'s grades on the scale ``0..max_grade``: the scale is hashed with its
    configuration, so labels given on two scales never share one identity (the store skips a pair already labelled
    by the same name, version and hash)."""
    config = {**judge.config(), "scale": [0, int(max_grade)]}
    return Provenance(judge.name, judge.version, config_hash(config), time.time() if at is None else at)


NO_TEXT = Grade(None, "the document's text is unknown (give the corpus, or a pool with text)")
"""The grade of a pair without text, for a judge that reads it (every judge but one with ``needs_text = False``)."""

NO_QUERY = Grade(None, "the query's text is unknown (give --queries, or an evaluation set with its queries)")
"""The grade of a pair whose query has no text, for a judge that reads the query (``needs_query = True``): asked
about an empty query, a model answers anyway."""


def ungradable(judge: Judge | type, pair: Pair) -> Grade | None:
    """The grade ``pair`` gets without asking ``judge`` (a judge or its class): :data:`NO_TEXT` when the judge reads
    the document's text (its ``needs_text``, default True) and the pair has none, :data:`NO_QUERY` when it reads the
    query (``needs_query``, default False) and the query has no text; None when the judge can be asked."""
    if getattr(judge, "needs_text", True) and not pair.text.strip():
        return NO_TEXT
    if getattr(judge, "needs_query", False) and not pair.query.strip():
        return NO_QUERY
    return None


def run_judge(
    judge: Judge,
    pairs: Sequence[Pair],
    max_grade: int,
    *,
    batch: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[JudgeLabel]:
    """Grade ``pairs`` with ``judge`` in batches of ``batch`` (default: the judge's own ``batch`` attribute, else 64;
    0: all at once; ``progress(done, total)`` after each), each label stamped with the judge's provenance. A pair
    the judge cannot read gets its :func:`ungradable` grade (no label, the reason why) without asking. A grade outside ``0..max_grade``
    is a :class:`RagMetricsError`."""
    if max_grade < 1:
        raise RagMetricsError(f"the label scale must be 0..max with max >= 1; got max {max_grade}")
    provenance = provenance_of(judge, max_grade)
    size = int(getattr(judge, "batch", 64)) if batch is None else batch
    size = size if size > 0 else max(len(pairs), 1)
    out: list[JudgeLabel] = []
    for start in range(0, len(pairs), size):
        chunk = pairs[start : start + size]
        unreadable = [ungradable(judge, p) for p in chunk]
        readable = [grade is None for grade in unreadable]
        asked = [p for p, ok in zip(chunk, readable, strict=True) if ok]
        given = judge.grade(asked, max_grade) if asked else []
        if len(given) != len(asked):
            raise RagMetricsError(f"judge {judge.name} gave {len(given)} grades for {len(asked)} pairs")
        answers = iter(given)
        grades = [next(answers) if grade is None else grade for grade in unreadable]
        for pair, grade in zip(chunk, grades, strict=True):
            problem = None if grade.label is None else grade_problem(grade.label, max_grade)
            if problem is not None:
                raise RagMetricsError(
                    f"judge {judge.name} graded {pair.doc_id} for {pair.query_id} {grade.label}; {problem}"
                )
            out.append(JudgeLabel(pair, grade.label, provenance, grade.problem))
        if progress is not None:
            progress(len(out), len(pairs))
    return out


def pairs_from_pool(dataset: Dataset, pool: pd.DataFrame) -> list[Pair]:
    """The pairs of a pool frame (``query_id, doc_id`` and optionally ``text``, ``best_rank`` or ``rank``,
    ``runs``, ``score``), with the dataset's query text, expected answer, keywords and category; a document's text comes
    from the dataset's documents (:meth:`Dataset.document_texts`: title and text), else from the pool (a run's
    chunk text, a pool file's text column), else is empty, its white space collapsed to single spaces as
    ``ragmetrics pool`` writes it: a judge reads the same passage from a pool file with text, one without, and
    the dashboard's pool. Without a rank column a pair's rank is its position among its query's pairs in the pool
    (the pool lists them by best rank)."""
    queries = {str(row["query_id"]): row for row in dataset.queries.drop_duplicates("query_id").to_dict("records")}
    texts = dataset.document_texts()
    corpus = {} if texts is None else {str(doc): text for doc, text in texts.items()}
    rank_column = next((c for c in ("best_rank", "rank") if c in pool.columns), None)
    seen: dict[str, int] = {}
    out = []
    for row in pool.to_dict("records"):
        q, d = str(row["query_id"]), str(row["doc_id"])
        seen[q] = seen.get(q, 0) + 1
        text = corpus.get(d) or row.get("text")
        text = " ".join(text.split()) if isinstance(text, str) else ""  # as a pool file holds it
        info = queries.get(q)
        score = row.get("score")
        out.append(
            Pair(
                query_id=q,
                query=_text(info, "query"),
                doc_id=d,
                text=text,
                expected_answer=_text(info, "expected_answer"),
                expected_keywords=tuple(
                    str(k) for k in (info.get("expected_keywords", []) if info is not None else [])
                ),
                rank=int(row[rank_column]) if rank_column else seen[q],
                score=float(score) if score is not None and score == score else float("nan"),
                category=_text(info, "category"),
                runs=_count(row.get("runs")),
            )
        )
    return out


def _count(value: Any) -> int:
    """A pool's ``runs`` cell as a count: 0 when absent or empty (a pool file read as text has ``""``)."""
    if value is None or value == "" or value != value:
        return 0
    try:
        return int(value)
    except ValueError:
        raise RagMetricsError(f"a pool's runs column holds {value!r}; expected a count of runs") from None


def _text(info: Mapping[str, Any] | None, column: str) -> str:
    if info is None:
        return ""
    value = info.get(column)
    return value if isinstance(value, str) else ""
