"""A large plain file is mapped instead of read (``Source.mapped``): every table and every error must be the one the
read bytes give. The threshold is lowered here so that small files take the mapped path too."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io import load_dataset, load_run, source

TREC = Path(__file__).parent / "data" / "trec_eval"

CASES = {
    "plain run": (b"q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 1.5 r\nq2 Q0 d1 1 0.5 r\n", "run"),
    "tabs and form feeds": (b"q1\tQ0 d1 1\x0b2.5 r\nq1 Q0\x0cd2 2 1.5 r\n", "run"),
    "runs of blanks": (b"q1  Q0 d1 1 2.5 r \n q1 Q0 d2 2 1.5 r\n", "run"),
    "CRLF": (b"q1 Q0 d1 1 2.5 r\r\nq1 Q0 d2 2 1.5 r\r\n", "run"),
    "comments": (b"# made by hand\nq1 Q0 d1 1 2.5 r\n#q1 Q0 d9 1 9 r\nq1 Q0 d2 2 1.5 r\n", "run"),
    "a bad score": (b"q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 nan r\n", "run"),
    "a bad number": (b"q1 Q0 d1 1 2.5 r\n\nq1 Q0 d2 2 x1 r\n", "run"),
    "extra fields": (b"q1 Q0 d1 1 2.5 r extra\nq1 Q0 d2 2 1.5 r\n", "run"),
    "a lone CR": (b"q1 Q0 d1 1 2.5 r\rq1 Q0 d2 2 1.5 r\n", "run"),
    "no data": (b"# nothing\n\n", "run"),
    "qrels": (b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n", "qrels"),
    "a second label": (b"q1 0 d1 1\nq1 0 d2 0\n\nq1 0 d1 2\n", "qrels"),
    "qrels with tabs": (b"q1\t0\td1\t1\nq2\t0\td3\t0\n", "qrels"),
}


def _outcome(path: Path, kind: str):
    try:
        if kind == "run":
            run = load_run(path)
            return run.table.to_pydict()
        dataset = load_dataset(path)
        return dataset.qrels_table.to_pydict()
    except ParseError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize("case", list(CASES))
def test_a_mapped_file_gives_what_the_read_bytes_give(case, tmp_path, monkeypatch):
    content, kind = CASES[case]
    path = tmp_path / ("input.trec" if kind == "run" else "input.qrels")
    path.write_bytes(content)
    read = _outcome(path, kind)
    monkeypatch.setattr(source, "MAP_BYTES", 1)
    mapped = _outcome(path, kind)
    assert mapped == read
    opened = source.open_source(path)
    assert opened.mapped() is not None  # the mapped path was taken


@pytest.mark.parametrize("name", sorted(p.name for p in TREC.iterdir() if p.name.startswith(("qrels", "results"))))
def test_trec_evals_own_files_mapped_and_read_are_the_same(name, monkeypatch):
    path = TREC / name
    kind = "qrels" if name.startswith("qrels") else "run"
    read = _outcome(path, kind)
    monkeypatch.setattr(source, "MAP_BYTES", 1)
    assert _outcome(path, kind) == read


def test_compressed_or_marked_files_are_read_not_mapped(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(source, "MAP_BYTES", 1)
    plain = b"q1 Q0 d1 1 2.5 r\n"
    for name, content in {
        "run.trec.gz": gzip.compress(plain),
        "bom.trec": source.BOM + plain,
        "utf16.trec": plain.decode().encode("utf-16"),
        "empty.trec": b"",
    }.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert source.open_source(path).mapped() is None, name
    assert load_run(tmp_path / "run.trec.gz").table.num_rows == 1
