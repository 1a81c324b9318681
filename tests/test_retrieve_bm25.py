"""The built-in BM25 against the shared BM25 runs (made by shared/tools/make_runs.py), on the sample corpora.

SciFact's sample corpus is trimmed (the judged documents and every run's top 10: 3143 of 5183), so document
frequencies differ a little from the full collection the shared run was made on; CMRC's is whole (3651). nDCG@10
must be within 0.01.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics import evaluate
from ragmetrics.cli import main
from ragmetrics.io import load_dataset, load_run
from ragmetrics.retrieve import retrieve
from ragmetrics.retrieve.bm25 import BM25, detect_language, document_texts, zh_tokens

pytest.importorskip("bm25s")

SAMPLES = Path(__file__).parent.parent / "sample_runs"


def _dataset(name: str):
    folder = SAMPLES / name
    return load_dataset(folder / "qrels.tsv", queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl.gz")


@pytest.mark.parametrize(
    ("name", "shared", "language"), [("scifact", "bm25-stem", "en"), ("cmrc2018", "bm25-jieba", "zh")]
)
def test_within_a_hundredth_of_the_shared_bm25_run(name, shared, language, tmp_path):
    dataset = _dataset(name)
    result = retrieve(dataset, "bm25", k=100, cache_dir=tmp_path, name="builtin")
    assert not result.failed
    meta = result.metadata["retriever"]
    assert (meta["language"], meta["index"], meta["k1"], meta["b"], meta["method"]) == (
        language,
        "built",
        1.2,
        0.75,
        "lucene",
    )
    theirs = load_run(SAMPLES / name / "runs" / f"{shared}.trec.gz")
    means = evaluate(dataset, [result.run, theirs], ["ndcg@10"]).mean()["ndcg@10"]
    print(f"{name}: built-in bm25 nDCG@10 {means[result.run.name]:.4f}, shared {shared} {means[shared]:.4f}")
    assert abs(means[result.run.name] - means[shared]) < 0.01

    # the index is kept on disk, keyed by the corpus: built once, loaded after, the same answers
    again = retrieve(dataset, "bm25", k=100, cache_dir=tmp_path, cache="refresh", name="builtin")
    assert again.metadata["retriever"]["index"] == "loaded"
    assert again.metadata["counts"]["called"] == len(dataset)
    assert again.run.table.equals(result.run.table)
    assert [p.name for p in (tmp_path / "bm25").iterdir()] == [meta["index_key"]]


def test_ranking_rules_and_language_choice(tmp_path):
    documents = pd.DataFrame(
        {
            "doc_id": ["b", "a", "c", "d"],
            "title": ["Cats", "Cats", "", "Dogs"],
            "text": ["cats purr", "cats purr", "running dogs", "the dog runs"],
        }
    )
    assert document_texts(documents) == ["Cats cats purr", "Cats cats purr", "running dogs", "Dogs the dog runs"]
    bm25 = BM25.from_documents(documents)
    assert bm25.language == "en" and bm25.info["index"] == "built"
    hits = bm25.search("cat", 10, None)
    assert [h.doc_id for h in hits] == ["a", "b"]  # equal scores: by doc_id; documents scoring 0 left out
    assert bm25.search("the of and", 10, None) == []  # stopwords only: an empty ranking
    cut = bm25.search("dog running", 1, None)
    assert len(cut) == 1 and cut[0].doc_id in ("c", "d")
    assert detect_language(["大莱龙铁路位于哪里 Wikipedia"])[0] == "zh"
    assert detect_language(["an English text with 一 word"])[0] == "en"
    assert zh_tokens("大莱龙铁路位于哪里？ABC") == zh_tokens("大莱龙铁路位于哪里？abc")  # lowercased
    assert "abc" in zh_tokens("大莱龙铁路位于哪里？ABC") and "？" not in zh_tokens("大莱龙铁路位于哪里？")


def test_a_corpus_of_english_and_chinese_documents_is_read_as_both():
    """Was: read as English (its CJK share of letters small), each Chinese document one run-on token, so a Chinese
    query found nothing; the mixed mode reads each script as its language, and a text of one script as that
    language alone."""
    english = [
        f"The {word} setting syncs files across devices and reports errors" for word in ("proxy", "tray", "cache")
    ]
    chinese = ["付款失败后系统会在三天内自动重试扣款", "冲突副本不会自动合并，需要手动比较"]
    documents = pd.DataFrame({"doc_id": ["e1", "e2", "e3", "z1", "z2"], "text": english + chinese})
    bm25 = BM25.from_documents(documents)
    assert (bm25.language, bm25.default_name) == ("mixed", "bm25-stem-jieba")
    assert bm25.search("付款失败多久重试", 10, None)[0].doc_id == "z1"
    assert bm25.search("the tray settings", 10, None)[0].doc_id == "e2"  # stemmed as in English
    assert bm25.tokens("the trays 托盘图标") == [*zh_tokens("托盘图标"), "tray"]  # stopword out, stemmed
    # one document of another script among fifty is no mixed corpus: the English mode, as before
    many = pd.DataFrame({"doc_id": [f"e{i}" for i in range(60)] + ["z"], "text": english * 20 + chinese[:1]})
    assert BM25.from_documents(many).language == "en"


def test_bm25_from_the_command_line(tmp_path):
    folder = SAMPLES / "scifact"
    output = tmp_path / "bm25.trec"
    args = ["retrieve", "--dataset", str(folder / "qrels.tsv"), "--queries", str(folder / "queries.jsonl")]
    out, err = io.StringIO(), io.StringIO()
    code = main([*args, "--retriever", "bm25", "-o", str(output), "--cache-dir", str(tmp_path)], out=out, err=err)
    assert code == 2 and "--corpus" in err.getvalue() and err.getvalue().count("\n") == 1
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [*args, "--corpus", str(folder / "corpus.jsonl.gz"), "--retriever", "bm25", "-o", str(output)]
        + ["--cache-dir", str(tmp_path), "--name", "my-bm25"],
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    assert "with bm25 'bm25-stem' as run 'my-bm25'" in out.getvalue() and "errors 0" in out.getvalue()
    assert output.read_text().split("\n", 1)[0].endswith(" my-bm25")
