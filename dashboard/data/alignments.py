"""The alignments the pages share: one :class:`ragmetrics.Alignment` per (dataset id, run id, run name).

An alignment is a value: its per-query values, curves and aligned rows are computed on it on first use, once,
whatever the sessions and threads. Holding it is how changing K, the metric or a filter never aligns again.
Content never changes under an id; the run's name is in the key, so a rename shows. The most recently used are
kept within a budget of bytes (:class:`dashboard.data.bounded.ByteLRU`): an alignment is measured with its run
and everything computed on it, not its dataset (the workspace counts that), again each time it is used, since
it grows as its curves are computed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from threading import Lock

from dashboard.core.health import Refusal, refusal
from dashboard.data.bounded import ByteLRU, no_user
from dashboard.data.sizes import nbytes
from dashboard.data.workspace import DatasetEntry, RunEntry, Workspace
from ragmetrics import Alignment, align
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Run

Key = tuple[str, str, str]


class RunRefused(RagMetricsError):
    """A run that is not stored, and why (:func:`dashboard.core.health.refusal`): the reason is the message, with
    the chunk pattern that would fix it and whether the user may store it anyway."""

    def __init__(self, refused: Refusal) -> None:
        super().__init__(refused.reason)
        self.refusal = refused


def alignment_bytes(alignment: Alignment) -> int:
    """Bytes an alignment holds: its run, ranking and computed values, without its dataset."""
    return nbytes(alignment, exclude=[alignment.dataset])


class Alignments:
    """A byte-bounded LRU of alignments by (dataset id, run id, run name), safe to share between threads: a
    second caller of an alignment being made waits for it. Big runs are aligned on two threads (the library's
    ``executor``). ``user()`` names the session asking (see :meth:`ByteLRU.release`)."""

    while_connected = False

    def __init__(self, max_bytes: int = 512 << 20, *, user: Callable[[], str | None] = no_user) -> None:
        self.held: ByteLRU[Key, Alignment] = ByteLRU(
            max_bytes, size=alignment_bytes, user=user, grown=lambda alignment: alignment.derived_count
        )
        self._lock = Lock()
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(2, thread_name_prefix="ragmetrics-align")
            return self._pool

    def put(self, key: Key, alignment: Alignment) -> Alignment:
        return self.held.put(key, alignment)

    def get(self, dataset: DatasetEntry, run: RunEntry) -> Alignment:
        """The alignment of ``run`` with ``dataset`` (made on first use)."""
        key = (dataset.id, run.id, run.name)
        return self._get(key, lambda: align(dataset.dataset, run.run, executor=self._executor()))

    def _get(self, key: Key, make: Callable[[], Alignment]) -> Alignment:
        found = self.held.get(key)
        if found is not None:
            self.held.remeasure(key)  # what the last page computed on it counts from now on
            return found
        return self.held.get_or_make(key, make)

    def __contains__(self, key: Key) -> bool:
        return key in self.held

    def release(self, session: str) -> int:
        """A session ended: drop the alignments no other session used (:meth:`ByteLRU.release`)."""
        return self.held.release(session)

    def add_run(
        self,
        workspace: Workspace,
        dataset: DatasetEntry,
        run: Run,
        *,
        source: str = "",
        tags: Mapping[str, str] | None = None,
        insist: bool = False,
    ) -> RunEntry:
        """Store ``run`` under ``dataset`` (with its metadata ``tags``) and keep its alignment: the run is aligned
        while its rows are written, so the page that shows it next finds the alignment made. A run none of whose
        ids do not meet the qrels is refused before anything is written (:class:`RunRefused`, the library's
        reason), unless ``insist`` and its queries are the dataset's; another error in aligning is not raised here:
        the page meets it."""
        made: dict[str, Alignment] = {}

        def admit(stored: Run) -> None:
            try:
                alignment = align(dataset.dataset, stored, executor=self._executor())
            except Exception:
                return  # left for the page that shows the run
            made[stored.name] = alignment
            refused = refusal(alignment)
            if refused is not None and not (insist and refused.insistable):
                raise RunRefused(refused)

        entry = workspace.add_run(dataset.id, run, source=source, admit=admit, tags=tags)
        alignment = made.get(entry.name)
        if alignment is not None and (dataset.id, entry.id, entry.name) not in self:
            self.put((dataset.id, entry.id, entry.name), alignment)
        return entry
