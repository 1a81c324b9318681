"""Registry-driven invariants: every metric in the registry is checked, so a new
metric is covered the moment it is added."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmetrics as rm
from ragmetrics.engine.metrics import METRICS

DOCS = [f"d{i}" for i in range(8)] + ["文档", "é"]


def all_metric_names(k: int) -> list[str]:
    """Every metric read from the judgments (the text metrics have their own tests)."""
    names = []
    for info in METRICS.values():
        if info.needs_text:
            continue
        if info.k in ("required", "optional"):
            names.append(f"{info.name}@{k}")
        if info.k in ("optional", "none"):
            names.append(info.name)
    return names


@st.composite
def cases(draw):
    n_queries = draw(st.integers(1, 4))
    qrels, rows = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
        for doc in judged:
            qrels.append((qid, doc, draw(st.integers(-1, 3))))
        ranked = draw(st.lists(st.tuples(st.sampled_from(DOCS), st.integers(-8, 8)), max_size=14))
        rows += [(qid, doc, score / 4) for doc, score in ranked]
    return qrels, rows


def frames(qrels, rows, corpus_size=50):
    dataset = rm.Dataset.from_frames(
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]), corpus_size=corpus_size
    )
    run = rm.Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).astype({"score": float}))
    return dataset, run


@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from([1, 2, 3, 5, 10, 20]))
def test_every_metric_lies_in_unit_interval_even_with_duplicate_rows(case, k):
    qrels, rows = case
    rows = rows + rows[: len(rows) // 2]  # duplicated rows never push a metric above 1
    dataset, run = frames(qrels, rows)
    values = rm.evaluate(dataset, run, all_metric_names(k), warn=False).per_query("run").to_numpy()
    assert values.shape[1] == len(all_metric_names(k))
    assert np.all(values >= 0) and np.all(values <= 1)


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(-1000, 1000))
def test_adding_a_constant_to_every_score_changes_nothing(case, shift):
    qrels, rows = case
    names = all_metric_names(3) + all_metric_names(10)
    before = rm.evaluate(*frames(qrels, rows), names, warn=False).per_query("run")
    after = rm.evaluate(*frames(qrels, [(q, d, s + shift) for q, d, s in rows]), names, warn=False).per_query("run")
    pd.testing.assert_frame_equal(before, after)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=8), st.lists(st.integers(-1, 0), max_size=5))
def test_a_perfect_ranking_scores_one_at_k_equal_r(relevant_labels, other_labels):
    """Every relevant document first, in label order, then the rest: each metric at k = R is 1."""
    relevant = [(f"r{i}", lab) for i, lab in enumerate(relevant_labels)]
    others = [(f"n{i}", lab) for i, lab in enumerate(other_labels)]
    qrels = [("q", doc, lab) for doc, lab in relevant + others]
    ordered = sorted(relevant, key=lambda dl: -dl[1]) + others
    rows = [("q", doc, float(len(ordered) - i)) for i, (doc, _) in enumerate(ordered)]
    # rbp's user reads on past rank R (its best is 1 - p^R there); unj@k and rbp_resid measure the judgments' coverage;
    # the set's precision, F and AP read every retrieved document, the non-relevant ones past R too
    not_maxed = ("rbp", "rbp_resid", "unj", "set_precision", "set_f1", "set_map")
    names = [n for n in all_metric_names(len(relevant)) if rm.parse_metric(n).name not in not_maxed]
    values = rm.evaluate(*frames(qrels, rows), names, warn=False).per_query("run").loc["q"]
    assert values.to_dict() == dict.fromkeys(names, 1.0)
    # retrieving the relevant documents alone, the set's are 1 too
    alone = rm.evaluate(*frames(qrels, rows[: len(relevant)]), ["set_precision", "set_f1", "set_map"], warn=False)
    assert alone.per_query("run").loc["q"].to_dict() == dict.fromkeys(["set_precision", "set_f1", "set_map"], 1.0)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_curves_equal_the_point_metrics_at_every_k(case):
    qrels, rows = case
    dataset, run = frames(qrels, rows)
    result = rm.evaluate(
        dataset, run, [f"{m}@{k}" for m in ("precision", "recall", "ndcg", "hits", "f1") for k in (1, 4, 9)], warn=False
    )
    for metric in ("precision", "recall", "ndcg", "hits", "f1"):
        curve = result["run"].curve(metric, 9)
        for k in (1, 4, 9):
            np.testing.assert_array_equal(curve[:, k - 1], result.per_query("run")[f"{metric}@{k}"].to_numpy())
