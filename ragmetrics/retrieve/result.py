"""What a retrieval returns: the :class:`Retrieval` (the run, its metadata, every call) and its JSON."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragmetrics.foundation.model import Run

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Call:
    """One query asked once (one repeat): ``latency`` (seconds) of the attempt that answered, ``attempts``
    made (0 when the answer came from the cache, or from the call of another query of the same text: ``cached``),
    the number of ``hits``, or the ``error`` it still failed with."""

    query_id: str
    repeat: int
    latency: float | None
    attempts: int
    cached: bool
    hits: int
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


def latency_summary(latencies: np.ndarray) -> dict[str, float | int | None]:
    """p50, p95, max and mean in milliseconds (None without an answered call)."""
    if not len(latencies):
        return {"count": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    ms = np.asarray(latencies, dtype=np.float64) * 1000.0
    return {
        "count": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "max_ms": round(float(ms.max()), 3),
        "mean_ms": round(float(ms.mean()), 3),
    }


@dataclass(frozen=True, eq=False)
class Retrieval:
    """A run made by calling a retriever.

    * ``run``: the first repeat's run (``rank`` = the position the retriever gave; ``text`` / ``source_doc``
      when it gave them). A query that failed is not in it: it is listed in ``failed``, never an empty ranking.
    * ``runs``: one run per repeat (``repeat=N``), named ``NAME`` then ``NAME#2``...
    * ``metadata``: JSON-ready: the retriever (kind, identity, parameters such as top_k, model or index when
      known), k, repeats, the counts (answered, from cache, empty, failed, retries), latency p50/p95/max and the
      repeat noise (:mod:`ragmetrics.retrieve.noise`).
    * ``calls``: one :class:`Call` per query and repeat.
    """

    run: Run
    runs: tuple[Run, ...]
    metadata: dict[str, Any]
    calls: tuple[Call, ...]

    @property
    def latencies(self) -> np.ndarray:
        """Seconds of each answered call (cached ones at the latency they had when answered)."""
        return np.array([c.latency for c in self.calls if c.latency is not None], dtype=np.float64)

    @property
    def failed(self) -> list[Call]:
        return [c for c in self.calls if c.failed]

    @property
    def empty(self) -> list[Call]:
        return [c for c in self.calls if not c.failed and c.hits == 0]

    @property
    def noise(self) -> dict[str, Any] | None:
        return self.metadata.get("noise")

    def calls_frame(self) -> pd.DataFrame:

        columns = ["query_id", "repeat", "latency", "attempts", "cached", "hits", "error"]
        return pd.DataFrame([asdict(c) for c in self.calls], columns=columns)

    def to_dict(self, calls: bool = True) -> dict[str, Any]:
        """The metadata, with every call (``calls=True``) as ``[query_id, repeat, latency_ms, attempts,
        cached, hits, error]`` rows under ``calls`` (``call_columns`` names them)."""
        out = dict(self.metadata)
        if calls:
            out["call_columns"] = ["query_id", "repeat", "latency_ms", "attempts", "cached", "hits", "error"]
            out["calls"] = [
                [
                    c.query_id,
                    c.repeat,
                    None if c.latency is None else round(c.latency * 1000.0, 3),
                    c.attempts,
                    c.cached,
                    c.hits,
                    c.error,
                ]
                for c in self.calls
            ]
        return out

    def to_json(self, calls: bool = True, indent: int | None = 1) -> str:
        """The metadata as indented JSON, each call on a line of its own."""
        data = self.to_dict(calls)
        rows = data.pop("calls", None)
        text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
        if rows is None:
            return text
        lines = ",\n".join("  " + json.dumps(row, ensure_ascii=False, allow_nan=False) for row in rows)
        calls_text = '"calls": [\n' + lines + "\n ]" if rows else '"calls": []'
        return text[:-2] + ",\n " + calls_text + "\n}" if data else "{" + calls_text + "}"

    def write_metadata(self, path: str | os.PathLike[str]) -> None:
        text = self.to_json() + "\n"  # made before the file is opened: a failure leaves what was there
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
