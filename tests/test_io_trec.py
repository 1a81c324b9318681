"""TREC runs and qrels: parsing conventions, errors with line numbers, writers."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.foundation.errors import ParseError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_qrels, load_run, trec, write_trec_qrels, write_trec_run
from ragmetrics.io.source import Source

DATA = Path(__file__).parent / "data" / "io"

RUN = b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.25 tag\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"


def rows(run: Run) -> list[tuple[str, str, float]]:
    f = run.frame
    return list(zip(f["query_id"], f["doc_id"], f["score"]))


EXPECTED_RUN = [("q1", "d1", 2.5), ("q1", "d2", 1.5), ("q2", "d1", 0.25)]
REAL_READER_THREADS = trec._reader_threads


@pytest.fixture(scope="module", autouse=True, params=[1, 4], ids=["one-reader", "four-readers"])
def readers(request: pytest.FixtureRequest):
    """Every test here runs twice: files read whole, and cut into up to four pieces read in parallel
    (what files over ``trec.BYTES_PER_READER`` get), so line numbers and fallbacks hold across pieces."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trec, "_reader_threads", lambda size: request.param)
        yield request.param


def test_pieces_end_at_line_breaks_and_large_files_get_one_reader_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"q1 Q0 a 1 1 t\nq1 Q0 bb 2 0.5 t\nq2 Q0 ccc 1 2 t"
    for parts in (1, 2, 3, 4, 10):
        pieces = [bytes(p) for p in trec._line_slices(data, parts)]
        assert b"".join(pieces) == data
        assert all(p.endswith(b"\n") for p in pieces[:-1])
        assert 1 <= len(pieces) <= min(parts, 3)
    monkeypatch.setattr(trec.os, "sched_getaffinity", lambda pid: set(range(8)))
    assert REAL_READER_THREADS(trec.BYTES_PER_READER - 1) == 1
    assert REAL_READER_THREADS(3 * trec.BYTES_PER_READER) == 3
    assert REAL_READER_THREADS(100 * trec.BYTES_PER_READER) == 4
    monkeypatch.setattr(trec.os, "sched_getaffinity", lambda pid: {0, 1})
    assert REAL_READER_THREADS(100 * trec.BYTES_PER_READER) == 2


# --------------------------------------------------------------------------
# runs: sources and encodings
# --------------------------------------------------------------------------
def test_run_from_bytes_file_and_stream(tmp_path: Path) -> None:
    path = tmp_path / "bm25-stem.trec"
    path.write_bytes(RUN)
    from_bytes = load_run(RUN, filename="bm25-stem.trec")
    from_path = load_run(path)
    from_str = load_run(str(path))
    with open(path, "rb") as handle:
        from_stream = load_run(handle)
    for run in (from_bytes, from_path, from_str, from_stream):
        assert rows(run) == EXPECTED_RUN
        assert run.name == "bm25-stem"
        assert run.has_scores
    assert from_bytes.frame["query_id"].dtype == "str"
    assert from_bytes.frame["score"].dtype == "float64"


def test_run_gzip_by_magic_bytes(tmp_path: Path) -> None:
    packed = gzip.compress(RUN)
    assert rows(load_run(packed, filename="bm25-stem.trec.gz")) == EXPECTED_RUN
    assert load_run(packed, filename="bm25-stem.trec.gz").name == "bm25-stem"
    (tmp_path / "plain.trec.gz").write_bytes(RUN)  # .gz name, not compressed
    assert rows(load_run(tmp_path / "plain.trec.gz")) == EXPECTED_RUN
    (tmp_path / "packed.trec").write_bytes(packed)  # compressed, no .gz name
    assert rows(load_run(tmp_path / "packed.trec")) == EXPECTED_RUN


def test_run_bom_crlf_tabs_and_blank_runs() -> None:
    data = b"\xef\xbb\xbf" + RUN.replace(b"\n", b"\r\n")
    assert rows(load_run(data, filename="r.trec")) == EXPECTED_RUN
    messy = b"  q1\tQ0   d1 1\t2.5 tag  \n\n \t\nq1 Q0\t\td2 2 1.5 tag\r\nq2 Q0 d1 1 0.25 tag"
    assert rows(load_run(messy, filename="r.trec")) == EXPECTED_RUN


def test_run_comments_and_hash_inside_docid() -> None:
    data = (
        b"# made by bm25\n" + b"q1 Q0 d#1 1 2.5 tag\n#q1 Q0 dX 1 9 tag\n  # indented comment\nq1 Q0 d2# 2 1.5 tag#x\n"
    )
    assert rows(load_run(data, filename="r.trec")) == [("q1", "d#1", 2.5), ("q1", "d2#", 1.5)]


def test_run_extra_fields_ignored_even_when_irregular() -> None:
    data = b"q1 Q0 d1 1 2.5 tag extra1 extra2\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.25 tag x\n"
    assert rows(load_run(data, filename="r.trec")) == EXPECTED_RUN


def test_run_splits_on_ascii_whitespace_only() -> None:
    # U+00A0 and U+3000 stay inside the ids, as in trec_eval
    data = "q\u00a01 Q0 d\u30001 1 2.5 tag\n".encode()
    run = load_run(data, filename="r.trec")
    assert rows(run) == [("q\u00a01", "d\u30001", 2.5)]


def test_run_ids_kept_verbatim_and_scores_exact() -> None:
    data = b"001 Q0 DOC-a 1 1e-300 t\n001 Q0 doc-A 2 -0.1 t\n001 Q0 x 3 +7 t\n"
    run = load_run(data, filename="r.trec")
    assert list(run.frame["query_id"]) == ["001"] * 3
    assert list(run.frame["doc_id"]) == ["DOC-a", "doc-A", "x"]
    assert list(run.frame["score"]) == [1e-300, -0.1, 7.0]


def test_real_run_excerpt() -> None:
    run = load_run(DATA / "scifact-mini" / "runs" / "bm25-stem.trec")
    assert run.name == "bm25-stem"
    assert len(run) == 50
    assert run.frame["query_id"].nunique() == 5
    assert rows(run)[0] == ("1", "18953920", 4.453252)


# --------------------------------------------------------------------------
# runs: errors
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "line", "found"),
    [
        (b"q1 Q0 d1 1 2.5 t\n\nq1 Q0 d2 2\n", 3, "4 field"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 abc t\n", 2, "'abc'"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq1 Q0 d3 3 nan t\n", 3, "'nan'"),
        (b"q1 Q0 d1 1 inf t\n", 1, "'inf'"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 -Infinity t\n", 2, "'-Infinity'"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1e999 t\n", 2, "'1e999'"),
        (b"# c\nq1 Q0 d1 1 2.5 t\n# c\nq1 Q0 d2 2 1_0 t\n", 4, "'1_0'"),
        (b"q1 Q0 d1 1 2.5 t\r\nq1 Q0 d2 2 x t\r\n", 2, "'x'"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n\xff\xfe\n", 3, "0xff"),
        (b"q1 Q0 d1 1 2.5 t\nq1  d2 2 1.5 t\n", 2, "5 field"),
        (b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t extra\nq1 Q0 d3 3 nan t\n", 3, "'nan'"),
    ],
)
def test_run_errors_name_file_and_line(data: bytes, line: int, found: str) -> None:
    with pytest.raises(ParseError, match=rf"bad\.trec:{line}: expected .*found .*{found}") as info:
        load_run(data, filename="bad.trec")
    assert info.value.line == line
    assert info.value.source == "bad.trec"


def test_run_error_line_in_large_file_uses_original_numbering(tmp_path: Path) -> None:
    lines = [f"q{i // 10} Q0 d{i} {i % 10 + 1} {1.0 / (i + 1)!r} t" for i in range(5000)]
    lines.insert(0, "# header")
    lines.insert(100, "")
    lines[4000] = lines[4000].rsplit(" ", 2)[0] + " NaN t"
    path = tmp_path / "big.trec"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"big\.trec:4001: expected a finite number"):
        load_run(path)


def test_run_empty_file() -> None:
    with pytest.raises(ParseError, match=r"empty\.trec: expected at least one line"):
        load_run(b"# nothing\n\n", filename="empty.trec")


def test_missing_file() -> None:
    with pytest.raises(ParseError, match=r"nope\.trec: expected an existing file"):
        load_run("nope.trec")


# --------------------------------------------------------------------------
# fast path and slow scan agree
# --------------------------------------------------------------------------
_ID = st.text(alphabet=st.sampled_from(list("abcXYZ019#_-.\u00a0é中")), min_size=1, max_size=6).filter(
    lambda s: not s.startswith("#")
)
_SEP = st.sampled_from([" ", "\t", "  ", " \t "])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            _ID,
            _ID,
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            _SEP,
            st.booleans(),
            st.booleans(),
            st.sampled_from(["", " x", " x y"]),
        ),
        min_size=1,
        max_size=20,
    ),
    st.booleans(),
)
def test_fast_and_slow_paths_agree(entries: list, crlf: bool) -> None:
    lines = []
    for qid, doc, score, sep, comment, blank, extra in entries:
        if comment:
            lines.append("# a comment line")
        if blank:
            lines.append("")
        lines.append(sep.join([qid, "Q0", doc, "1", repr(score), "tag"]) + extra)
    data = ("\r\n" if crlf else "\n").join(lines).encode()
    fast = trec.parse_run_table(Source("p.trec", raw=data))
    slow = trec._slow_run(Source("p.trec", raw=data))
    assert fast.equals(slow)
    middle = trec._pandas_run(Source("p.trec", raw=data))
    if middle is not None:
        assert middle.equals(slow)
    assert fast.column("score").to_pylist() == [e[2] for e in entries]


# --------------------------------------------------------------------------
# qrels
# --------------------------------------------------------------------------
def test_qrels_basic_and_negative_labels(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf# judged by X\r\nq1 0 d1 1\r\n\r\nq1 0 d#2 -1\r\nq2\t0\t d3  2\r\n"
    qrels = load_qrels(data, filename="a.qrels")
    assert list(qrels.itertuples(index=False, name=None)) == [("q1", "d1", 1), ("q1", "d#2", -1), ("q2", "d3", 2)]
    assert qrels["relevance"].dtype == "int64"
    (tmp_path / "a.qrels.gz").write_bytes(gzip.compress(data))
    pd.testing.assert_frame_equal(load_qrels(tmp_path / "a.qrels.gz"), qrels)


def test_qrels_as_dataset() -> None:
    dataset = load_dataset(QRELS, filename="judgments.qrels")
    assert isinstance(dataset, Dataset)
    assert dataset.name == "judgments"
    assert list(dataset.query_ids) == ["q1", "q2"]


@pytest.mark.parametrize(
    ("data", "line", "found"),
    [
        (b"q1 0 d1 1\nq1 0 d2 1.0\n", 2, "'1.0'"),
        (b"q1 0 d1 1\n\nq1 0 d2 x\n", 3, "'x'"),
        (b"q1 0 d1 1\nq1 0 d2 1 extra\n", 2, "5 field"),
        (b"q1 0 d1 1\nq1 d2 1\n", 2, "3 field"),
        (b"q1 0 d1 1\nq2 0 d2 1\nq1 0 d1 0\n", 3, "second label .*first on line 1"),
        (b"q1 0 d1 1\nq2  0 d2 1\nq1\t0 d1 0\n", 3, "second label .*first on line 1"),
    ],
)
def test_qrels_errors_name_file_and_line(data: bytes, line: int, found: str) -> None:
    with pytest.raises(ParseError, match=rf"bad\.qrels:{line}: expected .*found .*{found}"):
        load_qrels(data, filename="bad.qrels")


def test_real_qrels_excerpt() -> None:
    qrels = load_qrels(DATA / "scifact-mini" / "qrels.tsv")
    assert len(qrels) == 6
    assert set(qrels["relevance"]) == {1}


# --------------------------------------------------------------------------
# writers
# --------------------------------------------------------------------------
def test_write_run_sorts_and_ranks(tmp_path: Path) -> None:
    run = Run.from_frame(
        pd.DataFrame(
            {
                "query_id": ["q2", "q1", "q1", "q1", "q2"],
                "doc_id": ["a", "a", "b", "c", "b"],
                "score": [1.0, 0.5, 0.5, 0.9, 0.1 + 0.2],
            }
        ),
        name="my run",
    )
    out = io.BytesIO()
    write_trec_run(run, out)
    assert out.getvalue().decode().splitlines() == [
        "q2 Q0 a 1 1 my_run",
        "q2 Q0 b 2 0.30000000000000004 my_run",
        "q1 Q0 c 1 0.9 my_run",
        "q1 Q0 b 2 0.5 my_run",  # tie: doc_id descending
        "q1 Q0 a 3 0.5 my_run",
    ]
    text = io.StringIO()
    write_trec_run(run, text, tag="T")
    assert text.getvalue().splitlines()[0] == "q2 Q0 a 1 1 T"


def test_run_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "query_id": [f"q{i % 13}" for i in range(400)],
            "doc_id": [f"d#{i}" for i in range(400)],
            "score": rng.normal(size=400) * 10.0 ** rng.integers(-8, 8, size=400),
        }
    )
    run = Run.from_frame(frame, name="rt")
    for name in ("rt.trec", "rt.trec.gz"):
        write_trec_run(run, tmp_path / name)
        back = load_run(tmp_path / name)
        assert back.name == "rt"
        key = ["query_id", "doc_id"]
        a = run.frame.sort_values(key).reset_index(drop=True)
        b = back.frame.sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a[key + ["score"]], b[key + ["score"]])  # scores exact
    with gzip.open(tmp_path / "rt.trec.gz", "rt") as handle:
        assert handle.readline().endswith(" rt\n")
    # the header names no file: a command writes under a temporary name, then renames (it would keep that name)
    assert (tmp_path / "rt.trec.gz").read_bytes()[3] & 0x08 == 0  # FLG.FNAME unset


def test_qrels_round_trip(tmp_path: Path) -> None:
    dataset = load_dataset(b"q1 0 d1 1\nq1 0 d2 -1\nq2 0 d#3 2\n", filename="x.qrels")
    write_trec_qrels(dataset, tmp_path / "x.qrels")
    assert (tmp_path / "x.qrels").read_text() == "q1 0 d1 1\nq1 0 d2 -1\nq2 0 d#3 2\n"
    pd.testing.assert_frame_equal(load_qrels(tmp_path / "x.qrels"), dataset.qrels)
    write_trec_qrels(dataset.qrels, tmp_path / "y.qrels.gz")
    pd.testing.assert_frame_equal(load_qrels(tmp_path / "y.qrels.gz"), dataset.qrels)


def test_writer_refuses_ids_with_whitespace() -> None:
    run = Run.from_lists({"q 1": ["d1"]})
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run(run, io.BytesIO())


@pytest.mark.parametrize(
    "variant",
    [
        lambda d: d,
        lambda d: d.replace(b" ", b"\t"),
        lambda d: d.replace(b" Q0 ", b"  Q0\t "),
        lambda d: b"# comment\r\n" + d.replace(b"\n", b"\r\n"),
        lambda d: d.replace(b"\n", b" \n\n"),
    ],
)
def test_regular_files_never_take_the_python_scan(variant, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("slow scan used")

    monkeypatch.setattr(trec, "_slow_run", refuse)
    monkeypatch.setattr(trec, "_slow_qrels", refuse)
    run = b"".join(f"q{i // 100} Q0 d#{i} {i % 100 + 1} {1 / (i + 1)!r} tag\n".encode() for i in range(20000))
    assert len(load_run(variant(run), filename="r.trec")) == 20000
    qrels = b"".join(f"q{i // 10} 0 d{i} {i % 3 - 1}\n".encode() for i in range(5000))
    assert len(load_qrels(variant(qrels), filename="r.qrels")) == 5000


@pytest.mark.parametrize("blank", ["\v", "\f", "\t", " \v\f "])
def test_fields_split_on_c_whitespace_as_trec_eval(blank: str) -> None:
    """trec_eval reads fields with sscanf("%s"): a vertical tab or form feed separates fields as a space does."""
    plain = load_run(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.0 t\n", filename="r.trec")
    odd = load_run(f"q1{blank}Q0 d1 1{blank}2.5 t\nq1 Q0{blank}d2 2 1.0 t\n".encode(), filename="r.trec")
    assert odd.table.equals(plain.table)
    qrels = load_dataset(f"q1{blank}0 d1{blank}1\n".encode(), filename="q.qrels").qrels
    assert list(qrels.itertuples(index=False, name=None)) == [("q1", "d1", 1)]
