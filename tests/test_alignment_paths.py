"""The two ways a run's documents are aligned with the qrels give the same rankings.

``build_ranking`` first tries fingerprints (each query's rows sorted by a 64-bit
hash of the id, every match checked against the strings) and falls back to
encoded ids when a fingerprint collides or the run is too ragged. Here the
fingerprint function is replaced by weak ones (the id's length, a constant) so
that collisions happen everywhere, and every result must still equal
pytrec_eval's and the real fingerprints' results.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import ragmetrics as rm
import ragmetrics.model
from ragmetrics.ranking import build_ranking
from tests import oracle
from tests.test_parity_pytrec_eval import PAIRS, TREC, generate_case

real_fingerprints = ragmetrics.model.string_fingerprints


def by_length(array):
    """Every id of the same byte length collides: true and false matches everywhere."""
    chunked = array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])
    lengths = np.concatenate([np.asarray(pa.compute.binary_length(c)) for c in chunked.chunks] or [np.zeros(0)])
    return lengths.astype(np.uint64)


def by_first_byte_high(array):
    """A real fingerprint with only its top byte kept: rare ids agree, most do not."""
    return real_fingerprints(array) & np.uint64(0xFF00000000000000)


WEAK = {"length": by_length, "constant": lambda array: np.zeros(len(array), dtype=np.uint64), "top-byte": by_first_byte_high}


@pytest.fixture(params=sorted(WEAK))
def weak_fingerprints(request, monkeypatch):
    monkeypatch.setattr(ragmetrics.model, "string_fingerprints", WEAK[request.param])
    return request.param


@pytest.mark.parametrize(("qrels_file", "run_file", "rel_level"), PAIRS[:3])
def test_trec_eval_files_with_colliding_fingerprints(weak_fingerprints, qrels_file, run_file, rel_level):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level)
    result = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), oracle.our_metric_names(), missing="skip", rel_level=rel_level, warn=False
    )
    assert oracle.assert_same(result.per_query("run"), reference) == len(reference) * len(oracle.our_metric_names())


@pytest.mark.parametrize("seed", range(0, 240, 3))
def test_generated_cases_with_colliding_fingerprints(weak_fingerprints, seed):
    qrels, rows, rel_level = generate_case(seed)
    cutoffs = (1, 2, 3, 5, 10, 20, 50)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level, cutoffs=cutoffs)
    result = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), oracle.our_metric_names(cutoffs), missing="skip", rel_level=rel_level, warn=False
    )
    oracle.assert_same(result.per_query("run"), reference)


def _chunk_case(seed: int) -> tuple[rm.Dataset, rm.Run]:
    """A chunk-level run: several chunks per document, some chunks repeated, some rows without a source."""
    rng = random.Random(seed)
    docs = [f"doc{i}" for i in range(12)] + ["文档甲", "문서"]
    qrels, rows = [], []
    for qi in range(rng.randint(1, 5)):
        qid = f"q{qi}"
        qrels += [(qid, d, rng.choice([0, 1, 2])) for d in rng.sample(docs, 4)]
        for rank in range(rng.randint(0, 25)):
            doc = rng.choice(docs)
            chunk = f"{doc}#{rng.randint(0, 3)}"
            rows.append((qid, chunk, None if rng.random() < 0.1 else doc, 100.0 - rank + rng.choice([0, 0, 0.5])))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "source_doc", "score"])
    return oracle.dataset_of(qrels), rm.Run.from_frame(frame, name="run")


def _ranking_state(dataset, run, **settings):
    ranking, coverage = build_ranking(dataset, run, **settings)
    return {
        "q": ranking.q.tolist(), "pos": ranking.pos.tolist(), "label": ranking.label.tolist(), "docs": ranking.docs().tolist(),
        "coverage": coverage.summary(), "duplicate_queries": coverage.duplicate_queries,
    }


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("settings", [{}, {"duplicates": "keep"}, {"level": "chunk"}, {"order": "file", "duplicates": "keep"}])
def test_chunk_runs_align_the_same_either_way(monkeypatch, seed, settings):
    expected = _ranking_state(*_chunk_case(seed), **settings)
    for weak in WEAK.values():
        with monkeypatch.context() as patch:
            patch.setattr(ragmetrics.model, "string_fingerprints", weak)
            assert _ranking_state(*_chunk_case(seed), **settings) == expected


def test_a_plain_run_is_aligned_without_encoding_its_documents(monkeypatch):
    """Duplicates and chunks included, the fingerprints decide and the strings confirm: no id encoding."""
    qrels, rows, _ = generate_case(10)
    assert len(rows) > len({(q, d) for q, d, _ in rows})  # the case repeats documents
    dataset, run = oracle.dataset_of(qrels), oracle.run_of(rows)
    chunk_dataset, chunk_run = _chunk_case(3)

    def no_encoding(self, column):
        if column != "query_id":
            raise AssertionError(f"{column} was encoded")
        return original(self, column)

    original = rm.Run.id_codes
    monkeypatch.setattr(rm.Run, "id_codes", no_encoding)
    ranking, coverage = build_ranking(dataset, run)
    assert coverage.duplicates_dropped > 0
    reference = oracle.pytrec_values(qrels, rows, cutoffs=(5,))
    result = rm.evaluate(dataset, run, oracle.our_metric_names((5,)), missing="skip", warn=False)
    oracle.assert_same(result.per_query("run"), reference)
    _, chunk_coverage = build_ranking(chunk_dataset, chunk_run)
    assert chunk_coverage.chunks_merged > 0


def test_a_ragged_run_falls_back_to_encoded_ids():
    """One query far deeper than the rest: no padded matrix, the encoded ids align it, same numbers."""
    qrels = [("q1", "a", 1), ("q2", "b", 1)] + [("q3", f"d{i}", 1) for i in range(0, 5000, 7)]
    rows = [("q1", "a", 1.0), ("q2", "x", 2.0), ("q2", "b", 1.0)] + [("q3", f"d{i}", -float(i)) for i in range(5000)]
    rows.append(("q3", "d14", -1.0))  # a duplicate, best occurrence at rank 2
    dataset, run = oracle.dataset_of(qrels), oracle.run_of(rows)
    reference = oracle.pytrec_values(qrels, rows, cutoffs=(1, 10, 1000))
    result = rm.evaluate(dataset, run, oracle.our_metric_names((1, 10, 1000)), missing="skip", warn=False)
    oracle.assert_same(result.per_query("run"), reference)
    assert "codes" in {kind for kind, _ in run._derived}
