"""The metric registry for people: every metric of :data:`ragmetrics.engine.metrics.METRICS` with its formula and
conventions (the Metric definitions page)."""

from __future__ import annotations

import pandas as pd

from ragmetrics.engine.metrics import BUDGET_SUFFIX, METRICS, trec_eval_names

__all__ = ["REFERENCE_COLUMNS", "metrics_reference_frame"]

REFERENCE_COLUMNS = ["name", "display", "cutoff", "formula", "conventions", "aliases", "trec_eval"]
_CUTOFF = {"required": "required (name@k)", "optional": "optional (name or name@k)", "none": "none"}


def metrics_reference_frame() -> pd.DataFrame:
    """One row per metric: ``name, display`` (the registry's title), ``cutoff, formula, conventions, aliases,
    trec_eval``."""
    return pd.DataFrame(
        [
            {
                "name": m.name,
                "display": m.title,
                "cutoff": _CUTOFF[m.k] + (f"; or a token budget (name@T{BUDGET_SUFFIX})" if m.budget else ""),
                "formula": m.formula,
                "conventions": m.conventions,
                "aliases": ", ".join(m.aliases),
                "trec_eval": ", ".join(trec_eval_names(m)),
            }
            for m in METRICS.values()
        ],
        columns=REFERENCE_COLUMNS,
    )
