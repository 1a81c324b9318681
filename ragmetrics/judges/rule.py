"""The rule judge: the query's expected answer or keywords, found in the document's text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.judges.base import Grade, Pair


def normalise(text: str) -> str:
    """NFKC, case-folded, runs of whitespace as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def found(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` (both :func:`normalise` d): as whole words where the phrase begins or
    ends with a letter or digit of a spaced script (so ``cat`` is not found in ``category``), as a substring
    otherwise (Chinese and other unspaced scripts)."""
    phrase, text = normalise(phrase), normalise(text)
    if not phrase:
        return False
    start = r"(?<![^\W_])" if _spaced_word(phrase[0]) else ""
    end = r"(?![^\W_])" if _spaced_word(phrase[-1]) else ""
    return re.search(start + re.escape(phrase) + end, text) is not None


def _spaced_word(char: str) -> bool:
    return char.isalnum() and not ("\u2e80" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af")


ONE_WORD_CHARACTERS = 4
"""An answer without spaces of at most this many characters of an unspaced script (Chinese, Japanese, Korean) is one
word, as one without spaces of a spaced script is."""


def one_word(answer: str) -> bool:
    """Whether ``answer`` is a single word (a cloze's blank, a name): no space in it, and, when any of its characters
    is of an unspaced script (``2型糖尿病`` too), at most :data:`ONE_WORD_CHARACTERS` characters."""
    text = normalise(answer)
    unspaced = any(char.isalnum() and not _spaced_word(char) for char in text)
    return bool(text) and " " not in text and (not unspaced or len(text) <= ONE_WORD_CHARACTERS)


BLANK = re.compile(r"_{3,}")
"""A cloze query's blank (``____``)."""


def filled_blank(query: str, answer: str) -> str | None:
    """A cloze ``query`` with its blank filled by ``answer``, with the context the query shows around the blank (after
    the last colon before it: a template's ``Fill in the blank:`` is no context); None for a query without a blank."""
    blank = BLANK.search(query)
    if blank is None or not normalise(answer):
        return None
    left = query[: blank.start()]
    left = left[max(left.rfind(":"), left.rfind("：")) + 1 :]
    return f"{left}{answer}{query[blank.end() :]}"


def _unspaced(text: str) -> str:
    """:func:`normalise` d ``text`` without its white space: a cloze's context matches its passage however the
    blank's answer was spaced there (``每月 6 美元``, a line break)."""
    return "".join(normalise(text).split())


class RuleJudge:
    """Grades by what of the expected answer the document's text holds, on the scale ``0..max``:

    * a cloze query's context with its blank filled by the expected answer (:func:`filled_blank`) found, white space
      aside: ``max`` (the passage the cloze was cut from, or one that says the same);
    * the expected answer found (:func:`found`): ``max``; an answer of one word (:func:`one_word`: a cloze's
      blank, a name), which a document may mention without answering, only with at least half of the query's other
      keywords (and one at least); else such an answer is one more keyword (below);
    * else, with expected keywords, the share ``s`` of them found: for a graded scale (``max >= 2``),
      ``1 + floor(s * (max - 2))`` (every keyword: ``max - 1``) when at least half of them and at least two are found
      (the one keyword of a query that has one), else 0: a single term in common is not relevance (a synthetic
      negative query's two terms, which no chunk holds together, grade 0 everywhere); for a binary scale, 1 when every
      keyword is found, else 0;
    * else (an expected answer, no keyword, not found): 0;
    * a query with neither an expected answer nor keywords: no grade (the rule has nothing to look for).
    """

    name = "rule"
    version = "4"

    def config(self) -> Mapping[str, Any]:
        return {
            "rule": "cloze filled>max; answer>max (one word: with half the other keywords, else a keyword); keyword "
            "share s>=1/2 and two found>1+floor(s*(max-2)); binary: all keywords"
        }

    def grade(self, pairs: Sequence[Pair], max_grade: int) -> list[Grade]:
        return [self.grade_one(pair, max_grade) for pair in pairs]

    @staticmethod
    def grade_one(pair: Pair, max_grade: int) -> Grade:
        keywords = [k for k in pair.expected_keywords if normalise(k)]
        if not normalise(pair.expected_answer) and not keywords:
            return Grade(None, "the query has neither an expected answer nor keywords")
        filled = filled_blank(pair.query, pair.expected_answer)
        if filled is not None and _unspaced(filled) in _unspaced(pair.text):
            return Grade(max_grade)
        if one_word(pair.expected_answer):
            others = [k for k in keywords if normalise(k) != normalise(pair.expected_answer)]
            if (
                found(pair.expected_answer, pair.text)
                and others
                and 2 * sum(found(k, pair.text) for k in others) >= len(others)
            ):
                return Grade(max_grade)
            keywords = [*others, pair.expected_answer]
        elif found(pair.expected_answer, pair.text):
            return Grade(max_grade)
        if not keywords:
            return Grade(0)
        hits = sum(found(k, pair.text) for k in keywords)
        if max_grade == 1:
            return Grade(int(hits == len(keywords)))
        if hits < min(2, len(keywords)) or 2 * hits < len(keywords):
            return Grade(0)
        return Grade(1 + (hits * (max_grade - 2)) // len(keywords))
