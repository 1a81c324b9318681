"""The one error type ragmetrics raises, and its warning.

Every failure on bad input is a :class:`RagMetricsError`, a ``ValueError``
subclass, so ``except ValueError`` keeps working. Parse errors name the file,
the line, what was expected and what was found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RagMetricsError(ValueError):
    """Bad input or a bad parameter; the message says what and where."""


class ParseError(RagMetricsError):
    """A file could not be read.

    ``str(err)`` reads ``source:line: expected ..., found ... (first on line N)``; ``line`` is 1-based and ``None``
    when the problem is the file as a whole; ``first_line``, of a value given twice, is the line of its first
    occurrence.
    """

    def __init__(
        self, source: str, line: int | None, expected: str, found: str = "", *, first_line: int | None = None
    ) -> None:
        self.source = source
        self.line = line
        self.expected = expected
        self.found = found
        self.first_line = first_line
        where = f"{source}:{line}" if line is not None else source
        message = f"{where}: expected {expected}"
        if found:
            message += f", found {found}"
        if first_line is not None:
            message += f" (first on line {first_line})"
        super().__init__(message)

    def __reduce__(self):  # picklable (a worker process's error reaches the caller whole) despite the keyword
        return (_parse_error, (self.source, self.line, self.expected, self.found, self.first_line))

    def said_of(self, source: str, line_of: Callable[[int], int | None]) -> ParseError:
        """The same error said of the file ``source`` a part of which was read: ``line_of`` maps the part's line
        numbers to the file's (None: not found there)."""
        line = None if self.line is None else line_of(self.line)
        if self.first_line is None:
            return ParseError(source, line, self.expected, self.found)
        first = line_of(self.first_line)
        if first is None:
            return ParseError(source, line, self.expected, f"{self.found} (first on another line)")
        return ParseError(source, line, self.expected, self.found, first_line=first)


SOURCE_METADATA = b"source"
"""The key of a table's schema metadata that names the file its rows were read from (their lines in its ``line``
column), so a later check can say where a bad row came from."""


def source_of(table: Any) -> str | None:
    """The file an Arrow table's rows were read from (:data:`SOURCE_METADATA`), None when it does not say."""
    metadata = getattr(getattr(table, "schema", None), "metadata", None) or {}
    value = metadata.get(SOURCE_METADATA)
    return value.decode("utf-8", "replace") if value else None


def _parse_error(source: str, line: int | None, expected: str, found: str, first_line: int | None) -> ParseError:
    return ParseError(source, line, expected, found, first_line=first_line)


class FieldError(RagMetricsError):
    """A value of a table is not acceptable (an id that is empty, too long or holds a control character): ``row`` is
    0-based, ``column`` names the field; a loader turns it into a :class:`ParseError` at the row's line."""

    def __init__(self, what: str, row: int, column: str, problem: str) -> None:
        self.row, self.column, self.problem = row, column, problem
        super().__init__(f"{what}: row {row + 1}: the {column} {problem}")


class MetricNameError(RagMetricsError):
    """An unknown or malformed metric name."""


class NoTextError(RagMetricsError):
    """A metric counts the tokens of the retrieved texts and neither run ``run`` nor the dataset holds them (a
    caller that knows where the texts come from says so in its own words)."""

    def __init__(self, run: str, message: str) -> None:
        self.run = run
        super().__init__(message)


class RagMetricsWarning(UserWarning):
    """Recoverable issues (dropped queries, duplicate rows), one per call with counts."""
