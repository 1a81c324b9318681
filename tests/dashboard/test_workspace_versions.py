"""The workspace's labels and qrels versions: labels stored at once, a version is a dataset with its parent's
runs, the picker's label names the version, a lineage lists its versions."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from dashboard.data.workspace import Workspace
from dashboard.ui import judging
from ragmetrics import Dataset, Run
from ragmetrics.cli import main
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import SavedVersion, Store, versions_table
from tests.test_store_versions import _ReadThenOvertaken

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


def _workspace(path: Path) -> tuple[Workspace, str, str]:
    ws = Workspace(Store(f"sqlite:///{path / 'store.sqlite'}"))
    entry = ws.add_dataset(load_dataset(DATA / "mini_eval.json"))
    run = ws.add_run(entry.id, load_run(DATA / "mini-bm25.trec"))
    return ws, entry.id, run.id


def test_labels_are_kept_at_once_and_seen_by_another_process(tmp_path) -> None:
    ws, ds, _ = _workspace(tmp_path)
    ws.add_label(ds, "t01", "new-doc", 1, author="ann")
    ws.add_label(ds, "t01", "new-doc", 2, author="ann")  # the latest label of a pair wins
    ws.add_label(ds, "t02", "other", 1, author="bob", kind="suggestion:keywords")
    other = Workspace(Store(f"sqlite:///{tmp_path / 'store.sqlite'}"))  # a second server on the same store
    pending = other.pending_labels(ds)
    assert pending[["query_id", "doc_id", "label", "author"]].values.tolist() == [["t01", "new-doc", 2, "ann"]]
    assert other.pending_labels(ds, kind="suggestion:keywords")["doc_id"].tolist() == ["other"]


def test_a_saved_version_is_a_dataset_with_its_parents_runs_and_a_label_naming_it(tmp_path) -> None:
    ws, ds, run = _workspace(tmp_path)
    assert ws.commit_labels(ds, author="ann") is None  # nothing pending
    ws.add_label(ds, "t01", "new-doc", 1, author="ann")
    saved = ws.commit_labels(ds, author="ann")
    assert saved is not None and saved.made
    v1 = saved.entry
    assert v1.id != ds
    said = f"Saved 1 label(s) as v1: “{v1.name}” ({v1.id}): 1 people's, 0 a judge's."
    assert judging.saved_message(ws, saved) == said
    assert v1.version is not None and (v1.version.parent, v1.version.author, v1.version.n_labels) == (ds, "ann", 1)
    assert v1.version.number == 1 and v1.n_judgments == ws.dataset(ds).n_judgments + 1
    assert [r.id for r in ws.runs(v1.id)] == [run]
    assert ws.pending_labels(ds).empty and ws.pending_labels(v1.id).empty
    labels = {d.id: d.label for d in ws.datasets()}
    assert labels[ds] == "mini_eval · qrels v0 (original)"
    assert labels[v1.id].startswith(f"{v1.name} · qrels v1 by ann, ")
    ws.add_label(v1.id, "t02", "another", 0, author="bob")
    v2 = ws.commit_labels(v1.id, author="bob").entry
    assert v2 is not None and v2.version is not None and v2.version.number == 2 and v2.version.parent == v1.id
    # every member of the lineage lists the same versions, oldest first
    for member in (ds, v1.id, v2.id):
        assert [e.id for e in ws.family(member)] == [ds, v1.id, v2.id]
    table = ws.version_table(v2.id)
    assert table.columns.tolist() == [
        "version", "name", "id", "parent", "author", "saved", "labels", "people's", "judges'", "judgments"
    ]  # fmt: skip
    assert table["version"].tolist() == ["v0 (original)", "v1", "v2"]
    assert table["author"].tolist() == ["", "ann", "bob"] and table["labels"].tolist() == [0, 1, 1]
    assert table["people's"].tolist() == [0, 1, 1] and table["judges'"].tolist() == [0, 0, 0]
    assert table["parent"].tolist() == ["", "mini_eval", v1.name]
    # a dataset without versions is its own family, and keeps its plain name in the picker
    other = ws.add_dataset(load_dataset(DATA / "mini.qrel"))
    assert [e.id for e in ws.family(other.id)] == [other.id] and other.label == other.name


def test_a_save_another_server_overtook_says_its_labels_were_already_saved_by_another_save(tmp_path) -> None:
    """Was: a save that read the labels after another server's save took them all returned that save's version, and
    the page said "Saved" as if it had made it. Now it says they were already saved, and as which version."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    other, theirs = Store(url), []
    ws = Workspace(_ReadThenOvertaken(url, lambda place: theirs.append(other.commit_labels(place, author="ben"))))
    parent = ws.store.put_dataset(Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    ws.add_label(parent, "q1", "u1", 1, author="ann")
    saved = ws.commit_labels(parent, author="ann")
    assert saved is not None and not saved.made and theirs[0].made and saved.entry.id == theirs[0].version
    assert judging.saved_message(ws, saved, left_out=3) == (
        f"These labels were already saved as v1 by another save (another tab or server): “faq (+1 label, v1)” "
        f"({saved.entry.id}): 1 people's, 0 a judge's."
    )


class _SavedThenDeleted(Store):
    """A store whose saves are followed, before the dashboard lists the datasets again, by another server deleting
    the version they saved."""

    def commit_labels(self, dataset: str, **kwargs: Any) -> SavedVersion | None:
        saved = super().commit_labels(dataset, **kwargs)
        if saved is not None:
            Store(self.url).delete_dataset(saved.version)
        return saved


def test_a_save_whose_version_is_deleted_before_the_listing_still_says_what_was_saved(tmp_path) -> None:
    """Was: the version deleted between the save and the listing made ``commit_labels`` return None (as if nothing
    were pending), and the Judge page said nothing after the click. Now it names the version and that it went."""
    ws = Workspace(_SavedThenDeleted(f"sqlite:///{tmp_path / 's.sqlite'}"))
    parent = ws.store.put_dataset(Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    ws.add_label(parent, "q1", "u1", 1, author="ann")
    saved = ws.commit_labels(parent, author="ann")
    assert saved is not None and saved.made and saved.entry is None and not ws.store.has_dataset(saved.version)
    assert judging.saved_message(ws, saved) == (
        f"The labels were saved as qrels version {saved.version}, which has since been deleted (another tab or "
        "server deleted it): the labels went with it."
    )


def test_withdrawing_labels_another_server_saved_meanwhile_says_they_were_no_longer_pending(tmp_path) -> None:
    ws = Workspace(Store(f"sqlite:///{tmp_path / 's.sqlite'}"))
    parent = ws.store.put_dataset(Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    mine = ws.add_label(parent, "q1", "u1", 1, author="ann")
    other = ws.add_label(parent, "q1", "u2", 0, author="ann")
    Store(ws.store.url).commit_labels(parent, author="ben")  # another server saves both
    ws.add_label(parent, "q1", "u3", 1, author="ann")
    third = int(ws.pending_labels(parent)["id"].iloc[0])
    taken, kept, gone = judging.withdraw(ws, parent, [("q1", "u1", mine), ("q1", "u2", other), ("q1", "u3", third)])
    assert (taken, kept, gone) == (1, 0, 2)


def test_the_dashboard_numbers_each_version_as_the_store_gave_it_and_the_command_line_prints_it(store_url) -> None:
    """v1, v2, v3, v2 deleted, a save: the dashboard's listing and versions table and the command line say 1, 3, 4
    (steps from the original said 1, 2, 3). A version an older release saved on a branch (made from the original
    too) keeps the number its save gave (its name's), read once: a rename changes it nowhere."""
    ws = Workspace(Store(store_url))
    original = ws.add_dataset(Dataset.from_dict({"q1": {"d1": 1}}, name="faq")).id
    ws.add_run(original, Run.from_dict({"q1": {"d1": 1.0, "u1": 0.5}}, name="bm25"))
    made: list[str] = []
    for doc in ("u1", "u2", "u3", "u4"):
        if doc == "u4":
            ws.delete_dataset(made.pop(1))
        ws.add_label(made[-1] if made else original, "q1", doc, 1, author="ann")
        saved = ws.commit_labels(made[-1] if made else original, author="ann").entry
        assert saved is not None
        made.append(saved.id)

    def dashboard() -> dict[str, int]:
        ws.refresh()
        listed = {e.id: e.version.number for e in ws.datasets() if e.version is not None}
        table = ws.version_table(original)
        assert table["version"].tolist() == ["v0 (original)"] + [f"v{listed[i]}" for i in table["id"][1:]]
        return listed

    def command_line(ident: str) -> int:
        out = io.StringIO()
        assert main(["history", "--store", store_url, "--dataset", ident, "-m", "recall@10"], out, io.StringIO()) == 0
        said = re.search(rf", v(\d+)\) \({ident}\)", out.getvalue())
        assert said is not None, out.getvalue()
        return int(said.group(1))

    assert dashboard() == dict(zip(made, (1, 3, 4))) == {i: command_line(i) for i in made}
    branch = Dataset.from_dict({"q1": {"d1": 1, "b1": 1}}, name="faq (+1 label, v2)")  # as an older release named it
    old = ws.store.put_dataset(branch)
    with ws.store.engine.begin() as conn:  # saved by an older release: no number kept, made from the original
        conn.execute(sa.insert(versions_table).values(id=old, parent=original, author="old", created_at=0.0,
                                                      n_labels=1))  # fmt: skip
    ws.store.put_run(Run.from_dict({"q1": {"d1": 1.0}}, name="bm25"), old)
    assert dashboard()[old] == 2 == command_line(old)  # not the steps from the original: those say 1, as v1's
    reopened = Workspace(Store(store_url))  # keeps the number its name says, once
    reopened.rename_dataset(old, "the branch")
    assert {e.id: e.version.number for e in reopened.datasets() if e.version is not None}[old] == 2
    # the original deleted: each version still shows the number its save gave, none is "v0 (original)", and every
    # one of them still lists the lineage's others (the branch too), oldest first; a save numbers on after them
    reopened.delete_dataset(original)
    listed = {e.id: e for e in reopened.datasets()}
    assert {i: listed[i].version.number for i in [*made, old]} == {made[0]: 1, made[1]: 3, made[2]: 4, old: 2}
    assert [listed[i].label.split(" by ")[0].rsplit(" · ", 1)[1] for i in made] == ["qrels v1", "qrels v3", "qrels v4"]
    assert not any(e.has_versions and e.version is None for e in listed.values())  # no original left to show
    for member in [*made, old]:
        assert [e.id for e in reopened.family(member)] == [*made, old]
        assert reopened.version_table(member)["version"].tolist() == ["v1", "v3", "v4", "v2"]
    reopened.add_label(made[-1], "q1", "u5", 1, author="ann")
    fifth = reopened.commit_labels(made[-1], author="ann").entry
    assert fifth is not None and fifth.version is not None and fifth.version.number == 5
