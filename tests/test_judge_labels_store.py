"""A judge's labels in the store (ragmetrics.store.provenance): kept with their provenance, never over a person's,
and counted apart in each qrels version; on SQLite and on PostgreSQL, and in a store made before labels had a
source."""

from __future__ import annotations

import time
from typing import Any

import pytest
import sqlalchemy as sa

import ragmetrics as rm
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.provenance import Provenance
from ragmetrics.store.database import Store, VersionTree, labels_table
from ragmetrics.store.provenance import add_judge_labels, parse_source, sources_by_version, version_sources

RULE = Provenance("rule", "1", "0123456789abcdef", 1.0)
LEARNED = Provenance("learned", "1", "fedcba9876543210", 2.0)


def test_judge_labels_keep_their_provenance_and_versions_count_them_apart(store_url):
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 2}}, name="faq"))  # grades 0..2
    store.add_label(parent, "q1", "u1", 2, author="ana")
    added = add_judge_labels(
        store, parent, [("q1", "d1", 0), ("q1", "u1", 0), ("q1", "u2", 1), ("q2", "u3", 2), ("q2", "u4", 0)], RULE
    )
    assert added == (4, 1)  # d1: judged in the qrels; u1: a person's label, kept beside hers (hers wins)
    assert add_judge_labels(store, parent, [("q2", "u5", 1)], LEARNED, author="ci") == (1, 0)
    store.add_label(parent, "q2", "u4", 1, author="ben")  # a person, after the judge: the person's stands
    store.add_label(parent, "q2", "u6", 1, author="ben")
    with store.engine.begin() as conn:  # a judge's label that raced in after a person's: the person's still stands
        conn.execute(sa.insert(labels_table).values(
            dataset_id=parent, query_id="q2", doc_id="u6", label=0, author="racer", created_at=time.time(),
            kind="judgment", version=None, source=RULE.source))  # fmt: skip
    version = Store(store_url).commit_labels(parent, author="ana").version
    assert version is not None
    qrels = {(q, d): r for q, d, r in store.get_dataset(version).qrels.itertuples(index=False, name=None)}
    assert qrels == {("q1", "d1"): 1, ("q2", "d2"): 2, ("q1", "u1"): 2, ("q1", "u2"): 1, ("q2", "u3"): 2,
                     ("q2", "u4"): 1, ("q2", "u5"): 1, ("q2", "u6"): 1}  # fmt: skip
    counts = version_sources(Store(store_url), version)
    assert counts.values.tolist() == [
        ["human", "", "", "", 3],  # u1, u4, u6
        [LEARNED.source, "learned", "1", "fedcba9876543210", 1],
        [RULE.source, "rule", "1", "0123456789abcdef", 2],  # u2, u3
    ]
    assert store.versions(parent)["n_labels"].tolist() == [6]
    with store.engine.connect() as conn:
        authors = dict(conn.execute(sa.select(labels_table.c.doc_id, labels_table.c.author)
                                    .where(labels_table.c.doc_id.in_(["u2", "u5"]))).all())  # fmt: skip
    assert authors == {"u2": RULE.source, "u5": "ci"}
    # a second version on top, then both read in one query: each as read alone, in the order asked
    add_judge_labels(store, version, [("q1", "u7", 1)], RULE)
    store.add_label(version, "q2", "u3", 0, author="ana")  # a person over the judge's saved label
    second = store.commit_labels(version, judges=True).version
    assert second is not None
    both = sources_by_version(store, [second, version, "0" * 16])
    assert both["version"].tolist() == [second, second, version, version, version]
    for one in (version, second):
        alone = version_sources(store, one)
        assert both[both["version"] == one].drop(columns="version").reset_index(drop=True).equals(alone)
    assert version_sources(store, second)[["source", "labels"]].values.tolist() == [["human", 1], [RULE.source, 1]]


class _PlaceDeletedOnceRead(Store):
    """A store whose next read of where labels go, once ``doomed`` names that place, deletes it right after: as a
    delete by another server lands between that read and the labels' transaction. ``locked``: the statements each
    transaction ran while it held a place's lock (what a save or delete of that place waits on)."""

    doomed: str | None = None

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.locked: list[list[str]] = []
        self._held: list[str] | None = None
        sa.event.listen(self.engine, "before_cursor_execute", self._ran)
        for ended in ("commit", "rollback"):
            sa.event.listen(self.engine, ended, self._released)

    def _lock(self, conn: Any, key: str, *, shared: bool = False) -> None:
        super()._lock(conn, key, shared=shared)
        if key.startswith("place"):
            self._held = []

    def _ran(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if self._held is not None:
            self._held.append(statement)

    def _released(self, conn: Any) -> None:
        if self._held is not None:
            self.locked.append(self._held)
        self._held = None

    def _tree(self, dataset: str, *, stored: bool = False, conn: Any = None) -> VersionTree:
        tree = super()._tree(dataset, stored=stored, conn=conn)
        if stored and conn is None and self.doomed is not None:
            doomed, self.doomed = self.doomed, None
            assert tree.place(dataset) == doomed
            self.delete_dataset(doomed)
        return tree


def test_a_judges_label_leaves_its_pair_to_people(store_url):
    """People judging are offered the pairs a judge labelled, see no label on them and are not refused as if
    someone had labelled them meanwhile; their label is the version's. A judge whose place (the version) another
    server deletes once it is read labels where the delete left the place, skipped against that place's qrels."""
    store = _PlaceDeletedOnceRead(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 2}}))  # grades 0..2
    assert add_judge_labels(store, parent, [("q1", "d1", 1), ("q1", "u1", 0), ("q1", "u2", 1)], RULE) == (2, 1)
    # was: the place's qrels were decoded while its lock was held, which every save or delete of it (on SQLite
    # every write) waited on; a dataset's qrels never change, so they are read before it
    [held] = store.locked
    assert any(s.lstrip().upper().startswith("INSERT INTO LABELS") for s in held)
    assert not [s for s in held if "payload" in s], held
    assert store.labelled_pairs(parent).empty
    assert store.latest_label(parent, "q1", "u1") is None
    claim = store.claim_pair(parent, [("q1", "u1"), ("q1", "u2")], "tab-1")
    assert claim is not None and (claim.query_id, claim.doc_id) == ("q1", "u1")
    store.add_label(parent, "q1", "u1", 2, author="ana", expect=None)
    assert store.labelled_pairs(parent).values.tolist() == [["q1", "u1"]]
    assert store.pending_labels(parent).set_index("doc_id").loc["u1", "label"] == 2  # hers, over the judge's
    hers = store.latest_label(parent, "q1", "u1")
    assert hers is not None and store.withdraw_label(parent, "q1", "u1", expect=hers["id"]) == 1
    assert store.pending_labels(parent).set_index("doc_id").loc["u1", "label"] == 0  # the judge's stays
    assert store.pending_labels(parent, judges=False).empty
    store.add_label(parent, "q1", "u1", 2, author="ana", expect=None)
    version = store.commit_labels(parent).version
    assert version is not None
    assert dict(zip(*[store.get_dataset(version).qrels[c] for c in ("doc_id", "relevance")], strict=True)) == {
        "d1": 2, "u1": 2, "u2": 1,
    }  # fmt: skip
    assert version_sources(store, version)[["source", "labels"]].values.tolist() == [["human", 1], [RULE.source, 1]]
    # was: the judge read the labels' place (the version) before its transaction, and the version deleted in
    # between (another server) made them "not in this store"; now they go where the delete left the place
    store.doomed = version
    assert add_judge_labels(store, parent, [("q1", "d1", 0), ("q1", "u1", 0), ("q1", "u3", 1)], RULE) == (2, 1)
    assert store.doomed is None and not store.has_dataset(version) and store.pending_place(parent) == parent
    assert store.pending_labels(parent)[["doc_id", "label"]].values.tolist() == [["u1", 0], ["u3", 1]]  # d1: judged


def test_a_store_made_before_label_sources_reads_its_labels_as_human(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    store = Store(url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}))
    store.add_label(parent, "q1", "u1", 1, author="ana")
    with store.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE labels DROP COLUMN source"))  # as an older version made it
    store.engine.dispose()
    reopened = Store(url)  # adds the column, empty: the old label is a person's
    assert "source" in {c["name"] for c in sa.inspect(reopened.engine).get_columns("labels")}
    add_judge_labels(reopened, parent, [("q1", "u2", 0)], RULE)
    version = reopened.commit_labels(parent).version
    assert version is not None
    assert version_sources(reopened, version)[["source", "labels"]].values.tolist() == [["human", 1], [RULE.source, 1]]


def test_a_store_without_the_source_column_refuses_judge_labels_and_sees_it_once_added(tmp_path):
    """A server whose database user may not alter the tables opens an older store without the column: it refuses
    a judge's labels (they would read as a person's); once the owner's server adds the column, it reads the
    judges' labels written there as theirs, not people's."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = Store(url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}))
    with store.engine.begin() as conn:  # an older store, opened by a user who may not alter it
        conn.execute(sa.text("ALTER TABLE labels DROP COLUMN source"))
    store._without.add(("labels", "source"))
    with pytest.raises(RagMetricsError, match="would read as a person's"):
        add_judge_labels(store, parent, [("q1", "u2", 0)], RULE)
    assert store.pending_labels(parent).empty
    owner = Store(url)  # the owner's server adds the column; a judge labels there
    add_judge_labels(owner, parent, [("q1", "u2", 0)], RULE)
    store.add_label(parent, "q1", "u3", 1, author="ben")
    assert store.pending_labels(parent, judges=False)["doc_id"].tolist() == ["u3"]  # the judge's is not people's
    assert sorted(store.labelled_pairs(parent)["doc_id"]) == ["u3"]


def test_provenance_is_checked_and_read_back():
    assert RULE.source == "judge:rule@1#0123456789abcdef"
    assert parse_source(RULE.source) == ("rule", "1", "0123456789abcdef")
    assert parse_source("") is None
    with pytest.raises(RagMetricsError, match="neither empty"):
        parse_source("ana")
    with pytest.raises(RagMetricsError, match="judge name"):
        Provenance("a b", "1", "0123456789abcdef", 0.0)
    with pytest.raises(RagMetricsError, match="16 hex"):
        Provenance("rule", "1", "xyz", 0.0)


def test_a_label_of_a_query_the_dataset_lacks_is_refused_and_nothing_is_kept(store_url):
    """Was: taken, and a save made it a query of the version with no text (" q1 " beside "q1", or "nope")."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 1}}, name="two"))
    for query in ("nope", " q1 ", "q1\ud800"):
        with pytest.raises(RagMetricsError, match=r"query .* (is not a query of dataset|holds a lone surrogate)"):
            store.add_label(parent, query, "d9", 1)
        with pytest.raises(RagMetricsError, match=r"query .* (is not a query of dataset|holds a lone surrogate)"):
            add_judge_labels(store, parent, [("q2", "d8", 1), (query, "d9", 1)], RULE)  # the whole batch refused
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(labels_table)).scalar() == 0
    store.add_label(parent, "q1", "d9", 1)
    version = store.commit_labels(parent).version
    assert version is not None and sorted(store.get_dataset(version).query_ids) == ["q1", "q2"]
