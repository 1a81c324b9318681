"""The dashboard's interval settings over :func:`ragmetrics.analysis.stats.mean_interval`, and the names of its
methods every page reads (:func:`interval_methods`, :func:`interval_words`, :data:`MEAN_INTERVAL_RULE`).

One seed and one resample count for every interval shown, so runs and curve points are resampled on the
same queries and the numbers match ``ragmetrics check``. A :func:`resampler` held across calls draws those
resamples once for many intervals (every run of one dataset has the same evaluated queries).
"""

from __future__ import annotations

import numpy as np

from ragmetrics.analysis import stats
from ragmetrics.analysis.stats import MEAN_INTERVAL_RULE, NORMAL_ABOVE, interval_methods, interval_words

__all__ = [
    "CONFIDENCE",
    "MEAN_INTERVAL_RULE",
    "NORMAL_ABOVE",
    "N_RESAMPLES",
    "SEED",
    "interval_methods",
    "interval_words",
    "mean_ci",
    "resampler",
]

N_RESAMPLES = 1000
SEED = 0
CONFIDENCE = 0.95


def resampler(n: int) -> stats.Resampler:
    """The resamples of ``n`` queries every interval of the dashboard uses."""
    return stats.Resampler(n, N_RESAMPLES, SEED)


def mean_ci(
    values: np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    resampler: stats.Resampler | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and 95% interval of each column of ``values`` (n, m) -> three float64 arrays of length m: the
    interval of :func:`ragmetrics.analysis.stats.mean_interval` (Clopper-Pearson for a column of 0s and 1s, else the
    percentile bootstrap), as ``eval --ci`` and ``check --targets`` give it.

    A 1-d input is one column. With fewer than two rows the bounds are NaN (as ``mean_interval``'s).
    """
    matrix = np.asarray(values)
    if matrix.dtype.kind != "f":
        matrix = matrix.astype(np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if not len(matrix):  # no mean either (numpy would warn of an empty slice)
        nan = np.full(matrix.shape[1], np.nan)
        return nan, nan.copy(), nan.copy()
    low, high = stats.mean_interval(
        matrix, n_resamples=n_resamples, confidence=confidence, seed=seed, resampler=resampler
    )
    return matrix.mean(axis=0, dtype=np.float64), low, high
