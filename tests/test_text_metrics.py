"""keyword_recall@k and answer_in@k: read from the ranked texts, equal to a direct count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ragmetrics as rm
from ragmetrics.io import load_dataset, load_run

FAQ = Path(__file__).parents[1] / "sample_runs" / "product_faq_zh"


def test_text_metrics_equal_a_direct_count_on_the_faq_sample():
    dataset = load_dataset(FAQ / "eval_set.json")
    run = load_run(FAQ / "runs" / "bm25.jsonl")
    alignment = rm.align(dataset, run)
    rows = alignment.rows()
    queries = dataset.queries.set_index("query_id")
    for k in (1, 3, 10):
        recall = alignment.value(f"keyword_recall@{k}")
        answer = alignment.value(f"answer_in@{k}")
        for i, qid in enumerate(alignment.query_ids):
            top = rows[(rows["query_id"] == qid) & (rows["rank"] <= k)]
            text = "\n".join(top["text"].fillna("")).casefold()
            words = [w for w in queries.at[qid, "expected_keywords"] if str(w).strip()]
            expected = sum(w.casefold() in text for w in words) / len(words) if words else np.nan
            np.testing.assert_equal(recall[i], expected)
            want = queries.at[qid, "expected_answer"].strip().casefold()
            np.testing.assert_equal(answer[i], float(want in text) if want else np.nan)
    assert 0 < alignment.mean("keyword_recall@3") < 1


def test_corpus_text_serves_a_run_without_text():
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    queries = pd.DataFrame(
        {"query_id": ["q1", "q2"], "expected_keywords": [["Refund", "days"], []], "expected_answer": ["30 days", ""]}
    )
    corpus = pd.DataFrame(
        {"doc_id": ["a", "b", "c"], "title": ["Refunds", "", ""], "text": ["within 30 DAYS", "x", "y"]}
    )
    dataset = rm.Dataset.from_frames(qrels, queries, documents=corpus)
    run = rm.Run.from_dict({"q1": {"c": 2.0, "a": 1.0}, "q2": {"b": 1.0}})
    alignment = rm.align(dataset, run)
    assert alignment.value("keyword_recall@1").tolist()[0] == 0.0
    assert alignment.value("keyword_recall@2").tolist()[0] == 1.0  # "refund" in the title, "days" in the text
    assert alignment.value("answer_in@2").tolist()[0] == 1.0
    assert np.isnan(alignment.value("keyword_recall@2")[1]) and np.isnan(alignment.value("answer_in@2")[1])


def test_text_metrics_without_any_text_are_an_error():
    dataset = rm.Dataset.from_dict({"q1": {"a": 1}})
    with pytest.raises(rm.RagMetricsError, match="read the retrieved text"):
        rm.align(dataset, rm.Run.from_dict({"q1": {"a": 1.0}})).value("answer_in@5")


def test_keyword_recall_counts_every_keyword_past_64():
    """Was: only the first 64 expected keywords were read, silently: 64 of 70 found scored 1.0, not 64/70."""
    words = [f"kw{i:02d}" for i in range(70)]
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    queries = pd.DataFrame({"query_id": ["q1"], "expected_keywords": [words], "expected_answer": [""]})
    corpus = pd.DataFrame(
        {"doc_id": ["a", "b"], "text": [" ".join(words[:40]), " ".join(words[40:64])]}  # the last 6 nowhere
    )
    dataset = rm.Dataset.from_frames(qrels, queries, documents=corpus)
    alignment = rm.align(dataset, rm.Run.from_dict({"q1": {"a": 2.0, "b": 1.0}}))
    assert alignment.value("keyword_recall@1")[0] == pytest.approx(40 / 70)
    assert alignment.value("keyword_recall@2")[0] == pytest.approx(64 / 70)
    assert alignment.value("keyword_recall@1000")[0] == pytest.approx(64 / 70)


def test_dataset_queries_without_judgments_are_reported_with_what_they_leave_unscored():
    """Was: 15 of the FAQ sample's 106 queries have no judgment, so no metric (answer_in@k included) scores them, and
    nothing said so, though docs/conventions.md says they are reported."""
    import io

    from ragmetrics.cli import main

    dataset = load_dataset(FAQ / "eval_set.json")
    run = load_run(FAQ / "runs" / "bm25.jsonl")
    alignment = rm.align(dataset, run)
    assert len(alignment.coverage.no_judgments) == 15 and alignment.n_queries == 91
    note = (
        "15 dataset queries without judgments (not evaluated: left out of every mean, answer_in@k and keyword_recall@k"
    )
    with pytest.warns(rm.RagMetricsWarning, match=r"15 dataset queries without judgments"):
        rm.evaluate(dataset, run, ["answer_in@5"])
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "eval",
            "--dataset",
            str(FAQ / "eval_set.json"),
            "--run",
            str(FAQ / "runs" / "bm25.jsonl"),
            "-m",
            "answer_in@5",
        ],
        out,
        err,
    )
    assert code == 0 and note in err.getvalue(), err.getvalue()
