"""Opening an input: a path, raw bytes or a binary file-like, maybe gzipped.

A :class:`Source` knows the name used in error messages, hands out the
decompressed bytes (UTF-8 BOM removed) and offers the small helpers every
reader needs: UTF-8 decoding with a line-numbered error, the text of a given
line, and the line number of the n-th non-empty line.
"""

from __future__ import annotations

import gzip
import os
import zlib
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.errors import ParseError

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
PARQUET_MAGIC = b"PAR1"
BOM = b"\xef\xbb\xbf"
COMPRESSION_SUFFIXES = (".gz", ".gzip")


def shorten(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Source:
    """One input, as given to a loader.

    ``name`` is what error messages call it: the ``filename`` argument, else
    the path, else ``<bytes>`` / the stream's name.
    """

    def __init__(self, name: str, *, path: Path | None = None, raw: bytes | None = None) -> None:
        self.name = name
        self.path = path
        self._raw = raw

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
            return self.path.read_bytes()
        except IsADirectoryError:
            raise ParseError(self.name, None, "a file", "a folder") from None
        except OSError as exc:
            raise ParseError(self.name, None, "a readable file", exc.strerror or str(exc)) from None

    @cached_property
    def data(self) -> bytes:
        """Decompressed bytes with a leading UTF-8 BOM removed."""
        raw = self.raw
        if raw[:2] == GZIP_MAGIC:
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as exc:
                raise ParseError(self.name, None, "a complete gzip stream", str(exc)) from None
        if raw[:3] == BOM:
            raw = raw[3:]
        return raw

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


def nonempty_line_numbers(data: bytes, rows: np.ndarray) -> np.ndarray:
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
    if b"\r" in data:  # a CRLF blank line holds a lone CR: still blank
        lone = np.flatnonzero(lengths == 1)
        mask[lone[buf[starts[lone]] == 13]] = False
    nonempty = np.flatnonzero(mask)
    return nonempty[np.asarray(rows, dtype=np.int64)] + 1


def open_source(source: Any, filename: str | None = None) -> Source:
    """Wrap a path, ``bytes`` or binary file-like as a :class:`Source`."""
    if isinstance(source, Source):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Source(filename or "<bytes>", raw=bytes(source))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = filename or str(source)
        if not path.exists():
            raise ParseError(name, None, "an existing file or folder", "nothing at that path")
        return Source(name, path=path)
    read = getattr(source, "read", None)
    if callable(read):
        content = read()
        if isinstance(content, str):
            content = content.encode("utf-8")
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError(f"source.read() returned {type(content).__name__}; expected bytes")
        stream_name = getattr(source, "name", None)
        name = filename or (stream_name if isinstance(stream_name, str) else "<stream>")
        return Source(name, raw=bytes(content))
    raise TypeError(
        f"source must be a path, bytes or a binary file-like object; got {type(source).__name__}"
    )
