"""The ``ragmetrics`` command line: a thin shell over the library, fit for CI.

Exit codes: 0 success, 1 a check failed (``check``), 2 bad input or usage.
Errors go to stderr as one line naming the file and line; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd

from ragmetrics.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.evaluate import DEFAULT_METRICS, EvalResult, evaluate
from ragmetrics.metrics import known_metric_names
from ragmetrics.model import Dataset, Run


def _load_dataset(args: argparse.Namespace) -> Dataset:
    from ragmetrics.io import load_dataset

    return load_dataset(
        args.dataset,
        queries=getattr(args, "queries", None),
        corpus=getattr(args, "corpus", None),
        corpus_size=getattr(args, "corpus_size", None),
    )


def _load_runs(paths: Sequence[str], args: argparse.Namespace) -> list[Run]:
    from ragmetrics.io import load_run

    runs: list[Run] = []
    seen: dict[str, int] = {}
    for path in paths:
        run = load_run(path, chunk_mapping=getattr(args, "chunk_mapping", None), chunk_pattern=getattr(args, "chunk_pattern", None))
        count = seen.get(run.name, 0)
        seen[run.name] = count + 1
        if count:
            run = run.with_name(f"{run.name}-{count + 1}")
        runs.append(run)
    return runs


def _format_table(result: EvalResult, per_query: bool, out: TextIO) -> None:
    """trec_eval's layout: ``measure<TAB>query<TAB>value``, 'all' for the mean."""
    for name, run in result.runs.items():
        out.write(f"{'runid':<22}\tall\t{name}\n")
        out.write(f"{'num_q':<22}\tall\t{run.coverage.queries_evaluated}\n")
        if per_query:
            for qid, row in run.values.iterrows():
                for metric, value in row.items():
                    out.write(f"{metric:<22}\t{qid}\t{value:.4f}\n")
        for metric, value in run.mean.items():
            out.write(f"{metric:<22}\tall\t{value:.4f}\n")


def _wide(result: EvalResult, per_query: bool) -> pd.DataFrame:
    parts = []
    for name, run in result.runs.items():
        if per_query:
            frame = run.values.reset_index()
            frame.insert(0, "run", name)
            parts.append(frame)
        mean = pd.DataFrame([run.mean.to_dict()])
        mean.insert(0, "query_id", "all")
        mean.insert(0, "run", name)
        parts.append(mean)
    return pd.concat(parts, ignore_index=True)


def _emit(result: EvalResult, fmt: str, per_query: bool, out: TextIO) -> None:
    if fmt == "json":
        json.dump(result.to_dict(per_query=per_query), out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif fmt == "csv":
        _wide(result, per_query).to_csv(out, index=False, float_format="%.6f")
    elif fmt == "markdown":
        frame = result.mean()
        out.write("| run | " + " | ".join(frame.columns) + " |\n")
        out.write("|---|" + "---:|" * len(frame.columns) + "\n")
        for name, row in frame.iterrows():
            out.write(f"| {name} | " + " | ".join(f"{v:.4f}" for v in row) + " |\n")
    else:
        _format_table(result, per_query, out)


def _report_coverage(result: EvalResult, err: TextIO) -> None:
    for name, coverage in result.coverage.items():
        notes = []
        if coverage.missing_in_run:
            notes.append(f"{len(coverage.missing_in_run)} judged queries missing from the run (scored 0)")
        if coverage.not_in_dataset:
            notes.append(f"{len(coverage.not_in_dataset)} run queries not in the dataset (dropped)")
        if coverage.duplicates_dropped:
            notes.append(f"{coverage.duplicates_dropped} duplicate rows dropped")
        if coverage.no_relevant:
            notes.append(f"{len(coverage.no_relevant)} queries without a relevant document (scored 0)")
        if notes:
            err.write(f"ragmetrics: note: run {name!r}: " + "; ".join(notes) + "\n")


def cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    dataset = _load_dataset(args)
    runs = _load_runs(args.run, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagMetricsWarning)
        result = evaluate(
            dataset, runs, args.metric or list(DEFAULT_METRICS),
            missing=args.missing, rel_level=args.rel_level, level=args.level, mode=args.mode,
        )
    _emit(result, args.format, args.per_query, out)
    _report_coverage(result, err)
    return 0


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="qrels (TREC, CSV, JSON), an evaluation set (JSON/JSONL) or a BEIR folder")
    parser.add_argument("--queries", help="queries file to attach text to TREC qrels")
    parser.add_argument("--corpus", help="corpus.jsonl (gives the corpus size for accuracy@k)")
    parser.add_argument("--corpus-size", type=int, help="number of documents in the collection (accuracy@k)")
    parser.add_argument("--chunk-mapping", help="chunk-to-document mapping file (CSV/TSV/JSONL)")
    parser.add_argument("--chunk-pattern", help="regex with a group 'doc' (or the separator '#') taking the document id from a chunk id")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragmetrics", description="Exact retrieval evaluation for RAG and search.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("eval", help="evaluate runs against a dataset", description=f"Metrics: {known_metric_names()}")
    _add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeat for several runs")
    p.add_argument("-m", "--metric", action="append", help="metric, e.g. ndcg@10 (repeatable); default: " + " ".join(DEFAULT_METRICS))
    p.add_argument("--missing", choices=["zero", "skip"], default="zero", help="judged queries absent from a run: score 0 (trec_eval -c, default) or skip (pytrec_eval)")
    p.add_argument("--rel-level", type=int, default=1, help="smallest label counted as relevant (trec_eval -l)")
    p.add_argument("--level", choices=["auto", "document", "chunk"], default="auto", help="evaluate chunks at document level (auto: when the run names source documents)")
    p.add_argument("--mode", choices=["trec", "llamaindex"], default="trec", help="conventions: trec_eval (default) or LlamaIndex RetrieverEvaluator")
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--format", choices=["table", "json", "csv", "markdown"], default="table")
    p.set_defaults(handler=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args, out, err))
    except RagMetricsError as exc:
        err.write(f"ragmetrics: error: {exc}\n")
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        err.write(f"ragmetrics: error: {exc.filename or exc}: {exc.strerror or 'cannot be read'}\n")
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
