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

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io.source import Source, decode, shorten


def _lazy(path: str) -> Callable[..., Any]:
    """``module:function`` of ``ragmetrics.io``, imported on first call (a TREC read never imports the JSON,
    CSV and Parquet readers, nor pandas through them)."""
    module, name = path.split(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(f"ragmetrics.io.{module}"), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = path
    return call


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
        _lazy("tables:sniff_parquet"),
        _lazy("tables:read_parquet_run"),
        "Parquet table with query_id, doc_id, score columns (aliases allowed)",
    ),
    Format(
        "jsonl",
        "run",
        (".jsonl", ".ndjson", ".json"),
        _lazy("jsonruns:sniff_jsonl_run"),
        _lazy("jsonruns:read_jsonl_run"),
        'JSONL {"query_id" or "query", "retrieved": [...]} or flat {"query_id", "doc_id", "score"} rows',
        aliases=("jsonl-run",),
    ),
    Format(
        "dict-json",
        "run",
        (".json",),
        _lazy("dictjson:sniff_dict_json"),
        _lazy("dictjson:read_dict_run"),
        "ranx / pytrec_eval JSON {qid: {docid: score}}",
        aliases=("ranx", "pytrec_eval", "pytrec-eval", "dict"),
    ),
    Format(
        "trec",
        "run",
        (".trec", ".run", ".res", ".txt", ".tsv"),
        _lazy("trec:sniff_run"),
        _lazy("trec:read_run"),
        "TREC run lines 'qid Q0 docid rank score tag'",
        aliases=("trec-run", "trec_run"),
    ),
    Format(
        "csv",
        "run",
        (".csv",),
        _lazy("tables:sniff_csv_run"),
        _lazy("tables:read_csv_run"),
        "CSV with a header: query_id, doc_id, score (aliases allowed)",
    ),
    Format(
        "tsv",
        "run",
        (".tsv", ".tab", ".txt"),
        _lazy("tables:sniff_tsv_run"),
        _lazy("tables:read_tsv_run"),
        "TSV with a header: query_id, doc_id, score (aliases allowed)",
    ),
    # ---- datasets -----------------------------------------------------------
    Format(
        "beir",
        "dataset",
        (".zip",),
        _lazy("beir:sniff_beir"),
        _lazy("beir:read_beir"),
        "BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv (or qrels.tsv)",
    ),
    Format(
        "parquet",
        "dataset",
        (".parquet", ".pq"),
        _lazy("tables:sniff_parquet"),
        _lazy("tables:read_parquet_dataset"),
        "Parquet qrels table with query_id, doc_id, relevance columns (aliases allowed)",
    ),
    Format(
        "evalset",
        "dataset",
        (".json", ".jsonl", ".ndjson"),
        _lazy("evalset:sniff_evalset"),
        _lazy("evalset:read_evalset"),
        'evaluation set: JSON list or JSONL of {"query", "relevant_docs", "expected_answer", ...}',
        aliases=("json", "jsonl", "eval-set", "eval_set"),
    ),
    Format(
        "dict-json",
        "dataset",
        (".json",),
        _lazy("dictjson:sniff_dict_json"),
        _lazy("dictjson:read_dict_dataset"),
        "ranx / pytrec_eval JSON {qid: {docid: label}}",
        aliases=("ranx", "pytrec_eval", "pytrec-eval", "dict"),
    ),
    Format(
        "trec",
        "dataset",
        (".qrels", ".qrel", ".txt", ".tsv", ".trec"),
        _lazy("trec:sniff_qrels"),
        _lazy("trec:read_qrels"),
        "TREC qrels lines 'qid iter docid rel'",
        aliases=("trec-qrels", "trec_qrels", "qrels"),
    ),
    Format(
        "csv",
        "dataset",
        (".csv",),
        _lazy("tables:sniff_csv_dataset"),
        _lazy("tables:read_csv_dataset"),
        "CSV qrels with a header: query_id, doc_id, relevance (aliases allowed)",
    ),
    Format(
        "tsv",
        "dataset",
        (".tsv", ".tab", ".txt"),
        _lazy("tables:sniff_tsv_dataset"),
        _lazy("tables:read_tsv_dataset"),
        "TSV qrels with a header: query_id, doc_id, relevance (aliases allowed)",
    ),
)

KINDS = ("run", "dataset")
KNOWN_EXTENSIONS = frozenset(ext for f in FORMATS for ext in f.extensions)


def _telling_all(fmt: Format, candidates: list[Format], source: Source) -> Format:
    """``fmt`` whose reader, when it refuses ``source``'s first line, names every candidate's layout (a ``.tsv`` of
    people's labels with an unknown header is told both TREC's and the TSV table's); any other error as it is."""
    first = _first_line(source)
    if first is None:
        return fmt

    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            return fmt.reader(*args, **kwargs)
        except ParseError as error:
            if error.line != first[0]:
                raise
            decode(first[2], source.name, first_line=first[0])  # bytes that are not text: said as such, not shown
            expected = " or ".join(f.description for f in candidates)
            fields = first[1].split("\t") if "\t" in first[1] else first[1].split()
            if fmt.kind == "dataset" and len(fields) == 3 and fields[2].strip().lstrip("-").isdigit():
                expected += (
                    " (a line of 3 fields, query, document and label, is read under a header line: "
                    "query_id, doc_id, relevance)"
                )
            raise ParseError(source.name, first[0], expected, shorten(first[1], 120)) from None

    return replace(fmt, reader=read)


def _first_line(source: Source) -> tuple[int, str, bytes] | None:
    """The first line of ``source`` that holds something but a comment: its 1-based number, its text (bytes that are
    not UTF-8 replaced) and its bytes; None when none does (an empty file: its reader says so)."""
    for number, raw in enumerate(source.head.split(b"\n")[:100], 1):
        text = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        if text.strip() and not text.lstrip().startswith("#"):
            return number, text, raw
    return None


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
    if len(by_extension) > 1:  # the first reads it; if it refuses the first line, every candidate's layout is told
        return _telling_all(by_extension[0], by_extension, source)
    if by_extension:
        return by_extension[0]  # its reader says what is wrong, with a line number
    found = f"extension {source.extension!r}" if source.extension else "content that matches none of them"
    raise ParseError(source.name, None, f"a supported {kind} format: {supported(kind)}", found)
