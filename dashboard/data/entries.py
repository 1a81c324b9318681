"""What the workspace hands out: a stored dataset or run as an entry (id, current name, facts from the store's
listing, the content loaded on first use), and how the Workspace page shows sizes, times and store URLs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import NamedTuple

from ragmetrics.analysis.per_query import PerQueryResults
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.redact import redact_url

__all__ = [
    "DatasetEntry",
    "ResultsEntry",
    "RunEntry",
    "SavedEntry",
    "VersionInfo",
    "human_size",
    "safe_url",
    "utc",
    "when",
]


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(float(timestamp), timezone.utc)


@dataclass(frozen=True)
class VersionInfo:
    """Where a qrels version came from (:meth:`ragmetrics.store.database.Store.commit_labels`): its parent dataset, who
    saved it and when, how many labels it added, and ``number``: the store's
    (:meth:`ragmetrics.store.database.Store.versions`), the ``vN`` its save gave it and put in its name, never given
    twice in its lineage."""

    parent: str
    author: str
    created: datetime
    n_labels: int
    number: int


class DatasetEntry:
    """A stored dataset: id, current name and facts from the listing; ``dataset`` loads the content on first use.
    ``version`` is set when it is a qrels version of another dataset; ``has_versions`` when versions were made
    from it."""

    def __init__(
        self,
        id: str,
        name: str,
        dataset: Dataset | None = None,
        source: str = "",
        description: str = "",
        added: datetime | None = None,
        *,
        n_queries: int = 0,
        n_judgments: int = 0,
        size_bytes: int = 0,
        loader: Callable[[str, str], Dataset] | None = None,
        version: VersionInfo | None = None,
        has_versions: bool = False,
        targets: str = "",
    ) -> None:
        self.id, self.name, self.source, self.description = id, name, source, description
        self.targets = targets  # the targets the dataset declares ("" none): a profile name or metric>value items
        self.added = added or datetime.now(timezone.utc)
        self.n_queries, self.n_judgments, self.size_bytes = n_queries, n_judgments, size_bytes
        self._dataset, self._loader = dataset, loader
        self.version, self.has_versions = version, has_versions

    @property
    def label(self) -> str:
        """The name with the qrels version it is (what the dataset picker shows): ``name · qrels v2 by ann,
        2026-01-02 10:00`` for a version, ``name · qrels v0 (original)`` for judgments versions were made from."""
        if self.version is not None:
            made = f"{self.version.created:%Y-%m-%d %H:%M}"
            return f"{self.name} · qrels v{self.version.number} by {self.version.author}, {made}"
        if self.has_versions:
            return f"{self.name} · qrels v0 (original)"
        return self.name

    @property
    def dataset(self) -> Dataset:
        if self._loader is not None:
            return self._loader(self.id, self.name)
        assert self._dataset is not None
        return self._dataset

    def __repr__(self) -> str:
        return f"DatasetEntry(id={self.id!r}, name={self.name!r}, n_queries={self.n_queries})"


class SavedEntry(NamedTuple):
    """What :meth:`dashboard.data.workspace.Workspace.commit_labels` did: ``entry``, the qrels version that holds
    the labels (None when it was deleted before the listing was read again); ``made``: True when this save made it,
    False when another save running at the same time saved them first
    (:class:`ragmetrics.store.database.SavedVersion`); ``version``: its id, known even once it is deleted."""

    entry: DatasetEntry | None
    made: bool
    version: str


class RunEntry:
    """A stored run under one dataset; ``run`` loads the content on first use (named with the current name)."""

    def __init__(
        self,
        id: str,
        name: str,
        run: Run | None,
        dataset_id: str,
        source: str = "",
        added: datetime | None = None,
        *,
        n_queries: int = 0,
        n_rows: int = 0,
        size_bytes: int = 0,
        loader: Callable[[str, str], Run] | None = None,
    ) -> None:
        self.id, self.name, self.dataset_id, self.source = id, name, dataset_id, source
        self.added = added or datetime.now(timezone.utc)
        self.n_queries, self.n_rows, self.size_bytes = n_queries, n_rows, size_bytes
        self._run, self._loader = run, loader

    @property
    def run(self) -> Run:
        if self._loader is not None:
            return self._loader(self.id, self.name)
        assert self._run is not None
        return self._run

    def __repr__(self) -> str:
        return f"RunEntry(id={self.id!r}, name={self.name!r}, dataset_id={self.dataset_id!r})"


def safe_url(url: str) -> str:
    """A store URL fit to show: its credentials hidden (:func:`ragmetrics.foundation.redact.redact_url`)."""
    return redact_url(url)


def human_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


@dataclass(frozen=True, eq=False)
class ResultsEntry:
    """Per-query results stored without their rankings (:mod:`ragmetrics.analysis.per_query`); ``results`` loads them."""

    id: str
    name: str
    metrics: tuple[str, ...]
    n_queries: int
    source: str
    added: datetime
    loader: Callable[[str], PerQueryResults]

    @property
    def results(self) -> PerQueryResults:
        return self.loader(self.id)


def when(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
