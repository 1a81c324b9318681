"""The alignments the pages share: one :class:`ragmetrics.Alignment` per (dataset id, run id, run name).

An alignment is a value: its per-query values, curves and aligned rows are computed on it on first use, once,
whatever the sessions and threads. Holding it is how changing K, the metric or a filter never aligns again.
Content never changes under an id; the run's name is in the key, so a rename shows. The most recently used
are kept: at most ``max_entries``, and at most ``max_bytes`` of the runs' rows (an alignment and what is computed
on it grow with its run; the most recent one is always kept).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from dashboard.data.workspace import DatasetEntry, RunEntry, Workspace
from ragmetrics import Alignment, align
from ragmetrics.model import Run

Key = tuple[str, str, str]


class Alignments:
    """An LRU of alignments by (dataset id, run id, run name), safe to share between threads: a second caller of
    an alignment being made waits for it. Big runs are aligned on two threads (the library's ``executor``)."""

    def __init__(self, max_entries: int = 64, max_bytes: int = 4 << 30) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: OrderedDict[Key, Alignment] = OrderedDict()
        self._sizes: dict[Key, int] = {}
        self._making: dict[Key, threading.Lock] = {}
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(2, thread_name_prefix="ragmetrics-align")
            return self._pool

    def _found(self, key: Key) -> Alignment | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Key, alignment: Alignment) -> Alignment:
        with self._lock:
            self._items[key] = alignment
            self._items.move_to_end(key)
            self._sizes[key] = int(alignment.run.table.nbytes)
            while len(self._items) > 1 and (
                len(self._items) > self.max_entries or sum(self._sizes.values()) > self.max_bytes
            ):
                old, _ = self._items.popitem(last=False)
                self._sizes.pop(old, None)
        return alignment

    def get(self, dataset: DatasetEntry, run: RunEntry) -> Alignment:
        """The alignment of ``run`` with ``dataset`` (made on first use)."""
        key = (dataset.id, run.id, run.name)
        return self._get(key, lambda: align(dataset.dataset, run.run, executor=self._executor()))

    def _get(self, key: Key, make: Callable[[], Alignment]) -> Alignment:
        found = self._found(key)
        if found is not None:
            return found
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        try:
            with making:
                found = self._found(key)
                return found if found is not None else self.put(key, make())
        finally:
            with self._lock:
                self._making.pop(key, None)

    def __contains__(self, key: Key) -> bool:
        with self._lock:
            return key in self._items

    def add_run(
        self,
        workspace: Workspace,
        dataset: DatasetEntry,
        run: Run,
        *,
        source: str = "",
        tags: Mapping[str, str] | None = None,
    ) -> RunEntry:
        """Store ``run`` under ``dataset`` and keep its alignment: the run is aligned while its rows are written
        (:meth:`Workspace.add_run`'s ``meanwhile``), so the page that shows it next finds the alignment made.
        An error in aligning is not raised here: the page meets it."""
        made: dict[str, Alignment] = {}

        def meanwhile(stored: Run) -> None:
            made[stored.name] = align(dataset.dataset, stored, executor=self._executor())

        entry = workspace.add_run(dataset.id, run, source=source, meanwhile=meanwhile, tags=tags)
        alignment = made.get(entry.name)
        if alignment is not None and (dataset.id, entry.id, entry.name) not in self:
            self.put((dataset.id, entry.id, entry.name), alignment)
        return entry
