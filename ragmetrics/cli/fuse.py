"""``ragmetrics fuse``: fuse runs (reciprocal rank fusion, CombSUM, CombMNZ) into a TREC run."""

from __future__ import annotations

import argparse
from typing import TextIO

from ragmetrics.analysis import fusion
from ragmetrics.analysis.fusion import fuse, ranked_frame
from ragmetrics.cli.inputs import output_path, read_runs, shared_queries
from ragmetrics.cli.options import weight_list, whole_number
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.files import replacing
from ragmetrics.foundation.model import Run
from ragmetrics.io import write_trec_run
from ragmetrics.io.trec import tag_words


def cmd_fuse(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    to_stdout = args.output == "-"  # the shell's habit: the fused run piped into the next command
    output = args.output if to_stdout else output_path(args, args.output, "--output", positional=("runs",))
    if args.runs and args.run:
        raise RagMetricsError(
            "fuse reads its runs in order (their weights, the fused run's name): give them all after the options or "
            "all as --run, not both"
        )
    files = args.runs or args.run
    if not files:
        raise RagMetricsError("fuse needs run files: give them as --run FILE (repeatable) or after the options")
    runs = read_runs(files, args)
    shared_queries(runs, "fuse", err)
    k = fusion.RRF_K if args.k is None else args.k  # read only by rrf, --norm only by the others (cli.rules)
    chosen = args.norm or fusion.DEFAULT_NORM
    norm = None if chosen == "none" else chosen
    fused = fuse(runs, method=args.method, k=k, norm=norm, weights=args.weights, depth=args.depth, name=args.name)
    if args.depth_out:
        fused = Run.from_frame(ranked_frame(fused, args.depth_out), name=fused.name)
    if to_stdout:
        write_trec_run(fused, out)
    else:
        with replacing(output) as partial:
            write_trec_run(fused, partial)
    queries = fused.frame["query_id"].nunique()
    where = "standard output" if to_stdout else args.output
    err.write(f"ragmetrics: wrote {where} ({queries} queries, {tag_words(fused.name)})\n")
    return 0


def fuse_parser(p: argparse.ArgumentParser) -> None:

    p.add_argument("runs", nargs="*", help="run files (or --run)")
    p.add_argument("--run", action="append", default=[], help="a run file; repeatable (as other commands take runs)")
    p.add_argument("--method", choices=fusion.METHODS, default="rrf", help="fusion method")
    p.add_argument("--k", type=whole_number(0), help=f"RRF constant (rrf; default {fusion.RRF_K})")
    p.add_argument(
        "--norm",
        choices=[n or "none" for n in fusion.NORMS],
        help=f"score normalisation (combsum, combmnz; default {fusion.DEFAULT_NORM})",
    )
    p.add_argument(
        "--weights",
        type=weight_list,
        help="comma-separated weights, one per run (0 or more; a run weighted 0 is left out)",
    )
    p.add_argument("--depth", type=whole_number(1), help="fuse only each run's top N")
    p.add_argument("--depth-out", type=whole_number(1), help="write only the fused top N per query")
    p.add_argument("--name", help="run name (the TREC tag)")
    p.add_argument("-o", "--output", required=True, help="output TREC run file (.gz to compress; - for stdout)")
    p.add_argument("--chunk-mapping", help=argparse.SUPPRESS)
    p.add_argument("--chunk-pattern", help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_fuse)
