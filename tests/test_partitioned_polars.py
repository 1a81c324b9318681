"""``ragmetrics.polars.evaluate`` over Polars frames a user already has: every per-query value, every coverage count
and list and the run's health equal the in-process engine's, for DataFrames (split in memory) and LazyFrames
(written hash-partitioned by Polars' streaming engine), for 1, 2, 7 and 16 buckets. The files (``--engine polars``)
are in tests/test_partitioned.py and tests/test_merged_stats.py with the other engines."""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragmetrics as rm
import ragmetrics.polars as rmp
from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Run
from ragmetrics.io import load_dataset, load_run
from ragmetrics.partitioned import evaluate_files
from tests.partitioned_cases import (
    BUCKETS,
    CONFORMANCE,
    METRICS,
    SCIFACT,
    SMALL_BUCKETS,
    SMALL_CASES,
    TREC,
    as_tables,
    assert_same,
    reference,
    write_budget_case,
    write_hard_case,
    write_small_case,
)


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    return write_hard_case(tmp_path_factory.mktemp("hard-polars"))


def _frames(qrels, run):
    """The two inputs as the loaders read them, as Polars DataFrames."""
    qrels_frame = pl.from_pandas(load_dataset(qrels).qrels)
    run_frame = pl.from_pandas(load_run(run).frame[["query_id", "doc_id", "score"]])
    return qrels_frame, run_frame


@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
def test_hard_case_every_bucket_count(hard, lazy):
    qrels, run = hard
    expected = reference(qrels, run)
    qrels_frame, run_frame = _frames(qrels, run)
    if lazy:
        qrels_frame, run_frame = qrels_frame.lazy(), run_frame.lazy()
    for buckets in BUCKETS:
        found = rmp.evaluate(qrels_frame, run_frame, METRICS, buckets=buckets)
        assert assert_same(found, expected) == len(METRICS) * len(expected.query_ids)


@pytest.mark.parametrize(("qrels_file", "run_file"), CONFORMANCE)
def test_conformance_frames(qrels_file, run_file):
    expected = reference(TREC / qrels_file, TREC / run_file)
    qrels_frame, run_frame = _frames(TREC / qrels_file, TREC / run_file)
    for buckets in BUCKETS:
        assert_same(rmp.evaluate(qrels_frame.lazy(), run_frame, METRICS, buckets=buckets), expected)


def test_scifact_with_aliased_columns_and_the_default_buckets():
    qrels, run = SCIFACT / "qrels.tsv", SCIFACT / "dense-all-minilm-l6-v2.trec.gz"
    qrels_frame, run_frame = _frames(qrels, run)
    qrels_frame = qrels_frame.rename({"query_id": "qid", "relevance": "label"})
    run_frame = run_frame.rename({"doc_id": "docno"})
    assert_same(rmp.evaluate(qrels_frame, run_frame, METRICS), reference(qrels, run))


def test_lazy_scans_of_parquet_files_under_other_conventions(hard, tmp_path):
    """LazyFrames as a user has them (a scan of files), out of core; conventions as the in-process engine's."""
    qrels, run = as_tables(*hard, tmp_path, "parquet")
    for conventions in ({"missing": "skip"}, {"rel_level": 2}):
        found = rmp.evaluate(pl.scan_parquet(qrels), pl.scan_parquet(run), METRICS, buckets=7, **conventions)
        assert_same(found, reference(qrels, run, **conventions))


def test_integer_and_float_query_ids_meet_text_ones(tmp_path):
    """A query id typed as a number on one side and as text on the other lands in the same bucket."""
    qrels = pl.DataFrame({"qid": [1, 1, 2, 3], "docno": ["a", "b", "c", "d"], "rel": [1, 0, 2, 1]})
    run = pl.DataFrame({"query_id": ["1", "1", " 2", "3"], "doc_id": ["b", "a", "c", "x"], "score": [2.0, 1.0, 1, 1]})
    qrels_file, run_file = tmp_path / "qrels.csv", tmp_path / "run.csv"
    qrels.write_csv(qrels_file)
    run.write_csv(run_file)
    expected = reference(qrels_file, run_file)
    for as_float in (False, True):
        typed = qrels.with_columns(pl.col("qid").cast(pl.Float64)) if as_float else qrels
        for buckets in BUCKETS:
            assert_same(rmp.evaluate(typed, run, METRICS, buckets=buckets), expected)


@pytest.mark.parametrize(
    "kind", [pa.float64(), pa.float32(), pa.float16(), pa.decimal128(6, 2)], ids=["f64", "f32", "f16", "decimal"]
)
def test_number_ids_read_alike_in_every_entry_point(tmp_path, kind):
    """Integer ids typed as floats or decimals (a CSV round trip, a column with a gap) meet text qrels the same way
    in a pandas frame, an Arrow table, a dict, a Parquet file and on the Polars engine (``3.0`` is read ``3``),
    while the text ``3.0`` in a file stays ``3.0``, as in trec_eval."""
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("".join(f"q{q} 0 {d} {(q + d) % 2}\n" for q in (1, 2) for d in (1, 2, 3)))
    ids = [3.0, 1.0, 2.0, 1.0, 2.5, 3.0]
    table = pa.table(
        {
            "query_id": ["q1", "q1", "q1", "q2", "q2", "q2"],
            "doc_id": pa.array([decimal.Decimal(str(v)) if pa.types.is_decimal(kind) else v for v in ids], kind),
            "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
        }
    )
    pq.write_table(table, tmp_path / "run.parquet")
    dataset = load_dataset(qrels_file)
    expected = rm.evaluate(dataset, load_run(tmp_path / "run.parquet"), METRICS, warn=False).per_query("run")
    assert expected["ndcg@10"].gt(0).all()
    frame = table.to_pandas()
    scores = {q: dict(zip(g["doc_id"], g["score"])) for q, g in frame.groupby("query_id")}
    for run in (Run.from_frame(frame), Run.from_table(table), Run.from_dict(scores)):
        found = rm.evaluate(dataset, run, METRICS).per_query("run")
        pd.testing.assert_frame_equal(found, expected)
    on_polars = rmp.evaluate(pl.from_pandas(dataset.qrels), pl.from_arrow(table), METRICS)
    assert_same(on_polars, reference(qrels_file, tmp_path / "run.parquet"))
    (tmp_path / "run.tsv").write_text("query_id\tdoc_id\tscore\nq1\t3.0\t1\nq2\t1.0\t1\n")
    with pytest.warns(RagMetricsWarning, match=r"do not meet the qrels"):
        rm.evaluate(dataset, load_run(tmp_path / "run.tsv"), METRICS)


@pytest.mark.parametrize("case", [name for name in SMALL_CASES if "parquet" in name])
@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
def test_number_query_ids_are_keyed_as_the_loader_reads_them(tmp_path, case, lazy):
    """Float and decimal query ids (1e-05, 5.00) meet the loader's text of them ('1e-05', '5') on the other side."""
    qrels, run = write_small_case(tmp_path, case)
    loaded = _frames(qrels, run)
    frames = [
        pl.read_parquet(path) if path.suffix == ".parquet" else frame for path, frame in zip((qrels, run), loaded)
    ]
    if lazy:
        frames = [f.lazy() for f in frames]
    for buckets in SMALL_BUCKETS:
        assert_same(rmp.evaluate(*frames, METRICS, buckets=buckets), reference(qrels, run))


def test_token_budgets_count_with_the_tokenizer_given(tmp_path):
    qrels, run = write_budget_case(tmp_path)
    qrels_frame, run_frame = pl.from_pandas(load_dataset(qrels).qrels), pl.read_parquet(run)
    expected = rm.evaluate(load_dataset(qrels), load_run(run), ["recall@4tok"], tokenizer="jieba").runs["budget"]
    for buckets in SMALL_BUCKETS:
        found = rmp.evaluate(qrels_frame, run_frame.lazy(), ["recall@4tok"], buckets=buckets, tokenizer="jieba")
        assert found.tokenizer == "jieba"
        np.testing.assert_array_equal(found.array("recall@4tok"), expected.array("recall@4tok"))
    with pytest.raises(RagMetricsError, match=r"the polars engine counts .* several scripts \(some mostly CJK"):
        rmp.evaluate(qrels_frame, run_frame, ["recall@4tok"])


@pytest.mark.parametrize("texts", ["bilingual", "english"])
def test_auto_counts_token_budgets_as_in_process_when_the_scripts_decide_it(tmp_path, texts):
    """Was: auto refused with a token budget on frames, where the CLI's engines resolve it by a script pass (the
    same one here: :func:`ragmetrics.partitioned.scripts.script_sides` of the run frame's texts)."""
    qrels, run = write_budget_case(tmp_path, texts)
    metrics = ["recall@12tok", "ndcg@4tok"]
    expected = rm.evaluate(load_dataset(qrels), load_run(run), metrics).runs["budget"]
    other = "whitespace" if expected.tokenizer == "jieba" else "jieba"
    otherwise = rm.evaluate(load_dataset(qrels), load_run(run), metrics, tokenizer=other).runs["budget"]
    assert not np.array_equal(otherwise.array("recall@12tok"), expected.array("recall@12tok"))
    qrels_frame, run_frame = pl.from_pandas(load_dataset(qrels).qrels), pl.read_parquet(run)
    for frame in (run_frame, run_frame.lazy()):
        found = rmp.evaluate(qrels_frame, frame, metrics, buckets=8)
        assert found.tokenizer == expected.tokenizer == ("jieba" if texts == "bilingual" else "whitespace")
        for metric in metrics:
            np.testing.assert_array_equal(found.array(metric), expected.array(metric))


def test_per_query_values_written_as_the_buckets_are_done(hard, tmp_path):
    qrels, run = hard
    expected = reference(qrels, run)
    out = tmp_path / "per-query.parquet"
    found = rmp.evaluate(*(f.lazy() for f in _frames(qrels, run)), ["ndcg@10"], buckets=4, per_query_out=str(out))
    assert found.query_ids is None
    np.testing.assert_array_equal(found.array("ndcg@10"), expected.value("ndcg@10"))
    assert found.coverage == expected.coverage
    written = pq.read_table(out).to_pandas().set_index("query_id").loc[list(expected.query_ids)]
    np.testing.assert_array_equal(written["ndcg@10"].to_numpy(), expected.value("ndcg@10"))


def test_the_same_sums_and_fingerprints_as_the_files_engines(hard):
    qrels, run = hard
    files = evaluate_files(str(qrels), str(run), METRICS, engine="duckdb", buckets=3, resamples=200)
    expected = next(iter(files.runs.values())).sums
    for lazy in (False, True):
        qrels_frame, run_frame = _frames(qrels, run)
        if lazy:
            qrels_frame, run_frame = qrels_frame.lazy(), run_frame.lazy()
        found = rmp.evaluate(qrels_frame, run_frame, METRICS, buckets=5, resamples=200).sums
        assert found is not None and expected is not None
        np.testing.assert_array_equal(found.table, expected.table)
        assert [found.fingerprint(i) for i in range(len(METRICS))] == [
            expected.fingerprint(i) for i in range(len(METRICS))
        ]


# --- bad input: a clear error, no traceback ---------------------------------------------------------------------


def test_a_missing_column_is_named_with_its_aliases(hard):
    qrels_frame, run_frame = _frames(*hard)
    with pytest.raises(
        RagMetricsError, match=r"the run frame has no column doc_id \(or docid/docno/.*'query_id', 'score'"
    ):
        rmp.evaluate(qrels_frame, run_frame.drop("doc_id"), ["ndcg@10"])
    with pytest.raises(RagMetricsError, match=r"the qrels frame has no column relevance \(or label/rel/grade\)"):
        rmp.evaluate(qrels_frame.drop("relevance").lazy(), run_frame, ["ndcg@10"])
    with pytest.raises(RagMetricsError, match=r"the qrels frame has no column query_id \(or qid/query/topic"):
        rmp.evaluate(qrels_frame.drop("query_id"), run_frame, ["ndcg@10"])


def test_other_bad_frames_are_refused_clearly(hard):
    qrels_frame, run_frame = _frames(*hard)
    with pytest.raises(RagMetricsError, match="names its queries by their text"):
        rmp.evaluate(qrels_frame, run_frame.rename({"query_id": "query"}), ["ndcg@10"])
    with pytest.raises(RagMetricsError, match="expected a Polars DataFrame or LazyFrame, got DataFrame"):
        rmp.evaluate(qrels_frame.to_pandas(), run_frame, ["ndcg@10"])
    with pytest.raises(RagMetricsError, match="a column 'position', a name the Polars engine uses"):
        rmp.evaluate(qrels_frame, run_frame.with_columns(position=1), ["ndcg@10"])
    with pytest.raises(RagMetricsError, match="buckets must be an int >= 1"):
        rmp.evaluate(qrels_frame, run_frame, ["ndcg@10"], buckets=0)
    # a bad cell: the loader's error, said of the frame
    bad = run_frame.with_columns(pl.col("score").cast(pl.String)).with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(pl.lit("high")).otherwise(pl.col("score")).alias("score")
    )
    with pytest.raises(ParseError, match=r"<run frame>.*expected a finite number.*'high'"):
        rmp.evaluate(qrels_frame, bad, ["ndcg@10"], buckets=3)
