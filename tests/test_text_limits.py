"""Text fields (queries, expected answers and keywords, document titles and texts, a run's chunk text) longer than
``max_text_bytes`` are refused with the file, the line and the limit, and texts at the limit are taken."""

from __future__ import annotations

import json
import resource

import pytest

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.limits import Limits

LIMIT = Limits(max_text_bytes=100)
LONG = "é" * 51  # 102 bytes of UTF-8, 51 characters


def _evalset(field: str, value: object) -> bytes:
    rows = [{"query_id": f"q{i}", "query": f"question {i}", "relevant_docs": ["d1"]} for i in (1, 2)]
    rows.append({"query_id": "q3", "query": "question 3", "relevant_docs": ["d1"], field: value})
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


@pytest.mark.parametrize(
    ("field", "value"),
    [("query", LONG), ("expected_answer", LONG), ("expected_keywords", ["ok", LONG]), ("expected_keywords", LONG)],
)
def test_an_evaluation_set_text_over_the_limit_names_its_line(field: str, value: object) -> None:
    with pytest.raises(ParseError) as refused:
        load_dataset(_evalset(field, value), filename="eval.jsonl", limits=LIMIT)
    message = str(refused.value)
    assert message.startswith("eval.jsonl:3: expected") and "at most 100 bytes (RAGMETRICS_MAX_TEXT_BYTES)" in message


def test_a_text_at_the_limit_is_taken() -> None:
    dataset = load_dataset(_evalset("expected_answer", "é" * 50), filename="eval.jsonl", limits=LIMIT)
    assert dataset.queries.set_index("query_id").loc["q3", "expected_answer"] == "é" * 50


@pytest.mark.parametrize("field", ["title", "text"])
def test_a_corpus_text_over_the_limit_names_its_line(field: str) -> None:
    docs = [{"_id": "d1", "title": "t", "text": "x"}, {"_id": "d2", "title": "t", "text": "x"}]
    docs.append({"_id": "d3", "title": "t", "text": "x", field: LONG})
    corpus = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()
    with pytest.raises(ParseError, match=r"corpus\.jsonl:3:.*RAGMETRICS_MAX_TEXT_BYTES"):
        load_dataset(b"q1 0 d1 1\n", filename="qrels.txt", corpus=(corpus, "corpus.jsonl"), limits=LIMIT)


def test_a_query_text_over_the_limit_in_a_queries_file_names_its_line() -> None:
    queries = "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in (("q1", "fine"), ("q2", "y" * 101)))
    with pytest.raises(ParseError, match=r"queries\.jsonl:2:.*RAGMETRICS_MAX_TEXT_BYTES"):
        load_dataset(b"q1 0 d1 1\n", filename="qrels.txt", queries=(queries.encode(), "queries.jsonl"), limits=LIMIT)
    tsv = b"query_id\ttext\nq1\tfine\nq2\t" + b"y" * 101 + b"\n"
    with pytest.raises(ParseError, match=r"queries\.tsv:3:.*RAGMETRICS_MAX_TEXT_BYTES"):
        load_dataset(b"q1 0 d1 1\n", filename="qrels.txt", queries=(tsv, "queries.tsv"), limits=LIMIT)


@pytest.mark.parametrize("fmt", ["jsonl", "tsv"])
def test_a_run_chunk_text_over_the_limit_names_its_line(fmt: str) -> None:
    rows = [("q1", "d1", 2.0, "short"), ("q1", "d2", 1.0, LONG)]
    if fmt == "jsonl":
        data = "".join(
            json.dumps({"query_id": q, "doc_id": d, "score": s, "text": t}, ensure_ascii=False) + "\n"
            for q, d, s, t in rows
        )
    else:
        data = "query_id\tdoc_id\tscore\ttext\n" + "".join(f"{q}\t{d}\t{s}\t{t}\n" for q, d, s, t in rows)
    line = 2 if fmt == "jsonl" else 3
    with pytest.raises(ParseError, match=rf"run\.{fmt}:{line}:.*RAGMETRICS_MAX_TEXT_BYTES"):
        load_run(data.encode(), filename=f"run.{fmt}", limits=LIMIT)


def test_a_fifty_megabyte_query_text_is_refused_in_under_two_seconds_of_cpu() -> None:
    data = _evalset("query", "z" * (50 << 20))
    before = resource.getrusage(resource.RUSAGE_SELF)
    with pytest.raises(ParseError, match="RAGMETRICS_MAX_TEXT_BYTES"):
        load_dataset(data, filename="eval.jsonl")
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 2.0
