"""``ragmetrics dataset check``: is an evaluation set still honest? Freshness against the current corpus, coverage
per category and difficulty against targets and the size guidance per stage, and whether it separates runs (see
:mod:`ragmetrics.synth.check`). Exit 1 when something calls for action.

The set's age: when a store holds its content (``--store``, ``RAGMETRICS_STORE_URL``, or the default SQLite store
when it exists), the time the store received it (and, for a set made on the Build dataset page, the batch it was
built from); else the latest review time its provenance records; else its file's modification time, said so."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TextIO

import pandas as pd

from ragmetrics.cli.inputs import read_runs, refuse_repeated_runs
from ragmetrics.cli.options import add_format_option, add_store_option, probability
from ragmetrics.cli.synth import parse_categories
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.io import load_dataset
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import Store, dataset_id
from ragmetrics.store.history import resolve_dataset
from ragmetrics.synth.check import DIFFICULTIES, STAGES, Age, check, judged_among, recorded_chunkers, reviewed_at
from ragmetrics.synth.corpus import Corpus, make_corpus, read_texts

DEFAULT_METRIC = "ndcg@10"
"""The power check's metric when ``--metric`` is not given."""


def _store(args: argparse.Namespace) -> Store | None:
    """``--store``, else ``RAGMETRICS_STORE_URL``, else the default SQLite store when it exists (none is made)."""
    if args.store or os.environ.get("RAGMETRICS_STORE_URL"):
        return Store(args.store)
    default = Path(os.environ.get("RAGMETRICS_DATA_DIR", "data")) / "ragmetrics.sqlite"
    return Store(f"sqlite:///{default.resolve()}") if default.is_file() else None


def _dataset(args: argparse.Namespace, store: Store | None) -> tuple[Dataset, str | None]:
    """The set checked and its id in the store (None: the store does not hold this content)."""
    if Path(args.evalset).exists():
        dataset = load_dataset(args.evalset)
        ident = dataset_id(dataset)
        return dataset, ident if store is not None and store.has_dataset(ident) else None
    if store is None:
        raise RagMetricsError(
            f"{args.evalset}: no such file, and no store to look a dataset of that id or name up in (--store URL)"
        )
    ident = resolve_dataset(store, args.evalset, given="evalset")
    return store.get_dataset(ident), ident


def with_corpus_texts(dataset: Dataset, corpus: Corpus) -> Dataset:
    """``dataset`` with ``--corpus``'s texts as its documents, by chunk id and by document id (the ids a run may
    rank): what the power check's text metrics (``answer_in@k``, ``keyword_recall@k``) read, as ``eval --corpus``
    gives them."""
    rows = {c.chunk_id: ("", c.text) for c in corpus.chunks} | {d.doc_id: (d.title, d.text) for d in corpus.documents}
    frame = pd.DataFrame(
        {"doc_id": list(rows), "title": [t for t, _ in rows.values()], "text": [x for _, x in rows.values()]}
    )
    return replace(dataset, documents=frame)


def dataset_age(store: Store | None, ident: str | None, dataset: Dataset, path: str) -> Age | None:
    """How old the set is: when the store received it (and, for a set built from generated candidates, from
    what); else its latest review time in its provenance; else its file's modification time."""
    if store is not None and ident is not None:
        listed = store.list_datasets()
        created = float(listed.loc[listed["id"] == ident, "created_at"].iloc[0])
        batch = CandidateStore(store).made_from(ident)
        detail = f"dataset {ident}"
        if batch is not None:
            names = dict(zip(listed["id"], listed["name"]))
            detail += (
                f", built from {batch.stored} {batch.generator} candidates of {names.get(batch.parent, batch.parent)} "
                f"(batch {batch.id}) by {batch.made_by or 'anonymous'}"
            )
        return Age(created, "store", detail)
    if "provenance" in dataset.queries.columns:
        moment = reviewed_at(dataset.queries["provenance"])
        if moment is not None:
            return Age(moment, "review")
    return Age(Path(path).stat().st_mtime, "file") if Path(path).exists() else None


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    store = _store(args)
    dataset, ident = _dataset(args, store)
    corpus = None
    if args.corpus is not None:
        documents = read_texts(args.corpus)
        chunking = _chunker(args, dataset, {d.doc_id for d in documents}, err)
        corpus = make_corpus(documents, chunking=chunking, parent_separator=args.parent_separator)
    targets = parse_categories(args.target, 0, (), option="--target", counts=True).counts if args.target else None
    refuse_repeated_runs(args.run or [], "the power check would compare a run with itself")
    runs = read_runs(args.run or [], args)
    if corpus is not None and dataset.documents is None:
        dataset = with_corpus_texts(dataset, corpus)
    report = check(
        dataset,
        corpus,
        targets=targets,
        stage=args.stage,
        runs=runs,
        metric=args.metric or DEFAULT_METRIC,
        delta=args.delta,
    )
    report.age = dataset_age(store, ident, dataset, args.evalset)
    for name in targets or {}:
        if name not in report.categories and name not in DIFFICULTIES:
            close = difflib.get_close_matches(name, [*report.categories, *DIFFICULTIES], n=1)
            err.write(
                f"ragmetrics: note: --target {name}: no query has this category (nor is it a difficulty)"
                + (f"; did you mean {close[0]!r}?" if close else "")
                + "\n"
            )
    if args.format == "json":
        payload = {
            "queries": report.queries,
            "age": None
            if report.age is None
            else {
                "since": report.age.since,
                "days": report.age.days(time.time()),
                "known_from": report.age.known_from,
                "detail": report.age.detail,
            },
            "missing": [{"query_id": q, "doc_ids": d} for q, d in report.missing],
            "changed": [{"query_id": q, "chunk_id": c} for q, c in report.changed],
            "categories": report.categories,
            "difficulties": report.difficulties,
            "targets": {k: {"have": h, "target": t, "met": h >= t} for k, (h, t) in report.targets.items()},
            "shortfalls": {k: {"have": h, "target": t} for k, (h, t) in report.shortfalls.items()},
            "size": None
            if report.stage is None
            else {"stage": report.stage, "line": report.size_line, "problem": report.size_problem is not None},
            "power": [{k: v for k, v in row.items() if k != "line"} for row in report.power],
            "problems": report.problems,
        }
        json.dump(payload, out, ensure_ascii=False, indent=2, default=float)
        out.write("\n")
    else:
        out.write("\n".join(report.lines()) + "\n")
    return 1 if report.problems else 0


def _chunker(args: argparse.Namespace, dataset: Dataset, ids: set[str], err: TextIO) -> str:
    """``--chunker`` (said when the set's provenance records another), else the one the set's provenance records (a set ``synth`` made over chunks names chunk ids:
    checked against the whole documents every one would be missing), else none. A corpus whose own ``ids`` are the
    set's chunk ids (the chunks ``synth`` wrote) is taken as given: cut again, its chunks would have other ids and
    no source text would be compared."""
    recorded = recorded_chunkers(dataset)
    if args.chunker is not None:
        if recorded and str(args.chunker) not in recorded:
            err.write(
                f"ragmetrics: note: --chunker {args.chunker} is not the chunker the set's provenance records "
                f"({', '.join(recorded)}): its chunks have other ids and spans, so sources read as missing or "
                "changed that were not; leave --chunker out to use the recorded one\n"
            )
        return str(args.chunker)
    if len(recorded) > 1:
        raise RagMetricsError(
            f"the set's provenance records {len(recorded)} chunkers ({', '.join(recorded)}): give --chunker"
        )
    if recorded and recorded[0] != "none" and (given := judged_among(dataset, ids)):
        err.write(
            f"ragmetrics: note: the corpus taken as given, not cut again with {recorded[0]}: its ids are the set's "
            f"chunk ids ({given[0]}{', ...' if len(given) > 1 else ''})\n"
        )
        return "none"
    if recorded:
        err.write(f"ragmetrics: note: the corpus chunked with {recorded[0]}, as the set's provenance records\n")
        return recorded[0]
    return "none"


def dataset_parser(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("check", help="freshness, coverage and power of an evaluation set; exit 1 on a finding")
    c.add_argument(
        "evalset",
        help="the evaluation set (JSON/JSONL, or any dataset file), or a stored dataset's id or name (with a store)",
    )
    c.add_argument("--corpus", help="the current corpus (as synth reads it): flags queries whose documents are gone")
    c.add_argument(
        "--chunker",
        help="the chunker the set was made with (as synth's --chunker; default: the one its provenance records, "
        "else none)",
    )
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
    c.add_argument(
        "--run", action="append", help="a run on the set, given two or more times: whether the set separates them"
    )
    c.add_argument("--metric", help=f"the metric of the power check (default {DEFAULT_METRIC})")
    c.add_argument("--delta", type=probability, help="the difference to detect (default: each pair's observed one)")
    add_format_option(c, "json")
    add_store_option(c)  # the set's age is the time the store received it, when it holds it
    c.set_defaults(handler=cmd_check)
