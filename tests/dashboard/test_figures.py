"""Figure builders: trace names, axis values and marks, without Streamlit."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.core import figures, frames


@pytest.fixture(scope="module")
def curves(faq_evals):
    return frames.curve_frame(faq_evals, k_max=20)


def _lines(fig):
    return [t for t in fig.data if not t.name.endswith(figures.BAND_SUFFIX)]


def test_curves_figure_one_line_per_run_per_panel(curves, faq_evals) -> None:
    runs = [ev.name for ev in faq_evals]
    fig = figures.curves_figure(curves, runs=runs, k_mark=5)
    assert [a.text for a in fig.layout.annotations if a.text.endswith("@K")] == [
        "Recall@K",
        "Precision@K",
        "F1@K",
        "Hits@K",
        "nDCG@K",
    ]
    lines = _lines(fig)
    bands = [t for t in fig.data if t.name.endswith(figures.BAND_SUFFIX)]
    assert len(lines) == len(bands) == 5 * len(runs)
    legend = [t.name for t in lines if t.showlegend]
    assert legend == runs  # one legend entry (trace) per run
    first_panel = [t for t in lines if t.xaxis == "x"]
    assert [t.name for t in first_panel] == runs
    recall_bm25 = curves[(curves["run"] == "bm25") & (curves["metric"] == "recall")]
    assert list(first_panel[0].x) == list(range(1, 21))
    np.testing.assert_allclose(first_panel[0].y, recall_bm25["value"].to_numpy())
    band = bands[0]
    assert band.fill == "toself" and band.showlegend is False and len(band.x) == 40
    assert fig.layout.xaxis.title.text == "K" and tuple(fig.layout.yaxis.range) == (0, 1.02)
    # one colour per run, shared by line and band
    assert first_panel[0].line.color == figures.PALETTE[0] and first_panel[1].line.color == figures.PALETTE[1]


def test_curves_figure_log_axis_for_deep_curves(faq_evals) -> None:
    deep = frames.curve_frame(faq_evals[:1], metrics=("recall",), k_max=100)
    fig = figures.curves_figure(deep, metrics=("recall",))
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 5, 10, 20, 50, 100]
    shallow = figures.curves_figure(
        frames.curve_frame(faq_evals[:1], metrics=("recall",), k_max=10), metrics=("recall",)
    )
    assert shallow.layout.xaxis.type == "linear"


def test_pr_figure(faq_evals) -> None:
    pr = frames.pr_frame(faq_evals, 20)
    fig = figures.pr_figure(pr)
    assert [t.name for t in fig.data] == ["bm25", "dense-e5", "hybrid-rrf"]
    trace = fig.data[0]
    labelled = [t for t in trace.text if t]
    assert labelled == ["K=1", "K=5", "K=10", "K=20"]
    assert list(trace.customdata) == list(range(1, 21))
    bm25 = pr[pr["run"] == "bm25"]
    np.testing.assert_allclose(trace.x, bm25["recall"].to_numpy())
    np.testing.assert_allclose(trace.y, bm25["precision"].to_numpy())
    assert fig.layout.xaxis.title.text == "Recall@K" and fig.layout.yaxis.title.text == "Precision@K"


def test_breakdown_figure_bars_error_bars_and_small_groups(faq_evals, tiny_evals) -> None:
    table = frames.breakdown_frame(faq_evals, "recall@5", "category")
    fig = figures.breakdown_figure(table, "recall@5", "category")
    assert [t.name for t in fig.data] == ["bm25", "dense-e5", "hybrid-rrf"]
    assert all(t.type == "bar" for t in fig.data)
    assert list(fig.data[0].x) == [f"{g}<br>n={n}" for g, n in zip(table["group"][:4], table["n"][:4])]
    bm25 = table[table["run"] == "bm25"]
    np.testing.assert_allclose(fig.data[0].y, bm25["mean"].to_numpy())
    np.testing.assert_allclose(fig.data[0].error_y.array, (bm25["ci_high"] - bm25["mean"]).to_numpy(), atol=1e-12)
    assert fig.layout.yaxis.title.text == "Recall@5"
    assert set(fig.data[0].marker.pattern.shape) == {""}

    small = frames.breakdown_frame(tiny_evals, "hits@5", "category")
    fig = figures.breakdown_figure(small, "hits@5", "category")
    assert all("too few" in x for x in fig.data[0].x)
    assert set(fig.data[0].marker.pattern.shape) == {"/"}
    assert any("too few" in a.text for a in fig.layout.annotations)


def test_rank_histogram(tiny_evals) -> None:
    tables = {ev.name: frames.query_table(ev, 5) for ev in tiny_evals}
    fig = figures.rank_histogram_figure(tables, 5)
    assert [t.name for t in fig.data] == ["run-a", "run-b"]
    a = dict(zip(fig.data[0].x, fig.data[0].y))
    assert a["1"] == 4 and a["7"] == 1 and a[">20"] == 1 and a["none"] == 1
    assert sum(fig.data[0].y) == 11  # q12 has no relevant document


def test_user_text_is_not_markup_in_figures(tiny, tiny_runs) -> None:
    from dashboard.core.evaluation import evaluate_run
    from ragmetrics import Run

    evals = [evaluate_run(tiny, Run.from_frame(tiny_runs[0].frame, name="<b>bold</b> & co"))]
    fig = figures.pr_figure(frames.pr_frame(evals, 10))
    assert fig.data[0].name == "&lt;b&gt;bold&lt;/b&gt; &amp; co"


def test_depth_figure_one_bar_series_per_run(tiny_evals) -> None:
    fig = figures.depth_figure(frames.depth_frame(tiny_evals), runs=["run-b", "run-a"])
    assert [t.name for t in fig.data] == ["run-b", "run-a"]
    assert list(fig.data[0].x) == [30] and list(fig.data[0].y) == [12]
