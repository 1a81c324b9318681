"""``ragmetrics retrieve``: call a retriever for every query and write its run."""

from __future__ import annotations

import argparse
from typing import TextIO

from ragmetrics.cli.inputs import output_paths, read_dataset
from ragmetrics.cli.options import add_data_options
from ragmetrics.retrieve.command import STDOUT, add_options, meta_path, run


def cmd_retrieve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # checked before a single call: the run and its metadata must not replace an input or each other
    written = {"--output": args.output, "--meta-out": meta_path(args)}
    output_paths(args, {option: path for option, path in written.items() if path not in (None, STDOUT)})
    return run(args, read_dataset(args), out, err)


def retrieve_parser(p: argparse.ArgumentParser) -> None:

    add_data_options(p, scoring=False)
    add_options(p)
    p.set_defaults(handler=cmd_retrieve)
