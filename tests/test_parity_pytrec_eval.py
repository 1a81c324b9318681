"""Per-query parity with pytrec_eval (trec_eval's C code) to 1e-9.

On every qrels/run pair of trec_eval's own test set, and on seeded generated
cases with ties, duplicates, empty runs, graded, zero and negative labels,
queries without relevant documents, short runs and non-ASCII ids.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

import ragmetrics as rm
from ragmetrics.engine.metrics import TREC_EVAL_GROUPS, TREC_EVAL_MEASURES, TREC_EVAL_NOT_COMPUTED, trec_eval_name
from tests import oracle

TREC = Path(__file__).parent / "data" / "trec_eval"

PAIRS = [
    ("qrels.test", "results.test", 1),
    ("qrels.test.with-comments", "results.test", 1),
    ("qrels.test", "results.trunc", 1),
    ("qrels.rel_level", "results.test", 1),
    ("qrels.rel_level", "results.test", 2),
    ("qrels-302.test", "results-302.test", 1),
    ("qrels.comment.test", "results.comment.test", 1),
]


@pytest.mark.parametrize(("qrels_file", "run_file", "rel_level"), PAIRS)
def test_trec_eval_test_files_match_pytrec_eval(qrels_file, run_file, rel_level):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level)
    values = oracle.our_values(qrels, rows, missing="skip", rel_level=rel_level)
    compared = oracle.assert_same(values, reference)
    assert compared == len(reference) * len(oracle.our_metric_names())


PAST_EVERY_RANKING = (1500, 5000, 1_000_000)
"""Cut-offs deeper than every run and every query's judgments (the sums are read at their last column)."""


@pytest.mark.parametrize(
    ("qrels_file", "run_file"), [("qrels.test", "results.test"), ("qrels-302.test", "results-302.test")]
)
def test_cut_offs_past_every_ranking_match_pytrec_eval(qrels_file, run_file):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, rows, cutoffs=PAST_EVERY_RANKING)
    values = oracle.our_values(qrels, rows, cutoffs=PAST_EVERY_RANKING, missing="skip")
    assert oracle.assert_same(values, reference) == len(reference) * len(oracle.our_metric_names(PAST_EVERY_RANKING))


def test_judgment_group_qrels_are_refused_with_the_row():
    """qrels.123 holds three judgment groups (trec_eval -R qrels_jg): one label per pair is expected."""
    qrels = oracle.read_qrels(TREC / "qrels.123")
    with pytest.raises(rm.RagMetricsError, match=r"row 3682 judges \('301', 'CR93E-10279'\) a second time"):
        oracle.dataset_of(qrels)


@pytest.mark.parametrize(
    ("qrels_file", "run_file"), [("qrels.test", "results.test"), ("qrels.rel_level", "results.test")]
)
def test_exponential_ndcg_matches_relabelled_pytrec_eval(qrels_file, run_file):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_ndcg_exp(qrels, rows)
    names = [f"ndcg_exp@{k}" for k in oracle.CUTOFFS] + ["ndcg_exp"]
    result = rm.evaluate(oracle.dataset_of(qrels), oracle.run_of(rows), names, missing="skip", warn=False)
    oracle.assert_same(result.per_query("run"), reference)


def _expected(name: str) -> dict[str, dict[str, float]]:
    """trec_eval 10.0's expected output ``name`` (``-q``: per query and ``all``), our measures only."""
    out: dict[str, dict[str, float]] = {}
    for line in (TREC / name).read_text().splitlines():
        measure, qid, value = line.split()
        try:
            ours = oracle.trec_to_ours(measure)
        except (KeyError, ValueError):
            continue
        out.setdefault(qid, {})[ours] = float(value)
    return out


def _assert_equals_trec_eval_10(expected, qrels_file, run_file, *, missing="zero", rel_level=1, only=None) -> int:
    """Our per-query values and means, rounded as trec_eval prints them (%6.4f), equal ``expected``."""
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    metrics = sorted({m for values in expected.values() for m in values if only is None or m in only})
    result = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), metrics, missing=missing, rel_level=rel_level, warn=False
    )
    per_query = result.per_query("run")
    mean = result.mean().loc["run"]
    compared = 0
    for qid, values in expected.items():
        for metric, value in values.items():
            if metric not in metrics:
                continue
            got = mean[metric] if qid == "all" else per_query.at[qid, metric]
            assert round(got, 4) == pytest.approx(value, abs=1e-12), (qid, metric, got, value)
            compared += 1
    return compared


def test_trec_eval_10_output_with_missing_query_scored_zero():
    """trec_eval 10.0 with -c scores topic 302 (absent from results.trunc) as 0."""
    expected = _expected("out.test.aqc")
    qrels = oracle.read_qrels(TREC / "qrels.test")
    rows = oracle.read_run(TREC / "results.trunc")
    result = rm.evaluate(oracle.dataset_of(qrels), oracle.run_of(rows), ["P_5"], missing="zero", warn=False)
    assert result.coverage["run"].missing_in_run == ["302"]
    # trec_eval's set measures and relative_P are among those compared, per query and in the mean
    sets = {"set_precision", "set_recall", "set_f1", "set_map", "set_relative_precision", "relative_precision@5"}
    assert {m for values in expected.values() for m in values} >= sets
    assert _assert_equals_trec_eval_10(expected, "qrels.test", "results.trunc") > 100


TREC_10_ONLY = ("rbp", "rbp_resid", "unj@5", "unj@10", "unj@20")


@pytest.mark.parametrize(
    ("output", "qrels_file", "run_file", "rel_level"),
    [
        ("out.test.aq", "qrels.test", "results.test", 1),
        ("out.test.aqc", "qrels.test", "results.trunc", 1),
        ("out.test.aql", "qrels.rel_level", "results.test", 2),
    ],
)
def test_rbp_residual_and_unjudged_equal_trec_eval_10(output, qrels_file, run_file, rel_level):
    """rbp, rbp_resid and unj_5/10/20 (new in trec_eval 10.0: pytrec_eval has none) per query and their mean;
    out.test.aql's graded labels scale rbp's gains and its -1 labels count as unjudged."""
    expected = _expected(output)
    assert {m for values in expected.values() for m in values} >= set(TREC_10_ONLY)
    compared = _assert_equals_trec_eval_10(expected, qrels_file, run_file, rel_level=rel_level, only=TREC_10_ONLY)
    assert compared == len(TREC_10_ONLY) * len(expected)


NON_ASCII = ["文档一", "文档二", "é", "Ωmega", "z#1", "ß", "d\u00e9j\u00e0", "ид", "🙂doc", "A", "a", "Z"]


def generate_case(seed: int):
    """A small random qrels + run with every awkward feature the issue names."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(rng.randint(3, 30))] + rng.sample(NON_ASCII, rng.randint(0, len(NON_ASCII)))
    n_queries = rng.randint(1, 6)
    qids = [rng.choice(["q", "查询", "Q"]) + str(i) for i in range(n_queries)]
    qrels, rows = [], []
    for qid in qids:
        judged = rng.sample(pool, rng.randint(1, min(len(pool), 12)))
        labels = [rng.choice([-1, 0, 0, 1, 1, 2, 3]) for _ in judged]
        if rng.random() < 0.15:
            labels = [rng.choice([-1, 0]) for _ in judged]  # no relevant document
        if all(lab < 0 for lab in labels):
            labels[0] = 0  # pytrec_eval can crash on all-negative queries; tested separately
        qrels += [(qid, d, lab) for d, lab in zip(judged, labels)]
        if rng.random() < 0.1:
            continue  # query missing from the run: an empty ranking
        length = rng.choice([0, 1, 2, 3, 5, 8, 12, 20, 40])
        grid = rng.random() < 0.6
        for _ in range(length):
            doc = rng.choice(pool + [f"u{rng.randint(0, 50)}"])
            score = rng.randint(0, 6) / 4 if grid else rng.uniform(-5, 5)
            rows.append((qid, doc, score))
            if rng.random() < 0.1:
                rows.append((qid, doc, rng.randint(0, 6) / 4))  # a duplicate row
    if rng.random() < 0.3:
        rows.append(("not-a-query", "d0", 1.0))
    rng.shuffle(rows)
    return qrels, rows, rng.choice([1, 1, 1, 2])


SEEDS = range(240)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_cases_match_pytrec_eval(seed):
    qrels, rows, rel_level = generate_case(seed)
    cutoffs = (1, 2, 3, 5, 10, 20, 50)
    names = oracle.our_metric_names(cutoffs)
    dataset, run = oracle.dataset_of(qrels), oracle.run_of(rows)

    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level, cutoffs=cutoffs)
    skip = rm.evaluate(dataset, run, names, missing="skip", rel_level=rel_level, warn=False)
    oracle.assert_same(skip.per_query("run"), reference)

    # missing="zero" (trec_eval -c): the same values plus zeros for the queries not in the run
    zero = rm.evaluate(dataset, run, names, missing="zero", rel_level=rel_level, warn=False).per_query("run")
    judged = list(dict.fromkeys(q for q, _, _ in qrels))
    assert list(zero.index) == judged
    for qid in judged:
        if qid in reference:
            assert np.allclose(zero.loc[qid].to_numpy(), skip.per_query("run").loc[qid].to_numpy(), atol=0)
        else:
            assert (zero.loc[qid] == 0).all()

    exp_reference = oracle.pytrec_ndcg_exp(qrels, rows, cutoffs=cutoffs)
    exp_names = [f"ndcg_exp@{k}" for k in cutoffs] + ["ndcg_exp"]
    exp = rm.evaluate(dataset, run, exp_names, missing="skip", warn=False)
    oracle.assert_same(exp.per_query("run"), exp_reference)


@pytest.mark.parametrize("seed", range(60))
def test_tie_order_matches_pytrec_eval_on_exact_scores(seed):
    """Raw tied scores (exact in float32, no duplicates): pytrec_eval's own sort must agree with ours."""
    qrels, rows, _ = generate_case(1000 + seed)
    seen, unique_rows = set(), []
    for qid, doc, score in rows:
        if (qid, doc) not in seen:
            seen.add((qid, doc))
            unique_rows.append((qid, doc, float(round(score * 4) / 4)))
    reference = oracle.pytrec_values(qrels, unique_rows, cutoffs=(1, 2, 3, 5, 10), raw_scores=True)
    values = oracle.our_values(qrels, unique_rows, cutoffs=(1, 2, 3, 5, 10), missing="skip")
    oracle.assert_same(values, reference)


def test_float32_option_reproduces_pytrec_eval_rounding():
    """Cosine-like scores 1e-9 apart tie in float32 (pytrec_eval) but not in float64 (trec_eval 10)."""
    qrels = [("q1", "a", 0), ("q1", "b", 1)]
    rows = [("q1", "a", 0.812345679), ("q1", "b", 0.812345678)]
    raw = oracle.pytrec_values(qrels, rows, cutoffs=(1,), raw_scores=True)
    ds, run = oracle.dataset_of(qrels), oracle.run_of(rows)
    f32 = rm.evaluate(ds, run, ["mrr", "precision@1"], score_precision="float32").per_query("run")
    f64 = rm.evaluate(ds, run, ["mrr", "precision@1"]).per_query("run")
    assert f32.at["q1", "mrr"] == raw["q1"]["mrr"] == 1.0
    assert f64.at["q1", "mrr"] == 0.5  # trec_eval 10.0 (double): a ranks first


def test_all_negative_labels_score_zero():
    """trec_eval aborts or reads a stale buffer here; we score 0 and report the query."""
    ds = oracle.dataset_of([("q1", "a", -1), ("q1", "b", -1), ("q2", "c", 1)])
    run = oracle.run_of([("q1", "a", 1.0), ("q2", "c", 1.0)])
    result = rm.evaluate(ds, run, ["ndcg@10", "map", "bpref", "mrr"], warn=False)
    assert (result.per_query("run").loc["q1"] == 0).all()
    assert (result.per_query("run").loc["q2"] == 1).all()
    assert result.coverage["run"].no_relevant == ["q1"]


def _printed_measures(name: str) -> list[str]:
    """The measures trec_eval 10.0 printed in ``name``, in its order, each once (``P_5``, ``map``)."""
    lines = (TREC / name).read_text().splitlines()
    return list(dict.fromkeys(line.split()[0] for line in lines if line.split()[1] == "all"))


def _base_of(printed: str) -> str:
    """``P_5`` -> ``P``; ``iprec_at_recall_0.10`` -> ``iprec_at_recall``; ``set_P`` stays ``set_P``."""
    known = {m for m, _ in TREC_EVAL_MEASURES} | {"runid", "num_q"}
    return printed if printed in known else printed.rsplit("_", 1)[0]


def test_trec_eval_measure_groups_are_trec_evals_own():
    """The groups' measures, order and default cut-offs are trec_eval 10.0's (its ``-m all_trec`` and default
    outputs) and pytrec_eval's nicknames (trec_eval 9, which lacks 10.0's rbp, rbp_resid and unj)."""
    printed = _printed_measures("out.test.aq")
    bases = list(dict.fromkeys(_base_of(m) for m in printed))
    ours = [m for m, _ in TREC_EVAL_MEASURES]
    assert bases == ["runid", "num_q", *(m for m in ours if m != "relstring")]  # relstring prints only when asked
    for measure, cutoffs in TREC_EVAL_MEASURES:
        if cutoffs:
            assert [m for m in printed if _base_of(m) == measure] == [f"{measure}_{k}" for k in cutoffs]
    official = {_base_of(m) for m in _printed_measures("out.test")} - {"runid", "num_q"}
    assert TREC_EVAL_GROUPS["official"] == official
    always = {"runid", "num_q"}
    nicknames = pytrec_eval.supported_nicknames
    assert TREC_EVAL_GROUPS["official"] | always == nicknames["official"]
    assert TREC_EVAL_GROUPS["set"] | always == nicknames["set"]
    assert TREC_EVAL_GROUPS["all_trec"] | always == nicknames["all_trec"] | {"rbp", "rbp_resid", "unj"}


def test_all_trec_asked_by_name_computes_every_measure_of_it_we_have_equal_to_trec_eval_10():
    expected = _expected("out.test.aq")
    qrels = oracle.read_qrels(TREC / "qrels.test")
    rows = oracle.read_run(TREC / "results.test")
    with pytest.warns(rm.RagMetricsWarning, match=r"trec_eval's 'all_trec' also holds measures not computed here: "
                                                  r"num_ret \(a count of retrieved documents\)"):  # fmt: skip
        result = rm.evaluate(oracle.dataset_of(qrels), oracle.run_of(rows), "all_trec", missing="zero")
    asked = {m for values in expected.values() for m in values}
    assert list(result.metrics) == list(dict.fromkeys(oracle.trec_to_ours(m) for m in _printed_measures(
        "out.test.aq") if _base_of(m) not in TREC_EVAL_NOT_COMPUTED and _base_of(m) not in ("runid", "num_q")))  # fmt: skip
    assert set(result.metrics) == asked
    assert _assert_equals_trec_eval_10(expected, "qrels.test", "results.test") == len(asked) * len(expected)


def test_official_on_the_command_line_prints_trec_evals_default_measures_it_computes(tmp_path):
    from ragmetrics.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(TREC / "qrels.test"), "--run", str(TREC / "results.test"), "-m", "official"]
    assert main(argv, out, err) == 0, err.getvalue()
    assert err.getvalue().startswith("ragmetrics: note: trec_eval's 'official' also holds measures not computed here: "
                                     "num_ret (a count of retrieved documents), num_rel")  # fmt: skip
    printed = {line.split()[0]: line.split()[2] for line in out.getvalue().splitlines()[2:]}
    trec_eval = {oracle.trec_to_ours(line.split()[0]): line.split()[2] for line in
                 (TREC / "out.test").read_text().splitlines() if _base_of(line.split()[0]) not in
                 {*TREC_EVAL_NOT_COMPUTED, "runid", "num_q"}}  # fmt: skip
    assert printed == trec_eval and len(printed) == 13


def test_a_group_where_one_metric_is_read_says_it_is_a_group():
    with pytest.raises(rm.MetricNameError, match=r"'official' is trec_eval's group of measures \(num_ret, num_rel, "
                                                 r"num_rel_ret, map, \.\.\.\): evaluate and compare read it; here name "
                                                 r"one metric"):  # fmt: skip
        rm.parse_metric("official")


def test_all_trec_with_trec_eval_names_prints_trec_eval_10_s_own_lines(tmp_path):
    """``eval -m all_trec --names trec_eval --per-query``: line for line what trec_eval 10.0 printed for
    ``-m all_trec -q`` (out.test.aq), for every measure computed here, num_q where trec_eval puts it; runid aside
    (the run is named by its file here, by its tag there). Queries in trec_eval's order: ids compared as bytes."""
    from ragmetrics.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(TREC / "qrels.test"), "--run", str(TREC / "results.test"), "-m", "all_trec",
            "--names", "trec_eval", "--per-query"]  # fmt: skip
    assert main(argv, out, err) == 0, err.getvalue()
    trec_eval = [line for line in (TREC / "out.test.aq").read_text().splitlines()
                 if _base_of(line.split()[0]) not in {*TREC_EVAL_NOT_COMPUTED, "runid"}]  # fmt: skip
    ours = [line for line in out.getvalue().splitlines() if line.split()[0] != "runid"]
    assert ours == trec_eval and len(ours) == 253
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"{q} 0 d 1\n" for q in ("3", "100", "1", "20")))
    run.write_text("".join(f"{q} Q0 d 1 1 r\n" for q in ("3", "100", "1", "20")))
    out = io.StringIO()
    assert main(["eval", "--dataset", str(qrels), "--run", str(run), "-m", "P_5", "--names", "trec_eval",
                 "--per-query"], out, io.StringIO()) == 0  # fmt: skip
    assert [line.split()[1] for line in out.getvalue().splitlines()][:4] == ["1", "100", "20", "3"]


def test_trec_eval_names_are_the_measures_trec_eval_prints():
    for printed in _printed_measures("out.test.aq"):
        if _base_of(printed) not in {*TREC_EVAL_NOT_COMPUTED, "runid", "num_q"}:
            assert trec_eval_name(rm.parse_metric(printed)) == printed
    for ours in ("mrr@10", "judged@10", "recall@512tok", "rbp_p=0.95", "f1@5"):
        assert trec_eval_name(rm.parse_metric(ours)) is None, ours


def test_a_trec_eval_measure_named_bare_is_read_at_each_of_trec_eval_s_cut_offs():
    """``-m P`` (``recall``, ``ndcg_cut``, ``map_cut``, ``success``, ``relative_P``, ``unj``): each at trec_eval's
    default cut-offs, equal to its -m all_trec lines (was: "metric 'P' needs a cut-off")."""
    from ragmetrics.cli import main

    bare = ["P", "recall", "ndcg_cut", "map_cut", "success", "relative_P", "unj"]
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(TREC / "qrels.test"), "--run", str(TREC / "results.test"), "--names", "trec_eval"]
    assert main([*argv, *(f"-m{m}" for m in bare)], out, err) == 0, err.getvalue()
    ours = [line for line in out.getvalue().splitlines() if line.split()[0] not in ("runid", "num_q")]
    trec_eval = {line.split()[0]: line for line in (TREC / "out.test.aq").read_text().splitlines()
                 if line.split()[1] == "all" and _base_of(line.split()[0]) in bare}  # fmt: skip
    assert sorted(ours) == sorted(trec_eval.values()) and len(ours) == 9 * 5 + 3 + 3
