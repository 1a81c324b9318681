"""Work that outlives one script run, on a thread of its own: a retrieval over every query of a dataset
(:class:`RetrievalJob`), the generation of a batch of candidate queries (:class:`GenerationJob`), a judge over a
pool of pairs (:class:`JudgeJob`).

A :class:`RetrievalJob` calls :func:`ragmetrics.retrieve.retrieve` with a progress callback that counts answers
and stops the run when :meth:`RetrievalJob.cancel` was asked (every answer that had arrived stays in the response
cache, so starting it again costs only the queries left). The page polls :meth:`RetrievalJob.status`; the job
never touches Streamlit, so it keeps going while the page reruns.

A :class:`JudgeJob` grades pairs a few at a time (:func:`ragmetrics.judges.base.run_judge`) and hands each few to
its ``save`` callback at once (the page stores them with their provenance), so a cancel, a reload or a restarted
server loses no label given so far; started again, it is given only the pairs not labelled yet.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Self

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.foundation.redact import scrub
from ragmetrics.judges.base import Judge, JudgeLabel, Pair, run_judge
from ragmetrics.retrieve import Retrieval, retrieve
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.synth.build import Stopped, corpus_of, generate_batch
from ragmetrics.synth.filters import default_retrievers
from ragmetrics.synth.generators import make_generator

__all__ = [
    "BackgroundJob",
    "Cancelled",
    "GenerationJob",
    "JobStatus",
    "JudgeJob",
    "JudgeStatus",
    "RetrievalJob",
    "generation",
    "start_generation",
]


class Cancelled(RagMetricsError):
    """The user cancelled the retrieval."""


@dataclass(frozen=True)
class JobStatus:
    """Where a job is: ``done`` of ``total`` answers (cached ones included), and once it ended its ``result`` or
    its ``error`` (``cancelled`` when the user stopped it)."""

    done: int
    total: int
    running: bool
    seconds: float
    result: Retrieval | None = None
    error: str | None = None
    cancelled: bool = False

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


@dataclass
class BackgroundJob:
    """Work on a thread of its own (a subclass's ``_work``): its progress (``_done``), its error text
    (``"cancelled"`` when the user stopped it), when it started and ended; :meth:`cancel` asks ``_work`` to stop at
    its next step, :meth:`wait` waits for it to end."""

    _: KW_ONLY
    _done: int = 0
    _error: str | None = None
    _started: float = field(default_factory=time.monotonic)
    _ended: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    thread_name: ClassVar[str] = "ragmetrics-job"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._work, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def _work(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the job to end; True when it did."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._ended is not None

    def ended_after(self, moment: float) -> bool:
        """True when the job ended after ``moment`` (a :func:`time.monotonic` reading): what a page read before it
        may miss what the job stored, so the page reads again before saying the job ended."""
        ended = self._ended
        return ended is not None and ended > moment

    def _where(self) -> dict[str, Any]:
        """The status fields every job has: running, seconds so far, and once ended its error and cancellation."""
        ended = self._ended
        return {
            "running": ended is None,
            "seconds": (ended if ended is not None else time.monotonic()) - self._started,
            "error": self._error if ended is not None else None,
            "cancelled": ended is not None and self._error == "cancelled",
        }


@dataclass
class RetrievalJob(BackgroundJob):
    """One retrieval of ``retriever`` (anything :func:`ragmetrics.retrieve.retrieve` takes) over ``dataset``;
    :meth:`cancel` stops it at the next answer (the answers so far stay cached)."""

    thread_name: ClassVar[str] = "ragmetrics-retrieve-job"

    dataset: Dataset
    retriever: Any
    label: str
    options: dict[str, Any] = field(default_factory=dict)
    dataset_id: str = ""
    """The stored dataset the run goes under, whichever dataset the page shows when the job ends."""
    _total: int = 0
    _result: Retrieval | None = None

    def _progress(self, done: int, total: int) -> None:
        self._done, self._total = done, total
        if self._stop.is_set():
            raise Cancelled("cancelled")

    def _work(self) -> None:
        try:
            self._result = retrieve(self.dataset, self.retriever, progress=self._progress, **self.options)
        except Cancelled:
            self._error = "cancelled"
        except RagMetricsError as err:
            self._error = scrub(err, self.retriever if isinstance(self.retriever, str) else "")
        except Exception as err:  # the page shows it (without the endpoint's credentials); the server goes on
            self._error = scrub(
                f"{type(err).__name__}: {err}", self.retriever if isinstance(self.retriever, str) else ""
            )
        finally:
            self._ended = time.monotonic()

    def status(self) -> JobStatus:
        return JobStatus(
            done=self._done,
            total=self._total,
            result=self._result if self._ended is not None else None,
            **self._where(),
        )


@dataclass
class GenerationJob(BackgroundJob):
    """One generation of a batch of candidate queries (:func:`ragmetrics.synth.build.generate_batch`): each
    candidate is stored as it is written, so :meth:`cancel` (or a crash) keeps those written and a resumed job
    writes only the rest; :meth:`cancel` stops before the next step (reading the corpus, indexing it, storing a
    candidate). ``model``: a registered model's name (the model generator), never an address;
    ``parent_separator``: the stored documents are chunks grouped by the id before it (``synth
    --parent-separator``)."""

    thread_name: ClassVar[str] = "ragmetrics-generate-job"

    candidates: CandidateStore
    batch: str
    dataset: Dataset
    generator: str
    categories: dict[str, int]
    seed: int
    model: str | None = None
    parent_separator: str | None = None
    _total: int = 0
    _stored: int | None = None
    phase: str = "reading and indexing the corpus"
    """What it is doing: reading and indexing the corpus (the filters' retrievers), then generating."""

    def start(self) -> Self:
        self._total = sum(self.categories.values())
        return super().start()

    def _progress(self, done: int, total: int) -> None:
        self._done, self._total = done, total

    def _work(self) -> None:
        try:
            corpus = corpus_of(self.dataset, parent_separator=self.parent_separator)
            self._check_stop()
            generator = make_generator(self.generator, corpus, model=self.model)
            self._check_stop()
            retrievers = default_retrievers(corpus, "plain")
            self._check_stop()
            self.phase = "generating"
            self._stored = generate_batch(self.candidates, self.batch, corpus, generator, self.categories,
                                          seed=self.seed, retrievers=retrievers, progress=self._progress,
                                          stop=self._stop)  # fmt: skip
        except Stopped:
            self._error = "cancelled"
            self._mark_stopped()
        except RagMetricsError as err:
            self._error = str(err)
            self._mark_stopped()
        except Exception as err:  # the page shows it; the server goes on
            self._error = scrub(f"{type(err).__name__}: {err}", "")
            self._mark_stopped()
        finally:
            self._ended = time.monotonic()

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Stopped("stopped")

    def _mark_stopped(self) -> None:
        with contextlib.suppress(Exception):  # the store itself failed: the batch reads as interrupted, resumable
            self.candidates.set_status(self.batch, "stopped")

    def status(self) -> JobStatus:
        return JobStatus(
            done=self._done,
            total=self._total,
            **self._where(),
        )


_GENERATIONS: dict[str, GenerationJob] = {}
_GENERATIONS_LOCK = threading.Lock()


def start_generation(job: GenerationJob) -> GenerationJob:
    """Start ``job`` unless its batch is being generated in this process already (then that job); every session
    of the process sees it (:func:`generation`), so a reload finds its progress."""
    with _GENERATIONS_LOCK:
        running = _GENERATIONS.get(job.batch)
        if running is not None and running.status().running:
            return running
        _GENERATIONS[job.batch] = job.start()
        return job


def generation(batch: str) -> GenerationJob | None:
    """The job generating ``batch`` in this process (running, or the last one, ended), or None."""
    with _GENERATIONS_LOCK:
        return _GENERATIONS.get(batch)


JUDGE_CHUNK = 8
"""Pairs graded (and stored) at a time: each few is in the store before the next is asked for."""


@dataclass(frozen=True)
class JudgeStatus:
    """Where a judge job is: ``done`` of ``total`` pairs graded; ``stored`` labels kept, ``skipped`` (a person
    labelled the pair meanwhile: a judge never overrides one), ``ungraded`` (the judge gave no grade; the first
    ``problems`` say why); once ended, its ``error`` (``cancelled`` when the user stopped it)."""

    done: int
    total: int
    running: bool
    seconds: float
    stored: int
    skipped: int
    ungraded: int
    problems: tuple[str, ...] = ()
    error: str | None = None
    cancelled: bool = False

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


@dataclass
class JudgeJob(BackgroundJob):
    """``judge`` grading ``pairs`` on the scale ``0..max_grade``; ``save(labels)`` keeps each few graded at once
    and returns ``(stored, skipped)``. A judge that grades everything in one call (``batch = 0``, the learned
    one) is given all its pairs at once. :meth:`cancel` stops before the next few pairs (every label given so far
    is stored)."""

    thread_name: ClassVar[str] = "ragmetrics-judge-job"

    judge: Judge
    pairs: Sequence[Pair]
    max_grade: int
    save: Callable[[list[JudgeLabel]], tuple[int, int]]
    label: str
    dataset_id: str = ""
    chunk: int = JUDGE_CHUNK
    _stored: int = 0
    _skipped: int = 0
    _ungraded: int = 0
    _problems: list[str] = field(default_factory=list)

    def _work(self) -> None:
        size = len(self.pairs) if getattr(self.judge, "batch", None) == 0 else max(1, self.chunk)
        try:
            for start in range(0, len(self.pairs), size):
                if self._stop.is_set():
                    self._error = "cancelled"
                    return
                labels = run_judge(self.judge, self.pairs[start : start + size], self.max_grade, batch=0)
                graded = [lab for lab in labels if lab.label is not None]
                for lab in labels:
                    if lab.label is None and len(self._problems) < 5:
                        self._problems.append(f"{lab.pair.doc_id} for {lab.pair.query_id}: {lab.problem}")
                stored, skipped = self.save(graded) if graded else (0, 0)
                self._stored += stored
                self._skipped += skipped
                self._ungraded += len(labels) - len(graded)
                self._done += len(labels)
        except RagMetricsError as err:
            self._error = scrub(err, "")
        except Exception as err:  # the page shows it (without credentials); the server goes on
            self._error = scrub(f"{type(err).__name__}: {err}", "")
        finally:
            self._ended = time.monotonic()

    def status(self) -> JudgeStatus:
        return JudgeStatus(
            done=self._done,
            total=len(self.pairs),
            stored=self._stored,
            skipped=self._skipped,
            ungraded=self._ungraded,
            problems=tuple(self._problems),
            **self._where(),
        )
