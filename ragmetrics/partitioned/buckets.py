"""One bucket of a partitioned evaluation, and the fold of every bucket's table into the run's result.

A bucket holds every row of its queries on both sides (its qrels rows and its run rows), so the unchanged engine
(:func:`ragmetrics.align`) evaluates it as it would the whole. :func:`evaluate_bucket` returns one Arrow table per
bucket (:data:`BUCKET_SCHEMA` plus a column per metric): a row per evaluated query (``kind`` 0) with its values, its
coverage flags and its health tallies, a row per run query the qrels do not know (``kind`` 1), and one row of the
bucket's totals (``kind`` 2). :func:`combine` folds any set of such tables, in any order, into a
:class:`PartitionedRun` whose values and coverage equal the in-process engine's on the whole.

``position`` orders the result: a query's first row in the qrels (dataset order, as the engine orders queries) and an
unknown query's first row in the run (the order the engine lists them in).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragmetrics.analysis.merged import Sums, sums_of
from ragmetrics.engine import Conventions, align, budgets
from ragmetrics.engine.health import query_tallies
from ragmetrics.engine.modes import MODES
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.ids import MAX_ID_BYTES, positions_in, to_numpy
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import columns, tables, trec
from ragmetrics.io.limits import Limits
from ragmetrics.io.source import BOM, Source
from ragmetrics.partitioned.inputs import Side, open_plain

if TYPE_CHECKING:
    pass

EVALUATED, UNKNOWN, TOTALS, SKIPPED = 0, 1, 2, 3
"""The ``kind`` of a bucket table's row (``SKIPPED``: a judged query missing from the run, not evaluated under
``missing="skip"``)."""

FLAGS = ("missing_in_run", "no_relevant", "duplicate", "tied")
"""Per evaluated query: the coverage lists it belongs to (``duplicate``: rows dropped, ``tied``: tied scores)."""
TALLIES = ("ranked", "meeting", "judged_top", "relevant_found", "relevant", "ranked_top")
"""Per evaluated query: :class:`ragmetrics.engine.health.QueryTallies`."""
FIRST_TOKENS = "first_tokens"
"""Per evaluated query: the token count of its first retrieved text (:func:`ragmetrics.engine.budgets.first_tokens`),
null when no metric reads a token budget (none is counted, as in process:
:func:`ragmetrics.engine.budgets.first_tokens_asked`); what the note of a budget that hands some query nothing counts
(:func:`starved_of`)."""
TOTALS_COLUMNS = ("run_rows", "unknown_rows", "duplicates_dropped", "chunks_merged", "tied_pairs", "matched_by_text")
"""Per bucket (its ``kind`` 2 row): the counts of the coverage report that are not per query. Its ``sums`` column
holds the bucket's :class:`ragmetrics.analysis.merged.Sums` of its evaluated queries (:meth:`Sums.to_bytes`): the
fingerprints always, the resampled sums when the plan asks for resamples."""

PATTERN_MATCHED, PATTERN_FIRST = "pattern_matched", "pattern_first"
"""Per bucket (its ``kind`` 2 row), under a chunk pattern: the distinct ids of the bucket's run rows it matched,
and, when it matched none, the bucket's first distinct ids with their :data:`POSITION` (JSON ``[[position, id],
...]``, :data:`ragmetrics.io.chunks.PATTERN_EXAMPLES` at most): what :func:`pattern_warning` reads."""

BUCKET_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.int8()),
        pa.field("position", pa.int64()),
        pa.field("query_id", pa.large_string()),
        *(pa.field(f, pa.bool_()) for f in FLAGS),
        pa.field("ranked", pa.bool_()),
        pa.field("meeting", pa.bool_()),
        *(pa.field(t, pa.int64()) for t in TALLIES[2:]),
        pa.field(FIRST_TOKENS, pa.int64()),
        *(pa.field(c, pa.int64()) for c in TOTALS_COLUMNS),
        pa.field(PATTERN_MATCHED, pa.int64()),
        pa.field(PATTERN_FIRST, pa.large_string()),
        pa.field("sums", pa.binary()),
    ]
)
POSITION = "position"
"""The column of a bucket's input rows giving the row's place in its file (0-based, increasing with the file)."""


def schema(metrics: Sequence[str]) -> pa.Schema:
    """A bucket table's schema: :data:`BUCKET_SCHEMA` and a float64 column per metric (canonical names)."""
    return pa.schema([*BUCKET_SCHEMA, *(pa.field(m, pa.float64()) for m in metrics)])


@dataclass(frozen=True)
class Plan:
    """What every bucket does: the run's name, how both sides are read, the metrics (canonical names) and the
    conventions. A plain value: Spark sends it to its executors."""

    run_name: str
    run: Side
    qrels: Side
    metrics: tuple[str, ...]
    conventions: Conventions = field(default_factory=Conventions)
    corpus_size: int | None = None
    chunk_pattern: str | None = None
    max_id_bytes: int = MAX_ID_BYTES
    resamples: int = 0
    """Resamples of the merged sign-flip sums each bucket emits (0: only the exact sums and the fingerprints)."""
    seed: int = 0
    tokenizer: TokenizerLike = "auto"
    """What the token budgets (``recall@512tok``) count with: a named tokenizer or a callable; never ``auto`` when
    a metric reads a budget (:func:`ragmetrics.partitioned.files.budget_tokenizer`)."""

    def schema(self) -> pa.Schema:
        return schema(self.metrics)

    @property
    def budgets(self) -> list[int]:
        """The token budgets the metrics read (:func:`budgets_of`)."""
        return budgets_of(self.metrics, self.conventions)


def budgets_of(metrics: Sequence[str], conventions: Conventions) -> list[int]:
    """The token budgets ``metrics`` read (``recall@512tok``: 512), in their order."""
    return budgets.asked(MODES[conventions.mode].parse(m) for m in metrics)


def starved_of(evaluated: pa.Table, asked: Sequence[int]) -> dict[int, int]:
    """Each budget of ``asked`` -> the queries of ``evaluated`` (a bucket table's evaluated rows) it hands nothing
    (:func:`ragmetrics.engine.budgets.starved`); empty, the :data:`FIRST_TOKENS` column unread, when none is asked."""
    return budgets.starved(to_numpy(evaluated.column(FIRST_TOKENS)), asked) if asked else {}


def source_of(name: str, data: bytes, max_id_bytes: int):  # -> Source
    """The text of a bucket or a slice as a loader's input, named as its file."""
    # the whole input was not read here, so the in-memory caps do not apply; the id rule does
    unlimited = Limits(max_bytes=1 << 62, max_rows=1 << 62, max_queries=1 << 62, max_id_bytes=max_id_bytes)
    return Source(name, raw=data, limits=unlimited)


def _lines(rows: pa.Table) -> bytes:
    """The rows' lines as one text, each ended by a line break: one element-wise append, then the appended array's
    character data taken whole (joining a list of the lines copied the text three times)."""
    lines = rows.column("line").combine_chunks().cast(pa.large_string())
    ended = pc.binary_join_element_wise(lines, pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string()))
    offsets = np.frombuffer(ended.buffers()[1], np.int64, len(ended) + 1, ended.offset * 8)
    return ended.buffers()[2][int(offsets[0]) : int(offsets[-1])].to_pybytes()


def _in_file(side: Side, rows: pa.Table, exc: ParseError) -> ParseError:
    """``exc``, raised on a bucket, said of the input file: a TREC line found by its text, a table's by its row."""
    if side.layout == "trec":
        return exc.said_of(side.file, lambda line: _trec_line(side, rows, line))
    positions = to_numpy(rows.column(POSITION))
    return exc.said_of(side.file, lambda line: side.line_of(positions, line - 1))


def _rows_in_file(exc: ParseError, positions: np.ndarray) -> ParseError:
    """``exc``, raised on a bucket of a table without lines (Parquet, a frame), the rows it names (``(row N)``,
    ``(first on row N)``: the bucket's) said as the table's."""

    def file_row(match: re.Match[str]) -> str:
        return f"{match.group(1)}row {int(positions[int(match.group(2)) - 1]) + 1})"

    found = re.sub(r"(\((?:first on )?)row (\d+)\)", file_row, exc.found)
    return ParseError(exc.source, exc.line, exc.expected, found, first_line=exc.first_line)


def _trec_line(side: Side, rows: pa.Table, bucket_line: int) -> int | None:
    """The input file's line of a bucket's line: the same occurrence of the same text (every line of a text has one
    query id, so all of them are in this bucket, in file order)."""
    lines = rows.column("line")
    text = lines[bucket_line - 1].as_py()
    occurrence = int(pc.sum(pc.equal(lines.slice(0, bucket_line - 1), text)).as_py() or 0)
    return file_line(side.file, text, occurrence)


def file_line(path: str, text: str, occurrence: int = 0) -> int | None:
    """The line number of the line of ``path`` that reads ``text`` (after ``occurrence`` earlier ones); None when
    the file cannot be read here (a cluster's path). Read in blocks: a file of any size in bounded memory."""

    if not os.path.isfile(path):
        return None
    wanted = text.encode("utf-8")
    with open_plain(path) as handle:
        lines_before, tail = 0, b""
        start = handle.read(len(BOM))
        if start != BOM:  # the loader drops a byte-order mark at the start of the file
            tail = start
        while block := handle.read(1 << 24):
            data = tail + block
            cut = data.rfind(b"\n") + 1
            complete, tail = data[:cut], data[cut:]
            prefixed = b"\n" + complete
            for at in _line_starts(prefixed, wanted):
                if occurrence == 0:
                    return lines_before + complete.count(b"\n", 0, at) + 1
                occurrence -= 1
            lines_before += complete.count(b"\n")
        if tail.rstrip(b"\r") == wanted:
            return lines_before + 1
    return None


def _line_starts(prefixed: bytes, wanted: bytes):  # -> Iterator[int]
    """Offsets in ``prefixed`` (a line break, then whole lines) of the lines that read ``wanted``, in order."""

    for match in re.finditer(re.escape(b"\n" + wanted) + rb"(?=\r?\n)", prefixed):
        yield match.start()


def read_side(side: Side, rows: pa.Table, plan: Plan, kind: Literal["run", "dataset"]) -> Run | Dataset:
    """A bucket's rows of one input (in file order) as the loader reads them; an error is said of the input file."""
    try:
        if side.layout == "trec":
            source = source_of(side.file, _lines(rows), plan.max_id_bytes)
            return trec.read_run(source, name=plan.run_name) if kind == "run" else trec.read_qrels(source, name="qrels")

        source = source_of(side.file, b"", plan.max_id_bytes)
        frame = tables.plain_table(source, rows.drop_columns([POSITION])).to_pandas()
        positions = to_numpy(rows.column(POSITION))
        header = side.header_line

        def line_of(row: int) -> int | None:
            return side.line_of(positions, row)

        if kind == "run":
            return columns.run_from_columns(source, frame, line_of, name=plan.run_name, header_line=header)
        return columns.dataset_from_columns(source, frame, line_of, name="qrels", header_line=header)
    except ParseError as exc:
        if exc.source != side.file or side.layout == "trec":
            raise _in_file(side, rows, exc) from None
        if side.header_line is None and side.numbered:
            raise _rows_in_file(exc, to_numpy(rows.column(POSITION))) from None
        raise


def _sorted(rows: pa.Table) -> pa.Table:
    """The rows in file order (a shuffle or a partitioned write need not keep it)."""
    positions = to_numpy(rows.column(POSITION))
    if len(positions) < 2 or bool(np.all(positions[1:] > positions[:-1])):
        return rows
    return rows.take(pa.array(np.argsort(positions, kind="stable")))


def _first_positions(ids: pa.ChunkedArray, positions: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each id in ``wanted``, the smallest position of a row of ``ids`` holding it."""
    grouped = pa.table({"id": ids, "p": pa.array(positions)}).group_by("id").aggregate([("p", "min")])
    at = positions_in(pa.array(wanted.tolist(), pa.large_string()), grouped.column("id"))
    return to_numpy(grouped.column("p_min"))[at]


def evaluate_bucket(plan: Plan, qrels_rows: pa.Table, run_rows: pa.Table) -> pa.Table:
    """The bucket table of one bucket: ``qrels_rows`` and ``run_rows`` are the bucket's rows of each input (the
    side's columns and :data:`POSITION`)."""
    qrels_rows, run_rows = _sorted(qrels_rows), _sorted(run_rows)
    run = read_side(plan.run, run_rows, plan, "run") if run_rows.num_rows else empty_run(plan.run_name)
    assert isinstance(run, Run)
    run_positions = to_numpy(run_rows.column(POSITION)) if run_rows.num_rows else np.zeros(0, np.int64)
    if qrels_rows.num_rows == 0:
        return evaluate_parsed(plan, None, np.zeros(0, np.int64), run, run_positions)
    dataset = read_side(plan.qrels, qrels_rows, plan, "dataset")
    assert isinstance(dataset, Dataset)
    return evaluate_parsed(plan, dataset, to_numpy(qrels_rows.column(POSITION)), run, run_positions)


def with_chunks(plan: Plan, run: Run, positions: np.ndarray) -> tuple[Run, dict[str, int | str]]:
    """``run`` with each chunk's source document when the plan has a chunk pattern, and what the bucket's totals
    row says of the pattern (:data:`PATTERN_MATCHED`, :data:`PATTERN_FIRST`): a bucket holds some of the ids only,
    so the run's warning is made once, from every bucket's (:func:`pattern_warning`)."""
    if plan.chunk_pattern is None:
        return run, {}
    from ragmetrics.io.chunks import PATTERN_EXAMPLES, attach_pattern  # noqa: PLC0415 (imports pandas: loaded for a chunk pattern)

    chunked, matched = attach_pattern(run, plan.chunk_pattern)
    found: dict[str, int | str] = {PATTERN_MATCHED: matched}
    if not matched and run.table.num_rows:
        first: dict[str, int] = {}
        ids = run.table.column("doc_id")
        start, step = 0, 64
        while len(first) < PATTERN_EXAMPLES and start < len(ids):  # the first few rows hold them: read no further
            for offset, doc in enumerate(ids.slice(start, step).to_pylist()):
                first.setdefault(doc, int(positions[start + offset]))
                if len(first) == PATTERN_EXAMPLES:
                    break
            start, step = start + step, step * 2
        found[PATTERN_FIRST] = json.dumps([[position, doc] for doc, position in first.items()])
    return chunked, found


def pattern_warning(run_name: str, pattern: str | None, totals: pa.Table) -> str | None:
    """The in-process words of a chunk pattern that matched none of the run's ids
    (:func:`ragmetrics.io.chunks.pattern_missed`), from every bucket's totals row (``totals``); None when there is
    no pattern, no row, or it matched some id."""
    if pattern is None:
        return None
    rows = int(pc.sum(totals.column("run_rows")).as_py() or 0)
    if not rows or int(pc.sum(totals.column(PATTERN_MATCHED)).as_py() or 0):
        return None
    from ragmetrics.io.chunks import PATTERN_EXAMPLES, pattern_missed  # noqa: PLC0415 (imports pandas: loaded for a chunk pattern)

    first: dict[str, int] = {}
    for listed in totals.column(PATTERN_FIRST).drop_null().to_pylist():
        for position, doc in json.loads(listed):
            first[doc] = min(position, first.get(doc, position))
    examples = sorted(first, key=first.__getitem__)[:PATTERN_EXAMPLES]
    return pattern_missed(run_name, pattern, rows, examples)


def evaluate_parsed(
    plan: Plan, dataset: Dataset | None, qrels_positions: np.ndarray, run: Run, run_positions: np.ndarray
) -> pa.Table:
    """The bucket table of one bucket already read: ``dataset`` (None: no qrels row falls in the bucket) and ``run``
    (as read: chunks are attached here, :func:`with_chunks`) hold every row of the bucket's queries;
    ``qrels_positions`` and ``run_positions`` are each table row's :data:`POSITION` (increasing with the input
    file)."""
    run, found = with_chunks(plan, run, run_positions)
    totals: dict[str, int | str | bytes] = {"run_rows": run.table.num_rows, **found}
    parts = []
    if dataset is None or dataset.qrels_table.num_rows == 0:  # every query of the bucket's run is unknown
        unknown = np.array(pc.unique(run.table.column("query_id")).to_pylist(), dtype=object)
        totals["unknown_rows"] = run.table.num_rows
        totals["sums"] = Sums.empty(len(plan.metrics), plan.resamples, plan.seed).to_bytes()
        if len(unknown):
            parts.append(_unknown_rows(plan, unknown, run, run_positions))
        parts.append(_totals_row(plan, totals))
        return pa.concat_tables(parts)
    if plan.corpus_size is not None:
        dataset = replace(dataset, corpus_size=plan.corpus_size)
    alignment = align(dataset, run, plan.conventions, tokenizer=plan.tokenizer)
    coverage = alignment.coverage
    values = alignment.values(list(plan.metrics))
    ids = alignment.query_ids
    columns: dict[str, pa.Array | np.ndarray] = {
        "kind": np.full(len(ids), EVALUATED, np.int8),
        "position": _first_positions(dataset.qrels_table.column("query_id"), qrels_positions, ids),
        "query_id": pa.array(ids.tolist(), pa.large_string()),
    }
    listed = {
        "missing_in_run": coverage.missing_in_run,
        "no_relevant": coverage.no_relevant,
        "duplicate": coverage.duplicate_queries,
        "tied": coverage.tied_queries,
    }
    for flag in FLAGS:
        columns[flag] = _listed(columns["query_id"], listed[flag])
    tallies = query_tallies(alignment)
    for tally in TALLIES:
        columns[tally] = getattr(tallies, tally)
    first = budgets.first_tokens_asked(alignment, plan.budgets)
    if first is not None:
        columns[FIRST_TOKENS] = first
    for name, values_of in zip(plan.metrics, values.values()):
        columns[name] = pa.array(values_of, pa.float64())
    parts.append(_table(plan, columns, len(ids)))
    missing = pa.array(list(coverage.missing_in_run), pa.large_string())
    not_evaluated = missing.filter(pc.invert(pc.is_in(missing, value_set=columns["query_id"])))
    skipped = np.array(sorted(set(not_evaluated.to_pylist())), dtype=object)
    if len(skipped):
        position = _first_positions(dataset.qrels_table.column("query_id"), qrels_positions, skipped)
        kinds = np.full(len(skipped), SKIPPED, np.int8)
        parts.append(
            _table(
                plan,
                {"kind": kinds, "position": position, "query_id": pa.array(skipped.tolist(), pa.large_string())},
                len(skipped),
            )
        )
    unknown = np.array(coverage.not_in_dataset, dtype=object)
    if len(unknown):
        parts.append(_unknown_rows(plan, unknown, run, run_positions))
    totals.update(
        unknown_rows=coverage.rows_not_in_dataset,
        duplicates_dropped=coverage.duplicates_dropped,
        chunks_merged=coverage.chunks_merged,
        tied_pairs=coverage.tied_pairs,
        matched_by_text=coverage.matched_by_text,
        sums=sums_of(columns["query_id"], list(values.values()), plan.resamples, plan.seed).to_bytes(),
    )
    parts.append(_totals_row(plan, totals))
    return pa.concat_tables(parts)


def _listed(ids: pa.Array, listed: Sequence[str]) -> np.ndarray:
    """Which of ``ids`` a coverage list names (a hash lookup: numpy's ``isin`` sorts object arrays, seconds per
    bucket when most queries are listed)."""
    if not listed:
        return np.zeros(len(ids), bool)
    return to_numpy(pc.is_in(ids, value_set=pa.array(list(listed), pa.large_string())))


def empty_run(name: str) -> Run:
    empty = pa.array([], pa.large_string())
    return Run.from_table(
        pa.table({"query_id": empty, "doc_id": empty, "score": pa.array([], pa.float64())}), name=name
    )


def _table(plan: Plan, columns: dict[str, pa.Array | np.ndarray], rows: int) -> pa.Table:
    target = plan.schema()
    arrays = []
    for f in target:
        given = columns.get(f.name)
        if given is None:
            nothing = (
                f.name in plan.metrics
                or f.name == FIRST_TOKENS
                or pa.types.is_large_string(f.type)
                or pa.types.is_binary(f.type)
            )
            arrays.append(pa.nulls(rows, f.type) if nothing else pa.array(np.zeros(rows), f.type))
        else:
            arrays.append(given if isinstance(given, pa.Array) else pa.array(given, f.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _unknown_rows(plan: Plan, unknown: np.ndarray, run: Run, run_positions: np.ndarray) -> pa.Table:
    position = _first_positions(run.table.column("query_id"), run_positions, unknown)
    return _table(
        plan,
        {
            "kind": np.full(len(unknown), UNKNOWN, np.int8),
            "position": position,
            "query_id": pa.array(unknown.tolist(), pa.large_string()),
        },
        len(unknown),
    )


def _totals_row(plan: Plan, totals: dict[str, int | str | bytes]) -> pa.Table:
    columns: dict[str, pa.Array | np.ndarray] = {"kind": np.array([TOTALS], np.int8)}
    for k, v in totals.items():
        if isinstance(v, (bytes, str)):
            columns[k] = pa.array([v], pa.binary() if isinstance(v, bytes) else pa.large_string())
        else:
            columns[k] = np.array([v], np.int64)
    return _table(plan, columns, 1)


def per_query_rows(table: pa.Table, metrics: Sequence[str]) -> pa.Table:
    """A bucket table's evaluated queries as the per-query file holds them: ``query_id`` and a column per metric."""
    evaluated = table.filter(pc.equal(table.column("kind"), EVALUATED))
    return evaluated.select(["query_id", *metrics])


def without_ids(table: pa.Table) -> pa.Table:
    """A bucket table with the ids of evaluated queries dropped where no coverage list names them (what a run too
    large to collect keeps after its per-query rows were written)."""
    flagged = pc.or_(
        pc.not_equal(table.column("kind"), EVALUATED),
        pc.or_(
            pc.or_(table.column("missing_in_run"), table.column("no_relevant")),
            pc.or_(table.column("duplicate"), table.column("tied")),
        ),
    )
    ids = pc.if_else(flagged, table.column("query_id"), pa.scalar(None, pa.large_string()))
    return table.set_column(table.schema.get_field_index("query_id"), "query_id", ids)


def rows_of(columns: dict[str, Sequence[object]]) -> pa.Table:
    """A small input table (tests, examples): the columns given and :data:`POSITION` in row order."""
    n = len(next(iter(columns.values()))) if columns else 0
    return pa.table({**columns, POSITION: pa.array(np.arange(n, dtype=np.int64))})
