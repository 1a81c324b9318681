"""numpy's huge-page advice is off while the engine computes and restored after (ragmetrics.memory)."""

from __future__ import annotations

import importlib
import threading

import pytest

import ragmetrics as rm
from ragmetrics import memory

pytestmark = pytest.mark.skipif(memory._set_madvise_hugepage is None, reason="this numpy has no huge-page switch")


def _advice() -> bool:
    """numpy's current setting (setting it returns the previous value)."""
    previous = memory._set_madvise_hugepage(True)
    memory._set_madvise_hugepage(previous)
    return bool(previous)


@pytest.fixture
def advice_on():
    before = memory._set_madvise_hugepage(True)
    yield
    memory._set_madvise_hugepage(before)


def test_evaluate_computes_without_the_advice_and_restores_it(advice_on, monkeypatch):
    engine = importlib.import_module("ragmetrics.evaluate")  # the module (the package's attribute is the function)
    seen = []
    original = engine.aligned_ranking

    def spy(*args, **kwargs):
        seen.append(_advice())
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "aligned_ranking", spy)
    rm.evaluate({"q1": {"d1": 1}}, rm.Run.from_lists({"q1": ["d1"]}), ["ndcg@10"], warn=False)
    assert seen == [False]
    assert _advice() is True


def test_nested_and_threaded_blocks_restore_once_the_last_one_ends(advice_on):
    inside = threading.Event()
    release = threading.Event()

    def other():
        with memory.small_pages():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with memory.small_pages():
        thread.start()
        assert inside.wait(5)
        with memory.small_pages():
            assert _advice() is False
        assert _advice() is False
    assert _advice() is False  # the other thread still computes
    release.set()
    thread.join(5)
    assert _advice() is True


def test_the_environment_keeps_numpys_default(advice_on, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_NUMPY_HUGEPAGES", "1")
    with memory.small_pages():
        assert _advice() is True


def test_the_public_entry_points_are_wrapped():
    from ragmetrics.compare import compare
    from ragmetrics.fusion import fuse

    for function in (rm.evaluate, compare, fuse):
        assert getattr(function, "__wrapped__", None) is not None, function.__name__
