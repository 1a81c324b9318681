"""``ragmetrics agree``: how much two runs agree (RBO, overlap@k, churn@k), with no judgments at all.

Its own command rather than ``compare --unlabelled``: ``compare`` is built on a dataset's judgments (metrics, paired
tests, a baseline, bounds), and none of its options would mean anything here; ``agree`` reads two runs and, when
given, a queries file, and its options (``-p``, ``-k``) are its own.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ragmetrics.analysis.agreement import DEFAULT_DEPTHS, RBO_PERSISTENCE, Agreement, agreement
from ragmetrics.cli.inputs import read_runs, shared_queries
from ragmetrics.cli.options import add_format_option, whole_number
from ragmetrics.engine.conventions import CHOICES
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io.source import open_source


def persistence(text: str) -> float:
    """An argparse type: RBO's persistence, strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1 (e.g. 0.9), found {text!r}")
    return value


def _table(result: Agreement, per_query: bool, out: TextIO) -> None:
    """trec_eval's layout, as ``eval`` prints: ``measure<TAB>query<TAB>value``, 'all' for the mean."""
    out.write(f"{'runid':<22}\tall\t{result.names[0]} vs {result.names[1]}\n")
    out.write(f"{'num_q':<22}\tall\t{result.queries_compared}\n")
    if per_query:
        for qid, row in result.values.iterrows():
            for name, value in row.items():
                if value == value:  # NaN: neither run answers the query
                    out.write(f"{name:<22}\t{qid}\t{value:.4f}\n")
    for name, value in result.mean().items():
        out.write(f"{name:<22}\tall\t{value:.4f}\n")


def _frame(result: Agreement, per_query: bool):
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

    mean = result.mean().to_frame().T
    mean.index = pd.Index(["all"], name="query_id")
    frame = pd.concat([result.values, mean]) if per_query else mean
    frame = frame.reset_index()
    frame.insert(0, "runs", f"{result.names[0]} vs {result.names[1]}")
    return frame


def one_sided_words(result: Agreement) -> str:
    """What became of the queries only one run ranks, and the option that changes it."""
    n = result.one_sided
    which = f"{n} {'query' if n == 1 else 'queries'} that only one run ranks {'is' if n == 1 else 'are'}"
    if result.missing == "zero":
        return f"{which} scored 0 (churn 1), as --missing zero asks"
    return f"{which} left out of num_q and the mean (--missing zero scores {'it' if n == 1 else 'them'} 0, as trec_eval -c)"


def cmd_agree(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if len(args.run) != 2:
        raise RagMetricsError(f"agree compares two runs: give --run twice (got {len(args.run)})")
    runs = read_runs(args.run, args)
    shared_queries(runs, "agree", err)
    queries = None
    if args.queries:
        from ragmetrics.io.beir import read_queries  # noqa: PLC0415 (imports pandas: loaded when such a file is read)

        queries = read_queries(open_source(args.queries))["query_id"].tolist()
        if not queries:
            raise RagMetricsError(f"--queries {args.queries}: no query in the file")
    result = agreement(
        runs[0], runs[1], p=args.persistence, k=args.k or DEFAULT_DEPTHS, queries=queries, missing=args.missing
    )
    if result.one_sided:
        err.write(f"ragmetrics: note: agree: {one_sided_words(result)}\n")
    if result.unranked:
        n = result.unranked
        err.write(
            f"ragmetrics: note: agree: {n} {'query' if n == 1 else 'queries'} of --queries {args.queries} that "
            f"neither run ranks {'is' if n == 1 else 'are'} left out of num_q and the mean\n"
        )
    if args.format == "json":
        json.dump(result.to_dict(per_query=args.per_query), out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif args.format == "csv":
        from ragmetrics.io.export import to_safe_csv  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

        out.write(str(to_safe_csv(_frame(result, args.per_query), encoding=None)))
    elif args.format == "markdown":
        from ragmetrics.io.export import markdown_table  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

        out.write(markdown_table(_frame(result, args.per_query)))
    else:
        _table(result, args.per_query, out)
    return 0


def agree_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", action="append", required=True, help="a run file; give exactly two")
    p.add_argument("--queries", help="a queries file (JSONL or TSV): compare these queries (default: every query)")
    p.add_argument(
        "-p",
        "--persistence",
        type=persistence,
        default=RBO_PERSISTENCE,
        help=f"RBO's persistence p, between 0 and 1 (default {RBO_PERSISTENCE})",
    )
    p.add_argument(
        "-k",
        "--k",
        type=whole_number(1),
        action="append",
        help="overlap@k and churn@k cut-off (repeatable; default 10)",
    )
    p.add_argument(
        "--missing",
        choices=CHOICES["missing"],
        default="skip",
        help="a query only one run ranks: leave it out (skip, default) or score it 0 (zero, as trec_eval -c)",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    add_format_option(p, "json", "csv", "markdown")
    p.set_defaults(handler=cmd_agree)
