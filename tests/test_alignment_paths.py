"""The two ways documents are matched with the judgments agree, and the ranking equals a plain sort.

``ragmetrics.engine.documents`` matches by fingerprints (fast; ``None`` when a match is not confirmed by
the strings or the run is too ragged) and falls back to dictionary codes (exact by construction). One
property holds them together: on any run, with the real fingerprints, with weak ones that collide
everywhere, and split in two halves on an executor, the fingerprint path gives the codes' answer or none.
"""

from __future__ import annotations

import itertools
import random
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragmetrics as rm
import ragmetrics.foundation.ids
from ragmetrics.engine import documents
from tests import oracle
from tests.test_parity_pytrec_eval import PAIRS, TREC, generate_case

real_fingerprints = ragmetrics.foundation.ids.string_fingerprints


def by_length(array):
    """Every id of the same byte length collides: true and false matches everywhere."""
    chunked = array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])
    lengths = np.concatenate([np.asarray(pa.compute.binary_length(c)) for c in chunked.chunks] or [np.zeros(0)])
    return lengths.astype(np.uint64)


WEAK = {
    "length": by_length,
    "constant": lambda array: np.zeros(len(array), dtype=np.uint64),
    "top-byte": lambda array: real_fingerprints(array) & np.uint64(0xFF00000000000000),
}

ids = st.sampled_from(["a", "b", "c", "doc1", "doc10", "é", "文档", "x" * 9, "x" * 17, ""])


@st.composite
def cases(draw):
    """A dataset and a run: repeated documents, tied scores, unknown and missing queries, ragged depths,
    sometimes chunks mapped to documents (some rows without a source)."""
    queries = [f"q{i}" for i in range(draw(st.integers(1, 5)))]
    qrels = {}
    for q in queries:
        for doc in draw(st.lists(ids.filter(bool), max_size=6, unique=True)):
            qrels[(q, doc)] = draw(st.integers(-1, 3))
    if not qrels:
        qrels[(queries[0], "a")] = 1
    chunked = draw(st.booleans())
    rows = []
    for q in [*queries, "unknown"]:
        for _ in range(draw(st.integers(0, 30 if draw(st.booleans()) else 4))):
            doc = draw(ids.filter(bool))
            score = float(draw(st.integers(0, 6)))
            if chunked:
                source = None if draw(st.integers(0, 9)) == 0 else doc
                rows.append((q, f"{doc}#{draw(st.integers(0, 2))}", score, source))
            else:
                rows.append((q, doc, score, None))
    qrels_table = pa.table(
        {
            "query_id": [q for q, _ in qrels],
            "doc_id": [d for _, d in qrels],
            "relevance": pa.array(list(qrels.values()), pa.int64()),
        }
    )
    run = {
        "query_id": pa.array([r[0] for r in rows], pa.large_string()),
        "doc_id": pa.array([r[1] for r in rows], pa.large_string()),
        "score": pa.array([r[2] for r in rows], pa.float64()),
    }
    if chunked:
        run["source_doc"] = pa.array([r[3] for r in rows], pa.large_string())
    conventions = draw(
        st.sampled_from(
            [
                rm.Conventions(),
                rm.Conventions(duplicates="keep"),
                rm.Conventions(level="chunk"),
                rm.Conventions.llamaindex(),
            ]
        )
    )
    return rm.Dataset.from_tables(qrels_table), rm.Run.from_table(pa.table(run)), conventions


def matched_rows(dataset, run, conventions) -> documents.SortedRows:
    """The rows ``align`` hands to the matching."""
    seen = []
    real = documents.match

    def capture(rows, executor=None):
        seen.append(rows)
        return real(rows, executor)

    with mock.patch.object(documents, "match", capture):
        rm.align(dataset, run, conventions)
    return seen[0]


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fingerprints_give_the_codes_answer_or_none(case):
    rows = matched_rows(*case)
    exact = documents.by_codes(rows)
    fast = documents.by_fingerprints(rows)
    assert fast is not None  # small runs always fit the matrix, and real fingerprints do not collide here
    assert same(fast, exact)
    with ThreadPoolExecutor(1) as pool, mock.patch.object(documents, "SPLIT_ROWS", 0):
        split = documents.by_fingerprints(rows, pool)
    assert split is not None and same(split, exact)
    for weak in WEAK.values():
        weakened = documents.SortedRows(
            **{
                **rows.__dict__,
                "fingerprint": weak,
                "document_fingerprints": weak(rows.documents),
                "chunk_fingerprints": None if rows.chunks is None else weak(rows.chunks),
            }
        )
        found = documents.by_fingerprints(weakened)
        assert found is None or same(found, exact)


@pytest.mark.parametrize(("qrels_file", "run_file", "rel_level"), PAIRS[:3])
@pytest.mark.parametrize("weak", sorted(WEAK))
def test_trec_eval_files_with_colliding_fingerprints(weak, qrels_file, run_file, rel_level):
    """End to end through the fallback: weak fingerprints everywhere, pytrec_eval's numbers still."""
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level)
    with mock.patch.object(documents, "string_fingerprints", WEAK[weak]):
        values = oracle.our_values(qrels, rows, missing="skip", rel_level=rel_level)
    assert oracle.assert_same(values, reference) == len(reference) * len(oracle.our_metric_names())


def test_a_ragged_run_falls_back_to_codes_with_the_same_numbers():
    """One query far deeper than the rest: no padded matrix, the codes align it, same numbers."""
    qrels = [("q1", "a", 1), ("q2", "b", 1)] + [("q3", f"d{i}", 1) for i in range(0, 5000, 7)]
    rows = [("q1", "a", 1.0), ("q2", "x", 2.0), ("q2", "b", 1.0)] + [("q3", f"d{i}", -float(i)) for i in range(5000)]
    rows.append(("q3", "d14", -1.0))  # a duplicate, best occurrence at rank 2
    dataset, run = oracle.dataset_of(qrels), oracle.run_of(rows)
    assert documents.by_fingerprints(matched_rows(dataset, run, rm.Conventions())) is None
    reference = oracle.pytrec_values(qrels, rows, cutoffs=(1, 10, 1000))
    result = rm.evaluate(dataset, run, oracle.our_metric_names((1, 10, 1000)), missing="skip", warn=False)
    oracle.assert_same(result.per_query("run"), reference)


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
    monkeypatch.setattr(ragmetrics.foundation.ids, "FINGERPRINT_BLOCK", 7)  # many blocks, and a last partial one
    rng = random.Random(5)
    alphabet = "abcXYZ0189-_/é中"
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 24, 33, 40])))
        for _ in range(300)
    ]
    texts += [f"doc{i:06d}" for i in range(40)] + ["a" * 40] * 3 + [""] * 3
    expected = np.array([reference_fingerprint(t) for t in texts], dtype=np.uint64)
    chunked = pa.chunked_array([pa.array(texts[:150]), pa.array(["pad", *texts[150:]]).slice(1)])
    for array in (
        pa.array(texts),
        pa.array(texts, type=pa.large_string()),
        chunked,
        pa.array(["pad"] * 5 + texts).slice(5),
    ):
        np.testing.assert_array_equal(ragmetrics.foundation.ids.string_fingerprints(array), expected)


def _reference_ranking(qrels, rows, duplicates):
    """Each evaluated query's documents in trec_eval order (score desc, doc id desc by bytes), best-ranked
    occurrence kept unless ``duplicates='keep'``, and the adjacent pairs of equal score, in plain Python."""
    judged = list(dict.fromkeys(qid for qid, _, _ in qrels))
    docs, tied_pairs, tied_queries = {}, 0, []
    for qid in judged:
        mine = sorted(
            ((s, d) for q, d, s in rows if q == qid), key=lambda sd: (-sd[0], [-b for b in sd[1].encode()] + [1])
        )
        if duplicates != "keep":
            seen: set[str] = set()
            mine = [(s, d) for s, d in mine if not (d in seen or seen.add(d))]
        docs[qid] = [d for _, d in mine]
        ties = sum(a[0] == b[0] for a, b in itertools.pairwise(mine))
        tied_pairs += ties
        if ties:
            tied_queries.append(qid)
    return docs, tied_pairs, tied_queries


@pytest.mark.parametrize("seed", range(0, 240, 12))
@pytest.mark.parametrize("duplicates", ["best", "keep"])
@pytest.mark.parametrize("presorted", [False, True])
@pytest.mark.parametrize("split", [False, True])
def test_ranking_documents_and_ties_equal_a_plain_sort(monkeypatch, seed, duplicates, presorted, split):
    """The ranking's documents and the tie counts equal a plain per-query sort, with ties, duplicates and
    unknown queries; ``presorted``: the run comes sorted by query and score, only tied documents out of
    order; ``split``: as a large run, fingerprinted and aligned in two halves on an executor."""
    qrels, rows, _ = generate_case(seed)
    if presorted:
        order = {qid: i for i, qid in enumerate(dict.fromkeys(qid for qid, _, _ in qrels))}
        rows = sorted((r for r in rows if r[0] in order), key=lambda r: (order[r[0]], -r[2]))
    monkeypatch.setattr(documents, "SPLIT_ROWS", 0 if split else documents.SPLIT_ROWS)
    with ThreadPoolExecutor(1) as pool:
        alignment = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), duplicates=duplicates, executor=pool)
    ranking, coverage = alignment.ranking, alignment.coverage
    docs, tied_pairs, tied_queries = _reference_ranking(qrels, rows, duplicates)
    got = ranking.docs()
    assert {qid: list(got[ranking.q == i]) for i, qid in enumerate(ranking.query_ids)} == docs
    assert (coverage.tied_pairs, coverage.tied_queries) == (tied_pairs, tied_queries)
    assert list(ranking.docs(np.arange(len(ranking.q))[::-1])) == list(got[::-1])  # row numbers in any order


@pytest.mark.parametrize("scale", [1, 50, 200, 40_000, 2**31 - 1, 2**40])
@pytest.mark.parametrize("seed", range(0, 240, 40))
def test_labels_of_every_size_are_read_back_exactly(seed, scale):
    """Rows carry labels in the narrowest integer type that holds the qrels' labels (int8 for 0..3 grades,
    up to int64), with the unjudged mark below all of them; metrics equal pytrec_eval's for int8 and int16
    labels (pytrec_eval takes seconds per case on labels in the tens of thousands)."""
    qrels, rows, rel_level = generate_case(seed)
    rng = random.Random(seed)
    qrels = [(qid, doc, label * scale if label > 0 else label * rng.choice([1, scale])) for qid, doc, label in qrels]
    ranking = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level).ranking
    judged = {(qid, doc): label for qid, doc, label in qrels}
    unjudged = np.iinfo(ranking.label.dtype).min
    assert unjudged < min(label for *_, label in qrels)
    expected = [judged.get((ranking.query_ids[q], doc), unjudged) for q, doc in zip(ranking.q, ranking.docs())]
    assert ranking.label.tolist() == expected
    if scale <= 200:
        reference = oracle.pytrec_values(qrels, rows, rel_level=rel_level)
        values = oracle.our_values(qrels, rows, missing="skip", rel_level=rel_level)
        oracle.assert_same(values, reference, tol=1e-9 * scale)


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


def test_a_dataset_without_queries_aligns_every_run_query_as_unknown() -> None:
    import pandas as pd

    from ragmetrics import align
    from ragmetrics.foundation.model import Dataset, Run

    empty = pd.DataFrame({"query_id": pd.Series([], dtype=str), "doc_id": pd.Series([], dtype=str),
                          "relevance": pd.Series([], dtype=int)})  # fmt: skip
    run = Run.from_frame(pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "score": [1.0, 0.5]}))
    alignment = align(Dataset.from_frames(empty), run)
    assert alignment.coverage.not_in_dataset == ["q1", "q2"] and alignment.coverage.queries_evaluated == 0
    assert alignment.health.no_overlap and len(alignment.value("ndcg@10")) == 0
