"""Calling a retriever for every query of a dataset: bounded concurrency, timeouts, retries, the cache."""

from __future__ import annotations

import itertools
import math
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.redact import redact_urls
from ragmetrics.foundation.version import __version__
from ragmetrics.retrieve.adapters import Adapter, CallError, Hit
from ragmetrics.retrieve.cache import ResponseCache, answer_key, default_cache_dir
from ragmetrics.retrieve.noise import repeat_noise
from ragmetrics.retrieve.resolver import resolve
from ragmetrics.retrieve.result import Call, Retrieval, latency_summary

Progress = Callable[[int, int], Any]
"""``progress(done, total)``: called on the caller's thread after each answer (cached ones first)."""

NOISE_METRICS = ("ndcg@10", "recall@10", "mrr")
FAIL_FAST = 5
"""When the first this many queries called all fail and none was answered (nor cached), the retriever is taken
to be broken: the run stops with the error instead of listing every query as failed."""
MAX_BACKOFF = 30.0


@dataclass
class _Outcome:
    hits: list[Hit] | None
    latency: float | None
    attempts: int
    error: str | None = None


@dataclass
class _Caller:
    """Calls one adapter with a timeout per call and retries with exponential backoff (with jitter)."""

    adapter: Adapter
    timeout: float | None
    retries: int
    backoff: float
    stopping: threading.Event = field(default_factory=threading.Event)
    rng: random.Random = field(default_factory=random.Random)

    def attempt(self, query: str, k: int) -> list[Hit]:
        if self.adapter.native_timeout or self.timeout is None:
            return self.adapter.search(query, k, self.timeout)
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["hits"] = self.adapter.search(query, k, self.timeout)
            except BaseException as exc:  # handed to the waiting thread
                box["error"] = exc

        worker = threading.Thread(target=work, daemon=True, name="ragmetrics-retrieve-call")
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise CallError(f"timed out after {self.timeout} s")
        if "error" in box:
            raise box["error"]
        return box["hits"]

    def __call__(self, query: str, k: int) -> _Outcome:
        error = "stopped"
        attempts = 0
        for attempt in range(self.retries + 1):
            if self.stopping.is_set():
                break
            attempts += 1
            started = time.perf_counter()
            retry_after = None
            try:
                hits = self.attempt(query, k)
                return _Outcome(list(hits)[:k], time.perf_counter() - started, attempts)
            except CallError as exc:
                error, retryable, retry_after = str(exc), exc.retryable, exc.retry_after
            except RagMetricsError as exc:
                error, retryable = str(exc), False
            except Exception as exc:
                error, retryable = f"{type(exc).__name__}: {exc}", True
            if not retryable or attempt == self.retries:
                break
            delay = retry_after if retry_after is not None else self.backoff * 2**attempt * self.rng.uniform(0.5, 1.0)
            self.stopping.wait(min(delay, MAX_BACKOFF))
        return _Outcome(None, None, attempts, error)


def retrieve(
    dataset: Dataset,
    retriever: Any,
    *,
    k: int = 100,
    concurrency: int = 4,
    repeat: int = 1,
    timeout: float | None = 30.0,
    retries: int = 3,
    backoff: float = 0.5,
    cache: bool | str = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_key: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    doc_id_field: str | None = None,
    request: str | None = None,
    response: str | None = None,
    headers: Mapping[str, str] | None = None,
    noise_metrics: Sequence[str] = NOISE_METRICS,
) -> Retrieval:
    """Call ``retriever`` for every query of ``dataset`` (its ``queries_table``: ``query_id`` and ``query``).

    ``retriever``: ``"bm25"`` (the built-in baseline over the dataset's corpus), an ``http(s)://`` URL,
    ``"module:attr"``, a callable ``fn(query, k)``, a LlamaIndex or LangChain retriever, or an
    :class:`~ragmetrics.retrieve.adapters.Adapter` (see :func:`~ragmetrics.retrieve.resolver.resolve`).
    ``doc_id_field``, ``request``, ``response``, ``headers``: the adapters' options.

    At most ``concurrency`` calls at once, each given ``timeout`` seconds and tried again up to ``retries``
    times (errors, timeouts, HTTP 429 and 5xx) after ``backoff * 2**n`` seconds (jittered). A query that still
    fails is listed in :attr:`Retrieval.failed`; when the first few queries all fail the retriever is taken to
    be broken and a :class:`RagMetricsError` says why.

    ``cache``: True reads and writes the answers in ``cache_dir`` (default
    :func:`~ragmetrics.retrieve.cache.default_cache_dir`), one SQLite row per answered query as it arrives, so an
    interrupted run resumes where it stopped; ``"refresh"`` calls everything again and stores the new
    answers; False neither reads nor writes. ``cache_key`` replaces the retriever's identity in the key (the
    identity is the adapter kind and its parameters, URL or ``module:attr``; a function object is known by its
    ``module:qualname``, so give a lambda, a nested function or a changed retriever a ``cache_key`` of its own).

    ``repeat=N`` asks every query N times (each repeat cached on its own) and reports the noise
    (:mod:`ragmetrics.retrieve.noise`, over ``noise_metrics``: nDCG@10, recall@10 and MRR by default).
    ``progress(done, total)`` is called after each answer; an exception it raises stops the run (every answer
    that had arrived is already in the cache).
    """
    if k < 1 or concurrency < 1 or repeat < 1 or retries < 0:
        raise RagMetricsError(
            f"k, concurrency and repeat must be >= 1 and retries >= 0 (got {k}, {concurrency}, {repeat}, {retries})"
        )
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise RagMetricsError(f"timeout must be a finite number of seconds above 0, or None for none (got {timeout})")
    if cache not in (True, False, "refresh"):
        raise RagMetricsError(f"cache must be True, False or 'refresh' (got {cache!r})")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    made = not isinstance(retriever, Adapter)
    adapter = resolve(
        retriever,
        dataset=dataset,
        cache_dir=folder if cache is not False else None,
        doc_id_field=doc_id_field,
        request=request,
        response=response,
        headers=headers,
    )
    try:
        return _Retrieval(dataset, adapter, k, concurrency, repeat, timeout, retries, backoff, cache, folder).run(
            cache_key, name, progress, noise_metrics
        )
    finally:
        if made:
            adapter.close()


@dataclass
class _Retrieval:
    dataset: Dataset
    adapter: Adapter
    k: int
    concurrency: int
    repeat: int
    timeout: float | None
    retries: int
    backoff: float
    cache: bool | str
    folder: Path

    def run(
        self, cache_key: str | None, name: str | None, progress: Progress | None, noise_metrics: Sequence[str]
    ) -> Retrieval:
        started_at = datetime.now(timezone.utc)
        started = time.perf_counter()
        table = self.dataset.queries_table
        query_ids = [str(q) for q in table.column("query_id").to_pylist()]
        texts = [str(t or "").strip() for t in table.column("query").to_pylist()]
        if query_ids and not any(texts):
            raise RagMetricsError(
                "the dataset's queries have no text to retrieve with (give the queries file: --queries)"
            )
        identity = cache_key or self.adapter.identity
        tasks = [(qi, r) for r in range(self.repeat) for qi in range(len(query_ids))]
        keys = {t: answer_key(identity, texts[t[0]], self.k, t[1]) for t in tasks}
        answers: dict[tuple[int, int], list[Hit]] = {}
        calls: dict[tuple[int, int], Call] = {}
        store = ResponseCache(self.folder) if self.cache is not False else None
        done = 0
        total = len(tasks)
        try:
            if store is not None and self.cache is True:
                found = store.get_many(keys.values())
                for task, key in keys.items():
                    if key in found:
                        hits, latency, _attempts = found[key]
                        answers[task] = hits
                        calls[task] = Call(query_ids[task[0]], task[1], latency, 0, True, len(hits))
            for task in tasks:
                if task not in calls and not texts[task[0]]:
                    calls[task] = Call(query_ids[task[0]], task[1], None, 0, False, 0, "the query has no text")
            done = len(calls)
            if progress is not None:
                progress(done, total)
            # queries of the same text in one repeat are one question: asked once, its answer (and its one cache
            # row) theirs alike, so a replay from the cache reports what the calls took
            asked: dict[str, tuple[int, int]] = {}
            twins: dict[tuple[int, int], list[tuple[int, int]]] = {}
            for task in (t for t in tasks if t not in calls):
                first = asked.setdefault(keys[task], task)
                twins.setdefault(first, [])
                if first != task:
                    twins[first].append(task)
            pending = list(asked.values())
            caller = _Caller(self.adapter, self.timeout, self.retries, self.backoff)

            def ask(task: tuple[int, int]) -> _Outcome:
                outcome = caller(texts[task[0]], self.k)
                if store is not None and outcome.hits is not None:
                    store.put(
                        keys[task],
                        retriever=identity,
                        query=texts[task[0]],
                        k=self.k,
                        repeat=task[1],
                        hits=outcome.hits,
                        latency=outcome.latency or 0.0,
                        attempts=outcome.attempts,
                    )
                return outcome

            called = 0
            answered_any = bool(answers)
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="ragmetrics-retrieve") as pool:
                futures: dict[Future[_Outcome], tuple[int, int]] = {}
                try:
                    futures = {pool.submit(ask, t): t for t in pending}
                    waiting = set(futures)
                    while waiting:
                        finished, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                        for future in finished:
                            task = futures[future]
                            outcome = future.result()
                            qid = query_ids[task[0]]
                            called += 1
                            if outcome.hits is None:
                                calls[task] = Call(qid, task[1], None, outcome.attempts, False, 0, outcome.error)
                                for twin in twins[task]:
                                    calls[twin] = Call(query_ids[twin[0]], twin[1], None, 0, False, 0, outcome.error)
                                if not answered_any and called >= FAIL_FAST:
                                    raise RagMetricsError(
                                        f"the retriever failed on the first {called} queries called "
                                        f"({self.adapter.kind} {redact_urls(self.adapter.identity)}): {outcome.error}"
                                    )
                            else:
                                answered_any = True
                                answers[task] = outcome.hits
                                calls[task] = Call(
                                    qid, task[1], outcome.latency, outcome.attempts, False, len(outcome.hits)
                                )
                                for twin in twins[task]:  # answered by that call, not called: as from the cache
                                    answers[twin] = outcome.hits
                                    calls[twin] = Call(
                                        query_ids[twin[0]], twin[1], outcome.latency, 0, True, len(outcome.hits)
                                    )
                            done += 1 + len(twins[task])
                            if progress is not None:
                                progress(done, total)
                except BaseException:
                    caller.stopping.set()
                    for future in futures:
                        future.cancel()
                    raise
        finally:
            if store is not None:
                store.close()
        ordered = tuple(calls[t] for t in tasks)
        repeated = _first_of_each(answers)
        _warn_rising_scores(answers, query_ids, self.adapter.default_name)
        name = name or self.adapter.default_name
        runs = tuple(_run_of(query_ids, answers, r, name if r == 0 else f"{name}#{r + 1}") for r in range(self.repeat))
        metadata = self._metadata(ordered, name, identity, started_at, time.perf_counter() - started)
        metadata["counts"]["repeated_hits"] = repeated
        if self.repeat > 1:
            answered = [{c.query_id for c in ordered if c.repeat == r and not c.failed} for r in range(self.repeat)]
            metadata["noise"] = repeat_noise(self.dataset, runs, answered, self.k, noise_metrics)
        return Retrieval(run=runs[0], runs=runs, metadata=metadata, calls=ordered)

    def _metadata(
        self, calls: tuple[Call, ...], name: str, identity: str, started_at: datetime, seconds: float
    ) -> dict[str, Any]:

        failed = [c for c in calls if c.failed]
        latencies = np.array([c.latency for c in calls if c.latency is not None], dtype=np.float64)
        fresh = np.array([c.latency for c in calls if c.latency is not None and not c.cached], dtype=np.float64)
        retriever = {"name": self.adapter.default_name, **self.adapter.describe()}
        if identity != self.adapter.identity:
            retriever["cache_key"] = redact_urls(identity)
        return {
            "ragmetrics": __version__,
            "run": name,
            "dataset": self.dataset.name,
            "retriever": retriever,
            "k": self.k,
            "repeat": self.repeat,
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "retries": self.retries,
            "started": started_at.isoformat(timespec="seconds"),
            "seconds": round(seconds, 3),
            "queries": len(calls) // self.repeat if self.repeat else 0,
            "counts": {
                "calls": len(calls),
                "answered": sum(not c.failed for c in calls),
                "cached": sum(c.cached for c in calls),
                "called": sum(c.attempts > 0 for c in calls),
                "empty": sum(not c.failed and c.hits == 0 for c in calls),
                "failed": len(failed),
                "retries": sum(max(0, c.attempts - 1) for c in calls),
            },
            "latency": latency_summary(latencies),
            "latency_called": latency_summary(fresh),
            "failed": [{"query_id": c.query_id, "repeat": c.repeat, "error": c.error} for c in failed],
            "empty_queries": sorted({c.query_id for c in calls if not c.failed and c.hits == 0}),
            "cache": None if self.cache is False else str(self.folder),
        }


def _first_of_each(answers: dict[tuple[int, int], list[Hit]]) -> int:
    """Keep each answer's first hit of each document id (the retriever's best-ranked; a retriever of chunks named by
    their document's id returns it once per chunk) and say how many were left out: a run file names a document once
    per query (trec_eval refuses it twice), and eval would keep the best one anyway."""
    left_out = 0
    for task, hits in answers.items():
        seen: set[str] = set()
        kept = []
        for hit in hits:
            if hit.doc_id not in seen:
                seen.add(hit.doc_id)
                kept.append(hit)
        left_out += len(hits) - len(kept)
        if len(kept) < len(hits):
            answers[task] = kept
    return left_out


def _warn_rising_scores(answers: Mapping[tuple[int, int], list[Hit]], query_ids: list[str], retriever: str) -> None:
    """Warn when the scores of most answers rise along the order the retriever gave them: a run is read by score,
    higher first (as trec_eval reads it), so distances (lower is better) would be evaluated in reverse."""
    scored = {
        key: [float(h.score) for h in hits if h.score is not None]
        for key, hits in answers.items()
        if len(hits) > 1 and all(h.score is not None for h in hits)
    }
    rising = [key for key, scores in scored.items() if any(b > a for a, b in itertools.pairwise(scores))]
    if scored and len(rising) * 2 > len(scored):
        example = query_ids[rising[0][0]]
        warnings.warn(
            f"retriever {retriever}: in {len(rising)} of {len(scored)} answers the scores rise along the order it "
            f"gave (such as query {example!r}): a run is evaluated by score, higher first, as trec_eval reads it; "
            "if they are distances (lower is better), map them to a score that falls along the ranking",
            RagMetricsWarning,
            stacklevel=3,
        )


def _run_of(query_ids: list[str], answers: dict[tuple[int, int], list[Hit]], repeat: int, name: str) -> Run:
    """One repeat's answers as a run: the given order as ``rank``; ``score`` = -rank when a hit has no score."""
    rows = [
        (query_ids[qi], pos + 1, hit)
        for (qi, r), hits in sorted(answers.items())
        if r == repeat
        for pos, hit in enumerate(hits)
    ]
    scored = all(h.score is not None for _, _, h in rows)
    columns: dict[str, Any] = {
        "query_id": pa.array([q for q, _, _ in rows], type=pa.large_string()),
        "doc_id": pa.array([h.doc_id for _, _, h in rows], type=pa.large_string()),
        "score": pa.array([h.score if scored else -float(p) for _, p, h in rows], type=pa.float64()),
        "rank": pa.array([p for _, p, _ in rows], type=pa.int64()),
    }
    for column in ("text", "source_doc"):
        values = [getattr(h, column) for _, _, h in rows]
        if any(v is not None for v in values):
            columns[column] = pa.array(values, type=pa.large_string())
    return Run.from_table(pa.table(columns), name=name, has_scores=scored)
