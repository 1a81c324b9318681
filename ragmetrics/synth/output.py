"""Candidates as an evaluation set in the seed's format (read back by :func:`ragmetrics.io.load_dataset`).

One JSON object per line::

    {"query_id", "query", "expected_answer", "expected_keywords", "relevant_docs": {chunk_id: grade},
     "category", "difficulty", "provenance": {...}, "flags": [...]}

``relevant_docs`` is graded so precision is not capped by construction: the source chunk 2, every other chunk of
its document 1 (a document taken as given is its own only chunk), and 2 for any chunk whose text is the source's (a
document stored twice); a ``negative`` candidate has none. ``provenance`` is the generator's,
with the chunker, the source chunk's id and the hash of its text added when missing (``dataset check`` reads them).
``query_id`` is ``<generator>-<set>-<n>`` (n from 1, four digits at least; ``set`` the :func:`set_tag` of the
candidates, or the caller's): duplicates keep distinct ids, and are flagged; two sets do not share ids, so their
queries stay apart when their sets are merged or their labels pooled.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmetrics.foundation.files import replacing
from ragmetrics.io.evalset import write_evalset
from ragmetrics.synth.base import Candidate
from ragmetrics.synth.corpus import Corpus

SOURCE_GRADE = 2
"""The grade of the chunk a query was written from: the top of a generated set's scale."""
SIBLING_GRADE = 1
"""The grade of every other chunk of the source's document."""


def relevant_docs(
    candidate: Candidate,
    corpus: Corpus,
    chunks_of: dict[str, list[str]] | None = None,
    twins: Mapping[str, list[str]] | None = None,
) -> dict[str, int]:
    """The graded judgments of a candidate (see the module): a chunk whose text is the source's, white space aside
    (a document stored twice), is graded as the source, since a retriever that returns it found the passage."""
    if candidate.category == "negative":
        return {}
    siblings = (chunks_of or {}).get(candidate.source.doc_id)
    if siblings is None:
        siblings = [c.chunk_id for c in corpus.chunks if c.doc_id == candidate.source.doc_id]
    grades = dict.fromkeys(siblings, SIBLING_GRADE)
    copies = (twins if twins is not None else identical_chunks(corpus)).get(_plain(candidate.source.text), [])
    grades.update(dict.fromkeys(copies, SOURCE_GRADE))
    grades[candidate.source.chunk_id] = SOURCE_GRADE
    return dict(sorted(grades.items(), key=lambda kv: (-kv[1], kv[0])))


def identical_chunks(corpus: Corpus) -> dict[str, list[str]]:
    """The corpus's chunk ids by their text, white space aside, for the texts held by two chunks or more."""
    by_text: dict[str, list[str]] = {}
    for chunk in corpus.chunks:
        by_text.setdefault(_plain(chunk.text), []).append(chunk.chunk_id)
    return {text: ids for text, ids in by_text.items() if len(ids) > 1}


def _plain(text: str) -> str:
    return " ".join(text.split())


Groups = tuple[dict[str, list[str]], dict[str, list[str]]]
"""Each document's chunk ids, and the chunk ids of each text held twice (:func:`groups_of`)."""


def groups_of(corpus: Corpus) -> Groups:
    """What :func:`relevant_docs` grades by, made once a corpus (each is a pass over every chunk)."""
    return {doc: [c.chunk_id for c in chunks] for doc, chunks in corpus.chunks_of().items()}, identical_chunks(corpus)


def set_tag(candidates: Sequence[Candidate]) -> str:
    """Eight hex digits that tell a set of candidates from another: a hash of each one's generator, seed, source
    chunk and query, in order (the same set written again has the same tag; another corpus, seed or mix, another)."""
    digest = hashlib.sha256()
    for c in candidates:
        fields = (c.provenance.get("generator", ""), str(c.provenance.get("seed", "")), c.source.chunk_id, c.query)
        digest.update("\x1f".join(fields).encode("utf-8", "surrogatepass") + b"\x1e")
    return digest.hexdigest()[:8]


def records(
    candidates: Sequence[Candidate], corpus: Corpus, *, tag: str | None = None, groups: Groups | None = None
) -> list[dict[str, Any]]:
    """The evaluation-set records of ``candidates``, in order; ``tag`` names the set in the ids (default: their
    :func:`set_tag`); ``groups``: :func:`groups_of` the corpus, when the caller has them."""
    chunks_of, twins = groups if groups is not None else groups_of(corpus)
    width = max(4, len(str(len(candidates))))
    named = set_tag(candidates) if tag is None else tag
    out = []
    for n, c in enumerate(candidates, 1):
        generator = c.provenance.get("generator", "synth")
        out.append(
            {
                "query_id": f"{generator}-{named}-{n:0{width}d}",
                "query": c.query,
                "expected_answer": c.expected_answer,
                "expected_keywords": list(c.expected_keywords),
                "relevant_docs": relevant_docs(c, corpus, chunks_of, twins),
                "category": c.category,
                "difficulty": c.difficulty,
                "provenance": _provenance(c, corpus),
                "flags": list(c.flags),
            }
        )
    return out


def source_digest(text: str) -> str:
    """The hash of a source's text kept in the provenance (``dataset check`` compares it with the corpus's)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _provenance(candidate: Candidate, corpus: Corpus) -> dict[str, str]:
    """The generator's provenance, with what every set needs for ``dataset check`` added when it is missing: the
    chunker, the source chunk's id and the hash of its text."""
    found = dict(candidate.provenance)
    found.setdefault("chunker", corpus.chunker)
    found.setdefault("chunk_id", candidate.source.chunk_id)
    found.setdefault("source_sha256", source_digest(candidate.source.text))
    return found


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> None:
    """Write ``rows`` as :func:`ragmetrics.io.evalset.write_evalset` does (a JSON list for a ``.json`` path, else
    JSONL), whole or not at all (:func:`ragmetrics.foundation.files.replacing`)."""
    with replacing(path) as partial:
        write_evalset(rows, partial)
