"""Curves computed ahead of the page that shows them, on a background thread."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence

from ragmetrics import Alignment

_LOG = logging.getLogger(__name__)

THREAD_NAME = "ragmetrics-prefetch"


class CurvePrefetcher:
    """Starts ``alignment.curve(metric, k_max)`` on a background thread (the upload page asks after its
    validation report; the overview, usually the next page, then finds the curves computed or being computed
    and waits only for those). What is being computed and what is done is this object's state: a curve being
    prefetched is not started again, one done is not asked for again, one that fails is logged and left for the
    page that needs it, which shows the error."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[tuple[int, str, int]] = set()
        self._done: weakref.WeakKeyDictionary[Alignment, set[tuple[str, int]]] = weakref.WeakKeyDictionary()

    def start(self, alignments: Sequence[Alignment], metrics: Sequence[str], k_max: int) -> threading.Thread | None:
        """Compute the curves not computed yet on one new thread (returned; None when there is nothing to do)."""
        with self._lock:
            todo = [
                (alignment, metric)
                for alignment in alignments
                for metric in metrics
                if (metric, k_max) not in self._done.get(alignment, set())
                and (id(alignment), metric, k_max) not in self._running
            ]
            self._running.update((id(a), m, k_max) for a, m in todo)
        if not todo:
            return None
        thread = threading.Thread(target=self._run, args=(todo, k_max), name=THREAD_NAME, daemon=True)
        thread.start()
        return thread

    def _run(self, todo: list[tuple[Alignment, str]], k_max: int) -> None:
        for alignment, metric in todo:
            try:
                alignment.curve(metric, k_max)
            except Exception:
                _LOG.warning("prefetching %s curves of %s failed", metric, alignment.name, exc_info=True)
            else:
                with self._lock:
                    self._done.setdefault(alignment, set()).add((metric, k_max))
            finally:
                with self._lock:
                    self._running.discard((id(alignment), metric, k_max))
