"""From what a user names to an adapter: a retriever object, a callable, ``module:attr``, an ``http(s)://`` URL or the
built-in ``bm25`` (:func:`resolve`; :func:`adapt` for an object in hand)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.importer import import_target
from ragmetrics.retrieve.adapters import (
    Adapter,
    CallableAdapter,
    LangChainAdapter,
    LlamaIndexAdapter,
    is_langchain_retriever,
    is_llamaindex_retriever,
    required_positional,
)
from ragmetrics.retrieve.bm25 import BM25
from ragmetrics.retrieve.http import HttpAdapter

if TYPE_CHECKING:
    from ragmetrics.foundation.model import Dataset


def adapt(
    obj: Any,
    *,
    doc_id_field: str | None = None,
    name: str | None = None,
    request: str | None = None,
    response: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Adapter:
    """The adapter for ``obj``: an :class:`Adapter` as it is, a LlamaIndex or LangChain retriever, an
    ``http(s)://`` URL, or a callable ``fn(query, k)``. ``name`` replaces the ``module:qualname`` in the cache
    identity (give one to tell apart two retrievers of one class). ``request``, ``response`` and ``headers``
    are the HTTP adapter's (see :mod:`ragmetrics.retrieve.http`)."""
    if isinstance(obj, Adapter):
        return obj
    if isinstance(obj, str) and obj.startswith(("http://", "https://")):
        return HttpAdapter(obj, request=request, response=response, doc_id_field=doc_id_field, headers=headers)
    if request is not None or response is not None or headers:
        raise RagMetricsError("--request, --response and --header apply to an HTTP retriever only")
    if is_llamaindex_retriever(obj):
        return LlamaIndexAdapter(obj, doc_id_field=doc_id_field, name=name)
    if is_langchain_retriever(obj):
        return LangChainAdapter(obj, doc_id_field=doc_id_field, name=name)
    if callable(obj) and not isinstance(obj, type):
        return CallableAdapter(obj, doc_id_field=doc_id_field, name=name)
    raise RagMetricsError(
        f"cannot use {type(obj).__name__} as a retriever: expected a callable fn(query, k), a LlamaIndex or "
        "LangChain retriever, an http(s):// URL or 'bm25'"
    )


BM25_SPECS = ("bm25", "bm25:auto", "bm25:en", "bm25:zh")
"""The built-in BM25, its language chosen by the corpus or given."""


def resolve(
    spec: Any,
    *,
    dataset: Dataset | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    doc_id_field: str | None = None,
    request: str | None = None,
    response: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Adapter:
    """The adapter for a spec: ``bm25`` (the built-in baseline over ``dataset``'s corpus; ``bm25:en`` or
    ``bm25:zh`` name its language instead of letting the corpus choose), an ``http(s)://`` URL,
    or ``module:attr`` naming a callable, a retriever object or a zero-argument factory returning one (the
    current directory is importable). Any other object goes to :func:`adapt`."""
    if not isinstance(spec, str):
        return adapt(spec, doc_id_field=doc_id_field, request=request, response=response, headers=headers)
    text = spec.strip()
    if text.lower() in BM25_SPECS:
        if request is not None or response is not None or headers or doc_id_field:
            raise RagMetricsError("--request, --response, --header and --doc-id-field do not apply to bm25")

        if dataset is None:
            raise RagMetricsError("the bm25 retriever needs a dataset with its corpus")
        return BM25.from_dataset(dataset, cache_dir=cache_dir, language=text.lower()[5:] or "auto")
    if text.startswith(("http://", "https://")):
        return adapt(text, doc_id_field=doc_id_field, request=request, response=response, headers=headers)
    if ":" not in text:
        raise RagMetricsError(
            f"retriever {spec!r}: expected 'bm25', an http:// or https:// URL, or module:attr (a callable, a "
            "LlamaIndex or LangChain retriever, or a zero-argument factory returning one)"
        )
    obj = import_target(text, "retriever")
    if not (is_llamaindex_retriever(obj) or is_langchain_retriever(obj) or isinstance(obj, Adapter)):
        required = required_positional(obj) if callable(obj) else None
        if isinstance(obj, type) or required == 0:
            try:
                obj = obj()
            except Exception as exc:
                raise RagMetricsError(f"retriever {text}: the factory failed: {type(exc).__name__}: {exc}") from exc
            if callable(obj) and required_positional(obj) == 0 and not _is_retriever(obj):
                raise RagMetricsError(f"retriever {text}: the factory returned another zero-argument callable")
    return adapt(obj, doc_id_field=doc_id_field, name=text, request=request, response=response, headers=headers)


def _is_retriever(obj: Any) -> bool:
    return is_llamaindex_retriever(obj) or is_langchain_retriever(obj) or isinstance(obj, Adapter)
