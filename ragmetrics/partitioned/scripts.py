"""``auto``, the tokenizer of the token budgets, resolved for a partitioned engine by one pass over the runs' texts.

In process, ``auto`` picks jieba when :data:`ragmetrics.engine.tokens.CJK_SHARE` of the non-space characters of the
first :data:`ragmetrics.engine.tokens.CJK_SAMPLE` distinct texts the runs retrieve (in ranking order, the runs
taken in turn) are CJK, else whitespace (:func:`ragmetrics.engine.budgets.shared_tokenizer`). A partitioned engine
never holds that order. But those texts are some of the runs' texts: when every text of every run is on the same
side of the share (each text's CJK characters at least that share of its non-space characters, or each below it;
texts without a non-space character left out), the pooled share of any of them is on that side too, and the pick is
the in-process one whatever the order. :func:`script_sides` tells it for a batch of texts and :func:`pick` for the
batches of every run: files (:func:`file_sides`, their text columns read once) or a user's frames (Polars, Spark);
runs whose texts are on both sides are left undecided (the engine then refuses ``auto``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ragmetrics.engine.tokens import CJK_SHARE
from ragmetrics.foundation import scripts
from ragmetrics.io.columns import resolve
from ragmetrics.partitioned.inputs import Input, open_plain, ragged_record

BATCH_ROWS = 1 << 16


def _re2_class(characters: str) -> str:
    """A character class body of Python's (single characters and ``a-b`` ranges) in RE2's syntax."""
    return "".join(
        "-" if c == "-" and 0 < i < len(characters) - 1 else f"\\x{{{ord(c):x}}}" for i, c in enumerate(characters)
    )


SPACE = r"[\t-\r\x1c-\x1f\x85\p{Z}]"
r"""RE2's class of the characters Python's ``\s`` matches (``str.isspace``: general category Zs, Zl or Zp, or
bidirectional class WS, B or S: the separators and these controls), what :func:`ragmetrics.engine.tokens.cjk_share`
counts as space; ``tests/test_partitioned.py`` checks it over every code point."""


def patterns() -> tuple[str, str]:
    """RE2 patterns of one CJK character (:data:`ragmetrics.foundation.scripts.CJK`) and of one space
    (:data:`SPACE`)."""
    return f"[{_re2_class(scripts.CJK)}]", SPACE


def _text_batches(found: Input) -> Iterator[pa.Array]:
    """The run's text column (``text``/``chunk_text``/``content``) in batches, as text; nothing when it has none."""
    if found.format == "parquet":
        handle = pq.ParquetFile(found.path)
        column = resolve(handle.schema_arrow.names).get("text")
        if column is None:
            return
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=[column]):
            yield batch.column(0)
        return
    if found.format not in ("csv", "tsv"):
        return
    column = resolve(found.columns).get("text")
    if column is None:
        return
    read = pacsv.ReadOptions(column_names=list(found.columns), skip_rows=found.side.header_line or 0)
    parse = pacsv.ParseOptions(delimiter=found.delimiter, quote_char='"', double_quote=True, newlines_in_values=True)
    convert = pacsv.ConvertOptions(
        include_columns=[column], column_types={column: pa.string()}, strings_can_be_null=False
    )
    with open_plain(found.path) as plain, pacsv.open_csv(plain, read, parse, convert) as reader:
        for batch in reader:
            yield batch.column(0)


def script_sides(texts: pa.Array | pa.ChunkedArray) -> tuple[bool, bool]:
    """Whether some of ``texts`` (nulls and texts without a non-space character left out) are at least
    :data:`CJK_SHARE` CJK, and whether some are below it."""
    cjk_pattern, space_pattern = patterns()
    texts = texts.cast(pa.string()).drop_null()
    cjk = pc.count_substring_regex(texts, cjk_pattern)
    chars = pc.subtract(pc.utf8_length(texts), pc.count_substring_regex(texts, space_pattern))
    counted = pc.greater(chars, 0)
    at_least = pc.greater_equal(pc.divide(pc.cast(cjk, pa.float64()), pc.cast(chars, pa.float64())), CJK_SHARE)
    above = bool(pc.any(pc.and_(counted, at_least)).as_py())
    below = bool(pc.any(pc.and_(counted, pc.invert(at_least))).as_py())
    return above, below


def pick(sides: Iterable[tuple[bool, bool]]) -> str | None:
    """The tokenizer ``auto`` picks in process for the runs whose texts' :func:`script_sides` are ``sides`` (read
    until both sides are seen): ``"jieba"`` when every text with a non-space character is at least
    :data:`CJK_SHARE` CJK, ``"whitespace"`` when every one is below it (or there is none); None when the texts are
    on both sides (the pick depends on which texts come first in ranking order)."""
    above = below = False
    for more_above, more_below in sides:
        above, below = above or more_above, below or more_below
        if above and below:
            return None
    return "jieba" if above else "whitespace"


def file_sides(runs: Sequence[Input]) -> Iterator[tuple[bool, bool]] | None:
    """The :func:`script_sides` of the texts of ``runs`` (files of this machine), a batch at a time; None when a run
    is not a file read here. A run Arrow cannot read gives both sides (undecided), or the loader's error for the
    record it refuses."""
    if not all(os.path.isfile(found.path) for found in runs):
        return None
    return _sides_of_files(runs)


def _sides_of_files(runs: Sequence[Input]) -> Iterator[tuple[bool, bool]]:
    for found in runs:
        try:
            for batch in _text_batches(found):
                yield script_sides(batch)
        except (pa.ArrowException, OSError):
            # the loader's error for the record Arrow could not read, as the engine would say it
            said = ragged_record(found)
            if said is not None:
                raise said from None
            yield True, True
