"""Every claim of equality with a peer, checked against the peer itself: judged@k against ir_measures' Judged@k,
``--unjudged skip`` against trec_eval's -J (pytrec_eval's ``judged_docs_only_flag``) and ir_measures' ``judged_only``
with negative labels present, and ir_measures' own expectations on qrels that judge nothing relevant at the
level asked, through the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import ragmetrics as rm
from ragmetrics.cli import main
from tests import oracle
from tests.test_parity_pytrec_eval import generate_case

ir_measures = pytest.importorskip("ir_measures")


def _ir_run(rows) -> dict[str, dict[str, float]]:
    """The run in trec_eval's order as scores without ties, so only the measures are compared."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in oracle.trec_order(rows).items()}


def _ir_values(measures, qrels, rows) -> dict[str, dict[object, float]]:
    out: dict[str, dict[object, float]] = {}
    for found in ir_measures.iter_calc(measures, oracle.qrels_dict(qrels), _ir_run(rows)):
        out.setdefault(found.query_id, {})[found.measure] = found.value
    return out


# --- judged@k ----------------------------------------------------------------------------------

JUDGED_KS = (1, 2, 3, 5, 10, 20, 50)


def test_judged_at_k_of_a_short_ranking_is_ir_measures_judged_at_k():
    """Was: 0.1 (judged documents / k) where ir_measures gives 0.5 (judged / min(k, retrieved))."""
    qrels = [("q1", "d1", 1), ("q1", "d2", 0)]
    rows = [("q1", "d1", 2.0), ("q1", "dX", 1.0)]
    theirs = _ir_values([ir_measures.Judged @ 10], qrels, rows)["q1"][ir_measures.Judged @ 10]
    ours = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows)).value("judged@10")[0]
    assert ours == theirs == 0.5


@pytest.mark.parametrize("seed", range(0, 240, 3))
def test_judged_at_k_equals_ir_measures_on_generated_cases(seed):
    qrels, rows, _ = generate_case(seed)
    measures = [ir_measures.Judged @ k for k in JUDGED_KS]
    theirs = _ir_values(measures, qrels, rows)
    ours = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), [f"judged@{k}" for k in JUDGED_KS], warn=False
    ).per_query("run")
    ranked = {q for q, docs in oracle.trec_order(rows).items() if docs and q in ours.index}
    assert ranked <= set(theirs)
    for q in ranked:
        for k in JUDGED_KS:
            assert ours.at[q, f"judged@{k}"] == pytest.approx(theirs[q][ir_measures.Judged @ k], abs=1e-12), (q, k)


# --- --unjudged skip ---------------------------------------------------------------------------

NEGATIVE_QRELS = [("q1", "d1", -1), ("q1", "d2", 1), ("q1", "d3", 0)]
NEGATIVE_ROWS = [("q1", "d1", 3.0), ("q1", "d2", 2.0), ("q1", "dX", 1.0)]


def test_skip_drops_a_negatively_labelled_document_as_trec_eval_j_and_ir_measures_do():
    """Was: precision@1 0.0, mrr 0.5, map 0.5, where trec_eval -J and ir_measures' judged_only give 1.0."""
    alignment = rm.align(oracle.dataset_of(NEGATIVE_QRELS), oracle.run_of(NEGATIVE_ROWS), unjudged="skip")
    ours = {m: float(alignment.value(m)[0]) for m in ("precision@1", "mrr", "map", "ndcg@10", "rprec")}
    pytrec = oracle.pytrec_values(NEGATIVE_QRELS, NEGATIVE_ROWS, cutoffs=(1, 10), judged_only=True)["q1"]
    measures = {
        "precision@1": ir_measures.P(judged_only=True) @ 1,
        "mrr": ir_measures.RR(judged_only=True),
        "map": ir_measures.AP(judged_only=True),
        "ndcg@10": ir_measures.nDCG(judged_only=True) @ 10,
        "rprec": ir_measures.Rprec(judged_only=True),
    }
    theirs = _ir_values(list(measures.values()), NEGATIVE_QRELS, NEGATIVE_ROWS)["q1"]
    for metric, value in ours.items():
        assert value == pytest.approx(pytrec[metric], abs=1e-12) == pytest.approx(theirs[measures[metric]]), metric
    assert ours["precision@1"] == ours["mrr"] == ours["map"] == 1.0


@pytest.mark.parametrize("seed", range(0, 240, 3))
def test_skip_equals_trec_eval_j_on_generated_cases_with_negative_labels(seed):
    qrels, rows, rel_level = generate_case(seed)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level, judged_only=True)
    values = oracle.our_values(qrels, rows, rel_level=rel_level, unjudged="skip", missing="skip")
    oracle.assert_same(values.loc[[q for q in reference if q in values.index]], reference)


@pytest.mark.parametrize("seed", range(1, 240, 6))
def test_skip_equals_ir_measures_judged_only_on_generated_cases(seed):
    qrels, rows, rel_level = generate_case(seed)
    measures = {
        **{f"precision@{k}": ir_measures.P(rel=rel_level, judged_only=True) @ k for k in (1, 3, 10)},
        **{f"recall@{k}": ir_measures.R(rel=rel_level, judged_only=True) @ k for k in (1, 3, 10)},
        **{f"ndcg@{k}": ir_measures.nDCG(judged_only=True) @ k for k in (1, 3, 10)},
        "mrr": ir_measures.RR(rel=rel_level, judged_only=True),
        "map": ir_measures.AP(rel=rel_level, judged_only=True),
    }
    theirs = _ir_values(list(measures.values()), qrels, rows)
    ours = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), list(measures), warn=False, rel_level=rel_level,
        unjudged="skip",
    ).per_query("run")  # fmt: skip
    assert set(theirs) <= set(ours.index)
    for q, values in theirs.items():
        for metric, measure in measures.items():
            if measure in values:
                assert ours.at[q, metric] == pytest.approx(values[measure], abs=1e-9), (q, metric)


# --- nothing relevant at the level asked, through the CLI --------------------------------------

IR_QRELS = "0 0 D0 0\n0 0 D1 1\n0 0 D2 2\n0 0 D3 2\n0 0 D4 0\n1 0 D0 1\n1 0 D3 2\n1 0 D5 0\n"
IR_RUN = (
    "0 0 D0 1 0.8 run\n0 0 D2 2 0.7 run\n0 0 D1 3 0.3 run\n0 0 D3 4 0.4 run\n0 0 D4 5 0.1 run\n"
    "1 0 D1 1 0.8 run\n1 0 D4 2 0.7 run\n1 0 D3 3 0.3 run\n1 0 D2 4 0.4 run\n"
)
"""ir_measures' test_pytrec_eval.py case (its Success, SetP and SetR tests): no label reaches 3."""


def _cli(tmp_path, *argv):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(IR_QRELS)
    run.write_text(IR_RUN)
    out, err = io.StringIO(), io.StringIO()
    code = main(["eval", "--dataset", str(qrels), "--run", str(run), "--format", "json", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


REL3 = {
    "hits@2": lambda: ir_measures.Success(rel=3) @ 2,  # Success(rel=3)@2 = 0
    "recall@1000": lambda: ir_measures.SetR(rel=3),  # SetR(rel=3) = 0: recall over every retrieved document
    "precision@5": lambda: ir_measures.P(rel=3) @ 5,  # SetP(rel=3) = 0: no relevant document retrieved
    "mrr": lambda: ir_measures.RR(rel=3),
    "map": lambda: ir_measures.AP(rel=3),
}


def test_ir_measures_expectations_at_a_level_nothing_reaches_are_scored_through_the_cli(tmp_path):
    """Was: refused ('the qrels judge no document relevant'); the library, trec_eval and ir_measures give 0s."""
    metrics = [arg for m in REL3 for arg in ("-m", m)]
    code, _, err = _cli(tmp_path, "--rel-level", "3", *metrics)
    assert code == 2 and "--allow-no-relevant scores it anyway" in err, err
    code, out, err = _cli(tmp_path, "--rel-level", "3", "--allow-no-relevant", *metrics)
    assert code == 0, err
    means = json.loads(out)["runs"]["run"]["mean"]
    qrels = list(ir_measures.read_trec_qrels(IR_QRELS))
    run = list(ir_measures.read_trec_run(IR_RUN))
    expected = ir_measures.calc_aggregate([make() for make in REL3.values()], qrels, run)
    for metric, make in REL3.items():
        assert means[metric] == expected[make()] == 0, metric
    # judged@k reads no relevance: nothing to refuse, and it is ir_measures' Judged@10
    code, out, err = _cli(tmp_path, "--rel-level", "3", "-m", "judged@10")
    assert code == 0, err
    judged = ir_measures.calc_aggregate([ir_measures.Judged @ 10], qrels, run)[ir_measures.Judged @ 10]
    assert json.loads(out)["runs"]["run"]["mean"]["judged@10"] == pytest.approx(judged)


# --- ranx's names and edge cases, through the CLI -----------------------------------------------

RANX_METRICS = ["precision@5", "recall@5", "f1@5", "hit_rate@5", "mrr", "mrr@2", "map", "map@3", "ndcg@5"]
RANX_METRICS += ["ndcg_burges@5", "r-precision", "bpref"]
RANX_CASES = {
    # every label below the relevance level: the peers score 0s; the CLI needs --allow-no-relevant
    "nothing relevant": (
        {"q1": {"d1": 0, "d2": 0}, "q2": {"d3": 0}},
        {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d3": 0.3, "d4": 0.1}},
        ["--allow-no-relevant"],
    ),
    # no retrieved document is judged: the peers score 0s; the CLI needs --allow-no-overlap
    "no overlap": ({"q1": {"d1": 1}, "q2": {"d2": 2}}, {"q1": {"x1": 0.9}, "q2": {"x2": 0.3}}, ["--allow-no-overlap"]),
    "graded, short and unjudged": (
        {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1, "d5": 3}, "q3": {"d6": 1}},
        {"q1": {"d3": 0.9, "d1": 0.8, "u1": 0.7, "d2": 0.6}, "q2": {"u2": 0.5, "d5": 0.4}, "q3": {"d6": 0.2}},
        [],
    ),
}


RANX_KEPT = Path(__file__).parent / "data" / "ranx" / "ranx-cli-cases.json"
"""ranx's means on :data:`RANX_CASES`, written by ``tests/data/ranx/make_ranx_cli_cases.py`` (ranx compiles its
metrics with numba on first use: about a minute in each test worker on a fresh machine)."""


@pytest.fixture(scope="module")
def ranx_means() -> dict:
    kept = json.loads(RANX_KEPT.read_text(encoding="utf-8"))
    assert kept["metrics"] == RANX_METRICS, "the kept file is of other metrics: run make_ranx_cli_cases.py again"
    for name, (qrels, run, _) in RANX_CASES.items():
        assert (kept["cases"][name]["qrels"], kept["cases"][name]["run"]) == (qrels, run), name
    return {name: case["means"] for name, case in kept["cases"].items()}


@pytest.mark.parametrize("case", list(RANX_CASES))
def test_ranx_values_reproduce_through_the_cli_under_ranx_names(tmp_path, case, ranx_means):
    qrels, run, flags = RANX_CASES[case]
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels_file.write_text("".join(f"{q} 0 {d} {label}\n" for q, docs in qrels.items() for d, label in docs.items()))
    lines = [f"{q} Q0 {d} {i + 1} {s} r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())]
    run_file.write_text("".join(lines))
    argv = ["eval", "--dataset", str(qrels_file), "--run", str(run_file), "--format", "json"]
    argv += [arg for m in RANX_METRICS for arg in ("-m", m)]
    out, err = io.StringIO(), io.StringIO()
    if flags:
        assert main(argv, out, err) == 2 and flags[0] in err.getvalue(), err.getvalue()  # refused, naming the flag
        out, err = io.StringIO(), io.StringIO()
    assert main([*argv, *flags], out, err) == 0, err.getvalue()
    ours = json.loads(out.getvalue())["runs"]["run"]["mean"]
    theirs = ranx_means[case]
    for metric in RANX_METRICS:
        canonical = str(rm.parse_metric(metric))
        if metric == "bpref" and theirs[metric] is None:
            # ranx divides by min(R, N) = 0 where a query judges no document non-relevant; trec_eval's bpref, ours,
            # counts each relevant document retrieved as 1 there (tests/test_parity_pytrec_eval.py)
            assert case == "graded, short and unjudged"
            continue
        assert ours[canonical] == pytest.approx(theirs[metric], abs=1e-12), metric
