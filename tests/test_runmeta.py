"""Run metadata on a real store (SQLite and PostgreSQL): tags set at push, from the metadata ``ragmetrics
retrieve`` writes, edited and removed; an older store without the table opens with its data; the ir_metadata
YAML export."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
import yaml

from dashboard.core.metadata import tags_from_frame
from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.runmeta import ir_metadata, parse_tag_lines, parse_tags, retriever_tags
from ragmetrics.store.database import Store, StoreKeyError, tags_table

SCIFACT = Path(__file__).parent / "data" / "scifact"
MINI = Path(__file__).parent / "data" / "io" / "scifact-mini"


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def scifact():
    return load_dataset(SCIFACT / "qrels.tsv", queries=SCIFACT / "queries.jsonl"), load_run(
        SCIFACT / "bm25-stem.trec.gz"
    )


def test_tags_are_kept_per_run_updated_removed_and_deleted_with_it(store_url, scifact):
    dataset, run = scifact
    store = Store(store_url)
    ds = store.put_dataset(dataset)
    ident = store.put_run(run, ds, tags={"commit": "9548cd6", "branch": "main", "note": "first  push"})
    assert Store(store_url).tags(ident) == {"branch": "main", "commit": "9548cd6", "note": "first  push"}
    # the same rows pushed again are the same run: its tags are updated, the others kept
    assert store.put_run(run, ds, tags={"commit": "abc1234", "chunk_size": 512}) == ident
    assert store.tags(ident) == {"branch": "main", "chunk_size": "512", "commit": "abc1234", "note": "first  push"}
    assert store.set_tags(ident, {"note": None, "system": "bm25"}) == {
        "branch": "main", "chunk_size": "512", "commit": "abc1234", "system": "bm25"}  # fmt: skip
    assert store.set_tags(ident, {"system": "bm25"}, replace=True) == {"system": "bm25"}
    assert store.tags_of() == {ident: {"system": "bm25"}}
    with pytest.raises(RagMetricsError, match="tag key"):
        store.set_tags(ident, {"bad key": "x"})
    with pytest.raises(RagMetricsError, match="control character"):
        store.set_tags(ident, {"note": "a\x00b"})
    with pytest.raises(RagMetricsError, match="bytes"):
        store.set_tags(ident, {"note": "x" * 5000})
    with pytest.raises(StoreKeyError):
        store.set_tags("0" * 16, {"a": "b"})
    assert store.tags(ident) == {"system": "bm25"}  # a refused change changes nothing
    store.delete_run(ident)
    assert store.tags_of() == {}


def test_a_tag_stored_before_its_rule_does_not_block_editing_the_others(store_url, scifact):
    """A ``date`` stored before dates were checked stays as it is while the other tags are edited (the Workspace
    saves them all together); changed, it is checked."""
    dataset, run = scifact
    store = Store(store_url)
    ident = store.put_run(run, store.put_dataset(dataset), tags={"note": "old"})
    with store.engine.begin() as conn:  # what an older release let through
        conn.execute(sa.insert(tags_table).values(run_id=ident, key="date", value="last week", updated_at=0.0))
    edited = tags_from_frame(pd.DataFrame({"key": ["date", "note"], "value": ["last week", "new"]}), store.tags(ident))
    assert store.set_tags(ident, edited, replace=True) == {"date": "last week", "note": "new"}
    with pytest.raises(RagMetricsError, match="tag 'date' is not an ISO 8601 date: 'yesterday'"):
        store.set_tags(ident, {"date": "yesterday"})
    with pytest.raises(RagMetricsError, match="tag 'date' is not an ISO 8601 date: 'yesterday'"):
        tags_from_frame(pd.DataFrame({"key": ["date"], "value": ["yesterday"]}), store.tags(ident))
    assert store.set_tags(ident, {"date": "2025-03-01"}) == {"date": "2025-03-01", "note": "new"}


def test_an_older_store_without_the_tags_table_opens_with_its_data(store_url, scifact):
    dataset, run = scifact
    store = Store(store_url)
    ds = store.put_dataset(dataset)
    ident = store.put_run(run, ds)
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE run_tags"))  # as a store made before run metadata existed
    store.engine.dispose()
    upgraded = Store(store_url)
    assert upgraded.list_runs(ds)["id"].tolist() == [ident]
    assert upgraded.get_run(ident).frame.equals(run.frame)
    assert upgraded.tags(ident) == {}
    assert upgraded.set_tags(ident, {"system": "bm25"}) == {"system": "bm25"}


def test_push_takes_meta_and_the_metadata_retrieve_wrote(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    out = tmp_path / "bm25.trec"
    data = ["--dataset", str(MINI / "qrels.tsv"), "--queries", str(MINI / "queries.jsonl")]
    code, _, err = run_cli("retrieve", *data, "--corpus", str(MINI / "corpus.jsonl"), "--retriever", "bm25",
                           "-o", str(out), "--k", "10", "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert code == 0, err
    written = json.loads((tmp_path / "bm25.trec.json").read_text())
    code, _, err = run_cli("push", "--store", url, *data, "--run", str(out), "--meta", "commit=9548cd6",
                           "--meta", "top_k=7")  # fmt: skip
    assert code == 0 and "1 with metadata" in err, err
    store = Store(url)
    (ident,) = store.list_runs()["id"]
    tags = store.tags(ident)
    assert tags["retriever.kind"] == "bm25" and tags["model"] == "bm25s" and tags["commit"] == "9548cd6"
    assert tags["top_k"] == "7"  # --meta wins over the retriever's k (10)
    assert float(tags["latency.p50_ms"]) == written["latency"]["p50_ms"]
    assert float(tags["latency.p95_ms"]) == written["latency"]["p95_ms"]
    assert tags["errors"] == str(written["counts"]["failed"]) == "0"
    assert tags["empty"] == str(written["counts"]["empty"]) and tags["date"] == written["started"]
    # meta shows, edits and exports them
    code, text, _ = run_cli("meta", "--store", url, ident, "--set", "system=bm25s-mini", "--unset", "commit")
    assert code == 0 and "system" in text and "commit" not in text
    code, _, err = run_cli("meta", "--store", url, ident, "--set", "note=x", "--unset", "note", "--unset", "top_k")
    assert code == 2 and "--set and --unset both name 'note': give one of them" in err
    assert store.tags(ident)["top_k"] == "7" and "note" not in store.tags(ident)  # nothing changed
    code, text, err = run_cli("meta", "--store", url, ident, "--format", "yaml", "--dataset", "qrels")
    assert code == 0, err
    doc = yaml.safe_load(text)
    assert doc["schema-version"] == 0.1 and doc["tag"] == "bm25"
    stage = doc["method"]["retrieval"][0]
    assert stage["name"] == "bm25s-mini" and stage["method"] == "bm25" and stage["top_k"] == 7 and stage["k1"] == 1.2
    assert doc["method"]["automatic"] is True
    assert doc["platform"]["software"]["retrieval toolkit"] == ["bm25s"]
    assert doc["data"]["test collection"] == {"name": "qrels", "qrels": "qrels.tsv, queries.jsonl"}
    assert doc["ragmetrics"]["latency.p50_ms"] == tags["latency.p50_ms"] and doc["ragmetrics"]["run_id"] == ident
    code, text, err = run_cli("meta", "--store", url, ident, "--format", "yaml")  # the one dataset it is linked to
    assert code == 0 and yaml.safe_load(text)["data"]["test collection"] == doc["data"]["test collection"], err
    code, _, err = run_cli("push", "--store", url, *data, "--run", str(out), "--meta", "no equals sign")
    assert code == 2 and "expected KEY=VALUE" in err


def test_a_dataset_pushed_with_queries_is_named_by_its_files_where_the_command_takes_them(tmp_path: Path):
    """``meta --dataset FILE`` reads the file as ``history`` does, with the ``--queries`` it was pushed with; a
    command without ``--queries`` (``leaderboard``) does not offer it. Was: ``meta`` had no ``--queries`` and both
    commands' error said to give it."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    qrels, queries = str(MINI / "qrels.tsv"), str(MINI / "queries.jsonl")
    run = str(MINI / "runs" / "bm25-stem.trec")
    code, _, err = run_cli("push", "--store", url, "--dataset", qrels, "--queries", queries, "--run", run,
                           "--meta", "system=bm25")  # fmt: skip
    assert code == 0, err
    code, text, err = run_cli("meta", "--store", url, "--dataset", qrels, "--queries", queries, "bm25-stem")
    assert (code, text) == (0, "system  bm25\n"), err
    code, _, err = run_cli("meta", "--store", url, "--dataset", qrels, "bm25-stem")
    assert code == 2 and "give the same --queries file it was pushed with" in err, err
    code, _, err = run_cli("leaderboard", "--store", url, "--dataset", qrels)
    assert code == 2 and "--queries file" not in err, err
    assert "pushed with --queries, name it by its stored name or id" in err, err


def test_a_broken_metadata_file_beside_a_run_is_a_clear_error(tmp_path: Path):
    run = tmp_path / "run.trec"
    run.write_bytes((MINI / "runs" / "bm25-stem.trec").read_bytes())
    (tmp_path / "run.trec.json").write_text('{"retriever": {"kind": "bm25"},\n "latency": ', encoding="utf-8")
    code, _, err = run_cli("push", "--store", f"sqlite:///{tmp_path / 's.sqlite'}", "--dataset",
                           str(MINI / "qrels.tsv"), "--run", str(run))  # fmt: skip
    assert code == 2 and "run.trec.json:2: expected valid JSON" in err and err.count("\n") == 1


def test_tag_parsing_and_the_ir_metadata_sections():
    assert parse_tags(["a=1", "b = x=y ", "a=1"]) == {"a": "1", "b": "x=y"}  # two values of a key: refused
    assert parse_tag_lines("commit=1\n\nbranch=dev\n") == {"commit": "1", "branch": "dev"}
    with pytest.raises(RagMetricsError, match="line 2"):
        parse_tag_lines("commit=1\nnope")
    # the dashboard's form as the CLI's --meta: a key given twice with two values is refused, naming the line
    with pytest.raises(RagMetricsError, match=r"metadata, line 3: commit: given twice, '1' and '2'"):
        parse_tag_lines("commit=1\nbranch=dev\ncommit=2")
    assert parse_tag_lines("commit=1\ncommit=1") == {"commit": "1"}
    # the timeline orders runs by their date: one it cannot place is refused where it is given, not skipped later
    assert parse_tags(["date=2025-03-01"]) == {"date": "2025-03-01"}
    assert parse_tags(["date=2025-03-01T12:00:00Z"]) == {"date": "2025-03-01T12:00:00Z"}
    for bad in ("2025-13-01", "yesterday"):
        with pytest.raises(RagMetricsError, match=f"tag 'date' is not an ISO 8601 date: '{bad}'"):
            parse_tags([f"date={bad}"])
    tags = retriever_tags({"retriever": {"kind": "http", "url": "http://x/search", "headers": None}, "k": 5,
                           "latency": {"p50_ms": 1.5, "p95_ms": 9.0, "max_ms": None}, "counts": {"failed": 2}})  # fmt: skip
    assert tags == {"retriever.kind": "http", "retriever.url": "http://x/search", "top_k": "5",
                    "latency.p50_ms": "1.5", "latency.p95_ms": "9", "errors": "2"}  # fmt: skip
    doc = ir_metadata({**tags, "author": "Ann", "cmd": "make run", "commit": "abc", "repository": "https://g/r"},
                      run_name="r", measures=["ndcg@10"])  # fmt: skip
    assert list(doc)[:5] == ["schema-version", "run-version", "tag", "platform", "research goal"]
    assert doc["implementation"] == {
        "executable": {"cmd": "make run"},
        "source": {"repository": "https://g/r", "commit": "abc"},
    }
    assert doc["actor"] == {"name": "Ann"} and doc["research goal"]["evaluation"]["reported measures"] == ["ndcg@10"]
    assert doc["ragmetrics"] == {"errors": "2", "latency.p50_ms": "1.5", "latency.p95_ms": "9"}


def test_retrieval_metadata_is_read_as_the_loaders_read_json():
    """Was: metadata nested 100,000 deep ended in a RecursionError the dashboard showed as the run's ("run.trec:
    could not be read (RecursionError ...)"), and a key named twice kept its last value."""
    from ragmetrics.foundation.errors import ParseError
    from ragmetrics.io.runmeta import load_retrieval_metadata

    deep = b'{"retriever":' * 100_000 + b"1" + b"}" * 100_000
    with pytest.raises(ParseError, match=r"^meta\.json:1: expected JSON nested at most 64 levels deep"):
        load_retrieval_metadata(deep, "meta.json")
    with pytest.raises(ParseError, match=r"^meta\.json:1: expected each key once in a JSON object, found 'k' again"):
        load_retrieval_metadata(b'{"retriever": {},\n "latency": {"k": 1, "k": 2}}', "meta.json")
