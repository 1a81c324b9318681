"""The one error type ragmetrics raises, and its warning.

Every failure on bad input is a :class:`RagMetricsError`, a ``ValueError``
subclass, so ``except ValueError`` keeps working. Parse errors name the file,
the line, what was expected and what was found.
"""

from __future__ import annotations


class RagMetricsError(ValueError):
    """Bad input or a bad parameter; the message says what and where."""


class ParseError(RagMetricsError):
    """A file could not be read.

    ``str(err)`` reads ``source:line: expected ..., found ...``; ``line`` is
    1-based and ``None`` when the problem is the file as a whole.
    """

    def __init__(self, source: str, line: int | None, expected: str, found: str = "") -> None:
        self.source = source
        self.line = line
        self.expected = expected
        self.found = found
        where = f"{source}:{line}" if line is not None else source
        message = f"{where}: expected {expected}"
        if found:
            message += f", found {found}"
        super().__init__(message)


class FieldError(RagMetricsError):
    """A value of a table is not acceptable (an id that is empty, too long or holds a control character): ``row`` is
    0-based, ``column`` names the field; a loader turns it into a :class:`ParseError` at the row's line."""

    def __init__(self, what: str, row: int, column: str, problem: str) -> None:
        self.row, self.column, self.problem = row, column, problem
        super().__init__(f"{what}: row {row + 1}: the {column} {problem}")


class MetricNameError(RagMetricsError):
    """An unknown or malformed metric name."""


class RagMetricsWarning(UserWarning):
    """Recoverable issues (dropped queries, duplicate rows), one per call with counts."""
