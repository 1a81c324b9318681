"""What the on-disk caches share (the retrievers' answers, the models' replies): a key made from the content of
a request, and one SQLite file in WAL mode whose single connection the threads share under a lock, so a row is
committed the moment it is written, survives the process being killed, and several processes may share the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any


def content_key(*parts: Any) -> str:
    """The SHA-256 of ``parts`` written as compact JSON (text kept as it is): equal parts, equal key."""
    payload = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CacheFile:
    """One SQLite file holding one table (made by ``schema`` if missing); every statement runs under the lock."""

    def __init__(self, path: str | os.PathLike[str], schema: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(schema)

    def rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Every row ``sql`` selects."""
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    def write(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        """Run ``sql`` (committed at once: autocommit)."""
        with self._lock:
            self._db.execute(sql, parameters)

    def count(self, table: str, column: str, value: str | None) -> int:
        """Rows of ``table``, or only those whose ``column`` is ``value`` when one is given."""
        sql = f"SELECT COUNT(*) FROM {table}" + (f" WHERE {column} = ?" if value else "")
        return int(self.rows(sql, (value,) if value else ())[0][0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
