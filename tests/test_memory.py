"""No hidden process state in the library: no switches, executors or caches at module level."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import threading
import weakref
from concurrent.futures import Executor

import numpy as np
import pytest

import ragmetrics as rm
from ragmetrics.foundation import memory

try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core.multiarray import _set_madvise_hugepage


def _modules():
    import ragmetrics

    for info in pkgutil.walk_packages(ragmetrics.__path__, "ragmetrics."):
        if not info.name.endswith("__main__"):
            yield importlib.import_module(info.name)


def test_no_module_holds_an_executor_a_lock_or_a_cache():
    found = []
    for module in _modules():
        for name, value in vars(module).items():
            stateful = isinstance(value, (Executor, weakref.WeakKeyDictionary, weakref.WeakValueDictionary))
            stateful |= isinstance(value, type(threading.Lock()))
            # a cached function of the library's own (the standard library's, imported by name, are not ours)
            stateful |= hasattr(value, "cache_info") and str(getattr(value, "__module__", "")).startswith("ragmetrics")
            if stateful:
                found.append(f"{module.__name__}.{name}")
    assert found == []


@pytest.fixture
def advice_on():
    previous = _set_madvise_hugepage(True)
    yield
    _set_madvise_hugepage(previous)


def test_library_calls_leave_numpys_huge_page_advice_as_they_found_it(advice_on):
    from ragmetrics.analysis.compare import compare
    from ragmetrics.analysis.fusion import fuse

    dataset = rm.Dataset.from_dict({"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}})
    runs = [
        rm.Run.from_dict({"q1": {"a": 1.0, "x": 0.5}, "q2": {"b": 0.1}, "q3": {"y": 1.0}}, name="one"),
        rm.Run.from_dict({"q1": {"x": 1.0}, "q2": {"b": 0.9}, "q3": {"c": 1.0}}, name="two"),
    ]
    rm.evaluate(dataset, runs, ["ndcg@10"])
    compare(dataset, runs, ["ndcg@10"])
    fuse(runs)
    assert _set_madvise_hugepage(True) is True  # returns the advice it replaces: still on


def test_the_process_opt_in_switches_it_off_unless_told_to_keep_it(advice_on, monkeypatch):
    memory.use_small_pages_for_this_process()
    assert _set_madvise_hugepage(True) is False
    monkeypatch.setenv("RAGMETRICS_NUMPY_HUGEPAGES", "1")
    memory.use_small_pages_for_this_process()
    assert _set_madvise_hugepage(True) is True
    assert np.zeros(1).sum() == 0


def test_the_server_opt_in_maps_large_blocks_and_reads_into_the_system_pool():
    # process-wide and not undoable (glibc's threshold): in a process of its own
    code = (
        "import pyarrow as pa; from ragmetrics.foundation import memory; "
        "print(pa.default_memory_pool().backend_name, memory.hand_freed_memory_back_promptly(), "
        "pa.default_memory_pool().backend_name)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, took, after = done.stdout.split()
    assert before != "system" and (took, after) == ("True", "system")
