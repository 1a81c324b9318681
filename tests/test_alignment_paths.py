"""The two ways a run's documents are aligned with the qrels give the same rankings.

``build_ranking`` first tries fingerprints (each query's rows sorted by a 64-bit
hash of the id, every match checked against the strings) and falls back to
encoded ids when a fingerprint collides or the run is too ragged. Here the
fingerprint function is replaced by weak ones (the id's length, a constant) so
that collisions happen everywhere, and every result must still equal
pytrec_eval's and the real fingerprints' results.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import ragmetrics as rm
import ragmetrics.model
import ragmetrics.ranking
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


WEAK = {
    "length": by_length,
    "constant": lambda array: np.zeros(len(array), dtype=np.uint64),
    "top-byte": by_first_byte_high,
}


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
        oracle.dataset_of(qrels),
        oracle.run_of(rows),
        oracle.our_metric_names(),
        missing="skip",
        rel_level=rel_level,
        warn=False,
    )
    assert oracle.assert_same(result.per_query("run"), reference) == len(reference) * len(oracle.our_metric_names())


@pytest.mark.parametrize("seed", range(0, 240, 3))
@pytest.mark.parametrize("background", [False, True])
def test_generated_cases_with_colliding_fingerprints(weak_fingerprints, monkeypatch, seed, background):
    if background:  # fingerprinted meanwhile, aligned in two halves: a collision in either half falls back
        monkeypatch.setattr(ragmetrics.ranking, "BACKGROUND_ROWS", 0)
    qrels, rows, rel_level = generate_case(seed)
    cutoffs = (1, 2, 3, 5, 10, 20, 50)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level, cutoffs=cutoffs)
    result = rm.evaluate(
        oracle.dataset_of(qrels),
        oracle.run_of(rows),
        oracle.our_metric_names(cutoffs),
        missing="skip",
        rel_level=rel_level,
        warn=False,
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
        "q": ranking.q.tolist(),
        "pos": ranking.pos.tolist(),
        "label": ranking.label.tolist(),
        "docs": ranking.docs().tolist(),
        "coverage": coverage.summary(),
        "duplicate_queries": coverage.duplicate_queries,
    }


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(
    "settings", [{}, {"duplicates": "keep"}, {"level": "chunk"}, {"order": "file", "duplicates": "keep"}]
)
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
    _ranking, coverage = build_ranking(dataset, run)
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


def reference_fingerprint(text: str) -> int:
    """The fingerprint as documented, one string at a time in Python integers: seed by the byte length,
    then for each 8-byte little-endian word (zero-padded): xor, multiply, xor-shift (mod 2**64)."""
    data = text.encode()
    mask = (1 << 64) - 1
    h = (len(data) * 0x9E3779B97F4A7C15) & mask
    for k in range(0, len(data), 8):
        h ^= int.from_bytes(data[k : k + 8], "little")
        h = (h * 0xBF58476D1CE4E5B9) & mask
        h ^= h >> 31
    return h


def test_fingerprints_equal_the_documented_function_across_blocks_and_chunks(monkeypatch):
    """Stored run ids hash these fingerprints (store.RUN_HASH_VERSION), so their values must not change:
    ids of 0-40 bytes (multi-byte UTF-8 too), blocks of mixed and equal lengths, sliced and chunked arrays."""
    monkeypatch.setattr(ragmetrics.model, "FINGERPRINT_BLOCK", 7)  # many blocks, and a last partial one
    rng = random.Random(5)
    alphabet = "abcXYZ0189-_/é中"
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 24, 33, 40])))
        for _ in range(300)
    ]
    texts += (
        ["doc%06d" % i for i in range(40)] + ["a" * 40] * 3 + [""] * 3
    )  # a block of equal lengths; a block of empty ids
    expected = np.array([reference_fingerprint(t) for t in texts], dtype=np.uint64)
    chunked = pa.chunked_array([pa.array(texts[:150]), pa.array(["pad"] + texts[150:]).slice(1)])
    for array in (
        pa.array(texts),
        pa.array(texts, type=pa.large_string()),
        chunked,
        pa.array(["pad"] * 5 + texts).slice(5),
    ):
        np.testing.assert_array_equal(ragmetrics.model.string_fingerprints(array), expected)


def _reference_ranking(qrels, rows, settings):
    """Each evaluated query's documents in trec_eval order (score desc, doc id desc by bytes), best-ranked
    occurrence kept unless ``duplicates='keep'``, and the adjacent pairs of equal score, in plain Python."""
    judged = list(dict.fromkeys(qid for qid, _, _ in qrels))
    docs, tied_pairs, tied_queries = {}, 0, []
    for qid in judged:
        mine = sorted(
            ((s, d) for q, d, s in rows if q == qid), key=lambda sd: (-sd[0], [-b for b in sd[1].encode()] + [1])
        )
        if settings.get("duplicates") != "keep":
            seen = set()
            mine = [(s, d) for s, d in mine if not (d in seen or seen.add(d))]
        docs[qid] = [d for _, d in mine]
        ties = sum(a[0] == b[0] for a, b in itertools.pairwise(mine))
        tied_pairs += ties
        if ties:
            tied_queries.append(qid)
    return docs, tied_pairs, tied_queries


@pytest.mark.parametrize("seed", range(0, 240, 2))
@pytest.mark.parametrize("settings", [{}, {"duplicates": "keep"}])
@pytest.mark.parametrize("presorted", [False, True])
@pytest.mark.parametrize("background", [False, True])
def test_ranking_documents_and_ties_equal_a_plain_sort(monkeypatch, seed, settings, presorted, background):
    """The ranking's documents (read back through its map to the run's rows) and the tie counts of the
    coverage report equal a plain per-query sort, with ties, duplicates and unknown queries in the run;
    ``presorted``: the run comes sorted by query and score, only tied documents out of order (as most
    runs do: the rows keep their places and only the tied ones move); ``background``: as a large run,
    fingerprinted on the background thread and aligned in two halves of its queries."""
    if background:
        monkeypatch.setattr(ragmetrics.ranking, "BACKGROUND_ROWS", 0)
    qrels, rows, _ = generate_case(seed)
    if presorted:
        order = {qid: i for i, qid in enumerate(dict.fromkeys(qid for qid, _, _ in qrels))}
        rows = sorted((r for r in rows if r[0] in order), key=lambda r: (order[r[0]], -r[2]))
    ranking, coverage = build_ranking(oracle.dataset_of(qrels), oracle.run_of(rows), **settings)
    docs, tied_pairs, tied_queries = _reference_ranking(qrels, rows, settings)
    got = ranking.docs()
    assert {qid: list(got[ranking.q == i]) for i, qid in enumerate(ranking.query_ids)} == docs
    assert (coverage.tied_pairs, coverage.tied_queries) == (tied_pairs, tied_queries)
    rows_of = ranking.docs(np.arange(len(ranking.q))[::-1])  # row numbers in any order
    assert list(rows_of) == list(got[::-1])


@pytest.mark.parametrize("scale", [1, 50, 200, 40_000, 2**31 - 1, 2**40])
@pytest.mark.parametrize("seed", range(0, 240, 12))
def test_labels_of_every_size_are_read_back_exactly(seed, scale):
    """Rows carry labels in the narrowest integer type that holds the qrels' labels (int8 for 0..3 grades,
    up to int64), with the unjudged mark below all of them; metrics equal pytrec_eval's for int8 and int16
    labels (pytrec_eval takes seconds per case on labels in the tens of thousands)."""
    qrels, rows, rel_level = generate_case(seed)
    rng = random.Random(seed)
    qrels = [(qid, doc, label * scale if label > 0 else label * rng.choice([1, scale])) for qid, doc, label in qrels]
    ranking, _ = build_ranking(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level)
    judged = {(qid, doc): label for qid, doc, label in qrels}
    unjudged = np.iinfo(ranking.label.dtype).min
    assert unjudged < min(label for *_, label in qrels)
    expected = [judged.get((ranking.query_ids[q], doc), unjudged) for q, doc in zip(ranking.q, ranking.docs())]
    assert ranking.label.tolist() == expected
    if scale <= 200:
        reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level)
        result = rm.evaluate(
            oracle.dataset_of(qrels),
            oracle.run_of(rows),
            oracle.our_metric_names(),
            missing="skip",
            rel_level=rel_level,
            warn=False,
        )
        oracle.assert_same(result.per_query("run"), reference, tol=1e-9 * scale)


@pytest.mark.parametrize("rel_level", [1, 0, -1, -127, -128, -129, -40_000, -(2**40)])
def test_unjudged_documents_are_never_relevant_whatever_the_level(rel_level):
    """The unjudged mark is the label dtype's minimum (-128 for int8 grades): a relevance level at or below it
    must still leave unjudged documents non-relevant, and precision, recall and AP count judged ones only."""
    qrels = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 2)]
    rows = [("q1", "d1", 3.0), ("q1", "u9", 2.0), ("q1", "d2", 1.0), ("q2", "u8", 5.0), ("q2", "d3", 4.0)]
    result = rm.evaluate(
        oracle.dataset_of(qrels),
        oracle.run_of(rows),
        ["precision@3", "recall@3", "map"],
        rel_level=rel_level,
        warn=False,
    )
    ranking = result["run"].ranking
    judged = {(q, d): label for q, d, label in qrels}
    expected_rel = [judged.get((ranking.query_ids[q], d)) for q, d in zip(ranking.q, ranking.docs())]
    assert ranking.rel.tolist() == [label is not None and label >= rel_level for label in expected_rel]
    per_query = result.per_query("run")
    relevant = {q: [d for (qq, d), label in judged.items() if qq == q and label >= rel_level] for q in ("q1", "q2")}
    for qid in ("q1", "q2"):
        ranked = [d for q, d, _ in rows if q == qid]
        hits = [d in relevant[qid] for d in ranked]
        assert per_query.at[qid, "precision@3"] == pytest.approx(sum(hits[:3]) / 3)
        assert per_query.at[qid, "recall@3"] == pytest.approx(
            sum(hits[:3]) / len(relevant[qid]) if relevant[qid] else 0.0
        )
        ap = (
            sum(sum(hits[: i + 1]) / (i + 1) for i, h in enumerate(hits) if h) / len(relevant[qid])
            if relevant[qid]
            else 0.0
        )
        assert per_query.at[qid, "map"] == pytest.approx(ap)
