"""Labels kept at once and qrels versions in the store, on SQLite and on PostgreSQL."""

from __future__ import annotations

import ragmetrics as rm
from ragmetrics.analysis.judging import diff
from ragmetrics.store.database import Store


def test_labels_survive_a_new_process_and_become_a_version_with_the_parents_runs(store_url):
    store = Store(store_url)
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 0}}, name="faq")
    parent = store.put_dataset(dataset, description="the FAQ set", targets="faq")
    run = rm.Run.from_dict({"q1": {"d1": 1.0, "u1": 0.5}, "q2": {"u2": 1.0}})
    run_id = store.put_run(run, parent)
    store.add_label(parent, "q1", "u1", 2, author="ana")
    store.add_label(parent, "q2", "u2", 0, author="ana")
    store.add_label(parent, "q2", "u2", 1, author="ben")  # the latest label of a pair wins
    store.add_label(parent, "q1", "d9", 1, author="rule", kind="suggestion:keywords")  # never merged

    reopened = Store(store_url)  # a reload, another process: nothing lost
    pending = reopened.pending_labels(parent)
    assert pending[["query_id", "doc_id", "label", "author"]].values.tolist() == [
        ["q1", "u1", 2, "ana"],
        ["q2", "u2", 1, "ben"],
    ]
    version = reopened.commit_labels(parent, author="ben")
    assert version is not None and version != parent
    assert reopened.pending_labels(parent).empty and reopened.commit_labels(parent) is None
    child = reopened.get_dataset(version)
    assert sorted(child.qrels.itertuples(index=False, name=None)) == [
        ("q1", "d1", 1),
        ("q1", "u1", 2),
        ("q2", "d2", 0),
        ("q2", "u2", 1),
    ]
    assert reopened.list_runs(version)["id"].tolist() == [run_id]
    versions = reopened.versions(parent)
    assert versions[["id", "author", "n_labels"]].values.tolist() == [[version, "ben", 2]]
    assert reopened.lineage(version) == [version, parent]
    changes = diff(dataset, child)
    assert changes[["query_id", "doc_id", "after", "change"]].values.tolist() == [
        ["q1", "u1", 2, "added"],
        ["q2", "u2", 1, "added"],
    ]
    assert rm.evaluate(child, run, ["judged@1"])["run"].means["judged@1"] == 1.0

    # a version of a version: named from the original and numbered across the lineage, not nested
    assert reopened.list_datasets().set_index("id").loc[version, "name"] == "faq (+2 labels, v1)"
    reopened.add_label(version, "q2", "d9", 1, author="ana")
    grandchild = reopened.commit_labels(version, author="ana")
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
    store.add_label(parent, "q1", "u3", 2, author="ana")
    store.add_label(parent, "q1", "u3", 2, author="ana", kind="suggestion:answer")
    assert store.withdraw_label(parent, "q1", "u1") == 2  # the label and the suggestion it accepted
    assert store.withdraw_label(parent, "q1", "u1") == 0
    assert store.pending_labels(parent)["doc_id"].tolist() == ["u2", "u3"]
    assert store.pending_labels(parent, kind="suggestion:keywords").empty
    version = store.commit_labels(parent, author="ana")
    assert sorted(store.get_dataset(version).qrels["doc_id"]) == ["d1", "u2", "u3"]
    # saved with the version, the accepted suggestion no longer stands pending on the parent
    assert store.pending_labels(parent, kind="suggestion:answer").empty
    assert store.withdraw_label(parent, "q1", "u3") == 0  # a saved label is the version's, not withdrawn
