"""Labels given while a version is being saved, on SQLite and on PostgreSQL: every label ends up either in exactly
the version whose stamp it carries or still pending, none is lost.

One real process labels a new pair about every 20 ms, another saves a version about every 0.5 s; the plain run
races them for a few seconds, the soak run for half a minute. Then every stamped label is looked up in its
version's qrels, and every version's added judgments are matched to the labels stamped with it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import time

import pandas as pd
import pytest
import sqlalchemy as sa

import ragmetrics as rm
from dashboard.data.workspace import Workspace
from ragmetrics.foundation.provenance import Provenance
from ragmetrics.store.database import LabelConflict, Store, claims_table, labels_table
from ragmetrics.store.provenance import add_judge_labels

QUERIES = [f"q{i}" for i in range(20)]
SAVES = 3
"""The versions each saver of :func:`_race` makes at least (its labeller labels until they are made)."""


def _processes() -> multiprocessing.context.BaseContext:
    """Where the racing processes start: a fork server that imported this module (the store with it) once, so each
    process starts in milliseconds, not after a second of imports (several on a busy machine, the race waiting for
    them), and from no thread of pytest's (a process forked from one with threads can inherit a held lock)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _labeller(
    url: str,
    dataset: str,
    seconds: float,
    given: multiprocessing.Queue,  # type: ignore[type-arg]
    saved_enough: list[multiprocessing.synchronize.Event],
) -> None:
    """Labels for ``seconds`` and until every saver has saved :data:`SAVES` versions (a loaded machine runs it
    longer, not short), within :data:`RACE_CAP`."""
    store = Store(url)
    start, n = time.monotonic(), 0
    while time.monotonic() - start < RACE_CAP and (
        time.monotonic() - start < seconds or not all(event.is_set() for event in saved_enough)
    ):
        store.add_label(dataset, QUERIES[n % len(QUERIES)], f"new{n}", n % 3, author="labeller")
        n += 1
        time.sleep(0.02)
    store.engine.dispose()
    given.put(n)


def _saver(
    url: str,
    dataset: str,
    seconds: float,
    saved: multiprocessing.Queue,  # type: ignore[type-arg]
    enough: multiprocessing.synchronize.Event,
) -> None:
    """Saves about every 0.5 s, for ``seconds`` and until its saves returned :data:`SAVES` versions (then
    ``enough``); puts the versions its saves returned (a save another save overtook, that took every label it read,
    returns that save's version: two savers may both return one)."""
    store = Store(url)
    start, returned = time.monotonic(), []
    while time.monotonic() - start < RACE_CAP and (
        time.monotonic() - start < seconds or len({v for v in returned if v is not None}) < SAVES
    ):
        made = store.commit_labels(dataset, author="saver")
        returned.append(None if made is None else made.version)
        if len({v for v in returned if v is not None}) >= SAVES:
            enough.set()
        time.sleep(0.5)
    enough.set()
    store.engine.dispose()
    saved.put([v for v in returned if v is not None])


def _race(url: str, seconds: float, savers: int = 1) -> None:
    store = Store(url)
    parent_set = rm.Dataset.from_dict({q: {"d0": 2} for q in QUERIES}, name="race")  # grades 0..2
    parent = store.put_dataset(parent_set)
    ctx = _processes()
    given, saved = ctx.Queue(), ctx.Queue()
    enough = [ctx.Event() for _ in range(savers)]
    workers = [ctx.Process(target=_labeller, args=(url, parent, seconds, given, enough))]
    workers += [ctx.Process(target=_saver, args=(url, parent, seconds, saved, event)) for event in enough]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(seconds + RACE_CAP + 30)
        assert worker.exitcode == 0, f"{worker.name} exited with {worker.exitcode}"
    n_given = given.get(timeout=5)
    returned = set().union(*(saved.get(timeout=5) for _ in range(savers)))
    n_saved = len(returned)

    t = labels_table
    family = store.family(parent)  # the saves make a line of versions, each from the one before
    with store.engine.connect() as conn:
        rows = pd.DataFrame(
            conn.execute(
                sa.select(t.c.dataset_id, t.c.query_id, t.c.doc_id, t.c.label, t.c.version).where(
                    t.c.dataset_id.in_(family)
                )
            )
            .mappings()
            .all(),
            columns=["dataset_id", "query_id", "doc_id", "label", "version"],
        )
    # the race did run: each saver's saves made SAVES versions or more while the labeller labelled (a save makes one
    # only of labels given since the last), counted, not paced: a loaded machine runs longer (once, on PostgreSQL
    # beside a long CI run, a 5 s race made 1 version)
    assert len(rows) == n_given and n_saved >= SAVES
    versions = store.versions(family).set_index("id")
    assert set(versions.index) == returned  # each save's version stored, each version returned by a save
    assert versions["parent"].is_unique  # a line: no version made from the same one twice
    names = store.list_datasets().set_index("id")["name"]
    named = {v: int(str(names[v]).rsplit(", v", 1)[1].rstrip(")")) for v in versions.index}
    assert sorted(named.values()) == list(range(1, n_saved + 1)), named  # each save numbered in turn, none twice
    assert versions["number"].to_dict() == named  # the number kept for the dashboard is the one in its name
    lost, counts = [], []
    saved = rows.dropna(subset=["version"])
    triples = {v: set(zip(g["query_id"], g["doc_id"], g["label"].astype(int))) for v, g in saved.groupby("version")}
    for version, wanted in triples.items():
        qrels = store.get_dataset(str(version)).qrels
        added = qrels[qrels["doc_id"] != "d0"]
        kept = set(zip(added["query_id"], added["doc_id"], added["relevance"].astype(int)))
        lost += sorted(wanted - kept)
        line = set().union(*(triples.get(v, set()) for v in store.lineage(str(version))))
        assert kept <= line, (
            f"version {version} holds labels stamped with no version of its line: {sorted(kept - line)[:5]}"
        )
        counts.append((version, int(versions.loc[version, "n_labels"]), len(wanted)))
    assert not lost, f"{len(lost)} of {len(rows)} labels stamped with a version they are not in, e.g. {lost[:5]}"
    assert [(v, n) for v, n, _ in counts] == [(v, n) for v, _, n in counts]  # each version counts its own labels
    pending = store.pending_labels(parent)
    waiting = rows[rows["version"].isna()]
    assert len(pending) == len(waiting) and set(waiting["dataset_id"]) <= {store.pending_place(parent)}  # none hidden
    store.engine.dispose()


def test_labels_given_while_versions_are_saved_are_in_their_version_or_pending(store_url: str) -> None:
    _race(store_url, 6.0)


def test_two_saves_at_once_share_out_the_labels_without_losing_one(store_url: str) -> None:
    _race(store_url, 5.0, savers=2)


@pytest.mark.soak
def test_half_a_minute_of_labelling_and_saving_loses_no_label(store_url: str) -> None:
    _race(store_url, 32.0)


RACE_SAVES, RACE_LABELS, RACE_CAP = 5, 51, 120.0
"""The race below runs until the saver saved this many versions and the judge gave this many labels, each for at
least its seconds (both within the cap): counts, not a pace, so a loaded machine runs it longer, not short."""


def _judge_batches(
    url: str, dataset: str, seconds: float, given: multiprocessing.Queue, done: multiprocessing.synchronize.Event
) -> None:  # type: ignore[type-arg]
    """A judge labelling the pool a batch at a time, always on the dataset it was started on (as a judge job does
    whatever another server saves meanwhile), until the saver is ``done`` and it gave :data:`RACE_LABELS`."""
    store = Store(url)
    provenance = Provenance("rule", "1", "0123456789abcdef", time.time())
    start, n = time.monotonic(), 0
    while time.monotonic() - start < RACE_CAP and (
        time.monotonic() - start < seconds or not done.is_set() or n < RACE_LABELS
    ):
        added, _ = add_judge_labels(store, dataset, [(q, f"j{n}-{q}", n % 2) for q in QUERIES[:5]], provenance)
        n += added
        time.sleep(0.03)
    store.engine.dispose()
    given.put(n)


def _version_saver(
    url: str, dataset: str, seconds: float, saved: multiprocessing.Queue, done: multiprocessing.synchronize.Event
) -> None:  # type: ignore[type-arg]
    """Another server's person: labels a pair on the newest version and saves it, with the judges' labels or
    without them in turn, for ``seconds`` and until it saved :data:`RACE_SAVES` versions; then ``done``."""
    store = Store(url)
    start, n = time.monotonic(), 0
    while time.monotonic() - start < RACE_CAP and (time.monotonic() - start < seconds or n < RACE_SAVES):
        newest = store.pending_place(dataset)
        store.add_label(newest, QUERIES[n % len(QUERIES)], f"p{n}", 1, author="saver")
        n += store.commit_labels(newest, author="saver", judges=n % 2 == 0) is not None
        time.sleep(0.2)
    store.engine.dispose()
    done.set()
    saved.put(n)


def test_a_judges_labels_given_while_another_server_saves_versions_follow_the_newest(store_url: str) -> None:
    """A judge started on a dataset labels on while another server saves versions of it: every label it gives is
    in a version or pending on the lineage's newest version (where the next save takes it), never stranded on a
    dataset a version was made from."""
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({q: {"d0": 1} for q in QUERIES}, name="judged"))
    ctx = _processes()
    given, saved, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    workers = [ctx.Process(target=_judge_batches, args=(store_url, parent, 5.0, given, done)),
               ctx.Process(target=_version_saver, args=(store_url, parent, 5.0, saved, done))]  # fmt: skip
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(180)
        assert worker.exitcode == 0, f"{worker.name} exited with {worker.exitcode}"
    n_given, n_saved = given.get(timeout=5), saved.get(timeout=5)
    t = labels_table
    with store.engine.connect() as conn:
        rows = pd.DataFrame(
            conn.execute(sa.select(t.c.dataset_id, t.c.doc_id, t.c.version).where(t.c.source != "")).mappings().all(),
            columns=["dataset_id", "doc_id", "version"],
        )
    assert len(rows) == n_given >= RACE_LABELS and n_saved >= RACE_SAVES  # the race ran: batches between saves
    newest = store.pending_place(parent)
    pending = rows[rows["version"].isna()]
    stranded = pending[pending["dataset_id"] != newest]
    assert stranded.empty, f"{len(stranded)} judge label(s) pending on a dataset a version was made from"
    store.commit_labels(newest, author="last")  # the last save takes every judge's label not yet in a version
    final = store.get_dataset(store.pending_place(parent)).qrels
    assert set(rows["doc_id"]) <= set(final["doc_id"])
    store.engine.dispose()


def test_a_label_given_since_the_judge_looked_is_refused_and_named(store_url: str) -> None:
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 2}}, name="faq"))  # grades 0..2
    first = store.add_label(parent, "q1", "u1", 1, author="ann", expect=None)
    with pytest.raises(LabelConflict, match=r"u1 for q1 was labelled 1 by ann meanwhile \(not saved yet\)") as err:
        store.add_label(parent, "q1", "u1", 0, author="ben", expect=None)  # ben saw it unlabelled
    assert err.value.existing["id"] == first and err.value.existing["author"] == "ann"
    second = store.add_label(parent, "q1", "u1", 2, author="ann", expect=first)  # ann changes her own label
    assert store.pending_labels(parent)["label"].tolist() == [2]
    version = store.commit_labels(parent, author="ann").version
    # saved: still judged on this dataset (never offered again on it), and named as saved
    assert store.labelled_pairs(parent).values.tolist() == [["q1", "u1"]]
    with pytest.raises(LabelConflict, match=rf"by ann meanwhile \(saved in version {version}\)"):
        store.add_label(parent, "q1", "u1", 0, author="ben", expect=None)
    assert store.latest_label(parent, "q1", "u1")["id"] == second  # type: ignore[index]
    store.add_label(parent, "q1", "u1", 0, author="ben")  # no expectation: kept whatever the pair holds
    assert store.pending_labels(parent)["author"].tolist() == ["ben"]
    # a judge on the new version and one on its parent see each other's labels: one lineage
    with pytest.raises(LabelConflict, match="by ben meanwhile"):
        store.add_label(version, "q1", "u1", 1, author="cy", expect=second)
    store.add_label(version, "q1", "u7", 1, author="cy", expect=None)
    assert sorted(map(tuple, store.labelled_pairs(parent).values.tolist())) == [("q1", "u1"), ("q1", "u7")]
    assert store.claim_pair(parent, [("q1", "u7"), ("q1", "u8")], "tab-d") == ("q1", "u8", False)
    assert store.claim_pair(version, [("q1", "u8"), ("q1", "u9")], "tab-e") == ("q1", "u9", False)
    # a withdrawal names the label it takes back: one given since is kept
    shown = store.add_label(parent, "q1", "u5", 1, author="ann")
    store.add_label(parent, "q1", "u5", 2, author="ben")  # after ann's page showed hers
    with pytest.raises(LabelConflict, match=r"labelled 2 by ben meanwhile .*; it was not withdrawn"):
        store.withdraw_label(parent, "q1", "u5", expect=shown)
    assert store.pending_labels(parent).set_index("doc_id").loc["u5", "label"] == 2
    assert store.withdraw_label(parent, "q1", "u5", expect=shown + 1) == 2  # ben's, as shown: both rows go


def _judge(
    url: str,
    dataset: str,
    holder: str,
    pairs: list[tuple[str, str]],
    start: multiprocessing.synchronize.Barrier,
    out: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    """One judging session: take the next pair no one holds and is not labelled, label it, until none is left (a
    pair another session holds is left to it). Sessions begin together once each has its connection, so a process
    slow to start on a loaded machine still judges side by side with the others."""
    store = Store(url)
    store.labelled_pairs(dataset)
    start.wait(120)
    labelled, conflicts = 0, 0
    while True:
        done = set(store.labelled_pairs(dataset).itertuples(index=False, name=None))
        pair = store.claim_pair(dataset, [p for p in pairs if p not in done], holder)
        if pair is None:
            break
        if pair.shared:  # only pairs another judge is on are left: they label them
            time.sleep(0.02)
            continue
        try:
            store.add_label(dataset, pair[0], pair[1], 1, author=holder, expect=None)
            labelled += 1
        except LabelConflict:
            conflicts += 1
    store.release_claims(dataset, holder)
    store.engine.dispose()
    out.put((holder, labelled, conflicts))


def test_judges_in_several_processes_each_get_other_pairs_and_label_every_one_once(store_url: str) -> None:
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({q: {"d0": 1} for q in QUERIES}, name="claims"))
    pairs = [(q, f"u{i}") for q in QUERIES for i in range(6)]
    ctx = _processes()
    out, start = ctx.Queue(), ctx.Barrier(3)
    judges = [ctx.Process(target=_judge, args=(store_url, parent, f"judge{i}", pairs, start, out)) for i in range(3)]
    for judge in judges:
        judge.start()
    for judge in judges:
        judge.join(180)
        assert judge.exitcode == 0
    results = [out.get(timeout=5) for _ in judges]
    labels = store.pending_labels(parent)
    assert sum(n for _, n, _ in results) == len(pairs) == len(labels)  # every pair labelled, no click lost
    t = labels_table
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.dataset_id == parent)).scalar()
    assert rows == len(pairs)  # each pair labelled once: never offered to two judges at a time
    assert [c for _, _, c in results] == [0, 0, 0]
    assert all(n > 0 for _, n, _ in results)  # they did judge side by side


def test_a_pair_held_by_another_session_is_offered_last_and_marked_shared(store_url: str) -> None:
    store = Store(store_url)
    parent = store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq"))
    pairs = [("q1", "u1"), ("q1", "u2")]
    assert store.claim_pair(parent, pairs, "tab-a") == ("q1", "u1", False)
    assert store.claim_pair(parent, pairs, "tab-a") == ("q1", "u1", False)  # a rerun keeps its pair
    assert store.claim_pair(parent, pairs, "tab-b") == ("q1", "u2", False)
    assert store.claim_pair(parent, pairs, "tab-c") == ("q1", "u1", True)  # every pair held: shown, and said so
    store.add_label(parent, "q1", "u1", 1, author="ann")
    assert store.claim_pair(parent, pairs, "tab-c") == ("q1", "u2", True)  # a labelled pair is never offered
    assert store.claim_pair(parent, pairs, "tab-b", seconds=-1) == ("q1", "u2", False)
    assert store.claim_pair(parent, pairs, "tab-c") == ("q1", "u2", False)  # tab-b's claim lapsed
    assert store.claim_pair(parent, [("q1", "u3")], "tab-d", seconds=-1) == ("q1", "u3", False)
    assert store.renew_claims(parent, "tab-d") == 1  # a tab still open keeps its pair
    assert store.claim_pair(parent, [("q1", "u3")], "tab-e") == ("q1", "u3", True)


def test_a_judging_session_gone_lets_go_of_its_pairs_on_every_dataset(store_url: str) -> None:
    """The dashboard's sweeper releases a session whose browser went (a reload): its pairs on every dataset are
    offered again at once, other sessions keep theirs (:class:`dashboard.data.workspace.ClaimHolders`). The store
    holds the pages' tokens, never the session ids."""
    session = {"id": "session-gone"}
    workspace = Workspace(Store(store_url), user=lambda: session["id"])
    first = workspace.store.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="one"))
    second = workspace.store.put_dataset(rm.Dataset.from_dict({"q2": {"d2": 1}}, name="two"))
    pairs_one, pairs_two = [("q1", "u1"), ("q1", "u2")], [("q2", "v1")]
    assert workspace.claim_pair(first, pairs_one, "tab-gone") == ("q1", "u1", False)
    assert workspace.claim_pair(second, pairs_two, "tab-gone") == ("q2", "v1", False)
    session["id"] = "session-open"
    assert workspace.claim_pair(first, pairs_one, "tab-open") == ("q1", "u2", False)
    assert workspace.claims.users() == {"session-gone", "session-open"} and workspace.claims.while_connected
    with workspace.store.engine.connect() as conn:
        held = {h for (h,) in conn.execute(sa.select(claims_table.c.holder))}
    assert held == {"tab-gone", "tab-open"}  # the tokens, not the session ids
    assert workspace.claims.release("session-gone") == 0
    assert workspace.claims.users() == {"session-open"}
    session["id"] = "session-new"
    assert workspace.claim_pair(first, pairs_one, "tab-new") == ("q1", "u1", False)  # offered again, not shared
    assert workspace.claim_pair(second, pairs_two, "tab-new") == ("q2", "v1", False)
    assert workspace.claim_pair(first, [("q1", "u2")], "tab-other") == ("q1", "u2", True)  # "open" keeps its pair


def test_a_release_the_store_refuses_forgets_the_session_and_the_pair_lapses(database_and_role) -> None:
    """Was: a session whose pairs the store refused to release (its role's DELETE on the claims revoked after it
    claimed) was kept for the next sweep, which was refused again, on every sweep for as long as the server ran.
    Now a refused release forgets the session; its claim lapses on its own."""
    name, owner_url = database_and_role
    owner = Store(owner_url)
    dataset = owner.put_dataset(rm.Dataset.from_dict({"q1": {"d1": 1}}, name="one"))
    with owner.engine.begin() as conn:
        conn.execute(sa.text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}"))
        conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name}"))
    workspace = Workspace(Store(owner_url.replace("postgres@", f"{name}@", 1)), user=lambda: "session-gone")
    assert workspace.claim_pair(dataset, [("q1", "u1")], "tab-gone") == ("q1", "u1", False)
    with owner.engine.begin() as conn:
        conn.execute(sa.text(f"REVOKE DELETE ON label_claims FROM {name}"))
    assert workspace.claims.release("session-gone") == 0
    assert workspace.claims.users() == set()  # not retried on every sweep
    assert workspace.store.refused_changes == {"judge"} and not workspace.read_only
    with owner.engine.connect() as conn:  # still held, until it lapses
        assert [h for (h,) in conn.execute(sa.select(claims_table.c.holder))] == ["tab-gone"]
    assert owner.claim_pair(dataset, [("q1", "u1")], "tab-new") == ("q1", "u1", True)
    owner.engine.dispose()
