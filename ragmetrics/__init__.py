"""ragmetrics: exact, fast retrieval evaluation for RAG and search teams.

Load a dataset and runs (:mod:`ragmetrics.io`), then :func:`evaluate` them, or :func:`align` one run and
hold the :class:`Alignment`. Numbers equal trec_eval's (``-c``) wherever trec_eval has the measure; see
:mod:`ragmetrics.metrics` for the registry of metrics and their conventions.
"""

from ragmetrics.engine import Alignment, Conventions, Coverage, align
from ragmetrics.errors import MetricNameError, ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.evaluate import DEFAULT_METRICS, EvalResult, RunResult, evaluate
from ragmetrics.metrics import METRICS, MetricInfo, MetricSpec, parse_metric
from ragmetrics.model import Dataset, Run, query_id_from_text

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "Alignment",
    "Conventions",
    "Coverage",
    "Dataset",
    "EvalResult",
    "MetricInfo",
    "MetricNameError",
    "MetricSpec",
    "ParseError",
    "RagMetricsError",
    "RagMetricsWarning",
    "Run",
    "RunResult",
    "align",
    "evaluate",
    "parse_metric",
    "query_id_from_text",
]

__version__ = "0.1.0"
