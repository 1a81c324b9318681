"""Two versions of the judgments: the runs' order (Kendall's tau, swapped pairs) and the verdicts under each."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as sps

import ragmetrics as rm
from ragmetrics.analysis.stability import stability
from ragmetrics.io import load_dataset, load_run

SCIFACT = Path(__file__).parent / "data" / "scifact"
RUNS = ["bm25-stem.trec.gz", "dense-all-minilm-l6-v2.trec.gz", "hybrid-rrf60.trec.gz"]


def test_the_same_qrels_tell_the_same_story():
    dataset = load_dataset(SCIFACT / "qrels.tsv")
    runs = [load_run(SCIFACT / r) for r in RUNS]
    result = stability(dataset, dataset, runs, "ndcg@10")
    assert result.tau == pytest.approx(1.0) and result.swapped == [] and result.changed.empty
    assert result.means["before"].tolist() == result.means["after"].tolist()


def test_hiding_judgments_is_seen_in_the_means_tau_and_verdicts():
    full = load_dataset(SCIFACT / "qrels.tsv")
    qrels = full.qrels
    keep = random.Random(3).sample(range(len(qrels)), k=len(qrels) // 3)
    partial = rm.Dataset.from_frames(qrels.iloc[sorted(keep)].reset_index(drop=True), name="partial")
    runs = [load_run(SCIFACT / r) for r in RUNS]
    result = stability(full, partial, runs, "ndcg@10", missing="skip")
    expected_tau = sps.kendalltau(result.means["before"], result.means["after"]).statistic
    assert result.tau == pytest.approx(expected_tau)
    assert set(result.verdicts.columns) >= {"verdict_before", "verdict_after", "changed"}
    assert len(result.verdicts) == 3
    for row in result.verdicts.itertuples():
        assert row.changed == (row.verdict_before != row.verdict_after)
        for said in (row.verdict_before, row.verdict_after):  # a winner is named, not "a" or "b"
            assert said in ("not significant", f"{row.run_a} better", f"{row.run_b} better")
    assert result.family == "Holm-corrected over 3 comparison(s) (all pairs of 3 runs on ndcg@10)"
    bonferroni = stability(full, partial, runs, "ndcg@10", missing="skip", correction="bonferroni", test="wilcoxon")
    assert bonferroni.family.startswith("Bonferroni-corrected over 3")
    assert (bonferroni.verdicts["p_before"] != result.verdicts["p_before"]).any()  # the test and correction asked


def test_a_swap_of_two_runs_is_named():
    before = rm.Dataset.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    after = rm.Dataset.from_dict({"q1": {"c": 1}, "q2": {"d": 1}})
    one = rm.Run.from_dict({"q1": {"a": 2.0, "c": 1.0}, "q2": {"b": 2.0, "d": 1.0}}, name="one")
    two = rm.Run.from_dict({"q1": {"c": 2.0, "a": 1.0}, "q2": {"d": 2.0, "b": 1.0}}, name="two")
    result = stability(before, after, [one, two], "mrr")
    assert result.swapped == [("one", "two")]
    assert result.tau == pytest.approx(-1.0)
    assert isinstance(result.means, pd.DataFrame)
