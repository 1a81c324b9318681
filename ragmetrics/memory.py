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
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

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
