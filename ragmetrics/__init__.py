"""ragmetrics: exact, fast retrieval evaluation for RAG and search teams.

Load a dataset and runs (:mod:`ragmetrics.io`), then :func:`evaluate` them, or :func:`align` one run and
hold the :class:`Alignment`. Numbers equal trec_eval's (``-c``) wherever trec_eval has the measure; see
:mod:`ragmetrics.engine.metrics` for the registry of metrics and their conventions.
"""

from ragmetrics.analysis.evaluate import DEFAULT_METRICS, EvalResult, RunResult, evaluate
from ragmetrics.engine import Alignment, Conventions, Coverage, align
from ragmetrics.engine.metrics import METRICS, MetricInfo, MetricSpec, parse_metric
from ragmetrics.foundation.errors import MetricNameError, ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run, query_id_from_text

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

from ragmetrics.foundation.version import __version__ as __version__
