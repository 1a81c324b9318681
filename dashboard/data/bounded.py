"""A least-recently-used cache bounded by bytes, whose entries know the sessions that use them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from dashboard.data.sizes import nbytes

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def no_user() -> str | None:
    return None


@dataclass
class _Entry(Generic[V]):
    value: V
    size: int
    users: set[str] = field(default_factory=set)
    mark: Hashable = None  # the value's growth mark when it was measured


class ByteLRU(Generic[K, V]):
    """At most ``budget`` bytes of values, as ``size(value)`` measures them; the least recently used go first.

    Conventions: a value is measured when it is put and again by :meth:`remeasure` (a value that grows, say an
    alignment whose curves get computed, is then accounted at its new size); with ``grown`` (a cheap mark of a
    value's growth, say how many derived values it keeps), only when the mark changed since it was last measured;
    the entry just put or used is the
    last to go, and a value larger than the whole budget is handed back but not kept. ``user()`` names the
    session putting or getting an entry (None outside one); :meth:`release` forgets a session and drops the
    entries no other session used. Safe to share between threads; a second caller of :meth:`get_or_make` for a
    key being made waits for it instead of making it again."""

    while_connected = False  # a session's entries are released when the session ends

    def __init__(
        self,
        budget: int,
        *,
        size: Callable[[V], int] = nbytes,
        user: Callable[[], str | None] = no_user,
        grown: Callable[[V], Hashable] | None = None,
    ) -> None:
        self.budget = int(budget)
        self._size, self._user, self._grown = size, user, grown
        self._items: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[K, threading.Lock] = {}
        self.evicted = 0  # entries dropped to stay within the budget (tests and logs read it)

    @property
    def nbytes(self) -> int:
        """Bytes the kept values hold, as last measured."""
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def keys(self) -> list[K]:
        """The kept keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def size_of(self, key: K) -> int | None:
        with self._lock:
            entry = self._items.get(key)
            return None if entry is None else entry.size

    def get(self, key: K) -> V | None:
        """The value under ``key`` (now the most recently used), or None."""
        user = self._user()
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            if user is not None:
                entry.users.add(user)
            return entry.value

    def put(self, key: K, value: V, *, size: int | None = None) -> V:
        """Keep ``value`` under ``key`` (measured unless ``size`` is given) and return it."""
        mark = self._mark(value)  # before measuring: growth after this is measured at the next remeasure
        measured = self._size(value) if size is None else int(size)
        user = self._user()
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if measured > self.budget:
                return value
            entry = _Entry(value, measured, set() if old is None else old.users, mark)
            if user is not None:
                entry.users.add(user)
            self._items[key] = entry
            self._bytes += measured
            self._shrink()
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, made by ``make()`` and kept when there is none."""
        found = self.get(key)
        if found is not None:
            return found
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        try:
            with making:
                found = self.get(key)
                return found if found is not None else self.put(key, make())
        finally:
            with self._lock:
                self._making.pop(key, None)

    def _mark(self, value: V) -> Hashable:
        return None if self._grown is None else self._grown(value)

    def remeasure(self, key: K) -> int | None:
        """Measure the value under ``key`` again (it may have grown) and keep within the budget; its new size."""
        with self._lock:
            entry = self._items.get(key)
        if entry is None:
            return None
        mark = self._mark(entry.value)
        if self._grown is not None and mark == entry.mark:
            return entry.size
        measured = self._size(entry.value)
        with self._lock:
            if self._items.get(key) is not entry:
                return measured
            self._bytes += measured - entry.size
            entry.size, entry.mark = measured, mark
            if measured > self.budget:
                del self._items[key]
                self._bytes -= measured
            else:
                self._shrink(keep=key)
        return measured

    def pop(self, key: K) -> V | None:
        with self._lock:
            entry = self._items.pop(key, None)
            if entry is None:
                return None
            self._bytes -= entry.size
            return entry.value

    def drop(self, keep: Callable[[K], bool]) -> int:
        """Drop the entries whose key ``keep`` rejects; how many went."""
        with self._lock:
            doomed = [k for k in self._items if not keep(k)]
            for key in doomed:
                self._bytes -= self._items.pop(key).size
        return len(doomed)

    def users(self) -> set[str]:
        """The sessions that put or got a kept entry."""
        with self._lock:
            return set().union(*(entry.users for entry in self._items.values()))

    def release(self, user: str) -> int:
        """``user`` (a session) ended: forget it, and drop the entries it used that no other session used (an
        entry put outside any session stays); the bytes dropped."""
        freed = 0
        with self._lock:
            for key in list(self._items):
                entry = self._items[key]
                if user not in entry.users:
                    continue
                entry.users.discard(user)
                if not entry.users:
                    del self._items[key]
                    self._bytes -= entry.size
                    freed += entry.size
        return freed

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def _shrink(self, keep: K | None = None) -> None:
        """Evict least recently used entries until within the budget; the newest (or ``keep``) stays."""
        newest = next(reversed(self._items), None) if keep is None else keep
        for key in list(self._items):
            if self._bytes <= self.budget:
                return
            if key == newest:
                continue
            self._bytes -= self._items.pop(key).size
            self.evicted += 1
