"""The store against a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

import ragmetrics as rm
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store import provenance
from ragmetrics.store.database import (
    ADDED_COLUMNS,
    STRANDED,
    Store,
    StoreKeyError,
    StoreWriteRefused,
    dataset_id,
    datasets_table,
    run_id,
    tags_table,
)

SCIFACT = Path(__file__).parent / "data" / "scifact"


@pytest.fixture(scope="module")
def scifact():
    dataset = load_dataset(SCIFACT / "qrels.tsv", queries=SCIFACT / "queries.jsonl")
    return dataset, load_run(SCIFACT / "bm25-stem.trec.gz"), load_run(SCIFACT / "dense-all-minilm-l6-v2.trec.gz")


def test_a_read_only_database_without_tables_opens_empty_and_refuses_writes(store_url, tmp_path, scifact):
    """Was: ``Store()`` on a read-only SQLite file its owner never opened raised StoreOpenError ("attempt to write
    a readonly database": the open creates the tables), and so did a PostgreSQL role that may only read, on a
    database without tables ("permission denied for schema public"). Now its tables read as empty, the store says
    it is read-only, and a write is refused as on any read-only store, naming what it may not write, leaving the
    database as it was."""
    if store_url.startswith("postgresql"):
        reader = "r" + store_url.rsplit("/", 1)[1]  # roles are the server's: one per test database
        admin = sa.create_engine(store_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE ROLE {reader} LOGIN"))
            conn.execute(sa.text("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        url = store_url.replace("postgres@", f"{reader}@")
    else:
        path = tmp_path / "never-opened.sqlite"
        path.touch()
        url = f"sqlite:///file:{path}?mode=ro&uri=true"
    store = Store(url)
    assert store.read_only and store.list_datasets().empty and store.list_runs().empty
    assert not store.has_view("0" * 16) and not store.has_dataset("0" * 16)
    with pytest.raises(StoreWriteRefused, match="may not write to it"):
        store.put_dataset(scifact[0])
    with pytest.raises(
        StoreWriteRefused,
        match=r"may not write to it \((permission denied for table views|attempt to write a readonly database)\)",
    ):
        store.put_view({"a": 1})
    assert store.list_datasets().empty  # the next connection's tables are as empty
    if store_url.startswith("postgresql"):
        with admin.connect() as conn:
            assert not sa.inspect(conn).get_table_names()
        admin.dispose()
    else:
        assert path.read_bytes() == b"" and not Store(f"sqlite:///{tmp_path / 'new.sqlite'}").read_only


def test_a_table_that_fails_to_be_created_for_another_reason_than_a_refusal_leaves_the_store_writable(
    tmp_path, scifact
):
    """Was: any error creating an added table (here an index already holding its name, as a lock timeout would)
    marked the store read-only. Now only a refusal to write does; the store opens without that table and writes."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store = Store(url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE run_tags"))
        conn.execute(sa.text("CREATE INDEX run_tags ON datasets (id)"))
    store.engine.dispose()
    reopened = Store(url)
    assert not reopened.read_only and not reopened.has_table(tags_table)
    assert reopened.has_dataset(reopened.put_dataset(scifact[0]))


def test_round_trip_keeps_content_and_numbers(store_url, scifact):
    dataset, bm25, _ = scifact
    store = Store(store_url)
    ds_id = store.put_dataset(dataset)
    run = store.put_run(bm25, ds_id)
    again = Store(store_url)  # a restart: a new process would open the same way
    loaded_ds, loaded_run = again.get_dataset(ds_id), again.get_run(run)
    pd.testing.assert_frame_equal(loaded_ds.qrels, dataset.qrels)
    assert loaded_ds.queries["query"].tolist() == dataset.queries["query"].tolist()
    pd.testing.assert_frame_equal(loaded_run.frame, bm25.frame)
    assert loaded_run.name == "bm25-stem"
    before = rm.evaluate(dataset, bm25, ["ndcg@10", "mrr"]).mean()
    after = rm.evaluate(loaded_ds, loaded_run, ["ndcg@10", "mrr"]).mean()
    pd.testing.assert_frame_equal(before, after)
    assert dataset_id(loaded_ds) == ds_id and run_id(loaded_run) == run


def test_a_new_sqlite_store_uses_large_pages_and_an_existing_one_keeps_its_own(tmp_path, scifact):
    import sqlite3

    from ragmetrics.store.database import SQLITE_PAGE_SIZE

    dataset, bm25, _ = scifact
    fresh = tmp_path / "fresh.sqlite"
    Store(f"sqlite:///{fresh}").put_run(bm25, Store(f"sqlite:///{fresh}").put_dataset(dataset))
    assert sqlite3.connect(fresh).execute("PRAGMA page_size").fetchone()[0] == SQLITE_PAGE_SIZE == 65536
    # a store made with SQLite's default pages (as before this setting) opens, keeps its pages and its rows
    old = tmp_path / "old.sqlite"
    sqlite3.connect(old).execute("PRAGMA journal_mode=WAL").close()
    legacy = Store(f"sqlite:///{old}")
    assert sqlite3.connect(old).execute("PRAGMA page_size").fetchone()[0] == 4096
    ds_id = legacy.put_dataset(dataset)
    ident = legacy.put_run(bm25, ds_id)
    pd.testing.assert_frame_equal(Store(f"sqlite:///{old}").get_run(ident).frame, bm25.frame)


def test_sources_and_descriptions_are_stored_and_an_older_store_gets_their_columns(store_url, scifact):
    dataset, bm25, dense = scifact
    store = Store(store_url)
    ds_id = store.put_dataset(dataset, source="qrels.tsv, queries.jsonl", description="SciFact test claims")
    run = store.put_run(bm25, ds_id, source="bm25-stem.trec.gz")
    store.put_run(bm25, ds_id, source="a later copy.trec")  # the same content again: the first source stays
    again = Store(store_url)
    assert again.list_datasets()[["source", "description"]].values.tolist() == [
        ["qrels.tsv, queries.jsonl", "SciFact test claims"]
    ]
    assert again.list_runs(ds_id)[["id", "source"]].values.tolist() == [[run, "bm25-stem.trec.gz"]]
    # a store made before these columns existed: they are added (empty) when it is opened, its rows untouched
    _drop_added_columns(again)
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            Store(store_url)
        except BaseException as err:
            errors.append(err)

    openers = [threading.Thread(target=open_store) for _ in range(3)]  # processes starting together
    for t in openers:
        t.start()
    for t in openers:
        t.join()
    assert errors == []
    upgraded = Store(store_url)
    assert upgraded.list_datasets()[["id", "source", "description"]].values.tolist() == [[ds_id, "", ""]]
    assert upgraded.list_runs(ds_id)[["id", "source"]].values.tolist() == [[run, ""]]
    pd.testing.assert_frame_equal(upgraded.get_run(run).frame, bm25.frame)
    other = upgraded.put_run(dense, ds_id, source="dense.trec")
    assert upgraded.list_runs(ds_id)["source"].tolist() == ["", "dense.trec"] and other != run


def _drop_added_columns(store: Store) -> None:
    """Make ``store`` look like one made before the source and description columns existed."""
    with store.engine.begin() as conn:
        for table, columns in ADDED_COLUMNS.items():
            for column in columns:
                conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))


def test_an_upgraded_store_takes_the_source_of_a_later_copy(store_url, scifact):
    dataset, bm25, _ = scifact
    store = Store(store_url)
    ds_id = store.put_dataset(dataset)
    run = store.put_run(bm25, ds_id)
    _drop_added_columns(store)
    upgraded = Store(store_url)
    assert (
        upgraded.put_run(bm25, ds_id, source="bm25-stem.trec.gz") == run
    )  # stored without a source: it takes this one
    assert upgraded.put_dataset(dataset, source="qrels.tsv", description="claims") == ds_id
    assert upgraded.list_runs(ds_id)["source"].tolist() == ["bm25-stem.trec.gz"]
    assert upgraded.list_datasets()[["source", "description"]].values.tolist() == [["qrels.tsv", "claims"]]
    upgraded.put_run(bm25, ds_id, source="renamed.trec")
    assert upgraded.list_runs(ds_id)["source"].tolist() == ["bm25-stem.trec.gz"]  # a source once known stays


def test_a_postgresql_user_who_may_not_alter_the_tables_still_opens_an_older_store(database_and_role, scifact):
    dataset, bm25, dense = scifact
    name, owner_url = database_and_role
    owner = Store(owner_url)
    ds_id = owner.put_dataset(dataset)
    run = owner.put_run(bm25, ds_id)
    _drop_added_columns(owner)
    with owner.engine.begin() as conn:  # the application's user may read and write rows, not change tables
        conn.execute(sa.text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}"))
        conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name}"))  # a label's number
    owner.engine.dispose()
    app = Store(owner_url.replace("postgres@", f"{name}@", 1))
    assert app.list_runs(ds_id)[["id", "source"]].values.tolist() == [[run, ""]]
    assert app.list_datasets()[["source", "description"]].values.tolist() == [["", ""]]
    other = app.put_run(dense, ds_id, source="dense.trec")  # the source is dropped, the run stored
    pd.testing.assert_frame_equal(app.get_run(other).frame, dense.frame)
    assert app.list_runs(ds_id)["source"].tolist() == ["", ""]
    with owner.engine.begin() as conn:  # an upload's tags need UPDATE on them (INSERT ... ON CONFLICT DO UPDATE)
        conn.execute(sa.text(f"REVOKE UPDATE ON run_tags FROM {name}"))
    with pytest.raises(StoreWriteRefused, match="may not write to it"):
        app.put_run(rm.Run.from_frame(dense.frame.head(3), name="tagged"), ds_id, tags={"k": "v"})
    assert not app.read_only and app.refused_changes == {"edit tags"}
    assert len(app.list_runs(ds_id)) == 2  # the run went with its tags
    with owner.engine.begin() as conn:  # a privilege lacking on one table refuses that write, not every write
        conn.execute(sa.text(f"REVOKE INSERT ON run_tags FROM {name}"))
    with pytest.raises(StoreWriteRefused, match="may not write to it"):
        app.set_tags(run, {"k": "v"})
    assert not app.read_only and app.refused_changes == {"edit tags"}
    with owner.engine.begin() as conn:  # the judging and the results' deletes, each known at the open
        conn.execute(sa.text(f"REVOKE UPDATE ON label_claims FROM {name}"))
        conn.execute(sa.text(f"REVOKE DELETE ON per_query_results FROM {name}"))
    assert Store(owner_url.replace("postgres@", f"{name}@", 1)).refused_changes == {
        "edit tags",
        "delete results",
        "judge",
    }
    with pytest.raises(StoreWriteRefused, match="may not write to it"):  # refused on a store that opened not knowing
        app.renew_claims(ds_id, "tab")
    assert not app.read_only and app.refused_changes == {"edit tags", "judge"}
    with owner.engine.begin() as conn:
        conn.execute(sa.text(f"GRANT UPDATE ON label_claims TO {name}"))
        conn.execute(sa.text(f"GRANT DELETE ON per_query_results TO {name}"))
    with owner.engine.begin() as conn:  # a write to the datasets whose SQL opens with WITH, not the table written
        conn.execute(sa.text(f"REVOKE UPDATE ON datasets FROM {name}"))
    # a role that may add data but not rename it opens writable, refusing renames only, known before one is tried
    # (was: it opened writable and its first refused rename marked the whole store read-only)
    renamer = Store(owner_url.replace("postgres@", f"{name}@", 1))
    assert not renamer.read_only and renamer.refused_changes == {"rename", "edit tags"}
    with pytest.raises(StoreWriteRefused, match="may not write to it"):
        renamer.rename_dataset(ds_id, "x")
    assert not renamer.read_only and renamer.refused_changes == {"rename", "edit tags"}
    renamer.engine.dispose()
    renamed = (
        sa.update(datasets_table).where(datasets_table.c.id == ds_id).values(name="x").returning(datasets_table.c.id)
    )
    statement = sa.select(renamed.cte("renamed").c.id)
    with pytest.raises(StoreWriteRefused, match="may not write to it"), app.engine.begin() as conn:
        app._write(conn, datasets_table, statement)
    assert app.read_only
    app.read_only = False  # as at its open: the role still may INSERT into the datasets
    with owner.engine.begin() as conn:
        conn.execute(sa.text(f"REVOKE DELETE ON runs FROM {name}"))
    with pytest.raises(StoreWriteRefused, match="may not write to it"):  # refused on a store that opened not knowing
        app.delete_run(other)
    assert not app.read_only and app.refused_changes == {"edit tags", "judge", "delete"}
    assert app.list_runs(ds_id)["id"].tolist() == [run, other]
    assert Store(owner_url.replace("postgres@", f"{name}@", 1)).refused_changes == {"rename", "delete", "edit tags"}
    with owner.engine.begin() as conn:  # a refused write to the datasets: the user may not write the store at all
        conn.execute(sa.text(f"REVOKE INSERT ON datasets FROM {name}"))
    with pytest.raises(StoreWriteRefused, match="may not write to it"):
        app.put_dataset(rm.Dataset.from_dict({"q": {"d": 1}}))
    assert app.read_only
    # its owner opens it later: the columns are added, the rows kept
    assert Store(owner_url).list_runs(ds_id)[["id", "source"]].values.tolist() == [[run, ""], [other, ""]]


def test_ids_depend_on_content_only(scifact):
    dataset, bm25, dense = scifact
    shuffled = rm.Run.from_frame(bm25.frame.sample(frac=1.0, random_state=3), name="renamed")
    assert run_id(shuffled) == run_id(bm25)
    assert run_id(dense) != run_id(bm25)
    # one field of one row changed (or two rows' documents swapped) is other content
    frame = bm25.frame
    one_score = frame.assign(score=frame["score"].where(frame.index != 7, frame["score"][7] + 1e-9))
    swapped = frame.copy()
    swapped.loc[[3, 4], "doc_id"] = frame["doc_id"][[4, 3]].to_numpy()
    moved = frame.copy()
    moved.loc[5, "query_id"] = frame["query_id"].iloc[-1]
    with_rank = frame.assign(rank=range(1, len(frame) + 1))
    variants = [rm.Run.from_frame(f) for f in (one_score, swapped, moved, with_rank)]
    assert len({run_id(bm25), *(run_id(v) for v in variants)}) == 5
    assert run_id(rm.Run.from_frame(frame.assign(score=frame["score"] * 0.0))) == run_id(
        rm.Run.from_frame(frame.assign(score=frame["score"] * -0.0))
    )  # -0.0 and 0.0 are the same score
    reordered = rm.Dataset.from_frames(dataset.qrels.iloc[::-1], dataset.queries, name="other name")
    assert dataset_id(reordered) == dataset_id(dataset)
    changed = rm.Dataset.from_frames(dataset.qrels.assign(relevance=2), dataset.queries)
    assert dataset_id(changed) != dataset_id(dataset)


def test_workspace_listing_rename_and_delete(store_url, scifact):
    dataset, bm25, dense = scifact
    store = Store(store_url)
    ds_id = store.put_dataset(dataset)
    a, b = store.put_run(bm25, ds_id), store.put_run(dense, ds_id)
    assert store.put_run(bm25, ds_id) == a  # the same content twice: stored once
    listed = store.list_runs(ds_id)
    assert listed["id"].tolist() == [a, b] and listed["n_queries"].tolist() == [300, 300]
    assert store.list_datasets().loc[0, "n_queries"] == 300
    store.rename_run(a, "BM25 (stemmed)")
    assert store.get_run(a).name == "BM25 (stemmed)"
    store.unlink_run(ds_id, b)
    assert store.list_runs(ds_id)["id"].tolist() == [a] and store.has_run(b)
    store.put_run(dense, ds_id)
    store.delete_run(b)
    assert store.list_runs(ds_id)["id"].tolist() == [a]
    with pytest.raises(StoreKeyError, match=f"run {b} is not in this store; upload the same run file"):
        store.get_run(b)
    store.delete_dataset(ds_id)
    assert store.list_datasets().empty and store.list_runs(ds_id).empty


def test_malformed_ids_never_reach_sql(store_url):
    store = Store(store_url)
    for bad in ["'; DROP TABLE runs; --", "ABCDEF0123456789", "", "0" * 17]:
        with pytest.raises(StoreKeyError, match="is not a valid id"):
            store.get_run(bad)
        assert not store.has_run(bad)
    assert isinstance(StoreKeyError("x"), (KeyError, ValueError))


def test_views_are_saved_by_content(store_url):
    store = Store(store_url)
    state = {"page": "overview", "runs": ["a"], "k": 10}
    ident = store.put_view(state)
    assert store.put_view(dict(reversed(list(state.items())))) == ident
    assert store.has_view(ident) and not store.has_view("0" * 16) and not store.has_view("junk")
    assert Store(store_url).get_view(ident) == state


def test_concurrent_uploads_of_the_same_content_are_safe(store_url, scifact):
    dataset, bm25, _ = scifact
    Store(store_url)  # create the schema once
    ids, errors = [], []

    def upload():
        try:
            store = Store(store_url)
            ids.append((store.put_dataset(dataset), store.put_run(bm25)))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(ids)) == 1
    store = Store(store_url)
    assert len(store.list_runs()) == 1 and len(store.list_datasets()) == 1


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    import sqlalchemy as sa
    from ragmetrics.io import load_run
    from ragmetrics.store.database import Store

    store = Store(sys.argv[1])
    run = load_run(sys.argv[2])

    @sa.event.listens_for(store.engine, "after_execute")
    def pause(conn, clauseelement, *args):
        if getattr(clauseelement, "table", None) is not None and clauseelement.table.name == "dataset_runs":
            print("inside transaction", flush=True)
            time.sleep(60)

    store.put_run(run, "0123456789abcdef")
    """
)


def test_a_writer_killed_mid_transaction_leaves_the_store_intact(store_url, scifact, tmp_path):
    dataset, bm25, _ = scifact
    store = Store(store_url)
    ds_id = store.put_dataset(dataset)
    kept = store.put_run(bm25, ds_id)
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    writer = subprocess.Popen(
        [sys.executable, str(script), store_url, str(SCIFACT / "dense-all-minilm-l6-v2.trec.gz")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert writer.stdout.readline().strip() == "inside transaction"  # run row written, not committed
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    after = Store(store_url)
    assert after.list_runs()["id"].tolist() == [kept]  # the killed upload left nothing behind
    assert after.list_runs(ds_id)["id"].tolist() == [kept]
    pd.testing.assert_frame_equal(after.get_run(kept).frame, bm25.frame)
    if after.kind == "sqlite":
        with after.engine.connect() as conn:
            assert conn.execute(sa.text("PRAGMA integrity_check")).scalar() == "ok"
    assert after.put_run(load_run(SCIFACT / "dense-all-minilm-l6-v2.trec.gz"), ds_id)  # and it still takes writes
    assert len(after.list_runs(ds_id)) == 2


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a\x00b", "control character (byte 0x00)"),
        ("\x1b[31mred", "byte 0x1b"),
        ("", "is empty"),
        ("n" * 513, "513 bytes"),
    ],
)
def test_a_name_or_label_the_store_cannot_keep_is_a_clear_error_and_changes_nothing(store_url, name, problem):
    store = Store(store_url)
    ident = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="kept"))
    with pytest.raises(rm.RagMetricsError, match=rf"^a name .*{re.escape(problem)}"):
        store.rename_dataset(ident, name)
    if name:  # no author is "anonymous"
        with pytest.raises(rm.RagMetricsError, match=rf"^an author .*{re.escape(problem)}"):
            store.add_label(ident, "q1", "d2", 1, author=name)
    with pytest.raises(rm.RagMetricsError, match=r"^a document id .*byte 0x00"):
        store.add_label(ident, "q1", "d\x002", 1)
    assert store.get_dataset(ident).name == "kept" and store.pending_labels(ident).empty


def test_names_are_checked_when_stored_as_when_renamed(tmp_path):
    """A name comes in through many doors (an upload, the Build page, a retriever's or a fusion's run name, push
    --name): the store checks it where it keeps it, as a rename does."""
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}})
    for bad, why in (("N" * (8 << 20), "bytes"), ("faq\x1b[31m", "control character")):
        with pytest.raises(rm.RagMetricsError, match=rf"a dataset name .*{why}"):
            store.put_dataset(dataclasses.replace(dataset, name=bad))
        with pytest.raises(rm.RagMetricsError, match=rf"a run name .*{why}"):
            store.put_run(rm.Run.from_dict({"q1": {"d1": 1.0}}).with_name(bad))
    assert store.list_datasets().empty and store.list_runs().empty


def test_opening_a_store_looks_for_pending_labels_in_the_index_of_pending_ones(store_url):
    """Opening a store looks for labels an older release left pending on a dataset a version was made from; it
    reads the index of pending labels (saved labels, which grow without end, are not in it), which a store made
    before the index gets when it is opened. A version's labels are read by the index of saved ones, which such a
    store gets too."""
    store = Store(store_url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP INDEX ix_labels_pending"))
        conn.execute(sa.text("DROP INDEX ix_labels_version"))
    reopened = Store(store_url)
    assert {"ix_labels_pending", "ix_labels_version"} <= {
        i["name"] for i in sa.inspect(reopened.engine).get_indexes("labels")
    }
    if reopened.kind == "sqlite":
        by_version = provenance.sources_by_version_query(reopened, ["0123456789abcdef"])
        for query, index in ((STRANDED, "ix_labels_pending"), (by_version, "ix_labels_version")):
            sql = str(query.compile(reopened.engine, compile_kwargs={"literal_binds": True}))
            with reopened.engine.connect() as conn:
                plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
            assert f"USING INDEX {index}" in plan, plan


def test_opening_a_store_waits_for_no_label_write(store_url, caplog):
    """Opening a store that has the index of pending labels neither waits for a label write in progress (another
    server's save) nor holds the writes after it."""
    import time

    import sqlalchemy as sa

    from ragmetrics.store.database import labels_table

    store = Store(store_url)
    dataset = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="x"))
    store.add_label(dataset, "q1", "a", 1, author="ann")
    with store.engine.begin() as conn:  # a label write in progress
        conn.execute(sa.update(labels_table).where(labels_table.c.doc_id == "a").values(author="ben"))
        start = time.monotonic()
        Store(store_url)
        assert time.monotonic() - start < 2
    assert "cannot add index" not in caplog.text
