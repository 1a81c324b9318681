"""``ragmetrics evidence``: how much of the gold evidence spans the retrieved chunks hand over.

Its own command rather than more ``eval`` metrics: it reads inputs ``eval`` does not (the gold spans, where chunks
lie in their documents) and is read at chunk level, before chunks are merged into documents
(:mod:`ragmetrics.engine.evidence`).
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from ragmetrics.cli.inputs import read_inputs
from ragmetrics.cli.options import add_data_options
from ragmetrics.engine import align
from ragmetrics.engine.evidence import EVIDENCE_METRICS, EvidenceResult, evaluate_evidence, spans_from_answers
from ragmetrics.engine.metrics import BUDGET_SUFFIX
from ragmetrics.engine.tokens import TOKENIZER_CHOICES
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io.spans import load_chunk_spans, load_spans

DEFAULT_EVIDENCE = ("evidence_recall@5", "evidence_recall_chars@5", "context_precision@5", "tokens_to_evidence")


def _table(name: str, result: EvidenceResult, per_query: bool, out: TextIO) -> None:
    """trec_eval's layout, as ``eval`` prints it."""
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
        out.write(f"{metric:<22}\tall\t{value:.4f}\n")


def cmd_evidence(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if bool(args.spans) == bool(args.spans_from_answers):
        raise RagMetricsError("give the gold evidence: --spans FILE, or --spans-from-answers (needs --corpus)")
    dataset, runs = read_inputs(args, args.run)
    spans = load_spans(args.spans) if args.spans else spans_from_answers(dataset)
    if spans.num_rows == 0:
        raise RagMetricsError("no expected answer occurs in a relevant document's text: there is no evidence to find")
    chunk_spans = load_chunk_spans(args.chunk_spans) if args.chunk_spans else None
    metrics = args.metric or list(DEFAULT_EVIDENCE)
    results = {}
    for run in runs:
        alignment = align(dataset, run, tokenizer=args.tokenizer)
        results[run.name] = evaluate_evidence(alignment, spans, metrics, chunk_spans=chunk_spans)
    if args.format == "json":
        data = {
            "runs": {
                name: {
                    "mean": {m: (None if v != v else v) for m, v in r.means.items()},
                    "tokenizer": r.tokenizer or None,
                    "queries_with_spans": r.queries_with_spans,
                    "unlocated_chunks": r.unlocated,
                }
                for name, r in results.items()
            }
        }
        json.dump(data, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        for name, result in results.items():
            _table(name, result, args.per_query, out)
    for name, result in results.items():
        if result.notes:
            err.write(f"ragmetrics: note: run {name!r}: " + "; ".join(result.notes) + "\n")
    return 0


def evidence_parser(p: argparse.ArgumentParser) -> None:
    names = ", ".join(
        f"{m.name}@k, {m.name}@T{BUDGET_SUFFIX}" if m.cut == "required" else m.name for m in EVIDENCE_METRICS.values()
    )
    p.description = f"Evidence metrics: {names}"
    add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeat for several runs")
    p.add_argument("--spans", help="gold evidence spans (qrels with start end columns, JSONL, CSV; docs/formats.md)")
    p.add_argument(
        "--spans-from-answers",
        action="store_true",
        help="locate each query's expected answer in its relevant documents' corpus text instead",
    )
    p.add_argument("--chunk-spans", help="where each chunk lies in its document: chunk_id, doc_id, start, end")
    p.add_argument(
        "-m", "--metric", action="append", help="evidence metric (repeatable); default: " + " ".join(DEFAULT_EVIDENCE)
    )
    p.add_argument("--tokenizer", choices=TOKENIZER_CHOICES, default="auto", help="what tokens are counted with")
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--format", choices=["table", "json"], default="table", help="table (trec_eval's layout) or json")
    p.set_defaults(handler=cmd_evidence)
