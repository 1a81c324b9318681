"""Evidence spans: gold character spans of documents against the chunks retrieved, by hand and by property."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import get_args

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragmetrics as rm
from ragmetrics.analysis.chunkings import _summary, compare_chunkings
from ragmetrics.analysis.verdicts import SAID, VERDICT_TERMS, VERDICTS, Verdict, VerdictSaid, pair_words, verdict_words
from ragmetrics.cli import main
from ragmetrics.engine import evidence
from ragmetrics.engine.evidence import (
    evaluate_evidence,
    parse_evidence,
    spans_from_answers,
    spans_from_documents,
    visible_prefix,
)
from ragmetrics.engine.metrics import EVIDENCE_METRICS
from ragmetrics.foundation import kernels
from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io.spans import check_spans, load_chunk_spans, load_spans

# Document A: 20 characters, words of 5 ("aaaaa bbbbb ccccc dd"); B: another document.
CORPUS = pd.DataFrame({"doc_id": ["A", "B"], "text": ["aaaaa bbbbb ccccc dd", "xxxxx yyyyy"]})
QRELS = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["A", "B"], "relevance": [1, 1]})
DATASET = rm.Dataset.from_frames(QRELS, documents=CORPUS)
# q1 retrieves A[0:11] "aaaaa bbbbb", then B whole, then A[6:17] "bbbbb ccccc", then a chunk found nowhere
RUN = rm.Run.from_frame(
    pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q1", "q1", "q2"],
            "doc_id": ["A#0", "B", "A#1", "A#9", "B"],
            "source_doc": ["A", "B", "A", "A", "B"],
            "score": [4.0, 3.0, 2.0, 1.0, 1.0],
            "text": ["aaaaa bbbbb", "xxxxx yyyyy", "bbbbb ccccc", "not in A", "xxxxx yyyyy"],
        }
    )
)
# gold of q1: A[6:11] "bbbbb" and A[12:17] "ccccc" (10 characters); q2: B[0:5] "xxxxx" (and a span of q3, not
# evaluated, is ignored)
SPANS = {"q1": {"A": [(6, 11), (12, 17)]}, "q2": {"B": [(0, 5)]}, "q3": {"A": [(0, 1)]}}


def test_evidence_by_hand():
    alignment = rm.align(DATASET, RUN)
    names = ["evidence_recall@1", "evidence_recall@3", "evidence_recall_chars@3", "evidence_recall@2tok",
             "evidence_recall@5tok", "context_precision@1", "context_precision@3", "context_precision@6tok",
             "tokens_to_evidence"]  # fmt: skip
    result = evaluate_evidence(alignment, SPANS, names)
    got = {name: result.values[name].tolist() for name in names}
    assert got["evidence_recall@1"] == [0.5, 1.0]  # "bbbbb" of 10 gold characters; q2's B covers its span
    assert got["evidence_recall@3"] == [1.0, 1.0]  # A#1 adds "ccccc"; "bbbbb" again counts once
    assert got["evidence_recall_chars@3"] == [1.0, 1.0]
    assert got["evidence_recall@2tok"] == [0.5, 1.0]  # 2 tokens: A#0 only (B would pass the budget)
    assert got["evidence_recall@5tok"] == [0.5, 1.0]  # A#0, B (4 tokens); A#1 would make 6
    assert got["context_precision@1"] == [0.5, 0.5]  # "aaaaa bbbbb": 1 of its 2 tokens is evidence
    assert got["context_precision@3"] == [3 / 6, 0.5]  # 1 + 0 + 2 evidence tokens of 6 handed over
    assert got["context_precision@6tok"] == [3 / 6, 0.5]
    assert got["tokens_to_evidence"] == [2.0, 2.0]  # the first chunk holds evidence: its 2 tokens
    assert result.unlocated == 1 and result.queries_with_spans == 2 and result.tokenizer == "whitespace"
    assert result.notes == [
        "the spans of 1 query the run is not evaluated on ('q3') are left out",  # said, not dropped in silence
        "1 distinct retrieved chunk(s) ('A#9'), at 1 place(s) in the rankings, could not be placed in their "
        "document (they cover nothing)",
    ]
    assert result.means["evidence_recall@1"] == 0.75


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ({"q1": {"A": [(6, 999)]}}, r"\(q1, A, 6, 999\): expected a span within the \d+ characters of document A"),
        ({"q1": {"A": [(500, 999)]}}, r"expected a span within the \d+ characters of document A"),
        ({"q1": {"Z": [(0, 3)]}}, r"\(q1, Z, 0, 3\): document Z is not in the corpus"),
        ({"q9": {"A": [(0, 3)]}}, r"no evidence span is of a query the run is evaluated on \(spans of \['q9'\]"),
    ],
)
def test_the_library_checks_spans_as_the_cli_does(spans, message):
    """Was: clamped to the text, blamed on white space, scored 0, or every mean NaN, where the CLI refuses."""
    with pytest.raises(RagMetricsError, match=message):
        evaluate_evidence(rm.align(DATASET, RUN), spans, ["evidence_recall@3"])


def test_a_dropped_duplicate_takes_no_rank_and_costs_no_token():
    # q1 retrieves B, B again (a duplicate, dropped), then A: A is the second chunk handed over
    run = rm.Run.from_frame(
        pd.DataFrame(
            {"query_id": ["q1"] * 3, "doc_id": ["B", "B", "A"], "score": [3.0, 2.0, 1.0],
             "text": ["xxxxx yyyyy", "xxxxx yyyyy", "aaaaa bbbbb ccccc dd"]}
        )
    )  # fmt: skip
    alignment = rm.align(DATASET, run)
    spans = {"q1": {"A": [(6, 11)]}}
    result = evaluate_evidence(alignment, spans, ["evidence_recall@2", "evidence_recall@6tok", "tokens_to_evidence"])
    assert result.values["evidence_recall@2"][0] == alignment.value("recall@2")[0] == 1.0
    assert result.values["evidence_recall@6tok"][0] == alignment.value("recall@6tok")[0] == 1.0
    assert result.values["tokens_to_evidence"][0] == 6.0  # B's 2 tokens and A's 4, the duplicate's none


def test_weighted_and_unweighted_recall_differ_over_documents_of_unequal_evidence():
    # q1 has gold in A (10 characters) and B (5): only A's "bbbbb" is covered in the top 1
    spans = {"q1": {"A": [(6, 11), (12, 17)], "B": [(0, 5)]}}
    result = evaluate_evidence(rm.align(DATASET, RUN), spans, ["evidence_recall@1", "evidence_recall_chars@1"])
    assert result.values["evidence_recall@1"][0] == pytest.approx((0.5 + 0.0) / 2)
    assert result.values["evidence_recall_chars@1"][0] == pytest.approx(5 / 15)
    assert np.isnan(result.values["evidence_recall@1"][1])  # q2 has no span here: left out


def test_spans_located_from_the_expected_answer():
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "expected_answer": ["ccccc", "zz"]})
    dataset = rm.Dataset.from_frames(QRELS, queries, documents=CORPUS)
    spans = spans_from_answers(dataset).to_pylist()
    assert spans == [{"query_id": "q1", "doc_id": "A", "start": 12, "end": 17}]  # q2's answer is not in B
    value = evaluate_evidence(rm.align(dataset, RUN), spans_from_answers(dataset), ["evidence_recall@1"])
    assert value.values["evidence_recall@1"][0] == 0.0 and np.isnan(value.values["evidence_recall@1"][1])


def test_span_files_in_each_layout(tmp_path):
    trec = tmp_path / "spans.qrels"
    trec.write_text("q1 0 A 1 6 11\nq1 0 A 1 12 17\nq1 0 B 0 0 3\n", encoding="utf-8")
    jsonl = tmp_path / "spans.jsonl"
    jsonl.write_text('{"query_id": "q1", "doc_id": "A", "spans": [[6, 11], [12, 17]]}\n', encoding="utf-8")
    csv = tmp_path / "spans.csv"
    csv.write_text("query_id,doc_id,start,end\nq1,A,6,11\nq1,A,12,17\n", encoding="utf-8")
    expected = [("q1", "A", 6, 11), ("q1", "A", 12, 17)]
    for path in (trec, jsonl, csv):
        table = load_spans(path)
        assert list(zip(*(table.column(c).to_pylist() for c in ("query_id", "doc_id", "start", "end")))) == expected
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 A 1 6 11\nq1 0 A 1 17 12\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"bad.qrels:2: expected a span end after its start"):
        load_spans(bad)
    short = tmp_path / "short.qrels"
    short.write_text("q1 0 A 1\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"short.qrels:1: expected query_id iteration doc_id relevance start end"):
        load_spans(short)


@pytest.mark.parametrize(
    ("text", "message"),
    [("evidence_recall", "needs a cut-off"), ("tokens_to_evidence@5", "takes no cut-off"),
     ("evidence_precision@5", "unknown evidence metric")],
)  # fmt: skip
def test_evidence_names(text, message):
    with pytest.raises(rm.MetricNameError, match=message):
        parse_evidence(text)
    assert str(parse_evidence("Evidence_Recall@512Tokens")) == "evidence_recall@512tok"
    assert set(EVIDENCE_METRICS) == {"evidence_recall", "evidence_recall_chars", "context_precision",
                                     "tokens_to_evidence"}  # fmt: skip


# --- properties ---------------------------------------------------------------------------------------------


@st.composite
def whole_documents(draw):
    """Documents of 1..12 words, gold spans inside some of them per query, a run of whole documents."""
    n_docs = draw(st.integers(1, 6))
    words = [draw(st.integers(1, 12)) for _ in range(n_docs)]
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n_docs)], "text": [" ".join(["w"] * n) for n in words]})
    spans, rows = {}, []
    for q in range(draw(st.integers(1, 4))):
        relevant = draw(st.lists(st.integers(0, n_docs - 1), min_size=1, max_size=n_docs, unique=True))
        spans[f"q{q}"] = {}
        for d in relevant:
            length = 2 * words[d] - 1
            start = 2 * draw(st.integers(0, words[d] - 1))  # at a word: a span of white space holds no evidence
            spans[f"q{q}"][f"d{d}"] = [(start, draw(st.integers(start + 1, length)))]
        ranked = draw(st.lists(st.integers(0, n_docs - 1), max_size=n_docs, unique=True))
        rows += [(f"q{q}", f"d{d}", float(n_docs - r)) for r, d in enumerate(ranked)]
    qrels = pd.DataFrame(
        [(q, d, 1) for q, docs in spans.items() for d in docs], columns=["query_id", "doc_id", "relevance"]
    )
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return rm.Dataset.from_frames(qrels, documents=corpus), run, spans


@given(whole_documents(), st.integers(1, 6), st.integers(1, 40))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_one_chunk_per_whole_document_is_document_recall(data, k, budget):
    dataset, run, spans = data
    if run.empty:
        return
    alignment = rm.align(dataset, rm.Run.from_frame(run))
    result = evaluate_evidence(alignment, spans, [f"evidence_recall@{k}", f"evidence_recall@{budget}tok"])
    np.testing.assert_allclose(result.values[f"evidence_recall@{k}"], alignment.value(f"recall@{k}"), atol=1e-15)
    np.testing.assert_allclose(
        result.values[f"evidence_recall@{budget}tok"], alignment.value(f"recall@{budget}tok"), atol=1e-15
    )


@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30)), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30)), min_size=1, max_size=4),
    st.integers(1, 8),
)
@settings(max_examples=80, deadline=None)
def test_overlapping_chunks_never_count_a_character_twice(chunks, gold, k):
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    corpus = pd.DataFrame({"doc_id": ["A"], "text": [text]})
    dataset = rm.Dataset.from_frames(
        pd.DataFrame({"query_id": ["q"], "doc_id": ["A"], "relevance": [1]}), documents=corpus
    )
    n = len(chunks)
    run = rm.Run.from_frame(
        pd.DataFrame(
            {
                "query_id": ["q"] * n,
                "doc_id": [f"A#{i}" for i in range(n)],
                "source_doc": ["A"] * n,
                "score": [float(n - i) for i in range(n)],
            }
        )
    )
    places = pd.DataFrame(
        {
            "chunk_id": [f"A#{i}" for i in range(n)],
            "doc_id": ["A"] * n,
            "start": [s for s, _ in chunks],
            "end": [s + w for s, w in chunks],
        }
    )
    spans = {"q": {"A": [(s, s + w) for s, w in gold]}}
    alignment = rm.align(dataset, run)  # @k reads no token: the chunks need no text
    result = evaluate_evidence(alignment, spans, [f"evidence_recall_chars@{k}"], chunk_spans=places)
    gold_chars = set().union(*(range(s, s + w) for s, w in gold))
    seen = set().union(*(range(s, s + w) for s, w in chunks[:k]))
    assert result.values[f"evidence_recall_chars@{k}"][0] == pytest.approx(len(gold_chars & seen) / len(gold_chars))


def test_cli_evidence_says_which_metrics_need_a_text_the_run_lacks(tmp_path):
    """Was: without --corpus the default metrics ended in "token budgets count the tokens ...", no budget asked."""
    (tmp_path / "qrels.tsv").write_text("q1 0 A 1\nq2 0 B 1\n")
    (tmp_path / "spans.qrels").write_text("q1 0 A 1 6 11\nq2 0 B 1 0 5\n")
    (tmp_path / "run.trec").write_text("q1 Q0 A 1 2 r\nq2 Q0 B 1 2 r\n")
    base = ["evidence", "--dataset", str(tmp_path / "qrels.tsv"), "--run", str(tmp_path / "run.trec"), "--spans",
            str(tmp_path / "spans.qrels")]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert main(base, out, err) == 2
    assert "context_precision@5, tokens_to_evidence (among the default metrics) count the tokens" in err.getvalue()
    assert "give --corpus, a run with its chunks' texts, or -m without them" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*base, "-m", "evidence_recall@5"], out, err) == 0 and "evidence_recall@5" in out.getvalue()


def test_cli_evidence_reads_spans_and_refuses_without_them(tmp_path, capsys):
    (tmp_path / "qrels.tsv").write_text("q1 0 A 1\nq2 0 B 1\n", encoding="utf-8")
    corpus = [{"id": d, "title": "", "text": t} for d, t in zip(CORPUS["doc_id"], CORPUS["text"])]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus) + "\n", encoding="utf-8")
    (tmp_path / "spans.qrels").write_text("q1 0 A 1 6 11\nq1 0 A 1 12 17\nq2 0 B 1 0 5\n", encoding="utf-8")
    rows = RUN.frame.to_dict("records")
    lines = [
        {"query_id": q, "retrieved": [{k: r[k] for k in ("doc_id", "score", "text", "source_doc")} for r in rows
                                      if r["query_id"] == q]}
        for q in ("q1", "q2")
    ]  # fmt: skip
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    base = ["evidence", "--dataset", str(tmp_path / "qrels.tsv"), "--corpus", str(tmp_path / "corpus.jsonl"),
            "--run", str(tmp_path / "run.jsonl")]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    metrics = ["-m", "evidence_recall@1", "-m", "context_precision@6tok", "-m", "tokens_to_evidence"]
    metrics += ["-m", "evidence_recall@1tok"]  # each query's first chunk holds 2 tokens: 1 hands over nothing
    assert main([*base, "--spans", str(tmp_path / "spans.qrels"), *metrics], out, err) == 0, err.getvalue()
    rows_out = {line.split("\t")[0].strip(): line.split("\t")[2] for line in out.getvalue().splitlines()}
    assert rows_out["evidence_recall@1"] == "0.7500" and rows_out["context_precision@6tok"] == "0.5000"
    assert rows_out["evidence_recall@1tok"] == "0.0000"
    assert "the budget of 1 tokens hands over nothing for 2 of 2 queries" in err.getvalue()
    assert "budget of 6 tokens" not in err.getvalue()
    assert rows_out["tokenizer"] == "whitespace" and rows_out["tokens_to_evidence"] == "2.0000"
    assert "1 distinct retrieved chunk(s) ('A#9'), at 1 place(s) in the rankings, could not be placed" in err.getvalue()
    assert "have gold evidence" not in err.getvalue()  # both queries have spans
    (tmp_path / "q1-only.qrels").write_text("q1 0 A 1 6 11\n", encoding="utf-8")
    err = io.StringIO()
    assert main([*base, "--spans", str(tmp_path / "q1-only.qrels"), *metrics], io.StringIO(), err) == 0
    assert "1 of the 2 evaluated queries have gold evidence: the means are over those 1, the other 1 left out" in (
        err.getvalue()
    )
    bad = io.StringIO()
    assert main(base, io.StringIO(), bad) == 2 and "give the gold evidence" in bad.getvalue()
    with pytest.raises(SystemExit) as both:  # two sources of gold evidence: exclusive, not "give one"
        main([*base, "--spans", str(tmp_path / "spans.qrels"), "--spans-from-answers"], io.StringIO(), bad)
    said = capsys.readouterr().err
    assert both.value.code == 2 and "argument --spans-from-answers: not allowed with argument --spans" in said
    # spans that cannot be right: named by file and line, never a number read off them
    length = len(CORPUS["text"][0])
    refused = {
        f"q1 0 A 1 6 11\nq1 0 A 1 0 {length + 1}\n": f"bad.qrels:2: expected a span within the {length} characters of "
        f"document 'A', found end {length + 1}",
        "q1 0 A 1 6 11\nq2 0 NOPE 1 0 5\n": "bad.qrels:2: expected a document of the corpus, found document 'NOPE'",
        "z1 0 A 1 6 11\n": "bad.qrels: expected spans of the dataset's queries ['q1', 'q2'], found queries ['z1']",
    }
    for text, message in refused.items():
        (tmp_path / "bad.qrels").write_text(text, encoding="utf-8")
        err = io.StringIO()
        assert main([*base, "--spans", str(tmp_path / "bad.qrels"), *metrics], io.StringIO(), err) == 2
        assert message in err.getvalue() and "Traceback" not in err.getvalue(), (text, err.getvalue())


def test_a_chunk_prefixed_with_its_documents_title_is_placed_without_it():
    corpus = pd.DataFrame({"doc_id": ["A"], "title": ["Refunds"], "text": ["Intro. Refunds within 30 days."]})
    dataset = rm.Dataset.from_frames(
        pd.DataFrame({"query_id": ["q"], "doc_id": ["A"], "relevance": [1]}), documents=corpus
    )
    run = rm.Run.from_frame(
        pd.DataFrame(
            {
                "query_id": ["q", "q"],
                "doc_id": ["A#1", "A#2"],
                "source_doc": ["A", "A"],
                "score": [2.0, 1.0],
                "text": ["Refunds\nRefunds within 30 days.", "Other\nIntro."],
            }
        )
    )
    result = evaluate_evidence(rm.align(dataset, run), {"q": {"A": [(22, 29)]}}, ["evidence_recall@1"])
    assert result.values["evidence_recall@1"].tolist() == [1.0]  # "30 days" found once the title line is dropped
    assert result.unlocated == 1  # "Other" is not the title: that chunk is not placed


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("huge.tsv", "query_id\tdoc_id\tstart\tend\nq1\tA\t0\t99999999999999999999\n",
         "huge.tsv:2: expected a span end of at most 9223372036854775807, found '99999999999999999999'"),
        ("huge.jsonl", '{"query_id": "q1", "doc_id": "A", "start": 1e20, "end": 1e21}\n',
         "huge.jsonl:1: expected a span start as a whole number >= 0 (a JSON integer), found 1e+20"),
        ("bigint.jsonl", '{"query_id": "q1", "doc_id": "A", "spans": [[0, 99999999999999999999]]}\n',
         "bigint.jsonl:1: expected a span end of at most 9223372036854775807, found"),
        ("fullwidth.tsv", "query_id\tdoc_id\tstart\tend\nq1\tA\t５\t１０\n",
         "fullwidth.tsv:2: expected a span start as a whole number >= 0 (ASCII digits), found '５'"),
        ("underscore.csv", "query_id,doc_id,start,end\nq1,A,1_0,30\n",
         "underscore.csv:2: expected a span start as a whole number >= 0 (ASCII digits), found '1_0'"),
        ("plus.qrels", "q1 0 A 1 +5 10\n", "plus.qrels:1: expected a span start as a whole number >= 0 (ASCII digits)"),
        ("strings.jsonl", '{"query_id": "q1", "doc_id": "A", "spans": [["17", "30"]]}\n',
         "strings.jsonl:1: expected a span start as a whole number >= 0 (a JSON integer), found '17'"),
        ("float.jsonl", '{"query_id": "q1", "doc_id": "A", "start": 17.0, "end": 30}\n',
         "float.jsonl:1: expected a span start as a whole number >= 0 (a JSON integer), found 17.0"),
    ],
)  # fmt: skip
def test_span_offsets_are_ascii_digits_or_json_integers_within_int64(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParseError) as raised:
        load_spans(path)
    assert message in str(raised.value)
    chunk_text = text.replace("query_id", "chunk_id") if not name.endswith(".qrels") else None
    if chunk_text is not None:  # a chunk spans file reads its offsets alike
        path.write_text(chunk_text, encoding="utf-8")
        with pytest.raises(ParseError) as raised:
            load_chunk_spans(path)
        assert message in str(raised.value)


def test_the_largest_offset_and_leading_zeros_are_read(tmp_path):
    path = tmp_path / "fine.csv"
    path.write_text("query_id,doc_id,start,end\nq1,A,0017,9223372036854775807\n", encoding="utf-8")
    table = load_spans(path)
    assert table.column("start").to_pylist() == [17] and table.column("end").to_pylist() == [2**63 - 1]


def test_cli_evidence_names_the_line_of_an_offset_too_large(tmp_path):
    (tmp_path / "qrels.tsv").write_text("q1 0 A 1\n", encoding="utf-8")
    (tmp_path / "run.tsv").write_text("q1 Q0 A 1 1.0 r\n", encoding="utf-8")
    (tmp_path / "spans.tsv").write_text("query_id\tdoc_id\tstart\tend\nq1\tA\t0\t5\n", encoding="utf-8")
    (tmp_path / "cs.tsv").write_text("chunk_id\tdoc_id\tstart\tend\nA\tA\t0\t99999999999999999999\n", encoding="utf-8")
    err = io.StringIO()
    args = ["evidence", "--dataset", str(tmp_path / "qrels.tsv"), "--run", str(tmp_path / "run.tsv"),
            "--spans", str(tmp_path / "spans.tsv"), "--chunk-spans", str(tmp_path / "cs.tsv")]  # fmt: skip
    assert main(args, io.StringIO(), err) == 2
    assert "cs.tsv:2: expected a span end of at most 9223372036854775807" in err.getvalue()
    assert "Traceback" not in err.getvalue()


def _files(tmp_path, run_rows, header="query_id,doc_id,score,text"):
    """The dataset of this module as files (qrels, corpus, spans) and a CSV run of ``run_rows``."""
    (tmp_path / "qrels.tsv").write_text("q1 0 A 1\nq2 0 B 1\n", encoding="utf-8")
    corpus = [{"id": d, "title": "", "text": t} for d, t in zip(CORPUS["doc_id"], CORPUS["text"])]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus) + "\n", encoding="utf-8")
    (tmp_path / "spans.qrels").write_text("q1 0 A 1 6 11\nq2 0 B 1 0 5\n", encoding="utf-8")
    (tmp_path / "run.csv").write_text("\n".join([header, *run_rows]) + "\n", encoding="utf-8")
    return {name: str(tmp_path / name) for name in ("qrels.tsv", "corpus.jsonl", "spans.qrels", "run.csv")}


def test_cli_evidence_leaves_out_a_mean_no_query_has_and_says_which_answers_it_lacks(tmp_path):
    """Was: ``tokens_to_evidence all nan`` in the table; and --spans-from-answers on a dataset without expected
    answers blamed the documents for holding none."""
    f = _files(tmp_path, ["q1,A,2,ccccc dd", "q2,B,1,yyyyy"], "query_id,doc_id,score,text")
    data = ["--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--run", f["run.csv"]]
    out, err = io.StringIO(), io.StringIO()
    assert main(["evidence", *data, "--spans", f["spans.qrels"], "-m", "evidence_recall@1,tokens_to_evidence"],
                out, err) == 0, err.getvalue()  # fmt: skip
    assert "evidence_recall@1     \tall\t0.0000" in out.getvalue() and "nan" not in out.getvalue()
    assert "tokens_to_evidence has no value for any query, so no mean" in err.getvalue()
    err = io.StringIO()
    assert main(["evidence", *data, "--spans-from-answers"], io.StringIO(), err) == 2
    assert (
        "dataset 'qrels' has no expected answer" in err.getvalue() and "give the evidence as --spans" in err.getvalue()
    )


def test_cli_evidence_refuses_a_chunk_run_not_mapped_to_documents_as_eval_does(tmp_path):
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb", "q1,A#1,1,bbbbb ccccc", "q2,B#0,1,xxxxx yyyyy"])
    data = ["--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--run", f["run.csv"]]
    evidence_err, eval_err = io.StringIO(), io.StringIO()
    assert main(["evidence", *data, "--spans", f["spans.qrels"]], io.StringIO(), evidence_err) == 2
    assert main(["eval", *data], io.StringIO(), eval_err) == 2
    assert "map chunks to documents with --chunk-pattern" in evidence_err.getvalue()
    assert evidence_err.getvalue() == eval_err.getvalue()
    base_err = io.StringIO()
    (tmp_path / "base.csv").write_text("query_id,doc_id,score\nq1,A,1\nq2,B,1\n", encoding="utf-8")
    baseline = ["evidence", *data, "--baseline", str(tmp_path / "base.csv"), "--spans", f["spans.qrels"]]
    assert main(baseline, io.StringIO(), base_err) == 2 and "map chunks to documents" in base_err.getvalue()
    out = io.StringIO()
    fixed = ["--spans", f["spans.qrels"], "--chunk-pattern", "#", "-m", "evidence_recall@1"]
    assert main(["evidence", *data, *fixed], out, io.StringIO()) == 0
    assert "evidence_recall@1     \tall\t1.0000" in out.getvalue()
    # chunk spans say which document each chunk lies in: they map a run without source_doc too
    (tmp_path / "cs.tsv").write_text("chunk_id\tdoc_id\tstart\tend\nA#0\tA\t0\t11\nB#0\tB\t0\t11\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    spans = ["--spans", f["spans.qrels"], "--chunk-spans", str(tmp_path / "cs.tsv"), "-m", "evidence_recall@1"]
    assert main(["evidence", *data, *spans], out, err) == 0
    assert "evidence_recall@1     \tall\t1.0000" in out.getvalue()
    # a chunk the chunk spans lack keeps its own id: said, naming the file
    assert f"run 'run': 1 of its 3 retrieved chunks are not in {tmp_path / 'cs.tsv'} (such as 'A#1')" in err.getvalue()


def test_a_run_none_of_whose_chunks_is_placed_is_an_error_naming_what_to_give(tmp_path):
    chunks = rm.Run.from_frame(RUN.frame[RUN.frame["doc_id"] != RUN.frame["source_doc"]])  # A#0, A#1, A#9
    with pytest.raises(rm.RagMetricsError, match=r"none of its 3 retrieved chunk\(s\) could be placed .* give the "
                       r"corpus, .* or where each chunk lies \(--chunk-spans"):  # fmt: skip
        evaluate_evidence(rm.align(rm.Dataset.from_frames(QRELS), chunks), SPANS, ["evidence_recall@1"])
    nowhere = RUN.frame.assign(doc_id=[f"c{i}" for i in range(5)], text="not in any document")
    with pytest.raises(rm.RagMetricsError, match=r"no chunk's text occurs in its document's corpus text \(documents "
                       r"such as 'A', 'B'\): give where each chunk lies"):  # fmt: skip
        evaluate_evidence(rm.align(DATASET, rm.Run.from_frame(nowhere)), SPANS, ["evidence_recall@1"])
    # chunks without a text of their own, mapped to documents: said so (was: "map each chunk to its document")
    textless = chunks.frame.drop(columns=[c for c in ("text",) if c in chunks.frame.columns])
    with pytest.raises(rm.RagMetricsError, match=r"the chunks have no text to look for in their documents .* give the "
                       r"run's chunk texts \(a text column\), or where each chunk lies"):  # fmt: skip
        evaluate_evidence(rm.align(DATASET, rm.Run.from_frame(textless)), SPANS, ["evidence_recall@1"])
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb,A", "q2,B#0,1,xxxxx yyyyy,B"], "query_id,doc_id,score,text,source_doc")
    err = io.StringIO()
    args = ["evidence", "--dataset", f["qrels.tsv"], "--run", f["run.csv"], "--spans", f["spans.qrels"]]
    assert main(args, io.StringIO(), err) == 2
    assert "none of its 2 retrieved chunk(s) could be placed" in err.getvalue() and "--corpus" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*args, "--corpus", f["corpus.jsonl"], "-m", "evidence_recall@1"], out, err) == 0
    assert "evidence_recall@1     \tall\t1.0000" in out.getvalue() and "could not be placed" not in err.getvalue()


def test_cli_evidence_counts_every_run_with_one_tokenizer(tmp_path):
    # alone, the first run's texts pick mixed (mostly English, one Chinese text) and the second's jieba
    corpus = {"A": "alpha beta gamma delta epsilon zeta eta theta", "C": "北京是中国的首都，上海是最大的城市。"}
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in corpus.items()),
        encoding="utf-8",
    )
    (tmp_path / "qrels.tsv").write_text("q1 0 A 1\nq3 0 C 1\n", encoding="utf-8")
    (tmp_path / "spans.tsv").write_text("query_id\tdoc_id\tstart\tend\nq1\tA\t17\t30\nq3\tC\t9\t11\n", encoding="utf-8")
    rows = ["query_id,doc_id,score,text,source_doc", "q1,A#1,9,gamma delta epsilon zeta,A",
            "q1,A#0,8,alpha beta gamma delta,A", "q1,A#2,7,eta theta,A", "q3,C#0,9,北京是中国的首都，,C"]  # fmt: skip
    (tmp_path / "x.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "y.csv").write_text(
        "\n".join([*rows, "q3,C#all,1,北京是中国的首都，上海是最大的城市。,C"]) + "\n", encoding="utf-8"
    )
    data = ["--dataset", str(tmp_path / "qrels.tsv"), "--corpus", str(tmp_path / "corpus.jsonl"), "--spans",
            str(tmp_path / "spans.tsv")]  # fmt: skip
    x, y = str(tmp_path / "x.csv"), str(tmp_path / "y.csv")
    alone = []
    for run in (x, y):
        out = io.StringIO()
        assert main(["evidence", *data, "--run", run, "-m", "tokens_to_evidence"], out, io.StringIO()) == 0
        alone += [line.split("\t")[2] for line in out.getvalue().splitlines() if line.startswith("tokenizer")]
    assert alone == ["mixed", "jieba"]
    out = io.StringIO()
    assert main(["evidence", *data, "--run", x, "--run", y, "-m", "tokens_to_evidence"], out, io.StringIO()) == 0
    assert [line.split("\t")[2] for line in out.getvalue().splitlines() if line.startswith("tokenizer")] == [
        "jieba"
    ] * 2
    out = io.StringIO()
    assert main(["evidence", *data, "--baseline", x, "--run", y, "--budget", "8", "-k", "2"], out, io.StringIO()) == 0
    assert "tokens in the top 2 chunks (mean, jieba)" in out.getvalue()


def test_chunkings_compared_at_equal_token_cost_need_one_tokenizer():
    first = rm.align(DATASET, RUN, tokenizer="whitespace")
    second = rm.align(DATASET, RUN.with_name("other"), tokenizer="jieba")
    with pytest.raises(rm.RagMetricsError, match=r"different tokenizers \(whitespace, jieba\)"):
        compare_chunkings(DATASET, [first, second], spans=SPANS)


def test_cli_evidence_json_per_query_and_the_queries_absent_from_the_run(tmp_path):
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb,A", "q1,A#0,1,aaaaa bbbbb,A"], "query_id,doc_id,score,text,source_doc")
    data = ["--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--run", f["run.csv"]]
    out, err = io.StringIO(), io.StringIO()
    args = ["evidence", *data, "--spans", f["spans.qrels"], "-m", "evidence_recall@1", "--format", "json"]
    assert main([*args, "--per-query"], out, err) == 0, err.getvalue()
    eval_out, eval_err = io.StringIO(), io.StringIO()
    assert main(["eval", *data, "-m", "recall@1", "--format", "json", "--per-query"], eval_out, eval_err) == 0
    run, eval_run = json.loads(out.getvalue())["runs"]["run"], json.loads(eval_out.getvalue())["runs"]["run"]
    assert run["per_query"] == {"q1": {"evidence_recall@1": 1.0}, "q2": {"evidence_recall@1": 0.0}}
    assert list(eval_run["per_query"]) == list(run["per_query"])  # eval's shape: {query: {metric: value}}
    # q2 is absent from the run (its evidence recall 0), and a duplicate row is dropped: noted as eval notes them
    note = "ragmetrics: note: run 'run': 1 judged queries missing from the run (scored 0); 1 duplicate rows dropped"
    assert note in err.getvalue() and note in eval_err.getvalue()
    assert "; ".join(run["notes"]) in note and run["notes"]  # the JSON holds the notes the table writes to stderr
    assert run["queries_with_a_value"] == {"evidence_recall@1": 2} and run["queries_with_spans"] == 2
    out = io.StringIO()
    assert main(args, out, io.StringIO()) == 0 and "per_query" not in json.loads(out.getvalue())["runs"]["run"]
    err = io.StringIO()
    baseline = ["evidence", *data, "--baseline", f["run.csv"], "--spans", f["spans.qrels"], "--per-query"]
    assert main(baseline, io.StringIO(), err) == 2
    assert "--per-query: read only without --baseline" in err.getvalue() and "or drop --per-query" in err.getvalue()


def test_cli_evidence_refuses_the_comparisons_options_without_baseline_and_defaults_them_with_it(tmp_path):
    """Was: without --baseline, -k, --budget and the paired tests' options were taken and ignored. With --baseline
    they are None unless given, their defaults resolved where the comparison reads them: the same output."""
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb,A", "q2,B#0,1,xxxxx yyyyy,B"], "query_id,doc_id,score,text,source_doc")
    (tmp_path / "other.csv").write_text(
        "query_id,doc_id,score,text,source_doc\nq1,A#1,2,bbbbb ccccc,A\nq2,B#0,1,xxxxx yyyyy,B\n", encoding="utf-8"
    )
    data = ["--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--spans", f["spans.qrels"]]
    out, err = io.StringIO(), io.StringIO()
    assert main(["evidence", *data, "--run", f["run.csv"], "--alpha", "0.01"], out, err) == 2
    assert err.getvalue() == (
        "ragmetrics: error: --alpha 0.01: read only with --baseline (the comparison of chunkings: its cut-off in "
        "chunks, its token budget and its paired tests); give --baseline, or drop --alpha\n"
    )
    assert not out.getvalue()
    compared = ["evidence", *data, "--baseline", f["run.csv"], "--run", str(tmp_path / "other.csv")]
    defaults = ["-k", "10", "--budget", "512", "--test", "t", "--correction", "holm", "--alpha", "0.05", "--seed", "0",
                "--resamples", "10000"]  # fmt: skip
    said = []
    for argv in (compared, [*compared, *defaults]):
        out = io.StringIO()
        assert main([*argv, "--format", "json"], out, io.StringIO()) == 0
        said.append(json.loads(out.getvalue()))
    assert said[0] == said[1]
    assert (said[0]["k"], said[0]["budget_tokens"]) == (10, 512)
    assert said[0]["correction"] == "Holm-corrected over no comparison: none was tested"


def _one_document(text: str, run_rows: list[dict[str, object]], answer: str = "") -> tuple[rm.Dataset, rm.Run]:
    qrels = pd.DataFrame([("q1", "A", 1)], columns=["query_id", "doc_id", "relevance"])
    queries = pd.DataFrame({"query_id": ["q1"], "query": ["what?"], "expected_answer": [answer]})
    documents = pd.DataFrame({"doc_id": ["A"], "text": [text]})
    return rm.Dataset.from_frames(qrels, queries, documents=documents), rm.Run.from_frame(pd.DataFrame(run_rows))


def test_a_node_keyed_by_its_document_s_id_is_placed_by_its_own_text():
    """A framework's node whose id is its source document's (LlamaIndex's ref_doc_id) carries a chunk's text: it
    covers that chunk, not the whole document."""
    text = "alpha beta gamma delta epsilon zeta eta theta"
    dataset, run = _one_document(text, [{"query_id": "q1", "doc_id": "A", "score": 1.0, "text": "eta theta"}])
    spans = {"q1": {"A": [(text.index("delta"), text.index("delta") + len("delta epsilon"))]}}
    result = evaluate_evidence(rm.align(dataset, run), spans, ["evidence_recall@1", "context_precision@1"])
    assert result.values["evidence_recall@1"].tolist() == [0.0] and result.values["context_precision@1"].tolist() == [
        0.0
    ]
    whole = rm.Run.from_frame(pd.DataFrame([{"query_id": "q1", "doc_id": "A", "score": 1.0}]))  # no text: the document
    assert evaluate_evidence(rm.align(dataset, whole), spans, ["evidence_recall@1"]).values["evidence_recall@1"] == 1.0


def test_spans_from_the_relevant_documents_at_a_level_and_without_a_corpus():
    """Answers and whole documents read the same pairs: label at least rel_level, a corpus text that is not empty."""
    qrels = pd.DataFrame([("q1", "A", 2), ("q1", "B", 1), ("q2", "E", 2), ("q2", "Z", 2)],
                         columns=["query_id", "doc_id", "relevance"])  # fmt: skip
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "expected_answer": ["bbbbb", "x"]})
    documents = pd.DataFrame({"doc_id": ["A", "B", "E"], "text": ["aaaaa bbbbb bbbbb", "bbbbb", ""]})
    dataset = rm.Dataset.from_frames(qrels, queries, documents=documents)
    assert spans_from_documents(dataset).to_pylist() == [
        {"query_id": "q1", "doc_id": "A", "start": 0, "end": 17}, {"query_id": "q1", "doc_id": "B", "start": 0, "end": 5}
    ]  # fmt: skip
    assert [tuple(r.values()) for r in spans_from_documents(dataset, rel_level=2).to_pylist()] == [("q1", "A", 0, 17)]
    assert [tuple(r.values()) for r in spans_from_answers(dataset, rel_level=2).to_pylist()] == [
        ("q1", "A", 6, 11), ("q1", "A", 12, 17)
    ]  # fmt: skip
    bare = rm.Dataset.from_frames(qrels, queries)
    with pytest.raises(rm.RagMetricsError, match=r"^whole-document evidence needs the corpus texts \(--corpus"):
        spans_from_documents(bare)
    with pytest.raises(rm.RagMetricsError, match=r"^locating answers in documents needs the corpus texts \(--corpus"):
        spans_from_answers(bare)


def test_answers_are_located_as_whole_words():
    text = "Version 5 shipped in 2015, 50 days late; version 5 again."
    dataset, _ = _one_document(text, [{"query_id": "q1", "doc_id": "A", "score": 1.0}], answer="5")
    starts = spans_from_answers(dataset).column("start").to_pylist()
    assert [text[s - 8 : s + 1] for s in starts] == ["Version 5", "version 5"]
    price = "个人版年付168元，团队版年付1680元。"
    chinese, _ = _one_document(price, [{"query_id": "q1", "doc_id": "A"}], answer="168")
    assert spans_from_answers(chinese).column("start").to_pylist() == [5]  # not the 168 of 1680
    chinese, _ = _one_document(price, [{"query_id": "q1", "doc_id": "A"}], answer="年付")
    assert spans_from_answers(chinese).column("start").to_pylist() == [3, 13]  # no word edges between CJK characters


def test_white_space_between_chunks_is_no_evidence_missed():
    """Two chunks split at a space hand over every word of the evidence "delta epsilon": recall 1, not 12/13."""
    text = "alpha beta gamma delta epsilon zeta"
    cut = text.index(" epsilon")
    rows = [{"query_id": "q1", "doc_id": "c1", "source_doc": "A", "score": 2.0, "text": text[:cut]},
            {"query_id": "q1", "doc_id": "c2", "source_doc": "A", "score": 1.0, "text": text[cut + 1 :]}]  # fmt: skip
    dataset, run = _one_document(text, rows)
    spans = {"q1": {"A": [(text.index("delta"), text.index("delta") + len("delta epsilon"))]}}
    values = evaluate_evidence(rm.align(dataset, run), spans, ["evidence_recall@2", "evidence_recall@1"]).values
    assert values["evidence_recall@2"].tolist() == [1.0] and values["evidence_recall@1"].tolist() == [5 / 12]
    with pytest.raises(rm.RagMetricsError, match=r"hold only white space: expected evidence text"):
        evaluate_evidence(rm.align(dataset, run), {"q1": {"A": [(cut, cut + 1)]}}, ["evidence_recall@1"])


def test_a_span_of_white_space_is_refused_by_its_line(tmp_path):
    text = "alpha beta gamma"
    dataset, _ = _one_document(text, [{"query_id": "q1", "doc_id": "A"}])
    (tmp_path / "spans.tsv").write_text("query_id\tdoc_id\tstart\tend\nq1\tA\t5\t6\n", encoding="utf-8")
    spans = load_spans(tmp_path / "spans.tsv")
    with pytest.raises(ParseError, match=r"spans.tsv:2: expected a span holding evidence text, found characters 5-6"):
        check_spans(spans, str(tmp_path / "spans.tsv"), dataset)


def test_chunk_spans_that_contradict_themselves_or_the_run_are_refused(tmp_path):
    text = "alpha beta gamma delta"
    rows = [{"query_id": "q1", "doc_id": "c1", "source_doc": "A", "score": 1.0, "text": "alpha beta"}]
    dataset, run = _one_document(text, rows)
    twice = tmp_path / "twice.tsv"
    twice.write_text("chunk_id\tdoc_id\tstart\tend\nc1\tA\t0\t10\nc1\tA\t11\t16\n", encoding="utf-8")
    with pytest.raises(
        ParseError,
        match=r"twice.tsv:3: expected one place per chunk \(chunk 'c1' lies at 'A' 0-10; two chunkings in one file need chunk ids of their own\), found 'A' 11-16",
    ):
        check_spans(load_chunk_spans(twice), str(twice), dataset, key="chunk_id")
    elsewhere = pd.DataFrame({"chunk_id": ["c1"], "doc_id": ["B"], "start": [0], "end": [10]})
    with pytest.raises(
        ParseError,
        match=r"^chunk spans: expected chunk 'c1' in document 'A' \(the source_doc of run 'run'\), found document 'B'",
    ):
        evaluate_evidence(rm.align(dataset, run), {"q1": {"A": [(0, 5)]}}, ["evidence_recall@1"], chunk_spans=elsewhere)
    # a span of other text than the chunk's own credits it with evidence it does not hold: refused
    shifted = pd.DataFrame({"chunk_id": ["c1"], "doc_id": ["A"], "start": [11], "end": [22]})
    with pytest.raises(ParseError, match=r"found 'A' 11-22, which holds 'gamma delta'"):
        evaluate_evidence(rm.align(dataset, run), {"q1": {"A": [(11, 16)]}}, ["evidence_recall@1"], chunk_spans=shifted)
    # read from a file, both are said of the chunk's line
    (tmp_path / "places.tsv").write_text("chunk_id\tdoc_id\tstart\tend\nc0\tA\t0\t5\nc1\tB\t0\t10\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"places.tsv:3: expected chunk 'c1' in document 'A'"):
        evaluate_evidence(rm.align(dataset, run), {"q1": {"A": [(0, 5)]}}, ["evidence_recall@1"],
                          chunk_spans=load_chunk_spans(tmp_path / "places.tsv"))  # fmt: skip
    (tmp_path / "shifted.jsonl").write_text(
        '{"chunk_id": "c1", "doc_id": "A", "start": 11, "end": 22}\n', encoding="utf-8"
    )
    with pytest.raises(
        ParseError, match=r"shifted.jsonl:1: expected the span where the text of chunk 'c1' of run 'run' lies"
    ):
        evaluate_evidence(rm.align(dataset, run), {"q1": {"A": [(11, 16)]}}, ["evidence_recall@1"],
                          chunk_spans=load_chunk_spans(tmp_path / "shifted.jsonl"))  # fmt: skip
    # a chunker's changes are not a misplacement: a line joined, a ligature unfolded
    joined_rows = [{"query_id": "q1", "doc_id": "c1", "source_doc": "A", "score": 1.0, "text": "第一句话。第二句ﬁ话。"}]
    joined, joined_run = _one_document("第一句话。\n第二句fi话。", joined_rows)
    placed = pd.DataFrame({"chunk_id": ["c1"], "doc_id": ["A"], "start": [0], "end": [12]})
    found = evaluate_evidence(rm.align(joined, joined_run), {"q1": {"A": [(0, 4)]}}, ["evidence_recall@1"],
                              chunk_spans=placed)  # fmt: skip
    assert found.means["evidence_recall@1"] == 1.0


def test_span_tables_read_quotes_and_ids_with_spaces(tmp_path):
    (tmp_path / "quoted.csv").write_text('query_id,doc_id,start,end\nq1,"A,1",0,5\n', encoding="utf-8")
    (tmp_path / "spaced.tsv").write_text("query_id\tdoc_id\tstart\tend\nq1\tmy doc\t0\t5\n", encoding="utf-8")
    assert load_spans(tmp_path / "quoted.csv").column("doc_id").to_pylist() == ["A,1"]
    assert load_spans(tmp_path / "spaced.tsv").column("doc_id").to_pylist() == ["my doc"]
    (tmp_path / "grade.qrels").write_text("q1 0 A ５ 0 5\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"grade.qrels:1: expected an integer relevance \(ASCII digits\)"):
        load_spans(tmp_path / "grade.qrels")


def test_tokens_to_evidence_says_over_how_many_queries_it_is_a_mean():
    text = "alpha beta gamma delta"
    rows = [{"query_id": "q1", "doc_id": "A", "score": 1.0}]
    dataset, run = _one_document(text, rows)
    qrels = pd.DataFrame([("q1", "A", 1), ("q2", "A", 1)], columns=["query_id", "doc_id", "relevance"])
    both = rm.Dataset.from_frames(qrels, documents=dataset.documents)
    spans = {"q1": {"A": [(0, 5)]}, "q2": {"A": [(6, 10)]}}
    result = evaluate_evidence(rm.align(both, run, missing="zero"), spans, ["tokens_to_evidence"])
    assert np.isnan(result.values["tokens_to_evidence"]).tolist() == [False, True]
    assert any("mean over the 1 of those 2 queries some retrieved chunk hands evidence of" in n for n in result.notes)


@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=80))
@settings(max_examples=300, deadline=None)
def test_visible_prefix_counts_the_characters_that_are_not_white_space(text):
    """Any text: CJK, ideographic and no-break spaces, line and paragraph separators, lone surrogates."""
    expected = [sum(not c.isspace() for c in text[:i]) for i in range(len(text) + 1)]
    assert visible_prefix(text).tolist() == expected


@pytest.mark.parametrize(
    "text",
    ["个人版 年付\u3000168元，\n团队版\u00a0年付", "a\u2028b\u2029c\x1c\x1d\x1e\x1f\x85d", "\ud800 \udfff", "", "   "],
)
def test_visible_prefix_of_white_space_of_every_kind(text):
    assert visible_prefix(text).tolist() == [sum(not c.isspace() for c in text[:i]) for i in range(len(text) + 1)]


@given(
    st.lists(st.text(st.sampled_from("ab中文 \u3000\u00a0\t\n\u2028\x1c\x85"), max_size=30), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 40), st.integers(1, 40)), min_size=1, max_size=10),
)
@settings(max_examples=200, deadline=None)
def test_gold_characters_are_weighed_within_their_own_document(texts, intervals):
    """The documents' texts are counted in one pass over them joined: an interval past a document's end counts none
    of the next document's characters; a document without text (d4 here) counts every character."""
    corpus = {f"d{i}": text for i, text in enumerate(texts)}
    weigh = evidence._Weigher(corpus, [f"d{i}" for i in range(5)])
    for doc, start, width in intervals:
        text = corpus.get(f"d{doc}")
        expected = width if text is None else sum(not c.isspace() for c in text[start : start + width])
        assert weigh(f"d{doc}", [(start, start + width)]) == expected


def test_evaluate_evidence_builds_the_corpus_lookup_once():
    """The gold characters' weights, the chunks' places and the evidence tokens read one lookup of the corpus texts."""
    built: list[str] = []

    def count(frame, event, _arg):
        if event == "call" and frame.f_code is evidence._corpus.__code__:
            built.append(frame.f_locals["field"])

    sys.setprofile(count)
    try:
        result = evaluate_evidence(rm.align(DATASET, RUN), SPANS, ["evidence_recall@3", "context_precision@3"])
    finally:
        sys.setprofile(None)
    assert built.count("text") == 1
    assert result.values["context_precision@3"].tolist() == [3 / 6, 0.5]  # the lookup served the evidence tokens


def test_the_chunks_texts_are_taken_in_ranking_order_once():
    """The token counts and the chunks' places read one copy of the run's text column in ranking order."""
    run = rm.Run.from_frame(RUN.frame.assign(score=[1.0, 2.0, 3.0, 4.0, 1.0]))  # stored against ranking order
    alignment = rm.align(DATASET, run)
    column = alignment.run.table.column("text")
    taken: list[int] = []

    def count(frame, event, _arg):
        if event == "call" and frame.f_code is kernels.take.__code__ and frame.f_locals["values"].equals(column):
            taken.append(1)

    sys.setprofile(count)
    try:
        result = evaluate_evidence(alignment, SPANS, ["evidence_recall@3", "context_precision@3"])
    finally:
        sys.setprofile(None)
    assert len(taken) == 1
    assert result.values["evidence_recall@3"].tolist() == [1.0, 1.0]  # A#9 (nowhere), then A#1 covers q1's gold


def _decided(verdicts: dict[str, str]) -> pd.DataFrame:
    """A chunkings table on the deciding metric: the baseline ``base`` and a run per verdict code."""
    rows = [
        {
            "metric": "recall@512tok",
            "run": "base",
            "mean": 0.5,
            "delta": 0.0,
            "n": 30,
            "verdict": "baseline",
            "p_value_corrected": np.nan,
            "ci_level_adjusted": 0.95,
            "ci_low_adjusted": 0.0,
            "ci_high_adjusted": 0.0,
        }
    ]
    for run, code in verdicts.items():
        rows.append({"metric": "recall@512tok", "run": run, "mean": 0.6 if run == "top" else 0.4, "delta": 0.1,
                     "n": 30, "verdict": code, "p_value_corrected": 0.01, "ci_level_adjusted": 0.99,
                     "ci_low_adjusted": 0.01, "ci_high_adjusted": 0.2})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("code", ["mixed", "cannot tell", "worse"])
def test_the_chunkings_verdict_sentence_words_every_verdict(code):
    """Was: a winner whose verdict was ``mixed`` or ``cannot tell`` printed the code inside the sentence ("chunks-512
    has the highest ...: mixed, +0.1000 ..."), and so did a baseline winner's list of the others."""
    _, sentence = _summary(_decided({"top": code}), "recall@512tok", "base", "holm", 3, 512)
    assert f": {verdict_words(code, 'base')}, +0.1000" in sentence
    assert f": {code}," not in sentence
    winner, sentence = _summary(
        _decided({"low": code}).assign(mean=[0.7, 0.4]), "recall@512tok", "base", "holm", 3, 512
    )
    assert winner == "base" and f"low +0.1000 (p=0.01, {verdict_words(code, 'base')})" in sentence


def test_the_chunkings_sentence_names_the_rows_a_test_finds_going_the_other_way():
    """Was: the summary spoke of the deciding metric only, so a winner at equal token cost that was significantly
    worse at document level read as a plain win."""
    table = _decided({"top": "better"}).assign(level="span")
    against = {"metric": "recall@10", "level": "document", "run": "top", "mean": 0.3, "delta": -0.2, "n": 30,
               "verdict": "worse", "p_value_corrected": 0.004}  # fmt: skip
    winner, sentence = _summary(pd.concat([table, pd.DataFrame([against])]), "recall@512tok", "base", "holm", 4, 512)
    assert winner == "top" and sentence.endswith("; but it is significantly worse on recall@10 (-0.2000, p=0.004).")
    # the baseline winning, another run significantly better elsewhere is named
    table = _decided({"low": "not significant"}).assign(mean=[0.7, 0.4])
    beside = {**against, "run": "low", "delta": 0.2, "verdict": "better"}
    winner, sentence = _summary(pd.concat([table, pd.DataFrame([beside])]), "recall@512tok", "base", "holm", 4, 512)
    assert winner == "base" and "but low is significantly better on recall@10 (+0.2000, p=0.004)." in sentence
    # a contrary delta no test finds is not named
    calm = {**against, "verdict": "not significant"}
    _, sentence = _summary(pd.concat([_decided({"top": "better"}), pd.DataFrame([calm])]), "recall@512tok", "base",
                           "holm", 4, 512)  # fmt: skip
    assert "but" not in sentence


def test_every_verdict_has_words_and_a_term_that_are_not_its_code():
    for code in VERDICTS:
        assert code in VERDICT_TERMS and verdict_words(code, "bm25")
    # one registry holds every context's words for every verdict: a verdict without them cannot be written
    assert tuple(SAID) == VERDICTS == get_args(Verdict)
    contexts = [f.name for f in fields(VerdictSaid)][:-1]
    assert contexts == ["sentence", "term", "mark", "gate", "step", "pair"]
    assert all(getattr(SAID[code], context).strip() for code in VERDICTS for context in contexts)
    with pytest.raises(TypeError):
        VerdictSaid(sentence="s", term="t", mark="m", gate="PASS", step="s", pair="p")  # type: ignore[call-arg]
    # a gate fails on a regression only, whether a test found it or the delta is exact; its line says FAIL
    assert [code for code in VERDICTS if SAID[code].fails] == ["worse", "exactly worse"]
    assert all(SAID[code].gate.startswith("FAIL" if SAID[code].fails else "PASS") for code in VERDICTS)
    # the words the four maps said before they were folded in, unchanged where a verdict reached them
    gate = {code: SAID[code].gate for code in ("worse", "better", "mixed", "not significant", "baseline")}
    assert gate == {
        "worse": "FAIL regression",
        "better": "PASS improvement",
        "mixed": "PASS no verdict, the test and the mean disagree",
        "not significant": "PASS no significant change",
        "baseline": "PASS no significant change",
    }
    assert [SAID[code].step for code in ("worse", "better", "mixed", "not significant")] == [
        "significant drop",
        "significant rise",
        "significant, but the test and the mean disagree",
        "no significant change",
    ]
    assert [pair_words(code, "a", "b") for code in ("better", "worse", "mixed", "not significant")] == [
        "a better",
        "b better",
        "the test and the mean disagree",
        "not significant",
    ]
    marks = {code: SAID[code].mark for code in VERDICTS}
    assert marks["better"] == "▲ better" and marks["worse"] == "▼ worse"
    assert all(marks[code] == VERDICT_TERMS[code] for code in VERDICTS if "better" not in code and "worse" not in code)
    assert marks["exactly better"] == "▲ better (exact)" and marks["exactly worse"] == "▼ worse (exact)"
    assert verdict_words("mixed", "bm25") == "no verdict against bm25: the test and the mean disagree"
    assert VERDICT_TERMS["mixed"] != "mixed" and "width 0" in VERDICT_TERMS["cannot tell"]


def test_cli_evidence_cuts_a_text_less_chunk_s_text_from_where_its_span_places_it(tmp_path):
    """Was: a TREC run of chunks with --chunk-spans and the corpus was refused on the default metrics ("token budgets
    count the tokens of the retrieved texts; 4 retrieved id(s) have no text in the run"); its chunks' texts are now
    cut from their documents, so it scores what the same run with a text column scores."""
    document = "Alpha beta gamma. The capital of France is Paris. Delta epsilon zeta."
    (tmp_path / "qrels.txt").write_text("q1 0 D1 1\n", encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "D1", "text": document}) + "\n", encoding="utf-8")
    (tmp_path / "spans.txt").write_text("q1 0 D1 1 18 49\n", encoding="utf-8")
    places = {"D1#0": (0, 17), "D1#1": (18, 49), "D1#2": (50, 69)}
    (tmp_path / "cs.tsv").write_text(
        "chunk_id\tdoc_id\tstart\tend\n" + "".join(f"{c}\tD1\t{s}\t{e}\n" for c, (s, e) in places.items()),
        encoding="utf-8",
    )
    order = ["D1#0", "D1#1", "D1#2"]
    (tmp_path / "run.trec").write_text(
        "".join(f"q1 Q0 {c} {i + 1} {9 - i} r\n" for i, c in enumerate(order)), encoding="utf-8"
    )
    texts = [document[s:e] for s, e in (places[c] for c in order)]
    (tmp_path / "run.csv").write_text(
        "query_id,doc_id,score,text\n" + "".join(f"q1,{c},{9 - i},{t}\n" for i, (c, t) in enumerate(zip(order, texts))),
        encoding="utf-8",
    )
    printed = {}
    for run in ("run.trec", "run.csv"):
        out, err = io.StringIO(), io.StringIO()
        args = ["evidence", "--dataset", str(tmp_path / "qrels.txt"), "--corpus", str(tmp_path / "corpus.jsonl"),
                "--run", str(tmp_path / run), "--spans", str(tmp_path / "spans.txt"), "--chunk-spans",
                str(tmp_path / "cs.tsv"), "-m", "evidence_recall@2,context_precision@2,tokens_to_evidence"]  # fmt: skip
        assert main(args, out, err) == 0, err.getvalue()
        printed[run] = [
            line.split("\t")[2] for line in out.getvalue().splitlines() if line.startswith(("ev", "co", "to"))
        ]
    assert printed["run.trec"] == printed["run.csv"] == ["whitespace", "1.0000", "0.6667", "9.0000"], printed


def test_a_chunkings_row_of_too_few_queries_shows_its_delta_and_no_interval_or_p_value():
    """The FAQ sample's span rows rest on the 3 queries whose expected answers are found in their documents: too
    few to tell, so each shows its delta and no interval or p-value, whether its test had a bound or not (were: one
    row ``[no bound]`` with p = 1, another a real-looking interval and p-value, both "too few to tell"), in the
    table the CLI prints and the frame the dashboard reads."""
    faq = Path(__file__).parents[1] / "sample_runs" / "product_faq_zh"
    argv = ["evidence", "--dataset", str(faq / "eval_set.json"), "--corpus", str(faq / "corpus.jsonl"),
            "--baseline", str(faq / "runs" / "bm25.jsonl"), "--run", str(faq / "runs" / "hybrid-rrf.jsonl")]  # fmt: skip
    out = io.StringIO()
    assert main(argv, out, io.StringIO()) == 0
    few = [line for line in out.getvalue().splitlines() if line.startswith("span") and "hybrid-rrf" in line]
    # level, metric, run, n, mean, delta, then the verdict: no interval, no p-value between them
    assert len(few) == 3 and all(line.split()[6:] == ["too", "few", "to", "tell"] for line in few), few
    documents = [line for line in out.getvalue().splitlines() if line.startswith("document") and "hybrid" in line]
    assert documents and all("[" in line for line in documents)  # enough queries: intervals as before
    # the family is the rows tested: the document rows, not the span rows too few to test (they counted, and the
    # summary said "over 7" where 4 p-values showed)
    out = io.StringIO()
    assert main([*argv, "--format", "json"], out, io.StringIO()) == 0
    found = json.loads(out.getvalue())
    rows = [r for r in found["comparisons"] if r["run"] != r["baseline"]]
    tested = [r for r in rows if r["p_value"] is not None]
    assert len(tested) == len(documents) < len(rows)
    assert found["correction"] == f"Holm-corrected over {len(tested)} comparison(s)"


@pytest.mark.parametrize(
    ("spans", "said"),
    [
        ({"q1": {"d1": [(0.9, 10.9)]}}, r"evidence span of \(q1, d1\): start '0.9' \(float\); expected a whole-number"),
        ({"q1": {"d1": [(True, "10")]}}, r"start 'True' \(bool\)"),
        ({"q1": {"d1": [(0, "10")]}}, r"end '10' \(str\)"),
        ({}, r"no evidence span given"),
    ],
)
def test_span_offsets_given_in_python_are_whole_numbers_as_in_a_file(spans, said):
    """Was: (0.9, 10.9) truncated to (0, 10) and (True, "10") cast, then scored; {} gave NaN means."""
    import pandas as pd

    docs = pd.DataFrame({"doc_id": ["d1"], "text": ["alpha beta gamma delta"]})
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    alignment = rm.align(rm.Dataset.from_frames(qrels, documents=docs), rm.Run.from_dict({"q1": {"d1": 1.0}}))
    with pytest.raises(rm.RagMetricsError, match=said):
        evaluate_evidence(alignment, spans, ["evidence_recall@1"])
    frame = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "start": [0.0], "end": [10.0]})
    with pytest.raises(rm.RagMetricsError, match=r"start '0.0' \(float\)"):
        evaluate_evidence(alignment, frame, ["evidence_recall@1"])
    assert evaluate_evidence(alignment, {"q1": {"d1": [(0, 10)]}}, ["evidence_recall@1"]).means


def test_a_span_past_a_chinese_document_s_end_that_its_bytes_would_reach_is_told_offsets_are_characters():
    """Was: byte offsets (as a UTF-8 tool writes them) past the characters got only "expected a span within the N
    characters"; those that happen to stay in range cannot be told from character offsets."""
    from ragmetrics.io.spans import check_spans, load_spans

    text = "北京是中国的首都。"  # 9 characters, 27 bytes
    dataset = rm.Dataset.from_frames(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["A"], "relevance": [1]}),
        documents=pd.DataFrame({"doc_id": ["A"], "text": [text]}),
    )
    as_bytes = load_spans(b"q1 0 A 1 0 15\n", filename="bytes.qrels")  # the first five characters' bytes
    with pytest.raises(rm.RagMetricsError) as refused:
        check_spans(as_bytes, "bytes.qrels", dataset)
    assert str(refused.value) == (
        "bytes.qrels:1: expected a span within the 9 characters of document 'A', found end 15 (offsets count "
        "characters, not UTF-8 bytes: the document is 27 bytes long)"
    )
    with pytest.raises(rm.RagMetricsError) as beyond:  # past its bytes too: no such hint
        check_spans(load_spans(b"q1 0 A 1 0 40\n", filename="far.qrels"), "far.qrels", dataset)
    assert "UTF-8" not in str(beyond.value)
    check_spans(load_spans(b"q1 0 A 1 0 5\n", filename="ok.qrels"), "ok.qrels", dataset)  # characters: read


def test_chunkings_that_name_their_chunks_alike_take_one_chunk_spans_file_each(tmp_path):
    """Was: ``--chunk-spans`` took one file for every run, so two chunkings naming their chunks alike (synth's
    ``doc#n``) were both scored with the first's places: the baseline's evidence recall read 0.5 where it is 1,
    and the verdict followed, without a word. Each run now takes its own file (the baseline's first), and one file
    for runs that retrieve the same chunk ids is warned of."""
    document = "Alpha beta gamma. The capital of France is Paris. Delta epsilon zeta."
    (tmp_path / "qrels.txt").write_text("q1 0 D1 1\nq2 0 D1 1\n", encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "D1", "text": document}) + "\n", encoding="utf-8")
    (tmp_path / "spans.txt").write_text("q1 0 D1 1 18 49\nq2 0 D1 1 18 49\n", encoding="utf-8")
    chunkings = {"small": {"D1#0": (0, 17), "D1#1": (18, 49)}, "large": {"D1#0": (0, 49), "D1#1": (50, 69)}}
    for name, places in chunkings.items():
        (tmp_path / f"{name}.tsv").write_text(
            "chunk_id\tdoc_id\tstart\tend\n" + "".join(f"{c}\tD1\t{s}\t{e}\n" for c, (s, e) in places.items()),
            encoding="utf-8",
        )
        (tmp_path / f"{name}.trec").write_text(
            "".join(f"{q} Q0 D1#{i} {i + 1} {9 - i} {name}\n" for q in ("q1", "q2") for i in range(2)),
            encoding="utf-8",
        )
    data = ["evidence", "--dataset", str(tmp_path / "qrels.txt"), "--corpus", str(tmp_path / "corpus.jsonl"),
            "--spans", str(tmp_path / "spans.txt"), "--baseline", str(tmp_path / "large.trec"),
            "--run", str(tmp_path / "small.trec"), "-k", "1", "--budget", "50", "--format", "json"]  # fmt: skip

    def recall_at_1(extra: list[str]) -> tuple[dict[str, float], str]:
        out, err = io.StringIO(), io.StringIO()
        assert main([*data, *extra], out, err) == 0, err.getvalue()
        rows = json.loads(out.getvalue())["comparisons"]
        found = {r["run"]: r["mean"] for r in rows if r["metric"] == "evidence_recall@1"}
        return found, err.getvalue()

    one, said = recall_at_1(["--chunk-spans", str(tmp_path / "small.tsv")])
    assert one == {"large": 0.0, "small": 0.0}  # the large chunking read with the small one's places
    assert "one --chunk-spans file (" in said and "the runs retrieve 2 of the same chunk ids" in said
    each, said = recall_at_1(
        ["--chunk-spans", str(tmp_path / "large.tsv"), "--chunk-spans", str(tmp_path / "small.tsv")]
    )
    assert each == {"large": 1.0, "small": 0.0} and "warning" not in said  # large's D1#0 holds the evidence
    out, err = io.StringIO(), io.StringIO()
    three = ["--chunk-spans", str(tmp_path / "large.tsv")] * 3
    assert main([*data, *three], out, err) == 2
    assert "--chunk-spans is given 3 times for 2 runs: give it once" in err.getvalue()
    assert "the baseline's, then each --run's" in err.getvalue()


def test_synth_s_chunks_file_is_the_chunkings_chunk_spans_and_holds_a_title_once(tmp_path):
    """synth's ``*.chunks.jsonl`` also holds each chunk's place (``chunk_id, doc_id, start, end``), so it is given
    as ``--chunk-spans`` as it is; a folder document's first chunk, whose text begins with the title heading, is
    written without the title (was: the title counted twice in its tokens)."""
    from ragmetrics.io.corpus import read_corpus
    from ragmetrics.io.spans import load_chunk_spans

    folder = tmp_path / "kb"
    folder.mkdir()
    body = " ".join(f"word{i}" for i in range(150))
    (folder / "guide.md").write_text(f"# Setting up\n\nThe setup takes a while. {body}\n", encoding="utf-8")
    argv = ["synth", str(folder), "-o", str(tmp_path / "set.jsonl"), "--chunker", "words:60:10", "--n", "2"]
    assert main(argv, io.StringIO(), io.StringIO()) == 0
    chunks = tmp_path / "set.chunks.jsonl"
    places = load_chunk_spans(str(chunks))
    document = read_corpus(str(folder)).set_index("doc_id").loc["guide.md", "text"]
    records = {r["_id"]: r for r in map(json.loads, chunks.read_text(encoding="utf-8").splitlines())}
    for chunk, start, end in zip(*(places.column(c).to_pylist() for c in ("chunk_id", "start", "end"))):
        assert document[start:end] == records[chunk]["text"]
    assert records["guide.md#0"]["text"].startswith("Setting up") and records["guide.md#0"]["title"] == ""
    assert records["guide.md#1"]["title"] == "Setting up"


def test_spans_files_of_the_wrong_kind_are_named_for_what_they_lack(tmp_path):
    """Were: a run CSV given as --spans read "found 1 columns: 'query_id,doc_id,score,text'"; evidence spans given
    as --chunk-spans read "expected a query id and a document id, found (None, ...)"; the spans file given as the
    run too scored 1.0 without a word."""
    from ragmetrics.io.spans import load_chunk_spans, load_spans

    (tmp_path / "run.csv").write_text("query_id,doc_id,score,text\nq1,A#0,2,aaaaa\n", encoding="utf-8")
    with pytest.raises(rm.RagMetricsError, match=r"run.csv:1: expected a header naming query_id, doc_id, start, end, "
                       r"found the columns query_id, doc_id, score, text \(no start, end\)"):  # fmt: skip
        load_spans(str(tmp_path / "run.csv"))
    (tmp_path / "spans.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": "A", "spans": [[0, 5]]}) + "\n")
    with pytest.raises(rm.RagMetricsError, match=r"spans.jsonl:1: expected a JSON object with chunk_id, doc_id, "
                       r"start and end, found keys \['doc_id', 'query_id', 'spans'\]"):  # fmt: skip
        load_chunk_spans(str(tmp_path / "spans.jsonl"))
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb,A"], "query_id,doc_id,score,text,source_doc")
    err = io.StringIO()
    argv = ["evidence", "--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--run", f["spans.qrels"],
            "--spans", f["spans.qrels"]]  # fmt: skip
    assert main(argv, io.StringIO(), err) == 2
    assert "is given as a run and as --spans: a run retrieving the gold evidence scores 1" in err.getvalue()


def test_chunkings_compared_with_the_baseline_s_own_file_are_warned_of(tmp_path):
    """Was: ``evidence --baseline X --run X`` compared the run with itself (named ``X-2``) without a word, where
    ``compare`` warns."""
    f = _files(tmp_path, ["q1,A#0,2,aaaaa bbbbb,A", "q2,B,1,xxxxx yyyyy,B"], "query_id,doc_id,score,text,source_doc")
    err = io.StringIO()
    argv = ["evidence", "--dataset", f["qrels.tsv"], "--corpus", f["corpus.jsonl"], "--spans", f["spans.qrels"],
            "--baseline", f["run.csv"], "--run", f["run.csv"]]  # fmt: skip
    assert main(argv, io.StringIO(), err) == 0, err.getvalue()
    assert "ragmetrics: warning: run 'run-2' has the same rows as the baseline: nothing to compare" in err.getvalue()
