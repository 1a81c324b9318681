"""The datasets and runs the dashboard shows, kept in a :class:`ragmetrics.store.database.Store`.

This is the one small interface the pages use to reach data (``datasets``,
``dataset``, ``runs``, ``run``, ``add_dataset``, ``add_run``, plus ``rename_*``
and ``delete_*`` for the Workspace page). Everything lives in the store:
uploads land there, a restart finds them again, and several dashboard
processes pointed at one PostgreSQL store see the same data. Ids are content
hashes (:func:`ragmetrics.store.database.dataset_id`, :func:`ragmetrics.store.database.run_id`),
so the same files give the same ids on any server.

Listings are re-read from the store at most every ``LISTING_TTL`` seconds
(and at once after this process writes, or when an id is asked for that the
last listing did not have), so data another process stored shows up without
a restart. Loaded datasets and runs are kept in an LRU bounded by bytes
(:class:`dashboard.data.bounded.ByteLRU`) by content id: content never changes
under an id, only names do, and entries always carry the current name.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import pandas as pd

from dashboard.data.bounded import ByteLRU, no_user
from dashboard.data.entries import (
    DatasetEntry,
    ResultsEntry,
    RunEntry,
    SavedEntry,
    VersionInfo,
    human_size,
    safe_url,
    utc,
    when,
)
from ragmetrics.analysis.history import StoredRun
from ragmetrics.analysis.per_query import PerQueryResults
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import is_content_id as is_id
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.provenance import Provenance
from ragmetrics.store import database as store_mod
from ragmetrics.store import provenance
from ragmetrics.store.candidates import CandidateStore, Reviewed
from ragmetrics.store.database import ANY_LABEL, Claim, Store, StoreKeyError, StoreWriteRefused
from ragmetrics.synth.build import dataset_of

LISTING_TTL = 1.0
"""Seconds a listing of the store is reused before it is read again."""

__all__ = [
    "LISTING_TTL",
    "SAMPLES_MARKER",
    "DatasetEntry",
    "RunEntry",
    "SavedEntry",
    "VersionInfo",
    "Workspace",
    "human_size",
    "safe_url",
]

SAMPLES_MARKER = {"ragmetrics": "bundled samples seeded", "version": 1}
"""A saved view whose presence says this store already received the bundled samples (deleted samples stay deleted)."""

Stored = TypeVar("Stored", Dataset, Run, PerQueryResults)
"""What the objects cache holds: a dataset, a run or per-query results without a ranking."""


def samples_marker_id() -> str:
    """The store id of :data:`SAMPLES_MARKER`."""
    return store_mod.view_id(SAMPLES_MARKER)


class ClaimHolders:
    """The judging sessions of this process that were given a pair to hold (:meth:`Workspace.claim_pair`), by
    Streamlit session, in the shape the sweeper releases (:class:`dashboard.ui.memory.Held`). ``while_connected``:
    a session whose browser is gone (a reload, a closed tab) on two sweeps in a row lets its pairs go then, not when
    its claims lapse (:data:`ragmetrics.store.database.CLAIM_SECONDS`), so the reloaded page is shown them again; a
    browser back within a sweep (a network blip, which Streamlit reconnects to the same session) keeps them.

    The store holds the page's own token (:func:`dashboard.ui.judging.holder`), never the session id, which would let
    whoever reads the store resume the session."""

    while_connected = True

    def __init__(self, store: Store) -> None:
        self._store = store
        self._holders: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def add(self, session: str | None, holder: str) -> None:
        """``session`` (None outside one: nothing to release) holds its pairs under ``holder``."""
        if session is None:
            return
        with self._lock:
            self._holders.setdefault(session, set()).add(holder)

    def users(self) -> set[str]:
        with self._lock:
            return set(self._holders)

    def release(self, session: str) -> int:
        """Let go of every pair ``session`` holds; 0 bytes (the claims are rows in the store). A store that is busy
        or gone keeps the session for the next sweep to try again; one that refuses the release (its user may no
        longer judge, :data:`ragmetrics.store.database.CHANGES`) forgets it: a retry would be refused on every
        sweep, and the claims lapse on their own (:data:`ragmetrics.store.database.CLAIM_SECONDS`)."""
        with self._lock:
            holders = set(self._holders.get(session, ()))
        try:
            for holder in holders:
                self._store.release_claims(None, holder)
        except StoreWriteRefused:
            pass
        except Exception:  # the store is busy or gone: the claims lapse on their own, the next sweep retries
            return 0
        with self._lock:
            left = self._holders.get(session, set()) - holders
            if left:
                self._holders[session] = left
            else:
                self._holders.pop(session, None)
        return 0


class Workspace:
    """Datasets and, per dataset, runs, in ``store``; adding the same content twice returns the existing entry.

    Without a store it uses a private in-memory SQLite database (for tests and
    scripts; the dashboard always passes the process's store). Loaded objects are
    kept within ``cache_bytes``; ``user()`` names the session asking (see
    :meth:`ByteLRU.release`).
    """

    while_connected = False

    def __init__(
        self, store: Store | None = None, *, cache_bytes: int = 512 << 20, user: Callable[[], str | None] = no_user
    ) -> None:
        self.store = store if store is not None else Store("sqlite://")
        self.candidates = CandidateStore(self.store)
        """Generated candidate queries and their review (the Build dataset page)."""
        self._lock = threading.RLock()
        self.objects: ByteLRU[str, Dataset | Run | PerQueryResults] = ByteLRU(cache_bytes, user=user)
        self._user = user
        self.claims = ClaimHolders(self.store)
        """The judging sessions holding pairs, for the sweeper to release when their browser goes."""
        self._entries: dict[tuple[str, ...], DatasetEntry | RunEntry] = {}
        self._datasets_at = -1.0
        self._datasets: list[DatasetEntry] = []
        self._runs_at: dict[str, float] = {}
        self._runs: dict[str, list[RunEntry]] = {}
        self._families: dict[str, list[str]] = {}  # read with the datasets' listing, forgotten with it
        self._samples: Callable[[], Any] | None = None
        self._seeding = False
        self.seed_note: str | None = None
        """What :meth:`seed` stored of the bundled samples and what it was refused, when a write was refused
        part-way (every page says it); None otherwise."""

    @property
    def read_only(self) -> bool:
        """Whether the store's database user may not write to it (:attr:`ragmetrics.store.database.Store.read_only`:
        known at its open, or from the first write it refused): every page reads it here."""
        return self.store.read_only

    def refuses(self, change: str) -> bool:
        """Whether the store will refuse ``change``, one of :data:`ragmetrics.store.database.CHANGES` ("rename",
        "delete", "edit tags", ...): on a read-only store, or one whose database user may add data but not make
        that change (:attr:`ragmetrics.store.database.Store.refused_changes`)."""
        return self.read_only or change in self.store.refused_changes

    def refused_changes(self) -> list[str]:
        """The changes the store refuses while it takes uploads, in :data:`ragmetrics.store.database.CHANGES`'s
        order (none on a read-only store, which refuses every write)."""
        return [] if self.read_only else [c for c in store_mod.CHANGES if c in self.store.refused_changes]

    # --- listings ----------------------------------------------------------------------

    def refresh(self) -> None:
        """Forget the listings, so the next call reads the store (another process may have written). While the store
        is read-only or refuses a change, its user's privileges are read again (:meth:`Store.recheck_writes`): one
        granted since shows on the next page opened."""
        with self._lock:
            self._datasets_at = -1.0
            self._runs_at.clear()
            self._families.clear()
        if self._seeding:
            return
        if self.read_only or self.store.refused_changes:
            self.store.recheck_writes()
        if self.seed_note is not None:
            self._seed_again()

    def datasets(self) -> list[DatasetEntry]:
        """Stored datasets, oldest first (so the bundled samples, seeded first, lead)."""
        with self._lock:
            if time.monotonic() - self._datasets_at > LISTING_TTL:
                table = self.store.list_datasets().sort_values(["created_at", "name"], kind="stable")
                self._families.clear()
                versions = self._versions(table["id"].tolist())
                parents = {v.parent for v in versions.values()}
                self._datasets = [
                    self._dataset_entry(row, versions.get(row.id), row.id in parents)
                    for row in table.itertuples(index=False)
                ]
                self._datasets_at = time.monotonic()
            return list(self._datasets)

    def dataset(self, ident: str | None) -> DatasetEntry | None:
        if not ident:
            return None
        for refresh in (False, True):
            if refresh:
                self.refresh()
            for entry in self.datasets():
                if entry.id == ident:
                    return entry
        return None

    def runs(self, dataset_ident: str | None) -> list[RunEntry]:
        """Runs stored for a dataset, in the order they were added to it."""
        if not dataset_ident or not is_id(dataset_ident):
            return []
        with self._lock:
            if time.monotonic() - self._runs_at.get(dataset_ident, -1e9) > LISTING_TTL:
                table = self.store.list_runs(dataset_ident)
                self._runs[dataset_ident] = [
                    self._run_entry(dataset_ident, row) for row in table.itertuples(index=False)
                ]
                self._runs_at[dataset_ident] = time.monotonic()
            return list(self._runs.get(dataset_ident, []))

    def run(self, dataset_ident: str, ident: str) -> RunEntry | None:
        for refresh in (False, True):
            if refresh:
                with self._lock:
                    self._runs_at.pop(dataset_ident, None)
            for entry in self.runs(dataset_ident):
                if entry.id == ident:
                    return entry
        return None

    def _versions(self, ids: list[str]) -> dict[str, VersionInfo]:
        """The qrels versions among the stored datasets ``ids``: ``{version id: VersionInfo}``."""
        return {
            str(row.id): VersionInfo(
                str(row.parent), str(row.author), utc(row.created_at), int(row.n_labels), int(row.number)
            )
            for row in self.store.versions_among(ids).itertuples(index=False)
        }

    def _dataset_entry(self, row: Any, version: VersionInfo | None = None, has_versions: bool = False) -> DatasetEntry:
        key = ("dataset", row.id)
        entry = self._entries.get(key)
        added = utc(row.created_at)
        if not (
            isinstance(entry, DatasetEntry)
            and entry.name == row.name
            and entry.added == added
            and entry.version == version
            and entry.has_versions == has_versions
            and entry.targets == str(row.targets or "")
        ):
            entry = DatasetEntry(
                row.id,
                row.name,
                None,
                row.source,
                row.description,
                added,
                n_queries=int(row.n_queries),
                n_judgments=int(row.n_judgments),
                size_bytes=int(row.size_bytes),
                loader=self._load_dataset,
                version=version,
                has_versions=has_versions,
                targets=str(row.targets or ""),
            )
            self._entries[key] = entry
        return entry

    def _run_entry(self, dataset_ident: str, row: Any) -> RunEntry:
        key = ("run", dataset_ident, row.id)
        entry = self._entries.get(key)
        added = utc(row.created_at)
        if not (isinstance(entry, RunEntry) and entry.name == row.name and entry.added == added):
            entry = RunEntry(
                row.id,
                row.name,
                None,
                dataset_ident,
                row.source,
                added,
                n_queries=int(row.n_queries),
                n_rows=int(row.n_rows),
                size_bytes=int(row.size_bytes),
                loader=self._load_run,
            )
            self._entries[key] = entry
        return entry

    # --- content -----------------------------------------------------------------------

    def _cached(self, key: str, load: Callable[[], Stored]) -> Stored:
        found: Any = self.objects.get_or_make(key, load)  # a big run loads outside the listings' lock
        return cast(Stored, found)

    def _remember(self, key: str, value: Dataset | Run) -> None:
        self.objects.put(key, value)

    def release(self, session: str) -> int:
        """A session ended: drop the loaded objects no other session used; the bytes dropped."""
        return self.objects.release(session)

    # a renamed object is remembered in place of the old one: every caller then gets the same object (one
    # copy in memory), whatever the name it was first loaded under
    def _load_dataset(self, ident: str, name: str) -> Dataset:
        dataset = self._cached("dataset:" + ident, lambda: self.store.get_dataset(ident))
        assert isinstance(dataset, Dataset)
        if dataset.name != name:
            dataset = dataclasses.replace(dataset, name=name)
            self._remember("dataset:" + ident, dataset)
        return dataset

    def _load_run(self, ident: str, name: str) -> Run:
        run = self._cached("run:" + ident, lambda: self.store.get_run(ident))
        assert isinstance(run, Run)
        if run.name != name:
            run = run.with_name(name)
            self._remember("run:" + ident, run)
        return run

    # --- writes ------------------------------------------------------------------------

    def content_id(self, dataset: Dataset) -> str:
        """The id ``dataset`` is stored under (its content's; :meth:`dataset` of it is the stored copy, if any)."""
        return store_mod.dataset_id(dataset)

    def add_dataset(
        self,
        dataset: Dataset,
        *,
        name: str | None = None,
        source: str = "",
        description: str = "",
        targets: str = "",
        ident: str | None = None,
    ) -> DatasetEntry:
        """Store ``dataset`` (once per content); a name already taken by other content gets a suffix. ``targets``:
        the targets it declares (:func:`ragmetrics.analysis.targets.declared_targets`), shown until a view picks others.
        ``ident``: its :meth:`content_id`, when the caller has it (the content is hashed once)."""
        ident = ident or store_mod.dataset_id(dataset)
        existing = self.dataset(ident)
        if existing is not None:
            return existing
        unique = _unique(name or dataset.name, {e.name for e in self.datasets()})
        stored = dataset if unique == dataset.name else dataclasses.replace(dataset, name=unique)
        self.store.put_dataset(stored, ident=ident, source=source, description=description, targets=targets)
        self._remember("dataset:" + ident, stored)
        self.refresh()
        entry = self.dataset(ident)
        assert entry is not None
        return entry

    def add_run(
        self,
        dataset_ident: str,
        run: Run,
        *,
        source: str = "",
        admit: Callable[[Run], object] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> RunEntry:
        """Store ``run`` under a dataset (once per content); a name already taken by other content gets a suffix.
        ``tags``: its metadata (set on a stored copy too).

        ``admit(run)`` (say, the alignment the next page needs, which may find the run is for another dataset)
        runs on another thread while the rows are prepared, given the run object the workspace will hand out;
        what it raises is raised here and nothing is stored."""
        if self.dataset(dataset_ident) is None:
            raise StoreKeyError(f"no dataset {dataset_ident!r} in the workspace")
        name = _unique(run.name, {e.name for e in self.runs(dataset_ident)})
        renamed = run if name == run.name else run.with_name(name)  # the object handed out, hashed and aligned
        # the rows are written to Parquet while they are hashed and aligned (the hash and the alignment share
        # the ids' fingerprints): on two cores this keeps both busy, which one after the other did not
        pool = ThreadPoolExecutor(2)
        try:
            rows = pool.submit(store_mod.frame_parquet, renamed.frame)
            admitted = pool.submit(admit, renamed) if admit is not None else None
            ident = store_mod.run_id(renamed)
            existing = self.run(dataset_ident, ident)
            if existing is not None:  # stored before (under its first name): admitted then
                rows.cancel()
                if tags:
                    self.set_tags(ident, tags)
                return existing
            if admitted is not None:
                admitted.result()
            self.store.put_run(renamed, dataset_ident, ident=ident, rows=rows.result(), source=source, tags=tags)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        self._remember("run:" + ident, renamed)  # the object ``admit`` was given: the pages need not read it back
        self.refresh()
        entry = self.run(dataset_ident, ident)
        assert entry is not None
        return entry

    def results(self, dataset_ident: str | None) -> list[ResultsEntry]:
        """Per-query results stored on a dataset without their rankings (``ragmetrics push --per-query``)."""
        if not dataset_ident or not is_id(dataset_ident):
            return []
        return [
            ResultsEntry(
                row.id,
                row.name,
                tuple(str(row.metrics).split(",")),
                int(row.n_queries),
                row.source,
                utc(row.created_at),
                self._load_results,
            )
            for row in self.store.list_results(dataset_ident).itertuples(index=False)
        ]

    def results_table(self, dataset_ident: str) -> pd.DataFrame:
        """``name, id, metrics, queries, added, source`` per stored results of a dataset."""
        rows = [
            {"name": r.name, "id": r.id, "metrics": ", ".join(r.metrics), "queries": r.n_queries,
             "added": when(r.added), "source": r.source}
            for r in self.results(dataset_ident)
        ]  # fmt: skip
        return pd.DataFrame(rows, columns=["name", "id", "metrics", "queries", "added", "source"])

    def _load_results(self, ident: str) -> PerQueryResults:
        loaded = self.objects.get_or_make("results:" + ident, lambda: self.store.get_results(ident))
        assert isinstance(loaded, PerQueryResults)
        return loaded

    def delete_results(self, ident: str) -> None:
        self.store.delete_results(ident)
        self.objects.pop("results:" + ident)

    def stored_run(self, dataset_ident: str, run: Run) -> RunEntry | None:
        """The stored run of this dataset with ``run``'s content (whatever its name), or None."""
        return self.run(dataset_ident, store_mod.run_id(run))

    def rename_dataset(self, ident: str, name: str) -> DatasetEntry:
        """Rename a stored dataset; the name must be new among the stored datasets."""
        name = name.strip()
        if any(e.name == name and e.id != ident for e in self.datasets()):
            raise RagMetricsError(f"another dataset is already called {name!r}")
        self.store.rename_dataset(ident, name)
        self.refresh()
        entry = self.dataset(ident)
        assert entry is not None
        return entry

    def rename_run(self, dataset_ident: str, ident: str, name: str) -> RunEntry:
        """Rename a stored run; the name must be new among the dataset's runs."""
        name = name.strip()
        if any(e.name == name and e.id != ident for e in self.runs(dataset_ident)):
            raise RagMetricsError(f"another run of this dataset is already called {name!r}")
        self.store.rename_run(ident, name)
        self.refresh()
        entry = self.run(dataset_ident, ident)
        assert entry is not None
        return entry

    def shared_runs(self, dataset_ident: str) -> set[str]:
        """Ids of this dataset's runs that another stored dataset uses too."""
        mine = {r.id for r in self.runs(dataset_ident)}
        others: set[str] = set()
        for entry in self.datasets():
            if entry.id != dataset_ident:
                others |= {r.id for r in self.runs(entry.id)}
        return mine & others

    def delete_dataset(self, ident: str) -> tuple[int, int]:
        """Delete a dataset and those of its runs no other dataset uses; returns how many runs and how many unsaved
        labels went with it (:meth:`ragmetrics.store.database.Store.delete_dataset`: a version's move to its
        parent's line)."""
        shared = self.shared_runs(ident)
        doomed = [r.id for r in self.runs(ident) if r.id not in shared]
        labels = self.store.delete_dataset(ident)
        for run in doomed:
            self.store.delete_run(run)
        self._forget(ident, doomed)
        return len(doomed), labels

    def delete_run(self, ident: str) -> None:
        """Delete a run from the store (from every dataset that uses it)."""
        self.store.delete_run(ident)
        self._forget(None, [ident])

    def _forget(self, dataset_ident: str | None, runs: list[str]) -> None:
        with self._lock:
            gone = {dataset_ident, *runs}
            for key in [k for k in self._entries if k[-1] in gone]:
                del self._entries[key]
            self.objects.drop(lambda key: key.split(":", 1)[1] not in gone)
        self.refresh()

    # --- run metadata ----------------------------------------------------------------

    def tags(self, run_ident: str) -> dict[str, str]:
        """A stored run's metadata tags (:mod:`ragmetrics.io.runmeta`)."""
        return self.store.tags(run_ident)

    def tags_of(self, dataset_ident: str) -> dict[str, dict[str, str]]:
        """The tags of every run of a dataset: ``{run id: {key: value}}``."""
        runs = [r.id for r in self.runs(dataset_ident)]
        return self.store.tags_of(runs) if runs else {}

    def set_tags(self, run_ident: str, tags: Mapping[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set (None removes; ``replace``: keep only ``tags``) a run's tags; returns them after."""
        return self.store.set_tags(run_ident, tags, replace=replace)

    def stored_runs(self, dataset_ident: str) -> list[StoredRun]:
        """The dataset's runs with their tags, for :mod:`ragmetrics.analysis.history` (rows loaded through this workspace)."""
        tags = self.tags_of(dataset_ident)
        return [
            StoredRun(r.id, r.name, r.added.timestamp(), tags.get(r.id, {}), _load_of(r))
            for r in self.runs(dataset_ident)
        ]

    def leaf_datasets(self) -> list[DatasetEntry]:
        """The datasets no qrels version was made from (each lineage's newest judgments), oldest first."""
        return [d for d in self.datasets() if not d.has_versions]

    # --- judgments and qrels versions ---------------------------------------------------

    def add_label(
        self,
        dataset_ident: str,
        query_id: str,
        doc_id: str,
        label: int,
        *,
        author: str,
        kind: str = "judgment",
        expect: int | object | None = ANY_LABEL,
        accepted: str | None = None,
    ) -> int:
        """Keep one label at once (:meth:`ragmetrics.store.database.Store.add_label`): pending on the dataset until saved;
        ``expect``: the pair's latest judgment the judge saw (refused with :class:`LabelConflict` when another was
        given since); ``accepted``: the suggestion it accepts, kept with it. Returns its row id."""
        return self.store.add_label(dataset_ident, query_id, doc_id, int(label), author=author, kind=kind,
                                    expect=expect, accepted=accepted)  # fmt: skip

    def labelled_pairs(self, dataset_ident: str) -> pd.DataFrame:
        """The pairs judged by a label on the dataset, pending or saved: ``query_id, doc_id``."""
        return self.store.labelled_pairs(dataset_ident)

    def claim_pair(self, dataset_ident: str, candidates: Sequence[tuple[str, str]], holder: str) -> Claim | None:
        """The pair to show a judging session next, held for it (:meth:`ragmetrics.store.database.Store.claim_pair`)."""
        self.claims.add(self._user(), holder)
        return self.store.claim_pair(dataset_ident, candidates, holder)

    def renew_claims(self, dataset_ident: str, holder: str) -> int:
        """Hold the session's pair longer (:meth:`ragmetrics.store.database.Store.renew_claims`)."""
        return self.store.renew_claims(dataset_ident, holder)

    def pending_labels(self, dataset_ident: str, *, kind: str = "judgment", judges: bool = True) -> pd.DataFrame:
        """The labels given on the dataset and not saved in a version yet (the one per pair a version takes):
        ``query_id, doc_id, label, author, created_at, id``; ``judges=False``: people's only."""
        return self.store.pending_labels(dataset_ident, kind=kind, judges=judges)

    def pending_place(self, dataset_ident: str) -> str:
        """Where the labels given on the dataset are pending and saved from: the dataset, or the newest qrels
        version made from it (:meth:`ragmetrics.store.database.Store.pending_place`)."""
        return self.store.pending_place(dataset_ident)

    def withdraw_label(
        self, dataset_ident: str, query_id: str, doc_id: str, *, expect: int | object | None = ANY_LABEL
    ) -> int:
        """Take back a pending label (:meth:`ragmetrics.store.database.Store.withdraw_label`; ``expect``: the label seen)."""
        return self.store.withdraw_label(dataset_ident, query_id, doc_id, expect=expect)

    def lineage_labels(self, dataset_ident: str) -> pd.DataFrame:
        """Every judgment on the dataset's lineage, a person's or a judge's, pending or saved
        (:func:`ragmetrics.store.provenance.lineage_labels`)."""
        return provenance.lineage_labels(self.store, dataset_ident)

    def add_judge_labels(
        self,
        dataset_ident: str,
        labels: Sequence[tuple[str, str, int]],
        source: Provenance,
        *,
        author: str | None = None,
    ) -> tuple[int, int]:
        """Keep a judge's labels with their provenance, never over a person's
        (:func:`ragmetrics.store.provenance.add_judge_labels`; ``author`` by default the judge's source text):
        ``(added, skipped)``."""
        return provenance.add_judge_labels(self.store, dataset_ident, labels, source, author=author)

    def commit_labels(self, dataset_ident: str, *, author: str, judges: bool = True) -> SavedEntry | None:
        """Save the pending labels as a new qrels version (a new dataset with the parent's runs): the version that
        holds them and whether this call made it (:class:`SavedEntry`, its id kept when another tab or server
        deleted it before the listing was read again); None when no label is pending.
        ``judges=False``: people's labels only (the judges' stay pending, beside the lineage)."""
        saved = self.store.commit_labels(dataset_ident, author=author, judges=judges)
        if saved is None:
            return None
        self.refresh()
        return SavedEntry(self.dataset(saved.version), saved.made, saved.version)

    def family(self, dataset_ident: str) -> list[DatasetEntry]:
        """The qrels versions of one lineage (:meth:`ragmetrics.store.database.Store.family`) that are stored, oldest
        first: the original judgments the dataset descends from (unless deleted) and every version made from it or
        from its versions (the dataset alone when it has none). Read with the datasets' listing: kept as long as it
        is, and forgotten by :meth:`refresh` and every write through the workspace."""
        if not is_id(dataset_ident):
            return []
        with self._lock:
            datasets = self.datasets()  # first: a listing read again forgets the families read with the last
            members = self._families.get(dataset_ident)
            if members is None:
                members = self._families[dataset_ident] = self.store.family(dataset_ident)
        original, wanted = members[0], set(members)
        listed = [e for e in datasets if e.id in wanted]  # oldest first: a parent before its versions
        return sorted(listed, key=lambda e: e.id != original)  # the original first (stable: the rest in order)

    def version_sources(self, version: str) -> tuple[int, int]:
        """How many of the labels saved in the qrels version ``version`` are people's and how many a judge's
        (:func:`ragmetrics.store.provenance.version_sources`)."""
        return self.versions_sources([version]).get(version, (0, 0))

    def versions_sources(self, versions: Sequence[str]) -> dict[str, tuple[int, int]]:
        """:meth:`version_sources` of each of ``versions`` (one read of the store); a version without labels
        is left out."""
        counts = provenance.sources_by_version(self.store, versions)
        human = counts["source"] == "human"
        people = counts[human].groupby("version")["labels"].sum()
        everyone = counts.groupby("version")["labels"].sum()
        return {str(v): (int(people.get(v, 0)), int(n) - int(people.get(v, 0))) for v, n in everyone.items()}

    def version_table(self, dataset_ident: str) -> pd.DataFrame:
        """``version, name, id, parent, author, saved, labels, people's, judges', judgments`` of each qrels version
        of the dataset's lineage (:meth:`family`), oldest first: ``labels`` the version added, of which ``people's``
        and ``judges'`` (a judge's label is a judgment of the version, never read as a person's)."""
        family = self.family(dataset_ident)
        names = {e.id: e.name for e in family}
        sources = self.versions_sources([e.id for e in family if e.version is not None])
        rows = []
        for e in family:
            people, judges = sources.get(e.id, (0, 0))
            rows.append(
                {
                    "version": f"v{e.version.number}" if e.version else "v0 (original)",
                    "name": e.name,
                    "id": e.id,
                    "parent": "" if e.version is None else names.get(e.version.parent, e.version.parent),
                    "author": "" if e.version is None else e.version.author,
                    "saved": when(e.version.created if e.version else e.added),
                    "labels": 0 if e.version is None else e.version.n_labels,
                    "people's": people,
                    "judges'": judges,
                    "judgments": e.n_judgments,
                }
            )
        columns = ["version", "name", "id", "parent", "author", "saved", "labels", "people's", "judges'", "judgments"]
        return pd.DataFrame(rows, columns=columns)

    # --- datasets built from generated candidates --------------------------------------

    def make_dataset(self, batch: str, kept: Sequence[Reviewed], *, name: str, author: str) -> DatasetEntry:
        """Store the kept candidates of ``batch`` as a dataset (with its parent's corpus), and record in the batch
        that it made it; the same kept candidates make the same dataset (one copy)."""
        found = self.candidates.batch(batch)
        parent = self.dataset(found.parent)
        if parent is None:
            raise StoreKeyError(f"dataset {found.parent}, the batch's corpus, is not in this store any more")
        made = dataset_of(kept, parent.dataset, name=name, batch=batch)
        entry = self.add_dataset(made, name=name, source=f"built from batch {batch} of {parent.name}")
        self.candidates.mark_made(batch, entry.id, author=author)
        return entry

    # --- samples -----------------------------------------------------------------------

    def seed(self, samples: Callable[[], Any]) -> bool:
        """Store the bundled samples once per store (idempotent, and safe when two processes start together).

        ``samples`` yields objects with ``dataset``, ``name``, ``source``,
        ``description`` and ``runs`` (pairs of run and source). A marker view
        records that the store got them, so samples a team deleted stay deleted.
        Returns True when it seeded. A store whose database user may not write to it (a read-only file, a role
        that may only read: :attr:`read_only`) is left as it is: the dashboard opens on what it holds. A write
        refused part-way leaves what was stored before it, without the marker (a later seeding stores the rest), and
        :attr:`seed_note` says what was stored, what was refused and why, until the samples are all stored:
        :meth:`refresh` tries again while it is set, once the store's user may write to it.
        """
        self._samples = samples
        if self.store.has_view(samples_marker_id()):
            self.seed_note = None  # stored since (the rest by this process, or by another)
            return False
        if self.read_only:
            return False
        self._seeding = True
        try:
            seeded = self._seed(samples)
        finally:
            self._seeding = False
        if seeded:
            self.seed_note = None
        return seeded

    def _seed(self, samples: Callable[[], Any]) -> bool:
        stored: list[str] = []
        writing = "the marker that the samples were stored"
        try:
            for sample in samples():
                writing = f"sample dataset {sample.name!r}"
                entry = self.add_dataset(
                    sample.dataset,
                    name=sample.name,
                    source=sample.source,
                    description=sample.description,
                    targets=getattr(sample, "targets", ""),
                )
                stored.append(writing)
                for run, source in sample.runs:
                    writing = f"run {run.name!r} of {sample.name!r}"
                    self.add_run(entry.id, run, source=source)
                    stored.append(writing)
            writing = "the marker that the samples were stored"
            self.store.put_view(SAMPLES_MARKER)
        except StoreWriteRefused as err:  # a refused datasets write also marks the store read_only
            if stored or not self.read_only:  # else the read-only empty store's notice says it
                done = ", ".join(stored) if stored else "nothing"
                self.seed_note = (
                    f"The sample data was stored in part: stored {done}; then {writing} was refused, and nothing "
                    f"after it was tried. {err}. Once the database user may write to it, the next page opened "
                    "stores the rest."
                )
            return False
        return True

    def _seed_again(self) -> None:
        """After a seeding refused part-way: the note goes when the samples are stored now (by another process),
        else the seeding is tried again if the store's user may write to it now (:meth:`refresh` read it again)."""
        if self._samples is not None and (self.store.has_view(samples_marker_id()) or not self.read_only):
            self.seed(self._samples)

    # --- tables for the Workspace page -------------------------------------------------

    def dataset_table(self) -> pd.DataFrame:
        """``name, id, queries, judgments, runs, size, added, source, description`` per stored dataset (oldest first);
        ``source`` is the file(s) it was first read from."""
        rows = [
            {
                "name": d.name,
                "id": d.id,
                "queries": d.n_queries,
                "judgments": d.n_judgments,
                "runs": len(self.runs(d.id)),
                "size": human_size(d.size_bytes),
                "added": when(d.added),
                "source": d.source,
                "description": d.description,
            }
            for d in self.datasets()
        ]
        columns = ["name", "id", "queries", "judgments", "runs", "size", "added", "source", "description"]
        return pd.DataFrame(rows, columns=columns)

    def run_table(self, dataset_ident: str | None) -> pd.DataFrame:
        """``name, id, queries, rows, size, added, source`` per run of a dataset (in the order they were added)."""
        rows = [
            {
                "name": r.name,
                "id": r.id,
                "queries": r.n_queries,
                "rows": r.n_rows,
                "size": human_size(r.size_bytes),
                "added": when(r.added),
                "source": r.source,
            }
            for r in self.runs(dataset_ident)
        ]
        return pd.DataFrame(rows, columns=["name", "id", "queries", "rows", "size", "added", "source"])

    def describe_store(self) -> str:
        """Where the data lives, fit to show: the SQLite file, or the database URL with its password hidden."""
        if self.store.kind == "sqlite":
            path = self.store.url.split(":///", 1)[-1] if ":///" in self.store.url else "(in memory)"
            return f"SQLite file {path}"
        kind = {"postgresql": "PostgreSQL"}.get(self.store.kind, self.store.kind)
        return f"{kind} at {safe_url(self.store.url)}"


def _load_of(entry: RunEntry) -> Callable[[], Run]:
    return lambda: entry.run


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name} ({i})" in taken:
        i += 1
    return f"{name} ({i})"
