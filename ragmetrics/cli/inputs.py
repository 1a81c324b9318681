"""Reading a command's inputs (the dataset, the runs: one line naming the file on bad input) and writing its
outputs whole (a temporary file beside the target, replacing it only once written; an output that is an input is
refused)."""

from __future__ import annotations

import argparse
import contextlib
import csv
import filecmp
import io
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from ragmetrics.analysis.targets import resolve_targets
from ragmetrics.engine.metrics import metric_name
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.kernels import aggregate, is_in, unique
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_run, name_of_file, refuse_output_over_input, unique_names
from ragmetrics.io._json import first_record
from ragmetrics.io.formats import formats_of
from ragmetrics.io.source import open_source

INPUT_OPTIONS = (
    "dataset",
    "run",
    "runs",
    "baseline",
    "labels",
    "judge_qrels",
    "human_qrels",
    "queries",
    "corpus",
    "chunk_mapping",
    "targets",
    "pool",
    "human",
)
"""The options that name files a command reads (a command writes none of them)."""


def output_path(args: argparse.Namespace, path: str, option: str, *, positional: Sequence[str] = ()) -> str:
    """``path``, a file the command is about to write for ``option``, once it is sure that its folder exists and
    that it is none of the files the command reads (writing it would destroy that input):
    :func:`ragmetrics.io.refuse_output_over_input`, the check the library's writers make. ``positional``: the inputs
    the command takes as arguments, not options (named as argparse names them)."""
    inputs = {}
    for name in INPUT_OPTIONS:
        value = getattr(args, name, None)
        named = f"the argument {name}" if name in positional else f"--{name.replace('_', '-')}"
        inputs[named] = value if isinstance(value, list) else [value]
    refuse_output_over_input(path, option, inputs)
    return path


def output_paths(args: argparse.Namespace, outputs: dict[str, str], *, positional: Sequence[str] = ()) -> None:
    """Each of ``outputs`` (an option -> the file the command is about to write for it) checked as
    :func:`output_path` checks one, and no two of them the same file (the one written second would replace the
    other)."""
    written: dict[str, str] = {}
    for option, path in outputs.items():
        output_path(args, path, option, positional=positional)
        where = os.path.realpath(path)
        if where in written:
            raise RagMetricsError(
                f"{option} {path}: is also written as {written[where]}; one would replace the other: give another path"
            )
        written[where] = option


def looks_like(path: str, kind: str) -> bool:
    """True when ``path`` sniffs as a ``kind`` ("run" or "dataset") file (for the "did you swap them?" hint)."""

    try:
        source = open_source(path)
        return any(f.name in ("trec", "jsonl", "evalset") and f.sniff(source) for f in formats_of(kind))
    except (RagMetricsError, OSError):
        return False


def looks_like_texts(path: str) -> bool:
    """True when ``path``'s first record is a query's or a document's text and nothing else: an id and a ``text``
    (a title, metadata), no query, judgments or ranking (for the "give it as --queries or --corpus" hint)."""
    try:
        record = first_record(open_source(path))
    except (RagMetricsError, OSError, ValueError):
        return False
    if not isinstance(record, dict) or "text" not in record:
        return False
    return set(record) <= {"_id", "id", "query_id", "doc_id", "text", "title", "metadata"}


SNIFFED_LINES = 5
"""The lines :func:`looks_like_spans` reads."""


def looks_like_spans(path: str) -> bool:
    """True when ``path``'s first lines read as evidence spans in the qrels layout (``qid 0 docid rel start end``:
    the last three whole numbers, the end past the start), which a run's layout also has six fields of (for the
    "give it as evidence --spans" hint)."""
    try:
        head = bytes(open_source(path).head).decode("utf-8", "replace")
        lines = [line.split() for line in head.splitlines()[: SNIFFED_LINES * 4] if line.strip()]
    except (RagMetricsError, OSError, ValueError):
        return False
    first = lines[:SNIFFED_LINES]
    return bool(first) and all(len(f) == 6 and all(x.isdigit() for x in f[3:]) and int(f[5]) > int(f[4]) for f in first)


EMPTY_FILE_BYTES = 1 << 16
"""A file this small is read to tell whether it is blank (no line but whitespace)."""


def blank_file(path: str) -> bool:
    """Whether ``path`` is a file holding nothing but whitespace: qrels or a run without a single line."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > EMPTY_FILE_BYTES:
            return False
        return not Path(path).read_bytes().strip()
    except OSError:
        return False


def refuse_repeated_runs(paths: Sequence[str], why: str) -> None:
    """Refuse a run file given twice, or a copy of its bytes (:func:`same_file`); ``why``: what counting it twice
    would do."""
    for i, path in enumerate(paths):
        twin = next((other for other in paths[:i] if same_file(path, other)), None)
        if twin is not None:
            raise RagMetricsError(f"--run {path}: the same run as --run {twin}; expected each run once ({why})")


def same_file(path: str, other: str) -> bool:
    """Whether two inputs hold the same bytes: the same path, the same file, or two local files of equal content
    (read to the first difference). A URL or a folder is the same only as the same path or file."""
    if path == other:
        return True
    if "://" in path or "://" in other:
        return False
    try:
        if os.path.samefile(path, other):
            return True
        return os.path.isfile(path) and os.path.isfile(other) and filecmp.cmp(path, other, shallow=False)
    except OSError:
        return False


def read_dataset(args: argparse.Namespace) -> Dataset:

    if blank_file(args.dataset):
        if getattr(args, "allow_no_relevant", False):  # the peers' "run but no qrels": no query to score
            return Dataset.from_dict({}, name=name_of_file(args.dataset))
        if hasattr(args, "allow_no_relevant"):
            raise RagMetricsError(
                f"{args.dataset}: the qrels are empty (no line): there is nothing to score a run against; "
                "--allow-no-relevant scores it anyway (no query has a value)"
            )
    try:
        return load_dataset(
            args.dataset,
            queries=getattr(args, "queries", None),
            corpus=getattr(args, "corpus", None),
            corpus_size=getattr(args, "corpus_size", None),
        )
    except RagMetricsError as exc:
        if looks_like_spans(args.dataset):
            raise RagMetricsError(
                f"{exc} ({args.dataset} looks like evidence spans, qid 0 docid rel start end: give it to "
                "ragmetrics evidence --spans, and the qrels or the evaluation set as --dataset)"
            ) from None
        if looks_like(args.dataset, "run"):
            raise RagMetricsError(
                f"{exc} ({args.dataset} looks like a run: did you swap --dataset and --run?)"
            ) from None
        if looks_like_texts(args.dataset):
            raise RagMetricsError(
                f"{exc} ({args.dataset} looks like a queries or corpus file, an id and a text per record: give it as "
                "--queries or --corpus, and the qrels or the evaluation set as --dataset)"
            ) from None
        raise


PARALLEL_LOAD_BYTES = 8 << 20
"""Below this many bytes of input files, reading them one after the other is quicker than starting a thread."""


def total_size(paths: Sequence[str]) -> int:
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))


def read_inputs(args: argparse.Namespace, paths: Sequence[str]) -> tuple[Dataset, list[Run]]:
    """The dataset and the runs; the dataset is read on another thread while the runs are (file reads and the
    parsers release the GIL), an error in either reported as it would be alone."""

    if total_size([args.dataset, *paths]) < PARALLEL_LOAD_BYTES:
        dataset, runs = read_dataset(args), read_runs(paths, args)
    else:
        with ThreadPoolExecutor(1) as pool:
            read = pool.submit(read_dataset, args)
            try:
                runs = read_runs(paths, args)
            except BaseException:
                read.result()  # the dataset's error, when it has one, is the first to report
                raise
            dataset = read.result()
    check_collection(args, dataset, runs)
    return dataset, runs


def check_collection(args: argparse.Namespace, dataset: Dataset, runs: Sequence[Run]) -> None:
    """Refuse a collection the qrels and runs cannot come from: a ``--corpus`` holding none of the documents they
    name (another dataset's corpus, or its queries file: its texts and size would be read as theirs), or, where
    ``accuracy@k`` reads it (``--corpus-size``, or a corpus with accuracy asked), a collection smaller than the
    distinct documents they name (its true negatives would be counted in a collection that cannot hold them). A run
    of chunks names its documents (``source_doc``) unless ``--level chunk``, and a corpus of its chunks (their
    texts, for token budgets) meets it too; each check reads only what it needs."""
    if dataset.corpus_size is None:
        return
    corpus = getattr(args, "corpus", None)
    if corpus and dataset.documents is not None:
        held = pa.array(dataset.documents["doc_id"].astype(str), pa.large_string())
        judged = dataset.qrels_table.column("doc_id")
        if not aggregate("any", is_in(judged, held)) and not any(  # the qrels' first: the runs only when needed
            aggregate("any", is_in(ids, held)) for ids in (*_document_ids(args, runs), *_chunk_ids(runs))
        ):
            shown = ", ".join(repr(d) for d in unique(judged)[:3].to_pylist())
            raise RagMetricsError(
                f"--corpus {corpus}: holds none of the documents the qrels and runs name (e.g. {shown}); give this "
                "dataset's corpus"
            )
    sized = getattr(args, "corpus_size", None)
    if not (sized or _asks_accuracy(args)):
        return  # a corpus given for its texts (answer_in@k, budgets, a pool's text) is not the collection
    columns = [dataset.qrels_table.column("doc_id"), *_document_ids(args, runs)]
    named = len(unique(pa.chunked_array([unique(c).cast(pa.large_string()) for c in columns], pa.large_string())))
    if dataset.corpus_size < named:
        given = f"--corpus-size {sized}" if sized else f"--corpus {corpus}" if corpus else f"{args.dataset}'s corpus"
        raise RagMetricsError(
            f"{given}: {dataset.corpus_size:,} documents, fewer than the {named:,} distinct documents the qrels and "
            "runs name; give the size of the whole collection (accuracy@k counts its true negatives there)"
        )


def _document_ids(args: argparse.Namespace, runs: Sequence[Run]) -> Iterator[Any]:
    """Each run's document ids: its chunks' documents (``source_doc``) unless ``--level chunk`` scores chunks."""
    by_chunk = getattr(args, "level", "auto") == "chunk"
    for run in runs:
        names = run.table.column_names
        yield run.table.column("source_doc" if "source_doc" in names and not by_chunk else "doc_id")


def _chunk_ids(runs: Sequence[Run]) -> Iterator[Any]:
    """The ids a run of chunks retrieves (it names their documents in ``source_doc``): a corpus of those chunks,
    given for their texts (token budgets), meets the run."""
    for run in runs:
        if "source_doc" in run.table.column_names:
            yield run.table.column("doc_id")


def _asks_accuracy(args: argparse.Namespace) -> bool:
    """Whether the command scores accuracy@k (a metric or a target named so)."""
    asked = list(getattr(args, "metric", None) or [])
    if getattr(args, "targets", None):
        with contextlib.suppress(RagMetricsError):  # a bad target is refused where targets are read
            asked += list(resolve_targets(args.targets))
    return any(_named(str(m)) == "accuracy" for m in asked)


def _named(metric: str) -> str | None:
    try:
        return metric_name(metric)
    except RagMetricsError:  # another command's metric (evidence's), or a name refused where it is read
        return None


STDIN = "-"
"""A run given as ``-`` is read from standard input (one run at most), as trec_eval's peers read a pipe."""

STDIN_NAME = "stdin"
"""The name of a run read from standard input (a file's is its name without its extensions)."""


def read_runs(paths: Sequence[str], args: argparse.Namespace) -> list[Run]:

    if list(paths).count(STDIN) > 1:
        raise RagMetricsError("--run -: standard input given twice; expected at most one run read from it")
    runs: list[Run] = []
    for path in paths:
        if blank_file(path) and hasattr(args, "allow_no_overlap"):
            if not args.allow_no_overlap:
                raise RagMetricsError(
                    f"{path}: the run is empty (no line): every metric would be 0; --allow-no-overlap scores it "
                    "anyway (every judged query 0, or skipped under --missing skip)"
                )
            run = Run.from_dict({}, name=name_of_file(path))  # the peers' "qrels but no run"
        else:
            run = _load_run(path, args)
        runs.append(run)
    named = unique_names([run.name for run in runs])
    return [run if name == run.name else run.with_name(name) for run, name in zip(runs, named)]


def shared_queries(runs: Sequence[Run], command: str, err: TextIO) -> None:
    """Runs read together query by query (``agree``, ``fuse``) must share queries: a run sharing none with the
    others is an error naming both sides' ids (a different id scheme, such as ``1`` and ``Q1``, is the usual
    cause); runs sharing only part get a note with how many of the queries they rank are in every run."""
    ids = [set(run.table.column("query_id").unique().to_pylist()) for run in runs]
    for i, (run, own) in enumerate(zip(runs, ids)):
        others = set().union(*(other for j, other in enumerate(ids) if j != i))
        if own and others and not own & others:
            names = " and ".join(repr(r.name) for j, r in enumerate(runs) if j != i)
            raise RagMetricsError(
                f"{command}: run {run.name!r} shares no query with {names} (its ids "
                f"{', '.join(map(repr, sorted(own)[:3]))}; theirs {', '.join(map(repr, sorted(others)[:3]))}): "
                "do the runs number their queries the same way?"
            )
    every = set.intersection(*ids) if ids else set()
    union = set().union(*ids)
    if len(every) < len(union):
        err.write(
            f"ragmetrics: note: {command}: {len(every)} of the {len(union)} queries the runs rank are in every run "
            f"({', '.join(f'{run.name!r} ranks {len(own)}' for run, own in zip(runs, ids))})\n"
        )


def refuse_stdin_on(engine: str, paths: Sequence[str | None]) -> None:
    """A partitioned engine reads its inputs by their paths: standard input (``-``) is refused by name, not looked
    for as a file called ``-``."""
    if STDIN in paths:
        raise RagMetricsError(
            f"-: standard input is read by --engine inprocess only (--engine {engine} reads its files by their path, "
            "in parts or more than once); save it to a file, or leave out --engine"
        )


def _load_run(path: str, args: argparse.Namespace) -> Run:
    stdin = path == STDIN
    try:
        return load_run(
            sys.stdin.buffer if stdin else path,
            name=STDIN_NAME if stdin else None,
            filename="<stdin>" if stdin else None,
            chunk_mapping=getattr(args, "chunk_mapping", None),
            chunk_pattern=getattr(args, "chunk_pattern", None),
        )
    except RagMetricsError as exc:
        if not stdin and looks_like(path, "dataset") and not looks_like(path, "run"):
            given = getattr(args, "dataset", None) is not None
            hint = "did you swap --dataset and the run's file?" if given else "this command reads runs only"
            raise RagMetricsError(f"{exc} ({path} looks like qrels: {hint})") from None
        raise


def per_query_paths(path: str | None, names: Sequence[str]) -> list[str | None]:
    """``--per-query-out``: the path for one run; for several, the run's name before the extension."""
    if path is None:
        return [None] * len(names)
    if len(names) == 1:
        return [path]
    stem, dot, suffix = path.rpartition(".")
    return [f"{stem}.{name}.{suffix}" if dot else f"{path}.{name}" for name in names]


JUDGE_COLUMNS = ("judge", "judge_version", "config_hash")
"""The provenance columns of the TSV ``judge run`` writes (:data:`ragmetrics.cli.judging.JUDGED_COLUMNS`)."""


def refuse_above_scale(path: str, labels: Any, column: str, top: int, scale: str) -> None:
    """Refuse people's ``labels`` (a frame with ``query_id``, ``doc_id`` and the grade in ``column``) read from
    ``path`` when one is above ``top``, naming the first such pair; ``scale``: whose scale ``0..top`` is, and how
    to set another. A grade off the scale weighs more than any the judge could give."""
    off = labels[labels[column] > top]
    if len(off):
        first = off.iloc[0]
        raise RagMetricsError(
            f"{path}: {len(off)} label(s) above the scale 0..{top} ({scale}), e.g. query {first['query_id']} "
            f"document {first['doc_id']} labelled {first[column]}"
        )


def labels_source(path: str) -> Any:
    """``path`` opened once (its bytes read and decompressed once) for :func:`judges_of` and the loader to share;
    ``path`` itself when it cannot be opened, for the loader to say why."""
    try:
        return open_source(path)
    except (OSError, RagMetricsError):
        return path


def judges_of(path: Any) -> list[str]:
    """The judges (``judge version config_hash``) whose labels a file written by ``judge run`` holds, read as the
    loaders read it (compressed or not, tab- or comma-separated, or Parquet); [] for any other file (its header
    does not name the provenance columns): what refuses a judge's labels given as people's. ``path``: a path, or
    the :func:`labels_source` the loader reads too."""
    try:
        source = open_source(path)
        if source.magic.startswith(b"PAR1"):
            from ragmetrics.io.tables import read_parquet  # noqa: PLC0415 (pandas, kept off eval's start: Parquet only)

            frame = read_parquet(source, JUDGE_COLUMNS)
            if not set(JUDGE_COLUMNS) <= set(frame.columns):
                return []
            found = set(frame[list(JUDGE_COLUMNS)].astype(str).itertuples(index=False, name=None))
            return sorted(" ".join(judge) for judge in found)
        text = source.text()
    except (OSError, RagMetricsError):
        return []
    for delimiter in ("\t", ","):  # as written by judge run, or saved from a spreadsheet as CSV
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header = [h.strip() for h in next(reader, [])]
        if set(JUDGE_COLUMNS) <= set(header):
            where = [header.index(c) for c in JUDGE_COLUMNS]
            found = {tuple(row[i].strip() for i in where) for row in reader if len(row) == len(header)}
            return sorted(" ".join(judge) for judge in found)
    return []
