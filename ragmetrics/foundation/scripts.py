"""Which characters are Chinese, Japanese or Korean, in one place: the tokenizers, the built-in BM25, the
generators, the diagnosis and the dashboard's highlighting all read these; and jieba, the Chinese word cutter,
quieted (:func:`quiet_jieba`).

The two patterns are compiled on first use: ``re`` lays out a character class of tens of thousands of code points
one by one, several milliseconds each, and most commands (``ragmetrics eval`` on an English run) never read them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Chinese ideographs (CJK unified, extension A, compatibility), as the body of a character class."""

CJK = HAN + "\u3040-\u30ff\uac00-\ud7af"
"""Chinese ideographs, Japanese kana and Korean hangul, as the body of a character class."""

UNSPACED = HAN + "\u3040-\u30ff"
"""Chinese ideographs and Japanese kana: scripts written without spaces between words (Korean puts spaces
between its words), as the body of a character class."""

MIXED_SHARE = 0.02
"""Texts are read as of both scripts (English and Chinese: BM25's mixed mode, the tokenizer ``mixed``) when the fewer
of their English and Chinese texts, each by its own share of CJK, are at least this share of them (a few Chinese
pages among English ones)."""

_CLASSES = {"HAN_CHARACTER": HAN, "CJK_CHARACTER": CJK, "UNSPACED_CHARACTER": UNSPACED}

HAN_CHARACTER: re.Pattern[str]
"""One Chinese ideograph."""

CJK_CHARACTER: re.Pattern[str]
"""One Chinese ideograph, Japanese kana or Korean hangul."""

UNSPACED_CHARACTER: re.Pattern[str]
"""One Chinese ideograph or Japanese kana."""


def __getattr__(name: str) -> re.Pattern[str]:
    body = _CLASSES.get(name)
    if body is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    pattern = globals()[name] = re.compile(f"[{body}]")
    return pattern


def quiet_jieba() -> Any:
    """The jieba module, imported on first use (Python keeps it, so later calls cost a lookup), its logger silenced:
    its "Building prefix dict" chatter goes to stderr otherwise. Every user of jieba takes it from here."""
    import jieba  # noqa: PLC0415 (optional and slow to import: only Chinese text needs it)

    jieba.setLogLevel(60)
    return jieba


def jieba_word_tags() -> Mapping[str, str]:
    """jieba's dictionary of words and their part-of-speech tags (``jieba.posseg``'s, ICTCLAS's tag set: ``n`` noun,
    ``m`` numeral, ``p`` preposition, ...), loaded on first use. A word jieba's HMM made up (a name, or a word
    run into its neighbour) is not in it."""
    quiet_jieba()
    import jieba.posseg  # noqa: PLC0415 (optional and slow to import: only Chinese text needs it)

    tags: Mapping[str, str] = jieba.posseg.dt.word_tag_tab
    return tags
