"""Metrics where lower is better (unj@k, rbp_resid, tokens_to_evidence): every verdict, win, rank, best and gate reads
their deltas the other way. Was: ``check -m unj@10`` passed a run with more unjudged documents as an "improvement",
``history`` flagged a fall of unj@10 as a drop, and the leaderboard ranked the most unjudged system first."""

from __future__ import annotations

import io

import pytest

import ragmetrics as rm
from ragmetrics.analysis.compare import compare_result
from ragmetrics.analysis.targets import resolve_targets
from ragmetrics.analysis.verdicts import verdict
from ragmetrics.cli import main
from ragmetrics.engine.metrics import EVIDENCE_METRICS, METRICS, better_sign
from ragmetrics.io import load_dataset, load_run

N_QUERIES = 30


def test_the_registry_says_which_metrics_are_better_lower():
    assert {m.name for m in METRICS.values() if not m.higher_is_better} == {"unj", "rbp_resid"}
    assert {m.name for m in EVIDENCE_METRICS.values() if not m.higher_is_better} == {"tokens_to_evidence"}
    assert [better_sign(m) for m in ("ndcg@10", "unj@10", "rbp_resid_p=0.8", "tokens_to_evidence")] == [1, -1, -1, -1]


def test_a_verdict_reads_a_lower_value_as_better_where_lower_is_better():
    assert verdict("r", "b", -0.2, 0.001, 0.05) == "worse"
    assert verdict("r", "b", -0.2, 0.001, 0.05, sign=-1) == "better"
    assert verdict("r", "b", 0.2, 0.001, 0.05, sign=-1, direction=0.3) == "worse"
    assert verdict("r", "b", 0.2, None, 0.05, sign=-1, exact=True) == "exactly worse"


def _files(tmp_path):
    """qrels judging d0..d9 of each query; ``judged`` ranks them, ``unjudged`` puts unjudged documents on top of
    most of its rankings (more of them unjudged, not the same number everywhere, so the test has spread)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {int(d < 2)}\n" for q in range(N_QUERIES) for d in range(10)))
    judged = tmp_path / "judged.trec"
    judged.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d} judged\n" for q in range(N_QUERIES) for d in range(10)))
    unjudged = tmp_path / "unjudged.trec"
    rows = []
    for q in range(N_QUERIES):
        ids = [f"u{i}" for i in range(q % 5 + 1)] + [f"d{d}" for d in range(10)]
        rows += [f"q{q} Q0 {doc} {r + 1} {20 - r} unjudged\n" for r, doc in enumerate(ids[:10])]
    unjudged.write_text("".join(rows))
    return qrels, judged, unjudged


def test_check_fails_more_unjudged_documents_and_passes_fewer(tmp_path):
    qrels, judged, unjudged = _files(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    argv = ["check", "--dataset", str(qrels), "-m", "unj@10", "--run", str(unjudged), "--baseline", str(judged)]
    assert main(argv, out, err) == 1, err.getvalue()
    assert "FAIL regression: unj@10" in out.getvalue()
    out = io.StringIO()
    argv = ["check", "--dataset", str(qrels), "-m", "unj@10", "--run", str(judged), "--baseline", str(unjudged)]
    assert main(argv, out, io.StringIO()) == 0
    assert "PASS improvement: unj@10" in out.getvalue()


def test_wins_read_lower_as_better_and_a_floor_on_such_a_metric_is_refused(tmp_path):
    qrels, judged, unjudged = _files(tmp_path)
    dataset = load_dataset(qrels)
    result = rm.evaluate(dataset, [load_run(judged), load_run(unjudged)], ["unj@10"], warn=False)
    row = compare_result(result, baseline="unjudged", runs=["judged"], metrics=["unj@10"]).table.iloc[0]
    assert row["delta"] < 0 and row["wins"] == N_QUERIES and row["losses"] == 0
    with pytest.raises(rm.RagMetricsError, match=r"target unj@10>0.5: unj@10 is better lower"):
        resolve_targets("unj@10>0.5")
