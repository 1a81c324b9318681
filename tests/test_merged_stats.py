"""Statistics that merge (:mod:`ragmetrics.analysis.merged`): intervals and p-values equal, bit for bit, for every
bucket count, order and engine; the collected intervals and tests, up to the fixed point's rounding or within Monte
Carlo error; and the parity fingerprint, changed by one changed value, equal across engines."""

from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pytest

import ragmetrics as rm
from ragmetrics.analysis import merged, stats
from ragmetrics.analysis.merged import Sums, id_keys, merge_all, sums_of
from ragmetrics.analysis.stats import mean_t_interval, paired_p_value
from ragmetrics.cli import build_parser, main
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.partitioned import evaluate_files
from ragmetrics.partitioned.buckets import Plan, Side
from ragmetrics.partitioned.engine import engine_class
from ragmetrics.partitioned.local import bucket_tables_of
from ragmetrics.partitioned.paired import compare_files, compare_pairs, paired_runs, statistics_of
from ragmetrics.partitioned.result import combine
from tests.partitioned_cases import BUCKETS, METRICS, SCIFACT, write_grouped, write_hard_case

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # PySpark's note on pandas 3

QRELS = SCIFACT / "qrels.tsv"
BM25 = SCIFACT / "bm25-stem.trec.gz"
DENSE = SCIFACT / "dense-all-minilm-l6-v2.trec.gz"
HYBRID = SCIFACT / "hybrid-rrf60.trec.gz"
SOME = ["ndcg@10", "recall@100", "map", "mrr@10", "bpref"]
RESAMPLES = 500


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    return write_hard_case(tmp_path_factory.mktemp("hard-merged"))


def _statistics(sums: Sums) -> list[tuple[float, ...]]:
    """Every number the sums give, per metric (compared with ==: bit for bit, NaN equal to NaN by repr)."""
    return [
        (*sums.interval(i), sums.mean(i), sums.sign_flip_p(i), sums.t_p(i), sums.fingerprint(i))
        for i in range(sums.metrics)
    ]


def _same(a: Sums, b: Sums) -> None:
    np.testing.assert_array_equal(a.table, b.table)
    assert repr(_statistics(a)) == repr(_statistics(b))


# --- the sums themselves ---------------------------------------------------------------------------------------------


def test_any_split_and_order_of_the_queries_adds_up_to_the_same_sums():
    rng = np.random.default_rng(3)
    n = 500
    ids = [f"query-{i}" for i in range(n)]
    values = [rng.beta(2, 3, n), np.where(rng.random(n) < 0.1, np.nan, rng.random(n)), rng.normal(0, 0.3, n)]
    whole = sums_of(ids, values, RESAMPLES, seed=5)
    for parts in (1, 2, 7, 16):
        order = rng.permutation(n)
        pieces = [
            sums_of([ids[i] for i in order[k::parts]], [v[order[k::parts]] for v in values], RESAMPLES, seed=5)
            for k in range(parts)
        ]
        random.Random(parts).shuffle(pieces)
        _same(merge_all(pieces, len(values), RESAMPLES, 5), whole)
    # another seed resamples otherwise
    assert not np.array_equal(sums_of(ids, values, RESAMPLES, seed=6).table, whole.table)


def test_sums_travel_as_bytes():
    sums = sums_of(["a", "b", "c"], [np.array([0.5, 0.25, np.nan])], 20, 1)
    back = Sums.from_bytes(sums.to_bytes(), 1)
    _same(back, sums)
    assert (back.resamples, back.seed) == (20, 1)


def test_keys_depend_on_every_byte_and_the_length():
    ids = ["a", "b", "ab", "ba", "", "\x00", "a\x00", "é", "e\u0301", "x" * 300]
    keys = id_keys(ids)
    assert len(set(keys.tolist())) == len(ids)
    assert id_keys(["ab"])[0] == keys[2]  # a key is the id's, not its place's
    large = [f"q{i}" for i in range(200_000)]
    assert len(np.unique(id_keys(large))) == len(large)


def test_few_queries():
    empty = sums_of([], [np.array([])], 50)
    assert np.isnan(empty.interval(0)).all() and np.isnan(empty.sign_flip_p(0)) and np.isnan(empty.t_p(0))
    assert np.isnan(sums_of(["a"], [np.array([0.25])], 50).interval(0)).all()  # one value: no spread, no interval
    low, high = sums_of(["a", "b"], [np.array([0.0, 1.0])]).interval(0)  # an interval needs no resample
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    with pytest.raises(RagMetricsError, match="without resamples"):
        sums_of(["a", "b"], [np.array([0.0, 1.0])]).sign_flip_p(0)


def test_values_outside_minus_one_to_one_are_refused():
    with pytest.raises(RagMetricsError, match=r"\[-1, 1\]"):
        sums_of(["a"], [np.array([1.5])])


ZERO_ONE_CASES = {
    "0 and 1": [0.0, 1.0, 1.0, 0.0, 1.0],
    "0 and 1 with NaN": [0.0, 1.0, math.nan, 1.0, math.nan],
    "0, 0.5 and 1": [0.0, 0.5, 1.0, 1.0],
    "all 0": [0.0] * 5,
    "all 1": [1.0] * 5,
    "-0.0 and 1": [-0.0, 1.0, 1.0],
    "empty": [],
    "one 1": [1.0],
    "NaN only": [math.nan, math.nan],
    "within the fixed point's step of 1": [1.0, 1.0 - 2.0**-40, 0.0, 1.0],
    "within the fixed point's step of 0": [0.0, 2.0**-40, 1.0],
    "below 1 by the last bit": [1.0, np.nextafter(1.0, 0.0), 0.0],
    "-1 and eight halves (sum of squares = sum)": [-1.0] + [0.5] * 8,
    "-1 and 1": [-1.0, 1.0, 1.0],
}
"""Columns whose interval :func:`stats.mean_interval` takes Clopper-Pearson for, or not, that sums could mistake."""


@pytest.mark.parametrize("case", ZERO_ONE_CASES)
def test_the_merged_interval_takes_clopper_pearson_where_mean_interval_does(case):
    """Was: the merged sums took a column for 0s and 1s from sum x^2 = sum x of the fixed-point values, so values
    within 2^-32 of 0 or 1 (rounded to them) and -1 beside eight halves were given the exact binomial interval,
    where mean_interval (every in-process page and command) takes Student's t. NaN is no value for both: the
    in-process callers leave it out before mean_interval (as the sums do); t's ends from the sums are the collected
    ones up to the fixed point's rounding."""
    values = np.array(ZERO_ONE_CASES[case], dtype=np.float64)
    kept = values[~np.isnan(values)]
    sums = sums_of([f"q{i}" for i in range(len(values))], [values], 200)
    low, high = stats.mean_interval(kept)
    exact = len(kept) >= 2 and (float(low), float(high)) == stats.proportion_interval(round(kept.sum()), len(kept))
    assert (sums.count(0) >= 2 and sums.binary(0)) == exact
    if exact:
        assert sums.interval(0) == (float(low), float(high))
    elif len(kept) < 2:
        np.testing.assert_array_equal(sums.interval(0), (low, high))
    else:
        np.testing.assert_allclose(sums.interval(0), (low, high), rtol=0, atol=1e-8)


def test_a_delta_of_0s_and_1s_has_t_s_interval_as_in_process():
    """Was: compare --engine gave differences all 0 or 1 (a run hitting where the baseline misses, tied elsewhere)
    the exact binomial interval of a mean, where in-process compare takes Student's t for the delta
    (:func:`mean_t_interval`)."""
    ids = [f"q{i}" for i in range(30)]
    run, baseline = np.ones(30), np.zeros(30)
    sides = sums_of(ids, [run, baseline])
    found = statistics_of(sums_of(ids, [run - baseline], 200), sides, ["hits@1"])[0]
    in_process = tuple(float(end) for end in mean_t_interval(run - baseline))
    assert (found.ci_low, found.ci_high) == in_process == (1.0, 1.0)
    mixed = np.r_[np.ones(20), np.zeros(10)]
    found = statistics_of(sums_of(ids, [mixed - baseline]), sides, ["hits@1"])[0]
    np.testing.assert_allclose((found.ci_low, found.ci_high), mean_t_interval(mixed - baseline), atol=1e-8)
    assert found.ci_method == "t" and math.isnan(found.p_randomization)  # no resamples: no randomization p


def test_values_the_sums_cannot_hold_are_refused_not_decided():
    """mean_interval takes t's interval of 0 and 2; the sums hold values in [-1, 1] only (a metric's and a
    difference's)."""
    assert stats.mean_interval(np.array([0.0, 2.0, 2.0]))[1] > 2.0
    with pytest.raises(RagMetricsError, match=r"\[-1, 1\]"):
        sums_of(["a", "b", "c"], [np.array([0.0, 2.0, 2.0])])


def test_sums_of_different_resamples_do_not_merge():
    with pytest.raises(RagMetricsError, match="do not add up"):
        sums_of(["a"], [np.array([0.5])], 10).merge(sums_of(["b"], [np.array([0.5])], 20))


# --- within Monte Carlo error of the collected statistics ---------------------------------------------------------


def test_the_merged_interval_is_the_collected_one():
    """Seeded data of every kind of metric value: the interval from the exact sums is Student's t of the float values
    (or Clopper-Pearson for 0s and 1s), up to the fixed point's rounding; a shifted interval is told apart."""
    rng = np.random.default_rng(11)
    for n in (2, 3, 10, 200):
        ids = [f"q{i}" for i in range(n)]
        for values in (rng.beta(2, 3, n), rng.integers(0, 2, n).astype(np.float64), rng.uniform(-1, 1, n)):
            found = np.array(sums_of(ids, [values]).interval(0))
            expected = np.array(stats.mean_interval(values), dtype=np.float64)
            np.testing.assert_allclose(found, expected, rtol=0, atol=1e-8)
            width = expected[1] - expected[0]
            assert width == 0 or np.abs(found + width / 1000 - expected).max() > 1e-8


def test_the_paired_tests_are_the_collected_ones():
    rng = np.random.default_rng(4)
    n = 300
    ids = [f"q{i}" for i in range(n)]
    a = rng.beta(2, 3, n)
    for shift in (0.0, 0.02, 0.05):
        b = np.clip(a + rng.normal(-shift, 0.15, n), 0, 1)
        sums = sums_of(ids, [b - a], 5_000, seed=1)
        # the t test from sums of fixed-point values: scipy's on the floats, up to the 2^-31 rounding
        assert sums.t_p(0) == pytest.approx(paired_p_value(b, a, test="t"), rel=1e-6, abs=1e-12)
        collected = paired_p_value(b, a, test="randomization", n_resamples=5_000, seed=1)
        error = np.sqrt(max(collected * (1 - collected), 1e-4) / 5_000)
        assert abs(sums.sign_flip_p(0) - collected) < 5 * np.sqrt(2) * error
    assert sums_of(ids, [np.zeros(n)], 100).sign_flip_p(0) == 1.0
    assert sums_of(ids, [np.zeros(n)], 100).t_p(0) == 1.0
    assert sums_of(ids, [np.full(n, 0.1)], 100).t_p(0) == 2.0 ** (1 - n)  # was 0: a constant difference, zero variance


# --- the engines: bit for bit ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::ragmetrics.foundation.errors.RagMetricsWarning")  # the case's coverage notes
def test_local_buckets_in_any_count_and_order_give_the_same_statistics(hard):
    qrels, run = hard
    dataset, loaded = load_dataset(qrels), load_run(run)
    plan = Plan("run", Side(str(run), "columns"), Side(str(qrels), "columns"), tuple(METRICS), resamples=RESAMPLES)
    found = []
    for buckets in BUCKETS:
        tables = list(bucket_tables_of(plan, dataset, loaded, buckets))
        random.Random(buckets).shuffle(tables)
        sums = combine("run", METRICS, plan.conventions, tables).sums
        assert sums is not None and sums.resamples == RESAMPLES
        found.append(sums)
    for other in found[1:]:
        _same(other, found[0])
    # the collected values give the same sums
    result = rm.evaluate(dataset, loaded, METRICS)
    run_result = next(iter(result.runs.values()))
    _same(merged.run_sums(run_result, RESAMPLES, 0), found[0])


@pytest.mark.parametrize("engine", ["inprocess", "duckdb", "polars", "stream"])
def test_engines_give_the_same_intervals_for_every_bucket_count(engine):
    found = []
    for buckets in BUCKETS:
        result = evaluate_files(str(QRELS), str(BM25), SOME, engine=engine, buckets=buckets, resamples=RESAMPLES)
        found.append(next(iter(result.runs.values())).sums)
    for other in found[1:]:
        _same(other, found[0])
    collected = rm.evaluate(load_dataset(QRELS), load_run(BM25), SOME)
    _same(merged.run_sums(next(iter(collected.runs.values())), RESAMPLES, 0), found[0])


@pytest.mark.parametrize("engine", ["inprocess", "duckdb", "polars"])
def test_paired_statistics_are_equal_for_every_bucket_count(engine):
    found = [
        compare_files(str(QRELS), str(BM25), str(DENSE), SOME, engine=engine, buckets=b, resamples=RESAMPLES)
        for b in BUCKETS
    ]
    for other in found[1:]:
        assert repr(other) == repr(found[0])
    # the collected differences give the same numbers
    dataset = load_dataset(QRELS)
    result = rm.evaluate(dataset, [load_run(DENSE), load_run(BM25)], SOME)
    dense, bm25 = result.runs.values()
    assert list(dense.query_ids) == list(bm25.query_ids)
    differences = [dense.arrays[m] - bm25.arrays[m] for m in dense.metrics]
    sides = [run.arrays[m] for run in (dense, bm25) for m in dense.metrics]
    expected = statistics_of(sums_of(dense.query_ids, differences, RESAMPLES), sums_of(dense.query_ids, sides), SOME)
    assert repr(expected) == repr(found[0])
    assert found[0][0].run_mean == pytest.approx(dense.means["ndcg@10"], abs=1e-9)
    ndcg = found[0][0]
    assert ndcg.p_t == pytest.approx(paired_p_value(dense.arrays["ndcg@10"], bm25.arrays["ndcg@10"]), rel=1e-6)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_several_pairs_read_each_run_once_and_equal_the_pairs_one_by_one(engine, monkeypatch):
    runs = [str(BM25), str(DENSE), str(HYBRID)]
    pairs = [(1, 0), (2, 0), (2, 1)]
    one_by_one = [
        compare_files(str(QRELS), runs[b], runs[r], SOME, engine=engine, buckets=3, resamples=RESAMPLES)
        for r, b in pairs
    ]
    engine_type = engine_class(engine)
    read = []
    original = engine_type.bucket_tables

    def counted(self, plan, qrels, run, buckets):
        read.append(run.path)
        return original(self, plan, qrels, run, buckets)

    monkeypatch.setattr(engine_type, "bucket_tables", counted)
    together = compare_pairs(str(QRELS), runs, pairs, SOME, engine=engine, buckets=3, resamples=RESAMPLES)
    assert repr(together) == repr(one_by_one)
    assert sorted(read) == sorted(runs)  # each run's buckets made once, not once per pair


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_each_runs_totals_are_what_the_refusals_read_of_it_in_process(hard, engine):
    """The counts a comparison adds up bucket by bucket equal the in-process coverage and health of each run."""
    qrels, run = hard
    runs = [str(run), str(BM25)]
    found = paired_runs(str(qrels), runs, [(1, 0)], SOME, engine=engine, buckets=3, resamples=10).runs
    for i, path in enumerate(runs):
        expected = rm.align(load_dataset(qrels), load_run(path))
        totals = found[i]
        assert totals.queries_evaluated == expected.coverage.queries_evaluated
        assert totals.no_relevant == len(expected.coverage.no_relevant)
        assert totals.valued == tuple(int(np.count_nonzero(~np.isnan(expected.value(m)))) for m in SOME)
        health, theirs = totals.health, expected.health
        assert (health.queries_ranked, health.queries_meeting) == (theirs.queries_ranked, theirs.queries_meeting)
        assert health.run_queries_known == theirs.run_queries_known
        assert health.no_overlap == theirs.no_overlap
        assert health.judged_at_10 == pytest.approx(theirs.judged_at_10, abs=1e-12)
        assert health.relevant_retrieved == pytest.approx(theirs.relevant_retrieved, abs=1e-12)


# --- the fingerprint -----------------------------------------------------------------------------------------------


def test_one_changed_value_changes_the_fingerprint():
    rng = np.random.default_rng(0)
    n = 1_000
    ids = [f"q{i}" for i in range(n)]
    values = rng.random(n)
    print_ = sums_of(ids, [values]).fingerprint(0)
    assert sums_of(ids[::-1], [values[::-1]]).fingerprint(0) == print_
    for at in (0, 17, n - 1):
        changed = values.copy()
        changed[at] = np.nextafter(changed[at], 2.0)  # one ulp
        assert sums_of(ids, [changed]).fingerprint(0) != print_
    renamed = list(ids)
    renamed[3] = "q3 "
    assert sums_of(renamed, [values]).fingerprint(0) != print_
    assert sums_of(ids[:-1], [values[:-1]]).fingerprint(0) != print_
    with_nan = values.copy()
    with_nan[5] = np.nan
    assert sums_of(ids, [with_nan]).fingerprint(0) != print_
    # NaN and -0.0 are canonical
    assert sums_of(["a"], [np.array([-0.0])]).fingerprint(0) == sums_of(["a"], [np.array([0.0])]).fingerprint(0)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_eval_ci_s_help_states_the_registry_s_rule():
    """The help reads the registry's rule (MEAN_INTERVAL_RULE), as every page and command states it."""
    eval_parser = build_parser("eval")._subparsers._group_actions[0].choices["eval"]
    ci = next(action for action in eval_parser._actions if action.dest == "ci")
    assert stats.MEAN_INTERVAL_RULE in str(ci.help)
    shown = "".join(eval_parser.format_help().split())  # wrapped, maybe at a hyphen
    assert "".join(stats.MEAN_INTERVAL_RULE.split()) in shown


def test_eval_has_no_resampling_options(hard):
    """eval's intervals draw no resample: --resamples is no option of eval, and --seed is read only by --plan's
    sample (nothing else of eval draws)."""
    qrels, run = hard
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "ndcg@10"]
    eval_parser = build_parser("eval")._subparsers._group_actions[0].choices["eval"]
    assert "--resamples" not in eval_parser._option_string_actions
    for extra in (["--seed", "3"], ["--seed", "3", "--ci"]):
        code, out, err = _cli(*common, *extra)
        assert code == 2 and "--seed 3: read only with --judge-qrels and --plan" in err and not out
    assert _cli(*common, "--ci")[0] == 0 and _cli(*common)[0] == 0


def test_cli_prints_the_same_intervals_and_fingerprints_on_every_engine_and_bucket_count(hard, tmp_path):
    qrels, run = hard
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "--ci", "--fingerprint"]
    common += ["-m", "ndcg@10", "-m", "map", "-m", "bpref"]
    printed = _cli(*common)
    assert printed[0] == 0
    assert "ndcg@10:ci_low" in printed[1] and "map:fingerprint" in printed[1]
    for engine in ("duckdb", "polars"):
        for buckets in BUCKETS:
            assert _cli(*common, "--engine", engine, "--buckets", str(buckets))[1] == printed[1], (engine, buckets)
    # the stream engine reads the same rows with each query's lines together, in slices of whole queries
    grouped = write_grouped(run, tmp_path)
    streamed = [a.replace(str(run), str(grouped)) for a in common]
    for slices in (*BUCKETS, 60):
        found = _cli(*streamed, "--engine", "stream", "--buckets", str(slices))
        assert found[1].replace("grouped-run", "run") == printed[1], slices
    # the per-query values written where the engine runs, not collected: the buckets' sums still give them
    written = _cli(*common, "--engine", "duckdb", "--buckets", "3", "--per-query-out", str(tmp_path / "v.parquet"))
    assert written[1] == printed[1]
    data = json.loads(_cli(*common, "--engine", "duckdb", "--buckets", "7", "--format", "json")[1])
    entry = data["runs"]["run"]
    assert json.loads(_cli(*common, "--format", "json")[1]) == data
    low, high = entry["ci"]["ndcg@10"]
    assert low <= entry["mean"]["ndcg@10"] <= high
    assert len(entry["fingerprint"]["map"]) == 16


def test_cli_fingerprint_changes_with_one_value(tmp_path):
    """One query's run lines left out: that query is scored 0 (trec_eval -c), its value and nothing else changes."""
    values = next(iter(rm.evaluate(load_dataset(QRELS), load_run(BM25), ["ndcg@10"]).runs.values()))
    scored = values.arrays["ndcg@10"]
    query = str(values.query_ids[int(np.flatnonzero(scored > 0)[0])])
    lines = [line for line in load_run(BM25).frame.itertuples(index=False) if line.query_id != query]
    changed = tmp_path / "run.trec"
    changed.write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score!r} x\n" for r in lines))
    common = ["eval", "--dataset", str(QRELS), "--fingerprint", "-m", "ndcg@10", "-m", "recall@100"]
    before = _cli(*common, "--run", str(BM25), "--engine", "duckdb", "--buckets", "2")[1].splitlines()
    after = _cli(*common, "--run", str(changed), "--engine", "duckdb", "--buckets", "2")[1].splitlines()
    prints = [[line for line in printed if "ndcg@10:fingerprint" in line] for printed in (before, after)]
    assert prints[0] and prints[0] != prints[1]


def test_spark_gives_the_same_sums_and_fingerprints(spark, hard):
    qrels, run = hard
    expected = evaluate_files(str(qrels), str(run), METRICS, engine="duckdb", buckets=3, resamples=RESAMPLES)
    found = evaluate_files(str(qrels), str(run), METRICS, engine="spark", buckets=5, resamples=RESAMPLES)
    sums = next(iter(found.runs.values())).sums
    assert sums is not None
    _same(sums, next(iter(expected.runs.values())).sums)
    import ragmetrics.spark as rms  # PySpark: only this test needs it

    qrels_df = spark.createDataFrame(load_dataset(qrels).qrels)
    run_df = spark.createDataFrame(load_run(run).frame[["query_id", "doc_id", "score"]])
    from_frames = rms.evaluate(qrels_df, run_df, METRICS, buckets=2, resamples=RESAMPLES)
    assert from_frames.sums is not None
    _same(from_frames.sums, sums)


def test_cli_compare_on_a_partitioned_engine_is_the_same_for_every_bucket_count():
    common = ["compare", "--dataset", str(QRELS), "--baseline", str(BM25), "--run", str(DENSE), "-m", "ndcg@10"]
    common += ["-m", "recall@100", "--test", "randomization", "--resamples", "2000", "--engine", "duckdb"]
    printed = [_cli(*common, "--buckets", str(b)) for b in (1, 7)]
    assert printed[0][0] == 0 and printed[0][1] == printed[1][1]
    assert "merged over the buckets" in printed[0][1]
    on_polars = _cli(*common[:-1], "polars", "--buckets", "16")
    assert on_polars[0] == 0 and on_polars[1].replace("--engine polars", "--engine duckdb") == printed[0][1]
    rows = json.loads(_cli(*common, "--buckets", "2", "--format", "json")[1])["comparisons"]
    collected = json.loads(_cli(*common[:-2], "--format", "json")[1])  # in process: the classic resampling
    classic = {(r["metric"], r["run"]): r for r in collected["comparisons"]}
    for row in rows:
        theirs = classic[(row["metric"], row["run"])]
        assert row["delta"] == pytest.approx(theirs["delta"], abs=1e-9)
        assert abs(row["p_value"] - theirs["p_value"]) < 0.05
    t_test = json.loads(_cli(*common[:-4], "--test", "t", "--engine", "duckdb", "--format", "json")[1])["comparisons"]
    in_process = json.loads(_cli(*common[:-4], "--test", "t", "--format", "json")[1])["comparisons"]
    for ours, theirs in zip(sorted(t_test, key=lambda r: r["metric"]), sorted(in_process, key=lambda r: r["metric"])):
        assert ours["p_value"] == pytest.approx(theirs["p_value"], rel=1e-6)


def test_cli_compare_on_the_stream_engine_is_refused_clearly():
    """Each run is cut into its own slices: the paired sums cannot take two runs' buckets in step."""
    argv = ["compare", "--dataset", str(QRELS), "--baseline", str(BM25), "--run", str(DENSE), "-m", "ndcg@10"]
    code, _, err = _cli(*argv, "--test", "randomization", "--engine", "stream")
    assert code == 2
    assert "--engine stream cuts each run into its own slices" in err and "--engine polars or duckdb" in err


def test_cli_compare_refuses_a_test_that_does_not_merge():
    code, _, err = _cli(
        "compare",
        "--dataset",
        str(QRELS),
        "--baseline",
        str(BM25),
        "--run",
        str(DENSE),
        "--test",
        "wilcoxon",
        "--engine",
        "duckdb",
    )
    assert code != 0 and "tests that merge" in err


def test_cli_compare_on_a_partitioned_engine_corrects_over_the_same_family_as_in_process():
    """Three runs, two metrics, the t test: every pair of the runs (the baseline's and the others', each run read
    once) makes the family of six, named as in process, and the corrected p-values equal the in-process ones;
    ``--family baseline`` corrects over the baseline's four."""
    common = ["compare", "--dataset", str(QRELS), "--baseline", str(BM25), "--run", str(DENSE), "--run", str(HYBRID)]
    common += ["-m", "ndcg@10", "-m", "recall@100", "--test", "t"]
    for family, size in (("pairs", 6), ("baseline", 4)):
        merged = _cli(*common, "--family", family, "--engine", "duckdb", "--buckets", "3")
        in_process = _cli(*common, "--family", family)
        assert merged[0] == 0 and in_process[0] == 0, merged[2] + in_process[2]
        assert (
            f"Holm-corrected over {size} comparison(s)" in merged[1] and f"over {size} comparison(s)" in in_process[1]
        )
        ours = json.loads(_cli(*common, "--family", family, "--engine", "duckdb", "--format", "json")[1])
        theirs = json.loads(_cli(*common, "--family", family, "--format", "json")[1])
        expected = {(r["metric"], r["run"]): r for r in theirs["comparisons"] if r["p_value"]}
        for row in ours["comparisons"]:
            same = expected[(row["metric"], row["run"])]
            assert row["p_value_corrected"] == pytest.approx(same["p_value_corrected"], rel=1e-6)
            # the interval beside it is corrected as in process, and leaves 0 exactly where the row is significant
            for end in ("ci_level_adjusted", "ci_low_adjusted", "ci_high_adjusted"):
                assert row[end] == pytest.approx(same[end], rel=1e-6, abs=1e-9)
            clear = row["ci_low_adjusted"] > 0 or row["ci_high_adjusted"] < 0
            assert clear == (row["p_value_corrected"] < 0.05)
        assert "intervals: Holm-adjusted CI (Student's t at each comparison's level)" in merged[1]
