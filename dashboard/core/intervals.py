"""The dashboard's intervals over :func:`ragmetrics.analysis.stats.mean_interval`, and the names of its methods
every page reads (:func:`interval_methods`, :func:`interval_words`, :data:`MEAN_INTERVAL_RULE`): the numbers match
``ragmetrics eval --ci`` and ``check --targets``."""

from __future__ import annotations

import numpy as np

from ragmetrics.analysis import stats
from ragmetrics.analysis.stats import MEAN_INTERVAL_RULE, interval_methods, interval_words

__all__ = [
    "CONFIDENCE",
    "MEAN_INTERVAL_RULE",
    "interval_methods",
    "interval_name",
    "interval_words",
    "mean_ci",
]

CONFIDENCE = 0.95


def interval_name(method: str) -> str:
    """A method of :func:`ragmetrics.analysis.stats.mean_interval` (a summary's ``interval`` cell) by the name the
    pages give it (``Student's t``; ``none`` for no interval); a method without a name is an error, not hidden."""
    return "none" if method == "none" else stats.INTERVAL_NAMES[method]


def mean_ci(
    values: np.ndarray, *, confidence: float = CONFIDENCE, within: tuple[float, float] | None = stats.METRIC_RANGE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and 95% interval of each column of ``values`` (n, m) -> three float64 arrays of length m: the
    interval of :func:`ragmetrics.analysis.stats.mean_interval` (Clopper-Pearson for a column of 0s and 1s, else
    Student's t), as ``eval --ci`` and ``check --targets`` give it.

    A 1-d input is one column. With fewer than two rows the bounds are NaN (as ``mean_interval``'s). ``within``: the
    range the values lie in, to clip the interval to (a metric's, by default; None for other values, such as token
    counts).
    """
    matrix = np.asarray(values)
    if matrix.dtype.kind != "f":
        matrix = matrix.astype(np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if not len(matrix):  # no mean either (numpy would warn of an empty slice)
        nan = np.full(matrix.shape[1], np.nan)
        return nan, nan.copy(), nan.copy()
    low, high = stats.mean_interval(matrix, confidence=confidence, within=within)
    return matrix.mean(axis=0, dtype=np.float64), low, high
