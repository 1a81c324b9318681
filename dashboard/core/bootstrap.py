"""The dashboard's bootstrap settings over :func:`ragmetrics.stats.bootstrap_ci`.

One seed and one resample count for every interval shown, so runs and curve
points are resampled on the same queries and the numbers match ``ragmetrics check``.
"""

from __future__ import annotations

import numpy as np

from ragmetrics import stats

N_RESAMPLES = 1000
SEED = 0
CONFIDENCE = 0.95


def bootstrap_ci(
    values: np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and percentile CI of each column of ``values`` (n, m) -> three arrays of length m.

    A 1-d input is one column. With fewer than two rows the bounds are NaN.
    """
    matrix = np.asarray(values)
    if matrix.dtype.kind != "f":
        matrix = matrix.astype(np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    n, m = matrix.shape
    if n < 2:
        mean = matrix.mean(axis=0, dtype=np.float64) if n else np.full(m, np.nan)
        return mean, np.full(m, np.nan), np.full(m, np.nan)
    low, high = stats.bootstrap_ci(matrix, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return matrix.mean(axis=0, dtype=np.float64), low, high
