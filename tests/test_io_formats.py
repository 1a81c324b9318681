"""The format table, detection, sources and default names."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io import FORMATS, load_dataset, load_qrels, load_run, name_of_file
from ragmetrics.io.formats import KNOWN_EXTENSIONS, detect
from ragmetrics.io.source import open_source

RUN = b"q1 Q0 d1 1 2.5 tag\n"
QRELS = b"q1 0 d1 1\n"


def test_table_rows_are_complete_and_unique() -> None:
    seen = set()
    for fmt in FORMATS:
        assert fmt.kind in ("run", "dataset")
        assert callable(fmt.sniff) and callable(fmt.reader) and fmt.description
        assert all(ext.startswith(".") for ext in fmt.extensions)
        assert (fmt.name, fmt.kind) not in seen
        seen.add((fmt.name, fmt.kind))


@pytest.mark.parametrize(
    ("data", "filename", "kind", "expected"),
    [
        (RUN, "x.trec", "run", "trec"),
        (RUN, "x.txt", "run", "trec"),
        (RUN, "x.tsv", "run", "trec"),
        (RUN, None, "run", "trec"),
        (b"qid\tdocid\tscore\nq1\td1\t1\n", "x.tsv", "run", "tsv"),
        (b"qid\tdocid\tscore\nq1\td1\t1\n", None, "run", "tsv"),
        (b"qid,docid,score\nq1,d1,1\n", None, "run", "csv"),
        (b'{"query_id": "q1", "retrieved": ["d"]}\n', "x.json", "run", "jsonl"),
        (b'{"q1": {"d1": 1.0}}', "x.json", "run", "dict-json"),
        (b'{\n  "q1": {\n    "d1": 1.0\n  }\n}', None, "run", "dict-json"),
        (QRELS, "x.qrels", "dataset", "trec"),
        (QRELS, "qrels.tsv", "dataset", "trec"),
        (QRELS, None, "dataset", "trec"),
        (b"query-id\tcorpus-id\tscore\nq1\td1\t1\n", "test.tsv", "dataset", "tsv"),
        (b'[{"query": "a"}]', "x.json", "dataset", "evalset"),
        (b'{"query": "a"}\n', "x.jsonl", "dataset", "evalset"),
        (b'{"query": "a"}\n', None, "dataset", "evalset"),
        (b'{"q1": {"d1": 1}}', "x.json", "dataset", "dict-json"),
    ],
)
def test_detection(data: bytes, filename: str | None, kind: str, expected: str) -> None:
    assert detect(open_source(data, filename), kind).name == expected


def test_explicit_format_and_unknown_names() -> None:
    assert len(load_run(RUN, filename="x.weird", format="trec")) == 1
    assert len(load_qrels(QRELS, format="qrels")) == 1
    with pytest.raises(ParseError, match=r"x\.weird: expected a run format among .*found 'xml'"):
        load_run(RUN, filename="x.weird", format="xml")


def test_unknown_content_lists_supported_formats() -> None:
    with pytest.raises(
        ParseError, match=r"notes\.md: expected a supported run format: .*trec .*csv .*found extension '\.md'"
    ) as info:
        load_run(b"hello world\n", filename="notes.md")
    assert info.value.line is None
    with pytest.raises(ParseError, match=r"<bytes>: expected a supported dataset format: .*evalset"):
        load_dataset(b"hello world\n")


def test_wrong_kind_gets_a_line_numbered_error() -> None:
    with pytest.raises(ParseError, match=r"judged\.trec:1: expected 6 fields"):
        load_run(QRELS, filename="judged.trec")


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("bm25-stem.trec.gz", "bm25-stem"),
        ("/a/b/dense.v2.trec", "dense.v2"),
        ("run.jsonl", "run"),
        ("results.csv.gzip", "results"),
        ("noext", "noext"),
    ],
)
def test_default_names(name: str, stem: str) -> None:
    assert open_source(b"", name).default_name(KNOWN_EXTENSIONS) == stem
    assert name_of_file(name) == stem  # the same name before the file exists (ragmetrics retrieve -o)


def test_sources_stream_text_stream_and_names(tmp_path: Path) -> None:
    stream = io.BytesIO(gzip.compress(RUN))
    stream.name = "uploaded.trec.gz"
    assert load_run(stream).name == "uploaded"
    assert load_run(io.StringIO(RUN.decode()), format="trec").name == "<stream>"
    assert load_run(RUN, filename="up.trec", name="mine").name == "mine"
    with pytest.raises(ParseError, match=r"up\.trec: expected a complete gzip stream"):
        load_run(gzip.compress(RUN)[:-6], filename="up.trec")
    with pytest.raises(TypeError):
        load_run(12345)
    with pytest.raises(ParseError, match=r"expected a run file .*found a folder"):
        load_run(tmp_path)


def test_dict_json_with_a_first_line_longer_than_the_sniffed_head() -> None:
    big = "{" + ", ".join(f'"q{i}": {{"d{i}": {i}.5, "e{i}": 1}}' for i in range(5000)) + "}"
    assert len(big) > 65536
    run = load_run(big.encode(), filename="big.json")
    assert len(run) == 10000


def test_missing_columns_message_is_bounded() -> None:
    header = ",".join(f"c{i}" for i in range(500))
    with pytest.raises(ParseError, match=r"and 480 more$"):
        load_run((header + "\n" + ",".join("1" * 500) + "\n").encode(), filename="wide.csv")


@pytest.mark.parametrize(
    "text",
    ["query document score\nq1 d1 1\n", "query\tdocument\tscore\nq1\td1\t1\n", "query_id doc_id label\nq1 d1 1\n"],
)
def test_a_file_of_two_possible_formats_that_fits_neither_is_told_both(tmp_path: Path, text: str) -> None:
    """Was: a ``.tsv`` whose first line fits neither TREC qrels nor a TSV table was told only TREC's layout."""
    path = tmp_path / "labels.tsv"
    path.write_text(text)
    with pytest.raises(ParseError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: expected TREC qrels lines 'qid iter docid rel' or TSV qrels with a header")
    assert text.splitlines()[0].replace("\t", "\\t") in message


@pytest.mark.parametrize("text", ["q1\td1\t2\nq1\td2\t0\n", "q1 d1 1\n"])
def test_labels_of_three_fields_without_a_header_are_told_the_header_they_need(tmp_path: Path, text: str) -> None:
    """Was: a TSV of query, document and label without a header (as people write labels) was told TREC's four
    fields and a table's header, not that a header line is what it lacks."""
    path = tmp_path / "labels.tsv"
    path.write_text(text)
    with pytest.raises(ParseError, match=r"\(a line of 3 fields, query, document and label, is read under a header "
                       r"line: query_id, doc_id, relevance\)"):  # fmt: skip
        load_dataset(path)


def test_a_table_with_its_header_only_is_said_so(tmp_path: Path) -> None:
    path = tmp_path / "labels.tsv"
    path.write_text("query_id\tdoc_id\tlabel\n")
    with pytest.raises(ParseError, match="expected rows below the header line, found the header only"):
        load_dataset(path)


def test_a_file_its_reader_takes_though_no_sniffer_does_is_read(tmp_path: Path) -> None:
    """The first candidate still reads what its sniffer refused: a JSON array of run rows, a TREC run whose rank
    is not a whole number (the rank is not read)."""
    (tmp_path / "r.json").write_text('[{"query_id": "q1", "doc_id": "d1", "score": 1.0}]')
    (tmp_path / "run.tsv").write_text("q1 Q0 d1 1.0 2.5 tag\n")
    assert len(load_run(tmp_path / "r.json")) == 1 and len(load_run(tmp_path / "run.tsv")) == 1
