"""The commands over the team's store: ``push`` (store files, print a share link), ``history``, ``leaderboard``
and ``meta``."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ragmetrics.analysis.history import timeline_csv, timeline_text
from ragmetrics.analysis.per_query import read_per_query
from ragmetrics.cli.evaluating import refuse_no_overlap
from ragmetrics.cli.inputs import read_inputs
from ragmetrics.cli.options import (
    Once,
    add_allow_no_overlap_option,
    add_data_options,
    add_format_option,
    add_store_option,
    add_stored_dataset_option,
    add_test_options,
)
from ragmetrics.engine import align
from ragmetrics.foundation.errors import NoTextError, RagMetricsError
from ragmetrics.foundation.ids import is_content_id as is_id
from ragmetrics.io.runmeta import check_key, ir_metadata_yaml, parse_tags, read_sidecar, retriever_tags
from ragmetrics.store.database import MAX_NAME_BYTES, Store, checked_text, run_id
from ragmetrics.store.history import empty_store, resolve_dataset, store_leaderboard, store_timeline
from ragmetrics.store.links import share_link

if TYPE_CHECKING:
    from ragmetrics.store.database import Store


def cmd_push(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    if not args.run and not args.per_query:
        raise RagMetricsError("give a --run or a --per-query file to push")
    args.run = args.run or []
    given = parse_tags(args.meta or [])
    names = list(args.run_name or [])
    if names and len(names) != len(args.run):
        raise RagMetricsError(
            f"--run-name is given {len(names)} time(s) for {len(args.run)} --run: give one name per run, in their order"
        )
    dataset, runs = read_inputs(args, args.run)
    if names:
        runs = [run.with_name(checked_text(name, "--run-name", MAX_NAME_BYTES)) for run, name in zip(runs, names)]
    # a run that does not meet the qrels is refused before anything is stored, as eval refuses it (aligned one at a
    # time, and only when the check is made)
    refuse_no_overlap(args, dataset, (align(dataset, run) for run in runs))
    results = [
        read_per_query(path, dataset, name=Path(path).name.removesuffix(".parquet"), filename=path)
        for path in args.per_query or []
    ]
    tags = []
    for path in args.run:  # the metadata ragmetrics retrieve wrote beside the run, then --meta (which wins)
        found = read_sidecar(path)
        tags.append({**(retriever_tags(found) if found else {}), **given})
    store = Store(args.store)
    dataset_files = [args.dataset, *(f for f in (getattr(args, "queries", None), getattr(args, "corpus", None)) if f)]
    if args.name:
        dataset = replace(dataset, name=checked_text(args.name, "--name", MAX_NAME_BYTES))
    stored = store.list_datasets()
    dataset_id = store.put_dataset(
        dataset, source=", ".join(Path(f).name for f in dataset_files), targets=args.dataset_targets or ""
    )
    alike = stored[(stored["name"] == dataset.name) & (stored["id"] != dataset_id)]["id"].tolist()
    if alike and dataset_id not in set(stored["id"]):
        err.write(
            f"ragmetrics: warning: the store holds a dataset named {dataset.name!r} already ({', '.join(alike)}), "
            f"with other content: this push stored another ({dataset_id}), and each run's history is its "
            "dataset's; if it is the same dataset, push with the files it was pushed with (its --queries too), "
            "else --name tells the two apart\n"
        )
    if args.name or args.dataset_targets:
        _say_what_the_stored_dataset_kept(store, dataset_id, args.name and dataset.name, args.dataset_targets, err)
    idents = [run_id(run) for run in runs]  # hashed once: what was stored before is read, then what is put
    stored_before = {ident: store.tags(ident) for ident in idents if store.has_run(ident)}
    names_before = dict(store.list_runs()[["id", "name"]].itertuples(index=False)) if stored_before else {}
    run_ids = [
        store.put_run(run, dataset_id, ident=ident, source=Path(path).name, tags=meta)
        for run, ident, path, meta in zip(runs, idents, args.run, tags)
    ]
    for run, ident, meta in zip(runs, run_ids, tags):
        if ident in stored_before:
            _say_what_the_stored_run_kept(run.name, names_before.get(ident, run.name), stored_before[ident], meta, err)
    result_ids = [store.put_results(dataset_id, r, source=Path(p).name) for r, p in zip(results, args.per_query or [])]
    base = args.base_url or os.environ.get("RAGMETRICS_BASE_URL", "http://localhost:8501")
    out.write(share_link(base, dataset=dataset_id, runs=run_ids) + "\n")
    tagged = sum(bool(t) for t in tags)
    err.write(
        f"ragmetrics: stored dataset {dataset_id} and {len(run_ids)} run(s) ({', '.join(run_ids)}) in {store.kind} store"
        + (f"; {tagged} with metadata" if tagged else "")
        + (
            f"; {len(result_ids)} per-query result(s) without rankings ({', '.join(result_ids)}), shown on the Overview"
            if result_ids
            else ""
        )
        + "\n"
    )
    newest = store.pending_place(dataset_id)
    if newest != dataset_id and run_ids:  # people saved qrels versions of it: the leaderboard and pages show those
        for run, path, meta in zip(runs, args.run, tags):
            store.put_run(run, newest, source=Path(path).name, tags=meta)
        name = store.list_datasets().set_index("id")["name"].get(newest, newest)
        err.write(
            f"ragmetrics: note: dataset {dataset_id} has newer qrels versions made from people's labels; the run(s) "
            f"are linked to the newest too, {name} ({newest}): {share_link(base, dataset=newest, runs=run_ids)}\n"
        )
    return 0


def _say_what_the_stored_run_kept(
    given: str, name: str, before: Mapping[str, str], meta: Mapping[str, str], err: TextIO
) -> None:
    """A run pushed again (the same rows, stored once) keeps its first name; its tags are updated: said, with what
    changed (a nightly job that pushes an unchanged run moves its date, and its place in the timeline)."""
    changed = [
        f"{key} {before[key]} → {value}" for key, value in meta.items() if key in before and before[key] != value
    ]
    added = [f"{key} {value}" for key, value in meta.items() if key not in before]
    said = "; ".join(
        part
        for part in (
            f"tags changed: {', '.join(changed)}" if changed else "",
            f"tags added: {', '.join(added)}" if added else "",
        )
        if part
    )
    renamed = f" (not as {given!r})" if given != name else ""
    err.write(
        f"ragmetrics: note: run {name!r} was stored before, the same rows: it keeps its name{renamed}"
        + (f"; {said}" if said else "; its tags are unchanged")
        + "\n"
    )


def _say_what_the_stored_dataset_kept(
    store: Store, dataset_id: str, name: str | None, targets: str | None, err: TextIO
) -> None:
    """A dataset stored before keeps its name and the targets it declares: say so when the push asked for others."""
    stored = store.list_datasets().set_index("id").loc[dataset_id]
    if name and str(stored["name"]) != name:
        err.write(
            f"ragmetrics: note: dataset {dataset_id} was stored before as {stored['name']!r}: it keeps that name\n"
        )
    if targets and str(stored["targets"] or "") not in ("", targets):  # "": a store without the column keeps none
        err.write(
            f"ragmetrics: note: dataset {dataset_id} was stored before with the targets {stored['targets']!r}: it keeps "
            f"them (--dataset-targets {targets!r} not stored)\n"
        )


def store_dataset(args: argparse.Namespace) -> tuple[Store, str]:
    """The store (an existing one: the command reads it) and the dataset the options name in it."""
    store = Store(args.store, existing=True)
    return store, resolve_dataset(store, args.dataset, queries=getattr(args, "queries", None))


def stored_run(store: Store, dataset: str | None, spec: str) -> str:
    """A stored run named by its id, or by its name among ``dataset``'s runs."""

    if is_id(spec) and store.has_run(spec):
        return spec
    if dataset is None and store.list_datasets().empty:
        raise RagMetricsError(f"run {spec[:80]!r}: {empty_store(store)}")
    if dataset is None:
        raise RagMetricsError(f"run {spec[:80]!r} is not a stored run's id (give --dataset to name a run by its name)")
    listing = store.list_runs(dataset)
    named = listing[listing["name"] == spec]
    if len(named) == 1:
        return str(named["id"].iloc[0])
    if len(named) > 1:
        raise RagMetricsError(
            f"{len(named)} runs of this dataset are called {spec!r} ({', '.join(named['id'])}): give the id"
        )
    known = ", ".join(listing["name"].astype(str).tolist()[:10]) or "none"
    raise RagMetricsError(f"run {spec[:80]!r} is neither the id nor the name of a run of this dataset (runs: {known})")


def cmd_history(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    store, dataset = store_dataset(args)
    where = parse_tags(args.where or [], "--where")
    baseline = stored_run(store, dataset, args.baseline) if args.baseline else None
    try:
        line = store_timeline(
            store, dataset, args.metric, by=args.by, where=where, baseline=baseline, test=args.test,
            alpha=args.alpha, correction=args.correction, seed=args.seed, n_resamples=args.resamples,
        )  # fmt: skip
    except NoTextError as exc:  # the texts come from the store here: say how they get there
        raise RagMetricsError(
            f"run {exc.run!r}: {args.metric} counts the tokens of the retrieved texts, and neither "
            f"the run nor the stored dataset {dataset} holds them: push the dataset with its corpus (push --corpus), "
            "or runs with their chunks' texts"
        ) from None
    if line.frame.empty:
        raise RagMetricsError(
            f"no run of dataset {dataset} matches"
            + (" " + ", ".join(f"{k}={v}" for k, v in where.items()) if where else "")
            + (f" and has a {args.by!r} tag" if args.by != "date" else "")
        )
    if args.format == "json":
        json.dump(line.to_dict(), out, ensure_ascii=False, indent=2, allow_nan=False)
        out.write("\n")
    elif args.format == "csv":
        out.write(timeline_csv(line))
    else:
        out.write(timeline_text(line))
    for note in line.notes:
        err.write(f"ragmetrics: note: {note}\n")
    _say_results_only(store, [dataset], err)
    if args.gate == "baseline":
        if line.last_below_baseline:
            err.write(f"ragmetrics: the last run is significantly worse than the baseline on {args.metric}\n")
        return 1 if line.last_below_baseline else 0
    if line.last_step_drops:
        err.write(f"ragmetrics: the last step is a significant drop of {args.metric}\n")
    return 1 if line.last_step_drops else 0


def cmd_leaderboard(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    store = Store(args.store, existing=True)
    datasets = [resolve_dataset(store, d, takes_queries=False) for d in args.dataset or []]
    board = store_leaderboard(
        store, args.metric, datasets=datasets, system_tag=args.system_tag, test=args.test, alpha=args.alpha,
        seed=args.seed, n_resamples=args.resamples,
    )  # fmt: skip
    if board.means.empty:
        if store.list_datasets().empty:
            raise RagMetricsError(empty_store(store))
        raise RagMetricsError(
            f"no stored run has a {args.system_tag!r} tag (ragmetrics push --meta {args.system_tag}=NAME)"
        )
    if args.format == "json":
        json.dump(board.to_dict(), out, ensure_ascii=False, indent=2, allow_nan=False)
        out.write("\n")
    else:
        out.write({"markdown": board.to_markdown, "csv": board.to_csv, "latex": board.to_latex}[args.format]())
    for note in board.notes:
        err.write(f"ragmetrics: note: {note}\n")
    _say_results_only(store, datasets or list(store.list_datasets()["id"]), err)
    return 0


def _say_results_only(store: Store, datasets: list[str], err: TextIO) -> None:
    """Per-query results stored without their run (``push --per-query``) have no ranking to test or tag: they are
    on the dashboard's Overview, not here; said, so they are not taken for lost."""
    count = sum(len(store.list_results(dataset)) for dataset in datasets)
    if count:
        err.write(
            f"ragmetrics: note: {count} stored per-query result(s) without their run are not compared here (they "
            "show on the dashboard's Overview; push the run itself to follow it here)\n"
        )


def cmd_meta(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    store = Store(args.store, existing=True)  # a stored run's: none in a store that does not exist
    dataset = resolve_dataset(store, args.dataset, queries=args.queries) if args.dataset else None
    run = stored_run(store, dataset, args.run)
    setting, unsetting = parse_tags(args.set or [], "--set"), [check_key(k) for k in args.unset or []]
    both = sorted(set(setting) & set(unsetting))
    if both:
        raise RagMetricsError(f"--set and --unset both name {', '.join(map(repr, both))}: give one of them")
    changes: dict[str, str | None] = {**setting, **dict.fromkeys(unsetting)}
    tags = store.set_tags(run, changes) if changes else store.tags(run)
    if args.format == "json":
        json.dump({"run_id": run, "tags": tags}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif args.format == "yaml":
        listing = store.list_datasets()
        linked = store.datasets_of_run(run) if dataset is None else [dataset]
        collection = linked[0] if len(linked) == 1 else None  # a run of several datasets: --dataset says which
        row = listing[listing["id"] == collection] if collection else listing.iloc[0:0]
        name = store.list_runs().set_index("id").at[run, "name"]
        out.write(ir_metadata_yaml(
            tags, run_name=str(name), run_id=run,
            dataset=str(row["name"].iloc[0]) if len(row) else None,
            dataset_source=str(row["source"].iloc[0]) or None if len(row) else None,
        ))  # fmt: skip
    else:
        width = max((len(k) for k in tags), default=0)
        out.write("".join(f"{k:<{width}}  {v}\n" for k, v in tags.items()))
    if changes:
        err.write(f"ragmetrics: run {run}: {len(tags)} tag(s)\n")
    return 0


def push_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    add_allow_no_overlap_option(p)
    p.add_argument("--run", action="append", help="a run file; repeatable")
    p.add_argument(
        "--per-query",
        action="append",
        metavar="PARQUET",
        help="per-query values of a run too large to upload (ragmetrics eval --per-query-out): stored without "
        "rankings, so the dashboard shows their means and intervals; repeatable",
    )
    p.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="a tag on every run pushed (repeatable): commit, branch, system, model, chunk_size, top_k, date, note... "
        "The metadata ragmetrics retrieve wrote beside a run (RUN.json) is read too; --meta wins",
    )
    p.add_argument(
        "--dataset-targets",
        metavar="TARGETS",
        help="the targets the dataset declares, which its Overview checks until a view picks others: a profile "
        "(faq, tech, legal, overview) or 'ndcg@10>0.6,recall@5>0.9'; a dataset stored before with targets keeps them",
    )
    p.add_argument(
        "--name",
        help="the dataset's name in the store, as the dashboard shows it (default: its file's name); a dataset "
        "stored before keeps the name it has",
    )
    p.add_argument(
        "--run-name",
        action="append",
        metavar="NAME",
        help="a pushed run's name in the store (one per --run, in their order; default: its file's name), as CI "
        "names the run.trec it writes on every commit; a run stored before keeps the name it has",
    )
    add_store_option(p)
    p.add_argument("--base-url", help="the dashboard's address; default RAGMETRICS_BASE_URL or http://localhost:8501")
    p.set_defaults(handler=cmd_push)


def history_parser(p: argparse.ArgumentParser) -> None:
    add_store_option(p)
    add_stored_dataset_option(p, required=True)
    p.add_argument("--queries", help="the queries file the dataset was pushed with (when --dataset is TREC qrels)")
    p.add_argument("-m", "--metric", default="ndcg@10", action=Once, help="the metric (default ndcg@10)",
                   why="history follows one metric: run it once per metric")  # fmt: skip
    p.add_argument("--by", default="date", help="order the runs by the date tag (default) or another tag's values")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="only runs with this tag (repeatable)")
    p.add_argument("--baseline", help="a run (id or name) every run is also tested against")
    p.add_argument(
        "--gate",
        choices=["step", "baseline"],
        default="step",
        help="what exits 1: the last step a significant drop (default), or, with --baseline, the last run "
        "significantly worse than the baseline (a slow decline no step shows)",
    )
    add_test_options(p)
    for action in p._actions:
        if action.dest == "correction":
            action.default = "none"
            action.help = "correction over the steps (default none: each step is its own question)"
    add_format_option(p, "json", "csv")
    p.set_defaults(handler=cmd_history)


def leaderboard_parser(p: argparse.ArgumentParser) -> None:
    add_store_option(p)
    add_stored_dataset_option(p, required=False, repeat=True)
    p.add_argument("-m", "--metric", default="ndcg@10", action=Once, help="the metric (default ndcg@10)",
                   why="the leaderboard ranks by one metric: run it once per metric")  # fmt: skip
    p.add_argument("--system-tag", default="system", help="the tag naming each run's system (default system)")
    add_test_options(p)
    for action in p._actions:
        if action.dest == "correction":
            action.help = argparse.SUPPRESS  # Holm over every pair of each dataset's systems
    p.add_argument(
        "--format",
        choices=["markdown", "csv", "latex", "json"],
        default="markdown",
        help="markdown (default), csv, latex, json",
    )
    p.set_defaults(handler=cmd_leaderboard)


def meta_parser(p: argparse.ArgumentParser) -> None:
    add_store_option(p)
    p.add_argument("run", help="a stored run: its id, or its name with --dataset")
    add_stored_dataset_option(p, required=False)
    p.add_argument("--queries", help="the queries file the dataset was pushed with (when --dataset is TREC qrels)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="set a tag (repeatable)")
    p.add_argument("--unset", action="append", metavar="KEY", help="remove a tag (repeatable)")
    add_format_option(
        p, "json", "yaml", help_text="table (default), json, or yaml: the run's ir_metadata (PRIMAD) description"
    )
    p.set_defaults(handler=cmd_meta)
