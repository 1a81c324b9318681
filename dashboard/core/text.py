"""Text helpers for showing user-supplied strings safely, and document text with the query's evidence marked.

Everything shown here is user content (queries, answers, documents, ids): :func:`md_escape` for Markdown,
:func:`highlight_html` for a passage with marks. The latter escapes the text as HTML first and adds only its own
``<mark>`` and ``<br>`` tags, all in one HTML block on one line (no blank line, so Markdown never resumes inside
it): nothing a document holds becomes markup, a link, a formula or a script.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragmetrics.foundation.numbers import signed as signed_number
from ragmetrics.foundation.scripts import CJK_CHARACTER

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
# HTML's special characters and Markdown's (as md_escape's, less '.'), each written as a character reference
_HTML_SPECIAL = re.compile(r"[&<>\"'\\`*_{}\[\]()#+\-!|~$:]")
_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}  # as html.escape writes them

__all__ = [
    "HIGHLIGHT_LEGEND",
    "MARK_STYLES",
    "MAX_PASSAGE",
    "Marks",
    "highlight_html",
    "md_escape",
    "query_terms",
    "signed",
    "snippet",
]


def md_escape(text: object) -> str:
    """Escape Markdown (and the HTML-ish ``<``/``>``) so user text renders literally in ``st.markdown``."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", "  \n")


def snippet(text: object, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- marking the evidence in a passage -----------------------------------------------------

MARK_STYLES: dict[str, tuple[str, str]] = {
    "answer": ("expected answer", "background-color:#b7ebc6;color:inherit;padding:0 2px;border-radius:3px"),
    "keyword": ("expected keyword", "background-color:#ffe58f;color:inherit;padding:0 2px;border-radius:3px"),
    "query": ("query term", "background-color:#d6e4ff;color:inherit;padding:0 2px;border-radius:3px"),
}
"""Kind -> (what it marks, inline style). Earlier kinds win where marks overlap."""

MAX_PASSAGE = 4000
"""Characters of a passage shown (the rest is cut with "…")."""

HIGHLIGHT_LEGEND = (
    "<div>" + " ".join(f'<mark style="{style}">{what}</mark>' for what, style in MARK_STYLES.values()) + "</div>"
)
"""The marks' colours, for a caption next to marked passages (static HTML)."""

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
    and for Chinese, Japanese or Korean (no spaces between words) the longest runs of at least ``min_cjk``
    characters of the query found in the text."""
    haystack = text.casefold()
    found: list[str] = []
    for word in _WORD.findall(query):
        if CJK_CHARACTER.search(word):
            found += _longest_runs(word, haystack, min_cjk)
        elif len(word) >= min_latin and word.casefold() not in _STOP and word.casefold() in haystack:
            found.append(word)
    return list(dict.fromkeys(found))


def _longest_runs(word: str, haystack: str, shortest: int) -> list[str]:
    """From the start of ``word``, greedily, the longest pieces of at least ``shortest`` characters that
    ``haystack`` (casefolded) contains; a character no such piece starts at is skipped.

    A piece of ``word`` in the haystack has every shorter piece in it too, so where the longest piece from ``i``
    ends never moves back as ``i`` moves on: one end pointer serves every start, and the word is scanned once
    (about two containment checks per character) instead of trying every substring of it."""
    pieces: list[str] = []
    n, i, end = len(word), 0, 0
    while i < n:
        end = max(end, i)
        while end < n and word[i : end + 1].casefold() in haystack:
            end += 1
        if end - i >= shortest:
            pieces.append(word[i:end])
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


def _as_html(text: str) -> str:
    """Text as HTML character data: escaped, and Markdown's and Streamlit's special characters written as numeric
    character references (so even a renderer that read Markdown inside HTML would see only characters)."""
    # one pass: escaping first and then writing '#' as a reference would break the references just written
    # (an apostrophe's &#x27; showed as the text "&#x27;")
    return _HTML_SPECIAL.sub(lambda m: _NAMED.get(m.group()) or f"&#{ord(m.group())};", text).replace("\n", "<br>")


def highlight_html(text: object, marks: Marks | None = None, *, limit: int = MAX_PASSAGE) -> str:
    """``text`` as one line of safe HTML with the expected answer, the keywords and the query's words marked
    (``<mark>``; see :data:`MARK_STYLES`), line breaks as ``<br>``, cut at ``limit`` characters. For
    ``st.markdown(..., unsafe_allow_html=True)``: the text itself is escaped, so it can hold no tag."""
    raw = str(text or "").replace("\r\n", "\n").replace("\r", "\n")
    cut = len(raw) > limit
    raw = raw[:limit]
    marks = marks or Marks()
    owner = [""] * len(raw)  # which kind marks each character (the first kind to claim it)
    claims = {
        "answer": _spans(raw, [marks.answer]),
        "keyword": _spans(raw, marks.keywords),
        "query": _spans(raw, query_terms(marks.query, raw), whole_words=True) if marks.query else [],
    }
    for kind in MARK_STYLES:
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
        part = _as_html(raw[i:j])
        kind = owner[i]
        pieces.append(f'<mark style="{MARK_STYLES[kind][1]}">{part}</mark>' if kind else part)
        i = j
    body = "".join(pieces) + ("…" if cut else "")
    return f'<div style="white-space:normal;line-height:1.6">{body or "<em>(no text)</em>"}</div>'


def signed(value: float) -> str:
    """A difference with its sign, to 3 decimals (:func:`ragmetrics.foundation.numbers.signed`: a non-zero one never
    reads ``+0.000``)."""
    return signed_number(value)
