"""``ragmetrics retrieve``: the options and the work behind the command (``ragmetrics.cli`` registers it).

It prints a summary (queries, latency p50/p95/max, errors, empties, retries, answers from the cache) and
writes the run as TREC and its metadata as JSON beside it (``RUN.json``, or ``--meta-out``). Exit 0, or 1
when some queries still failed (the run is written without them; running again calls only those).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from ragmetrics.engine.aligning import align
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.io import name_of_file, write_trec_run
from ragmetrics.io.trec import tag_words
from ragmetrics.retrieve.runner import retrieve


def add_options(p: argparse.ArgumentParser) -> None:
    """The command's own options (after the shared data options, whose help is adjusted here)."""
    for action in p._actions:
        if action.dest == "corpus":
            action.help = "a corpus (a JSONL of documents or a folder of .md/.txt files): what the built-in bm25 indexes (title + text)"
        elif action.dest in ("chunk_mapping", "chunk_pattern"):
            action.help = argparse.SUPPRESS  # a TREC run has no source_doc column: give them to eval instead
    p.add_argument(
        "--retriever",
        required=True,
        help="bm25 (over --corpus), an http:// or https:// URL, or module:attr (a callable fn(query, k), a "
        "LlamaIndex or LangChain retriever, or a zero-argument factory returning one; the current directory is "
        "importable)",
    )
    p.add_argument("--k", type=int, default=100, help="documents asked for per query (default 100)")
    p.add_argument(
        "-o", "--output", required=True, help="the TREC run to write (.gz to compress; - for standard output)"
    )
    p.add_argument(
        "--meta-out",
        help="the metadata JSON to write (default: the run's path + .json; with -o -, none unless given)",
    )
    p.add_argument("--concurrency", type=int, default=4, help="calls at once (default 4)")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="ask every query N times and report the noise: per query the Jaccard overlap of the top k and each "
        "metric's standard deviation, per mean the min-max of the repeats' means (the run written is the first)",
    )
    p.add_argument("--name", help="run name (the TREC tag; default: the output file's name, as eval reads it back)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per call (default 30)")
    p.add_argument(
        "--retries", type=int, default=3, help="tries again after an error, a timeout, a 429 or a 5xx (default 3)"
    )
    p.add_argument("--no-cache", action="store_true", help="call every query again (the new answers are stored)")
    p.add_argument("--cache-dir", help="the cache folder (default RAGMETRICS_CACHE_DIR or ~/.cache/ragmetrics)")
    p.add_argument(
        "--request",
        help='HTTP request template: [METHOD ]JSON with {query} and {k}, default POST {"query": "{query}", "k": "{k}"}',
    )
    p.add_argument(
        "--response",
        help="HTTP response: the dotted path to the result list and field=path mappings, "
        "e.g. hits.hits,doc_id=_id,score=_score (default: a list, or an object's 'results')",
    )
    p.add_argument(
        "--doc-id-field",
        help="the doc id: a (dotted) field of each HTTP result, a LlamaIndex node's metadata field (or ref_doc_id), "
        "a LangChain document's metadata field (or id)",
    )
    p.add_argument("--header", action="append", help="an HTTP header 'Name: value' (repeatable; not cached)")


def _headers(values: list[str] | None) -> dict[str, str]:

    out = {}
    for value in values or []:
        key, sep, rest = value.partition(":")
        if not sep or not key.strip():
            raise RagMetricsError(f"--header {value!r}: expected 'Name: value'")
        out[key.strip()] = rest.strip()
    return out


def _progress(err: TextIO) -> tuple[Any, Any]:
    """A tqdm bar on ``err`` (shown when it is a terminal) and its closer."""
    from tqdm import tqdm  # noqa: PLC0415 (the retrieve extra, loaded on use)

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, file=err, unit="query", desc="retrieve", disable=None, leave=False)
        bar.update(done - bar.n)

    def close() -> None:
        if bar is not None:
            bar.close()

    return update, close


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def summary(metadata: dict[str, Any]) -> str:
    """The one-paragraph report of a retrieval."""
    counts, latency, retriever = metadata["counts"], metadata["latency"], metadata["retriever"]
    named = retriever.get("name", metadata["run"])
    run = "" if named == metadata["run"] else f" as run {metadata['run']!r}"
    lines = [
        f"retrieved {metadata['queries']} queries x {metadata['repeat']} with {retriever['kind']} {named!r}{run} "
        f"(k={metadata['k']}) in {metadata['seconds']:.1f} s: "
        f"{counts['called']} called, {counts['cached']} from cache",
        f"latency p50 {_ms(latency['p50_ms'])}, p95 {_ms(latency['p95_ms'])}, max {_ms(latency['max_ms'])}; "
        f"errors {counts['failed']}, empty {counts['empty']}, retries {counts['retries']}",
    ]
    if counts.get("repeated_hits"):
        lines.append(
            f"{counts['repeated_hits']} hit(s) named a document the answer had named before: the first kept (a run "
            "names a document once per query)"
        )
    noise = metadata.get("noise")
    if noise:
        overlap = noise["jaccard_at_k"]["mean"]
        parts = [f"repeat noise: {noise['queries_changed']} of {noise['queries']} queries changed"]
        if overlap is not None:
            parts.append(f"mean Jaccard@{noise['k']} {overlap:.4f}")
        for metric, m in noise.get("metrics", {}).items():
            parts.append(f"{metric} {m['mean']:.4f} [{m['low']:.4f}, {m['high']:.4f}]")
        lines.append("; ".join(parts))
    return "\n".join(lines) + "\n"


STDOUT = "-"
"""``-o -``: the run is written to standard output (piped into ``eval --run -``), the report to standard error."""


def meta_path(args: argparse.Namespace) -> str | None:
    """Where the metadata JSON goes: ``--meta-out``, else beside the run (``RUN.json``); with ``-o -`` only where
    ``--meta-out`` says (None: not written)."""
    if args.meta_out or args.output != STDOUT:
        return args.meta_out or f"{args.output}.json"
    return None


def run(args: argparse.Namespace, dataset: Dataset, out: TextIO, err: TextIO) -> int:

    update, close = _progress(err)
    try:
        result = retrieve(
            dataset,
            args.retriever,
            k=args.k,
            concurrency=args.concurrency,
            repeat=args.repeat,
            timeout=args.timeout,
            retries=args.retries,
            cache="refresh" if args.no_cache else True,
            cache_dir=args.cache_dir,
            name=args.name or (None if args.output == STDOUT else name_of_file(args.output)),  # as eval will name it
            progress=update,
            doc_id_field=args.doc_id_field,
            request=args.request,
            response=args.response,
            headers=_headers(args.header),
        )
    finally:
        close()
    run = result.run
    to_stdout = args.output == STDOUT
    meta_out = meta_path(args)
    if meta_out is not None:
        result.write_metadata(meta_out)
    listed = f"listed in {meta_out}" if meta_out else "not written (give --meta-out)"
    if len(run) == 0:  # every call failed or came back empty: a run file of no line would replace a real one
        first = next((f"{c.query_id}: {c.error}" for c in result.failed), "every answer was empty")
        err.write(
            f"ragmetrics: error: no query was answered with a document ({first}); "
            f"{'no run was written' if to_stdout else f'{args.output} was not written'}, the calls {listed}\n"
        )
        return 1
    write_trec_run(run, out if to_stdout else args.output)
    (err if to_stdout else out).write(summary(result.metadata))
    if dataset.qrels_table.num_rows and (alignment := align(dataset, run)).health.no_overlap:
        err.write(f"ragmetrics: warning: eval will refuse this run as written: {alignment.explain_no_overlap()}\n")
    failed = result.failed
    if failed:
        shown = "; ".join(f"{c.query_id}: {c.error}" for c in failed[:5])
        more = f" (and {len(failed) - 5} more, {listed})" if len(failed) > 5 else ""
        err.write(f"ragmetrics: warning: {len(failed)} call(s) failed and are not in the run: {shown}{more}\n")
    queries = len({c.query_id for c in result.calls if c.repeat == 0 and not c.failed})
    where = "standard output" if to_stdout else args.output
    metadata = f" and {meta_out}" if meta_out else " (the metadata not written: give --meta-out)"
    err.write(f"ragmetrics: wrote {where} ({queries} queries, {tag_words(run.name)}){metadata}\n")
    return 1 if failed else 0
