"""The Judge page, run health on the Upload and result pages, passages on Missed queries and qrels versions on
the Workspace page, under AppTest, each test on its own SQLite store."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from dashboard.core.text import HIGHLIGHT_LEGEND, MARK_COLOURS
from dashboard.data.workspace import Workspace
from dashboard.ui import layout, state
from ragmetrics import Dataset, Run
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import Store
from tests.dashboard.apptest import no_problems, open_page, param

pytestmark = pytest.mark.apptest

REPO = Path(__file__).resolve().parents[2]
HOSTILE = '<img src=x onerror="alert(1)"> **not bold** [link](javascript:alert(1))'


def _text(elements) -> str:  # type: ignore[no-untyped-def]
    return " ".join(str(e.value) for e in elements).replace("\\", "")


def judge_dataset() -> tuple[Dataset, list[Run]]:
    """Two queries with expected answers and keywords, graded 0-2, a corpus (one text hostile), two runs with a
    few unjudged documents in their top 3."""
    qrels = pd.DataFrame(
        [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d5", 1)], columns=["query_id", "doc_id", "relevance"]
    )
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2"],
            "query": ["个人 Pro 年付多少钱？", "how do I get a refund"],
            "expected_answer": ["年付 168 元", "fill in the refund form"],
            "expected_keywords": [["年付", "168 元"], ["refund", "form"]],
        }
    )
    docs = pd.DataFrame(
        {
            "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6", "d7"],
            "title": ["价格", "价格", "价格", "杂项", "Refunds", "Refunds", "Other"],
            "text": [
                "个人 Pro 年付 168 元。",
                "团队版按人数计费。",
                "个人 Pro 年付 168 元，月付 18 元。",
                HOSTILE,
                "Refunds take 14 days.",
                "To get a refund, fill in the refund form.",
                "Nothing here.",
            ],
        }
    )
    dataset = Dataset.from_frames(qrels, queries, name="judge-mini", documents=docs)

    def run(name: str, rankings: dict[str, list[str]]) -> Run:
        rows = [{"query_id": q, "doc_id": d, "score": 9.0 - i} for q, ds in rankings.items() for i, d in enumerate(ds)]
        return Run.from_frame(pd.DataFrame(rows), name=name)

    return dataset, [
        run("alpha", {"q1": ["d3", "d1", "d4"], "q2": ["d6", "d5", "d7"]}),
        run("beta", {"q1": ["d1", "d2", "d3"], "q2": ["d5", "d7", "d6"]}),
    ]


@pytest.fixture
def store_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.delenv("RAGMETRICS_BASE_URL", raising=False)
    return tmp_path


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


@pytest.fixture
def judged(store_dir) -> dict[str, str]:
    ws = Workspace(_store(store_dir))
    dataset, runs = judge_dataset()
    entry = ws.add_dataset(dataset, source="judge-mini")
    ids = {"dataset": entry.id}
    for run in runs:
        ids[run.name] = ws.add_run(entry.id, run).id
    ws.store.engine.dispose()
    return ids


def button(at, name: str):  # type: ignore[no-untyped-def]
    """The Judge page's button ``name`` (e.g. ``judge.grade.1``, ``judge.skip``): its key also names the pair it acts
    on (``judge.grade.1.<pair>``)."""
    found = [b for b in at.button if b.key and b.key.rsplit(".", 1)[0] == name]
    assert len(found) == 1, f"{len(found)} buttons {name}.<pair>"
    return found[0]


def _pair(at) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The (query text, document header) of the pair the page shows."""
    query = next(m.value for m in at.markdown if m.value.startswith("#### "))
    doc = next(m.value for m in at.markdown if "badge[unjudged]" in m.value)
    return query[5:], doc


def _left(at) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(pairs left to judge, pairs pooled) as the page says."""
    found = re.search(r"\*\*(\d+)\*\* of (\d+) unjudged pairs", " ".join(m.value for m in at.markdown))
    assert found, "no queue summary"
    return int(found.group(1)), int(found.group(2))


def _params(ids: dict[str, str]) -> dict[str, str]:
    return {"ds": ids["dataset"], "runs": f"{ids['alpha']},{ids['beta']}", "m": "ndcg", "k": "3"}


def test_judge_page_gives_labels_at_once_and_a_second_session_sees_them(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    no_problems(at)
    # one button per grade of the dataset's scale (0 1 2), a key each, and Skip
    grades = [b for b in at.button if b.key and b.key.startswith("judge.grade.")]
    assert [b.label for b in grades] == ["0 · not relevant", "1 · relevant", "2 · highly relevant"]
    assert _left(at) == (4, 4)
    first = _pair(at)
    button(at, "judge.grade.1").click().run()
    no_problems(at)
    assert _pair(at) != first and _left(at) == (3, 4)
    header = " ".join(m.value for m in at.markdown)
    assert "are left to judge (1 labelled)" in header  # 3 left and 1 labelled: the 4 pooled
    assert "**1** label(s) given on this version, not in a qrels version yet." in header
    pending = _store(store_dir).pending_labels(judged["dataset"])
    assert len(pending) == 1 and pending["label"].tolist() == [1] and pending["author"].tolist() == ["anonymous"]
    table = at.dataframe[0].value
    assert table[["label", "author"]].values.tolist() == [[1, "anonymous"]]
    # another tab (a fresh session) reads the store: the label is there and the pair is out of its queue
    other = open_page("judge", _params(judged))
    no_problems(other)
    assert _left(other) == (3, 4) and _pair(other) != first
    assert other.dataframe[0].value["label"].tolist() == [1]


def test_a_pair_another_tab_holds_is_said_to_be_in_another_tab_not_only_another_judge_s(judged) -> None:
    """Was "other judges are on the 1 before it", read by a judge whose own reloaded tab held that pair: the words
    now name both, and say the pair comes back."""
    at = open_page("judge", _params(judged))
    other = open_page("judge", _params(judged))  # a second tab, or the same browser after a reload
    no_problems(other)
    assert _pair(other) != _pair(at)
    said = " ".join(c.value for c in other.caption)
    assert "Pair 2 of 4 left (the pair before it is shown in another tab: another judge's, or one of yours" in said


def _passage(at) -> str:
    """The Judge page's document text: the element after the marks' legend."""
    texts = [m.value for m in at.markdown]
    return texts[texts.index(HIGHLIGHT_LEGEND) + 1]


def test_the_pair_shows_query_answer_keywords_and_escaped_marked_text(judged) -> None:
    at = open_page("judge", _params(judged))
    assert any("Expected keywords:" in m.value for m in at.markdown)
    # walk the queue: the hostile document shows as text, never as markup (tests/dashboard/test_text_marks.py
    # renders such text and finds no markup in it)
    seen = []
    for _ in range(4):
        seen.append(_pair(at)[1])
        body = _passage(at)
        assert not re.search(r"(?<!\\)[<*]|(?<!\\)\[link", body)  # every "<", "*" and the link's "[" escaped
        if "d4" in seen[-1]:
            assert '\\<img src\\=x onerror\\="alert\\(1\\)"\\> \\*\\*not bold\\*\\*' in body
        button(at, "judge.skip").click().run()
    assert any("d4" in s for s in seen)
    assert "You skipped every pair" in _text(at.info)
    at.button(key="judge.unskip").click().run()
    assert _left(at) == (4, 4)


def test_a_suggestion_is_stored_only_when_accepted_and_names_its_rule(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    store = _store(store_dir)
    for _ in range(4):  # find a pair a rule has a suggestion for
        if any(b.key and b.key.startswith("judge.accept.") for b in at.button):
            break
        button(at, "judge.skip").click().run()
    accept = button(at, "judge.accept")
    assert "Rule **answer** suggests grade **2**" in " ".join(m.value for m in at.markdown)
    for rule in ("answer", "keywords"):  # shown, not stored
        assert store.pending_labels(judged["dataset"], kind=f"suggestion:{rule}").empty
    assert store.pending_labels(judged["dataset"]).empty
    accept.click().run()
    no_problems(at)
    suggestion = store.pending_labels(judged["dataset"], kind="suggestion:answer")
    label = store.pending_labels(judged["dataset"])
    assert len(suggestion) == 1 and len(label) == 1
    assert (
        suggestion[["query_id", "doc_id", "label"]].values.tolist()
        == label[["query_id", "doc_id", "label"]].values.tolist()
    )
    assert at.dataframe[0].value["suggested_by"].tolist() == ["answer"]


def test_save_as_a_new_version_opens_it_and_the_picker_names_it(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    button(at, "judge.grade.2").click().run()
    button(at, "judge.grade.0").click().run()
    assert not at.button(key="judge.save").disabled
    at.button(key="judge.save").click().run()
    no_problems(at)
    store = _store(store_dir)
    versions = store.versions(judged["dataset"])
    assert len(versions) == 1 and versions["n_labels"].tolist() == [2] and versions["author"].tolist() == ["anonymous"]
    new = versions["id"].iloc[0]
    assert param(at, "ds") == new  # the share link pins the version
    picker = at.selectbox(key="sidebar.dataset")
    assert picker.value == new and " · qrels v1 by anonymous, " in picker.format_func(new)
    assert picker.format_func(judged["dataset"]) == "judge-mini · qrels v0 (original)"
    assert "Saved 2 label(s) as v1: " in _text(at.success)
    assert _left(at) == (2, 2)  # the labelled pairs are judged in the new version
    qrels = store.get_dataset(new).qrels
    assert len(qrels) == 5 and store.pending_labels(judged["dataset"]).empty
    assert at.button(key="judge.save").disabled  # nothing pending on the new version


def test_a_tab_still_on_the_parent_labels_the_newer_version_and_says_so(judged, store_dir) -> None:
    """Another server saved a version while this tab shows the parent: the page names the newer version, a label
    given here is pending on it (never stranded on the parent), and saving makes the next version of the line."""
    at = open_page("judge", _params(judged))
    store = _store(store_dir)
    store.add_label(judged["dataset"], "q1", "d3", 2, author="ann")
    newer = store.commit_labels(judged["dataset"], author="ann").version
    at.run()
    assert "A newer qrels version of this dataset was saved since" in _text(at.info)
    button(at, "judge.grade.1").click().run()
    no_problems(at)
    assert len(store.pending_labels(newer)) == 1 and store.pending_place(judged["dataset"]) == newer
    at.button(key="judge.save").click().run()
    no_problems(at)
    (latest,) = store.versions(newer)["id"]
    assert param(at, "ds") == latest and store.lineage(latest) == [latest, newer, judged["dataset"]]


def test_a_save_click_after_another_tab_saved_the_labels_says_nothing_was_saved(judged, store_dir) -> None:
    """The click reaches a run that draws the button disabled (no label pending any more): it was dropped without a
    word; the page now says why nothing was saved, once."""
    from dashboard.ui.judge_panels import NOTHING_PENDING

    at = open_page("judge", _params(judged))
    button(at, "judge.grade.2").click().run()
    save = at.button(key="judge.save")
    assert not save.disabled
    store = _store(store_dir)
    store.commit_labels(judged["dataset"], author="ann")  # another tab or server saved them
    save.click().run()
    no_problems(at)
    assert at.button(key="judge.save").disabled and NOTHING_PENDING in _text(at.warning)
    assert len(store.versions(judged["dataset"])) == 1  # the other tab's version only
    at.run()
    assert NOTHING_PENDING not in _text(at.warning)  # said once


def test_a_read_only_store_says_so_up_front_offers_no_write_and_refuses_the_rest_by_name(
    judged, store_dir, monkeypatch
) -> None:
    """Was: on a store the dashboard may only read, the Upload page offered its uploaders and Build, Retrieve and
    Judge their writes, each refused only once tried. Now each says up front that the store is read-only and whom to
    ask, with no uploader and the writes disabled, the reason as their help (Judge shows no pair to label); so are
    Build's review buttons and Resume, and Workspace's rename, delete and "Save metadata" (they were offered, and
    refused only on click). A delete confirmed anyway (asked before the store turned read-only) says in red what was refused and why. Nothing is
    stored."""
    path = store_dir / "ragmetrics.sqlite"
    candidates = CandidateStore(_store(store_dir))  # a batch stopped with one candidate: Resume and the review
    batch = candidates.new_batch(judged["dataset"], "extractive", {"seed": 0}, 2)
    candidates.add_candidate(batch, 1, {"query_id": "extractive-0-0001", "query": "How long do refunds take?",
                                        "relevant_docs": {"d5": 2}, "category": "factual", "difficulty": "easy",
                                        "source": {"doc_id": "d5", "text": "Refunds take 14 days."}})  # fmt: skip
    candidates.store.engine.dispose()
    before = path.read_bytes()
    monkeypatch.setenv("RAGMETRICS_STORE_URL", f"sqlite:///file:{path}?mode=ro&uri=true")
    ask = "may not write to it. Ask the store's owner for write access, or to load the data for you."
    said = {
        "upload": "uploading datasets and runs",
        "build": "generating candidates and making datasets of them",
        "retrieve": "storing the runs a retriever gives",
        "judge": "labelling (each label is kept in the store)",
    }
    pages = {key: open_page(key, _params(judged)) for key in said}
    for key, at in pages.items():
        no_problems(at)
        notice = (
            f"This store is read-only: {said[key]} is not offered here, as the database user the dashboard connects as "
        )
        assert [i.value for i in at.info if "read-only" in i.value] == [notice + ask], key
    assert not pages["upload"].get("file_uploader") and not pages["upload"].get("text_input")
    assert not [b for b in pages["judge"].button if str(b.key).startswith("judge.")]
    assert pages["build"].button(key="build.generate").disabled
    run_it = pages["retrieve"].button(key="FormSubmitter:retrieve.form-Run it")
    assert run_it.disabled and run_it.proto.help == layout.READ_ONLY_HELP
    review = ["build.resume", "build.accept.1", "build.edit.1", "build.reject.1"]
    assert [(b.disabled, b.proto.help) for b in map(pages["build"].button, review)] == [
        (True, layout.READ_ONLY_HELP)
    ] * 4
    at = open_page("workspace", _params(judged))
    writes = [
        b
        for b in at.button
        if "rename" in str(b.key) or str(b.key).startswith(("workspace.delete.", "workspace.tags.save."))
    ]
    assert len(writes) == 5 and {(b.disabled, b.proto.help) for b in writes} == {(True, layout.READ_ONLY_HELP)}
    at.session_state[state._PENDING] = ("delete-dataset", judged["dataset"])  # asked before the store turned read-only
    at.run().button(key="workspace.confirm.yes").click().run()
    why = "was refused: store sqlite:///file:" + str(path)
    assert not at.exception and not at.success and _text(at.error).startswith("Deleting dataset “judge-mini” " + why)
    assert "may not write to it" in _text(at.error) and path.read_bytes() == before


def test_labels_that_change_no_judgment_are_not_saved_and_the_page_says_why(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    _store(store_dir).add_label(judged["dataset"], "q1", "d1", 2, author="ann")  # what the qrels already say
    at.run()
    at.button(key="judge.save").click().run()
    no_problems(at)
    assert "they change no judgment, so no new version was saved" in _text(at.warning)
    assert _store(store_dir).versions(judged["dataset"]).empty and param(at, "ds") == judged["dataset"]


def test_workspace_lists_versions_diffs_them_and_shows_stability(judged, store_dir) -> None:
    store = _store(store_dir)
    store.add_label(judged["dataset"], "q1", "d3", 2, author="ann")
    store.add_label(judged["dataset"], "q2", "d6", 1, author="ann")
    new = store.commit_labels(judged["dataset"], author="ann").version
    at = open_page("workspace", {"ds": new, "m": "ndcg", "k": "3"})
    no_problems(at)
    tables = [d.value for d in at.dataframe]
    versions = next(t for t in tables if "version" in t.columns)
    assert versions[["version", "id", "author", "labels"]].values.tolist() == [
        ["v0 (original)", judged["dataset"], "", 0],
        ["v1", new, "ann", 2],
    ]
    assert at.selectbox(key="workspace.diff.before").value == judged["dataset"]
    assert at.selectbox(key="workspace.diff.after").value == new
    diff = next(t for t in tables if "change" in t.columns and "doc_id" in t.columns)
    assert diff[["query_id", "doc_id", "change"]].values.tolist() == [["q1", "d3", "added"], ["q2", "d6", "added"]]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Judgments added"] == "2" and metrics["Changed"] == "0" and metrics["Removed"] == "0"
    assert metrics["Kendall's tau"] in {"1.000", "-1.000", "0.000", "n/a"} and "of 1" in metrics["Changed verdicts"]
    means = next(t for t in tables if "rank_before" in t.columns)
    assert means["run"].tolist() == ["alpha", "beta"]
    assert any("verdict_before" in t.columns for t in tables)


def test_missed_page_shows_texts_with_judgments_and_marks(judged) -> None:
    at = open_page("missed", {**_params(judged), "k": "1", "fr": judged["alpha"], "q": "q1"})
    no_problems(at)
    assert [e.label for e in at.expander][:2] == [
        "Text of the relevant documents",
        "Text of what alpha retrieved, top 1",
    ]
    heads = [m.value for m in at.markdown if m.value.startswith(("**#", "**d"))]
    assert any(h.startswith("**d1** · :green-badge[relevant (2)]") for h in heads)
    assert any(h.startswith("**#1** · **d3** · :gray-badge[unjudged]") for h in heads)
    cards = [m.value for m in at.markdown if m.value.startswith(("**#", "**d"))]
    assert all("\n\n" in c for c in cards)  # a passage is one element: its header, then its text
    answer = MARK_COLOURS["answer"][1]
    assert any(f":{answer}-background[:{answer}[年付 168 元]]" in c for c in cards)  # the expected answer, marked


# --- run health --------------------------------------------------------------------------


def _upload(at, key: str, path: Path):  # type: ignore[no-untyped-def]
    at.file_uploader(key=key).set_value((path.name, path.read_bytes(), "application/octet-stream"))
    return at.run()


def ws_runs(store_dir) -> list:
    """Every run stored, on every dataset of the store."""
    ws = Workspace(_store(store_dir))
    try:
        return [r for d in ws.datasets() for r in ws.runs(d.id)]
    finally:
        ws.store.engine.dispose()


def test_upload_reports_health_and_the_no_overlap_cause_in_red(store_dir) -> None:
    cmrc = REPO / "sample_runs" / "cmrc2018"
    at = _upload(open_page("upload"), "upload.dataset", cmrc / "qrels.tsv")
    no_problems(at)
    at.text_input(key="upload.chunk_pattern").set_value(r"(?P<doc>.+)_C\d+$").run()
    at = _upload(at, "upload.runs", cmrc / "runs" / "bm25-jieba.trec.gz")
    assert not at.exception
    # refused where the user looks: not stored, not selected; the library's cause beside it
    refused = _text(at.error)
    assert "the qrels judge chunks, but the run was mapped to documents" in refused and "Not stored." in refused
    assert not ws_runs(store_dir)
    at.button(key=next(b.key for b in at.button if str(b.key).startswith("upload.insist."))).click().run()
    assert not at.exception
    assert "chunks mapped to documents by pattern" in _text(at.success)
    errors = _text(at.error)
    assert "no overlap with the judgments" in errors
    assert "the qrels judge chunks, but the run was mapped to documents" in errors
    health = next(d.value for d in at.dataframe if "judged@10" in d.value.columns)
    assert health[["run", "status", "overlap"]].values.tolist() == [["bm25-jieba", "no overlap", 0.0]]
    assert {m.label: m.value for m in at.metric}["Checks to look at"] == "1"
    report = at.dataframe[0].value
    assert "error" in set(report["status"])

    # the result pages say so in red instead of plotting zeros as if they meant something
    overview = open_page("overview")
    assert not overview.exception
    assert "bm25-jieba: no overlap with the judgments, its numbers below mean nothing." in _text(overview.error)

    # the same run against another dataset's qrels: the run was made for another dataset
    scifact = REPO / "tests" / "data" / "scifact" / "qrels.tsv"
    at = _upload(at, "upload.dataset", scifact)
    at.text_input(key="upload.chunk_pattern").set_value("").run()
    at = _upload(at, "upload.runs", cmrc / "runs" / "bm25-jieba.trec.gz")
    assert not at.exception
    assert "likely made for another dataset" in _text(at.error)


def test_a_healthy_run_gets_no_banner_and_a_chunk_mapping_file_maps_any_format(store_dir, tmp_path) -> None:
    dataset, _ = judge_dataset()
    ws = Workspace(_store(store_dir))
    entry = ws.add_dataset(dataset)
    ws.store.engine.dispose()
    at = open_page("upload", {"ds": entry.id})
    mapping = tmp_path / "chunks.csv"
    mapping.write_text("chunk_id,doc_id\nc1,d1\nc3,d3\n")
    run = tmp_path / "chunky.csv"
    run.write_text("query_id,doc_id,score\nq1,c3,2\nq1,c1,1\n")
    at.file_uploader(key="upload.chunk_mapping").set_value((mapping.name, mapping.read_bytes(), "text/csv"))
    at.run()
    at = _upload(at, "upload.runs", run)
    no_problems(at)
    assert "chunks mapped to documents by mapping chunks.csv" in _text(at.success)
    health = next(d.value for d in at.dataframe if "judged@10" in d.value.columns)
    assert health["status"].tolist() == ["ok"] and health["overlap"].tolist() == [1.0]
    overview = open_page("overview")
    no_problems(overview)


def test_a_slip_is_changed_with_the_last_labels_buttons(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    button(at, "judge.grade.1").click().run()
    assert "Last label:" in _text(at.caption)
    button(at, "judge.relabel.0").click().run()
    no_problems(at)
    pending = _store(store_dir).pending_labels(judged["dataset"])
    assert pending["label"].tolist() == [0] and _left(at) == (3, 4)  # one pair, its latest label


def test_a_pending_label_can_be_withdrawn_before_saving(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    left, pooled = _left(at)
    button(at, "judge.grade.2").click().run()
    button(at, "judge.grade.0").click().run()
    assert _left(at) == (left - 2, pooled)
    assert at.button(key="judge.withdraw").disabled  # nothing selected yet
    table = next(d for d in at.dataframe if d.key and d.key.startswith("judge.pending."))
    first = table.value.iloc[0]  # newest first: the label given last
    at.session_state[table.key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert at.button(key="judge.withdraw").label == "Withdraw 1 selected label(s)"
    at.button(key="judge.withdraw").click().run()
    no_problems(at)
    pending = _store(store_dir).pending_labels(judged["dataset"])
    assert len(pending) == 1 and (first["query_id"], first["doc_id"]) not in set(
        zip(pending["query_id"], pending["doc_id"])
    )
    assert _left(at) == (left - 1, pooled)  # the pair is back in the queue
    assert "Withdrew 1 label(s)" in _text(at.success) + _text(at.info) + _text(at.toast)


def test_a_label_given_meanwhile_by_another_judge_is_shown_and_kept_unless_replaced(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    query_id = next(c.value for c in at.caption if c.value.startswith("query "))[len("query ") :]
    doc_id = re.search(r"\*\*(\w+)\*\*", _pair(at)[1]).group(1)  # type: ignore[union-attr]
    store = _store(store_dir)
    store.add_label(judged["dataset"], query_id, doc_id, 1, author="ann")  # another judge, on another server
    button(at, "judge.grade.0").click().run()
    no_problems(at)
    assert (
        f"{doc_id} for {query_id} was labelled **1** by ann meanwhile (not in a qrels version yet): your grade **0** was not"
        in (_text(at.warning))
    )
    pending = store.pending_labels(judged["dataset"])
    assert pending[["doc_id", "label", "author"]].values.tolist() == [[doc_id, 1, "ann"]]  # not overwritten
    assert f"**{doc_id}**" not in _pair(at)[1]  # the page moved on: the pair is judged
    next(b for b in at.button if b.key and b.key.startswith("judge.conflict.replace.")).click().run()
    no_problems(at)
    pending = store.pending_labels(judged["dataset"])
    assert pending[["doc_id", "label", "author"]].values.tolist() == [[doc_id, 0, "anonymous"]]  # the judge chose
    assert not at.warning


def test_a_label_changed_by_another_judge_is_not_withdrawn_by_a_selection_made_before(judged, store_dir) -> None:
    at = open_page("judge", _params(judged))
    button(at, "judge.grade.2").click().run()
    table = next(d for d in at.dataframe if d.key and d.key.startswith("judge.pending."))
    query_id, doc_id = (str(v) for v in table.value.iloc[0][["query_id", "doc_id"]])
    at.session_state[table.key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert at.button(key="judge.withdraw").label == "Withdraw 1 selected label(s)"
    store = _store(store_dir)
    store.add_label(judged["dataset"], query_id, doc_id, 0, author="ann")  # another judge changes it meanwhile
    at.button(key="judge.withdraw").click().run()
    no_problems(at)
    pending = store.pending_labels(judged["dataset"])
    assert pending[["doc_id", "label", "author"]].values.tolist() == [[doc_id, 0, "ann"]]  # ann's label stays
    assert at.button(key="judge.withdraw").disabled  # the table changed: the selection made before is cleared
