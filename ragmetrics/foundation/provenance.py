"""The provenance of a judge's label: which judge, its version, the hash of its prompt or configuration, and when.

The judges (:mod:`ragmetrics.judges`) stamp their labels with it; the store (:mod:`ragmetrics.store.provenance`)
keeps its :attr:`Provenance.source` text beside each label, so a judge's label is never taken for a person's."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragmetrics.foundation.errors import RagMetricsError

_NAME = re.compile(r"^[A-Za-z0-9_.:+-]{1,64}$")


@dataclass(frozen=True)
class Provenance:
    """A judge's label's origin: ``judge`` (its registry name), ``version``, ``config_hash`` (16 hex digits of the
    hash of its prompt or configuration) and ``created_at`` (seconds since the epoch)."""

    judge: str
    version: str
    config_hash: str
    created_at: float

    def __post_init__(self) -> None:
        for what, value in (("judge name", self.judge), ("judge version", self.version)):
            if not _NAME.match(value):
                raise RagMetricsError(f"a {what} must be 1-64 letters, digits or _.:+-; got {value!r}")
        if not re.fullmatch(r"[0-9a-f]{16}", self.config_hash):
            raise RagMetricsError(f"a judge's configuration hash must be 16 hex digits; got {self.config_hash!r}")

    @property
    def source(self) -> str:
        """The text the store keeps: ``judge:NAME@VERSION#HASH``."""
        return f"judge:{self.judge}@{self.version}#{self.config_hash}"


HUMAN = ""
"""The ``source`` of a person's label."""
_SOURCE = re.compile(
    r"^judge:(?P<judge>[A-Za-z0-9_.:+-]{1,64})@(?P<version>[A-Za-z0-9_.:+-]{1,64})#(?P<hash>[0-9a-f]{16})$"
)


def parse_source(source: str) -> tuple[str, str, str] | None:
    """``(judge, version, config_hash)`` of a stored source (:attr:`Provenance.source`), None for a person's label."""
    if source == HUMAN:
        return None
    found = _SOURCE.match(source)
    if found is None:
        raise RagMetricsError(
            f"a label's source {source[:80]!r} is neither empty (a person) nor judge:NAME@VERSION#HASH"
        )
    return found["judge"], found["version"], found["hash"]
