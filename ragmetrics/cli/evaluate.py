"""``ragmetrics eval``: evaluate runs against a dataset, in this process or through a partitioned engine."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ragmetrics.analysis.evaluate import DEFAULT_METRICS
from ragmetrics.analysis.verdicts import refuse_meaningless
from ragmetrics.cli.evaluating import engine_texts, evaluate_runs, refuse_no_overlap_partitioned, report_coverage
from ragmetrics.cli.inputs import blank_file, output_path, per_query_paths, read_inputs, refuse_stdin_on
from ragmetrics.cli.options import (
    add_bounds_option,
    add_data_options,
    add_engine_options,
    add_eval_options,
    add_format_option,
    add_merged_options,
    add_metric_option,
    add_ppi_options,
    engine_arguments,
    read_bounds_depth,
    wants_ppi,
)
from ragmetrics.cli.output import Merged, emit
from ragmetrics.engine.conventions import CHOICES
from ragmetrics.engine.metrics import known_metric_names
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.files import replacing
from ragmetrics.io import unique_names

if TYPE_CHECKING:
    from ragmetrics.partitioned import PartitionedResult


def eval_partitioned(args: argparse.Namespace, metrics: Sequence[str]) -> PartitionedResult:
    """``eval --engine duckdb|polars|spark``: the inputs read by the engine, bucket by bucket."""
    from ragmetrics.partitioned.files import evaluate_files, run_name  # noqa: PLC0415 (the partitioned engines load on use: an evaluation in this process needs none)

    refuse_stdin_on(args.engine, [args.dataset, *args.run])
    blank = [p for p in [args.dataset, *args.run] if blank_file(p)]
    if blank:
        flag = "--allow-no-relevant" if blank[0] == args.dataset else "--allow-no-overlap"
        raise RagMetricsError(
            f"{blank[0]}: an empty file is scored only with --engine inprocess and {flag} (--engine {args.engine} "
            "reads no empty file)"
        )
    outs = [
        path if path is None or "://" in path else output_path(args, path, "--per-query-out")
        for path in per_query_paths(args.per_query_out, unique_names([run_name(p) for p in args.run]))
    ]
    with engine_texts(args):
        result = evaluate_files(
            args.dataset,
            args.run,
            metrics,
            **engine_arguments(args),
            per_query_out=outs,
        )
    for name, run in result.runs.items():
        refuse_no_overlap_partitioned(args, name, run)
    refuse_meaningless(result, args.rel_level, allow_no_relevant=args.allow_no_relevant)
    return result


def merged_options(args: argparse.Namespace) -> Merged | None:
    if not (args.ci or args.fingerprint):
        return None
    return Merged(args.ci, args.fingerprint)


def cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    metrics = args.metric or list(DEFAULT_METRICS)
    if args.per_query_out and not args.per_query_out.endswith(".parquet"):
        raise RagMetricsError(
            f"--per-query-out {args.per_query_out}: expected a path ending in .parquet (the values are written as "
            "Parquet); for CSV, print them with --per-query --format csv"
        )
    if wants_ppi(args):
        from ragmetrics.cli.corrected import eval_corrected  # noqa: PLC0415 (pandas is loaded on use: a plain eval needs none)

        dataset, runs = read_inputs(args, args.run)
        report_coverage(eval_corrected(args, dataset, runs, metrics, out, err).runs, err)
        return 0
    if args.judge_qrels and args.plan:  # no human label yet: the first queries to label (cli.rules)
        from ragmetrics.cli.corrected import eval_first_plan  # noqa: PLC0415 (pandas is loaded on use: a plain eval needs none)

        dataset, runs = read_inputs(args, args.run)
        report_coverage(eval_first_plan(args, dataset, runs, metrics, out).runs, err)
        return 0
    if args.engine != "inprocess":
        partitioned = eval_partitioned(args, metrics)
        emit(
            partitioned, args.format, args.per_query, out, merged=merged_options(args), names=args.names or "ragmetrics"
        )
        report_coverage(partitioned.runs, err)
        for written in partitioned.runs.values():
            if written.per_query_file:
                err.write(f"ragmetrics: wrote {written.per_query_file}: {written.coverage.queries_evaluated} queries\n")
        return 0
    dataset, runs = read_inputs(args, args.run)
    paths = [
        path if path is None else output_path(args, path, "--per-query-out")
        for path in per_query_paths(args.per_query_out, [r.name for r in runs])
    ]
    result = evaluate_runs(args, dataset, runs, metrics)
    if args.bounds:  # refused before anything is printed
        depth = read_bounds_depth(args.bounds)
        for run in result.runs.values():
            for metric in result.metrics:
                run.alignment.bounded(metric, depth)
    emit(
        result,
        args.format,
        args.per_query,
        out,
        bounds=args.bounds,
        merged=merged_options(args),
        names=args.names or "ragmetrics",
    )
    report_coverage(result.runs, err, bounded=bool(args.bounds))
    for run, path in zip(result.runs.values(), paths):
        if path is not None:
            with replacing(path) as partial:
                run.values.reset_index().to_parquet(partial, index=False)
            err.write(f"ragmetrics: wrote {path}: {run.coverage.queries_evaluated} queries\n")
    return 0


def eval_parser(p: argparse.ArgumentParser) -> None:
    p.description = f"Metrics: {known_metric_names()}"
    add_data_options(p)
    p.add_argument(
        "--run", action="append", required=True, help="a run file (- reads standard input); repeat for several runs"
    )
    add_metric_option(p, "metric, e.g. ndcg@10; default: " + " ".join(DEFAULT_METRICS))
    add_eval_options(p)
    add_bounds_option(p, "each mean's worst and best")
    p.add_argument(
        "--mode",
        choices=CHOICES["mode"],
        default="trec",
        help="conventions: trec_eval (default) or LlamaIndex RetrieverEvaluator",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument(
        "--names",
        choices=("ragmetrics", "trec_eval"),
        help="the table's measure names: ragmetrics' (ndcg@10, default) or, where trec_eval has the measure, "
        "trec_eval's (ndcg_cut_10, P_5, recip_rank)",
    )
    add_format_option(
        p,
        "json",
        "csv",
        "markdown",
        help_text="table: trec_eval's layout (default); json; csv (formula-neutral); markdown",
    )
    add_engine_options(p)
    add_ppi_options(p)
    add_merged_options(p)
    p.set_defaults(handler=cmd_eval)
