"""The Spark engine, in ``local[2]``: every per-query value, every coverage count and list and the run's health equal
the in-process engine's, for files (``--engine spark``) and for DataFrames (``ragmetrics.spark.evaluate``).

Kept small for CI: one session for the whole test session (the ``spark`` fixture), few shuffle partitions.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragmetrics as rm
import ragmetrics.spark as rms
from ragmetrics.cli import main
from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.partitioned import evaluate_files
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
    write_hard_case,
    write_refused_comparison,
    write_small_case,
)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # PySpark's note on pandas 3


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    return write_hard_case(tmp_path_factory.mktemp("hard-spark"))


def _files(spark, qrels, run, buckets, **conventions):
    result = evaluate_files(str(qrels), str(run), METRICS, engine="spark", buckets=buckets, **conventions)
    return next(iter(result.runs.values()))


def test_hard_case_files_every_bucket_count(spark, hard):
    qrels, run = hard
    expected = reference(qrels, run)
    for buckets in BUCKETS:
        assert assert_same(_files(spark, qrels, run, buckets), expected) == len(METRICS) * len(expected.query_ids)


def test_hard_case_skip_missing(spark, hard):
    qrels, run = hard
    assert_same(_files(spark, qrels, run, 7, missing="skip"), reference(qrels, run, missing="skip"))


def test_scifact_files(spark):
    expected = reference(SCIFACT / "qrels.tsv", SCIFACT / "bm25-stem.trec.gz")
    for buckets in BUCKETS:
        assert_same(_files(spark, SCIFACT / "qrels.tsv", SCIFACT / "bm25-stem.trec.gz", buckets), expected)


@pytest.mark.parametrize(("qrels_file", "run_file"), CONFORMANCE)
def test_conformance_files(spark, qrels_file, run_file):
    expected = reference(TREC / qrels_file, TREC / run_file)
    for buckets in BUCKETS:
        assert_same(_files(spark, TREC / qrels_file, TREC / run_file, buckets), expected)


@pytest.mark.parametrize("case", SMALL_CASES)
def test_small_cases_files(spark, tmp_path, case):
    qrels, run = write_small_case(tmp_path, case)
    expected = reference(qrels, run)
    for buckets in SMALL_BUCKETS:
        assert_same(_files(spark, qrels, run, buckets), expected)


@pytest.mark.parametrize("case", SMALL_ERRORS)
def test_small_errors_files(spark, tmp_path, case):
    qrels, run = write_small_case(tmp_path, case)
    with pytest.raises(RagMetricsError) as in_process:
        evaluate_files(str(qrels), str(run), ["ndcg@10"], engine="inprocess")
    for buckets in SMALL_BUCKETS:
        with pytest.raises(RagMetricsError) as partitioned:
            evaluate_files(str(qrels), str(run), ["ndcg@10"], engine="spark", buckets=buckets)
        assert str(partitioned.value) == str(in_process.value)


def test_a_bad_parquet_cell_is_named_by_the_files_row_when_spark_splits_the_file(spark, tmp_path):
    """Was: the row of the bucket the cell fell in. The file is read in several splits (row groups of a few rows,
    a small split size), the bad cell in a late one."""
    rows = 4_000
    scores = [float("nan") if i == 3_456 else float(i % 7) for i in range(rows)]
    run = tmp_path / "run.parquet"
    table = pa.table({"query_id": [f"q{i // 10}" for i in range(rows)], "doc_id": [f"d{i}" for i in range(rows)]})
    pq.write_table(table.append_column("score", pa.array(scores)), run, row_group_size=100)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{q * 10} 1\n" for q in range(rows // 10)))
    with pytest.raises(RagMetricsError) as in_process:
        evaluate_files(str(qrels), str(run), ["map"], engine="inprocess")
    assert "(row 3457)" in str(in_process.value)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(run.stat().st_size // 6))
    try:
        assert spark.read.parquet(str(run)).rdd.getNumPartitions() > 1
        with pytest.raises(RagMetricsError) as partitioned:
            evaluate_files(str(qrels), str(run), ["map"], engine="spark", buckets=3)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert str(partitioned.value) == str(in_process.value)


def test_a_bad_line_is_one_line_at_the_files_line(spark, tmp_path):
    """Was: a PythonException wrapping the worker's ParseError, 74 lines of traceback and exit 1."""
    import io

    from ragmetrics.cli import main

    qrels, run = tmp_path / "qrels.txt", tmp_path / "bad.trec"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run.write_text("q1 Q0 d1 1 1 t\nq1 Q0 d2 2 oops t\nq2 Q0 d2 1 1 t\n")
    said = f"{run}:2: expected a finite number as score (field 5), found 'oops'"
    with pytest.raises(ParseError) as raised:
        evaluate_files(str(qrels), str(run), ["map"], engine="spark", buckets=2)
    assert str(raised.value) == said and raised.value.line == 2
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(qrels), "--run", str(run), "--engine", "spark", "--buckets", "2", "-m", "map"]
    assert main(argv, out, err) == 2
    assert err.getvalue() == f"ragmetrics: error: {said}\n"
    frame = spark.createDataFrame([("q1", "d1", "high")], ["query_id", "doc_id", "score"])
    with pytest.raises(ParseError, match=r"<run DataFrame>.*expected a finite number.*'high'"):
        rms.evaluate(spark.createDataFrame(load_dataset(qrels).qrels), frame, ["map"], buckets=2)
    with pytest.raises(RagMetricsError, match=r"Spark cannot read it: \[PATH_NOT_FOUND\]"):
        evaluate_files(str(qrels), "file:///nonexistent/run.trec", ["map"], engine="spark")


@pytest.mark.parametrize("case", REFUSED_COMPARISONS)
def test_cli_compare_refuses_what_in_process_compare_refuses(spark, tmp_path, case):
    argv = write_refused_comparison(tmp_path, case)
    *_, said, allow = REFUSED_COMPARISONS[case]
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--engine", "spark", "--buckets", "2"], out, err) == 2
    assert out.getvalue() == "" and said in err.getvalue() and allow in err.getvalue()
    assert main([*argv, "--engine", "spark", "--buckets", "2", allow], io.StringIO(), io.StringIO()) == 0


def test_token_budgets_count_with_the_tokenizer_given(spark, tmp_path):
    qrels, run = write_budget_case(tmp_path)
    expected = rm.evaluate(load_dataset(qrels), load_run(run), ["recall@4tok"], tokenizer="jieba").runs["budget"]
    found = evaluate_files(str(qrels), str(run), ["recall@4tok"], engine="spark", buckets=8, tokenizer="jieba")
    assert found.runs["budget"].tokenizer == "jieba"
    np.testing.assert_array_equal(found.runs["budget"].array("recall@4tok"), expected.array("recall@4tok"))
    assert found.runs["budget"].budget_notes == expected.budget_notes and len(expected.budget_notes) == 1
    with pytest.raises(RagMetricsError, match="the spark engine counts token budgets with one tokenizer"):
        evaluate_files(str(qrels), str(run), ["recall@4tok"], engine="spark")


@pytest.mark.parametrize(("texts", "fmt"), [("cjk", "parquet"), ("english", "csv")])
def test_auto_counts_token_budgets_as_in_process_when_the_scripts_decide_it(spark, tmp_path, texts, fmt):
    qrels, run = write_budget_case(tmp_path, texts, fmt)
    metrics = ["recall@12tok", "ndcg@4tok"]
    expected = rm.evaluate(load_dataset(qrels), load_run(run), metrics).runs["budget"]
    found = evaluate_files(str(qrels), str(run), metrics, engine="spark", buckets=8).runs["budget"]
    assert found.tokenizer == expected.tokenizer == ("jieba" if texts == "cjk" else "whitespace")
    for metric in metrics:
        np.testing.assert_array_equal(found.array(metric), expected.array(metric))
    if fmt != "parquet":
        return
    # a DataFrame run: auto resolved by the same script pass (was: refused)
    frames = [spark.createDataFrame(load_dataset(qrels).qrels), spark.createDataFrame(pq.read_table(run).to_pandas())]
    found = rms.evaluate(*frames, metrics, buckets=2)
    assert found.tokenizer == expected.tokenizer
    for metric in metrics:
        np.testing.assert_array_equal(found.array(metric), expected.array(metric))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_table_files(spark, hard, tmp_path, fmt):
    qrels, run = as_tables(*hard, tmp_path, fmt)
    assert_same(_files(spark, qrels, run, 7), reference(qrels, run))


def test_dataframes_every_bucket_count(spark, hard):
    qrels, run = hard
    expected = reference(qrels, run)
    qrels_df = spark.createDataFrame(load_dataset(qrels).qrels)
    run_df = spark.createDataFrame(load_run(run).frame[["query_id", "doc_id", "score"]])
    for buckets in BUCKETS:
        assert_same(rms.evaluate(qrels_df, run_df, METRICS, buckets=buckets), expected)


def test_dataframes_scifact_with_aliased_columns(spark):
    qrels, run = SCIFACT / "qrels.tsv", SCIFACT / "dense-all-minilm-l6-v2.trec.gz"
    expected = reference(qrels, run)
    qrels_df = spark.createDataFrame(
        load_dataset(qrels).qrels.rename(columns={"query_id": "qid", "relevance": "label"})
    )
    run_df = spark.createDataFrame(
        load_run(run).frame[["query_id", "doc_id", "score"]].rename(columns={"doc_id": "docno"})
    )
    assert_same(rms.evaluate(qrels_df, run_df, METRICS, buckets=7), expected)


def test_per_query_rows_written_by_the_executors(spark, hard, tmp_path):
    qrels, run = hard
    expected = reference(qrels, run)
    out = tmp_path / "per-query.parquet"
    result = evaluate_files(str(qrels), str(run), ["ndcg@10"], engine="spark", buckets=4, per_query_out=str(out))
    found = next(iter(result.runs.values()))
    assert found.query_ids is None
    np.testing.assert_array_equal(found.array("ndcg@10"), expected.value("ndcg@10"))
    assert found.coverage == expected.coverage
    written = pq.read_table(out).to_pandas().set_index("query_id").loc[list(expected.query_ids)]
    np.testing.assert_array_equal(written["ndcg@10"].to_numpy(), expected.value("ndcg@10"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(pq.read_table(out)) == expected.n_queries


def _bare(*argv: str, **env: str):
    """``python -m ragmetrics`` with nothing of this shell's environment but a bare PATH (a venv not activated)."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    clean = {"PATH": "/usr/bin:/bin", "PYTHONPATH": root, **env}
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics", *argv], env=clean, cwd=root, capture_output=True, text=True, timeout=600
    )


def test_cli_from_a_bare_path_runs_its_workers_on_its_own_python(spark, tmp_path):
    """Was: the workers ran ``python3`` from PATH, which lacks ragmetrics: exit 1 and a 169-line traceback."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n")
    run.write_text("q1 Q0 dX 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq2 Q0 d3 1 1.0 r\n")
    args = ("eval", "--engine", "spark", "--dataset", str(qrels), "--run", str(run), "-m", "mrr")
    done = _bare(*args)
    assert done.returncode == 0 and "mrr                   \tall\t0.7500" in done.stdout, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    # a worker Python named explicitly that cannot import what ragmetrics needs: one line that says so
    import subprocess

    if subprocess.run(["/usr/bin/python3", "-c", "import numpy"], capture_output=True).returncode == 0:
        return  # this machine's system Python has numpy: nothing to show here
    done = _bare(*args, PYSPARK_PYTHON="/usr/bin/python3")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith("ragmetrics: error: Spark's workers run /usr/bin/python3"), last
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_the_cluster_path_reads_parquet_folders_spark_wrote_to_storage_by_uri(spark, hard, tmp_path):
    """What a team does on a cluster: the qrels and the run are Parquet folders in storage (written by Spark itself,
    part files and all, named by a URI the executors resolve: ``file://`` here, ``s3a://`` or ``hdfs://`` there),
    read by Spark alone. As files (``--engine spark``, which never opens them in this process) and as DataFrames
    read from the same folders, every per-query value equals the in-process engine's on the original files."""
    qrels_file, run_file = hard
    expected = reference(qrels_file, run_file)
    frames = {"qrels": load_dataset(qrels_file).qrels, "run": load_run(run_file).frame[["query_id", "doc_id", "score"]]}
    stored = {}
    for name, frame in frames.items():
        folder = f"{(tmp_path / name).as_uri()}.parquet"
        spark.createDataFrame(frame).repartition(3).write.parquet(folder)
        stored[name] = folder
    assert len(list((tmp_path / "run.parquet").glob("part-*.parquet"))) == 3  # a folder of part files, as Spark writes
    from_files = next(
        iter(evaluate_files(stored["qrels"], stored["run"], METRICS, engine="spark", buckets=7).runs.values())
    )
    from_frames = rms.evaluate(
        spark.read.parquet(stored["qrels"]), spark.read.parquet(stored["run"]), METRICS, buckets=5
    )
    ids = list(expected.query_ids)
    for found in (from_files, from_frames):  # the part files hold the rows in another order: compared query by query
        assert sorted(found.query_ids) == sorted(ids) and found.coverage.summary() == expected.coverage.summary()
        at = {q: i for i, q in enumerate(found.query_ids)}
        order = [at[q] for q in ids]
        for metric in METRICS:
            np.testing.assert_array_equal(found.array(metric)[order], expected.value(metric), err_msg=metric)
