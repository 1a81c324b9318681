"""``fuse``: combine runs into one ("what if we went hybrid?").

Ranks come from the engine's order (score descending, ties by doc_id
descending), so fusion is deterministic on ties; inputs are never modified.

* ``rrf``: Σ_i w_i / (k + rank_i(d)) over the runs that retrieved d (Cormack et al. 2009);
* ``combsum``: Σ_i w_i · norm_i(score_i(d));
* ``combmnz``: combsum × the number of runs that retrieved d.

Normalisation (per query and run, combsum/combmnz only): ``minmax`` maps to
[0, 1] (a query whose scores are all equal gets 1 for each document),
``zscore`` subtracts the mean and divides by the population standard
deviation (all equal: 0), ``None`` keeps raw scores.

Chunk runs keep their ``source_doc`` and ``text`` (from the first input run
that has them for a chunk), so a fused chunk run is evaluated at document level
like its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import byte_order, dictionary_codes
from ragmetrics.foundation.model import Run

if TYPE_CHECKING:
    import pandas as pd

METHODS = ("rrf", "combsum", "combmnz")
RRF_K = 60
"""Reciprocal rank fusion's rank constant when none is given (Cormack et al.)."""
DEFAULT_NORM = "minmax"
"""The score normalisation of CombSUM and CombMNZ when none is given."""
NORMS = ("minmax", "zscore", None)


def ranked_frame(run: Run, depth: int | None = None) -> pd.DataFrame:
    """The run's rows in evaluation order with a 1-based ``rank`` per query (best occurrence per doc)."""

    frame = run.frame[["query_id", "doc_id", "score"]]
    if frame.empty:
        return frame.assign(rank=pd.Series(dtype="int64"))
    q_codes, _ = dictionary_codes(run.column("query_id"), grouped=True)
    d_codes, d_uniques = dictionary_codes(run.column("doc_id"))
    doc_rank = byte_order(d_uniques)[d_codes]
    order = np.lexsort((-doc_rank, -frame["score"].to_numpy(), q_codes))
    ordered = frame.iloc[order]
    ordered = ordered[~ordered.duplicated(["query_id", "doc_id"], keep="first")]
    ordered = ordered.assign(rank=ordered.groupby("query_id", sort=False).cumcount().to_numpy() + 1)
    if depth is not None:
        ordered = ordered[ordered["rank"] <= depth]
    return ordered.reset_index(drop=True)


def _normalise(frame: pd.DataFrame, norm: str | None) -> np.ndarray:
    score = frame["score"].to_numpy(dtype=np.float64)
    if norm is None:
        return score
    grouped = frame.groupby("query_id", sort=False)["score"]
    if norm == "minmax":
        low, high = grouped.transform("min").to_numpy(), grouped.transform("max").to_numpy()
        span = high - low
        return np.where(span > 0, (score - low) / np.where(span > 0, span, 1), 1.0)
    mean, std = grouped.transform("mean").to_numpy(), grouped.transform(lambda s: s.std(ddof=0)).to_numpy()
    return np.where(std > 0, (score - mean) / np.where(std > 0, std, 1), 0.0)


def _weights(weights: object) -> list[float]:
    """``weights`` as floats when they are finite numbers of 0 or more, at least one above 0; else a clear error
    (a NaN weight dropped its run without a word)."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise RagMetricsError(f"The 'weights' parameter must be a sequence of numbers, one per run. Got {weights!r}.")
    out = []
    for weight in weights:
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.integer, np.floating)):
            raise RagMetricsError(f"The 'weights' parameter must hold numbers. Got {weight!r}.")
        if not (np.isfinite(weight) and weight >= 0):
            raise RagMetricsError(f"The 'weights' parameter must hold finite numbers of 0 or more. Got {weight!r}.")
        out.append(float(weight))
    if not any(out):
        raise RagMetricsError(f"The 'weights' parameter must hold one weight above 0 at least. Got {list(weights)!r}.")
    return out


def fuse(
    runs: Sequence[Run],
    *,
    method: str = "rrf",
    k: int = RRF_K,
    norm: str | None = DEFAULT_NORM,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
    name: str | None = None,
) -> Run:
    """Fuse ``runs`` into a new :class:`Run` (see the module docstring for the formulas).

    ``depth`` cuts every input run to its top ``depth`` before fusing; the
    default name is ``"<method>(<run names>)"``. A run weighted 0 is left out: none of its documents is added, and
    CombMNZ does not count it among the runs that retrieved a document.
    """

    runs = [Run.from_dict(r, name=f"run{i + 1}") if isinstance(r, Mapping) else r for i, r in enumerate(runs)]
    if len(runs) < 2:
        raise RagMetricsError(f"fusion needs at least two runs; got {len(runs)}")
    if not all(isinstance(r, Run) for r in runs):
        raise RagMetricsError("fusion takes Runs or {query_id: {doc_id: score}} mappings")
    if method not in METHODS:
        raise RagMetricsError(f"The 'method' parameter must be one of {list(METHODS)}. Got {method!r} instead.")
    if norm not in NORMS:
        raise RagMetricsError(f"The 'norm' parameter must be one of {list(NORMS)}. Got {norm!r} instead.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise RagMetricsError(f"The 'k' parameter must be an int >= 0. Got {k!r} instead.")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1):
        raise RagMetricsError(f"The 'depth' parameter must be an int >= 1 or None. Got {depth!r} instead.")
    weights = [1.0] * len(runs) if weights is None else _weights(weights)
    if len(weights) != len(runs):
        raise RagMetricsError(f"got {len(weights)} weights for {len(runs)} runs; expected one weight per run")

    parts = []
    for run, weight in zip(runs, weights):
        if weight == 0:
            continue
        frame = ranked_frame(run, depth)
        if method == "rrf":
            contribution = weight / (k + frame["rank"].to_numpy(dtype=np.float64))
        else:
            contribution = weight * _normalise(frame, norm)
        parts.append(pd.DataFrame({"query_id": frame["query_id"], "doc_id": frame["doc_id"], "score": contribution}))
    stacked = pd.concat(parts, ignore_index=True)
    fused = (
        stacked.groupby(["query_id", "doc_id"], sort=False)
        .agg(score=("score", "sum"), n=("score", "size"))
        .reset_index()
    )
    if method == "combmnz":
        fused["score"] = fused["score"] * fused["n"]
    label = name or f"{method}({','.join(r.name for r, weight in zip(runs, weights) if weight > 0)})"
    fused = fused[["query_id", "doc_id", "score"]]
    for column in ("source_doc", "text"):
        # chunk runs keep their chunk-to-document mapping and chunk text: the first run that has a value wins
        known = [
            r.frame[["query_id", "doc_id", column]].dropna(subset=[column])
            for r, weight in zip(runs, weights)
            if weight > 0 and column in r.frame.columns
        ]
        if known:
            values = pd.concat(known, ignore_index=True).drop_duplicates(["query_id", "doc_id"], keep="first")
            fused = fused.merge(values, on=["query_id", "doc_id"], how="left")
    return Run.from_frame(fused, name=label)
