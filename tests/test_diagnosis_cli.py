"""``ragmetrics diagnose``: the rules of ``ragmetrics.analysis.diagnosis`` from the command line, as text, JSON or CSV."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics.analysis.diagnosis import diagnose_run
from ragmetrics.io import load_dataset, load_run
from tests.test_cli import cli

FAQ = Path(__file__).resolve().parent.parent / "sample_runs" / "product_faq_zh"
EVAL_SET = str(FAQ / "eval_set.json")
BM25 = str(FAQ / "runs" / "bm25.jsonl")


def easy_dataset(tmp_path: Path) -> tuple[str, str]:
    """20 easy queries; the run ranks the relevant document first for 16 of them and never for 4."""
    items = [
        {
            "query_id": f"q{i:02d}",
            "query": f"question number {i} about the product",
            "difficulty": "easy",
            "category": "billing" if i < 10 else "setup",
            "relevant_docs": [f"d{i}"],
        }
        for i in range(20)
    ]
    dataset = tmp_path / "easy.json"
    dataset.write_text(json.dumps(items))
    lines = []
    for i in range(20):
        docs = [f"d{i}", "x1", "x2"] if i < 16 else ["x1", "x2", "x3"]
        lines += [f"q{i:02d} Q0 {doc} {rank} {10 - rank} run" for rank, doc in enumerate(docs, 1)]
    run = tmp_path / "missing-easy.trec"
    run.write_text("\n".join(lines) + "\n")
    return str(dataset), str(run)


def test_text_output_names_each_run_and_cites_numbers() -> None:
    done = cli("diagnose", "--dataset", EVAL_SET, "--run", BM25, "--k", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("== bm25: 2 finding(s) at K=3\nthe run is lexical (BM25), from its name 'bm25'\n")
    assert "[warning] 10 hard queries are missed at K=3" in done.stdout
    assert "most missed queries (11 of 13, 85%) have their first relevant document at ranks 4–20" in done.stdout
    # each advice with its evidence in words, under it
    assert (
        "  - Or raise K to 20 if the generator can take that much context.\n"
        "    because Hits@20 = 0.978 against Hits@3 = 0.857: with K = 20, 11 more of the 91 queries would hand the "
        "generator a relevant document.\n"
    ) in done.stdout
    assert "fuse this lexical run with a dense one" in done.stdout and "fuse BM25 with this run" not in done.stdout


def test_what_the_run_is_comes_from_its_metadata_then_meta(tmp_path: Path) -> None:
    """A run named for nothing: its kind from the metadata ragmetrics retrieve wrote beside it, or --meta."""
    run = tmp_path / "candidate.jsonl"
    run.write_bytes(Path(BM25).read_bytes())
    plain = cli("diagnose", "--dataset", EVAL_SET, "--run", str(run), "--k", "3")
    assert plain.returncode == 0, plain.stderr
    assert (
        "the run is of unknown kind" in plain.stdout and "If this run uses one kind of retriever only" in plain.stdout
    )
    sidecar = {"retriever": {"kind": "bm25", "model": "bm25s"}, "latency": {"p50_ms": 1.0}, "k": 100}
    Path(f"{run}.json").write_text(json.dumps(sidecar))
    lexical = cli("diagnose", "--dataset", EVAL_SET, "--run", str(run), "--k", "3")
    assert "the run is lexical (BM25), from its tag retriever.kind=bm25" in lexical.stdout
    assert "fuse this lexical run with a dense one" in lexical.stdout
    dense = cli("diagnose", "--dataset", EVAL_SET, "--run", str(run), "--k", "3", "--meta", "model=BAAI/bge-base-en")
    assert "the run is lexical (BM25), from its tag retriever.kind=bm25" in dense.stdout  # retriever.kind is read first
    fused = cli("diagnose", "--dataset", EVAL_SET, "--run", str(run), "--k", "3", "--meta", "fusion=rrf")
    assert "the run is fused, from its tag fusion=rrf" in fused.stdout and "Hybrid retrieval" not in fused.stdout
    bad = cli("diagnose", "--dataset", EVAL_SET, "--run", str(run), "--meta", "kind")
    assert bad.returncode == 2 and "expected KEY=VALUE" in bad.stderr and "Traceback" not in bad.stderr


def test_json_and_csv_hold_the_library_findings() -> None:
    expected = diagnose_run(load_dataset(EVAL_SET), load_run(BM25), k=3)
    done = cli("diagnose", "--dataset", EVAL_SET, "--run", BM25, "--k", "3", "--format", "json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert [(f["run"], f["rule"], f["title"], f["evidence"]) for f in payload] == [
        (f.run, f.rule, f.title, f.evidence) for f in expected
    ]
    assert [a["because"] for f in payload for a in f["advice"]] == [a.because for f in expected for a in f.advice]
    assert all(a["because"] for f in payload for a in f["advice"])
    done = cli("diagnose", "--dataset", EVAL_SET, "--run", BM25, "--k", "3", "--format", "csv")
    table = pd.read_csv(pd.io.common.StringIO(done.stdout))
    assert table["rule"].tolist() == [f.rule for f in expected]


def test_fail_on_error_fails_when_easy_queries_are_missed(tmp_path: Path) -> None:
    dataset, run = easy_dataset(tmp_path)
    done = cli("diagnose", "--dataset", dataset, "--run", run, "--k", "3")
    assert done.returncode == 0, done.stderr
    assert "[error] 4 easy queries are missed at K=3" in done.stdout
    assert (
        "4 of 20 easy queries (20%) have no relevant document in the top 3; all 4 of them never retrieve one at all"
        in done.stdout
    )
    failed = cli("diagnose", "--dataset", dataset, "--run", run, "--k", "3", "--fail-on-error")
    assert failed.returncode == 1 and failed.stdout == done.stdout
    good_run = tmp_path / "good.trec"
    good_run.write_text("".join(f"q{i:02d} Q0 d{i} 1 1.0 good\n" for i in range(20)))
    good = cli("diagnose", "--dataset", dataset, "--run", str(good_run), "--k", "3", "--fail-on-error")
    assert good.returncode == 0, good.stderr
    assert (
        good.stdout == "== good: 0 finding(s) at K=3\nthe run is of unknown kind (nothing says: neither its "
        "tags, its name nor its scores; tag it retriever.kind=dense, lexical or fused, or model=NAME, for advice "
        "that fits it)\n"
    )


@pytest.mark.parametrize(
    ("k", "message"),
    [
        ("0", "argument -k/--k: expected a whole number of at least 1, found 0"),
        ("x", "argument -k/--k: expected a whole number, found 'x'"),
    ],
)
def test_bad_k_is_a_usage_error(k: str, message: str) -> None:
    done = cli("diagnose", "--dataset", EVAL_SET, "--run", BM25, "--k", k)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
