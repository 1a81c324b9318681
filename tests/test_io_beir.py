"""BEIR folders (and zips), scifact-style folders, queries= and corpus=."""

from __future__ import annotations

import io
import json
import shutil
import warnings
import zipfile
from pathlib import Path

import pytest

from ragmetrics.foundation.errors import ParseError, RagMetricsWarning
from ragmetrics.io import load_dataset, load_qrels
from ragmetrics.io.beir import DOC_TEXT_KEYS

DATA = Path(__file__).parent / "data" / "io"
MINI = DATA / "scifact-mini"


def make_beir(root: Path) -> Path:
    """A real BEIR layout built from the scifact excerpt."""
    root.mkdir(parents=True)
    (root / "qrels").mkdir()
    with open(root / "corpus.jsonl", "w") as out:
        for line in open(MINI / "corpus.jsonl"):
            record = json.loads(line)
            out.write(
                json.dumps({"_id": record["id"], "title": record["title"], "text": record["text"], "metadata": {}})
                + "\n"
            )
    with open(root / "queries.jsonl", "w") as out:
        for line in open(MINI / "queries.jsonl"):
            record = json.loads(line)
            out.write(json.dumps({"_id": record["id"], "text": record["text"], "metadata": {}}) + "\n")
        out.write(json.dumps({"_id": "999", "text": "a train query, not in the test qrels", "metadata": {}}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [
        "\t".join(ln.split()[i] for i in (0, 2, 3)) for ln in open(MINI / "qrels.tsv")
    ]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n999\t4983\t1\n")
    return root


def test_beir_folder(tmp_path: Path) -> None:
    dataset = load_dataset(make_beir(tmp_path / "scifact"))
    assert dataset.name == "scifact"
    assert len(dataset.qrels) == 6
    assert len(dataset) == 5  # only queries judged in qrels/test.tsv
    assert dataset.corpus_size == 53
    assert list(dataset.documents.columns) == ["doc_id", "title", "text"]
    assert dataset.queries.iloc[0]["query"] == "0-dimensional biomaterials show inductive properties."
    assert "metadata" not in dataset.queries.columns


def test_beir_zip_from_bytes(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "scifact")
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as archive:
        for path in root.rglob("*"):
            if path.is_file():
                archive.write(path, "scifact/" + path.relative_to(root).as_posix())
    dataset = load_dataset(sink.getvalue(), filename="scifact.zip")
    assert dataset.name == "scifact"
    assert len(dataset) == 5 and dataset.corpus_size == 53


def test_folder_with_trec_qrels_like_shared_data(tmp_path: Path) -> None:
    folder = tmp_path / "scifact-mini"
    shutil.copytree(MINI, folder)
    dataset = load_dataset(folder)
    assert dataset.name == "scifact-mini"
    assert len(dataset) == 5 and len(dataset.qrels) == 6
    assert dataset.corpus_size == 53
    assert (dataset.queries["query"].str.len() > 0).all()


def test_chinese_folder_excerpt() -> None:
    dataset = load_dataset(DATA / "cmrc-mini")
    assert next(iter(dataset.queries["query"])) == "大莱龙铁路位于哪里？"
    assert dataset.corpus_size is None


def test_trec_qrels_with_queries_and_corpus_files() -> None:
    dataset = load_dataset(MINI / "qrels.tsv", queries=MINI / "queries.jsonl", corpus=MINI / "corpus.jsonl", name="sf")
    assert dataset.name == "sf" and dataset.corpus_size == 53 and len(dataset.documents) == 53
    assert (dataset.queries["query"].str.len() > 0).all()
    explicit = load_dataset(MINI / "qrels.tsv", corpus=MINI / "corpus.jsonl", corpus_size=5183)
    assert explicit.corpus_size == 5183


def test_queries_as_tsv_with_and_without_header(tmp_path: Path) -> None:
    (tmp_path / "q.tsv").write_text("1\tfirst query\n3\tsecond\tquery with a tab\n")
    dataset = load_dataset(MINI / "qrels.tsv", queries=tmp_path / "q.tsv")
    texts = dict(zip(dataset.queries["query_id"], dataset.queries["query"]))
    assert texts["1"] == "first query" and texts["3"] == "second\tquery with a tab" and texts["5"] == ""
    (tmp_path / "h.tsv").write_text("query_id\ttext\n1\tfirst\n")
    dataset = load_dataset(MINI / "qrels.tsv", queries=tmp_path / "h.tsv")
    assert dict(zip(dataset.queries["query_id"], dataset.queries["query"]))["1"] == "first"


def test_bad_queries_and_corpus_files(tmp_path: Path) -> None:
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "ok"}\n{"_id": "3"}\n')
    with pytest.raises(ParseError, match=r"queries\.jsonl:2: expected the query text"):
        load_dataset(MINI / "qrels.tsv", queries=tmp_path / "queries.jsonl")
    (tmp_path / "corpus.jsonl").write_text('{"_id": "1", "text": "ok"}\n{"title": "no id"}\n')
    with pytest.raises(ParseError, match=r"corpus\.jsonl:2: expected a document id"):
        load_dataset(MINI / "qrels.tsv", corpus=tmp_path / "corpus.jsonl")


def test_corpus_text_under_each_text_key(tmp_path: Path) -> None:
    records = [{"_id": str(n), "title": "t", key: f"text {n}"} for n, key in enumerate(DOC_TEXT_KEYS)]
    records.append({"_id": "text-wins", "content": "second", "text": "first"})
    records.append({"_id": "title-only", "title": "only a title"})
    lines = "".join(json.dumps(r) + "\n" for r in records)
    for name, data in (("lines.jsonl", lines), ("array.json", json.dumps(records))):  # the C and the Python reader
        (tmp_path / name).write_text(data)
        texts = dict(
            zip(*(load_dataset(MINI / "qrels.tsv", corpus=tmp_path / name).documents[c] for c in ("doc_id", "text")))
        )
        assert texts == {
            **{str(n): f"text {n}" for n in range(len(DOC_TEXT_KEYS))},
            "text-wins": "first",
            "title-only": "",
        }
    (tmp_path / "no-text.jsonl").write_text('{"_id": "1", "title": "a"}\n{"_id": "2", "passages": "b"}\n')
    with pytest.raises(
        ParseError, match=r"no-text\.jsonl:1: expected a document text under one of text, content, contents, body, "
    ):
        load_dataset(MINI / "qrels.tsv", corpus=tmp_path / "no-text.jsonl")


def test_a_corpus_id_given_twice_is_said_by_every_reader_and_its_first_text_kept(tmp_path: Path) -> None:
    """Was said only by ``synth``: ``eval --corpus``, ``push`` and the dashboard kept the first text in silence."""
    records = [{"_id": "d1", "text": "first"}, {"_id": "d1", "text": "second"}, {"_id": "d2", "text": "other"}]
    lines = "".join(json.dumps(r) + "\n" for r in records)
    for name, data in (("lines.jsonl", lines), ("array.json", json.dumps(records))):  # the C and the Python reader
        (tmp_path / name).write_text(data)
        with pytest.warns(RagMetricsWarning, match=rf"{name}: 1 line\(s\) repeat a document id of an earlier line"):
            documents = load_dataset(MINI / "qrels.tsv", corpus=tmp_path / name).documents
        assert dict(zip(documents["doc_id"], documents["text"])) == {"d1": "first", "d2": "other"}


def test_bad_beir_qrels_reports_file_inside_folder(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "b")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t31715818\t1\n3\t14717500\tyes\n")
    with pytest.raises(ParseError, match=r"b/qrels/test\.tsv:3: expected an integer in column 'score', found 'yes'"):
        load_dataset(root)
    assert len(load_qrels(root / "qrels" / "train.tsv")) == 1


def test_folder_without_qrels(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ParseError, match=r"empty: expected a BEIR folder"):
        load_dataset(tmp_path / "empty")


def test_an_empty_queries_file_is_refused_with_its_name(tmp_path):
    """Was: eval --queries empty.jsonl exited 0 without a word, every query without its text."""
    (tmp_path / "qrels.tsv").write_text("q1 0 d1 1\n")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(
        ParseError, match=r"empty\.jsonl: expected queries: a JSON object per line with an id and a text, found none"
    ):
        load_dataset(tmp_path / "qrels.tsv", queries=tmp_path / "empty.jsonl")


def test_a_record_without_an_id_among_records_with_one_is_warned_of(tmp_path):
    """Was: a record whose "query_id" was left out got an id made from its text without a word, and a run naming
    it by its id scored it 0. A set of records none of which has an id (ids from text, as documented) is quiet."""
    rows = [{"query_id": "q1", "query": "a"}, {"query": "b"}, {"query_id": "q3", "query": "c"}]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(RagMetricsWarning, match=r'set\.jsonl: 1 of 3 records have no "query_id" \(line\(s\) 2\)'):
        load_dataset(tmp_path / "set.jsonl")
    (tmp_path / "none.jsonl").write_text("".join(json.dumps({"query": r["query"]}) + "\n" for r in rows))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagMetricsWarning)
        assert len(load_dataset(tmp_path / "none.jsonl").queries) == 3


def test_a_corpus_holding_none_of_the_judged_documents_is_warned_of(tmp_path):
    """Was: SciFact's qrels with CMRC's corpus loaded without a word, its 3,651 documents then feeding accuracy@k."""
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\t31715818\t1\nq2\tDEV_3\t1\n", encoding="utf-8")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"_id": "X_0_C0", "text": "a"}\n{"_id": "X_1_C0", "text": "b"}\n', encoding="utf-8")
    with pytest.warns(RagMetricsWarning, match=r"the corpus .*foreign.jsonl holds none of the documents the qrels "
                                               r"judge \(its ids: X_0_C0, X_1_C0; the qrels': 31715818, DEV_3\); is "
                                               r"it another dataset's\?"):  # fmt: skip
        load_dataset(qrels, corpus=foreign)
    chunks = tmp_path / "chunks.jsonl"  # its chunks (DEV_3_C0 of DEV_3), or its documents: no warning
    chunks.write_text('{"_id": "DEV_3_C0", "text": "a"}\n', encoding="utf-8")
    documents = tmp_path / "documents.jsonl"
    documents.write_text('{"_id": "31715818", "text": "a"}\n', encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagMetricsWarning)
        assert load_dataset(qrels, corpus=chunks).corpus_size == 1
        assert load_dataset(qrels, corpus=documents).corpus_size == 1


@pytest.mark.parametrize(("name", "content"), [("run.csv", "query_id,doc_id,score\r\nq1,D1,1\r\n"),
                                               ("page.md", "\ufeff# A page\n\nIts text.\n")])  # fmt: skip
def test_a_file_that_is_no_corpus_is_named_for_what_a_corpus_is(tmp_path: Path, name: str, content: str) -> None:
    """Was "expected valid JSON (Expecting value)" for a run's CSV or a Markdown page given as --corpus."""
    from ragmetrics.io.corpus import read_corpus

    (tmp_path / name).write_text(content, encoding="utf-8")
    first = content.lstrip("\ufeff").split("\r\n" if "\r" in content else "\n")[0]
    with pytest.raises(ParseError, match=rf"{name}:1: expected a corpus: a JSONL file of records .* or a folder of "
                       rf"\.md/\.txt files, found '{first}'"):  # fmt: skip
        read_corpus(str(tmp_path / name))
