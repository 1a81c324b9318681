"""Hostile but realistic command lines: each ends in one clear line and exit 2 (or a right number), never a
traceback, a silent 0, a destroyed input or a gate that passes what it cannot judge."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragmetrics as rm
from ragmetrics.analysis import stats
from ragmetrics.cli import main
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import Store

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 1\nq3 0 d6 1\n"
RUN_A = "q1 Q0 d1 1 3.0 a\nq1 Q0 d9 2 2.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 d5 1 5 a\nq2 Q0 d8 2 4 a\nq3 Q0 d7 1 1 a\nq3 Q0 d6 2 0.5 a\n"
RUN_B = "q1 Q0 d3 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d4 1 5 b\nq2 Q0 d5 2 4 b\nq3 Q0 d6 1 1 b\n"


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], out=out, err=err), out.getvalue(), err.getvalue()


def usage_error(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"qrels": tmp_path / "qrels.txt", "a": tmp_path / "a.trec", "b": tmp_path / "b.trec"}
    for key, text in (("qrels", QRELS), ("a", RUN_A), ("b", RUN_B)):
        paths[key].write_text(text)
    return paths


def test_a_cut_off_far_past_every_ranking_costs_what_the_rankings_cost(files):
    """Was: ndcg@99999999999 tried to allocate queries x K (2 TiB). Past the deepest ranking every sum is the last
    one: the values equal those at the depth (P@K, F1@K and judged@K divide by K)."""
    huge = 99_999_999_999
    dataset, run = load_dataset(files["qrels"]), load_run(files["a"])
    alignment = rm.align(dataset, run)
    for name in ("ndcg", "recall", "map", "hits", "mrr", "ndcg_exp"):
        np.testing.assert_array_equal(alignment.value(f"{name}@{huge}"), alignment.value(f"{name}@3"), err_msg=name)
    relevant_ranked = np.array([2, 1, 1])
    np.testing.assert_allclose(alignment.value(f"precision@{huge}"), relevant_ranked / huge, rtol=1e-12)
    widest = max(matrix.shape[1] for matrix in alignment.ranking._sums.values())
    assert widest <= 3
    code, out, err = run_cli("eval", "--dataset", files["qrels"], "--run", files["a"], "-m", f"ndcg@{huge}")
    assert code == 0 and "0.6681" in out, err


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(files, tmp_path):
    parquet_run = tmp_path / "a.parquet"
    load_run(files["a"]).frame.to_parquet(parquet_run)
    qrels, a, parquet = files["qrels"].read_bytes(), files["a"].read_bytes(), parquet_run.read_bytes()
    cases = [
        ("pool", "--dataset", files["qrels"], "--run", files["a"], "-o", files["qrels"]),
        ("pool", "--dataset", files["qrels"], "--run", files["a"], "-o", files["a"]),
        ("fuse", files["a"], files["b"], "-o", files["a"]),
        ("judge", "merge", "--dataset", files["qrels"], "--labels", files["a"], "-o", files["qrels"]),
        ("eval", "--dataset", files["qrels"], "--run", parquet_run, "--per-query-out", parquet_run),
    ]
    for argv in cases:
        code, _, err = run_cli(*argv)
        assert code == 2 and "writing it would destroy that input" in err, (argv, err)
    assert files["qrels"].read_bytes() == qrels and files["a"].read_bytes() == a
    assert parquet_run.read_bytes() == parquet


def test_an_output_in_a_missing_folder_or_on_a_full_disk_is_one_line(files, tmp_path):
    code, _, err = run_cli("fuse", files["a"], files["b"], "-o", tmp_path / "nowhere" / "f.trec")
    assert code == 2 and "the folder" in err and "does not exist" in err
    full = Path("/dev/full")
    if full.exists() and stat.S_ISCHR(full.stat().st_mode):
        code, _, err = run_cli("fuse", files["a"], files["b"], "-o", full)
        assert code == 2 and "No space left on device" in err and "Traceback" not in err
        assert stat.S_ISCHR(full.stat().st_mode)  # a device is written, never replaced by a file


def test_an_output_is_replaced_only_once_written_whole(files, tmp_path):
    out = tmp_path / "fused.trec"
    out.write_text("old\n")
    code, _, err = run_cli("fuse", files["a"], files["b"], "-o", out)
    assert code == 0, err
    assert out.read_text().startswith("q1 Q0") and not [p for p in os.listdir(tmp_path) if "partial" in p]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--alpha", "0"], "argument --alpha: expected a number strictly between 0 and 1"),
        (["--alpha", "nan"], "argument --alpha: expected a number strictly between 0 and 1"),
        (["--alpha", "2"], "argument --alpha: expected a number strictly between 0 and 1"),
        (["--seed", "-1"], "argument --seed: expected a whole number of at least 0, found -1"),
        (["--resamples", "0"], "argument --resamples: expected a whole number of at least 1, found 0"),
        (["--resamples", "-3"], "argument --resamples: expected a whole number of at least 1, found -3"),
        (["--resamples", "9" * 24], "argument --resamples: expected a whole number of at most 100,000"),
        (["--resamples", "１０"], "argument --resamples: expected a whole number, found '１０'"),
        (["--seed", "9" * 24], "argument --seed: expected a whole number of at most 9,223,372,036,854,775,807"),
    ],
)
def test_test_options_out_of_range_are_usage_errors(capsys, files, argv, message):
    err = usage_error(
        capsys, "compare", "--dataset", files["qrels"], "--baseline", files["a"], "--run", files["b"], *argv
    )
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--weights", "1,abc"], "argument --weights: expected comma-separated numbers (e.g. 1,0.5), found 'abc'"),
        (["--weights", "nan,1"], "argument --weights: expected finite weights of 0 or more, found 'nan'"),
        (["--weights", "0,0"], "argument --weights: expected at least one weight above 0"),
        (["--depth", "0"], "argument --depth: expected a whole number of at least 1, found 0"),
        (["--depth-out", "0"], "argument --depth-out: expected a whole number of at least 1, found 0"),
    ],
)
def test_fusion_options_out_of_range_are_usage_errors(capsys, files, tmp_path, argv, message):
    err = usage_error(capsys, "fuse", files["a"], files["b"], "-o", tmp_path / "f.trec", *argv)
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "--test", "randomization", "--resamples", "10"],
            "--resamples 10: the randomization test's p-value cannot go below 2/11 = 0.182, not below --alpha 0.05: "
            "no difference could be significant; give at least 40",
        ),
        (  # was accepted: scipy's two-sided permutation p is twice the smaller side's, 2/31 = 0.0645 at best
            ["compare", "--test", "randomization", "--resamples", "30"],
            "--resamples 30: the randomization test's p-value cannot go below 2/31 = 0.0645",
        ),
        (  # the engines' merged sign-flip p is (hits + 1) / (B + 1): 1/20 is 0.05, not below it
            ["compare", "--test", "randomization", "--resamples", "19", "--engine", "duckdb"],
            "--resamples 19: the randomization test's p-value cannot go below 1/20 = 0.05, not below --alpha 0.05",
        ),
        (
            ["check", "--test", "bootstrap", "--resamples", "50", "--alpha", "0.01"],
            "--resamples 50: the bootstrap test's p-value cannot go below 1/51 = 0.0196, not below --alpha 0.01: no "
            "difference could be significant; give at least 100",
        ),
        (
            ["eval", "-m", "ndcg@" + "9" * 20],
            "the cut-off k must be at most 9,223,372,036,854,775,807 (deeper than any ranking)",
        ),
        (["eval", "-m", "ndcg@１０"], "cannot read metric 'ndcg@１０'"),
    ],
)
def test_numbers_that_could_mean_nothing_are_refused(files, argv, message):
    """Was: 10 resamples gave a test that could never say significant, 2 a "95%" interval, an @k beyond 64 bits an
    OverflowError, and full-width digits a cut-off."""
    base = ["--baseline", files["b"]] if argv[0] in ("compare", "check") else []
    code, out, err = run_cli(argv[0], "--dataset", files["qrels"], "--run", files["a"], *base, *argv[1:])
    assert code == 2 and message in err and not out and "Traceback" not in err, err


def test_a_collection_the_qrels_and_runs_cannot_come_from_is_refused(files, tmp_path):
    """Was: another dataset's corpus (or a queries file) gave accuracy@5 = 0.9988 without a word, and a
    --corpus-size below the documents named was taken."""
    other = tmp_path / "corpus.jsonl"
    other.write_text('{"_id": "x1", "text": "a"}\n{"_id": "x2", "text": "b"}\n' * 1 + '{"_id": "x3", "text": "c"}\n')
    common = ["eval", "--dataset", files["qrels"], "--run", files["a"], "-m", "accuracy@2"]
    code, out, err = run_cli(*common, "--corpus", other)
    assert code == 2 and not out and f"--corpus {other}: holds none of the" in err and "give this dataset's" in err
    code, out, err = run_cli(*common, "--corpus-size", "2")
    assert code == 2 and "--corpus-size 2: 2 documents, fewer than the" in err, err
    code, out, _ = run_cli(*common, "--corpus-size", "1000")
    assert code == 0 and "accuracy@2" in out
    # a run of chunks names its documents: a corpus of those documents is the collection (unless chunks are scored)
    docs = [f"d{i}" for i in range(4)]
    (tmp_path / "docs.qrels").write_text("".join(f"q{i} 0 {d} 1\n" for i, d in enumerate(docs)))
    (tmp_path / "docs.jsonl").write_text("".join(f'{{"_id": "{d}", "text": "t"}}\n' for d in docs))
    (tmp_path / "chunks.trec").write_text(
        "".join(f"q{i} Q0 {d}#{c} {c + 1} {9 - c} r\n" for i, d in enumerate(docs) for c in range(3))
    )
    chunked = ["eval", "--dataset", tmp_path / "docs.qrels", "--corpus", tmp_path / "docs.jsonl", "--run",
               tmp_path / "chunks.trec", "--chunk-pattern", "#", "-m", "accuracy@2"]  # fmt: skip
    code, out, err = run_cli(*chunked)
    assert code == 0 and "accuracy@2" in out, err
    code, _, err = run_cli(*chunked, "--level", "chunk")
    assert code == 2 and "4 documents, fewer than the 16 distinct documents" in err, err


def test_fuse_takes_its_runs_in_one_order_and_no_option_its_method_ignores(files, tmp_path):
    """Was: runs given both ways were read positional first (a weight went to another run), --norm with rrf and --k
    with combsum changed nothing, and a name with a space was reported as it was not written."""
    out = tmp_path / "f.trec"
    cases = [
        ([files["a"], "--run", files["b"], "--weights", "1,0"], "give them all after the options or all as --run"),
        ([files["a"], files["b"], "--norm", "zscore"], "--norm zscore: read only with --method other than rrf ("),
        ([files["a"], files["b"], "--method", "combsum", "--k", "10"], "--k 10: read only with --method rrf"),
    ]
    for argv, said in cases:
        code, _, err = run_cli("fuse", *argv, "-o", out)
        assert code == 2 and said in err and not out.exists(), err
    code, _, err = run_cli("fuse", files["a"], files["b"], "--name", "my hybrid", "-o", out)
    assert code == 0 and "run 'my_hybrid'" in err and out.read_text().split("\n")[0].endswith(" my_hybrid")
    assert "the name 'my hybrid' as a TREC tag, which holds no whitespace" in err  # was renamed without a word


def test_the_gate_refuses_an_alpha_that_would_pass_a_regression(capsys, files):
    err = usage_error(
        capsys, "check", "--dataset", files["qrels"], "--run", files["a"], "--baseline", files["b"], "--alpha", "0"
    )
    assert "--alpha" in err
    code, out, _ = run_cli("check", "--dataset", files["qrels"], "--run", files["a"], "--baseline", files["b"])
    assert code in (0, 1) and "delta -0.3319" in out


@pytest.mark.parametrize(
    "url",
    ["sqlite:///{tmp}/nowhere/s.db", "sqlite:///{tmp}", "sqlite:///{qrels}", "mysql://x", "not a url",
     "postgresql+psycopg://user:secret@127.0.0.1:1/db"],
)  # fmt: skip
def test_a_store_that_cannot_be_opened_is_one_line_without_the_password(files, tmp_path, url):
    url = url.format(tmp=tmp_path, qrels=files["qrels"])
    code, _, err = run_cli("leaderboard", "--store", url, "--dataset", "x")
    if "nowhere" in url:  # a reading command makes no store: it says there is none
        assert code == 2 and err.count("\n") == 1 and "no such file; this command reads an existing store" in err, err
    else:
        assert code == 2 and err.count("\n") == 1 and "cannot be opened" in err and "expected sqlite:///PATH" in err, (
            err
        )
    assert "secret" not in err
    assert files["qrels"].read_text() == QRELS


def test_a_sqlite_store_s_place_that_cannot_hold_it_is_named(files, tmp_path):
    """Was: "unable to open database file" for a folder that does not exist, a file taken for a folder and a
    folder taken for the database alike; each is named now."""
    for path, why in (
        (tmp_path / "nowhere" / "s.sqlite", f"the folder {tmp_path / 'nowhere'} does not exist"),
        (Path(files["qrels"]) / "s.sqlite", f"{files['qrels']} is a file, not a folder"),
        (tmp_path, f"{tmp_path} is a folder, not a database file"),
    ):
        code, _, err = run_cli("push", "--store", f"sqlite:///{path}", "--dataset", files["qrels"], "--run", files["a"])
        assert code == 2 and f"cannot be opened ({why})" in err, err


def test_a_read_only_store_nobody_opened_reads_as_empty_and_read_only(tmp_path):
    """Was: a read-only SQLite file without tables (its owner never opened it) failed as "cannot be opened" (the
    open creates the tables). Now the commands that read it say it holds nothing and whom to ask; ``meta RUN`` too
    (was: "is not a stored run's id"), and on an empty store that may be written, that it holds nothing yet."""
    path = tmp_path / "never-opened.sqlite"
    path.touch()
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    for argv in (
        ("leaderboard", "--store", url),
        ("history", "--store", url, "--dataset", "x"),
        ("meta", "--store", url, "bm25"),
    ):
        code, out, err = run_cli(*argv)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert f"store {url} holds no dataset and is read-only" in err and "ask its owner to load data" in err, err
    assert path.read_bytes() == b""
    writable = f"sqlite:///{tmp_path / 'new.sqlite'}"
    Store(writable)  # made (as push makes it), holding nothing yet
    code, out, err = run_cli("meta", "--store", writable, "0" * 16)
    assert code == 2 and f"run '{'0' * 16}': store {writable} holds no dataset yet: push one first" in err, err


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("dict.json", json.dumps({"q1": {}, "q2": {}, "q3": {}})),
        ("lists.jsonl", '{"query_id": "q1", "retrieved": []}\n'),
        ("rows.parquet", None),
    ],
)
def test_a_run_that_retrieves_nothing_is_refused_in_every_format(files, tmp_path, name, content):
    path = tmp_path / name
    if content is None:
        pq.write_table(pa.table({"query_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string()),
                                 "score": pa.array([], pa.float64())}), path)  # fmt: skip
    else:
        path.write_text(content)
    for engine in ("inprocess", "duckdb", "polars") if content is None else ("inprocess",):
        code, out, err = run_cli("eval", "--dataset", files["qrels"], "--run", path, "--engine", engine)
        assert code == 2 and out == "" and f"{name}: expected at least one retrieved document" in err, err


def test_qrels_that_judge_nothing_relevant_are_an_error_not_zeros(files):
    code, out, err = run_cli("eval", "--dataset", files["qrels"], "--run", files["a"], "--rel-level", "99")
    assert code == 2 and out == "" and "judge no document relevant (label >= 99" in err


def test_a_metric_no_query_has_a_value_of_is_an_error_not_nan(tmp_path):
    dataset = tmp_path / "set.json"
    dataset.write_text(json.dumps([
        {"query_id": "q1", "query": "a", "relevant_docs": ["d1"], "expected_answer": ""},
        {"query_id": "q2", "query": "b", "relevant_docs": ["d5"]},
    ]))  # fmt: skip
    run = tmp_path / "run.csv"
    run.write_text("query_id,doc_id,score,text\nq1,d1,3,hello world\nq2,d5,2,foo\n")
    code, out, err = run_cli("eval", "--dataset", dataset, "--run", run, "-m", "answer_in@5", "-m", "ndcg@5")
    assert code == 2 and out == "" and "answer_in@5: run 'run' has no value for any query" in err
    code, out, err = run_cli("check", "--dataset", dataset, "--run", run, "--targets", "answer_in@5>0.5")
    assert code == 2 and "FAIL" not in out and "has no value for any query" in err


def test_a_paired_test_on_one_query_is_an_error_not_a_pass(files, tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("q1 0 d1 1\nq1 0 d3 2\n")
    code, _, err = run_cli("compare", "--dataset", one, "--baseline", files["a"], "--run", files["b"])
    assert code == 2 and "share 1 query with a value; a paired test needs at least 2" in err
    code, out, err = run_cli("check", "--dataset", one, "--run", files["a"], "--baseline", files["b"])
    assert code == 2 and "PASS" not in out and "a paired test needs at least 2" in err


def test_runs_of_different_queries_are_compared_on_the_shared_ones_with_missing_skip(files, tmp_path):
    short = tmp_path / "short.trec"
    short.write_text("q1 Q0 d1 1 3.0 s\nq2 Q0 d5 1 2 s\n")
    for baseline, run in ((files["a"], short), (short, files["a"])):
        code, out, err = run_cli(
            "compare",
            "--dataset",
            files["qrels"],
            "--baseline",
            baseline,
            "--run",
            run,
            "--missing",
            "skip",
            "--bounds",
        )
        assert code == 0 and "delta" in out and "Traceback" not in err, err
        assert "1 judged queries missing from the run (left out)" in err and "(scored 0)" not in err


def test_a_bootstrap_p_value_is_never_zero_and_resamples_are_checked():
    a, b = np.array([1.0, 0.9, 0.95] * 4), np.array([0.6, 0.6, 0.58] * 4)
    for resamples in (2, 1000):
        p = stats.paired_p_value(a, b, test="bootstrap", n_resamples=resamples)
        assert p >= 1 / (resamples + 1)
    assert stats.paired_p_value(a[:3], b[:3], test="bootstrap", n_resamples=2) == 0.25  # too few: the exact test
    for bad in (0, -3, 2.5):
        with pytest.raises(rm.RagMetricsError, match="n_resamples: expected a whole number of at least 1"):
            stats.paired_p_value(a, b, test="bootstrap", n_resamples=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ("ndcg@10>0.9,ndcg@10>0.5", "ndcg@10 is given twice (0.9 and 0.5)"),
        ('{"ndcg@10": 0.5, "NDCG@10": 0.95}', "ndcg@10 is given twice (0.5 and 0.95)"),
        ('{"ndcg@10": 0.5, "ndcg@10": 0.95}', "ndcg@10 is given twice (0.5 and 0.95)"),
        ("{}", "targets: none given"),
        ("[1, 2]", "expected a JSON object {metric: threshold}, found an array"),
        # a value that is not a number: named by its kind and the file (was a Python repr of its pairs)
        (
            '{"ndcg@10": {"min": 0.5}}',
            "targets.json: target for 'ndcg@10' must be a number in [0, 1]; got a JSON object ('min': ...)",
        ),
        ('{"ndcg@10": [0.5]}', "targets.json: target for 'ndcg@10' must be a number in [0, 1]; got a JSON array"),
    ],
)
def test_targets_given_twice_or_not_at_all_are_refused(files, tmp_path, targets, message):
    if targets.startswith(("{", "[")):
        path = tmp_path / "targets.json"
        path.write_text(targets)
        targets = str(path)
    code, out, err = run_cli("check", "--dataset", files["qrels"], "--run", files["a"], "--targets", targets)
    assert code == 2 and "OK" not in out and message in err, err


def test_the_unjudged_note_reads_what_a_short_run_ranks_not_ten_slots(files, tmp_path):
    judged = tmp_path / "judged.trec"
    judged.write_text("q1 Q0 d1 1 3 j\nq1 Q0 d3 2 2 j\nq2 Q0 d5 1 1 j\nq3 Q0 d6 1 1 j\n")
    code, _, err = run_cli("eval", "--dataset", files["qrels"], "--run", judged)
    assert code == 0 and "unjudged" not in err, err  # every document it ranks is judged: judged@10 is 1.0
    unjudged = tmp_path / "unjudged.trec"
    unjudged.write_text("q1 Q0 x1 1 3 u\nq1 Q0 x2 2 2 u\nq1 Q0 d1 3 1 u\nq2 Q0 d5 1 1 u\nq2 Q0 x3 2 0 u\n")
    code, _, err = run_cli("eval", "--dataset", files["qrels"], "--run", unjudged, "--missing", "skip")
    assert code == 0 and "judged@10 = 0.42: most of the top 10 is unjudged" in err, err
    # with the bounds printed, the worst and best case beside each value say it: no note that points at --bounds
    code, out, err = run_cli("eval", "--dataset", files["qrels"], "--run", unjudged, "--missing", "skip", "--bounds")
    assert code == 0 and ":worst" in out and ":best" in out and "judged@10" not in err, (out, err)
    code, out, err = run_cli(
        "compare", "--dataset", files["qrels"], "--baseline", judged, "--run", unjudged, "--missing", "skip", "--bounds"
    )
    assert code == 0 and "if judged:" in out and "judged@10" not in err, (out, err)


def test_a_target_checked_on_one_query_is_too_few_to_tell_not_a_pass(files, tmp_path):
    from ragmetrics.analysis.targets import check_targets

    one = tmp_path / "one.txt"
    one.write_text("q1 0 d1 1\nq1 0 d3 2\n")
    result = rm.evaluate(load_dataset(one), [load_run(files["a"])], ["ndcg@10"], warn=False)
    (check,) = check_targets(result.runs["a"], {"ndcg@10": 0.1})
    assert check.status == "too few" and not check.passed and check.n == 1
    code, out, err = run_cli("check", "--dataset", one, "--run", files["a"], "--targets", "ndcg@10>0.1")
    assert code == 2 and "PASS" not in out and "checking a target's interval needs at least 2" in err


def test_qrels_given_as_the_run_are_warned_about(files, tmp_path):
    as_run = tmp_path / "qrels.tsv"
    as_run.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, _, d, r in
                      (line.split() for line in QRELS.splitlines())))  # fmt: skip
    code, _, err = run_cli("eval", "--dataset", files["qrels"], "--run", as_run, "-m", "ndcg@10")
    assert code == 0 and "ranks exactly the judged documents" in err and "did you swap --dataset and --run" in err
    code, _, err = run_cli("eval", "--dataset", files["qrels"], "--run", files["a"], "-m", "ndcg@10")
    assert code == 0 and "judged documents" not in err
    # a judge's labels of the run's whole pool judge exactly what it ranks: the corrected estimates do not ask
    known, judged, human, run = (tmp_path / name for name in ("known.txt", "judge.txt", "human.txt", "run.trec"))
    queries = [f"q{i}" for i in range(6)]
    known.write_text("".join(f"{q} 0 {q}-a 1\n" for q in queries))
    judged.write_text("".join(f"{q} 0 {q}-b {i % 2}\n" for i, q in enumerate(queries)))
    human.write_text("".join(f"{q} 0 {q}-b {1 - i % 2}\n" for i, q in enumerate(queries[:3])))
    run.write_text("".join(f"{q} Q0 {q}-{d} {r} {3 - r} t\n" for q in queries for r, d in ((1, "b"), (2, "a"))))
    code, _, err = run_cli("eval", "--dataset", known, "--run", run, "-m", "P@1", "--judge-qrels", judged,
                           "--human-qrels", human)  # fmt: skip
    assert code == 0 and "judged documents" not in err, err
    assert "mix two scales" not in err
    # a judge grading above the dataset's scale is told its gains mix two scales
    judged.write_text("".join(f"{q} 0 {q}-b {2 * (i % 2)}\n" for i, q in enumerate(queries)))
    code, _, err = run_cli("eval", "--dataset", known, "--run", run, "-m", "ndcg@2", "--judge-qrels", judged,
                           "--human-qrels", human)  # fmt: skip
    assert code == 0 and "the judge's grades reach 2, the dataset's 1" in err and "--max-grade 1" in err, err


def test_a_dataset_that_judges_nothing_is_said_so(files, tmp_path):
    empty = tmp_path / "set.json"
    empty.write_text(
        json.dumps([{"query_id": "q1", "query": "a", "relevant_docs": []}, {"query_id": "q2", "query": "b"}])
    )
    code, _, err = run_cli("eval", "--dataset", empty, "--run", files["a"])
    assert code == 2 and "judges no document" in err and "none of its queries" not in err


def test_a_retrieval_that_answers_nothing_keeps_the_run_file_that_was_there(files, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n')
    kept = tmp_path / "run.trec"
    kept.write_text(RUN_A)
    code, _, err = run_cli(
        "retrieve", "--dataset", files["qrels"], "--queries", queries, "--retriever", "http://127.0.0.1:9/search",
        "-o", kept, "--retries", "0", "--timeout", "1", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert code == 1 and "no query was answered with a document" in err and "was not written" in err, err
    assert kept.read_text() == RUN_A


def test_an_evaluation_on_the_command_line_imports_neither_pandas_nor_pyarrow_compute(files):
    """Its checks read the alignment's arrays and its loaders call Arrow's kernels by name
    (``ragmetrics.foundation.kernels``): importing pandas costs a small evaluation about a third of its wall time,
    ``pyarrow.compute`` about a tenth (the CLI benchmark's SciFact ratio)."""
    import subprocess
    import sys

    script = (  # ends as the console script does (ragmetrics.cli.entry: flushed, then os._exit, no teardown)
        "import os, sys; from ragmetrics.cli import main; "
        f"code = main(['eval', '--dataset', {str(files['qrels'])!r}, '--run', {str(files['a'])!r}]); "
        "print(code, [m for m in ('pandas', 'pyarrow.compute') if m in sys.modules], flush=True); os._exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_per_query_values_go_to_a_parquet_path_only(files, tmp_path):
    """Was: ``--per-query-out x.csv`` wrote Parquet under a .csv name."""
    code, out, err = run_cli(
        "eval", "--dataset", files["qrels"], "--run", files["a"], "--per-query-out", tmp_path / "x.csv"
    )
    assert code == 2 and out == "" and "expected a path ending in .parquet" in err and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_named_as_such(encoding):
    """Was: "expected a finite number as score (field 5), found '\\x003\\x00.\\x000\\x00'"."""
    with pytest.raises(rm.ParseError, match=r"UTF-16 without a byte-order mark .*: save the file as UTF-8"):
        load_run(RUN_A.encode(encoding), filename="run.trec")
    assert len(load_run(b"\xff\xfe" + RUN_A.encode("utf-16-le"), filename="run.trec")) == 7  # with its mark: read


def test_the_output_is_written_through_no_planted_link(files: dict[str, Path], tmp_path: Path) -> None:
    """Was: the temporary output had a guessable name (``.<pid>-partial-<name>``) and was opened through whatever
    stood there: a symlink planted under that name had its target overwritten."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    output = tmp_path / "fused.trec"
    planted = tmp_path / f".{os.getpid()}-partial-{output.name}"
    planted.symlink_to(victim)
    code, _, err = run_cli("fuse", "--method", "rrf", "-o", output, files["a"], files["b"])
    assert code == 0, err
    assert victim.read_text() == "keep me\n"
    assert planted.is_symlink()  # left alone
    assert output.is_file() and not output.is_symlink() and output.read_text().startswith("q1 Q0 ")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(output.stat().st_mode) == 0o666 & ~umask  # as a new file is, not a private temporary's
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == [planted.name]


@pytest.mark.parametrize("extra", [["--mode", "llamaindex", "-m", "mrr"], ["-m", "ndcg@10", "-m", "recall@512tok"]])
def test_bounds_that_cannot_be_computed_are_refused_before_anything_is_printed(files, tmp_path, extra):
    """Was: the table's first rows on stdout, then the error: a script read a cut-off table."""
    corpus = tmp_path / "corpus.jsonl"
    docs = {line.split()[2] for line in RUN_A.splitlines() if line.strip()}
    corpus.write_text("".join(json.dumps({"_id": d, "text": f"the text of {d}"}) + "\n" for d in sorted(docs)))
    extra = [*extra, "--corpus", corpus] if any("tok" in str(a) for a in extra) else extra
    code, out, err = run_cli("eval", "--dataset", files["qrels"], "--run", files["a"], "--bounds", *extra)
    assert code == 2 and out == "", out
    assert "bounds over the unjudged documents" in err


def test_dataset_check_refuses_a_run_given_twice(files, tmp_path):
    copy = tmp_path / "copy.trec"
    copy.write_bytes(files["a"].read_bytes())
    code, _, err = run_cli("dataset", "check", files["qrels"], "--run", files["a"], "--run", copy)
    assert code == 2 and f"--run {copy}: the same run as --run {files['a']}; expected each run once" in err


def test_check_says_what_of_the_run_does_not_meet_the_dataset(tmp_path):
    """Was: ``check`` printed its verdict alone where ``eval`` and ``compare`` note the queries the run misses, the
    run's queries the dataset lacks and the duplicate rows dropped: a gate failed or passed on an id mismatch
    without a word."""
    qrels, run = tmp_path / "qr.txt", tmp_path / "bad.run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq3 0 d4 2\n")
    run.write_text("q1 Q0 d1 1 3 b\nQ2 Q0 d3 1 1 b\nQ3 Q0 d4 1 1 b\nq1 Q0 d1 2 1 b\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--dataset", str(qrels), "--run", str(run), "--targets", "ndcg@10>0.1"], out, err) == 1
    assert "FAILED: 1 check(s) failed" in out.getvalue()
    assert (
        "run 'bad': 2 judged queries missing from the run (scored 0); 2 run queries not in the dataset (dropped); "
        "1 duplicate rows dropped"
    ) in err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["history", "--dataset", "qr.txt", "-m", "ndcg@10"],
        ["leaderboard"],
        ["meta", "bm25"],
    ],
)
def test_a_command_that_reads_a_store_makes_none(tmp_path, argv):
    """Was: ``history --store sqlite:///typo.sqlite`` made an empty store at the mistyped path and said the dataset
    was not there."""
    path = tmp_path / "typo.sqlite"
    code, out, err = run_cli(*argv, "--store", f"sqlite:///{path}")
    assert code == 2 and not out and "no such file; this command reads an existing store" in err, err
    assert not path.exists()
