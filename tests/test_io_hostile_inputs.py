"""Inputs a loader must refuse by name, file and line rather than read as something else, on every engine: a JSON
object naming a key twice, a non-text id in a JSONL run, a label beyond exact floats, a zip of two BEIR folders, a
gzip stream or a Parquet file cut short, a per-query result that is infinite."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmetrics.analysis.per_query import read_per_query
from ragmetrics.cli import main
from ragmetrics.foundation.errors import ParseError
from ragmetrics.io import load_dataset, load_run

QRELS = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\nq2 0 d4 0\n"
RUN = "q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\nq2 Q0 d3 1 3 r\nq2 Q0 d4 2 2 r\n"
ENGINES = ("inprocess", "stream", "duckdb", "polars")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("name", "text", "loader"),
    [
        ("labels.json", '{"q1": {"d1": 1, "d2": 2, "d1": 0}, "q2": {"d3": 1}}', load_dataset),
        ("run.json", '{"q1": {"d1": 3, "d1": 0.1}}', load_run),
        ("set.jsonl", '{"query_id": "q1", "query": "a b", "relevant_docs": {"d1": 1, "d1": 0}}\n', load_dataset),
        ("set.json", '[{"query_id": "q1", "query": "a b", "relevant_docs": {"d1": 1, "d1": 0}}]', load_dataset),
    ],
)
def test_a_key_named_twice_in_one_json_object_is_refused(tmp_path: Path, name: str, text: str, loader) -> None:
    """Was: Python's json kept the last value (d1 graded 0, or scored 0.1) without a word, where a repeated query
    or a repeated TREC row is refused."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ParseError, match=r":1: expected each key once in a JSON object, found 'd1' again"):
        loader(str(path))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"query_id": "q1", "doc_id": {"a": 1}, "score": 1}', "\"doc_id\" as a text or a number, found {'a': 1}"),
        ('{"query_id": ["q1"], "doc_id": "d1", "score": 1}', "\"query_id\" as a text or a number, found ['q1']"),
        ('{"query_id": "q1", "doc_id": true, "score": 1}', '"doc_id" as a text or a number, found True'),
        ('{"query_id": "q1", "doc_id": "d2", "score": 1, "text": 123}', '"text" as a text, found 123'),
        ('{"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": ["x"]}]}', '"text" of retrieved item 1'),
        ('{"query_id": "q1", "retrieved": [{"doc_id": "d1", "source_doc": {"d": 1}}]}', '"source_doc" of retrieved'),
    ],
)
def test_a_jsonl_run_refuses_ids_and_texts_that_are_not_text(tmp_path: Path, line: str, expected: str) -> None:
    """Was: a flat row's ``{"a": 1}`` was stored as the id "{'a': 1}", ``true`` as "True", a list of texts as its
    Python text; a nested item's text and source likewise."""
    nested = "retrieved" in line
    first = '{"query_id": "q0", "retrieved": ["d1"]}' if nested else '{"query_id": "q0", "doc_id": "d1", "score": 1}'
    path = tmp_path / "run.jsonl"
    path.write_text(first + "\n" + line + "\n")
    with pytest.raises(ParseError, match=r"run\.jsonl:2: expected ") as caught:
        load_run(str(path))
    assert expected in str(caught.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_label_beyond_exact_floats_is_refused_in_every_file(tmp_path: Path, engine: str) -> None:
    """Was: TREC qrels and an int64 Parquet column took 2^62 (nDCG 0.8801), where CSV and JSON refused it."""
    big = 2**62
    trec = tmp_path / "big.qrels"
    trec.write_text(QRELS.replace("q2 0 d4 0", f"q2 0 d4 {big}"))
    table = pa.table({"query_id": ["q1", "q2"], "doc_id": ["d1", "d3"], "relevance": pa.array([1, big], pa.int64())})
    parquet = tmp_path / "big.parquet"
    pq.write_table(table, parquet)
    run = tmp_path / "run.trec"
    run.write_text(RUN)
    for dataset, where in ((trec, "big.qrels:4: expected a relevance label of at most"), (parquet, "big.parquet")):
        code, out, err = _cli("eval", "--dataset", str(dataset), "--run", str(run), "--engine", engine)
        assert code == 2 and not out and where in err and "9,007,199,254,740,992" in err, err
    negative = tmp_path / "negative.qrels"
    negative.write_text(QRELS.replace("q2 0 d4 0", f"q2 0 d4 -{big}"))
    with pytest.raises(ParseError, match="at most 9,007,199,254,740,992"):
        load_dataset(str(negative))
    one_more = tmp_path / "one-more.csv"  # 2^53 + 1 reads as 2^53 once a float: read exactly (was taken)
    one_more.write_text(f"query_id,doc_id,relevance\nq1,d1,1\nq2,d3,{2**53 + 1}\n")
    with pytest.raises(ParseError, match=r"one-more\.csv:3: expected an integer of at most 9,007,199,254,740,992"):
        load_dataset(str(one_more))
    exact = tmp_path / "exact.qrels"
    exact.write_text(QRELS.replace("q2 0 d4 0", f"q2 0 d4 {2**53}"))
    assert max(load_dataset(str(exact)).qrels_table.column("relevance").to_pylist()) == 2**53  # the limit is exact


def test_a_zip_of_two_beir_folders_is_refused_naming_both(tmp_path: Path) -> None:
    """Was: the folder was picked by the hash order of a set, so one command gave nDCG 0.6956 or 0.6309 from one
    run to the next."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for folder, qrels in (("a", "q1\td1\t1\nq2\td3\t1\n"), ("b", "q1\td5\t1\n")):
            archive.writestr(f"{folder}/corpus.jsonl", json.dumps({"_id": "d1", "text": "x"}) + "\n")
            archive.writestr(f"{folder}/queries.jsonl", json.dumps({"_id": "q1", "text": "y"}) + "\n")
            archive.writestr(f"{folder}/qrels/test.tsv", "query-id\tcorpus-id\tscore\n" + qrels)
    path = tmp_path / "two.zip"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(ParseError, match=r"expected a zip archive of one BEIR folder .*found two: 'a/' and 'b/'"):
        load_dataset(str(path))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gzip_or_parquet_file_cut_short_is_refused_by_name_on_every_engine(tmp_path: Path, engine: str) -> None:
    """Was: the stream, DuckDB and Polars engines ended in ``EOFError``, ``ArrowInvalid`` or DuckDB's error, or
    said "Not a gzipped file (b'ju')" without the file's name."""
    qrels = tmp_path / "q.qrels"
    qrels.write_text(QRELS)
    packed = gzip.compress(RUN.encode() * 2000)
    cut, junk, garbled = tmp_path / "cut.trec.gz", tmp_path / "junk.trec.gz", tmp_path / "garbled.trec.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    junk.write_bytes(gzip.compress(RUN.encode()) + b"junkjunk")
    garbled.write_bytes(b"\x1f\x8b" + b"garbage" * 20)
    parquet = tmp_path / "cut.parquet"
    parquet.write_bytes(b"PAR1" + b"x" * 100)
    for path in (cut, junk, garbled, parquet):
        code, out, err = _cli("eval", "--dataset", str(qrels), "--run", str(path), "--engine", engine)
        assert code == 2 and not out and err.startswith(f"ragmetrics: error: {path}: expected "), (engine, err)
        assert "Traceback" not in err


def test_an_infinite_per_query_value_is_refused(tmp_path: Path) -> None:
    """Was: map and nDCG have no ceiling of 1, and inf passed ``values <= inf``."""
    qrels = tmp_path / "q.qrels"
    qrels.write_text(QRELS)
    path = tmp_path / "results.parquet"
    pd.DataFrame({"query_id": ["q1", "q2"], "map": [0.5, np.inf]}).to_parquet(path)
    with pytest.raises(ParseError, match=r"finite values of 0 or more .* inf in row 2"):
        read_per_query(path, load_dataset(str(qrels)), name="results")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_byte_order_mark_inside_a_file_is_refused_at_its_line(tmp_path: Path, engine: str) -> None:
    """Was: two runs joined with cat kept the second's mark in its first query id (``\\ufeffq2``), which then met no
    query of the dataset: only a note said "1 run queries not in the dataset (dropped)"."""
    qrels = tmp_path / "q.qrels"
    qrels.write_text(QRELS)
    joined = tmp_path / "joined.trec"
    joined.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 3 r\n" + b"\xef\xbb\xbfq2 Q0 d3 1 3 r\n")
    code, out, err = _cli("eval", "--dataset", str(qrels), "--run", str(joined), "--engine", engine)
    assert code == 2 and not out and f"{joined}:2: expected a query_id" in err and "byte-order mark (U+FEFF)" in err
    first = tmp_path / "first.trec"
    first.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 3 r\n")  # at the file's start the mark is the file's own
    assert _cli("eval", "--dataset", str(qrels), "--run", str(first), "--engine", engine)[0] == 0


def test_bytes_that_are_not_text_are_said_so_not_shown(tmp_path: Path) -> None:
    """Was: random bytes named ``.tsv`` and given as a dataset were refused with 120 characters of mojibake as what
    was found (the first line decoded with replacement characters); a run of the same bytes said "expected UTF-8
    text, found byte 0x..", as this does now."""
    path = tmp_path / "binary_qrels.tsv"
    path.write_bytes(bytes(np.random.default_rng(3).integers(128, 256, 2000, dtype=np.uint8)))
    with pytest.raises(ParseError, match=r"binary_qrels\.tsv:1: expected UTF-8 text, found byte 0x[0-9a-f]{2}$"):
        load_dataset(str(path))


def test_a_beir_zip_made_on_macos_is_one_folder(tmp_path: Path) -> None:
    """Finder's zips hold ``__MACOSX/`` and ``._`` resource forks beside the folder: they are no second dataset."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("scifact/corpus.jsonl", json.dumps({"_id": "d1", "text": "x"}) + "\n")
        archive.writestr("scifact/queries.jsonl", json.dumps({"_id": "q1", "text": "y"}) + "\n")
        archive.writestr("scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
        archive.writestr("__MACOSX/scifact/qrels/._test.tsv", b"\x00\x05\x16\x07 resource fork")
        archive.writestr("__MACOSX/scifact/._corpus.jsonl", b"\x00\x05\x16\x07")
        archive.writestr("scifact/._queries.jsonl", b"\x00\x05\x16\x07")
    path = tmp_path / "mac.zip"
    path.write_bytes(buffer.getvalue())
    assert load_dataset(str(path)).qrels_table.num_rows == 1
