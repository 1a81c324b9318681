"""An independent reference for the parity tests: plain-Python parsing and ordering,
with pytrec_eval (trec_eval 9.0.8's C code) computing the measures.

pytrec_eval rounds scores to float32 before sorting, so it is handed scores
that are already tie-free after the trec_eval order (minus the rank): only its
measure code is compared, as DESIGN.md advises. The order itself is checked
separately on scores that float32 represents exactly.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytrec_eval

import ragmetrics as rm

CUTOFFS = (1, 2, 3, 5, 10, 15, 20, 30, 100, 200, 500, 1000)
CUT_MEASURES = {
    "P": "precision", "recall": "recall", "map_cut": "map", "ndcg_cut": "ndcg", "success": "hits",
    "relative_P": "relative_precision",
}  # fmt: skip
FULL_MEASURES = {
    "map": "map", "ndcg": "ndcg", "recip_rank": "mrr", "Rprec": "rprec", "bpref": "bpref",
    "set_P": "set_precision", "set_recall": "set_recall", "set_F": "set_f1", "set_map": "set_map",
    "set_relative_P": "set_relative_precision",
}  # fmt: skip
TREC_10_MEASURES = {"rbp": "rbp", "rbp_resid": "rbp_resid"}
TREC_10_CUT_MEASURES = {"unj": "unj"}
"""New in trec_eval 10.0, so pytrec_eval (9.0.8) lacks them: read from trec_eval 10.0's expected outputs."""


def pytrec_measures(cutoffs=CUTOFFS) -> set[str]:
    cut = ",".join(str(k) for k in cutoffs)
    return {f"{m}.{cut}" for m in CUT_MEASURES} | set(FULL_MEASURES)


def our_metric_names(cutoffs=CUTOFFS) -> list[str]:
    return [f"{ours}@{k}" for ours in CUT_MEASURES.values() for k in cutoffs] + list(FULL_MEASURES.values())


def trec_to_ours(measure: str) -> str:
    """'P_5' -> 'precision@5', 'recip_rank' -> 'mrr'."""
    if measure in FULL_MEASURES:
        return FULL_MEASURES[measure]
    if measure in TREC_10_MEASURES:
        return TREC_10_MEASURES[measure]
    base, k = measure.rsplit("_", 1)
    return f"{(CUT_MEASURES | TREC_10_CUT_MEASURES)[base]}@{k}"


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        qid, _, doc, label = line.split()
        rows.append((qid, doc, int(label)))
    return rows


def read_run(path: Path) -> list[tuple[str, str, float]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        rows.append((fields[0], fields[2], float(fields[4])))
    return rows


def trec_order(rows: list[tuple[str, str, float]]) -> dict[str, list[str]]:
    """Best occurrence per (query, doc), then score descending, doc_id descending."""
    best: dict[str, dict[str, float]] = defaultdict(dict)
    for qid, doc, score in rows:
        if doc not in best[qid] or score > best[qid][doc]:
            best[qid][doc] = score
    ranked = {}
    for qid, docs in best.items():
        items = sorted(docs.items(), key=lambda kv: kv[0], reverse=True)
        items.sort(key=lambda kv: kv[1], reverse=True)
        ranked[qid] = [doc for doc, _ in items]
    return ranked


def qrels_dict(qrels: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, doc, label in qrels:
        out[qid][doc] = label
    return dict(out)


def pytrec_values(
    qrels, rows, *, rel_level=1, cutoffs=CUTOFFS, raw_scores=False, judged_only=False
) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values, keyed by our metric names (``judged_only``: trec_eval's -J)."""
    if raw_scores:
        run = defaultdict(dict)
        for qid, doc, score in rows:
            run[qid][doc] = score
    else:
        run = {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in trec_order(rows).items()}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels_dict(qrels), pytrec_measures(cutoffs), relevance_level=rel_level, judged_docs_only_flag=judged_only
    )
    result = evaluator.evaluate(dict(run))
    return {qid: {trec_to_ours(m): v for m, v in values.items()} for qid, values in result.items()}


def pytrec_ndcg_exp(qrels, rows, cutoffs=CUTOFFS) -> dict[str, dict[str, float]]:
    """Exponential-gain nDCG the way ir_measures gets it: relabel lab -> 2^lab - 1."""
    relabelled = [(q, d, (2**lab - 1) if lab > 0 else lab) for q, d, lab in qrels]
    run = {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in trec_order(rows).items()}
    cut = ",".join(str(k) for k in cutoffs)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict(relabelled), {f"ndcg_cut.{cut}", "ndcg"})
    result = evaluator.evaluate(run)
    out = {}
    for qid, values in result.items():
        out[qid] = {("ndcg_exp" if m == "ndcg" else "ndcg_exp@" + m.rsplit("_", 1)[1]): v for m, v in values.items()}
    return out


def dataset_of(qrels) -> rm.Dataset:
    return rm.Dataset.from_frames(pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))


def run_of(rows, name="run") -> rm.Run:
    return rm.Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name=name)


def assert_same(ours: pd.DataFrame, reference: dict[str, dict[str, float]], tol: float = 1e-9) -> int:
    """Every reference value equals ours within ``tol``; returns how many were compared."""
    assert set(ours.index) == set(reference), (sorted(set(ours.index) ^ set(reference)))[:10]
    compared = 0
    for qid, values in reference.items():
        for metric, expected in values.items():
            got = ours.at[qid, metric]
            assert abs(got - expected) <= tol, f"{qid} {metric}: ours {got!r}, pytrec_eval {expected!r}"
            compared += 1
    return compared


def our_values(qrels, rows, *, cutoffs=CUTOFFS, **conventions) -> pd.DataFrame:
    """ragmetrics' per-query values of the metrics :func:`pytrec_values` gives, under ``conventions``."""
    result = rm.evaluate(dataset_of(qrels), run_of(rows), our_metric_names(cutoffs), warn=False, **conventions)
    return result.per_query("run")
