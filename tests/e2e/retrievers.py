"""Retrievers the e2e tests register with the dashboard (``RAGMETRICS_RETRIEVERS``): the SciFact sample's BM25 run
served query by query from its file, with a delay per call."""

from __future__ import annotations

import gzip
import json
import time
from functools import cache
from pathlib import Path

SCIFACT = Path(__file__).resolve().parents[2] / "sample_runs" / "scifact"


@cache
def _rankings() -> dict[str, list[tuple[str, float]]]:
    """Query text -> the BM25 run's ranked (doc id, score) pairs."""
    texts = {}
    for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            texts[str(record["id"])] = record["text"]
    ranked: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(SCIFACT / "runs" / "bm25-stem.trec.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            qid, _, doc, _, score, *_ = line.split()
            ranked.setdefault(texts[qid], []).append((doc, float(score)))
    return ranked


def _serve(query: str, k: int, delay: float) -> list[tuple[str, float]]:
    time.sleep(delay)
    return sorted(_rankings().get(query, []), key=lambda pair: -pair[1])[:k]


def scifact_bm25(query: str, k: int) -> list[tuple[str, float]]:
    return _serve(query, k, 0.02)


SLOW_DELAY = 0.15
"""Seconds the slow stub waits per call: 300 queries four at a time take about 11 s, time to see and cancel them."""


def slow_scifact_bm25(query: str, k: int) -> list[tuple[str, float]]:
    return _serve(query, k, SLOW_DELAY)


FAQ = SCIFACT.parent / "product_faq_zh"


@cache
def _faq_answers() -> dict[str, list[tuple[str, float]]]:
    """The FAQ sample's query text -> its relevant documents, best grade first."""
    found: dict[str, list[tuple[str, float]]] = {}
    for record in json.loads((FAQ / "eval_set.json").read_text(encoding="utf-8")):
        docs = record.get("relevant_docs") or {}
        graded = docs if isinstance(docs, dict) else dict.fromkeys(docs, 1)
        found[record["query"]] = sorted(((str(d), float(g)) for d, g in graded.items()), key=lambda p: -p[1])
    return found


def slow_faq_answers(query: str, k: int) -> list[tuple[str, float]]:
    """Answers the FAQ sample's queries with their relevant documents, a tenth of a second each: a retrieval that
    is still running when a test acts during it."""
    time.sleep(0.1)
    return _faq_answers().get(query, [])[:k]
