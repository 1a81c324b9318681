"""LlamaIndex and LangChain retrievers, and ``module:attr`` callables, as ragmetrics retrievers.

A small index is built offline from part of the SciFact sample (llama-index-core with
llama-index-retrievers-bm25, no model): hit rate and MRR from the run ragmetrics makes equal LlamaIndex's own
RetrieverEvaluator on the same queries, for a BM25Retriever and a QueryFusionRetriever over two of them.
A LangChain BaseRetriever wrapping a callable gives the same run as the callable.
"""

from __future__ import annotations

import gzip
import io
import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics import Dataset, evaluate
from ragmetrics.cli import main
from ragmetrics.io import load_run
from ragmetrics.retrieve import adapt, retrieve

pytest.importorskip("llama_index.retrievers.bm25")
pytest.importorskip("langchain_core")

SAMPLE = Path(__file__).parent.parent / "sample_runs" / "scifact"
N_QUERIES = 60
N_DOCUMENTS = 400


def _small_collection() -> tuple[Dataset, pd.DataFrame]:
    qrels = pd.read_csv(SAMPLE / "qrels.tsv", sep=" ", header=None, names=["query_id", "x", "doc_id", "relevance"])
    qrels = qrels.astype({"query_id": str, "doc_id": str})
    queries = pd.read_json(SAMPLE / "queries.jsonl", lines=True, dtype={"id": str})
    queries = queries.rename(columns={"id": "query_id", "text": "query"}).head(N_QUERIES)
    qrels = qrels[qrels["query_id"].isin(queries["query_id"])][["query_id", "doc_id", "relevance"]]
    with gzip.open(SAMPLE / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        corpus = pd.DataFrame([json.loads(line) for line in handle]).rename(columns={"_id": "doc_id", "id": "doc_id"})
    corpus["doc_id"] = corpus["doc_id"].astype(str)
    judged = corpus[corpus["doc_id"].isin(qrels["doc_id"])]
    others = corpus[~corpus["doc_id"].isin(qrels["doc_id"])].head(N_DOCUMENTS - len(judged))
    documents = pd.concat([judged, others]).sort_values("doc_id").reset_index(drop=True)[["doc_id", "title", "text"]]
    return Dataset.from_frames(qrels, queries, name="scifact-small", documents=documents), documents


DATASET, DOCUMENTS = _small_collection()


def _nodes():
    from llama_index.core.schema import TextNode

    return [
        TextNode(id_=row.doc_id, text=f"{row.title} {row.text}", metadata={"doc": f"D{row.doc_id}"})
        for row in DOCUMENTS.itertuples()
    ]


def _llama_bm25(top_k: int = 5):
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever(nodes=_nodes(), similarity_top_k=top_k)


def _llamaindex_means(retriever) -> dict[str, float]:
    from llama_index.core.evaluation import RetrieverEvaluator

    evaluator = RetrieverEvaluator.from_metric_names(["hit_rate", "mrr"], retriever=retriever)
    expected = DATASET.qrels.groupby("query_id")["doc_id"].apply(list)
    values: dict[str, list[float]] = {"hit_rate": [], "mrr": []}
    for row in DATASET.queries.itertuples():
        if row.query_id not in expected:
            continue
        result = evaluator.evaluate(query=row.query, expected_ids=expected[row.query_id])
        for name, value in result.metric_vals_dict.items():
            values[name].append(value)
    return {name: sum(v) / len(v) for name, v in values.items()}


def _ours(run) -> dict[str, float]:
    means = evaluate(DATASET, run, ["hit_rate", "mrr"], mode="llamaindex").runs[run.name].means
    return {"hit_rate": means["hits"], "mrr": means["mrr"]}


def test_a_llamaindex_bm25_retriever_scores_as_retriever_evaluator_does(tmp_path):
    retriever = _llama_bm25(top_k=5)
    result = retrieve(DATASET, retriever, k=100, cache_dir=tmp_path)
    assert result.metadata["retriever"]["kind"] == "llamaindex"
    assert result.metadata["retriever"]["class"] == "BM25Retriever" and result.metadata["retriever"]["top_k"] == 5
    assert not result.failed and len(result.run) == 5 * N_QUERIES
    assert set(result.run.columns) >= {"rank", "text"}
    theirs = _llamaindex_means(retriever)
    assert theirs["hit_rate"] > 0.5
    assert _ours(result.run) == pytest.approx(theirs, abs=1e-12)
    # the same numbers from the TREC file the command line would write (trec mode's hits@5 is order-free)
    from ragmetrics.io import write_trec_run

    write_trec_run(result.run, tmp_path / "li.trec")
    trec = evaluate(DATASET, load_run(tmp_path / "li.trec"), ["hits@5"]).runs["li"].means["hits@5"]
    assert trec == pytest.approx(theirs["hit_rate"], abs=1e-12)


def test_a_query_fusion_retriever_and_a_metadata_doc_id(tmp_path):
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    fusion = QueryFusionRetriever(
        [_llama_bm25(top_k=10), _llama_bm25(top_k=3)],
        llm=MockLLM(),
        num_queries=1,
        mode="reciprocal_rerank",
        similarity_top_k=5,
    )
    result = retrieve(DATASET, fusion, k=100, cache=False, concurrency=2)
    meta = result.metadata["retriever"]
    assert meta["class"] == "QueryFusionRetriever" and meta["mode"] == "reciprocal_rerank"
    assert [r["top_k"] for r in meta["retrievers"]] == [10, 3]
    assert _ours(result.run) == pytest.approx(_llamaindex_means(fusion), abs=1e-12)

    by_field = retrieve(DATASET, _llama_bm25(), k=100, cache=False, doc_id_field="doc")
    assert by_field.run.frame["doc_id"].str.startswith("D").all()


WORDS = [(row.doc_id, row.title, set(f"{row.title} {row.text}".lower().split())) for row in DOCUMENTS.itertuples()]


def _search(query: str, k: int):
    """A deterministic scorer over the small corpus: shared query words."""
    words = set(query.lower().split())
    scored = []
    for doc_id, title, doc_words in WORDS:
        overlap = len(words & doc_words)
        if overlap:
            scored.append({"doc_id": doc_id, "score": float(overlap), "text": title})
    scored.sort(key=lambda h: (-h["score"], h["doc_id"]))
    return scored[:k]


def test_a_langchain_retriever_gives_the_callables_run():
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Wrapped(BaseRetriever):
        k: int = 20

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [
                Document(page_content=h["text"], metadata={"doc_id": h["doc_id"], "score": h["score"]})
                for h in _search(query, self.k)
            ]

    lc = retrieve(DATASET, Wrapped(), k=20, cache=False)
    fn = retrieve(DATASET, _search, k=20, cache=False)
    assert lc.metadata["retriever"]["kind"] == "langchain" and lc.metadata["retriever"]["top_k"] == 20
    assert fn.metadata["retriever"]["kind"] == "callable"
    assert len(fn.run) > 0 and lc.run.table.equals(fn.run.table)

    class ById(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [
                Document(id=h["doc_id"], page_content="", metadata={"src": "x" + h["doc_id"]})
                for h in _search(query, 3)
            ]

    by_id = retrieve(DATASET, ById(), k=3, cache=False)
    assert not by_id.run.has_scores and by_id.run.frame["score"].tolist()[:3] == [-1.0, -2.0, -3.0]
    assert list(by_id.run.frame["doc_id"][:3]) == [h["doc_id"] for h in _search(DATASET.queries["query"][0], 3)]
    by_field = retrieve(DATASET, ById(), k=3, cache=False, doc_id_field="src")
    assert by_field.run.frame["doc_id"].str.startswith("x").all()


def test_module_attr_callables_and_factories_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "my_retrievers_for_test.py").write_text(
        textwrap.dedent(
            """
            from tests.test_retrieve_frameworks import _llama_bm25, _search

            def search(query, k):
                return [(h["doc_id"], h["score"]) for h in _search(query, k)]

            def make_llama():
                return _llama_bm25(top_k=5)

            class Searcher:
                def __call__(self, query, k):
                    return search(query, k)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    qrels, queries = tmp_path / "qrels.tsv", tmp_path / "queries.jsonl"
    DATASET.qrels.assign(x=0)[["query_id", "x", "doc_id", "relevance"]].to_csv(
        qrels, sep=" ", header=False, index=False
    )
    DATASET.queries[["query_id", "query"]].rename(columns={"query_id": "id", "query": "text"}).to_json(
        queries, orient="records", lines=True
    )

    def cli(spec: str, output: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        args = ["retrieve", "--dataset", str(qrels), "--queries", str(queries), "--retriever", spec, "-o", output]
        code = main([*args, "--k", "10", "--cache-dir", str(tmp_path / "cache")], out=out, err=err)
        assert code == 0, err.getvalue()
        return out.getvalue()

    def rows(run) -> list[tuple]:
        return sorted(run.frame[["query_id", "doc_id", "score"]].itertuples(index=False, name=None))

    cli("my_retrievers_for_test:search", "fn.trec")
    fn = load_run(tmp_path / "fn.trec")
    assert len(fn) and rows(fn) == rows(retrieve(DATASET, _search, k=10, cache=False).run)
    meta = json.loads((tmp_path / "fn.trec.json").read_text())
    assert meta["retriever"]["identity"] == "callable:my_retrievers_for_test:search"
    assert meta["run"] == "fn" == fn.name  # named as eval and push read it back: after the file

    cli("my_retrievers_for_test:Searcher", "cls.trec")
    assert rows(load_run(tmp_path / "cls.trec")) == rows(fn)

    printed = cli("my_retrievers_for_test:make_llama", "li.trec")
    assert "with llamaindex" in printed
    theirs = _llamaindex_means(_llama_bm25(top_k=5))
    li = load_run(tmp_path / "li.trec")
    assert _ours(li) == pytest.approx(theirs, abs=1e-12)


def test_what_cannot_be_a_retriever():
    from ragmetrics.foundation.errors import RagMetricsError

    with pytest.raises(RagMetricsError, match="cannot use int as a retriever"):
        adapt(3)
    with pytest.raises(RagMetricsError, match="apply to an HTTP retriever only"):
        adapt(_search, request='{"q": "{query}"}')
