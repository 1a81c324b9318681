"""Run-to-run noise of a retriever asked every query ``repeat`` times.

What is reported (over the queries answered in every repeat, so that a failure is not taken for noise):

* per query: ``jaccard`` — the mean, over every pair of repeats, of the Jaccard overlap of their top-k
  document sets (1: the same documents each time); ``changed`` — whether the ranked lists differ at all;
  ``std`` — for each metric, the standard deviation (population, ddof=0) of the query's value over the repeats.
* per mean: for each metric, the mean of each repeat's run, and as its interval the lowest and the highest
  of those means (``low``, ``high``, ``spread`` = high - low). With few repeats (the usual 3 to 10) the range
  of what was seen is the honest interval; a bootstrap over so few resamples would pretend to more.
* ``per_query_std_mean`` / ``per_query_std_max``: the mean and the largest per-query standard deviation.

Metrics are computed with :func:`ragmetrics.analysis.evaluate` under the default (trec_eval) conventions; a dataset
whose judgments cannot score the runs gives the overlap only, with ``metrics_error`` saying why.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from ragmetrics.analysis.evaluate import evaluate
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def _rankings(run: Run) -> dict[str, list[str]]:
    table = run.table
    queries = table.column("query_id").to_pylist()
    docs = table.column("doc_id").to_pylist()
    ranks = table.column("rank").to_pylist() if "rank" in table.column_names else list(range(len(docs)))
    grouped: dict[str, list[tuple[int, str]]] = {}
    for q, d, r in zip(queries, docs, ranks):
        grouped.setdefault(q, []).append((r, d))
    return {q: [d for _, d in sorted(pairs, key=lambda p: p[0])] for q, pairs in grouped.items()}


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def repeat_noise(
    dataset: Dataset, runs: Sequence[Run], answered: Sequence[set[str]], k: int, metrics: Sequence[str]
) -> dict[str, Any]:
    """The noise summary of ``runs`` (one per repeat); ``answered[i]`` holds the query ids repeat i answered."""
    order = [str(q) for q in dataset.queries_table.column("query_id").to_pylist()]
    common = [q for q in order if all(q in done for done in answered)]
    rankings = [_rankings(r) for r in runs]
    per_query: dict[str, dict[str, Any]] = {}
    overlaps = []
    changed = 0
    for q in common:
        lists = [r.get(q, [])[:k] for r in rankings]
        sets = [set(x) for x in lists]
        value = float(np.mean([jaccard(a, b) for a, b in combinations(sets, 2)])) if len(sets) > 1 else 1.0
        differs = any(x != lists[0] for x in lists[1:])
        changed += differs
        overlaps.append(value)
        per_query[q] = {"jaccard": round(value, 6), "changed": differs}
    out: dict[str, Any] = {
        "repeats": len(runs),
        "queries": len(common),
        "k": k,
        "interval": "min-max of the repeat means",
        "jaccard_at_k": {
            "mean": _number(float(np.mean(overlaps))) if overlaps else None,
            "min": _number(float(np.min(overlaps))) if overlaps else None,
        },
        "queries_changed": changed,
        "metrics": {},
    }
    if metrics and common and len(runs) > 1:
        try:
            out["metrics"] = _metric_noise(dataset, runs, common, metrics, per_query)
        except RagMetricsError as exc:
            out["metrics_error"] = str(exc)
    out["per_query"] = per_query
    return out


def _metric_noise(
    dataset: Dataset, runs: Sequence[Run], common: list[str], metrics: Sequence[str], per_query: dict[str, Any]
) -> dict[str, Any]:

    named = [r.with_name(f"repeat-{i + 1}") for i, r in enumerate(runs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagMetricsWarning)
        result = evaluate(dataset, named, list(metrics), warn=False)
    frames = [result.runs[r.name].values for r in named]
    scored = [q for q in common if q in frames[0].index]
    if not scored:
        return {}
    out: dict[str, Any] = {}
    for metric in result.metrics:
        values = np.array([frame.loc[scored, metric].to_numpy(dtype=np.float64) for frame in frames])  # repeat x query
        means = np.nanmean(values, axis=1)
        spread = np.nanstd(values, axis=0)
        for q, s in zip(scored, spread):
            per_query[q].setdefault("std", {})[metric] = _number(float(s))
        out[metric] = {
            "mean": _number(float(np.nanmean(means))),
            "low": _number(float(np.nanmin(means))),
            "high": _number(float(np.nanmax(means))),
            "spread": _number(float(np.nanmax(means) - np.nanmin(means))),
            "repeat_means": [_number(float(m)) for m in means],
            "per_query_std_mean": _number(float(np.nanmean(spread))),
            "per_query_std_max": _number(float(np.nanmax(spread))),
        }
    return out
