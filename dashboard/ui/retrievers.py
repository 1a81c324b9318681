"""Live retrievers in the dashboard: the ones the deployer registered, the built-in BM25, the session's running
job, and the "try hybrid (+BM25)" action of Diagnosis.

Nobody types a retriever into the page: the choices are the built-in BM25 (when the dataset has a corpus) and
the retrievers registered in the configuration, so the server never calls an address a user gave it.
Register them in the environment, ``RAGMETRICS_RETRIEVERS="name=spec; other=spec"``, or in a
``[ragmetrics.retrievers]`` table of ``.streamlit/secrets.toml`` (``name = "spec"``), where a spec is what
``ragmetrics retrieve --retriever`` takes: ``module:attr`` (a callable ``fn(query, k)``, a LlamaIndex or LangChain
retriever, or a zero-argument factory of one; the server's working directory is importable) or an ``http(s)://``
endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from dashboard.data.jobs import RetrievalJob
from dashboard.data.workspace import DatasetEntry, RunEntry, Workspace
from dashboard.ui import cache, settings
from ragmetrics.analysis.fusion import fuse
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.registrations import read_registrations
from ragmetrics.io.runmeta import retriever_tags
from ragmetrics.retrieve import retrieve

BM25 = "BM25 (built in, over the dataset's corpus)"
BM25_SPEC = "bm25"
ENV = "RAGMETRICS_RETRIEVERS"
JOB_KEY = "retrieve.job"
CONCURRENCY = 4
HYBRID_K = 100
"""Documents BM25 retrieves per query for "try hybrid" (RRF with k = 60 over the run and these)."""


def registered() -> dict[str, str]:
    """``{name: spec}`` of the deployer's retrievers: the environment's, then the secrets' table."""
    found = dict(read_registrations(ENV).found)
    table = settings.secrets_table().get("retrievers")
    if isinstance(table, Mapping):
        for name, spec in table.items():
            if isinstance(spec, str) and spec.strip():
                found.setdefault(str(name), spec.strip())
    return found


def registration_problems() -> tuple[str, ...]:
    """The items of ``$RAGMETRICS_RETRIEVERS`` :func:`registered` leaves out, in words."""
    return read_registrations(ENV).problems


def has_corpus(dataset: DatasetEntry) -> bool:
    documents = dataset.dataset.documents
    return documents is not None and len(documents) > 0


def choices(dataset: DatasetEntry) -> dict[str, str]:
    """``{label: spec}`` the page offers on this dataset: the built-in BM25 when there is a corpus, then the
    registered retrievers."""
    offered = {BM25: BM25_SPEC} if has_corpus(dataset) else {}
    offered.update(registered())
    return offered


SOURCE_PREFIX = "retriever: "
"""A run this page stored names its retriever in its source: ``retriever: <label>``."""


def made_by(dataset: DatasetEntry, run: RunEntry) -> str | None:
    """The offered retriever (its label) that made ``run``, or None (an uploaded run, or one no longer offered)."""
    label = run.source[len(SOURCE_PREFIX) :] if run.source.startswith(SOURCE_PREFIX) else None
    return label if label is not None and label in choices(dataset) else None


def current_job() -> RetrievalJob | None:
    """This session's retrieval (running, or ended and not stored yet)."""
    job = st.session_state.get(JOB_KEY)
    return job if isinstance(job, RetrievalJob) else None


def start_job(dataset: DatasetEntry, label: str, *, k: int, name: str) -> RetrievalJob:
    """Start retrieving with the offered retriever ``label`` (its spec comes from :func:`choices`, never from the
    user) for every query of ``dataset``."""
    spec = choices(dataset).get(label)
    if spec is None:
        raise RagMetricsError(f"no retriever {label!r} is offered on this dataset")
    options: dict[str, Any] = {"k": int(k), "name": name or None, "concurrency": CONCURRENCY}
    job = RetrievalJob(dataset.dataset, spec, label, options, dataset_id=dataset.id).start()
    st.session_state[JOB_KEY] = job
    return job


def finish_job(workspace: Workspace) -> tuple[RetrievalJob, DatasetEntry | None, RunEntry | None, bool] | None:
    """An ended job of this session, taken off it: the job, the dataset it ran on (None when that was deleted
    since), the stored run when it gave one, and whether that run was stored before (the same rows: the store
    keeps one copy, under its first name). The run is stored under the dataset the job started on, whichever
    the page shows now."""
    job = current_job()
    if job is None or job.status().running:
        return None
    del st.session_state[JOB_KEY]
    result = job.status().result
    dataset = workspace.dataset(job.dataset_id)
    if result is None or dataset is None:
        return job, dataset, None, False
    known = workspace.stored_run(dataset.id, result.run) is not None
    tags = {**retriever_tags(result.metadata), "retriever.label": job.label}
    entry = cache.add_run(workspace, dataset, result.run, source=SOURCE_PREFIX + job.label, tags=tags)
    return job, dataset, entry, known


def try_hybrid(workspace: Workspace, dataset: DatasetEntry, run: RunEntry) -> RunEntry:
    """Fuse ``run`` with the built-in BM25 over the dataset's corpus (RRF, k = 60) and store the fused run.

    BM25's index is built once per corpus and its answers are cached (:mod:`ragmetrics.retrieve`), so trying
    again, or from another run, costs only the fusion."""
    if not has_corpus(dataset):
        raise RagMetricsError(f"dataset {dataset.name!r} has no corpus to build BM25 over")
    lexical = retrieve(dataset.dataset, BM25_SPEC, k=HYBRID_K, name="bm25")
    if lexical.failed:
        raise RagMetricsError(f"BM25 failed on {len(lexical.failed)} queries: {lexical.failed[0]}")
    fused = fuse([run.run, lexical.run], method="rrf", k=60, name=f"{run.name} + BM25 (RRF)")
    tags = {"fusion": "rrf", "fusion.k": "60", "fusion.of": f"{run.name} + built-in BM25 (top {HYBRID_K})"}
    return cache.add_run(workspace, dataset, fused, source=f"fusion: {run.name} + built-in BM25 (RRF, k=60)", tags=tags)
