"""Caching: the store, the workspace over it, the alignments, and the frames derived from them.

``get_workspace()`` is the one door to stored data: one :class:`ragmetrics.store.database.Store` per process and store
URL (see :func:`store_url`), seeded once with the bundled samples. A run is aligned once per (dataset content,
run content, run name) and the :class:`ragmetrics.Alignment` is held (:class:`dashboard.data.alignments.Alignments`):
K, metric and filters read values, curves and rows from it, computed on it once. The frames that take
longer are cached on (ids, names, K, ...) (:func:`memo`). Every cache is bounded in bytes
(:class:`dashboard.ui.memory.Budgets`) and forgets what only an ended session used (:class:`dashboard.ui.memory.Sweeper`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.core import (
    breakdown,
    compare,
    cost,
    diagnosis,
    fusion,
    health,
    judge,
    missed,
    overview,
    power,
    results_only,
    targets,
    validation,
)
from dashboard.core.diagnosis import Finding, RunTraits
from dashboard.core.specs import K_MAX, MetricSpec
from dashboard.data import samples
from dashboard.data.alignments import Alignments
from dashboard.data.bounded import ByteLRU
from dashboard.data.prefetch import CurvePrefetcher
from dashboard.data.workspace import DatasetEntry, RunEntry, Workspace
from dashboard.ui import memory, settings
from ragmetrics import Alignment, align
from ragmetrics.analysis import history, judging
from ragmetrics.analysis.chunkings import ChunkingComparison, compare_chunkings
from ragmetrics.analysis.compare import Comparison
from ragmetrics.analysis.history import Leaderboard, StoredRun, Timeline
from ragmetrics.analysis.stability import Stability, stability
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.memory import hand_freed_memory_back_promptly, use_small_pages_for_this_process
from ragmetrics.foundation.model import Run
from ragmetrics.store.database import Store


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
    workspace = Workspace(_store(url), cache_bytes=memory.budgets().objects, user=memory.current_session)
    workspace.seed(samples.iter_samples)
    return workspace


def get_store() -> Store:
    """The process's store for the configured URL (one engine per URL)."""
    return _store(store_url())


def get_workspace() -> Workspace:
    """The process-wide workspace over the configured store, seeded with the bundled samples at its first start."""
    return _workspace(store_url())


# --- alignments ----------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _alignments() -> Alignments:
    return Alignments(memory.budgets().alignments, user=memory.current_session)


@st.cache_resource(show_spinner=False)
def _frames() -> ByteLRU[tuple[object, ...], Any]:
    return ByteLRU(memory.budgets().frames, user=memory.current_session)


def held_caches() -> list[memory.Held]:
    """The process's caches that know their sessions (the sweeper releases an ended session's share), and the
    judging sessions' claims (released when the browser goes)."""
    return [_alignments().held, get_workspace().objects, _frames(), get_workspace().claims]


@st.cache_resource(show_spinner=False)
def start_sweeper() -> memory.Sweeper:
    """The process's :class:`dashboard.ui.memory.Sweeper` (started by the first page), after the process's memory
    choices (:mod:`ragmetrics.foundation.memory`): small pages for numpy, freed memory handed back promptly."""
    use_small_pages_for_this_process()
    hand_freed_memory_back_promptly()
    return memory.Sweeper(held_caches)


@dataclass(frozen=True, eq=False)
class Selection:
    """The runs a page shows on one dataset: their ids and alignments, in the sidebar's order. ``key`` (ids and
    names) is what the frames below are cached on."""

    dataset_id: str
    run_ids: tuple[str, ...]
    alignments: tuple[Alignment, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.alignments)

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        return tuple(zip(self.run_ids, self.names))

    @property
    def by_id(self) -> dict[str, Alignment]:
        return dict(zip(self.run_ids, self.alignments))

    def only(self, run_id: str) -> Selection:
        """The selection of one of these runs."""
        i = self.run_ids.index(run_id)
        return Selection(self.dataset_id, (run_id,), (self.alignments[i],))

    def __len__(self) -> int:
        return len(self.alignments)


F = TypeVar("F", bound=Callable[..., Any])


def cache_key(value: Any) -> Hashable:
    """What a cached builder's argument is keyed on: a selection by its dataset and its runs' ids and names, a
    stored dataset by its content id, a stored run by its id and name (a rename shows), a run of the history by its
    id, name and tags (a rename or an edited tag is a new timeline); sequences and mappings item by item; a float NaN as one key (a NaN
    equals nothing, not even itself: keyed as it is, it would miss every time); anything else as it is (it must be
    hashable)."""
    if isinstance(value, Selection):
        return ("selection", value.dataset_id, value.key)
    if isinstance(value, DatasetEntry):
        return ("dataset", value.id)
    if isinstance(value, RunEntry):
        return ("run", value.id, value.name)
    if isinstance(value, StoredRun):
        return ("stored", value.id, value.name, tuple(sorted(value.tags.items())))
    if isinstance(value, Mapping):
        return tuple(sorted((k, cache_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(cache_key(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return _NAN_KEY
    return value


_NAN_KEY = ("nan",)
"""What :func:`cache_key` keys every float NaN on."""


def memo(fn: F) -> F:
    """Keep ``fn``'s results in the frames cache (bounded in bytes), keyed on ``fn`` and its arguments
    (:func:`cache_key`), those whose names start with ``_`` left out (objects that another argument already
    names). A frame is handed out as a copy, so a page that changes it does not change the cache."""
    signature = inspect.signature(fn)
    keyed = [name for name in signature.parameters if not name.startswith("_")]

    @functools.wraps(fn)
    def cached(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = (fn.__qualname__, *(cache_key(bound.arguments[name]) for name in keyed))
        value = _frames().get_or_make(key, lambda: fn(*args, **kwargs))
        return value.copy() if isinstance(value, pd.DataFrame) else value

    return cached  # type: ignore[return-value]


def _content_digest(frame: pd.DataFrame) -> str:
    """A digest of ``frame``'s columns, dtypes, index and values (TypeError for cells pandas cannot hash)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((list(frame.columns), [str(t) for t in frame.dtypes], frame.shape)).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return digest.hexdigest()


def figure(build: Callable[..., go.Figure], frame: pd.DataFrame, **options: object) -> go.Figure:
    """``build(frame, **options)`` kept in the frames cache, keyed on the builder, the content of ``frame`` and
    ``options`` (by their ``repr``: text, metrics, sequences of them): a rerun that changes neither (a query or an outcome picked on Compare)
    hands out the figure built before instead of validating every trace again. A frame pandas cannot hash is
    built each time."""
    try:
        digest = _content_digest(frame)
    except TypeError:
        return build(frame, **options)
    key = ("figure", build, digest, repr(sorted(options.items())))
    return _frames().get_or_make(key, lambda: build(frame, **options))


@st.cache_resource(show_spinner=False)
def _prefetcher() -> CurvePrefetcher:
    return CurvePrefetcher()


def select(dataset: DatasetEntry, runs: Sequence[RunEntry]) -> Selection:
    """The alignments of ``runs`` on ``dataset``, made once per content pair (and run name, so a rename shows)."""
    held = _alignments()
    return Selection(dataset.id, tuple(r.id for r in runs), tuple(held.get(dataset, r) for r in runs))


def add_run(
    workspace: Workspace,
    dataset: DatasetEntry,
    run: Run,
    *,
    source: str = "",
    tags: dict[str, str] | None = None,
    insist: bool = False,
) -> RunEntry:
    """Store ``run`` under ``dataset`` (with its metadata ``tags``); it is aligned while its rows are written, and
    the alignment kept. A run whose ids do not meet the qrels is refused unless ``insist``
    (:class:`dashboard.data.alignments.RunRefused`)."""
    return _alignments().add_run(workspace, dataset, run, source=source, tags=tags, insist=insist)


def prefetch_curves(alignments: Sequence[Alignment]) -> None:
    """Compute the overview's curves of ``alignments`` on a background thread (the upload page calls this after
    its validation report, so the overview, usually the next page, finds them computed or being computed)."""
    _prefetcher().start(alignments, overview.CURVE_PANEL_METRICS, K_MAX)


# --- frames ------------------------------------------------------------------------------
# Each builder of dashboard.core, cached on what it reads (see memo); a page calls these.


@memo
def curve_frame(selection: Selection, k_max: int) -> pd.DataFrame:
    """:func:`dashboard.core.overview.curve_frame`, cached per run set and depth."""
    return overview.curve_frame(selection.alignments, k_max=k_max)


@memo
def curve_figures(
    selection: Selection, k_max: int, runs: Sequence[str], every: Sequence[str] = ()
) -> tuple[go.Figure, go.Figure]:
    """The Overview's curves over K and its precision-recall figure, built once per run set, depth and order of
    runs (a change of K reruns the page with the same figures, which the browser then does not draw again)."""
    curves = curve_frame(selection, k_max)
    pr = overview.pr_frame(selection.alignments, k_max)
    return (
        overview.curves_figure(curves, runs=tuple(runs), every=tuple(every)),
        overview.pr_figure(pr, runs=tuple(runs), every=tuple(every)),
    )


@memo
def summary_frame(selection: Selection, specs: Sequence[MetricSpec], bounds_depth: int | None = None) -> pd.DataFrame:
    """:func:`dashboard.core.overview.summary_frame`, cached per run set, metrics and bounds depth."""
    return overview.summary_frame(selection.alignments, list(specs), bounds_depth)


def results_only_frame(stored: Sequence[Any]) -> pd.DataFrame:
    """:func:`dashboard.core.results_only.results_frame` of stored results entries, cached per set of results
    (their ids are their content)."""
    return _results_only(tuple(entry.id for entry in stored), stored)


@memo
def _results_only(ids: tuple[str, ...], _stored: Sequence[Any]) -> pd.DataFrame:
    return results_only.results_frame([entry.results for entry in _stored])


@memo
def cost_frame(selection: Selection, spec: MetricSpec, k: int) -> pd.DataFrame | str:
    """:func:`dashboard.core.cost.cost_frame`, cached per run set, metric and K; the library's reason (text) when
    the runs' chunks have no text to count."""
    try:
        return cost.cost_frame(selection.alignments, spec, k)
    except RagMetricsError as err:
        return str(err)


@memo
def power_curve_frame(sds: tuple[float, ...], alpha: float, goal: float, n_max: int) -> pd.DataFrame:
    """:func:`dashboard.core.power.power_curve_frame` (``goal``: its power), cached per SDs, level, power and range:
    the curve is eighty searches of the noncentral t distribution, the same whatever the difference asked for."""
    return power.power_curve_frame(list(sds), alpha=alpha, power=goal, n_max=n_max)


@memo
def power_plan(
    selection: Selection,
    baseline: str,
    specs: Sequence[MetricSpec],
    spec: MetricSpec,
    test: str,
    alpha: float,
    correction: str,
    goal: float,
    target: float,
) -> power.Plan:
    """:func:`dashboard.core.power.plan` of ``spec`` on :func:`comparison`'s pairs (the family's planning level,
    ``goal``: the power), cached per run set, comparison, power and difference to detect: the same on every opening
    of the page, and its searches of the noncentral t distribution and its figure are what the page waits for."""
    pairs = comparison(selection, baseline, specs, test, alpha, correction, segments=False)
    level = compare.planning_alpha(correction, alpha, pairs.family_size)
    n = power.queries_of(selection.alignments)
    curve = power_curve_frame(power.pair_sds(pairs.pairs, spec), level, goal, power.curve_range(n))
    return power.plan(pairs.pairs, spec, n, alpha=level, power=goal, target=target, curve=curve)


@memo
def breakdown_frame(selection: Selection, spec: MetricSpec, by: str) -> pd.DataFrame:
    """:func:`dashboard.core.breakdown.breakdown_frame`, cached per run set, metric and facet."""
    return breakdown.breakdown_frame(selection.alignments, spec, by)


def missed_frame(selection: Selection, run_id: str, k: int) -> pd.DataFrame:
    """:func:`dashboard.core.missed.missed_frame` of one run of the selection, cached per run and K."""
    return _missed(selection.only(run_id), k)


@memo
def _missed(one: Selection, k: int) -> pd.DataFrame:
    return missed.missed_frame(one.alignments[0], k)


def query_table(selection: Selection, run_id: str, k: int, spec: MetricSpec) -> pd.DataFrame:
    """:func:`dashboard.core.missed.query_table` of one run, cached per run, K and metric."""
    return _query_table(selection.only(run_id), k, spec)


@memo
def _query_table(one: Selection, k: int, spec: MetricSpec) -> pd.DataFrame:
    return missed.query_table(one.alignments[0], k, spec)


def findings(
    selection: Selection, run_id: str, k: int, spec: MetricSpec, label: str, low_mrr: float, traits: RunTraits
) -> list[Finding]:
    """:func:`dashboard.core.diagnosis.run_findings` over the cached query table, advice fitted to ``traits``."""
    table = query_table(selection, run_id, k, spec)
    return diagnosis.run_findings(selection.by_id[run_id], k, spec, label, low_mrr, table=table, traits=traits)


def run_traits(selection: Selection, run_id: str, tags: Mapping[str, str]) -> RunTraits:
    """What one selected run is (:func:`ragmetrics.analysis.diagnosis.run_traits`: its tags, name and scores),
    cached per run and tags."""
    return _run_traits(selection.only(run_id), dict(tags))


@memo
def _run_traits(one: Selection, tags: dict[str, str]) -> RunTraits:
    return diagnosis.run_traits(one.alignments[0].run, tags)


@memo
def validation_frame(dataset: DatasetEntry, selection: Selection) -> pd.DataFrame:
    """:func:`dashboard.core.validation.validation_frame`, cached per dataset and run set."""
    return validation.validation_frame(dataset.dataset, selection.alignments)


@memo
def target_checks(selection: Selection, targets_text: str) -> pd.DataFrame:
    """:func:`dashboard.core.targets.check_frame`, cached per run set and target text."""
    parsed, _ = targets.parse_targets(targets_text)
    return targets.check_frame(selection.alignments, parsed)


# --- comparison, dataset power and fusion --------------------------------------------------


@memo
def comparison(
    selection: Selection,
    baseline: str,
    specs: Sequence[MetricSpec],
    test: str,
    alpha: float,
    correction: str = "holm",
    bounds_depth: int | None = None,
    *,
    segments: bool = True,
) -> Comparison:
    """:func:`dashboard.core.compare.run_comparison`, cached per run set, baseline (a run name), metrics, test,
    alpha, correction, the depth of the bounds from the unjudged documents (None: no bounds) and whether the
    per-category and per-difficulty comparisons are made (``segments``; the whole-set table is the same either
    way, so is its family)."""
    return compare.run_comparison(
        selection.alignments,
        baseline,
        list(specs),
        test=test,
        alpha=float(alpha),
        correction=correction,
        bounds=bounds_depth is not None,
        bounds_depth=bounds_depth,
        segments=segments,
    )


@memo
def chunking_comparison(
    selection: Selection, baseline: str, k: int, budget: int, test: str, alpha: float, correction: str
) -> ChunkingComparison | str:
    """:func:`ragmetrics.analysis.chunkings.compare_chunkings` of the selection's runs (each a chunking), cached
    per run set, baseline, K, budget, test, alpha and correction; the library's reason (text) when it cannot be
    read (no corpus texts to count tokens or place chunks)."""
    try:
        return compare_chunkings(
            selection.alignments[0].dataset, list(selection.alignments), baseline=baseline, k=k, budget=budget, test=test,
            correction=correction, alpha=float(alpha),
        )  # fmt: skip
    except RagMetricsError as err:
        return str(err)


@memo
def fused_run(
    dataset: DatasetEntry,
    runs: Sequence[RunEntry],
    *,
    method: str,
    k: int,
    norm: str,
    weights: Sequence[float],
    name: str,
) -> tuple[Run, Alignment]:
    """:func:`dashboard.core.fusion.fuse_runs` of workspace runs and its alignment, cached per inputs and settings."""
    run = fusion.fuse_runs(
        [r.run for r in runs],
        method=method,
        k=int(k),
        norm=norm,
        weights=[float(w) for w in weights],
        name=name or None,
    )
    return run, align(dataset.dataset, run)


@memo
def fusion_preview(
    inputs: Selection, _fused: Alignment, fused_key: tuple[object, ...], specs: Sequence[MetricSpec]
) -> pd.DataFrame:
    """Means of ``specs`` for the inputs and the fused run; ``fused_key`` names the fusion settings."""
    return fusion.fusion_preview(inputs.alignments, _fused, list(specs))


# --- run health, judging and qrels versions -------------------------------------------------


@memo
def no_overlap(selection: Selection) -> dict[str, str]:
    """``{run name: why}`` of the selected runs whose ids do not meet the qrels, cached per run set (the
    explanation tries fixes on the data)."""
    return health.no_overlap_messages(selection.alignments)


def meaningless_runs(selection: Selection) -> set[str]:
    """The ids of the selected runs whose ids do not meet the qrels (stored because the user insisted): never a
    default baseline."""
    return {rid for rid, a in zip(selection.run_ids, selection.alignments) if a.health.no_overlap}


@memo
def judge_queue(selection: Selection, depth: int, metric: MetricSpec, baseline: str | None) -> pd.DataFrame:
    """:func:`dashboard.core.judge.queue_frame` of the selected runs (``baseline``: a run name), cached per
    dataset version, run set, depth, metric and baseline; the labels given meanwhile are taken out by the page."""
    return judge.queue_frame({a.name: a for a in selection.alignments}, int(depth), metric, baseline)


@memo
def qrels_diff(before: DatasetEntry, after: DatasetEntry) -> pd.DataFrame:
    """:func:`ragmetrics.analysis.judging.diff` of two qrels versions, cached per pair of content ids."""
    return judging.diff(before.dataset, after.dataset)


@memo
def qrels_stability(
    before: DatasetEntry, after: DatasetEntry, runs: Sequence[RunEntry], metric: MetricSpec, test: str, alpha: float,
    correction: str,
) -> Stability:  # fmt: skip
    """:func:`ragmetrics.analysis.stability.stability` of ``runs`` under two qrels versions on ``metric`` with the
    view's test, alpha and correction (as Compare's), cached per versions, runs, metric and those."""
    return stability(
        before.dataset, after.dataset, [r.run for r in runs], metric, test=test, alpha=float(alpha),
        correction=correction, seed=compare.SEED,
    )  # fmt: skip


# --- history: the timeline and the leaderboard ---------------------------------------------


@memo
def timeline(
    dataset: DatasetEntry, runs: Sequence[StoredRun], spec: MetricSpec, *, by: str, where: dict[str, str],
    baseline: str | None, test: str, alpha: float,
) -> Timeline:  # fmt: skip
    """:func:`ragmetrics.analysis.history.timeline` of the dataset's runs, cached per runs and tags, metric and
    controls."""
    return history.timeline(
        dataset.dataset, runs, spec, dataset_id=dataset.id, by=by, where=dict(where), baseline=baseline,
        test=test, alpha=float(alpha), seed=compare.SEED,
    )  # fmt: skip


def leaderboard(
    datasets: Sequence[tuple[DatasetEntry, Sequence[StoredRun]]],
    spec: MetricSpec,
    *,
    system_tag: str,
    test: str,
    alpha: float,
) -> Leaderboard:
    """:func:`ragmetrics.analysis.history.leaderboard` over the datasets' runs, cached per runs and tags, metric and
    controls. Only the runs tagged ``system_tag`` are read."""
    chosen = [(d, [r for r in runs if r.tags.get(system_tag)]) for d, runs in datasets]
    return _leaderboard([(d, runs) for d, runs in chosen if runs], spec, system_tag, test, alpha)


@memo
def _leaderboard(
    chosen: Sequence[tuple[DatasetEntry, Sequence[StoredRun]]],
    spec: MetricSpec,
    system_tag: str,
    test: str,
    alpha: float,
) -> Leaderboard:
    loaded = [(d.id, d.dataset, runs) for d, runs in chosen]
    return history.leaderboard(loaded, spec, system_tag=system_tag, test=test, alpha=float(alpha), seed=compare.SEED)
