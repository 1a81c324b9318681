"""Partitioned evaluation of files: :func:`evaluate_files` runs an engine of :data:`ragmetrics.partitioned.ENGINES`
over a run and a qrels file, bucket by bucket."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ragmetrics.analysis.evaluate import DEFAULT_METRICS
from ragmetrics.engine import Conventions
from ragmetrics.engine.modes import MODES
from ragmetrics.engine.tokens import TokenizerLike, resolve
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import MAX_ID_BYTES
from ragmetrics.io import load_dataset, load_run, name_of_file, refuse_output_over_input, unique_names
from ragmetrics.partitioned.buckets import Plan
from ragmetrics.partitioned.engine import Options, engine_class
from ragmetrics.partitioned.result import PartitionedResult, PartitionedRun, combine
from ragmetrics.partitioned.scripts import file_sides, pick

__all__ = ["budget_tokenizer", "canonical_metrics", "counting", "evaluate_files", "run_name"]


def canonical_metrics(metrics: Sequence[str], conventions: Conventions) -> tuple[str, ...]:
    """The canonical names of ``metrics`` under ``conventions`` (LlamaIndex's own in its mode), each once."""
    names = tuple(dict.fromkeys(str(MODES[conventions.mode].parse(m)) for m in metrics))
    if not names:
        raise RagMetricsError("no metric to compute; pass metric names such as ['ndcg@10', 'recall@5']")
    return names


def budget_tokenizer(
    metrics: Sequence[str],
    conventions: Conventions,
    tokenizer: TokenizerLike,
    engine: str,
    sides: Iterable[tuple[bool, bool]] | None = None,
) -> str | None:
    """The name of the tokenizer the token budgets among ``metrics`` (``recall@512tok``) count with; None when no
    metric reads a budget. ``auto`` is resolved as in process on the runs' texts, given by their ``sides``
    (:func:`ragmetrics.partitioned.scripts.script_sides` of each batch of texts: :func:`file_sides` for files, a
    frame's batches for the frame entry points; None: texts not read here), when their scripts decide it whatever
    the ranking order (:func:`ragmetrics.partitioned.scripts.pick`), and refused otherwise: it picks a tokenizer
    from the first texts the runs retrieve, in ranking order, which a partitioned engine reads a bucket at a time
    (never together)."""
    budgeted = [m for m in metrics if MODES[conventions.mode].parse(m).tokens is not None]
    if not budgeted:
        return None
    if isinstance(tokenizer, str) and tokenizer == "auto":
        decided = None if sides is None else pick(sides)
        if decided is not None:
            return decided
        why = (
            "the runs' texts are in several scripts (some mostly CJK, some not), so the pick depends on which come "
            "first in ranking order, which this engine reads a bucket at a time"
            if sides is not None
            else "auto picks one from the texts of the whole run, which this engine reads a bucket at a time"
        )
        raise RagMetricsError(
            f"{budgeted[0]}: the {engine} engine counts token budgets with one tokenizer named for the whole run: "
            f"give --tokenizer whitespace, jieba or mixed (library: tokenizer=); {why} (eval --engine inprocess "
            "and ragmetrics.evaluate read auto)"
        )
    return resolve(tokenizer, []).name


def counting(tokenizer: TokenizerLike, counted_with: str | None) -> TokenizerLike:
    """What the buckets count token budgets with: ``auto`` replaced by the tokenizer :func:`budget_tokenizer`
    named for the whole run (a bucket must not pick its own), any other tokenizer as given."""
    return (
        counted_with if counted_with is not None and isinstance(tokenizer, str) and tokenizer == "auto" else tokenizer
    )


def run_name(path: str) -> str:
    """A run file's run name, as the loaders name it (the file name without its extensions)."""

    return name_of_file(path)


def _refuse_empty(result: PartitionedRun, qrels: str, run: str) -> None:
    """An input without a data row is refused as the in-process loader refuses it (which then reads only its
    blank and comment lines)."""

    coverage = result.coverage
    if coverage.empty_run and os.path.isfile(run):
        load_run(run)
    if not coverage.queries_evaluated and not coverage.missing_in_run and os.path.isfile(qrels):
        load_dataset(qrels)


def evaluate_files(
    dataset: str,
    runs: str | Sequence[str],
    metrics: Sequence[str] | None = None,
    *,
    engine: str = "duckdb",
    conventions: Conventions | None = None,
    buckets: int | None = None,
    memory_limit: str | None = None,
    work_dir: str | None = None,
    spark_master: str | None = None,
    per_query_out: Sequence[str | None] | str | None = None,
    corpus_size: int | None = None,
    chunk_pattern: str | None = None,
    max_id_bytes: int = MAX_ID_BYTES,
    resamples: int = 0,
    seed: int = 0,
    tokenizer: TokenizerLike = "auto",
    **changes: Any,
) -> PartitionedResult:
    """Evaluate run files against a qrels file with ``engine`` (a name of :data:`ENGINES`), bucket by bucket.

    ``buckets``: how many (default: the engine's; DuckDB's and Polars' from the input sizes; the stream engine: about
    as many slices of the run). ``memory_limit`` (DuckDB, e.g. ``"2GB"``; the stream engine's slice is a share of it) and ``work_dir`` (where DuckDB and Polars write their buckets; default a temporary
    folder, removed after). ``spark_master``: the master of a session started here when none is running (default ``local[*]``).
    ``per_query_out``: a Parquet path per run (one path for one run) where the per-query values are written where
    the engine runs, instead of being collected (the result then keeps the values but not the ids); one that is an
    input, or in a folder that does not exist, is refused (:func:`ragmetrics.io.refuse_output_over_input`). Conventions as
    :func:`ragmetrics.analysis.evaluate` (``changes`` override fields). ``resamples`` (and ``seed``): each bucket
    also emits the sums of that many merged sign-flip resamples (:mod:`ragmetrics.analysis.merged`); each run's
    ``sums`` (its intervals, its fingerprints, and with resamples its randomization p-values) are equal, bit for
    bit, for any engine and bucket count. ``tokenizer``: what
    the token budgets (``recall@512tok``) count with, a named tokenizer, a callable or ``auto`` (resolved as in
    process, on all the runs' texts together, when their scripts decide it; refused otherwise:
    :func:`budget_tokenizer`); each run's :attr:`PartitionedRun.tokenizer` names it."""
    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    paths = [runs] if isinstance(runs, str) else list(runs)
    outs = [per_query_out] if per_query_out is None or isinstance(per_query_out, str) else list(per_query_out)
    if per_query_out is None:
        outs = [None] * len(paths)
    if len(outs) != len(paths):
        raise RagMetricsError(f"per_query_out: one path per run; got {len(outs)} for {len(paths)} run(s)")

    inputs = {"dataset": [dataset], "runs": paths}
    for out in outs:
        if out is not None and "://" not in out:  # a URL names the cluster's storage, not read here
            refuse_output_over_input(out, "per_query_out", inputs)
    names = canonical_metrics(list(metrics or DEFAULT_METRICS), conventions)
    options = Options(buckets=buckets, memory_limit=memory_limit, work_dir=work_dir, spark_master=spark_master)
    results: dict[str, PartitionedRun] = {}
    with engine_class(engine)(options) as executor:
        qrels = executor.describe(dataset, "dataset")
        described = [executor.describe(path, "run") for path in paths]
        counted_with = budget_tokenizer(names, conventions, tokenizer, engine, file_sides(described))
        used = 0
        for path, run, out, name in zip(paths, described, outs, unique_names([run_name(p) for p in paths])):
            plan = Plan(name, run.side, qrels.side, names, conventions, corpus_size, chunk_pattern, max_id_bytes)
            plan = replace(plan, resamples=resamples, seed=seed, tokenizer=counting(tokenizer, counted_with))
            used = buckets or executor.buckets_for(qrels, run)
            tables = executor.tables(plan, qrels, run, used, out)
            results[name] = combine(
                name,
                names,
                conventions,
                tables,
                keep_ids=out is None,
                per_query_file=out,
                tokenizer=counted_with,
                chunk_pattern=chunk_pattern,
            )
            _refuse_empty(results[name], qrels.path, path)
    return PartitionedResult(results, names, engine, used)
