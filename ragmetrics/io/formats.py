"""The format table: THE one place where an input format is added.

Each row names a format, the kind of object it gives (``run`` or
``dataset``), the file extensions it claims, a sniffer (looks at the content,
cheap) and its reader ``reader(source, *, name) -> Run | Dataset``.

Detection (``detect``): ``format=`` when given (name or alias); else the
formats of that kind claiming the file's extension (``.gz`` ignored) - one is
taken as is, several are told apart by sniffing, in table order; else every
format of that kind is sniffed, in table order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import ParseError
from ragmetrics.io import beir, dictjson, evalset, jsonruns, tables, trec
from ragmetrics.io._source import Source


@dataclass(frozen=True)
class Format:
    name: str
    kind: str  # "run" or "dataset"
    extensions: tuple[str, ...]
    sniff: Callable[[Source], bool]
    reader: Callable[..., Any]
    description: str
    aliases: tuple[str, ...] = ()

    def label(self) -> str:
        exts = " ".join(self.extensions) if self.extensions else "a folder or .zip"
        return f"{self.name} ({exts}): {self.description}"


# Order matters for sniffing: the most specific signatures first.
FORMATS: tuple[Format, ...] = (
    # ---- runs ---------------------------------------------------------------
    Format(
        "parquet",
        "run",
        (".parquet", ".pq"),
        tables.sniff_parquet,
        tables.read_parquet_run,
        "Parquet table with query_id, doc_id, score columns (aliases allowed)",
    ),
    Format(
        "jsonl",
        "run",
        (".jsonl", ".ndjson", ".json"),
        jsonruns.sniff_jsonl_run,
        jsonruns.read_jsonl_run,
        'JSONL {"query_id" or "query", "retrieved": [...]} or flat {"query_id", "doc_id", "score"} rows',
        aliases=("jsonl-run",),
    ),
    Format(
        "dict-json",
        "run",
        (".json",),
        dictjson.sniff_dict_json,
        dictjson.read_dict_run,
        "ranx / pytrec_eval JSON {qid: {docid: score}}",
        aliases=("ranx", "pytrec_eval", "pytrec-eval", "dict"),
    ),
    Format(
        "trec",
        "run",
        (".trec", ".run", ".res", ".txt", ".tsv"),
        trec.sniff_run,
        trec.read_run,
        "TREC run lines 'qid Q0 docid rank score tag'",
        aliases=("trec-run", "trec_run"),
    ),
    Format(
        "csv",
        "run",
        (".csv",),
        tables.sniff_csv_run,
        tables.read_csv_run,
        "CSV with a header: query_id, doc_id, score (aliases allowed)",
    ),
    Format(
        "tsv",
        "run",
        (".tsv", ".tab", ".txt"),
        tables.sniff_tsv_run,
        tables.read_tsv_run,
        "TSV with a header: query_id, doc_id, score (aliases allowed)",
    ),
    # ---- datasets -----------------------------------------------------------
    Format(
        "beir",
        "dataset",
        (".zip",),
        beir.sniff_beir,
        beir.read_beir,
        "BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv (or qrels.tsv)",
    ),
    Format(
        "parquet",
        "dataset",
        (".parquet", ".pq"),
        tables.sniff_parquet,
        tables.read_parquet_dataset,
        "Parquet qrels table with query_id, doc_id, relevance columns (aliases allowed)",
    ),
    Format(
        "evalset",
        "dataset",
        (".json", ".jsonl", ".ndjson"),
        evalset.sniff_evalset,
        evalset.read_evalset,
        'evaluation set: JSON list or JSONL of {"query", "relevant_docs", "expected_answer", ...}',
        aliases=("json", "jsonl", "eval-set", "eval_set"),
    ),
    Format(
        "dict-json",
        "dataset",
        (".json",),
        dictjson.sniff_dict_json,
        dictjson.read_dict_dataset,
        "ranx / pytrec_eval JSON {qid: {docid: label}}",
        aliases=("ranx", "pytrec_eval", "pytrec-eval", "dict"),
    ),
    Format(
        "trec",
        "dataset",
        (".qrels", ".qrel", ".txt", ".tsv", ".trec"),
        trec.sniff_qrels,
        trec.read_qrels,
        "TREC qrels lines 'qid iter docid rel'",
        aliases=("trec-qrels", "trec_qrels", "qrels"),
    ),
    Format(
        "csv",
        "dataset",
        (".csv",),
        tables.sniff_csv_dataset,
        tables.read_csv_dataset,
        "CSV qrels with a header: query_id, doc_id, relevance (aliases allowed)",
    ),
    Format(
        "tsv",
        "dataset",
        (".tsv", ".tab", ".txt"),
        tables.sniff_tsv_dataset,
        tables.read_tsv_dataset,
        "TSV qrels with a header: query_id, doc_id, relevance (aliases allowed)",
    ),
)

KINDS = ("run", "dataset")
KNOWN_EXTENSIONS = frozenset(ext for f in FORMATS for ext in f.extensions)


def formats_of(kind: str) -> list[Format]:
    return [f for f in FORMATS if f.kind == kind]


def supported(kind: str) -> str:
    return "; ".join(f.label() for f in formats_of(kind))


def by_name(name: str, kind: str, source_name: str) -> Format:
    wanted = name.strip().lower().lstrip(".")
    for fmt in formats_of(kind):
        if wanted == fmt.name or wanted in fmt.aliases:
            return fmt
    raise ParseError(source_name, None, f"a {kind} format among {[f.name for f in formats_of(kind)]}", repr(name))


def detect(source: Source, kind: str, format: str | None = None) -> Format:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    if format is not None:
        return by_name(format, kind, source.name)
    candidates = formats_of(kind)
    if source.is_dir:
        folder_formats = [f for f in candidates if f.name == "beir"]
        if folder_formats:
            return folder_formats[0]
        raise ParseError(source.name, None, f"a {kind} file (supported: {supported(kind)})", "a folder")
    by_extension = [f for f in candidates if source.extension and source.extension in f.extensions]
    if len(by_extension) == 1:
        return by_extension[0]
    for fmt in by_extension or candidates:
        if fmt.sniff(source):
            return fmt
    if by_extension:
        return by_extension[0]  # its reader says what is wrong, with a line number
    found = f"extension {source.extension!r}" if source.extension else "content that matches none of them"
    raise ParseError(source.name, None, f"a supported {kind} format: {supported(kind)}", found)
