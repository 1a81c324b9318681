"""Process-wide memory choices, made only by processes that are ragmetrics' own (the CLI, the dashboard's server).
The library itself never makes them.

numpy marks every array of 4 MiB or more ``madvise(MADV_HUGEPAGE)``. Where the kernel grants transparent
huge pages only on such advice (``enabled`` set to ``madvise``, common on cloud VMs), each first touch of
a 2 MiB page is zeroed and mapped as one huge page; on a small VM that makes evaluating 100,000 queries x
100 markedly slower (numpy#31590 describes the trade-off). The library itself never
switches it; ``RAGMETRICS_NUMPY_HUGEPAGES=1`` keeps numpy's default in our processes too.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os

import pyarrow as pa


def use_small_pages_for_this_process() -> None:
    """Switch numpy's huge-page advice off for the rest of this process (a no-op where numpy lacks the switch)."""
    if os.environ.get("RAGMETRICS_NUMPY_HUGEPAGES", "") == "1":
        return

    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy >= 2, numpy 1.x
        try:
            switch = getattr(importlib.import_module(name), "_set_madvise_hugepage", None)
        except ImportError:  # pragma: no cover
            continue
        if switch is not None:
            switch(False)
            return


def reading_pool() -> pa.MemoryPool:
    """The Arrow memory pool the parsers read into: jemalloc where this pyarrow has it (mimalloc, Arrow's
    default, takes huge pages too, with the same cost as numpy's advice above)."""
    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):  # pragma: no cover - a pyarrow without jemalloc
        return pa.default_memory_pool()


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE_BLOCK = 256 << 10  # glibc starts at 128 KiB; below 256 KiB the mappings cost evaluation more


def hand_freed_memory_back_promptly() -> bool:
    """For a long-lived server: blocks of ``LARGE_BLOCK`` bytes or more get a mapping of their own, unmapped when
    freed, and Arrow's default pool becomes the system allocator. Whether glibc took the setting.

    glibc otherwise raises its mmap threshold (up to 32 MiB) each time a mapped block is freed, after which the
    arrays of a session's runs are carved out of per-thread heaps that fragment and that ``malloc_trim`` cannot
    shrink; mimalloc, Arrow's default, keeps freed segments. Together they kept most of what an ended session
    used, more after each session (``tests/e2e/test_memory_e2e.py``; figures in ``benchmarks/README.md``)."""
    pa.set_memory_pool(pa.system_memory_pool())
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
    return False
