"""Runs made by calling a retriever for every query of a dataset.

>>> from ragmetrics.retrieve import retrieve
>>> result = retrieve(dataset, "bm25", k=100)            # or a URL, "module:attr", a callable, a retriever
>>> result.run                                           # a ragmetrics.Run, evaluated like any other
>>> result.metadata["latency"], result.failed            # p50/p95/max, the queries that still failed

Modules:

* :mod:`~ragmetrics.retrieve.runner`: :func:`retrieve` (concurrency, timeouts, retries, the cache, repeats);
* :mod:`~ragmetrics.retrieve.adapters`: :func:`adapt` / :func:`resolve` and the callable, LlamaIndex and
  LangChain adapters; :mod:`~ragmetrics.retrieve.http`: HTTP JSON endpoints;
  :mod:`~ragmetrics.retrieve.bm25`: the built-in BM25 baseline;
* :mod:`~ragmetrics.retrieve.cache`: the SQLite response cache; :mod:`~ragmetrics.retrieve.noise`: repeat noise;
  :mod:`~ragmetrics.retrieve.result`: :class:`Retrieval` and :class:`Call`;
* :mod:`~ragmetrics.retrieve.command`: the ``ragmetrics retrieve`` command.

Nothing heavy is imported here: httpx, bm25s, PyStemmer, jieba, LlamaIndex and LangChain only when used.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.retrieve.adapters import Adapter, CallError, Hit
from ragmetrics.retrieve.bm25 import BM25
from ragmetrics.retrieve.cache import ResponseCache, default_cache_dir
from ragmetrics.retrieve.http import HttpAdapter
from ragmetrics.retrieve.resolver import adapt, resolve
from ragmetrics.retrieve.result import Call, Retrieval
from ragmetrics.retrieve.runner import retrieve

__all__ = [
    "BM25",
    "Adapter",
    "Call",
    "CallError",
    "Hit",
    "HttpAdapter",
    "ResponseCache",
    "Retrieval",
    "adapt",
    "default_cache_dir",
    "resolve",
    "retrieve",
]


def __getattr__(name: str) -> Any:
    if name == "BM25":
        return BM25
    if name == "HttpAdapter":
        return HttpAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
