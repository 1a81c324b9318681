"""Evaluate Spark DataFrames a user already has: ``ragmetrics.spark.evaluate(qrels_df, run_df, metrics)``.

The run and the qrels are bucketed by a hash of the query id, each bucket is evaluated by the unchanged engine in an
Arrow UDF on the executors, and the per-query values come back in dataset order with the coverage report
(:mod:`ragmetrics.partitioned`). Needs ``pip install 'ragmetrics[spark]'`` (PySpark >= 4.0) and Java 17 or later.
"""

from ragmetrics.partitioned.spark import evaluate, session

__all__ = ["evaluate", "session"]
