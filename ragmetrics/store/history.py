"""History over a store: the stored dataset ``--dataset`` names, its runs with their tags, and the timeline and
leaderboard of stored runs (:mod:`ragmetrics.analysis.history` computes them; ``ragmetrics history`` and ``ragmetrics
leaderboard`` print them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.analysis.history import Leaderboard, StoredRun, Timeline, leaderboard, timeline
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import is_content_id as is_id
from ragmetrics.foundation.model import Run
from ragmetrics.foundation.redact import redact_url
from ragmetrics.io import load_dataset
from ragmetrics.store.database import Store, dataset_id


def empty_store(store: Store) -> str:
    """What to say of ``store`` when it holds no dataset: whom to ask when its database user may not write to it."""
    said = f"store {redact_url(store.url)} holds no dataset"
    if store.read_only:
        return (
            f"{said} and is read-only (the database user that opened it may not write to it): ask its owner to load "
            "data, or open it once as a user allowed to write"
        )
    return f"{said} yet: push one first (ragmetrics push --dataset ... --run ...)"


def resolve_dataset(
    store: Store, spec: str, *, queries: str | None = None, given: str = "--dataset", takes_queries: bool = True
) -> str:
    """The stored dataset ``spec`` names: its id, a file (its content id is computed; ``queries`` as for
    ``eval``), or its stored name. Anything else is a clear error naming ``spec`` by what the command took it as
    (``given``: its option, or its positional's name); ``takes_queries``: whether the command has ``--queries``,
    which that error then offers."""
    spec = str(spec).strip()
    if is_id(spec) and store.has_dataset(spec):
        return spec
    if Path(spec).exists():
        ident = dataset_id(load_dataset(spec, queries=queries))
        if not store.has_dataset(ident):
            fix = (
                "or give the same --queries file it was pushed with"
                if takes_queries
                else "or, pushed with --queries, name it by its stored name or id"
            )
            raise RagMetricsError(
                f"{spec}: its content id is {ident}, which this store does not hold; push it first "
                f"(ragmetrics push --dataset ... --run ...), {fix}"
            )
        return ident
    listed = store.list_datasets()
    if listed.empty:
        raise RagMetricsError(f"{given} {spec[:80]!r}: {empty_store(store)}")
    named = listed[listed["name"] == spec]
    if len(named) == 1:
        return str(named["id"].iloc[0])
    if len(named) > 1:
        ids = ", ".join(named["id"])
        raise RagMetricsError(f"{len(named)} stored datasets are called {spec!r} ({ids}): give the id of one")
    known = ", ".join(sorted(listed["name"].astype(str))[:10]) or "none"
    raise RagMetricsError(
        f"{given} {spec[:80]!r} is neither a file, a stored dataset's id nor its name (stored: {known})"
    )


def stored_runs(store: Store, dataset: str) -> list[StoredRun]:
    """The runs linked to ``dataset``, with their tags, in the order they were added."""
    listing = store.list_runs(dataset)
    tags = store.tags_of(listing["id"].tolist())
    return [
        StoredRun(row.id, row.name, float(row.created_at), tags.get(row.id, {}), _loader(store, row.id))
        for row in listing.itertuples(index=False)
    ]


def _loader(store: Store, ident: str) -> Callable[[], Run]:
    return lambda: store.get_run(ident)


def store_timeline(store: Store, dataset: str, metric: str, **options: Any) -> Timeline:
    """:func:`timeline` of a stored dataset's runs (``dataset``: its id)."""
    return timeline(store.get_dataset(dataset), stored_runs(store, dataset), metric, dataset_id=dataset, **options)


def leaf_datasets(store: Store) -> list[str]:
    """The stored datasets no qrels version was made from (the newest judgments of each lineage), oldest first."""
    listed = store.list_datasets().sort_values("created_at", kind="stable")
    return [i for i in listed["id"] if store.versions(i).empty]


def store_leaderboard(
    store: Store, metric: str, *, datasets: Sequence[str] | None = None, **options: Any
) -> Leaderboard:
    """:func:`leaderboard` over stored datasets (``datasets``: ids; default :func:`leaf_datasets`)."""
    chosen = list(datasets) if datasets else leaf_datasets(store)
    return leaderboard([(d, store.get_dataset(d), stored_runs(store, d)) for d in chosen], metric, **options)
