"""Partitioned evaluation (in-process buckets, DuckDB, Polars and the stream engine): every per-query value, every
coverage count and list and the run's health equal the in-process engine's on the whole input, for 1, 2, 7 and 16
buckets (the stream engine: as many slices, and more, small enough to cut inside a query)."""

from __future__ import annotations

import gzip
import json
import re
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ragmetrics as rm
from ragmetrics.analysis.compare import COMPARISON_FIELDS
from ragmetrics.cli import build_parser, main
from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.foundation.scripts import CJK_CHARACTER
from ragmetrics.io import load_dataset, load_run
from ragmetrics.partitioned import ENGINES, evaluate_files, stream
from ragmetrics.partitioned.buckets import Plan, Side
from ragmetrics.partitioned.engine import Options
from ragmetrics.partitioned.local import bucket_tables_of
from ragmetrics.partitioned.result import combine
from ragmetrics.partitioned.scripts import patterns as scripts_patterns
from ragmetrics.partitioned.stream import QrelsSlices, Stream
from ragmetrics.partitioned.stream import _parse_qrels as parse_qrels
from tests.partitioned_cases import (
    BUCKETS,
    CONFORMANCE,
    METRICS,
    REFUSED_COMPARISONS,
    SCIFACT,
    SMALL_BUCKETS,
    SMALL_CASES,
    SMALL_ERRORS,
    TREC,
    as_tables,
    assert_same,
    reference,
    write_budget_case,
    write_grouped,
    write_hard_case,
    write_refused_comparison,
    write_small_case,
)

ENGINES_TESTED = ("inprocess", "duckdb", "polars")
OUT_OF_CORE = ("duckdb", "polars")
"""The engines that read the files themselves (their errors must be the loaders')."""
READING_FILES = (*OUT_OF_CORE, "stream")
"""The engines that read the files themselves, on a run whose queries' lines are together."""
SLICES = (*BUCKETS, 60, 400)
"""``--buckets`` of the stream engine: about as many slices of the run (60 and 400 cut inside queries here)."""


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    return write_hard_case(tmp_path_factory.mktemp("hard"))


def _run(qrels, run, engine, buckets, **conventions):
    result = evaluate_files(str(qrels), str(run), METRICS, engine=engine, buckets=buckets, **conventions)
    return next(iter(result.runs.values()))


@pytest.mark.parametrize("engine", ENGINES_TESTED)
@pytest.mark.parametrize("buckets", BUCKETS)
def test_hard_case_equals_in_process(hard, engine, buckets):
    qrels, run = hard
    expected = reference(qrels, run)
    coverage = expected.coverage
    # the case holds what it is meant to
    assert coverage.missing_in_run and coverage.not_in_dataset and coverage.duplicates_dropped
    assert coverage.tied_pairs and coverage.no_relevant
    assert load_run(run).frame["query_id"].value_counts().iloc[0] > 0.5 * len(load_run(run))
    assert assert_same(_run(qrels, run, engine, buckets), expected) == len(METRICS) * coverage.queries_evaluated


@pytest.mark.parametrize("engine", ENGINES_TESTED)
@pytest.mark.parametrize("conventions", [{"missing": "skip"}, {"rel_level": 2}, {"unjudged": "skip"}])
def test_hard_case_under_other_conventions(hard, engine, conventions):
    qrels, run = hard
    assert_same(_run(qrels, run, engine, 7, **conventions), reference(qrels, run, **conventions))


@pytest.mark.parametrize("engine", ENGINES_TESTED)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tables_equal_in_process(hard, tmp_path, engine, fmt):
    qrels, run = as_tables(*hard, tmp_path, fmt)
    expected = reference(qrels, run)
    for buckets in (2, 16):
        assert_same(_run(qrels, run, engine, buckets), expected)


@pytest.mark.parametrize("engine", ENGINES_TESTED)
@pytest.mark.parametrize(("qrels_file", "run_file"), CONFORMANCE)
def test_conformance_cases(engine, qrels_file, run_file):
    expected = reference(TREC / qrels_file, TREC / run_file)
    for buckets in BUCKETS:
        assert_same(_run(TREC / qrels_file, TREC / run_file, engine, buckets), expected)


@pytest.mark.parametrize("engine", OUT_OF_CORE)
@pytest.mark.parametrize("run_file", ["bm25-stem.trec.gz", "hybrid-rrf60.trec.gz", "dense-all-minilm-l6-v2.trec.gz"])
def test_scifact(engine, run_file):
    expected = reference(SCIFACT / "qrels.tsv", SCIFACT / run_file)
    for buckets in BUCKETS:
        assert_same(_run(SCIFACT / "qrels.tsv", SCIFACT / run_file, engine, buckets), expected)


def _small_case(tmp_path, engine, case):  # type: ignore[no-untyped-def]
    """The case's files, written; a CSV run skips the stream engine, which reads TREC and Parquet runs."""
    qrels, run = write_small_case(tmp_path, case)
    if engine == "stream" and run.suffix == ".csv":
        pytest.skip("the stream engine reads TREC and Parquet runs")
    return qrels, run


@pytest.mark.parametrize("engine", READING_FILES)
@pytest.mark.parametrize("case", SMALL_CASES)
def test_small_cases_equal_in_process(tmp_path, engine, case):
    qrels, run = _small_case(tmp_path, engine, case)
    expected = reference(qrels, run)
    for buckets in SMALL_BUCKETS:
        assert_same(_run(qrels, run, engine, buckets), expected)


@pytest.mark.parametrize("engine", READING_FILES)
@pytest.mark.parametrize("case", SMALL_ERRORS)
def test_small_errors_as_in_process(tmp_path, engine, case):
    qrels, run = _small_case(tmp_path, engine, case)
    with pytest.raises(RagMetricsError) as in_process:
        evaluate_files(str(qrels), str(run), ["ndcg@10"], engine="inprocess")
    for buckets in SMALL_BUCKETS:
        with pytest.raises(RagMetricsError) as partitioned:
            evaluate_files(str(qrels), str(run), ["ndcg@10"], engine=engine, buckets=buckets)
        assert str(partitioned.value) == str(in_process.value)


@pytest.mark.parametrize("engine", READING_FILES)
def test_token_budgets_count_with_the_tokenizer_given(tmp_path, engine):
    """Was: the engines ignored the tokenizer and picked auto's per bucket (q1's Chinese texts counted by jieba in
    its own bucket, by whitespace in a bucket of English ones)."""
    qrels, run = write_budget_case(tmp_path)
    metrics = ["recall@4tok", "ndcg@4tok"]
    for tokenizer in ("whitespace", "jieba"):
        expected = rm.evaluate(load_dataset(qrels), load_run(run), metrics, tokenizer=tokenizer).runs["budget"]
        for buckets in SMALL_BUCKETS:
            found = evaluate_files(
                str(qrels), str(run), metrics, engine=engine, buckets=buckets, tokenizer=tokenizer
            ).runs["budget"]
            assert found.tokenizer == expected.tokenizer == tokenizer
            assert found.budget_notes == expected.budget_notes  # counted bucket by bucket, added up
            for metric in metrics:
                np.testing.assert_array_equal(found.array(metric), expected.array(metric))
    assert (
        found.array("recall@4tok")[0]
        != rm.evaluate(load_dataset(qrels), load_run(run), metrics, tokenizer="whitespace")
        .runs["budget"]
        .array("recall@4tok")[0]
    )
    assert evaluate_files(str(qrels), str(run), ["ndcg@10"], engine=engine).runs["budget"].tokenizer is None
    with pytest.raises(RagMetricsError, match=r"recall@4tok: the \w+ engine counts token budgets with one tokenizer"):
        evaluate_files(str(qrels), str(run), metrics, engine=engine, buckets=2)


@pytest.mark.parametrize("engine", READING_FILES)
@pytest.mark.parametrize(("texts", "fmt"), [("cjk", "parquet"), ("english", "parquet"), ("cjk", "csv")])
def test_auto_counts_token_budgets_as_in_process_when_the_scripts_decide_it(tmp_path, engine, texts, fmt):
    """Was: auto refused with a token budget. Every text mostly CJK (or none): auto picks what it picks in process,
    for one run and for two together; runs whose texts are on both sides of the share are still refused."""
    if engine == "stream" and fmt == "csv":
        pytest.skip("the stream engine reads TREC and Parquet runs")
    qrels, run = write_budget_case(tmp_path, texts, fmt)
    metrics = ["recall@12tok", "ndcg@4tok"]
    picked = "jieba" if texts == "cjk" else "whitespace"
    other = "whitespace" if texts == "cjk" else "jieba"
    in_process = rm.evaluate(load_dataset(qrels), [load_run(run), load_run(run, name="again")], metrics)
    assert {found.tokenizer for found in in_process.runs.values()} == {picked}
    otherwise = rm.evaluate(load_dataset(qrels), load_run(run), metrics, tokenizer=other).runs["budget"]
    assert not np.array_equal(otherwise.array("recall@12tok"), in_process.runs["budget"].array("recall@12tok"))
    copy = tmp_path / "again" / run.name
    copy.parent.mkdir()
    copy.write_bytes(run.read_bytes())
    for buckets in SMALL_BUCKETS:
        found = evaluate_files(str(qrels), [str(run), str(copy)], metrics, engine=engine, buckets=buckets)
        for name in ("budget", "budget-2"):
            assert found.runs[name].tokenizer == picked
            for metric in metrics:
                expected = in_process.runs["budget"].array(metric)
                np.testing.assert_array_equal(found.runs[name].array(metric), expected)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _, other_run = write_budget_case(mixed, "english" if texts == "cjk" else "cjk", fmt)
    with pytest.raises(RagMetricsError, match=r"several scripts \(some mostly CJK, some not\)"):
        evaluate_files(str(qrels), [str(run), str(other_run)], metrics, engine=engine)


def test_cli_token_budgets_name_their_tokenizer_as_in_process(tmp_path):
    """eval --engine names the tokenizer and notes a budget that hands some query nothing (q1's first text: 8 words
    to jieba) as in process. Was: it printed no such note."""
    qrels, run = write_budget_case(tmp_path)
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "recall@4tok", "--per-query"]
    in_process = _cli(*common, "--tokenizer", "jieba")
    assert in_process[0] == 0 and "tokenizer             \tall\tjieba" in in_process[1]
    assert in_process[2] == (
        "ragmetrics: note: run 'budget': the budget of 4 tokens hands over nothing for 1 of 8 queries (each one's "
        "first retrieved text is longer): their @4tok values are 0\n"
    )
    for engine in READING_FILES:
        assert _cli(*common, "--tokenizer", "jieba", "--engine", engine, "--buckets", "8") == in_process
        code, _, err = _cli(*common, "--engine", engine)
        assert code == 2 and "give --tokenizer whitespace, jieba or mixed" in err
    # a run without texts: the engines read no corpus, so they do not ask for one (was: "give --corpus")
    textless = tmp_path / "textless.trec"
    textless.write_text("".join(f"q{i} Q0 d{i} 1 1.0 t\n" for i in range(1, 4)), encoding="utf-8")
    for engine in READING_FILES:
        code, _, err = _cli("eval", "--dataset", str(qrels), "--run", str(textless), "-m", "recall@4tok",
                            "--engine", engine)  # fmt: skip
        assert code == 2 and f"--engine {engine} reads them from the run's own text column only" in err, err
        assert "--engine inprocess with --corpus" in err and err.count("\n") == 1
    code, _, err = _cli("compare", "--dataset", str(qrels), "--baseline", str(textless), "--run", str(run), "-m",
                        "recall@4tok", "--engine", "duckdb", "--tokenizer", "whitespace")  # fmt: skip
    assert code == 2 and "--engine duckdb reads them from the run's own text column only" in err, err


def test_cli_compare_reads_the_chunk_pattern_and_the_corpus_size_as_in_process(tmp_path):
    """Was: compare --engine took --chunk-pattern and --corpus-size and dropped them: chunk runs against document
    qrels were refused as meeting none of the qrels (in process: hits@1 0.6667 for both), accuracy@k as needing the
    corpus size. Now the engine reads both, and warns of a pattern that matches nothing once per run in the
    in-process words."""
    qrels, baseline, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n")
    baseline.write_text("q1 Q0 d1#0 1 2 b\nq1 Q0 x 2 1 b\nq2 Q0 x 1 2 b\nq2 Q0 d2#0 2 1 b\nq3 Q0 d3#1 1 1 b\n")
    run.write_text("q1 Q0 x 1 2 r\nq1 Q0 d1#0 2 1 r\nq2 Q0 d2#0 1 2 r\nq3 Q0 d3#0 1 1 r\n")
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(baseline), "--run", str(run), "-m", "hits@1"]
    argv += ["--format", "json"]
    means = []
    for engine in ([], ["--engine", "duckdb"]):
        code, out, err = _cli(*argv, "-m", "accuracy@1", "--corpus-size", "100", "--chunk-pattern", "#", *engine)
        assert code == 0, err
        means.append([row[key] for row in json.loads(out)["comparisons"] for key in ("baseline_mean", "mean")])
    # the engines' means come from fixed-point sums: equal to 1e-9
    assert means[0] == [2 / 3, 2 / 3, 149 / 150, 149 / 150] and means[1] == pytest.approx(means[0], abs=1e-9)
    warned = _cli(*argv, "--chunk-pattern", "ZZ", "--allow-no-overlap", "--engine", "duckdb")[2].splitlines()
    assert [line for line in warned if "warning" in line] == [
        f"ragmetrics: warning: run '{name}': the chunk pattern 'ZZ' matched none of the ids of its {rows} rows (such "
        f"as {first}): each is evaluated under its own id"
        for name, rows, first in (("base", 5, "'d1#0', 'x', 'd2#0'"), ("run", 4, "'x', 'd1#0', 'd2#0'"))
    ]


def test_cli_compare_prints_the_row_notes_in_process_compare_prints(tmp_path):
    """Was: compare --engine printed no note under a row (here a difference the same on every query, whose
    Holm-adjusted t interval is none)."""
    qrels, baseline, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6)))
    baseline.write_text("".join(f"q{i} Q0 x{i} 1 2 t\nq{i} Q0 d{i} 2 1 t\n" for i in range(6)))
    run.write_text("".join(f"q{i} Q0 d{i} 1 2 t\nq{i} Q0 x{i} 2 1 t\n" for i in range(6)))
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(baseline), "--run", str(run), "-m", "hits@1"]
    argv += ["-m", "mrr", "--test", "t"]
    printed = [_cli(*argv, *engine)[1] for engine in ([], ["--engine", "duckdb"])]
    notes = [[line for line in out.splitlines() if line.startswith("  note: ")] for out in printed]
    assert notes[0] == notes[1] and len(notes[0]) == 2 and "no interval: the difference is the same" in notes[0][0]


def test_cli_compare_json_has_the_same_fields_in_process_and_on_an_engine(tmp_path):
    """Was: in process a row had wins, ties and losses and the output the family; on --engine duckdb a row had n,
    sd_difference and the two tests' p-values instead. Now both print COMPARISON_FIELDS (p_t, the paired t test's,
    on both; the randomization p of the engines left out of both: in process it costs a resampling pass) and the
    family, with equal numbers but for the uncorrected bootstrap interval (the engines' is the Poisson bootstrap).
    Ranks 1, 2 and 4 give reciprocal ranks the engines' fixed point holds exactly."""
    qrels, base = tmp_path / "qrels.txt", tmp_path / "base.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(12)))
    ranks = {"base": [1, 2, 4, 1] * 3, "a": [1, 1, 2, 4, 2, 1, 1, 1, 4, 2, 1, 1], "b": [2, 2, 4, 1, 1, 4] * 2}

    def ranked(name: str, query: int, rank: int) -> str:
        return "".join(
            f"q{query} Q0 {f'd{query}' if k == rank else f'x{query}-{k}'} {k} {9 - k} {name}\n" for k in range(1, 5)
        )

    for name, at in ranks.items():
        (tmp_path / f"{name}.trec").write_text("".join(ranked(name, q, r) for q, r in enumerate(at)))
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(base), "--test", "t", "--format", "json"]
    argv += ["--run", str(tmp_path / "a.trec"), "--run", str(tmp_path / "b.trec"), "-m", "mrr", "-m", "hits@1"]
    code, out, err = _cli(*argv)
    assert code == 0, err
    theirs = json.loads(out)
    code, out, err = _cli(*argv, "--engine", "duckdb", "--buckets", "3")
    assert code == 0, err
    ours = json.loads(out)
    assert (theirs["engine"], ours["engine"], theirs["test"], ours["test"]) == ("inprocess", "duckdb", "t", "t")
    assert theirs["family"] == ours["family"] == {"correction": "holm", "size": 6, "covers": ours["family"]["covers"]}
    compared, engine_rows = theirs["comparisons"], ours["comparisons"]
    # the same order, by metric then run as the text table lists them (was: by run then metric on the engines)
    order = [("mrr", "a"), ("mrr", "b"), ("hits@1", "a"), ("hits@1", "b")]
    assert [(r["metric"], r["run"]) for r in compared] == [(r["metric"], r["run"]) for r in engine_rows] == order
    for mine, other in zip(engine_rows, compared):
        assert list(mine) == list(other) == list(COMPARISON_FIELDS)
        for key in COMPARISON_FIELDS:
            if key in ("ci_low", "ci_high"):  # the Poisson bootstrap's against the classic one's
                assert all(row["ci_low"] <= row["delta"] <= row["ci_high"] for row in (mine, other))
            elif isinstance(mine[key], float):
                assert mine[key] == pytest.approx(other[key], abs=1e-9), key
            else:
                assert mine[key] == other[key], key
    counts = [(r["wins"], r["ties"], r["losses"]) for r in compared]
    assert counts == [(5, 4, 3), (3, 4, 5), (4, 5, 3), (2, 6, 4)], counts  # counted by hand from the ranks
    assert all(r["n"] == 12 and r["p_t"] == r["p_value"] for r in compared)


def test_cli_compare_names_the_runs_and_their_tokenizer_as_in_process(tmp_path):
    """Was: compare --engine printed no tokenizer line under token budgets, named two runs of one file name alike
    (in process: budget and budget-2), and said nothing of a budget that hands some query nothing."""
    qrels, run = write_budget_case(tmp_path)
    (tmp_path / "other").mkdir()
    _, other = write_budget_case(tmp_path / "other", "cjk")
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(run), "--run", str(other), "-m", "recall@4tok"]
    argv += ["--tokenizer", "jieba", "--test", "t"]
    in_process = _cli(*argv)
    code, out, err = _cli(*argv, "--engine", "duckdb", "--buckets", "3")
    # jieba counts 8 words in q1's first text and 4 in the others' (the baseline), 6 in every first text of the
    # run: the budget of 4 hands nothing to 1 and 8 queries of 8, counted over the buckets as in process
    noted = "".join(
        f"ragmetrics: note: run {name!r}: the budget of 4 tokens hands over nothing for {n} of 8 queries (each one's "
        "first retrieved text is longer): their @4tok values are 0\n"
        for name, n in (("budget", 1), ("budget-2", 8))
    )
    assert (code, err) == (in_process[0], in_process[2]) == (0, noted)
    assert out.splitlines()[-1] == in_process[1].splitlines()[-1] == "tokenizer: jieba"
    ours = json.loads(_cli(*argv, "--engine", "duckdb", "--format", "json")[1])["comparisons"]
    theirs = json.loads(_cli(*argv, "--format", "json")[1])["comparisons"]
    pairs = [(row["baseline"], row["run"]) for row in ours]
    assert pairs == [(row["baseline"], row["run"]) for row in theirs if row["run"] != row["baseline"]]
    assert pairs == [("budget", "budget-2")]


@pytest.mark.parametrize("engine", OUT_OF_CORE)
def test_cli_compare_warns_of_a_run_that_is_the_baseline_as_in_process(tmp_path, engine):
    """Was: compare --engine duckdb|polars said nothing of a run that is the baseline again (the same path, or a copy
    of its file), where in-process compare warns; a run of other rows is not warned of."""
    qrels, baseline, other = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "other.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(4)))
    baseline.write_text("".join(f"q{i} Q0 x{i} 1 2 t\nq{i} Q0 d{i} 2 1 t\n" for i in range(4)))
    other.write_text("".join(f"q{i} Q0 d{i} 1 2 t\nq{i} Q0 x{i} 2 1 t\n" for i in range(4)))
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "base.trec"
    copy.write_bytes(baseline.read_bytes())
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(baseline), "-m", "mrr", "--test", "t"]
    for run in (baseline, copy, other):
        argv += ["--run", str(run)]
    in_process = _cli(*argv)
    warned = re.findall(r"warning: run '([^']+)' has the same rows as the baseline: nothing to compare", in_process[2])
    assert in_process[0] == 0 and warned == ["base-2", "base-3"]
    code, _, err = _cli(*argv, "--engine", engine)
    assert (code, err) == (0, in_process[2])


def test_a_quote_inside_a_csv_cell_is_read_as_text_or_refused_clearly(tmp_path):
    """The loader reads d"1 as text; DuckDB (the loader's reader) does too; Polars' reader refuses it: said so."""
    qrels, run = tmp_path / "qrels.csv", tmp_path / "run.trec"
    qrels.write_text('query_id,doc_id,relevance\nq1,d"1,1\nq1,d2,0\n')
    run.write_text('q1 Q0 d2 1 2 t\nq1 Q0 d"1 2 1 t\n')
    assert_same(_run(qrels, run, "duckdb", 2), reference(qrels, run))
    with pytest.raises(
        ParseError, match=r"qrels.csv: expected a CSV file Polars can read, found a quote inside a cell"
    ):
        evaluate_files(str(qrels), str(run), ["map"], engine="polars")


def test_buckets_in_any_order_fold_to_the_same_result(hard):
    """The fold does not depend on the order the buckets come back in (a cluster returns them in any order)."""
    qrels, run = hard
    dataset, loaded = load_dataset(qrels), load_run(run)
    plan = Plan("run", Side(str(run), "columns"), Side(str(qrels), "columns"), tuple(METRICS))
    tables = list(bucket_tables_of(plan, dataset, loaded, 16))
    assert len(tables) == 16
    folded = combine("run", METRICS, plan.conventions, tables[::-1])
    assert_same(folded, reference(qrels, run))


def test_buckets_count_first_texts_as_in_process_and_none_without_a_budget(tmp_path):
    """Each bucket's first-text token counts are the in-process ones (budgets.first_tokens_asked) when a metric
    reads a token budget, and null, as in process none is counted, when none does. Was: 0 for every query then."""
    qrels, run = write_budget_case(tmp_path)
    dataset, loaded = load_dataset(qrels), load_run(run)
    expected = rm.engine.budgets.first_tokens(rm.align(dataset, loaded, tokenizer="whitespace"))
    for metrics in (("recall@3tok", "recall@2"), ("recall@2",)):
        plan = Plan("budget", Side(str(run), "columns"), Side(str(qrels), "columns"), metrics, tokenizer="whitespace")
        tables = list(bucket_tables_of(plan, dataset, loaded, 3))
        rows = pa.concat_tables(t.filter(pc.equal(t.column("kind"), 0)) for t in tables).sort_by("position")
        asked = len(metrics) == 2
        assert rows.column("first_tokens").to_pylist() == (expected.tolist() if asked else [None] * len(expected))
        folded = combine("budget", list(metrics), plan.conventions, tables, tokenizer="whitespace")
        in_process = rm.evaluate(dataset, loaded, list(metrics), tokenizer="whitespace").runs["budget"]
        assert folded.budget_notes == in_process.budget_notes and len(in_process.budget_notes) == int(asked)
        assert folded.starved == ({3: 7} if asked else {})


def test_a_chunk_pattern_that_matches_no_id_is_warned_of_once_in_the_in_process_words(tmp_path):
    """Was: the engines applied the pattern bucket by bucket and said nothing (0 warnings), where in process one
    warning names the pattern. Now one warning per evaluation, whatever the buckets, in the in-process words: the
    run's rows and its first distinct ids in file order ('s' is in every query, so in every bucket)."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{i} 0 s 1\n" for i in range(12)))
    run.write_text("".join(f"q{i} Q0 s 1 2 r\nq{i} Q0 x{i} 2 1 r\n" for i in range(12)))
    with pytest.warns(rm.RagMetricsWarning) as in_process:
        load_run(run, chunk_pattern="#")
    words = [str(w.message) for w in in_process]
    assert words == [
        "run 'run': the chunk pattern '#' matched none of the ids of its 24 rows (such as 's', 'x0', 'x1'): each is "
        "evaluated under its own id"
    ]
    for engine in ("stream", "duckdb"):
        with pytest.warns(rm.RagMetricsWarning) as found:
            evaluate_files(str(qrels), str(run), ["hits@1"], engine=engine, buckets=6, chunk_pattern="#")
        assert [str(w.message) for w in found] == words, engine
    run.write_text("".join(f"q{i} Q0 s#1 1 2 r\nq{i} Q0 x{i} 2 1 r\n" for i in range(12)))
    with warnings.catch_warnings():  # a pattern that matches some id: nothing said
        warnings.simplefilter("error", rm.RagMetricsWarning)
        assert evaluate_files(str(qrels), str(run), ["hits@1"], engine="stream", buckets=6, chunk_pattern="#").runs[
            "run"
        ].means == {"hits@1": 1.0}


@pytest.mark.parametrize("engine", READING_FILES)
def test_an_empty_run_is_refused_as_in_process(tmp_path, hard, engine):
    qrels, _ = hard
    empty = tmp_path / "empty.trec"
    empty.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(ParseError) as in_process:
        load_run(empty)
    with pytest.raises(ParseError) as partitioned:
        evaluate_files(str(qrels), str(empty), ["ndcg@10"], engine=engine)
    assert str(partitioned.value) == str(in_process.value)


# --- bad input: the same error as the in-process loader, at the input file's line ----------------------------


def _same_error(qrels, run, match, engine):
    def in_process():
        load_dataset(qrels)
        load_run(run)

    with pytest.raises(RagMetricsError, match=match) as in_process_error:
        in_process()
    with pytest.raises(RagMetricsError, match=match) as partitioned:
        evaluate_files(str(qrels), str(run), ["ndcg@10"], engine=engine, buckets=3)
    return str(in_process_error.value), str(partitioned.value)


@pytest.mark.parametrize("engine", OUT_OF_CORE)
def test_a_bad_score_names_the_files_line(tmp_path, hard, engine):
    qrels, run = hard
    lines = run.read_text().splitlines()
    lines[40] = "q7 Q0 d1 1 high tag"
    bad = tmp_path / "bad.trec"
    bad.write_text("\n".join(lines) + "\n")
    ours, theirs = _same_error(
        qrels, bad, r"bad.trec:41: expected a finite number as score \(field 5\), found 'high'", engine
    )
    assert ours == theirs


@pytest.mark.parametrize("engine", READING_FILES)
def test_a_second_judgment_names_both_lines(tmp_path, engine):
    """The lines are the file's (identical lines told apart by their order); a bucket reports its own first one."""
    import re

    _, theirs = _same_error(TREC / "qrels.123", TREC / "results.test", "a second label", engine)
    line, first = (int(n) for n in re.search(r"qrels.123:(\d+):.*first on line (\d+)", theirs).groups())
    text = (TREC / "qrels.123").read_text().splitlines()
    assert first < line
    assert text[line - 1].split()[0::2][:2] == text[first - 1].split()[0::2][:2]  # the same query and document


@pytest.mark.parametrize("engine", READING_FILES)
def test_a_lone_carriage_return_is_refused_at_its_line(tmp_path, hard, engine):
    qrels, _ = hard
    bad = tmp_path / "cr.trec"
    bad.write_bytes(b"q1 Q0 d1 1 1.0 t\r\nq1 Q0 d2 2 0.5 t\nq1 Q0 d\r3 3 0.1 t\n")
    with pytest.raises(ParseError, match=r"cr.trec:3: expected lines ending in \\n or \\r\\n"):
        evaluate_files(str(qrels), str(bad), ["ndcg@10"], engine=engine)
    with pytest.raises(ParseError, match=r"cr.trec:3: expected lines ending in \\n or \\r\\n"):
        load_run(bad)
    packed = tmp_path / "cr.trec.gz"  # said of the gzipped file, not of a decompressed copy
    packed.write_bytes(gzip.compress(bad.read_bytes()))
    with pytest.raises(ParseError, match=r"cr.trec.gz:3: expected lines ending in \\n or \\r\\n"):
        evaluate_files(str(qrels), str(packed), ["ndcg@10"], engine=engine)


@pytest.mark.parametrize("engine", OUT_OF_CORE)
def test_crlf_and_gzip_are_read_as_in_process(tmp_path, hard, engine):
    qrels, run = hard
    packed = tmp_path / "run.trec.gz"
    packed.write_bytes(gzip.compress(run.read_bytes().replace(b"\n", b"\r\n")))
    assert_same(_run(qrels, packed, engine, 7), reference(qrels, packed))


@pytest.mark.parametrize("engine", OUT_OF_CORE)
def test_mixed_crlf_and_lf_line_ends_are_read_as_in_process(tmp_path, hard, engine):
    """Was: DuckDB's CSV state machine refused a TREC file mixing \\r\\n and \\n, which the loader reads."""
    qrels, run = hard
    mixed_qrels, mixed_run = tmp_path / "mixed.qrels", tmp_path / "mixed.trec"
    for source, target in ((qrels, mixed_qrels), (run, mixed_run)):
        lines = source.read_bytes().splitlines()
        target.write_bytes(b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines)))
    assert b"\r\n" in mixed_run.read_bytes() and b"\n" in mixed_run.read_bytes().replace(b"\r\n", b"")
    assert assert_same(_run(mixed_qrels, mixed_run, engine, 7), reference(mixed_qrels, mixed_run)) > 0
    # a CSV table too (DuckDB's strict CSV reader refuses the mix)
    table = tmp_path / "mixed.csv"
    table.write_bytes(b"query_id,doc_id,relevance\r\nq1,d1,1\nq1,d2,0\r\nq2,d3,2\nq2,d4,0\n")
    short = tmp_path / "short.trec"
    short.write_bytes(b"q1 Q0 d2 1 3 r\nq1 Q0 d1 2 2 r\nq2 Q0 d3 1 1 r\n")
    assert assert_same(_run(table, short, engine, 2), reference(table, short)) > 0


@pytest.mark.parametrize("engine", READING_FILES)
def test_bytes_that_are_not_utf8(tmp_path, hard, engine):
    qrels, _ = hard
    bad = tmp_path / "latin1.trec"
    bad.write_bytes(b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xe92 2 0.5 t\n")
    with pytest.raises(ParseError, match=r"latin1.trec:2: expected UTF-8 text"):
        evaluate_files(str(qrels), str(bad), ["ndcg@10"], engine=engine)


@pytest.mark.parametrize("engine", READING_FILES)
def test_formats_it_does_not_read_are_refused_clearly(tmp_path, hard, engine):
    qrels, _ = hard
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text('{"query_id": "q1", "retrieved": ["d1"]}\n')
    with pytest.raises(RagMetricsError, match=r"a jsonl run; the partitioned engines read trec, csv, tsv, parquet"):
        evaluate_files(str(qrels), str(jsonl), ["ndcg@10"], engine=engine)


@pytest.mark.parametrize("engine", READING_FILES)
def test_queries_named_by_text_are_refused(tmp_path, hard, engine):
    qrels, _ = hard
    run = tmp_path / "run.csv"
    run.write_text("query,doc_id,score\nwhat is x,d1,1\n")
    with pytest.raises(RagMetricsError, match="named by their text"):
        evaluate_files(str(qrels), str(run), ["ndcg@10"], engine=engine)


# --- the command line --------------------------------------------------------------------------------------


def test_engine_choices_are_the_registry():
    eval_parser = build_parser("eval")._subparsers._group_actions[0].choices["eval"]
    engine = next(a for a in eval_parser._actions if a.dest == "engine")
    assert list(engine.choices) == list(ENGINES)


def _cli(*argv):
    import io

    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("engine", OUT_OF_CORE)
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_cli_partitioned_prints_what_in_process_prints(hard, fmt, engine):
    qrels, run = hard
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "--run", str(SCIFACT / "bm25-stem.trec.gz")]
    common += ["-m", "ndcg@10", "-m", "map", "--format", fmt, "--per-query", "--allow-no-overlap"]
    in_process = _cli(*common)
    limit = ["--memory-limit", "256MB"] if engine == "duckdb" else []
    partitioned = _cli(*common, "--engine", engine, *limit, "--buckets", "5")
    assert in_process[0] == partitioned[0] == 0
    assert partitioned[1] == in_process[1]
    assert partitioned[2] == in_process[2]
    assert "judged queries missing from the run" in partitioned[2]


def test_cli_qrels_judging_nothing_relevant_are_refused_as_in_process(tmp_path):
    """Was: the engines printed 0.0000 and exited 0 where the in-process evaluation refuses."""
    qrels, run = tmp_path / "norel.txt", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 0\nq2 0 d2 -1\n")
    run.write_text("q1 Q0 d1 1 1 t\nq2 Q0 d2 1 1 t\n")
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "map"]
    in_process = _cli(*common)
    assert in_process[0] == 2 and "--allow-no-relevant" in in_process[2]
    allowed = _cli(*common, "--allow-no-relevant")
    assert allowed[0] == 0
    for engine in READING_FILES:
        assert _cli(*common, "--engine", engine) == in_process
        assert _cli(*common, "--engine", engine, "--allow-no-relevant")[:2] == allowed[:2]


@pytest.mark.parametrize("engine", OUT_OF_CORE)
@pytest.mark.parametrize("case", REFUSED_COMPARISONS)
def test_cli_compare_refuses_what_in_process_compare_refuses(tmp_path, engine, case):
    """Was: compare --engine duckdb|polars printed deltas of 0 on qrels that judge nothing relevant, and of a run
    whose ids meet none of the qrels', where in-process compare (and eval --engine) refuse."""
    argv = write_refused_comparison(tmp_path, case)
    *_, said, allow = REFUSED_COMPARISONS[case]
    in_process = _cli(*argv)
    assert in_process[:2] == (2, "") and allow in in_process[2]
    code, out, err = _cli(*argv, "--engine", engine)
    assert (code, out) == (2, "") and said in err and allow in err
    if case == "qrels_judging_nothing_relevant":  # the same words as in process (the cause needs the alignment)
        assert err == in_process[2]
    assert _cli(*argv, "--engine", engine, allow)[0] == _cli(*argv, allow)[0] == 0
    if case == "a_run_whose_ids_meet_no_judged_query":  # eval counts the run's own queries too, not "0 of 0"
        code, out, err = _cli("eval", argv[1], argv[2], "--run", argv[6], "--engine", engine)
        assert (code, out) == (2, "") and said in err


def test_cli_compare_prints_the_coverage_notes_in_process_compare_prints(tmp_path):
    """Was: compare --engine duckdb printed no coverage note (a judged query missing from the runs, one without a
    relevant document, a run query not in the qrels, a duplicate row, most of the top 10 unjudged)."""
    qrels, baseline, run = tmp_path / "qrels.txt", tmp_path / "base.trec", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq3 0 d4 0\nq4 0 d5 1\nq4 0 d6 1\n")
    ranked = {"q1": ["d1", "x1", "x2", "x3", "d2"], "q3": ["d4", "x1", "x2"], "q4": ["x4", "d5", "x5", "d6", "x6"]}
    ranked["q9"] = ["d1"]
    for path, flip in ((baseline, False), (run, True)):
        ordered = {q: docs[::-1] if flip else docs for q, docs in ranked.items()}
        lines = [f"{q} Q0 {d} {r} {10 - r} t\n" for q, docs in ordered.items() for r, d in enumerate(docs)]
        path.write_text("".join(lines) + ("q1 Q0 d1 9 0 t\n" if flip else ""))
    argv = ["compare", "--dataset", str(qrels), "--baseline", str(baseline), "--run", str(run), "-m", "ndcg@10"]
    in_process = _cli(*argv, "--test", "t")
    assert in_process[0] == 0
    notes = in_process[2]
    for said in ("1 judged queries missing from the run", "1 queries without a relevant document", "judged@10 = ",
                 "1 run queries not in the dataset", "1 duplicate rows dropped"):  # fmt: skip
        assert said in notes
    assert notes.count("ragmetrics: note: run ") == 2
    for fmt in ("table", "json"):
        code, _, err = _cli(*argv, "--test", "t", "--engine", "duckdb", "--buckets", "3", "--format", fmt)
        assert (code, err) == (0, notes)


def test_cli_per_query_out_writes_parquet(hard, tmp_path):
    qrels, run = hard
    expected = reference(qrels, run)
    for engine in ENGINES_TESTED:
        out = tmp_path / f"{engine}.parquet"
        code, printed, err = _cli(
            "eval", "--dataset", str(qrels), "--run", str(run), "-m", "ndcg@10", "--engine", engine,
            "--per-query-out", str(out),
        )  # fmt: skip
        assert code == 0, err
        assert f"wrote {out}: {expected.coverage.queries_evaluated} queries" in err
        table = pq.read_table(out).to_pandas().set_index("query_id").loc[list(expected.query_ids)]
        np.testing.assert_array_equal(table["ndcg@10"].to_numpy(), expected.value("ndcg@10"))
        assert f"{'ndcg@10':<22}\tall\t{expected.mean('ndcg@10'):.4f}" in printed


@pytest.mark.parametrize("engine", READING_FILES)
def test_cli_per_query_out_is_checked_as_in_process(tmp_path, engine):
    """Was: two runs of the same file name wrote one file, an input named as the output was overwritten, a missing
    folder gave pyarrow's message."""
    qrels, run = write_small_case(tmp_path, "float_query_ids_in_a_parquet_run")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    runs = [tmp_path / "a" / "run.parquet", tmp_path / "b" / "run.parquet"]
    for copy in runs:
        copy.write_bytes(run.read_bytes())
    common = ["eval", "--dataset", str(qrels), "-m", "map", "--engine", engine]
    out = tmp_path / "pq.parquet"
    code, _, err = _cli(*common, "--run", str(runs[0]), "--run", str(runs[1]), "--per-query-out", str(out))
    assert code == 0, err
    assert f"wrote {tmp_path / 'pq.run.parquet'}" in err and f"wrote {tmp_path / 'pq.run-2.parquet'}" in err
    assert pq.read_table(tmp_path / "pq.run-2.parquet").num_rows == 10
    before = run.read_bytes()
    code, _, err = _cli(*common, "--run", str(run), "--per-query-out", str(run))
    assert code == 2 and "is also read as --run; writing it would destroy that input" in err
    assert run.read_bytes() == before
    missing = tmp_path / "no" / "such" / "x.parquet"
    code, _, err = _cli(*common, "--run", str(run), "--per-query-out", str(missing))
    assert code == 2 and f"--per-query-out {missing}: the folder {missing.parent} does not exist" in err


@pytest.mark.parametrize("engine", READING_FILES)
def test_per_query_out_over_an_input_is_refused_by_the_library(tmp_path, engine):
    """Was: evaluate_files(per_query_out=) wrote the per-query values over the run or the qrels it was given (the
    CLI refused it), and a missing folder gave pyarrow's message."""
    qrels, run = write_small_case(tmp_path, "float_query_ids_in_a_parquet_run")
    before = {path: path.read_bytes() for path in (qrels, run)}
    for path, name in ((run, "runs"), (qrels, "dataset")):
        with pytest.raises(RagMetricsError) as raised:
            evaluate_files(str(qrels), str(run), ["map"], engine=engine, per_query_out=str(path))
        assert str(raised.value) == (
            f"per_query_out {path}: is also read as {name}; writing it would destroy that input: give another path"
        )
    assert {path: path.read_bytes() for path in (qrels, run)} == before
    missing = tmp_path / "no" / "x.parquet"
    with pytest.raises(RagMetricsError, match=f"per_query_out {missing}: the folder {missing.parent} does not exist"):
        evaluate_files(str(qrels), str(run), ["map"], engine=engine, per_query_out=str(missing))
    out = tmp_path / "values.parquet"
    found = evaluate_files(str(qrels), str(run), ["map"], engine=engine, per_query_out=str(out))
    assert pq.read_table(out).num_rows == found.runs["run"].coverage.queries_evaluated == 10


def test_cli_refuses_what_the_engines_do_not_read(hard):
    qrels, run = hard
    code, _, err = _cli("eval", "--dataset", str(qrels), "--run", str(run), "--engine", "duckdb", "--queries", "x")
    assert code == 2
    assert "--queries x: read only with --engine inprocess, not --engine duckdb" in err
    assert "give --engine inprocess, or drop --queries" in err


def test_cli_bad_memory_limit(hard):
    qrels, run = hard
    code, _, err = _cli(
        "eval", "--dataset", str(qrels), "--run", str(run), "--engine", "duckdb", "--memory-limit", "lots"
    )
    assert code == 2
    assert "DuckDB" in err and "--memory-limit" in err


def test_cli_work_dir_is_made_when_missing_and_a_file_is_refused(hard, tmp_path):
    qrels, run = hard
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "ndcg@10", "--engine", "duckdb"]
    work = tmp_path / "not" / "yet"
    code, printed, err = _cli(*common, "--work-dir", str(work))
    assert code == 0, err
    assert work.is_dir() and not any(work.iterdir())  # the engine's own folder inside it is removed after
    assert printed == _cli(*common[:-2])[1]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _, err = _cli(*common, "--work-dir", str(blocker / "sub"))
    assert code == 2
    assert f"work folder {blocker / 'sub'}: cannot be made" in err


# --- the stream engine: a run whose queries' lines are together, read in order in slices of whole queries -------


@pytest.fixture(scope="module")
def grouped(hard, tmp_path_factory):
    """The skewed case with each query's lines together (q5 holds most rows: one slice takes it whole)."""
    qrels, run = hard
    return qrels, write_grouped(run, tmp_path_factory.mktemp("grouped"))


@pytest.mark.parametrize("slices", SLICES)
def test_stream_hard_case_equals_in_process(hard, grouped, slices):
    qrels, run = grouped
    expected = reference(qrels, run)
    assert expected.coverage.missing_in_run and expected.coverage.not_in_dataset  # judged-only and unknown queries
    assert (
        assert_same(_run(qrels, run, "stream", slices), expected) == len(METRICS) * expected.coverage.queries_evaluated
    )
    # the same per-query values as the shuffled file's: a query's rows kept their order
    assert_same(_run(qrels, run, "stream", slices), reference(*hard))


@pytest.mark.parametrize("conventions", [{"missing": "skip"}, {"rel_level": 2}, {"unjudged": "skip"}])
def test_stream_under_other_conventions(grouped, conventions):
    qrels, run = grouped
    for slices in (1, 7, 400):
        assert_same(_run(qrels, run, "stream", slices, **conventions), reference(qrels, run, **conventions))


@pytest.mark.parametrize(("qrels_file", "run_file"), [c for c in CONFORMANCE if c[1] != "results.trunc"])
def test_stream_conformance_cases(qrels_file, run_file):
    expected = reference(TREC / qrels_file, TREC / run_file)
    for slices in SLICES:
        assert_same(_run(TREC / qrels_file, TREC / run_file, "stream", slices), expected)


@pytest.mark.parametrize("run_file", ["bm25-stem.trec.gz", "hybrid-rrf60.trec.gz", "dense-all-minilm-l6-v2.trec.gz"])
def test_stream_scifact(run_file):
    """Gzipped runs, read in order; the qrels a TSV file (read whole by its loader)."""
    expected = reference(SCIFACT / "qrels.tsv", SCIFACT / run_file)
    for slices in SLICES:
        assert_same(_run(SCIFACT / "qrels.tsv", SCIFACT / run_file, "stream", slices), expected)


def test_stream_gzip_crlf_and_a_byte_order_mark(grouped, tmp_path):
    qrels, run = grouped
    packed = tmp_path / "run.trec.gz"
    packed.write_bytes(gzip.compress(b"\xef\xbb\xbf" + run.read_bytes().replace(b"\n", b"\r\n")))
    expected = reference(qrels, packed)
    np.testing.assert_array_equal(expected.value("map"), reference(qrels, run).value("map"))
    for slices in (1, 7, 60):
        assert_same(_run(qrels, packed, "stream", slices), expected)


def test_stream_parquet_run_in_slices(grouped, tmp_path):
    qrels, run = as_tables(*grouped, tmp_path, "parquet")
    expected = reference(qrels, run)
    for slices in (1, 2, 16, 60):
        assert_same(_run(qrels, run, "stream", slices), expected)


def test_stream_memory_limit_sets_the_slices(grouped):
    """A smaller --memory-limit: smaller slices, more of them, the same values."""
    qrels, run = grouped
    expected = reference(qrels, run)
    counts = []
    for limit in ("2GB", "120K", "12K"):
        with Stream(Options(memory_limit=limit)) as engine:
            found_qrels, found_run = engine.describe(str(qrels), "dataset"), engine.describe(str(run), "run")
            plan = Plan("run", found_run.side, found_qrels.side, tuple(METRICS))
            tables = list(engine.bucket_tables(plan, found_qrels, found_run, 1))
            counts.append(len(tables))
            assert_same(combine("run", METRICS, plan.conventions, tables), expected)
    assert counts[0] < counts[1] < counts[2]
    with pytest.raises(RagMetricsError, match=r"--memory-limit: expected a positive whole number"):
        Stream(Options(memory_limit="lots"))


def test_stream_a_bad_score_names_the_files_line(grouped, tmp_path):
    """A slice's line numbers are said of the file (the lines of the slices before it counted)."""
    qrels, run = grouped
    lines = run.read_text().splitlines()
    at = len(lines) - 5
    fields = lines[at].split()
    lines[at] = " ".join([*fields[:4], "high", *fields[5:]])
    bad = tmp_path / "bad.trec"
    bad.write_text("\n".join(lines) + "\n")
    message = rf"bad.trec:{at + 1}: expected a finite number as score \(field 5\), found 'high'"
    with pytest.raises(ParseError, match=message):
        load_run(bad)
    for slices in (1, 7, 400):
        with pytest.raises(ParseError, match=message):
            evaluate_files(str(qrels), str(bad), ["ndcg@10"], engine="stream", buckets=slices)


def _sliced_qrels(qrels, run, slices) -> QrelsSlices | None:
    with Stream(Options(buckets=slices)) as engine:
        found_qrels, found_run = engine.describe(str(qrels), "dataset"), engine.describe(str(run), "run")
        plan = Plan("run", found_run.side, found_qrels.side, tuple(METRICS))
        judged = engine._judged(plan, found_qrels, engine._slice_bytes(found_run, slices))
    return judged if isinstance(judged, QrelsSlices) else None


def test_stream_reads_qrels_larger_than_a_slice_a_slice_at_a_time(grouped, tmp_path):
    """Qrels larger than a slice are read a slice at a time (only which slice holds each query is kept), in whatever
    order the run asks for them; qrels whose queries' lines are not together are read whole; the values are the
    same either way."""
    qrels, run = grouped
    sliced = _sliced_qrels(qrels, run, 400)
    assert sliced is not None and len(sliced.slices) > 10 and len(sliced.prints) == 40
    assert _sliced_qrels(qrels, run, 1) is None  # the qrels fit in the one slice: read whole
    judged_order = list(dict.fromkeys(line.split()[0] for line in qrels.read_text().splitlines()[2:]))
    run_order = list(dict.fromkeys(line.split()[0] for line in run.read_text().splitlines() if line[:1] == "q"))
    assert run_order != [q for q in judged_order if q in run_order]  # the run asks for the qrels' slices out of order
    expected = reference(qrels, run)
    for slices in (60, 400):
        assert_same(_run(qrels, run, "stream", slices), expected)
    lines = qrels.read_text().splitlines()
    scattered = tmp_path / "scattered.txt"
    scattered.write_text("\n".join([*lines[2:][::2], *lines[2:][1::2]]) + "\n")  # every query's lines in two places
    assert _sliced_qrels(scattered, run, 400) is None
    for slices in (60, 400):
        assert_same(_run(scattered, run, "stream", slices), reference(scattered, run))


def test_stream_a_bad_qrels_line_in_a_later_slice_names_the_files_line(grouped, tmp_path):
    qrels, run = grouped
    lines = qrels.read_text().splitlines()
    at = len(lines) - 3
    lines[at] = lines[at].rsplit(maxsplit=1)[0] + " high"
    bad = tmp_path / "bad-qrels.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError) as whole:
        load_dataset(bad)
    assert f"bad-qrels.txt:{at + 1}:" in str(whole.value)
    for slices in (1, 60, 400):
        with pytest.raises(ParseError) as streamed:
            evaluate_files(str(bad), str(run), ["ndcg@10"], engine="stream", buckets=slices)
        assert str(streamed.value) == str(whole.value)
    good = qrels.read_text().splitlines()
    duplicated = tmp_path / "twice.txt"  # a second label of the last query's first pair, the first in another slice
    last = good[-1].split()[0]
    first = next(i for i, line in enumerate(good) if line.split()[:1] == [last])
    duplicated.write_text("\n".join([*good, good[first].rsplit(maxsplit=1)[0] + " 9"]) + "\n")
    with pytest.raises(ParseError) as whole:
        load_dataset(duplicated)
    assert f"(first on line {first + 1})" in str(whole.value)
    for slices in (1, 400):
        with pytest.raises(ParseError) as streamed:
            evaluate_files(str(duplicated), str(run), ["ndcg@10"], engine="stream", buckets=slices)
        assert str(streamed.value) == str(whole.value)


def test_stream_qrels_a_slice_cannot_be_cut_from_are_read_whole(grouped, tmp_path):
    """UTF-16 qrels (a slice is cut at UTF-8 line breaks) are read whole: the values equal the whole read's. Qrels
    with a byte-order mark at the start of a line inside the file (two files joined) are refused at that line,
    whole or in slices."""
    qrels, run = grouped
    text = qrels.read_text()
    wide = tmp_path / "wide.txt"
    wide.write_bytes(text.encode("utf-16"))
    lines = text.splitlines()
    marked = tmp_path / "marked.txt"
    half = len(lines) // 2
    while lines[half].split()[:1] == lines[half - 1].split()[:1]:  # the mark before a query's first line
        half += 1
    marked.write_text("\n".join([*lines[:half], "\ufeff" + lines[half], *lines[half + 1 :]]) + "\n")
    assert _sliced_qrels(wide, run, 400) is None
    for slices in (7, 60, 150, 400):
        assert_same(_run(wide, run, "stream", slices), reference(wide, run))
    refusal = rf"marked\.txt:{half + 1}: expected a query_id .* byte-order mark \(U\+FEFF\)"
    with pytest.raises(ParseError, match=refusal):
        reference(marked, run)
    for slices in (7, 60, 150, 400):
        with pytest.raises(ParseError, match=refusal):
            _run(marked, run, "stream", slices)


def test_stream_a_run_in_another_order_has_the_qrels_read_whole_once_parsed_over_and_over(grouped, monkeypatch):
    """The grouped run asks for the qrels' queries in another order than theirs: without the bound it parses the
    qrels slices many times over; with a bound of one parse a slice, once for the cut, about once more, then it reads
    them whole."""
    qrels, run = grouped
    expected = reference(qrels, run)
    sliced = _sliced_qrels(qrels, run, 400)
    assert sliced is not None
    parsed = []
    monkeypatch.setattr(stream, "_parse_qrels", lambda *args: parsed.append(1) or parse_qrels(*args))
    counts = []
    for reparses in (10_000, 1):
        monkeypatch.setattr(QrelsSlices, "REPARSES", reparses)
        parsed.clear()
        assert_same(_run(qrels, run, "stream", 400), expected)
        counts.append(len(parsed))
    # the cut parses each slice once; then, unbounded, again and again; bounded at one parse a slice, about once more
    assert counts[0] > 3 * len(sliced.slices) and counts[1] < 2 * len(sliced.slices) + 4, counts


@pytest.mark.parametrize("slices", [1, 2, 7, 400])
def test_stream_refuses_a_run_whose_queries_are_not_together(slices, tmp_path, hard):
    """Never a wrong number: the file, the line of the query's second run of lines and the query are named, and the
    engines that partition by hash are suggested; whatever the slices."""
    with pytest.raises(RagMetricsError) as refused:
        evaluate_files(str(TREC / "qrels.test"), str(TREC / "results.trunc"), ["map"], engine="stream", buckets=slices)
    assert str(refused.value).startswith(f"{TREC / 'results.trunc'}: line 3: query '301' again, after other queries")
    assert "--engine duckdb or --engine polars" in str(refused.value)
    # a query seen in an earlier slice: its first line in the later one is named
    interleaved = tmp_path / "late.trec"
    rows = [f"q{q} Q0 d{d} {d + 1} {10 - d} t" for q in (1, 2, 3) for d in range(5)]
    interleaved.write_text("\n".join(["# head", *rows, "", "q2 Q0 d9 6 0.5 t", "q4 Q0 d1 1 1 t"]) + "\n")
    with pytest.raises(RagMetricsError, match=r"late.trec: line 18: query 'q2' again"):
        evaluate_files(str(TREC / "qrels.test"), str(interleaved), ["map"], engine="stream", buckets=slices)
    # a Parquet run: its row
    qrels, run = as_tables(*hard, tmp_path, "parquet")
    with pytest.raises(RagMetricsError, match=r"run.parquet: row \d+: query '\w+' again"):
        evaluate_files(str(qrels), str(run), ["map"], engine="stream", buckets=slices)


def test_stream_refuses_what_it_does_not_read_in_order(grouped, tmp_path):
    qrels, run = as_tables(*grouped, tmp_path, "csv")
    with pytest.raises(
        RagMetricsError, match=r"a csv run; --engine stream reads TREC .* use --engine polars or duckdb"
    ):
        evaluate_files(str(qrels), str(run), ["ndcg@10"], engine="stream")
    wide = tmp_path / "utf16.trec"
    wide.write_bytes(grouped[1].read_text(encoding="utf-8").encode("utf-16"))
    load_run(wide)  # the loader reads it whole
    with pytest.raises(RagMetricsError, match=r"utf16.trec: UTF-16 text; --engine stream cuts a run at its UTF-8"):
        evaluate_files(str(grouped[0]), str(wide), ["ndcg@10"], engine="stream")


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_cli_stream_prints_what_in_process_prints(grouped, fmt):
    qrels, run = grouped
    common = ["eval", "--dataset", str(qrels), "--run", str(run), "--run", str(SCIFACT / "bm25-stem.trec.gz")]
    common += ["-m", "ndcg@10", "-m", "map", "--format", fmt, "--per-query", "--allow-no-overlap"]
    in_process = _cli(*common)
    for limit in (["--memory-limit", "64K"], ["--buckets", "5"]):
        streamed = _cli(*common, "--engine", "stream", *limit)
        assert in_process[0] == streamed[0] == 0
        assert streamed[1] == in_process[1]
        assert streamed[2] == in_process[2]
    code, _, err = _cli(*common, "--engine", "stream", "--memory-limit", "lots")
    assert code == 2 and "--memory-limit" in err


def test_cli_stream_per_query_out(grouped, tmp_path):
    qrels, run = grouped
    expected = reference(qrels, run)
    out = tmp_path / "stream.parquet"
    argv = ["eval", "--dataset", str(qrels), "--run", str(run), "-m", "ndcg@10", "--engine", "stream"]
    code, _, err = _cli(*argv, "--buckets", "7", "--per-query-out", str(out))
    assert code == 0, err
    table = pq.read_table(out).to_pandas().set_index("query_id").loc[list(expected.query_ids)]
    np.testing.assert_array_equal(table["ndcg@10"].to_numpy(), expected.value("ndcg@10"))


@pytest.mark.parametrize("engine", OUT_OF_CORE)
def test_auto_on_a_run_arrow_cannot_read_says_the_loaders_error(tmp_path, engine):
    """The texts' scripts are read before the buckets: a record the loader refuses is said as the loader says it,
    not as a tokenizer that cannot be picked."""
    qrels, run = write_small_case(tmp_path, "csv_run_with_texts_row_short_of_a_field")
    with pytest.raises(RagMetricsError) as in_process:
        evaluate_files(str(qrels), str(run), ["recall@4tok"], engine="inprocess")
    assert "expected 4 fields like the header" in str(in_process.value)
    with pytest.raises(RagMetricsError) as partitioned:
        evaluate_files(str(qrels), str(run), ["recall@4tok"], engine=engine)
    assert str(partitioned.value) == str(in_process.value)


def test_the_script_pass_counts_characters_as_auto_counts_them():
    """:mod:`ragmetrics.partitioned.scripts` counts CJK and space characters with Arrow's regular expressions: the
    same characters as :func:`ragmetrics.engine.tokens.cjk_share`'s, over every code point."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    cjk, space = scripts_patterns()
    text = pa.array([every])
    assert pc.count_substring_regex(text, cjk)[0].as_py() == len(CJK_CHARACTER.findall(every))
    assert pc.count_substring_regex(text, space)[0].as_py() == len(re.findall(r"\s", every))
