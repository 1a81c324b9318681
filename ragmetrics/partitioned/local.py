"""The in-process engine: the inputs read by the library's loaders (every format), the buckets made in memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pyarrow as pa

from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_run
from ragmetrics.partitioned.buckets import POSITION, Plan, evaluate_bucket
from ragmetrics.partitioned.engine import Engine, bucket_of
from ragmetrics.partitioned.inputs import Input, Side


def _rows(table: pa.Table) -> pa.Table:
    return table.append_column(POSITION, pa.array(np.arange(table.num_rows, dtype=np.int64)))


def bucket_tables_of(plan: Plan, dataset: Dataset, run: Run, buckets: int) -> Iterator[pa.Table]:
    """The bucket tables of a dataset and a run already in memory (``plan`` reads both as ``columns``)."""
    qrels_rows, run_rows = _rows(dataset.qrels_table), _rows(run.table)
    qrels_bucket = bucket_of(qrels_rows.column("query_id"), buckets)
    run_bucket = bucket_of(run_rows.column("query_id"), buckets) if run_rows.num_rows else np.zeros(0, np.int64)
    for bucket in range(buckets):
        yield evaluate_bucket(
            plan,
            qrels_rows.filter(pa.array(qrels_bucket == bucket)),
            run_rows.filter(pa.array(run_bucket == bucket)),
        )


class InProcess(Engine):
    name = "inprocess"

    def describe(self, path: str, kind: str) -> Input:
        return Input(path, kind, "any", Side(path, "columns"))  # type: ignore[arg-type]

    def buckets_for(self, qrels: Input, run: Input) -> int:
        return 1

    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:

        dataset = load_dataset(qrels.path)
        loaded = load_run(run.path, name=plan.run_name)
        plan = replace(plan, run=Side(run.path, "columns"), qrels=Side(qrels.path, "columns"))
        yield from bucket_tables_of(plan, dataset, loaded, buckets)
