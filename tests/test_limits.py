"""Limits: decompression caps (gzip and zip bombs), row, query and size limits,
their messages and environment variables, and memory for a file at the limit."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmetrics.foundation.errors import ParseError, RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.limits import ENV_VARS, LimitError, Limits, MiB, parse_size
from tests.test_fuzz_loaders import bombs, gzip_bomb

ROOT = Path(__file__).resolve().parent.parent


def run_lines(n: int, queries: int = 1) -> bytes:
    return b"".join(f"q{i % queries} Q0 d{i} 1 {n - i} t\n".encode() for i in range(n))


# --------------------------------------------------------------------------
# the Limits object
# --------------------------------------------------------------------------
def test_defaults_take_a_million_queries_of_a_hundred_documents() -> None:
    limits = Limits()
    assert limits.max_rows >= 100_000_000 and limits.max_queries >= 1_000_000
    assert limits.max_bytes >= 100_000_000 * 45  # ~45 bytes per TREC run line


def test_from_env_reads_sizes_with_suffixes_and_separators() -> None:
    env = {
        "RAGMETRICS_MAX_BYTES": "500M",
        "RAGMETRICS_MAX_ROWS": "10_000_000",
        "RAGMETRICS_MAX_QUERIES": "1,000",
        "RAGMETRICS_MAX_RATIO": "50",
    }
    limits = Limits.from_env(env)
    assert limits == Limits(max_bytes=500 * MiB, max_rows=10_000_000, max_queries=1000, max_ratio=50)
    assert Limits.from_env({}, max_rows=5).max_rows == 5
    assert parse_size("2GiB") == 2 << 30 and parse_size("64k") == 64 << 10
    with pytest.raises(RagMetricsError, match="RAGMETRICS_MAX_ROWS: expected a positive whole number"):
        Limits.from_env({"RAGMETRICS_MAX_ROWS": "lots"})
    with pytest.raises(RagMetricsError, match="positive"):
        Limits(max_rows=0)


def test_loaders_read_the_environment_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_MAX_ROWS", "3")
    with pytest.raises(LimitError, match=r"^run\.trec has 4 rows; the limit is 3 \(RAGMETRICS_MAX_ROWS\)$"):
        load_run(run_lines(4), filename="run.trec")
    monkeypatch.delenv("RAGMETRICS_MAX_ROWS")
    assert len(load_run(run_lines(4), filename="run.trec")) == 4


def test_limit_error_is_a_parse_error_and_pickles() -> None:
    with pytest.raises(LimitError) as info:
        load_run(run_lines(12), filename="run.trec", limits=Limits(max_rows=10))
    err = info.value
    assert isinstance(err, ParseError) and isinstance(err, ValueError)
    assert (err.limit, err.value, err.maximum, err.source) == ("max_rows", 12, 10, "run.trec")
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


# --------------------------------------------------------------------------
# decompression
# --------------------------------------------------------------------------
def test_gzip_bomb_stops_quickly_with_default_limits() -> None:
    bomb = bombs()[0]  # 1 GiB of zeros in about 1 MB
    start = time.perf_counter()
    with pytest.raises(
        LimitError,
        match=r"^bomb\.trec\.gz expands more than 100-fold when decompressed .*decompression bomb; the limit is 100x \(RAGMETRICS_MAX_RATIO\)$",
    ) as info:
        load_run(bomb, filename="bomb.trec.gz", limits=Limits())
    assert time.perf_counter() - start < 5
    assert info.value.limit == "max_ratio"


def test_gzip_of_valid_lines_stops_at_max_bytes() -> None:
    bomb = bombs()[1]  # 1 GiB of valid run lines
    with pytest.raises(
        LimitError,
        match=r"^run\.trec\.gz decompresses to more than the limit of 16 MiB \(RAGMETRICS_MAX_BYTES\)$",
    ):
        load_run(bomb, filename="run.trec.gz", limits=Limits(max_bytes=16 * MiB, max_ratio=10_000))


def _peak_while_loading(path: Path) -> tuple[str, int]:
    """What a fresh process loading the run ``path`` says on stderr (the limit it hit), and how many bytes its
    resident memory grew by at its peak (VmHWM, not ru_maxrss, which carries the parent's high-water mark across
    exec)."""
    code = textwrap.dedent(f"""
        import sys
        from ragmetrics.io import load_run
        from ragmetrics.io.limits import LimitError
        def status(field):
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))
        before = status("VmRSS")
        try:
            load_run({str(path)!r})
        except LimitError as err:
            print(err, file=sys.stderr)
        print(status("VmHWM") - before)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120, check=False
    )
    return out.stderr, int(out.stdout.split()[-1])


def test_gzip_bomb_is_not_inflated_into_memory(tmp_path: Path) -> None:
    """Peak memory of a process refusing a 1 GiB bomb stays near the 100 MB cap."""
    path = tmp_path / "bomb.trec.gz"
    path.write_bytes(gzip_bomb(b"\0" * (16 * MiB), 64))
    said, peak = _peak_while_loading(path)
    assert "decompression bomb" in said, said
    assert peak < 250 * MiB


def test_a_parquet_dictionary_bomb_is_refused_before_its_dictionary_is_expanded(tmp_path: Path) -> None:
    """A 0.5 MB Parquet run whose text column is one 1 MiB text repeated over 1,500 rows (a dictionary page: the
    footer declares the encoded size) decodes to 1.5 GB: refused, the peak memory of the process far below that."""
    path = tmp_path / "bomb.parquet"
    n = 1500
    texts = pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([os.urandom(512 * 1024).hex()]))
    rows = {"query_id": [f"q{i}" for i in range(n)], "doc_id": [f"d{i}" for i in range(n)], "score": [1.0] * n}
    pq.write_table(pa.table({**rows, "text": texts}), path, compression="zstd")
    assert path.stat().st_size < MiB
    said, peak = _peak_while_loading(path)
    assert "looks like a decompression bomb" in said, said
    assert peak < 250 * MiB


def test_zip_bomb_member_is_refused_before_or_while_inflating() -> None:
    with pytest.raises(LimitError, match=r"^beir\.zip/qrels/test\.tsv (expands|decompresses)"):
        load_dataset(bombs()[2], filename="beir.zip", limits=Limits())
    lying = bytearray(bombs()[2])  # declare a small size: inflation still stops at the cap
    for header, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = lying.find(header)
        lying[at + offset : at + offset + 4] = (1000).to_bytes(4, "little")
    with pytest.raises(ParseError, match=r"^beir\.zip/qrels/test\.tsv"):
        load_dataset(bytes(lying), filename="beir.zip", limits=Limits())


def test_gzip_member_inside_zip_is_capped_too() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("qrels/test.tsv", bombs()[0])
    with pytest.raises(LimitError, match=r"^b\.zip/qrels/test\.tsv expands more than 100-fold"):
        load_dataset(archive.getvalue(), filename="b.zip")


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (
            lambda g: g[:-10],
            r"r\.trec\.gz: expected a complete gzip stream, found the data ends early \(truncated file\)",
        ),
        (lambda g: g[:20], r"r\.trec\.gz: expected a complete gzip stream, found the data ends early"),
        (
            lambda g: g[:-8] + b"\0\0\0\0" + g[-4:],
            r"r\.trec\.gz: expected a valid gzip stream, found corrupt data \(.*incorrect data check",
        ),
        (lambda g: g + b"trailing", r"r\.trec\.gz: expected nothing after the gzip data, found 8 more bytes"),
    ],
)
def test_broken_gzip(mangle, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        load_run(mangle(gzip.compress(run_lines(50))), filename="r.trec.gz")


def test_concatenated_gzip_members_and_zero_padding() -> None:
    data = gzip.compress(run_lines(3)) + gzip.compress(b"q9 Q0 z 1 1 t\n") + b"\0" * 512
    assert len(load_run(data, filename="r.trec.gz")) == 4


# --------------------------------------------------------------------------
# stored size
# --------------------------------------------------------------------------
def test_stored_size_is_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.trec"
    path.write_bytes(run_lines(100))
    size = path.stat().st_size
    with pytest.raises(
        LimitError, match=rf"big\.trec is .* \({size:,} bytes\); the limit is 1,000 bytes \(RAGMETRICS_MAX_BYTES\)$"
    ):
        load_run(path, limits=Limits(max_bytes=1000))
    with pytest.raises(LimitError, match=r"^up\.trec is "):
        load_run(path.read_bytes(), filename="up.trec", limits=Limits(max_bytes=1000))
    with pytest.raises(LimitError, match=r"^up\.trec is "):  # a stream is read up to the limit only
        load_run(io.BytesIO(path.read_bytes()), filename="up.trec", limits=Limits(max_bytes=1000))
    assert len(load_run(path, limits=Limits(max_bytes=size))) == 100  # at the limit: fine


# --------------------------------------------------------------------------
# rows and queries, every format
# --------------------------------------------------------------------------
def _parquet(table: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


ROW_CASES = [
    ("run", "run.trec", run_lines(12) + b"\n\n\n"),  # blank lines are no rows
    ("dataset", "q.qrels", b"".join(f"q1 0 d{i} 1\n".encode() for i in range(12))),
    ("run", "r.csv", b"qid,docid,score\n" + b"".join(f"q1,d{i},1\n".encode() for i in range(12))),
    ("dataset", "q.tsv", b"qid\tdocid\trel\n" + b"".join(f"q1\td{i}\t1\n".encode() for i in range(12))),
    (
        "run",
        "r.jsonl",
        b"".join(json.dumps({"query_id": "q1", "doc_id": f"d{i}", "score": 1}).encode() + b"\n" for i in range(12)),
    ),
    (
        "run",
        "r.parquet",
        _parquet(pa.table({"qid": ["q1"] * 12, "docid": [f"d{i}" for i in range(12)], "score": [1.0] * 12})),
    ),
    (
        "dataset",
        "e.jsonl",
        b"".join(json.dumps({"query": f"q{i}", "relevant_docs": ["d"]}).encode() + b"\n" for i in range(12)),
    ),
]


@pytest.mark.parametrize(("kind", "filename", "data"), ROW_CASES, ids=[c[1] for c in ROW_CASES])
def test_row_limit_every_line_format(kind: str, filename: str, data: bytes) -> None:
    loader = load_run if kind == "run" else load_dataset
    with pytest.raises(
        LimitError, match=rf"^{filename.replace('.', '[.]')} has 12 rows; the limit is 10 \(RAGMETRICS_MAX_ROWS\)$"
    ):
        loader(data, filename=filename, limits=Limits(max_rows=10))
    assert loader(data, filename=filename, limits=Limits(max_rows=12)) is not None


@pytest.mark.parametrize(
    ("kind", "filename", "data"),
    [
        (
            "dataset",
            "e.json",
            json.dumps([{"query": f"q{i}", "relevant_docs": ["d"]} for i in range(12)], indent=1).encode(),
        ),
        ("run", "d.json", json.dumps({f"q{i}": {"d": 1.0} for i in range(12)}).encode()),
    ],
)
def test_row_limit_while_scanning_json(kind: str, filename: str, data: bytes) -> None:
    loader = load_run if kind == "run" else load_dataset
    with pytest.raises(
        LimitError,
        match=rf"^{filename.replace('.', '[.]')} has at least 11 rows; the limit is 10 \(RAGMETRICS_MAX_ROWS\)$",
    ):
        loader(data, filename=filename, limits=Limits(max_rows=10))


def test_row_limit_counts_retrieved_items_of_nested_runs() -> None:
    data = json.dumps({"query_id": "q1", "retrieved": [f"d{i}" for i in range(12)]}).encode() + b"\n"
    with pytest.raises(LimitError, match=r"^r\.jsonl has at least 12 rows; the limit is 10"):
        load_run(data, filename="r.jsonl", limits=Limits(max_rows=10))


def test_query_limit_runs_and_datasets() -> None:
    with pytest.raises(LimitError, match=r"^run\.trec has 3 queries; the limit is 2 \(RAGMETRICS_MAX_QUERIES\)$"):
        load_run(run_lines(9, queries=3), filename="run.trec", limits=Limits(max_queries=2))
    assert len(load_run(run_lines(9, queries=2), filename="run.trec", limits=Limits(max_queries=2))) == 9
    qrels = b"".join(f"q{i % 3} 0 d{i} 1\n".encode() for i in range(9))
    with pytest.raises(LimitError, match=r"^q\.qrels has 3 queries; the limit is 2"):
        load_dataset(qrels, filename="q.qrels", limits=Limits(max_queries=2))


def test_query_limit_for_runs_grouped_or_not() -> None:
    """Runs sorted by query are bounded by counting changes; shuffled ones are counted exactly."""
    grouped = b"".join(f"q{i // 3} Q0 d{i} 1 1 t\n".encode() for i in range(9))  # 3 queries, 3 rows each
    shuffled = b"".join(f"q{i % 2} Q0 d{i} 1 1 t\n".encode() for i in range(9))  # 2 queries, 9 changes
    assert len(load_run(grouped, filename="g.trec", limits=Limits(max_queries=3))) == 9
    assert len(load_run(shuffled, filename="s.trec", limits=Limits(max_queries=2))) == 9


def test_parquet_row_limit_comes_from_the_footer() -> None:
    data = _parquet(pa.table({"qid": ["q1"] * 1000, "docid": ["d"] * 1000, "score": [1.0] * 1000}))
    with pytest.raises(LimitError, match=r"^r\.parquet has 1,000 rows; the limit is 999"):
        load_run(data, filename="r.parquet", limits=Limits(max_rows=999))


def test_rows_limit_for_queries_and_corpus_files() -> None:
    corpus = b"".join(json.dumps({"_id": f"d{i}", "text": "x"}).encode() + b"\n" for i in range(12))
    with pytest.raises(LimitError, match=r"^<corpus> has 12 rows"):
        load_dataset(b"q1 0 d1 1\n", filename="q.qrels", corpus=corpus, limits=Limits(max_rows=10))
    with pytest.raises(LimitError, match=r"^corpus\.jsonl has 12 rows"):
        load_dataset(b"q1 0 d1 1\n", filename="q.qrels", corpus=(corpus, "corpus.jsonl"), limits=Limits(max_rows=10))


def test_every_limit_has_a_variable_and_is_documented() -> None:
    import ragmetrics.io.limits as module

    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert set(ENV_VARS) == {f.name for f in dataclasses.fields(Limits)}
    for field, var in ENV_VARS.items():
        assert var == f"RAGMETRICS_{field.upper()}"
        assert f"``{field}``" in (module.__doc__ or "") and f"`{var}`" in guide


# --------------------------------------------------------------------------
# memory for a file at the limit
# --------------------------------------------------------------------------
def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


MEMORY_PROBE = textwrap.dedent("""
    import json, os, resource, sys
    import numpy as np
    path, kind, size_limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    from ragmetrics.io import load_dataset, load_run
    from ragmetrics.io.limits import Limits
    def rss(field="VmRSS"):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))
    load_run(b"q1 Q0 d1 1 1.0 t\\n" * 1000, filename="warm-up.trec")  # one-time costs: thread pools, arenas
    before = rss()
    limits = Limits(max_bytes=size_limit)
    result = load_run(path, limits=limits) if kind == "run" else load_dataset(path, limits=limits)
    peak = rss("VmHWM")  # not ru_maxrss: it carries the parent's high-water mark across exec
    print(json.dumps({"rows": len(result.frame) if kind == "run" else len(result.qrels), "extra": peak - before}))
""")


def write_big_run(path: Path, queries: int, per_query: int) -> int:
    """A TREC run written with numpy (fast): ``queries * per_query`` lines."""
    import numpy as np

    rng = np.random.default_rng(7)
    with open(path, "wb") as out:
        for start in range(0, queries, 2000):
            qs = np.repeat(np.arange(start, min(start + 2000, queries)), per_query)
            ranks = np.tile(np.arange(1, per_query + 1), len(qs) // per_query)
            docs = rng.integers(0, 5_000_000, len(qs))
            scores = np.round(30 - ranks * 0.1 + rng.random(len(qs)) * 0.01, 6)
            lines = [
                f"q{q} Q0 doc{d} {r} {s} bm25\n"
                for q, d, r, s in zip(qs.tolist(), docs.tolist(), ranks.tolist(), scores.tolist())
            ]
            out.write("".join(lines).encode())
    return path.stat().st_size


def measure(path: Path, kind: str, size: int) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path), kind, str(size)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_file_at_the_size_limit_needs_a_few_times_its_size(tmp_path: Path) -> None:
    """A ~50 MB run loaded with max_bytes equal to its size: peak extra memory
    stays under 4x the file plus 32 MB of fixed costs (measured: 3.5x at 50 MB,
    3.0x at 100 MB, 2.9x at 190 MB; ``RAGMETRICS_MEMORY_MB`` sets the size)."""
    target = int(os.environ.get("RAGMETRICS_MEMORY_MB", "50"))
    path = tmp_path / "big.trec"
    size = write_big_run(path, queries=max(1, target * 1_000_000 // 38 // 100), per_query=100)
    result = measure(path, "run", size)
    ratio = result["extra"] / size
    print(
        f"\nmemory: {size / 1e6:.0f} MB run, {result['rows']:,} rows, peak extra {result['extra'] / 1e6:.0f} MB = {ratio:.2f}x the file"
    )
    assert result["rows"] > 0 and result["extra"] < 4 * size + 32 * MiB, ratio


def test_a_long_run_is_refused_while_it_is_read() -> None:
    """The TREC reader counts rows block by block (16 MiB each): over the limit, it stops before the end of the file."""
    lines = 2_000_000
    data = b"".join(b"q%d Q0 document-%07d 1 1.5 tag\n" % (i // 100, i) for i in range(lines))
    assert len(data) > 2 * 16 * 2**20
    with pytest.raises(LimitError, match=r"^big\.trec has at least [0-9,]+ rows; the limit is 1,000 ") as info:
        load_run(data, filename="big.trec", limits=Limits(max_rows=1_000))
    assert 1_000 < info.value.value < lines


def test_a_size_just_over_the_limit_says_the_limit_in_bytes() -> None:
    with pytest.raises(LimitError) as caught:
        Limits(max_bytes=512 * MiB).check_size("run.trec", 512 * MiB + 1)
    assert str(caught.value) == (
        "run.trec is 512 MiB (536,870,913 bytes); the limit is 536,870,912 bytes (RAGMETRICS_MAX_BYTES)"
    )
    with pytest.raises(LimitError, match=r"is 600 MiB \(629,145,600 bytes\); the limit is 512 MiB \("):
        Limits(max_bytes=512 * MiB).check_size("run.trec", 600 * MiB)


def test_a_device_is_refused_before_reading_and_a_pipe_is_read() -> None:
    with pytest.raises(ParseError, match=r"^/dev/zero: expected a file or a pipe, found a device$"):
        load_run("/dev/zero")
    read_end, write_end = os.pipe()
    os.write(write_end, b"q1 Q0 d1 1 1.0 t\n")
    os.close(write_end)
    try:
        assert len(load_run(f"/dev/fd/{read_end}", filename="piped.trec")) == 1
    finally:
        os.close(read_end)


def test_a_parse_error_pickles_and_is_said_of_the_whole_file() -> None:
    """A part's error (a slice, a bucket) said of its file: both lines mapped, or the first one said to be elsewhere."""
    err = ParseError("part", 3, "one label per query and document", "a second label", first_line=1)
    assert str(err) == "part:3: expected one label per query and document, found a second label (first on line 1)"
    assert str(pickle.loads(pickle.dumps(err))) == str(err)
    moved = err.said_of("qrels.txt", lambda line: line + 100)
    assert (moved.source, moved.line, moved.first_line) == ("qrels.txt", 103, 101)
    assert (
        str(moved)
        == "qrels.txt:103: expected one label per query and document, found a second label (first on line 101)"
    )
    lost = err.said_of("qrels.txt", lambda line: None if line == 1 else line)
    assert (
        str(lost)
        == "qrels.txt:3: expected one label per query and document, found a second label (first on another line)"
    )
    whole = ParseError("part", None, "UTF-8 text").said_of("run.trec", lambda line: line + 1)
    assert (str(whole), whole.line) == ("run.trec: expected UTF-8 text", None)


def test_a_file_is_read_within_an_address_space_limit(tmp_path: Path) -> None:
    """Was: every file was read with ``read(max_bytes + 1)``, which reserves the whole default limit (16 GiB) before
    it reads, so under ``ulimit -v`` (here 6 GiB) loading any corpus, run or qrels file was a MemoryError."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": f"text {i}"}) + "\n" for i in range(1000)))
    script = textwrap.dedent(
        f"""
        import io, resource
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
        from ragmetrics.io.corpus import read_corpus
        from ragmetrics.io.source import open_source
        print(len(read_corpus({str(corpus)!r})), len(open_source(io.BufferedReader(io.FileIO({str(corpus)!r}))).raw))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1000", str(corpus.stat().st_size)]


def test_read_capped_reads_a_pipe_in_pieces_and_stops_past_the_cap() -> None:
    from ragmetrics.io.source import read_capped

    asked: list[int] = []
    stream = io.BytesIO(b"x" * 100)

    def read(n: int) -> bytes:
        asked.append(n)
        return stream.read(n)

    assert read_capped(read, 51) == b"x" * 51 and max(asked) <= 50  # a pipe announces no size: 1, then pieces
    assert read_capped(io.BytesIO(b"abc").read, 10, 3) == b"abc"  # a file of its announced size: one call
    assert read_capped(io.StringIO("abc").read, 10) == "abc"
