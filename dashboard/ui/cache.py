"""Caching: the store, the workspace over it, evaluations keyed on content ids, and frames derived from them.

``get_workspace()`` is the one door to stored data: one
:class:`ragmetrics.store.Store` per process and store URL (see
:func:`store_url`), seeded once with the bundled samples. A run is evaluated
once per (dataset content, run content, run name) to depth ``K_MAX``; K,
metric and filters only slice the cached arrays, and the frames that need a
bootstrap are cached on (ids, names, K, ...).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.core import frames, samples, targets
from dashboard.core.evaluation import K_MAX, RunEval, evaluate_run
from dashboard.core.workspace import DatasetEntry, RunEntry, Workspace
from dashboard.ui import settings
from ragmetrics.diagnosis import Finding
from ragmetrics.store import Store


def store_url() -> str:
    """Where the data lives, first found wins.

    1. ``RAGMETRICS_STORE_URL`` (environment, or a root-level key of ``.streamlit/secrets.toml``,
       which Streamlit copies into the environment);
    2. ``store_url`` in the ``[ragmetrics]`` table of ``.streamlit/secrets.toml``;
    3. a SQLite file ``ragmetrics.sqlite`` in ``RAGMETRICS_DATA_DIR`` (environment), else
       ``data_dir`` of ``[ragmetrics]`` in the secrets, else ``./data``.
    """
    table = settings.secrets_table()  # loading them first puts their root-level keys in the environment
    url = settings.setting("RAGMETRICS_STORE_URL", "store_url", table)
    if url:
        return url
    folder = Path(settings.setting("RAGMETRICS_DATA_DIR", "data_dir", table) or "data")
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'ragmetrics.sqlite').resolve()}"


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return Store(url)


@st.cache_resource(show_spinner="Opening the store (the first start stores the sample data)…")
def _workspace(url: str) -> Workspace:
    workspace = Workspace(_store(url))
    workspace.seed(samples.iter_samples)
    return workspace


def get_store() -> Store:
    """The process's store for the configured URL (one engine per URL)."""
    return _store(store_url())


def get_workspace() -> Workspace:
    """The process-wide workspace over the configured store, seeded with the bundled samples at its first start."""
    return _workspace(store_url())


@st.cache_resource(show_spinner=False, max_entries=64)
def _evaluate(dataset_id: str, run_id: str, name: str, _dataset_entry: DatasetEntry, _run_entry: RunEntry) -> RunEval:
    return evaluate_run(_dataset_entry.dataset, _run_entry.run, run_id=run_id)


def run_evals(dataset: DatasetEntry, runs: Sequence[RunEntry]) -> list[RunEval]:
    """Evaluations of ``runs`` on ``dataset``, computed once per content pair (and run name, so a rename shows)."""
    out = []
    for run in runs:
        out.append(_evaluate(dataset.id, run.id, run.name, dataset, run))
    return out


_prefetching: set[tuple[int, str]] = set()  # (id of the evaluation, metric) being computed by a prefetch thread
_prefetch_lock = threading.Lock()
_LOG = logging.getLogger(__name__)


def prefetch_curves(evals: Sequence[RunEval]) -> None:
    """Compute the overview's curves of ``evals`` on a background thread (the upload page calls this after its
    validation report: the overview, usually the next page, then finds them computed or being computed, and
    waits only for those). A curve already being prefetched is not started again; one that fails is logged and
    left for the page that needs it, which shows the error."""
    with _prefetch_lock:
        todo = [
            (ev, metric)
            for ev in evals
            for metric in frames.CURVE_PANEL_METRICS
            if metric not in ev.curves and (id(ev), metric) not in _prefetching
        ]
        _prefetching.update((id(ev), metric) for ev, metric in todo)
    if todo:
        threading.Thread(target=_prefetch, args=(todo,), name="ragmetrics-prefetch", daemon=True).start()


def _prefetch(todo: list[tuple[RunEval, str]]) -> None:
    for ev, metric in todo:
        try:
            ev.kept_curve(metric, K_MAX)
        except Exception:
            _LOG.warning("prefetching %s curves of %s failed", metric, ev.name, exc_info=True)
        finally:
            with _prefetch_lock:
                _prefetching.discard((id(ev), metric))


def _key(evals: Sequence[RunEval]) -> tuple[tuple[str, str], ...]:
    return tuple((ev.run_id, ev.name) for ev in evals)


@st.cache_data(show_spinner=False, max_entries=64)
def _curves(dataset_id: str, key: tuple[tuple[str, str], ...], k_max: int, _evals: Sequence[RunEval]) -> pd.DataFrame:
    return frames.curve_frame(_evals, k_max=k_max)


def curve_frame(dataset_id: str, evals: Sequence[RunEval], k_max: int) -> pd.DataFrame:
    return _curves(dataset_id, _key(evals), k_max, evals)


@st.cache_data(show_spinner=False, max_entries=64)
def _summary(
    dataset_id: str, key: tuple[tuple[str, str], ...], specs: tuple[str, ...], _evals: Sequence[RunEval]
) -> pd.DataFrame:
    return frames.summary_frame(_evals, list(specs))


def summary_frame(dataset_id: str, evals: Sequence[RunEval], specs: Sequence[str]) -> pd.DataFrame:
    return _summary(dataset_id, _key(evals), tuple(specs), evals)


@st.cache_data(show_spinner=False, max_entries=128)
def _breakdown(
    dataset_id: str, key: tuple[tuple[str, str], ...], spec: str, by: str, _evals: Sequence[RunEval]
) -> pd.DataFrame:
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
    """:func:`dashboard.core.frames.run_findings` over the cached query table."""
    return frames.run_findings(ev, k, spec, label, low_mrr, table=query_table(dataset_id, ev, k, spec))


@st.cache_data(show_spinner=False, max_entries=32)
def _validation(
    dataset_id: str, key: tuple[tuple[str, str], ...], _dataset: DatasetEntry, _evals: Sequence[RunEval]
) -> pd.DataFrame:
    return frames.validation_frame(_dataset.dataset, _evals)


def validation_frame(dataset: DatasetEntry, evals: Sequence[RunEval]) -> pd.DataFrame:
    return _validation(dataset.id, _key(evals), dataset, evals)


@st.cache_data(show_spinner=False, max_entries=128)
def _target_checks(
    dataset_id: str, key: tuple[tuple[str, str], ...], targets_text: str, _evals: Sequence[RunEval]
) -> pd.DataFrame:
    parsed, _ = targets.parse_targets(targets_text)
    return targets.check_frame(_evals, parsed)


def target_checks(dataset_id: str, evals: Sequence[RunEval], targets_text: str) -> pd.DataFrame:
    """:func:`dashboard.core.targets.check_frame`, cached per run set and target text."""
    return _target_checks(dataset_id, _key(evals), targets_text, evals)


# --- comparison, dataset power and fusion (dashboard.core.comparison) ----------------------

from dashboard.core import comparison as _comparison  # noqa: E402
from ragmetrics.compare import Comparison  # noqa: E402
from ragmetrics.model import Run  # noqa: E402


@st.cache_data(show_spinner=False, max_entries=64)
def _compare(
    dataset_id: str,
    key: tuple[tuple[str, str], ...],
    baseline: str,
    specs: tuple[str, ...],
    test: str,
    alpha: float,
    _evals: Sequence[RunEval],
) -> Comparison:
    return _comparison.run_comparison(_evals, baseline, list(specs), test=test, alpha=alpha)


def comparison(
    dataset_id: str, evals: Sequence[RunEval], baseline: str, specs: Sequence[str], test: str, alpha: float
) -> Comparison:
    """:func:`dashboard.core.comparison.run_comparison`, cached per run set, baseline (a run name), metrics, test and alpha."""
    return _compare(dataset_id, _key(evals), baseline, tuple(specs), test, float(alpha), evals)


@st.cache_data(show_spinner=False, max_entries=64)
def _power_pairs(
    dataset_id: str,
    key: tuple[tuple[str, str], ...],
    specs: tuple[str, ...],
    test: str,
    alpha: float,
    _evals: Sequence[RunEval],
) -> pd.DataFrame:
    return _comparison.power_pairs(_comparison.eval_result(_evals, list(specs)), list(specs), test=test, alpha=alpha)


def power_pairs(
    dataset_id: str, evals: Sequence[RunEval], specs: Sequence[str], test: str, alpha: float
) -> pd.DataFrame:
    """Every run pair's p-value and SD of differences per metric (:func:`dashboard.core.comparison.power_pairs`), cached."""
    return _power_pairs(dataset_id, _key(evals), tuple(specs), test, float(alpha), evals)


@st.cache_resource(show_spinner=False, max_entries=32)
def _fused(
    dataset_id: str,
    run_ids: tuple[str, ...],
    method: str,
    k: int,
    norm: str,
    weights: tuple[float, ...],
    name: str,
    _runs: Sequence[Run],
) -> Run:
    return _comparison.fuse_runs(_runs, method=method, k=k, norm=norm, weights=list(weights), name=name or None)


def fused_run(
    dataset_id: str, runs: Sequence[RunEntry], *, method: str, k: int, norm: str, weights: Sequence[float], name: str
) -> Run:
    """:func:`dashboard.core.comparison.fuse_runs` of workspace runs, cached per inputs and settings."""
    return _fused(
        dataset_id,
        tuple(r.id for r in runs),
        method,
        int(k),
        norm,
        tuple(float(w) for w in weights),
        name,
        [r.run for r in runs],
    )


@st.cache_data(show_spinner=False, max_entries=32)
def _fusion_preview(
    dataset_id: str,
    run_ids: tuple[str, ...],
    fused_key: tuple[object, ...],
    specs: tuple[str, ...],
    _dataset: DatasetEntry,
    _inputs: Sequence[Run],
    _fused: Run,
) -> pd.DataFrame:
    return _comparison.fusion_preview(_dataset.dataset, _inputs, _fused, list(specs))


def fusion_preview(
    dataset: DatasetEntry, runs: Sequence[RunEntry], fused: Run, fused_key: tuple[object, ...], specs: Sequence[str]
) -> pd.DataFrame:
    """Means of ``specs`` for the inputs and the fused run; ``fused_key`` names the fusion settings."""
    return _fusion_preview(
        dataset.id, tuple(r.id for r in runs), fused_key, tuple(specs), dataset, [r.run for r in runs], fused
    )
