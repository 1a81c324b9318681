"""Where a stored label came from: a person, or a judge (its name, version and configuration hash).

The ``labels`` table's ``source`` column holds it: empty for a person's label (every label given before judges
existed, and every label :meth:`Store.add_label` keeps), ``judge:NAME@VERSION#HASH`` for a judge's
(:class:`Provenance`). A store made before the column existed gets it, empty, when it is opened (its labels are
all human). Judge labels go in with :func:`add_judge_labels` only, which refuses to write to a store that lacks the
column (a judge's label never reads as a person's), and never over a pair that a person judged.
:func:`version_sources` says how many of a qrels version's labels are human and how many each judge's
(:func:`sources_by_version`: of several versions at once).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.grades import check_grade
from ragmetrics.foundation.provenance import HUMAN, Provenance, parse_source
from ragmetrics.store.database import (
    MAX_NAME_BYTES,
    Store,
    StoreKeyError,
    VersionTree,
    check_id,
    checked_text,
    labels_table,
    people_last,
)

__all__ = ["HUMAN", "add_judge_labels", "lineage_labels", "parse_source", "sources_by_version", "version_sources"]


def add_judge_labels(
    store: Store,
    dataset: str,
    labels: Sequence[tuple[str, str, int]],
    provenance: Provenance,
    *,
    author: str | None = None,
) -> tuple[int, int]:
    """Keep a judge's ``labels`` (query id, document id, grade), pending on ``dataset`` like a person's until
    :meth:`Store.commit_labels` makes a version of them, each with ``provenance``; in one transaction. Once a
    version was made from ``dataset`` (a save on another server while this judge labels), they are pending on
    the newest version instead (:meth:`Store.pending_place`), where that save moved the judge's earlier labels:
    the next save takes them all. A pair that this version's qrels judge is skipped, but for one a person labelled on its lineage, pending or saved into
    a version (which then judges it), which is kept: the judge's
    grade there is what agreement and the corrected means compare with the person's (a judge that skipped them
    would leave its errors on the human sample unmeasured), and it never overrides the person's, which wins in
    every version, conflict check and queue (:func:`ragmetrics.store.database.people_last`). Returns
    ``(added, skipped)``. ``author``: who ran the judge (default: the judge's source text). The place and the
    people's labels on its lineage are read in the transaction that writes, under the lock a save or a delete of
    the place takes (:meth:`Store.write_pending`): one since the call moves the labels to the place it left, never
    refuses them while ``dataset`` is stored. The pairs the place's qrels judge are read before that lock (a
    dataset's id is its content), again under it only when the place moved meanwhile."""
    if not store._has(labels_table, "source"):
        raise RagMetricsError(
            "this store's labels table has no source column (its database user may not alter it): a judge's labels "
            "would read as a person's; open the store once as its owner to add the column"
        )
    top = store.max_grade(dataset)
    who = checked_text(author or provenance.source, "an author", MAX_NAME_BYTES)
    now = time.time()
    rows = []
    for query_id, doc_id, label in labels:
        grade = check_grade(label, top, f"dataset {dataset}'s scale")
        rows.append({"query_id": store.labelled_query(dataset, query_id),
                     "doc_id": checked_text(str(doc_id), "a document id"), "label": grade,
                     "author": who, "created_at": now, "kind": "judgment", "version": None,
                     "source": provenance.source})  # fmt: skip
    if not rows:
        return 0, 0

    pairs = {(str(row["query_id"]), str(row["doc_id"])) for row in rows}
    judged: dict[str, set[tuple[str, str]]] = {}
    try:  # a place's qrels never change (its id is its content): read before the lock, which waits on no decoding
        place = store.pending_place(dataset)
        with store.engine.connect() as conn:
            judged[place] = store._judged_pairs(conn, place, pairs)
    except StoreKeyError:
        pass  # deleted meanwhile: the write says so

    def write(conn: Any, place: str, tree: VersionTree) -> tuple[int, int]:
        taken = judged[place] if place in judged else store._judged_pairs(conn, place, pairs)
        people = conn.execute(_lineage_query(store, tree.family(place), people_only=True))
        taken = taken - {(str(row.query_id), str(row.doc_id)) for row in people}
        kept = [{**row, "dataset_id": place} for row in rows if (row["query_id"], row["doc_id"]) not in taken]
        for start in range(0, len(kept), 500):
            conn.execute(sa.insert(labels_table), kept[start : start + 500])
        return len(kept), len(rows) - len(kept)

    return store._write_pending(dataset, write)


def version_sources(store: Store, version: str) -> pd.DataFrame:
    """How many of the labels that went into the qrels version ``version`` are a person's and how many each
    judge's (the latest label of a pair counts, as in the version): ``source`` (``human`` or the judge's source
    text), ``judge``, ``judge_version``, ``config_hash`` (empty for people), ``labels``; people first."""
    return sources_by_version(store, [version]).drop(columns="version")


def sources_by_version_query(store: Store, versions: Sequence[str]) -> sa.Select[Any]:
    """The query :func:`sources_by_version` reads: the judgments that went into ``versions``, with their source."""
    t = labels_table
    source = t.c.source if store._has(t, "source") else sa.literal(HUMAN).label("source")
    wanted = [check_id(v, "version") for v in versions]
    return (
        sa.select(t.c.id, t.c.version, t.c.query_id, t.c.doc_id, source)
        .where(t.c.version.in_(wanted) & (t.c.kind == "judgment"))
        .order_by(t.c.id)
    )


def sources_by_version(store: Store, versions: Sequence[str]) -> pd.DataFrame:
    """:func:`version_sources` of each of ``versions``, read in one query: the same columns after ``version``,
    versions in the order given (a version without labels has no row)."""
    query = sources_by_version_query(store, versions)
    with store.engine.connect() as conn:
        frame = pd.DataFrame(
            conn.execute(query).mappings().all(), columns=["id", "version", "query_id", "doc_id", "source"]
        )
    latest = people_last(frame).drop_duplicates(["version", "query_id", "doc_id"], keep="last")
    counts = latest.groupby(["version", "source"], sort=True).size()
    out = []
    for (version, text), n in counts.items():
        parsed = parse_source(str(text))
        judge, judge_version, digest = parsed if parsed is not None else ("", "", "")
        out.append({"version": version, "source": text or "human", "judge": judge, "judge_version": judge_version,
                    "config_hash": digest, "labels": int(n)})  # fmt: skip
    columns = ["version", "source", "judge", "judge_version", "config_hash", "labels"]
    result = pd.DataFrame(out, columns=columns)
    order = {v: i for i, v in enumerate(versions)}
    result = result.assign(_order=result["version"].map(order))
    return (
        result.sort_values(["_order", "judge", "source"], kind="stable").drop(columns="_order").reset_index(drop=True)
    )


def lineage_labels(store: Store, dataset: str, *, people_only: bool = False) -> pd.DataFrame:
    """Every judgment given on ``dataset``'s lineage (:meth:`Store.family`), pending or saved, oldest first:
    ``query_id, doc_id, label, source, author, created_at, version`` (None while pending; a label saved in a version
    that was deleted and then saved again reads that version's id in capitals, counted in none:
    :func:`ragmetrics.store.database.set_aside_stamp`). ``source`` is empty for
    a person's label, ``judge:NAME@VERSION#HASH`` for a judge's: who gave what, for agreement and corrected
    means. ``people_only``: people's labels alone (read without the judges' in the query)."""
    query = _lineage_query(store, store.family(check_id(dataset, "dataset")), people_only=people_only)
    columns = ["query_id", "doc_id", "label", "source", "author", "created_at", "version"]
    with store.engine.connect() as conn:
        return pd.DataFrame(conn.execute(query).mappings().all(), columns=columns)


def _lineage_query(store: Store, family: Sequence[str], *, people_only: bool) -> sa.Select[Any]:
    """The query :func:`lineage_labels` reads: the judgments given on the datasets ``family``, oldest first."""
    t = labels_table
    has_source = store._has(t, "source")
    source = t.c.source if has_source else sa.literal(HUMAN).label("source")
    wanted = t.c.dataset_id.in_(list(family)) & (t.c.kind == "judgment")
    if people_only and has_source:
        wanted &= t.c.source == HUMAN
    return (
        sa.select(t.c.query_id, t.c.doc_id, t.c.label, source, t.c.author, t.c.created_at, t.c.version)
        .where(wanted)
        .order_by(t.c.id)
    )
