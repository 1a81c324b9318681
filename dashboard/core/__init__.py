"""Pure builders for the dashboard, one module per feature (overview, breakdown, missed, diagnosis, compare,
compare_queries, power, fusion, validation, targets, report, metrics_reference), each with its frames and
figures, over the library's :class:`ragmetrics.Alignment` s; shared helpers (charts, specs, queries, results,
intervals, text) and the view's fit to loaded data (view_state). Never imports streamlit, the store or the
dashboard's stateful layers.

``RagMetricsError`` is the library's one error type, re-exported for the pages.
"""

from ragmetrics.foundation.errors import RagMetricsError

__all__ = ["RagMetricsError"]
