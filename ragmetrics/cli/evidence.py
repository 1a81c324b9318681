"""``ragmetrics evidence``: how much of the gold evidence spans the retrieved chunks hand over; with
``--baseline``, runs over different chunkings compared at document and span level at equal token cost
(:mod:`ragmetrics.analysis.chunkings`).

Its own command rather than more ``eval`` metrics: it reads inputs ``eval`` does not (the gold spans, where chunks
lie in their documents) and is read at chunk level, before chunks are merged into documents
(:mod:`ragmetrics.engine.evidence`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from ragmetrics.analysis.chunkings import (
    DEFAULT_BUDGET,
    DEFAULT_K,
    EVIDENCE_WORDS,
    ChunkingComparison,
    compare_chunkings,
)
from ragmetrics.analysis.compare import bounds_text, intervals_name
from ragmetrics.analysis.stats import family_text
from ragmetrics.analysis.values import per_query_dict
from ragmetrics.analysis.verdicts import VERDICT_TERMS
from ragmetrics.cli.compare import warn_same_as_baseline
from ragmetrics.cli.evaluating import refuse_no_overlap
from ragmetrics.cli.inputs import read_inputs, same_file
from ragmetrics.cli.options import (
    add_allow_no_overlap_option,
    add_data_options,
    add_format_option,
    add_metric_option,
    add_test_options,
    option_value,
    whole_number,
)
from ragmetrics.engine import align
from ragmetrics.engine.alignment import Alignment
from ragmetrics.engine.budgets import shared_tokenizer
from ragmetrics.engine.evidence import (
    EvidenceResult,
    chunk_places,
    counts_tokens,
    evaluate_evidence,
    spans_from_answers,
    with_span_texts,
)
from ragmetrics.engine.metrics import BUDGET_SUFFIX, EVIDENCE_METRICS
from ragmetrics.engine.tokens import TOKENIZER_CHOICES
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io.chunks import attach_source_docs
from ragmetrics.io.spans import check_spans, load_chunk_spans, load_spans

DEFAULT_EVIDENCE = ("evidence_recall@5", "evidence_recall_chars@5", "context_precision@5", "tokens_to_evidence")


def _table(name: str, result: EvidenceResult, per_query: bool, out: TextIO, err: TextIO) -> None:
    """trec_eval's layout, as ``eval`` prints it; a mean no query has a value for is left out and said (JSON: null)."""
    out.write(f"{'runid':<22}\tall\t{name}\n")
    out.write(f"{'num_q':<22}\tall\t{result.queries_with_spans}\n")
    if result.tokenizer:
        out.write(f"{'tokenizer':<22}\tall\t{result.tokenizer}\n")
    if per_query:
        for i, qid in enumerate(result.query_ids.tolist()):
            for metric, values in result.values.items():
                if values[i] == values[i]:  # NaN: the query has no span, or no evidence retrieved
                    out.write(f"{metric:<22}\t{qid}\t{values[i]:.4f}\n")
    for metric, value in result.means.items():
        if value == value:
            out.write(f"{metric:<22}\tall\t{value:.4f}\n")
        else:
            err.write(
                f"ragmetrics: note: run {name!r}: {metric} has no value for any query, so no mean (left out of the "
                "table; null in JSON)"
                + (": no query's evidence is found in the chunks it counts" if metric.startswith("tokens_to") else "")
                + "\n"
            )


def _chunkings_table(found: ChunkingComparison, out: TextIO) -> None:
    """The comparison's rows; beside each corrected p-value the delta's interval adjusted the same way (at the level
    the correction tested it at: :func:`ragmetrics.analysis.compare.adjusted_intervals`), as ``compare`` prints it."""
    name = intervals_name(found.correction, found.alpha)
    width = max(19, len(name) + 1)
    out.write(
        f"{'level':<9}{'metric':<28}{'run':<24}{'n':>5}{'mean':>9}{'delta':>9}  {name:<{width}}{'p (corr.)':>10}  verdict\n"
    )
    for r in found.table.itertuples(index=False):
        shown = r.run != found.baseline and not r.too_few  # a too-few row has no interval (its verdict says why)
        ci = bounds_text(r.ci_low_adjusted, r.ci_high_adjusted) if shown else ""
        p = f"{r.p_value_corrected:.4g}" if r.p_value_corrected == r.p_value_corrected else ""
        said = VERDICT_TERMS[r.verdict]
        out.write(
            f"{r.level:<9}{r.metric:<28}{r.run:<24}{r.n:>5}{r.mean:>9.4f}{r.delta:>+9.4f}  {ci:<{width}}{p:>10}  {said}\n"
        )
    tokens = ", ".join(f"{t.run} {t.mean_tokens:,.0f}" for t in found.tokens.itertuples(index=False))
    out.write(f"tokens in the top {found.k} chunks (mean, {found.tokenizer}): {tokens}\n")
    out.write(
        f"evidence: {EVIDENCE_WORDS[found.evidence]}; p-values {family_text(found.correction, found.family_size)}\n"
    )
    out.write(found.summary + "\n")


def _spans(args: argparse.Namespace, dataset: Dataset) -> pa.Table | None:
    """``--spans``, each checked against the dataset (its queries, its corpus's documents and their lengths); the
    spans' own file given as a run too is refused (its rows would be read as a run retrieving the evidence)."""
    if not args.spans:
        return None
    runs = [args.baseline, *args.run] if getattr(args, "baseline", None) else list(args.run)
    for run in runs:
        if run != "-" and same_file(run, args.spans):
            raise RagMetricsError(
                f"{run} is given as a run and as --spans: a run retrieving the gold evidence scores 1; give the "
                "retriever's run with --run and the spans with --spans"
            )
    spans = load_spans(args.spans)
    check_spans(spans, args.spans, dataset)
    return spans


def _chunk_spans(args: argparse.Namespace, dataset: Dataset, runs: list[Run]) -> dict[str, tuple[pa.Table, str]]:
    """``--chunk-spans`` by run name, each file checked against the corpus's documents and their lengths: one file
    places every run's chunks, or one file per run, in the order the runs were given (the baseline's first)."""
    files = list(args.chunk_spans or [])
    if not files:
        return {}
    if len(files) not in (1, len(runs)):
        order = ": the baseline's, then each --run's" if getattr(args, "baseline", None) else ", in the order of --run"
        raise RagMetricsError(
            f"--chunk-spans is given {len(files)} times for {len(runs)} runs: give it once (one file places every "
            f"run's chunks) or once per run{order}"
        )
    tables = []
    for name in files:
        table = load_chunk_spans(name)
        check_spans(table, name, dataset, key="chunk_id")
        tables.append((table, name))
    return {run.name: tables[0] if len(tables) == 1 else tables[i] for i, run in enumerate(runs)}


def _shared_placements(runs: list[Run], placed: dict[str, tuple[pa.Table, str]]) -> str | None:
    """A warning when one ``--chunk-spans`` file places the chunks of runs that retrieve the same chunk ids: runs of
    different chunkings that name their chunks alike (``doc#3``) need one file each, or every run is scored with
    one chunking's spans."""
    files = {name for _, name in placed.values()}
    if len(runs) < 2 or len(files) != 1:
        return None
    table, name = next(iter(placed.values()))
    ids = set(table.column("chunk_id").to_pylist())
    retrieved = [ids & set(run.table.column("doc_id").to_pylist()) for run in runs]
    shared = set.intersection(*retrieved)
    if not shared:
        return None
    return (
        f"one --chunk-spans file ({name}) places the chunks of every run, and the runs retrieve {len(shared):,} of "
        "the same chunk ids: if they are different chunkings that name their chunks alike (doc#3), each is scored "
        "with that one file's spans; give each run its own (--chunk-spans once per run, the baseline's first)"
    )


def _aligned(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], placed: dict[str, tuple[pa.Table, str]]
) -> list[Alignment]:
    """Each run aligned with the dataset, its chunks mapped to their documents by its ``--chunk-spans`` when nothing
    else maps them (no ``source_doc`` column, ``--chunk-mapping`` or ``--chunk-pattern``), and a chunk without text
    given the text its span places it at (:func:`ragmetrics.engine.evidence.with_span_texts`); a run whose ids do
    not meet the qrels is refused as ``eval`` refuses it."""
    mapped = []
    for run in runs:
        if run.name in placed:
            table, name = placed[run.name]
            documents = {chunk: place[0] for chunk, place in chunk_places(table).items()}
            if "source_doc" not in run.table.column_names:
                run = attach_source_docs(run, mapping=documents, mapping_name=name)
            run = with_span_texts(run, table, dataset)
        mapped.append(run)
    alignments = [align(dataset, run, tokenizer=args.tokenizer) for run in mapped]
    refuse_no_overlap(args, dataset, alignments)
    return alignments


def _notes(alignment: Alignment, notes: list[str]) -> list[str]:
    """The run's coverage notes as ``eval`` words them (a query of the dataset absent from the run, duplicates
    dropped, ...; none on relevance: the evidence metrics read spans), then ``notes``."""
    return alignment.coverage.notes(alignment.conventions.missing, relevance=False) + notes


def _note(alignment: Alignment, notes: list[str], err: TextIO) -> None:
    """:func:`_notes` on one line of stderr."""
    found = _notes(alignment, notes)
    if found:
        err.write(f"ragmetrics: note: run {alignment.name!r}: " + "; ".join(found) + "\n")


def cmd_chunkings(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``evidence --baseline``: the runs (one per chunking) against the baseline at document and span level; ``-k``,
    ``--budget`` and the paired tests' options are None unless given (read only here: :mod:`ragmetrics.cli.rules`),
    their defaults resolved here."""
    dataset, runs = read_inputs(args, [args.baseline, *args.run])
    for path, run in zip(args.run, runs[1:]):  # the same bytes as the baseline's (equal rows may be two chunkings)
        if same_file(path, args.baseline):
            warn_same_as_baseline(run.name, err)
    placed = _chunk_spans(args, dataset, runs)
    shared = _shared_placements(runs, placed)
    if shared:
        err.write(f"ragmetrics: warning: {shared}\n")
    alignments = _aligned(args, dataset, runs, placed)
    found = compare_chunkings(
        dataset,
        alignments,
        baseline=runs[0].name,
        k=DEFAULT_K if args.k is None else args.k,
        budget=DEFAULT_BUDGET if args.budget is None else args.budget,
        spans=_spans(args, dataset),
        chunk_spans={name: table for name, (table, _) in placed.items()} or None,
        test=option_value(args, "test"),
        correction=option_value(args, "correction"),
        alpha=option_value(args, "alpha"),
        seed=option_value(args, "seed"),
        n_resamples=option_value(args, "resamples"),
    )
    if args.format == "json":
        json.dump(found.to_dict(), out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        _chunkings_table(found, out)
    for alignment in alignments:
        _note(alignment, [], err)
    return 0


def cmd_evidence(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.baseline:
        return cmd_chunkings(args, out, err)
    if bool(args.spans) == bool(args.spans_from_answers):
        raise RagMetricsError("give the gold evidence: --spans FILE, or --spans-from-answers (needs --corpus)")
    dataset, runs = read_inputs(args, args.run)
    spans = _spans(args, dataset)
    if spans is None:
        answers = dataset.queries_table.column("expected_answer").to_pylist() if "expected_answer" in (
            dataset.queries_table.column_names) else []  # fmt: skip
        if not any(a is not None and str(a).strip() for a in answers):
            raise RagMetricsError(
                f"--spans-from-answers: dataset {dataset.name!r} has no expected answer (an evaluation set's "
                "expected_answer) to find in its relevant documents; give the evidence as --spans FILE"
            )
        spans = spans_from_answers(dataset)
    if spans.num_rows == 0:
        raise RagMetricsError("no expected answer occurs in a relevant document's text: there is no evidence to find")
    placed = _chunk_spans(args, dataset, runs)
    metrics = args.metric or list(DEFAULT_EVIDENCE)
    counting = [m for m in metrics if counts_tokens([m])]
    textless = [run.name for run in runs if "text" not in run.table.column_names]
    if counting and textless and dataset.documents is None:
        among = "" if args.metric else " (among the default metrics)"
        raise RagMetricsError(
            f"{', '.join(counting)}{among} count the tokens of the retrieved texts, and run {textless[0]!r} has none "
            "and no corpus is given: give --corpus, a run with its chunks' texts, or -m without them (e.g. -m "
            "evidence_recall@5)"
        )
    alignments = _aligned(args, dataset, runs, placed)
    if counts_tokens(metrics):
        alignments = shared_tokenizer(alignments)
    results = {}
    for run, alignment in zip(runs, alignments):
        table = placed[run.name][0] if run.name in placed else None
        results[alignment.name] = evaluate_evidence(alignment, spans, metrics, chunk_spans=table)
    if args.format == "json":
        data = {"runs": {a.name: _json_entry(a, results[a.name], args.per_query) for a in alignments}}
        json.dump(data, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        for name, result in results.items():
            _table(name, result, args.per_query, out, err)
    for alignment in alignments:
        _note(alignment, results[alignment.name].notes, err)
    return 0


def _json_entry(alignment: Alignment, result: EvidenceResult, per_query: bool) -> dict[str, Any]:
    """A run's entry in ``evidence --format json``: the means (null where no query has a value), how many queries
    have a value for each (``tokens_to_evidence`` has one only where the evidence is found), and the notes the
    table writes to stderr."""
    return {
        "mean": {m: (None if v != v else v) for m, v in result.means.items()},
        "tokenizer": result.tokenizer or None,
        "queries_with_spans": result.queries_with_spans,
        "queries_with_a_value": {m: int(np.count_nonzero(~np.isnan(v))) for m, v in result.values.items()},
        "unlocated_chunks": result.unlocated,
        **({"per_query": per_query_dict(result.query_ids, result.values)} if per_query else {}),
        "notes": _notes(alignment, result.notes),
    }


def evidence_parser(p: argparse.ArgumentParser) -> None:
    names = ", ".join(
        f"{m.name}@k, {m.name}@T{BUDGET_SUFFIX}" if m.cut == "required" else m.name for m in EVIDENCE_METRICS.values()
    )
    p.description = f"Evidence metrics: {names}"
    add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeat for several runs")
    gold = p.add_mutually_exclusive_group()
    gold.add_argument("--spans", help="gold evidence spans (qrels with start end columns, JSONL, CSV; docs/formats.md)")
    gold.add_argument(
        "--spans-from-answers",
        action="store_true",
        help="locate each query's expected answer in its relevant documents' corpus text instead",
    )
    p.add_argument(
        "--chunk-spans",
        action="append",
        help="where each chunk lies in its document: chunk_id, doc_id, start, end (synth's chunks.jsonl holds them); "
        "once for every run, or once per run in the order of the runs (with --baseline, the baseline's first)",
    )
    add_metric_option(p, "evidence metric; default: " + " ".join(DEFAULT_EVIDENCE))
    p.add_argument("--tokenizer", choices=TOKENIZER_CHOICES, default="auto", help="what tokens are counted with")
    p.add_argument(
        "--per-query",
        action="store_true",
        help="also print per-query values (JSON: each run's per_query); not with --baseline",
    )
    p.add_argument(
        "--baseline",
        help="compare chunkings: this run and each --run (one per chunking of the corpus) at document and span level, "
        "at -k chunks and at --budget tokens, with paired tests (gold evidence: --spans, else the expected answers "
        "located, else the relevant documents whole)",
    )
    p.add_argument(
        "-k", "--k", type=whole_number(1), help=f"with --baseline: the cut-off in chunks (default {DEFAULT_K})"
    )
    p.add_argument(
        "--budget", type=whole_number(1), help=f"with --baseline: the token budget (default {DEFAULT_BUDGET})"
    )
    add_test_options(p, defaults=False)
    add_allow_no_overlap_option(p)
    add_format_option(p, "json", help_text="table (trec_eval's layout, default) or json")
    p.set_defaults(handler=cmd_evidence)
