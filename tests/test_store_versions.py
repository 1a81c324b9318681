"""Labels kept at once and qrels versions in the store, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pandas as pd
import pytest
import sqlalchemy as sa

import ragmetrics as rm
import ragmetrics.store.database as database
from ragmetrics.analysis.judging import diff
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.provenance import Provenance
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import (
    SavedVersion,
    Store,
    StoreKeyError,
    datasets_table,
    labels_table,
    links_table,
    versions_table,
)
from ragmetrics.store.provenance import add_judge_labels, lineage_labels, version_sources


def test_labels_survive_a_new_process_and_become_a_version_with_the_parents_runs(store_url):
    store = Store(store_url)
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 0}}, name="faq")
    parent = store.put_dataset(dataset, description="the FAQ set", targets="faq")
    run = rm.Run.from_dict({"q1": {"d1": 1.0, "u1": 0.5}, "q2": {"u2": 1.0}})
    run_id = store.put_run(run, parent)
    store.add_label(parent, "q1", "u1", 1, author="ana")
    store.add_label(parent, "q2", "u2", 0, author="ana")
    store.add_label(parent, "q2", "u2", 1, author="ben")  # the latest label of a pair wins
    store.add_label(parent, "q1", "d9", 1, author="rule", kind="suggestion:keywords")  # never merged

    reopened = Store(store_url)  # a reload, another process: nothing lost
    pending = reopened.pending_labels(parent)
    assert pending[["query_id", "doc_id", "label", "author"]].values.tolist() == [
        ["q1", "u1", 1, "ana"],
        ["q2", "u2", 1, "ben"],
    ]
    version = reopened.commit_labels(parent, author="ben").version
    assert version is not None and version != parent
    assert reopened.pending_labels(parent).empty and reopened.commit_labels(parent) is None
    child = reopened.get_dataset(version)
    assert sorted(child.qrels.itertuples(index=False, name=None)) == [
        ("q1", "d1", 1),
        ("q1", "u1", 1),
        ("q2", "d2", 0),
        ("q2", "u2", 1),
    ]
    assert reopened.list_runs(version)["id"].tolist() == [run_id]
    versions = reopened.versions(parent)
    assert versions[["id", "author", "n_labels"]].values.tolist() == [[version, "ben", 2]]
    assert reopened.lineage(version) == [version, parent]
    changes = diff(dataset, child)
    assert changes[["query_id", "doc_id", "after", "change"]].values.tolist() == [
        ["q1", "u1", 1, "added"],
        ["q2", "u2", 1, "added"],
    ]
    assert rm.evaluate(child, run, ["judged@1"])["run"].means["judged@1"] == 1.0

    # a version of a version: named from the original and numbered across the lineage, not nested
    assert reopened.list_datasets().set_index("id").loc[version, "name"] == "faq (+2 labels, v1)"
    reopened.add_label(version, "q2", "d9", 1, author="ana")
    grandchild = reopened.commit_labels(version, author="ana").version
    assert grandchild is not None and reopened.lineage(grandchild) == [grandchild, version, parent]
    assert reopened.list_datasets().set_index("id").loc[grandchild, "name"] == "faq (+1 label, v2)"
    # every version keeps what its parent declares (was: the targets dropped, the Overview checking none)
    listed = reopened.list_datasets().set_index("id")
    assert listed.loc[[version, grandchild], ["description", "targets"]].values.tolist() == [["the FAQ set", "faq"]] * 2


def test_diff_names_changed_and_removed_judgments():
    a = rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0}})
    b = rm.Dataset.from_dict({"q1": {"d1": 2, "d3": 1}})
    assert diff(a, b)[["doc_id", "change"]].values.tolist() == [["d1", "changed"], ["d2", "removed"], ["d3", "added"]]


def test_a_pending_label_is_withdrawn_with_its_suggestion_and_saving_keeps_the_suggestions_with_the_version(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ana")
    store.add_label(parent, "q1", "u1", 1, author="ana", kind="suggestion:keywords")
    store.add_label(parent, "q1", "u2", 0, author="ana")
    store.add_label(parent, "q1", "u3", 1, author="ana")
    store.add_label(parent, "q1", "u3", 1, author="ana", kind="suggestion:answer")
    assert store.withdraw_label(parent, "q1", "u1") == 2  # the label and the suggestion it accepted
    assert store.withdraw_label(parent, "q1", "u1") == 0
    assert store.pending_labels(parent)["doc_id"].tolist() == ["u2", "u3"]
    assert store.pending_labels(parent, kind="suggestion:keywords").empty
    version = store.commit_labels(parent, author="ana").version
    assert sorted(store.get_dataset(version).qrels["doc_id"]) == ["d1", "u2", "u3"]
    # saved with the version, the accepted suggestion no longer stands pending on the parent
    assert store.pending_labels(parent, kind="suggestion:answer").empty
    assert store.withdraw_label(parent, "q1", "u3") == 0  # a saved label is the version's, not withdrawn


def test_a_lineage_grows_in_a_line_from_a_tab_still_on_the_parent(store_url):
    """A tab, judge or server still on the parent once another saved a version of it: its label is pending on the
    version (read there, saved from there), never stranded on a dataset nobody saves from, and its save makes the
    next version of the line, not a sibling that lacks the first version's labels."""
    ann, ben = Store(store_url), Store(store_url)  # two servers on one store
    parent = ann.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 1}}, name="faq"))
    ann.add_label(parent, "q1", "x", 1, author="ann", expect=None)
    first = ann.commit_labels(parent, author="ann", judges=False).version
    assert first is not None and ann.pending_place(parent) == first
    ben.add_label(parent, "q2", "y", 1, author="ben", expect=None)  # ben's page still shows the parent
    assert ann.pending_labels(first)[["doc_id", "author"]].values.tolist() == [["y", "ben"]]
    assert ben.pending_labels(parent).equals(ann.pending_labels(first))  # one place, read from either
    second = ben.commit_labels(parent, author="ben").version
    assert second is not None and ben.lineage(second) == [second, first, parent]
    assert sorted(ben.get_dataset(second).qrels["doc_id"]) == ["d1", "d2", "x", "y"]
    assert ann.versions(parent)["id"].tolist() == [first]  # no sibling of the first version
    # withdrawn where it is pending, from the parent's page too
    ben.add_label(parent, "q1", "z", 1, author="ben")
    assert ben.withdraw_label(parent, "q1", "z") == 1 and ann.pending_labels(second).empty


def test_labels_that_change_no_judgment_make_no_version_and_stay_pending(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "d1", 1, author="ann")  # restates the parent's judgment
    with pytest.raises(RagMetricsError, match=r"give every pair the grade dataset faq \(\w+\) already holds"):
        store.commit_labels(parent, author="ann")
    assert store.versions(parent).empty and len(store.pending_labels(parent)) == 1
    assert store.lineage(parent) == [parent] and store.family(parent) == [parent]  # never a version of itself
    # labels whose qrels another stored dataset has: no version made from the parent that is that dataset
    other = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0}}, name="other"))
    store.add_label(parent, "q1", "d2", 0, author="ann")
    with pytest.raises(RagMetricsError, match=rf"equal to those of dataset other \({other}\), already stored"):
        store.commit_labels(parent, author="ann")
    assert store.versions(parent).empty and store.lineage(other) == [other]
    store.add_label(parent, "q1", "d3", 1, author="ann")  # with a label that changes a judgment: saved, all three
    version = store.commit_labels(parent, author="ann").version
    assert version is not None and store.versions(parent)["n_labels"].tolist() == [3]


def test_a_label_on_a_deleted_dataset_is_refused(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.delete_dataset(parent)
    with pytest.raises(StoreKeyError, match=rf"dataset {parent} is not in this store \(deleted meanwhile\?\)"):
        store.add_label(parent, "q1", "u1", 1, author="ann")


def test_a_deleted_version_leaves_its_lineage_and_its_pending_labels_to_its_parent_s_line(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ann")
    first = store.commit_labels(parent, author="ann").version
    store.add_label(first, "q1", "u2", 1, author="ann")
    second = store.commit_labels(first, author="ann").version
    store.add_label(second, "q1", "u3", 0, author="ben")  # pending on the newest
    assert store.delete_dataset(second) == 0  # a version: nothing lost
    assert store.pending_place(parent) == first and store.family(parent) == [parent, first]
    assert store.pending_labels(parent)[["doc_id", "author"]].values.tolist() == [["u3", "ben"]]
    store.add_label(parent, "q1", "u4", 1, author="ben")
    third = store.commit_labels(parent, author="ben").version

    def number(version: str | None) -> str:
        return str(store.list_datasets().set_index("id").loc[version, "name"]).rsplit(", ", 1)[1]

    assert number(third) == "v3)"  # the deleted newest's v2 is never given again: a note saying v2 meant its labels
    assert store.lineage(third) == [third, first, parent]
    assert store.delete_dataset(first) == 0  # in the middle of the line: the one made from it is now its parent's
    assert store.lineage(third) == [third, parent]
    given_on_first = {("q1", "u1"), ("q1", "u3"), ("q1", "u4")}  # saved in first or third: third's qrels hold them
    assert store.versions(parent).set_index("id").loc[third, "n_labels"] == 3  # first's one and its two
    assert given_on_first <= set(store.labelled_pairs(third).itertuples(index=False, name=None))
    assert given_on_first <= set(zip(*lineage_labels(store, third)[["query_id", "doc_id"]].values.T, strict=True))
    store.add_label(third, "q1", "u5", 1, author="ben")
    fourth = store.commit_labels(third, author="ben").version
    assert number(fourth) == "v4)" and store.lineage(fourth) == [fourth, third, parent]
    assert store.delete_dataset(fourth) == 0
    assert store.delete_dataset(parent) == 0  # the original: the rest stands, versions of its lineage still
    assert store.lineage(third) == [third, parent] and store.versions_among([third])["number"].tolist() == [3]
    store.add_label(third, "q1", "u6", 1, author="ben")
    fifth = store.commit_labels(third, author="ben").version
    assert number(fifth) == "v5)"  # its versions number on after every number the deleted original's line gave
    assert store.list_datasets().set_index("id").loc[fifth, "name"] == "faq (+1 label, v5)"  # named as the rest
    store.add_label(third, "q1", "u7", 1, author="ben")  # pending on the newest, back on its parent once it goes
    assert store.delete_dataset(fifth) == 0 and store.pending_labels(third)["doc_id"].tolist() == ["u7"]
    assert store.delete_dataset(third) == 1  # no stored dataset left in its lineage: its unsaved labels go


def test_a_pair_saved_only_in_deleted_versions_is_judged_again(store_url):
    """o -> v1 (u0) -> v2 (u1); v2 deleted, then v1: o's qrels hold neither pair, so neither is judged on its
    lineage: a judge is offered them and may label them (no conflict with a label of a deleted version); both
    labels stay in the lineage's history."""
    store = Store(store_url)
    original, (v1, v2) = _line(store, 2)
    store.delete_dataset(v2)
    store.delete_dataset(v1)
    assert store.labelled_pairs(original).empty
    assert lineage_labels(store, original)["doc_id"].tolist() == ["u0", "u1"]  # both still in the history
    assert store.claim_pair(original, [("q1", "u1")], "tab") == database.Claim("q1", "u1", False)
    assert store.add_label(original, "q1", "u0", 0, author="bob", expect=None) > 0


def _stamped(store: Store, version: str) -> set[tuple[str, str, int]]:
    t = labels_table
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(t.c.query_id, t.c.doc_id, t.c.label).where(t.c.version == version)).all()
    return {(str(q), str(d), int(g)) for q, d, g in rows}


def _held(store: Store, version: str) -> set[tuple[str, str, int]]:
    q = store.get_dataset(version).qrels
    return set(zip(q["query_id"].astype(str), q["doc_id"].astype(str), q["relevance"].astype(int), strict=True))


def test_restamped_label_relabelled_below_is_not_in_its_version(store_url):
    """o -> v1 (u1=1; u4 given 0, then 1) -> v2 (u1=0): v1 deleted; v1's u1=1 stays stamped with v1 (v2's qrels say
    u1=0), only u4's latest label moves to v2, and every pair stays judged."""
    store = Store(store_url)
    o = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(o, "q1", "u1", 1, author="ann")
    store.add_label(o, "q1", "u4", 0, author="ann")
    store.add_label(o, "q1", "u4", 1, author="ann")
    v1 = store.commit_labels(o, author="ann").version
    store.add_label(v1, "q1", "u1", 0, author="ben")
    v2 = store.commit_labels(v1, author="ben").version
    store.delete_dataset(v1)
    assert _stamped(store, v2) == _held(store, v2) - {("q1", "d1", 1)} == {("q1", "u1", 0), ("q1", "u4", 1)}
    assert int(store.versions(o).set_index("id").loc[v2, "n_labels"]) == 2
    assert set(store.labelled_pairs(v2).itertuples(index=False, name=None)) == {("q1", "u1"), ("q1", "u4")}


def test_restamped_labels_count_a_pair_twice(store_url):
    """o -> v1 (u1=1) -> v2 (u1=1 again, u2=1): v1 deleted; v2 differs from o in 2 pairs and its stamped labels
    name 2 (pair, grade)s: its count is 2, not 1 + 2."""
    store = Store(store_url)
    o = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(o, "q1", "u1", 1, author="ann")
    v1 = store.commit_labels(o, author="ann").version
    store.add_label(v1, "q1", "u1", 1, author="ben")
    store.add_label(v1, "q1", "u2", 1, author="ben")
    v2 = store.commit_labels(v1, author="ben").version
    store.delete_dataset(v1)
    n = int(store.versions(o).set_index("id").loc[v2, "n_labels"])
    assert n == len(_stamped(store, v2)) == 2, (n, _stamped(store, v2))


def test_a_label_left_with_a_deleted_middle_version_stays_in_the_history_when_its_parent_goes(store_url):
    """o -> a -> b (u1=1, given on a) -> c (u1=0): b deleted leaves u1=1 stamped with b (c relabelled it); a
    deleted then: u1=1 reads as given on o, still in the lineage's history, and judges nothing (c's u1=0 is the
    pair's latest person's label)."""
    store = Store(store_url)
    o, (a,) = _line(store, 1)
    store.add_label(a, "q1", "u1", 1, author="ann")
    b = store.commit_labels(a, author="ann").version
    store.add_label(b, "q1", "u1", 0, author="ben")
    c = store.commit_labels(b, author="ben").version
    assert b is not None and c is not None
    store.delete_dataset(b)
    store.delete_dataset(a)
    history = lineage_labels(store, c)[["doc_id", "label", "author", "version"]].values.tolist()
    assert history == [["u0", 1, "ann", c], ["u1", 1, "ann", b], ["u1", 0, "ben", c]], history
    assert store.latest_label(c, "q1", "u1")["label"] == 0
    with store.engine.connect() as conn:  # given on o now, as a deleted version's labels read
        given = conn.execute(sa.select(labels_table.c.dataset_id).where(labels_table.c.version == b)).scalars()
        assert list(given) == [o]


def test_a_deleted_version_saved_again_counts_only_its_own_labels(store_url):
    """o -> v (ann: u1=1, and d1=1 as o holds it); v deleted; a judge's u1=1 saved makes the same content (v's
    id): its labels and counts are the judge's one, ann's two stay in the history (set aside). An older release
    deletes it again (its dataset row only, its versions row left); ann's u1=1 saved again: v once more, counted 1,
    a person's."""
    store = Store(store_url)
    o = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(o, "q1", "u1", 1, author="ann")
    store.add_label(o, "q1", "d1", 1, author="ann")
    v = store.commit_labels(o, author="ann").version
    assert v is not None
    store.delete_dataset(v)
    judge = Provenance("j", "1", "0123456789abcdef", 0.0)
    add_judge_labels(store, o, [("q1", "u1", 1)], judge)
    assert store.commit_labels(o, author="bot") == SavedVersion(v, made=True)
    assert version_sources(store, v)[["source", "labels"]].values.tolist() == [[judge.source, 1]]
    assert store.versions(o)[["id", "author", "n_labels"]].values.tolist() == [[v, "bot", 1]]
    aside = database.set_aside_stamp(v)
    history = lineage_labels(store, o)[["doc_id", "author", "version"]].values.tolist()
    assert history == [["u1", "ann", aside], ["d1", "ann", aside], ["u1", judge.source, v]], history
    with store.engine.begin() as conn:  # an older release's delete: the dataset row only
        conn.execute(sa.delete(datasets_table).where(datasets_table.c.id == v))
    store.add_label(o, "q1", "u1", 1, author="ann")
    assert store.commit_labels(o, author="ann") == SavedVersion(v, made=True)
    assert version_sources(store, v)[["source", "labels"]].values.tolist() == [["human", 1]]
    assert store.versions(o)[["id", "author", "n_labels"]].values.tolist() == [[v, "ann", 1]]


def test_an_older_branch_counts_only_its_own_labels_when_its_parent_goes(store_url):
    """M has two versions made from it (a branch an older release left, as in
    test_two_saves_on_two_branches_of_a_lineage_get_two_numbers): deleting M moves its labels to the newest and
    grows only its count."""
    store = Store(store_url)
    o = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(o, "q1", "u1", 1, author="ann")
    m = store.commit_labels(o, author="ann").version
    store.add_label(m, "q1", "u2", 1, author="ann")
    newest = store.commit_labels(m, author="ann").version
    branch = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1, "u1": 1, "b1": 1}}, name="faq (+1, v2)"))
    with store.engine.begin() as conn:  # made from m before newest, as an older release could
        conn.execute(sa.insert(versions_table).values(id=branch, parent=m, author="old", created_at=0.0, n_labels=1))
    assert store.pending_place(m) == newest
    store.delete_dataset(m)
    n = store.versions(o).set_index("id")["n_labels"].to_dict()
    assert _stamped(store, branch) == set() and n[branch] == 1, (n, _stamped(store, branch))
    assert _stamped(store, newest) == {("q1", "u1", 1), ("q1", "u2", 1)} and n[newest] == 2, n


def test_labels_that_make_another_lineage_s_deleted_original_are_refused_and_the_lineages_stay_apart(store_url):
    store = Store(store_url)
    a = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="a"))
    b = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 1}}, name="b"))
    store.add_label(b, "q1", "d3", 1, author="ann")
    b1 = store.commit_labels(b, author="ann").version
    assert b1 is not None
    store.delete_dataset(b)  # b1 stays, a version of b's lineage
    store.add_label(a, "q1", "d2", 1, author="ann")  # a's qrels would be b's
    with pytest.raises(RagMetricsError, match=f"dataset {b} \\({b}\\), deleted, and versions of it"):
        store.commit_labels(a, author="ann")
    assert store.lineage(b1) == [b1, b] and store.family(a) == [a] and len(store.pending_labels(a)) == 1


def test_labels_that_undo_a_version_of_a_deleted_original_are_refused_and_the_lineage_stays_a_line(store_url):
    """Saving them would store the deleted original again as a version of its own version: a cycle, after which no
    label could be given on the lineage."""
    store = Store(store_url)
    original = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0}}, name="faq"))
    store.add_label(original, "q1", "d1", 0, author="ann")
    v1 = store.commit_labels(original, author="ann").version
    assert v1 is not None
    store.delete_dataset(original)
    store.add_label(v1, "q1", "d1", 1, author="ann")  # back to the original's judgments
    with pytest.raises(
        RagMetricsError, match=rf"equal to those of dataset {original} \({original}\), deleted, and versions of it"
    ):
        store.commit_labels(v1, author="ann")
    assert store.lineage(v1) == [v1, original] and store.pending_labels(v1)["doc_id"].tolist() == ["d1"]
    store.add_label(v1, "q1", "d3", 1, author="ben")
    v2 = store.commit_labels(v1, author="ann").version
    assert v2 is not None and store.lineage(v2) == [v2, v1, original]


def test_a_deleted_version_s_pending_labels_go_to_a_stored_dataset_of_its_lineage(store_url):
    """They go to the place of its nearest stored ancestor, read in the delete's locked transaction: when another
    process deletes its parent as the delete reads where they go (a read after its transaction, before: none now),
    and when its parent is not stored (an older release deleted its dataset row)."""
    original, (v1, v2) = _line(Store(store_url), 2)

    class Raced(Store):
        def _tree(self, dataset: str, *, stored: bool = False, conn: object = None) -> database.VersionTree:
            if dataset == v1 and conn is None and Store(store_url).has_dataset(v1):
                Store(store_url).delete_dataset(v1)
            return super()._tree(dataset, stored=stored, conn=conn)

    store = Raced(store_url)
    store.add_label(v2, "q1", "u3", 0, author="ben")
    assert store.delete_dataset(v2) == 0
    assert store.pending_labels(original)["doc_id"].tolist() == ["u3"] and store.has_dataset(original)

    other, _middle, below = _line_an_older_release_cut(store, "q2", "other")
    store.add_label(below, "q2", "u3", 0, author="ben")
    assert store.delete_dataset(below) == 0
    assert store.pending_labels(other)["doc_id"].tolist() == ["u3"]


def test_a_label_given_as_its_place_is_deleted_lands_on_the_new_place(store_url):
    """A label given on the original reads its place (v2); v2 is deleted before the label's transaction: the write
    checks there that its place is still stored and reads it again (v1), as judge labels and withdrawals do. A
    delete that starts once the write has checked waits for it (it holds the place), then moves the label."""
    original, (v1, v2) = _line(Store(store_url), 2)
    gone: list[str] = []
    other = Store(store_url)  # another process

    class DeletedBeforeTheWrite(Store):
        def _write_pending(self, dataset: str, write: Callable[..., object]) -> object:
            self.writing = True
            try:
                return super()._write_pending(dataset, write)
            finally:
                self.writing = False

        def _tree(self, dataset: str, *, stored: bool = False, conn: object = None) -> database.VersionTree:
            tree = super()._tree(dataset, stored=stored, conn=conn)
            if getattr(self, "writing", False) and stored and gone and other.has_dataset(gone[0]):
                other.delete_dataset(gone[0])  # once the write read its place, before its transaction
            return tree

    store = DeletedBeforeTheWrite(store_url)
    gone.append(v2)
    store.add_label(original, "q1", "late", 1, author="ben")
    assert store.pending_labels(v1)["doc_id"].tolist() == ["late"]
    store.add_label(v1, "q1", "u2", 1, author="ann")
    gone[:] = [store.commit_labels(v1, author="ann").version]
    provenance = Provenance("rule", "1", "0123456789abcdef", 0.0)
    assert add_judge_labels(store, original, [("q1", "j1", 1)], provenance) == (1, 0)
    assert store.pending_labels(v1)["doc_id"].tolist() == ["j1"]
    gone.clear()

    class DeletedAsItWrites(Store):
        def _latest_label(self, conn: object, family: object, query_id: str, doc_id: str) -> object:
            deleting = threading.Thread(target=other.delete_dataset, args=(v1,))
            deleting.start()
            deleting.join(0.3)  # PostgreSQL: it waits for the place (SQLite: for the write lock)
            self.deleting = deleting
            return super()._latest_label(conn, family, query_id, doc_id)

    writer = DeletedAsItWrites(store_url)
    writer.add_label(v1, "q1", "held", 1, author="ben", expect=None)
    writer.deleting.join(30)
    assert sorted(store.pending_labels(original)["doc_id"]) == ["held", "j1"]


def test_a_save_whose_place_is_deleted_as_it_saves_says_where_its_labels_are(store_url):
    _, (v1, v2) = _line(Store(store_url), 2)
    other = Store(store_url)  # another process

    class DeletedAsItSaves(Store):
        after: str | None = "_check_new"  # the save's read right after which the other process deletes its place

        def _pending_rows(self, dataset: str) -> pd.DataFrame:
            rows = super()._pending_rows(dataset)
            self._delete_after("_pending_rows", dataset)
            return rows

        def _check_new(self, ident: str, parent: str, listed: pd.DataFrame, n_labels: int) -> None:
            super()._check_new(ident, parent, listed, n_labels)
            self._delete_after("_check_new", parent)

        def _delete_after(self, read: str, place: str) -> None:
            if read == self.after and other.has_dataset(place):
                other.delete_dataset(place)

    store = DeletedAsItSaves(store_url)
    store.add_label(v2, "q1", "late", 1, author="ben")
    with pytest.raises(RagMetricsError, match=f"{v2} was deleted while .* no version .* pending on dataset {v1}: save"):
        store.commit_labels(v2, author="ben")
    assert store.pending_labels(v1)["doc_id"].tolist() == ["late"] and store.versions(v1).empty
    # was: deleted once its pending labels were read, the place was then read as a dataset to upload again
    store.after = None
    v3 = store.commit_labels(v1, author="ben").version
    store.add_label(v3, "q1", "later", 1, author="ben")
    store.after = "_pending_rows"
    with pytest.raises(RagMetricsError, match=f"{v3} was deleted while .* no version .* pending on dataset {v1}: save"):
        store.commit_labels(v3, author="ben")
    assert store.pending_labels(v1)["doc_id"].tolist() == ["later"] and store.versions(v1).empty


def test_a_label_and_the_suggestion_it_accepts_are_kept_together(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ana", accepted="suggestion:answer")
    assert store.pending_labels(parent, kind="suggestion:answer")[["doc_id", "label"]].values.tolist() == [["u1", 1]]
    version = store.commit_labels(parent, author="ana").version
    assert store.pending_labels(version, kind="suggestion:answer").empty  # saved with the label, not left behind


def test_a_store_an_older_release_left_behind_is_read_as_this_one_reads_it(store_url):
    """An older release deleted a version and left its versions row, and kept a label given on an original that
    had a version pending on the original: the first is no version now (labels go to the original again), the
    second moves to the newest version when the store is opened (it was pending where no save read it)."""
    import sqlalchemy as sa

    from ragmetrics.store.database import datasets_table, labels_table

    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ann")
    gone = store.commit_labels(parent, author="ann").version
    with store.engine.begin() as conn:  # the old delete: the dataset row only
        conn.execute(sa.delete(datasets_table).where(datasets_table.c.id == gone))
    assert store.pending_place(parent) == parent
    store.add_label(parent, "q1", "u2", 1, author="ann")
    kept = store.commit_labels(parent, author="ann").version
    assert kept is not None and store.pending_place(parent) == kept
    assert store.family(gone) == [gone] and store.family(parent) == [parent, kept] == store.lineage(kept)[::-1]
    with store.engine.begin() as conn:  # the old add_label: pending on the original, which has a version
        conn.execute(sa.insert(labels_table).values(dataset_id=parent, query_id="q1", doc_id="u3", label=1,
                                                    author="ben", created_at=0.0, kind="judgment", version=None))  # fmt: skip
    assert store.pending_labels(parent).empty  # left where nobody reads it
    reopened = Store(store_url)
    assert reopened.pending_labels(parent)[["doc_id", "author"]].values.tolist() == [["u3", "ben"]]
    assert reopened.commit_labels(parent, author="ben") is not None


class _ReadThenOvertaken(Store):
    """A store whose next save, once it has read the pending labels, is overtaken by ``overtake(dataset)`` (another
    server's save of the same place) before it writes."""

    def __init__(self, url: str, overtake: Callable[[str], object]) -> None:
        super().__init__(url)
        self.overtake: Callable[[str], object] | None = overtake

    def _pending_rows(self, dataset: str) -> pd.DataFrame:
        rows = super()._pending_rows(dataset)
        if self.overtake is not None:
            overtake, self.overtake = self.overtake, None
            overtake(dataset)
        return rows


def _labels_a_pair_and_saves_without_judges(other: Store) -> Callable[[str], object]:
    """Another server's person labels a pair and saves without the judges' labels."""

    def overtake(dataset: str) -> object:
        other.add_label(dataset, "q2", "p1", 1, author="ben")
        return other.commit_labels(dataset, author="ben", judges=False)

    return overtake


def test_a_save_overtaken_by_another_makes_the_next_version_with_the_next_number(store_url):
    """A save reads a judge's pending labels; another save of the same dataset (a person's label, without the judges')
    moves them to its version, pending there, before the first writes: the first is made from that version, holds
    both, and is numbered after it (not a second v1 beside it)."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 0}}, name="faq"))
    provenance = Provenance("rule", "1", "0123456789abcdef", 0.0)
    add_judge_labels(store, parent, [("q1", "j1", 1)], provenance)
    first = _ReadThenOvertaken(store_url, _labels_a_pair_and_saves_without_judges(Store(store_url))).commit_labels(
        parent, author="ana"
    )
    assert first is not None and first.made  # made from the other's version: this call's own
    first = first.version
    versions = store.versions(store.family(parent)).set_index("id")
    assert len(versions) == 2 and versions["parent"].is_unique  # a line
    overtaking = versions.index[versions["parent"] == parent][0]
    assert versions.loc[first, "parent"] == overtaking
    names = store.list_datasets().set_index("id")["name"]
    assert names[overtaking] == "faq (+1 label, v1)" and names[first] == "faq (+1 label, v2)"
    qrels = store.get_dataset(first).qrels
    assert {("q1", "j1"), ("q2", "p1")} <= set(zip(qrels["query_id"], qrels["doc_id"], strict=True))
    assert store.pending_place(parent) == first and store.pending_labels(parent).empty


def test_a_save_overtaken_by_one_that_took_every_label_it_read_returns_that_version(store_url):
    """Two saves read the same pending labels; one saves them all first: the other makes no version and returns
    the first's (where its labels are), so two saves return one version (a count of returned ids is no count of
    versions), saying it did not make it (``made``): its caller says "already saved by another save", not "saved"."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ana")
    other, first = Store(store_url), []
    overtaken = _ReadThenOvertaken(store_url, lambda place: first.append(other.commit_labels(place, author="ben")))
    late = overtaken.commit_labels(parent, author="ana")
    assert first == [SavedVersion(first[0].version, made=True)] and late == SavedVersion(first[0].version, made=False)
    assert store.versions(store.family(parent))["id"].tolist() == [first[0].version]
    assert store.pending_place(parent) == first[0].version and store.pending_labels(parent).empty


class _ReadThenOtherPlaceSaved(Store):
    """A store whose next save, once it has made its version's qrels, lets ``other`` save a version from ``place``
    (another place of the same lineage) before it writes."""

    def __init__(self, url: str, other: Store, place: str) -> None:
        super().__init__(url)
        self.other: Store | None = other
        self.place = place

    def _check_new(self, ident: str, parent: str, listed: pd.DataFrame, n_labels: int) -> None:
        super()._check_new(ident, parent, listed, n_labels)
        if self.other is not None:
            other, self.other = self.other, None
            other.add_label(self.place, "q2", "p2", 1, author="ben")
            other.commit_labels(self.place, author="ben")


def test_two_saves_on_two_branches_of_a_lineage_get_two_numbers(store_url):
    """A lineage an older release left with two versions made from its original (a branch): a save on each at once
    numbers its version in the transaction that stores it, so the two get different numbers."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 0}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ana")
    newest = store.commit_labels(parent, author="ana").version
    assert newest is not None
    branch = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1, "b1": 1}, "q2": {"d2": 0}}, name="faq (+1, v1)"))
    with store.engine.begin() as conn:  # made from the original before the newest, as an older release could
        conn.execute(sa.insert(versions_table).values(id=branch, parent=parent, author="old", created_at=0.0,
                                                      n_labels=1))  # fmt: skip
    assert store.pending_place(parent) == newest and store.pending_place(branch) == branch
    store.add_label(branch, "q2", "b2", 1, author="cy")
    first = _ReadThenOtherPlaceSaved(store_url, Store(store_url), newest).commit_labels(branch, author="cy").version
    names = store.list_datasets().set_index("id")["name"]
    made = store.versions(store.family(parent))
    numbers = [str(names[v]).rsplit(", v", 1)[1] for v in made["id"] if v != branch]
    assert sorted(numbers) == ["1)", "3)", "4)"], names.to_dict()
    assert names[first] == "faq (+1 label, v4)"


def test_the_versions_tree_reads_in_its_order_and_ends_at_a_cycle(store_url):
    """lineage, family and pending place read one tree: a line's order, each version's children oldest first, and
    versions rows that make a cycle (no release writes one) read without end."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    made = []
    for doc in ("u1", "u2"):
        store.add_label(parent, "q1", doc, 1, author="ann")
        made.append(store.commit_labels(parent, author="ann").version)
    assert store.lineage(made[1]) == [made[1], made[0], parent] and store.lineage(parent) == [parent]
    assert store.family(made[1]) == store.family(parent) == [parent, *made]
    side = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 0}}, name="side"))
    with store.engine.begin() as conn:  # a second version of the original, made before the line's first
        conn.execute(sa.insert(versions_table).values(id=side, parent=parent, author="old", created_at=0.0,
                                                      n_labels=1))  # fmt: skip
    assert store.family(made[1]) == [parent, side, made[0], made[1]]
    assert store.pending_place(parent) == made[1] and store.pending_place(side) == side
    a = store.put_dataset(rm.Dataset.from_dict({"q1": {"a": 1}}, name="a"))
    b = store.put_dataset(rm.Dataset.from_dict({"q1": {"b": 1}}, name="b"))
    with store.engine.begin() as conn:
        conn.execute(sa.insert(versions_table), [{"id": a, "parent": b, "author": "x", "created_at": 1.0, "n_labels": 1},
                                                 {"id": b, "parent": a, "author": "x", "created_at": 2.0, "n_labels": 1}])  # fmt: skip
    assert store.lineage(a) == [a, b] and store.family(a) == [b, a]
    assert store.pending_place(a) in (a, b)
    with pytest.raises(RagMetricsError, match="kept being saved"):  # each has a version: no place to label
        store.add_label(a, "q1", "c", 1, author="ann", expect=None)


def test_a_grade_off_the_datasets_scale_is_refused_and_nothing_is_kept(store_url):
    """A person's or a judge's label is held to the dataset's scale 0..top (its largest grade, at least 1), as the
    Judge page's buttons and ``judge merge`` hold them."""
    store = Store(store_url)
    graded = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 3, "d2": 0}}, name="graded"))
    binary = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="binary"))
    for dataset, grade, top in ((graded, 99, 3), (graded, -5, 3), (binary, 2, 1), (binary, True, 1), (graded, 1.5, 3)):
        with pytest.raises(RagMetricsError, match=rf"label .* is off dataset {dataset}'s scale: .* grade 0\.\.{top}$"):
            store.add_label(dataset, "q1", "u1", grade, author="ann")
    provenance = Provenance("rule", "1", "0123456789abcdef", 0.0)
    with pytest.raises(RagMetricsError, match=rf"label 4 is off dataset {graded}'s scale: .* 0\.\.3"):
        add_judge_labels(store, graded, [("q1", "j1", 1), ("q1", "j2", 4)], provenance)
    assert store.pending_labels(graded).empty and store.pending_labels(binary).empty
    store.add_label(graded, "q1", "u1", 3, author="ann")
    assert add_judge_labels(store, graded, [("q1", "j1", 2.0)], provenance) == (1, 0)
    version = store.commit_labels(graded, author="ann").version
    assert version is not None and store.max_grade(version) == 3
    store.add_label(version, "q1", "u2", 3, author="ann")  # a version keeps the scale
    assert store.pending_labels(graded)["label"].tolist() == [3]


def test_a_version_an_older_release_deleted_inside_a_line_still_links_the_line(store_url):
    """An older release deleted a version with a version made from it (the dataset row only): the version below is
    still of the original's lineage (its labels, its claims, its numbers), as it was read before."""
    store = Store(store_url)
    parent, gone, below = _line_an_older_release_cut(store, "q1", "faq")
    assert store.lineage(below) == [below, gone, parent]
    assert store.family(below) == [parent, gone, below] == store.family(parent)  # its labels were given on the line
    assert {("q1", "u1"), ("q1", "u2")} <= set(store.labelled_pairs(below).itertuples(index=False, name=None))
    store.add_label(below, "q1", "u3", 1, author="ann")
    third = store.commit_labels(below, author="ann").version
    names = store.list_datasets().set_index("id")["name"]
    assert names[below].endswith("v2)") and names[third].endswith("v3)")  # not a second v2


def test_a_version_whose_labels_took_the_top_grade_away_keeps_its_lineages_scale(store_url):
    """A version whose labels changed the only top grades of its original keeps the original's scale: the Assisted
    page runs a judge on the lineage's original scale and stores its grades on the version selected."""
    store = Store(store_url)
    graded = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 3, "d2": 0}}, name="graded"))
    store.add_label(graded, "q1", "d1", 0, author="ann")  # not relevant after all
    version = store.commit_labels(graded, author="ann").version
    assert version is not None and store.get_dataset(version).qrels["relevance"].max() == 0
    provenance = Provenance("rule", "1", "0123456789abcdef", 0.0)
    assert add_judge_labels(Store(store_url), version, [("q1", "j1", 2)], provenance) == (1, 0)
    Store(store_url).add_label(version, "q1", "u1", 3, author="ben")
    assert sorted(store.pending_labels(version)["label"].tolist()) == [2, 3]
    store.delete_dataset(graded)  # the scale stays with its versions
    Store(store_url).add_label(version, "q1", "u2", 3, author="ben")
    assert sorted(store.pending_labels(version)["label"].tolist()) == [2, 3, 3]


def test_a_save_overtaken_by_a_save_of_the_same_labels_returns_that_version(store_url):
    """Two saves of the same pending labels at once: the second finds the first's version holding exactly the labels
    it read, and returns it (its labels were saved), not an error that says they stay pending."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    store.add_label(parent, "q1", "u1", 1, author="ann")
    other = Store(store_url)
    first = _ReadThenOvertaken(store_url, lambda dataset: other.commit_labels(dataset, author="ben"))
    version = first.commit_labels(parent, author="ann").version
    assert version is not None and store.versions(parent)["id"].tolist() == [version]
    assert store.pending_labels(version).empty


def _line_an_older_release_cut(store: Store, query: str, name: str) -> tuple[str, str, str]:
    """An original (``name``, one judgment of ``query``), a version of it and a version of that, the middle one
    deleted as an older release deleted: its dataset row only. ``(original, middle, below)``."""
    original = store.put_dataset(rm.Dataset.from_dict({query: {"d1": 1}}, name=name))
    store.add_label(original, query, "u1", 1, author="ann")
    middle = store.commit_labels(original, author="ann").version
    assert middle is not None
    store.add_label(middle, query, "u2", 1, author="ann")
    below = store.commit_labels(middle, author="ann").version
    assert below is not None
    with store.engine.begin() as conn:
        conn.execute(sa.delete(datasets_table).where(datasets_table.c.id == middle))
    return original, middle, below


def _line(store: Store, n: int) -> tuple[str, list[str]]:
    """An original and ``n`` versions saved one from the other (v1, v2, ...)."""
    original = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    made: list[str] = []
    for i in range(n):
        at = made[-1] if made else original
        store.add_label(at, "q1", f"u{i}", 1, author="ann")
        saved = store.commit_labels(at, author="ann").version
        assert saved is not None
        made.append(saved)
    return original, made


def _number_in_name(store: Store, version: str) -> int:
    return int(str(store.list_datasets().set_index("id").loc[version, "name"]).rsplit(", v", 1)[1].rstrip(")"))


def _drop_tables(store: Store, *names: str) -> None:
    """The store as a release before those tables left it."""
    with store.engine.begin() as conn:
        for name in names:
            conn.execute(sa.text(f"DROP TABLE {name}"))
    store.engine.dispose()


LATER = ("label_claims", "run_tags", "per_query_results", "synth_reviews", "synth_candidates", "synth_batches")
"""Tables added after the labels and versions, before the number tables."""


def test_a_store_made_before_the_number_tables_opens_read_only_and_numbers_on_after_every_number_held(store_url):
    """A store an older release made (no number tables, nor the claims, run tags, per-query results and generated
    candidates added before them), v2 of v1, v2, v3 deleted. A database user that may only read opens it (nothing
    written: the tables stay absent), reads its datasets, runs and versions (the numbers from the names), and what
    the missing tables would hold reads as none; a write that needs one is refused, saying why. The owner opens it
    (the tables made, the numbers kept) and saves: v4, above every number a version of the lineage holds (not 3
    again: two versions were left)."""
    store = Store(store_url)
    original, (v1, v2, v3) = _line(store, 3)
    run = store.put_run(rm.Run.from_dict({"q1": {"d1": 1.0}}, name="bm25"), v3)
    store.delete_dataset(v2)
    _drop_tables(store, "qrels_lineage_numbers", "qrels_version_numbers", *LATER)
    if store_url.startswith("postgresql"):
        reader = "r" + store_url.rsplit("/", 1)[1]  # roles are the server's: one per test database
        engine = sa.create_engine(store_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f"CREATE ROLE {reader} LOGIN"))
            conn.execute(sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"))
            conn.execute(sa.text("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        engine.dispose()
        read_only = store_url.replace("postgres@", f"{reader}@")
    else:
        read_only = store_url.replace("sqlite:///", "sqlite:///file:") + "?mode=ro&uri=true"
    reader_store = Store(read_only)
    assert reader_store.versions([original, v1, v3])["number"].tolist() == [1, 3]
    assert reader_store.family(v3) == [original, v1, v3] and len(reader_store.list_datasets()) == 3
    assert reader_store.list_runs(v3)["id"].tolist() == [run] and reader_store.get_run(run).name == "bm25"
    assert reader_store.tags_of() == {} and reader_store.list_results(v3).empty
    assert CandidateStore(reader_store).batches() == [] and CandidateStore(reader_store).made_from(v3) is None
    assert reader_store.renew_claims(v3, "tab") == 0 and reader_store.release_claims(None, "tab") is None
    for write in (
        lambda: reader_store.claim_pair(v3, [("q1", "d2")], "tab"),
        lambda: reader_store.set_tags(run, {"k": "v"}),
    ):
        with pytest.raises(RagMetricsError, match=r"predates its (label_claims|run_tags) table.*allowed to create"):
            write()
    with store.engine.connect() as conn:
        assert not sa.inspect(conn).has_table("qrels_version_numbers") and not sa.inspect(conn).has_table("run_tags")
    store = Store(store_url)
    assert store.versions([original, v1])["number"].tolist() == [1, 3]
    assert store.set_tags(run, {"k": "v"}) == {"k": "v"} and reader_store.has_table(database.tags_table)  # looked up
    store.add_label(v3, "q1", "x", 1, author="ann")
    v4 = store.commit_labels(v3, author="ann").version
    assert v4 is not None and _number_in_name(store, v4) == 4 == int(store.versions(v3)["number"].iloc[0])
    if store_url.startswith("postgresql"):  # what the owner made since is not the reader's until granted
        with pytest.raises(database.StoreReadRefused, match=r"may not read one of its tables .*grant it SELECT"):
            reader_store.versions([original, v1, v3])
        with engine.connect() as conn:
            conn.execute(sa.text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"))
        engine.dispose()
    labels = store.pending_labels(v4)
    for write in (
        lambda: reader_store.claim_pair(v4, [("q1", "d2")], "tab"),
        lambda: reader_store.add_label(v4, "q1", "y", 1, author="bob"),
    ):
        with pytest.raises(database.StoreWriteRefused, match=r"may not write to it .*nothing was written"):
            write()
    assert store.pending_labels(v4).equals(labels)


class _OriginalDeletedMeanwhile(Store):
    """A store whose next save, once it has read, lets ``other`` delete ``original`` before its transaction."""

    def __init__(self, url: str, other: Store, original: str) -> None:
        super().__init__(url)
        self.other: Store | None = other
        self.original = original

    def _check_new(self, ident: str, parent: str, listed: pd.DataFrame, n_labels: int) -> None:
        super()._check_new(ident, parent, listed, n_labels)
        if self.other is not None:
            other, self.other = self.other, None
            other.delete_dataset(self.original)


class _HeldBeforeItCommits(Store):
    """A store whose saves wait for ``go`` once numbered, holding the lineage's lock (``numbered`` set)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.numbered, self.go = threading.Event(), threading.Event()

    def _move_pending(self, conn, dataset: str, version: str) -> int:
        self.numbered.set()
        assert self.go.wait(20)
        return super()._move_pending(conn, dataset, version)


def test_deleting_the_lineage_s_original_while_a_save_runs_never_gives_a_number_twice(store_url):
    """O, v1, v2: a save from v2 reads (its lineage's original O), and O is deleted before the save's transaction:
    v1 and v2 stay versions of O's lineage, and the save, numbered in it, is v3, which the lineage keeps as given:
    once v3 is deleted, the next is v4 (not v3 twice). On PostgreSQL the delete of a version (v1) also waits for a
    save that holds the lineage's lock, and the lineage numbers on after the number that save gave."""
    store = Store(store_url)
    original, (v1, v2) = _line(store, 2)
    store.add_label(v2, "q1", "x", 1, author="ann")
    v3 = _OriginalDeletedMeanwhile(store_url, Store(store_url), original).commit_labels(v2, author="ann").version
    assert v3 is not None and store.lineage(v3) == [v3, v2, v1, original] and _number_in_name(store, v3) == 3
    assert store.delete_dataset(v3) == 0  # its number stays taken in the lineage it was saved in
    store.add_label(v2, "q1", "y", 1, author="ann")
    v4 = store.commit_labels(v2, author="ann").version
    assert v4 is not None and _number_in_name(store, v4) == 4
    if not store_url.startswith("postgresql"):
        return  # SQLite: a save's transaction holds the database's one write lock
    held = _HeldBeforeItCommits(store_url)
    held.add_label(v4, "q1", "z", 1, author="ann")
    saved: list[str | None] = []
    saver = threading.Thread(target=lambda: saved.append(held.commit_labels(v4, author="ann").version))
    saver.start()
    assert held.numbered.wait(20)
    deleter = threading.Thread(target=lambda: Store(store_url).delete_dataset(v1))
    deleter.start()
    waiting = sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
    with store.engine.connect() as conn:
        while deleter.is_alive() and not conn.execute(waiting).scalar():
            deleter.join(0.01)
    blocked = deleter.is_alive()  # waits for the save's lineage lock (without it, it is done)
    held.go.set()
    saver.join(20)
    deleter.join(20)
    assert blocked and saved[0] is not None and _number_in_name(store, saved[0]) == 5
    store.add_label(saved[0], "q1", "w", 1, author="ann")
    v6 = store.commit_labels(saved[0], author="ann").version
    assert v6 is not None and _number_in_name(store, v6) == 6  # on after v5, not v5 twice


def test_a_version_saved_again_after_its_delete_is_numbered_as_named(store_url, monkeypatch):
    """O, v1, v2 saved before the numbers were kept. A process opens the store and reads the numbers to keep, and
    v2 is deleted before it writes them: no number is kept for a deleted version. The same labels saved again
    (the same content: v2's id) are v3 in name and number. An older release deletes it again (it leaves the
    number kept); saved again, it is v4 in both (the kept number is the save's, not the one left behind)."""
    store = Store(store_url)
    _, (v1, v2) = _line(store, 2)
    with store.engine.begin() as conn:  # saved before the numbers were kept
        conn.execute(sa.delete(database.version_numbers_table))
    given = database._given_numbers

    def then_deleted(conn):
        numbers = given(conn)
        store.delete_dataset(v2)  # another process, meanwhile
        return numbers

    monkeypatch.setattr(database, "_given_numbers", then_deleted)
    Store(store_url)
    monkeypatch.setattr(database, "_given_numbers", given)
    with store.engine.connect() as conn:
        kept = dict(conn.execute(sa.select(database.version_numbers_table)).all())
    assert kept == {v1: 1}
    for name in (3, 4):
        store.add_label(v1, "q1", "u1", 1, author="ann")  # the label v2 saved, given again
        assert store.commit_labels(v1, author="ann") == SavedVersion(v2, made=True)  # its own save again
        assert _number_in_name(store, v2) == name == int(store.versions(v1)["number"].iloc[0])
        with store.engine.begin() as conn:  # an older release's delete_dataset: it knows no number table
            conn.execute(sa.delete(versions_table).where(versions_table.c.id == v2))
            conn.execute(sa.delete(links_table).where(links_table.c.dataset_id == v2))
            conn.execute(sa.delete(datasets_table).where(datasets_table.c.id == v2))
