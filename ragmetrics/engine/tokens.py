"""Tokenizers: how many tokens a text costs in a model's context, for the token-budget metrics (``recall@512tok``).

A tokenizer is named in every result that reads it. The registry :data:`TOKENIZERS` holds the named ones:
``whitespace`` (``str.split``: runs of whitespace separate tokens), ``jieba`` (jieba's precise mode, the
whitespace-only pieces dropped: Chinese has no spaces between words) and ``mixed`` (whitespace's pieces, one holding
Chinese or Japanese cut by jieba). ``auto``, the default, picks ``jieba`` when at least :data:`CJK_SHARE` of the
texts' non-space characters are Chinese ideographs or Japanese kana (scripts written without spaces between words),
``mixed`` when fewer are but some texts are mostly such (:func:`auto_name`), else ``whitespace`` (Korean, which
spaces its words, included). Names are read in any case. Any callable ``text -> tokens`` (a list of tokens, or their count as an int) plugs in:
``tokenizer=tiktoken.get_encoding("cl100k_base").encode``; it is named by its ``__qualname__``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ragmetrics.foundation import scripts
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning

TokenizerLike = Union[str, Callable[[str], Any], "Tokenizer"]
"""A tokenizer's name (:data:`TOKENIZERS` or ``auto``), a callable ``text -> tokens or count``, or a
:class:`Tokenizer`."""

CJK_SHARE = 0.2
"""``auto`` picks jieba when at least this share of the non-space characters are Chinese ideographs or kana."""

_SPACE = re.compile(r"\s")


@dataclass(frozen=True)
class Tokenizer:
    """A named way of counting a text's tokens: ``count(text)`` is the number of tokens."""

    name: str
    count: Callable[[str], int]
    description: str = ""

    def counts(self, texts: Sequence[str]) -> np.ndarray:
        """The token count of each text, int64 (each distinct text tokenized once)."""
        distinct: dict[str, int] = {}
        out = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            n = distinct.get(text)
            if n is None:
                n = distinct[text] = self._checked(text)
            out[i] = n
        return out

    def _checked(self, text: str) -> int:
        n = self.count(text)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise RagMetricsError(f"tokenizer {self.name!r} gave {n!r} for a text; expected a count >= 0")
        return int(n)


def _whitespace(text: str) -> int:
    return len(text.split())


def _jieba_cut() -> Callable[[str], list[str]]:
    cut: Callable[[str], list[str]] = scripts.quiet_jieba().lcut
    return cut


def _jieba(text: str) -> int:
    return sum(1 for piece in _jieba_cut()(text) if piece.strip())


def _mixed(text: str) -> int:
    return sum(_jieba(piece) if scripts.UNSPACED_CHARACTER.search(piece) else 1 for piece in text.split())


TOKENIZERS: dict[str, Tokenizer] = {
    t.name: t
    for t in (
        Tokenizer("whitespace", _whitespace, "str.split(): runs of whitespace separate tokens"),
        Tokenizer("jieba", _jieba, "jieba's precise mode (lcut), whitespace pieces dropped; for Chinese"),
        Tokenizer(
            "mixed",
            _mixed,
            "str.split(), a piece holding Chinese or Japanese cut by jieba: English counted as whitespace counts it, "
            "Chinese as jieba does; for a corpus of both",
        ),
    )
}
"""The named tokenizers (``auto`` chooses between them by script)."""

TOKENIZER_CHOICES: tuple[str, ...] = ("auto", *TOKENIZERS)


CJK_SAMPLE = 2000
"""``auto`` reads the script of at most this many distinct texts, spread evenly over them (a run sorted by
language is read across, not by its first texts only)."""


def cjk_share(texts: Sequence[str]) -> float:
    """The share of Chinese ideographs and Japanese kana (:data:`ragmetrics.foundation.scripts.UNSPACED`) among
    the texts' non-space characters (0 when there are none), over :data:`CJK_SAMPLE` distinct texts spread evenly
    over them."""
    return _share(_script_counts(texts))


def _script_counts(texts: Sequence[str]) -> list[tuple[int, int]]:
    """``(CJK characters, non-space characters)`` of each of :data:`CJK_SAMPLE` distinct texts spread over ``texts``."""
    return [
        (len(scripts.UNSPACED_CHARACTER.findall(text)), len(text) - len(_SPACE.findall(text)))
        for text in spread(list(dict.fromkeys(texts)), CJK_SAMPLE)
    ]


def _share(counts: Sequence[tuple[int, int]]) -> float:
    chars = sum(c for _, c in counts)
    return sum(k for k, _ in counts) / chars if chars else 0.0


def spread(texts: Sequence[str], count: int) -> list[str]:
    """At most ``count`` of ``texts``, spread evenly over them (all of them when there are no more)."""
    if len(texts) <= count:
        return list(texts)
    return [texts[i] for i in np.linspace(0, len(texts) - 1, count).astype(np.int64).tolist()]


def callable_name(function: Callable[[str], Any]) -> str:
    """The name a callable tokenizer is known by, which tells two tokenizers apart wherever runs must count alike:
    its qualified name; a bound method's with its object's ``name`` (tiktoken's ``Encoding.encode[cl100k_base]``, a
    Hugging Face tokenizer's ``name_or_path``); a lambda's or a local function's with its address (two lambdas share
    the name ``<lambda>`` and count differently)."""
    name = str(getattr(function, "__qualname__", None) or type(function).__name__)
    owner = getattr(function, "__self__", None)
    label = next(
        (getattr(owner, a) for a in ("name", "name_or_path") if isinstance(getattr(owner, a, None), str)), None
    )
    if label:
        return f"{name}[{label}]"
    if "<" in name:  # <lambda>, f.<locals>.g: not unique
        return f"{name} at {id(function):#x}"
    return name


def _callable(function: Callable[[str], Any]) -> Tokenizer:
    """A callable's tokens counted: an int is the count, any other iterable but text is the tokens."""
    name = callable_name(function)

    def count(text: str) -> int:
        tokens = function(text)
        if isinstance(tokens, (int, np.integer)) and not isinstance(tokens, bool):
            return int(tokens)
        if isinstance(tokens, Iterable) and not isinstance(tokens, (str, bytes, Mapping)):
            return len(tokens) if isinstance(tokens, Sized) else sum(1 for _ in tokens)
        encoding = (
            " (a Hugging Face tokenizer's call gives a mapping: pass its .encode)"
            if isinstance(tokens, Mapping)
            else ""
        )
        raise RagMetricsError(
            f"tokenizer {name!r} gave {type(tokens).__name__} {str(tokens)[:40]!r} for a text; expected a list of "
            f"tokens or their count as an int{encoding}"
        )

    return Tokenizer(name, count, "a callable given by the caller")


class UnfitTokenizerWarning(RagMetricsWarning):
    """A tokenizer asked for that does not fit the texts (:func:`resolve`): said even where the coverage notes are
    held back (the CLI prints those itself)."""


def auto_name(texts: Sequence[str]) -> str:
    """The tokenizer ``auto`` picks for ``texts``: ``jieba`` when at least :data:`CJK_SHARE` of their characters are
    Chinese ideographs or kana; ``mixed`` when fewer are but at least
    :data:`ragmetrics.foundation.scripts.MIXED_SHARE` of the texts are mostly
    such (English pages with a few Chinese ones: whitespace would count a Chinese page as a few tokens); else
    ``whitespace``."""
    counts = _script_counts(texts)  # one reading of the sample: the whole's share, then each text's
    if _share(counts) >= CJK_SHARE:
        return "jieba"
    written = [(cjk, chars) for cjk, chars in counts if chars]
    unspaced = sum(cjk >= CJK_SHARE * chars for cjk, chars in written)
    return "mixed" if unspaced and unspaced >= scripts.MIXED_SHARE * len(written) else "whitespace"


def resolve(tokenizer: TokenizerLike, texts: Sequence[str]) -> Tokenizer:
    """The :class:`Tokenizer` that ``tokenizer`` names for ``texts`` (``auto``: by their script). ``whitespace``
    asked for texts ``auto`` would give ``jieba`` is warned of: their whitespace tokens are whole phrases."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if callable(tokenizer):
        return _callable(tokenizer)
    tokenizer = str(tokenizer).lower()  # named as metrics are, in any case
    if tokenizer == "auto":
        return TOKENIZERS[auto_name(texts)]
    found = TOKENIZERS.get(tokenizer)
    if found is None:
        raise RagMetricsError(
            f"unknown tokenizer {tokenizer!r}; expected one of {', '.join(TOKENIZER_CHOICES)} or a callable "
            "text -> tokens"
        )
    if found.name == "whitespace" and (share := cjk_share(texts)) >= CJK_SHARE:
        warnings.warn(
            f"tokenizer whitespace: {share:.0%} of the texts' characters are Chinese or Japanese, written without "
            "spaces between words, so a whitespace token is a whole phrase or sentence and a token budget counts "
            "few of them; the tokenizer jieba (or auto, which picks it here) counts words",
            UnfitTokenizerWarning,
            stacklevel=2,
        )
    return found


def check(tokenizer: Any) -> TokenizerLike:
    """``tokenizer`` if it can name a tokenizer (a known name, a callable, a :class:`Tokenizer`), else a clear error."""
    if isinstance(tokenizer, Tokenizer) or callable(tokenizer):
        return tokenizer
    if isinstance(tokenizer, str) and tokenizer.lower() in TOKENIZER_CHOICES:
        return tokenizer.lower()
    raise RagMetricsError(
        f"unknown tokenizer {tokenizer!r}; expected one of {', '.join(TOKENIZER_CHOICES)} or a callable text -> tokens"
    )
