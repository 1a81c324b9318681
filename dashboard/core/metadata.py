"""Run metadata on the pages: the Workspace's editable tag table, the Compare page's latency-beside-quality table
(the tags ``ragmetrics retrieve`` records, :data:`ragmetrics.io.runmeta.LATENCY_TAGS`)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io.runmeta import KNOWN_TAGS, LATENCY_TAGS, check_tags, ir_metadata_yaml

__all__ = ["KNOWN_TAGS", "LATENCY_COLUMNS", "ir_metadata_yaml", "latency_frame", "tag_frame", "tags_from_frame"]

LATENCY_COLUMNS = {
    "latency.p50_ms": "p50 ms",
    "latency.p95_ms": "p95 ms",
    "latency.max_ms": "max ms",
    "errors": "errors",
    "empty": "empty",
}
"""The latency tags and their column titles."""
assert tuple(LATENCY_COLUMNS) == LATENCY_TAGS


def tag_frame(tags: Mapping[str, str]) -> pd.DataFrame:
    """``key, value`` rows of a run's tags, by key (what the Workspace's editor edits)."""
    return pd.DataFrame(
        {"key": pd.Series(list(tags), dtype="string"), "value": pd.Series(list(tags.values()), dtype="string")}
    )  # text even when empty: the editor's text columns need it


def tags_from_frame(frame: pd.DataFrame, stored: Mapping[str, str] | None = None) -> dict[str, str]:
    """The edited table back as tags: empty rows dropped, keys and values checked (a bad one raises with its name;
    a value left as ``stored`` holds it is kept, :func:`ragmetrics.io.runmeta.check_tags`); a key given twice is an
    error."""
    out: dict[str, str] = {}
    for row in frame.itertuples(index=False):
        key = "" if pd.isna(row.key) else str(row.key).strip()
        value = "" if pd.isna(row.value) else str(row.value).strip()
        if not key and not value:
            continue
        if key in out:
            raise RagMetricsError(f"tag {key!r} is given twice")
        out[key] = value
    return check_tags(out, stored)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def latency_frame(
    names: Mapping[str, str], tags: Mapping[str, Mapping[str, str]], means: Mapping[str, float], metric: str
) -> pd.DataFrame:
    """Per run (``names``: id -> name): the ``metric`` mean, the retriever's kind, top_k and model, and its latency
    and failure counts (empty where the run was not made by ``ragmetrics retrieve``)."""
    rows = []
    for ident, name in names.items():
        mine = tags.get(ident, {})
        row: dict[str, object] = {"run": name, metric: means.get(name)}
        for key in ("retriever.kind", "top_k", "model"):
            row[key.removeprefix("retriever.")] = mine.get(key, "")
        for key, label in LATENCY_COLUMNS.items():
            row[label] = _number(mine.get(key))
        rows.append(row)
    return pd.DataFrame(rows)
