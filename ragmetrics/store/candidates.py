"""Generated candidate queries and their review, kept in the store as they happen (:class:`CandidateStore`).

A *batch* is one generation from a stored dataset's corpus (its ``parent``): the generator, its settings and how
many candidates were asked. Each candidate is stored the moment it is generated, under its position in the
generator's order (a crash keeps those written; a resumed batch writes only the positions missing, the generators
being deterministic for a seed). Each review decision (``accepted``, ``edited`` with the edited record, or
``rejected``) is a row of its own with its reviewer and time, stored at once: a reload, a second tab or a restarted
server loses none, and a candidate's latest decision counts.

A candidate is a JSON record (``query_id, query, expected_answer, expected_keywords, relevant_docs, category,
difficulty, provenance, flags`` and its ``source``); the store keeps it as given and knows nothing of how it was
made. When the accepted candidates become a dataset (:meth:`CandidateStore.mark_made`), the batch records that
dataset's id: the dataset's parent is the batch's. This is not a qrels version (:meth:`Store.commit_labels`): its
queries are new, not its parent's with more judgments, so the parent stays a dataset of its own in every list.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.store.database import (
    CHANGE_OPTION,
    MAX_NAME_BYTES,
    Store,
    StoreKeyError,
    check_id,
    checked_text,
    synth_batches_table,
    synth_candidates_table,
    synth_reviews_table,
)

DECISIONS = ("accepted", "edited", "rejected")
"""What a reviewer decides about a candidate; ``edited`` carries the record as edited (and is kept)."""
STATUSES = ("generating", "stopped", "complete")


@dataclass(frozen=True)
class Batch:
    id: str
    parent: str
    generator: str
    settings: dict[str, Any]
    requested: int
    author: str
    created_at: float
    status: str
    stored: int
    dataset_id: str | None
    made_at: float | None
    made_by: str | None


@dataclass(frozen=True)
class Reviewed:
    """One candidate with its latest decision (``decision`` None: not reviewed yet). ``final`` is the record that
    goes into a dataset: the edited one when it was edited."""

    position: int
    record: dict[str, Any]
    decision: str | None = None
    edited: dict[str, Any] | None = None
    reviewer: str | None = None
    reviewed_at: float | None = None

    @property
    def final(self) -> dict[str, Any]:
        return self.edited if self.edited is not None else self.record

    @property
    def kept(self) -> bool:
        return self.decision in ("accepted", "edited")


class CandidateStore:
    """Batches, candidates and reviews in ``store`` (SQLite or PostgreSQL; each write one transaction)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.engine = store.engine

    # --- batches -------------------------------------------------------------------------

    def new_batch(
        self, parent: str, generator: str, settings: Mapping[str, Any], requested: int, *, author: str = "anonymous"
    ) -> str:
        """Start a batch of ``requested`` candidates from dataset ``parent``'s corpus; returns its id."""
        check_id(parent, "dataset")
        self.store.require_table(synth_batches_table, "a batch of generated candidates")
        if not self.store.has_dataset(parent):
            raise StoreKeyError(f"dataset {parent} is not in this store")
        if requested < 1:
            raise RagMetricsError(f"a batch asks for at least one candidate; got {requested}")
        ident = secrets.token_hex(8)
        with self.engine.begin() as conn:
            conn.execute(
                sa.insert(synth_batches_table).values(
                    id=ident,
                    parent=parent,
                    generator=checked_text(generator, "a generator name", MAX_NAME_BYTES),
                    settings=json.dumps(dict(settings), sort_keys=True, ensure_ascii=False),
                    requested=int(requested),
                    author=checked_text(author or "anonymous", "an author", MAX_NAME_BYTES),
                    created_at=time.time(),
                    status="generating",
                )
            )
        return ident

    def set_status(self, batch: str, status: str) -> None:
        if status not in STATUSES:
            raise RagMetricsError(f"batch status {status!r}: expected one of {', '.join(STATUSES)}")
        t = synth_batches_table
        self.store.require_table(t, f"batch {batch}'s status")
        with self.engine.begin() as conn:
            conn.execution_options(**{CHANGE_OPTION: "build datasets"})
            conn.execute(sa.update(t).where(t.c.id == check_id(batch, "batch")).values(status=status))

    def batches(self, parent: str | None = None, *, ident: str | None = None) -> list[Batch]:
        """The batches (of ``parent``, or the one ``ident``, when given), newest first, with how many candidates each
        has stored."""
        t, c = synth_batches_table, synth_candidates_table
        if not self.store.has_table(t):
            return []
        stored = (
            sa.select(c.c.batch_id, sa.func.count().label("stored")).group_by(c.c.batch_id).subquery("stored_counts")
        )
        query = sa.select(t, sa.func.coalesce(stored.c.stored, 0).label("stored")).outerjoin(
            stored, stored.c.batch_id == t.c.id
        )
        if parent is not None:
            query = query.where(t.c.parent == check_id(parent, "dataset"))
        if ident is not None:
            query = query.where(t.c.id == check_id(ident, "batch"))
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(t.c.created_at.desc(), t.c.id)).mappings().all()
        return [_batch(dict(row)) for row in rows]

    def batch(self, ident: str) -> Batch:
        found = self.batches(ident=ident)
        if not found:
            raise StoreKeyError(f"batch {ident} is not in this store")
        return found[0]

    def made_from(self, dataset: str) -> Batch | None:
        """The batch whose accepted candidates made ``dataset`` (None: it was not made from one)."""
        t = synth_batches_table
        if not self.store.has_table(t):
            return None
        with self.engine.connect() as conn:
            ident = conn.execute(
                sa.select(t.c.id).where(t.c.dataset_id == check_id(dataset, "dataset")).order_by(t.c.made_at)
            ).scalar()
        return None if ident is None else self.batch(ident)

    # --- candidates ----------------------------------------------------------------------

    def add_candidate(self, batch: str, position: int, record: Mapping[str, Any]) -> bool:
        """Store the candidate at ``position`` (from 1) of ``batch``; False when that position was stored already
        (a resumed batch regenerates it: the first copy stays)."""
        if position < 1:
            raise RagMetricsError(f"a candidate's position counts from 1; got {position}")
        self.store.require_table(synth_candidates_table, f"a candidate of batch {batch}")
        text = json.dumps(dict(record), ensure_ascii=False)
        with self.engine.begin() as conn:
            done = conn.execute(
                self.store._insert(synth_candidates_table)
                .values(batch_id=check_id(batch, "batch"), position=int(position), record=text, created_at=time.time())
                .on_conflict_do_nothing(index_elements=["batch_id", "position"])
            )
        return bool(done.rowcount)

    def set_flags(self, batch: str, flags: Mapping[int, Iterable[str]]) -> None:
        """Replace the review flags of the candidates at the positions given (the filters see the whole batch, so
        they run once it is generated)."""
        t = synth_candidates_table
        check_id(batch, "batch")
        self.store.require_table(t, f"the flags of batch {batch}'s candidates")
        with self.engine.begin() as conn:
            conn.execution_options(**{CHANGE_OPTION: "build datasets"})
            for position, found in flags.items():
                row = conn.execute(
                    sa.select(t.c.record).where((t.c.batch_id == batch) & (t.c.position == int(position)))
                ).scalar()
                if row is None:
                    continue
                record = json.loads(row)
                record["flags"] = list(found)
                conn.execute(
                    sa.update(t)
                    .where((t.c.batch_id == batch) & (t.c.position == int(position)))
                    .values(record=json.dumps(record, ensure_ascii=False))
                )

    def stored_positions(self, batch: str) -> set[int]:
        t = synth_candidates_table
        if not self.store.has_table(t):
            return set()
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(t.c.position).where(t.c.batch_id == check_id(batch, "batch"))).scalars())

    def candidates(self, batch: str) -> list[Reviewed]:
        """Every stored candidate of ``batch`` in position order, with its latest decision."""
        t, r = synth_candidates_table, synth_reviews_table
        check_id(batch, "batch")
        if not (self.store.has_table(t) and self.store.has_table(r)):
            return []
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.position, t.c.record).where(t.c.batch_id == batch).order_by(t.c.position)
            ).all()
            reviews = conn.execute(
                sa.select(r.c.position, r.c.decision, r.c.record, r.c.reviewer, r.c.created_at)
                .where(r.c.batch_id == batch)
                .order_by(r.c.id)
            ).all()
        latest = {int(row.position): row for row in reviews}  # in id order: the last one stays
        out = []
        for position, text in rows:
            found = latest.get(int(position))
            if found is None:
                out.append(Reviewed(int(position), json.loads(text)))
            else:
                out.append(
                    Reviewed(
                        int(position),
                        json.loads(text),
                        found.decision,
                        json.loads(found.record) if found.record else None,
                        found.reviewer,
                        float(found.created_at),
                    )
                )
        return out

    # --- review --------------------------------------------------------------------------

    def review(
        self,
        batch: str,
        position: int,
        decision: str,
        *,
        reviewer: str = "anonymous",
        edited: Mapping[str, Any] | None = None,
    ) -> int:
        """Keep one decision at once; returns its row id. ``edited``: the record as the reviewer changed it (with
        ``decision="edited"`` only)."""
        if decision not in DECISIONS:
            raise RagMetricsError(f"decision {decision!r}: expected one of {', '.join(DECISIONS)}")
        if (decision == "edited") != (edited is not None):
            raise RagMetricsError("an edited record goes with the decision 'edited', and only with it")
        t = synth_candidates_table
        check_id(batch, "batch")
        self.store.require_table(synth_reviews_table, f"a review of batch {batch}'s candidate {position}")
        with self.engine.begin() as conn:
            known = conn.execute(
                sa.select(t.c.position).where((t.c.batch_id == batch) & (t.c.position == int(position)))
            ).first()
            if known is None:
                raise StoreKeyError(f"batch {batch} has no candidate at position {position}")
            conn.execution_options(**{CHANGE_OPTION: "review candidates"})
            key = conn.execute(
                sa.insert(synth_reviews_table).values(
                    batch_id=batch,
                    position=int(position),
                    decision=decision,
                    record="" if edited is None else json.dumps(dict(edited), ensure_ascii=False),
                    reviewer=checked_text(reviewer or "anonymous", "a reviewer", MAX_NAME_BYTES),
                    created_at=time.time(),
                )
            ).inserted_primary_key
        if key is None:
            raise RagMetricsError("the store gave the decision no id")
        return int(key[0])

    def mark_made(self, batch: str, dataset: str, *, author: str = "anonymous") -> None:
        """Record that ``dataset`` (stored) was made from ``batch``'s kept candidates."""
        check_id(dataset, "dataset")
        if not self.store.has_dataset(dataset):
            raise StoreKeyError(f"dataset {dataset} is not in this store")
        t = synth_batches_table
        self.store.require_table(t, f"the dataset batch {batch} made")
        with self.engine.begin() as conn:
            conn.execution_options(**{CHANGE_OPTION: "build datasets"})
            conn.execute(
                sa.update(t)
                .where(t.c.id == check_id(batch, "batch"))
                .values(
                    dataset_id=dataset,
                    made_at=time.time(),
                    made_by=checked_text(author or "anonymous", "an author", MAX_NAME_BYTES),
                )
            )


def _batch(row: Mapping[str, Any]) -> Batch:
    return Batch(
        id=row["id"],
        parent=row["parent"],
        generator=row["generator"],
        settings=json.loads(row["settings"]),
        requested=int(row["requested"]),
        author=row["author"],
        created_at=float(row["created_at"]),
        status=row["status"],
        stored=int(row["stored"]),
        dataset_id=row["dataset_id"],
        made_at=None if row["made_at"] is None else float(row["made_at"]),
        made_by=row["made_by"],
    )
