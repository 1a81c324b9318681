"""The store: datasets, runs and saved views, kept under the hash of their content.

The same files give the same id on every server, so a share link names data by
id and opens anywhere the same store (or the same uploads) is served.

* Embedded default: one SQLite file, ``$RAGMETRICS_DATA_DIR/ragmetrics.sqlite``
  (``RAGMETRICS_DATA_DIR`` defaults to ``./data``).
* Teams set ``RAGMETRICS_STORE_URL`` to a PostgreSQL URL
  (``postgresql+psycopg://user:pass@host/db``); several dashboard processes then
  share one store.

Every write is one transaction (``INSERT ... ON CONFLICT DO NOTHING``): a crash
or kill mid-upload leaves the store as it was, and two uploads of the same
content at once store it once. Ids reach SQL only as bound parameters, after
validation.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ragmetrics.analysis.judging import merge
from ragmetrics.analysis.per_query import results_from_parquet, results_id, results_parquet
from ragmetrics.analysis.targets import declared_targets
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.grades import check_grade, top_grade
from ragmetrics.foundation.ids import CONTENT_ID, dictionary_codes, id_text_problem, string_fingerprints
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.redact import redact_url, scrub
from ragmetrics.io.runmeta import check_key, check_tags

if TYPE_CHECKING:
    from ragmetrics.analysis.per_query import PerQueryResults

_LOG = logging.getLogger(__name__)
HASH_VERSION = b"ragmetrics-content-v2"
RUN_HASH_VERSION = b"ragmetrics-run-v3"  # v3: row hashes from the id fingerprints the alignment uses

metadata = sa.MetaData()
datasets_table = sa.Table(
    "datasets",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("n_queries", sa.Integer, nullable=False),
    sa.Column("n_judgments", sa.Integer, nullable=False),
    sa.Column("size_bytes", sa.Integer, nullable=False),
    sa.Column("payload", sa.LargeBinary, nullable=False),
    sa.Column("source", sa.Text, nullable=False, server_default=""),  # the file(s) it was first read from
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("targets", sa.Text, nullable=False, server_default=""),  # the targets it declares (a profile or a list)
)
runs_table = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("n_queries", sa.Integer, nullable=False),
    sa.Column("n_rows", sa.Integer, nullable=False),
    sa.Column("size_bytes", sa.Integer, nullable=False),
    sa.Column("payload", sa.LargeBinary, nullable=False),
    sa.Column("source", sa.Text, nullable=False, server_default=""),
)
ADDED_COLUMNS = {
    "datasets": ("source", "description", "targets"),
    "runs": ("source",),
    "labels": ("source",),
    "qrels_lineage_numbers": ("top",),
}
"""Columns added after the first stores were made: :class:`Store` adds them to an older store, as the table declares
them (a text column empty, the others NULL)."""
links_table = sa.Table(
    "dataset_runs",
    metadata,
    sa.Column("dataset_id", sa.String(16), primary_key=True),
    sa.Column("run_id", sa.String(16), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
)
labels_table = sa.Table(
    "labels",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("dataset_id", sa.String(16), nullable=False, index=True),  # given on (its parent once it is deleted)
    sa.Column("query_id", sa.Text, nullable=False),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("label", sa.Integer, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),  # "judgment", or "suggestion:<rule>" (never merged)
    sa.Column("version", sa.String(16)),  # the qrels version it went into; NULL while pending
    sa.Column("source", sa.Text, nullable=False, server_default=""),  # "" a person; judge:NAME@VERSION#HASH a judge
)
"""Every label as it was given, at once (a reload, a second tab or a crash loses none). ``source`` says whose it
is (:mod:`ragmetrics.store.provenance`)."""
pending_index = sa.Index(
    "ix_labels_pending",
    labels_table.c.dataset_id,
    sqlite_where=labels_table.c.version.is_(None),
    postgresql_where=labels_table.c.version.is_(None),
)
"""The labels pending, by dataset: a store's saved labels grow without end, and opening it looks for pending ones
(:meth:`Store._settle_stranded_labels`). A store made before it gets it when it is opened."""
saved_index = sa.Index(
    "ix_labels_version",
    labels_table.c.version,
    sqlite_where=labels_table.c.version.is_not(None),
    postgresql_where=labels_table.c.version.is_not(None),
)
"""The saved labels by the qrels version they went into (the pending ones are :data:`pending_index`'s): a version's labels and their sources (the Workspace and Judge
pages' versions table), and a deleted middle version's labels moved below, read without scanning every label. A
store made before it gets it when it is opened."""
versions_table = sa.Table(
    "qrels_versions",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),  # the new version: a dataset of its own
    sa.Column("parent", sa.String(16), nullable=False, index=True),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("n_labels", sa.Integer, nullable=False),
)
"""A qrels version is a dataset (content id and all) whose judgments are its parent's plus labels."""
numbers_table = sa.Table(
    "qrels_lineage_numbers",
    metadata,
    sa.Column("original", sa.String(16), primary_key=True),  # the lineage's original
    sa.Column("last_number", sa.Integer, nullable=False),
    sa.Column("top", sa.Integer),  # the top of the original's scale once it is deleted; NULL while it is stored
)
"""The largest version number a lineage has given (:meth:`Store.commit_labels`), kept when versions are deleted so
that no number is given twice: a note or link that says ``v3`` never comes to mean other labels. A store made before
it gets the (empty) table when it is opened; a lineage without a row numbers on from its version rows. ``top``: the
top grade of the original's scale, kept when the original is deleted while versions of it stay (their scale is at
least the original's, :meth:`Store.max_grade`)."""
version_numbers_table = sa.Table(
    "qrels_version_numbers",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),  # the version
    sa.Column("number", sa.Integer, nullable=False),
)
"""Each qrels version's number, as :meth:`Store.commit_labels` gave it in the transaction that stored it (the ``vN``
of its name): every front end shows this one. A store made before the table gets it when opened, and its versions
their numbers then, once (:func:`_given_numbers`)."""
claims_table = sa.Table(
    "label_claims",
    metadata,
    sa.Column("dataset_id", sa.String(16), primary_key=True),  # the original of the lineage judged
    sa.Column("query_id", sa.Text, primary_key=True),
    sa.Column("doc_id", sa.Text, primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),  # the judging session (a random token), not a person
    sa.Column("expires_at", sa.Float, nullable=False),
)
"""The pair each judging session is being shown (:meth:`Store.claim_pair`), so that judges on any number of servers
are offered different pairs. A store made before it gets the (empty) table when it is opened."""
tags_table = sa.Table(
    "run_tags",
    metadata,
    sa.Column("run_id", sa.String(16), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)
"""A run's metadata (:mod:`ragmetrics.io.runmeta`): key-value tags per run content id. A store made before it gets
the (empty) table when it is opened."""
results_table = sa.Table(
    "per_query_results",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),
    sa.Column("dataset_id", sa.String(16), nullable=False, index=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("metrics", sa.Text, nullable=False),  # comma-separated, as the registry names them
    sa.Column("n_queries", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("source", sa.Text, nullable=False, server_default=""),
    sa.Column("payload", sa.LargeBinary, nullable=False),
)
"""Per-query values of a run too large to upload, without its rankings (:mod:`ragmetrics.analysis.per_query`). A store made
before it gets the (empty) table when it is opened."""
synth_batches_table = sa.Table(
    "synth_batches",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),  # random: two batches with the same settings are two batches
    sa.Column("parent", sa.String(16), nullable=False, index=True),  # the dataset whose corpus it is written from
    sa.Column("generator", sa.Text, nullable=False),
    sa.Column("settings", sa.Text, nullable=False),  # JSON: model, categories, seed, chunker ...
    sa.Column("requested", sa.Integer, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("status", sa.Text, nullable=False),  # "generating", "stopped" or "complete"
    sa.Column("dataset_id", sa.String(16)),  # the dataset made from its accepted candidates; NULL until made
    sa.Column("made_at", sa.Float),
    sa.Column("made_by", sa.Text),
)
"""A batch of generated candidate queries (:mod:`ragmetrics.store.candidates`). A store made before it gets the
(empty) table when it is opened."""
synth_candidates_table = sa.Table(
    "synth_candidates",
    metadata,
    sa.Column("batch_id", sa.String(16), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True),  # from 1, in the generator's order
    sa.Column("record", sa.Text, nullable=False),  # JSON: the evaluation-set record, its source and flags
    sa.Column("created_at", sa.Float, nullable=False),
)
"""Each candidate stored as it is generated (a crash keeps those written; a resumed batch adds the rest)."""
synth_reviews_table = sa.Table(
    "synth_reviews",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("batch_id", sa.String(16), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("decision", sa.Text, nullable=False),  # "accepted", "edited" or "rejected"
    sa.Column("record", sa.Text, nullable=False, server_default=""),  # JSON of the edited record; "" otherwise
    sa.Column("reviewer", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
"""Every review decision as it was given, at once; a candidate's latest decision counts."""
views_table = sa.Table(
    "views",
    metadata,
    sa.Column("id", sa.String(16), primary_key=True),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
ADDED_TABLES = (
    numbers_table,
    version_numbers_table,
    claims_table,
    tags_table,
    results_table,
    synth_batches_table,
    synth_candidates_table,
    synth_reviews_table,
)
"""The tables added after the labels and versions. A store made before one gets it when opened, unless its database
user may not create tables: it then opens without them (:meth:`Store.has_table`) and what they would hold reads as
none (every version number derived as :func:`_given_numbers` and :meth:`Store._last_number` do, on each read; no
claim, run tag, per-query result or generated candidate), while a write that needs one is refused, saying so
(:meth:`Store.require_table`); a later opening by a user that may creates them."""

CHANGES: dict[str, tuple[tuple[str, sa.Table | sa.Column[Any]], ...]] = {
    "rename": (("UPDATE", datasets_table), ("UPDATE", runs_table)),
    "delete": (
        *(("DELETE", t) for t in (datasets_table, runs_table, links_table, labels_table, versions_table)),
        *(("DELETE", t) for t in (version_numbers_table, tags_table)),
        ("UPDATE", labels_table),
        ("UPDATE", versions_table),
        ("INSERT", numbers_table),
        ("UPDATE", numbers_table),
    ),
    "edit tags": (("INSERT", tags_table), ("UPDATE", tags_table), ("DELETE", tags_table)),
    "delete results": (("DELETE", results_table),),
    "judge": (
        ("USAGE", labels_table.c.id),
        ("DELETE", labels_table),
        ("UPDATE", claims_table),
        ("DELETE", claims_table),
    ),
    "save versions": (
        ("UPDATE", labels_table),
        *((p, t) for t in (versions_table, numbers_table, version_numbers_table) for p in ("INSERT", "UPDATE")),
        ("INSERT", links_table),
    ),
    "build datasets": (("UPDATE", synth_batches_table), ("UPDATE", synth_candidates_table)),
    "review candidates": (("USAGE", synth_reviews_table.c.id),),
}
"""The changes to what a store holds, besides adding to it, that its database user may be refused alone (a
PostgreSQL role granted INSERT but not UPDATE or DELETE): each with the privileges on the tables it writes
(:attr:`Store.refused_changes`; a column stands for the sequence that numbers it, whose USAGE an INSERT needs).
"edit tags" is every write of a run's tags, an upload's with tags included
(PostgreSQL's INSERT ... ON CONFLICT DO UPDATE needs UPDATE); "judge" holds, renews and lets go of the pair a
judging session is shown, keeps a label (numbered by the labels' sequence) and withdraws a pending one; "save versions" stamps the pending labels with the
version that takes them and records its row and number (:meth:`Store.commit_labels`); "build datasets" marks a
batch of generated candidates' state, flags its candidates and records the dataset it made
(:mod:`ragmetrics.store.candidates`); "review candidates" keeps a review decision (numbered by their sequence)."""


MAX_NAME_BYTES = 512
"""The longest name, author or label kind the store keeps (UTF-8 bytes)."""


def checked_text(value: str, what: str, max_bytes: int | None = None) -> str:
    """``value`` when it can be kept as it is: not empty, no control character (PostgreSQL refuses NUL; a terminal
    obeys escapes), at most ``max_bytes`` (default: an id's limit); else a :class:`RagMetricsError` saying why."""
    problem = id_text_problem(value) if max_bytes is None else id_text_problem(value, max_bytes)
    if problem is not None:
        raise RagMetricsError(f"{what} {problem}: {value[:80]!r}")
    return value


class StoreKeyError(RagMetricsError, KeyError):
    """An id that is malformed or not in this store; the message says how to restore it."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def default_url() -> str:
    """``RAGMETRICS_STORE_URL``, else a SQLite file in ``RAGMETRICS_DATA_DIR`` (default ``./data``)."""
    url = os.environ.get("RAGMETRICS_STORE_URL")
    if url:
        return url
    folder = Path(os.environ.get("RAGMETRICS_DATA_DIR", "data"))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'ragmetrics.sqlite').resolve()}"


def _digest(frames: list[pd.DataFrame], extra: Mapping[str, Any]) -> str:
    """Order-independent content hash: sorted per-row hashes of each frame, plus metadata."""
    h = hashlib.sha256(HASH_VERSION)
    h.update(json.dumps(extra, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
    for frame in frames:
        h.update(("|".join(frame.columns)).encode("utf-8"))
        if len(frame):
            rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
            h.update(np.sort(rows).tobytes())
    return h.hexdigest()[:16]


def _hashable(frame: pd.DataFrame) -> pd.DataFrame:
    """Lists (expected keywords) become JSON text so that rows hash."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = [
                json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else (None if v is None else str(v))
                for v in out[column]
            ]
    return out


def dataset_id(dataset: Dataset) -> str:
    """The content id of a dataset: qrels (any order), queries, corpus size and documents."""
    frames = [_hashable(dataset.qrels), _hashable(dataset.queries)]
    if dataset.documents is not None:
        frames.append(_hashable(dataset.documents))
    return _digest(frames, {"corpus_size": dataset.corpus_size})


def run_id(run: Run) -> str:
    """The content id of a run: its rows in any order (the name is not content).

    Each row's 64-bit hash combines the fingerprints of its query and document ids
    (:func:`ragmetrics.foundation.ids.string_fingerprints`) with its score's bits
    and the hashes of any other columns; the sorted row hashes go into SHA-256."""
    frame = run.frame
    h = hashlib.sha256(RUN_HASH_VERSION)
    h.update(json.dumps({"has_scores": run.has_scores}, sort_keys=True).encode("utf-8"))
    h.update(("|".join(frame.columns)).encode("utf-8"))
    if len(frame):
        rows = string_fingerprints(run.column("query_id")) * _MIX
        rows += string_fingerprints(run.column("doc_id"))
        score = (frame["score"].to_numpy(dtype=np.float64) + 0.0).view(np.uint64)  # + 0.0: -0.0 hashes as 0.0
        rows *= _MIX
        rows += score
        rest = [c for c in frame.columns if c not in ("query_id", "doc_id", "score")]
        if rest:
            rows *= _MIX
            rows += pd.util.hash_pandas_object(_hashable(frame[rest]), index=False).to_numpy()
        rows.sort()
        h.update(rows.data)  # the sorted array's own buffer (no 80 MB copy for 10M rows)
    return h.hexdigest()[:16]


_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd 64-bit constant: row = (h(query) * MIX + h(doc)) * MIX + ..., mod 2**64


# columns whose values repeat row after row; ids of documents mostly do not, and a Parquet dictionary of
# them costs time both ways and makes the blob larger
DICTIONARY_COLUMNS = ("query_id", "category", "difficulty", "source_doc")


def _dataset_row(dataset: Dataset, ident: str, source: str, description: str, targets: str) -> dict[str, Any]:
    """The ``datasets`` row that keeps ``dataset`` under ``ident``."""
    tables = {"qrels": dataset.qrels, "queries": dataset.queries}
    if dataset.documents is not None:
        tables["documents"] = dataset.documents
    name = checked_text(dataset.name, "a dataset name", MAX_NAME_BYTES)
    blob = _to_parquet(tables, {"name": name, "corpus_size": dataset.corpus_size})
    return {
        "id": ident,
        "name": name,
        "created_at": time.time(),
        "n_queries": len(dataset.queries),
        "n_judgments": len(dataset.qrels),
        "size_bytes": len(blob),
        "payload": blob,
        "source": source,
        "description": description,
        "targets": targets,
    }


def frame_parquet(frame: pd.DataFrame) -> bytes:
    """One frame as Parquet (zstd), as the store keeps it; Arrow releases the GIL while it writes."""
    sink = io.BytesIO()
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False),
        sink,
        compression="zstd",
        use_dictionary=[c for c in DICTIONARY_COLUMNS if c in frame.columns],
        write_statistics=False,  # min/max of millions of strings cost time, and the store reads whole blobs
    )
    return sink.getvalue()


def _to_parquet(tables: Mapping[str, pd.DataFrame | bytes], meta: Mapping[str, Any]) -> bytes:
    """Several frames (or their :func:`frame_parquet`) and a JSON header in one blob: [header length][header][parquet]..."""
    parts: list[bytes] = []
    header: dict[str, Any] = {"meta": meta, "tables": []}
    for name, frame in tables.items():
        data = frame if isinstance(frame, bytes) else frame_parquet(frame)
        header["tables"].append([name, len(data)])
        parts.append(data)
    head = json.dumps(header, ensure_ascii=False).encode("utf-8")
    return len(head).to_bytes(8, "little") + head + b"".join(parts)


def _from_parquet(blob: bytes) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + size].decode("utf-8"))
    offset, tables = 8 + size, {}
    for name, length in header["tables"]:
        tables[name] = pq.read_table(io.BytesIO(blob[offset : offset + length])).to_pandas()
        offset += length
    return tables, header["meta"]


def _qrels_of(blob: bytes, columns: Sequence[str]) -> pa.Table | None:
    """The ``columns`` of the qrels of the dataset kept in ``blob`` (:func:`_to_parquet`), its other tables left
    unread; None when it has no qrels table."""
    size = int.from_bytes(blob[:8], "little")
    offset = 8 + size
    for name, length in json.loads(blob[8 : 8 + size].decode("utf-8"))["tables"]:
        if name == "qrels":
            return pq.read_table(io.BytesIO(blob[offset : offset + length]), columns=list(columns))
        offset += length
    return None


def _grades_of(blob: bytes) -> list[Any]:
    """The relevance grades of the dataset kept in ``blob`` (:func:`_to_parquet`)."""
    qrels = _qrels_of(blob, ["relevance"])
    return [] if qrels is None else qrels.column("relevance").to_pylist()


def view_id(state: Mapping[str, Any]) -> str:
    """The content id :meth:`Store.put_view` gives ``state``."""
    text = json.dumps(state, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(b"view|" + text.encode("utf-8")).hexdigest()[:16]


def check_id(value: str, what: str = "id") -> str:
    """Refuse anything but 16 lowercase hex digits before it gets near SQL."""
    if not isinstance(value, str) or not CONTENT_ID.match(value):
        raise StoreKeyError(f"{what} {str(value)[:40]!r} is not a valid id; expected 16 hexadecimal digits")
    return value


class StoreWriteRefused(RagMetricsError):
    """A write the database refused its user (a read-only SQLite file, a PostgreSQL role without the privilege):
    nothing was written."""

    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(
            f"store {redact_url(url)}: the database user that opened it may not write to it ({_first_line(cause, url)}); "
            "nothing was written: open the store as a user allowed to write (docs/store.md)"
        )


class StoreReadRefused(RagMetricsError):
    """A read the database refused its user (a PostgreSQL role not granted ``SELECT`` on a table, e.g. one its
    owner created after the grant)."""

    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(
            f"store {redact_url(url)}: the database user that opened it may not read one of its tables "
            f"({_first_line(cause, url)}): grant it SELECT on the store's tables again (docs/store.md)"
        )


def _first_line(cause: BaseException, url: str) -> str:
    """The first line of a driver's error, without the store's credentials."""
    return scrub(str(cause).splitlines()[0] if str(cause) else type(cause).__name__, url)


class StoreOpenError(RagMetricsError):
    """A store URL that names no store this process can open (its credentials are not repeated)."""

    def __init__(self, url: str, cause: Exception | str) -> None:
        if isinstance(cause, str):
            why = cause
        else:
            reason = getattr(cause, "orig", None) or cause
            why = scrub(f"{type(reason).__name__}: {str(reason).splitlines()[0] if str(reason) else ''}", url)
            why = _sqlite_place_problem(url) or why
        super().__init__(
            f"store {redact_url(url)}: cannot be opened ({why}); "
            "expected sqlite:///PATH (a database file, or a new one, in an existing folder) or "
            "postgresql+psycopg://USER:PASSWORD@HOST/DATABASE"
        )


def _sqlite_place_problem(url: str) -> str | None:
    """Why a SQLite store's file cannot be where its URL puts it, in words (None: its place is fine, or not SQLite):
    the driver says "unable to open database file" of each."""
    if not url.startswith("sqlite"):
        return None
    try:
        database = sa.engine.make_url(url).database
    except sa.exc.ArgumentError:
        return None
    if not database or database == ":memory:":
        return None
    path = Path(database)
    folder = path.parent
    if path.is_dir():
        return f"{path} is a folder, not a database file"
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK) and not path.exists():
        return f"the folder {folder} cannot be written by this user"
    return None


def people_last(rows: pd.DataFrame) -> pd.DataFrame:
    """Label ``rows`` (in the order given, with ``source``) with every person's label (``source`` empty) after every
    judge's, each group in its order: keeping a pair's last row then keeps a person's label over any judge's."""
    human = rows["source"] == ""
    return pd.concat([rows[~human], rows[human]])


ANY_LABEL = object()
"""``expect`` for :meth:`Store.add_label` when no check is wanted: the label is kept whatever the pair holds."""
CLAIM_SECONDS = 120.0
"""How long a judging session holds the pair it is shown (:meth:`Store.claim_pair`) unless it renews the claim."""


class Claim(NamedTuple):
    """The pair :meth:`Store.claim_pair` gives a judging session; ``shared``: another session holds it too."""

    query_id: str
    doc_id: str
    shared: bool


class SavedVersion(NamedTuple):
    """What :meth:`Store.commit_labels` did with the labels it read: ``version``, the id of the qrels version that
    holds them; ``made``: True when this call saved that version, False when another save running at the same time
    (another tab or server) saved them first."""

    version: str
    made: bool


class LabelConflict(RagMetricsError):
    """A label refused because another one was given for the pair since the judge saw it: ``existing`` is that
    label (``query_id, doc_id, id, label, author, created_at, version``)."""

    def __init__(
        self, dataset: str, existing: Mapping[str, Any], outcome: str = "the new label was not stored"
    ) -> None:
        self.dataset, self.existing = dataset, dict(existing)
        state = f"saved in version {existing['version']}" if existing.get("version") else "not saved yet"
        super().__init__(
            f"{existing['doc_id']} for {existing['query_id']} was labelled {existing['label']} by {existing['author']} "
            f"meanwhile ({state}); {outcome}"
        )


COMMIT_ATTEMPTS = 5
"""How often :meth:`Store.commit_labels` reads the pending labels again when another writer changed them."""
_IDS_PER_STATEMENT = 1000  # bound parameters per IN list, well below SQLite's and PostgreSQL's limits


def _per_statement(values: Sequence[Any]) -> Iterator[list[Any]]:
    """``values`` in runs short enough for one ``IN (...)`` list each."""
    for start in range(0, len(values), _IDS_PER_STATEMENT):
        yield list(values[start : start + _IDS_PER_STATEMENT])


T = TypeVar("T")


class _LabelsChanged(Exception):
    """A label a save read was withdrawn or saved by another save before it was stamped: read them again."""


def _version_row(
    merged: Dataset, ident: str, title: str, number: int, parent: str, said: Mapping[str, str]
) -> dict[str, Any]:
    """The ``datasets`` row of the qrels version ``merged`` made from ``parent``: named ``TITLE, vNUMBER)``, with the
    description and targets its parent ``said``."""
    named = dataclasses.replace(merged, name=f"{title}, v{number})")
    return _dataset_row(named, ident, f"labels on {parent}", said["description"], said["targets"])


STRANDED = (
    sa.select(labels_table.c.dataset_id)
    .where(labels_table.c.version.is_(None))
    .where(sa.exists().where(versions_table.c.parent == labels_table.c.dataset_id))
    .distinct()
)
"""The datasets with labels pending that a version was made from (:meth:`Store._settle_stranded_labels`): the
pending labels read from :data:`pending_index` (asked ``dataset_id IN (parents)``, SQLite may read every label of
every parent, saved ones too, by the index on ``dataset_id``), each looked up among the versions' parents."""


_UNNUMBERED = (
    sa.select(versions_table.c.id).where(~sa.exists().where(version_numbers_table.c.id == versions_table.c.id)).limit(1)
)
"""A version saved before :data:`version_numbers_table` (none in a store made with it)."""
_GIVEN = re.compile(r", v([1-9][0-9]*)\)\Z")
"""The number :func:`_version_row` put in a version's name."""
_MADE = re.compile(r" \(\+[0-9]+ labels?, v[1-9][0-9]*\)\Z")
"""What :meth:`Store.commit_labels` and :func:`_version_row` add to the lineage original's name."""


def _given_numbers(conn: Any, *, kept: bool = True) -> dict[str, int]:
    """The numbers of the versions without a :data:`version_numbers_table` row (saved before it), derived as
    before: the number its save gave, which it put in its name (``, vN)``: what the command line shows), else
    (renamed since, or its dataset row gone) its steps back to its lineage's original (1 for a version of the
    original), as the dashboard numbered them. ``kept=False``: the store has no such table (every version)."""
    v, d, n = versions_table, datasets_table, version_numbers_table
    if kept:
        query = sa.select(v.c.id, v.c.parent, d.c.name, n.c.number).select_from(
            v.outerjoin(d, d.c.id == v.c.id).outerjoin(n, n.c.id == v.c.id)
        )
    else:
        query = sa.select(v.c.id, v.c.parent, d.c.name, sa.null()).select_from(v.outerjoin(d, d.c.id == v.c.id))
    rows = conn.execute(query).all()
    parents = {str(i): str(p) for i, p, _, _ in rows}
    out: dict[str, int] = {}
    for ident, _parent, name, kept in rows:
        if kept is not None:
            continue
        given = _GIVEN.search(str(name or ""))
        if given is not None:
            out[str(ident)] = int(given.group(1))
            continue
        number, seen, up = 1, {str(ident)}, parents[str(ident)]
        while up in parents and up not in seen:  # a cycle in the stored rows ends the walk
            seen.add(up)
            number, up = number + 1, parents[up]
        out[str(ident)] = number
    return out


def set_aside_stamp(version: str) -> str:
    """What a label saved in the qrels version ``version`` is stamped with once that version, deleted, is saved
    again (:meth:`Store.commit_labels`; a version's id is its content): ``version`` in capitals, which names it and
    is no content id (those are lowercase), so the label counts in no stored version and judges no pair."""
    return version.upper()


class VersionTree:
    """The qrels versions of one lineage, as :meth:`Store._tree` reads them in one query: ``edges`` maps each version
    row to its parent and the time it was made; ``stored``, the versions whose dataset row is present (a version row
    whose dataset is gone, deleted by an older release, is no version: never a place nor in a family, but it still
    links the versions made from it to its lineage, and its number stays taken). Every walk stops at a node it has
    seen, so a cycle in the stored rows ends it."""

    def __init__(self, edges: Mapping[str, tuple[str, float]], stored: Iterable[str] | None = None) -> None:
        self.edges = dict(edges)
        self.stored = set(self.edges) if stored is None else set(stored)
        self.children: dict[str, list[str]] = {}
        for ident, (parent, _made) in sorted(self.edges.items(), key=lambda e: (e[1][1], e[0])):
            self.children.setdefault(parent, []).append(ident)  # oldest first; at a tie in time, the smaller id

    def lineage(self, dataset: str) -> list[str]:
        """``dataset`` and its ancestors, itself first."""
        chain = [dataset]
        while chain[-1] in self.edges and self.edges[chain[-1]][0] not in chain:
            chain.append(self.edges[chain[-1]][0])
        return chain

    def family(self, dataset: str) -> list[str]:
        """The lineage's original, then every version below it: each node's versions oldest first, after which the
        walk goes on below the newest of them (depth first). A version whose dataset is gone is in it only when a
        stored one was made from it (it links them to the line), and has none but itself."""
        if dataset in self.edges and dataset not in self.stored:
            return [dataset]
        family = [self.lineage(dataset)[-1]]
        seen, todo = set(family), list(family)
        while todo:
            for child in self.children.get(todo.pop(), []):
                if child not in seen:
                    seen.add(child)
                    family.append(child)
                    todo.append(child)
        # a deleted one stays when a version below it is stored: its labels were given on the line and saved there
        gone = [ident for ident in family[1:] if ident not in self.stored]
        if not gone:
            return family
        linking = {ident for ident in gone if self.below_stored(ident)}
        return [ident for ident in family if ident == family[0] or ident in self.stored or ident in linking]

    def below_stored(self, ident: str) -> bool:
        """Whether a stored version descends from ``ident``."""
        seen, todo = {ident}, [ident]
        while todo:
            for child in self.children.get(todo.pop(), []):
                if child in self.stored:
                    return True
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return False

    def below(self, root: str) -> set[str]:
        """The version rows that descend from ``root`` (children, their children, ...; a deleted one's too: its
        number stays taken)."""
        seen, todo = {root}, [root]
        while todo:
            for child in self.children.get(todo.pop(), []):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return seen - {root}

    def place(self, dataset: str) -> str:
        """:meth:`Store.pending_place`: from ``dataset`` down its newest stored version (at a tie in time, the larger
        id), again and again."""
        current, seen = dataset, set()
        while current not in seen:
            seen.add(current)
            versions = [c for c in self.children.get(current, []) if c in self.stored]
            if not versions:
                break
            current = versions[-1]
        return current


def _parsed_url(url: str) -> tuple[sa.engine.URL | None, str | None]:
    """``url`` parsed (None where SQLAlchemy cannot: ``create_engine`` says why), and what makes it unusable before
    any connection is tried (said without its secrets), or None."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return None, None
    except ValueError:
        return None, "its port is not a number"
    if parsed.host and "@" in parsed.host:
        return parsed, "its password holds an '@': write it as %40"
    return parsed, None


def _missing_file(parsed: sa.engine.URL | None) -> bool:
    """Whether ``parsed`` names a SQLite file that does not exist (opening it would make an empty store)."""
    database = (parsed.database or "") if parsed is not None else ""
    if parsed is None or parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return False
    return not database.startswith("file:") and not Path(database).exists()


class Store:
    """Content-addressed storage of datasets, runs and views (SQLite or PostgreSQL)."""

    def __init__(self, url: str | None = None, *, existing: bool = False) -> None:
        """Open the store at ``url`` (:func:`default_url` when None), making its tables when it has none; ``existing``:
        refuse a SQLite file that does not exist instead of making it (a command that only reads)."""
        self.url = url or default_url()
        self._tops: dict[str, int] = {}  # a dataset's top grade by content id: its content never changes
        self._queries: dict[str, frozenset[str]] = {}  # a dataset's query ids, as its content: never change
        parsed, problem = _parsed_url(self.url)
        if problem is not None:
            raise StoreOpenError(self.url, problem)
        if existing and _missing_file(parsed):
            raise RagMetricsError(
                f"store {redact_url(self.url)}: no such file; this command reads an existing store (the one "
                "ragmetrics push wrote): check the path"
            )
        kwargs: dict[str, Any] = {"future": True}
        if self.url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        else:
            kwargs["pool_pre_ping"] = True
            if self.url.startswith("postgresql") and "connect_timeout" not in self.url:
                kwargs["connect_args"] = {"connect_timeout": 10}  # an unreachable server fails in seconds, not minutes
        self._without: set[tuple[str, str]] = set()
        self._opened_empty = False
        self.refused_changes: set[str] = set()
        """The :data:`CHANGES` its database user may not make while it may add data (a PostgreSQL role without
        UPDATE or DELETE on their tables): known at the open, or from the first such change refused."""
        self.read_only = False
        """Whether the store's database user may not write to it: known at the open (a SQLite file opened
        ``mode=ro`` or not writable, a PostgreSQL role without INSERT on its datasets, tables it could not create),
        else set by a refused write that says the user may not write the store at all (SQLite's read-only file, a
        write to the datasets); a refused write to another table refuses that write only (:class:`StoreWriteRefused`)."""
        try:
            self.engine = sa.create_engine(self.url, **kwargs)
            if self.engine.dialect.name == "sqlite":
                sa.event.listen(self.engine, "connect", _sqlite_pragmas)
                atexit.register(_close_at_exit, weakref.ref(self.engine))
            if self._create_tables():  # a store made before now: brought up to date where its user may
                may_not_write, self.refused_changes = self._privileges()
                self.read_only = self.read_only or may_not_write
                self._add_missing_columns()
                self._add_missing_index(pending_index)
                self._add_missing_index(saved_index)
                self._number_old_versions()
                self._settle_stranded_labels()
            sa.event.listen(self.engine, "handle_error", self._refused_write)
        except (sa.exc.ArgumentError, sa.exc.DBAPIError, sa.exc.NoSuchModuleError, ImportError, ValueError) as err:
            raise StoreOpenError(self.url, err) from None

    def _refused_write(self, context: Any) -> None:
        """Once the store is open, a statement its database user may not run ends in :class:`StoreWriteRefused`
        (SQLite's read-only file; PostgreSQL's insufficient privilege for an INSERT, UPDATE or DELETE, or for a
        statement run as a write by :meth:`_write`) or :class:`StoreReadRefused` (any other), not the driver's
        error."""
        cause = context.original_exception
        if not _refused(cause):
            return
        execution = context.execution_context
        written = None if execution is None else execution.execution_options.get(_WRITES)
        crud = execution is not None and (execution.isinsert or execution.isupdate or execution.isdelete)
        if _READ_ONLY not in str(cause) and written is None and not crud:
            raise StoreReadRefused(self.url, cause) from None
        # a refused write marks the whole store read-only only when it says so: a SQLite file that may not be
        # written, or a write to the datasets (every user of the store writes those); a privilege lacking on
        # another table refuses that write only
        change = None if execution is None else execution.execution_options.get(CHANGE_OPTION)
        if _READ_ONLY in str(cause):
            self.read_only = True
        elif change is not None:  # one of CHANGES refused: adding data may still be allowed
            self.refused_changes.add(change)
        elif written == datasets_table.name:
            self.read_only = True
        raise StoreWriteRefused(self.url, cause) from None

    def _write(self, conn: Any, table: sa.Table, statement: Any) -> Any:
        """Run ``statement``, a write to ``table``, in ``conn``. Every write to the datasets goes through here: one
        refused marks the store read-only (:meth:`_refused_write`), whatever SQL the statement compiles to."""
        return conn.execute(statement, execution_options={_WRITES: table.name})

    def recheck_writes(self) -> bool:
        """Whether the store's database user may write to it now, as its open tells (:meth:`_privileges`): a
        write refused since (which set :attr:`read_only`) is forgotten when the open's check finds the user may
        write, say after its owner granted it; the next refused write sets it again."""
        if self._opened_empty:  # its tables are this process's temporary ones, refusing every write
            return False
        self.read_only, self.refused_changes = self._privileges()
        return not self.read_only

    def _privileges(self) -> tuple[bool, set[str]]:
        """Whether the store's database user may not write to it, as far as a read tells, and the :data:`CHANGES`
        it may not make while it may add data. SQLite: the URL opens the file ``mode=ro`` or the process may not
        write the file (a file is written whole or not at all: no change refused alone). PostgreSQL: the role lacks
        INSERT on the datasets, and the privileges each change needs on the tables the store has, in one query
        (:meth:`Workspace.refresh` repeats it while the store is read-only or refuses a change)."""
        if self.kind == "sqlite":
            database = self.engine.url.database or ""
            if "mode=ro" in self.url:
                return True, set()
            path = database.removeprefix("file:").split("?")[0]
            may_not = bool(path) and path != ":memory:" and os.path.exists(path) and not os.access(path, os.W_OK)
            return may_not, set()
        if self.kind != "postgresql":
            return False, set()

        def named(privilege: str, on: sa.Table | sa.Column[Any]) -> tuple[str, str, str]:
            return (privilege, on.table.name, on.name) if isinstance(on, sa.Column) else (privilege, on.name, "")

        adding = named("INSERT", datasets_table)
        needs = list(dict.fromkeys([adding, *(named(*need) for wanted in CHANGES.values() for need in wanted)]))
        checks: list[str] = []
        values: dict[str, str] = {}
        for i, (privilege, table, column) in enumerate(needs):
            values |= {f"t{i}": table, f"p{i}": privilege} | ({f"c{i}": column} if column else {})
            may = (
                f"has_sequence_privilege(pg_get_serial_sequence(:t{i}, :c{i}), :p{i})"
                if column
                else f"has_table_privilege(:t{i}, :p{i})"
            )
            checks.append(f"CASE WHEN to_regclass(:t{i}) IS NULL THEN true ELSE {may} END")
        with self.engine.connect() as conn:
            row = conn.execute(sa.text(f"SELECT {', '.join(checks)}"), values).one()
        may_make = dict(zip(needs, row, strict=True))
        refused = {change for change, wanted in CHANGES.items() if not all(may_make[named(*n)] for n in wanted)}
        return not may_make[adding], refused

    def _create_tables(self) -> bool:
        """Create the tables a new store (or one made before them) lacks. A database user that may not create
        tables opens a store that lacks only some of :data:`ADDED_TABLES` as it is (what they hold reads as none);
        a database without any table as empty (:meth:`_open_empty`); lacking any other, the store cannot be
        opened. False when it opened empty (nothing stored to bring up to date)."""
        self._without_tables: set[str] = set()
        try:
            metadata.create_all(self.engine, checkfirst=True)
        except sa.exc.DBAPIError as err:
            self.read_only = self.read_only or _refused(err.orig)
            found = set(sa.inspect(self.engine).get_table_names())
            missing = set(metadata.tables) - found
            if not found and _refused(err.orig):
                self._open_empty()
                return False
            if not missing or not missing <= {t.name for t in ADDED_TABLES}:
                raise
            self._without_tables = missing
            _LOG.warning("store: cannot create %s (%s); they read as empty", sorted(missing), err.orig)
        return True

    def _open_empty(self) -> None:
        """Open a database that holds no table (its owner never opened it as a store) and whose user may not create
        any as an empty store: each connection gets the store's tables as empty temporary ones, each write to them
        refused as the database's own would be (:class:`StoreWriteRefused`): SQLite's read-only file by a trigger,
        PostgreSQL's missing privilege by revoking the user's own (a temporary table is its user's)."""
        self._opened_empty = True
        dialect = self.engine.dialect
        statements = []
        for table in metadata.sorted_tables:
            created = str(sa.schema.CreateTable(table).compile(dialect=dialect)).strip()
            statements.append(created.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
            if self.kind == "postgresql":
                statements.append(f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {table.name} FROM CURRENT_USER")
                continue
            for event in ("INSERT", "UPDATE", "DELETE"):
                statements.append(
                    f"CREATE TEMP TRIGGER {table.name}_{event.lower()}_refused BEFORE {event} ON {table.name} "
                    f"BEGIN SELECT RAISE(ABORT, '{_READ_ONLY}'); END"
                )

        def tables(connection: Any, _record: Any) -> None:
            cursor = connection.cursor()
            for statement in statements:
                cursor.execute(statement)
            cursor.close()
            connection.commit()  # PostgreSQL's driver opened a transaction: the tables outlive the first one

        sa.event.listen(self.engine, "connect", tables)
        self.engine.dispose()  # connections opened before hold no tables
        with self.engine.connect():
            pass  # a user that may not create temporary tables either: the store cannot be opened, said now
        _LOG.info("store: %s holds no table and may only be read; it reads as empty", redact_url(self.url))

    def has_table(self, table: sa.Table) -> bool:
        """Whether the store has ``table`` (one of :data:`ADDED_TABLES`); one this process could not create is
        looked up again on every use: its owner may have created it since."""
        if table.name not in self._without_tables:
            return True
        if sa.inspect(self.engine).has_table(table.name):
            self._without_tables.discard(table.name)
            return True
        return False

    def require_table(self, table: sa.Table, what: str) -> None:
        """Refuse ``what`` (a write that needs ``table``, one of :data:`ADDED_TABLES`) with a
        :class:`RagMetricsError` when the store lacks it."""
        if not self.has_table(table):
            raise RagMetricsError(
                f"{what}: store {redact_url(self.url)} predates its {table.name} table, and the database user that "
                "opened it may not create it; open the store once as a user allowed to create tables (its owner), "
                "then try again"
            )

    def _add_missing_columns(self) -> None:
        """Bring a store made by an older version up to date (safe when several processes open it together).

        A database user that may not alter the tables (not their owner), or a table locked by a long
        transaction, leaves the store as it is: it opens without those columns (read as empty) and a
        later opening by its owner adds them."""
        self._without.clear()
        for table, columns in ADDED_COLUMNS.items():
            if table in self._without_tables:
                continue  # an added table it could not create: made with every column once it is
            present = self._columns(table)
            for column in [c for c in columns if c not in present]:
                declared = metadata.tables[table].c[column]
                kind = declared.type.compile(dialect=self.engine.dialect)
                empty = "" if declared.nullable else " NOT NULL DEFAULT ''"
                try:
                    with self.engine.begin() as conn:
                        if self.kind == "postgresql":
                            conn.execute(sa.text("SET LOCAL lock_timeout = '5s'"))  # never queue every reader behind it
                        conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {column} {kind}{empty}"))
                except sa.exc.DBAPIError as err:
                    if column not in self._columns(table):  # not another process adding it first
                        self._without.add((table, column))
                        _LOG.warning("store: cannot add column %s.%s (%s); it reads as empty", table, column, err.orig)

    def _add_missing_index(self, index: sa.Index) -> None:
        """Add ``index`` (of the labels table) to a store made before it (safe when several processes open it together); a database user
        that may not (not the table's owner), or a table locked by a long transaction, leaves the store without it
        (slower, as it was)."""
        try:
            with self.engine.begin() as conn:
                # looked up first: PostgreSQL's CREATE INDEX IF NOT EXISTS locks the table against writes before it
                # finds the index there, so every open would wait for a label write (and the writes after it)
                if any(found["name"] == index.name for found in sa.inspect(conn).get_indexes(labels_table.name)):
                    return
                if self.kind == "postgresql":
                    conn.execute(sa.text("SET LOCAL lock_timeout = '5s'"))  # never queue every reader behind it
                conn.execute(sa.schema.CreateIndex(index, if_not_exists=True))
        except sa.exc.DBAPIError as err:
            _LOG.warning("store: cannot add index %s (%s); reads that use it are slower", index.name, err.orig)

    def _number_old_versions(self) -> None:
        """Keep the numbers of the versions saved before :data:`version_numbers_table` (:func:`_given_numbers`), so
        that a rename never changes them. One query when every version has its number; a database user that may
        not write leaves them to be derived on each read, the same way. A version deleted between the read and the
        write gets no number: a save of the same content again would keep it, not the one it takes."""
        n, v = version_numbers_table, versions_table
        if not self.has_table(n):
            return
        with self.engine.connect() as conn:
            unnumbered = conn.execute(_UNNUMBERED).first() is not None
            numbers = _given_numbers(conn) if unnumbered else {}
        if not numbers:
            return
        try:
            with self.engine.begin() as conn:
                self._lock(conn, "numbers")
                present: set[str] = set()  # a version deleted since the read gets no number (a save of it again would)
                for chunk in _per_statement(sorted(numbers)):
                    present |= {str(i) for i in conn.execute(sa.select(v.c.id).where(v.c.id.in_(chunk))).scalars()}
                for ident in sorted(present):
                    conn.execute(
                        self._insert(n)
                        .values(id=ident, number=numbers[ident])
                        .on_conflict_do_nothing(index_elements=["id"])  # a number a save wrote since stays
                    )
        except sa.exc.DBAPIError as err:
            _LOG.warning("store: the numbers of %d older versions are derived on each read (%s)", len(numbers), err)

    def _settle_stranded_labels(self) -> None:
        """Move labels an older release left pending on a dataset a version was made from (it kept them there) to
        that dataset's :meth:`pending_place`, where they are read and saved now. A database user that may not write
        leaves them (its store is read only). One query when none is pending: :data:`pending_index` holds no saved
        label."""
        with self.engine.connect() as conn:
            stranded = sorted(set(conn.execute(STRANDED).scalars()))
        for dataset in stranded:
            try:
                place = self.pending_place(str(dataset))
                if place != dataset:
                    with self.engine.begin() as conn:
                        self._move_pending(conn, str(dataset), place)
            except (RagMetricsError, sa.exc.DBAPIError) as err:
                _LOG.warning("store: labels pending on %s left where they are (%s)", dataset, err)

    def _columns(self, table: str) -> set[str]:
        return {c["name"] for c in sa.inspect(self.engine).get_columns(table)}

    def _has(self, table: sa.Table, column: str) -> bool:
        """Whether ``table`` has ``column``. One this process could not add is looked up again on every use: its
        owner may have added it since, and a judge's labels written there would read as people's here."""
        if (table.name, column) not in self._without:
            return True
        if column in self._columns(table.name):
            self._without.discard((table.name, column))
            return True
        return False

    def _put(self, table: sa.Table, row: dict[str, Any], conn: Any) -> None:
        """Insert ``row`` unless its id is stored; a stored row keeps its values, but an empty source, description or
        targets text takes this copy's (stored before they were recorded)."""
        row = {k: v for k, v in row.items() if self._has(table, k)}
        fill = [c for c in ("source", "description", "targets") if row.get(c)]
        statement = self._insert(table).values(**row)
        if fill:
            statement = statement.on_conflict_do_update(
                index_elements=["id"],
                set_={c: sa.func.coalesce(sa.func.nullif(table.c[c], ""), statement.excluded[c]) for c in fill},
            )
        else:
            statement = statement.on_conflict_do_nothing(index_elements=["id"])
        self._write(conn, table, statement)

    @property
    def kind(self) -> str:
        return self.engine.dialect.name

    def _insert(self, table: sa.Table):
        dialect = postgresql if self.kind == "postgresql" else sqlite
        return dialect.insert(table)

    # --- writes ------------------------------------------------------------------------

    def put_dataset(
        self, dataset: Dataset, *, ident: str | None = None, source: str = "", description: str = "", targets: str = ""
    ) -> str:
        """Store ``dataset`` (idempotent: a stored copy keeps its name, and its source, description and targets unless
        they are empty) and return its content id (``ident``: already computed by :func:`dataset_id`; ``source``: the
        file(s) it was read from; ``targets``: the targets it declares, a profile name or ``metric>value`` items,
        checked by :func:`ragmetrics.analysis.targets.declared_targets`)."""
        if targets:
            declared_targets(targets)
        row = _dataset_row(dataset, ident or dataset_id(dataset), source, description, targets)
        with self.engine.begin() as conn:
            self._put(datasets_table, row, conn)
        return str(row["id"])

    def put_run(
        self,
        run: Run,
        dataset: str | None = None,
        *,
        ident: str | None = None,
        rows: bytes | None = None,
        source: str = "",
        tags: Mapping[str, object] | None = None,
    ) -> str:
        """Store ``run`` (idempotent: a stored copy keeps its name, and its source unless empty), link it to ``dataset`` (an id) if
        given; return its content id (``ident``: already computed by :func:`run_id`, which hashes every row;
        ``rows``: the frame's :func:`frame_parquet`, already written; ``source``: the file it was read from;
        ``tags``: metadata set in the same transaction, see :meth:`set_tags`)."""

        name = checked_text(run.name, "a run name", MAX_NAME_BYTES)
        ident = ident or run_id(run)
        if dataset is not None:
            check_id(dataset, "dataset")
        checked = check_tags(tags or {})
        if checked:
            self.require_table(tags_table, f"run {name!r}'s tags")
        blob = _to_parquet(
            {"rows": run.frame if rows is None else rows}, {"name": run.name, "has_scores": run.has_scores}
        )
        now = time.time()
        row = {
            "id": ident,
            "name": name,
            "created_at": now,
            "n_queries": len(dictionary_codes(run.column("query_id"), grouped=True)[1]),
            "n_rows": len(run),
            "size_bytes": len(blob),
            "payload": blob,
            "source": source,
        }
        with self.engine.begin() as conn:
            self._put(runs_table, row, conn)
            self._write_tags(conn, ident, checked, now)
            if dataset is not None:
                conn.execute(
                    self._insert(links_table)
                    .values(dataset_id=dataset, run_id=ident, created_at=now)
                    .on_conflict_do_nothing(index_elements=["dataset_id", "run_id"])
                )
        return ident

    def put_view(self, state: Mapping[str, Any]) -> str:
        """Save a view state (JSON-able mapping) under its content id."""
        ident = view_id(state)
        text = json.dumps(state, sort_keys=True, ensure_ascii=False)
        with self.engine.begin() as conn:
            conn.execute(
                self._insert(views_table)
                .values(id=ident, state=text, created_at=time.time())
                .on_conflict_do_nothing(index_elements=["id"])
            )
        return ident

    def rename_dataset(self, ident: str, name: str) -> None:
        self._rename(datasets_table, check_id(ident, "dataset"), name)

    def rename_run(self, ident: str, name: str) -> None:
        self._rename(runs_table, check_id(ident, "run"), name)

    def _rename(self, table: sa.Table, ident: str, name: str) -> None:
        name = checked_text(name.strip(), "a name", MAX_NAME_BYTES)
        with self.engine.begin() as conn:
            conn.execution_options(**{CHANGE_OPTION: "rename"})
            if self._write(conn, table, sa.update(table).where(table.c.id == ident).values(name=name)).rowcount == 0:
                raise StoreKeyError(f"{table.name[:-1]} {ident} is not in this store")

    def delete_dataset(self, ident: str) -> int:
        """Delete a dataset and its links (runs stay: they may serve other datasets). A qrels version leaves its
        lineage: the versions made from it are then made from its parent (the labels saved in it are now saved in
        the newest of them, whose qrels hold them, and counted among its own, save those of pairs it relabelled,
        :meth:`_restamp`; a label saved only in deleted versions judges no pair), every label given on it and saved
        (in a stored version or a deleted one) reads as given on its parent (it stays in the lineage's history,
        however many of its versions go), and the labels pending on it move to the :meth:`pending_place` of its
        nearest stored ancestor, else of its lineage's newest stored version, so none is lost (unless no dataset of
        its lineage is stored: they go). An original's pending labels go with it; the versions made from it stay
        versions of its lineage, made from it though it is gone: each keeps its number, and the lineage numbers on
        after every number it gave. Returns how many labels went.

        One transaction that holds its lineage's lock, as a save does while it numbers (:meth:`_take_number`), and
        its place's, as a save of it does (a label given on it meanwhile waits, then is given where its labels went,
        :meth:`write_pending`)."""
        check_id(ident, "dataset")
        v, t, n = versions_table, labels_table, version_numbers_table
        pending = (t.c.dataset_id == ident) & t.c.version.is_(None)
        for _ in range(COMMIT_ATTEMPTS):
            root = self.lineage(ident)[-1]
            with self.engine.begin() as conn:
                conn.execution_options(**{CHANGE_OPTION: "delete"})
                self._lock(conn, f"place\x1f{ident}")  # no label written on it while it goes (:meth:`write_pending`)
                self._lock(conn, f"lineage\x1f{root}")
                if self._tree(ident, conn=conn).lineage(ident)[-1] != root:
                    continue  # its original was deleted since the read: the lineage it is in now
                parent = conn.execute(sa.select(v.c.parent).where(v.c.id == ident)).scalar()
                conn.execute(sa.delete(v).where(v.c.id == ident))
                if self.has_table(n):
                    conn.execute(sa.delete(n).where(n.c.id == ident))
                if parent is None:
                    self._keep_top(conn, ident)
                conn.execute(sa.delete(links_table).where(links_table.c.dataset_id == ident))
                self._write(conn, datasets_table, sa.delete(datasets_table).where(datasets_table.c.id == ident))
                place = None
                if parent is not None:  # an original's versions keep their rows (their parent, their numbers)
                    made = sa.select(v.c.id).where(v.c.parent == ident).order_by(v.c.created_at, v.c.id)
                    below = [str(i) for i in conn.execute(made).scalars()]
                    if below:  # its labels are in their qrels, over its parent: saved in the newest of them now
                        moved = self._restamp(conn, ident, below[-1])
                        grown = v.c.n_labels + moved
                        conn.execute(sa.update(v).where(v.c.id == below[-1]).values(n_labels=grown))
                    conn.execute(sa.update(v).where(v.c.parent == ident).values(parent=parent))
                    saved = (t.c.dataset_id == ident) & t.c.version.is_not(None)  # in a stored version or not
                    conn.execute(sa.update(t).where(saved).values(dataset_id=parent))
                    place = self._new_place(conn, str(parent))
                if place is None:  # an original, or nothing stored left to label
                    went = int(conn.execute(sa.delete(t).where(pending)).rowcount or 0)
                else:
                    conn.execute(sa.update(t).where(pending).values(dataset_id=place))
                    went = 0
            return went
        raise RagMetricsError(f"the lineage of dataset {ident} kept changing while it was deleted; delete it again")

    def _restamp(self, conn: Any, deleted: str, child: str) -> int:
        """Stamp with ``child`` (the newest version made from ``deleted``, a version being deleted) the label each
        pair saved in ``deleted`` went in with (a person's over a judge's, the latest), unless a label stamped with
        ``child`` has that pair (``child`` relabelled it: its qrels hold that label's grade); returns how many moved.
        The others stay stamped with ``deleted``: in no stored qrels, they judge no pair."""
        t = labels_table
        columns = ["id", "query_id", "doc_id", "kind", "source", "version"]
        query = sa.select(t.c.id, t.c.query_id, t.c.doc_id, t.c.kind, self._column(t, "source"), t.c.version)
        both = conn.execute(query.where(t.c.version.in_([deleted, child])).order_by(t.c.id))
        rows = pd.DataFrame(both.mappings().all(), columns=columns)
        covered = set(zip(*rows.loc[rows["version"] == child, ["query_id", "doc_id"]].values.T, strict=True))
        rows = rows[rows["version"] == deleted]
        went_in = people_last(rows[rows["kind"] == "judgment"]).drop_duplicates(["query_id", "doc_id"], keep="last")
        ids = [
            int(i)
            for i, q, d in zip(went_in["id"], went_in["query_id"], went_in["doc_id"], strict=True)
            if (q, d) not in covered
        ]
        for chunk in _per_statement(ids):
            conn.execute(sa.update(t).where(t.c.id.in_(chunk)).values(version=child))
        return len(ids)

    def _keep_top(self, conn: Any, original: str) -> None:
        """Record the top of the scale of ``original``, about to be deleted, in its lineage's
        :data:`numbers_table` row when versions of it stay (a store without the column keeps none)."""
        n, d, v = numbers_table, datasets_table, versions_table
        if not self.has_table(n) or not self._has(n, "top"):
            return
        if conn.execute(sa.select(v.c.id).where(v.c.parent == original).limit(1)).first() is None:
            return  # no version of it stays
        blob = conn.execute(sa.select(d.c.payload).where(d.c.id == original)).scalar()
        if blob is None:
            return
        top = top_grade(_grades_of(bytes(blob)))
        row = {"original": original, "last_number": self._last_number(conn, original), "top": top}
        conn.execute(
            self._insert(n).values(**row).on_conflict_do_update(index_elements=["original"], set_={"top": top})
        )

    def _new_place(self, conn: Any, dataset: str) -> str | None:
        """Where the labels pending on a deleted version made from ``dataset`` go, read in ``conn``'s transaction
        once it is gone: the :meth:`pending_place` of ``dataset`` or of its nearest stored ancestor, else of the
        lineage's newest stored version; None when no dataset of the lineage is stored."""
        tree = self._tree(dataset, conn=conn)
        line = tree.lineage(dataset)
        d = datasets_table
        root_kept = conn.execute(sa.select(d.c.id).where(d.c.id == line[-1])).first() is not None
        kept = tree.stored | ({line[-1]} if root_kept else set())
        for ident in line:
            if ident in kept:
                return tree.place(ident)
        if not kept:
            return None
        return tree.place(max(kept, key=lambda i: (tree.edges[i][1], i)))  # no stored ancestor: the newest

    def datasets_of_run(self, run: str) -> list[str]:
        """The stored datasets ``run`` is linked to, oldest link first (a qrels version saved from a dataset is
        linked to that dataset's runs too)."""
        check_id(run, "run")
        query = (
            sa.select(links_table.c.dataset_id)
            .where(links_table.c.run_id == run)
            .order_by(links_table.c.created_at, links_table.c.dataset_id)
        )
        with self.engine.connect() as conn:
            return [str(d) for d in conn.execute(query).scalars()]

    def unlink_run(self, dataset: str, run: str) -> None:
        """Take ``run`` out of ``dataset``'s list; the run stays for other datasets."""
        check_id(dataset, "dataset")
        check_id(run, "run")
        with self.engine.begin() as conn:
            conn.execute(
                sa.delete(links_table).where((links_table.c.dataset_id == dataset) & (links_table.c.run_id == run))
            )

    def delete_run(self, ident: str) -> None:
        check_id(ident, "run")
        tagged = self.has_table(tags_table)
        with self.engine.begin() as conn:
            conn.execution_options(**{CHANGE_OPTION: "delete"})
            if tagged:
                conn.execute(sa.delete(tags_table).where(tags_table.c.run_id == ident))
            conn.execute(sa.delete(links_table).where(links_table.c.run_id == ident))
            conn.execute(sa.delete(runs_table).where(runs_table.c.id == ident))

    # --- run metadata ------------------------------------------------------------------

    def set_tags(self, run: str, tags: Mapping[str, object | None], *, replace: bool = False) -> dict[str, str]:
        """Set ``run``'s tags (a value of None removes its key; ``replace``: the run keeps only ``tags``), in one
        transaction; returns the run's tags after. Keys and values are checked (:mod:`ragmetrics.io.runmeta`)."""

        check_id(run, "run")
        self.require_table(tags_table, f"run {run}'s tags")
        removed = [check_key(k) for k, v in tags.items() if v is None]
        given = {k: v for k, v in tags.items() if v is not None}
        with self.engine.begin() as conn:
            if conn.execute(sa.select(runs_table.c.id).where(runs_table.c.id == run)).first() is None:
                raise StoreKeyError(f"run {run} is not in this store")
            t = tags_table
            stored = dict(conn.execute(sa.select(t.c.key, t.c.value).where(t.c.run_id == run)).all())
            kept = check_tags(given, stored)
            conn.execution_options(**{CHANGE_OPTION: "edit tags"})
            if replace:
                conn.execute(sa.delete(t).where(t.c.run_id == run))
            elif removed:
                conn.execute(sa.delete(t).where((t.c.run_id == run) & t.c.key.in_(removed)))
            self._write_tags(conn, run, kept, time.time())
        return self.tags(run)

    def _write_tags(self, conn: Any, run: str, tags: Mapping[str, str], now: float) -> None:
        if not tags:
            return
        statement = self._insert(tags_table).values(
            [{"run_id": run, "key": k, "value": v, "updated_at": now} for k, v in tags.items()]
        )
        conn.execute(  # an upload's tags too: ON CONFLICT DO UPDATE needs UPDATE on them
            statement.on_conflict_do_update(
                index_elements=["run_id", "key"],
                set_={"value": statement.excluded.value, "updated_at": statement.excluded.updated_at},
            ),
            execution_options={CHANGE_OPTION: "edit tags"},
        )

    def tags(self, run: str) -> dict[str, str]:
        """``run``'s tags, by key."""
        return self.tags_of([check_id(run, "run")]).get(run, {})

    def tags_of(self, runs: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
        """The tags of ``runs`` (every run's when None): ``{run id: {key: value}}`` (runs without tags absent)."""
        t = tags_table
        query = sa.select(t.c.run_id, t.c.key, t.c.value).order_by(t.c.run_id, t.c.key)
        if runs is not None:
            ids = [check_id(r, "run") for r in runs]
            if not ids:
                return {}
            query = query.where(t.c.run_id.in_(ids))
        if not self.has_table(t):
            return {}
        out: dict[str, dict[str, str]] = {}
        with self.engine.connect() as conn:
            for run, key, value in conn.execute(query):
                out.setdefault(run, {})[key] = value
        return out

    # --- judgments -----------------------------------------------------------------------

    def add_label(
        self,
        dataset: str,
        query_id: str,
        doc_id: str,
        label: int,
        *,
        author: str = "anonymous",
        kind: str = "judgment",
        expect: int | object | None = ANY_LABEL,
        accepted: str | None = None,
    ) -> int:
        """Keep one label at once, pending on ``dataset`` (its :meth:`pending_place`) until :meth:`commit_labels`
        makes a version of it; returns its row id. ``accepted``: the kind of the suggestion (``suggestion:<rule>``)
        the label accepts, kept beside it in the same transaction (a save never takes one without the other).

        ``expect``: the pair's latest judgment on ``dataset``'s lineage (:meth:`family`; pending or saved) the judge
        saw, by row id (None: it was unlabelled). When another one was given since, nothing is stored and
        :class:`LabelConflict` names it: a label given meanwhile (another tab, judge or server) is not silently
        overwritten. Checked and written in one transaction."""
        grade = check_grade(label, self.max_grade(dataset), f"dataset {dataset}'s scale")
        query_id = self.labelled_query(dataset, query_id)
        doc_id = checked_text(str(doc_id), "a document id")
        row = {
            "query_id": query_id, "doc_id": doc_id, "label": grade,
            "author": checked_text(author or "anonymous", "an author", MAX_NAME_BYTES), "created_at": time.time(),
            "kind": checked_text(kind, "a label kind", MAX_NAME_BYTES), "version": None,
        }  # fmt: skip

        def write(conn: Any, place: str, tree: VersionTree) -> Any:
            if expect is not ANY_LABEL:
                family = tree.family(dataset)
                self._lock(conn, f"{family[0]}\x1f{query_id}\x1f{doc_id}")  # the pair's check-then-write
                other = self._latest_label(conn, family, query_id, doc_id)
                if other is not None and other["id"] != expect:
                    raise LabelConflict(dataset, other)
            judging = {CHANGE_OPTION: "judge"}
            key = conn.execute(
                sa.insert(labels_table).values(**row, dataset_id=place), execution_options=judging
            ).inserted_primary_key
            if accepted:
                kind_text = checked_text(accepted, "a label kind", MAX_NAME_BYTES)
                conn.execute(
                    sa.insert(labels_table).values(**row | {"kind": kind_text}, dataset_id=place),
                    execution_options=judging,
                )
            return key

        key = self._write_pending(dataset, write)
        if key is None:  # every supported database returns the id it gave
            raise RagMetricsError("the store gave the new label no id")
        return int(key[0])

    def _by_a_person(self, t: sa.Table) -> Any:
        """A person's judgment (not a suggestion, not a judge's label), pending or saved in a stored version: what
        makes a pair judged for the people judging it (a judge's label neither hides a pair from them nor
        conflicts with their label, and one saved only in a deleted version is in no stored qrels; a version an older
        release deleted leaves its row, and the versions made from it hold its labels)."""
        stored = sa.exists().where(datasets_table.c.id == t.c.version)
        below = sa.exists().where(versions_table.c.parent == t.c.version)  # an older release's delete kept its row
        kept = t.c.version.is_(None) | stored | below
        return (t.c.kind == "judgment") & self._a_persons_row(t) & kept

    def _a_persons_row(self, t: sa.Table) -> Any:
        """A row a person gave: their judgment or the suggestion they accepted (not a judge's label)."""
        if not self._has(t, "source"):
            return sa.true()
        return (t.c.kind != "judgment") | (t.c.source == "")

    def _lock(self, conn: Any, key: str, *, shared: bool = False) -> None:
        """Hold the lock named ``key`` until ``conn``'s transaction ends (``shared``: together with other shared
        holders of it, never with an exclusive one). PostgreSQL: an advisory transaction lock on the key's 64-bit
        hash. SQLite has one such lock, the database's write lock, whatever the key and shared or not: a DELETE that
        deletes nothing takes it. A transaction's first lock must be its first statement: SQLite's reads then see every
        transaction committed before it (a read first would pin an older snapshot, and the write lock then fail at
        once), and what the transaction checks holds until it commits."""
        if self.kind == "postgresql":
            lock = sa.func.pg_advisory_xact_lock_shared if shared else sa.func.pg_advisory_xact_lock
            conn.execute(sa.select(lock(sa.func.hashtextextended(sa.literal(key), 0))))
        else:
            conn.execute(sa.delete(labels_table).where(sa.false()))

    def _latest_label(self, conn: Any, family: Sequence[str], query_id: str, doc_id: str) -> dict[str, Any] | None:
        t = labels_table
        found = conn.execute(
            sa.select(t.c.id, t.c.label, t.c.author, t.c.created_at, t.c.version)
            .where(t.c.dataset_id.in_(list(family)) & (t.c.query_id == query_id) & (t.c.doc_id == doc_id))
            .where(self._by_a_person(t))
            .order_by(t.c.id.desc())
            .limit(1)
        ).first()
        return None if found is None else {"query_id": query_id, "doc_id": doc_id, **found._asdict()}

    def _judged_pairs(self, conn: Any, dataset: str, among: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of the (query id, document id) pairs ``among`` that ``dataset``'s qrels judge (the dataset's other
        tables left unread), read in ``conn``; a dataset's id is its content, so they never change once read.
        :class:`StoreKeyError` when ``dataset`` is not stored (deleted meanwhile)."""
        blob = conn.execute(sa.select(datasets_table.c.payload).where(datasets_table.c.id == dataset)).scalar()
        if blob is None:
            raise StoreKeyError(f"dataset {dataset} is not in this store (deleted meanwhile?); no label was kept")
        qrels = _qrels_of(bytes(blob), ["query_id", "doc_id"])
        if qrels is None or not among:
            return set()
        ids = [qrels.column(c).cast(pa.string()) for c in ("query_id", "doc_id")]
        near = pc.is_in(ids[1], value_set=pa.array(sorted({d for _, d in among}), pa.string()))
        pairs = zip(*(pc.filter(column, near).to_pylist() for column in ids), strict=True)
        return {pair for pair in pairs if pair in among}

    def latest_label(self, dataset: str, query_id: str, doc_id: str) -> dict[str, Any] | None:
        """The pair's latest judgment by a person on ``dataset``'s lineage (:meth:`family`), pending or saved: ``id,
        label, author, created_at, version`` (None while pending), or None. A judge's label is not one."""
        check_id(dataset, "dataset")
        with self.engine.connect() as conn:
            return self._latest_label(conn, self.family(dataset), str(query_id), str(doc_id))

    def labelled_pairs(self, dataset: str) -> pd.DataFrame:
        """The pairs judged by a person's label on ``dataset``'s lineage (:meth:`family`), pending or saved in a
        version: ``query_id, doc_id`` (a judge's label leaves its pair to be judged)."""
        return self._labelled_pairs(self.family(check_id(dataset, "dataset")))

    def _labelled_pairs(self, family: Sequence[str]) -> pd.DataFrame:
        t = labels_table
        query = sa.select(t.c.query_id, t.c.doc_id).where(t.c.dataset_id.in_(list(family)) & self._by_a_person(t))
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query.distinct()).mappings().all(), columns=["query_id", "doc_id"])

    def claim_pair(
        self, dataset: str, candidates: Sequence[tuple[str, str]], holder: str, *, seconds: float = CLAIM_SECONDS
    ) -> Claim | None:
        """The pair to show the judging session ``holder`` next: the first of ``candidates`` (query, document) that no
        other session holds and no label judges on ``dataset``'s lineage (:meth:`family`; pending or saved) at this
        moment, now held by ``holder`` for ``seconds`` (its other claims on the lineage let go). In one transaction, so sessions on any
        number of servers are offered different pairs. When other sessions hold every unlabelled candidate, the
        first of those comes back with ``shared`` set (the page says so; a claim not renewed, a closed tab's,
        lapses); None when every candidate is labelled."""
        check_id(dataset, "dataset")
        holder = checked_text(holder, "a judging session", MAX_NAME_BYTES)
        c, t = claims_table, labels_table
        self.require_table(c, f"a claim of the pair a judging session is shown on dataset {dataset}")
        family = self.family(dataset)
        root = family[0]  # claims are kept on the lineage's original: judges on two of its versions see each other's
        now = time.time()
        with self.engine.begin() as conn:
            self._lock(conn, f"claims\x1f{root}")  # the check and the claim one step
            conn.execute(
                sa.delete(c).where((c.c.dataset_id == root) & ((c.c.expires_at < now) | (c.c.holder == holder))),
                execution_options={CHANGE_OPTION: "judge"},
            )
            held = {(q, d) for q, d in conn.execute(sa.select(c.c.query_id, c.c.doc_id).where(c.c.dataset_id == root))}
            labelled = {
                (q, d)
                for q, d in conn.execute(
                    sa.select(t.c.query_id, t.c.doc_id).where(t.c.dataset_id.in_(family) & self._by_a_person(t))
                )
            }
            shared: Claim | None = None
            for query_id, doc_id in candidates:
                pair = (str(query_id), str(doc_id))
                if pair in labelled:
                    continue
                if pair in held:
                    shared = shared or Claim(pair[0], pair[1], True)
                    continue
                conn.execute(sa.insert(c).values(dataset_id=root, query_id=pair[0], doc_id=pair[1], holder=holder,
                                                 expires_at=now + seconds))  # fmt: skip
                return Claim(pair[0], pair[1], False)
        return shared

    def renew_claims(self, dataset: str, holder: str, *, seconds: float = CLAIM_SECONDS) -> int:
        """Hold ``holder``'s claims on ``dataset``'s lineage ``seconds`` more (a judge still reading its pair); how
        many it had (0: lapsed and taken, or none)."""
        c = claims_table
        if not self.has_table(c):
            return 0  # none held
        with self.engine.begin() as conn:
            done = conn.execute(
                sa.update(c)
                .where((c.c.dataset_id == self.family(dataset)[0]) & (c.c.holder == holder))
                .values(expires_at=time.time() + seconds),
                execution_options={CHANGE_OPTION: "judge"},
            )
        return int(done.rowcount or 0)

    def release_claims(self, dataset: str | None, holder: str) -> None:
        """Let go of ``holder``'s claims on ``dataset`` (nothing left to show it), or on every dataset (``None``: the
        judging session is gone)."""
        c = claims_table
        if not self.has_table(c):
            return  # none held
        mine = c.c.holder == holder
        with self.engine.begin() as conn:
            conn.execute(
                sa.delete(c).where(mine if dataset is None else mine & (c.c.dataset_id == self.family(dataset)[0])),
                execution_options={CHANGE_OPTION: "judge"},
            )

    def pending_labels(self, dataset: str, *, kind: str = "judgment", judges: bool = True) -> pd.DataFrame:
        """The labels given on ``dataset`` not yet in a version: the one per (query, document) a version would take
        (the latest, a person's over any judge's: :func:`people_last`), oldest first: ``query_id, doc_id, label,
        author, created_at, id`` (the row id, for ``expect``). ``judges=False``: people's only. Read where they are
        pending: ``dataset``'s :meth:`pending_place`."""
        dataset = self.pending_place(dataset)
        t = labels_table
        columns = ["query_id", "doc_id", "label", "author", "created_at", "id"]
        query = (
            sa.select(
                t.c.query_id, t.c.doc_id, t.c.label, t.c.author, t.c.created_at, t.c.id, self._column(t, "source")
            )
            .where((t.c.dataset_id == dataset) & t.c.version.is_(None) & (t.c.kind == kind))
            .where(sa.true() if judges else self._a_persons_row(t))
            .order_by(t.c.id)
        )
        with self.engine.connect() as conn:
            frame = pd.DataFrame(conn.execute(query).mappings().all(), columns=[*columns, "source"])
        latest = people_last(frame).drop_duplicates(["query_id", "doc_id"], keep="last").sort_values("id")
        return latest[columns].reset_index(drop=True)

    def withdraw_label(
        self, dataset: str, query_id: str, doc_id: str, *, expect: int | object | None = ANY_LABEL
    ) -> int:
        """Take back the pending label of one pair (and the suggestion it accepted) before it is saved: the pair is
        unlabelled again; a judge's label of it stays. Returns how many stored rows went (0: nothing was pending).

        ``expect``: the label the judge saw, by row id: when another was given for the pair since, nothing goes and
        :class:`LabelConflict` names it (a label given meanwhile is never withdrawn unseen). Taken from ``dataset``'s
        :meth:`pending_place`."""
        t = labels_table
        query_id, doc_id = str(query_id), str(doc_id)

        def write(conn: Any, place: str, tree: VersionTree) -> int:
            if expect is not ANY_LABEL:
                family = tree.family(dataset)
                self._lock(conn, f"{family[0]}\x1f{query_id}\x1f{doc_id}")  # the pair's check-then-write
                other = self._latest_label(conn, family, query_id, doc_id)
                if other is not None and other["id"] != expect:
                    raise LabelConflict(dataset, other, "it was not withdrawn")
            done = conn.execute(
                sa.delete(t).where(
                    (t.c.dataset_id == place)
                    & t.c.version.is_(None)
                    & (t.c.query_id == query_id)
                    & (t.c.doc_id == doc_id)
                    & self._a_persons_row(t)
                ),
                execution_options={CHANGE_OPTION: "judge"},
            )
            return int(done.rowcount or 0)

        return int(self._write_pending(dataset, write))

    def commit_labels(self, dataset: str, *, author: str = "anonymous", judges: bool = True) -> SavedVersion | None:
        """Make the labels pending on ``dataset`` (on its :meth:`pending_place`, which the version is made from) a new
        qrels version: a dataset whose judgments are the parent's plus the labels (the latest label of a pair wins,
        a person's over a judge's), with the parent's runs. Returns its id and that this call made it
        (:class:`SavedVersion`; None when nothing is pending).
        ``judges=False``: people's labels only; the judges' move to the new version, pending there (for agreement
        and corrected means on the lineage, and for a later save of that version to take), and their pairs stay
        unjudged. A judge's label of a pair a person labelled in a saved version is never taken (it moves on,
        pending).

        The version takes exactly the labels it read, by id: they are stamped in the transaction that stores the
        version, and every label left pending on the parent (another tab's, judge's or server's, given meanwhile)
        moves to the version, pending there for the next save. When a label read was withdrawn or saved by another
        save meanwhile, nothing is stored and the labels are read again; when another save took them all, its
        version is returned, not made by this call. Labels that give every pair the grade the parent already holds
        make no version (a dataset is its content: the version would be the parent itself): refused, and they stay
        pending, as do labels whose qrels another stored dataset already has. A deleted version saved again (the
        same content, so the same id) holds this save's labels only (:meth:`_set_aside`)."""

        taken: list[int] = []  # the labels the last attempt read, when another writer changed them
        for _ in range(COMMIT_ATTEMPTS):
            try:
                tree = self._tree(dataset, stored=True)
            except StoreKeyError:
                if not taken:
                    raise
                self._deleted_as_it_saved(dataset, taken)
            dataset = tree.place(dataset)
            rows = self._pending_rows(dataset)
            a_judges = ~rows["persons"]
            if judges:  # a judge's label never goes in over a person's saved on the lineage (a pending one wins below)
                pending_people = set(zip(rows.loc[~a_judges, "query_id"], rows.loc[~a_judges, "doc_id"], strict=True))
                saved = set(self._labelled_pairs(tree.family(dataset)).itertuples(index=False, name=None))
                saved -= pending_people
                theirs = [(q, d) in saved for q, d in zip(rows["query_id"], rows["doc_id"], strict=True)]
                rows = rows[~(a_judges & pd.Series(theirs, index=rows.index, dtype=bool))]
            else:
                rows = rows[~a_judges]
            judgments = people_last(rows[rows["kind"] == "judgment"]).drop_duplicates(
                ["query_id", "doc_id"], keep="last"
            )
            if judgments.empty:
                by_another = self._saved_by_another(taken)
                return None if by_another is None else SavedVersion(by_another, made=False)
            taken = [int(i) for i in rows["id"]]  # the labels and the accepted suggestions they came from
            try:
                parent = self.get_dataset(dataset)
            except StoreKeyError:
                self._deleted_as_it_saved(dataset, taken)  # since its labels were read
            labels = judgments.rename(columns={"label": "relevance"})[["query_id", "doc_id", "relevance"]]
            merged = merge(parent, labels, override=True).dataset
            root = tree.lineage(dataset)[-1]
            listed = self.list_datasets().set_index("id")
            original = listed["name"].get(root, _MADE.sub("", parent.name))  # a deleted one's: as its versions say
            title = f"{original} (+{len(labels)} label{'' if len(labels) == 1 else 's'}"
            # the version keeps what its parent says of itself: its description and the targets it declares
            said = {c: str(listed[c].get(dataset) or "") for c in ("description", "targets")}
            ident = dataset_id(merged)  # the name is no content
            if ident in listed.index and ident != dataset and self._tree(dataset).place(dataset) != dataset:
                continue  # another save of this place since the read (of these very labels?): read them again there
            self._check_new(ident, dataset, listed, len(labels))
            now = time.time()
            try:
                with self.engine.begin() as conn:
                    conn.execution_options(**{CHANGE_OPTION: "save versions"})
                    self._lock(conn, f"place\x1f{dataset}")
                    self._lock(conn, f"lineage\x1f{root}")  # the number: one save of the lineage at a time
                    now_tree = self._tree(dataset, conn=conn)
                    if now_tree.lineage(dataset)[-1] != root:  # its original deleted since the read: the lock is
                        raise _LabelsChanged  # another lineage's, and the number another's; read again
                    self._set_aside(conn, ident)
                    self._stamp(conn, taken, dataset, ident)
                    number = self._take_number(conn, root, now_tree)
                    row = _version_row(merged, ident, title, number, dataset, said)
                    self._move_pending(conn, dataset, ident)  # the judges' left out, and any given since the read
                    self._put(datasets_table, row, conn)
                    this_save = {"author": author or "anonymous", "created_at": now, "n_labels": len(labels)}
                    conn.execute(  # over the row an older release's delete left for this content: this save's
                        self._insert(versions_table)
                        .values(id=ident, parent=dataset, **this_save)
                        .on_conflict_do_update(index_elements=["id"], set_=this_save)
                    )
                    if self.has_table(version_numbers_table):  # a row left for a deleted version of this content:
                        conn.execute(  # the number just taken is its name's
                            self._insert(version_numbers_table)
                            .values(id=ident, number=number)
                            .on_conflict_do_update(index_elements=["id"], set_={"number": number})
                        )
                    runs = conn.execute(
                        sa.select(links_table.c.run_id).where(links_table.c.dataset_id == dataset)
                    ).scalars()
                    for run in list(runs):
                        conn.execute(
                            self._insert(links_table)
                            .values(dataset_id=ident, run_id=run, created_at=now)
                            .on_conflict_do_nothing(index_elements=["dataset_id", "run_id"])
                        )
            except _LabelsChanged:
                continue
            return SavedVersion(ident, made=True)
        raise RagMetricsError(
            f"the labels pending on dataset {dataset} kept changing while they were saved "
            f"({COMMIT_ATTEMPTS} attempts); save again"
        )

    def _set_aside(self, conn: Any, ident: str) -> None:
        """Stamp the labels a deleted save of the version ``ident`` left stamped with it (saved again: the same
        content, the same id) with :func:`set_aside_stamp`, in the transaction that saves it again, so that the
        version's labels and counts are this save's own (the labels stay given where they were, in the lineage's
        history). Nothing when ``ident`` is stored."""
        t, d = labels_table, datasets_table
        gone = (t.c.version == ident) & ~sa.exists().where(d.c.id == ident)
        conn.execute(sa.update(t).where(gone).values(version=set_aside_stamp(ident)))

    def _deleted_as_it_saved(self, dataset: str, taken: Sequence[int]) -> NoReturn:
        """Refuse a save whose place ``dataset`` was deleted after it read the labels ``taken``, saying where the
        delete moved those still pending (:meth:`delete_dataset`)."""
        t = labels_table
        places: set[str] = set()
        with self.engine.connect() as conn:
            for chunk in _per_statement(taken):
                query = sa.select(t.c.dataset_id).where(t.c.id.in_(chunk) & t.c.version.is_(None))
                places |= {str(p) for p in conn.execute(query.distinct()).scalars()}
        where = (
            f"the labels it read are pending on dataset {', '.join(sorted(places))}: save them there"
            if places
            else "none of the labels it read is pending any more"
        )
        raise RagMetricsError(
            f"dataset {dataset} was deleted while its labels were saved: no version was saved; {where}"
        )

    def _last_number(self, conn: Any, root: str, tree: VersionTree | None = None) -> int:
        """The largest version number the lineage of the original ``root`` has given: the largest of its
        :data:`numbers_table` row, the number any version row below it holds (:data:`version_numbers_table`, or the
        ``vN`` of its name: saved before the tables, or by an older release) and how many version rows are below it.
        ``tree``: the lineage's :class:`VersionTree`, read in ``conn``'s transaction (read when not given)."""
        d, n = datasets_table, version_numbers_table
        below = sorted((tree or self._tree(root, conn=conn)).below(root))
        given = [len(below)]
        if self.has_table(numbers_table):
            query = sa.select(numbers_table.c.last_number).where(numbers_table.c.original == root)
            given.append(int(conn.execute(query).scalar() or 0))
        numbered = self.has_table(n)
        for chunk in _per_statement(below):
            if numbered:
                given += [int(i) for i in conn.execute(sa.select(n.c.number).where(n.c.id.in_(chunk))).scalars()]
            names = conn.execute(sa.select(d.c.name).where(d.c.id.in_(chunk)))
            given += [int(m.group(1)) for name in names.scalars() if (m := _GIVEN.search(str(name or "")))]
        return max(given)

    def _keep_number(self, conn: Any, root: str, number: int) -> None:
        """Record ``number`` as given in the lineage of the original ``root`` (a larger one recorded stays)."""
        n = numbers_table
        if not self.has_table(n):
            return
        statement = self._insert(n).values(original=root, last_number=number)
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=["original"],
                set_={"last_number": sa.case((n.c.last_number < number, number), else_=n.c.last_number)},
            )
        )

    def _take_number(self, conn: Any, root: str, tree: VersionTree | None = None) -> int:
        """The next version number of the lineage of the original ``root`` (``tree``: as :meth:`_last_number`),
        recorded as given (under the lineage's lock: one save of a lineage numbers at a time). Numbered across the
        lineage, a version of a version is v2; a deleted version's number is never given again."""
        number = self._last_number(conn, root, tree) + 1
        self._keep_number(conn, root, number)
        return number

    def _check_new(self, ident: str, parent: str, listed: pd.DataFrame, n_labels: int) -> None:
        """Refuse a version whose content is its parent's (every label restates a judgment it holds), another stored
        dataset's, or a deleted dataset's of any lineage that is a version row or the parent of one, unless that is
        its own row made from ``parent`` (the same version saved again, deleted by an older release): a dataset is
        its content, so it would be that dataset, not a new version; a deleted original or ancestor saved again
        below itself would make its lineage a cycle, and another lineage's would join the two."""
        labels = f"{n_labels} pending label(s)"
        if ident == parent:
            raise RagMetricsError(
                f"the {labels} give every pair the grade dataset {listed['name'].get(parent, parent)} ({parent}) "
                "already holds: they change no judgment, so no new version was saved (they stay pending and count "
                "in the judges' agreement; withdraw them, or save them with labels that change a judgment)"
            )
        v = versions_table
        with self.engine.connect() as conn:  # the id and the parent columns are indexed
            rows = conn.execute(sa.select(v.c.id, v.c.parent).where((v.c.id == ident) | (v.c.parent == ident)))
            known = {(str(i), str(up)) for i, up in rows}
        again = {(i, up) for i, up in known if i == ident} == {(ident, parent)}  # its own row, left by a delete
        if ident in listed.index or (known and not again):
            where = "already stored" if ident in listed.index else "deleted, and versions of it or its row stay"
            raise RagMetricsError(
                f"the {labels} make qrels equal to those of dataset {listed['name'].get(ident, ident)} ({ident}), "
                f"{where} (a dataset is its content: labels that undo a version's are that version's parent): "
                "no new version was saved; they stay pending (withdraw them)"
                + (", and that dataset is in the picker" if ident in listed.index else "")
            )

    def _pending_rows(self, dataset: str) -> pd.DataFrame:
        """Every label row pending on ``dataset`` (every kind), oldest first: ``id, query_id, doc_id, label, kind,
        source, persons`` (``persons``: a row a person gave, :meth:`_a_persons_row`)."""
        t = labels_table
        persons = sa.case((self._a_persons_row(t), True), else_=False).label("persons")
        query = (
            sa.select(t.c.id, t.c.query_id, t.c.doc_id, t.c.label, t.c.kind, self._column(t, "source"), persons)
            .where((t.c.dataset_id == dataset) & t.c.version.is_(None))
            .order_by(t.c.id)
        )
        columns = ["id", "query_id", "doc_id", "label", "kind", "source", "persons"]
        with self.engine.connect() as conn:
            frame = pd.DataFrame(conn.execute(query).mappings().all(), columns=columns)
        return frame.astype({"persons": bool})

    def _move_pending(self, conn: Any, dataset: str, version: str) -> int:
        """Move every label still pending on ``dataset`` to ``version``, pending there; returns how many moved."""
        t = labels_table
        done = conn.execute(
            sa.update(t).where((t.c.dataset_id == dataset) & t.c.version.is_(None)).values(dataset_id=version)
        )
        return int(done.rowcount or 0)

    def max_grade(self, dataset: str) -> int:
        """The top of ``dataset``'s label scale ``0..top`` (:func:`ragmetrics.foundation.grades.max_grade`: its
        largest grade, at least 1; a version's at least its lineage original's, whose scale its labels were given
        on and a judge grades on, though its labels may have taken the top grades away; a deleted original's as its
        lineage kept it, :data:`numbers_table`), which :meth:`add_label` holds a grade to; read once per store
        object. :class:`StoreKeyError` when ``dataset`` is not stored (deleted meanwhile)."""
        check_id(dataset, "dataset")
        if dataset not in self._tops:
            original = self.lineage(dataset)[-1]
            grades: list[Any] = []
            with self.engine.connect() as conn:
                for ident in dict.fromkeys((dataset, original)):
                    blob = conn.execute(
                        sa.select(datasets_table.c.payload).where(datasets_table.c.id == ident)
                    ).scalar()
                    if blob is None and ident == dataset:
                        raise StoreKeyError(
                            f"dataset {dataset} is not in this store (deleted meanwhile?); no label was kept"
                        )
                    grades += [] if blob is None else _grades_of(bytes(blob))
                if original != dataset and self.has_table(numbers_table) and self._has(numbers_table, "top"):
                    kept = numbers_table.c.top  # the deleted original's, kept with its lineage's numbers
                    grades.append(conn.execute(sa.select(kept).where(numbers_table.c.original == original)).scalar())
            self._tops[dataset] = top_grade(grades)
        return self._tops[dataset]

    def labelled_query(self, dataset: str, query_id: object) -> str:
        """``query_id`` as a label on ``dataset`` keeps it: an id :func:`checked_text` takes that is one of the
        dataset's queries (read once per store object); a label of another query, even the same id with blanks around
        it, would turn into a query of the version a save makes, with no text. Else a clear error."""
        text = checked_text(str(query_id), "a query id")
        if dataset not in self._queries:
            self._queries[dataset] = frozenset(str(q) for q in self.get_dataset(dataset).query_ids)
        if text not in self._queries[dataset]:
            raise RagMetricsError(f"query {text[:80]!r} is not a query of dataset {dataset}; no label was kept")
        return text

    def pending_place(self, dataset: str) -> str:
        """Where the labels given on ``dataset`` are pending, and what a save of them is made from: ``dataset`` until
        a version is made from it, then the newest version made from it, followed down the same way. A lineage
        grows in a line: a tab, judge or server still on ``dataset`` once another saved a version of it labels
        the version (:meth:`commit_labels` moves what it leaves pending there), never a dataset nobody saves
        from. :class:`StoreKeyError` when ``dataset`` is not stored (deleted meanwhile)."""
        return self._tree(dataset, stored=True).place(dataset)

    def _tree(self, dataset: str, *, stored: bool = False, conn: Any = None) -> VersionTree:
        """The versions of ``dataset``'s lineage, read in one query (:class:`VersionTree`). ``stored``: first check
        that ``dataset`` is stored (:class:`StoreKeyError` when not: deleted meanwhile, no label was kept).
        ``conn``: read in that transaction."""
        current = check_id(dataset, "dataset")
        if conn is None:
            with self.engine.connect() as own:
                return self._tree(current, stored=stored, conn=own)
        if (
            stored
            and conn.execute(sa.select(datasets_table.c.id).where(datasets_table.c.id == current)).first() is None
        ):
            raise StoreKeyError(f"dataset {current} is not in this store (deleted meanwhile?); no label was kept")
        v, d = versions_table, datasets_table
        # every version row, a deleted one's too (an older release's delete left it): it links its versions to the line
        up = sa.select(v.c.id, v.c.parent).where(v.c.id == current).cte("up", recursive=True)
        up = up.union(sa.select(v.c.id, v.c.parent).join(up, v.c.id == up.c.parent))
        line = sa.union(sa.select(up.c.parent), sa.select(sa.literal(current)))  # the lineage: whose versions count
        edge = (v.c.id, v.c.parent, v.c.created_at)
        down = sa.select(*edge).where(v.c.parent.in_(line)).cte("down", recursive=True)
        down = down.union(sa.select(*edge).join(down, v.c.parent == down.c.id))
        found = sa.select(down.c.id, down.c.parent, down.c.created_at, d.c.id.label("kept"))
        rows = conn.execute(found.select_from(down.outerjoin(d, d.c.id == down.c.id))).all()
        edges = {str(i): (str(p), float(t)) for i, p, t, _ in rows}
        return VersionTree(edges, [str(i) for i, _, _, kept in rows if kept is not None])

    def write_pending(self, dataset: str, write: Callable[[Any, str], T]) -> T:
        """``write(conn, place)`` in a transaction that holds ``dataset``'s :meth:`pending_place` against a save or
        a delete of it, once that place is checked to be stored and to have no version (else the place is read
        again): a label written there is either read by a save or moved by it or by the delete, never left behind on
        a dataset a version was made from or on a deleted one. Returns what ``write`` returns."""
        return self._write_pending(dataset, lambda conn, place, _tree: write(conn, place))

    def _write_pending(self, dataset: str, write: Callable[[Any, str, VersionTree], T]) -> T:
        """:meth:`write_pending`, ``write`` also given the lineage's :class:`VersionTree` it found the place in
        (read once per attempt)."""
        for _ in range(COMMIT_ATTEMPTS):
            tree = self._tree(dataset, stored=True)
            place = tree.place(dataset)
            with self.engine.begin() as conn:
                self._lock(conn, f"place\x1f{place}", shared=True)  # a save or delete of the place holds it
                v, d = versions_table, datasets_table
                kept = conn.execute(sa.select(d.c.id).where(d.c.id == place)).first() is not None
                child = sa.select(v.c.id).join(d, d.c.id == v.c.id).where(v.c.parent == place).limit(1)
                if kept and conn.execute(child).first() is None:  # as the tree reads it: a stored version
                    return write(conn, place, tree)
        raise RagMetricsError(f"versions of dataset {dataset} kept being saved while a label was given; give it again")

    def _stamp(self, conn: Any, ids: Sequence[int], place: str, version: str) -> None:
        """Stamp the labels ``ids`` pending on ``place`` with ``version``; :class:`_LabelsChanged` (the transaction
        rolls back) unless every one of them was still pending there (a save of ``place`` meanwhile stamped them,
        or moved them, pending, to its version: a save from ``place`` now would make a second version of it)."""
        t = labels_table
        stamped = 0
        for chunk in _per_statement(ids):
            done = conn.execute(
                sa.update(t)
                .where(t.c.id.in_(chunk) & t.c.version.is_(None) & (t.c.dataset_id == place))
                .values(version=version)
            )
            stamped += int(done.rowcount or 0)
        if stamped != len(ids):
            raise _LabelsChanged

    def _saved_by_another(self, ids: Sequence[int]) -> str | None:
        """The version that saved every one of the labels ``ids`` (read by a save another save overtook), or None."""
        if not ids:
            return None
        t = labels_table
        found: set[str | None] = set()
        with self.engine.connect() as conn:
            for chunk in _per_statement(ids):
                found |= set(conn.execute(sa.select(t.c.version).where(t.c.id.in_(chunk))).scalars())
        return found.pop() if len(found) == 1 and None not in found else None

    def versions(self, dataset: str | Sequence[str]) -> pd.DataFrame:
        """The qrels versions made from ``dataset`` (or from any of several, in one query), oldest first:
        ``id, parent, author, created_at, n_labels, number``: ``number`` the version's number in its lineage, as its
        save gave it (:data:`version_numbers_table`; the ``vN`` of its name), the one every front end shows."""
        return self._versions(versions_table.c.parent, dataset)

    def versions_among(self, datasets: Sequence[str]) -> pd.DataFrame:
        """Those of ``datasets`` that are qrels versions, as :meth:`versions` has them (whether their parent is
        stored or not: a version of a deleted original is still a version)."""
        return self._versions(versions_table.c.id, datasets)

    def _versions(self, key: Any, dataset: str | Sequence[str]) -> pd.DataFrame:
        """:meth:`versions`: the version rows whose ``key`` column is one of ``dataset``."""
        parents = [check_id(d, "dataset") for d in ([dataset] if isinstance(dataset, str) else dataset)]
        t, n = versions_table, version_numbers_table
        columns = ["id", "parent", "author", "created_at", "n_labels", "number"]
        rows: list[Any] = []
        kept = self.has_table(n)
        with self.engine.connect() as conn:
            for chunk in _per_statement(parents):
                if kept:
                    query = sa.select(*(t.c[c] for c in columns[:-1]), n.c.number).select_from(
                        t.outerjoin(n, n.c.id == t.c.id)
                    )
                else:
                    query = sa.select(*(t.c[c] for c in columns[:-1]), sa.null().label("number"))
                rows += conn.execute(query.where(key.in_(chunk))).mappings().all()
            if any(row["number"] is None for row in rows):  # saved before the numbers were kept, and not kept since
                given = _given_numbers(conn, kept=kept)
                rows = [{**row, "number": given.get(str(row["id"]), row["number"])} for row in rows]
        frame = pd.DataFrame(rows, columns=columns)
        frame["number"] = frame["number"].astype(int)
        return frame.sort_values("created_at", kind="stable").reset_index(drop=True)

    def lineage(self, dataset: str) -> list[str]:
        """``dataset`` and its ancestors, itself first (a dataset that is no version has only itself)."""
        return self._tree(dataset).lineage(dataset)

    def family(self, dataset: str) -> list[str]:
        """The qrels versions of ``dataset``'s lineage: its original first, then every version made from it or from
        its versions. Judging looks at the labels given on all of them: a pair labelled on one version (pending, or
        saved) is judged for a judge on another."""
        return self._tree(dataset).family(dataset)

    # --- reads -------------------------------------------------------------------------

    def _payload(self, table: sa.Table, ident: str, what: str) -> tuple[str, bytes]:
        check_id(ident, what)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(table.c.name, table.c.payload).where(table.c.id == ident)).first()
        if row is None:
            raise StoreKeyError(
                f"{what} {ident} is not in this store; upload the same {what} file on this server "
                f"(the same content gets the same id) or point it at the store that has it"
            )
        return row[0], row[1]

    def get_dataset(self, ident: str) -> Dataset:
        name, blob = self._payload(datasets_table, ident, "dataset")
        tables, meta = _from_parquet(blob)
        queries = tables["queries"]
        if "expected_keywords" in queries.columns:
            queries["expected_keywords"] = [list(v) if v is not None else [] for v in queries["expected_keywords"]]
        return Dataset.from_frames(
            tables["qrels"], queries, name=name, corpus_size=meta.get("corpus_size"), documents=tables.get("documents")
        )

    def get_run(self, ident: str) -> Run:
        name, blob = self._payload(runs_table, ident, "run")
        tables, meta = _from_parquet(blob)
        return Run.from_frame(tables["rows"], name=name, has_scores=bool(meta.get("has_scores", True)))

    def get_view(self, ident: str) -> dict[str, Any]:
        check_id(ident, "view")
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(views_table.c.state).where(views_table.c.id == ident)).first()
        if row is None:
            raise StoreKeyError(f"view {ident} is not in this store")
        return json.loads(row[0])

    def has_view(self, ident: str) -> bool:
        return self._exists(views_table, ident)

    def has_dataset(self, ident: str) -> bool:
        return self._exists(datasets_table, ident)

    def has_run(self, ident: str) -> bool:
        return self._exists(runs_table, ident)

    def _exists(self, table: sa.Table, ident: str) -> bool:
        if not isinstance(ident, str) or not CONTENT_ID.match(ident):
            return False
        with self.engine.connect() as conn:
            return conn.execute(sa.select(table.c.id).where(table.c.id == ident)).first() is not None

    def _column(self, table: sa.Table, name: str) -> Any:
        return table.c[name] if self._has(table, name) else sa.literal("").label(name)

    def list_datasets(self) -> pd.DataFrame:
        """Stored datasets, newest first: id, name, n_queries, n_judgments, size_bytes, created_at, source, description,
        targets."""
        t = datasets_table
        names = ["id", "name", "n_queries", "n_judgments", "size_bytes", "created_at", "source", "description"]
        names.append("targets")
        query = sa.select(*(self._column(t, n) for n in names)).order_by(t.c.created_at.desc())
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query).mappings().all(), columns=names)

    # --- per-query results without rankings ----------------------------------------------

    def put_results(self, dataset: str, results: PerQueryResults, *, source: str = "") -> str:
        """Store per-query results on ``dataset`` (idempotent: a stored copy keeps its name); return their id."""

        check_id(dataset, "dataset")
        self.require_table(results_table, f"per-query results {results.name!r}")
        ident = results_id(dataset, results)
        row = {
            "id": ident,
            "dataset_id": dataset,
            "name": checked_text(results.name.strip() or "results", "a name", MAX_NAME_BYTES),
            "metrics": ",".join(results.metrics),
            "n_queries": len(results),
            "created_at": time.time(),
            "source": source,
            "payload": results_parquet(results),
        }
        with self.engine.begin() as conn:
            conn.execute(self._insert(results_table).values(**row).on_conflict_do_nothing(index_elements=["id"]))
        return ident

    def list_results(self, dataset: str) -> pd.DataFrame:
        """The per-query results stored on ``dataset``, oldest first: id, name, metrics, n_queries, created_at,
        source."""
        t = results_table
        names = ["id", "name", "metrics", "n_queries", "created_at", "source"]
        query = sa.select(*(t.c[n] for n in names)).where(t.c.dataset_id == check_id(dataset, "dataset"))
        if not self.has_table(t):
            return pd.DataFrame(columns=names)
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query.order_by(t.c.created_at)).mappings().all(), columns=names)

    def get_results(self, ident: str) -> PerQueryResults:
        t = results_table
        row = None
        if self.has_table(t):
            with self.engine.connect() as conn:
                query = sa.select(t.c.name, t.c.payload).where(t.c.id == check_id(ident, "results"))
                row = conn.execute(query).first()
        if row is None:
            raise StoreKeyError(f"results {ident} are not in this store")
        return results_from_parquet(bytes(row.payload), row.name)

    def delete_results(self, ident: str) -> None:
        check_id(ident, "results")
        if not self.has_table(results_table):
            return  # none stored
        with self.engine.begin() as conn:
            conn.execute(
                sa.delete(results_table).where(results_table.c.id == check_id(ident, "results")),
                execution_options={CHANGE_OPTION: "delete results"},
            )

    def list_runs(self, dataset: str | None = None) -> pd.DataFrame:
        """Stored runs (of ``dataset`` if given), oldest link first: id, name, n_queries, n_rows, size_bytes, created_at, source."""
        t = runs_table
        names = ["id", "name", "n_queries", "n_rows", "size_bytes", "created_at", "source"]
        columns = [self._column(t, n) for n in names]
        if dataset is None:
            query = sa.select(*columns).order_by(t.c.created_at)
        else:
            check_id(dataset, "dataset")
            query = (
                sa.select(*columns)
                .join(links_table, links_table.c.run_id == t.c.id)
                .where(links_table.c.dataset_id == dataset)
                .order_by(links_table.c.created_at, t.c.name)
            )
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query).mappings().all(), columns=names)


SQLITE_PAGE_SIZE = 65536
"""Page size of a new SQLite store (an existing file keeps its own): a run is one blob of up to ~100 MB, and
SQLite writes a blob as a chain of pages, so fewer, larger pages write it faster."""


_READ_ONLY = "attempt to write a readonly database"
"""SQLite's message for a write to a file opened read-only (``mode=ro``) or without write permission."""
_INSUFFICIENT_PRIVILEGE = "42501"
"""PostgreSQL's SQLSTATE for a statement the role lacks the privilege for."""
_WRITES = "ragmetrics_writes"
"""The execution option that names the table a statement writes (:meth:`Store._write`)."""
CHANGE_OPTION = "ragmetrics_change"
"""The execution option that names the one of :data:`CHANGES` a write makes (:meth:`Store._refused_write` reads
it): set on the connection when its transaction is that change alone (a rename, a delete, a save), on the statement
when the transaction also adds data (a label among a judging's writes, an upload's tags)."""


def _refused(cause: BaseException | None) -> bool:
    """Whether a driver's error is the database refusing the store's user a statement: SQLite's read-only file,
    PostgreSQL's insufficient privilege (not a lock timeout, nor any other failure)."""
    return _READ_ONLY in str(cause) or getattr(cause, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE


def _close_at_exit(engine: weakref.ref[sa.Engine]) -> None:
    """Close a SQLite store's pooled connections as the process ends: the last connection closed folds the
    write-ahead log into the database file (a checkpoint), so the ``.sqlite`` file alone holds what was written (a
    file copied as a CI artifact, without its ``-wal``, was otherwise empty)."""
    found = engine()
    if found is not None:
        with contextlib.suppress(Exception):  # the process ends whatever happens here
            found.dispose()


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")  # before WAL mode: only an empty file takes it
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as err:
        if _READ_ONLY not in str(err):  # an empty file that may only be read keeps its journal: it is never written
            raise
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
