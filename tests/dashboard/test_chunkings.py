"""Chunkings compared: SciFact's corpus chunked two ways (128 and 512 words), each chunking indexed by the built-in
BM25 and run on SciFact's queries, then compared at document and span level by the library
(:mod:`ragmetrics.analysis.chunkings`) and in one Compare view of the dashboard."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.core import cost
from ragmetrics.analysis.chunkings import chunk_spans_table, compare_chunkings, gold_evidence, level_metrics
from ragmetrics.cli import main
from ragmetrics.engine import align
from ragmetrics.engine.evidence import evaluate_evidence, spans_from_documents
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_run
from ragmetrics.retrieve import retrieve
from ragmetrics.retrieve.bm25 import BM25
from ragmetrics.store.database import Store, dataset_id, default_url
from ragmetrics.synth.corpus import Document, make_corpus
from tests.dashboard.apptest import no_problems, open_page

SCIFACT = Path(__file__).resolve().parents[2] / "sample_runs" / "scifact"
CHUNKINGS = ("words:128:32", "words:512:64")


@pytest.fixture(scope="module")
def scifact() -> Dataset:
    return load_dataset(
        SCIFACT / "qrels.tsv", queries=SCIFACT / "queries.jsonl", corpus=SCIFACT / "corpus.jsonl.gz", name="scifact"
    )


@pytest.fixture(scope="module")
def chunked(scifact: Dataset) -> tuple[list[Run], pd.DataFrame]:
    """One BM25 run per chunking (top 100 chunks, each row with its chunk's text and document), and where every
    chunk of both chunkings lies in its document."""
    documents = [Document(str(r.doc_id), str(r.title or ""), str(r.text or "")) for r in scifact.documents.itertuples()]
    runs, places = [], []
    for spec in CHUNKINGS:
        corpus = make_corpus(documents, chunking=spec, language="en")
        chunks = pd.DataFrame({"doc_id": [c.chunk_id for c in corpus.chunks], "title": "",
                               "text": [c.text for c in corpus.chunks]})  # fmt: skip
        name = "chunks-" + spec.split(":")[1]
        found = retrieve(scifact, BM25.from_documents(chunks, cache_dir=None), k=100, name=name, concurrency=1)
        assert not found.failed
        frame = found.run.frame
        frame["text"] = frame["doc_id"].map(dict(zip(chunks["doc_id"], chunks["text"])))
        frame["source_doc"] = frame["doc_id"].map({c.chunk_id: c.doc_id for c in corpus.chunks})
        runs.append(Run.from_frame(frame, name=name))
        places += [(c.chunk_id, c.doc_id, c.start, c.end) for c in corpus.chunks]
    return runs, places


def test_two_chunkings_compared_at_document_and_span_level(scifact, chunked) -> None:
    runs, places = chunked
    found = compare_chunkings(scifact, runs, k=10, budget=512, chunk_spans=chunk_spans_table(places))
    table = found.table
    expected = level_metrics(10, 512)
    assert set(table["level"]) == {"document", "span"}
    for level, metrics in expected.items():
        assert set(table.loc[table["level"] == level, "metric"]) == set(metrics)
        assert set(table.loc[table["level"] == level, "run"]) == {r.name for r in runs}

    # comparable at document level: the same queries, read against the same qrels, every query in both
    document = table[table["level"] == "document"]
    assert set(document["n"]) == {len(scifact)}
    one, two = (align(scifact, run) for run in runs)
    assert np.array_equal(one.query_ids, two.query_ids) and one.dataset is two.dataset
    assert dict(document[document["metric"] == "ndcg@10"].set_index("run")["mean"]) == pytest.approx(
        {run.name: align(scifact, run).mean("ndcg@10") for run in runs}
    )

    # bigger chunks cost more tokens in the top 10; the budget rows are read at equal cost
    tokens = found.tokens.set_index("run")["mean_tokens"]
    assert tokens["chunks-512"] > tokens["chunks-128"]

    # SciFact's qrels are at document level: the evidence is each relevant document as a whole
    assert found.evidence == "documents"
    assert found.deciding_metric == "evidence_recall@512tok"
    decided = table[table["metric"] == found.deciding_metric].set_index("run")
    assert found.winner == decided["mean"].idxmax()
    assert found.summary.startswith(f"At 512 tokens of context, {found.winner} has the highest evidence_recall@512tok")
    other = next(r.name for r in runs if r.name != found.baseline)
    assert decided.at[other, "verdict"] in {"better", "worse", "not significant"}
    assert found.family_size == len(table) - table["metric"].nunique()  # every row but the baseline's
    # beside the corrected p-value, the interval corrected the same way (default test t: it leaves 0 exactly where
    # the corrected p-value is below alpha)
    compared = table[table["run"] != found.baseline]
    clear = (compared["ci_low_adjusted"] > 0) | (compared["ci_high_adjusted"] < 0)
    assert (clear == (compared["p_value_corrected"] < 0.05)).all()
    assert "uncorrected" not in found.summary


def test_whole_document_evidence_is_document_recall_with_one_chunk_per_document(scifact) -> None:
    """With each relevant document as the span and a run of whole documents, evidence recall is recall."""
    alignment = align(scifact, load_run(SCIFACT.parents[1] / "tests" / "data" / "scifact" / "bm25-stem.trec.gz"))
    result = evaluate_evidence(alignment, spans_from_documents(scifact), ["evidence_recall@10"])
    evidence = result.values["evidence_recall@10"]
    with_spans = ~np.isnan(evidence)
    assert with_spans.sum() == len(scifact)
    np.testing.assert_allclose(evidence[with_spans], np.asarray(alignment.value("recall@10"))[with_spans])


def test_the_gold_evidence_is_chosen_in_order_and_fewer_than_two_runs_is_an_error(scifact, chunked) -> None:
    runs, _ = chunked
    given = spans_from_documents(scifact).slice(0, 5)
    assert gold_evidence(scifact, given) == (given, "given")
    assert gold_evidence(scifact)[1] == "documents"
    with pytest.raises(RagMetricsError, match="at least two runs"):
        compare_chunkings(scifact, runs[:1])


def test_compare_shows_the_chunkings_in_one_view(scifact, chunked, tmp_path, monkeypatch) -> None:
    # a store of its own: a dataset added to the session's store would become other tests' default
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    runs, _ = chunked
    store = Store(default_url())
    ds = store.put_dataset(scifact, ident=dataset_id(scifact))
    ids = [store.put_run(run, ds) for run in runs]
    at = open_page("compare", {"ds": ds, "runs": ",".join(ids), "m": "recall", "k": "10", "tb": "1024"})
    no_problems(at)
    assert any(e.label.startswith("Chunked runs compared: 2 runs whose rows are chunks") for e in at.expander)
    assert at.selectbox(key="compare.budget").value == 1024
    verdicts = [m.value for m in at.markdown if "At 1024 tokens of context" in m.value]
    assert len(verdicts) == 1
    shown = [d.value for d in at.dataframe if "level" in d.value.columns]
    assert len(shown) == 1
    frame = shown[0]
    assert set(frame["level"]) == {"document", "span"} and set(frame["run"]) == {r.name for r in runs}
    assert "recall@1024tok" in set(frame["metric"]) and "evidence_recall@1024tok" in set(frame["metric"])
    assert list(frame.columns[:4]) == ["level", "metric", "run", "tokens in top 10"]
    assert list(frame.columns) == [*cost.CHUNKING_COLUMNS[:3], "tokens in top 10", *cost.CHUNKING_COLUMNS[3:]]


def test_the_command_line_compares_chunkings_from_files(tmp_path, chunked) -> None:
    """``ragmetrics evidence --baseline``: the same comparison from run files with their chunk texts and documents,
    and a chunk spans file; the table names both levels and the last line says which chunking wins."""
    runs, places = chunked
    paths = []
    for run in runs:
        path = tmp_path / f"{run.name}.csv"
        run.frame[["query_id", "doc_id", "score", "text", "source_doc"]].to_csv(path, index=False)
        paths.append(str(path))
    spans = tmp_path / "chunk-spans.tsv"
    pd.DataFrame(places, columns=["chunk_id", "doc_id", "start", "end"]).to_csv(spans, sep="\t", index=False)
    argv = ["evidence", "--dataset", str(SCIFACT / "qrels.tsv"), "--queries", str(SCIFACT / "queries.jsonl"),
            "--corpus", str(SCIFACT / "corpus.jsonl.gz"), "--baseline", paths[0], "--run", paths[1],
            "--chunk-spans", str(spans), "--tokenizer", "whitespace"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    print(out.getvalue())
    assert lines[0].split()[:4] == ["level", "metric", "run", "n"]
    rows = [line.split() for line in lines[1:15]]
    assert {r[0] for r in rows} == {"document", "span"} and {r[2] for r in rows} == {"chunks-128", "chunks-512"}
    assert lines[-1].startswith("At 512 tokens of context, ")
    assert "evidence: the relevant documents as a whole" in lines[-2]

    out = io.StringIO()
    assert main([*argv, "--format", "json", "--budget", "256"], out, err) == 0
    data = json.loads(out.getvalue())
    assert data["budget_tokens"] == 256 and data["baseline"] == "chunks-128" and len(data["comparisons"]) == 14
    assert data["summary"].startswith("At 256 tokens of context")
