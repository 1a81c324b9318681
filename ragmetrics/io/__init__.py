"""Loaders and writers for runs and evaluation datasets.

``source`` is a path (``str`` / ``Path``), raw ``bytes`` or a binary
file-like; ``filename`` names it in error messages and for format detection
(the dashboard passes uploaded bytes plus the upload's name). Gzip is detected
by its magic bytes; UTF-8 with or without BOM; CRLF accepted. Every input
problem raises :class:`ragmetrics.foundation.errors.ParseError` (a ``ValueError``) whose
message reads ``file:line: expected ..., found ...``.

``limits`` (a :class:`ragmetrics.io.limits.Limits`; default ``Limits.from_env()``)
caps an input's size (stored and decompressed), rows and queries; exceeding
one raises :class:`ragmetrics.io.limits.LimitError`, a ParseError.

Formats and how they are detected: see :mod:`ragmetrics.io.formats`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.foundation.kernels import aggregate, elementwise, unique
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import trec
from ragmetrics.io.formats import FORMATS, KNOWN_EXTENSIONS, Format, detect
from ragmetrics.io.limits import LimitError, Limits, resolve
from ragmetrics.io.source import Source, open_source

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FORMATS",
    "Format",
    "LimitError",
    "Limits",
    "attach_source_docs",
    "load_dataset",
    "load_qrels",
    "load_run",
    "name_of_file",
    "refuse_output_over_input",
    "unique_names",
    "write_trec_qrels",
    "write_trec_run",
]


def name_of_file(path: str) -> str:
    """The name :func:`load_run` and :func:`load_dataset` give what they read from ``path`` when given none: the
    file name without its known extensions (``runs/bm25-stem.trec.gz`` -> ``bm25-stem``); the file need not exist."""
    return open_source(b"", filename=path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]).default_name(
        KNOWN_EXTENSIONS
    )


def unique_names(names: list[str]) -> list[str]:
    """Run names made unique as a command names its runs: a name seen before gets ``-2``, ``-3``, ... (two
    ``runs/*/run.trec``: ``run`` and ``run-2``)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        out.append(f"{name}-{count + 1}" if count else name)
    return out


def refuse_output_over_input(path: str, option: str, inputs: Mapping[str, Sequence[str | None]]) -> None:
    """Refuse ``path``, a file about to be written for ``option`` (as a user named it: ``--per-query-out``,
    ``per_query_out``), when its folder does not exist or when it is a file of ``inputs`` (how a user named each
    input -> its paths), which writing it would destroy."""
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise RagMetricsError(f"{option} {path}: the folder {folder} does not exist")
    if not os.path.exists(path):
        return
    for name, paths in inputs.items():
        for given in paths:
            if isinstance(given, str) and given and os.path.exists(given) and os.path.samefile(given, path):
                raise RagMetricsError(
                    f"{option} {path}: is also read as {name}; writing it would destroy that input: give another path"
                )


def load_run(
    source: Any,
    *,
    name: str | None = None,
    format: str | None = None,
    filename: str | None = None,
    chunk_mapping: Any = None,
    chunk_pattern: str | re.Pattern[str] | None = None,
    limits: Limits | None = None,
) -> Run:
    """Read a run (TREC, JSONL, CSV/TSV, Parquet or ranx dict JSON).

    ``name`` defaults to the file name without its extensions
    (``bm25-stem.trec.gz`` -> ``bm25-stem``). ``chunk_mapping`` /
    ``chunk_pattern`` fill ``source_doc`` (see :func:`attach_source_docs`).
    ``chunk_mapping`` may be ``(bytes, filename)``; bytes alone are called
    ``<chunk mapping>`` in messages. ``limits``: see the module documentation.
    """
    limits = resolve(limits)
    src = open_source(source, filename, limits)
    fmt = detect(src, "run", format)
    run = fmt.reader(src, name=name or src.default_name(KNOWN_EXTENSIONS))
    limits.check_rows(src.name, len(run))
    if len(run) == 0:  # every query's list empty, or a table without rows: nothing a metric could score
        raise ParseError(src.name, None, "at least one retrieved document (a query id with a document id)", "none")
    _check_run_queries(src, run.column("query_id"))
    if chunk_mapping is not None or chunk_pattern is not None:
        if chunk_mapping is not None and not isinstance(chunk_mapping, dict) and not hasattr(chunk_mapping, "columns"):
            chunk_mapping = _open_extra(chunk_mapping, "chunk mapping", limits)
        from ragmetrics.io.chunks import attach_source_docs  # noqa: PLC0415 (imports pandas: loaded when such a file is read)

        run = attach_source_docs(run, mapping=chunk_mapping, pattern=chunk_pattern)
    return run


def _check_run_queries(src: Source, query_ids: pa.ChunkedArray) -> None:
    """``max_queries`` for a run without hashing every row when it cannot matter:
    rows, then the number of changes of query id, bound the number of queries."""
    limit = src.limits.max_queries
    if len(query_ids) <= limit:
        return
    changes = int(aggregate("sum", elementwise("not_equal", query_ids[1:], query_ids[:-1])) or 0) + 1
    if changes <= limit:
        return
    src.limits.check_queries(src.name, len(unique(query_ids)))


def load_dataset(
    source: Any,
    *,
    format: str | None = None,
    filename: str | None = None,
    name: str | None = None,
    queries: Any = None,
    corpus: Any = None,
    corpus_size: int | None = None,
    limits: Limits | None = None,
) -> Dataset:
    """Read an evaluation dataset: TREC qrels, an evaluation-set JSON/JSONL,
    a qrels table (CSV/TSV/Parquet), a ranx dict JSON, or a BEIR folder (or zip).

    ``queries``: a queries file (JSONL ``{"id"/"_id"/"query_id", "text"/"query"}``
    or TSV ``id<TAB>text``) whose text is attached to the dataset's queries
    (queries without judgments are not added). ``corpus``: a corpus.jsonl
    giving ``documents`` and ``corpus_size`` (the number of documents).
    Either may be a path, bytes, a stream or a ``(bytes, filename)`` pair; the
    filename names it in messages (bytes alone are called ``<queries>`` /
    ``<corpus>``).
    An explicit ``corpus_size`` wins over both. ``limits``: see the module
    documentation (each file is checked on its own).
    """
    limits = resolve(limits)
    src = open_source(source, filename, limits)
    fmt = detect(src, "dataset", format)
    dataset = fmt.reader(src, name=name or src.default_name(KNOWN_EXTENSIONS))
    limits.check_rows(src.name, dataset.qrels_table.num_rows)
    limits.check_queries(src.name, len(dataset))
    if queries is not None:
        from ragmetrics.io.beir import merge_queries, read_queries  # noqa: PLC0415 (imports pandas: loaded when such a file is read)

        dataset = merge_queries(dataset, read_queries(_open_extra(queries, "queries", limits)))
    documents, size = dataset.documents, dataset.corpus_size
    if corpus is not None:
        from ragmetrics.io.beir import warn_if_corpus_of_another_dataset  # noqa: PLC0415 (imports pandas: loaded when such a file is read)
        from ragmetrics.io.corpus import read_corpus  # noqa: PLC0415 (as above)

        corpus_source = _open_extra(corpus, "corpus", limits)
        documents = read_corpus(corpus_source)
        warn_if_corpus_of_another_dataset(dataset, documents, corpus_source.name)
        size = len(documents) or None
    if corpus_size is not None:
        size = corpus_size
    if documents is not dataset.documents or size != dataset.corpus_size:
        if size is not None and (not isinstance(size, int) or size < 1):
            raise RagMetricsError(f"The 'corpus_size' parameter must be an int >= 1 or None. Got {size!r} instead.")
        dataset = dataclasses.replace(dataset, corpus_size=size, documents=documents)
    return dataset


def _open_extra(value: Any, role: str, limits: Limits) -> Source:
    """A queries / corpus input: ``(data, filename)`` pairs name themselves."""
    if isinstance(value, tuple) and len(value) == 2 and (value[1] is None or isinstance(value[1], str)):
        return open_source(value[0], value[1] or f"<{role}>", limits)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return open_source(value, f"<{role}>", limits)
    return open_source(value, limits=limits)


def load_qrels(
    source: Any, *, format: str | None = None, filename: str | None = None, limits: Limits | None = None
) -> pd.DataFrame:
    """The judgments (``query_id``, ``doc_id``, ``relevance``) of any dataset input."""
    return load_dataset(source, format=format, filename=filename, limits=limits).qrels


def __getattr__(name: str) -> Any:
    """The writers and ``attach_source_docs``, imported when first asked for."""
    if name in ("write_trec_qrels", "write_trec_run"):
        return getattr(trec, name)
    if name == "attach_source_docs":
        from ragmetrics.io.chunks import attach_source_docs  # noqa: PLC0415 (imports pandas: loaded when such a file is read)

        return attach_source_docs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
