"""What every generator takes and gives: :class:`Source` passages in, :class:`Candidate` queries out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragmetrics.foundation.model import NEGATIVE

DEFAULT_CATEGORIES = ("factual", "reasoning", "summary", "procedural", NEGATIVE)


@dataclass(frozen=True)
class Source:
    """One passage a candidate is written from: a chunk of a document (the whole document when the corpus is
    taken as given), its character span ``[start, end)`` in the text of ``spans_in`` (the corpus record it was cut
    from: ``doc_id`` unless a parent separator grouped records under another document id), and its language
    (``en``, ``zh``)."""

    doc_id: str
    chunk_id: str
    text: str
    start: int
    end: int
    language: str
    spans_in: str | None = None

    def span(self, start: int = 0, end: int | None = None) -> str:
        """A candidate's ``source_span`` provenance, ``record[start:end]`` in the characters of the corpus record
        it was cut from (``record`` an id of the corpus: :attr:`spans_in`, else ``doc_id``): the passage's characters
        ``start:end`` (default: all of it)."""
        record = self.spans_in or self.doc_id
        return f"{record}[{self.start + start}:{self.start + (len(self.text) if end is None else end)}]"


@dataclass(frozen=True)
class Candidate:
    """A candidate query, before review. ``provenance`` names the generator, its prompt version, the seed and
    the source span; ``flags`` are the filters' findings the reviewer sees (a candidate is never dropped
    silently). A ``negative`` candidate is one the corpus cannot answer: its ``source`` is the passage it was
    written beside, and it has no relevant documents."""

    query: str
    expected_answer: str
    expected_keywords: tuple[str, ...]
    category: str
    difficulty: str
    source: Source
    provenance: Mapping[str, str]
    flags: tuple[str, ...] = field(default=())


class Generator(Protocol):
    """Writes candidates from sources, ``categories[c]`` of each category ``c``, deterministic for a seed."""

    name: str

    def generate(
        self, sources: Sequence[Source], categories: Mapping[str, int], *, seed: int
    ) -> Iterator[Candidate]: ...
