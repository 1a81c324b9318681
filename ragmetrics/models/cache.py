"""Replies on disk, keyed by the content of the request, so a repeated generation or judging costs nothing.

One SQLite file, ``models.sqlite`` in the cache folder (:func:`ragmetrics.foundation.importer.default_cache_dir`:
``$RAGMETRICS_CACHE_DIR`` first), in WAL mode like the retrievers' cache: a reply is committed the moment it
arrives and several processes may share the file. The key is a SHA-256 of the model's identity (endpoint and
model, never a credential), the messages and the parameters (temperature, max_tokens, seed): change any of them
and the model is asked again. Failures are not kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from ragmetrics.foundation.disk_cache import CacheFile, content_key
from ragmetrics.foundation.importer import default_cache_dir
from ragmetrics.models.base import ChatModel, Message, Reply

CACHE_FILE = "models.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency REAL NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(
    identity: str, messages: Sequence[Message], temperature: float, max_tokens: int | None, seed: int | None
) -> str:
    """The cache key of one request: what is asked, of whom, with which parameters."""
    return content_key(identity, [[m.role, m.content] for m in messages], float(temperature), max_tokens, seed)


class ReplyCache:
    """Replies on disk: one connection shared by threads under a lock."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(folder if folder is not None else default_cache_dir()) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = CacheFile(self.path, SCHEMA)

    def get(self, key: str) -> Reply | None:
        rows = self._file.rows(
            "SELECT text, model, prompt_tokens, completion_tokens, latency FROM replies WHERE key = ?", (key,)
        )
        if not rows:
            return None
        text, model, prompt_tokens, completion_tokens, latency = rows[0]
        return Reply(text, model, prompt_tokens, completion_tokens, float(latency), cached=True)

    def put(self, key: str, identity: str, reply: Reply) -> None:
        row = (
            key,
            identity,
            reply.text,
            reply.model,
            reply.prompt_tokens,
            reply.completion_tokens,
            reply.latency_s,
            time.time(),
        )
        self._file.write("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)

    def count(self, identity: str | None = None) -> int:
        return self._file.count("replies", "identity", identity)

    def close(self) -> None:
        self._file.close()


class CachedModel:
    """``model`` behind a :class:`ReplyCache`: a request asked before is answered from disk (``cached=True``,
    the original call's latency and tokens), anything else is asked and its reply kept."""

    def __init__(self, model: ChatModel, cache: ReplyCache) -> None:
        self.model = model
        self.cache = cache
        self.name = model.name
        self.identity = model.identity

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Reply:
        key = request_key(self.identity, messages, temperature, max_tokens, seed)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        reply = self.model.chat(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        self.cache.put(key, self.identity, reply)
        return reply
