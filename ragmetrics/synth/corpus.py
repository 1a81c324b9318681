"""A corpus to write queries from: read, chunked with a named chunker, and sampled across documents.

Inputs (:func:`read_corpus`):

* a BEIR ``corpus.jsonl`` (gzipped or not) (``_id``/``id``, ``title``, ``text``), read by :func:`ragmetrics.io.beir.read_corpus`;
* any other JSONL of objects: the id is the first of ``_id``, ``id``, ``doc_id``, ``docid`` (else ``line<N>``), the
  text the first of :data:`ragmetrics.io.beir.DOC_TEXT_KEYS`, the title ``title``;
* a folder of ``.md`` / ``.txt`` files (searched recursively, sorted): the id is the file's path relative to the
  folder, the title its first Markdown heading (else the file name); each file UTF-8 (or UTF-16 with its byte-order
  mark), a file of other bytes refused with its name and line.

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

from ragmetrics.engine.health import NUMBERING_SEPARATORS
from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.scripts import HAN
from ragmetrics.io._json import first_record, records
from ragmetrics.io.beir import DOC_ID_KEYS, DOC_TEXT_KEYS
from ragmetrics.io.beir import read_corpus as read_beir_corpus
from ragmetrics.io.source import Source as SourceFile
from ragmetrics.io.source import names_of, open_source, shorten
from ragmetrics.retrieve.bm25 import detect_language
from ragmetrics.synth.base import Source

FOLDER_SUFFIXES = (".md", ".txt")
UNIT = re.compile(f"[{HAN}]|[^\\W_{HAN}]+")
"""A unit of text: one CJK ideograph, or a run of other letters and digits (a word)."""
PUNCTUATION_AFTER = re.compile(r"[^\w\s]*")
"""What a chunk keeps after its last unit: the punctuation that ends it (no space, no word)."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


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

    def chunk_records(self) -> list[dict[str, str]]:
        """The chunks as a BEIR corpus (``_id``, ``title``, ``text``), the documents' titles kept."""
        titles = {d.doc_id: d.title for d in self.documents}
        return [{"_id": c.chunk_id, "title": titles.get(c.doc_id, ""), "text": c.text} for c in self.chunks]


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


def read_documents(path: str | Path) -> list[Document]:
    """The documents of a BEIR corpus.jsonl, a JSONL of objects or a folder of .md/.txt files (see the module);
    a file may be gzipped."""
    where = Path(path)
    if where.is_dir():
        return _folder(where)
    if not where.exists():
        raise RagMetricsError(f"{path}: no such corpus file or folder")
    source = open_source(str(where))
    first = first_record(source)
    if isinstance(first, dict) and any(k in first for k in DOC_ID_KEYS) and "text" in first:
        frame = read_beir_corpus(source)
        return [Document(str(d), str(t), str(x)) for d, t, x in zip(frame["doc_id"], frame["title"], frame["text"])]
    return _generic_jsonl(source)


def _generic_jsonl(source: SourceFile) -> list[Document]:
    out: list[Document] = []
    seen: set[str] = set()
    for line_no, _n, record in records(source):
        if not isinstance(record, dict):
            raise ParseError(source.name, line_no, "a JSON object", type(record).__name__)
        text = next((record[k] for k in DOC_TEXT_KEYS if isinstance(record.get(k), str)), None)
        if text is None:
            raise ParseError(
                source.name, line_no, f"a text under one of {', '.join(DOC_TEXT_KEYS)}", f"keys {names_of(record)}"
            )
        raw_id = next((record[k] for k in DOC_ID_KEYS if record.get(k) is not None), None)
        doc_id = str(raw_id).strip() if raw_id is not None else f"line{line_no}"
        if doc_id in seen:
            raise ParseError(source.name, line_no, "each document id once", f"{shorten(doc_id)} again")
        seen.add(doc_id)
        out.append(Document(doc_id, str(record.get("title") or ""), text))
    if not out:
        raise ParseError(source.name, None, "at least one document", "none")
    return out


def _folder(root: Path) -> list[Document]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES)
    if not files:
        raise RagMetricsError(f"{root}: no {' or '.join(FOLDER_SUFFIXES)} file in the folder")
    out = []
    for file in files:
        text = open_source(str(file)).text()  # UTF-8 (or UTF-16 with its mark), else refused at the line
        heading = _HEADING.search(text) if file.suffix.lower() == ".md" else None
        out.append(Document(file.relative_to(root).as_posix(), heading.group(1) if heading else file.stem, text))
    return out


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
    detected, cjk_share = detect_language([f"{d.title} {d.text}" for d in documents])
    if language == "auto":
        language = detected
    elif language != detected:
        warnings.warn(
            f"language {language}: the corpus reads as {LANGUAGE_NAMES[detected]} (a CJK share of {cjk_share:.0%} of "
            f"its letters); {LANGUAGE_NAMES[language]} tokens of it make poor queries and keywords (auto chooses "
            f"{detected})",
            RagMetricsWarning,
            stacklevel=2,
        )
    name, cut = chunker(chunking)
    chunks = [c for d in documents for c in cut(d, language)]
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
