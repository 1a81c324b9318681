"""trec_eval 10.0's rbp, rbp_resid and unj@k on cases small enough to compute by hand (the conformance with
trec_eval's own outputs is in tests/test_parity_pytrec_eval.py)."""

from __future__ import annotations

import io

import pytest

import ragmetrics as rm
from ragmetrics.cli import main

# q1: d1 relevant, d2 unjudged, d3 relevant, d4 judged non-relevant; four ranks.
# q2: graded, highest label 4 (d9, not retrieved): d1's gain is 3/4; every retrieved document judged.
# q3: one document, labelled -1: trec_eval counts a negative label as unjudged.
DATASET = rm.Dataset.from_dict(
    {"q1": {"d1": 1, "d3": 1, "d4": 0}, "q2": {"d1": 3, "d2": 0, "d9": 4}, "q3": {"d1": -1, "d5": 1}}
)
RUN = rm.Run.from_dict(
    {"q1": {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0}, "q2": {"d1": 2.0, "d2": 1.0}, "q3": {"d1": 1.0}}
)
HAND = {
    # (1 - p) * sum of gain * p^(rank - 1)
    "rbp_p=0.5": {"q1": 0.5 * (1 + 0.25), "q2": 0.5 * 0.75, "q3": 0.0},
    "rbp": {"q1": 0.1 * (1 + 0.81), "q2": 0.1 * 0.75, "q3": 0.0},
    # p^n + (1 - p) * sum over unjudged ranks of p^(rank - 1); 0 when none is unjudged
    "rbp_resid_p=0.5": {"q1": 0.5**4 + 0.5 * 0.5, "q2": 0.0, "q3": 0.5 + 0.5 * 1},
    "rbp_resid": {"q1": 0.9**4 + 0.1 * 0.9, "q2": 0.0, "q3": 0.9 + 0.1 * 1},
    # unjudged in the top k / k, k even past the ranking
    "unj@1": {"q1": 0.0, "q2": 0.0, "q3": 1.0},
    "unj@2": {"q1": 0.5, "q2": 0.0, "q3": 0.5},
    "unj@5": {"q1": 0.2, "q2": 0.0, "q3": 0.2},
}


def test_rbp_residual_and_unjudged_by_hand():
    result = rm.evaluate(DATASET, RUN, list(HAND), warn=False).per_query("run")
    for metric, values in HAND.items():
        for qid, expected in values.items():
            assert result.at[qid, metric] == pytest.approx(expected, abs=1e-15), (metric, qid)


def test_unjudged_at_cut_offs_given_in_any_order():
    result = rm.evaluate(DATASET, RUN, ["unj@5", "unj@1", "unj@2"], warn=False).per_query("run")
    assert result.loc["q1", ["unj@5", "unj@1", "unj@2"]].tolist() == [0.2, 0.0, 0.5]


def test_rbp_plus_its_residual_is_its_upper_bound():
    """rbp + rbp_resid: q1's unjudged d2 and every rank below the ranking relevant. The best judging of what the
    run retrieved (d2 relevant) is that less the tail p^n; unj@k reads no label, so its bounds are its value."""
    alignment = rm.align(DATASET, RUN)
    rbp, resid = alignment.value("rbp_p=0.5")[0], alignment.value("rbp_resid_p=0.5")[0]
    assert rbp + resid == pytest.approx(0.5 * (1 + 0.5 + 0.25) + 0.5**4)
    worst, best = alignment.bounds("rbp_p=0.5")
    assert (worst[0], best[0]) == (pytest.approx(rbp), pytest.approx(rbp + resid - 0.5**4))
    assert alignment.bounds("unj@2")[0][0] == alignment.bounds("unj@2")[1][0] == 0.5


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("rbp", "rbp"), ("RBP", "rbp"), ("rbp.p=0.95", "rbp_p=0.95"), ("rbp_p=0.95", "rbp_p=0.95"), ("rbp.p=0.9", "rbp"),
     ("rbp_resid", "rbp_resid"), ("rbp_resid.p=0.8", "rbp_resid_p=0.8"), ("unj_5", "unj@5"), ("unj.20", "unj@20")],
)  # fmt: skip
def test_trec_eval_10_names(name, canonical):
    assert str(rm.parse_metric(name)) == canonical
    assert rm.parse_metric(canonical) == rm.parse_metric(name)


@pytest.mark.parametrize(
    ("text", "message"),
    [("rbp_p=1.5", r"the persistence p must be a number between 0 and 1, e.g. 'rbp_p=0.95'. Got '1.5' instead"),
     ("rbp.p=", "the persistence p must be a number between 0 and 1"),
     ("rbp_p=nan", "the persistence p must be a number between 0 and 1"),
     ("ndcg_p=0.5", r"ndcg takes no persistence p \(only rbp, rbp_resid do\)"),
     ("rbp@10", "takes no cut-off"), ("unj", "needs a cut-off")],
)  # fmt: skip
def test_bad_persistence_is_explained(text, message):
    with pytest.raises(rm.MetricNameError, match=message):
        rm.parse_metric(text)


def test_the_cli_reads_a_persistence(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 1\nq1 0 d4 0\n")
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q1 Q0 d{i} {i} {5 - i} r\n" for i in range(1, 5)))
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "rbp.p=0.5", "-m", "unj_2"], out=out, err=err
    )
    assert code == 0, err.getvalue()
    printed = {line.split("\t")[0].strip(): line.split("\t")[-1] for line in out.getvalue().splitlines()}
    assert printed["rbp_p=0.5"] == "0.6250" and printed["unj@2"] == "0.5000"
    out, err = io.StringIO(), io.StringIO()
    code = main(["eval", "--dataset", str(qrels), "--run", str(run), "-m", "rbp_p=2"], out=out, err=err)
    assert code == 2 and "the persistence p must be a number between 0 and 1" in err.getvalue()


def test_under_skip_nothing_unjudged_is_left():
    """--unjudged skip removes the documents the qrels lack, and negatively labelled ones with them (trec_eval -J),
    before unj@k and rbp_resid read the ranking: nothing unjudged is left, so both are 0 (q3 ranked only its
    negatively labelled d1: an empty ranking, whose residual trec_eval counts as 0)."""
    result = rm.evaluate(DATASET, RUN, ["unj@2", "rbp_resid_p=0.5"], unjudged="skip", warn=False).per_query("run")
    assert result["unj@2"].to_dict() == {"q1": 0.0, "q2": 0.0, "q3": 0.0}
    assert result["rbp_resid_p=0.5"].to_dict() == {"q1": 0.0, "q2": 0.0, "q3": 0.0}
