"""A corpus to write queries from: read, chunked with a named chunker, and sampled across documents.

Inputs (:func:`read_documents`): whatever :func:`ragmetrics.io.corpus.read_corpus` reads, as ``eval --corpus`` and
``retrieve --corpus`` read it (a JSONL of objects, BEIR's ``corpus.jsonl`` among them; a folder of ``.md`` /
``.txt`` files), so the set's ids are the ones a retriever over the same corpus returns.

Chunkers (:data:`CHUNKERS`), named in every candidate's provenance:

* ``none``: each document as given, one chunk whose id is the document id (a corpus already chunked, such as
  CMRC's ``DEV_0_C0``);
* ``words:SIZE:OVERLAP`` (``words`` is ``words:200:50``): windows of ``SIZE`` units, each starting ``SIZE -
  OVERLAP`` units after the previous, a unit being a word (a run of letters/digits) or one CJK ideograph; a chunk's
  text is the document's text from its first unit to its last and the punctuation right after it (a sentence's
  period, ``。``, a closing bracket), so its span ``[start, end)`` is exact, and its id is
  ``<doc_id>#<n>`` (``n`` from 0; ``--chunk-pattern '#'`` maps it back to its document).

Sampling (:func:`sample_sources`) is stratified across documents: documents are shuffled by the seed and each gives
one chunk in turn (its own chunks shuffled by the seed too), so ``n`` sources come from ``min(n, documents)``
documents, never from the first file only.
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragmetrics.engine.health import NUMBERING_SEPARATORS
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import repeats_title
from ragmetrics.foundation.scripts import HAN
from ragmetrics.io.corpus import read_corpus
from ragmetrics.io.source import names_of
from ragmetrics.retrieve.bm25 import detect_language
from ragmetrics.synth.base import Source

UNIT = re.compile(f"[{HAN}]|[^\\W_{HAN}]+")
"""A unit of text: one CJK ideograph, or a run of other letters and digits (a word)."""
PUNCTUATION_AFTER = re.compile(r"[^\w\s]*")
"""What a chunk keeps after its last unit: the punctuation that ends it (no space, no word)."""


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """The documents, their chunks (in document order), the chunker that made them and the corpus language."""

    documents: tuple[Document, ...]
    chunks: tuple[Source, ...]
    chunker: str
    language: str

    @property
    def rechunked(self) -> bool:
        """True when chunk ids are not the corpus's own ids (a chunker cut the documents): a retriever must then
        index :meth:`chunk_records` for the set's judgments to name what it returns."""
        own = {d.doc_id for d in self.documents}
        return any(c.chunk_id not in own for c in self.chunks)

    def chunks_of(self) -> dict[str, list[Source]]:
        """Each document's chunks, in order."""
        out: dict[str, list[Source]] = {}
        for chunk in self.chunks:
            out.setdefault(chunk.doc_id, []).append(chunk)
        return out

    def chunk_records(self) -> list[dict[str, Any]]:
        """The chunks as a BEIR corpus (``_id``, ``title``, ``text``; the documents' titles kept) that is also their
        chunk spans (``chunk_id``, ``doc_id``, ``start``, ``end``: the characters of the document's text the chunk
        holds), so the one file serves ``retrieve --corpus`` and ``evidence --chunk-spans``. A chunk that begins
        with its document's title as the document's heading (:func:`ragmetrics.foundation.model.repeats_title`) is
        written without it: its text holds it once."""
        documents = {d.doc_id: d for d in self.documents}
        return [
            {
                "_id": c.chunk_id,
                "title": _chunk_title(documents.get(c.doc_id), c.text),
                "text": c.text,
                "chunk_id": c.chunk_id,
                "doc_id": c.spans_in or c.doc_id,
                "start": c.start,
                "end": c.end,
            }
            for c in self.chunks
        ]


def _chunk_title(document: Document | None, text: str) -> str:
    """The title a chunk record carries: its document's, unless the document's text holds the title as its heading
    and the chunk's ``text`` begins with it (the title is then in the text once)."""
    if document is None or not document.title:
        return ""
    held = repeats_title(document.title, document.text)
    return "" if held and text.lstrip().lstrip("#").lstrip().startswith(document.title) else document.title


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "mixed": "English and Chinese"}


def read_documents(path: str | Path) -> list[Document]:
    """The documents of the corpus at ``path``, read as every command reads a corpus
    (:func:`ragmetrics.io.corpus.read_corpus`: a JSONL of objects, gzipped or not, or a folder of .md/.txt files)."""
    frame = read_corpus(str(path))
    return [Document(d, t, x) for d, t, x in zip(frame["doc_id"], frame["title"], frame["text"])]


# --------------------------------------------------------------------------
# chunking
# --------------------------------------------------------------------------
def _as_given(doc: Document, language: str) -> list[Source]:
    return [Source(doc.doc_id, doc.doc_id, doc.text, 0, len(doc.text), language)] if doc.text.strip() else []


def word_windows(size: int, overlap: int, spec: str | None = None) -> Callable[[Document, str], list[Source]]:
    """The ``words:SIZE:OVERLAP`` chunker (see the module); ``spec``: what the user gave, echoed in an error."""
    wrong = ""
    if size < 1:
        wrong = f"SIZE {size} is below 1"
    elif overlap < 0:
        wrong = f"OVERLAP {overlap} is below 0"
    elif overlap >= size:
        wrong = f"OVERLAP {overlap} is not below SIZE {size}"
    if wrong:
        given = spec if spec is not None else f"words:{size}:{overlap}"
        raise RagMetricsError(
            f"chunker {given!r}: {wrong}; expected words:SIZE:OVERLAP, SIZE >= 1, 0 <= OVERLAP < SIZE"
        )

    def chunk(doc: Document, language: str) -> list[Source]:
        units = [m.span() for m in UNIT.finditer(doc.text)]
        out: list[Source] = []
        step = size - overlap
        for n, first in enumerate(range(0, max(len(units) - overlap, 1), step)):
            window = units[first : first + size]
            if not window:
                break
            trailing = PUNCTUATION_AFTER.match(doc.text, window[-1][1])
            start, end = window[0][0], trailing.end() if trailing else window[-1][1]
            out.append(Source(doc.doc_id, f"{doc.doc_id}#{n}", doc.text[start:end], start, end, language))
        return out

    return chunk


CHUNKERS: dict[str, str] = {
    "none": "each document as given, one chunk",
    "words": "windows of SIZE words (a CJK ideograph is a word), OVERLAP shared: words:SIZE:OVERLAP, default 200:50",
}
"""The chunkers by name, with what they do (the ``--chunker`` help is made from this)."""


def chunker(spec: str) -> tuple[str, Callable[[Document, str], list[Source]]]:
    """The chunker a spec names (``none``, ``words``, ``words:SIZE:OVERLAP``) and its full, stated name."""
    name, _, rest = spec.strip().partition(":")
    if name == "none" and not rest:
        return "none", _as_given
    if name == "words":
        parts = rest.split(":") if rest else ["200", "50"]
        expected = "expected words:SIZE:OVERLAP (whole numbers, OVERLAP 0 when left out)"
        if len(parts) > 2:
            raise RagMetricsError(f"chunker {spec!r}: {len(parts)} numbers given; {expected}")
        numbers = []
        for part in parts:
            try:
                numbers.append(int(part))
            except ValueError:
                raise RagMetricsError(f"chunker {spec!r}: {part!r} is not a whole number; {expected}") from None
        size, overlap = (numbers + [0])[:2]
        return f"words:{size}:{overlap}", word_windows(size, overlap, spec)
    raise RagMetricsError(f"chunker {spec!r}: expected one of none, words, words:SIZE:OVERLAP")


def load_corpus(
    path: str | Path, *, chunking: str = "none", language: str = "auto", parent_separator: str | None = None
) -> Corpus:
    """Read and chunk a corpus; ``language`` ``auto`` is chosen by the texts' CJK share (as the built-in BM25 does).
    ``parent_separator`` (chunker ``none`` only): the corpus is already chunked and a chunk's document is its id
    before the last occurrence of the separator (CMRC's ``DEV_0_C1``: ``_C``), so its sibling chunks are known."""
    return make_corpus(read_texts(path), chunking=chunking, language=language, parent_separator=parent_separator)


def read_texts(path: str | Path) -> list[Document]:
    """:func:`read_documents`, refused when no document has a text (the documents :func:`load_corpus` chunks)."""
    documents = read_documents(path)
    if not any(f"{d.title}{d.text}".strip() for d in documents):
        raise RagMetricsError(f"{path}: no document has a text to write queries from")
    return documents


def make_corpus(
    documents: Sequence[Document],
    *,
    chunking: str = "none",
    language: str = "auto",
    parent_separator: str | None = None,
) -> Corpus:
    if language not in ("auto", "en", "zh"):
        raise RagMetricsError(f"language {language!r}: expected auto, en or zh")
    detected, cjk_share = detect_language([f"{d.title} {d.text}" for d in documents], mixed=True)
    if language == "auto":
        language = detected
    elif detected == "mixed":
        warnings.warn(
            f"language {language}: the corpus holds English and Chinese documents; {LANGUAGE_NAMES[language]} tokens "
            "of the others make poor queries and keywords (auto reads each document in its own)",
            RagMetricsWarning,
            stacklevel=2,
        )
    elif language != detected:
        warnings.warn(
            f"language {language}: the corpus reads as {LANGUAGE_NAMES[detected]} (a CJK share of {cjk_share:.0%} of "
            f"its letters); {LANGUAGE_NAMES[language]} tokens of it make poor queries and keywords (auto chooses "
            f"{detected})",
            RagMetricsWarning,
            stacklevel=2,
        )
    name, cut = chunker(chunking)
    chunks = [c for d in documents for c in cut(d, _own_language(d) if language == "mixed" else language)]
    if parent_separator:
        if name != "none":
            raise RagMetricsError("a parent separator groups a corpus taken as given: use it with the chunker none")
        chunks = [replace(c, doc_id=_parent(c.chunk_id, parent_separator), spans_in=c.doc_id) for c in chunks]
        name = f"none (documents grouped by the last {parent_separator!r} of their ids)"
    if not chunks:
        raise RagMetricsError("the corpus has no text to write queries from")
    if parent_separator and not any(parent_separator in c.chunk_id for c in chunks):
        raise RagMetricsError(
            f"parent separator {parent_separator!r}: no document id holds it ({names_of([d.doc_id for d in documents[:3]])}"
            f"{', ...' if len(documents) > 3 else ''}): every chunk would be its own document"
        )
    return Corpus(tuple(documents), tuple(chunks), name, language)


def _own_language(document: Document) -> str:
    """A document's own language, in a mixed corpus (as the built-in BM25 reads each document of one)."""
    return detect_language([f"{document.title} {document.text}"])[0]


def _parent(chunk_id: str, separator: str) -> str:
    head, sep, _ = chunk_id.rpartition(separator)
    return head if sep and head else chunk_id


# --------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------
def sample_sources(corpus: Corpus, n: int, *, seed: int) -> list[Source]:
    """``n`` chunks stratified across documents, deterministic for ``seed`` (see the module); fewer when the corpus
    has fewer chunks."""
    rng = random.Random(seed)
    groups = list(corpus.chunks_of().values())
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    out: list[Source] = []
    depth = 0
    while len(out) < n:
        layer = [g[depth] for g in groups if depth < len(g)]
        if not layer:
            break
        out.extend(layer[: n - len(out)])
        depth += 1
    return out


def chunk_numbering(ids: Sequence[str]) -> str | None:
    """The separator after which most of ``ids`` number the chunks of a document (CMRC's ``DEV_0_C1`` after
    ``_C``): at least half the ids end with it and a number, and some document has two chunks or more; None when
    none does."""
    for sep in NUMBERING_SEPARATORS:
        numbered = [i.rsplit(sep, 1) for i in ids if sep in i and i.rsplit(sep, 1)[1].isdigit()]
        groups = {head for head, _ in numbered}
        if numbered and 2 * len(numbered) >= len(ids) and len(groups) < len(numbered):
            return sep
    return None
