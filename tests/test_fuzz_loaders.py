"""Loaders under fuzzing: hostile inputs for every format family.

Each input is built from a valid seed of its family by structured changes
(values swapped for hostile ones: NaN, infinities, 5,000-digit numbers, empty
ids, wrong types, missing or extra columns, unpaired surrogates, deep nesting)
and byte-level ones (truncation, garbage, BOMs, CRLF and lone CRs, latin-1 and
UTF-16 re-encodings, huge lines, NUL bytes, gzip wrapping, truncated or
corrupted gzip, gzip and zip bombs). The property, for every input:

* the loader returns a Run / Dataset, or raises a RagMetricsError (in practice
  a ParseError) whose message names the file, with a line number inside the
  file when it gives one; never another exception type, never a warning other
  than RagMetricsWarning (a numpy cast warning is silent corruption);
* it finishes within ``RAGMETRICS_FUZZ_SECONDS`` (default 5 s; an alarm turns
  a hang into a failure).

The generator draws through a tiny interface (:class:`Draw`) so the same code
runs under hypothesis (the tests here, shrinking included), under a plain
random loop (``python -m tests.test_fuzz_loaders FAMILY N``) and under
atheris (``tests/test_fuzz_atheris.py``).

``RAGMETRICS_FUZZ_EXAMPLES`` sets the examples per family (default 200,
derandomized: about 30 s for the 8 families on one core); the larger run is
``RAGMETRICS_FUZZ_EXAMPLES=10000 RAGMETRICS_FUZZ_REPORT=fuzz.txt python -m
pytest tests/test_fuzz_loaders.py -n 2`` (random seeds; the report file gets
one line per family: inputs, time, refused, loaded).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import signal
import struct
import sys
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.limits import Limits, MiB

EXAMPLES = int(os.environ.get("RAGMETRICS_FUZZ_EXAMPLES", "200"))
SECONDS = float(os.environ.get("RAGMETRICS_FUZZ_SECONDS", "5"))
# small caps keep a bomb's work short; a few inputs also meet tiny row / query caps
LIMITS = Limits(max_bytes=32 * MiB, max_ratio=100)
TINY = Limits(max_bytes=32 * MiB, max_rows=5, max_queries=2)


# --------------------------------------------------------------------------
# drawing
# --------------------------------------------------------------------------
class Draw:
    """What a generator may ask for; drivers implement :meth:`int` and :meth:`blob`.

    ``hostility``: percent chance that a generated field is hostile (set per
    input, often 0 so that valid-but-unusual files reach the deep paths)."""

    hostility = 4

    def int(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def blob(self, max_size: int) -> bytes:
        raise NotImplementedError

    def choice(self, options: Any) -> Any:
        options = list(options)
        return options[self.int(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        return self.int(0, 99) < percent


class HypothesisDraw(Draw):
    def __init__(self, data: Any) -> None:
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def blob(self, max_size: int) -> bytes:
        return self.data.draw(st.binary(max_size=max_size))


class RandomDraw(Draw):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def blob(self, max_size: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(0, max_size))


# --------------------------------------------------------------------------
# hostile values
# --------------------------------------------------------------------------
HUGE_DIGITS = "7" * 5000  # beyond Python's 4,300-digit int parsing limit
HOSTILE_TOKENS = [
    b"",
    b" ",
    b"\t",
    b"NaN",
    b"nan",
    b"-nan",
    b"inf",
    b"-inf",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-1e400",
    b"1e-400",
    b"99999999999999999999",
    b"-9223372036854775809",
    b"9223372036854775807",
    b"1" * 400,
    HUGE_DIGITS.encode(),
    b"0x1F",
    b"1,5",
    b"1_000",
    b"+1",
    b"-0",
    b".5",
    b"5.",
    b"1e",
    b"--1",
    b"2.0",
    b"2.5",
    b"true",
    b"null",
    b"None",
    b"[]",
    b"{}",
    b'"',
    b"'",
    b"\\",
    b",",
    b";",
    b"#",
    b"#x",
    b"=1+1",
    b"@SUM(A1)",
    b"\x00",
    b"\x1f\x8b",
    b"PK\x03\x04",
    b"PAR1",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xe9",
    b"caf\xe9",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc2\xa0",
    b"\xe2\x80\xa8",
    b"\x85",
    b"\r",
    b"\r\n",
    b"\n",
    "文档".encode(),
    "é".encode(),
    "😀".encode(),
    b"\\ud800",
    b"\\udfff\\ud800",
    b"\x0b\x0c",
]
NUMBERS = [b"1", b"0", b"-1", b"2", b"3", b"1.5", b"-2.25", b"3e-5", b".5", b"1E10", b"0.000001", b"12"]
IDS = [b"q1", b"q2", b"1", b"2", b"d1", b"d2", b"MED-10", "文档".encode(), "é".encode(), b"d#1", b"a.b"]


def hostile_token(d: Draw) -> bytes:
    roll = d.int(0, 9)
    if roll == 0:
        return d.blob(12)
    if roll == 1:
        return d.choice([b"x", b"9", b" ", b"\t", b",", b'"', b"[", b"{"]) * d.int(100, 20000)
    if roll == 2:  # long almost-numbers: backtracking regexes go quadratic on these
        return (
            d.choice([b"", b"-", b"+", b"."])
            + b"1" * d.int(1000, 60000)
            + d.choice([b"x", b".", b"e", b"e+", b"..", b"1x"])
        )
    return d.choice(HOSTILE_TOKENS)


def hostile_value(d: Draw) -> Any:
    """A JSON-able value that breaks expectations (markers are replaced after dumping)."""
    return d.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            1.5,
            2**63,
            -(2**64),
            10**300,
            -0.0,
            float("nan"),
            float("inf"),
            float("-inf"),
            "",
            " ",
            "\t",
            "nan",
            "inf",
            "1e999",
            "NaN",
            "é",
            "文档",
            "\ud800",
            "\udfff",
            "\ud83d\ude00",
            "=1+1",
            "x" * d.int(1, 3000),
            [],
            {},
            [[]],
            {"a": {"b": [1]}},
            ["a", 1, None],
            "__HUGE__",
            "__DEEP__",
            3.0,
            "7",
        ]
    )


def _dumps(value: Any, d: Draw) -> bytes:
    text = json.dumps(value, ensure_ascii=d.chance(50), allow_nan=True, indent=d.choice([None, None, 2]))
    text = text.replace('"__HUGE__"', HUGE_DIGITS)
    text = text.replace('"__DEEP__"', "[" * 3000 + "]" * 3000 if d.chance(50) else '{"a":' * 500 + "1" + "}" * 500)
    return text.encode("utf-8", errors="surrogatepass")


def mutate_json(d: Draw, value: Any) -> Any:
    """Replace, delete or rename something somewhere in a JSON value."""
    if d.chance(20) or not isinstance(value, (dict, list)) or not value:
        return hostile_value(d)
    if isinstance(value, list):
        value = list(value)
        i = d.int(0, len(value) - 1)
        op = d.int(0, 9)
        if op == 0:
            del value[i]
        elif op == 1:
            value.insert(i, value[i])
        else:
            value[i] = mutate_json(d, value[i])
        return value
    value = dict(value)
    key = d.choice(sorted(value))
    op = d.int(0, 9)
    if op == 0:
        del value[key]
    elif op == 1:
        value[
            d.choice(
                [
                    "query_id",
                    "qid",
                    "query",
                    "id",
                    "_id",
                    "doc_id",
                    "score",
                    "retrieved",
                    "relevant_docs",
                    "",
                    " ",
                    "\ud800",
                    "text",
                ]
            )
        ] = value.pop(key)
    elif op == 2:
        value[d.choice(["extra", "metadata", "score", "rank", "chunk_id", "source_doc"])] = hostile_value(d)
    else:
        value[key] = mutate_json(d, value[key])
    return value


# --------------------------------------------------------------------------
# byte-level mutations
# --------------------------------------------------------------------------
def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _reencode(data: bytes, encoding: str) -> bytes:
    return data.decode("utf-8", errors="replace").encode(encoding, errors="replace")


def mutate_bytes(d: Draw, data: bytes, *, delimiters: bytes = b" \t,") -> bytes:
    op = d.int(0, 21)
    n = len(data)
    if op == 0:
        return data[: d.int(0, n)]
    if op == 1:
        a = d.int(0, n)
        return data[:a] + data[d.int(a, n) :]
    if op == 2:
        at = d.int(0, n)
        return data[:at] + hostile_token(d) + data[at:]
    if op in (3, 4, 5):  # replace a field
        lines = _lines(data)
        i = d.int(0, len(lines) - 1)
        parts = lines[i].split(d.choice(list(delimiters)).to_bytes(1, "big"))
        j = d.int(0, len(parts) - 1)
        parts[j] = hostile_token(d)
        lines[i] = (
            delimiters[:1].join(parts) if d.chance(20) else d.choice(list(delimiters)).to_bytes(1, "big").join(parts)
        )
        return b"\n".join(lines)
    if op == 6:  # a line with a field more or less
        lines = _lines(data)
        i = d.int(0, len(lines) - 1)
        sep = d.choice(list(delimiters)).to_bytes(1, "big")
        parts = lines[i].split(sep)
        if d.chance(50) and len(parts) > 1:
            del parts[d.int(0, len(parts) - 1)]
        else:
            parts.insert(d.int(0, len(parts)), d.choice(IDS + NUMBERS))
        lines[i] = sep.join(parts)
        return b"\n".join(lines)
    if op == 7:  # duplicate lines
        lines = _lines(data)
        i = d.int(0, len(lines) - 1)
        lines[i:i] = [lines[i]] * d.int(1, 50)
        return b"\n".join(lines)
    if op == 8:
        a, b = d.choice(list(delimiters)), d.choice(list(delimiters))
        return data.replace(bytes([a]), bytes([b]))
    if op == 9:
        return data.replace(b"\n", b"\r\n")
    if op == 10:
        return data.replace(b"\n", b"\r")
    if op == 11:
        return b"\xef\xbb\xbf" * d.int(1, 2) + data
    if op == 12:
        encoding = d.choice(["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
        return _reencode(data, encoding)
    if op == 13:
        return _reencode(data, d.choice(["latin-1", "cp1252"]))
    if op == 14:  # a huge line
        lines = _lines(data)
        lines.insert(d.int(0, len(lines)), d.choice([b"x", b"q1 ", b"a,", b"\t", b"{", b'"']) * d.int(1000, 400_000))
        return b"\n".join(lines)
    if op == 15:  # many lines
        return data * d.int(2, max(2, 200_000 // max(n, 1)))
    if op == 16:
        at = d.int(0, n)
        return data[:at] + d.choice([b"[", b'{"a":', b'{"q":{']) * d.int(50, 50_000) + data[at:]
    if op == 17:
        at = d.int(0, n)
        return data[:at] + b"\x00" * d.int(1, 8) + data[at:]
    if op == 18:
        return d.blob(2000)
    if op == 19:
        return d.choice(
            [
                b"",
                b"\n",
                b" \t\r\n\n",
                b"#\n",
                b"\xef\xbb\xbf",
                b"\xef\xbb\xbf\n",
                b"\x00",
                b"[]",
                b"{}",
                b"null",
                b"[[]]",
            ]
        )
    if op == 20:  # flip a few bytes
        out = bytearray(data)
        for _ in range(d.int(1, 4)):
            if out:
                out[d.int(0, len(out) - 1)] = d.int(0, 255)
        return bytes(out)
    # swap two lines
    lines = _lines(data)
    i, j = d.int(0, len(lines) - 1), d.int(0, len(lines) - 1)
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def deflate_repeated(parts: list[tuple[bytes, int]]) -> tuple[bytes, int, int]:
    """Raw deflate of ``block * times`` for each part, built in milliseconds: each
    block is compressed once and ends with a full flush, so its bytes can be
    repeated. Returns (deflate data, CRC-32, uncompressed size)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    body, crc, size = [], 0, 0
    for block, times in parts:
        segment = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
        body.append(segment * times)
        for _ in range(times):
            crc = zlib.crc32(block, crc)
        size += len(block) * times
    body.append(compressor.flush())
    return b"".join(body), crc, size


def gzip_bomb(block: bytes, times: int) -> bytes:
    body, crc, size = deflate_repeated([(block, times)])
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<II", crc, size & 0xFFFFFFFF)


def zip_bomb(name: str, parts: list[tuple[bytes, int]]) -> bytes:
    """A one-member zip archive (deflate) holding the repeated parts."""
    body, crc, size = deflate_repeated(parts)
    raw_name = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(body), size, len(raw_name), 0) + raw_name
    central = (
        struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(body), size, len(raw_name), 0, 0, 0, 0, 0, 0
        )
        + raw_name
    )
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    return local + body + central + end


@cache
def bombs() -> tuple[bytes, ...]:
    """1 GiB of zeros and 1 GiB of valid TREC run lines, gzipped (~1 MB each),
    and a zip holding 1 GiB of valid BEIR qrels."""
    run_block = b"q1 Q0 d1 1 1.0 t\n" * (1 << 20)  # 17 MiB
    qrels_block = b"q1\td1\t1\n" * (2 << 20)  # 16 MiB
    return (
        gzip_bomb(b"\0" * (16 * MiB), 64),
        gzip_bomb(run_block, 60),
        zip_bomb("qrels/test.tsv", [(b"query-id\tcorpus-id\tscore\n", 1), (qrels_block, 64)]),
    )


def wrap(d: Draw, data: bytes) -> bytes:
    """Maybe gzip it (and break the gzip), or swap in a bomb."""
    roll = d.int(0, 99)
    if roll < 70:
        return data
    if roll < 73:
        bomb = d.choice(bombs()[:2])
        return bomb if d.chance(70) else bomb[: d.int(10, len(bomb))]
    packed = gzip.compress(data, compresslevel=d.int(1, 9), mtime=0)
    op = d.int(0, 7)
    if op == 0:
        return packed[: d.int(0, len(packed))]
    if op == 1:
        out = bytearray(packed)
        out[d.int(10, len(out) - 1)] ^= 1 << d.int(0, 7)
        return bytes(out)
    if op == 2:
        return packed + d.choice([b"\0" * 8, b"garbage", gzip.compress(data), b"\x1f\x8b", d.blob(20)])
    if op == 3:
        return gzip.compress(packed)  # gzip in gzip: the inner one is data
    return packed


# --------------------------------------------------------------------------
# families: valid seeds, structured mutations, how to load
# --------------------------------------------------------------------------
def _field(d: Draw, pool: list[bytes]) -> bytes:
    return hostile_token(d) if d.hostility and d.chance(d.hostility) else d.choice(pool)


def gen_trec_run(d: Draw) -> bytes:
    lines = []
    for _ in range(d.int(0, 25)):
        roll = d.int(0, 30)
        if roll == 0:
            lines.append(b"# " + d.choice(IDS))
            continue
        if roll == 1:
            lines.append(b"")
            continue
        fields = [
            _field(d, IDS),
            d.choice([b"Q0", b"0", b"q0"]),
            _field(d, IDS),
            _field(d, NUMBERS[:5]),
            _field(d, NUMBERS),
            _field(d, [b"run", b"bm25"]),
        ]
        if d.chance(10):
            fields = fields[: d.int(0, 5)] if d.chance(50) else fields + [d.choice(IDS)] * d.int(1, 3)
        lines.append(d.choice([b" ", b"\t", b"  "]).join(fields))
    return b"\n".join(lines) + d.choice([b"\n", b""])


def gen_trec_qrels(d: Draw) -> bytes:
    lines = []
    for _ in range(d.int(0, 25)):
        if d.chance(4):
            lines.append(d.choice([b"", b"# c"]))
            continue
        fields = [_field(d, IDS), d.choice([b"0", b"Q0"]), _field(d, IDS), _field(d, [b"0", b"1", b"2", b"-1", b"3"])]
        if d.chance(10):
            fields = fields[: d.int(0, 3)] if d.chance(50) else fields + [b"x"] * d.int(1, 2)
        lines.append(d.choice([b" ", b"\t"]).join(fields))
    return b"\n".join(lines) + d.choice([b"\n", b""])


def _str_id(d: Draw) -> Any:
    return d.choice(["q1", "q2", "d1", "d2", "文档", "é", 3, "MED-10"])


def gen_evalset(d: Draw) -> bytes:
    records = []
    for i in range(d.int(0, 8)):
        record: dict[str, Any] = {"query": d.choice(["what is x?", "é?", "文档?", f"query {i}"])}
        if d.chance(50):
            record["query_id"] = d.choice([f"q{i}", i, f"q{i % 3}"])
        if d.chance(70):
            docs = [_str_id(d) for _ in range(d.int(0, 4))]
            record["relevant_docs"] = docs if d.chance(60) else {str(x): d.choice([0, 1, 2, -1, 2.0]) for x in docs}
        for key in ("expected_answer", "category", "difficulty"):
            if d.chance(40):
                record[key] = d.choice(["a", "easy", "negative", 3])
        if d.chance(30):
            record["expected_keywords"] = d.choice([["a", "b"], "a", []])
        records.append(record)
    if d.chance(3):  # a new key on every record: each one is a column for every query
        records += [{"query": f"extra {i}", f"k{i}": i} for i in range(d.int(100, 3000))]
    value: Any = records
    for _ in range(d.int(0, 3)):
        value = mutate_json(d, value)
    if isinstance(value, list) and d.chance(50):
        return b"\n".join(_dumps(v, d).replace(b"\n", b" ") for v in value) + b"\n"
    return _dumps(value, d)


def gen_jsonl_run(d: Draw) -> bytes:
    records: list[Any] = []
    flat = d.chance(30)
    for i in range(d.int(0, 6)):
        if flat:
            for j in range(d.int(1, 4)):
                records.append(
                    {
                        d.choice(["query_id", "qid", "query"]): f"q{i}",
                        d.choice(["doc_id", "docid", "chunk_id"]): f"d{j}",
                        "score": d.choice([1.0, 2, 0.5, -1]),
                    }
                )
            continue
        record: dict[str, Any] = {d.choice(["query_id", "qid", "query"]): d.choice([f"q{i}", i, "what?"])}
        scored = d.chance(60)
        items: list[Any] = []
        for j in range(d.int(0, 5)):
            if d.chance(30) and not scored:
                items.append(d.choice([f"d{j}", j]))
                continue
            item: dict[str, Any] = {d.choice(["doc_id", "id", "docid", "chunk_id"]): d.choice([f"d{j}", j])}
            if scored:
                item["score"] = d.choice([1.0, 0.5, 3, -2.5])
            if d.chance(30):
                item["text"] = "chunk text"
            if d.chance(20):
                item[d.choice(["source_doc", "document_id", "chunk_id", "doc_id"])] = f"doc{j}"
            items.append(item)
        record["retrieved"] = items
        records.append(record)
    if flat and d.chance(5):  # a new key on every row
        records += [{"query_id": "q", "doc_id": f"d{i}", "score": 1, f"k{i}": i} for i in range(d.int(100, 3000))]
    value: Any = records
    for _ in range(d.int(0, 3)):
        value = mutate_json(d, value)
    if isinstance(value, list) and d.chance(80):
        return b"\n".join(_dumps(v, d).replace(b"\n", b" ") for v in value) + b"\n"
    return _dumps(value, d)


def gen_dict_json(d: Draw) -> bytes:
    labels = d.chance(50)
    value: Any = {
        f"q{i}": {
            f"d{j}": (d.choice([0, 1, 2, -1]) if labels else d.choice([1.5, 0.25, 3, -1.0])) for j in range(d.int(0, 5))
        }
        for i in range(d.int(0, 5))
    }
    for _ in range(d.int(0, 3)):
        value = mutate_json(d, value)
    return _dumps(value, d)


TABLE_HEADERS = [
    "query_id",
    "qid",
    "query",
    "Topic",
    "doc_id",
    "docno",
    "chunk_id",
    "corpus-id",
    "query-id",
    "score",
    "rank",
    "relevance",
    "label",
    "text",
    "source_doc",
    "category",
    "question",
    "x",
    "",
    "score",
    "Doc ID",
]


def gen_table(d: Draw) -> bytes:
    sep = d.choice([b",", b"\t"])
    qrels = d.chance(50)
    names = ["query_id", "doc_id", "relevance" if qrels else "score"]
    if d.chance(30):
        names = [d.choice(TABLE_HEADERS) for _ in range(d.int(1, 5))]
    elif d.chance(30):
        names.append(d.choice(["rank", "text", "category", "source_doc", "chunk_id"]))
    rows = [sep.join(n.encode() for n in names)]
    for _ in range(d.int(0, 20)):
        cells = []
        for name in names:
            pool = NUMBERS if name in ("score", "rank", "relevance", "label") else IDS
            cell = _field(d, pool)
            if d.chance(5):
                cell = b'"' + cell.replace(b'"', b'""') + d.choice([b'"', b"", b'\n"', b'"x'])
            cells.append(cell)
        if d.chance(5):
            cells = cells[: d.int(0, len(cells))] if d.chance(50) else cells + [b"extra"]
        rows.append(sep.join(cells))
    return b"\n".join(rows) + d.choice([b"\n", b"", b"\n\n"])


def _parquet_column(d: Draw, rows: int) -> pa.Array:
    kind = d.int(0, 14)
    ids = ["q1", "q2", "d1", "é", "", " ", None]
    if kind <= 3:
        return pa.array([d.choice(ids[:4]) for _ in range(rows)], pa.string())
    if kind == 4:
        return pa.array([d.choice(ids) for _ in range(rows)], pa.string())
    if kind == 5:
        return pa.array([d.choice([0, 1, 2, -1, 2**62, None]) for _ in range(rows)], pa.int64())
    if kind == 6:
        return pa.array(
            [d.choice([0.5, 1.0, float("nan"), float("inf"), -0.0, 1e308, None]) for _ in range(rows)], pa.float64()
        )
    if kind == 7:
        return pa.array([d.chance(50) for _ in range(rows)], pa.bool_())
    if kind == 8:
        return pa.array([[d.choice(ids[:3])] for _ in range(rows)], pa.list_(pa.string()))
    if kind == 9:
        return pa.array([{"a": 1} for _ in range(rows)], pa.struct([("a", pa.int64())]))
    if kind == 10:
        return pa.array([d.choice([b"\xff\xfe", b"d1", b"\xe9"]) for _ in range(rows)], pa.binary())
    if kind == 11:
        return pa.array([d.choice(ids[:3]) for _ in range(rows)], pa.string()).dictionary_encode()
    if kind == 12:
        return pa.nulls(rows)
    if kind == 13:
        return pa.array([d.choice([0, 1, 2**40]) for _ in range(rows)], pa.timestamp("s"))
    return pa.array([d.choice(["1.5", "2", "x", "nan", ""]) for _ in range(rows)], pa.large_string())


def gen_parquet(d: Draw) -> bytes:
    rows = d.int(0, 12)
    standard = d.chance(50)
    names = (
        ["query_id", "doc_id", d.choice(["score", "relevance", "rank"])]
        if standard
        else [d.choice(TABLE_HEADERS) for _ in range(d.int(0, 5))]
    )
    if d.chance(20):
        names.append(d.choice(TABLE_HEADERS))  # may repeat a name: Parquet allows it
    columns = []
    for name in names:
        if standard and d.chance(75):
            if name in ("score", "rank", "relevance"):
                col = pa.array(
                    [d.choice([1.0, 2.0, 0.5]) if name == "score" else d.choice([1, 2, 0]) for _ in range(rows)]
                )
            else:
                col = pa.array([d.choice(["q1", "q2", "d1", "d2"]) for _ in range(rows)], pa.string())
        else:
            col = _parquet_column(d, rows)
        columns.append(col)
    table = pa.Table.from_arrays(columns, names=names) if names else pa.table({})
    out = io.BytesIO()
    pq.write_table(
        table, out, compression=d.choice(["snappy", "zstd", "gzip", "none"]), row_group_size=d.choice([None, 1, 3])
    )
    data = out.getvalue()
    roll = d.int(0, 9)
    if roll < 3:
        return mutate_bytes(d, data, delimiters=b"\0")
    if roll == 3:  # flip a byte in the footer or the pages
        buf = bytearray(data)
        if len(buf) > 12:
            buf[d.int(4, len(buf) - 9)] = d.int(0, 255)
        return bytes(buf)
    return data


BEIR_MEMBERS = [
    "corpus.jsonl",
    "queries.jsonl",
    "qrels/test.tsv",
    "qrels/dev.tsv",
    "qrels.tsv",
    "qrels.txt",
    "qrels",
    "queries.tsv",
    "corpus.json",
]


def gen_beir_zip(d: Draw) -> bytes:
    if d.chance(3):
        return bombs()[2]
    qids = ["q1", "q2", "3"]
    docs = ["d1", "d2", "文档"]
    members: dict[str, bytes] = {
        "qrels/test.tsv": b"query-id\tcorpus-id\tscore\n"
        + b"".join(f"{d.choice(qids)}\t{d.choice(docs)}\t{d.choice([0, 1, 2])}\n".encode() for _ in range(d.int(0, 6))),
        "queries.jsonl": b"".join(
            json.dumps({"_id": q, "text": f"text {q}", "metadata": {}}).encode() + b"\n" for q in qids
        ),
        "corpus.jsonl": b"".join(
            json.dumps({"_id": doc, "title": "t", "text": "x"}, ensure_ascii=False).encode() + b"\n" for doc in docs
        ),
    }
    if d.chance(20):
        members["qrels.tsv"] = gen_trec_qrels(d)
        if d.chance(50):
            del members["qrels/test.tsv"]
    for _ in range(d.int(0, 3)):
        name = d.choice(sorted(members))
        members[name] = mutate_bytes(d, members[name], delimiters=b"\t ,")
    if d.chance(10):
        members[d.choice(BEIR_MEMBERS)] = d.choice(bombs()[:2])  # a gzipped member, inflated by the loader
    if d.chance(10):
        del members[d.choice(sorted(members))]
    prefix = d.choice(["", "", "scifact/", "a/b/", "../"])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, content in members.items():
            method = d.choice(
                [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
            )
            zf.writestr(prefix + name, content, compress_type=method)
    data = out.getvalue()
    roll = d.int(0, 9)
    if roll == 0:
        return data[: d.int(0, len(data))]
    if roll == 1:
        buf = bytearray(data)
        buf[d.int(0, len(buf) - 1)] = d.int(0, 255)
        return bytes(buf)
    if roll == 2:  # mark the first member encrypted, or give it an unknown compression method
        buf = bytearray(data)
        if d.chance(50):
            buf[6] |= 1
        else:
            buf[8:10] = (99).to_bytes(2, "little")
            central = data.find(b"PK\x01\x02")
            if central >= 0:
                buf[central + 10 : central + 12] = (99).to_bytes(2, "little")
        return bytes(buf)
    return data


@dataclass(frozen=True)
class Family:
    name: str
    generate: Callable[[Draw], bytes]
    kinds: tuple[str, ...]  # "run" / "dataset", first is the usual one
    filenames: tuple[str | None, ...]
    delimiters: bytes = b" \t,"
    wrap: bool = True


FAMILIES = {
    f.name: f
    for f in (
        Family(
            "trec_run",
            gen_trec_run,
            ("run", "dataset"),
            ("run.trec", "run.txt", "run.tsv", None, "run.trec.gz", "r.json"),
            b" \t",
        ),
        Family(
            "trec_qrels",
            gen_trec_qrels,
            ("dataset", "run"),
            ("q.qrels", "qrels.txt", "qrels.tsv", None, "q.qrels.gz", "q.csv"),
            b" \t",
        ),
        Family(
            "evalset",
            gen_evalset,
            ("dataset", "run"),
            ("eval.json", "eval.jsonl", None, "eval.jsonl.gz", "eval.txt"),
            b",:",
        ),
        Family("jsonl_run", gen_jsonl_run, ("run", "dataset"), ("run.jsonl", "run.json", None, "run.ndjson.gz"), b",:"),
        Family("table", gen_table, ("run", "dataset"), ("t.csv", "t.tsv", None, "t.txt", "t.csv.gz", "t.tab"), b",\t"),
        Family("parquet", gen_parquet, ("run", "dataset"), ("t.parquet", None, "t.pq", "t.csv"), b"\0", wrap=False),
        Family("dict_json", gen_dict_json, ("run", "dataset"), ("d.json", None, "d.json.gz"), b",:"),
        Family("beir_zip", gen_beir_zip, ("dataset",), ("beir.zip", None, "scifact.zip"), b"\0", wrap=False),
    )
}


@dataclass
class Case:
    family: str
    data: bytes
    kind: str
    filename: str | None
    limits: Limits
    extra: dict[str, bytes]

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        shown = self.data if len(self.data) <= 400 else self.data[:400] + b"...(%d bytes)" % len(self.data)
        return f"Case({self.family}, kind={self.kind}, filename={self.filename!r}, limits={self.limits}, extra={sorted(self.extra)}, data={shown!r})"


QUERIES = [
    b'{"_id": "q1", "text": "t"}\n{"_id": "d1", "title": "", "text": "x"}\n',
    b"id\ttext\nq1\thello\n",
    b"q1\thello\n",
    b"query_id,text,query\nq1,a,b\n",
    b'[{"query_id": "q1", "query": "a", "extra": [1]}]',
]
MAPPINGS = [
    b"chunk_id,doc_id\nd1#1,d1\nd2,D2\n",
    b"chunk_id\tsource_doc\nd1\tdoc\n",
    b'{"d1": "doc1", "d2": "doc2"}',
    b'{"chunk_id": "d1", "doc_id": "x"}\n{"chunk_id": "d2", "doc_id": "y"}\n',
    b'[{"chunk_id": "d1", "doc_id": "x"}]',
]


def make_case(d: Draw, family: Family) -> Case:
    d.hostility = d.choice([0, 0, 1, 4])
    data = family.generate(d)
    for _ in range(d.int(0, 2) if d.chance(50) else 0):
        data = mutate_bytes(d, data, delimiters=family.delimiters)
    if family.wrap:
        data = wrap(d, data)
    kind = family.kinds[0] if d.chance(85) else d.choice(family.kinds)
    extra: dict[str, bytes] = {}
    if kind == "dataset" and family.name in ("evalset", "trec_qrels", "table") and d.chance(15):
        role = d.choice(["queries", "corpus"])
        seed = d.choice(QUERIES) if role == "queries" else b'{"_id": "d1", "title": "", "text": "x"}\n{"_id": "d2"}\n'
        extra[role] = mutate_bytes(d, seed) if d.chance(70) else seed
    if kind == "run" and family.name in ("trec_run", "jsonl_run", "table") and d.chance(10):
        mapping = d.choice(MAPPINGS)
        extra["chunk mapping"] = mutate_bytes(d, mapping) if d.chance(70) else mapping
    return Case(family.name, data, kind, d.choice(family.filenames), TINY if d.chance(5) else LIMITS, extra)


# --------------------------------------------------------------------------
# the property
# --------------------------------------------------------------------------
class Hang(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread after ``seconds`` (an alarm; no-op elsewhere)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds * 3)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _line_count(data: bytes) -> int | None:
    """Lines of the data as the loader sees it (None when it cannot be told cheaply)."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, 64 * MiB)
        except zlib.error:
            return None
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return None
    if b"\r" in data and b"\n" not in data:  # CR-only line breaks are read as LFs
        return data.count(b"\r") + 1
    return data.count(b"\n") + 1


def check_case(case: Case) -> str:
    """Load the case; return "ok" / "error"; raise AssertionError on a broken property."""
    name = case.filename or "<bytes>"
    kwargs: dict[str, Any] = {"filename": case.filename, "limits": case.limits}
    if case.kind == "dataset":
        kwargs.update(case.extra)
    elif "chunk mapping" in case.extra:
        kwargs["chunk_mapping"] = case.extra["chunk mapping"]
    loader = load_run if case.kind == "run" else load_dataset
    start = time.perf_counter()
    outcome = "ok"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with deadline(SECONDS):
                result = loader(case.data, **kwargs)
        except Hang as exc:
            raise AssertionError(f"{case!r} hung: {exc}") from None
        except RagMetricsError as err:
            outcome = "error"
            message = str(err)
            names = [name] + [f"<{role}>" for role in case.extra]
            assert any(n in message for n in names), f"the message does not name {names}: {message}"
            if isinstance(err, ParseError):
                assert any(err.source.startswith(n) for n in names), err.source
                if err.line is not None:
                    assert err.line >= 1, message
                    lines = _line_count(case.data)
                    if lines is not None and err.source == name and not name.startswith("<"):
                        assert err.line <= lines, f"line {err.line} of {lines}: {message}"
            assert len(message) < 2000, f"a {len(message):,}-character message: {message[:300]}"
        else:
            assert isinstance(result, Run if case.kind == "run" else Dataset)
    elapsed = time.perf_counter() - start
    assert elapsed < SECONDS, f"{elapsed:.1f} s for one input (limit {SECONDS} s)"
    stray = [w for w in caught if not issubclass(w.category, RagMetricsWarning)]
    assert not stray, f"warning {stray[0].category.__name__}: {stray[0].message}"
    return outcome


# --------------------------------------------------------------------------
# hypothesis tests, one per family
# --------------------------------------------------------------------------
COUNTS: dict[str, dict[str, int]] = {}


def _fuzz(family: str) -> None:
    counts = COUNTS.setdefault(family, {"ok": 0, "error": 0})

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=EXAMPLES <= 500,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def run(data: Any) -> None:
        counts[check_case(make_case(HypothesisDraw(data), FAMILIES[family]))] += 1

    start = time.perf_counter()
    run()
    total = counts["ok"] + counts["error"]
    line = (
        f"fuzz {family}: {total:,} inputs in {time.perf_counter() - start:.0f} s, "
        f"{counts['error']:,} refused with a ParseError, {counts['ok']:,} loaded"
    )
    print("\n" + line)
    report = os.environ.get("RAGMETRICS_FUZZ_REPORT")
    if report:
        with open(report, "a") as out:
            out.write(line + "\n")
    assert total >= EXAMPLES * 0.9, f"only {total} inputs ran"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_fuzz_loader(family: str) -> None:
    _fuzz(family)


# --------------------------------------------------------------------------
# a plain random driver, for finding many defects at once
# --------------------------------------------------------------------------
def random_campaign(family: str, n: int, seed: int = 0) -> dict[str, list[str]]:
    import traceback

    failures: dict[str, list[str]] = {}
    for i in range(n):
        rng = random.Random(f"{family}-{seed}-{i}")
        case = make_case(RandomDraw(rng), FAMILIES[family])
        try:
            check_case(case)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(exc.__traceback__)
            where = next(
                (f"{os.path.basename(fr.filename)}:{fr.lineno}" for fr in reversed(tb) if "ragmetrics" in fr.filename),
                "?",
            )
            key = f"{type(exc).__name__} at {where}: {str(exc).splitlines()[0][:150] if str(exc) else ''}"
            failures.setdefault(key[:220], []).append(f"{i}: {case!r}"[:600])
    return failures


if __name__ == "__main__":
    fams = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] != "all" else list(FAMILIES)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    for fam in fams:
        t0 = time.perf_counter()
        found = random_campaign(fam, count, seed)
        print(f"== {fam}: {count} inputs in {time.perf_counter() - t0:.1f} s, {len(found)} distinct failures")
        for key, examples in sorted(found.items(), key=lambda kv: -len(kv[1])):
            print(f"  [{len(examples)}] {key}\n      e.g. {examples[0][:500]}")
