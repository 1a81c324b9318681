"""The ``ragmetrics`` command line: a thin shell over the library, fit for CI.

Exit codes: 0 success, 1 a check failed (``check``, or ``diagnose --fail-on-error``), 2 bad input or usage.
Errors go to stderr as one line naming the file and line; never a traceback.

Each command lives in a module of this package (:data:`COMMANDS`), imported when the command is run, so a call
pays only for what its command reads (``import ragmetrics.cli`` loads neither pandas nor SQLAlchemy).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn, TextIO

from ragmetrics.cli.options import expand_metric_groups, refuse_too_few_resamples
from ragmetrics.cli.rules import refuse_empty, refuse_unread
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.memory import use_small_pages_for_this_process
from ragmetrics.foundation.redact import redact_urls
from ragmetrics.foundation.version import __version__


@dataclass(frozen=True)
class Command:
    """A subcommand: its help line, and the module of this package and the function in it that add its options
    (and set its handler)."""

    help: str
    module: str
    options: str

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        build: Callable[[argparse.ArgumentParser], None] = getattr(
            importlib.import_module(f"{__name__}.{self.module}"), self.options
        )
        build(parser)


COMMANDS: dict[str, Command] = {
    "eval": Command("evaluate runs against a dataset", "evaluate", "eval_parser"),
    "compare": Command("compare runs with a baseline: deltas, CIs, paired tests", "compare", "compare_parser"),
    "agree": Command(
        "how much two runs agree, no judgments needed: RBO, overlap@k, churn@k (a judge with people: judge agree)",
        "agree",
        "agree_parser",
    ),
    "evidence": Command(
        "how much of the gold evidence spans the retrieved chunks hand over (at k chunks or T tokens)",
        "evidence",
        "evidence_parser",
    ),
    "fuse": Command("fuse runs (reciprocal rank fusion, CombSUM, CombMNZ) into a TREC run", "fuse", "fuse_parser"),
    "check": Command(
        "CI gate: targets (with CIs) and no significant regression against a baseline", "compare", "check_parser"
    ),
    "diagnose": Command(
        "plain-language diagnosis of each run's misses at K, with the numbers behind it", "diagnose", "diagnose_parser"
    ),
    "push": Command("store a dataset and runs in the team's store and print a share link", "stored", "push_parser"),
    "pool": Command(
        "the unjudged (query, document) pairs in the runs' top K, to be judged", "judgments", "pool_parser"
    ),
    "judge": Command(
        "judgments: merge new labels into qrels; label a pool with a judge; a judge's agreement with people",
        "judgments",
        "judge_parser",
    ),
    "retrieve": Command(
        "call a retriever for every query and write its run, latency and metadata", "retrieve", "retrieve_parser"
    ),
    "history": Command(
        "a stored dataset's runs in time: each step's difference, CI and p-value; exit 1 on a drop",
        "stored",
        "history_parser",
    ),
    "leaderboard": Command(
        "systems x datasets of the stored runs: means, ranks, ties (markdown, csv, latex)",
        "stored",
        "leaderboard_parser",
    ),
    "meta": Command(
        "a stored run's metadata: shown; --set KEY=VALUE, --unset KEY; --format yaml exports ir_metadata",
        "stored",
        "meta_parser",
    ),
    "synth": Command(
        "candidate queries from a corpus, as an evaluation set with provenance and review flags",
        "synth",
        "synth_parser",
    ),
    "dataset": Command(
        "dataset check: freshness against the corpus, coverage per category and stage, power",
        "dataset",
        "dataset_parser",
    ),
}
"""The subcommands, by name: the one place a command is added."""


TREC_EVAL_FLAGS: dict[str, str] = {
    "-q": "--per-query (per-query values)",
    "-l": "--rel-level N (the lowest relevant label)",
    "-c": "--missing zero (the default: a query the run misses scores 0)",
    "-J": "--unjudged skip (score only the judged documents)",
    "-M": "a run cut to its top N before it is read (no flag: every metric takes its @k)",
    "-n": "--allow-no-relevant (score queries without a relevant document)",
}
"""trec_eval's flags and what this CLI says instead: an unrecognized one is refused with it."""


def trec_eval_hint(extra: Sequence[str]) -> str:
    """ "; trec_eval's -q is --per-query here, ..." for the trec_eval flags among ``extra`` (empty if none), and for
    two or more bare file arguments, trec_eval's ``qrels run`` order."""
    said = [
        f"trec_eval's {flag} is {TREC_EVAL_FLAGS[flag]} here"
        for flag in dict.fromkeys(extra)
        if flag in TREC_EVAL_FLAGS
    ]
    if sum(not a.startswith("-") and os.path.exists(a) for a in extra) >= 2:
        said.append("trec_eval's `qrels run` are --dataset QRELS --run RUN here")
    return "; " + "; ".join(said) if said else ""


USED_PARSER = "_command_parser"
"""The attribute of a parsed namespace that holds the parser of its innermost command (:class:`CommandParser`)."""


class CommandParser(argparse.ArgumentParser):
    """An argument parser that records, on the namespace it returns, the innermost (sub)command parser that read
    it (``judge run``'s for ``judge run ...``): unknown arguments are refused with that command's usage. Subparsers
    are made of the parser's own class, and the innermost one returns first."""

    def parse_known_args(  # type: ignore[override] # typeshed's overloads by namespace type
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = list(sys.argv[1:] if args is None else args)
        parsed, extra = super().parse_known_args(args, namespace)
        if getattr(parsed, USED_PARSER, None) is None:
            setattr(parsed, USED_PARSER, self)
        return parsed, extra

    def error(self, message: str) -> NoReturn:
        """argparse's refusal; a missing ``--dataset``/``--run`` beside bare files says trec_eval's order."""
        if message.startswith("the following arguments are required"):
            message += trec_eval_hint(getattr(self, "given", []))
        super().error(message)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that subcommand (a CLI call pays for the options it uses)."""
    parser = CommandParser(prog="ragmetrics", description="Exact retrieval evaluation for RAG and search.")
    parser.add_argument("--version", action="version", version=f"ragmetrics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, found in COMMANDS.items():
        if command is None or command == name:
            found.add_options(sub.add_parser(name, help=found.help))
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    if extra:  # refused with the usage of the (sub)command given, not the top level's
        getattr(args, USED_PARSER).error(f"unrecognized arguments: {' '.join(extra)}{trec_eval_hint(extra)}")
    used: argparse.ArgumentParser = getattr(args, USED_PARSER)
    try:
        refuse_empty(used, args, argv)
        refuse_unread(used.prog.partition(" ")[2], used, args, argv)
        refuse_too_few_resamples(args)
        expand_metric_groups(args, err)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RagMetricsWarning)
            try:
                return int(args.handler(args, out, err))
            finally:
                said = {  # each once: a run read by two evaluations warns twice
                    str(w.message): None for w in caught if issubclass(w.category, RagMetricsWarning)
                }
                for message in said:
                    err.write(f"ragmetrics: warning: {message}\n")
    except RagMetricsError as exc:
        err.write(f"ragmetrics: error: {redact_urls(exc)}\n")
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0
    except OSError as exc:  # a file that cannot be read or written: missing, a folder, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        err.write(f"ragmetrics: error: {where}{exc.strerror or exc}\n")
        return 2


def entry() -> None:  # pragma: no cover - the console script
    """``ragmetrics``: this process is ragmetrics' own, so it makes the process-wide memory choice too, and it ends
    without tearing its modules down: the exit handlers run and the streams are flushed, then the process exits
    (tearing down numpy's and Arrow's modules and thread pools is a tenth of a small evaluation's wall time)."""
    use_small_pages_for_this_process()
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except OSError as exc:  # standard output on a full disk
        sys.stderr.write(f"ragmetrics: error: standard output: {exc.strerror or exc}\n")
        code = 2
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
