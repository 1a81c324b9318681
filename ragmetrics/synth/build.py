"""Building a reviewed evaluation set in the store: generate a batch of candidates from a stored dataset's corpus
into :class:`~ragmetrics.store.candidates.CandidateStore` (each candidate stored as it is written; cancel and resume),
edit a candidate, and make the kept candidates a dataset.

* :func:`corpus_of`: a stored dataset's documents (``doc_id``, ``title``, ``text``) as a :class:`Corpus`, taken as
  given (chunker ``none``): the judgments of the set name the documents the dataset's runs and the built-in BM25
  return.
* :func:`generate_batch`: sources sampled as :func:`ragmetrics.synth.pipeline.synthesize` samples them, the
  generator's candidates stored one by one at their position (a position already stored is skipped, so a resumed
  batch writes only what is missing: the generators are deterministic for a seed, and a model's answers are cached
  by the content of the request), then the filters' flags over the whole batch.
* :func:`apply_edit`: a reviewer's edit checked (documents named must be in the corpus; grades whole numbers).
* :func:`dataset_of`: the kept records as a :class:`Dataset` with the parent's documents and corpus size; each
  query keeps its ``provenance`` (generator, prompt version, seed, source span, chunk and its text's hash, and who
  reviewed it, when, and how) as a JSON column, read by ``ragmetrics dataset check``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import NEGATIVE, Dataset
from ragmetrics.io.limits import Limits
from ragmetrics.store.candidates import CandidateStore, Reviewed
from ragmetrics.synth.base import Candidate, Generator, Source
from ragmetrics.synth.corpus import Corpus, Document, make_corpus, sample_sources
from ragmetrics.synth.filters import flag
from ragmetrics.synth.generators import GENERATORS
from ragmetrics.synth.output import SIBLING_GRADE, SOURCE_GRADE, Groups, groups_of, records
from ragmetrics.synth.pipeline import OVERSAMPLE

DIFFICULTY_LEVELS = ("easy", "medium", "hard")
EDITABLE = ("query", "expected_answer", "expected_keywords", "category", "difficulty", "relevant_docs")
"""The fields of a candidate a reviewer may change."""


def corpus_of(dataset: Dataset, *, language: str = "auto", parent_separator: str | None = None) -> Corpus:
    """The stored dataset's documents as a corpus taken as given; an error when it holds none.
    ``parent_separator``: the documents are chunks, each document's id before the last occurrence of it
    (:func:`ragmetrics.synth.corpus.make_corpus`), as ``synth --parent-separator`` reads them."""
    frame = dataset.documents
    if frame is None or frame.empty:
        raise RagMetricsError(f"dataset {dataset.name!r} has no corpus stored: upload it with its corpus first")
    titles = frame["title"] if "title" in frame.columns else [""] * len(frame)
    documents = [
        Document(str(d), "" if t is None else str(t), "" if x is None else str(x))
        for d, t, x in zip(frame["doc_id"], titles, frame["text"])
    ]
    return make_corpus(documents, chunking="none", language=language, parent_separator=parent_separator or None)


def categories_of(generator: str) -> tuple[str, ...]:
    """The categories ``generator`` writes, as the registry lists them."""
    entry = GENERATORS.get(generator)
    if entry is None:
        raise RagMetricsError(f"generator {generator!r}: expected one of {', '.join(GENERATORS)}")
    return entry.categories


def record_of(
    candidate: Candidate, corpus: Corpus, position: int, batch: str, groups: Groups | None = None
) -> dict[str, Any]:
    """The evaluation-set record of the candidate at ``position`` of ``batch`` (its ``query_id`` named by the batch
    and numbered by the position: two batches share no id), with its source passage (``doc_id, chunk_id, text,
    start, end``) for the reviewer; ``groups``: :func:`groups_of` the corpus, made once a batch."""
    record = records([candidate], corpus, tag=batch[:8], groups=groups)[0]
    record["query_id"] = f"{candidate.provenance.get('generator', 'synth')}-{batch[:8]}-{position:04d}"
    source = candidate.source
    record["source"] = {
        "doc_id": source.spans_in or source.doc_id,  # the record its characters start:end are of
        "chunk_id": source.chunk_id,
        "text": source.text,
        "start": source.start,
        "end": source.end,
    }
    return record


@dataclass
class Progress:
    """Where a generation is: ``done`` of ``total`` candidates (those stored before a resume included)."""

    done: int = 0
    total: int = 0


class Stopped(RagMetricsError):
    """The generation was asked to stop; the candidates stored so far stay."""


def generate_batch(
    candidates: CandidateStore,
    batch: str,
    corpus: Corpus,
    generator: Generator,
    categories: Mapping[str, int],
    *,
    seed: int,
    retrievers: Sequence[tuple[str, Any]] = (),
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Write ``batch``'s candidates into the store (see the module); returns how many it holds. ``stop`` set:
    :class:`Stopped` before the next candidate is stored (the batch is then ``stopped``)."""
    total = sum(categories.values())
    # a resumed batch matches what it generates again with what it stored by content, not by place: a model whose
    # reply failed once and not now (its failures are not cached) shifts every later candidate by one
    stored: dict[tuple[str, str, str], list[int]] = {}
    records_at: dict[int, dict[str, Any]] = {}
    for item in candidates.candidates(batch):  # a key twice (a duplicate, flagged, not dropped) holds two places
        stored.setdefault(_key_of(item.record), []).append(item.position)
        records_at[item.position] = item.record
    taken = {position for places in stored.values() for position in places}
    made: dict[int, Candidate] = {}
    report = progress or (lambda _done, _total: None)
    report(len(taken), total)
    sources = sample_sources(corpus, total * OVERSAMPLE + 10, seed=seed)
    groups = groups_of(corpus)
    free = 1
    try:
        for candidate in generator.generate(sources, categories, seed=seed):
            if stop is not None and stop.is_set():
                raise Stopped("stopped")
            places = stored.get(_key_of(_record_fields(candidate)))
            position = places.pop(0) if places else None
            if position is None and len(taken) >= total:  # as many as asked are stored: the rest are not wanted
                continue
            if position is None:
                while free in taken:
                    free += 1
                position = free
                candidates.add_candidate(batch, position, record_of(candidate, corpus, position, batch, groups))
                taken.add(position)
            made[position] = candidate
            report(len(taken), total)
    except BaseException:
        candidates.set_status(batch, "stopped")
        raise
    # a stored candidate not generated again (a model that answers otherwise now) is checked with the rest
    chunks = {c.chunk_id: c for c in corpus.chunks}
    for position in taken - set(made):
        again = _candidate_of(records_at[position], chunks)
        if again is not None:
            made[position] = again
    order = sorted(made)
    flagged = flag([made[n] for n in order], corpus, retrievers)
    candidates.set_flags(batch, {n: c.flags for n, c in zip(order, flagged)})
    candidates.set_status(batch, "complete")
    report(len(taken), len(taken))
    return len(taken)


def _candidate_of(record: Mapping[str, Any], chunks: Mapping[str, Source]) -> Candidate | None:
    """A stored candidate as the filters read it (its source the corpus's chunk; None when the corpus no longer
    holds that chunk, which ``dataset check`` reports)."""
    source = chunks.get(str((record.get("source") or {}).get("chunk_id", "")))
    if source is None:
        return None
    return Candidate(
        str(record.get("query", "")),
        str(record.get("expected_answer") or ""),
        tuple(str(k) for k in record.get("expected_keywords") or ()),
        str(record.get("category", "")),
        str(record.get("difficulty") or ""),
        source,
        dict(record.get("provenance") or {}),
        tuple(str(f) for f in record.get("flags") or ()),
    )


def _record_fields(candidate: Candidate) -> dict[str, Any]:
    """The fields of a candidate's stored record that :func:`_key_of` reads, without writing the whole record."""
    return {"query": candidate.query, "category": candidate.category, "source": {"chunk_id": candidate.source.chunk_id}}


def _key_of(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """What tells a stored candidate apart from another of its batch: its query, category and source chunk (a
    candidate's own, as :func:`record_of` stores them)."""
    source = record.get("source") or {}
    return str(record.get("query", "")), str(record.get("category", "")), str(source.get("chunk_id", ""))


_GRADE = re.compile(r"^\s*(.+?)\s*(?:=\s*(-?\d+)\s*)?$")


def parse_relevant(text: str, known: set[str]) -> dict[str, int]:
    """``doc1=2, doc2=1, doc3`` (a grade omitted is 1) as ``{doc: grade}``, each grade on the generated set's scale
    (:data:`ragmetrics.synth.output.SOURCE_GRADE` at the top) and each document in ``known``."""
    out: dict[str, int] = {}
    for part in [p for p in text.split(",") if p.strip()]:
        found = _GRADE.match(part)
        if found is None:
            raise RagMetricsError(f"relevant documents: {part.strip()!r}: expected DOC_ID or DOC_ID=GRADE")
        doc, grade = found.group(1), int(found.group(2) or SIBLING_GRADE)
        if found.group(2) is None and "=" in doc and doc not in known:  # DOC_ID=GRADE with a grade not a number
            named, _, given = doc.rpartition("=")
            raise RagMetricsError(
                f"relevant documents: {part.strip()!r}: the grade {given.strip()!r} of {named.strip()!r} is not a "
                "whole number; expected DOC_ID or DOC_ID=GRADE"
            )
        if not SIBLING_GRADE <= grade <= SOURCE_GRADE:
            raise RagMetricsError(
                f"relevant documents: {doc!r}={grade}: expected a grade of {SIBLING_GRADE} to {SOURCE_GRADE}, the "
                f"set's scale ({SOURCE_GRADE} for the passage the query was written from, {SIBLING_GRADE} for another "
                "part of its document; a document that is not relevant is left out)"
            )
        if doc not in known:
            raise RagMetricsError(f"relevant documents: {doc!r} is not a document of the corpus")
        if doc in out:
            raise RagMetricsError(f"relevant documents: {doc!r} is named twice")
        out[doc] = grade
    return out


def relevant_text(relevant: Mapping[str, int]) -> str:
    """The text :func:`parse_relevant` reads back into ``relevant``."""
    return ", ".join(f"{doc}={grade}" for doc, grade in relevant.items())


def apply_edit(
    record: Mapping[str, Any],
    *,
    query: str,
    expected_answer: str,
    keywords: str,
    category: str,
    difficulty: str,
    relevant: str,
    known_docs: set[str],
) -> dict[str, Any]:
    """``record`` with the reviewer's changes (keywords one per line, so a keyword may hold a comma, ``1,000 mg``,
    or a Chinese one; relevant documents as :func:`parse_relevant` reads them); an error naming every field that is
    not acceptable, one per line, so a reviewer mends them in one go."""
    problems: list[str] = []
    if not query.strip():
        problems.append("query: expected a question, got nothing")
    limit = Limits.from_env().max_text_bytes
    for field, text in (("query", query), ("expected answer", expected_answer), ("keywords", keywords)):
        if len(text.encode("utf-8", "surrogatepass")) > limit:
            problems.append(f"{field}: expected at most {limit:,} bytes (RAGMETRICS_MAX_TEXT_BYTES)")
    if not category.strip():
        problems.append("category: expected a name, got nothing")
    if difficulty not in DIFFICULTY_LEVELS:
        problems.append(f"difficulty {difficulty!r}: expected one of {', '.join(DIFFICULTY_LEVELS)}")
    try:
        found = parse_relevant(relevant, known_docs)
    except RagMetricsError as err:
        problems.append(str(err))
        found = {}
    if category.strip() == NEGATIVE and (found or expected_answer.strip()):
        problems.append(
            f"category {NEGATIVE}: a negative query is one the corpus does not answer, so it has no relevant "
            "document and no expected answer; clear them, or give the category it has"
        )
    if problems:
        raise RagMetricsError("\n".join(problems))
    edited = dict(record)
    edited.update(
        query=query.strip(),
        expected_answer=expected_answer.strip(),
        expected_keywords=[k.strip() for k in keywords.splitlines() if k.strip()],
        category=category.strip(),
        difficulty=difficulty,
        relevant_docs=found,
    )
    return edited


def dataset_of(kept: Sequence[Reviewed], parent: Dataset, *, name: str, batch: str) -> Dataset:
    """The kept candidates (accepted or edited) as a dataset with ``parent``'s documents and corpus size."""
    if not kept:
        raise RagMetricsError("no candidate was accepted: accept or edit at least one before making a dataset")
    queries: list[dict[str, Any]] = []
    qrels: list[tuple[str, str, int]] = []
    for item in kept:
        record = item.final
        provenance = dict(record.get("provenance") or {})
        provenance.update(
            batch=batch,
            review=str(item.decision),
            reviewer=str(item.reviewer or "anonymous"),
            reviewed_at=f"{item.reviewed_at:.3f}" if item.reviewed_at is not None else "",
        )
        queries.append(
            {
                "query_id": record["query_id"],
                "query": record["query"],
                "expected_answer": record.get("expected_answer", ""),
                "expected_keywords": list(record.get("expected_keywords") or []),
                "category": record.get("category", ""),
                "difficulty": record.get("difficulty", ""),
                "provenance": json.dumps(provenance, sort_keys=True, ensure_ascii=False),
            }
        )
        qrels.extend(
            (record["query_id"], doc, int(grade)) for doc, grade in (record.get("relevant_docs") or {}).items()
        )
    return Dataset.from_frames(
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
        pd.DataFrame(queries),
        name=name,
        corpus_size=parent.corpus_size,
        documents=parent.documents,
    )
