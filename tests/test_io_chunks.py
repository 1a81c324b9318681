"""Chunk-to-document mappings: attach_source_docs and load_run(chunk_...)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics.foundation.errors import ParseError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Run
from ragmetrics.io import attach_source_docs, load_run

DATA = Path(__file__).parent / "data" / "io"


def chunk_run() -> Run:
    return Run.from_dict({"q1": {"doc#0": 3.0, "doc#12": 2.0, "other": 1.0, "a#b#3": 0.5}}, name="chunks")


def test_pattern_named_group_and_separator_shorthand() -> None:
    run = chunk_run()
    out = attach_source_docs(run, pattern=r"(?P<doc>.+)#\d+$")
    assert list(out.frame["source_doc"]) == ["doc", "doc", "other", "a#b"]
    assert "source_doc" not in run.frame.columns  # the input is left alone
    assert out.name == run.name and out.has_scores == run.has_scores
    with warnings.catch_warnings():  # a pattern that matches some of the ids: nothing to warn of
        warnings.simplefilter("error", RagMetricsWarning)
        assert list(attach_source_docs(run, pattern="#").frame["source_doc"]) == ["doc", "doc", "other", "a#b"]
    assert list(attach_source_docs(run, pattern=r"^(\w+)#").frame["source_doc"]) == ["doc", "doc", "other", "a"]
    for none in ("ZZZ", "_C"):  # matches none of the ids: said, with the ids it was tried on
        with pytest.warns(
            RagMetricsWarning,
            match=rf"^run 'chunks': the chunk pattern '{none}' matched none of the ids of its 4 rows \(such as 'doc#0', "
            r"'doc#12', 'other'\): each is evaluated under its own id$",
        ):
            assert list(attach_source_docs(run, pattern=none).frame["source_doc"]) == list(run.frame["doc_id"])


def test_cmrc_chunk_ids() -> None:
    run = load_run(DATA / "cmrc-mini" / "bm25-jieba.trec", chunk_pattern=r"(?P<doc>.+)_C\d+$")
    assert run.frame["source_doc"].iloc[0] == "DEV_3"
    assert (run.frame["source_doc"] == run.frame["doc_id"].str.replace(r"_C\d+$", "", regex=True)).all()
    assert list(load_run(DATA / "cmrc-mini" / "bm25-jieba.trec", chunk_pattern="_C").frame["source_doc"]) == list(
        run.frame["source_doc"]
    )


def test_mapping_dict_frame_and_files(tmp_path: Path) -> None:
    run = chunk_run()
    expected = ["D", "E", "other", "a#b#3"]
    mapping = {"doc#0": "D", "doc#12": "E"}
    unmapped = r"run 'chunks': 2 of its 4 retrieved chunks are not in the chunk mapping \(such as 'other', 'a#b#3'\)"
    with pytest.warns(RagMetricsWarning, match=unmapped):
        assert list(attach_source_docs(run, mapping=mapping).frame["source_doc"]) == expected
    frame = pd.DataFrame({"Chunk_ID": list(mapping), "source_doc": list(mapping.values())})
    with pytest.warns(RagMetricsWarning, match=unmapped):
        assert list(attach_source_docs(run, mapping=frame).frame["source_doc"]) == expected
    (tmp_path / "m.csv").write_text("chunk_id,doc_id\ndoc#0,D\ndoc#12,E\ndoc#12,E\n")
    (tmp_path / "m.tsv").write_text("chunk_id\tparent_doc\ndoc#0\tD\ndoc#12\tE\n")
    (tmp_path / "m.jsonl").write_text('{"chunk_id": "doc#0", "doc_id": "D"}\n{"chunk_id": "doc#12", "doc_id": "E"}\n')
    (tmp_path / "m.json").write_text('{"doc#0": "D", "doc#12": "E"}')
    for name in ("m.csv", "m.tsv", "m.jsonl", "m.json"):
        with pytest.warns(RagMetricsWarning, match=r"2 of its 4 retrieved chunks are not in the chunk mapping"):
            assert list(attach_source_docs(run, mapping=tmp_path / name).frame["source_doc"]) == expected, name


def test_mapping_wins_over_pattern_and_existing_column_is_kept() -> None:
    run = chunk_run()
    pattern_maps_two = r"1 of its 4 retrieved chunks .* \(such as 'other'\)"
    with pytest.warns(RagMetricsWarning, match=pattern_maps_two):
        out = attach_source_docs(run, mapping={"doc#0": "X"}, pattern="#")
    assert list(out.frame["source_doc"]) == ["X", "doc", "other", "a#b"]
    with_column = Run.from_frame(
        pd.DataFrame({"query_id": ["q"] * 2, "doc_id": ["c1", "c2"], "score": [2.0, 1.0], "source_doc": ["A", None]})
    )
    with pytest.warns(RagMetricsWarning, match=r"the chunk pattern '#' matched none of the ids of its 2 rows"):
        assert list(attach_source_docs(with_column, pattern="#").frame["source_doc"]) == ["A", "c2"]
    with pytest.warns(RagMetricsWarning, match=r"1 of its 2 retrieved chunks .* \(such as 'c2'\)"):  # c1 has its own
        assert list(attach_source_docs(with_column, mapping={"c9": "Z"}).frame["source_doc"]) == ["A", "c2"]


def test_load_run_with_mapping_file(tmp_path: Path) -> None:
    (tmp_path / "map.tsv").write_text("chunk_id\tdoc_id\nDEV_3_C0\tpara-3\n")
    with pytest.warns(
        RagMetricsWarning,
        match=r"^run 'bm25-jieba': 13 of its 14 retrieved chunks are not in \S*map\.tsv \(such as 'DEV_3_C1', "
        r"'DEV_18_C0', 'DEV_17_C1'\): they keep their own ids, so they count as unjudged unless the qrels name them$",
    ):
        run = load_run(DATA / "cmrc-mini" / "bm25-jieba.trec", chunk_mapping=tmp_path / "map.tsv")
    assert run.frame["source_doc"].iloc[0] == "para-3"
    assert run.frame["source_doc"].iloc[2] == run.frame["doc_id"].iloc[2]  # unmatched: its own id
    whole = "".join(f"{chunk}\tp\n" for chunk in set(run.frame["doc_id"]))
    (tmp_path / "map.tsv").write_text("chunk_id\tdoc_id\n" + whole)
    with warnings.catch_warnings():  # every chunk mapped: no warning
        warnings.simplefilter("error", RagMetricsWarning)
        assert set(
            load_run(DATA / "cmrc-mini" / "bm25-jieba.trec", chunk_mapping=tmp_path / "map.tsv").frame["source_doc"]
        ) == {"p"}


def test_mapping_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("chunk_id,doc_id\nc1,D\nc2,E\nc1,F\n")
    with pytest.raises(
        ParseError, match=r"bad\.csv:4: expected one document per chunk, found chunk 'c1' mapped to \['D', 'F'\]"
    ):
        attach_source_docs(chunk_run(), mapping=tmp_path / "bad.csv")
    (tmp_path / "cols.csv").write_text("a,b\nc1,D\n")
    with pytest.raises(ParseError, match=r"cols\.csv:1: expected a chunk_id column"):
        attach_source_docs(chunk_run(), mapping=tmp_path / "cols.csv")
    (tmp_path / "bad.jsonl").write_text('{"chunk_id": "c1", "doc_id": "D"}\n{"chunk_id": "c2", "doc_id": ""}\n')
    with pytest.raises(ParseError, match=r"bad\.jsonl:2: expected a chunk id and a document id"):
        attach_source_docs(chunk_run(), mapping=tmp_path / "bad.jsonl")
    with pytest.raises(RagMetricsError, match="not a valid regular expression"):
        attach_source_docs(chunk_run(), pattern="(unclosed")
    with pytest.raises(RagMetricsError, match="needs a mapping or a pattern"):
        attach_source_docs(chunk_run())


HOSTILE_PATTERN_SCRIPT = """
import json, threading, time
from ragmetrics.io import attach_source_docs
from ragmetrics.foundation.model import Run

run = Run.from_dict({"q1": {"a" * 40 + "!": 2.0, "doc#1": 1.0}}, name="hostile")
outcome = []

def attach():
    try:
        attach_source_docs(run, pattern=r"(?P<doc>(a|a)+)$")
        outcome.append("no error")
    except Exception as err:
        outcome.append(f"{type(err).__name__}: {err}")

worker = threading.Thread(target=attach, daemon=True)
ticks, start = 0, time.monotonic()
worker.start()
while worker.is_alive():
    time.sleep(0.01)
    ticks += 1
print(json.dumps({"outcome": outcome, "ticks": ticks, "seconds": time.monotonic() - start}))
"""


def test_a_pattern_that_backtracks_without_end_is_stopped_and_named() -> None:
    # (a|a)+$ on 40 a's and a '!' tries 2**40 ways before it fails: the run is refused in seconds, and the process's
    # other threads (the server's, in the dashboard) keep running meanwhile. In a child process, which a pattern
    # holding the interpreter for hours can be killed in.
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", HOSTILE_PATTERN_SCRIPT], capture_output=True, text=True, timeout=60, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the chunk pattern was not stopped within 60 s")
    report = json.loads(done.stdout)
    assert report["seconds"] < 20, report
    assert report["ticks"] > 20 * report["seconds"], report  # the main thread ran every few ms throughout
    [message] = report["outcome"]
    assert message.startswith("RagMetricsError: chunk pattern '(?P<doc>(a|a)+)$' is too slow"), message
    assert "aaaaaaaa" in message  # the chunk id it stopped at


def test_a_corpus_of_chunks_given_as_the_mapping_is_named_by_its_keys(tmp_path: Path) -> None:
    """Was: a JSONL corpus of chunks ({_id, title, text}) given as --chunk-mapping was read as one JSON object and
    refused at line 2 ("expected nothing after the JSON value"); JSON lines are now read as records, and a record
    without a chunk and a document is named by its keys. A file with them (synth's chunks file) maps."""
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text('{"_id": "D1#0", "title": "", "text": "a"}\n{"_id": "D1#1", "title": "", "text": "b"}\n')
    run = Run.from_frame(pd.DataFrame({"query_id": ["q1"], "doc_id": ["D1#0"], "score": [1.0]}))
    with pytest.raises(ParseError, match=r"chunks.jsonl:1: expected a record with a chunk_id and a doc_id \(or "
                       r"source_doc\), found keys \['_id', 'text', 'title'\]"):  # fmt: skip
        attach_source_docs(run, mapping=str(chunks))
    chunks.write_text(
        '{"_id": "D1#0", "text": "a", "chunk_id": "D1#0", "doc_id": "D1", "start": 0, "end": 1}\n'
        '{"_id": "D1#1", "text": "b", "chunk_id": "D1#1", "doc_id": "D1", "start": 2, "end": 3}\n'
    )
    assert attach_source_docs(run, mapping=str(chunks)).frame["source_doc"].tolist() == ["D1"]
    one = tmp_path / "one.json"
    one.write_text('{\n  "D1#0": "D1",\n  "D1#1": "D1"\n}\n')  # one object over several lines: still a mapping
    assert attach_source_docs(run, mapping=str(one)).frame["source_doc"].tolist() == ["D1"]
