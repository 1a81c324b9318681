"""``evaluate``: per-query values, means, curves over K and a coverage report."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ragmetrics import llamaindex
from ragmetrics import metrics as registry
from ragmetrics.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.memory import computes
from ragmetrics.metrics import MetricSpec, parse_metric
from ragmetrics.model import Dataset, Run
from ragmetrics.ranking import Coverage, Level, Missing, Ranking, aligned_ranking

DEFAULT_METRICS = ("ndcg@10", "recall@5", "recall@10", "precision@5", "hits@5", "mrr", "map")
Mode = Literal["trec", "llamaindex"]


@dataclass(eq=False)
class RunResult:
    """One run's results: ``values`` is a frame indexed by query_id, one column per metric."""

    name: str
    values: pd.DataFrame
    coverage: Coverage
    ranking: Ranking
    mode: Mode = "trec"

    @property
    def mean(self) -> pd.Series:
        """Arithmetic mean over the evaluated queries (NaN values, LlamaIndex skips, left out)."""
        return self.values.mean(axis=0, skipna=True)

    def curve(self, metric: str, k_max: int) -> np.ndarray:
        """Per-query ``metric@k`` for k = 1..k_max, shape (n_queries, k_max)."""
        if self.mode != "trec":
            raise RagMetricsError("curves are computed with the trec_eval conventions only (mode='trec')")
        return registry.curve(self.ranking, parse_metric(f"{metric}@1").name, k_max)


class EvalResult:
    """Results of one or more runs on one dataset.

    ``metrics`` are canonical names in the order asked for; ``runs`` maps a run
    name to its :class:`RunResult`.
    """

    def __init__(self, dataset: Dataset, specs: list[MetricSpec], runs: dict[str, RunResult], k_max: int):
        self.dataset = dataset
        self.specs = specs
        self.metrics = [str(s) for s in specs]
        self.runs = runs
        self.k_max = k_max

    @property
    def run_names(self) -> list[str]:
        return list(self.runs)

    def __getitem__(self, name: str) -> RunResult:
        return self.runs[name]

    def mean(self) -> pd.DataFrame:
        """Means: one row per run, one column per metric."""
        frame = pd.DataFrame({name: r.mean for name, r in self.runs.items()}).T
        frame.index.name = "run"
        return frame[self.metrics] if len(frame) else pd.DataFrame(columns=self.metrics)

    def per_query(self, run: str | None = None) -> pd.DataFrame:
        """Per-query values; for all runs the index is (run, query_id)."""
        if run is not None:
            return self.runs[run].values
        return pd.concat({name: r.values for name, r in self.runs.items()}, names=["run", "query_id"])

    @property
    def coverage(self) -> dict[str, Coverage]:
        return {name: r.coverage for name, r in self.runs.items()}

    def curves(
        self, metrics: Sequence[str] = ("precision", "recall", "f1", "hits", "ndcg"), k_max: int | None = None
    ) -> pd.DataFrame:
        """Mean ``metric@k`` for k = 1..k_max: long frame (run, metric, k, value)."""
        k_max = k_max or self.k_max
        parts = []
        for name, result in self.runs.items():
            for metric in metrics:
                values = result.curve(metric, k_max)
                parts.append(
                    pd.DataFrame(
                        {
                            "run": name,
                            "metric": parse_metric(f"{metric}@1").name,
                            "k": np.arange(1, k_max + 1),
                            "value": values.mean(axis=0) if len(values) else np.zeros(k_max),
                        }
                    )
                )
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "metric", "k", "value"])

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """``{"runs": {RUN: {"mean": {METRIC: v}, "per_query": {QID: {METRIC: v}}}}}``."""
        out: dict[str, Any] = {}
        for name, result in self.runs.items():
            entry: dict[str, Any] = {"mean": {m: _plain(v) for m, v in result.mean.items()}}
            if per_query:
                entry["per_query"] = {
                    str(qid): {m: _plain(v) for m, v in row.items()}
                    for qid, row in result.values.to_dict(orient="index").items()
                }
            out[name] = entry
        return {"runs": out}


def _plain(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def _as_dataset(dataset: Dataset | Mapping[str, Mapping[str, int]] | pd.DataFrame) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, pd.DataFrame):
        return Dataset.from_frames(dataset)
    if isinstance(dataset, Mapping):
        return Dataset.from_dict(dataset)
    raise RagMetricsError(
        f"expected a Dataset, a qrels DataFrame or a {{query_id: {{doc_id: label}}}} dict, got {type(dataset).__name__}"
    )


def _as_runs(runs: Run | Iterable[Run] | Mapping[str, Any]) -> list[Run]:
    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, Mapping):
        values = list(runs.values())
        if values and all(isinstance(v, Run) for v in values):
            return [v.with_name(str(k)) for k, v in runs.items()]
        if all(isinstance(v, Mapping) for v in values):
            return [Run.from_dict(runs)]
        raise RagMetricsError("expected a Run, a list of Runs, {name: Run} or a {query_id: {doc_id: score}} dict")
    out = list(runs)
    if not all(isinstance(r, Run) for r in out):
        raise RagMetricsError("expected a Run, a list of Runs, {name: Run} or a {query_id: {doc_id: score}} dict")
    return out


@computes
def evaluate(
    dataset: Dataset | Mapping[str, Mapping[str, int]] | pd.DataFrame,
    runs: Run | Iterable[Run] | Mapping[str, Any],
    metrics: Sequence[str | MetricSpec] | str | None = None,
    *,
    missing: Missing = "zero",
    rel_level: int = 1,
    level: Level = "auto",
    order: Literal["score", "file"] = "score",
    score_precision: Literal["float64", "float32"] = "float64",
    duplicates: Literal["best", "error"] = "best",
    mode: Mode = "trec",
    k_max: int | None = None,
    warn: bool = True,
) -> EvalResult:
    """Evaluate one or more runs against a dataset.

    Conventions (default = trec_eval 10.0 run with ``-c``):

    * Ranking: score descending as float64, ties by doc_id descending (byte
      order); the rank column and file order are ignored (``order="file"``
      keeps the given order). ``score_precision="float32"`` rounds scores as
      pytrec_eval / trec_eval <= 9.0.8 do.
    * Duplicate (query, doc) rows keep the best-ranked occurrence and are
      counted in the coverage report (``duplicates="error"`` refuses them,
      as trec_eval does).
    * Chunks: with a ``source_doc`` column (``level="auto"`` or
      ``"document"``) chunks are mapped to their document, which counts at the
      rank of its first chunk; ``level="chunk"`` evaluates chunk ids as given.
    * Queries: the evaluated queries are those with at least one judgment, in
      dataset order. A judged query absent from the run is an empty ranking
      scoring 0 (``missing="skip"`` leaves it out, as pytrec_eval does). Run
      queries unknown to the dataset (matched by id, else by query text) are
      dropped; queries without judgments are left out; judged queries with no
      relevant document score 0. All are reported in the coverage report.
    * Relevant means label >= ``rel_level``; nDCG gains are the raw labels.

    The alignment of a run with the dataset is remembered on the ``Run``: calling
    ``evaluate`` (or ``compare``) again with the same objects and options only
    computes the new metrics. Treat runs and datasets as immutable.

    ``mode="llamaindex"`` reproduces llama_index.core's RetrieverEvaluator
    instead (see :mod:`ragmetrics.llamaindex`).
    """
    data = _as_dataset(dataset)
    run_list = _as_runs(runs)
    names = [r.name for r in run_list]
    if len(set(names)) != len(names):
        raise RagMetricsError(f"run names must be unique; got {names}")
    if metrics is None:
        metrics = DEFAULT_METRICS
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(rel_level, (int, np.integer)):
        raise RagMetricsError(f"The 'rel_level' parameter must be an int. Got {rel_level!r} instead.")
    if mode == "llamaindex":
        specs = [llamaindex.parse(m) for m in metrics]
    elif mode == "trec":
        specs = [parse_metric(m) for m in metrics]
    else:
        raise RagMetricsError(f"The 'mode' parameter must be 'trec' or 'llamaindex'. Got {mode!r} instead.")
    specs = list(dict.fromkeys(specs))
    if not specs:
        raise RagMetricsError("no metric to compute; pass metric names such as ['ndcg@10', 'recall@5']")
    deepest = max([s.k for s in specs if s.k is not None], default=10)
    if k_max is not None and (not isinstance(k_max, (int, np.integer)) or k_max < 1):
        raise RagMetricsError(f"The 'k_max' parameter must be an int >= 1 or None. Got {k_max!r} instead.")

    results: dict[str, RunResult] = {}
    for run in run_list:
        if mode == "llamaindex":
            ranking, coverage = aligned_ranking(
                data, run, rel_level=rel_level, missing=missing, level=level, order="file", duplicates="keep"
            )
            values = llamaindex.compute(ranking, specs)
        else:
            ranking, coverage = aligned_ranking(
                data,
                run,
                rel_level=rel_level,
                missing=missing,
                level=level,
                order=order,
                score_precision=score_precision,
                duplicates=duplicates,
            )
            values = registry.compute(ranking, specs)
        frame = pd.DataFrame(
            {str(s): values[s] for s in specs}, index=pd.Index(ranking.query_ids, name="query_id", dtype="str")
        )
        results[run.name] = RunResult(run.name, frame, coverage, ranking, mode)
        if warn:
            _warn(run.name, coverage)
    if k_max is None:
        retrieved = max((int(r.ranking.n_ret.max(initial=0)) for r in results.values()), default=0)
        k_max = max(deepest, min(100, max(retrieved, 1)))
    return EvalResult(data, specs, results, int(k_max))


def _warn(name: str, coverage: Coverage) -> None:
    if coverage.notes():
        warnings.warn(f"run {name!r}: " + "; ".join(coverage.notes()), RagMetricsWarning, stacklevel=3)
