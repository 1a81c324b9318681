"""Values derived from an immutable value, computed on first use, once, whatever the threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any


class Once:
    """A table of derived values, each computed on first use and kept: a thread asking for a key that another
    thread is computing waits for that result instead of computing it again. Its owner makes it when it is
    made, so every owner has its own (no module state)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        try:
            return self._values[key]
        except KeyError:
            pass
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._values:
                self._values[key] = compute()
        return self._values[key]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def __len__(self) -> int:
        """How many values are kept (it only grows)."""
        return len(self._values)
