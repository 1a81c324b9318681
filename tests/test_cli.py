"""The command line, run as a user runs it: a real process on real files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

SCIFACT = Path(__file__).parent / "data" / "scifact"
QRELS = str(SCIFACT / "qrels.tsv")
BM25 = str(SCIFACT / "bm25-stem.trec.gz")
DENSE = str(SCIFACT / "dense-all-minilm-l6-v2.trec.gz")
HYBRID = str(SCIFACT / "hybrid-rrf60.trec.gz")


def cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ragmetrics")
    command = [exe] if exe else [sys.executable, "-m", "ragmetrics"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


def test_eval_prints_the_published_scifact_bm25_scores():
    done = cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10", "-m", "recall@100", "-m", "mrr")
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    values = {name.strip(): value for name, qid, value in lines if qid == "all"}
    assert values["runid"] == "bm25-stem" and values["num_q"] == "300"
    assert (values["ndcg@10"], values["recall@100"], values["mrr"]) == ("0.6791", "0.9127", "0.6475")


def test_eval_json_has_exactly_the_documented_shape():
    done = cli(
        "eval",
        "--dataset",
        QRELS,
        "--run",
        BM25,
        "--run",
        DENSE,
        "-m",
        "nDCG@10",
        "-m",
        "RR",
        "--per-query",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert list(payload) == ["runs"]
    assert list(payload["runs"]) == ["bm25-stem", "dense-all-minilm-l6-v2"]
    bm25 = payload["runs"]["bm25-stem"]
    assert list(bm25) == ["num_q", "mean", "per_query", "notes"] and bm25["num_q"] == 300
    noted = [
        line.split(": ", 3)[3] for line in done.stderr.splitlines() if line.startswith("ragmetrics: note: run 'bm25")
    ]
    assert noted == ["; ".join(bm25["notes"])]
    assert bm25["notes"] and "judged@10 = 0.09" in bm25["notes"][-1]  # the notes beside the table, kept in the data
    assert list(bm25["mean"]) == ["ndcg@10", "mrr"]
    assert len(bm25["per_query"]) == 300 and bm25["per_query"]["1"].keys() == {"ndcg@10", "mrr"}
    assert round(bm25["mean"]["ndcg@10"], 4) == 0.6791
    without = json.loads(cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "mrr", "--format", "json").stdout)
    assert list(without["runs"]["bm25-stem"]) == ["num_q", "mean", "notes"]


@pytest.mark.parametrize("fmt", ["csv", "markdown"])
def test_other_formats(fmt, tmp_path):
    done = cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10", "--format", fmt)
    assert done.returncode == 0, done.stderr
    if fmt == "csv":
        (tmp_path / "out.csv").write_text(done.stdout)
        frame = pd.read_csv(tmp_path / "out.csv")
        assert frame.columns.tolist() == ["run", "query_id", "ndcg@10"]
        assert frame.iloc[0].tolist()[:2] == ["bm25-stem", "all"]
    else:
        assert done.stdout.splitlines()[0] == "| run | ndcg@10 |"
        assert "| bm25-stem | 0.6791 |" in done.stdout


def test_missing_skip_and_llamaindex_mode(tmp_path):
    trunc = tmp_path / "trunc.trec"
    lines = [line for line in pd.read_csv(BM25, header=None, sep="\t")[0] if not line.startswith("1 ")]
    trunc.write_text("\n".join(lines) + "\n")
    zero = cli("eval", "--dataset", QRELS, "--run", str(trunc), "-m", "mrr", "--format", "json")
    skip = cli("eval", "--dataset", QRELS, "--run", str(trunc), "-m", "mrr", "--format", "json", "--missing", "skip")
    assert "1 judged queries missing from the run" in zero.stderr
    assert (
        json.loads(zero.stdout)["runs"]["trunc"]["mean"]["mrr"]
        < json.loads(skip.stdout)["runs"]["trunc"]["mean"]["mrr"]
    )
    li = cli(
        "eval",
        "--dataset",
        QRELS,
        "--run",
        BM25,
        "-m",
        "hit_rate",
        "-m",
        "mrr",
        "--mode",
        "llamaindex",
        "--format",
        "json",
    )
    assert li.returncode == 0, li.stderr
    assert set(json.loads(li.stdout)["runs"]["bm25-stem"]["mean"]) == {"hits", "mrr"}


def test_llamaindex_mode_says_that_a_query_missing_from_the_run_is_left_out(tmp_path):
    qrels, run = tmp_path / "q.qrels", tmp_path / "r.trec"
    qrels.write_text("q1 0 d1 1\nq2 0 d4 1\nq3 0 d9 1\n")
    run.write_text("q1 Q0 d1 1 3.0 s\nq1 Q0 d5 2 2.0 s\nq2 Q0 d7 1 5.0 s\nq2 Q0 d4 2 4.0 s\n")  # no q3
    li = cli("eval", "--dataset", str(qrels), "--run", str(run), "-m", "mrr", "--mode", "llamaindex")
    assert li.returncode == 0 and "mrr                   \tall\t0.7500" in li.stdout  # q3 has no value (not 0)
    assert "num_q                 \tall\t2" in li.stdout  # the queries the mean is over
    assert "1 judged queries missing from the run (left out: LlamaIndex scores no empty list)" in li.stderr
    trec = cli("eval", "--dataset", str(qrels), "--run", str(run), "-m", "mrr")
    assert "mrr                   \tall\t0.5000" in trec.stdout and "missing from the run (scored 0)" in trec.stderr


def test_bad_input_is_one_line_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 oops run\n")
    done = cli("eval", "--dataset", QRELS, "--run", str(bad))
    assert done.returncode == 2
    assert "bad.trec:2:" in done.stderr and "Traceback" not in done.stderr
    unknown = cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndgc@10")
    assert unknown.returncode == 2 and "did you mean 'ndcg@10'" in unknown.stderr
    missing = cli("eval", "--dataset", str(tmp_path / "nope.tsv"), "--run", BM25)
    assert missing.returncode == 2 and "nope.tsv" in missing.stderr and "Traceback" not in missing.stderr


def test_compare_json(tmp_path):
    done = cli(
        "compare",
        "--dataset",
        QRELS,
        "--baseline",
        BM25,
        "--run",
        HYBRID,
        "--run",
        DENSE,
        "-m",
        "ndcg@10",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["comparisons"]
    assert [(r["baseline"], r["run"]) for r in rows] == [
        ("bm25-stem", "hybrid-rrf60"),
        ("bm25-stem", "dense-all-minilm-l6-v2"),
    ]
    keys = {
        "metric",
        "baseline",
        "run",
        "n",
        "mean",
        "baseline_mean",
        "delta",
        "sd_difference",
        "ci_low",
        "ci_high",
        "ci_low_adjusted",
        "ci_high_adjusted",
        "ci_level_adjusted",
        "ci_method",
        "ci_method_adjusted",
        "p_value",
        "p_t",
        "p_value_corrected",
        "wins",
        "ties",
        "losses",
    }
    assert set(rows[0]) == keys and rows[0]["n"] == 300 and rows[0]["p_t"] == rows[0]["p_value"]  # --test t
    family = json.loads(done.stdout)["family"]  # every pair of the three runs, on the one metric
    assert family == {"correction": "holm", "size": 3, "covers": "all pairs of 3 runs x 1 metric"}
    hybrid = rows[0]
    assert hybrid["ci_low_adjusted"] < hybrid["ci_low"] and hybrid["ci_high"] < hybrid["ci_high_adjusted"]
    assert round(hybrid["mean"], 4) == 0.7132 and round(hybrid["baseline_mean"], 4) == 0.6791
    assert hybrid["ci_low"] < hybrid["delta"] < hybrid["ci_high"] and hybrid["p_value"] < 0.05
    assert hybrid["wins"] + hybrid["ties"] + hybrid["losses"] == 300


def test_fuse_writes_a_trec_run_that_scores_like_the_published_hybrid(tmp_path):
    out = tmp_path / "rrf.trec"
    done = cli("fuse", "--method", "rrf", "--k", "60", "-o", str(out), BM25, DENSE)
    assert done.returncode == 0, done.stderr
    first = out.read_text().splitlines()[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1"
    scored = cli("eval", "--dataset", QRELS, "--run", str(out), "-m", "ndcg@10", "--format", "json")
    assert round(json.loads(scored.stdout)["runs"]["rrf"]["mean"]["ndcg@10"], 4) == 0.7132
    # -o -: the run on standard output, the note on standard error (was: a file named "-")
    piped = cli("fuse", "--method", "rrf", "--k", "60", "-o", "-", BM25, DENSE)
    assert piped.returncode == 0 and piped.stdout == out.read_text() and not Path("-").exists()
    assert "ragmetrics: wrote standard output (300 queries" in piped.stderr


def test_check_fails_a_regression_and_passes_an_improvement(tmp_path):
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"ndcg@10": 0.60}))
    improvement = cli("check", "--dataset", QRELS, "--run", HYBRID, "--baseline", BM25, "--targets", str(targets))
    assert improvement.returncode == 0, improvement.stdout + improvement.stderr
    assert "PASS ndcg@10 = 0.7132" in improvement.stdout and "PASS improvement" in improvement.stdout
    regression = cli("check", "--dataset", QRELS, "--run", BM25, "--baseline", HYBRID, "--targets", str(targets))
    assert regression.returncode == 1
    assert "FAIL regression: ndcg@10 0.6791 vs baseline 0.7132" in regression.stdout
    missed = cli("check", "--dataset", QRELS, "--run", HYBRID, "--targets", "faq")
    assert missed.returncode == 1
    assert "FAIL recall@5" in missed.stdout and "vs target > 0.90: fail" in missed.stdout
    # check gates one run: a second --run is refused, never the last one silently checked alone
    twice = cli("check", "--dataset", QRELS, "--run", HYBRID, "--run", BM25, "--targets", str(targets))
    assert twice.returncode == 2 and not twice.stdout
    assert "argument --run: given twice: check gates one run" in twice.stderr and "Traceback" not in twice.stderr
    # nor a second --targets or --baseline: the first one's thresholds would vanish from the gate
    for option, value in (("--targets", "recall@5>0.1"), ("--baseline", BM25)):
        again = cli("check", "--dataset", QRELS, "--run", HYBRID, "--targets", "ndcg@10>0.6", "--baseline", BM25,
                    option, value)  # fmt: skip
        assert again.returncode == 2 and f"argument {option}: given twice" in again.stderr, again.stderr
    # the regression gate's options without a baseline would be taken and ignored: refused
    lone = cli("check", "--dataset", QRELS, "--run", HYBRID, "--targets", "ndcg@10>0.6", "--alpha", "0.01")
    assert lone.returncode == 2 and "--alpha 0.01: read only with --baseline" in lone.stderr
    # a target's interval draws nothing (Student's t): --resamples and --seed are the regression gate's only
    checked = cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "ndcg@10>0.6")
    assert "(95% CI 0.6351-0.7231)" in checked.stdout.splitlines()[0]
    seeded = cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "ndcg@10>0.6", "--seed", "3")
    assert seeded.returncode == 2 and "--seed 3: read only with --baseline" in seeded.stderr


def test_push_stores_the_files_and_prints_a_share_link(tmp_path):
    from ragmetrics.store.database import Store

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    done = cli(
        "push",
        "--store",
        url,
        "--dataset",
        QRELS,
        "--run",
        BM25,
        "--run",
        HYBRID,
        "--base-url",
        "http://dash.example:8501/",
    )
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    store = Store(url)
    dataset_id = store.list_datasets()["id"].item()
    run_ids = store.list_runs(dataset_id)["id"].tolist()
    assert link == f"http://dash.example:8501/overview?ds={dataset_id}&runs={run_ids[0]},{run_ids[1]}"
    assert store.get_run(run_ids[0]).name == "bm25-stem"
    # the Workspace page shows which files they came from
    assert store.list_datasets()["source"].tolist() == [Path(QRELS).name]
    assert store.list_runs(dataset_id)["source"].tolist() == [Path(BM25).name, Path(HYBRID).name]
    assert "stored before" not in done.stderr
    # the same rows pushed again under another file name, with a new date: kept once, its first name, and said so
    # (was: only "stored ... 1 run(s)", the date moved and the timeline changed without a word)
    again = tmp_path / "bm25-v2.trec.gz"
    shutil.copy(BM25, again)
    pushed = cli("push", "--store", url, "--dataset", QRELS, "--run", str(again), "--meta", "date=2026-01-04")
    assert pushed.returncode == 0, pushed.stderr
    assert ("ragmetrics: note: run 'bm25-stem' was stored before, the same rows: it keeps its name (not as "
            "'bm25-v2'); tags added: date 2026-01-04") in pushed.stderr  # fmt: skip
    moved = cli("push", "--store", url, "--dataset", QRELS, "--run", str(again), "--meta", "date=2026-01-05")
    assert "tags changed: date 2026-01-04 → 2026-01-05" in moved.stderr


def test_push_after_people_saved_a_qrels_version_links_the_run_to_the_newest_too(tmp_path):
    """CI pushes a run on the original qrels after people saved a version of them: the run is on the version too
    (the pages and the leaderboard show the newest), and the note says so with its link."""
    from ragmetrics.store.database import Store

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    assert cli("push", "--store", url, "--dataset", QRELS, "--run", BM25).returncode == 0
    store = Store(url)
    original = store.list_datasets()["id"].item()
    store.add_label(original, "1", "unjudged-doc", 1, author="ann")
    version = store.commit_labels(original, author="ann").version
    done = cli("push", "--store", url, "--dataset", QRELS, "--run", HYBRID)
    assert done.returncode == 0, done.stderr
    assert (
        sorted(store.list_runs(version)["id"]) == sorted(store.list_runs(original)["id"])
        and len(store.list_runs(version)) == 2
    )
    assert "has newer qrels versions made from people's labels; the run(s) are linked to the newest too" in done.stderr
    assert f"/overview?ds={version}&runs=" in done.stderr


def test_push_declares_the_datasets_targets_and_refuses_ones_that_do_not_read(tmp_path):
    from ragmetrics.store.database import Store

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    bad = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--dataset-targets", "ndcg@10=0.6")
    assert bad.returncode == 2 and "expected a profile" in bad.stderr and "Traceback" not in bad.stderr
    assert Store(url).list_datasets().empty  # nothing stored
    done = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--dataset-targets", "ndcg@10>0.6")
    assert done.returncode == 0, done.stderr
    assert Store(url).list_datasets()["targets"].tolist() == ["ndcg@10>0.6"]
    # pushed again with other targets and another name: the stored dataset keeps its own, and the push says so
    again = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--dataset-targets", "faq", "--name", "x")
    assert again.returncode == 0, again.stderr
    assert Store(url).list_datasets()[["name", "targets"]].values.tolist() == [["qrels", "ndcg@10>0.6"]]
    assert "with the targets 'ndcg@10>0.6': it keeps them (--dataset-targets 'faq' not stored)" in again.stderr
    assert "was stored before as 'qrels': it keeps that name" in again.stderr
    same = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--dataset-targets", "ndcg@10>0.6")
    assert same.returncode == 0 and "note: dataset" not in same.stderr


def test_push_refuses_a_run_that_does_not_meet_the_qrels_before_storing_anything(tmp_path):
    from ragmetrics.store.database import Store

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    other = tmp_path / "other.trec"
    other.write_text("q1 Q0 d1 1 2.0 x\nq2 Q0 d2 1 1.0 x\n")  # none of SciFact's queries
    refused = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--run", str(other))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "run 'other'" in refused.stderr and "--allow-no-overlap" in refused.stderr
    assert Store(url).list_runs().empty and Store(url).list_datasets().empty  # nothing stored, not even the first
    insisted = cli("push", "--store", url, "--dataset", QRELS, "--run", str(other), "--allow-no-overlap")
    assert insisted.returncode == 0 and Store(url).list_runs()["name"].tolist() == ["other"]


def test_push_names_the_dataset_as_asked(tmp_path):
    from ragmetrics.store.database import Store

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    done = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--name", "SciFact test")
    assert done.returncode == 0, done.stderr
    assert Store(url).list_datasets()["name"].tolist() == ["SciFact test"]
    bad = cli("push", "--store", url, "--dataset", QRELS, "--run", BM25, "--name", "x" * 600)
    assert bad.returncode == 2 and "--name" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    ("engine", "option", "said"),
    [
        ("inprocess", ["--memory-limit", "1GB"], "--memory-limit 1GB: read only with --engine duckdb, polars"),
        ("inprocess", ["--buckets", "3"], "--buckets 3: read only with --engine duckdb, polars"),
        ("inprocess", ["--spark-master", "yarn"], "--spark-master yarn: read only with --engine spark, not --engine "),
        ("polars", ["--memory-limit", "1GB"], "the polars engine has no memory limit to set"),
        ("spark", ["--memory-limit", "1GB"], "the spark engine has no memory limit to set"),
        ("stream", ["--work-dir", "work"], "--work-dir: the stream engine writes no work file"),
        ("spark", ["--work-dir", "work"], "--work-dir: the spark engine writes no work file"),
        (
            "duckdb",
            ["--spark-master", "yarn"],
            "--spark-master yarn: read only with --engine spark, not --engine duckdb",
        ),
        (
            "polars",
            ["--spark-master", "yarn"],
            "--spark-master yarn: read only with --engine spark, not --engine polars",
        ),
        (
            "stream",
            ["--spark-master", "yarn"],
            "--spark-master yarn: read only with --engine spark, not --engine stream",
        ),
    ],
)
def test_an_engine_option_the_engine_does_not_read_is_refused_not_ignored(engine, option, said):
    done = cli("eval", "--dataset", QRELS, "--run", BM25, "--engine", engine, *option)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_sqlite_store_s_file_alone_holds_what_a_command_wrote(tmp_path):
    """Was: the store stayed in write-ahead-log mode with its log never folded in when the command ended, so the
    ``.sqlite`` file alone (a CI artifact copied without its ``-wal``) held no table. The last connection is now
    closed as the process ends, which checkpoints the log into the file."""
    store = tmp_path / "store.sqlite"
    done = cli("push", "--store", f"sqlite:///{store}", "--dataset", QRELS, "--run", BM25)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "store.sqlite-wal").exists()
    copied = tmp_path / "artifact"
    copied.mkdir()
    shutil.copy(store, copied / "store.sqlite")  # the file alone
    done = cli("history", "--store", f"sqlite:///{copied / 'store.sqlite'}", "--dataset", "qrels", "-m", "ndcg@10")
    assert done.returncode == 0, done.stderr
    assert "bm25-stem" in done.stdout
