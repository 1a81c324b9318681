"""The metrics the dashboard offers and their names for people, all from the library's registries.

The metric picker offers :data:`dashboard.core.share.METRIC_CHOICES` (the registry's curve metrics, then
R-precision); a curve metric is read at the sidebar's K. Titles are the registry's
(:attr:`ragmetrics.engine.metrics.MetricSpec.title`: ``Precision@5``, ``nDCG@10``).
"""

from __future__ import annotations

from dashboard.core.share import K_MAX, METRIC_CHOICES
from ragmetrics.engine.metrics import CURVE_METRICS, METRICS, MetricSpec, metric_name, parse_metric
from ragmetrics.foundation.errors import RagMetricsError

__all__ = [
    "CURVE_METRICS",
    "K_MAX",
    "METRIC_CHOICES",
    "MetricSpec",
    "metric_spec",
    "metric_title",
    "parse_metric",
    "sidebar_names",
    "takes_k",
    "title",
]


def takes_k(metric: str) -> bool:
    """True for a curve metric (read at K)."""
    return metric in CURVE_METRICS


def metric_spec(metric: str, k: int) -> MetricSpec:
    """The spec shown for a picked metric name at K: ``recall`` -> ``recall@K``, ``rprec`` -> ``rprec``; a name
    with its own cut-off (``mrr@3``) keeps it."""
    if "@" in metric:
        return parse_metric(metric)
    name = metric_name(metric)
    return MetricSpec(name, int(k)) if name in CURVE_METRICS else parse_metric(name)


def sidebar_names(spec: MetricSpec, k: int) -> bool:
    """True when the sidebar's metric and K can name ``spec`` (``recall@5``, ``rprec``; not ``mrr`` without a
    cut-off, a K above :data:`K_MAX`, or a metric the sidebar does not offer)."""
    if spec.name not in METRIC_CHOICES or (spec.k is not None and spec.k > K_MAX):
        return False
    try:
        return metric_spec(spec.name, spec.k or k) == spec
    except (RagMetricsError, ValueError):
        return False


def title(spec: MetricSpec) -> str:
    """The registry's title with the cut-off: ``precision@5`` -> ``Precision@5``, ``ndcg@10`` -> ``nDCG@10``."""
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"title() takes a parsed metric, got {spec!r}: a frame's label is read by label_title()")
    return spec.title


def label_title(label: str) -> str:
    """The title of a metric named by a frame's label (its canonical text, ``recall@5``): frames and stored
    results label metrics by text, so their titles are read back from it."""
    return parse_metric(label).title


def metric_title(name: str) -> str:
    """A metric's title without a cut-off: ``precision`` -> ``Precision``."""
    return METRICS[metric_spec(name, 1).name].title
