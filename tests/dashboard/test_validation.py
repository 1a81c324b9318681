"""The upload page's validation report (the alignment's coverage) and the depth of each run."""

from __future__ import annotations

import pandas as pd

import ragmetrics
from dashboard.core import validation
from ragmetrics import Run


def test_validation_frame_counts() -> None:
    qrels = pd.DataFrame(
        [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 0)], columns=["query_id", "doc_id", "relevance"]
    )
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "query": ["one", "two", "three", "four"],
            "category": ["x", "x", "y", "y"],
        }
    )
    dataset = ragmetrics.Dataset.from_frames(qrels, queries)
    run = Run.from_frame(
        pd.DataFrame(
            [
                ("q1", "d1", 2.0),
                ("q1", "d9", 2.0),
                ("q1", "d1", 1.0),  # a tie and a duplicate
                ("zz", "d1", 1.0),  # unknown query
                ("two", "d2", 1.0),  # matched by text
            ],
            columns=["query_id", "doc_id", "score"],
        ),
        name="r",
    )
    report = validation.validation_frame(dataset, [ragmetrics.align(dataset, run)])
    assert list(report.columns) == validation.VALIDATION_COLUMNS
    counts = {(s, c.split(" (")[0]): n for s, c, n in zip(report["scope"], report["check"], report["count"])}
    assert counts[("dataset", "queries without judgments")] == 1
    assert counts[("dataset", "queries without a relevant document")] == 1
    assert counts[("dataset", "categories with fewer than 10 queries")] == 2
    assert counts[("r", "dataset queries with no results in the run")] == 1  # q3
    assert counts[("r", "run queries not in the dataset")] == 1
    assert counts[("r", "run queries matched by query text, not id")] == 1
    assert counts[("r", "duplicate")] == 1
    assert counts[("r", "tied scores")] == 1
    row = report[report["check"].str.startswith("run queries not in")].iloc[0]
    assert row["examples"] == "zz" and row["status"] == "warning"
    ok = report[report["count"] == 0]
    assert (ok["status"] == "ok").all() and (ok["effect"] == "").all()
    assert counts[("r", "top 10 mostly unjudged")] == 0  # judged@10 = 0.75

    # a run whose top 10 is mostly unjudged (as SciFact's BM25 run: judged@10 = 0.09) is a check to look at, as
    # the CLI's note says
    thin = Run.from_frame(
        pd.DataFrame(
            [("q1", "d1", 3.0), ("q1", "x1", 2.0), ("q1", "x2", 1.0)], columns=["query_id", "doc_id", "score"]
        ),
        name="thin",
    )
    alignment = ragmetrics.align(dataset, thin)
    assert alignment.health.thinly_judged
    report = validation.validation_frame(dataset, [alignment])
    row = report[report["check"].str.startswith("top 10 mostly unjudged")].iloc[0]
    assert (row["status"], row["count"], row["examples"]) == ("warning", 1, "judged@10 = 0.33")
    assert validation.to_look_at(report) >= 1


def test_depth_frame_counts_queries_per_ranking_depth(tiny, tiny_runs) -> None:
    frame = tiny_runs[1].frame
    rank = frame.groupby("query_id").cumcount()
    # q01 cut to 5 documents, q02 left out, q03 given one duplicate row (kept once): 1 query at 0, 1 at 5, 10 at 30
    cut = frame[~((frame["query_id"] == "q01") & (rank >= 5)) & (frame["query_id"] != "q02")]
    cut = pd.concat([cut, cut[cut["query_id"] == "q03"].head(1).assign(score=0.5)], ignore_index=True)
    alignment = ragmetrics.align(tiny, Run.from_frame(cut, name="cut"))
    depths = validation.depth_frame([alignment, *[ragmetrics.align(tiny, r) for r in tiny_runs[:1]]])
    assert depths.to_dict("records") == [
        {"run": "cut", "retrieved": 0, "queries": 1},
        {"run": "cut", "retrieved": 5, "queries": 1},
        {"run": "cut", "retrieved": 30, "queries": 10},
        {"run": "run-a", "retrieved": 30, "queries": 12},
    ]
    assert validation.depth_frame([]).columns.tolist() == ["run", "retrieved", "queries"]


def test_depth_figure_one_bar_series_per_run(tiny_alignments) -> None:
    fig = validation.depth_figure(validation.depth_frame(tiny_alignments), runs=["run-b", "run-a"])
    assert [t.name for t in fig.data] == ["run-b", "run-a"]
    assert list(fig.data[0].x) == [30] and list(fig.data[0].y) == [12]
