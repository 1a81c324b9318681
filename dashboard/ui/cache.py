"""Caching: the workspace, evaluations keyed on content ids, and frames derived from them.

``get_workspace()`` is the one door to loaded data (a persistent store can
replace it). A run is evaluated once per (dataset content, run content) to
depth ``K_MAX``; K, metric and filters only slice the cached arrays, and the
frames that need a bootstrap are cached on (ids, names, K, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from dashboard.core import frames, samples, targets
from dashboard.core.diagnosis import Finding, diagnose
from dashboard.core.evaluation import RunEval, evaluate_run
from dashboard.core.workspace import DatasetEntry, RunEntry, Workspace


@st.cache_resource(show_spinner="Loading the sample data…")
def get_workspace() -> Workspace:
    """The process-wide workspace, seeded with the bundled samples (first one first)."""
    workspace = Workspace()
    for sample in samples.iter_samples():
        entry = workspace.add_dataset(
            sample.dataset, name=sample.name, source=sample.source, description=sample.description
        )
        for run, source in sample.runs:
            workspace.add_run(entry.id, run, source=source)
    return workspace


@st.cache_resource(show_spinner=False, max_entries=64)
def _evaluate(dataset_id: str, run_id: str, _dataset_entry: DatasetEntry, _run_entry: RunEntry) -> RunEval:
    return evaluate_run(_dataset_entry.dataset, _run_entry.run, run_id=run_id)


def run_evals(dataset: DatasetEntry, runs: Sequence[RunEntry]) -> list[RunEval]:
    """Evaluations of ``runs`` on ``dataset``, computed once per content pair; shows a spinner when it computes."""
    out = []
    for run in runs:
        out.append(_evaluate(dataset.id, run.id, dataset, run))
    return out


def _key(evals: Sequence[RunEval]) -> tuple[tuple[str, str], ...]:
    return tuple((ev.run_id, ev.name) for ev in evals)


@st.cache_data(show_spinner=False, max_entries=64)
def _curves(dataset_id: str, key: tuple[tuple[str, str], ...], k_max: int, _evals: Sequence[RunEval]) -> pd.DataFrame:
    return frames.curve_frame(_evals, k_max=k_max)


def curve_frame(dataset_id: str, evals: Sequence[RunEval], k_max: int) -> pd.DataFrame:
    return _curves(dataset_id, _key(evals), k_max, evals)


@st.cache_data(show_spinner=False, max_entries=64)
def _summary(dataset_id: str, key: tuple[tuple[str, str], ...], specs: tuple[str, ...], _evals: Sequence[RunEval]) -> pd.DataFrame:
    return frames.summary_frame(_evals, list(specs))


def summary_frame(dataset_id: str, evals: Sequence[RunEval], specs: Sequence[str]) -> pd.DataFrame:
    return _summary(dataset_id, _key(evals), tuple(specs), evals)


@st.cache_data(show_spinner=False, max_entries=128)
def _breakdown(dataset_id: str, key: tuple[tuple[str, str], ...], spec: str, by: str, _evals: Sequence[RunEval]) -> pd.DataFrame:
    return frames.breakdown_frame(_evals, spec, by)


def breakdown_frame(dataset_id: str, evals: Sequence[RunEval], spec: str, by: str) -> pd.DataFrame:
    return _breakdown(dataset_id, _key(evals), spec, by, evals)


@st.cache_data(show_spinner=False, max_entries=128)
def _missed(dataset_id: str, run_id: str, name: str, k: int, _ev: RunEval) -> pd.DataFrame:
    return frames.missed_frame(_ev, k)


def missed_frame(dataset_id: str, ev: RunEval, k: int) -> pd.DataFrame:
    return _missed(dataset_id, ev.run_id, ev.name, k, ev)


@st.cache_data(show_spinner=False, max_entries=128)
def _query_table(dataset_id: str, run_id: str, name: str, k: int, spec: str, _ev: RunEval) -> pd.DataFrame:
    return frames.query_table(_ev, k, spec)


def query_table(dataset_id: str, ev: RunEval, k: int, spec: str) -> pd.DataFrame:
    return _query_table(dataset_id, ev.run_id, ev.name, k, spec, ev)


def findings(dataset_id: str, ev: RunEval, k: int, spec: str, label: str, low_mrr: float) -> list[Finding]:
    table = query_table(dataset_id, ev, k, spec)
    deep = min(100, max(ev.depth, 1))
    return diagnose(ev.name, table, k=k, deep_k=deep, metric_label=label, low_mrr=low_mrr)


@st.cache_data(show_spinner=False, max_entries=32)
def _validation(dataset_id: str, key: tuple[tuple[str, str], ...], _dataset: DatasetEntry, _evals: Sequence[RunEval]) -> pd.DataFrame:
    return frames.validation_frame(_dataset.dataset, _evals)


def validation_frame(dataset: DatasetEntry, evals: Sequence[RunEval]) -> pd.DataFrame:
    return _validation(dataset.id, _key(evals), dataset, evals)


@st.cache_data(show_spinner=False, max_entries=128)
def _target_checks(dataset_id: str, key: tuple[tuple[str, str], ...], targets_text: str, _evals: Sequence[RunEval]) -> pd.DataFrame:
    parsed, _ = targets.parse_targets(targets_text)
    return targets.check_frame(_evals, parsed)


def target_checks(dataset_id: str, evals: Sequence[RunEval], targets_text: str) -> pd.DataFrame:
    """:func:`dashboard.core.targets.check_frame`, cached per run set and target text."""
    return _target_checks(dataset_id, _key(evals), targets_text, evals)
