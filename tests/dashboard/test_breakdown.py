"""Breakdown builders: per-group means against a pandas groupby of the library's values, small groups flagged."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.core import breakdown
from dashboard.core.queries import unevaluated_groups
from ragmetrics.analysis.compare import MIN_GROUP
from ragmetrics.engine.metrics import parse_metric as M


def test_breakdown_frame_matches_groupby(faq, faq_alignments, faq_result) -> None:
    table = breakdown.breakdown_frame(faq_alignments, M("recall@5"), "category")
    assert list(table.columns) == ["run", "group", "n", "mean", "ci_low", "ci_high", "too_few"]
    per_query = faq_result.per_query("hybrid-rrf").join(faq.dataset.queries.set_index("query_id")["category"])
    expected = per_query.groupby("category")["recall@5"].agg(["mean", "size"])
    got = table[table["run"] == "hybrid-rrf"].set_index("group")
    for category, row in expected.iterrows():
        assert got.loc[category, "mean"] == pytest.approx(row["mean"], abs=1e-12)
        assert got.loc[category, "n"] == row["size"]
    assert got["n"].sum() == 91
    assert "negative" not in set(table["group"])  # negative queries have no judgments: not evaluated
    assert unevaluated_groups(faq.dataset, faq_alignments[0].query_ids, "category") == {"negative": 15}


def test_breakdown_marks_small_groups_and_orders_difficulty(tiny_alignments) -> None:
    assert breakdown.MIN_GROUP is MIN_GROUP  # the library's threshold, not a copy
    table = breakdown.breakdown_frame(tiny_alignments, M("hits@5"), "difficulty")
    assert list(dict.fromkeys(table["group"])) == ["easy", "hard"]
    assert table["too_few"].all()  # 6 queries each
    cat = breakdown.breakdown_frame(tiny_alignments, M("hits@5"), "category")
    a = cat[(cat["run"] == "run-a") & (cat["group"] == "a")].iloc[0]
    # run-a, category a = q01..q08: first ranks 1,7,2,0,12,1,3,25 -> 4 hits in the top 5
    assert a["n"] == 8 and a["mean"] == pytest.approx(4 / 8)
    assert a["too_few"]


def test_breakdown_figure_bars_error_bars_and_small_groups(faq_alignments, tiny_alignments) -> None:
    table = breakdown.breakdown_frame(faq_alignments, M("recall@5"), "category")
    fig = breakdown.breakdown_figure(table, M("recall@5"), "category")
    assert [t.name for t in fig.data] == ["bm25", "dense-e5", "hybrid-rrf"]
    assert all(t.type == "bar" for t in fig.data)
    assert list(fig.data[0].x) == [f"{g}<br>n={n}" for g, n in zip(table["group"][:4], table["n"][:4])]
    bm25 = table[table["run"] == "bm25"]
    np.testing.assert_allclose(fig.data[0].y, bm25["mean"].to_numpy())
    np.testing.assert_allclose(fig.data[0].error_y.array, (bm25["ci_high"] - bm25["mean"]).to_numpy(), atol=1e-12)
    assert fig.layout.yaxis.title.text == "Recall@5"
    assert set(fig.data[0].marker.pattern.shape) == {""}

    small = breakdown.breakdown_frame(tiny_alignments, M("hits@5"), "category")
    fig = breakdown.breakdown_figure(small, M("hits@5"), "category")
    assert all("too few" in x for x in fig.data[0].x)
    assert set(fig.data[0].marker.pattern.shape) == {"/"}
    assert any("too few" in a.text for a in fig.layout.annotations)


def test_breakdown_by_another_query_column(tiny) -> None:
    import pandas as pd

    import ragmetrics

    queries = tiny.queries.assign(source=["web" if i % 3 else "" for i in range(len(tiny))])
    dataset = tiny.with_queries(queries)
    run = ragmetrics.Run.from_frame(pd.DataFrame({"query_id": ["q01"], "doc_id": ["d1"], "score": [1.0]}), name="r")
    table = breakdown.breakdown_frame([ragmetrics.align(dataset, run)], M("hits@5"), "source")
    assert set(table["group"]) == {"web", "(none)"} and table["n"].sum() == 12
