"""Text helpers for showing user-supplied strings safely, and document text with the query's evidence marked.

Everything shown here is user content (queries, answers, documents, ids): :func:`md_escape` for Markdown,
:func:`highlight_markdown` for a passage with marks. The latter escapes every Markdown character of the text first
and adds only Streamlit's own colours (``:green-background[:green[...]]``), so nothing a document holds
becomes markup, a link, a formula or a script, and no HTML is allowed: a page of marked passages does not load the
browser's HTML-in-Markdown code, and the marks take the theme's own shades, light or dark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragmetrics.foundation.numbers import signed as signed_number
from ragmetrics.foundation.scripts import CJK_CHARACTER, quiet_jieba

# every ASCII character Markdown or Streamlit reads as markup: emphasis, code, links, headings (a line of '=' under
# a line makes it one), lists, tables, HTML, character references ('&'), formulas ('$'), directives and icons (':')
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=])")
_LINE_BLANKS = re.compile(r"[ \t]*\n[ \t]*")

__all__ = [
    "HIGHLIGHT_LEGEND",
    "MARK_COLOURS",
    "MAX_PASSAGE",
    "Marks",
    "from_before",
    "highlight_markdown",
    "md_escape",
    "query_terms",
    "signed",
    "snippet",
]


_AUTOLINK = re.compile(r"(?i)(?<!\w)(?:(https?|ftp)(?=://)|(ww)(?=w\.))")
WORD_JOINER = "\u2060"
"""An invisible character that joins what it stands between: inside ``https://`` or ``www.`` it keeps the Markdown
renderer from making a link of an address, which in Chinese text, with no space after it, swallows the words that
follow (no escape does: the renderer links the text after escapes are read)."""


def _unlinked(text: str) -> str:
    """``text`` with :data:`WORD_JOINER` inside every ``http(s)://``, ``ftp://`` and ``www.``."""
    return _AUTOLINK.sub(lambda m: m.group() + WORD_JOINER, text)


def md_escape(text: object) -> str:
    """Escape Markdown (and the HTML-ish ``<``/``>``) so user text renders literally in ``st.markdown``, an address
    shown as text, not made a link (:func:`_unlinked`)."""
    return _MD_SPECIAL.sub(r"\\\1", _unlinked(str(text))).replace("\n", "  \n")


SENTENCE_END = re.compile(r"[.!?。！？\n]")


def from_before(text: str, needle: str, lead: int = 300) -> tuple[str, int]:
    """``text`` from a sentence's start about ``lead`` characters before ``needle``'s first occurrence, with the
    offset it starts at (0, the whole text, when the needle is near the start or absent): a box of fixed height
    then shows the needle without scrolling."""
    at = text.find(needle) if needle else -1
    if at <= lead:
        return text, 0
    ends = [m.end() for m in SENTENCE_END.finditer(text, 0, at - lead)]
    start = ends[-1] if ends else at - lead
    return "… " + text[start:].lstrip(), start


def snippet(text: object, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- marking the evidence in a passage -----------------------------------------------------

MARK_COLOURS: dict[str, tuple[str, str]] = {
    "answer": ("expected answer", "green"),
    "keyword": ("expected keyword", "orange"),
    "query": ("query term", "blue"),
}
"""Kind -> (what it marks, Streamlit's colour for it: the text and its background, drawn in the theme's shades).
Earlier kinds win where marks overlap."""

MAX_PASSAGE = 4000
"""Characters of a passage shown (the rest is cut with "…")."""


def _mark(colour: str, markdown: str) -> str:
    """``markdown`` in ``colour`` on its background (Streamlit's background alone is too pale to find at a glance)."""
    return f":{colour}-background[:{colour}[{markdown}]]"


HIGHLIGHT_LEGEND = " ".join(_mark(colour, what) for what, colour in MARK_COLOURS.values())
"""The marks' colours, for a caption next to marked passages (Markdown)."""

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset((
    "the", "and", "for", "are", "was", "were", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "does", "did", "do", "with", "from", "that", "this", "these", "those", "into", "onto", "about",
    "than", "then", "there", "their", "they", "them", "its", "it's", "has", "have", "had", "not", "but", "can",
    "could", "would", "should", "will", "may", "might", "been", "being", "our", "your", "you", "his", "her",
    "she", "him"
))  # fmt: skip


@dataclass(frozen=True)
class Marks:
    """What to mark in a passage: the expected answer, the expected keywords, and words of the query."""

    answer: str = ""
    keywords: Sequence[str] = ()
    query: str = ""


def query_terms(query: str, text: str, *, min_cjk: int = 2, min_latin: int = 3) -> list[str]:
    """Words of ``query`` that ``text`` contains: Latin words of at least ``min_latin`` letters (not stop words),
    and for Chinese, Japanese or Korean (no spaces between words) the longest runs of whole words of the query (as
    jieba cuts it) found in the text, of at least ``min_cjk`` characters: never a piece that straddles two of the
    query's words (和数 of 字母和数字, found in 和数据库)."""
    haystack = text.casefold()
    found: list[str] = []
    for word in _WORD.findall(query):
        if CJK_CHARACTER.search(word):
            found += _longest_runs(quiet_jieba().lcut(word), haystack, min_cjk)
        elif len(word) >= min_latin and word.casefold() not in _STOP and word.casefold() in haystack:
            found.append(word)
    return list(dict.fromkeys(found))


def _longest_runs(words: Sequence[str], haystack: str, shortest: int) -> list[str]:
    """From the first of ``words``, greedily, the longest runs of consecutive words, joined, that ``haystack``
    (casefolded) contains and that hold at least ``shortest`` characters; a word no such run starts at is skipped.

    A run in the haystack has every shorter run in it too, so where the longest run from ``i`` ends never moves
    back as ``i`` moves on: one end pointer serves every start, and the words are scanned once (about two
    containment checks per word) instead of trying every run of them."""
    pieces: list[str] = []
    n, i, end = len(words), 0, 0
    while i < n:
        end = max(end, i)
        while end < n and "".join(words[i : end + 1]).casefold() in haystack:
            end += 1
        run = "".join(words[i:end])
        if len(run) >= shortest:
            pieces.append(run)
            i = end
        else:
            i += 1
    return pieces


def _spans(text: str, terms: Iterable[str], *, whole_words: bool = False) -> list[tuple[int, int]]:
    spans = []
    for term in terms:
        term = term.strip()
        if not term:
            continue
        pattern = re.escape(term)
        if whole_words and not CJK_CHARACTER.search(term):
            pattern = rf"(?<!\w){pattern}(?!\w)"
        spans += [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return spans


def _escaped(text: str) -> str:
    """Text as Markdown that reads back as itself: every special character escaped, ``:`` written as a character
    reference (after an escaped ``\\:`` Streamlit would not read the next mark's ``:`` as the start of a mark)."""
    return _MD_SPECIAL.sub(lambda m: "&#58;" if m.group() == ":" else "\\" + m.group(), _unlinked(text))


def highlight_markdown(text: object, marks: Marks | None = None, *, limit: int = MAX_PASSAGE) -> str:
    """``text`` as Markdown with the expected answer, the keywords and the query's words marked in Streamlit's
    colours (:data:`MARK_COLOURS`), cut at ``limit`` characters. Every special character of the text
    is escaped, so it can hold no markup; line breaks stay line breaks (a mark never spans one), and each line's
    leading blanks are dropped (four would start a code block), as HTML would collapse them."""
    raw = str(text or "").replace("\r\n", "\n").replace("\r", "\n")
    cut = len(raw) > limit
    raw = _LINE_BLANKS.sub("\n", raw[:limit]).strip()
    marks = marks or Marks()
    owner = [""] * len(raw)  # which kind marks each character (the first kind to claim it)
    claims = {
        "answer": _spans(raw, [marks.answer]),
        "keyword": _spans(raw, marks.keywords),
        "query": _spans(raw, query_terms(marks.query, raw), whole_words=True) if marks.query else [],
    }
    for kind in MARK_COLOURS:
        for start, end in claims[kind]:
            for i in range(start, end):
                if not owner[i]:
                    owner[i] = kind
    pieces: list[str] = []
    i = 0
    while i < len(raw):
        j = i
        while j < len(raw) and owner[j] == owner[i]:
            j += 1
        kind = owner[i]
        lines = [_escaped(line) for line in raw[i:j].split("\n")]
        if kind:
            colour = MARK_COLOURS[kind][1]
            lines = [_mark(colour, line) if line else line for line in lines]
        pieces.append("  \n".join(lines))
        i = j
    body = "".join(pieces) + ("…" if cut else "")
    return body or "*(no text)*"


def signed(value: float) -> str:
    """A difference with its sign, to 3 decimals (:func:`ragmetrics.foundation.numbers.signed`: a non-zero one never
    reads ``+0.000``)."""
    return signed_number(value)
