"""``ragmetrics history`` and ``ragmetrics leaderboard`` on a real store: the five seeded SciFact versions, the
two-system leaderboard on SciFact and CMRC, and the LaTeX table against its checked-in copy."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ragmetrics as rm
from ragmetrics.analysis import stats
from ragmetrics.analysis.history import StoredRun, timeline
from ragmetrics.cli import main
from ragmetrics.store.database import Store
from tests.timeline_runs import DATES, DROP_VERSION, SCIFACT, write_versions

REPO = Path(__file__).resolve().parents[1]
CMRC = REPO / "sample_runs" / "cmrc2018"
EXPECTED_LATEX = Path(__file__).parent / "data" / "history" / "leaderboard.tex"
DATASET = ["--dataset", str(SCIFACT / "qrels.tsv"), "--queries", str(SCIFACT / "queries.jsonl")]


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_versions(tmp_path_factory.mktemp("versions"))


@pytest.fixture
def store_of_four(tmp_path: Path, versions: list[Path]) -> str:
    """A store holding versions 1-4 (each pushed with its date and branch)."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for number, path in enumerate(versions[:4], 1):
        code, _, err = run_cli("push", "--store", url, *DATASET, "--run", str(path),
                               "--meta", f"date={DATES[number - 1]}", "--meta", "branch=main",
                               "--meta", f"version={number}")  # fmt: skip
        assert code == 0, err
    return url


def history(url: str, *extra: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("history", "--store", url, *DATASET, "-m", "ndcg@10", "--format", "json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out), err


def test_history_flags_exactly_the_significant_drop_and_exits_1_on_it(store_of_four: str, versions: list[Path]):
    code, before, _ = history(store_of_four)
    assert code == 0 and before["first_drop"] is None and not before["last_step_drops"]
    assert [s["order"] for s in before["steps"]] == DATES[:4]
    assert all(not s["drop"] for s in before["steps"])
    # the nightly job pushes version 5: the gate fails on that step and only on it
    assert run_cli("push", "--store", store_of_four, *DATASET, "--run", str(versions[4]),
                   "--meta", f"date={DATES[4]}", "--meta", "branch=main", "--meta", "version=5")[0] == 0  # fmt: skip
    code, after, err = history(store_of_four)
    assert code == 1 and "significant drop" in err
    drops = [s["step"] for s in after["steps"] if s["drop"]]
    assert drops == [DROP_VERSION] == [after["first_drop"]]
    step = after["steps"][DROP_VERSION - 1]
    assert step["delta"] < 0 and step["delta_high"] < 0 and step["p_value"] < 0.05
    means = [s["mean"] for s in after["steps"]]
    assert step["delta"] == pytest.approx(means[4] - means[3], abs=1e-12)
    assert means[0] == pytest.approx(0.6791, abs=5e-5)  # the shared BM25 run's nDCG@10
    # the terminal table says the same: one DROP line, the fifth, marked as the first significant drop
    code, text, _ = run_cli("history", "--store", store_of_four, *DATASET, "-m", "ndcg@10")
    assert code == 1
    flagged = [line for line in text.splitlines() if "DROP" in line]
    assert len(flagged) == 1 and flagged[0].split()[0] == str(DROP_VERSION) and "first significant drop" in flagged[0]
    code, csv_text, _ = run_cli("history", "--store", store_of_four, *DATASET, "--format", "csv")
    assert code == 1 and csv_text.splitlines()[0].startswith('"step","run_id"') and "tag:branch" in csv_text
    written = pd.read_csv(io.StringIO(csv_text))  # every p-value as the JSON holds it, a tiny one not rounded to 0
    held = [s["p_value"] for s in after["steps"]]
    assert held[0] is None and np.isnan(written["p_value"][0])  # the first step is tested against nothing
    assert written["p_value"].tolist()[1:] == pytest.approx(held[1:], rel=1e-9)
    assert min(held[1:]) < 1e-6  # a p-value the 6 decimals wrote as 0.000000


def test_the_dataset_is_named_by_file_name_or_id_and_runs_by_another_tag(store_of_four: str):
    _, by_file, _ = history(store_of_four)
    ident = by_file["dataset"]
    for spec in (ident, by_file["dataset_name"]):
        code, out, err = run_cli("history", "--store", store_of_four, "--dataset", spec, "--format", "json")
        assert code == 0, err
        assert [s["run_id"] for s in json.loads(out)["steps"]] == [s["run_id"] for s in by_file["steps"]]
    # --by a numeric tag orders 1, 2, ... (not as text); --where keeps only matching runs
    _, by_version, _ = history(store_of_four, "--by", "version")
    assert [s["order"] for s in by_version["steps"]] == ["1", "2", "3", "4"]
    _, none, _ = history(store_of_four, "--where", "branch=main", "--where", "version=3")
    assert len(none["steps"]) == 1
    code, _, err = run_cli("history", "--store", store_of_four, "--dataset", "no-such-dataset")
    assert code == 2 and "neither a file, a stored dataset's id nor its name" in err
    code, _, err = run_cli("history", "--store", store_of_four, *DATASET, "--where", "branch=nope")
    assert code == 2 and "no run of dataset" in err


def test_each_step_is_also_tested_against_a_pinned_baseline(store_of_four: str):
    _, line, _ = history(store_of_four)
    first = line["steps"][0]["run_id"]
    _, pinned, _ = history(store_of_four, "--baseline", first)
    steps = pinned["steps"]
    assert steps[0]["baseline_p_value"] is None  # the baseline itself
    for step in steps[1:]:
        assert step["baseline_delta"] == pytest.approx(step["mean"] - steps[0]["mean"], abs=1e-12)
        assert step["baseline_p_value"] is not None
    # against the pinned baseline the question is every page's: Holm over the runs tested against it, named so,
    # and the star follows the corrected p-value
    raw = np.array([step["baseline_p_value"] for step in steps[1:]])
    assert [step["baseline_p_value_corrected"] for step in steps[1:]] == pytest.approx(stats.holm(raw).tolist())
    assert all(step["baseline_significant"] == (step["baseline_p_value_corrected"] < 0.05) for step in steps[1:])
    assert pinned["baseline_family"] == "Holm-corrected over 3 comparison(s) (3 runs against the baseline x 1 metric)"
    assert [step["baseline_method"] for step in steps] == ["none", "t", "t", "t"] and line["baseline_intervals"] == ""
    assert pinned["baseline_intervals"] == stats.delta_interval_method("holm", ["t"])
    code, text, err = run_cli("history", "--store", store_of_four, *DATASET, "-m", "ndcg@10", "--baseline", first)
    assert code in (0, 1), err
    assert (
        "vs baseline: * = Holm-corrected over 3 comparison(s) (3 runs against the baseline x 1 metric), p < 0.05"
        in text
    )
    assert re.search(r"vs baseline [+-]\d\.\d{4} p=\S+ \(holm \S+\)", text), text


def _eval_means(dataset: list[str], runs: list[Path]) -> dict[str, float]:
    code, out, err = run_cli("eval", *dataset, *(a for r in runs for a in ("--run", str(r))), "-m", "ndcg@10")
    assert code == 0, err
    means, name = {}, None
    for line in out.splitlines():
        measure, _, value = line.split("\t")
        if measure.strip() == "runid":
            name = value
        elif measure.strip() == "ndcg@10":
            means[name] = float(value)
    return means


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict[str, float]]]:
    """BM25 and dense runs of SciFact and CMRC 2018 pushed with a system tag; ``eval``'s means of each."""
    url = f"sqlite:///{tmp_path_factory.mktemp('board') / 'store.sqlite'}"
    sets = {
        "scifact": ([*DATASET], {"BM25": SCIFACT / "bm25-stem.trec.gz", "dense_MiniLM": SCIFACT / "dense-all-minilm-l6-v2.trec.gz"}),
        "cmrc": (["--dataset", str(CMRC / "qrels.tsv"), "--queries", str(CMRC / "queries.jsonl")],
                 {"BM25": CMRC / "runs" / "bm25-jieba.trec.gz",
                  "dense_MiniLM": CMRC / "runs" / "dense-multilingual-e5-small-q4.trec.gz"}),
    }  # fmt: skip
    printed = {}
    store = Store(url)
    for label, (dataset, runs) in sets.items():
        for system, path in runs.items():
            code, _, err = run_cli("push", "--store", url, *dataset, "--run", str(path), "--meta", f"system={system}")
            assert code == 0, err
        means = _eval_means(dataset, list(runs.values()))
        printed[label] = {system: means[Path(path).name.split(".")[0]] for system, path in runs.items()}
    scifact, cmrc = store.list_datasets().sort_values("created_at")["id"]  # both are named qrels: SciFact came first
    store.rename_dataset(scifact, "SciFact_test & co")  # LaTeX specials, escaped in the table
    store.rename_dataset(cmrc, "CMRC 2018 #zh")
    return url, printed


def test_the_leaderboard_equals_the_means_eval_prints(two_systems):
    url, printed = two_systems
    code, out, err = run_cli(
        "leaderboard", "--store", url, "-m", "ndcg@10", "--system-tag", "system", "--format", "json"
    )
    assert code == 0, err
    board = json.loads(out)
    names = [d["name"] for d in board["datasets"]]
    assert len(names) == 2
    rows = {r["system"]: r for r in board["rows"]}
    assert set(rows) == {"BM25", "dense_MiniLM"}
    for label, column in zip(("scifact", "cmrc"), names):
        for system, value in printed[label].items():
            assert round(rows[system][column], 4) == value  # eval prints 4 decimals
    for row in rows.values():
        assert row["mean"] == pytest.approx(sum(row[c] for c in names) / 2, abs=1e-12)
        assert row["mean_rank"] == pytest.approx(sum(row[f"{c} rank"] for c in names) / 2)
    # SciFact: BM25 0.6791 vs dense 0.6451 (p 0.064, t test): not significantly apart, so dense is marked
    assert {(t["dataset"], t["system"], t["significant"]) for t in board["tests"]} >= {
        (names[0], "dense_MiniLM", False)
    }


def test_the_latex_leaderboard_is_a_valid_tabular_equal_to_the_checked_in_file(two_systems):
    url, _ = two_systems
    code, latex, err = run_cli("leaderboard", "--store", url, "-m", "ndcg@10", "--format", "latex")
    assert code == 0, err
    assert latex == EXPECTED_LATEX.read_text(encoding="utf-8")
    body = latex.split("\\begin{tabular}{", 1)[1].split("\\end{tabular}", 1)[0]
    spec, rows = body.split("}", 1)
    columns = len(spec)
    lines = [line for line in rows.strip().splitlines() if not line.startswith("\\") or "&" in line]
    assert len(lines) == 3  # the header and two systems
    for line in lines:
        assert line.endswith(" \\\\") and line.count(" & ") == columns - 1
        unescaped = re.sub(r"\\[&%$#_{}]|\$\^\\dagger\$|\\textbackslash\{\}", "", line[:-3])
        assert not re.search(r"(?<!\\)[&%#_{}]", unescaped.replace(" & ", " "))  # every special escaped
    assert "SciFact\\_test \\& co" in latex and "CMRC 2018 \\#zh" in latex and "dense\\_MiniLM" in latex
    code, markdown, _ = run_cli("leaderboard", "--store", url, "--format", "markdown")
    assert code == 0 and markdown.startswith("| system |")
    code, csv_text, _ = run_cli("leaderboard", "--store", url, "--format", "csv")
    assert code == 0 and "tied with best" in csv_text.splitlines()[0]
    board = pd.read_csv(io.StringIO(csv_text))  # numbers bare, ties as booleans: a reader types them (were quoted)
    ranks = [c for c in board.columns if c.endswith(" rank")]
    tied = [c for c in board.columns if c.endswith(" tied with best")]
    assert ranks and all(board[c].dtype.kind == "i" for c in ranks)
    assert tied and all(board[c].dtype == bool for c in tied) and board["mean"].dtype.kind == "f"
    assert not re.search(r'"[-0-9.]+"', csv_text)


@pytest.mark.parametrize("correction", ["bonferroni", "holm"])
def test_a_corrected_step_s_interval_is_adjusted_the_same_way(store_of_four: str, correction: str):
    """Was: ``history --correction bonferroni|holm`` printed the corrected p beside the step's unadjusted 95%
    bootstrap interval. Now the interval is compare's adjusted one (Student's t at 1 - alpha * p / p_corrected), named
    so, and it leaves out 0 exactly when the corrected p-value is below alpha; uncorrected it stays the 95% one."""
    _, line, _ = history(store_of_four, "--correction", correction)
    steps = line["steps"][1:]
    for step in steps:
        level = 1 - 0.05 * step["p_value"] / step["p_value_corrected"]
        assert step["delta_level"] == pytest.approx(level)
        assert (step["delta_low"] > 0 or step["delta_high"] < 0) == step["significant"]
    if correction == "bonferroni":
        assert all(step["delta_level"] == pytest.approx(1 - 0.05 / 3) for step in steps)
    _, plain, _ = history(store_of_four)
    assert all(step["delta_level"] == 0.95 for step in plain["steps"][1:])
    assert all(step["delta_low"] != other["delta_low"] for step, other in zip(steps, plain["steps"][1:]))
    _, text, _ = run_cli("history", "--store", store_of_four, *DATASET, "-m", "ndcg@10", "--correction", correction)
    assert f"CI ({correction.capitalize()}-adjusted) [" in text, text
    # the p-value beside it is the corrected one, and says so (was a plain "p=")
    corrected = steps[-1]["p_value_corrected"]
    assert f"p={corrected:.4g} ({correction.capitalize()})" in text, text
    # each row names its interval's method (the registry's: t, corrected or not; none for the
    # first run), and the JSON and the terminal say it in the registry's words
    assert line["steps"][0]["delta_method"] == plain["steps"][0]["delta_method"] == "none"
    assert [step["delta_method"] for step in steps] == ["t"] * len(steps)
    assert [step["delta_method"] for step in plain["steps"][1:]] == [stats.delta_method(300)] * len(steps)
    assert {step["ci_method"] for step in line["steps"]} == {"t"}
    words = stats.delta_interval_method(correction, ["t"])
    assert line["intervals"] == words and words.startswith(stats.DELTA_INTERVAL_NAMES["t"])
    assert plain["intervals"] == stats.delta_interval_method("none", ["t"])
    assert f"intervals: delta {correction.capitalize()}-adjusted CI ({words}); mean 95% CI (Student's t)" in text, text


def test_the_leaderboard_names_the_family_its_p_values_were_corrected_over(tmp_path: Path):
    """Was: the footnote said "Holm-corrected over the dataset's systems" while the code corrects over every pair of
    them (3 systems: 3 comparisons, the smallest p-value times 3, not 2). The words now come from the family."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for system, name in (("bm25", "bm25-stem"), ("dense", "dense-all-minilm-l6-v2"), ("hybrid", "hybrid-rrf60")):
        code, _, err = run_cli("push", "--store", url, *DATASET, "--run", str(SCIFACT / f"{name}.trec.gz"),
                               "--meta", f"system={system}")  # fmt: skip
        assert code == 0, err
    code, out, err = run_cli("leaderboard", "--store", url, "-m", "ndcg@10", "--format", "json")
    assert code == 0, err
    board = json.loads(out)
    family = "Holm-corrected over 3 comparison(s) (all pairs of 3 runs x 1 metric)"
    assert list(board["families"].values()) == [family]
    smallest = min(board["tests"], key=lambda t: t["p_value"])
    assert smallest["p_value_corrected"] == pytest.approx(3 * smallest["p_value"])
    code, markdown, _ = run_cli("leaderboard", "--store", url, "-m", "ndcg@10")
    assert f"(t test, {family}, alpha 0.05)" in markdown and "over the dataset's systems" not in markdown


def test_a_step_s_mean_and_interval_read_the_queries_the_metric_has_a_value_for():
    """A metric without a value for some query (keyword recall of a query that lists no keyword) gives the mean and
    the interval over the others, as ``eval`` and ``compare`` do; it gave NaN."""
    qrels = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
    queries = pd.DataFrame(
        {"query_id": ["q1", "q2", "q3"], "query": ["x", "y", "z"], "expected_keywords": [["refund"], [], ["days"]]}
    )
    corpus = pd.DataFrame({"doc_id": ["a", "b", "c"], "text": ["refund policy", "nothing", "within 30 days"]})
    dataset = rm.Dataset.from_frames(qrels, queries, documents=corpus)
    run = rm.Run.from_lists({"q1": ["a"], "q2": ["b"], "q3": ["b"]})
    stored = [StoredRun(f"r{i}", f"r{i}", float(i), {"date": f"2026-01-0{i + 1}"}, load=lambda: run) for i in range(2)]
    step = timeline(dataset, stored, "keyword_recall@1").frame.iloc[0]
    assert step["mean"] == pytest.approx(0.5)  # q1 1, q3 0; q2 lists no keyword
    assert 0.0 <= step["ci_low"] <= 0.5 <= step["ci_high"] <= 1.0


def test_a_token_budget_of_runs_stored_without_their_texts_says_how_to_store_them(store_of_four: str):
    """Was: "give ... the corpus (--corpus corpus.jsonl ...)", an option history does not have."""
    code, out, err = run_cli("history", "--store", store_of_four, *DATASET, "-m", "recall@512tok")
    assert code == 2 and not out and "Traceback" not in err
    assert "recall@512tok counts the tokens of the retrieved texts, and neither the run nor the stored dataset" in err
    assert "push the dataset with its corpus (push --corpus)" in err


@pytest.mark.parametrize("command", ["history", "leaderboard"])
def test_a_second_metric_is_refused_not_silently_taken_for_the_first(command, capsys):
    """Was: ``history -m ndcg@10 -m mrr`` reported, and gated on, mrr alone without a word (leaderboard too)."""
    argv = [command, "--store", "sqlite:////nonexistent/store.sqlite", "-m", "ndcg@10", "-m", "mrr"]
    if command == "history":
        argv += ["--dataset", "qrels"]
    with pytest.raises(SystemExit) as stopped:
        main(argv, io.StringIO(), io.StringIO())
    assert stopped.value.code == 2
    assert "argument -m/--metric: given twice:" in capsys.readouterr().err


def test_the_leaderboard_names_the_run_it_scores_once_and_the_runs_it_leaves_out(tmp_path: Path):
    """Was: a note per older run, each naming a different run "the latest" (only the last is scored), and runs
    without the system tag left out without a word."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    runs = [("bm25-stem", "2024-01-01"), ("dense-all-minilm-l6-v2", "2024-02-01"), ("hybrid-rrf60", "2024-03-01")]
    for name, date in runs:
        code, _, err = run_cli("push", "--store", url, *DATASET, "--run", str(SCIFACT / f"{name}.trec.gz"),
                               "--meta", "system=search", "--meta", f"date={date}")  # fmt: skip
        assert code == 0, err
    untagged = tmp_path / "plain.trec"
    untagged.write_bytes(gzip.decompress((SCIFACT / "bm25-stem.trec.gz").read_bytes())[:200_000].rsplit(b"\n", 1)[0])
    code, _, err = run_cli("push", "--store", url, *DATASET, "--run", str(untagged))
    assert code == 0, err
    code, _, err = run_cli("leaderboard", "--store", url, "-m", "ndcg@10")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "scored by the latest" in line]
    assert len(notes) == 1 and "system 'search' has 3 runs; scored by the latest, 'hybrid-rrf60'" in notes[0]
    assert "1 run(s) without a 'system' tag left out" in err


def test_push_names_the_run_it_stores(tmp_path: Path):
    """Was: ``push`` named a run by its file only, so CI's run.trec of every commit read ``run`` in the history and
    ``--baseline run`` was ambiguous; ``--run-name`` names each run pushed, one per --run."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run = str(SCIFACT / "bm25-stem.trec.gz")
    code, _, err = run_cli("push", "--store", url, *DATASET, "--run", run, "--run-name", "main@abc123")
    assert code == 0, err
    _, steps, _ = history(url)
    assert [s["run"] for s in steps["steps"]] == ["main@abc123"]
    code, _, err = run_cli("push", "--store", url, *DATASET, "--run", run, "--run-name", "a", "--run-name", "b")
    assert code == 2 and "--run-name is given 2 time(s) for 1 --run: give one name per run" in err


def test_a_push_that_stores_another_dataset_under_a_stored_one_s_name_says_so(tmp_path: Path):
    """Was: a push that forgot --queries stored a second dataset named 'qrels' without a word, and the run's tags
    moved in the first dataset's timeline."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run = str(SCIFACT / "bm25-stem.trec.gz")
    code, _, err = run_cli("push", "--store", url, *DATASET, "--run", run)
    assert code == 0 and "warning" not in err, err
    code, _, err = run_cli("push", "--store", url, "--dataset", str(SCIFACT / "qrels.tsv"), "--run", run)
    assert code == 0, err
    assert "warning: the store holds a dataset named 'qrels' already" in err and "its --queries too" in err


def test_a_tag_given_twice_with_two_values_is_refused():
    """Was: ``--meta commit=a --meta commit=b`` kept b without a word."""
    from ragmetrics.io.runmeta import parse_tags

    assert parse_tags(["commit=a", "commit=a", "branch=main"]) == {"commit": "a", "branch": "main"}
    with pytest.raises(rm.RagMetricsError, match=r"--meta commit: given twice, 'a' and 'b'; give each key once"):
        parse_tags(["commit=a", "commit=b"])


def test_the_baseline_gate_fails_a_slow_decline_that_no_step_shows(tmp_path: Path):
    """Was: with a pinned baseline, ``history`` still exited on the last step alone, so runs that each fell a
    little (no step significant) passed a gate against main's run. ``--gate baseline`` exits 1 when the last run is
    significantly worse than the pinned run (the table's ``*``, Holm over the runs tested against it)."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for number, name in enumerate(("hybrid-rrf60", "bm25-stem", "dense-all-minilm-l6-v2"), 1):
        code, _, err = run_cli("push", "--store", url, *DATASET, "--run", str(SCIFACT / f"{name}.trec.gz"),
                               "--meta", f"version={number}")  # fmt: skip
        assert code == 0, err
    common = ("--by", "version", "--baseline", "hybrid-rrf60")
    code, line, _ = history(url, *common)
    assert code == 0 and not line["last_step_drops"]  # bm25 -> dense: -0.0340, p = 0.064, no significant step
    assert line["last_below_baseline"] is True and line["steps"][-1]["baseline_significant"]
    code, again, err = history(url, *common, "--gate", "baseline")
    assert code == 1 and again["last_below_baseline"] is True
    assert "the last run is significantly worse than the baseline on ndcg@10" in err
    _, text, _ = run_cli("history", "--store", url, *DATASET, "-m", "ndcg@10", *common)
    assert text.rstrip().endswith("the last run is significantly worse than the baseline")
    # the last run against itself, or no baseline: nothing to gate on
    code, itself, _ = history(url, "--by", "version", "--baseline", "dense-all-minilm-l6-v2", "--gate", "baseline")
    assert code == 0 and itself["last_below_baseline"] is None
    code, _, err = run_cli("history", "--store", url, *DATASET, "--gate", "baseline")
    assert code == 2 and "--gate baseline: read only with --baseline" in err
