"""The Spark engine: both inputs as DataFrames, bucketed by ``pmod(xxhash64(query id), buckets)``, each bucket's
qrels and run rows cogrouped and evaluated by the unchanged engine in an Arrow UDF (``cogroup(...).applyInArrow``,
PySpark >= 4.0) on the executors; the bucket tables come back to the driver (or, with a per-query output, the
per-query rows are written by the executors and only the numbers come back).

Files are read by Spark (paths the cluster reads: local, HDFS, S3 as it is configured): a TREC file as text lines
(split by the TREC loader itself in each bucket), CSV/TSV with a header, Parquet. Spark needs Java 17 or later.
"""

from __future__ import annotations

import base64
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type

from ragmetrics.analysis.evaluate import DEFAULT_METRICS
from ragmetrics.engine import Conventions
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import MAX_ID_BYTES
from ragmetrics.io.columns import ID_BLANKS, resolve
from ragmetrics.io.tables import id_keys
from ragmetrics.partitioned.buckets import POSITION, Plan, evaluate_bucket
from ragmetrics.partitioned.engine import Engine, Options
from ragmetrics.partitioned.files import budget_tokenizer, canonical_metrics, counting
from ragmetrics.partitioned.inputs import (
    FIRST_FIELD,
    Input,
    Side,
    describe,
    keyed_as_text,
    ragged_record,
    with_columns,
)
from ragmetrics.partitioned.result import PartitionedRun, combine
from ragmetrics.partitioned.scripts import script_sides

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"
CARRIED = "~ragmetrics-error~"
"""The marks around a ragmetrics error an executor raised, in the text of Spark's error (:func:`carried`)."""


def session(master: str | None = None) -> SparkSession:
    """The running Spark session, or one started on ``master`` (default ``local[*]``). A local session's workers run
    this interpreter unless ``PYSPARK_PYTHON`` names another, and it logs only what is fatal (a failure is raised)."""

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = master or DEFAULT_MASTER
    builder = SparkSession.builder.master(master).appName("ragmetrics")
    local = master.startswith("local")
    if local and not os.environ.get("PYSPARK_PYTHON"):
        # the workers run this interpreter, which has ragmetrics, not `python3` from PATH (a venv not activated);
        # PySpark reads the variable when the context starts
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = builder.config("spark.pyspark.python", sys.executable)
    elif local and os.environ["PYSPARK_PYTHON"] != sys.executable:
        check_worker_python(os.environ["PYSPARK_PYTHON"])
    if local:  # no progress bars on the terminal a result is printed to
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    started = builder.getOrCreate()
    if local:
        # its executors are this process's: a task's failure is raised here, not also logged with its traceback
        started.sparkContext.setLogLevel("FATAL")
    return started


def _bucketed(frame: DataFrame, key: Column, buckets: int) -> DataFrame:

    return frame.withColumn("bucket", F.pmod(F.xxhash64(key), F.lit(buckets)))


def _strings(table: pa.Table) -> pa.Table:
    """Spark's Arrow reader takes ``string``, not ``large_string``."""
    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type) for f in table.schema]
    return table.cast(pa.schema(fields))


def _spark_schema(plan: Plan) -> Any:

    return from_arrow_schema(_strings(plan.schema().empty_table()).schema)


def bucket_frame(plan: Plan, qrels: DataFrame, run: DataFrame) -> DataFrame:
    """The bucket tables as a DataFrame: ``qrels`` and ``run`` carry ``bucket``, :data:`POSITION` and the columns
    each side reads; each cogroup is one call of :func:`evaluate_bucket` on an executor."""

    def evaluate(qrels_rows: pa.Table, run_rows: pa.Table) -> pa.Table:
        try:
            return _strings(
                evaluate_bucket(plan, qrels_rows.drop_columns(["bucket"]), run_rows.drop_columns(["bucket"]))
            )
        except RagMetricsError as exc:
            raise RuntimeError(carried(exc)) from None

    grouped = qrels.groupBy("bucket").cogroup(run.groupBy("bucket"))
    return grouped.applyInArrow(evaluate, schema=_spark_schema(plan))


def _with_position(frame: DataFrame) -> DataFrame:

    # increasing in the order Spark reads the rows (a file's order, for one file)
    return frame.withColumn(POSITION, F.monotonically_increasing_id())


def column_key(frame: DataFrame, column: str) -> Column:
    """The query id of a table cell as the bucket key, the id the loader reads: text and integers cast by Spark,
    blanks around them stripped; other types by :func:`ragmetrics.io.tables.id_keys` (a pandas UDF)."""

    value = F.col(f"`{column}`")
    kind = to_arrow_type(frame.schema[column].dataType)
    if keyed_as_text(kind):
        return F.regexp_replace(value.cast("string"), f"^[{ID_BLANKS}]+|[{ID_BLANKS}]+$", "")

    def keys(values: pd.Series) -> pd.Series:
        return id_keys(pa.Array.from_pandas(values, type=kind)).to_pandas()

    return F.pandas_udf(keys, "string")(value)  # type: ignore[call-overload]


def frames_of_file(spark: SparkSession, found: Input, buckets: int) -> DataFrame:
    """One input file as a bucketed DataFrame."""

    if found.format == "trec":
        lines = _with_position(spark.read.text(found.path)).withColumnRenamed("value", "line")
        key = F.regexp_extract(F.col("line"), FIRST_FIELD, 1)
        data = lines.where((key != "") & ~key.startswith("#"))
        return _bucketed(data, key, buckets).select("line", POSITION, "bucket")
    if found.format == "parquet":
        frame = spark.read.parquet(found.path)
        # one file: each row's place in it (Spark's own row index); a folder of files: ids increasing with each
        frame = (
            frame.withColumn(POSITION, F.col("_metadata.row_index")) if found.side.numbered else _with_position(frame)
        )

        found = with_columns(found, [c for c in frame.columns if c != POSITION])
    else:
        frame = spark.read.csv(
            found.path,
            header=True,
            sep=found.delimiter,
            quote='"',
            escape='"',
            inferSchema=False,
            nullValue=None,
            mode="FAILFAST",  # a row of other fields than the header's is an error (the loader's), never padded
            multiLine=True,  # a quoted cell may hold a line break, as for the loader
        )
        frame = _with_position(frame.select([F.coalesce(F.col(f"`{c}`"), F.lit("")).alias(c) for c in frame.columns]))
        if not found.columns:  # a cluster's file: its header as Spark read it
            found = with_columns(found, [c for c in frame.columns if c != POSITION])
    assert found.query_column is not None
    key = column_key(frame, found.query_column)
    return _bucketed(frame.select(*[f"`{c}`" for c in found.columns], POSITION), key, buckets)


def collect(
    plan: Plan, frame: DataFrame, per_query_out: str | None = None
) -> tuple[Iterator[pa.Table], DataFrame | None]:
    """The bucket tables at the driver; with ``per_query_out``, the executors write the per-query rows there
    (a Parquet folder, Spark's way) and the driver gets the rows without the ids no coverage list names."""

    if per_query_out is None:
        return iter([frame.toArrow()]), None
    kept = frame.persist()
    kept.where(F.col("kind") == 0).select("query_id", *[f"`{m}`" for m in plan.metrics]).write.mode(
        "overwrite"
    ).parquet(per_query_out)
    flagged = (F.col("kind") != 0) | F.col("missing_in_run") | F.col("no_relevant") | F.col("duplicate") | F.col("tied")
    numbers = kept.withColumn("query_id", F.when(flagged, F.col("query_id")))
    return iter([numbers.toArrow()]), kept


class Spark(Engine):
    name = "spark"
    local = False
    starts_spark = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.spark = session(options.spark_master)

    def describe(self, path: str, kind: str) -> Input:
        found = describe(path, kind, local=os.path.exists(path))  # type: ignore[arg-type]
        # a CSV file read whole (multiLine) is one partition: its row ids count its records; a Parquet file's rows
        # are numbered by their row index in it; other ids only increase
        numbered = found.format in ("csv", "tsv", "parquet") and os.path.isfile(path)
        return replace(found, side=replace(found.side, numbered=numbered))

    def buckets_for(self, qrels: Input, run: Input) -> int:
        return int(self.spark.conf.get("spark.sql.shuffle.partitions") or 200)

    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:
        yield from self.tables(plan, qrels, run, buckets)

    def _read(self, found: Input, buckets: int) -> DataFrame:
        try:
            return frames_of_file(self.spark, found, buckets)
        except AnalysisException as exc:  # a path Spark cannot read (missing, not allowed): its first line
            raise RagMetricsError(f"{found.path}: Spark cannot read it: {str(exc).splitlines()[0]}") from None

    def tables(
        self, plan: Plan, qrels: Input, run: Input, buckets: int, per_query_out: str | None = None
    ) -> Iterator[pa.Table]:
        frame = bucket_frame(plan, self._read(qrels, buckets), self._read(run, buckets))
        try:
            tables, kept = collect(plan, frame, per_query_out)
            try:
                yield from tables
            finally:
                if kept is not None:
                    kept.unpersist()
        except Exception as exc:
            told = _worker_error(exc)
            if told is exc and "malformed" in str(exc).lower():  # FAILFAST: said as the loader says it, here
                told = ragged_record(qrels) or ragged_record(run) or _malformed(exc, qrels, run)
            raise told from None


def _malformed(exc: Exception, *inputs: Input) -> RagMetricsError:
    """Spark's CSV reader refusing a record the loader reads (a blank line amid other line ends), as one line."""
    said = re.search(r"\[MALFORMED_CSV_RECORD\][^\n]*", str(exc))
    tables = [found.path for found in inputs if found.format in ("csv", "tsv")]
    return RagMetricsError(
        f"{' or '.join(tables) or 'a CSV input'}: Spark's CSV reader refuses a record "
        f"({said.group(0).strip() if said else 'malformed'}) the loader reads: --engine duckdb, polars or inprocess "
        "read the file"
    )


def check_worker_python(python: str) -> None:
    """A local session's workers run on this machine: a worker Python that cannot import what the workers run is
    refused before Spark starts (on a cluster the workers' Python is the cluster's, and a failure is told by
    :func:`_worker_error`)."""
    probe = subprocess.run(
        [python, "-c", "import numpy, pyarrow, ragmetrics.partitioned.buckets"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if probe.returncode != 0:
        told = _worker_error(RuntimeError(probe.stderr))
        if isinstance(told, RagMetricsError):
            raise told
        last = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        raise RagMetricsError(f"Spark's workers run {python}, which cannot run ragmetrics ({last}); set PYSPARK_PYTHON "
                              "to a Python with ragmetrics installed")  # fmt: skip


def carried(exc: RagMetricsError) -> str:
    """``exc``, raised on an executor, as text Spark carries to the driver inside its own error (the worker's
    traceback around it), where :func:`_worker_error` finds it again."""
    return f"{CARRIED}{base64.b64encode(pickle.dumps(exc)).decode('ascii')}{CARRIED}"


def _worker_error(exc: Exception) -> Exception:
    """A ragmetrics error an executor raised (:func:`carried`), as it was raised; a worker that cannot import what
    it runs, as one line (the rest: Spark's own error, unchanged)."""

    found = re.search(f"{CARRIED}([A-Za-z0-9+/=]+){CARRIED}", str(exc))
    if found is not None:
        # written by this job's own executors, as Spark pickles their code and data
        raised = pickle.loads(base64.b64decode(found.group(1)))
        if isinstance(raised, RagMetricsError):
            return raised
    missing = re.search(r"(ModuleNotFoundError: No module named '[^']+')", str(exc))
    if missing is None:
        return exc
    python = os.environ.get("PYSPARK_PYTHON") or "python3"
    return RagMetricsError(
        f"Spark's workers run {python}, which lacks what ragmetrics needs ({missing.group(1)}); set PYSPARK_PYTHON "
        "to a Python with ragmetrics installed"
    )


def text_sides(run: DataFrame) -> Iterator[tuple[bool, bool]]:
    """The :func:`ragmetrics.partitioned.scripts.script_sides` of a run DataFrame's texts (its ``text``/
    ``chunk_text``/``content`` column): each Arrow batch's on the executors, added up by Spark into one pair;
    nothing when it has no text column."""
    column = resolve(run.columns).get("text")
    if column is None:
        return

    def sides(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            above, below = script_sides(batch.column(0))
            yield pa.RecordBatch.from_pydict({"above": [above], "below": [below]})

    texts = run.select(F.col(f"`{column}`").cast("string"))
    found = texts.mapInArrow(sides, "above boolean, below boolean").agg(F.max("above"), F.max("below")).first()
    if found is not None and found[0] is not None:
        yield bool(found[0]), bool(found[1])


def evaluate(
    qrels: DataFrame,
    run: DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    name: str = "run",
    conventions: Conventions | None = None,
    buckets: int | None = None,
    per_query_out: str | None = None,
    corpus_size: int | None = None,
    max_id_bytes: int = MAX_ID_BYTES,
    resamples: int = 0,
    seed: int = 0,
    tokenizer: TokenizerLike = "auto",
    **changes: Any,
) -> PartitionedRun:
    """Evaluate a run DataFrame against a qrels DataFrame on their Spark session.

    Columns are named as in a CSV file (``query_id``/``qid``, ``doc_id``/``docno``, ``relevance``/``label``,
    ``score``; see :mod:`ragmetrics.io.columns`). ``buckets`` defaults to ``spark.sql.shuffle.partitions``;
    ``per_query_out``: a Parquet folder the executors write the per-query values to (the result then keeps the
    values, not the ids); ``resamples`` and ``seed``: the merged sums each bucket emits (as
    :func:`ragmetrics.partitioned.evaluate_files`). ``tokenizer``: what the token budgets count with (as
    :func:`ragmetrics.partitioned.evaluate_files`; ``auto`` resolved on the run DataFrame's texts,
    :func:`text_sides`). Conventions as :func:`ragmetrics.analysis.evaluate`."""

    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    names = canonical_metrics(list(metrics or DEFAULT_METRICS), conventions)
    try:
        counted_with = budget_tokenizer(names, conventions, tokenizer, "spark", text_sides(run))
    except Exception as exc:
        raise _worker_error(exc) from None
    count = buckets or int(qrels.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    if count < 1:
        raise RagMetricsError(f"buckets must be an int >= 1; got {buckets!r}")
    sides = []
    for frame, what in ((qrels, "qrels DataFrame"), (run, "run DataFrame")):
        column = resolve(frame.columns).get("query_id")
        if column is None:
            raise RagMetricsError(f"the {what} has no query id column (query_id/qid/topic); columns {frame.columns}")
        positioned = _with_position(frame)
        sides.append(_bucketed(positioned, column_key(positioned, column), count))
    plan = Plan(
        name,
        Side("<run DataFrame>", "columns", numbered=False),
        Side("<qrels DataFrame>", "columns", numbered=False),
        names,
        conventions,
        corpus_size,
        None,
        max_id_bytes,
        resamples,
        seed,
        counting(tokenizer, counted_with),
    )
    try:
        tables, kept = collect(plan, bucket_frame(plan, sides[0], sides[1]), per_query_out)
    except Exception as exc:
        raise _worker_error(exc) from None
    try:
        return combine(
            name,
            names,
            conventions,
            tables,
            keep_ids=per_query_out is None,
            per_query_file=per_query_out,
            tokenizer=counted_with,
        )
    finally:
        if kept is not None:
            kept.unpersist()
