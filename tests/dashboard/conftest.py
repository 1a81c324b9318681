"""Fixtures for the dashboard builders: a tiny hand-made dataset with known answers, and the bundled FAQ sample."""

from __future__ import annotations

import functools

import pandas as pd
import pytest
from streamlit.components.v2 import manifest_scanner

import ragmetrics
from dashboard.data import samples
from ragmetrics import Alignment, Dataset, Run

# Each AppTest scans every installed distribution's metadata for component manifests (about 0.25 s; a third of
# these tests' time); the installed distributions do not change while the tests run, so one scan per process
# serves them all (a Streamlit release without the function: nothing is patched, the tests run as before).
if callable(getattr(manifest_scanner, "scan_component_manifests", None)):
    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def _tiny_dataset() -> Dataset:
    # 12 queries: categories a (8) and b (4); difficulty easy/hard; q12 has judgments but no relevant doc;
    # q13 has no judgments at all.
    qrels = []
    queries = []
    for i in range(1, 13):
        qid = f"q{i:02d}"
        queries.append(
            {
                "query_id": qid,
                "query": f"question {i} about topic",
                "category": "a" if i <= 8 else "b",
                "difficulty": "easy" if i % 2 else "hard",
                "expected_answer": f"answer {i}",
                "expected_keywords": [f"kw{i}", "common"],
            }
        )
        if i == 12:
            qrels.append((qid, "d0", 0))
        else:
            qrels.append((qid, f"d{i}", 2))
            qrels.append((qid, f"e{i}", 1))
    queries.append({"query_id": "q13", "query": "unjudged question", "category": "b", "difficulty": "easy"})
    return Dataset.from_frames(
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]), pd.DataFrame(queries), name="tiny"
    )


def _tiny_run(name: str, first_rank: dict[int, int], *, text: bool = False) -> Run:
    """Each query i gets 30 docs; its relevant doc d{i} sits at ``first_rank[i]`` (0 = absent)."""
    rows = []
    for i in range(1, 13):
        qid = f"q{i:02d}"
        docs = [f"x{i}_{j}" for j in range(30)]
        rank = first_rank.get(i, 1)
        if rank:
            docs[rank - 1] = f"d{i}"
        for pos, doc in enumerate(docs):
            row = {"query_id": qid, "doc_id": doc, "score": 100.0 - pos}
            if text:
                row["text"] = f"chunk of {doc} mentions kw{i}" if pos == 0 else f"chunk of {doc}"
            rows.append(row)
    return Run.from_frame(pd.DataFrame(rows), name=name)


# where the first relevant document sits, per query, for two runs
RANKS_A = {1: 1, 2: 7, 3: 2, 4: 0, 5: 12, 6: 1, 7: 3, 8: 25, 9: 1, 10: 6, 11: 1}
RANKS_B = {1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 6: 1, 7: 1, 8: 1, 9: 4, 10: 1, 11: 1}


@pytest.fixture(scope="session")
def tiny() -> Dataset:
    return _tiny_dataset()


@pytest.fixture(scope="session")
def tiny_runs() -> list[Run]:
    return [_tiny_run("run-a", RANKS_A, text=True), _tiny_run("run-b", RANKS_B)]


@pytest.fixture(scope="session")
def tiny_alignments(tiny: Dataset, tiny_runs: list[Run]) -> list[Alignment]:
    return [ragmetrics.align(tiny, run) for run in tiny_runs]


@pytest.fixture(scope="session")
def faq() -> samples.Sample:
    found = list(samples.iter_samples(names=["product_faq_zh"]))
    if not found:
        pytest.skip("sample_runs/product_faq_zh is not there")
    return found[0]


@pytest.fixture(scope="session")
def faq_alignments(faq: samples.Sample) -> list[Alignment]:
    return [ragmetrics.align(faq.dataset, run) for run, _ in faq.runs]


@pytest.fixture(scope="session")
def faq_result(faq: samples.Sample) -> ragmetrics.EvalResult:
    metrics = [
        "recall@5",
        "precision@5",
        "f1@5",
        "hits@5",
        "ndcg@5",
        "mrr@5",
        "map@5",
        "recall@10",
        "ndcg@10",
        "mrr",
        "map",
        "recall@20",
    ]
    return ragmetrics.evaluate(faq.dataset, [r for r, _ in faq.runs], metrics, warn=False)


@pytest.fixture(scope="session", autouse=True)
def _private_store(tmp_path_factory: pytest.TempPathFactory):
    """Dashboard tests use a fresh SQLite store, never ./data or a team's RAGMETRICS_STORE_URL."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAGMETRICS_STORE_URL", raising=False)
        mp.setenv("RAGMETRICS_DATA_DIR", str(tmp_path_factory.mktemp("store")))
        yield


@pytest.fixture(scope="session")
def faq_ids() -> dict[str, str]:
    """Store ids of the FAQ sample's dataset (``"dataset"``) and of each of its runs (by run name)."""
    from ragmetrics.store.database import dataset_id, run_id

    sample = next(samples.iter_samples(names=["product_faq_zh"]))
    ids = {"dataset": dataset_id(sample.dataset)}
    ids.update({run.name: run_id(run) for run, _ in sample.runs})
    return ids
