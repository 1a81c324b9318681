"""Loaders and writers for runs and evaluation datasets.

``source`` is a path (``str`` / ``Path``), raw ``bytes`` or a binary
file-like; ``filename`` names it in error messages and for format detection
(the dashboard passes uploaded bytes plus the upload's name). Gzip is detected
by its magic bytes; UTF-8 with or without BOM; CRLF accepted. Every input
problem raises :class:`ragmetrics.errors.ParseError` (a ``ValueError``) whose
message reads ``file:line: expected ..., found ...``.

Formats and how they are detected: see :mod:`ragmetrics.io.formats`.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ragmetrics.io._source import open_source
from ragmetrics.io.beir import merge_queries, read_corpus, read_queries
from ragmetrics.io.chunks import attach_source_docs
from ragmetrics.io.formats import FORMATS, KNOWN_EXTENSIONS, Format, detect
from ragmetrics.io.trec import write_trec_qrels, write_trec_run
from ragmetrics.model import Dataset, Run

__all__ = [
    "FORMATS",
    "Format",
    "attach_source_docs",
    "load_dataset",
    "load_qrels",
    "load_run",
    "write_trec_qrels",
    "write_trec_run",
]


def load_run(
    source: Any,
    *,
    name: str | None = None,
    format: str | None = None,
    filename: str | None = None,
    chunk_mapping: Any = None,
    chunk_pattern: str | re.Pattern[str] | None = None,
) -> Run:
    """Read a run (TREC, JSONL, CSV/TSV, Parquet or ranx dict JSON).

    ``name`` defaults to the file name without its extensions
    (``bm25-stem.trec.gz`` -> ``bm25-stem``). ``chunk_mapping`` /
    ``chunk_pattern`` fill ``source_doc`` (see :func:`attach_source_docs`).
    """
    src = open_source(source, filename)
    fmt = detect(src, "run", format)
    run = fmt.reader(src, name=name or src.default_name(KNOWN_EXTENSIONS))
    if chunk_mapping is not None or chunk_pattern is not None:
        run = attach_source_docs(run, mapping=chunk_mapping, pattern=chunk_pattern)
    return run


def load_dataset(
    source: Any,
    *,
    format: str | None = None,
    filename: str | None = None,
    name: str | None = None,
    queries: Any = None,
    corpus: Any = None,
    corpus_size: int | None = None,
) -> Dataset:
    """Read an evaluation dataset: TREC qrels, an evaluation-set JSON/JSONL,
    a qrels table (CSV/TSV/Parquet), a ranx dict JSON, or a BEIR folder (or zip).

    ``queries``: a queries file (JSONL ``{"id"/"_id"/"query_id", "text"/"query"}``
    or TSV ``id<TAB>text``) whose text is attached to the dataset's queries
    (queries without judgments are not added). ``corpus``: a corpus.jsonl
    giving ``documents`` and ``corpus_size`` (the number of documents).
    An explicit ``corpus_size`` wins over both.
    """
    src = open_source(source, filename)
    fmt = detect(src, "dataset", format)
    dataset = fmt.reader(src, name=name or src.default_name(KNOWN_EXTENSIONS))
    if queries is not None:
        dataset = merge_queries(dataset, read_queries(open_source(queries)))
    documents, size = dataset.documents, dataset.corpus_size
    if corpus is not None:
        documents = read_corpus(open_source(corpus))
        size = len(documents) or None
    if corpus_size is not None:
        size = corpus_size
    if documents is not dataset.documents or size != dataset.corpus_size:
        dataset = Dataset.from_frames(
            dataset.qrels, dataset.queries, name=dataset.name, corpus_size=size, documents=documents
        )
    return dataset


def load_qrels(source: Any, *, format: str | None = None, filename: str | None = None) -> pd.DataFrame:
    """The judgments (``query_id``, ``doc_id``, ``relevance``) of any dataset input."""
    return load_dataset(source, format=format, filename=filename).qrels
