"""One run evaluated once, to a fixed depth, so any metric@K is a slice.

:func:`evaluate_run` calls :func:`ragmetrics.evaluate` once per (dataset, run)
and keeps the per-query curves of every cut-off metric for K = 1..``K_MAX``.
Changing K, the metric or a filter later never re-evaluates: the dashboard
slices these arrays (see :meth:`RunEval.values`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

import ragmetrics
from ragmetrics import metrics as registry
from ragmetrics.errors import RagMetricsError
from ragmetrics.evaluate import RunResult
from ragmetrics.metrics import MetricSpec, parse_metric
from ragmetrics.model import Dataset, Run
from ragmetrics.ranking import Coverage, Ranking, match_queries

K_MAX = 100
"""Depth of the stored curves; metric@K for K <= K_MAX is a slice."""

CURVE_METRICS: tuple[str, ...] = ("recall", "precision", "f1", "hits", "ndcg", "mrr", "map")
"""Cut-off metrics kept as per-query curves (the metric picker offers these)."""

METRIC_CHOICES: tuple[str, ...] = (*CURVE_METRICS, "rprec")
"""Metric names the dashboard offers; the first seven take K."""


def metric_spec(metric: str, k: int) -> MetricSpec:
    """The spec shown for a picked metric name at K: ``recall`` -> ``recall@K``, ``rprec`` -> ``rprec``."""
    if "@" in metric:
        return parse_metric(metric)
    name = parse_metric(f"{metric}@1").name if _takes_k(metric) else parse_metric(metric).name
    if name in CURVE_METRICS:
        return MetricSpec(name, int(k))
    return parse_metric(name)


def _takes_k(metric: str) -> bool:
    try:
        return parse_metric(f"{metric}@1").k is not None
    except RagMetricsError:
        return False


LONG_NAMES = {"precision": "Precision"}


def pretty(spec: MetricSpec | str) -> str:
    """Display name from the registry (``ndcg@10`` -> ``nDCG@10``), spelling out ``Precision``."""
    parsed = parse_metric(spec)
    base = LONG_NAMES.get(parsed.name, parsed.info.pretty)
    return base if parsed.k is None else f"{base}@{parsed.k}"


def metric_title(name: str) -> str:
    """Display name of a metric without its cut-off: ``precision`` -> ``Precision``."""
    return LONG_NAMES.get(
        name, parse_metric(f"{name}@1").info.pretty if name in CURVE_METRICS else parse_metric(name).info.pretty
    )


@dataclass(eq=False)
class RunEval:
    """One run's evaluation: per-query curves and whole-ranking values.

    ``query_ids`` are the evaluated queries in dataset order; every array has
    one row per evaluated query in that order.
    """

    run_id: str
    name: str
    run: Run
    query_ids: np.ndarray
    curves: dict[str, np.ndarray]
    full: pd.DataFrame
    coverage: Coverage
    ranking: Ranking
    dataset: Dataset = field(repr=False)
    computed: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # one evaluation is shared by sessions and by the upload page's prefetch thread: a curve is computed once,
    # a second caller of the same curve waits for it instead of computing it again
    _curve_locks: dict[str, threading.Lock] = field(default_factory=dict, init=False, repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def first_rel_rank(self) -> np.ndarray:
        """1-based rank of the first relevant document; 0 when none was retrieved."""
        return self.ranking.first_rel_rank

    @property
    def n_rel(self) -> np.ndarray:
        return self.ranking.n_rel

    @property
    def depth(self) -> int:
        """Most documents retrieved for one query (after chunks were merged)."""
        return int(self.ranking.n_ret.max(initial=0))

    @property
    def has_text(self) -> bool:
        return "text" in self.run.frame.columns and bool(self.run.frame["text"].notna().any())

    def values(self, spec: MetricSpec | str) -> np.ndarray:
        """Per-query values of one metric (float64), aligned with ``query_ids``.

        A cut-off metric is sliced from its curve when the curve was computed, else computed at that K alone."""
        spec = parse_metric(spec)
        if spec.k is not None and spec.name in CURVE_METRICS and spec.k <= K_MAX:
            if spec.name in self.curves:
                return self.curves[spec.name][:, spec.k - 1].astype(np.float64)
            # rounded as the stored curves are, so a value is the same before and after its curve exists
            return registry.compute(self.ranking, [spec])[spec].astype(np.float32).astype(np.float64)
        key = str(spec)
        if key in self.full.columns:
            return self.full[key].to_numpy(dtype=np.float64)
        if key not in self.computed:  # whole-ranking metrics too are computed on first use, then kept
            self.computed[key] = registry.compute(self.ranking, [spec])[spec].astype(np.float64)
        return self.computed[key]

    def mean(self, spec: MetricSpec | str) -> float:
        values = self.values(spec)
        return float(values.mean()) if len(values) else float("nan")

    def curve(self, metric: str, k_max: int) -> np.ndarray:
        """Per-query ``metric@k`` for k = 1..k_max, shape (n_queries, k_max), float64; curves to K_MAX are kept once computed."""
        return self.kept_curve(metric, k_max).astype(np.float64)

    def kept_curve(self, metric: str, k_max: int) -> np.ndarray:
        """:meth:`curve` as kept: a read-only float32 view for the curves kept to K_MAX (no copy; sum it in float64)."""
        if k_max <= K_MAX and metric in CURVE_METRICS:
            if metric not in self.curves:  # computed on first use: a 100,000-query run need not pay for all seven
                with self._curve_locks.setdefault(metric, threading.Lock()):  # setdefault: atomic
                    if metric not in self.curves:
                        kept = registry.curve(self.ranking, metric, K_MAX, dtype=np.float32)
                        kept.flags.writeable = False
                        self.curves[metric] = kept
            return self.curves[metric][:, :k_max]
        return registry.curve(self.ranking, metric, k_max)

    def result_for(self, metrics: Sequence[str]) -> RunResult:
        """A :class:`ragmetrics.RunResult` holding the per-query values of ``metrics`` (for library helpers such as
        :func:`ragmetrics.targets.check_targets`)."""
        names = [str(parse_metric(m)) for m in metrics]
        values = pd.DataFrame(
            {name: self.values(name) for name in names}, index=pd.Index(self.query_ids, name="query_id", dtype="str")
        )
        return RunResult(self.name, values, self.coverage, self.ranking)

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The run's rows aligned to evaluated queries, in engine order.

        Columns: ``q`` (evaluated-query index), ``rank`` (1-based, document
        level, as the engine ranks), ``doc_id`` (document level), ``chunk_id``,
        ``score`` and, when the run has them, ``text``. Chunks of one document
        share its rank; the best-ranked chunk comes first.
        """
        return _aligned_rows(self)


def evaluate_run(dataset: Dataset, run: Run, *, run_id: str = "", k_max: int = K_MAX) -> RunEval:
    """Evaluate one run to depth ``k_max``; never warns (the coverage report says it all)."""
    # MRR (cheap once aligned) is the one whole-ranking metric every page reads; the others come on first use
    result = ragmetrics.evaluate(dataset, [run], ["mrr"], k_max=k_max, warn=False)
    run_result = result[run.name]
    curves: dict[str, np.ndarray] = {}  # filled by RunEval.curve on first use
    return RunEval(
        run_id=run_id or run.name,
        name=run.name,
        run=run,
        query_ids=np.asarray(run_result.ranking.query_ids, dtype=object),
        curves=curves,
        full=run_result.values.reset_index(drop=True),
        coverage=run_result.coverage,
        ranking=run_result.ranking,
        dataset=dataset,
    )


def resolve_query_rows(dataset: Dataset, run_query_ids: pd.Series) -> np.ndarray:
    """Dataset row of each run row's query (the engine's rule: id, else query text); -1 when unknown."""
    return match_queries(dataset.queries, run_query_ids)[0]


def _aligned_rows(ev: RunEval) -> pd.DataFrame:
    frame = ev.run.frame
    dataset_row = resolve_query_rows(ev.dataset, frame["query_id"])
    eval_of_dataset = pd.Index(ev.query_ids).get_indexer(ev.dataset.queries["query_id"])
    q = np.where(dataset_row >= 0, eval_of_dataset[np.maximum(dataset_row, 0)], -1)
    keep = q >= 0
    chunk = frame["doc_id"].to_numpy(dtype=object)[keep]
    if "source_doc" in frame.columns:
        source = frame["source_doc"].to_numpy(dtype=object)[keep]
        doc = np.where(pd.isna(source), chunk, source)
    else:
        doc = chunk
    out = pd.DataFrame(
        {
            "q": q[keep],
            "doc_id": pd.array(doc, dtype="str"),
            "chunk_id": pd.array(chunk, dtype="str"),
            "score": frame["score"].to_numpy(dtype=np.float64)[keep],
        }
    )
    if "text" in frame.columns:
        out["text"] = frame["text"].to_numpy(dtype=object)[keep]
    # the engine's document order per query: (q, pos) -> doc id
    ranking = ev.ranking
    ranked = pd.DataFrame(
        {
            "q": ranking.q,
            "doc_id": pd.array(ranking.docs(), dtype="str"),
            "rank": ranking.pos + 1,
        }
    )
    out = out.merge(ranked, on=["q", "doc_id"], how="inner")
    out = out.sort_values(["q", "rank", "score"], ascending=[True, True, False], kind="stable")
    return out.reset_index(drop=True)


def common_query_ids(evals: Sequence[RunEval]) -> np.ndarray:
    """Evaluated query ids shared by all runs, in the first run's order."""
    if not evals:
        return np.array([], dtype=object)
    ids = evals[0].query_ids
    for ev in evals[1:]:
        ids = ids[np.isin(ids, ev.query_ids)]
    return ids
