"""From a corpus to flagged candidates: sample sources, generate, flag (:func:`synthesize`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.synth.base import Candidate, Generator
from ragmetrics.synth.corpus import Corpus, sample_sources
from ragmetrics.synth.filters import flag

OVERSAMPLE = 3
"""Sources sampled per requested candidate (a source may give none: no salient sentence, no negative pair)."""


def synthesize(
    corpus: Corpus,
    generator: Generator,
    categories: Mapping[str, int],
    *,
    seed: int = 0,
    retrievers: Sequence[tuple[str, Any]] = (),
) -> list[Candidate]:
    """Candidates for ``categories`` (name -> count) from sources sampled across ``corpus``'s documents, flagged
    (:func:`ragmetrics.synth.filters.flag`); fewer than asked when the corpus runs out of sources
    (:func:`shortfall`)."""
    total = sum(categories.values())
    sources = sample_sources(corpus, total * OVERSAMPLE + 10, seed=seed)
    candidates = list(generator.generate(sources, categories, seed=seed))
    return flag(candidates, corpus, retrievers)


def shortfall(candidates: Sequence[Candidate], categories: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """``{category: (made, asked)}`` of the categories with fewer candidates than asked."""
    made = Counter(c.category for c in candidates)
    return {c: (made[c], n) for c, n in categories.items() if made[c] < n}
