"""Runs stored as per-query results only (``ragmetrics push --per-query``): their means and intervals. No page that
needs rankings (curves, breakdowns, missed queries, diagnosis, judging, comparison) can show them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ragmetrics.analysis.per_query import PerQueryResults
from ragmetrics.analysis.stats import interval_methods, mean_interval

RESULTS_COLUMNS = ["run", "metric", "mean", "ci_low", "ci_high", "queries", "interval"]


def results_frame(results: Sequence[PerQueryResults]) -> pd.DataFrame:
    """One row per run and metric: the mean over the queries with a value, its 95% interval (the same
    as the Overview's for ranked runs: :func:`ragmetrics.analysis.stats.mean_interval`), how many queries it is over
    and the interval's method (:func:`ragmetrics.analysis.stats.interval_methods`)."""
    rows = []
    for item in results:
        for metric in item.metrics:
            values = item.value(metric)
            kept = values[~np.isnan(values)]
            low, high = mean_interval(kept) if len(kept) else (np.nan, np.nan)
            method = interval_methods(kept)[0]
            rows.append([item.name, metric, item.mean(metric), float(low), float(high), len(kept), method])
    return pd.DataFrame(rows, columns=RESULTS_COLUMNS)


def not_shown_note(names: Sequence[str]) -> str:
    """What a page that needs rankings says of the dataset's results-only runs."""
    listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"Not on this page: {listed}, stored as per-query results only (ragmetrics push --per-query), without the "
        "rankings this page needs. The Overview shows their means."
    )
