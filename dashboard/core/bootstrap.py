"""Seeded percentile bootstrap of means, vectorised across columns.

One resampling matrix ``W`` (resamples x queries, each row the counts of a
resample) serves every column at once: the resampled means are ``W @ V / n``,
so a whole curve (K = 1..100) costs one matrix product. The same ``W`` is used
for every run of a dataset, so runs are resampled on the same queries.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

N_RESAMPLES = 1000
SEED = 20240601
CONFIDENCE = 0.95


@lru_cache(maxsize=4)
def _weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, n])
    idx = rng.integers(0, n, size=(n_resamples, n))
    weights = np.empty((n_resamples, n), dtype=np.float32)
    for b in range(n_resamples):
        weights[b] = np.bincount(idx[b], minlength=n)
    weights.setflags(write=False)
    return weights


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
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    n, m = matrix.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return nan, nan.copy(), nan.copy()
    mean = matrix.mean(axis=0)
    if n < 2:
        nan = np.full(m, np.nan)
        return mean, nan, nan.copy()
    weights = _weights(n, n_resamples, seed)
    resampled = (weights @ matrix.astype(np.float32)).astype(np.float64) / n
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(resampled, [alpha, 1.0 - alpha], axis=0)
    # float32 products can drift by ~1e-7 past the mean on degenerate columns
    return mean, np.minimum(low, mean), np.maximum(high, mean)
