"""``ragmetrics retrieve``: call a retriever for every query and write its run."""

from __future__ import annotations

import argparse
from typing import TextIO

from ragmetrics.cli.inputs import read_dataset
from ragmetrics.cli.options import add_data_options
from ragmetrics.retrieve.command import add_options, run


def cmd_retrieve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    return run(args, read_dataset(args), out, err)


def retrieve_parser(p: argparse.ArgumentParser) -> None:

    add_data_options(p, scoring=False)
    add_options(p)
    p.set_defaults(handler=cmd_retrieve)
