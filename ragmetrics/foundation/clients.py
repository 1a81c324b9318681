"""One HTTP client per calling thread, for an endpoint that several threads call at once (a registered model, a
remote retriever).

A single ``httpx.Client`` shared by threads is not safe enough: its connection pool (httpcore 1.0) decides under
its lock to close an idle connection (its keep-alive expired, a surplus idle one), and closes it once the lock is
released; a thread that was handed that connection in between sends its request and reads from a closed socket
(``ReadError: [Errno 9] Bad file descriptor``) or waits out its read timeout (encode/httpcore#1110). With a client
per thread, no other thread ever passes through a client's pool.

A thread's client lives as long as the thread: the clients of threads that have ended are closed when a new thread
asks for one (a worker pool per call leaves no connections behind), and :meth:`ClientPerThread.close` closes all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ClientPerThread(Generic[C]):
    """``make()``'s client for the calling thread, made on its first call (see the module documentation)."""

    def __init__(self, make: Callable[[], C]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._clients: dict[threading.Thread, C] = {}

    def get(self) -> C:
        """The calling thread's client."""
        me = threading.current_thread()
        with self._lock:
            client = self._clients.get(me)
            if client is not None:
                return client
            ended = [thread for thread in self._clients if not thread.is_alive()]
            gone = [self._clients.pop(thread) for thread in ended]
            client = self._clients[me] = self._make()
        for old in gone:
            old.close()
        return client

    def __len__(self) -> int:
        """How many clients are open."""
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Close every thread's client; a later call makes new ones."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            client.close()
