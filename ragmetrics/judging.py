"""Filling the holes in the judgments: pool what the runs retrieved unjudged, merge the labels given back.

* :func:`pool`: the unjudged (query, document) pairs in the top ``depth`` of one or more runs, each pair once, in
  dataset query order and, within a query, by the best rank any run gave it (with the text when it is known);
* :func:`merge`: the dataset with new labels added; a label for a pair that is already judged with another
  grade is a conflict, refused unless ``override``.

Both work at the level the runs are evaluated at (documents when chunks are mapped to them), so what is judged
is what the metrics read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ragmetrics.engine import Alignment, align
from ragmetrics.errors import RagMetricsError
from ragmetrics.model import Dataset, Run

if TYPE_CHECKING:
    import pandas as pd


def pool(dataset: Dataset, runs: Sequence[Run | Alignment], depth: int, **conventions: Any) -> pd.DataFrame:
    """Unjudged pairs of the runs' top ``depth``: ``query_id, doc_id, best_rank, runs`` (how many runs retrieved
    it there) and ``text`` when the dataset's documents or a run's chunks carry it."""
    import pandas as pd

    if not isinstance(depth, (int, np.integer)) or depth < 1:
        raise RagMetricsError(f"The 'depth' parameter must be an int >= 1. Got {depth!r} instead.")
    parts = []
    for run in runs:
        alignment = run if isinstance(run, Alignment) else align(dataset, run, **conventions)
        rows = alignment.rows()
        top = rows[(rows["rank"] <= depth) & rows["label"].isna()]
        top = top.drop_duplicates(["q", "doc_id"], keep="first")  # a document once, at its best chunk
        frame = pd.DataFrame({"q": top["q"].to_numpy(), "query_id": top["query_id"].astype(str).to_numpy(),
                              "doc_id": top["doc_id"].to_numpy(), "rank": top["rank"].to_numpy()})  # fmt: skip
        if "text" in top.columns:
            frame["text"] = top["text"].to_numpy()
        parts.append(frame)
    columns = ["query_id", "doc_id", "best_rank", "runs"]
    if not parts or all(p.empty for p in parts):
        return pd.DataFrame(columns=columns)
    stacked = pd.concat(parts, ignore_index=True)
    grouped = stacked.groupby(["q", "query_id", "doc_id"], sort=False)
    out = grouped.agg(best_rank=("rank", "min"), runs=("rank", "size")).reset_index()
    if "text" in stacked.columns:
        texts = stacked.dropna(subset=["text"]).drop_duplicates(["query_id", "doc_id"])[["query_id", "doc_id", "text"]]
        out = out.merge(texts, on=["query_id", "doc_id"], how="left")
    documents = dataset.documents
    if documents is not None and "text" in documents.columns:
        corpus = documents.drop_duplicates("doc_id").set_index("doc_id")["text"]
        known = out["doc_id"].map(corpus)
        out["text"] = known.where(known.notna(), out["text"]) if "text" in out.columns else known
    out = out.sort_values(["q", "best_rank", "doc_id"], kind="stable").drop(columns="q").reset_index(drop=True)
    return out[[*columns, *(["text"] if "text" in out.columns else [])]]


@dataclass(frozen=True)
class Merged:
    """The dataset with the new labels, what was added, and the conflicts (``query_id, doc_id, old, new``)."""

    dataset: Dataset
    added: int
    changed: int
    conflicts: list[tuple[str, str, int, int]]


def merge(dataset: Dataset, labels: Dataset | pd.DataFrame, *, override: bool = False) -> Merged:
    """Add ``labels`` (a dataset whose qrels are the new labels, or a frame ``query_id, doc_id, relevance``) to
    ``dataset``'s judgments. A label for an already-judged pair with another grade is a conflict: refused with
    the list unless ``override`` (the new grade wins); the same grade again changes nothing."""
    new = labels.qrels_table if isinstance(labels, Dataset) else Dataset.from_frames(labels).qrels_table
    old = dataset.qrels_table
    existing = dict(
        zip(
            zip(old.column("query_id").to_pylist(), old.column("doc_id").to_pylist()),
            old.column("relevance").to_pylist(),
        )
    )
    added: dict[tuple[str, str], int] = {}
    conflicts: list[tuple[str, str, int, int]] = []
    for q, d, r in zip(
        new.column("query_id").to_pylist(), new.column("doc_id").to_pylist(), new.column("relevance").to_pylist()
    ):
        before = existing.get((q, d))
        if before is None:
            added[(q, d)] = r
        elif before != r:
            conflicts.append((q, d, before, r))
    if conflicts and not override:
        shown = "; ".join(f"{q} {d}: {a} -> {b}" for q, d, a, b in conflicts[:5])
        more = f" (and {len(conflicts) - 5} more)" if len(conflicts) > 5 else ""
        raise RagMetricsError(
            f"{len(conflicts)} label(s) would change a judgment already made: {shown}{more}; "
            "pass override (--override) to let the new labels win"
        )
    merged = dict(existing)
    for q, d, _, r in conflicts:
        merged[(q, d)] = r
    merged.update(added)
    table = pa.table(
        {
            "query_id": pa.array([k[0] for k in merged], pa.large_string()),
            "doc_id": pa.array([k[1] for k in merged], pa.large_string()),
            "relevance": pa.array(list(merged.values()), pa.int64()),
        }
    )
    result = Dataset.from_tables(table, dataset.queries_table, name=dataset.name, corpus_size=dataset.corpus_size,
                                 documents=dataset.documents, judged_once=True)  # fmt: skip
    return Merged(result, len(added), len(conflicts), conflicts)


def diff(before: Dataset, after: Dataset) -> pd.DataFrame:
    """How two versions' judgments differ: ``query_id, doc_id, before, after, change`` (added, removed, changed),
    in query then document order."""
    import pandas as pd

    old = before.qrels.rename(columns={"relevance": "before"})
    new = after.qrels.rename(columns={"relevance": "after"})
    both = old.merge(new, on=["query_id", "doc_id"], how="outer")
    both = both[both["before"].ne(both["after"]) | both["before"].isna() | both["after"].isna()].copy()
    both["change"] = [
        "added" if pd.isna(b) else "removed" if pd.isna(a) else "changed" for b, a in zip(both["before"], both["after"])
    ]
    for column in ("before", "after"):
        both[column] = both[column].astype("Int64")
    return both.sort_values(["query_id", "doc_id"]).reset_index(drop=True)[
        ["query_id", "doc_id", "before", "after", "change"]
    ]
