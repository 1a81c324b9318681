"""Quality against context cost (dashboard.core.cost): the tokens a run's top K chunks put in the context, against
a metric at K, one point per run; and the Compare page draws it."""

from __future__ import annotations

import jieba
import numpy as np
import pytest

import ragmetrics
from dashboard.core import cost
from ragmetrics.engine import budgets
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.foundation.errors import RagMetricsError
from tests.dashboard.apptest import figure_specs, no_problems, open_page


def test_tokens_of_the_top_k_are_counted_by_hand(faq_alignments) -> None:
    alignment = faq_alignments[0]
    k = 3
    frame = cost.cost_frame(faq_alignments, parse_metric("recall@3"), k)
    assert list(frame.columns) == cost.COST_COLUMNS and list(frame["run"]) == [a.name for a in faq_alignments]
    assert set(frame["tokenizer"]) == {"jieba"}  # the FAQ is in Chinese: auto chooses jieba
    per_query = budgets.tokens_at_depth(alignment, k)
    # by hand: the run's rows in ranking order, the first k of each query, jieba's pieces that are not blank
    texts = budgets.row_texts(alignment)
    q, _rows, _kept = budgets.sorted_rows(alignment)
    expected = np.zeros(alignment.n_queries)
    seen: dict[int, int] = {}
    for query, text in zip(q.tolist(), texts):
        if seen.get(query, 0) < k:
            expected[query] += sum(1 for piece in jieba.lcut(text) if piece.strip())
        seen[query] = seen.get(query, 0) + 1
    np.testing.assert_array_equal(per_query, expected)
    row = frame.iloc[0]
    assert (
        row["tokens"] == pytest.approx(expected.mean())
        and row["tokens_ci_low"] <= row["tokens"] <= row["tokens_ci_high"]
    )
    assert row["mean"] == pytest.approx(alignment.mean(parse_metric("recall@3")))
    # more chunks cost more tokens
    assert (budgets.tokens_at_depth(alignment, 5) >= per_query).all()


def test_runs_without_texts_say_why_never_zero() -> None:
    dataset = ragmetrics.Dataset.from_dict({"q1": {"d1": 1}})
    run = ragmetrics.Run.from_dict({"q1": {"d1": 1.0, "d2": 0.5}}, name="bare")
    with pytest.raises(RagMetricsError):
        cost.cost_frame([ragmetrics.align(dataset, run)], parse_metric("recall@2"), 2)


def test_the_figure_has_one_point_per_run_with_both_intervals(faq_alignments) -> None:
    spec = parse_metric("ndcg@5")
    fig = cost.cost_figure(cost.cost_frame(faq_alignments, spec, 5), spec, 5)
    assert [t.name for t in fig.data] == [a.name for a in faq_alignments]
    assert all(t.error_x.array and t.error_y.array for t in fig.data)
    assert "jieba" in fig.layout.xaxis.title.text


def test_compare_draws_quality_against_cost() -> None:
    at = open_page("compare")
    no_problems(at)
    assert any("against the context it costs" in spec for spec in figure_specs(at))
