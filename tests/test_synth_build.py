"""Building a reviewed set in the store (ragmetrics.store.candidates, ragmetrics.synth.build), on real stores:
candidates stored one by one, a stopped batch resumed to the same candidates, every decision kept with its
reviewer and time across a reopened store, and the kept candidates made a dataset with its parent and provenance;
each on a SQLite file and on a PostgreSQL database.

The corpus is 300 documents of the SciFact sample (``sample_runs/scifact``), stored as a dataset's documents.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import re
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import Store, StoreKeyError
from ragmetrics.synth import build as build_module
from ragmetrics.synth.base import Candidate
from ragmetrics.synth.build import (
    Stopped,
    apply_edit,
    categories_of,
    corpus_of,
    dataset_of,
    generate_batch,
    parse_relevant,
    relevant_text,
)
from ragmetrics.synth.corpus import read_documents
from ragmetrics.synth.extractive import CATEGORIES
from ragmetrics.synth.generators import make_generator

pytest.importorskip("bm25s")

SAMPLES = Path(__file__).parent.parent / "sample_runs"
MIX = {"factual": 4, "cloze": 2, "summary": 2, "negative": 2}


@pytest.fixture(scope="module")
def parent_dataset() -> Dataset:
    documents = random.Random(1).sample(read_documents(SAMPLES / "scifact" / "corpus.jsonl.gz"), 300)
    frame = pd.DataFrame({"doc_id": [d.doc_id for d in documents], "title": [d.title for d in documents],
                          "text": [d.text for d in documents]})  # fmt: skip
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": [documents[0].doc_id], "relevance": [1]})
    return Dataset.from_frames(qrels, pd.DataFrame({"query_id": ["q1"], "query": ["a claim"]}), name="scifact-300",
                               corpus_size=300, documents=frame)  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def stored(request, tmp_path, parent_dataset):
    """A store on a SQLite file, or on a fresh PostgreSQL database: its URL, the store, the corpus's dataset id."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    else:
        server = request.getfixturevalue("postgres_url")
        name = "b" + uuid.uuid4().hex[:12]
        admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = server.rsplit("/", 1)[0] + "/" + name
    store = Store(url)
    return url, store, store.put_dataset(parent_dataset)


def _generate(candidates, batch, corpus, stop=None, progress=None):
    generator = make_generator("extractive", corpus)
    return generate_batch(candidates, batch, corpus, generator, MIX, seed=7, stop=stop, progress=progress)


def test_a_batch_is_stored_candidate_by_candidate_and_resumes_to_the_same_set(stored, parent_dataset):
    url, store, parent = stored
    corpus = corpus_of(parent_dataset)
    candidates = CandidateStore(store)
    stop = threading.Event()

    def stop_after_four(done, total):
        if done >= 4:
            stop.set()

    interrupted = candidates.new_batch(parent, "extractive", {"seed": 7}, 10, author="ana@example.org")
    with pytest.raises(Stopped):
        _generate(candidates, interrupted, corpus, stop=stop, progress=stop_after_four)
    assert candidates.stored_positions(interrupted) == {1, 2, 3, 4}
    assert candidates.batch(interrupted).status == "stopped"

    reopened = CandidateStore(Store(url))  # another process, after a restart
    assert _generate(reopened, interrupted, corpus) == 10
    whole = reopened.new_batch(parent, "extractive", {"seed": 7}, 10)
    assert _generate(reopened, whole, corpus) == 10

    def comparable(batch):  # the ids name their batch: two batches share none
        return [
            {**c.record, "query_id": c.record["query_id"].replace(batch[:8], "B")} for c in reopened.candidates(batch)
        ]

    assert comparable(interrupted) == comparable(whole)
    ids = [{c.record["query_id"] for c in reopened.candidates(b)} for b in (interrupted, whole)]
    assert len(ids[0]) == len(ids[1]) == 10 and not ids[0] & ids[1]
    batch = reopened.batch(interrupted)
    assert (batch.status, batch.stored, batch.requested, batch.author) == ("complete", 10, 10, "ana@example.org")
    records = comparable(interrupted)
    assert [r["category"] for r in records].count("factual") == 4
    assert all(r["source"]["text"] and r["provenance"]["source_span"] for r in records)
    assert all(isinstance(r["flags"], list) for r in records)
    for r in records:
        if r["category"] != "negative":
            assert r["relevant_docs"] == {r["source"]["doc_id"]: 2}  # documents taken as given


def queries_of(source) -> str:  # type: ignore[no-untyped-def]
    return f"what is in {source.chunk_id}?"


class _Shifting:
    """A generator whose first run loses one candidate (a model reply that failed and, not cached, succeeds when
    asked again): the second run yields it first, then the first run's candidates, then the rest."""

    name = "model"
    categories = ("factual",)

    def __init__(self, corpus):
        self.sources = [c for c in corpus.chunks if c.text.strip()][:6]
        self.first = True

    def generate(self, sources, categories, *, seed):
        order = self.sources[1:] if self.first else [self.sources[0], *self.sources[1:]]
        for source in order:
            yield Candidate(f"what is in {source.chunk_id}?", "x", ("x",), "factual", "easy", source,
                            {"generator": "model", "seed": str(seed)})  # fmt: skip


def test_a_resumed_batch_matches_its_stored_candidates_by_content_not_place(stored, parent_dataset):
    """Was: positions were counted over what the generator yielded, so a candidate lost in the first run and made
    on resume shifted the rest: a duplicate stored, one candidate never stored, flags on the wrong positions."""
    _url, store, parent = stored
    corpus = corpus_of(parent_dataset)
    candidates, generator, stop = CandidateStore(store), _Shifting(corpus), threading.Event()
    batch = candidates.new_batch(parent, "model", {"seed": 7}, 6)
    with pytest.raises(Stopped):
        generate_batch(candidates, batch, corpus, generator, {"factual": 6}, seed=7, stop=stop,
                       progress=lambda done, total: stop.set() if done >= 3 else None)  # fmt: skip
    generator.first = False
    assert generate_batch(candidates, batch, corpus, generator, {"factual": 6}, seed=7) == 6
    queries = [c.record["query"] for c in candidates.candidates(batch)]
    assert sorted(queries) == sorted(f"what is in {s.chunk_id}?" for s in generator.sources)  # each once
    assert [c.position for c in candidates.candidates(batch)] == [1, 2, 3, 4, 5, 6]
    # a candidate generated twice (a duplicate: flagged, not dropped) holds two places after a resume too
    generator.sources[3] = generator.sources[2]
    twice, generator.first, stop = candidates.new_batch(parent, "model", {"seed": 7}, 6), True, threading.Event()
    with pytest.raises(Stopped):
        generate_batch(candidates, twice, corpus, generator, {"factual": 6}, seed=7, stop=stop,
                       progress=lambda done, total: stop.set() if done >= 4 else None)  # fmt: skip
    generator.first = False
    assert generate_batch(candidates, twice, corpus, generator, {"factual": 6}, seed=7) == 6
    assert Counter(c.record["query"] for c in candidates.candidates(twice))[queries_of(generator.sources[2])] == 2


def test_a_stored_candidate_not_generated_again_is_checked_with_the_rest(stored, parent_dataset, monkeypatch):
    """Was: a candidate stored before a stop that the resumed run did not generate again kept no flags and was
    left out of the duplicate check."""
    _url, store, parent = stored
    corpus = corpus_of(parent_dataset)
    candidates, generator, stop = CandidateStore(store), _Shifting(corpus), threading.Event()
    batch = candidates.new_batch(parent, "model", {"seed": 7}, 6)
    with pytest.raises(Stopped):  # stores sources 1, 2, 3
        generate_batch(candidates, batch, corpus, generator, {"factual": 6}, seed=7, stop=stop,
                       progress=lambda done, total: stop.set() if done >= 3 else None)  # fmt: skip
    lost = generator.sources.pop(2)  # the resumed run never makes source 2's candidate again
    generator.sources.append(next(c for c in corpus.chunks if c.text.strip() and c not in generator.sources))
    generator.first = False
    checked: list[list[str]] = []
    monkeypatch.setattr(
        build_module, "flag", lambda made, corpus, retrievers: checked.append([c.query for c in made]) or list(made)
    )
    assert generate_batch(candidates, batch, corpus, generator, {"factual": 6}, seed=7) == 6
    assert queries_of(lost) in checked[0] and len(checked[0]) == 6
    assert [c.position for c in candidates.candidates(batch)] == [1, 2, 3, 4, 5, 6]  # no more than asked


def test_every_decision_is_kept_with_its_reviewer_and_the_latest_counts(stored, parent_dataset):
    url, store, parent = stored
    candidates = CandidateStore(store)
    batch = candidates.new_batch(parent, "extractive", {"seed": 7}, 10)
    _generate(candidates, batch, corpus_of(parent_dataset))
    first = candidates.candidates(batch)[0]
    candidates.review(batch, 1, "rejected", reviewer="bo")
    edited = dict(first.record, query="What did the trial find?")
    candidates.review(batch, 1, "edited", reviewer="ana", edited=edited)
    candidates.review(batch, 2, "accepted", reviewer="")

    again = CandidateStore(Store(url)).candidates(batch)  # a reload or another server reads the same
    assert (again[0].decision, again[0].reviewer, again[0].final["query"]) == (
        "edited",
        "ana",
        "What did the trial find?",
    )
    assert again[0].record == first.record  # the generated record is kept as it was
    assert (again[1].decision, again[1].reviewer) == ("accepted", "anonymous")
    assert again[0].reviewed_at is not None and again[2].decision is None

    with pytest.raises(RagMetricsError, match="decision 'maybe'"):
        candidates.review(batch, 3, "maybe")
    with pytest.raises(RagMetricsError, match="edited record"):
        candidates.review(batch, 3, "accepted", edited=edited)
    with pytest.raises(StoreKeyError, match="no candidate at position 99"):
        candidates.review(batch, 99, "accepted")


def test_the_kept_candidates_make_a_dataset_with_its_parent_and_provenance(stored, parent_dataset):
    url, store, parent = stored
    candidates = CandidateStore(store)
    batch = candidates.new_batch(parent, "extractive", {"seed": 7}, 10)
    _generate(candidates, batch, corpus_of(parent_dataset))
    for position, decision in zip(range(1, 11), itertools.chain(["accepted"] * 6, ["rejected"] * 2, ["edited"] * 2)):
        item = candidates.candidates(batch)[position - 1]
        edited = dict(item.record, query=f"edited {position}") if decision == "edited" else None
        candidates.review(batch, position, decision, reviewer="ana", edited=edited)

    kept = [c for c in candidates.candidates(batch) if c.kept]
    made = dataset_of(kept, parent_dataset, name="built", batch=batch)
    ident = store.put_dataset(made)
    candidates.mark_made(batch, ident, author="ana")

    back = Store(url).get_dataset(ident)
    assert len(back.queries) == 8
    assert {"edited 9", "edited 10"} <= set(back.queries["query"])
    provenance = [json.loads(p) for p in back.queries["provenance"]]
    assert all(p["generator"] == "extractive" and p["seed"] == "7" and p["source_span"] for p in provenance)
    assert {p["review"] for p in provenance} == {"accepted", "edited"}
    assert back.documents is not None and len(back.documents) == 300
    found = CandidateStore(Store(url)).made_from(ident)
    assert found is not None and (found.id, found.parent, found.made_by) == (batch, parent, "ana")
    assert store.versions(parent).empty  # not a qrels version: the parent stays a dataset of its own

    with pytest.raises(RagMetricsError, match="no candidate was accepted"):
        dataset_of([], parent_dataset, name="empty", batch=batch)


def test_an_edit_is_checked_field_by_field(parent_dataset):
    known = set(parent_dataset.documents["doc_id"])
    doc = sorted(known)[0]
    record = {"query_id": "x-1", "query": "q", "relevant_docs": {doc: 2}}
    edited = apply_edit(record, query=" new ", expected_answer="a", keywords="k1\n k2\n\n", category="factual",
                        difficulty="hard", relevant=relevant_text({doc: 2}) + ", " + sorted(known)[1],
                        known_docs=known)  # fmt: skip
    assert edited["query"] == "new" and edited["expected_keywords"] == ["k1", "k2"]
    # one per line: a keyword keeps its commas, ASCII or Chinese (was split on ",")
    kept = apply_edit(record, query="q", expected_answer="", keywords="1,000 mg\n年付，168 元\n", category="factual",
                      difficulty="easy", relevant=relevant_text({doc: 2}), known_docs=known)  # fmt: skip
    assert kept["expected_keywords"] == ["1,000 mg", "年付，168 元"]
    assert edited["relevant_docs"] == {doc: 2, sorted(known)[1]: 1}
    with pytest.raises(RagMetricsError, match="'nope' is not a document of the corpus"):
        parse_relevant("nope=2", known)
    # a grade that is not a number is said to be one (was: "'DOC=x' is not a document of the corpus")
    with pytest.raises(RagMetricsError, match=rf"the grade 'x' of '{doc}' is not a whole number"):
        parse_relevant(f"{doc}=x", known)
    for grade in (-5, 0, 3, 99):  # off the set's scale (was: stored, -5 and 99 into nDCG's gains)
        with pytest.raises(RagMetricsError, match=rf"={grade}: expected a grade of 1 to 2, the set's scale"):
            parse_relevant(f"{doc}={grade}", known)
    with pytest.raises(RagMetricsError, match="difficulty 'tough'"):
        apply_edit(record, query="q", expected_answer="", keywords="", category="factual", difficulty="tough",
                   relevant="", known_docs=known)  # fmt: skip
    with pytest.raises(RagMetricsError, match="query: expected a question"):
        apply_edit(record, query=" ", expected_answer="", keywords="", category="factual", difficulty="easy",
                   relevant="", known_docs=known)  # fmt: skip
    with pytest.raises(RagMetricsError, match=r"expected answer: expected at most 4,194,304 bytes"):
        apply_edit(record, query="q", expected_answer="x" * (5 << 20), keywords="", category="factual",
                   difficulty="easy", relevant="", known_docs=known)  # fmt: skip
    # a negative query has no answer in the corpus: one left "negative" with an answer or a document is refused
    for answer, relevant in (("", f"{doc}=2"), ("an answer", "")):
        with pytest.raises(RagMetricsError, match="category negative: a negative query is one the corpus does not"):
            apply_edit(record, query="q", expected_answer=answer, keywords="", category="negative",
                       difficulty="easy", relevant=relevant, known_docs=known)  # fmt: skip
    # every field's problem at once, one per line (was: the first only, the next one seen after mending it)
    with pytest.raises(RagMetricsError) as every:
        apply_edit(record, query=" ", expected_answer="", keywords="", category=" ", difficulty="tough",
                   relevant="nope=2", known_docs=known)  # fmt: skip
    assert [line.split(" ")[0] for line in str(every.value).splitlines()] == ["query:", "category:", "difficulty",
                                                                              "relevant"]  # fmt: skip
    negative = apply_edit(record, query="q", expected_answer="", keywords="", category="negative", difficulty="easy",
                          relevant="", known_docs=known)  # fmt: skip
    assert negative["relevant_docs"] == {} and negative["category"] == "negative"


def test_the_registry_names_each_generators_categories():
    assert categories_of("extractive") == CATEGORIES
    assert "reasoning" in categories_of("model")
    with pytest.raises(RagMetricsError, match="generator 'nope'"):
        categories_of("nope")


def test_a_dataset_without_a_corpus_says_so():
    bare = Dataset.from_frames(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]}), name="bare")
    with pytest.raises(RagMetricsError, match="'bare' has no corpus stored"):
        corpus_of(bare)


def test_dataset_check_reports_the_age_and_how_it_is_known(stored, parent_dataset, tmp_path, monkeypatch):
    url, store, parent = stored
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path / "no-store-here"))
    candidates = CandidateStore(store)
    batch = candidates.new_batch(parent, "extractive", {"seed": 7}, 10)
    _generate(candidates, batch, corpus_of(parent_dataset))
    for item in candidates.candidates(batch)[:3]:
        candidates.review(batch, item.position, "accepted", reviewer="ana")
    kept = [c for c in candidates.candidates(batch) if c.kept]
    made = dataset_of(kept, parent_dataset, name="built", batch=batch)
    ident = store.put_dataset(made)
    candidates.mark_made(batch, ident, author="ana")

    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", ident, "--store", url], out, err) == 0, err.getvalue()
    age = next(line for line in out.getvalue().splitlines() if line.startswith("age:"))
    assert re.fullmatch(
        rf"age: 0\.0 days \(stored \d{{4}}-\d\d-\d\d \d\d:\d\d UTC; dataset {ident}, built from 10 extractive "
        rf"candidates of scifact-300 \(batch {batch}\) by ana\)",
        age,
    ), age
    out = io.StringIO()
    assert main(["dataset", "check", "built", "--store", url, "--format", "json"], out, err) == 0
    assert json.loads(out.getvalue())["age"]["known_from"] == "store"

    # the same set as a file, no store holding it: the latest review in its provenance, else the file's time
    rows = [
        {"query_id": q, "query": t, "relevant_docs": {}, "provenance": json.loads(p)}
        for q, t, p in zip(made.queries["query_id"], made.queries["query"], made.queries["provenance"])
    ]
    evalset = tmp_path / "built.jsonl"
    evalset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = io.StringIO()
    assert main(["dataset", "check", str(evalset)], out, err) == 0, err.getvalue()
    assert re.search(r"^age: 0\.0 days \(last reviewed \(its provenance\) \d{4}-", out.getvalue(), re.M)
    for row in rows:
        del row["provenance"]["reviewed_at"]
    evalset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.utime(evalset, (time.time() - 3 * 86400, time.time() - 3 * 86400))
    out = io.StringIO()
    assert main(["dataset", "check", str(evalset)], out, err) == 0
    assert "age: 3.0 days (the file last written (not in a store, no review time in its provenance)" in out.getvalue()

    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", "nothing-here"], out, err) != 0
    assert "nothing-here: no such file, and no store to look a dataset of that id or name up in" in err.getvalue()
    # the set named in a store: the messages name the positional it came as (was "--dataset", which check lacks)
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", "nothing-here", "--store", url], out, err) != 0
    assert "evalset 'nothing-here' is neither a file, a stored dataset's id nor its name" in err.getvalue()
    empty = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", "x", "--store", empty], out, err) != 0
    assert (
        f"evalset 'x': store {empty} holds no dataset yet" in err.getvalue() and "--dataset 'x'" not in err.getvalue()
    )
