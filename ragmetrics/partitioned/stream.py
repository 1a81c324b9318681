"""The stream engine: out of core in this process, the run read in order, in slices of whole queries.

Nearly every run a tool writes holds each query's lines together. Then a piece of the file that ends where the query
id changes already holds every row of its queries: it is a bucket, with no hash, no work file and no second parse.
The run is read in order (TREC text, plain or gzipped, in blocks of bytes; Parquet in batches of rows) and cut into
slices of about :attr:`Stream.slice_bytes` bytes, each ending where the query id changes (the lines of the query a
block's end cuts are carried into the next slice). Each slice is parsed once by the run's loader (the TREC reader on
its text; the table rules on its rows) and evaluated by :func:`ragmetrics.partitioned.buckets.evaluate_parsed`, the
bucket evaluator every engine uses, with the qrels rows of the slice's queries. The qrels are read by their loader
(every rule, every error of the in-process engine): whole, once, or, when they are a plain TREC file larger than a
slice whose queries' lines are together, a slice at a time (:class:`QrelsSlices`); the judged queries no slice names
are evaluated last, with no run row (judged queries missing from the run).

A query whose lines are not together (its id seen again in a later slice) is refused, naming the file, the line (a
Parquet file: the row) and the query, never counted twice: such a run needs an engine that partitions by a hash of
the query id (``duckdb`` or ``polars``). The ids already seen are kept as 64-bit fingerprints
(:func:`ragmetrics.foundation.ids.string_fingerprints`, 8 bytes a query).

Memory: a slice's text, its parsed table and its alignment (a few times the slice's bytes, :data:`SLICE_SHARE`), the
qrels (whole, or two parsed slices of them and 13 bytes a judged query), and what is kept per query (its values and
id). ``--memory-limit`` (default :data:`DEFAULT_MEMORY_LIMIT`) sets
the slice size: :data:`SLICE_SHARE` of it, at most :data:`MAX_SLICE_BYTES`; ``--buckets N`` instead cuts the run into
about ``N`` slices.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import BinaryIO, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.foundation.ids import positions_in, string_fingerprints, to_numpy
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, trec
from ragmetrics.io.columns import ID_BLANKS
from ragmetrics.io.limits import parse_size
from ragmetrics.io.source import BOM, UTF16_BOMS
from ragmetrics.io.tables import id_keys
from ragmetrics.partitioned.buckets import POSITION, Plan, empty_run, evaluate_parsed, read_side, source_of
from ragmetrics.partitioned.engine import Engine, Options
from ragmetrics.partitioned.inputs import (
    GZIP_RATIO,
    Input,
    Side,
    describe,
    is_gzipped,
    keyed_as_text,
    line_at,
    open_plain,
    with_columns,
)

T = TypeVar("T")

DEFAULT_MEMORY_LIMIT = "2GB"
"""The memory the engine plans for when ``--memory-limit`` is not given (DuckDB's default too)."""
SLICE_SHARE = 1 / 12
"""A slice's bytes as a share of the memory limit: a TREC slice's text, its parsed table and its alignment peak at
a few times its bytes, beside the qrels and the values kept per query."""
MAX_SLICE_BYTES = 192 << 20
"""The largest slice: beyond it nothing is gained (the TREC reader splits a slice over the cores from 64 MB)."""
MIN_SLICE_BYTES = 1
"""The smallest slice ``--buckets`` may ask for (tests cut inside every query this way)."""
RUN_FORMATS = ("trec", "parquet")
"""The run formats read in order (a CSV or TSV run: ``duckdb`` or ``polars``)."""
_BLANKS = b" \t\x0b\x0c"
_DATA_LINE = re.compile(rb"(?m)^[ \t\x0b\x0c]*[^ \t\x0b\x0c\r\n#]")


class Stream(Engine):
    """The run read in order, in slices of whole queries (see the module's docstring)."""

    name = "stream"
    same_buckets_for_every_run = False
    bounds_memory = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        limit = parse_size(options.memory_limit or DEFAULT_MEMORY_LIMIT, "--memory-limit")
        self.slice_bytes = max(MIN_SLICE_BYTES, min(MAX_SLICE_BYTES, int(limit * SLICE_SHARE)))
        self._qrels: dict[str, Dataset] = {}
        self._sliced: dict[tuple[str, int], QrelsSlices | None] = {}

    def describe(self, path: str, kind: str) -> Input:
        found = describe(path, kind)  # type: ignore[arg-type]
        if kind == "run" and found.format not in RUN_FORMATS:
            raise RagMetricsError(
                f"{path}: a {found.format} run; --engine stream reads TREC (plain or gzipped) and Parquet runs in "
                "order: use --engine polars or duckdb"
            )
        if kind == "run" and found.format == "trec":
            with open_plain(path) as handle:
                if handle.read(2) in UTF16_BOMS:
                    raise RagMetricsError(
                        f"{path}: UTF-16 text; --engine stream cuts a run at its UTF-8 line breaks: use --engine "
                        "inprocess (or convert the file to UTF-8)"
                    )
        if kind == "dataset":  # read whole by the loader
            return replace(found, side=Side(path, "columns"))
        return found

    def _run_bytes(self, run: Input) -> int:
        size = os.path.getsize(run.path)
        return size * GZIP_RATIO if run.format == "trec" and is_gzipped(run.path) else size

    def buckets_for(self, qrels: Input, run: Input) -> int:
        return max(1, -(-self._run_bytes(run) // self.slice_bytes))

    def _slice_bytes(self, run: Input, buckets: int) -> int:
        if self.options.buckets is None:
            return self.slice_bytes
        return max(MIN_SLICE_BYTES, -(-self._run_bytes(run) // buckets))

    def _dataset(self, qrels: Input) -> Dataset:
        if qrels.path not in self._qrels:
            self._qrels[qrels.path] = load_dataset(qrels.path)
        return self._qrels[qrels.path]

    def _judged(self, plan: Plan, qrels: Input, size: int) -> JudgedQueries | QrelsSlices:
        """The qrels a slice at a time when they are a plain TREC file larger than a slice (and can be: see
        :class:`QrelsSlices`), else read whole."""
        key = (qrels.path, size)
        if key not in self._sliced:
            sliced = None
            if qrels.format == "trec" and not is_gzipped(qrels.path) and os.path.getsize(qrels.path) > size:
                sliced = QrelsSlices.read(qrels.path, size, plan.max_id_bytes)
            self._sliced[key] = sliced
        sliced = self._sliced[key]
        return sliced.again() if sliced is not None else JudgedQueries(self._dataset(qrels))

    def bucket_tables(self, plan: Plan, qrels: Input, run: Input, buckets: int) -> Iterator[pa.Table]:
        size = self._slice_bytes(run, buckets)
        judged = self._judged(plan, qrels, size)
        seen = SeenQueries(run.path)
        if run.format == "trec":
            rows_before = 0
            for offset, text in trec_slices(run.path, size):
                parsed = _parse_trec(plan, run.path, text, offset)
                seen.add(parsed.table.column("query_id"), partial(_line_of, run.path, text, offset))
                positions = np.arange(rows_before, rows_before + parsed.table.num_rows, dtype=np.int64)
                rows_before += parsed.table.num_rows
                yield _evaluate(plan, judged, parsed, positions)
        else:
            columns = with_columns(run, pq.ParquetFile(run.path).schema_arrow.names)
            plan = replace(plan, run=Side(run.path, "columns"))
            for rows in parquet_slices(columns, size):
                read = read_side(plan.run, rows, plan, "run")  # the table rules, as every engine reads a table
                assert isinstance(read, Run)
                positions = to_numpy(rows.column(POSITION))
                seen.add(read.table.column("query_id"), partial(_row_of, positions))
                yield _evaluate(plan, judged, read, positions)
        for leftover, positions in judged.unread():
            yield evaluate_parsed(plan, leftover, positions, empty_run(plan.run_name), np.zeros(0, np.int64))


def _evaluate(plan: Plan, judged: JudgedQueries | QrelsSlices, run: Run, positions: np.ndarray) -> pa.Table:
    taken = judged.take(pc.unique(run.table.column("query_id")))
    if taken is None:
        return evaluate_parsed(plan, None, np.zeros(0, np.int64), run, positions)
    return evaluate_parsed(plan, taken[0], taken[1], run, positions)


class JudgedQueries:
    """The qrels, read whole, handed out query by query: each slice takes the rows of its queries (and their
    query rows), the rest are read last. A slice's ids are looked up by their fingerprints (sorted once, so a
    slice costs its own ids, not the qrels'), each match confirmed on the text."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        table = dataset.qrels_table
        codes = pc.dictionary_encode(table.column("query_id")).combine_chunks()
        self.names = codes.dictionary
        code = to_numpy(codes.indices).astype(np.int64)
        self.order = np.argsort(code, kind="stable")  # rows grouped by query, file order within each
        counts = np.bincount(code, minlength=len(self.names))
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        self.taken = np.zeros(len(self.names), bool)
        prints = string_fingerprints(self.names)
        self.by_print = np.argsort(prints, kind="stable")
        self.prints = prints[self.by_print]
        self.prints_collide = len(prints) > 1 and bool(np.any(self.prints[1:] == self.prints[:-1]))
        self.query_row = positions_in(self.names, dataset.queries_table.column("query_id"))
        """Each judged query's row of the queries table (-1: none)."""

    def _codes(self, query_ids: pa.Array) -> np.ndarray:
        """The code of each of ``query_ids`` (distinct) among the judged queries, -1 when not judged."""
        if not len(self.names) or not len(query_ids):
            return np.full(len(query_ids), -1, np.int64)
        if self.prints_collide:  # two judged ids share a fingerprint
            return positions_in(query_ids, self.names)
        prints = string_fingerprints(query_ids)
        at = np.minimum(np.searchsorted(self.prints, prints), len(self.prints) - 1)
        codes = np.where(self.prints[at] == prints, self.by_print[at], -1)
        found = np.flatnonzero(codes >= 0)
        if len(found):  # a fingerprint match is confirmed on the text; a collision falls back to a hash lookup
            same = to_numpy(pc.equal(self.names.take(pa.array(codes[found])), query_ids.take(pa.array(found))))
            if not same.all():
                return positions_in(query_ids, self.names)
        return codes

    @staticmethod
    def _rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
        if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # a run of rows: a slice, not a copy
            return table.slice(int(rows[0]), len(rows))
        return table.take(pa.array(rows))

    def _subset(self, codes: np.ndarray) -> tuple[Dataset, np.ndarray]:
        lengths = self.starts[codes + 1] - self.starts[codes]
        begin = np.repeat(self.starts[codes] - np.cumsum(lengths) + lengths, lengths)
        rows = np.sort(self.order[begin + np.arange(int(lengths.sum()))])
        query_rows = np.sort(self.query_row[codes])
        query_rows = query_rows[query_rows >= 0]
        subset = Dataset(
            qrels_table=self._rows(self.dataset.qrels_table, rows),
            queries_table=self._rows(self.dataset.queries_table, query_rows),
            name=self.dataset.name,
        )
        return subset, rows.astype(np.int64)

    def take(self, query_ids: pa.Array) -> tuple[Dataset, np.ndarray] | None:
        """The qrels of ``query_ids`` (distinct; each query taken once: a later slice never sees it) and their row
        positions; None when none is judged."""
        at = self._codes(query_ids)
        codes = at[at >= 0]
        codes = codes[~self.taken[codes]]
        if not len(codes):
            return None
        self.taken[codes] = True
        return self._subset(np.sort(codes))

    def unread(self) -> Iterator[tuple[Dataset, np.ndarray]]:
        """The qrels of the judged queries no slice took (judged queries missing from the run), in one part."""
        codes = np.flatnonzero(~self.taken)
        if len(codes):
            self.taken[codes] = True
            yield self._subset(codes)


class QrelsSlices:
    """The qrels of a plain TREC qrels file read a slice at a time, for qrels larger than a slice (the same
    interface as :class:`JudgedQueries`: :meth:`take`, :meth:`unread`).

    One pass cuts the file as the run is cut (:func:`trec_slices`: whole queries, about ``size`` bytes a slice),
    parses each slice with the qrels loader (its rules, its errors with the file's line numbers; a file with several
    errors may name another one first than the whole loader would) and keeps only which slice holds each judged
    query: a 64-bit fingerprint, a slice number and a taken mark, 13 bytes a query. A slice of the run then parses
    again the qrels slices holding its queries, the :data:`KEPT` last ones kept parsed (a run in the qrels' query
    order parses each qrels slice about once), and copies out its rows. A run in another query order would parse
    the qrels slices again and again: past :data:`REPARSES` parses per qrels slice, the qrels are read whole for the
    rest of the run (the memory of the whole read, the time of one parse).

    The loader's rules that span the file (one label per query and document) hold slice by slice only when each
    query's lines are together: :meth:`read` gives None when they are not (two judged ids sharing a fingerprint look
    the same), and the qrels are then read whole; likewise for a UTF-16 file or a byte-order mark inside the file
    (a slice is cut at UTF-8 line breaks, and the loader drops a mark only at the start of the file)."""

    KEPT = 2
    REPARSES = 3

    def __init__(
        self, path: str, max_id_bytes: int, slices: list[tuple[int, int, int]], prints: np.ndarray, where: np.ndarray
    ) -> None:
        self.path, self.max_id_bytes, self.slices = path, max_id_bytes, slices
        self.prints, self.where = prints, where
        self.taken = np.zeros(len(prints), bool)
        self.parses = 0
        self._parsed: dict[int, Dataset] = {}
        self._whole: JudgedQueries | None = None

    @classmethod
    def read(cls, path: str, size: int, max_id_bytes: int) -> QrelsSlices | None:
        """The slices of the qrels at ``path``; None when they must be read whole (see the class)."""
        with open(path, "rb") as handle:
            if handle.read(2) in UTF16_BOMS:
                return None
        slices: list[tuple[int, int, int]] = []
        prints: list[np.ndarray] = []
        seen = SeenQueries(path)
        rows = 0
        for offset, text in trec_slices(path, size):
            if offset > len(BOM) and bytes(text[: len(BOM)]) == BOM:
                return None
            ids = _parse_qrels(path, text, offset, max_id_bytes).qrels_table.column("query_id")
            if seen.first_again(ids) is not None:
                return None
            prints.append(string_fingerprints(pc.unique(ids)))
            slices.append((offset, len(text), rows))
            rows += len(ids)
        if not slices:  # no judgment: the loader, reading it whole, says so
            return None
        where = np.repeat(np.arange(len(slices), dtype=np.int32), [len(p) for p in prints])
        joined = np.concatenate(prints)
        order = np.argsort(joined, kind="stable")
        return cls(path, max_id_bytes, slices, joined[order], where[order])

    def again(self) -> QrelsSlices:
        """The same slices with no query taken (for the next run)."""
        return QrelsSlices(self.path, self.max_id_bytes, self.slices, self.prints, self.where)

    def _slice(self, number: int) -> Dataset:
        if number not in self._parsed:
            offset, length, _ = self.slices[number]
            with open(self.path, "rb") as handle:
                text = os.pread(handle.fileno(), length, offset)
            if len(text) != length:
                raise RagMetricsError(f"{self.path}: changed while it was read (a slice of it came back shorter)")
            while len(self._parsed) >= self.KEPT:
                del self._parsed[next(iter(self._parsed))]
            self._parsed[number] = _parse_qrels(self.path, text, offset, self.max_id_bytes)
            self.parses += 1
        return self._parsed[number]

    def _found(self, prints: np.ndarray) -> np.ndarray:
        """Where each of ``prints`` is among the judged queries' (-1: not there, or taken already)."""
        if not len(self.prints):
            return np.full(len(prints), -1, np.int64)
        at = np.minimum(np.searchsorted(self.prints, prints), len(self.prints) - 1)
        return np.where((self.prints[at] == prints) & ~self.taken[at], at, -1)

    def _gather(self, numbers: np.ndarray, wanted: pa.Array, at: np.ndarray) -> tuple[Dataset, np.ndarray] | None:
        """The rows of the ``wanted`` ids (distinct, none taken; ``at``: where each is among the judged queries) in
        the slices ``numbers``, copied, and their positions; the ``wanted`` queries are taken."""
        self.taken[at] = True
        qrels, queries, positions = [], [], []
        for number in numbers.tolist():
            dataset = self._slice(number)
            rows = to_numpy(pc.is_in(dataset.qrels_table.column("query_id"), wanted)).nonzero()[0]
            if not len(rows):
                continue
            qrels.append(dataset.qrels_table.take(pa.array(rows)))
            queries.append(dataset.queries_table.filter(pc.is_in(dataset.queries_table.column("query_id"), wanted)))
            positions.append(rows + self.slices[number][2])
        if not qrels:
            return None
        subset = Dataset(qrels_table=pa.concat_tables(qrels), queries_table=pa.concat_tables(queries), name=self.path)
        return subset, np.concatenate(positions).astype(np.int64)

    def _read_whole(self) -> JudgedQueries:
        """The qrels read whole, the queries taken so far taken there too."""
        whole = JudgedQueries(load_dataset(self.path))
        whole.taken[:] = self._found(string_fingerprints(whole.names)) < 0
        self._parsed.clear()
        return whole

    def take(self, query_ids: pa.Array) -> tuple[Dataset, np.ndarray] | None:
        """The qrels of ``query_ids`` (distinct; each query taken once: a later slice never sees it) and their row
        positions; None when none is judged."""
        if self._whole is None and self.parses > self.REPARSES * len(self.slices):
            self._whole = self._read_whole()
        if self._whole is not None:
            return self._whole.take(query_ids)
        at = self._found(string_fingerprints(query_ids))
        hit = at >= 0
        if not hit.any():
            return None
        return self._gather(np.unique(self.where[at[hit]]), query_ids.filter(pa.array(hit)), at[hit])

    def unread(self) -> Iterator[tuple[Dataset, np.ndarray]]:
        """The qrels of the judged queries no slice took (judged queries missing from the run), a slice at a time."""
        if self._whole is not None:
            yield from self._whole.unread()
            return
        for number in np.unique(self.where[~self.taken]).tolist():
            ids = pc.unique(self._slice(number).qrels_table.column("query_id"))
            at = self._found(string_fingerprints(ids))
            hit = at >= 0
            part = self._gather(np.array([number]), ids.filter(pa.array(hit)), at[hit])
            if part is not None:
                yield part


def _parse_qrels(path: str, text: bytes, offset: int, max_id_bytes: int) -> Dataset:
    """A slice of a TREC qrels file, read by the qrels loader; an error names the file's lines."""
    return _read_slice(trec.read_qrels, path, text, offset, max_id_bytes, path)


def _read_slice(read: Callable[..., T], path: str, text: bytes, offset: int, max_id_bytes: int, name: str) -> T:
    """``read`` (a TREC loader) over the slice ``text`` of ``path`` that starts at byte ``offset``; an error is said
    of the file's lines."""
    try:
        return read(source_of(path, text, max_id_bytes), name=name)
    except ParseError as exc:
        before = line_at(path, offset) - 1
        raise exc.said_of(path, lambda line: line + before) from None


class SeenQueries:
    """The query ids of the rows read so far, as fingerprints: a query whose rows are not together (its id again
    after another query's, in the same slice or a later one) is refused."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen = np.zeros(0, np.uint64)

    def add(self, query_ids: pa.ChunkedArray, where: Callable[[int], str]) -> None:
        """Add a slice's ids (row order); ``where(row)``: the place in the file of the slice's row ``row``."""
        found = self.first_again(query_ids)
        if found is not None:
            row, query = found
            raise RagMetricsError(
                f"{self.path}: {where(row)}: query {query!r} again, after other queries: its lines "
                "are not together, so --engine stream (which reads the run in order, in slices of whole queries) "
                "cannot evaluate it; use --engine duckdb or --engine polars (they partition by a hash of the query "
                "id)"
            )

    def first_again(self, query_ids: pa.ChunkedArray | pa.Array) -> tuple[int, str] | None:
        """Add a slice's ids (row order) and give None; or, when one of them was seen before after other queries'
        (in this slice or an earlier one), add nothing and give the slice's row where it comes again, and the id."""
        if isinstance(query_ids, pa.ChunkedArray):
            query_ids = query_ids.combine_chunks()
        runs = pc.run_end_encode(query_ids)
        prints = string_fingerprints(runs.values)
        firsts = np.concatenate([[0], to_numpy(runs.run_ends)[:-1]]).astype(np.int64)
        order = np.argsort(prints, kind="stable")
        repeated = order[1:][prints[order][1:] == prints[order][:-1]]
        again = set(repeated.tolist())
        if len(self.seen):
            at = np.minimum(np.searchsorted(self.seen, prints), len(self.seen) - 1)
            again.update(np.flatnonzero(self.seen[at] == prints).tolist())
        if again:
            first = min(again)
            return int(firsts[first]), str(runs.values[first].as_py())
        new = np.sort(prints)
        self.seen = np.insert(self.seen, np.searchsorted(self.seen, new), new)  # one merge: no sort of them all
        return None


# --- TREC text ------------------------------------------------------------------------------------------------


def _key(line: bytes) -> bytes:
    """A TREC line's first field (its query id); empty for a blank line, ``#...`` for a comment."""
    stripped = line.rstrip(b"\r").lstrip(_BLANKS)
    end = len(stripped)
    for blank in _BLANKS:
        at = stripped.find(bytes([blank]))
        if 0 <= at < end:
            end = at
    return stripped[:end]


def _is_data(key: bytes) -> bool:
    return bool(key) and not key.startswith(b"#")


def query_cut(data: bytes, end: int, carried: int = 0, lowest: int = 0) -> int:
    """The offset in ``data`` where the last query of its complete lines (``data[:end]``, ``end`` after a line
    break) begins: the lines from there on (its lines and any blank or comment line before them) go to the next
    slice. 0 when the lines hold one query only. ``carried``: ``data`` starts with that many bytes of complete lines
    of one query (carried from the block before), so the walk back stops once it reaches them. ``lowest``: only
    lines that begin there or later are looked at (0 when none of them starts a query)."""
    last: bytes | None = None
    start = end
    while start > lowest:
        begin = data.rfind(b"\n", 0, start - 1) + 1
        if begin < lowest:
            return 0
        key = _key(data[begin : start - 1])
        if _is_data(key):
            if last is None:
                last = key
            elif key != last:
                return start
            if begin < carried:  # the carried lines are all this query's
                return 0
        start = begin
    return 0


def trec_slices(path: str, size: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, text)`` of each slice of a TREC file (plain or gzipped) of whole lines, about ``size`` bytes each,
    ending where the query id changes (a query longer than ``size`` makes its slice longer); ``offset``: where the
    text starts in the file's plain bytes. A UTF-8 byte-order mark is dropped, as the loader drops it. A plain file
    is mapped (each slice's text is then its one copy); a gzipped one read a block at a time."""
    if is_gzipped(path):
        yield from _gzipped_slices(path, size)
        return
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            total = len(mapped)
            start = len(BOM) if mapped[: len(BOM)] == BOM else 0
            while start < total:
                stop, carried = start + size, start
                while stop < total:
                    end = mapped.rfind(b"\n", start, stop) + 1
                    cut = query_cut(mapped, end, carried, lowest=start) if end else 0  # type: ignore[arg-type]
                    if cut:
                        break
                    carried, stop = max(carried, end), stop + size  # one query so far: look further
                else:
                    cut = total
                text = mapped[start:cut]
                if cut < total or _DATA_LINE.search(text):
                    yield start, text
                # the pages read are dropped from this process (they stay in the page cache): the mapping is not
                # counted in its memory
                dropped = start - start % mmap.PAGESIZE
                mapped.madvise(mmap.MADV_DONTNEED, dropped, cut - cut % mmap.PAGESIZE - dropped)
                start = cut


def _gzipped_slices(path: str, size: int) -> Iterator[tuple[int, bytes]]:
    handle: BinaryIO
    with open_plain(path) as handle:
        carry = handle.read(len(BOM))
        offset = 0
        if carry == BOM:
            carry, offset = b"", len(BOM)
        while True:
            block = handle.read(max(size - len(carry), size // 2, 1))
            if not block:
                if _DATA_LINE.search(carry):
                    yield offset, carry
                return
            # the cut among the block's own whole lines: the text is the one copy of the block
            cut = query_cut(block, block.rfind(b"\n") + 1, lowest=block.find(b"\n") + 1)
            if cut:
                text, carry = carry + block[:cut], block[cut:]
            else:  # a query from the carried lines on (a short block, or a long query)
                carried = carry.rfind(b"\n") + 1  # the carried complete lines: one query's
                data = carry + block
                end = data.rfind(b"\n") + 1
                cut = query_cut(data, end, carried) if end else 0
                if cut == 0:
                    carry = data
                    continue
                text, carry = data[:cut], data[cut:]
            yield offset, text
            offset += len(text)


def _parse_trec(plan: Plan, path: str, text: bytes, offset: int) -> Run:
    """A slice of a TREC run file, read by the run loader; an error names the file's lines."""
    return _read_slice(trec.read_run, path, text, offset, plan.max_id_bytes, plan.run_name)


def _line_of(path: str, text: bytes, offset: int, row: int) -> str:
    """Where the slice's data row ``row`` is, said of the file (its lines before the slice counted only now)."""
    lines_before = line_at(path, offset) - 1
    for number, line in enumerate(text.split(b"\n"), 1):
        if _is_data(_key(line)):
            if row == 0:
                return f"line {lines_before + number}"
            row -= 1
    return f"after line {lines_before}"


# --- Parquet --------------------------------------------------------------------------------------------------


def _query_keys(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A Parquet query id column as the ids the loader reads (the slice cut only: the table rules read the ids)."""
    if keyed_as_text(column.type):
        return pc.utf8_trim(column.cast(pa.large_string()), ID_BLANKS)
    return id_keys(column)


def parquet_slices(run: Input, size: int) -> Iterator[pa.Table]:
    """Rows of a Parquet run (its columns and :data:`POSITION`), about ``size`` bytes a slice (counted in the file's
    uncompressed bytes), each ending where the query id changes."""
    assert run.query_column is not None
    found = pq.ParquetFile(run.path)
    meta = found.metadata
    total = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    rows_per_slice = max(1, int(size * meta.num_rows / max(total, 1)))
    carry: pa.Table | None = None
    read = 0
    for batch in found.iter_batches(batch_size=min(rows_per_slice, 1 << 20), columns=list(run.columns)):
        rows = pa.Table.from_batches([batch])
        rows = rows.append_column(POSITION, pa.array(np.arange(read, read + rows.num_rows, dtype=np.int64)))
        read += rows.num_rows
        data = rows if carry is None else pa.concat_tables([carry, rows])
        if data.num_rows < rows_per_slice:
            carry = data
            continue
        keys = _query_keys(data.column(run.query_column))
        last = keys[len(keys) - 1]
        different = to_numpy(pc.not_equal(keys, last).fill_null(True))
        cut = int(np.flatnonzero(different)[-1]) + 1 if different.any() else 0
        if cut == 0:
            carry = data
            continue
        yield data.slice(0, cut)
        carry = data.slice(cut)
    if carry is not None and carry.num_rows:
        yield carry


def _row_of(positions: np.ndarray, row: int) -> str:
    """Where the slice's row ``row`` is, said of the Parquet file."""
    return f"row {int(positions[row]) + 1}"
