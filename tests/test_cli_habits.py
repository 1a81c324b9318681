"""The CLI as users coming from trec_eval, ranx and the dashboard type it."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
from pathlib import Path

import pytest

import ragmetrics as rm
from ragmetrics.analysis.targets import resolve_targets
from ragmetrics.cli import build_parser, main

SCIFACT = Path(__file__).parent / "data" / "scifact"
QRELS, BM25, HYBRID = SCIFACT / "qrels.tsv", SCIFACT / "bm25-stem.trec.gz", SCIFACT / "hybrid-rrf60.trec.gz"


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], out=out, err=err), out.getvalue(), err.getvalue()


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"ragmetrics {rm.__version__}"


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("P_5", "precision@5"), ("map_cut_10", "map@10"), ("recall_100", "recall@100"), ("ndcg_cut_10", "ndcg@10"),
     ("recip_rank", "mrr"), ("success_5", "hits@5"), ("Rprec", "rprec"), ("P.5", "precision@5")],
)  # fmt: skip
def test_trec_eval_measure_names(name, canonical):
    assert str(rm.parse_metric(name)) == canonical


@pytest.mark.parametrize(
    ("typed", "meant"), [("ndcg10", "ndcg@10"), ("recall100", "recall@100"), ("P5", "precision@5")]
)
def test_a_cut_off_glued_to_the_name_is_suggested_with_its_at(typed, meant):
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", typed)
    assert code == 2 and f"did you mean '{meant}'?" in err


def test_trec_eval_s_several_cut_offs_after_one_measure():
    """trec_eval's ``-m P.5,10`` is P.5 and P.10; a bare number after any metric with a cut-off is another one."""
    code, out, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "P.5,10", "-m", "ndcg_cut_5,10",
                             "-m", "recall@10,100", "--format", "json")  # fmt: skip
    assert code == 0, err
    assert list(json.loads(out)["runs"]["bm25-stem"]["mean"]) == [
        "precision@5", "precision@10", "ndcg@5", "ndcg@10", "recall@10", "recall@100",
    ]  # fmt: skip
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "10,ndcg@5")
    assert code == 2 and "cannot read metric '10'" in err  # no metric before it to take the number as a cut-off
    # a comma inside ir_measures' parameters is no list's: the name is answered whole (was "nDCG(gains={0:0")
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "nDCG(gains={0:0,1:1})@10,P_5")
    assert code == 2 and "metric 'nDCG(gains={0:0,1:1})@10': ir_measures' parameters are not read here" in err


@pytest.mark.parametrize("name", ["iprec_at_recall_0.00", "Rprec_mult_0.20", "num_rel", "gm_map", "infAP"])
def test_a_trec_eval_measure_not_computed_is_said_so_not_mistaken_for_another(name):
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", name)
    assert code == 2 and f"metric {name!r}: trec_eval's " in err and "is not computed by ragmetrics" in err
    assert "did you mean" not in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["set_F.2", "set_F.0.5"])
def test_trec_eval_s_set_f_at_another_beta_is_refused_by_name_not_read_as_a_cut_off(name):
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", name)
    assert code == 2 and f"trec_eval's set_F at beta {name[6:]} is not computed by ragmetrics" in err, err
    assert "cut-off" not in err and "Traceback" not in err
    code, out, err = run_cli(
        "eval", "--dataset", QRELS, "--run", BM25, "-m", "set_F.1", "-m", "set_F", "--format", "json"
    )
    assert code == 0 and list(json.loads(out)["runs"]["bm25-stem"]["mean"]) == ["set_f1"], (out, err)


def test_targets_in_the_dashboards_syntax():
    code, out, _ = run_cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "ndcg@10>0.6,recall@5>0.9")
    assert code == 1
    assert "PASS ndcg@10 = 0.6791" in out and "FAIL recall@5 = 0.7343" in out
    assert run_cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "ndcg@10>=0.6;recall@5 >= 0.9")[1] == out
    upper = run_cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "FAQ")
    assert upper[1] == run_cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "faq")[1] and upper[0] == 1
    code, _, err = run_cli("check", "--dataset", QRELS, "--run", BM25, "--targets", "ndcg@10<0.9")
    assert code == 2 and "a target is a floor, metric>value" in err and "no such file" not in err
    # a token budget is a metric as any other (the JSON form took it; the text form read it as no target)
    assert resolve_targets("recall@512tok>0.5; ndcg@10 > 0.3, recall@64 tokens>=0.25") == {
        "recall@512tok": 0.5, "ndcg@10": 0.3, "recall@64tok": 0.25}  # fmt: skip


def test_check_with_a_baseline_and_no_targets_is_a_regression_gate():
    better, out_better, _ = run_cli("check", "--dataset", QRELS, "--run", HYBRID, "--baseline", BM25)
    code, out, _ = run_cli("check", "--dataset", QRELS, "--run", BM25, "--baseline", HYBRID, "-m", "ndcg@10")
    assert code == 1 and "FAIL regression: ndcg@10" in out and "Holm-corrected over 1 comparison(s)" in out
    assert better == 0 and "PASS improvement: ndcg@10" in out_better
    code, _, err = run_cli("check", "--dataset", QRELS, "--run", BM25)
    assert code == 2 and "needs --targets" in err


def test_check_as_json_holds_the_gate_s_every_check_and_its_exit_code():
    """A CI job reads the gate's checks, not its text: ``check --format json`` with the same exit code."""
    argv = [
        "check",
        "--dataset",
        QRELS,
        "--run",
        BM25,
        "--baseline",
        HYBRID,
        "--targets",
        "ndcg@10>0.6,recall@100>0.99",
    ]
    code, text, _ = run_cli(*argv)
    json_code, out, _ = run_cli(*argv, "--bounds", "--format", "json")
    gate = json.loads(out)
    assert code == json_code == 1 and gate["passed"] is False and gate["run"] == "bm25-stem"
    assert gate["failures"] == int(text.splitlines()[-1].split()[1]) == 3  # recall's target and both regressions
    ndcg, recall = gate["targets"]
    assert (ndcg["metric"], ndcg["status"], ndcg["passed"]) == ("ndcg@10", "pass", True)
    assert f"ndcg@10 = {ndcg['mean']:.4f} (95% CI {ndcg['ci_low']:.4f}-{ndcg['ci_high']:.4f})" in text
    assert (recall["status"], recall["passed"], recall["threshold"]) == ("fail", False, 0.99)
    assert recall["if_judged"]["could_flip"] is True and recall["if_judged"]["best"] > 0.99
    regression = gate["regression"]
    assert regression["test"] == "t" and ", t)" in text and regression["family"]["size"] == 2
    assert regression["family"]["covers"] == "all pairs of 2 runs x 2 metrics"  # was "" for one pair of runs
    rows = {row["metric"]: row for row in regression["comparisons"]}
    assert rows["ndcg@10"]["verdict"] == "worse" and rows["ndcg@10"]["passed"] is False
    assert f"p={rows['ndcg@10']['p_value_corrected']:.4g} Holm-corrected over 2" in text


def test_the_correction_is_chosen_and_named():
    code, out, _ = run_cli("compare", "--dataset", QRELS, "--baseline", BM25, "--run", HYBRID, "-m", "recall@5",
                           "-m", "ndcg@10", "--correction", "none")  # fmt: skip
    # nothing corrects the p-value: printed alone (was "p=0.01 (none 0.01)")
    assert code == 0 and "(none " not in out and "uncorrected" in out
    assert re.search(r"  p=0\.01822\*  W/T/L", out), out
    code, out, _ = run_cli("compare", "--dataset", QRELS, "--baseline", BM25, "--run", HYBRID, "-m", "recall@5",
                           "-m", "ndcg@10", "--correction", "bonferroni")  # fmt: skip
    assert "Bonferroni-corrected over 2 comparison(s)" in out


def test_the_same_run_as_baseline_is_warned_about():
    code, _, err = run_cli("compare", "--dataset", QRELS, "--baseline", BM25, "--run", BM25)
    assert code == 0 and "has the same rows as the baseline" in err


def test_a_queries_file_of_another_dataset_is_warned_about(tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "DEV_1", "text": "somewhere else"}\n')
    code, _, err = run_cli("eval", "--dataset", QRELS, "--queries", queries, "--run", BM25, "-m", "mrr")
    assert code == 0 and "warning: the queries file matches none of the dataset's 300 queries" in err


def test_swapped_dataset_and_run_get_a_hint():
    code, _, err = run_cli("eval", "--dataset", BM25, "--run", QRELS)
    assert code == 2 and "did you swap --dataset and --run?" in err


def test_every_option_has_help_text():
    missing = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
            elif not action.help:
                missing.append((path, action.option_strings or action.dest))

    walk(build_parser(), [])
    assert missing == []


def test_every_command_spells_its_formats_alike():
    """One --format option (``add_format_option``): ``table`` is every command's default human-readable output, and
    ``text`` (the name two commands used) reads as ``table`` (was: ``dataset check`` and ``diagnose`` said ``text``,
    the rest ``table``). The leaderboard is a markdown table by default, its own kind."""
    found = {}

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
            elif action.dest == "format":
                found[" ".join(path)] = action

    walk(build_parser(), [])
    assert {"eval", "compare", "diagnose", "dataset check", "agree", "evidence", "history"} <= set(found)
    for command, action in found.items():
        if command == "leaderboard":
            continue
        assert action.default == "table" and next(iter(action.choices)) == "table", command
        assert action.type is not None and action.type("text") == "table", command
    code, out, _ = run_cli("dataset", "check", QRELS, "--format", "text")
    assert code in (0, 1) and out.strip() and not out.lstrip().startswith("{")


def test_llamaindex_mode_takes_the_rank_column_of_a_table_and_the_line_order_of_trec(tmp_path):
    """As docs/conventions.md says: a CSV run's rank column orders it; a TREC run's rank field is never read."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d9 3 0.1 r\nq1 Q0 d1 1 0.3 r\nq1 Q0 d8 2 0.2 r\n")
    (tmp_path / "run.csv").write_text("query_id,doc_id,rank,score\nq1,d9,3,0.1\nq1,d1,1,0.3\nq1,d8,2,0.2\n")
    values = {}
    for name in ("run.trec", "run.csv"):
        code, out, _ = run_cli(
            "eval", "--dataset", qrels, "--run", tmp_path / name, "-m", "mrr", "--mode", "llamaindex"
        )
        assert code == 0
        values[name] = out.split("mrr")[1].split()[1]
    assert values == {"run.trec": "0.5000", "run.csv": "1.0000"}
    docs = (Path(__file__).parents[1] / "docs" / "conventions.md").read_text()
    assert "a TREC run's rank" in docs and "TREC: line order" in docs


def test_metrics_as_a_comma_separated_list_as_ranx_and_ir_measures_users_write_them():
    listed = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10, recall@100", "-m", "mrr")
    repeated = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10", "-m", "recall@100", "-m", "mrr")
    assert listed[0] == 0 and listed[1] == repeated[1]
    assert [line.split()[0] for line in listed[1].splitlines()][2:] == ["ndcg@10", "recall@100", "mrr"]
    code, out, _ = run_cli("compare", "--dataset", QRELS, "--baseline", BM25, "--run", HYBRID, "-m", "ndcg@10,P_10")
    assert code == 0 and len([line for line in out.splitlines() if "hybrid-rrf60" in line]) == 2
    with pytest.raises(SystemExit) as refused:
        run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10,,mrr")
    assert refused.value.code == 2


def test_compare_prints_beside_a_corrected_p_value_an_interval_corrected_the_same_way():
    """docs/conventions.md (Significance): the interval excludes 0 exactly where the corrected t test is
    significant (was: the uncorrected 95% interval beside a Bonferroni p-value, excluding 0 where it was not)."""
    import re

    dense = SCIFACT / "dense-all-minilm-l6-v2.trec.gz"
    argv = ["compare", "--dataset", QRELS, "--baseline", BM25, "--run", HYBRID, "--run", dense]
    code, out, _ = run_cli(*argv, "-m", "ndcg@10,recall@100,P_10", "--correction", "bonferroni", "--test", "t")
    assert code == 0 and "intervals: Bonferroni-adjusted CI" in out
    rows = re.findall(r"delta [-+][\d.]+ ([\d.]+)% \[([-+][\d.]+), ([-+][\d.]+)\].*\)([* ]) ", out)
    assert len(rows) == 6
    for level, low, high, mark in rows:
        assert float(level) > 95  # 1 - alpha * p / p_corrected: 1 - alpha/m, or higher where p x m was clipped at 1
        assert (float(low) > 0 or float(high) < 0) == (mark == "*"), out
    assert any(float(level) == pytest.approx(100 * (1 - 0.05 / 9), abs=1e-2) for level, *_ in rows)  # 3 pairs x 3
    assert any(mark == " " for *_, mark in rows) and any(mark == "*" for *_, mark in rows)


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["eval", "--dataset", "q", "--run", "r"], "ragmetrics eval"),
        (["judge", "merge", "--dataset", "q", "--labels", "l", "-o", "m"], "ragmetrics judge merge"),
    ],
)
def test_an_unknown_option_is_refused_with_the_usage_of_the_command_given(argv, usage, capsys):
    with pytest.raises(SystemExit) as refused:
        main([*argv, "--foo"])
    said = capsys.readouterr().err
    assert refused.value.code == 2 and f"{usage}: error: unrecognized arguments: --foo" in said
    assert f"usage: {usage}" in said


def test_runs_and_the_cut_off_are_named_alike_across_commands(tmp_path):
    """fuse takes --run as every other command does (its positional files still work); -k and --k both name a
    cut-off where a command has one (fuse's --k stays RRF's constant)."""
    dense = SCIFACT / "dense-all-minilm-l6-v2.trec.gz"
    code, _, err = run_cli("fuse", "--run", BM25, "--run", dense, "-o", tmp_path / "a.trec")
    assert code == 0, err
    assert run_cli("fuse", BM25, dense, "-o", tmp_path / "b.trec")[0] == 0
    assert (tmp_path / "a.trec").read_bytes() == (tmp_path / "b.trec").read_bytes()
    assert run_cli("fuse", "-o", tmp_path / "c.trec")[0] == 2
    for argv in (["diagnose", "--dataset", QRELS, "--run", BM25], ["agree", "--run", BM25, "--run", dense]):
        assert run_cli(*argv, "-k", 10) == run_cli(*argv, "--k", 10)


def test_qrels_given_as_a_run_to_a_command_without_a_dataset_is_not_told_to_swap_them(tmp_path):
    code, _, err = run_cli("agree", "--run", QRELS, "--run", BM25)
    assert code == 2 and "looks like qrels: this command reads runs only" in err and "--dataset" not in err
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", QRELS)
    assert code == 2 and "looks like qrels: did you swap --dataset and the run's file?" in err
    # compare's baseline is a run's file too (was: told to swap --dataset and --run, which it was not given as)
    code, _, err = run_cli("compare", "--dataset", QRELS, "--baseline", QRELS, "--run", BM25)
    assert code == 2 and "looks like qrels: did you swap --dataset and the run's file?" in err


def test_a_queries_or_corpus_file_given_as_the_dataset_is_told_where_it_goes(tmp_path):
    """Was: eval --dataset queries.jsonl said only 'expected a "query" key, found keys ['id', 'text']'."""
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "text": "where is it?"}\n')
    code, _, err = run_cli("eval", "--dataset", queries, "--run", BM25)
    assert (
        code == 2
        and (
            f"({queries} looks like a queries or corpus file, an id and a text per record: give it as --queries or "
            "--corpus, and the qrels or the evaluation set as --dataset)"
        )
        in err
    ), err


def test_trec_eval_s_flags_and_bare_files_are_answered_with_this_cli_s_options(capsys):
    with pytest.raises(SystemExit) as refused:
        main(["eval", "--dataset", str(QRELS), "--run", str(BM25), "-q", "-l", "2"])
    said = capsys.readouterr().err
    assert refused.value.code == 2 and "unrecognized arguments: -q -l 2" in said
    assert "trec_eval's -q is --per-query" in said and "trec_eval's -l is --rel-level N" in said
    with pytest.raises(SystemExit):
        main(["eval", "--dataset", str(QRELS), "--run", str(BM25), str(QRELS), str(BM25)])
    assert "trec_eval's `qrels run` are --dataset QRELS --run RUN here" in capsys.readouterr().err
    # trec_eval's whole habit, `eval qrels run` without the options: the missing options' refusal says it too
    with pytest.raises(SystemExit):
        main(["eval", "-m", "map", str(QRELS), str(BM25)])
    said = capsys.readouterr().err
    assert "the following arguments are required: --dataset, --run; trec_eval's `qrels run` are --dataset" in said


def test_a_run_given_as_a_dash_is_read_from_standard_input(monkeypatch):
    """``--run -`` reads a pipe (``zcat run.gz | ragmetrics eval ... --run -``), named ``stdin``; one run at most."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(gzip.decompress(BM25.read_bytes()))))
    code, piped, err = run_cli("eval", "--dataset", QRELS, "--run", "-", "-m", "ndcg@10", "--format", "json")
    assert code == 0, err
    code, named, err = run_cli("eval", "--dataset", QRELS, "--run", BM25, "-m", "ndcg@10", "--format", "json")
    assert code == 0, err
    assert json.loads(piped)["runs"]["stdin"] == json.loads(named)["runs"]["bm25-stem"]
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", "-", "--run", "-", "-m", "ndcg@10")
    assert code == 2 and "standard input given twice" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"not a run\n")))
    code, _, err = run_cli("eval", "--dataset", QRELS, "--run", "-", "-m", "ndcg@10")
    assert code == 2 and err.startswith("ragmetrics: error: <stdin>:") and "Traceback" not in err


def test_evidence_spans_given_as_the_dataset_are_sent_to_evidence(tmp_path):
    """Was: a spans file in the qrels layout (``qid 0 docid rel start end``) given as ``--dataset`` was hinted as a
    run ("did you swap --dataset and --run?"): it has a run's six fields."""
    spans = tmp_path / "spans.qrels"
    spans.write_text("1 0 31715818 1 0 118\n3 0 14717500 1 500 900\n")
    code, _, err = run_cli("eval", "--dataset", spans, "--run", BM25, "-m", "ndcg@10")
    assert (
        code == 2
        and "looks like evidence spans, qid 0 docid rel start end: give it to ragmetrics evidence --spans" in err
    )
    assert "did you swap" not in err
    code, _, err = run_cli("eval", "--dataset", BM25, "--run", QRELS, "-m", "ndcg@10")
    assert code == 2 and "did you swap" in err and "evidence spans" not in err  # a run is still hinted as a run
