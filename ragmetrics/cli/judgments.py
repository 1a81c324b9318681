"""``ragmetrics pool`` (the unjudged pairs of the runs' top K) and ``ragmetrics judge``: ``merge`` (new labels into
qrels), ``run`` and ``agree`` (a registered judge labels a pool; its agreement with people: :mod:`.judging`)."""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path
from typing import TextIO

from ragmetrics.analysis.judging import merge, not_pooled_words, pool
from ragmetrics.cli.evaluating import evaluate_runs
from ragmetrics.cli.inputs import (
    judges_of,
    labels_source,
    output_path,
    read_dataset,
    read_inputs,
    refuse_repeated_runs,
)
from ragmetrics.cli.judging import agree_options, run_options
from ragmetrics.cli.options import add_data_options, add_eval_options, whole_number
from ragmetrics.cli.pools import check_label_column, refuse_labels_of_another_dataset
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.files import replacing
from ragmetrics.foundation.grades import max_grade
from ragmetrics.io import load_dataset, write_trec_qrels
from ragmetrics.io.evalset import with_judgments, write_evalset
from ragmetrics.io.export import neutralise
from ragmetrics.io.formats import detect
from ragmetrics.io.source import names_of, open_source

NOT_TREC_SUFFIXES = frozenset({".json", ".jsonl", ".parquet", ".csv", ".zip", ".gz"})
"""Output names the loaders would read as another format (or compressed): ``judge merge`` writes TREC lines."""

EVALSET_SUFFIXES = frozenset({".json", ".jsonl"})
"""Output names ``judge merge`` writes an evaluation set to, when ``--dataset`` is one."""


def cmd_pool(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    output = output_path(args, args.output, "--output")
    refuse_repeated_runs(
        args.run, "the pool's runs column counts how many runs retrieved a pair, which the learned judge reads"
    )
    dataset, runs = read_inputs(args, args.run)
    result = evaluate_runs(args, dataset, runs, ["judged@10"])
    pairs = pool(dataset, [r.alignment for r in result.runs.values()], args.depth)
    left_out = not_pooled_words(dataset.negative_queries())
    if left_out:
        err.write(f"ragmetrics: note: {left_out}\n")
    for name, run in result.runs.items():
        outside = run.coverage.not_in_dataset
        if outside:
            err.write(
                f"ragmetrics: note: run {name!r} ranks {len(outside)} quer{'ies' if len(outside) != 1 else 'y'} the "
                f"dataset does not have {names_of(outside, 3)}: not pooled (a pool is of the dataset's queries)"
                + (
                    f"; if {args.queries} names them: a dataset read from qrels holds the queries its qrels judge "
                    "(the queries file gives their texts), an evaluation set (JSON/JSONL) keeps queries without "
                    "judgments too"
                    if getattr(args, "queries", None)
                    else ""
                )
                + "\n"
            )
    # best_rank: the best rank any run gave the pair, runs: how many runs retrieved it there (the learned judge's
    # features; where a judge errs reads the rank)
    columns = ["query_id", "doc_id", "best_rank", "runs", *(["text"] if "text" in pairs.columns else [])]
    if "text" in columns and len(pairs) and not any(isinstance(t, str) and t.strip() for t in pairs["text"]):
        warnings.warn(
            f"none of the {pairs['doc_id'].nunique()} pooled documents has a text in the corpus (--corpus): the pool's "
            "text column is empty; check that the corpus is the one the runs retrieved from",
            RagMetricsWarning,
            stacklevel=1,
        )
    with replacing(output) as partial, open(partial, "w", encoding="utf-8", newline="") as handle:
        # as read_tsv reads it: no quoting (a quote in a passage stays one character; text holds no tab or newline)
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, quotechar=None)
        writer.writerow(columns)
        for row in pairs[columns].itertuples(index=False):
            # ids stay exact (the labels come back keyed on them); text is neutralised for spreadsheets
            cells = [row.query_id, row.doc_id, int(row.best_rank), int(row.runs)]
            if "text" in columns:
                cells.append(neutralise(" ".join(str(row.text).split())) if isinstance(row.text, str) else "")
            writer.writerow(cells)
    queries = pairs["query_id"].nunique() if len(pairs) else 0
    err.write(
        f"ragmetrics: wrote {args.output}: {len(pairs)} unjudged pair(s) of {queries} queries, top {args.depth}\n"
    )
    return 0


def cmd_judge_merge(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    output = output_path(args, args.output, "--output")
    suffix = "".join(Path(output).suffixes[-1:]).lower()
    as_evalset = suffix in EVALSET_SUFFIXES and _is_evalset(args)
    if suffix in NOT_TREC_SUFFIXES and not as_evalset:
        raise RagMetricsError(
            f"--output {output}: judge merge writes TREC qrels lines, which a {suffix} file would not be read as: "
            "give a path ending in .txt, .qrels or .tsv (or .json/.jsonl when --dataset is an evaluation set, "
            "to keep its queries, answers and categories)"
        )
    dataset = read_dataset(args)
    source = labels_source(args.labels)  # read once: its header, its judges, its labels
    check_label_column(source, args.labels)
    judges = judges_of(source)
    labels = load_dataset(source)
    known = set(dataset.queries_table.column("query_id").to_pylist())
    # with --queries, a query without judgments yet is none of the dataset's queries here: labels of new ones only
    # are merged with the warning below
    if not getattr(args, "queries", None):
        refuse_labels_of_another_dataset(args.labels, labels, known)
    unknown = sorted(set(labels.qrels_table.column("query_id").to_pylist()) - known)
    if unknown and as_evalset:
        raise RagMetricsError(
            f"{args.labels} labels {len(unknown)} {'query' if len(unknown) == 1 else 'queries'} the evaluation set "
            f"does not have {names_of(unknown, 5)}: a record needs its query's text; check that the labels belong "
            "to this set, or write TREC qrels (.tsv)"
        )
    if unknown:
        warnings.warn(
            f"{args.labels} labels {len(unknown)} {'query' if len(unknown) == 1 else 'queries'} the dataset does "
            f"not have {names_of(unknown, 5)}: they are "
            "merged as new judged queries; check that the labels belong to this dataset",
            RagMetricsWarning,
            stacklevel=1,
        )
    top, given = max_grade(dataset), max_grade(labels)
    if given > top:
        warnings.warn(
            f"{args.labels} grades up to {given}, the dataset's judgments up to {top}: the merged qrels' scale is "
            f"0..{given} (graded metrics weigh the new grades so); check that the labels use the dataset's scale",
            RagMetricsWarning,
            stacklevel=1,
        )
    if judges:
        warnings.warn(
            f"{args.labels} holds a judge's labels ({', '.join(judges)}); the merged qrels will not say so: keep "
            f"{args.labels} beside them (or add them to the store, which keeps their provenance)",
            RagMetricsWarning,
            stacklevel=1,
        )
    try:
        merged = merge(dataset, labels, override=args.override)
    except RagMetricsError:
        found = merge(dataset, labels, override=True)
        for q, d, old, new in found.conflicts:
            err.write(f"ragmetrics: conflict: query {q} document {d}: judged {old}, labelled {new}\n")
        raise
    with replacing(output) as partial:
        if as_evalset:
            write_evalset(with_judgments(open_source(args.dataset), merged.dataset), partial)
        else:
            write_trec_qrels(merged.dataset, partial)
    kept = " in the evaluation set, every other field kept" if as_evalset else ""
    err.write(
        f"ragmetrics: wrote {args.output}: {merged.dataset.qrels_table.num_rows} judgments{kept} "
        f"({merged.added} added, {merged.changed} changed)\n"
    )
    return 0


def _is_evalset(args: argparse.Namespace) -> bool:
    """``--dataset`` is one evaluation-set file, its queries its own (no --queries)."""
    if getattr(args, "queries", None) or not Path(args.dataset).is_file():
        return False
    return detect(open_source(args.dataset), "dataset").name == "evalset"


def pool_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p, scoring=False)
    p.add_argument("--run", action="append", required=True, help="a run file; repeatable (the pool is their union)")
    p.add_argument("--depth", type=whole_number(1), default=10, help="pool each run's top K (default 10)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="the TSV to write: query_id, doc_id, best_rank, runs (and text when known)",
    )
    add_eval_options(p, bounds=False, scoring=False)
    p.set_defaults(handler=cmd_pool)


def judge_parser(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True)
    m = actions.add_parser("merge", help="add labels to a dataset's judgments and write TREC qrels")
    add_data_options(m, scoring=False)
    m.add_argument("--labels", required=True, help="the labels: TREC qrels lines, or a TSV with query_id doc_id label")
    m.add_argument(
        "-o",
        "--output",
        required=True,
        help="the merged qrels to write: TREC qrels (.txt, .qrels, .tsv), or .json/.jsonl when --dataset is an evaluation set",
    )
    m.add_argument("--override", action="store_true", help="let a new label change a judgment already made")
    m.set_defaults(handler=cmd_judge_merge)
    run_options(actions.add_parser("run", help="label a pool's pairs with a registered judge, with their provenance"))
    agree_options(
        actions.add_parser(
            "agree",
            help="a judge's agreement with people: kappa, confusion matrix, where it errs (two runs: ragmetrics agree)",
        )
    )
