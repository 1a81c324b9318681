"""Which dataset query each run query is: by id, else by its text or the id derived from its text."""

from __future__ import annotations

import unicodedata

import numpy as np

from ragmetrics.foundation.ids import Strings, as_strings, positions_in, to_arrow
from ragmetrics.foundation.kernels import take
from ragmetrics.foundation.model import query_id_from_text


def _normal(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


def match_queries(query_ids: Strings, query_texts: Strings, run_query_ids: Strings) -> tuple[np.ndarray, int]:
    """The dataset row of each of ``run_query_ids`` (-1 when unknown), and how many of them matched by text.

    A run names a query by its id, else by its text or the id derived from that text
    (:func:`ragmetrics.query_id_from_text`); texts are compared after NFC normalisation and stripping, and a
    text shared by two dataset queries matches neither.
    """
    rows = positions_in(run_query_ids, query_ids)
    unknown = np.flatnonzero(rows < 0)
    if len(unknown) == 0:
        return rows, 0

    by_text: dict[str, int] = {}
    by_hash: dict[str, int] = {}
    shared_text: set[str] = set()
    shared_hash: set[str] = set()
    for row, text in enumerate(query_texts.to_pylist()):
        key = _normal(text or "")
        if not key:
            continue
        for index, shared, name in ((by_text, shared_text, key), (by_hash, shared_hash, query_id_from_text(key))):
            if name in index:
                shared.add(name)
            index[name] = row
    wanted = take(run_query_ids, to_arrow(unknown))
    matched = 0
    for at, name in zip(unknown.tolist(), wanted.to_pylist()):
        key = _normal(name)
        found = by_text.get(key) if key not in shared_text else None
        if found is None:
            found = by_hash.get(key) if key not in shared_hash else None
        if found is not None:
            rows[at] = found
            matched += 1
    return rows, matched


def query_positions(query_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
    """Each of ``wanted``'s position among ``query_ids`` (-1 where absent); None when they are the same ids in the
    same order (evaluations on one dataset share the engine's order)."""
    if len(query_ids) == len(wanted) and (query_ids is wanted or np.array_equal(query_ids, wanted)):
        return None
    return positions_in(as_strings(wanted), as_strings(query_ids))


def at_positions(values: np.ndarray, where: np.ndarray | None) -> np.ndarray:
    """``values`` read at the positions :func:`query_positions` gave: NaN where a wanted query has none."""
    if where is None:
        return values
    out = np.full(len(where), np.nan, dtype=np.float64)
    found = where >= 0
    out[found] = values[where[found]]
    return out


def at_queries(values: np.ndarray, query_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values`` (one per query of ``query_ids``, as an alignment orders them) read at the queries ``wanted``, in
    ``wanted``'s order: NaN where a wanted query has no value (a run that left it out, ``missing="skip"``). The one
    place per-query values are matched by id (:func:`query_positions`, then :func:`at_positions`; a caller reading
    several arrays of one run finds the positions once)."""
    return at_positions(values, query_positions(query_ids, wanted))
