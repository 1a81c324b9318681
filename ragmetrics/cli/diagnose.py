"""``ragmetrics diagnose``: a plain-language diagnosis of each run's misses at K."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ragmetrics.analysis.diagnosis import diagnose_run, findings_frame
from ragmetrics.cli.evaluating import evaluate_runs
from ragmetrics.cli.inputs import read_inputs
from ragmetrics.cli.options import add_data_options, add_eval_options, whole_number
from ragmetrics.io.export import to_safe_csv


def cmd_diagnose(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    dataset, runs = read_inputs(args, args.run)
    result = evaluate_runs(args, dataset, runs, ["mrr"])
    findings = []
    for evaluated in result.runs.values():
        findings += diagnose_run(dataset, evaluated.alignment, k=args.k, metric=args.metric)
    if args.format == "json":
        json.dump([f.to_dict() for f in findings], out, ensure_ascii=False, indent=1)
        out.write("\n")
    elif args.format == "csv":
        out.write(str(to_safe_csv(findings_frame(findings), encoding=None)))
    else:
        for run in runs:
            mine = [f for f in findings if f.run == run.name]
            out.write(f"== {run.name}: {len(mine)} finding(s) at K={args.k}\n")
            for f in mine:
                out.write(f"[{f.severity}] {f.title}\n  {f.evidence}\n")
                out.write("".join(f"  - {advice}\n" for advice in f.advice))
    errors = sum(f.severity == "error" for f in findings)
    return 1 if args.fail_on_error and errors else 0


def diagnose_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeatable")
    p.add_argument("--k", type=whole_number(1), default=5, help="the cut-off a query must hit (default 5)")
    p.add_argument("-m", "--metric", help="the metric compared across categories (default hits@K)")
    add_eval_options(p)
    p.add_argument("--format", choices=["text", "json", "csv"], default="text", help="text (default), json or csv")
    p.add_argument(
        "--fail-on-error", action="store_true", help="exit 1 when a finding has severity 'error' (easy queries missed)"
    )
    p.set_defaults(handler=cmd_diagnose)
