"""Qrels versions side by side: how two versions' judgments differ (:func:`ragmetrics.analysis.judging.diff`) and whether
they tell the same story about the runs (:func:`ragmetrics.analysis.stability.stability`), as the Workspace page shows."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ragmetrics.analysis.stability import Stability
from ragmetrics.engine.metrics import better_sign

__all__ = ["CHANGES", "diff_counts", "stability_means", "stability_summary", "stability_verdicts"]

CHANGES = ("added", "changed", "removed")


def diff_counts(diff: pd.DataFrame) -> dict[str, int]:
    """``{"added", "changed", "removed"}`` judgments of a :func:`ragmetrics.analysis.judging.diff`."""
    counts = diff["change"].value_counts() if len(diff) else pd.Series(dtype=int)
    return {change: int(counts.get(change, 0)) for change in CHANGES}


@dataclass(frozen=True)
class StabilitySummary:
    """``tau``: Kendall's tau of the runs' two orders (None with fewer than two runs); ``swapped``: the pairs of runs
    whose order swaps, as "a ↔ b"; ``changed``: the pairs whose paired-test verdict changes, of ``pairs``."""

    tau: float | None
    swapped: list[str]
    changed: int
    pairs: int


def stability_summary(result: Stability) -> StabilitySummary:
    """What changed in the runs' order and verdicts between two qrels versions (:class:`StabilitySummary`)."""
    tau = None if result.tau is None or math.isnan(result.tau) else float(result.tau)
    return StabilitySummary(tau, [f"{a} ↔ {b}" for a, b in result.swapped], len(result.changed), len(result.verdicts))


def stability_means(result: Stability) -> pd.DataFrame:
    """Each run's mean under both versions: ``run, before, after, change``, and its rank under each."""
    out = result.means.copy()
    out["change"] = out["after"] - out["before"]
    lower_first = better_sign(result.metric) < 0  # the best ranks first: the lowest where lower is better
    out["rank_before"] = out["before"].rank(ascending=lower_first, method="min").astype(int)
    out["rank_after"] = out["after"].rank(ascending=lower_first, method="min").astype(int)
    return out[["run", "before", "after", "change", "rank_before", "rank_after"]]


def stability_verdicts(result: Stability) -> pd.DataFrame:
    """Every pair of runs: ``run_a, run_b``, the mean difference, corrected p-value and verdict under both
    versions, ``changed`` (the verdict differs); changed pairs first."""
    out = result.verdicts.copy()
    return out.sort_values("changed", ascending=False, kind="stable").reset_index(drop=True)
