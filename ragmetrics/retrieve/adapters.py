"""Adapters: one interface over every kind of retriever, each recognised from the object it is given.

An :class:`Adapter` answers ``search(query, k, timeout)`` with ranked :class:`Hit` s and says who it is:
``kind`` (``callable``, ``llamaindex``, ``langchain``, ``http``, ``bm25``), ``identity`` (the response cache's
key: the kind and what decides its answers, never a secret such as a header) and ``describe()`` (its
metadata: parameters such as top_k, the model or index name when known).

:func:`adapt` turns an object into an adapter; :func:`resolve` does so for a CLI spec (``bm25``, an
``http(s)://`` URL, or ``module:attr`` naming a callable, a retriever object or a zero-argument factory of
one). Neither LlamaIndex nor LangChain is imported here: their retrievers are recognised by their classes'
names and modules.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    pass


class Hit(NamedTuple):
    """One retrieved document: its id, score (None when the retriever gives none), text and source document."""

    doc_id: str
    score: float | None = None
    text: str | None = None
    source_doc: str | None = None


class CallError(Exception):
    """A call that failed; ``retryable`` says whether trying again may help (timeouts, 5xx, lost connections)."""

    def __init__(self, message: str, *, retryable: bool = True, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class Adapter:
    """The interface the runner calls. ``native_timeout``: ``search`` enforces ``timeout`` itself (HTTP);
    otherwise the runner waits at most ``timeout`` for each call and counts a late one as failed."""

    kind: str = "adapter"
    native_timeout: bool = False

    @property
    def identity(self) -> str:
        raise NotImplementedError

    @property
    def default_name(self) -> str:
        return self.kind

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable metadata: ``kind``, ``identity`` and whatever is known of the retriever."""
        return {"kind": self.kind, "identity": self.identity}

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (the runner calls it when it made the adapter)."""


# --- turning returned values into hits -------------------------------------------------------------


def lookup(record: Any, path: str) -> Any:
    """``record``'s value at a dotted ``path`` (``metadata.doc_id``, ``hits.0.id``); None when absent."""
    value = record
    for part in path.split(".") if path else ():
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, (list, tuple)) and part.lstrip("-").isdigit():
            index = int(part)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            value = getattr(value, part, None)
        if value is None:
            return None
    return value


def as_score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise RagMetricsError(f"{where}: score {value!r} is not a number")
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise RagMetricsError(f"{where}: score {value!r} is not a number") from None
    if not math.isfinite(score):
        raise RagMetricsError(f"{where}: score {value!r} is not a finite number")
    return score


def as_doc_id(value: Any, where: str) -> str:
    if value is None or isinstance(value, (bool, float, dict, list)):
        raise RagMetricsError(f"{where}: expected a document id (a string or an integer), found {value!r}")
    text = str(value).strip()
    if not text:
        raise RagMetricsError(f"{where}: the document id is empty")
    return text


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def hit_from_record(record: Any, where: str, doc_id_field: str | None = None) -> Hit:
    """A hit from a ``(doc_id, score)`` pair, a bare id, or a mapping with ``doc_id`` (or ``id``), ``score``,
    and optionally ``text`` and ``source_doc``; ``doc_id_field`` names another (dotted) id field."""
    if isinstance(record, str):
        return Hit(as_doc_id(record, where))
    if isinstance(record, Mapping):
        if doc_id_field:
            raw = lookup(record, doc_id_field)
            if raw is None:
                raise RagMetricsError(f"{where}: no field {doc_id_field!r} (keys {sorted(map(str, record))})")
        else:
            raw = record.get("doc_id", record.get("id"))
            if raw is None:
                raise RagMetricsError(
                    f"{where}: expected a 'doc_id' or 'id' field, found keys {sorted(map(str, record))}"
                )
        return Hit(
            as_doc_id(raw, where),
            as_score(record.get("score"), where),
            _optional_text(record.get("text")),
            _optional_text(record.get("source_doc")),
        )
    if isinstance(record, (tuple, list)) and 1 <= len(record) <= 4:
        doc, *rest = record
        score = as_score(rest[0], where) if rest else None
        text = _optional_text(rest[1]) if len(rest) > 1 else None
        source = _optional_text(rest[2]) if len(rest) > 2 else None
        return Hit(as_doc_id(doc, where), score, text, source)
    raise RagMetricsError(
        f"{where}: expected (doc_id, score) pairs or objects with 'doc_id' and 'score', found {type(record).__name__}"
    )


def hits_from(result: Any, where: str, doc_id_field: str | None = None) -> list[Hit]:
    if result is None:
        raise RagMetricsError(f"{where}: the retriever returned None; expected a ranked list")
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise RagMetricsError(f"{where}: expected a ranked list, found {type(result).__name__}")
    return [hit_from_record(r, f"{where}: result {i + 1}", doc_id_field) for i, r in enumerate(result)]


def _named(obj: Any) -> str:
    """``module:qualname`` of a function, class or instance (its class)."""
    target = obj if inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, type) else type(obj)
    module = getattr(target, "__module__", None) or "?"
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"{module}:{name}"


def _class_in(obj: Any, module_prefix: str, name: str) -> bool:
    return any(c.__name__ == name and c.__module__.startswith(module_prefix) for c in type(obj).__mro__)


def is_llamaindex_retriever(obj: Any) -> bool:
    return _class_in(obj, "llama_index", "BaseRetriever")


def is_langchain_retriever(obj: Any) -> bool:
    return _class_in(obj, "langchain_core", "BaseRetriever")


def _options_key(options: Mapping[str, Any]) -> str:
    given = {k: v for k, v in sorted(options.items()) if v is not None}
    return "" if not given else " " + " ".join(f"{k}={v}" for k, v in given.items())


# --- callables -----------------------------------------------------------------------------------------


@dataclass
class CallableAdapter(Adapter):
    """``fn(query, k)`` (or ``fn(query)``; a coroutine function works too) returning ranked ``(doc_id, score)``
    pairs, bare ids, or mappings with ``doc_id``, ``score`` and optional ``text``, ``source_doc``."""

    fn: Any
    doc_id_field: str | None = None
    name: str | None = None
    kind = "callable"

    def __post_init__(self) -> None:
        self._takes_k = _accepts_two(self.fn)

    @property
    def identity(self) -> str:
        return f"callable:{self.name or _named(self.fn)}" + _options_key({"doc_id_field": self.doc_id_field})

    @property
    def default_name(self) -> str:
        return (self.name or _named(self.fn)).rsplit(":", 1)[-1].rsplit(".", 1)[-1].strip("<>") or "callable"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "target": self.name or _named(self.fn), "doc_id_field": self.doc_id_field}

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        result = self.fn(query, k) if self._takes_k else self.fn(query)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return hits_from(result, "the callable", self.doc_id_field)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _accepts_two(fn: Any) -> bool:
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


def required_positional(fn: Any) -> int | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        for p in parameters
    )


# --- LlamaIndex ------------------------------------------------------------------------------------------


def _probe(obj: Any, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return value
        if value is not None and hasattr(value, "value") and isinstance(value.value, str):  # an enum
            return value.value
    return None


def _model_name(obj: Any) -> str | None:
    for attr in ("_embed_model", "embed_model", "_llm", "llm", "embeddings"):
        model = getattr(obj, attr, None)
        name = _probe(model, "model_name", "model") if model is not None else None
        if name is not None:
            return str(name)
    return None


@dataclass
class LlamaIndexAdapter(Adapter):
    """A LlamaIndex ``BaseRetriever`` (any, ``QueryFusionRetriever`` included), called as RetrieverEvaluator
    calls it: its own top_k, list order kept. The doc id is the node id, or ``doc_id_field``: ``ref_doc_id``
    (the source document) or a (dotted) metadata field. The node's text is kept."""

    retriever: Any
    doc_id_field: str | None = None
    name: str | None = None
    kind = "llamaindex"

    @property
    def identity(self) -> str:
        params = {k: v for k, v in self._params().items() if k != "retrievers"}
        params["children"] = ",".join(c["class"] for c in self._params().get("retrievers", [])) or None
        return f"llamaindex:{self.name or _named(self.retriever)}" + _options_key(params)

    @property
    def default_name(self) -> str:
        return (self.name or type(self.retriever).__name__).rsplit(":", 1)[-1]

    def _params(self) -> dict[str, Any]:
        out = _describe_llamaindex(self.retriever)
        out["doc_id_field"] = self.doc_id_field
        children = getattr(self.retriever, "_retrievers", None)
        if isinstance(children, (list, tuple)) and children:
            out["retrievers"] = [_describe_llamaindex(c) for c in children]
        return out

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **({"target": self.name} if self.name else {}), **self._params()}

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        nodes = self.retriever.retrieve(query)
        hits = []
        for i, scored in enumerate(nodes[:k] if isinstance(nodes, list) else list(nodes)[:k]):
            where = f"LlamaIndex node {i + 1}"
            node = getattr(scored, "node", scored)
            field = self.doc_id_field
            if not field or field == "node_id":
                raw = node.node_id
            elif field == "ref_doc_id":
                raw = node.ref_doc_id
            else:
                raw = lookup(node.metadata, field)
            if raw is None:
                raise RagMetricsError(f"{where}: no metadata field {field!r} (keys {sorted(node.metadata)})")
            text = node.get_content() if hasattr(node, "get_content") else getattr(node, "text", None)
            hits.append(Hit(as_doc_id(raw, where), as_score(getattr(scored, "score", None), where), text))
        return hits


def _describe_llamaindex(retriever: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"class": type(retriever).__name__}
    top_k = _probe(retriever, "similarity_top_k", "_similarity_top_k", "top_k")
    if top_k is not None:
        out["top_k"] = top_k
    for key, names in (("mode", ("mode", "_vector_store_query_mode")), ("num_queries", ("num_queries",))):
        value = _probe(retriever, *names)
        if value is not None:
            out[key] = value
    model = _model_name(retriever)
    if model:
        out["model"] = model
    index = getattr(retriever, "_index", None)
    index_id = _probe(index, "index_id") if index is not None else None
    if index_id:
        out["index"] = index_id
    return out


# --- LangChain ----------------------------------------------------------------------------------------------


@dataclass
class LangChainAdapter(Adapter):
    """A LangChain ``BaseRetriever``, called with ``invoke(query)`` and cut at k. The doc id is the (dotted)
    metadata field ``doc_id_field`` (``id``: the document's own id); by default metadata ``doc_id``, else the
    document's id. The score is metadata ``score`` or ``relevance_score`` when there is one; the text is
    ``page_content``."""

    retriever: Any
    doc_id_field: str | None = None
    name: str | None = None
    kind = "langchain"

    @property
    def identity(self) -> str:
        return f"langchain:{self.name or _named(self.retriever)}" + _options_key(self._params())

    @property
    def default_name(self) -> str:
        return (self.name or type(self.retriever).__name__).rsplit(":", 1)[-1]

    def _params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": type(self.retriever).__name__}
        top_k = _probe(self.retriever, "k", "top_k")
        if top_k is None:
            kwargs = getattr(self.retriever, "search_kwargs", None)
            top_k = kwargs.get("k") if isinstance(kwargs, Mapping) else None
        if top_k is not None:
            out["top_k"] = top_k
        model = _model_name(getattr(self.retriever, "vectorstore", None)) or _model_name(self.retriever)
        if model:
            out["model"] = model
        out["doc_id_field"] = self.doc_id_field
        return out

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **({"target": self.name} if self.name else {}), **self._params()}

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        documents = self.retriever.invoke(query)
        hits = []
        for i, doc in enumerate(list(documents)[:k]):
            where = f"LangChain document {i + 1}"
            metadata = getattr(doc, "metadata", None) or {}
            field = self.doc_id_field
            if field == "id":
                raw = getattr(doc, "id", None)
            elif field:
                raw = lookup(metadata, field)
            else:
                raw = metadata.get("doc_id", getattr(doc, "id", None))
            if raw is None:
                wanted = f"metadata field {field!r}" if field else "metadata 'doc_id' or a document id"
                raise RagMetricsError(f"{where}: no {wanted} (metadata keys {sorted(metadata)}); set the doc id field")
            score = metadata.get("score", metadata.get("relevance_score"))
            hits.append(Hit(as_doc_id(raw, where), as_score(score, where), getattr(doc, "page_content", None)))
        return hits
