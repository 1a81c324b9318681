"""BEIR-style folders, and the queries / corpus files they are made of.

A folder (or a .zip of one) holding:

* ``corpus.jsonl``: ``{"_id" or "id", "title", "text"}`` per line (optional); the text is the first of
  :data:`DOC_TEXT_KEYS` a record holds;
* ``queries.jsonl``: ``{"_id" or "id", "text"}`` per line (optional);
* the judgments: ``qrels/test.tsv`` (else the first ``qrels/*.tsv``) with a
  header ``query-id corpus-id score``, or a top-level ``qrels.tsv`` /
  ``qrels.txt`` / ``qrels`` in TREC (``qid 0 docid rel``) or BEIR form.

Queries are restricted to those with judgments in the chosen qrels (BEIR's
queries.jsonl holds every split). ``corpus_size`` is the number of distinct
documents in the corpus, ``documents`` the corpus itself.
"""

from __future__ import annotations

import bisect
import functools
import io
import warnings
import zipfile
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pajson

from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.ids import id_problem
from ragmetrics.foundation.kernels import aggregate, coalesce, elementwise
from ragmetrics.foundation.model import Dataset, table_frame
from ragmetrics.io import tables, trec
from ragmetrics.io._json import first_char, records
from ragmetrics.io.columns import normalise_name
from ragmetrics.io.limits import inflation_meter
from ragmetrics.io.source import (
    ZIP_MAGIC,
    Source,
    check_id,
    check_line_rows,
    check_text,
    check_texts,
    names_of,
    shorten,
)

QUERY_ID_KEYS = ("_id", "id", "query_id", "qid")
QUERY_TEXT_KEYS = ("text", "query")
DOC_ID_KEYS = ("_id", "id", "doc_id", "docid")
DOC_TEXT_KEYS = ("text", "content", "contents", "body", "passage", "document")
"""The keys a corpus record may hold its text under, in the order they are looked for: every corpus reader reads
these."""
MAX_EXTRA_KEYS = 100  # distinct extra keys of a queries file (each becomes a column)


# --------------------------------------------------------------------------
# folders: a directory or a zip archive
# --------------------------------------------------------------------------
class Folder:
    def __init__(self, name: str, files: dict[str, Callable[[], Source]]) -> None:
        self.name = name
        self.files = files  # relative posix path -> Source factory

    def find(self, *candidates: str) -> Source | None:
        lowered = {p.lower(): p for p in self.files}
        for candidate in candidates:
            if candidate.lower() in lowered:
                return self.files[lowered[candidate.lower()]]()
        return None

    def glob_qrels(self) -> list[str]:
        return sorted(p for p in self.files if p.lower().startswith("qrels/") and p.lower().endswith(".tsv"))


def open_folder(source: Source) -> Folder:
    if source.is_dir:
        assert source.path is not None
        root = source.path
        files: dict[str, Callable[[], Source]] = {}
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel.count("/") <= 1:
                files[rel] = functools.partial(
                    Source, f"{source.name.rstrip('/')}/{rel}", path=path, limits=source.limits
                )
        return Folder(source.name, files)
    try:
        archive = zipfile.ZipFile(io.BytesIO(source.raw))
        infos = {info.filename: info for info in archive.infolist() if not info.is_dir()}
    except Exception as exc:
        raise ParseError(source.name, None, "a zip archive of a BEIR folder", _zip_problem(exc)) from None
    # macOS's resource forks (__MACOSX/..., ._name) are no files of the dataset
    names = [n for n in infos if not n.startswith("__MACOSX/") and not PurePosixPath(n).name.startswith("._")]
    # the folder inside the archive: where corpus.jsonl / queries.jsonl / qrels live
    roots = sorted(
        {str(PurePosixPath(n).parent) for n in names if PurePosixPath(n).name in ("corpus.jsonl", "queries.jsonl")}
        | {str(PurePosixPath(n).parent.parent) for n in names if PurePosixPath(n).parent.name == "qrels"},
        key=lambda root: (len(root), root),
    )
    inner = roots[0] if roots else "."
    apart = [root for root in roots[1:] if inner != "." and not root.startswith(inner + "/")]
    if apart:  # two datasets side by side: which one is meant cannot be told
        raise ParseError(
            source.name,
            None,
            "a zip archive of one BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
            f"two: {shorten(inner + '/')} and {shorten(apart[0] + '/')}",
        )
    prefix = "" if inner == "." else inner + "/"
    files = {}
    for n in names:
        if n.startswith(prefix):
            rel = n[len(prefix) :]
            member = f"{source.name}/{rel if len(rel) <= 120 else rel[:117] + '...'}"
            files[rel] = functools.partial(_member_source, archive, infos[n], member, source)
    return Folder(source.name, files)


def _zip_problem(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    found = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return found if len(found) <= 160 else found[:157] + "..."


def _member_source(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, source: Source) -> Source:
    return Source(name, raw=_read_member(archive, info, name, source), limits=source.limits)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, source: Source) -> bytes:
    """A member's bytes, inflated in 1 MiB steps up to the limits' cap (a zip
    bomb stops there) and, as a gzip's, counted by this thread's inflation meter (a server's budget for what uploads
    inflate to: :func:`ragmetrics.io.limits.metered_inflation`); encrypted members, unknown methods and bad CRCs are
    ParseErrors."""
    limits = source.limits
    cap = limits.inflate_cap(info.compress_size)
    if info.file_size > cap:  # declared: refuse before inflating anything
        raise limits.inflate_error(name, info.compress_size, info.file_size)
    meter = inflation_meter()
    pieces: list[bytes] = []
    total = 0
    try:
        with archive.open(info) as handle:
            while True:
                piece = handle.read(1 << 20)
                if not piece:
                    break
                total += len(piece)
                if total > cap:
                    pieces.clear()
                    raise limits.inflate_error(name, info.compress_size, total)
                if meter is not None:
                    meter(name, len(piece))
                pieces.append(piece)
    except (ParseError, RagMetricsError):
        pieces.clear()
        raise
    except Exception as exc:
        raise ParseError(name, None, "a readable zip member", _zip_problem(exc)) from None
    return b"".join(pieces)


def sniff_beir(source: Source) -> bool:
    return source.is_dir or source.magic[:4] == ZIP_MAGIC


# --------------------------------------------------------------------------
# queries and corpus files
# --------------------------------------------------------------------------
def _pick(record: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if record.get(key) is not None:
            return key, record[key]
    return None, None


def _as_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def read_queries(source: Source) -> pd.DataFrame:
    """``query_id``, ``query`` and any other keys, from JSONL/JSON or TSV/CSV."""
    if first_char(source) in "{[" and source.extension not in (".tsv", ".csv", ".txt"):
        rows: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        extra_keys: set[str] = set()
        for line, _n, record in records(source):
            if not isinstance(record, dict):
                raise ParseError(source.name, line, "a JSON object", type(record).__name__)
            key, raw_id = _pick(record, QUERY_ID_KEYS)
            qid = _as_id(raw_id)
            if qid is None:
                raise ParseError(
                    source.name,
                    line,
                    'a query id ("_id", "id" or "query_id")',
                    f"keys {names_of(record)}" if key is None else shorten(raw_id),
                )
            check_id(source, line, qid, "a query id")
            tkey, text = _pick(record, QUERY_TEXT_KEYS)
            if not isinstance(text, str):
                raise ParseError(
                    source.name,
                    line,
                    'the query text ("text" or "query")',
                    f"keys {names_of(record)}" if tkey is None else shorten(text),
                )
            if qid in seen:
                raise ParseError(source.name, line, "each query id once", f"{shorten(qid)} again", first_line=seen[qid])
            seen[qid] = line
            row = {"query_id": qid, "query": check_text(source, line, text, "a query text")}
            for k, v in record.items():
                if k not in (key, tkey) and k not in QUERY_ID_KEYS and k not in QUERY_TEXT_KEYS:
                    if k == "metadata" and not v:
                        continue
                    if k not in extra_keys:
                        if len(extra_keys) >= MAX_EXTRA_KEYS:
                            raise ParseError(
                                source.name,
                                line,
                                f"at most {MAX_EXTRA_KEYS} distinct extra keys",
                                f"one more, {shorten(k)}",
                            )
                        extra_keys.add(k)
                    row[k] = v
            rows.append(row)
        if not rows:  # a queries file given holds queries: an empty one is a mistake, not a file of none
            raise ParseError(source.name, None, "queries: a JSON object per line with an id and a text", "none")
        return pd.DataFrame(rows)
    delimiter = "\t" if source.extension != ".csv" and b"\t" in source.head.split(b"\n")[0] else ","
    first = source.head.split(b"\n")[0].rstrip(b"\r").split(delimiter.encode())
    if first and normalise_name(first[0].decode("utf-8", "replace")) in ("id", "_id", "query_id", "qid", "query"):
        frame, line_of, _ = tables.read_delimited(source, delimiter)
        check_texts(source, frame, line_of)
        cols = {normalise_name(c): c for c in frame.columns}
        idc = next((cols[k] for k in ("query_id", "qid", "_id", "id") if k in cols), None)
        textc = next(
            (cols[k] for k in ("text", "query", "query_text", "question") if k in cols and cols[k] != idc), None
        )
        if idc is None or textc is None:
            raise ParseError(
                source.name,
                1,
                "columns for the query id and its text (e.g. query_id, text)",
                f"columns {names_of(frame.columns, 20, sort=False)}",
            )
        others = [c for c in frame.columns if c not in (idc, textc) and c not in ("query_id", "query")]
        out = frame[[idc, textc, *others]].rename(columns={idc: "query_id", textc: "query"})
    else:  # headerless: id <delimiter> text
        lines: list[tuple[str, str]] = []
        for lineno, raw in enumerate(source.text().split("\n"), 1):
            raw = raw.rstrip("\r")
            if not raw.strip():
                continue
            qid, sep, text = raw.partition(delimiter)
            if not sep or not qid.strip():
                raise ParseError(
                    source.name, lineno, f"'query_id{delimiter!r}text'".replace("'\\t'", "<tab>"), shorten(raw)
                )
            lines.append((qid.strip(), check_text(source, lineno, text, "a query text")))
        out = pd.DataFrame(lines, columns=["query_id", "query"])
    dup = out["query_id"].duplicated()
    if dup.any():
        raise ParseError(source.name, None, "each query id once", f"{shorten(out['query_id'][dup].iloc[0])} twice")
    return out


def _objects_only(data: bytes) -> bool:
    """True when every line starts with ``{`` (no blank or indented lines either).

    pyarrow's JSON reader (26.0) crashes the process with a segmentation fault
    when a block of the input starts with a top-level ``null``; it is given
    only inputs where every record opens an object. Vectorized: one pass of
    numpy over the bytes."""
    if not data or data[:1] != b"{":
        return False
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.flatnonzero(buf == 10) + 1
    starts = starts[starts < len(buf)]
    return bool((buf[starts] == ord("{")).all())


def read_corpus(source: Source) -> pd.DataFrame:
    """``doc_id``, ``title``, ``text`` from a BEIR corpus.jsonl or any JSONL of objects (C reader, Python
    fallback; :mod:`ragmetrics.io.corpus` says which keys); in a file whose first record names no id, a record
    without one is ``line<N>``; a document id given twice keeps its first row (``attrs["duplicate_ids"]`` counts the
    rows dropped)."""
    check_line_rows(source)
    try:
        if not _objects_only(source.data):
            raise pa.ArrowInvalid("not one object per line: the line-numbered reader takes it")
        table = pajson.read_json(
            pa.BufferReader(source.data),
            parse_options=pajson.ParseOptions(
                explicit_schema=pa.schema(
                    [(k, pa.string()) for k in dict.fromkeys((*DOC_ID_KEYS, "title", *DOC_TEXT_KEYS))]
                ),
                unexpected_field_behavior="ignore",
            ),
        )
        ids = None
        for key in DOC_ID_KEYS:
            if key in table.column_names and table.column(key).null_count == 0:
                ids = table.column(key)
                break
        text = coalesce(*(table.column(k) for k in DOC_TEXT_KEYS))  # the explicit schema gives every column
        if text.null_count == len(text):
            raise pa.ArrowInvalid("no record holds a text: the line-numbered reader names the file's first line")
        if ids is not None and table.num_rows:
            stripped = elementwise("utf8_trim_whitespace", ids)
            texts = (table.column("title"), text)
            longest = max(aggregate("max", elementwise("binary_length", c)) or 0 for c in texts)
            if longest > source.limits.max_text_bytes:
                raise pa.ArrowInvalid("a text over the limit: the line-numbered reader names its line")
            if id_problem(stripped, source.limits.max_id_bytes) is None:  # else the line-numbered reader names it
                frame = pd.DataFrame({"doc_id": stripped.to_pandas()})
                for col, values in (("title", table.column("title")), ("text", text)):
                    frame[col] = values.to_pandas().fillna("").astype("str")
                return _first_of_each(source, frame)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    rows: list[tuple[str, str, str]] = []
    first: tuple[int, dict[str, Any]] | None = None
    with_text = False
    for line, _n, record in records(source):
        if not isinstance(record, dict):
            raise ParseError(source.name, line, "a JSON object", type(record).__name__)
        id_key, raw_id = _pick(record, DOC_ID_KEYS)
        first = first or (line, record)
        if id_key is None and _pick(first[1], DOC_ID_KEYS)[0] is None:
            raw_id = f"line{line}"  # a file that names no id: its documents are its lines
        doc = _as_id(raw_id)
        if doc is None:
            raise ParseError(
                source.name,
                line,
                f"a document id (one of {', '.join(DOC_ID_KEYS)})",
                f"keys {names_of(record)}" if id_key is None else shorten(raw_id),
            )
        check_id(source, line, doc, "a document id")
        title = check_text(source, line, str(record.get("title") or ""), "a document title")
        text_key, text = _pick(record, DOC_TEXT_KEYS)
        with_text = with_text or text_key is not None
        rows.append((doc, title, check_text(source, line, str(text or ""), "a document text")))
    if first is None:
        raise ParseError(source.name, None, "at least one document", "none")
    if not with_text:
        raise ParseError(
            source.name,
            first[0],
            f"a document text under one of {', '.join(DOC_TEXT_KEYS)} (in at least one record)",
            f"keys {names_of(first[1])}, and no record holds any of them",
        )
    frame = pd.DataFrame(rows, columns=["doc_id", "title", "text"]).astype("str")
    return _first_of_each(source, frame)


def _first_of_each(source: Source, frame: pd.DataFrame) -> pd.DataFrame:
    """The first row of each document id, said when a later one is dropped; ``attrs["duplicate_ids"]``: how many
    were."""
    first = frame.drop_duplicates("doc_id", keep="first").reset_index(drop=True)
    first.attrs["duplicate_ids"] = dropped = len(frame) - len(first)
    if dropped:
        warnings.warn(
            f"{source.name}: {dropped:,} line(s) repeat a document id of an earlier line; the first of each is read",
            RagMetricsWarning,
            stacklevel=3,
        )
    return first


def read_qrels_file(source: Source) -> pd.DataFrame:
    """A BEIR qrels TSV (with header) or a TREC qrels file."""
    first = next((ln for ln in source.head.split(b"\n") if ln.strip()), b"")
    head = normalise_name(trec.split_fields(first.decode("utf-8", "replace"), 1)[0]) if first.strip() else ""
    if head in ("query_id", "qid", "query", "topic", "topic_id"):
        delimiter = "\t" if b"\t" in first else ","
        dataset = (
            tables.read_tsv_dataset(source, name="qrels")
            if delimiter == "\t"
            else tables.read_csv_dataset(source, name="qrels")
        )
        return dataset.qrels
    return table_frame(trec.parse_qrels_table(source))


CORPUS_CHECK_IDS = 2_000
"""The judged documents :func:`warn_if_corpus_of_another_dataset` looks up (the first ones): a sample is enough to
tell a corpus that holds none of them."""


def warn_if_corpus_of_another_dataset(dataset: Dataset, documents: pd.DataFrame, corpus: str) -> None:
    """Warn when ``documents`` (a corpus read for ``dataset``) hold none of the documents its qrels judge, neither
    as they are named nor as chunks of them (``DEV_3_C0`` of ``DEV_3``) nor as their documents: the corpus was
    likely made for another dataset, and its size and texts would feed accuracy@k, budgets and answer_in@k."""
    judged = list(dict.fromkeys(dataset.qrels_table.column("doc_id").slice(0, CORPUS_CHECK_IDS * 4).to_pylist()))
    judged = judged[:CORPUS_CHECK_IDS]
    if not judged or documents.empty:
        return
    ids = documents["doc_id"].astype(str).tolist()
    held = set(ids)
    if any(doc in held for doc in judged):  # the usual case, settled without sorting the corpus's ids
        return
    ordered = sorted(ids)

    def meets(doc: str) -> bool:
        at = bisect.bisect_left(ordered, doc)  # a corpus id that starts with it: one of its chunks, or itself
        if at < len(ordered) and ordered[at].startswith(doc):
            return True
        return any(doc[:i] in held for i, ch in enumerate(doc) if i and not ch.isalnum())  # its document

    if not any(meets(doc) for doc in judged):
        warnings.warn(
            f"the corpus {corpus} holds none of the documents the qrels judge (its ids: {', '.join(ids[:3])}; the "
            f"qrels': {', '.join(map(str, judged[:3]))}); is it another dataset's?",
            RagMetricsWarning,
            stacklevel=3,
        )


def merge_queries(dataset: Dataset, queries: pd.DataFrame, *, keep_unjudged: bool = False) -> Dataset:
    """Attach text (and extra columns) from ``queries`` to the dataset's queries."""
    base = dataset.queries
    if len(queries) and not base["query_id"].isin(set(queries["query_id"])).any():
        warnings.warn(
            f"the queries file matches none of the dataset's {len(base)} queries (its ids: "
            f"{', '.join(map(str, queries['query_id'].head(3)))}; the dataset's: "
            f"{', '.join(map(str, base['query_id'].head(3)))}); is it another dataset's?",
            RagMetricsWarning,
            stacklevel=3,
        )
    extra = queries.set_index("query_id")
    merged = base.copy()
    mapped = merged["query_id"].map(extra["query"])
    texts = mapped.astype(object).where(mapped.notna(), "")
    merged["query"] = merged["query"].where(merged["query"].astype("str").str.len() > 0, texts)
    added: dict[str, pd.Series] = {}
    for column in extra.columns:
        if column == "query":
            continue
        values = merged["query_id"].map(extra[column])
        if column in merged.columns:
            empty = merged[column].isna() | (merged[column].astype("str") == "")
            merged[column] = merged[column].where(~empty, values)
        else:
            added[column] = values
    if added:  # at once: one insert per column fragments the frame (and pandas warns)
        merged = pd.concat([merged, pd.DataFrame(added, index=merged.index)], axis=1)
    if keep_unjudged:
        missing = queries[~queries["query_id"].isin(set(merged["query_id"]))]
        merged = pd.concat([merged, missing], ignore_index=True)
    return Dataset.from_frames(
        dataset.qrels, merged, name=dataset.name, corpus_size=dataset.corpus_size, documents=dataset.documents
    )


def read_beir(source: Source, *, name: str) -> Dataset:
    folder = open_folder(source)
    qrels_source = folder.find("qrels/test.tsv")
    if qrels_source is None and folder.glob_qrels():
        qrels_source = folder.files[folder.glob_qrels()[0]]()
    if qrels_source is None:
        qrels_source = folder.find("qrels.tsv", "qrels.txt", "qrels.trec", "qrels", "test.tsv")
    if qrels_source is None:
        raise ParseError(
            source.name,
            None,
            "a BEIR folder with qrels/test.tsv (or qrels/*.tsv, or qrels.tsv)",
            f"files {sorted(folder.files)[:10]}",
        )
    qrels = read_qrels_file(qrels_source)
    dataset = Dataset.from_frames(qrels, name=name)
    queries_source = folder.find("queries.jsonl", "queries.json", "queries.tsv")
    if queries_source is not None:
        dataset = merge_queries(dataset, read_queries(queries_source))
    corpus_source = folder.find("corpus.jsonl", "corpus.json")
    if corpus_source is not None:
        documents = read_corpus(corpus_source)
        dataset = Dataset.from_frames(
            dataset.qrels, dataset.queries, name=name, corpus_size=len(documents) or None, documents=documents
        )
    return dataset
