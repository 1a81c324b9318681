"""Loaded datasets and runs, by content id; in memory for now.

This is the one small interface the pages use to reach data
(``datasets``, ``dataset``, ``runs``, ``run``, ``add_dataset``, ``add_run``).
A persistent store can replace it: ids are already content hashes, so the same
files give the same ids on any server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ragmetrics import store
from ragmetrics.model import Dataset, Run


def dataset_id(dataset: Dataset) -> str:
    """Content id of a dataset, the same as the store's (:func:`ragmetrics.store.dataset_id`)."""
    return store.dataset_id(dataset)


def run_id(run: Run) -> str:
    """Content id of a run (its rows, not its name), the same as the store's."""
    return store.run_id(run)


@dataclass(frozen=True, eq=False)
class DatasetEntry:
    id: str
    name: str
    dataset: Dataset
    source: str = ""
    description: str = ""
    added: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass(frozen=True, eq=False)
class RunEntry:
    id: str
    name: str
    run: Run
    dataset_id: str
    source: str = ""
    added: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


class Workspace:
    """Datasets and, per dataset, runs; adding the same content twice returns the existing entry."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._datasets: dict[str, DatasetEntry] = {}
        self._runs: dict[str, dict[str, RunEntry]] = {}

    def datasets(self) -> list[DatasetEntry]:
        with self._lock:
            return list(self._datasets.values())

    def dataset(self, ident: str | None) -> DatasetEntry | None:
        return self._datasets.get(ident) if ident else None

    def runs(self, dataset_ident: str | None) -> list[RunEntry]:
        with self._lock:
            return list(self._runs.get(dataset_ident or "", {}).values())

    def run(self, dataset_ident: str, ident: str) -> RunEntry | None:
        return self._runs.get(dataset_ident, {}).get(ident)

    def add_dataset(self, dataset: Dataset, *, name: str | None = None, source: str = "", description: str = "") -> DatasetEntry:
        ident = dataset_id(dataset)
        with self._lock:
            existing = self._datasets.get(ident)
            if existing is not None:
                return existing
            names = {e.name for e in self._datasets.values()}
            entry = DatasetEntry(ident, _unique(name or dataset.name, names), dataset, source, description)
            self._datasets[ident] = entry
            self._runs.setdefault(ident, {})
            return entry

    def add_run(self, dataset_ident: str, run: Run, *, source: str = "") -> RunEntry:
        """Add ``run`` under a dataset; a name already taken by other content gets a suffix."""
        if dataset_ident not in self._datasets:
            raise KeyError(f"no dataset {dataset_ident!r} in the workspace")
        ident = run_id(run)
        with self._lock:
            runs = self._runs.setdefault(dataset_ident, {})
            existing = runs.get(ident)
            if existing is not None:
                return existing
            name = _unique(run.name, {e.name for e in runs.values()})
            stored = run if name == run.name else run.with_name(name)
            entry = RunEntry(ident, name, stored, dataset_ident, source)
            runs[ident] = entry
            return entry


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name} ({i})" in taken:
        i += 1
    return f"{name} ({i})"
