"""How the engine asks the kernel for memory: numpy's huge-page advice, off while it computes.

numpy marks every array of 4 MiB or more ``madvise(MADV_HUGEPAGE)``. Where the
kernel grants transparent huge pages only on such advice (``enabled`` set to
``madvise``, common on cloud VMs), each first touch of a 2 MiB page is then
zeroed and mapped as one huge page, and on this project's 2-core VM that made
the engine's fresh arrays slow to fill: evaluating 100,000 queries x 100
(standard metrics, fresh process) took 3.3-3.9 s with the advice and 2.1-2.3 s
without (numpy#31590 describes the same trade-off). So while the engine
computes (:func:`evaluate`, :func:`compare`, :func:`fuse` and the dashboard's
server) numpy's advice is switched off; it is restored when the last
computation ends. ``RAGMETRICS_NUMPY_HUGEPAGES=1`` keeps numpy's default.

For the same reason the parsers build their Arrow tables in jemalloc's pool where
pyarrow has one: mimalloc, Arrow's default, took huge pages here too (358 on one
366 MB run, against 8), and reading that run took 1.43-1.63 s with it and
1.16-1.23 s with jemalloc (four fresh processes each).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa

try:  # numpy >= 2
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:  # pragma: no cover - numpy 1.x
    try:
        from numpy.core.multiarray import _set_madvise_hugepage
    except ImportError:
        _set_madvise_hugepage = None

_lock = threading.Lock()
_active = 0
_saved: bool | None = None
F = TypeVar("F", bound=Callable[..., Any])


def _wanted() -> bool:
    return _set_madvise_hugepage is not None and os.environ.get("RAGMETRICS_NUMPY_HUGEPAGES", "") != "1"


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's huge-page advice off inside the block (nested and threaded blocks share one switch)."""
    global _active, _saved
    if not _wanted():
        yield
        return
    with _lock:
        if _active == 0:
            _saved = bool(_set_madvise_hugepage(False))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                _set_madvise_hugepage(_saved)
                _saved = None


def computes(function: F) -> F:
    """Run ``function`` inside :func:`small_pages`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with small_pages():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def use_small_pages_for_this_process() -> None:
    """For processes that are ragmetrics' own (the dashboard's server, the CLI): the advice stays off."""
    if _wanted():
        _set_madvise_hugepage(False)


_POOL: list[pa.MemoryPool] = []


def reading_pool() -> pa.MemoryPool:
    """The Arrow memory pool the parsers read into: jemalloc where this pyarrow has it, else Arrow's default."""
    if not _POOL:
        try:
            _POOL.append(pa.jemalloc_memory_pool())
        except (NotImplementedError, pa.ArrowNotImplementedError):  # pragma: no cover - a pyarrow without jemalloc
            _POOL.append(pa.default_memory_pool())
    return _POOL[0]
