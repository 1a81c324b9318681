"""The Build dataset page under AppTest, on its own SQLite store: the generators offered come from the registries,
a batch generates in the background and is stored, each decision is stored at once with its reviewer (a second
session sees them), an edit is checked, and "Make dataset" stores the kept candidates and selects the new dataset.

The corpus is 120 documents of the SciFact sample stored as a dataset's documents.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import random
import threading
from pathlib import Path

import pandas as pd
import pytest

from dashboard.data import jobs
from dashboard.data.workspace import Workspace
from ragmetrics import Dataset
from ragmetrics.cli import main
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import Store
from ragmetrics.synth.base import DEFAULT_CATEGORIES
from ragmetrics.synth.corpus import read_documents
from tests.dashboard.apptest import no_problems, open_app, open_page, param
from tests.model_stub import ModelStub
from tests.test_model_generator import writer

pytestmark = pytest.mark.apptest
pytest.importorskip("bm25s")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.delenv("RAGMETRICS_MODELS", raising=False)
    return tmp_path


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


@pytest.fixture
def corpus_dataset(store_dir) -> str:
    documents = random.Random(3).sample(read_documents(REPO / "sample_runs" / "scifact" / "corpus.jsonl.gz"), 120)
    frame = pd.DataFrame({"doc_id": [d.doc_id for d in documents], "title": [d.title for d in documents],
                          "text": [d.text for d in documents]})  # fmt: skip
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": [documents[0].doc_id], "relevance": [1]})
    dataset = Dataset.from_frames(qrels, pd.DataFrame({"query_id": ["q1"], "query": ["a claim"]}), name="sci-120",
                                  corpus_size=120, documents=frame)  # fmt: skip
    ws = Workspace(_store(store_dir))
    ident = ws.add_dataset(dataset).id
    ws.store.engine.dispose()
    return ident


def _button(at, prefix: str):  # type: ignore[no-untyped-def]
    found = [b for b in at.button if b.key and (b.key == prefix or b.key.rsplit(".", 1)[0] == prefix)]
    assert len(found) == 1, f"{len(found)} buttons {prefix}"
    return found[0]


def _query(at) -> str:  # type: ignore[no-untyped-def]
    """The query shown, its Markdown escapes taken out."""
    return next(m.value for m in at.markdown if m.value.startswith("#### "))[5:].replace("\\", "")


def _held_generation(monkeypatch) -> threading.Event:  # type: ignore[no-untyped-def]
    """Generations held before they write anything, until the event returned is set."""
    go = threading.Event()
    generate = jobs.generate_batch

    def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert go.wait(60)
        return generate(*args, **kwargs)

    monkeypatch.setattr(jobs, "generate_batch", held)
    return go


def _generated(at, store_dir: Path) -> str:  # type: ignore[no-untyped-def]
    batch = CandidateStore(_store(store_dir)).batches()[0].id
    job = jobs.generation(batch)
    assert job is not None and job.wait(120), "the generation did not end"
    at.run()
    no_problems(at)
    return batch


def test_generators_offered_come_from_the_registries(corpus_dataset, monkeypatch) -> None:
    at = open_page("build", {"ds": corpus_dataset})
    no_problems(at)
    assert at.selectbox(key="build.generator").options == ["extractive"]  # no model registered: none offered
    assert at.multiselect(key="build.categories.extractive").value == ["factual", "cloze", "summary", "negative"]
    assert "Mix: factual 3, cloze 3, summary 2, negative 2" in " ".join(c.value for c in at.caption)
    monkeypatch.setenv("RAGMETRICS_MODELS", "stub=openai:http://127.0.0.1:9/v1#model=m")
    at = open_page("build", {"ds": corpus_dataset})
    assert at.selectbox(key="build.generator").options == ["extractive", "model: stub"]
    at.selectbox(key="build.generator").select("model: stub").run()
    assert "reasoning" in at.multiselect(key="build.categories.model").value


def test_what_the_user_typed_on_build_and_upload_waits_while_another_page_is_open(corpus_dataset) -> None:
    """Was: the generation's settings and the Upload page's name, targets, chunk pattern and tags were forgotten
    when another page was opened (Streamlit drops a widget's value after a run that does not draw it), so runs
    uploaded after a look at the Overview went without the tags typed for them."""
    at = open_app({"ds": corpus_dataset})
    at.switch_page("views/build.py").run()
    at.number_input(key="build.n").set_value(4).run()
    at.number_input(key="build.seed").set_value(7).run()
    at.multiselect(key="build.categories.extractive").set_value(["factual", "cloze"]).run()
    at.text_input(key="build.parent_separator").input("_C").run()
    at.switch_page("views/upload.py").run()
    typed = {"upload.name": "SciFact test", "upload.targets": "faq", "upload.chunk_pattern": "#"}
    for key, text in typed.items():
        at.text_input(key=key).input(text).run()
    at.text_area(key="upload.run_tags").input("commit=9548cd6").run()
    at.switch_page("views/overview.py").run()
    at.switch_page("views/build.py").run()
    no_problems(at)
    assert (at.number_input(key="build.n").value, at.number_input(key="build.seed").value) == (4, 7)
    assert at.multiselect(key="build.categories.extractive").value == ["factual", "cloze"]
    assert at.text_input(key="build.parent_separator").value == "_C"
    assert "Mix: factual 2, cloze 2" in " ".join(c.value for c in at.caption)
    at.switch_page("views/upload.py").run()
    no_problems(at)
    assert {key: at.text_input(key=key).value for key in typed} == typed
    assert at.text_area(key="upload.run_tags").value == "commit=9548cd6"


def test_review_is_stored_at_once_and_makes_a_dataset(corpus_dataset, store_dir) -> None:
    at = open_page("build", {"ds": corpus_dataset})
    _button(at, "build.generate").click().run()
    batch = _generated(at, store_dir)
    assert "**10** of 10 candidates left to review" in " ".join(m.value for m in at.markdown)

    first = _query(at)
    _button(at, "build.accept").click().run()
    no_problems(at)
    assert _query(at) != first
    _button(at, "build.reject").click().run()
    _button(at, "build.edit").click().run()
    prefix = next(t.key for t in at.text_input if t.key.endswith(".relevant")).rsplit(".", 1)[0] + "."
    original = at.text_input(key=prefix + "relevant").value
    at.text_input(key=prefix + "relevant").input("not-a-document=2")
    at.text_input(key=prefix + "query").input(" ")
    at.button[[b.label for b in at.button].index("Save edit")].click().run()
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert (
        "query: expected a question, got nothing  \nrelevant documents: 'not-a-document' is not a document of the corpus"
        in said
    )
    at.text_input(key=prefix + "relevant").input(original.split("=")[0] + "=1")
    at.text_input(key=prefix + "query").input("An edited question?")
    at.button[[b.label for b in at.button].index("Save edit")].click().run()
    no_problems(at)

    reviewed = CandidateStore(_store(store_dir)).candidates(batch)
    assert [c.decision for c in reviewed[:4]] == ["accepted", "rejected", "edited", None]
    assert reviewed[2].final["query"] == "An edited question?" and reviewed[2].reviewer == "anonymous"
    assert list(reviewed[2].final["relevant_docs"].values()) == [1]
    # a second session (another tab, or after a restart) shows the same place in the review
    other = open_page("build", {"ds": corpus_dataset})
    no_problems(other)
    assert "**7** of 10 candidates left to review: 1 accepted, 1 edited, 1 rejected." in " ".join(
        m.value for m in other.markdown
    )

    # a decided one shown again can be left as it was: back to the queue, its decision kept, no new review
    other.selectbox(key="build.revise").select(reviewed[0].position).run()
    _button(other, "build.revise.show").click().run()
    assert _query(other) == reviewed[0].record["query"]
    _button(other, "build.revise.back").click().run()
    no_problems(other)
    assert _query(other) == reviewed[3].record["query"]
    assert CandidateStore(_store(store_dir)).candidates(batch)[0].reviewed_at == reviewed[0].reviewed_at
    # the rejected one reviewed again and accepted: the latest decision counts, the first stays on record
    other.selectbox(key="build.revise").select(reviewed[1].position).run()
    _button(other, "build.revise.show").click().run()
    assert _query(other) == reviewed[1].record["query"]
    assert "decided: rejected by anonymous" in " ".join(m.value for m in other.markdown).replace("\\", "")
    _button(other, "build.accept").click().run()
    no_problems(other)
    assert _query(other) == reviewed[3].record["query"]  # back to the first undecided
    assert CandidateStore(_store(store_dir)).candidates(batch)[1].decision == "accepted"

    _button(other, "build.make").click().run()
    no_problems(other)
    made = param(other, "ds")
    assert made and made != corpus_dataset
    built = _store(store_dir).get_dataset(made)
    kept = [reviewed[0].record["query"], reviewed[1].record["query"], "An edited question?"]
    assert sorted(built.queries["query"]) == sorted(kept)
    provenance = [json.loads(p) for p in built.queries["provenance"]]
    assert {p["review"] for p in provenance} == {"accepted", "edited"}
    assert all(p["batch"] == batch and p["generator"] == "extractive" for p in provenance)
    assert "stored: 3 queries with their provenance" in " ".join(s.value for s in other.success).replace("\\", "")


def test_a_make_click_after_another_reviewer_rejected_the_last_accepted_one_says_no_dataset_was_made(
    corpus_dataset, store_dir
) -> None:
    """The click reaches a run that draws Make dataset disabled (nothing kept any more): it was dropped without a
    word; the page now says why no dataset was made, once."""
    at = open_page("build", {"ds": corpus_dataset})
    _button(at, "build.generate").click().run()
    batch = _generated(at, store_dir)
    _button(at, "build.accept").click().run()
    make = _button(at, "build.make")
    assert not make.disabled
    (accepted,) = [c for c in CandidateStore(_store(store_dir)).candidates(batch) if c.kept]
    CandidateStore(_store(store_dir)).review(batch, accepted.position, "rejected", reviewer="bob")  # another tab
    make.click().run()
    no_problems(at)
    said = " ".join(w.value for w in at.warning)
    assert _button(at, "build.make").disabled and "no dataset was made" in said
    assert [b.id for b in CandidateStore(_store(store_dir)).batches()] == [batch]
    assert _store(store_dir).list_datasets()["id"].tolist() == [corpus_dataset]  # nothing made
    at.run()
    assert "no dataset was made" not in " ".join(w.value for w in at.warning)  # said once


def test_a_decision_another_tab_made_first_is_said_when_this_tab_s_is_not_taken(corpus_dataset, store_dir) -> None:
    """Was: a tab still showing a candidate another tab had rejected took an Accept click without a word, stored
    nothing, and moved on; the decision kept is now said, with who made it and how to change it."""
    at = open_page("build", {"ds": corpus_dataset})
    _button(at, "build.generate").click().run()
    batch = _generated(at, store_dir)
    shown = next(c for c in CandidateStore(_store(store_dir)).candidates(batch) if c.record["query"] == _query(at))
    CandidateStore(_store(store_dir)).review(batch, shown.position, "rejected", reviewer="bob")  # another tab
    _button(at, "build.accept").click().run()
    no_problems(at)
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert f"Candidate {shown.position} was rejected by bob (" in said and "when you chose accepted" in said
    assert CandidateStore(_store(store_dir)).candidates(batch)[shown.position - 1].decision == "rejected"
    at.run()
    assert "was rejected by bob" not in " ".join(w.value for w in at.warning)  # said once


def test_a_candidate_a_link_opened_or_shown_again_keeps_a_decision_made_after_it_was_shown(
    corpus_dataset, store_dir
) -> None:
    """Was: a candidate a share link named, or one shown again to be reviewed again, took this tab's click over a
    decision another reviewer made after it was shown, without a word. Now the click is not taken and said; a
    second click, on the candidate as now shown, takes."""
    at = open_page("build", {"ds": corpus_dataset})
    _button(at, "build.generate").click().run()
    batch = _generated(at, store_dir)
    candidates = CandidateStore(_store(store_dir))
    linked = candidates.candidates(batch)[2]  # undecided
    other = open_page("build", {"ds": corpus_dataset, "bb": batch, "bc": str(linked.position)})
    assert _query(other) == linked.record["query"]
    candidates.review(batch, linked.position, "rejected", reviewer="bob")  # after the link's tab showed it
    _button(other, "build.accept").click().run()
    no_problems(other)
    said = " ".join(w.value for w in other.warning).replace("\\", "")
    assert f"Candidate {linked.position} was rejected by bob (" in said and "when you chose accepted" in said
    assert candidates.candidates(batch)[linked.position - 1].decision == "rejected"
    # shown again, with bob's decision: this click is the reviewer's, and it takes
    assert _query(other) == linked.record["query"]
    _button(other, "build.accept").click().run()
    assert candidates.candidates(batch)[linked.position - 1].decision == "accepted"

    # shown again from the decisions (accepted), changed by carol meanwhile: the edit saved over it stays on its form
    again = open_page("build", {"ds": corpus_dataset, "bb": batch, "bc": str(linked.position)})
    candidates.review(batch, linked.position, "rejected", reviewer="carol")
    _button(again, "build.edit").click().run()
    save = [b.label for b in again.button].index("Save edit")
    again.button[save].click().run()
    problem = " ".join(e.value for e in again.error).replace("\\", "")
    assert f"Candidate {linked.position} was rejected by carol (" in problem and "Save again" in problem, problem
    assert candidates.candidates(batch)[linked.position - 1].decision == "rejected"
    again.button[save].click().run()
    assert candidates.candidates(batch)[linked.position - 1].decision == "edited"


def test_the_share_link_names_the_batch_and_the_candidate_shown_and_reopens_them(corpus_dataset, store_dir) -> None:
    """Was: the Build page's link kept neither its batch nor its candidate, so a teammate opening it saw the latest
    batch's first undecided candidate; now ``bb`` and ``bc`` reopen the candidate shown, decided or not."""
    at = open_page("build", {"ds": corpus_dataset})
    _button(at, "build.generate").click().run()
    first_batch = _generated(at, store_dir)
    _button(at, "build.accept").click().run()
    shown = next(
        c for c in CandidateStore(_store(store_dir)).candidates(first_batch) if c.record["query"] == _query(at)
    )
    assert (param(at, "bb"), param(at, "bc")) == (first_batch, str(shown.position))
    at.number_input(key="build.seed").set_value(7).run()
    _button(at, "build.generate").click().run()
    newer = next(b.id for b in CandidateStore(_store(store_dir)).batches() if b.id != first_batch)
    job = jobs.generation(newer)
    assert job is not None and job.wait(120)
    at.run()
    assert param(at, "bb") == newer  # the batch the page now shows

    accepted = next(c for c in CandidateStore(_store(store_dir)).candidates(first_batch) if c.decision == "accepted")
    other = open_page("build", {"ds": corpus_dataset, "bb": first_batch, "bc": str(accepted.position)})
    no_problems(other)
    assert other.selectbox(key="build.batch").value == first_batch
    assert _query(other) == accepted.record["query"]  # a decided one, shown again from the link
    assert "decided: accepted by anonymous" in " ".join(m.value for m in other.markdown).replace("\\", "")
    assert (param(other, "bb"), param(other, "bc")) == (first_batch, str(accepted.position))

    elsewhere = open_page("build", {"ds": corpus_dataset, "bb": "0123456789abcdef", "bc": "999"})
    no_problems(elsewhere)
    said = " ".join(c.value for c in elsewhere.caption)
    assert "The link names batch 01234567, which is not one of this dataset's batches in this store" in said
    assert elsewhere.selectbox(key="build.batch").value == newer and param(elsewhere, "bb") == newer
    missing = open_page("build", {"ds": corpus_dataset, "bb": first_batch, "bc": "999"})
    assert "The link names candidate 999, which this batch does not hold (yet)" in " ".join(
        c.value for c in missing.caption
    )


def _extractive_batch(store_dir: Path, dataset_id: str) -> tuple[Workspace, str, jobs.GenerationJob]:
    """A batch of 10 extractive candidates (5 factual, 5 cloze) on the stored dataset, and its job, not started."""
    ws = Workspace(_store(store_dir))
    entry = ws.dataset(dataset_id)
    assert entry is not None
    batch = ws.candidates.new_batch(dataset_id, "extractive", {"categories": {"factual": 5, "cloze": 5}, "seed": 3}, 10)
    return (
        ws,
        batch,
        jobs.GenerationJob(ws.candidates, batch, entry.dataset, "extractive", {"factual": 5, "cloze": 5}, 3),
    )


def test_a_cancelled_batch_keeps_its_candidates_and_resumes_from_the_page(corpus_dataset, store_dir) -> None:
    ws, batch, job = _extractive_batch(store_dir, corpus_dataset)
    job.cancel()  # what the page's Cancel does, here before the first candidate is stored
    job.start()
    assert job.wait(120)
    assert job.status().cancelled and ws.candidates.batch(batch).status == "stopped"

    at = open_page("build", {"ds": corpus_dataset})
    no_problems(at)
    assert "Generation stopped after 0 of 10 candidates" in " ".join(w.value for w in at.warning)
    captions = " ".join(c.value for c in at.caption)
    assert "0 of 10 candidates stored, stopped" in captions and "No candidate stored yet" in captions
    assert not [m for m in at.markdown if "Make dataset" in m.value]  # nothing to make a dataset of yet
    _button(at, "build.resume").click().run()
    resumed = jobs.generation(batch)
    assert resumed is not None and resumed is not job and resumed.wait(120)
    at.run()
    no_problems(at)
    found = ws.candidates.batch(batch)
    assert (found.status, found.stored) == ("complete", 10)
    assert not at.warning
    assert "**10** of 10 candidates left to review" in " ".join(m.value for m in at.markdown)
    assert "10 of 10 candidates stored, complete" in " ".join(c.value for c in at.caption)


def test_a_generation_that_ends_while_the_page_reads_its_batch_is_shown_complete(
    corpus_dataset, store_dir, monkeypatch
) -> None:
    """Was: a generation ending after the page read its batch and before it asked whether the job ran was shown
    as stopped (with Resume) over the batch read before. Here it ends in that window: it starts once the page has
    read the batches."""
    from dashboard.ui import building

    _, batch, job = _extractive_batch(store_dir, corpus_dataset)
    job_of = building.job_of

    def ended_once_read(wanted: str):  # type: ignore[no-untyped-def]
        if wanted == batch and jobs.generation(batch) is None:
            assert jobs.start_generation(job).wait(120)
        return job_of(wanted)

    monkeypatch.setattr(building, "job_of", ended_once_read)
    at = open_page("build", {"ds": corpus_dataset})
    no_problems(at)
    assert job.status().done == 10 and not job.status().error
    assert not at.warning, [w.value for w in at.warning]
    assert "**10** of 10 candidates left to review" in " ".join(m.value for m in at.markdown)
    assert "10 of 10 candidates stored, complete" in " ".join(c.value for c in at.caption)


def test_a_generation_that_ends_between_the_page_s_two_looks_at_it_is_shown_complete(
    corpus_dataset, store_dir, monkeypatch
) -> None:
    """Was: the page asked whether the job ended after its read (no: still running), then whether it ran (no: it
    had ended in between), and showed the batch read before as stopped, with Resume. Here it ends in that window."""
    *_, made = _extractive_batch(store_dir, corpus_dataset)
    go = _held_generation(monkeypatch)
    job = jobs.start_generation(made)
    looks = {name: getattr(jobs.GenerationJob, name) for name in ("ended_after", "status")}

    def looked_then_ended(name):  # type: ignore[no-untyped-def]
        def look(self, *args):  # type: ignore[no-untyped-def]
            said = looks[name](self, *args)
            if self is job and not go.is_set():  # the page's first look at the job: it ends before the next
                go.set()
                assert job.wait(120)
            return said

        return look

    for name in looks:
        monkeypatch.setattr(jobs.GenerationJob, name, looked_then_ended(name))
    at = open_page("build", {"ds": corpus_dataset})
    no_problems(at)
    assert go.is_set() and job.status().done == 10 and not job.status().error
    assert not at.warning, [w.value for w in at.warning]  # not "Generation stopped after 0 of 10 candidates"
    assert not [b for b in at.button if b.label == "Resume"]


def test_a_failed_generation_says_it_failed_not_that_it_was_cancelled(corpus_dataset, store_dir, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETRICS_MODELS", "dead=openai:http://127.0.0.1:9/v1?model=x&attempts=1&timeout=2&cache=off")
    ws = Workspace(_store(store_dir))
    entry = ws.dataset(corpus_dataset)
    assert entry is not None
    batch = ws.candidates.new_batch(corpus_dataset, "model", {"categories": {"factual": 5}, "seed": 3,
                                                             "model": "dead"}, 5)  # fmt: skip
    job = jobs.start_generation(
        jobs.GenerationJob(ws.candidates, batch, entry.dataset, "model", {"factual": 5}, 3, model="dead")
    )
    assert job.wait(120) and job.status().error and not job.status().cancelled
    at = open_page("build", {"ds": corpus_dataset})
    assert not at.exception  # the one error shown is the generation's, below
    errors = " ".join(e.value for e in at.error).replace("\\", "")
    assert "Generation failed after 0 of 5 candidates" in errors and "Resume tries the rest again" in errors
    assert not [w for w in at.warning if "cancelled" in w.value]
    assert "0 of 5 candidates stored, stopped" in " ".join(c.value for c in at.caption)


def test_a_registered_model_generates_through_the_page(corpus_dataset, store_dir, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    with ModelStub(writer) as stub:
        monkeypatch.setenv("RAGMETRICS_MODELS", f"gen=openai:{stub.url}?model=qwen2.5&backoff=0.01")
        at = open_page("build", {"ds": corpus_dataset})
        at.selectbox(key="build.generator").select("model: gen").run()
        at.number_input(key="build.n").set_value(5).run()
        _button(at, "build.generate").click().run()
        _generated(at, store_dir)
        assert stub.count >= 5
    stored = CandidateStore(_store(store_dir)).candidates(CandidateStore(_store(store_dir)).batches()[0].id)
    assert sorted(c.record["category"] for c in stored) == sorted(DEFAULT_CATEGORIES)
    assert all(c.record["provenance"]["model_name"] == "gen" for c in stored)
    assert CandidateStore(_store(store_dir)).batches()[0].settings["model"] == "gen"  # its name, not its address


def test_a_chunked_corpus_built_through_the_page_grades_sibling_chunks_as_synth_does(store_dir, tmp_path) -> None:
    """CMRC's chunks (``DEV_0_C1``) stored as a dataset's documents: with the chunk-id separator ``_C`` the page's
    batch grades a query's sibling chunks as ``synth --parent-separator _C`` does (the same records, seed for
    seed); without it, each query has only its source chunk."""
    source = tmp_path / "corpus.jsonl.gz"  # the sample's first 600 chunks: passages of several chunks each
    with gzip.open(REPO / "sample_runs" / "cmrc2018" / "corpus.jsonl.gz", "rt", encoding="utf-8") as whole:
        source.write_bytes(gzip.compress("".join(itertools.islice(whole, 600)).encode("utf-8"), mtime=0))
    documents = read_documents(source)
    frame = pd.DataFrame({"doc_id": [d.doc_id for d in documents], "title": [d.title for d in documents],
                          "text": [d.text for d in documents]})  # fmt: skip
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": [documents[0].doc_id], "relevance": [1]})
    dataset = Dataset.from_frames(qrels, pd.DataFrame({"query_id": ["q1"], "query": ["问题"]}), name="cmrc-chunks",
                                  documents=frame)  # fmt: skip
    ws = Workspace(_store(store_dir))
    ident = ws.add_dataset(dataset).id
    ws.store.engine.dispose()
    relevant = {}
    for separator in ("_C", ""):
        at = open_page("build", {"ds": ident})
        at.number_input(key="build.n").set_value(6)
        at.number_input(key="build.seed").set_value(3)
        at.multiselect(key="build.categories.extractive").set_value(["factual"])
        at.text_input(key="build.parent_separator").input(separator)
        _button(at, "build.generate").click().run()
        batch = CandidateStore(_store(store_dir)).batches()[0]  # the newest first
        assert batch.settings["parent_separator"] == separator
        job = jobs.generation(batch.id)
        assert job is not None and job.wait(300), "the generation did not end"
        relevant[separator] = [
            c.record["relevant_docs"] for c in CandidateStore(_store(store_dir)).candidates(batch.id)
        ]
    assert all(len(r) == 1 for r in relevant[""])
    assert any(len(r) > 1 for r in relevant["_C"])
    target = tmp_path / "cli.jsonl"
    argv = [
        "synth",
        str(source),
        "-o",
        str(target),
        "--categories",
        "factual=6",
        "--seed",
        "3",
        "--parent-separator",
        "_C",
    ]
    assert main(argv, io.StringIO(), io.StringIO()) == 0
    cli = [json.loads(line)["relevant_docs"] for line in target.read_text(encoding="utf-8").splitlines()]
    assert relevant["_C"] == cli


def test_a_second_batch_made_alike_is_the_one_shown_and_named(corpus_dataset, store_dir) -> None:
    """Was: two batches of the same generator, seed and count made in one minute had the same label, the select box
    took the older one, and the new batch could not be reviewed; the Name box kept the first batch's name."""
    at = open_page("build", {"ds": corpus_dataset})
    at.number_input(key="build.n").set_value(2).run()
    _button(at, "build.generate").click().run()
    first = _generated(at, store_dir)
    _button(at, "build.generate").click().run()
    second = _generated(at, store_dir)
    assert first != second
    assert at.selectbox(key="build.batch").value == second
    labels = at.selectbox(key="build.batch").options
    assert len(set(labels)) == 2, labels
    _button(at, "build.accept").click().run()
    assert at.text_input(key=f"build.name.{second}").value.endswith(f"(built, {second[:6]})")
    at.selectbox(key="build.batch").set_value(first).run()
    no_problems(at)
    assert at.selectbox(key="build.batch").value == first


def test_a_second_click_on_generate_while_its_batch_generates_makes_no_second_batch(
    corpus_dataset, store_dir, monkeypatch
) -> None:
    """Was: a double click on Generate started two batches alike, 0.6 s apart, each generating the same candidates
    on a server of two cores. A second click while the first batch generates joins it; once it ended, a batch made
    alike is a new one (the test above)."""
    go = _held_generation(monkeypatch)
    at = open_page("build", {"ds": corpus_dataset})
    at.number_input(key="build.n").set_value(2).run()
    _button(at, "build.generate").click().run()
    _button(at, "build.generate").click().run()
    assert len(CandidateStore(_store(store_dir)).batches()) == 1
    go.set()
    _generated(at, store_dir)
    assert len(CandidateStore(_store(store_dir)).batches()) == 1


def test_a_chunk_separator_says_how_it_groups_the_documents_and_doubts_one_that_makes_a_family(
    corpus_dataset,
) -> None:
    """Was: "-" typed as the chunk separator of the FAQ's ids (FAQ-11) graded 16 documents relevant to every query
    written from one of them, silently. The page says what a separator groups before a batch is generated."""
    from dashboard.ui.building import grouping_words
    from ragmetrics.io import load_dataset

    faq = REPO / "sample_runs" / "product_faq_zh"
    dataset = load_dataset(faq / "eval_set.json", corpus=faq / "corpus.jsonl")
    assert grouping_words(dataset, "-") == (
        "'-' groups 70 of the 70 stored documents into 8 documents, the largest 'MISC' of 18 chunks: a query written "
        "from one of them grades all 18 relevant; is '-' what ends a document's id before its chunk number?"
    )
    assert grouping_words(dataset, "#") == "No stored document's id holds '#': each document is its own."
    at = open_page("build", {"ds": corpus_dataset})
    at.text_input(key="build.parent_separator").input("_C").run()
    no_problems(at)
    assert "No stored document's id holds '\\_C'" in " ".join(c.value for c in at.caption)


def test_a_set_built_with_a_seed_is_known_by_it_so_the_page_can_say_the_same_seed_repeats_it(tmp_path) -> None:
    """Was: generating again from a built set at its seed (the default 0) wrote the candidates it already held,
    without a word. The page reads the set's provenance and says so (a set of no provenance: nothing)."""
    from dashboard.ui.building import seeds_built
    from ragmetrics.io import load_dataset

    faq = REPO / "sample_runs" / "product_faq_zh"
    argv = ["synth", str(faq / "corpus.jsonl"), "-o", str(tmp_path / "set.jsonl"), "--categories", "factual=3",
            "--seed", "7", "--no-retrieval-check"]  # fmt: skip
    assert main(argv, io.StringIO(), io.StringIO()) == 0
    assert seeds_built(load_dataset(tmp_path / "set.jsonl")) == {("extractive", 7)}
    assert seeds_built(load_dataset(faq / "eval_set.json")) == set()


def test_a_store_that_refuses_building_and_reviewing_says_so_and_disables_their_buttons(
    database_and_role, monkeypatch
) -> None:
    """Was: generating candidates and reviewing them were no changes of their own: a PostgreSQL role that may add
    data but not update a batch's state, nor use the reviews' sequence, saw Generate, Accept, Edit, Reject and
    Make dataset enabled, and each click was refused in red. Now the open reads those privileges with the others;
    the page says what the store refuses, and its buttons are disabled with the reason."""
    import sqlalchemy as sa

    from dashboard.ui import layout
    from ragmetrics.store.database import StoreWriteRefused

    name, owner_url = database_and_role
    owner = Workspace(Store(owner_url))
    documents = pd.DataFrame({"doc_id": ["d1", "d2"], "title": ["", ""], "text": ["Refunds take 14 days.", "Ships."]})
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    queries = pd.DataFrame({"query_id": ["q1"], "query": ["refunds"]})
    parent = owner.add_dataset(Dataset.from_frames(qrels, queries, name="faq", corpus_size=2, documents=documents)).id
    batch = owner.candidates.new_batch(parent, "extractive", {"seed": 0}, 1)
    record = {"query_id": "extractive-0-0001", "query": "How long do refunds take?", "relevant_docs": {"d1": 1},
              "category": "factual", "difficulty": "easy", "source": {"doc_id": "d1", "text": "Refunds take 14 days."}}  # fmt: skip
    owner.candidates.add_candidate(batch, 1, record)
    owner.candidates.set_status(batch, "complete")
    with owner.store.engine.begin() as conn:  # adding anything; no UPDATE, no sequence
        conn.execute(sa.text(f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {name}"))
    url = owner_url.replace("postgres@", f"{name}@", 1)
    monkeypatch.setenv("RAGMETRICS_STORE_URL", url)
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    workspace = Workspace(Store(url))
    assert not workspace.read_only
    assert {"build datasets", "review candidates"} <= set(workspace.refused_changes())

    at = open_page("build", {"ds": parent})
    no_problems(at)
    building, reviewing = (layout.change_help(workspace, c) for c in ("build datasets", "review candidates"))
    assert building and building.startswith("This store refuses to build datasets: ")
    assert reviewing and reviewing.startswith("This store refuses to review candidates: ")
    assert [i.value for i in at.info if "refuses to" in i.value] == [
        f"{building} Ask the store's owner for the privilege.",
        f"{reviewing} Ask the store's owner for the privilege.",
    ]
    helps = {b.key: (b.disabled, b.proto.help) for b in at.button}
    assert helps["build.generate"] == (True, building) and helps["build.make"] == (True, building)
    for key in ("build.accept.1", "build.edit.1", "build.reject.1"):
        assert helps[key] == (True, reviewing)
    with pytest.raises(StoreWriteRefused):  # as a click would have been
        workspace.candidates.review(batch, 1, "accepted", reviewer="ann")

    with owner.store.engine.begin() as conn:
        conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name}"))
    owner.store.engine.dispose()
    at = open_page("build", {"ds": parent})  # a page opened rechecks a store that refuses a change: reviewing may
    no_problems(at)
    assert [i.value for i in at.info if "refuses to" in i.value] == [
        f"{building} Ask the store's owner for the privilege."
    ]
    accept = next(b for b in at.button if b.key == "build.accept.1")
    assert not accept.disabled
    accept.click().run()
    no_problems(at)
    assert CandidateStore(Store(owner_url)).candidates(batch)[0].decision == "accepted"
    assert next(b for b in at.button if b.key == "build.make").disabled
    with pytest.raises(StoreWriteRefused):  # still refused: a batch's state is an UPDATE
        Workspace(Store(url)).candidates.set_status(batch, "stopped")
