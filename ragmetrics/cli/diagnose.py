"""``ragmetrics diagnose``: a plain-language diagnosis of each run's misses at K."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ragmetrics.analysis.diagnosis import RunTraits, diagnose_run, findings_frame, run_traits
from ragmetrics.cli.evaluating import evaluate_runs
from ragmetrics.cli.inputs import read_inputs
from ragmetrics.cli.options import add_data_options, add_eval_options, add_format_option, whole_number
from ragmetrics.io.export import to_safe_csv
from ragmetrics.io.runmeta import parse_tags, read_sidecar, retriever_tags


def cmd_diagnose(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    dataset, runs = read_inputs(args, args.run)
    result = evaluate_runs(args, dataset, runs, ["mrr"])
    given = parse_tags(args.meta or [])
    traits: dict[str, RunTraits] = {}
    for run, path in zip(runs, args.run, strict=True):  # what the run is: RUN.json beside it, then --meta
        sidecar = read_sidecar(path)
        traits[run.name] = run_traits(run, {**(retriever_tags(sidecar) if sidecar else {}), **given})
    findings = []
    for evaluated in result.runs.values():
        findings += diagnose_run(
            dataset, evaluated.alignment, k=args.k, metric=args.metric, traits=traits[evaluated.alignment.name]
        )
    if args.format == "json":
        json.dump([f.to_dict() for f in findings], out, ensure_ascii=False, indent=1)
        out.write("\n")
    elif args.format == "csv":
        out.write(str(to_safe_csv(findings_frame(findings), encoding=None)))
    else:
        for run in runs:
            mine = [f for f in findings if f.run == run.name]
            out.write(f"== {run.name}: {len(mine)} finding(s) at K={args.k}\n")
            out.write(f"the run is {traits[run.name].words()}\n")
            for f in mine:
                out.write(f"[{f.severity}] {f.title}\n  {f.evidence}\n")
                for advice in f.advice:
                    out.write(f"  - {advice}\n" + (f"    because {advice.because}\n" if advice.because else ""))
    errors = sum(f.severity == "error" for f in findings)
    return 1 if args.fail_on_error and errors else 0


def diagnose_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeatable")
    p.add_argument("-k", "--k", type=whole_number(1), default=5, help="the cut-off a query must hit (default 5)")
    p.add_argument("-m", "--metric", help="the metric compared across categories (default hits@K)")
    p.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="what every --run is, as tags (repeatable; e.g. retriever.kind=dense, model=intfloat/e5-base-v2, "
        "fusion=rrf); the metadata ragmetrics retrieve wrote beside a run (RUN.json) is read too, --meta wins. "
        "Without either, a run's kind is read from its name and its scores",
    )
    add_eval_options(p, bounds=False)
    add_format_option(p, "json", "csv")
    p.add_argument(
        "--fail-on-error", action="store_true", help="exit 1 when a finding has severity 'error' (easy queries missed)"
    )
    p.set_defaults(handler=cmd_diagnose)
