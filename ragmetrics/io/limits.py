"""Limits on what one input file may hold, checked before the work they bound.

* ``max_bytes``: the size of one input once decompressed (a gzip member, a
  zip member, a Parquet file's declared data). Decompression streams and stops
  at the cap, so a gzip or zip bomb never inflates into memory.
* ``max_ratio``: how many times larger than its compressed form an input may
  grow once past :data:`RATIO_FLOOR` (64 MiB): a second guard against
  bombs that stay under ``max_bytes``. Real runs and qrels compress 3-15x.
* ``max_rows``: data rows of one file (non-blank lines of a text table, JSON
  records, retrieved items of a nested JSONL run, Parquet rows, judgments).
  Text formats are checked by counting line breaks before parsing.
* ``max_queries``: distinct queries of one run or dataset.
* ``max_id_bytes``: the longest query or document id (UTF-8 bytes); ids are also refused when empty or when they
  hold a control character (NUL, a line break, ...), naming the file and line.
* ``max_text_bytes``: the longest text field (UTF-8 bytes): a query, an expected answer or keyword, a document's
  title or text, a run's chunk text.
* ``max_answer_bytes``: the longest answer of a registered endpoint (a retriever's, a model's), read in slices
  and refused once past it (:func:`capped_bytes`), never held whole first.

The defaults take a 1M-query x 100-document run from the command line; a
server taking uploads sets tighter ones (``Limits(max_bytes=..., ...)`` passed
as ``limits=`` to the loaders, or the environment variables
``RAGMETRICS_MAX_BYTES``, ``RAGMETRICS_MAX_ROWS``, ``RAGMETRICS_MAX_QUERIES``,
``RAGMETRICS_MAX_RATIO``, ``RAGMETRICS_MAX_ID_BYTES``, ``RAGMETRICS_MAX_TEXT_BYTES``,
``RAGMETRICS_MAX_ANSWER_BYTES``; sizes accept ``K``/``M``/``G`` suffixes, powers of
1024, and ``_`` or ``,`` separators).

Exceeding a limit raises :class:`LimitError`, a
:class:`~ragmetrics.foundation.errors.ParseError` whose message reads
``run.trec has 12,000,001 rows; the limit is 10,000,000 (RAGMETRICS_MAX_ROWS)``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ragmetrics.foundation.errors import ParseError, RagMetricsError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

#: below this many decompressed bytes the compression ratio is not checked
RATIO_FLOOR = 64 * MiB

ENV_VARS: dict[str, str] = {
    "max_bytes": "RAGMETRICS_MAX_BYTES",
    "max_rows": "RAGMETRICS_MAX_ROWS",
    "max_queries": "RAGMETRICS_MAX_QUERIES",
    "max_ratio": "RAGMETRICS_MAX_RATIO",
    "max_id_bytes": "RAGMETRICS_MAX_ID_BYTES",
    "max_text_bytes": "RAGMETRICS_MAX_TEXT_BYTES",
    "max_answer_bytes": "RAGMETRICS_MAX_ANSWER_BYTES",
}

_SUFFIXES = {"": 1, "K": KiB, "KB": KiB, "KIB": KiB, "M": MiB, "MB": MiB, "MIB": MiB, "G": GiB, "GB": GiB, "GIB": GiB}
_NUMBER = re.compile(r"\s*([0-9][0-9_,]*)\s*([A-Za-z]*)\s*\Z")


def parse_size(text: str, what: str = "a limit") -> int:
    """``"500M"`` -> 524288000; ``"10_000_000"`` -> 10000000. Raises RagMetricsError."""
    match = _NUMBER.match(str(text))
    suffix = match.group(2).upper() if match else ""
    if not match or suffix not in _SUFFIXES:
        raise RagMetricsError(f"{what}: expected a positive whole number (optionally with K, M or G), found {text!r}")
    value = int(match.group(1).replace("_", "").replace(",", "")) * _SUFFIXES[suffix]
    if value < 1:
        raise RagMetricsError(f"{what}: expected a positive whole number, found {text!r}")
    return value


def human_bytes(size: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; exact byte counts under 1 KiB."""
    if size < KiB:
        return f"{size:,} bytes"
    for unit, factor in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= factor:
            value = size / factor
            return f"{value:,.0f} {unit}" if value >= 100 or value == int(value) else f"{value:,.1f} {unit}"
    return f"{size:,} bytes"  # pragma: no cover


def _limit_bytes(size: int, limit: int) -> str:
    """The limit as :func:`human_bytes` says it, with its exact bytes when a size over it rounds to the same text."""
    text = human_bytes(limit)
    return f"{limit:,} bytes" if human_bytes(size) == text and size >= KiB else text


class LimitError(ParseError):
    """An input exceeds one of the :class:`Limits`.

    ``limit`` names the field (``"max_rows"``...), ``value`` is what was
    found (a lower bound when counting stopped early) and ``maximum`` the
    limit. ``str(err)`` reads ``run.trec has 12,000,001 rows; the limit is
    10,000,000 (RAGMETRICS_MAX_ROWS)``.
    """

    def __init__(self, source: str, limit: str, value: int, maximum: int, message: str) -> None:
        super().__init__(source, None, f"at most {maximum:,} ({ENV_VARS[limit]})", f"{value:,}")
        self.limit = limit
        self.value = value
        self.maximum = maximum
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self):  # picklable despite the extra constructor arguments
        return (_rebuild_limit_error, (self.source, self.limit, self.value, self.maximum, str(self)))


def _rebuild_limit_error(source: str, limit: str, value: int, maximum: int, message: str) -> LimitError:
    return LimitError(source, limit, value, maximum, message)


@dataclass(frozen=True)
class Limits:
    """Caps for one input; see the module documentation. All are positive ints."""

    max_bytes: int = 16 * GiB
    max_rows: int = 200_000_000
    max_queries: int = 5_000_000
    max_ratio: int = 100
    max_id_bytes: int = 4096
    max_text_bytes: int = 4 * MiB
    max_answer_bytes: int = 64 * MiB

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RagMetricsError(f"Limits.{field.name} must be a positive int; got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: int) -> Limits:
        """The defaults, overridden by ``RAGMETRICS_MAX_*`` variables, then by ``overrides``."""
        env = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for name, var in ENV_VARS.items():
            text = env.get(var)
            if text is not None and text.strip():
                values[name] = parse_size(text, var)
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: int) -> Limits:
        return dataclasses.replace(self, **changes)

    # -- checks ---------------------------------------------------------------
    def check_size(self, source: str, size: int) -> None:
        """A stored (possibly compressed) input of ``size`` bytes."""
        if size > self.max_bytes:
            raise LimitError(
                source,
                "max_bytes",
                size,
                self.max_bytes,
                f"{source} is {human_bytes(size)} ({size:,} bytes); the limit is "
                f"{_limit_bytes(size, self.max_bytes)} ({ENV_VARS['max_bytes']})",
            )

    def inflate_cap(self, compressed: int) -> int:
        """How many bytes an input of ``compressed`` bytes may decompress to."""
        return min(self.max_bytes, max(RATIO_FLOOR, self.max_ratio * max(compressed, 1)))

    def inflate_error(self, source: str, compressed: int, reached: int) -> LimitError:
        """The error for a decompression that went past :meth:`inflate_cap`."""
        if self.inflate_cap(compressed) < self.max_bytes:
            return LimitError(
                source,
                "max_ratio",
                reached,
                self.max_ratio * max(compressed, 1),
                f"{source} expands more than {self.max_ratio:,}-fold when decompressed "
                f"({human_bytes(compressed)} to over {human_bytes(reached - 1)}), which looks like a "
                f"decompression bomb; the limit is {self.max_ratio:,}x ({ENV_VARS['max_ratio']})",
            )
        return LimitError(
            source,
            "max_bytes",
            reached,
            self.max_bytes,
            f"{source} decompresses to more than the limit of {human_bytes(self.max_bytes)} ({ENV_VARS['max_bytes']})",
        )

    def check_rows(self, source: str, rows: int, *, at_least: bool = False) -> None:
        if rows > self.max_rows:
            raise LimitError(
                source,
                "max_rows",
                rows,
                self.max_rows,
                f"{source} has {'at least ' if at_least else ''}{rows:,} rows; "
                f"the limit is {self.max_rows:,} ({ENV_VARS['max_rows']})",
            )

    def check_queries(self, source: str, queries: int) -> None:
        if queries > self.max_queries:
            raise LimitError(
                source,
                "max_queries",
                queries,
                self.max_queries,
                f"{source} has {queries:,} queries; the limit is {self.max_queries:,} ({ENV_VARS['max_queries']})",
            )


def resolve(limits: Limits | None) -> Limits:
    """``limits`` or, when ``None``, :meth:`Limits.from_env` (read at each call)."""
    return Limits.from_env() if limits is None else limits


__all__ = [
    "ENV_VARS",
    "RATIO_FLOOR",
    "GiB",
    "KiB",
    "LimitError",
    "Limits",
    "MiB",
    "human_bytes",
    "parse_size",
    "resolve",
]


InflationMeter = Callable[[str, int], None]
"""``meter(source, produced)``: told of every step of decompression (``produced`` bytes more of ``source``); it
raises (a :class:`~ragmetrics.foundation.errors.RagMetricsError`) to stop the decompression there."""

_INFLATION_METER: ContextVar[InflationMeter | None] = ContextVar("ragmetrics_inflation_meter", default=None)


@contextmanager
def metered_inflation(meter: InflationMeter) -> Iterator[None]:
    """Within the block (this thread), every gzip input the loaders inflate reports its bytes to ``meter`` as they
    are produced, and stops as soon as the meter refuses them: a server counts what uploads inflate to against its
    memory budget, beside the per-input :class:`Limits`."""
    token = _INFLATION_METER.set(meter)
    try:
        yield
    finally:
        _INFLATION_METER.reset(token)


def inflation_meter() -> InflationMeter | None:
    """The meter :func:`metered_inflation` set for this thread, or None."""
    return _INFLATION_METER.get()


def capped_bytes(chunks: Iterable[bytes], where: str, limits: Limits | None = None) -> bytes:
    """An endpoint's answer read from ``chunks`` (its body, as it arrives), refused with :class:`LimitError` once
    past ``max_answer_bytes`` (``limits``, default :meth:`Limits.from_env`): a registered endpoint that answers
    without end never fills the server's memory. ``where``: the endpoint, as messages name it."""
    cap = (limits or Limits.from_env()).max_answer_bytes
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise LimitError(
                where,
                "max_answer_bytes",
                size,
                cap,
                f"{where}: the answer is larger than {cap:,} bytes ({ENV_VARS['max_answer_bytes']})",
            )
        parts.append(chunk)
    return b"".join(parts)
