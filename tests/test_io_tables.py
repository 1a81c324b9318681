"""CSV / TSV / Parquet tables with column aliases."""

from __future__ import annotations

import gzip
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragmetrics as rm
from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.model import query_id_from_text
from ragmetrics.io import load_dataset, load_qrels, load_run


def triples(run) -> list[tuple]:
    f = run.frame
    return list(zip(f["query_id"], f["doc_id"], f["score"]))


def test_csv_run_with_aliases_quotes_and_crlf(tmp_path: Path) -> None:
    data = (
        b"\xef\xbb\xbfQID,DocNo,Score,Chunk_Text,Parent-Doc\r\n"
        b'q1,d#1,1.5,"text, with comma",D1\r\n'
        b"\r\n"
        b'q1,d2,0.5,"multi\r\nline ""quoted""",\r\n'
    )
    path = tmp_path / "hybrid.csv"
    path.write_bytes(data)
    for run in (
        load_run(path),
        load_run(data, filename="hybrid.csv"),
        load_run(gzip.compress(data), filename="hybrid.csv.gz"),
    ):
        assert run.name == "hybrid"
        assert triples(run) == [("q1", "d#1", 1.5), ("q1", "d2", 0.5)]
        assert list(run.frame["text"]) == ["text, with comma", 'multi\r\nline "quoted"']
        assert list(run.frame["source_doc"].fillna("-")) == ["D1", "-"]


def test_tsv_run_rank_only_and_ids_kept_as_text() -> None:
    data = b"topic\tdocid\trank\n001\t0042\t2\n001\t0007\t1\n"
    run = load_run(data, filename="r.tsv")
    assert not run.has_scores
    assert list(run.frame["query_id"]) == ["001", "001"]
    assert list(run.frame["doc_id"]) == ["0042", "0007"]
    assert list(run.frame["score"]) == [-2.0, -1.0]


def test_csv_run_without_score_keeps_file_order() -> None:
    run = load_run(b"query_id,doc_id\nq1,b\nq1,a\n", filename="r.csv")
    assert list(run.frame["score"]) == [0.0, -1.0] and not run.has_scores


def test_csv_run_query_text_column_is_hashed_like_the_evalset() -> None:
    run = load_run(b"query,doc_id,score\nWhat is BM25?,d1,1\n", filename="r.csv")
    assert list(run.frame["query_id"]) == [query_id_from_text("What is BM25?")]


def test_chunk_id_next_to_doc_id_becomes_source_doc() -> None:
    run = load_run(b"qid,chunk_id,doc_id,score\nq1,D1#0,D1,1\n", filename="r.csv")
    assert list(run.frame["doc_id"]) == ["D1#0"] and list(run.frame["source_doc"]) == ["D1"]


@pytest.mark.parametrize(
    ("data", "line", "pattern"),
    [
        (b"qid,docid,score\nq1,d1,1.5\nq1,d2,high\n", 3, r"a finite number in column 'score', found 'high'"),
        (b"qid,docid,score\nq1,d1,1.5\n\nq1,d2,nan\n", 4, r"a finite number in column 'score', found 'nan'"),
        (b"qid,docid,score\nq1,d1,1.5\nq1,,0.5\n", 3, r"a non-empty id in column 'docid'"),
        (b"qid,docid,score\nq1,d1,1.5\nq1,d2\n", 3, r"3 fields like the header, found 2"),
        (b'qid,docid,score,text\nq1,d1,1,"a\nb"\nq1,d2,x,t\n', 4, r"a finite number in column 'score'"),
        (b"qid,docid,score\r\nq1,d1,1.5\r\n\r\nq1,d2,-inf\r\n", 4, r"a finite number"),
        (b"qid,docid,score\nq1,d1,1.5\n\xff,d2,1\n", 3, r"UTF-8 text"),
        (b"qid,docid,rank\nq1,d1,1\nq1,d2,1.5\n", 3, r"an integer in column 'rank'"),
    ],
)
def test_csv_run_errors(data: bytes, line: int, pattern: str) -> None:
    with pytest.raises(ParseError, match=rf"bad\.csv:{line}: expected {pattern}"):
        load_run(data, filename="bad.csv")


def test_missing_columns_lists_missing_and_found() -> None:
    with pytest.raises(
        ParseError,
        match=r"bad\.csv:1: expected column\(s\) doc_id .*missing \['doc_id'\]; columns found: \['qid', 'passage', 'score'\]",
    ):
        load_run(b"qid,passage,score\nq1,p,1\n", filename="bad.csv")
    with pytest.raises(ParseError, match=r"bad\.tsv:1: expected column\(s\) relevance .*found: \['qid', 'docid'\]"):
        load_dataset(b"qid\tdocid\nq1\td1\n", filename="bad.tsv", format="tsv")


def test_qrels_tables_csv_and_beir_tsv() -> None:
    data = b"Query_ID,doc,Grade,query_text,category\nq1,d1,2,What?,fact\nq1,d2,0,What?,fact\nq2,d3,1,Why?,why\n"
    dataset = load_dataset(data, filename="labels.csv")
    assert list(dataset.qrels.itertuples(index=False, name=None)) == [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1)]
    assert list(dataset.queries["query"]) == ["What?", "Why?"]
    assert list(dataset.queries["category"]) == ["fact", "why"]
    beir = load_qrels(b"query-id\tcorpus-id\tscore\nq1\td1\t1\n", filename="test.tsv")
    assert list(beir.itertuples(index=False, name=None)) == [("q1", "d1", 1)]


@pytest.mark.parametrize(
    ("data", "line", "pattern"),
    [
        (b"qid,docid,label\nq1,d1,1\nq1,d2,2.5\n", 3, r"an integer in column 'label', found '2\.5'"),
        (b"qid,docid,label\nq1,d1,1\n\nq1,d1,0\n", 4, r"one label per query and document, .*first on line 2"),
    ],
)
def test_qrels_table_errors(data: bytes, line: int, pattern: str) -> None:
    with pytest.raises(ParseError, match=rf"bad\.csv:{line}: expected {pattern}"):
        load_qrels(data, filename="bad.csv")


def test_a_label_is_an_integer_written_as_one_in_every_format() -> None:
    """One rule (docs/formats.md): ``2`` is read as 2 by every qrels reader, ``2.0`` (and ``"2"`` in JSON) refused
    with the file and the line; the tables used to take ``2.0``, the readers of JSON ``2.0`` too."""
    sink = io.BytesIO()
    pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [2.0]}).to_parquet(sink)
    cases = {
        "q.qrels": (b"q1 0 d1 {}\n", r"q\.qrels:1: expected an integer relevance label \(field 4\), found '2\.0'"),
        "q.tsv": (b"query_id\tdoc_id\trelevance\nq1\td1\t{}\n", r"q\.tsv:2: expected an integer in column 'relevance'"),
        "q.csv": (b"query_id,doc_id,relevance\nq1,d1,{}\n", r"q\.csv:2: expected an integer in column 'relevance'"),
        "set.json": (b'[{"query_id": "q1", "query": "q", "relevant_docs": {"d1": {}}}]', r"set\.json:1: .*found 2\.0"),
        "ranx.json": (b'{"q1": {"d1": {}}}', r"ranx\.json:1: expected an integer label .*found 2\.0"),
    }
    for name, (template, refused) in cases.items():
        assert load_qrels(template.replace(b"{}", b"2"), filename=name)["relevance"].tolist() == [2], name
        with pytest.raises(ParseError, match=refused + ".*"):
            load_qrels(template.replace(b"{}", b"2.0"), filename=name)
    with pytest.raises(ParseError, match=r"set\.json:1: expected an integer grade for 'd1'.*found '2'"):
        load_qrels(b'[{"query": "q", "relevant_docs": {"d1": "2"}}]', filename="set.json")
    with pytest.raises(
        ParseError, match=r"q\.parquet: expected an integer in column 'relevance', found 2\.0 \(row 1\)"
    ):
        load_qrels(sink.getvalue(), filename="q.parquet")


# --------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------
def _parquet(frame: pd.DataFrame) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink)
    return sink.getvalue()


def test_parquet_run_and_qrels(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"QID": [1, 1, 2], "docid": ["a", "b", "c"], "score": [0.5, 0.25, 1.0], "content": ["x", None, "z"]}
    )
    data = _parquet(frame)
    (tmp_path / "dense.parquet").write_bytes(data)
    for run in (load_run(tmp_path / "dense.parquet"), load_run(data)):  # sniffed by magic bytes
        assert triples(run) == [("1", "a", 0.5), ("1", "b", 0.25), ("2", "c", 1.0)]
        assert list(run.frame["text"].fillna("-")) == ["x", "-", "z"]
    assert load_run(tmp_path / "dense.parquet").name == "dense"
    qrels = load_qrels(
        _parquet(pd.DataFrame({"qid": ["q1"], "doc_id": ["d1"], "rel": [np.int32(2)]})), filename="q.parquet"
    )
    assert list(qrels.itertuples(index=False, name=None)) == [("q1", "d1", 2)]


def test_parquet_errors_name_the_row() -> None:
    data = _parquet(pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "c"], "score": [0.5, np.nan, 1.0]}))
    with pytest.raises(
        ParseError, match=r"bad\.parquet: expected a finite number in column 'score', found nan \(row 2\)"
    ):
        load_run(data, filename="bad.parquet")
    with pytest.raises(ParseError, match=r"bad\.parquet: expected a Parquet file"):
        load_run(b"PAR1 not really", filename="bad.parquet")


def test_a_run_without_a_score_column_says_which_columns_it_left_unread():
    """Was: a LangChain-style ``similarity`` column was dropped in silence and the run ranked in file order."""
    with pytest.warns(rm.RagMetricsWarning, match=r"r.csv: no score or rank column.*'similarity' not read"):
        run = load_run(b"query_id,doc_id,similarity\nq1,d1,0.5\nq1,d2,0.9\n", filename="r.csv")
    assert not run.has_scores
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing unread: nothing said
        load_run(b"query_id,doc_id\nq1,d1\nq1,d2\n", filename="r.csv")
