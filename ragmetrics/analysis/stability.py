"""Do two versions of the judgments tell the same story? The runs' order and the pairwise verdicts under each.

For the same runs scored by one metric under qrels ``before`` and ``after``: each run's mean under both, Kendall's
tau between the two orders of the runs (scipy), the pairs of runs whose order swaps, and for every pair the
paired test's verdict (significant and which way) under both, with the pairs whose verdict changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ragmetrics.analysis import stats
from ragmetrics.analysis.evaluate import evaluate
from ragmetrics.analysis.verdicts import pair_words, verdict
from ragmetrics.engine.metrics import MetricSpec, better_sign
from ragmetrics.foundation.model import Dataset, Run

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Stability:
    """``means``: run, before, after; ``verdicts``: run_a, run_b, delta and verdict before and after, changed;
    ``tau``: Kendall's tau of the two orders (NaN with fewer than two runs); ``swapped``: pairs whose order swaps."""

    metric: str
    means: pd.DataFrame
    verdicts: pd.DataFrame
    tau: float
    swapped: list[tuple[str, str]]
    family: str = ""
    """The correction and its family, in the words of every page (``Holm-corrected over 6 comparison(s) (all pairs
    of 4 runs on recall@5)``): one metric, so fewer comparisons than a page comparing several."""

    @property
    def changed(self) -> pd.DataFrame:
        return self.verdicts[self.verdicts["changed"]]


def _verdict(a: str, b: str, delta: float, p: float, alpha: float, direction: float, sign: int) -> str:
    """The pair's verdict (:func:`ragmetrics.analysis.verdicts.verdict`, on the side the test found, ``sign`` the
    metric's :func:`ragmetrics.engine.metrics.better_sign`) in its words."""
    return pair_words(verdict(a, b, delta, p, alpha, direction=direction, sign=sign), a, b)


def stability(
    before: Dataset,
    after: Dataset,
    runs: Sequence[Run],
    metric: str | MetricSpec,
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    **conventions: Any,
) -> Stability:
    """Score ``runs`` by ``metric`` under both qrels versions and compare (see the module documentation)."""

    results = [evaluate(d, list(runs), [metric], warn=False, **conventions) for d in (before, after)]
    name = results[0].metrics[0]
    names = results[0].run_names
    means = pd.DataFrame(
        {
            "run": names,
            "before": [results[0][n].means[name] for n in names],
            "after": [results[1][n].means[name] for n in names],
        }
    )
    rows: list[dict[str, Any]] = []
    for side, result in zip(("before", "after"), results):
        pvalues, deltas, sides = [], [], []
        for a, b in combinations(names, 2):
            x, y = result[a].array(name), result[b].array(name)
            keep = ~(np.isnan(x) | np.isnan(y))
            deltas.append(float((x[keep] - y[keep]).mean()) if keep.any() else float("nan"))
            sides.append(stats.test_direction(x[keep] - y[keep], test))
            pvalues.append(stats.paired_p_value(x[keep], y[keep], test=test, n_resamples=n_resamples, seed=seed))
        corrected = stats.CORRECTIONS[correction](np.array(pvalues))
        for i, (a, b) in enumerate(combinations(names, 2)):
            if side == "before":
                rows.append({"run_a": a, "run_b": b})
            rows[i][f"delta_{side}"] = deltas[i]
            rows[i][f"p_{side}"] = float(corrected[i])
            rows[i][f"verdict_{side}"] = _verdict(
                a, b, deltas[i], float(corrected[i]), alpha, sides[i], better_sign(name)
            )
    verdicts = pd.DataFrame(rows, columns=["run_a", "run_b", "delta_before", "p_before", "verdict_before",
                                           "delta_after", "p_after", "verdict_after"])  # fmt: skip
    verdicts["changed"] = verdicts["verdict_before"] != verdicts["verdict_after"]
    swapped = [
        (a, b)
        for a, b in combinations(names, 2)
        if np.sign(means.set_index("run").at[a, "before"] - means.set_index("run").at[b, "before"])
        != np.sign(means.set_index("run").at[a, "after"] - means.set_index("run").at[b, "after"])
    ]
    tau = float(sps.kendalltau(means["before"], means["after"]).statistic) if len(names) > 1 else float("nan")
    family = stats.family_text(
        correction, len(rows), f"all pairs of {len(names)} runs on {name}" if len(rows) > 1 else ""
    )
    return Stability(name, means, verdicts, tau, swapped, family)
