"""Opening an input: a path, raw bytes or a binary file-like, maybe gzipped.

A :class:`Source` knows the name used in error messages, hands out the
decompressed bytes (UTF-8 BOM removed) and offers the small helpers every
reader needs: UTF-8 decoding with a line-numbered error, the text of a given
line, and the line number of the n-th non-empty line.
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import reprlib
import stat
import zlib
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ragmetrics.foundation.errors import FieldError, ParseError
from ragmetrics.foundation.ids import id_text_problem, scalar_like, to_numpy
from ragmetrics.foundation.kernels import elementwise, fill_null
from ragmetrics.io.limits import Limits, inflation_meter, resolve

T = TypeVar("T")

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
PARQUET_MAGIC = b"PAR1"
BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
MAP_BYTES = 64 << 20
"""A plain file this large is mapped, not read (:meth:`Source.mapped`): copying it in costs a tenth of parsing it.
A file truncated while it is mapped ends the process (SIGBUS); one is read in a second or two."""
COMPRESSION_SUFFIXES = (".gz", ".gzip")


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def shorten(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters for error messages.

    Safe on anything a file can hold: long strings are cut before ``repr``,
    containers are shown a few levels deep, huge integers by their size.
    """
    if isinstance(value, str):
        text = repr(value[: limit + 2]) if len(value) > limit + 2 else repr(value)
    elif isinstance(value, bool) or value is None or isinstance(value, float):
        text = repr(value)
    elif isinstance(value, int):
        text = (
            repr(value)
            if value.bit_length() <= 200
            else f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
        )
    else:
        try:
            text = _REPR.repr(value)
        except Exception:
            text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def names_of(names: Any, limit: int = 8, *, sort: bool = True) -> str:
    """``['a', 'b'] and 3 more`` for messages: at most ``limit`` names, each shortened."""
    items = [str(n) for n in names]
    if sort:
        items = sorted(items)
    shown = "[" + ", ".join(shorten(n, 40) for n in items[:limit]) + "]"
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


class Source:
    """One input, as given to a loader.

    ``name`` is what error messages call it: the ``filename`` argument, else
    the path, else ``<bytes>`` / the stream's name.
    """

    def __init__(
        self, name: str, *, path: Path | None = None, raw: bytes | None = None, limits: Limits | None = None
    ) -> None:
        self.name = name
        self.path = path
        self._raw = raw
        self.limits = resolve(limits)

    # -- what it is -------------------------------------------------------
    @property
    def is_dir(self) -> bool:
        return self.path is not None and self._raw is None and self.path.is_dir()

    @cached_property
    def raw(self) -> bytes:
        """The bytes as stored (possibly compressed)."""
        if self._raw is not None:
            return self._raw
        assert self.path is not None
        try:
            with open(self.path, "rb") as handle:
                status = os.fstat(handle.fileno())
                if stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode):  # /dev/zero never ends
                    raise ParseError(self.name, None, "a file or a pipe", "a device")
                self.limits.check_size(self.name, status.st_size)
                data = read_capped(handle.read, self.limits.max_bytes + 1, status.st_size)
        except IsADirectoryError:
            raise ParseError(self.name, None, "a file", "a folder") from None
        except OSError as exc:
            raise ParseError(self.name, None, "a readable file", exc.strerror or str(exc)) from None
        self.limits.check_size(self.name, len(data))  # a pipe or a file that grew
        return data

    @cached_property
    def magic(self) -> bytes:
        """The first bytes as stored (for sniffing Parquet, zip...), read alone from a file not read yet."""
        if self.path is not None and self._raw is None and "raw" not in self.__dict__ and self.path.is_file():
            try:
                with open(self.path, "rb") as handle:
                    return handle.read(8)
            except OSError:
                pass  # raw says what is wrong with the file
        return self.raw[:8]

    def mapped(self) -> Any | None:
        """The file's bytes mapped read-only (an ``mmap``: ``in``, ``find``, slices and the buffer protocol, not the
        other ``bytes`` methods) when it is a plain file of :data:`MAP_BYTES` or more whose text needs no
        conversion (not compressed, no byte-order mark, not CR-only); else None, and :attr:`data` is the way.
        Mapped, the bytes are not copied into this process: a file that large is read by the page."""
        if self.path is None or self._raw is not None or "data" in self.__dict__:
            return None
        if "mapped" in self.__dict__:
            return self.__dict__["mapped"]

        try:
            with open(self.path, "rb") as handle:
                status = os.fstat(handle.fileno())
                if not stat.S_ISREG(status.st_mode) or status.st_size < MAP_BYTES:
                    return None
                self.limits.check_size(self.name, status.st_size)
                view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None  # data says what is wrong with the file
        head = view[:4]
        plain = head[:2] != GZIP_MAGIC and head[:2] not in UTF16_BOMS and head[:3] != BOM
        if not plain or head in (PARQUET_MAGIC, ZIP_MAGIC):
            view.close()
            return None
        self.__dict__["mapped"] = view
        return view

    @cached_property
    def data(self) -> bytes:
        """Decompressed bytes as UTF-8 (UTF-16 with a byte-order mark is converted), BOM removed;
        a text whose only line breaks are CRs gets LFs instead.

        Gzip is inflated in a stream that stops at the :class:`Limits` cap.
        """
        raw = self.raw
        self.magic  # noqa: B018 - keep the magic bytes before the raw bytes may be dropped
        if raw[:2] == GZIP_MAGIC:
            raw = gunzip(raw, self.name, self.limits)
        if raw[:2] in UTF16_BOMS:
            raw = from_utf16(raw, self.name)
        elif raw[:4] not in (PARQUET_MAGIC, ZIP_MAGIC) and _looks_like_utf16(raw[:512]):
            raise ParseError(
                self.name,
                None,
                "UTF-8 text (or UTF-16 that starts with its byte-order mark)",
                "UTF-16 without a byte-order mark (every other byte is 0): save the file as UTF-8",
            )
        if raw[:3] == BOM:
            raw = raw[3:]
        if b"\r" in raw and b"\n" not in raw and raw[:4] not in (PARQUET_MAGIC, ZIP_MAGIC):
            raw = raw.replace(b"\r", b"\n")  # classic Mac line breaks (Excel's "CSV (Macintosh)")
        if raw is not self.raw and self.path is not None:
            del self.__dict__["raw"]  # read from disk: drop the stored form, it can be read again
        return raw

    def release(self) -> None:
        """Forget the bytes of a file read from disk (read again if asked for);
        a reader calls it once parsed, before building the result."""
        if self.path is not None and self._raw is None:
            self.magic  # noqa: B018 - keep the magic bytes
            self.__dict__.pop("data", None)
            self.__dict__.pop("raw", None)
            self.__dict__.pop("mapped", None)  # closed when the last view of it goes

    @property
    def head(self) -> bytes:
        """The first 64 KiB of :attr:`data`, for sniffing."""
        return self.data[:65536]

    @cached_property
    def suffixes(self) -> list[str]:
        """Lower-case suffixes of the name, compression suffixes removed."""
        base = os.path.basename(self.name.replace("\\", "/").rstrip("/"))
        parts = [s.lower() for s in Path(base).suffixes]
        while parts and parts[-1] in COMPRESSION_SUFFIXES:
            parts.pop()
        return parts

    @property
    def extension(self) -> str:
        """The format extension (``.trec`` for ``run.trec.gz``), or ``""``."""
        return self.suffixes[-1] if self.suffixes else ""

    def default_name(self, known_extensions: frozenset[str] | set[str]) -> str:
        """The file name without its known extensions (``bm25-stem.trec.gz`` -> ``bm25-stem``)."""
        base = os.path.basename(self.name.replace("\\", "/").rstrip("/")) or "run"
        while True:
            stem, dot, ext = base.rpartition(".")
            if dot and stem and ("." + ext.lower()) in (set(known_extensions) | set(COMPRESSION_SUFFIXES)):
                base = stem
            else:
                return base

    # -- text helpers -----------------------------------------------------
    def text(self) -> str:
        """The data decoded as UTF-8, with a line-numbered error on bad bytes."""
        return decode(self.data, self.name)

    def line_of_offset(self, offset: int, data: bytes | None = None) -> int:
        return (self.data if data is None else data).count(b"\n", 0, offset) + 1

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` (without its line break), for messages."""
        data = self.data
        if line > 1000:  # many lines: find the line breaks with numpy
            breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            if line - 2 >= len(breaks):
                return ""
            start = int(breaks[line - 2]) + 1
        else:
            start = 0
            for _ in range(line - 1):
                start = data.find(b"\n", start)
                if start < 0:
                    return ""
                start += 1
        end = data.find(b"\n", start)
        chunk = data[start : end if end >= 0 else len(data)].rstrip(b"\r")
        return chunk.decode("utf-8", errors="replace")


def decode(data: bytes, name: str, *, first_line: int = 1) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + first_line
        raise ParseError(name, line, "UTF-8 text", f"byte 0x{data[exc.start]:02x}") from None


def nonempty_line_numbers(data: bytes, rows: np.ndarray | list[int]) -> np.ndarray:
    """1-based line numbers of the ``rows``-th (0-based) non-empty lines of ``data``.

    Used to turn the row index of a C-parsed table (which skips empty lines)
    back into a line number, without a Python loop over the file.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(buf)]))
    lengths = ends - starts
    mask = lengths > 0
    if data.find(b"\r") >= 0:  # a CRLF blank line holds a lone CR: still blank (find: an mmap's `in` is slow)
        lone = np.flatnonzero(lengths == 1)
        mask[lone[buf[starts[lone]] == 13]] = False
    nonempty = np.flatnonzero(mask)
    return nonempty[np.asarray(rows, dtype=np.int64)] + 1


READ_PIECE = 1 << 24
"""Bytes asked of a stream at a time beyond its announced size (16 MiB)."""


def read_capped(read: Callable[[int], Any], cap: int, size: int = 0) -> Any:
    """At most ``cap`` bytes from ``read`` (a file's or a stream's): the ``size`` a file announces and one byte more
    (to see it grew) in one call, the rest in pieces of :data:`READ_PIECE`. Never ``read(cap)`` at once: a file
    object reserves what it is asked for before it reads (16 GiB under the default limit), which an address-space
    limit (``ulimit -v``) refuses. A stream that gives ``str`` is read the same way."""
    first = read(min(cap, size + 1))
    if not first or len(first) <= size:
        return first
    pieces, total = [first], len(first)
    while total < cap:
        piece = read(min(READ_PIECE, cap - total))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return pieces[0][:0].join(pieces)


def open_source(source: Any, filename: str | None = None, limits: Limits | None = None) -> Source:
    """Wrap a path, ``bytes`` or binary file-like as a :class:`Source`.

    ``limits`` (default: :meth:`Limits.from_env`) caps the stored size here and
    the decompressed size when the data is first used.
    """
    if isinstance(source, Source):
        return source
    limits = resolve(limits)
    if isinstance(source, (bytes, bytearray, memoryview)):
        name = filename or "<bytes>"
        limits.check_size(name, memoryview(source).nbytes)
        return Source(name, raw=source if isinstance(source, bytes) else bytes(source), limits=limits)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = filename or str(source)
        try:
            exists = path.exists()
        except (OSError, ValueError):  # a name too long, a NUL byte in it
            exists = False
        if not exists:
            raise ParseError(name, None, "an existing file or folder", "nothing at that path")
        return Source(name, path=path, limits=limits)
    read = getattr(source, "read", None)
    if callable(read):
        stream_name = getattr(source, "name", None)
        name = filename or (stream_name if isinstance(stream_name, str) else "<stream>")
        content = read_capped(read, limits.max_bytes + 1)
        if isinstance(content, str):
            content = content.encode("utf-8")
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError(f"source.read() returned {type(content).__name__}; expected bytes")
        limits.check_size(name, memoryview(content).nbytes)
        return Source(name, raw=bytes(content), limits=limits)
    raise TypeError(f"source must be a path, bytes or a binary file-like object; got {type(source).__name__}")


# --------------------------------------------------------------------------
# decompression and re-encoding
# --------------------------------------------------------------------------
_INFLATE_INPUT = 1 << 16  # compressed bytes fed to zlib at a time
_INFLATE_STEP = 1 << 20


GZIP_CUT_SHORT = ("a complete gzip stream", "the data ends early (truncated file)")
"""What a loader says of a gzip stream that ends before its end, as ParseError's expected and found."""


def gunzip(raw: bytes, name: str, limits: Limits) -> bytes:
    """Inflate gzip member(s) in 1 MiB steps, stopping at ``limits.inflate_cap``, or as soon as the inflation meter
    of this thread refuses a step (:func:`ragmetrics.io.limits.metered_inflation`).

    A bomb stops after at most the cap has been produced (the pieces are
    dropped on the way out); a truncated or corrupt stream, or bytes after
    the last member that are not padding, are a ParseError. The input is fed
    in bounded slices (zlib's ``unconsumed_tail`` copies what it is given, so
    feeding the whole file made large files quadratic).
    """
    cap = limits.inflate_cap(len(raw))
    meter = inflation_meter()  # a server's budget for what uploads inflate to (ragmetrics.io.limits.metered_inflation)
    pieces: list[bytes] = []
    total = 0
    view = memoryview(raw)
    pos = 0
    while True:
        inflater = zlib.decompressobj(wbits=31)
        tail: bytes | memoryview = b""
        try:
            while not inflater.eof:
                if not tail:
                    if pos >= len(view):
                        raise ParseError(name, None, *GZIP_CUT_SHORT)
                    tail = view[pos : pos + _INFLATE_INPUT]
                    pos += len(tail)
                piece = inflater.decompress(tail, _INFLATE_STEP)
                tail = inflater.unconsumed_tail
                if piece:
                    total += len(piece)
                    if total > cap:
                        pieces.clear()
                        raise limits.inflate_error(name, len(raw), total)
                    if meter is not None:
                        try:
                            meter(name, len(piece))
                        except BaseException:
                            pieces.clear()
                            raise
                    pieces.append(piece)
        except zlib.error as exc:
            raise ParseError(name, None, "a valid gzip stream", f"corrupt data ({exc})") from None
        pos -= len(inflater.unused_data)  # bytes of the last slice past this member
        rest = view[pos:]
        if bytes(rest[:2]) == GZIP_MAGIC:
            continue  # another member
        if not bytes(rest).strip(b"\0"):  # end of data, or zero padding (tape archives)
            break
        raise ParseError(name, None, "nothing after the gzip data", f"{len(rest):,} more bytes")
    return b"".join(pieces)


def _looks_like_utf16(head: bytes) -> bool:
    """True when ``head`` reads as ASCII text in UTF-16 without its byte-order mark: a NUL in every other byte."""
    if len(head) < 8:
        return False
    even, odd = head[0::2], head[1::2]
    for zeros, text in ((odd, even), (even, odd)):  # little-endian, then big-endian
        if zeros.count(0) >= 0.9 * len(zeros) and text.count(0) <= 0.1 * len(text):
            return True
    return False


def from_utf16(raw: bytes, name: str) -> bytes:
    """UTF-16 text with a byte-order mark, as UTF-8 (a BOM-less UTF-8 result)."""
    encoding = "utf-16-le" if raw[:2] == b"\xff\xfe" else "utf-16-be"
    body = raw[2:]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        newline = "\n".encode(encoding)
        line = body.count(newline, 0, exc.start - exc.start % 2) + 1
        raise ParseError(
            name,
            line,
            f"{encoding.upper()} text (the file starts with its byte-order mark)",
            f"bytes {body[exc.start : exc.start + 2].hex(' ')}",
        ) from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # pragma: no cover - lone surrogates are refused by decode
        raise ParseError(name, text.count("\n", 0, exc.start) + 1, "UTF-16 text", "an unpaired surrogate") from None


# --------------------------------------------------------------------------
# row limits
# --------------------------------------------------------------------------
_BLANK_LINE = re.compile(rb"^[ \t\r]*$", re.MULTILINE)


def count_lines(data: bytes) -> int:
    """Lines of ``data`` (a last line without a line break counts)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def check_line_rows(
    source: Source, data: bytes | None = None, *, header_lines: int = 0, min_row_bytes: int = 1
) -> None:
    """``max_rows`` for a line-per-row file: counting line breaks is cheap;
    only a file that may exceed the limit has its blank lines counted.
    ``min_row_bytes``: the shortest valid row with its line break (a shorter line
    is refused by the parser anyway), so small enough files are not counted."""
    data = source.data if data is None else data
    limit = source.limits.max_rows
    if len(data) + 1 < (limit + 1) * min_row_bytes:
        return
    lines = count_lines(data) - header_lines
    if lines <= limit:
        return
    blank = sum(1 for _ in _BLANK_LINE.finditer(data))
    if not data or data.endswith(b"\n"):
        blank -= 1  # the empty string after the last line break is no line
    source.limits.check_rows(source.name, lines - blank)


class RowLines:
    """The line of each row of a table built from records that each give several rows (a nested JSON run): the
    first row and line of each record, a row's line found by bisection."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.lines: list[int] = []

    def add(self, first_row: int, line: int) -> None:
        self.starts.append(first_row)
        self.lines.append(line)

    def __call__(self, row: int) -> int | None:
        at = bisect.bisect_right(self.starts, row) - 1
        return self.lines[at] if at >= 0 else None


def _id_rule(source: Source, what: str) -> str:
    return f"{what} that is not empty, has no control character and at most {source.limits.max_id_bytes:,} bytes"


def at_lines(source: Source, line_of: Callable[[int], int | None], build: Callable[[], T]) -> T:
    """``build()`` (a Run or a Dataset made from the file's rows), its :class:`FieldError` said at the row's line,
    and its text fields held to ``max_text_bytes`` (a run's text at the row's line; a query's by its id)."""
    try:
        built = build()
    except FieldError as err:
        raise ParseError(
            source.name, line_of(err.row), _id_rule(source, f"a {err.column}"), f"one that {err.problem}"
        ) from None
    table = getattr(built, "table", None)
    if isinstance(table, pa.Table) and "text" in table.column_names:
        check_texts(source, table.select(["text"]), line_of)
    queries = getattr(built, "queries_table", None)
    if isinstance(queries, pa.Table):
        check_texts(source, queries, lambda row: None, ids=queries.column("query_id"))
    return built


def _text_rule(source: Source, what: str) -> str:
    return f"{what} of at most {source.limits.max_text_bytes:,} bytes (RAGMETRICS_MAX_TEXT_BYTES)"


def check_text(source: Source, line: int | None, value: str, what: str) -> str:
    """``value`` when it is within ``max_text_bytes``, else the error at ``line``."""
    if len(value) * 4 > source.limits.max_text_bytes:  # characters take at most 4 bytes: most texts need no encoding
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > source.limits.max_text_bytes:
            raise ParseError(source.name, line, _text_rule(source, what), f"{size:,} bytes ({shorten(value, 40)})")
    return value


def _zero_for_null(lengths: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Byte or item counts as numpy, a null's 0."""
    return to_numpy(fill_null(lengths, scalar_like(0, lengths.type)) if lengths.null_count else lengths)


def check_texts(
    source: Source,
    columns: pa.Table | Any,
    line_of: Callable[[int], int | None],
    *,
    ids: Any = None,
) -> None:
    """Every string column of ``columns`` (an Arrow table or a pandas frame) within ``max_text_bytes``; the first
    text over it is an error at ``line_of(row)`` (and names ``ids[row]``, a query's id, when given)."""
    table = columns if isinstance(columns, pa.Table) else pa.Table.from_pandas(columns, preserve_index=False)
    for name in table.column_names:
        column = table.column(name)
        kind = column.type.value_type if pa.types.is_list(column.type) else column.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) or name in ("query_id", "doc_id"):
            continue
        flat = elementwise("list_flatten", column) if pa.types.is_list(column.type) else column
        lengths = _zero_for_null(elementwise("binary_length", flat))
        if not len(lengths) or lengths.max() <= source.limits.max_text_bytes:
            continue
        row = int(lengths.argmax())
        longest = int(lengths[row])
        if pa.types.is_list(column.type):  # the row of the list that holds the item
            sizes = np.cumsum(_zero_for_null(elementwise("list_value_length", column)))
            row = int(np.searchsorted(sizes, row, side="right"))
        about = f" (query {shorten(str(ids[row]), 40)})" if ids is not None else ""
        raise ParseError(source.name, line_of(row), _text_rule(source, f"a {name}"), f"{longest:,} bytes{about}")


def check_id(source: Source, line: int | None, value: str, what: str) -> str:
    """``value`` when it is an acceptable id (see :func:`ragmetrics.foundation.ids.id_problem`), else the error at ``line``."""
    problem = id_text_problem(value, source.limits.max_id_bytes)
    if problem is not None:
        raise ParseError(source.name, line, _id_rule(source, what), f"{shorten(value)}, which {problem}")
    return value
