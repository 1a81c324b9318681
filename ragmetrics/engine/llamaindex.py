"""LlamaIndex-compatible mode: llama_index.core's RetrieverEvaluator, reproduced.

For users moving over who need to reconcile old numbers
(llama-index-core 0.14.25, ``evaluation/retrieval/metrics.py``). Where it
differs from the default (trec_eval) conventions:

* the retrieved list is taken in the order given (the rank column when there
  is one, else file order): no sorting by score, no tie rule;
* K is the length of the retrieved list; ``metric@k`` first cuts the list to
  its first k entries (a retriever run with ``top_k=k``);
* duplicates are kept and counted, so ``map`` (``ap``) and ``ndcg`` can
  exceed 1;
* relevance is binary (label >= rel_level);
* ``precision`` divides by the number of *distinct* retrieved ids;
* ``ndcg``'s ideal DCG sums 1/log2(i+1) over i = 1..R (all expected ids),
  not cut at K;
* a query with no expected or no retrieved ids is skipped (LlamaIndex raises);
  it shows as NaN and is left out of the mean.

Names: ``hit_rate`` (= ``hits``), ``mrr``, ``precision``, ``recall``, ``ap``
(= ``map``), ``ndcg``; each with an optional ``@k``.
"""

from __future__ import annotations

import numpy as np

from ragmetrics.engine.accumulators import Ranking
from ragmetrics.engine.metrics import MetricSpec, parse_metric
from ragmetrics.engine.order import running_sum, segment_starts
from ragmetrics.foundation.errors import MetricNameError

SUPPORTED = ("hits", "mrr", "precision", "recall", "map", "ndcg")


def parse(text: str | MetricSpec) -> MetricSpec:
    """Parse a metric name for LlamaIndex mode, where every cut-off is optional."""
    if isinstance(text, MetricSpec):
        spec = text
    else:
        raw = str(text).strip()
        try:
            spec = parse_metric(raw)
        except MetricNameError:
            if "@" in raw or ("_" in raw and raw.rsplit("_", 1)[-1].isdigit()):
                raise
            spec = MetricSpec(parse_metric(raw + "@1").name, None)
    if spec.tokens is not None:
        raise MetricNameError(f"metric {str(spec)!r}: token budgets are read with mode='trec' only")
    if spec.name not in SUPPORTED:
        raise MetricNameError(
            f"metric {str(spec)!r} has no LlamaIndex counterpart; LlamaIndex mode computes "
            f"hit_rate, mrr, precision, recall, ap and ndcg (use mode='trec' for the others)"
        )
    return spec


def compute(ranking: Ranking, specs: list[MetricSpec]) -> dict[MetricSpec, np.ndarray]:
    """Per-query values in LlamaIndex semantics; ``ranking`` must keep file order and duplicates."""
    q, pos, n = ranking.q, ranking.pos, ranking.n_queries
    rel = ranking.rel
    starts = segment_starts(q, n)
    # first occurrence of each (query, doc): distinct ids for precision and recall
    key = q * (int(ranking.doc_code.max(initial=0)) + 1) + ranking.doc_code
    first_occurrence = np.zeros(len(key), dtype=bool)
    first_occurrence[np.unique(key, return_index=True)[1]] = True
    running_hits = running_sum(rel.astype(np.int64), q, starts)
    n_rel = ranking.n_rel.astype(np.float64)
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, int(n_rel.max(initial=0)) + 2)))
    ideal = np.concatenate(([0.0], ideal))[ranking.n_rel]

    out: dict[MetricSpec, np.ndarray] = {}
    for spec in specs:
        k = np.iinfo(np.int64).max if spec.k is None else spec.k
        top = pos < k
        retrieved = np.bincount(q[top], minlength=n)

        def per_query(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
            w = None if weights is None else weights[mask]
            return np.bincount(q[mask], weights=w, minlength=n).astype(np.float64)

        if spec.name == "hits":
            values = (per_query(top & rel) > 0).astype(np.float64)
        elif spec.name == "mrr":
            firsts = top & rel & (running_hits == 1)
            values = per_query(firsts, 1.0 / (pos + 1.0))
        elif spec.name == "precision":
            distinct = per_query(top & first_occurrence)
            values = np.divide(per_query(top & first_occurrence & rel), distinct, out=np.zeros(n), where=distinct > 0)
        elif spec.name == "recall":
            values = np.divide(per_query(top & first_occurrence & rel), n_rel, out=np.zeros(n), where=n_rel > 0)
        elif spec.name == "map":
            values = np.divide(
                per_query(top & rel, running_hits / (pos + 1.0)), n_rel, out=np.zeros(n), where=n_rel > 0
            )
        else:  # ndcg
            dcg = per_query(top & rel, 1.0 / np.log2(pos + 2.0))
            values = np.divide(dcg, ideal, out=np.zeros(n), where=ideal > 0)
        skipped = (retrieved == 0) | (ranking.n_rel == 0)
        values[skipped] = np.nan
        out[spec] = values
    return out
