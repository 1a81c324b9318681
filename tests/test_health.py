"""Where a run and the qrels do not meet: refused with the cause and a fix tried on the data, never a silent 0."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

import ragmetrics as rm
from ragmetrics.cli import main
from ragmetrics.io import load_dataset, load_run

ROOT = Path(__file__).parents[1]
CMRC = ROOT / "sample_runs" / "cmrc2018"
SCIFACT = ROOT / "tests" / "data" / "scifact"


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_chunk_pattern_that_maps_runs_away_from_chunk_qrels_is_refused_with_the_fix():
    code, out, err = run_cli(
        "eval", "--dataset", str(CMRC / "qrels.tsv"), "--run", str(CMRC / "runs/bm25-jieba.trec.gz"),
        "--chunk-pattern", r"(?P<doc>.+)_C\d+$", "-m", "ndcg@10",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert "do not meet the qrels" in err and "0 of 812 ranked queries" in err
    assert "the qrels judge chunks" in err and "drop --chunk-pattern" in err and "100% of the queries" in err
    assert err.count("\n") == 1  # one message


def test_another_datasets_run_is_refused():
    code, out, err = run_cli(
        "eval", "--dataset", str(SCIFACT / "qrels.tsv"), "--run", str(CMRC / "runs/bm25-jieba.trec.gz")
    )
    assert code == 2 and out == ""
    assert "none of its queries is a query of dataset" in err and "another dataset" in err


@pytest.mark.parametrize("command", ["compare", "check"])
def test_compare_and_check_refuse_it_too(command):
    run = str(CMRC / "runs/bm25-jieba.trec.gz")
    extra = ["--baseline", run, "--run", run] if command == "compare" else ["--run", run, "--targets", "faq"]
    code, _, err = run_cli(command, "--dataset", str(SCIFACT / "qrels.tsv"), *extra)
    assert code == 2 and "none of its queries" in err


def test_allow_no_overlap_scores_it_anyway():
    code, out, _ = run_cli(
        "eval", "--dataset", str(SCIFACT / "qrels.tsv"), "--run", str(CMRC / "runs/bm25-jieba.trec.gz"),
        "--allow-no-overlap", "-m", "ndcg@10",
    )  # fmt: skip
    assert code == 0 and "ndcg@10               \tall\t0.0000" in out


def test_the_right_cmrc_evaluation_prints_its_readme_numbers():
    code, out, _ = run_cli(
        "eval", "--dataset", str(CMRC / "qrels.tsv"), "--run", str(CMRC / "runs/bm25-jieba.trec.gz"),
        "-m", "ndcg@10", "-m", "recall@100", "-m", "mrr",
    )  # fmt: skip
    assert code == 0
    assert "ndcg@10               \tall\t0.9154" in out
    assert "recall@100            \tall\t0.9945" in out
    assert "mrr                   \tall\t0.8918" in out


def _rewritten(tmp_path: Path, change) -> Path:
    lines = gzip.open(SCIFACT / "bm25-stem.trec.gz", "rt").read().splitlines()
    out = []
    for i, line in enumerate(lines):
        q, q0, doc, rank, score, tag = line.split()
        out.append(" ".join([q, q0, change(doc, i), rank, score, tag]))
    path = tmp_path / "run.trec"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "cause", "fix"),
    [
        (lambda d, i: f"{d}#{i % 3}", "the run names chunks", r"--chunk-pattern '(?P<doc>.+)#\d+$'"),
        (lambda d, i: f"{d}::c{i % 3}", "the run names chunks", "--chunk-pattern '::'"),
        (lambda d, i: f"pmid-{d}", "the prefix 'pmid-'", "replace the prefix 'pmid-' by ''"),
        (lambda d, i: f"{d}.txt", "the suffix '.txt'", "replace the suffix '.txt' by ''"),
    ],
)
def test_the_fix_is_detected_and_tried(tmp_path, change, cause, fix):
    code, _, err = run_cli("eval", "--dataset", str(SCIFACT / "qrels.tsv"), "--run", str(_rewritten(tmp_path, change)))
    assert code == 2
    assert cause in err and fix in err, err
    tried = int(err.split("tried: ")[1].split("%")[0])
    assert tried > 90


def test_the_suggested_chunk_pattern_works(tmp_path):
    path = _rewritten(tmp_path, lambda d, i: f"{d}#{i % 3}")
    code, out, _ = run_cli(
        "eval", "--dataset", str(SCIFACT / "qrels.tsv"), "--run", str(path), "--chunk-pattern", r"(?P<doc>.+)#\d+$",
        "-m", "ndcg@10",
    )  # fmt: skip
    assert code == 0 and "\tall\t0.6791" in out


def test_health_counts_what_the_run_and_qrels_share():
    dataset = rm.Dataset.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 1}, "q3": {"d": 1}})
    run = rm.Run.from_dict({"q1": {"a": 3.0, "x": 2.0, "b": 1.0}, "q2": {"y": 1.0}})
    state = rm.align(dataset, run).health
    assert (state.queries_ranked, state.queries_meeting) == (2, 1)
    assert state.judged_at_10 == pytest.approx((2 / 3 + 0) / 2)  # read over what each ranks, as ir_measures
    assert state.relevant_retrieved == pytest.approx(1 / 3)
    assert not state.no_overlap and state.overlap == 0.5


def test_health_of_sample_runs_is_good():
    dataset = load_dataset(CMRC / "qrels.tsv")
    state = rm.align(dataset, load_run(CMRC / "runs/bm25-jieba.trec.gz")).health
    assert state.overlap > 0.99 and state.relevant_retrieved > 0.99 and not state.no_overlap


def test_ids_that_differ_in_unicode_normalization_only_are_named_so() -> None:
    """Was: NFC 'café' in the qrels against NFD 'café' in the run read "replace the prefix 'café' by 'café'"."""
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    dataset = load_dataset(f"q1 0 {nfc}1 1\nq2 0 {nfc}2 1\n".encode(), filename="qrels.txt")
    run = load_run(f"q1 Q0 {nfd}1 1 1.0 r\nq2 Q0 {nfd}2 1 1.0 r\n".encode(), filename="run.trec")
    alignment = rm.align(dataset, run)
    assert alignment.health.no_overlap
    message = alignment.explain_no_overlap()
    assert "differ in Unicode normalization only" in message and "NFC" in message and "prefix" not in message


def test_a_prefix_most_ids_carry_is_found_when_a_few_do_not() -> None:
    """Was: one query's ids without the run's 'zz' prefix hid it ("no chunk pattern, case or prefix change")."""
    qrels = "".join(f"q{i} 0 d{i} 1\n" for i in range(40)).encode()
    run = "".join(f"q{i} Q0 {'x' if i == 0 else 'zz'}d{i} 1 1.0 r\n" for i in range(40)).encode()
    alignment = rm.align(load_dataset(qrels, filename="qrels.txt"), load_run(run, filename="run.trec"))
    assert alignment.health.no_overlap
    assert "replace the prefix 'zzd' by 'd'" in alignment.explain_no_overlap()


def test_chunk_level_over_mapped_chunks_names_the_level_and_shows_the_chunk_ids() -> None:
    """Was: chunk level with a chunk pattern, against qrels of documents, read "the ids differ in case only" with
    the mapped ids: the diagnosis read the documents (which meet the qrels as they are, so casefolding "fixed" them)
    where chunk level evaluates the chunk ids."""
    dataset = load_dataset(b"q1 0 D1 1\nq2 0 D2 1\n", filename="qrels.txt")
    run = load_run(b"q1 Q0 D1_C0 1 1.0 r\nq2 Q0 D2_C3 1 1.0 r\n", filename="run.trec", chunk_pattern="_C")
    alignment = rm.align(dataset, run, level="chunk")
    assert alignment.health.no_overlap
    message = alignment.explain_no_overlap()
    assert "run ids such as D1_C0, D2_C3," in message and "case" not in message
    assert "chunk level evaluates the chunk ids; evaluate the documents: drop --level chunk" in message
    assert "(tried: 100% of the queries then meet the qrels)" in message
    lower = load_run(b"q1 Q0 d1 1 1.0 r\nq2 Q0 d2 1 1.0 r\n", filename="run.trec")  # case is still named
    assert "the ids differ in case only" in rm.align(dataset, lower).explain_no_overlap()


def test_a_run_of_the_whole_documents_against_qrels_of_their_chunks_is_told_to_retrieve_the_chunks(tmp_path):
    """Was: a set synth wrote with --chunker judges chunks (API-02#0), a run made over the corpus names documents
    (API-02), and eval said no change makes them meet, "likely made for another collection"."""
    ids = [f"q{i}" for i in range(12)]
    (tmp_path / "qrels.tsv").write_text("".join(f"{q} 0 D{i}#0 2\n{q} 0 D{i}#1 1\n" for i, q in enumerate(ids)))
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 D{i} 1 2.0 r\n{q} Q0 X 2 1.0 r\n" for i, q in enumerate(ids)))
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--dataset", str(tmp_path / "qrels.tsv"), "--run", str(tmp_path / "run.trec"), "-m", "ndcg@10"]
    assert main(argv, out, err) == 2
    assert (
        "the qrels judge chunks (their ids end in '#' and a number) of the documents the run names; retrieve over "
        "the chunks the qrels judge, not the whole documents (a set synth wrote with --chunker: index its "
        ".chunks.jsonl, not the corpus) (tried: 100% of the queries then meet the qrels)" in err.getvalue()
    ), err.getvalue()


def test_a_run_naming_some_documents_as_their_chunks_is_warned_of_with_the_pattern(tmp_path):
    """Was: a run naming DEV_3 in one row and DEV_3_C0 in the next, against qrels of documents, was scored with
    only the duplicate rows said: its chunks counted as unjudged. A run mapped with the pattern is quiet."""
    ids = [f"q{i}" for i in range(12)]
    (tmp_path / "qrels.tsv").write_text("".join(f"{q} 0 D{i} 1\n" for i, q in enumerate(ids)))
    (tmp_path / "run.trec").write_text(
        "".join(f"{q} Q0 D{i}_C0 1 3.0 r\n{q} Q0 D{i} 2 2.0 r\n{q} Q0 X{i} 3 1.0 r\n" for i, q in enumerate(ids))
    )
    argv = ["eval", "--dataset", str(tmp_path / "qrels.tsv"), "--run", str(tmp_path / "run.trec"), "-m", "ndcg@10"]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert (
        "ragmetrics: warning: run 'run': in 100% of the queries read it retrieves chunks of the documents the qrels "
        "judge (such as 'D0_C0'), beside documents named as judged: the chunks count as unjudged; --chunk-pattern "
        "'(?P<doc>.+)_C\\d+$' reads them as their documents" in err.getvalue()
    ), err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--chunk-pattern", r"(?P<doc>.+)_C\d+$"], out, err) == 0, err.getvalue()
    assert "chunks of the documents" not in err.getvalue()
