"""Evaluate Polars frames a user already has: ``ragmetrics.polars.evaluate(qrels, run, metrics)``.

The run and the qrels (DataFrames or LazyFrames) are bucketed by a hash of the query id, each bucket is evaluated by
the unchanged engine (the bucket evaluator of every partitioned engine), and the per-query values come back in dataset
order with the coverage report (:mod:`ragmetrics.partitioned`). LazyFrames are written hash-partitioned to a work
folder by Polars' streaming engine and read back a bucket at a time. Needs ``pip install 'ragmetrics[polars]'``.
"""

from ragmetrics.partitioned.polar import evaluate

__all__ = ["evaluate"]
