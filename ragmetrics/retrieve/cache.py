"""The response cache: one SQLite row per answered query, written as each answer arrives (by the thread that
received it, so an answer is on disk before the run goes on, whatever happens to the process next).

The key is a SHA-256 of the retriever's identity, the query text, k and the repeat number, so that a re-run
after a crash, or with other metrics, calls only what was not answered, and each repeat of ``repeat=N`` is
an answer of its own. Failed calls are not kept (the next run tries them again). The file is in WAL mode:
a committed answer survives the process being killed, and several processes may share the file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.foundation.disk_cache import CacheFile, content_key
from ragmetrics.foundation.importer import default_cache_dir
from ragmetrics.retrieve.adapters import Hit

__all__ = ["CACHE_FILE", "ResponseCache", "answer_key", "decode_hits", "default_cache_dir", "encode_hits"]

CACHE_FILE = "retrieve.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    retriever TEXT NOT NULL,
    query TEXT NOT NULL,
    k INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    hits TEXT NOT NULL,
    latency REAL,
    attempts INTEGER,
    created REAL NOT NULL
)
"""


def answer_key(identity: str, query: str, k: int, repeat: int) -> str:
    return content_key(identity, query, int(k), int(repeat))


def encode_hits(hits: Sequence[Hit]) -> str:
    return json.dumps([list(h) for h in hits], ensure_ascii=False, separators=(",", ":"))


def decode_hits(text: str) -> list[Hit]:
    return [Hit(*row) for row in json.loads(text)]


class ResponseCache:
    """Answers on disk: one connection, shared by the threads that answer under a lock (each answer is
    committed by the thread that received it, the moment it arrives)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = CacheFile(self.path, SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, tuple[list[Hit], float | None, int]]:
        """``{key: (hits, latency, attempts)}`` of the keys that have an answer."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, tuple[list[Hit], float | None, int]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._file.rows(f"SELECT key, hits, latency, attempts FROM answers WHERE key IN ({marks})", chunk)
            for key, hits, latency, attempts in rows:
                found[key] = (decode_hits(hits), latency, int(attempts or 1))
        return found

    def put(
        self,
        key: str,
        *,
        retriever: str,
        query: str,
        k: int,
        repeat: int,
        hits: Sequence[Hit],
        latency: float,
        attempts: int,
    ) -> None:
        row = (key, retriever, query, int(k), int(repeat), encode_hits(hits), latency, attempts, time.time())
        self._file.write("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def count(self, retriever: str | None = None) -> int:
        return self._file.count("answers", "retriever", retriever)

    def queries(self, retriever: str | None = None) -> list[Any]:
        """The query texts answered (for ``retriever``), for inspection and tests."""
        sql = "SELECT query FROM answers" + (" WHERE retriever = ?" if retriever else "")
        return [row[0] for row in self._file.rows(sql, (retriever,) if retriever else ())]

    def close(self) -> None:
        self._file.close()
