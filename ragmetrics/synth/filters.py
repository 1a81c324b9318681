"""The filters: what a reviewer should look at twice, as flags on the candidates (none is dropped).

* ``duplicate of candidate N`` (the same words, in any order and case) and ``near-duplicate of candidate N
  (Jaccard J)``: token-set Jaccard of the two queries at least :data:`NEAR_DUPLICATE`, tokens being the lowercased
  words and CJK ideographs (:func:`units`); N counts candidates from 1, as the written ``query_id`` does;
* ``copies the source: a run of R words``: the query shares a run of at least :data:`COPY_RUN` consecutive units
  with its source;
* ``expected answer not supported by the source``: the answer is not in the source (case and spacing aside) and
  fewer than :data:`ANSWER_SUPPORT` of its units occur in it;
* ``missed by ...``: no retriever finds any of its relevant chunks in its top :data:`MISS_DEPTH` (the built-in BM25
  and a second retriever; with only one, the flag says no second one confirmed it);
* for a ``negative`` candidate, ``answerable? chunk C holds all its keywords``: a chunk among the retrievers' top
  :data:`MISS_DEPTH` contains every expected keyword;
* ``not checked by R: <error>``: retriever R failed on the query (the other checks still ran).

:func:`default_retrievers` gives the built-in BM25 over the chunks and a second one (:data:`SECOND_RETRIEVERS`):
``plain`` (default), BM25 over other tokens (:class:`PlainBM25`: English words unstemmed and no stopword removed,
Chinese character bigrams instead of jieba's words), or ``variant``, the built-in BM25 with Anserini's parameters
(k1=0.9, b=0.4). Both are lexical, like the first: they disagree with it on tokens or weights, not on kind, and the
flag names the one used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import NEGATIVE
from ragmetrics.foundation.scripts import HAN_CHARACTER
from ragmetrics.retrieve.adapters import Hit
from ragmetrics.retrieve.bm25 import BM25, NO_WORDS
from ragmetrics.synth.base import Candidate
from ragmetrics.synth.corpus import UNIT, Corpus
from ragmetrics.synth.output import Groups, groups_of, relevant_docs

NEAR_DUPLICATE = 0.8
COPY_RUN = 12
ANSWER_SUPPORT = 0.5
MISS_DEPTH = 10
SECOND_K1 = 0.9
SECOND_B = 0.4


def units(text: str) -> list[str]:
    """Lowercased words and CJK ideographs, in order."""
    return [u.lower() for u in UNIT.findall(text)]


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def duplicate_flags(queries: Sequence[str], threshold: float = NEAR_DUPLICATE) -> list[list[str]]:
    """Per query, its duplicate / near-duplicate flag naming the first earlier query it repeats."""
    sets = [set(units(q)) for q in queries]
    out: list[list[str]] = [[] for _ in queries]
    for j, b in enumerate(sets):
        for i in range(j):
            a = sets[i]
            if not a or not b or min(len(a), len(b)) / max(len(a), len(b)) < threshold:
                continue  # Jaccard cannot reach the threshold
            score = jaccard(a, b)
            if a == b:
                out[j].append(f"duplicate of candidate {i + 1}")
                break
            if score >= threshold:
                out[j].append(f"near-duplicate of candidate {i + 1} (Jaccard {score:.2f})")
                break
    return out


def longest_run(query: str, source: str) -> int:
    """The longest run of consecutive units the query shares with the source."""
    q, s = units(query), units(source)
    best = 0
    previous = [0] * (len(s) + 1)
    for x in q:
        current = [0] * (len(s) + 1)
        for k, y in enumerate(s, 1):
            if x == y:
                current[k] = previous[k - 1] + 1
                best = max(best, current[k])
        previous = current
    return best


def answer_support(answer: str, source: str) -> float:
    """1.0 when the answer occurs in the source (case and spacing aside), else the share of its units in it."""
    flat = " ".join(answer.lower().split())
    if not flat or flat in " ".join(source.lower().split()):
        return 1.0
    mine = units(answer)
    present = set(units(source))
    return sum(u in present for u in mine) / len(mine) if mine else 0.0


class PlainBM25:
    """BM25 (bm25s, Lucene, k1=1.2, b=0.75) over the chunks' title and text, tokenized otherwise than the built-in
    one: English lowercased words with no stemming and no stopword removed; Chinese the bigrams of consecutive CJK
    ideographs (single ideographs when alone), Latin words as in English."""

    def __init__(self, corpus: Corpus) -> None:
        import bm25s  # noqa: PLC0415 (the retrieve extra, loaded on use)

        rows = corpus.chunk_records()
        self.ids = np.array([r["_id"] for r in rows])
        tokens = [self.tokens(f"{r['title']} {r['text']}") for r in rows]
        if not any(tokens):
            raise RagMetricsError(NO_WORDS)
        self.model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        self.model.index(tokens, show_progress=False)

    def tokens(self, text: str) -> list[str]:
        words = UNIT.findall(text.lower())  # a text without ideographs (English) is its words, in any corpus
        out: list[str] = []
        run: list[str] = []
        for word in [*words, ""]:
            if HAN_CHARACTER.fullmatch(word):
                run.append(word)
                continue
            out.extend(run if len(run) == 1 else [a + b for a, b in pairwise(run)])
            run = []
            if word:
                out.append(word)
        return out

    def search(self, query: str, k: int, timeout: float | None) -> list[Any]:
        found = [t for t in self.tokens(query) if t in self.model.vocab_dict]
        if not found:
            return []
        scores = np.asarray(self.model.get_scores(found), dtype=np.float64)
        positive = np.flatnonzero(scores > 0)
        order = positive[np.lexsort((self.ids[positive], -scores[positive]))][:k]
        return [Hit(str(self.ids[i]), float(scores[i])) for i in order]


SECOND_RETRIEVERS = {
    "plain": "BM25 over unstemmed words with stopwords kept (Chinese: character bigrams)",
    "variant": f"the built-in BM25 with k1={SECOND_K1} b={SECOND_B}",
    "none": "no second retriever (the miss flag says none confirmed it)",
}
"""The second retrievers :func:`default_retrievers` makes, by name (the CLI's choices come from here)."""


def default_retrievers(corpus: Corpus, second: str = "plain") -> list[tuple[str, Any]]:
    """The built-in BM25 over the corpus's chunks, and the ``second`` of :data:`SECOND_RETRIEVERS`."""
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

    if second not in SECOND_RETRIEVERS:
        raise RagMetricsError(f"second retriever {second!r}: expected one of {', '.join(SECOND_RETRIEVERS)}")
    records = corpus.chunk_records()  # also each chunk's place: its doc_id is the document's
    frame = pd.DataFrame(
        {"doc_id": [r["_id"] for r in records], **{k: [r[k] for r in records] for k in ("title", "text")}}
    )
    found: list[tuple[str, Any]] = [("bm25", BM25.from_documents(frame, language=corpus.language))]
    if second == "variant":
        variant = BM25.from_documents(frame, language=corpus.language, k1=SECOND_K1, b=SECOND_B)
        found.append((f"bm25 k1={SECOND_K1} b={SECOND_B} (a variant of bm25)", variant))
    elif second == "plain":
        found.append(("plain bm25 (unstemmed, stopwords kept)", PlainBM25(corpus)))
    return found


def flag(
    candidates: Sequence[Candidate],
    corpus: Corpus,
    retrievers: Sequence[tuple[str, Any]] = (),
    *,
    copy_run: int = COPY_RUN,
    depth: int = MISS_DEPTH,
) -> list[Candidate]:
    """``candidates`` with the filters' flags added to those they had (see the module). ``retrievers``: ``(name,
    adapter)`` pairs, each with ``search(query, k, timeout)`` over the corpus's chunk ids; none skips the
    retrieval checks."""
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    groups = groups_of(corpus)
    duplicates = duplicate_flags([c.query for c in candidates])
    out = []
    for candidate, found in zip(candidates, duplicates):
        flags = list(candidate.flags) + found
        run = longest_run(candidate.query, candidate.source.text)
        if run >= copy_run:
            flags.append(f"copies the source: a run of {run} words")
        if candidate.category != NEGATIVE and candidate.expected_answer.strip():
            support = answer_support(candidate.expected_answer, candidate.source.text)
            if support < ANSWER_SUPPORT:
                flags.append(f"expected answer not supported by the source: {support:.0%} of its words occur in it")
        if retrievers:
            flags.extend(_retrieval_flags(candidate, corpus, retrievers, texts, depth, groups))
        out.append(replace(candidate, flags=tuple(flags)))
    return out


def _retrieval_flags(
    candidate: Candidate,
    corpus: Corpus,
    retrievers: Sequence[tuple[str, Any]],
    texts: dict[str, str],
    depth: int,
    groups: Groups,
) -> list[str]:
    """``groups``: :func:`ragmetrics.synth.output.groups_of` the corpus, made once."""
    ranked: dict[str, list[str]] = {}
    failed: list[str] = []
    for name, adapter in retrievers:
        try:
            ranked[name] = [h.doc_id for h in adapter.search(candidate.query, depth, None)]
        except Exception as exc:  # a retriever that fails is named in a flag; the candidate is still written
            failed.append(f"not checked by {name}: {type(exc).__name__}: {str(exc)[:120]}")
    if not ranked:
        return failed
    if candidate.category == NEGATIVE:
        keys = [k.lower() for k in candidate.expected_keywords]
        for name, ids in ranked.items():
            for chunk in ids:
                text = texts.get(chunk, "").lower()
                if keys and all(k in text for k in keys):
                    return [*failed, f"answerable? {name} finds chunk {chunk}, which holds all its keywords"]
        return failed
    relevant = set(relevant_docs(candidate, corpus, *groups))
    if any(relevant & set(ids) for ids in ranked.values()):
        return failed
    names = " and ".join(ranked)
    alone = "" if len(ranked) > 1 else " (no second retriever to confirm)"
    return [*failed, f"missed by {names} in the top {depth}{alone}"]
