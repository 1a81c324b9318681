"""``ragmetrics dataset check``: is an evaluation set still honest? Freshness against the current corpus, coverage
per category and difficulty against targets and the size guidance per stage, and whether it separates runs (see
:mod:`ragmetrics.synth.check`). Exit 1 when something calls for action."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ragmetrics.cli.inputs import read_runs
from ragmetrics.cli.options import probability
from ragmetrics.cli.synth import parse_categories
from ragmetrics.io import load_dataset
from ragmetrics.synth.check import STAGES, check
from ragmetrics.synth.corpus import load_corpus


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    dataset = load_dataset(args.evalset)
    corpus = (
        load_corpus(args.corpus, chunking=args.chunker, parent_separator=args.parent_separator) if args.corpus else None
    )
    targets = parse_categories(args.target, 0, ()) if args.target else None
    runs = read_runs(args.run or [], args)
    report = check(dataset, corpus, targets=targets, stage=args.stage, runs=runs, metric=args.metric, delta=args.delta)
    if args.format == "json":
        payload = {
            "queries": report.queries,
            "missing": [{"query_id": q, "doc_ids": d} for q, d in report.missing],
            "changed": [{"query_id": q, "chunk_id": c} for q, c in report.changed],
            "categories": report.categories,
            "difficulties": report.difficulties,
            "shortfalls": {k: {"have": h, "target": t} for k, (h, t) in report.shortfalls.items()},
            "size": report.size_problem,
            "power": [{k: v for k, v in row.items() if k != "line"} for row in report.power],
            "problems": report.problems,
        }
        json.dump(payload, out, ensure_ascii=False, indent=2, default=float)
        out.write("\n")
    else:
        out.write("\n".join(report.lines()) + "\n")
    return 1 if report.problems else 0


def dataset_parser(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("check", help="freshness, coverage and power of an evaluation set; exit 1 on a finding")
    c.add_argument("evalset", help="the evaluation set (JSON/JSONL, or any dataset file)")
    c.add_argument("--corpus", help="the current corpus (as synth reads it): flags queries whose documents are gone")
    c.add_argument("--chunker", default="none", help="the chunker the set was made with (as synth's --chunker)")
    c.add_argument("--parent-separator", help="as synth's --parent-separator")
    c.add_argument(
        "--target",
        help="queries wanted per category or difficulty: NAME=COUNT,... (e.g. factual=20,negative=5,hard=10)",
    )
    c.add_argument(
        "--stage",
        choices=list(STAGES),
        help="check the size against the stage's guidance: "
        + ", ".join(f"{k} {lo}-{hi}" for k, (lo, hi) in STAGES.items()),
    )
    c.add_argument("--run", action="append", help="a run on the set; two or more: whether the set separates them")
    c.add_argument("--metric", default="ndcg@10", help="the metric of the power check (default ndcg@10)")
    c.add_argument("--delta", type=probability, help="the difference to detect (default: each pair's observed one)")
    c.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    c.set_defaults(handler=cmd_check)
