"""Evaluation-set JSON/JSONL, JSONL runs and the ranx / pytrec_eval dict JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.model import query_id_from_text
from ragmetrics.io import load_dataset, load_qrels, load_run

EVAL = [
    {
        "query": "What is BM25?",
        "expected_answer": "A ranking function.",
        "expected_keywords": ["ranking", "tf-idf"],
        "relevant_docs": ["doc#1", "doc#2"],
        "difficulty": "easy",
        "category": "definition",
        "owner": "ana",
    },
    {"query": "Who won in 2031?", "relevant_docs": [], "category": "negative", "difficulty": 3},
    {"query_id": "Q3", "query": "graded", "relevant_docs": {"d1": 2, "d3": 0, "d4": -1}},
    {"id": 17, "query": "numeric id", "relevant_docs": [42], "expected_keywords": "single"},
]


def as_list(records: list) -> bytes:
    return json.dumps(records, indent=2, ensure_ascii=False).encode()


def as_jsonl(records: list) -> bytes:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in records).encode() + b"\n"


# --------------------------------------------------------------------------
# evaluation set
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("encode", "name"), [(as_list, "eval.json"), (as_jsonl, "eval.jsonl")])
def test_evalset_list_and_jsonl(encode, name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(encode(EVAL))
    for dataset in (load_dataset(path), load_dataset(encode(EVAL), filename=name)):
        assert dataset.name == "eval"
        q1 = query_id_from_text("What is BM25?")
        assert list(dataset.query_ids) == [q1, query_id_from_text("Who won in 2031?"), "Q3", "17"]
        assert list(dataset.qrels.itertuples(index=False, name=None)) == [
            (q1, "doc#1", 1),
            (q1, "doc#2", 1),
            ("Q3", "d1", 2),
            ("Q3", "d3", 0),
            ("Q3", "d4", -1),
            ("17", "42", 1),
        ]
        first = dataset.queries.iloc[0]
        assert first["expected_keywords"] == ["ranking", "tf-idf"]
        assert first["category"] == "definition" and first["difficulty"] == "easy"
        assert first["expected_answer"] == "A ranking function."
        assert first["owner"] == "ana"  # extra key kept as a query column
        assert dataset.queries.iloc[1]["difficulty"] == "3"
        assert dataset.queries.iloc[3]["expected_keywords"] == ["single"]


def test_evalset_gzip_bom_crlf() -> None:
    data = b"\xef\xbb\xbf" + as_jsonl(EVAL).replace(b"\n", b"\r\n\r\n")
    dataset = load_dataset(gzip.compress(data), filename="eval.jsonl.gz")
    assert len(dataset) == 4 and dataset.name == "eval"
    data = b"\xef\xbb\xbf" + as_list(EVAL).replace(b"\n", b"\r\n")
    assert len(load_dataset(data, filename="eval.json")) == 4


def test_evalset_sniffed_without_extension() -> None:
    assert len(load_dataset(as_list(EVAL))) == 4
    assert len(load_dataset(as_jsonl(EVAL))) == 4


def _line_of(text: bytes, needle: str) -> int:
    return text[: text.index(needle.encode())].count(b"\n") + 1


@pytest.mark.parametrize(
    ("bad", "expected", "found"),
    [
        ({"question": "no query key"}, 'a "query" key', "keys"),
        ({"query": ""}, 'a non-empty "query"', "''"),
        ({"query": "q", "relevant_docs": "d1"}, '"relevant_docs" as a list', "'d1'"),
        ({"query": "q", "relevant_docs": {"d1": 1.5}}, "an integer grade for 'd1'", "1.5"),
        ({"query": "q", "relevant_docs": ["d1", "d1"]}, "each document once", "'d1' twice"),
        ({"query": "q", "relevant_docs": [None]}, "items as document ids", "None"),
        ({"query": "q", "expected_keywords": {"a": 1}}, '"expected_keywords" as a list', "{'a': 1}"),
        ({"query": "What is BM25?"}, "a unique query id", "again"),
    ],
)
def test_evalset_errors(bad: dict, expected: str, found: str) -> None:
    records = [EVAL[0], EVAL[1], bad]
    # JSONL: the line of the record
    with pytest.raises(ParseError, match=r"bad\.jsonl:3: expected ") as info:
        load_dataset(as_jsonl(records), filename="bad.jsonl")
    assert expected in str(info.value) and found in str(info.value)
    # JSON list: the line where the item starts, plus the record number
    data = as_list(records)
    line = data[: data.rindex(b"\n  {")].count(b"\n") + 2
    with pytest.raises(ParseError, match=rf"bad\.json:{line}: expected .* in record 3") as info:
        load_dataset(data, filename="bad.json")
    assert expected in str(info.value) and found in str(info.value)


def test_evalset_not_an_object_and_bad_json() -> None:
    with pytest.raises(ParseError, match=r"bad\.jsonl:2: expected a JSON object, found list"):
        load_dataset(b'{"query": "a"}\n[1, 2]\n', filename="bad.jsonl")
    with pytest.raises(ParseError, match=r"bad\.jsonl:2: expected valid JSON"):
        load_dataset(b'{"query": "a"}\n{"query": "b",}\n', filename="bad.jsonl")
    with pytest.raises(ParseError, match=r"bad\.json:3: expected valid JSON"):
        load_dataset(b'[\n {"query": "a"},\n {"query": "b",}\n]', filename="bad.json")
    with pytest.raises(ParseError, match=r"bad\.json:3: expected ',' or '\]'"):
        load_dataset(b'[\n {"query": "a"}\n {"query": "b"}\n]', filename="bad.json")


# --------------------------------------------------------------------------
# JSONL runs
# --------------------------------------------------------------------------
def test_jsonl_run_ranked_ids_keep_file_order(tmp_path: Path) -> None:
    data = (
        b'{"query_id": "q1", "retrieved": ["d3", "d1", "d#2"]}\n\n{"query": "What is BM25?", "retrieved": [7, "d1"]}\n'
    )
    path = tmp_path / "dense.jsonl"
    path.write_bytes(data)
    run = load_run(path)
    assert run.name == "dense" and not run.has_scores
    frame = run.frame
    q2 = query_id_from_text("What is BM25?")
    assert list(zip(frame["query_id"], frame["doc_id"])) == [
        ("q1", "d3"),
        ("q1", "d1"),
        ("q1", "d#2"),
        (q2, "7"),
        (q2, "d1"),
    ]
    assert list(frame["score"]) == [0.0, -1.0, -2.0, 0.0, -1.0]


def test_jsonl_run_items_with_scores_text_and_chunks() -> None:
    data = (
        b'{"query_id": "q1", "retrieved": [{"doc_id": "a", "score": 0.5, "text": "chunk a", "source_doc": "A"},'
        b' {"id": "b", "score": 0.9}, {"docid": "c", "score": 1}]}\n'
        b'{"query_id": "q2", "retrieved": [{"chunk_id": "c1", "doc_id": "D", "score": 2}, {"chunk_id": "c2", "score": 1}]}\n'
    )
    run = load_run(data, filename="r.jsonl")
    assert run.has_scores
    f = run.frame
    assert list(f["doc_id"]) == ["a", "b", "c", "c1", "c2"]
    assert list(f["score"]) == [0.5, 0.9, 1.0, 2.0, 1.0]
    assert list(f["text"].fillna("-")) == ["chunk a", "-", "-", "-", "-"]
    assert list(f["source_doc"].fillna("-")) == ["A", "-", "-", "D", "-"]


def test_jsonl_run_flat_rows() -> None:
    data = b'{"qid": "q1", "docno": "d1", "score": 1.5}\n{"qid": "q1", "docno": "d2", "score": 0.5, "rank": 2}\n'
    run = load_run(data, filename="flat.jsonl")
    assert list(zip(run.frame["query_id"], run.frame["doc_id"], run.frame["score"])) == [
        ("q1", "d1", 1.5),
        ("q1", "d2", 0.5),
    ]


@pytest.mark.parametrize(
    ("data", "line", "expected"),
    [
        (b'{"query_id": "q1", "retrieved": ["a"]}\n{"query_id": "q2", "retrieved": "b"}\n', 2, '"retrieved" as a list'),
        (b'{"query_id": "q1", "retrieved": ["a"]}\n{"retrieved": ["b"]}\n', 2, 'a "query_id" or a non-empty "query"'),
        (
            b'{"query_id": "q1", "retrieved": [{"doc_id": "a", "score": 1}]}\n{"query_id": "q2", "retrieved": [{"doc_id": "b", "score": "NaN"}]}\n',
            2,
            "a finite number as score of retrieved item 1",
        ),
        (
            b'{"query_id": "q1", "retrieved": [{"doc_id": "a", "score": 1}]}\n\n{"query_id": "q2", "retrieved": [{"doc_id": "b"}]}\n',
            3,
            "a score on every retrieved item",
        ),
        (
            b'{"query_id": "q1", "retrieved": [{"doc_id": "a"}, {"title": "x"}]}\n',
            1,
            'a "doc_id" .* in retrieved item 2',
        ),
        (b'{"query_id": "q1", "retrieved": [null]}\n', 1, "a document id as retrieved item 1"),
        (b'{"query_id": "q1", "retrieved": ["a"]}\n{"query_id": "q1", "doc_id": "b"}\n', 2, 'a "retrieved" list'),
        (
            b'{"query_id": "q1", "doc_id": "a", "score": 1}\n{"query_id": "q1", "doc_id": "b", "score": "high"}\n',
            2,
            "a finite number in column 'score'",
        ),
        (
            b'{"query_id": "q1", "doc_id": "a"}\n{"query_id": "q1", "doc_id": ""}\n',
            2,
            "a non-empty id in column 'doc_id'",
        ),
        (b'{"query_id": "q1", "retrieved": ["a"]}\n{"query_id": "q1", "retrieved": ["a"],}\n', 2, "valid JSON"),
    ],
)
def test_jsonl_run_errors(data: bytes, line: int, expected: str) -> None:
    with pytest.raises(ParseError, match=rf"bad\.jsonl:{line}: expected {expected}"):
        load_run(data, filename="bad.jsonl")


# --------------------------------------------------------------------------
# ranx / pytrec_eval dict JSON
# --------------------------------------------------------------------------
def test_dict_json_run_and_qrels(tmp_path: Path) -> None:
    run = load_run(b'{"q1": {"d1": 1.5, "d#2": 0.5}, "q2": {"d3": 1}}', filename="ranx.json")
    assert run.name == "ranx"
    assert list(zip(run.frame["query_id"], run.frame["doc_id"], run.frame["score"])) == [
        ("q1", "d1", 1.5),
        ("q1", "d#2", 0.5),
        ("q2", "d3", 1.0),
    ]
    pretty = json.dumps({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}, indent=2).encode()
    (tmp_path / "qrels.json").write_bytes(pretty)
    qrels = load_qrels(tmp_path / "qrels.json")
    assert list(qrels.itertuples(index=False, name=None)) == [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 2)]
    assert list(load_run(pretty, format="ranx").frame["score"]) == [1.0, 0.0, 2.0]


def test_dict_json_errors() -> None:
    bad = b'{\n  "q1": {"d1": 1.5},\n  "q2": {\n    "d2": 1,\n    "d3": "high"\n  }\n}'
    with pytest.raises(
        ParseError, match=r"bad\.json:5: expected a finite number as score for query 'q2', document 'd3', found 'high'"
    ):
        load_run(bad, filename="bad.json")
    with pytest.raises(
        ParseError, match=r"bad\.json:2: expected an integer label for query 'q1', document 'd1', found 1\.5"
    ):
        load_qrels(bad, filename="bad.json")
    with pytest.raises(ParseError, match=r"bad\.json:3: expected a \{doc_id: score\} object for query 'q2'"):
        load_run(b'{\n"q1": {"d": 1},\n"q2": [1]\n}', filename="bad.json")
    with pytest.raises(ParseError, match=r"bad\.json:3: expected each query once"):
        load_run(b'{\n"q1": {"d": 1},\n"q1": {"e": 1}\n}', filename="bad.json", format="dict-json")


def test_a_json_list_is_decoded_at_once_and_read_again_for_a_message(monkeypatch) -> None:
    """A valid list is decoded in one call (no item-by-item scan); any problem sends the reader back to the
    careful scan, so the message still names the item's line."""
    import ragmetrics.io._json as json_io
    import ragmetrics.io.evalset as evalset
    from ragmetrics.io.source import open_source

    data = as_list(
        [*EVAL, {"query": "deep", "extra": [[[[["x"]]]]]}, {"query": "gr\\u00e4de", "relevant_docs": {"d9": -1}}]
    )
    careful = load_dataset(data, filename="ok.json")
    scanned: list[int] = []
    real_records = json_io.records

    def counting_records(source):
        scanned.append(1)
        return real_records(source)

    monkeypatch.setattr(evalset, "records", counting_records)
    fast = load_dataset(data, filename="ok.json")
    assert not scanned  # the whole-array path read it
    assert fast.queries.equals(careful.queries) and fast.qrels.equals(careful.qrels)

    bad = as_list([EVAL[0], EVAL[1], {"query": "q", "relevant_docs": {"d1": 1.5}}])
    line = bad[: bad.rindex(b"\n  {")].count(b"\n") + 2
    with pytest.raises(ParseError, match=rf"bad\.json:{line}: expected an integer grade .* in record 3"):
        load_dataset(bad, filename="bad.json")
    assert scanned  # read again item by item for the line
    # what only the careful scan judges is never decoded at once: nesting deeper than MAX_DEPTH, lone surrogates
    deep = b'[{"query": "a", "x": ' + b"[" * 70 + b"]" * 70 + b"}]"
    assert json_io.whole_array(open_source(deep, "deep.json", None)) is None
    lone = b'[{"query": "a\\ud800"}]'
    assert json_io.whole_array(open_source(lone, "lone.json", None)) is None
    with pytest.raises(ParseError, match=r"lone\.json:1: expected text that can be written as UTF-8"):
        load_dataset(lone, filename="lone.json")


def test_a_query_in_two_nested_records_names_both_lines() -> None:
    text = (
        b'{"query_id": "q1", "retrieved": ["d1"]}\n{"query_id": "q2", "retrieved": ["d1"]}\n'
        b'{"query_id": "q1", "retrieved": ["d2"]}\n'
    )
    with pytest.raises(
        ParseError, match=r"^run\.jsonl:3: expected one record per query .* 'q1' again \(first on line 1\)$"
    ):
        load_run(text, filename="run.jsonl")
    # records without ids are told apart by their text: the same question twice is the same query
    same_text = b'{"query": "what?", "retrieved": ["d1"]}\n{"query": "what?", "retrieved": ["d2"]}\n'
    with pytest.raises(ParseError, match=r"^run\.jsonl:2: expected one record per query"):
        load_run(same_text, filename="run.jsonl")
