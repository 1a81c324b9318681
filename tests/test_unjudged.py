"""Unjudged documents as a stated convention: condensed lists equal trec_eval on the condensed ranking,
judged@k equals a direct count, and the optimistic convention bounds the pessimistic one from above."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragmetrics as rm
from ragmetrics.metrics import METRICS
from tests import oracle
from tests.test_parity_pytrec_eval import PAIRS, TREC, generate_case


def _condensed(qrels, rows):
    judged = {(q, d) for q, d, _ in qrels}
    return [r for r in rows if (r[0], r[1]) in judged]


@pytest.mark.parametrize(("qrels_file", "run_file", "rel_level"), PAIRS)
def test_skip_equals_trec_eval_on_the_ranking_without_its_unjudged_documents(qrels_file, run_file, rel_level):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, _condensed(qrels, rows), rel_level=rel_level)
    values = oracle.our_values(qrels, rows, missing="skip", rel_level=rel_level, unjudged="skip")
    compared = oracle.assert_same(values.loc[list(reference)], reference)
    assert compared == len(reference) * len(oracle.our_metric_names())


@pytest.mark.parametrize("seed", range(0, 200, 5))
def test_skip_equals_trec_eval_on_generated_cases(seed):
    qrels, rows, rel_level = generate_case(seed)
    condensed = _condensed(qrels, rows)
    reference = oracle.pytrec_values(qrels, condensed, rel_level=rel_level)
    values = oracle.our_values(qrels, rows, rel_level=rel_level, unjudged="skip")
    oracle.assert_same(values.loc[[q for q in reference if q in values.index]], reference)


@pytest.mark.parametrize("seed", range(0, 200, 5))
def test_judged_at_k_is_the_share_of_the_top_k_the_qrels_label(seed):
    qrels, rows, _ = generate_case(seed)
    judged = {(q, d) for q, d, _ in qrels}
    ranked = oracle.trec_order(rows)
    result = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), ["judged@1", "judged@5", "judged@20"], warn=False
    )
    values = result.per_query("run")
    for qid in values.index:
        docs = ranked.get(qid, [])
        for k in (1, 5, 20):
            assert values.at[qid, f"judged@{k}"] == sum((qid, d) in judged for d in docs[:k]) / k


CUT = [m for m, info in METRICS.items() if info.cut is not None and not (info.needs_corpus or info.needs_text)]
FULL = [m for m, info in METRICS.items() if info.full is not None]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 5, 10, 30]))
def test_relevant_and_nonrelevant_bracket_every_value(seed, k):
    qrels, rows, rel_level = generate_case(seed)
    alignment = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level)
    pessimistic, optimistic = alignment, alignment.under(unjudged="relevant")
    for metric in [f"{m}@{k}" for m in CUT] + FULL:
        low, high = alignment.bounds(metric)
        worst, best = pessimistic.value(metric), optimistic.value(metric)
        assert np.array_equal(low, np.minimum(worst, best)) and np.array_equal(high, np.maximum(worst, best)), metric
        assert np.all((low >= 0) & (high <= 1 + 1e-12)), metric
        if rm.parse_metric(metric).info.rises_with_relevance:
            assert np.all(worst <= best + 1e-12), metric  # judging an unjudged document relevant never lowers it
    # a ranking whose documents are all judged has nothing to bound
    judged = {(q, d) for q, d, _ in qrels}
    full = rm.align(oracle.dataset_of(qrels), oracle.run_of(_condensed(qrels, rows)), rel_level=rel_level)
    for metric in [f"{m}@{k}" for m in CUT] + FULL:
        low, high = full.bounds(metric)
        assert np.allclose(low, high), metric
    assert judged


def test_ap_can_fall_when_an_unjudged_document_is_judged_relevant():
    """Why AP's interval is a minimum and a maximum: a new relevant document far down adds to R more than to the sum."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, **{f"n{i}": 0 for i in range(48)}}})
    run = rm.Run.from_dict({"q1": {"d1": 10.0, **{f"n{i}": 9.0 - i / 100 for i in range(48)}, "u": 0.0}})
    alignment = rm.align(dataset, run)
    assert alignment.value("map")[0] == 1.0
    assert alignment.under(unjudged="relevant").value("map")[0] == pytest.approx((1 + 2 / 50) / 2)
    assert [b[0] for b in alignment.bounds("map")] == [pytest.approx(0.52), 1.0]


def test_bpref_can_fall_when_an_unjudged_document_is_judged_relevant():
    """bpref skips unjudged documents under the other conventions; judged relevant below five non-relevant ones,
    one sits where it adds 0 and doubles R."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, **{f"n{i}": 0 for i in range(5)}}})
    run = rm.Run.from_dict({"q1": {"d1": 10.0, **{f"n{i}": 9.0 - i for i in range(5)}, "u": 0.0}})
    alignment = rm.align(dataset, run)
    assert alignment.value("bpref")[0] == alignment.under(unjudged="skip").value("bpref")[0] == 1.0
    assert alignment.under(unjudged="relevant").value("bpref")[0] == 0.5
    assert [b[0] for b in alignment.bounds("bpref")] == [0.5, 1.0]


def test_the_optimistic_bound_judges_unjudged_documents_relevant_within_the_cut_off():
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0, "d5": 1}})
    run = rm.Run.from_dict({"q1": {"u9": 4.0, "d2": 3.0, "d1": 2.0, "u8": 1.0}})
    optimistic = rm.align(dataset, run, unjudged="relevant")
    # top 2 = u9 (now relevant), d2: TP 1 of R = 2 + 1
    assert optimistic.value("recall@2")[0] == pytest.approx(1 / 3)
    assert optimistic.value("precision@2")[0] == 0.5
    # the whole ranking: u9 and u8 relevant, R = 4; AP = (1/1 + 2/3 + 3/4) / 4
    assert optimistic.value("map")[0] == pytest.approx((1 + 2 / 3 + 3 / 4) / 4)
    assert rm.align(dataset, run, unjudged="nonrelevant").value("map")[0] == pytest.approx((1 / 3) / 2)


def test_llamaindex_mode_refuses_other_unjudged_conventions():
    with pytest.raises(rm.RagMetricsError, match="LlamaIndex mode"):
        rm.Conventions.llamaindex(unjudged="skip")


RISING = [m for m in CUT + FULL if METRICS[m].rises_with_relevance and m != "judged"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 5, 10, 30]), st.randoms(use_true_random=False))
def test_the_bounds_of_a_rising_metric_hold_every_labeling_of_the_unjudged_documents(seed, k, rng):
    """Judge any subset of the unjudged documents within the cut-off relevant (the rest stay unjudged): a metric
    that rises with relevance then lies within its bounds. (judged@k counts judgments, not labels.)"""
    qrels, rows, rel_level = generate_case(seed)
    alignment = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level)
    judged = {(q, d) for q, d, _ in qrels}
    ranked = oracle.trec_order(rows)
    queries = {q for q, _, _ in qrels}
    for metric in [f"{m}@{k}" for m in CUT if m in RISING] + [m for m in FULL if m in RISING]:
        depth = k if "@" in metric else None
        unjudged = [(q, d) for q, docs in ranked.items() if q in queries for d in docs[:depth] if (q, d) not in judged]
        chosen = [pair for pair in unjudged if rng.random() < 0.5]
        labelled = rm.align(
            oracle.dataset_of(qrels + [(q, d, max(rel_level, 1)) for q, d in chosen]),
            oracle.run_of(rows),
            rel_level=rel_level,
        )
        low, high = alignment.bounds(metric)
        value = labelled.value(metric)
        assert np.all((low - 1e-12 <= value) & (value <= high + 1e-12)), (metric, chosen)
