"""The extractive generator: candidate queries cut from the sources' own words, no model needed.

Term statistics are the corpus's chunks': a term's document frequency ``df`` over the ``N`` chunks gives its IDF
``log(1 + (N - df + 0.5) / (df + 0.5))``. Terms: English words of three or more letters/digits, lowercased, with a
letter and not among bm25s' longer English stopword list (NLTK's); Chinese: jieba's words of two or more characters
not among bm25s' Chinese stopwords (function words such as 一些, 不是, 因为; Latin words as in English), nor tagged by jieba's dictionary
as a word that names nothing (:data:`NOT_CONTENT_TAGS`: 一批, 第四名), nor made up by jieba's HMM with a function
word at its edge (:data:`FUNCTION_EDGE_TAGS`: 以雷纳 of 以雷纳·库尔特·萨克斯, 存于 of 母树存于增城). A term in more than :data:`COMMON_SHARE` of the chunks is never a keyword. A source's *salient
sentence* is the one whose three rarest terms have the highest IDF sum (sentences of 6 to 80 words, or 10 to 200
characters in Chinese), among the sentences the chunk holds whole (sentences of its prose: :func:`prose_blocks`, no
heading, table or code); a sentence its edge cuts only when it holds none.

Categories it writes (:data:`CATEGORIES`):

* ``factual``: a known-item query naming 2 to 5 of the salient sentence's rarest terms (drawn by the seed), the
  sentence as the expected answer, the terms as the keywords;
* ``cloze``: the rarest of the salient sentence's three rarest terms that its shown context does not repeat (none:
  no cloze) blanked out, shown with at most :data:`CLOZE_CONTEXT` words of context each side (in Chinese, whole
  words as jieba cuts them within :data:`CLOZE_CONTEXT_CHARACTERS` characters, never part of one); the term is the
  expected answer;
* ``summary``: the passage's three rarest terms, asking for what it says about them; the passage's first two
  sentences stand in for a summary (a lead, not a summary: the weakest of the four);
* ``negative``: the rarest term of the source and of a passage of another document, asked about together, written
  only when no chunk holds both (checked on the term postings); no relevant documents, an empty expected answer.

It cannot write ``reasoning`` or ``procedural`` queries (they need the meaning of the text, not its words: use a
model generator), and every query it writes shares its words with the source, so a lexical retriever finds them
more easily than it finds a user's question. ``difficulty`` is from how much of the source's salient vocabulary
the query names: the IDF mass of the query's terms found in the source over that of the source's ten rarest terms
(at least 0.5: easy, at least 0.25: medium, else hard); a negative query's from how many chunks hold either term
(at most 2: easy, at most 10: medium, else hard).
"""

from __future__ import annotations

import bisect
import math
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.scripts import HAN_CHARACTER, jieba_word_tags, quiet_jieba
from ragmetrics.synth.base import Candidate, Source
from ragmetrics.synth.corpus import UNIT, Corpus

CATEGORIES = ("factual", "cloze", "summary", "negative")
CANNOT = ("reasoning", "procedural")
PROMPT_VERSION = "extractive-1"
COMMON_SHARE = 0.05
CLOZE_CONTEXT = 6
CLOZE_CONTEXT_CHARACTERS = 10
"""In Chinese, the context each side of the blank: whole words (as jieba cuts them) within this many characters,
under the 12 consecutive source characters that flag a query as copying its source."""
NOT_CONTENT_TAGS = frozenset(
    {"m", "mq", "q", "p", "c", "d", "r", "y", "e", "o", "x", "u", "uj", "ul", "uz", "uv", "ud", "ug"}
)
"""jieba's part-of-speech tags of a word that is never a keyword: numerals and measure words, prepositions,
conjunctions, adverbs, pronouns, particles, interjections, onomatopoeia, non-words."""
FUNCTION_EDGE_TAGS = frozenset({"p", "c", "d", "r", "u", "uj", "ul", "uz", "uv", "ud", "ug"})
"""The tags of a one-character word (于, 以, 和, 却, 其, 的) that a word jieba's HMM made up does not begin or end with:
it ran a function word into its neighbour."""
BLANK = "____"
TEMPLATES = {
    "en": {
        "factual": "What is known about {terms}?",
        "cloze": "Fill in the blank: {text}",
        "summary": "Summarise what the text says about {terms}.",
        "negative": "How is {a} related to {b}?",
        "and": " and ",
        "sep": ", ",
    },
    "zh": {
        "factual": "关于{terms}有什么信息？",
        "cloze": "填空：{text}",
        "summary": "概述文中关于{terms}的内容。",
        "negative": "{a}和{b}有什么关系？",
        "and": "和",
        "sep": "、",
    },
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'\u3400-\u9fff])|(?<=[。！？；])")
_LATIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ENDS_SENTENCE = re.compile(r"[.!?。！？；][\"'”’)\]]*\s*$")
"""Text that ends a sentence (its closing quotes or brackets and white space after it)."""
_SENTENCE_END_NEXT = re.compile(r"[\"'”’)\]]*[.!?。！？；]")
"""Text that begins with a sentence's end (the punctuation a chunk that ends at a word leaves after it)."""


_PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t]*\r?\n")
"""A blank line: a paragraph ends there (a single line break may only wrap a sentence)."""


def _begins_sentence(document: str, start: int) -> bool:
    """Whether a chunk starting at ``start`` of ``document`` starts a sentence: nothing but white space before it, a
    blank line or a Markdown heading's line before it, or a sentence's end (a lone line break may wrap a sentence)."""
    at = start
    while at > 0 and document[at - 1].isspace():
        at -= 1
    if at == 0 or _PARAGRAPH_BREAK.search(document, at, start):
        return True
    if "\n" in document[at:start]:
        line = document[document.rfind("\n", 0, at) + 1 : at]
        if line.lstrip().startswith("#"):
            return True
    return _ENDS_SENTENCE.search(document, max(0, at - 8), at) is not None


def _ends_sentence(document: str, end: int) -> bool:
    """Whether a chunk ending at ``end`` of ``document`` ends a sentence: its text ends with a sentence's end, one
    follows (a chunk that ends at a word), a blank line or a Markdown heading follows, or no word of the document
    does."""
    if _ENDS_SENTENCE.search(document, max(0, end - 8), end) or _SENTENCE_END_NEXT.match(document, end):
        return True
    at = end
    while at < len(document) and document[at].isspace():
        at += 1
    if _PARAGRAPH_BREAK.search(document, end, at) or ("\n" in document[end:at] and document.startswith("#", at)):
        return True
    return UNIT.search(document, at) is None


@dataclass(frozen=True, slots=True)
class Term:
    surface: str
    key: str
    start: int
    end: int


def stopwords() -> frozenset[str]:
    """bm25s' longer English list (NLTK's 179 function words: ``any``, ``most``, ``during``, where its BM25 list has
    Lucene's 33) and its Chinese stopwords (no word is in both): a keyword names something."""
    import bm25s.stopwords  # noqa: PLC0415 (the retrieve extra, loaded on use)

    return frozenset(bm25s.stopwords.STOPWORDS_EN_PLUS) | frozenset(bm25s.stopwords.STOPWORDS_CHINESE)


MARKUP = re.compile(
    r"<!--.{0,200}?-->|<![A-Za-z][^<>]{0,200}>"
    r"|</?[A-Za-z][\w:.-]*(?:\s+[A-Za-z_:][\w:.-]*\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s\"'<>=]+)){0,20}\s*/?>",
    re.DOTALL,
)
"""An HTML or XML tag a corpus kept (``<br clear="all">``, ``</p>``, ``<!-- -->``): its words are no terms. Every
attribute of a tag must have a value, so that "x<y and z>w" is text (a tag's bare attributes, as in ``<input
disabled>``, are rare in a corpus and common in text that compares)."""


def tokenize(text: str, language: str, stop: frozenset[str]) -> list[Term]:
    """The content terms of ``text`` with their spans (see the module), none inside markup (:data:`MARKUP`)."""
    if "<" in text:
        text = MARKUP.sub(lambda m: " " * len(m.group()), text)  # blanked, so the terms keep their offsets
    out: list[Term] = []
    if language == "zh":
        tags = jieba_word_tags()
        for word, start, end in quiet_jieba().tokenize(text):
            if HAN_CHARACTER.search(word):
                if len(word) >= 2 and word not in stop and _names_something(word, tags):
                    out.append(Term(word, word, start, end))
            elif len(word) >= 3 and any(ch.isalpha() for ch in word) and word.lower() not in stop:
                out.append(Term(word, word.lower(), start, end))
        return out
    for m in _LATIN_WORD.finditer(text):
        word = m.group()
        if len(word) >= 3 and any(ch.isalpha() for ch in word) and word.lower() not in stop:
            out.append(Term(word, word.lower(), m.start(), m.end()))
    return out


def _names_something(word: str, tags: Mapping[str, str]) -> bool:
    """Whether a Chinese word of jieba's can be a keyword (see the module)."""
    tag = tags.get(word)
    if tag is not None:
        return tag not in NOT_CONTENT_TAGS
    return tags.get(word[0]) not in FUNCTION_EDGE_TAGS and tags.get(word[-1]) not in FUNCTION_EDGE_TAGS


def _word_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s words as jieba cuts them (white space left out)."""
    return [(start, end) for word, start, end in quiet_jieba().tokenize(text) if word.strip()]


def _cut_from_a_word(text: str, start: int, end: int, neighbour: int) -> bool:
    """Whether ``text[start:end]``, a word jieba cut at a context's edge, is one ideograph joined to the ideograph at
    ``neighbour``, just outside the context: the end of a longer word (``器`` of ``验证器``) or its start."""
    return (
        end - start == 1
        and bool(HAN_CHARACTER.match(text[start]))
        and 0 <= neighbour < len(text)
        and bool(HAN_CHARACTER.match(text[neighbour]))
    )


def _words_before(text: str, start: int, end: int) -> str:
    """The words of ``text[start:end]`` nearest its end, whole, within :data:`CLOZE_CONTEXT_CHARACTERS` characters
    (at least one word), as written; not from a lone ideograph the cut left of a longer word
    (:func:`_cut_from_a_word`) while another word is kept."""
    spans = _word_spans(text[start:end])
    kept = [(a, b) for a, b in spans if end - (start + a) <= CLOZE_CONTEXT_CHARACTERS] or spans[-1:]
    if len(kept) > 1 and _cut_from_a_word(text, start + kept[0][0], start + kept[0][1], start + kept[0][0] - 1):
        kept = kept[1:]
    return text[start + kept[0][0] : end].lstrip() if kept else ""


def _without_loose_punctuation(left: str, right: str) -> tuple[str, str]:
    """A cloze's context without the punctuation its cut left loose: a comma or a closing mark it begins with
    (``，第一子、第二子都____``), a comma or an opening mark it ends with (``____ 2010》（``)."""
    start = 0
    while start < len(left) and (left[start].isspace() or unicodedata.category(left[start]) in ("Po", "Pe", "Pf")):
        start += 1
    end = len(right)
    while end > 0 and (right[end - 1].isspace() or unicodedata.category(right[end - 1]) in ("Po", "Ps", "Pi")):
        end -= 1
    return left[start:], right[:end]


def _words_after(text: str, start: int, end: int) -> str:
    """The words of ``text[start:end]`` nearest its start, whole, within :data:`CLOZE_CONTEXT_CHARACTERS`
    characters (at least one word), as written; not up to a lone ideograph the cut left of a longer word while
    another word is kept."""
    spans = _word_spans(text[start:end])
    kept = [(a, b) for a, b in spans if b <= CLOZE_CONTEXT_CHARACTERS] or spans[:1]
    if len(kept) > 1 and _cut_from_a_word(text, start + kept[-1][0], start + kept[-1][1], start + kept[-1][1]):
        kept = kept[:-1]
    return text[start : start + kept[-1][1]].rstrip() if kept else ""


_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
"""A Markdown code fence's opening (or closing) line."""
_HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_TABLE_LINE = re.compile(r"[ \t]*\|")
_INDENTED_CODE = re.compile(r"(?: {4}|\t)")
"""A line of an indented code block (four spaces or a tab), where no paragraph is open for it to continue."""
_ITEM_MARKER = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)]|>)[ \t]+")
"""A list item's or a quote's marker: an item starts a block of its own, its marker left out."""


def prose_blocks(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that hold prose, the blocks no sentence runs out of: a blank line ends one, and so does a
    Markdown heading's line, a table's row and a code block (fenced, or indented where no paragraph is open: none of
    them is prose); a list item or a quote starts one, without its marker. Line ends may be Windows' too."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    fence: str | None = None
    at = 0
    for line in text.split("\n"):
        content = line.rstrip("\r")
        opening = _FENCE.match(content)
        if (
            fence is not None
            or opening
            or not content.strip()
            or _HEADING_LINE.match(content)
            or _TABLE_LINE.match(content)
        ):
            if start is not None:
                blocks.append((start, end))
                start = None
            if fence is not None:
                fence = None if content.strip().startswith(fence) else fence
            elif opening:
                fence = opening.group(1)
        elif start is None and _INDENTED_CODE.match(content):
            pass  # an indented code block: no paragraph open that the line could continue
        else:
            item = _ITEM_MARKER.match(content)
            if item:
                if start is not None:
                    blocks.append((start, end))
                start = at + item.end()
            elif start is None:
                start = at
            end = at + len(content)
        at += len(line) + 1
    if start is not None:
        blocks.append((start, end))
    return blocks


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``: ends at . ! ? and spaces before a capital, a digit or an ideograph, and at
    。！？；, within the prose blocks of :func:`prose_blocks` (a heading's title, a code block or a table is no
    answer: the sentences around them are)."""
    return [span for a, b in prose_blocks(text) for span in _sentences_in(text, a, b)]


def one_block(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies within one prose block (:func:`prose_blocks`)."""
    return any(a <= start and end <= b for a, b in prose_blocks(text))


def _sentences_in(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """The sentence spans of ``text[start:stop]``, a block no sentence runs out of, as offsets of ``text``."""
    spans = []
    for m in _SENTENCE_END.finditer(text, start, stop):
        if m.end() > start:
            spans.append((start, m.start() if m.start() > start else m.end()))
            start = m.end()
    spans.append((start, stop))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


RECENT_TERMS = 64
"""How many sources' terms :class:`TermStats` keeps (a candidate reads its source's several times)."""


class TermStats:
    """Chunk frequencies of the corpus's terms, and the postings (which chunks hold a term). A chunk's terms are not
    kept (a term of every word of a corpus is many times its text); a source's are read again when asked for, the
    last :data:`RECENT_TERMS` sources' kept."""

    def __init__(self, corpus: Corpus) -> None:
        self.stop = stopwords()
        self.postings: dict[str, set[int]] = {}
        for i, chunk in enumerate(corpus.chunks):
            keys = {t.key for t in tokenize(chunk.text, chunk.language, self.stop)}  # a mixed corpus: each in its own
            for key in keys:
                self.postings.setdefault(key, set()).add(i)
        self.n = len(corpus.chunks)
        self.common = max(2.0, COMMON_SHARE * self.n)
        self._recent: dict[tuple[str, str], list[Term]] = {}

    def idf(self, key: str) -> float:
        df = len(self.postings.get(key, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def keyword(self, key: str) -> bool:
        return len(self.postings.get(key, ())) <= self.common

    def rarest(self, terms: Sequence[Term], count: int) -> list[Term]:
        """The ``count`` rarest distinct keywords among ``terms`` (ties: first occurrence)."""
        seen: dict[str, Term] = {}
        for term in terms:
            if term.key not in seen and self.keyword(term.key):
                seen[term.key] = term
        return sorted(seen.values(), key=lambda t: (-self.idf(t.key), t.start))[:count]

    def terms_of(self, source: Source) -> list[Term]:
        key = (source.text, source.language)
        found = self._recent.get(key)
        if found is None:
            found = tokenize(source.text, source.language, self.stop)
            if len(self._recent) >= RECENT_TERMS:
                del self._recent[next(iter(self._recent))]
            self._recent[key] = found
        return found


class ExtractiveGenerator:
    """See the module. ``corpus``: the chunks the term statistics (and the negative check) are made over."""

    name = "extractive"
    categories = CATEGORIES

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.stats = TermStats(corpus)
        self.documents = {d.doc_id: d.text for d in corpus.documents}
        self._salient_of: dict[tuple[str, int, int], tuple[int, int, list[Term]] | None] = {}

    def whole_sentences(self, source: Source) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The sentence spans of ``source``'s text in two lists: those its chunk holds whole, and the one or two its
        edges cut (a chunk that begins or ends inside a sentence of its document). An expected answer is a whole
        sentence where the chunk holds one, a fragment only where a small chunk holds none."""
        spans = sentences(source.text)
        document = self.documents.get(source.spans_in or source.doc_id)  # the record its offsets are in
        whole = spans
        if spans and document is not None:
            if not _begins_sentence(document, source.start):
                whole = whole[1:]
            if whole and not _ends_sentence(document, source.end):
                whole = whole[:-1]
        return whole, [span for span in spans if span not in whole]

    def generate(self, sources: Sequence[Source], categories: Mapping[str, int], *, seed: int) -> Iterator[Candidate]:
        unknown = [c for c in categories if c not in CATEGORIES]
        if unknown:
            raise RagMetricsError(
                f"the extractive generator writes {', '.join(CATEGORIES)} queries, not {', '.join(unknown)}"
                + (" (they need a model: --generator model)" if set(unknown) & set(CANNOT) else "")
            )
        rng = random.Random(seed)
        wanted = Counter({c: n for c, n in categories.items() if n > 0})
        # the categories take the sources in turn, so each category's sources are spread over the documents
        pending = [c for c in CATEGORIES if wanted[c]]
        turn = 0
        for source in sources:
            if not pending:
                return
            for step in range(len(pending)):
                category = pending[(turn + step) % len(pending)]
                made = self._one(category, source, sources, rng, seed)
                if made is None:
                    continue
                wanted[category] -= 1
                place = pending.index(category)
                if wanted[category]:
                    turn = place + 1
                else:
                    pending.remove(category)
                    turn = place
                yield made
                break
            if pending:
                turn %= len(pending)

    # ---------------------------------------------------------------- one candidate
    def _salient(self, source: Source) -> tuple[int, int, list[Term]] | None:
        """The source's salient sentence (see the module) and its terms; found once a source (a factual query and
        a cloze of one chunk read the same)."""
        key = (source.chunk_id, source.start, source.end)
        if key not in self._salient_of:
            whole, cut = self.whole_sentences(source)
            self._salient_of[key] = self._most_salient(source, whole) or self._most_salient(source, cut)
        return self._salient_of[key]

    def _most_salient(self, source: Source, spans: Sequence[tuple[int, int]]) -> tuple[int, int, list[Term]] | None:
        terms = self.stats.terms_of(source)  # in text order: a sentence's terms are found by bisection
        starts = [t.start for t in terms]
        best: tuple[float, int, int, list[Term]] | None = None
        for a, b in spans:
            size = (b - a) if source.language == "zh" else len(_LATIN_WORD.findall(source.text[a:b]))
            low, high = (10, 200) if source.language == "zh" else (6, 80)
            if not low <= size <= high:
                continue
            inside = [t for t in terms[bisect.bisect_left(starts, a) : bisect.bisect_left(starts, b)] if t.end <= b]
            top = self.stats.rarest(inside, 3)
            if len(top) < 2:
                continue
            score = sum(self.stats.idf(t.key) for t in top)
            if best is None or score > best[0]:
                best = (score, a, b, inside)
        return None if best is None else (best[1], best[2], best[3])

    @staticmethod
    def _joined(words: Sequence[str], templates: Mapping[str, str]) -> str:
        if len(words) == 1:
            return words[0]
        return templates["sep"].join(words[:-1]) + templates["and"] + words[-1]

    def _difficulty(self, source: Source, named: Sequence[str]) -> str:
        top = self.stats.rarest(self.stats.terms_of(source), 10)
        whole = sum(self.stats.idf(t.key) for t in top)
        present = {t.key for t in self.stats.terms_of(source)}
        share = sum(self.stats.idf(k) for k in set(named) if k in present) / whole if whole else 0.0
        return "easy" if share >= 0.5 else "medium" if share >= 0.25 else "hard"

    def _candidate(
        self,
        category: str,
        source: Source,
        seed: int,
        query: str,
        answer: str,
        keywords: Sequence[str],
        difficulty: str,
        span: tuple[int, int],
        **extra: str,
    ) -> Candidate:
        provenance = {
            "generator": self.name,
            "prompt_version": PROMPT_VERSION,
            "seed": str(seed),
            "chunker": self.corpus.chunker,
            "chunk_id": source.chunk_id,
            "source_span": source.span(*span),
            **extra,
        }
        return Candidate(query, answer, tuple(keywords), category, difficulty, source, provenance)

    def _one(
        self, category: str, source: Source, sources: Sequence[Source], rng: random.Random, seed: int
    ) -> Candidate | None:
        text = source.text
        if category == "factual":
            found = self._salient(source)
            if found is None:
                return None
            a, b, inside = found
            count = rng.randint(2, 5)
            pool = self.stats.rarest(inside, count + 2)
            picked = sorted(rng.sample(pool, min(count, len(pool))), key=lambda t: t.start)
            if len(picked) < 2:
                return None
            words = [t.surface for t in picked]
            query = TEMPLATES[source.language]["factual"].format(terms=self._joined(words, TEMPLATES[source.language]))
            difficulty = self._difficulty(source, [t.key for t in picked])
            return self._candidate(category, source, seed, query, text[a:b], words, difficulty, (a, b))
        if category == "cloze":
            found = self._salient(source)
            if found is None:
                return None
            a, b, inside = found
            for blank in self.stats.rarest(inside, 3):  # a term the context shows again would give itself away
                if source.language == "zh":
                    left = _words_before(text, a, blank.start)
                    right = _words_after(text, blank.end, b)
                else:
                    left = " ".join(text[a : blank.start].split()[-CLOZE_CONTEXT:])
                    right = " ".join(text[blank.end : b].split()[:CLOZE_CONTEXT])
                if blank.surface.casefold() not in f"{left} {right}".casefold():
                    break
            else:
                return None
            left, right = _without_loose_punctuation(left, right)
            if source.language == "en":  # the blank joined to what the source joins it to (``____-factor``)
                before = "" if blank.start > a and not text[blank.start - 1].isspace() else " "
                after = "" if blank.end < b and not text[blank.end].isspace() else " "
                shown = f"{left}{before}{BLANK}{after}{right}".strip()
            else:
                shown = f"{left}{BLANK}{right}"
            query = TEMPLATES[source.language]["cloze"].format(text=shown)
            difficulty = self._difficulty(source, [t.key for t in tokenize(shown, source.language, self.stats.stop)])
            return self._candidate(category, source, seed, query, blank.surface, [blank.surface], difficulty, (a, b))
        if category == "summary":
            top = sorted(self.stats.rarest(self.stats.terms_of(source), 3), key=lambda t: t.start)
            whole, cut = self.whole_sentences(source)
            spans = whole or sorted(cut)
            if len(top) < 2 or not spans:
                return None
            lead = spans[:2] if len(spans) > 1 and one_block(text, spans[0][0], spans[1][1]) else spans[:1]
            words = [t.surface for t in top]
            query = TEMPLATES[source.language]["summary"].format(terms=self._joined(words, TEMPLATES[source.language]))
            span = (lead[0][0], lead[-1][1])
            answer = text[span[0] : span[1]]
            difficulty = self._difficulty(source, [t.key for t in top])
            return self._candidate(category, source, seed, query, answer, words, difficulty, span)
        return self._negative(source, sources, rng, seed)

    def _negative(self, source: Source, sources: Sequence[Source], rng: random.Random, seed: int) -> Candidate | None:
        mine = self.stats.rarest(self.stats.terms_of(source), 3)
        others = [s for s in sources if s.doc_id != source.doc_id]
        if not mine or not others:
            return None
        for partner in rng.sample(others, min(5, len(others))):
            theirs = self.stats.rarest(self.stats.terms_of(partner), 3)
            for x in mine:
                for y in theirs:
                    if x.key == y.key:
                        continue
                    together = self.stats.postings.get(x.key, set()) & self.stats.postings.get(y.key, set())
                    if together:
                        continue
                    either = len(self.stats.postings.get(x.key, set()) | self.stats.postings.get(y.key, set()))
                    difficulty = "easy" if either <= 2 else "medium" if either <= 10 else "hard"
                    query = TEMPLATES[source.language]["negative"].format(a=x.surface, b=y.surface)
                    return self._candidate(
                        "negative",
                        source,
                        seed,
                        query,
                        "",
                        [x.surface, y.surface],
                        difficulty,
                        (x.start, x.end),
                        partner_chunk_id=partner.chunk_id,
                        negative_check="no chunk holds both terms",
                    )
        return None
