"""Agreement of a judge's labels with people's (ragmetrics.analysis.label_agreement) and the ``judge run`` /
``judge agree`` commands."""

from __future__ import annotations

import gzip
import io
import json
import math
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from ragmetrics.analysis.label_agreement import label_agreement
from ragmetrics.cli import main
from ragmetrics.cli.judging import _check_counts, judge_label_rows
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io import load_dataset
from ragmetrics.io.source import Source
from ragmetrics.judges.rule import RuleJudge
from tests.judge_stub import Stub, serve_chat


def frames(human, judge, **columns):
    ids = [f"d{i}" for i in range(len(human))]
    h = pd.DataFrame({"query_id": "q", "doc_id": ids, "label": human})
    j = pd.DataFrame({"query_id": "q", "doc_id": ids, "label": judge, **columns})
    return h, j


def test_kappa_on_a_hand_case():
    # observed agreement 4/5; chance (2/5)(3/5) + (3/5)(2/5) = 0.48; kappa (0.8 - 0.48) / 0.52
    found = label_agreement(*frames([0, 1, 1, 0, 1], [0, 1, 0, 0, 1]))
    assert found.kappa == pytest.approx((0.8 - 0.48) / 0.52)
    assert found.kappa == pytest.approx(cohen_kappa_score([0, 1, 1, 0, 1], [0, 1, 0, 0, 1]))
    assert found.kappa_linear == found.kappa_quadratic == found.kappa  # binary: nothing to weigh
    assert found.confusion.values.tolist() == [[2, 0], [1, 2]]
    assert found.pairs == 5 and found.accuracy == pytest.approx(0.8)


def test_weighted_kappa_equals_sklearns_on_a_graded_scale():
    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 200)
    judge = np.clip(human + rng.integers(-1, 2, 200), 0, 3)
    found = label_agreement(*frames(human, judge), max_grade=3)
    for weights, value in ((None, found.kappa), ("linear", found.kappa_linear), ("quadratic", found.kappa_quadratic)):
        assert value == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3], weights=weights))
    assert found.kappa < found.kappa_linear < found.kappa_quadratic  # near misses count for more when weighted
    assert found.confusion.to_numpy().sum() == 200
    assert found.confusion.to_numpy().trace() == int((human == judge).sum())


def test_where_the_judge_errs_and_ungraded_pairs():
    human = [1, 1, 0, 0, 1, 0]
    judge = [1, 0, 1, 0, 1, None]  # the last pair got no grade: counted apart
    found = label_agreement(*frames(
        human, judge, rank=[1, 2, 5, 5, 30, 1], category=["a", "a", "b", "b", "", "a"],
        doc_length=[10, 10, 200, 500, 60, 1],
    ))  # fmt: skip
    assert found.pairs == 5 and found.ungraded == 1
    errors = found.errors.set_index(["facet", "group"])
    assert errors.loc[("rank", "1"), "disagree"] == 0.0
    assert errors.loc[("rank", "2-3"), "judge_minus_human"] == -1.0
    assert errors.loc[("rank", "4-10"), ["pairs", "disagree", "judge_minus_human"]].tolist() == [2, 0.5, 0.5]
    assert errors.loc[("category", "(none)"), "pairs"] == 1
    assert errors.loc[("length", "<50 tokens"), "disagree"] == 0.5  # a CJK text is counted in characters
    assert list(errors.loc["rank"].index) == ["1", "2-3", "4-10", "21+"]


def test_kappa_is_undefined_with_one_grade_only():
    assert math.isnan(label_agreement(*frames([0, 0], [0, 0])).kappa)


# --- the commands ---------------------------------------------------------------------------------------


@pytest.fixture
def small_set(tmp_path):
    records = [
        {"query_id": "q1", "query": "capital of France", "expected_answer": "Paris", "category": "geo",
         "relevant_docs": {"d1": 2}},
        {"query_id": "q2", "query": "largest planet", "expected_answer": "Jupiter",
         "expected_keywords": ["planet", "gas"], "category": "space", "relevant_docs": {"d4": 2}},
    ]  # fmt: skip
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    docs = {"d1": "Paris is the capital.", "d2": "Lyon is a city of France.", "d3": "Paris hosts the Louvre.",
            "d4": "Jupiter is a gas giant.", "d5": "Saturn is a gas planet.", "d6": "Mars is red."}  # fmt: skip
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items()))
    pool = "query_id\tdoc_id\nq1\td2\nq1\td3\nq2\td5\nq2\td6\n"
    (tmp_path / "pool.tsv").write_text(pool)
    (tmp_path / "human.tsv").write_text("query_id\tdoc_id\tlabel\nq1\td2\t0\nq1\td3\t2\nq2\td5\t0\nq2\td6\t0\n")
    return tmp_path


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_judge_run_writes_labels_with_provenance_and_agree_reads_them(small_set):
    d = small_set
    code, _, err = run("judge", "run", "--judge", "rule", "--dataset", str(d / "set.jsonl"), "--corpus",
                       str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    assert f"4 label(s) 0..2 by judge:rule@{RuleJudge.version}#" in err
    judged = pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)
    assert list(judged.columns) == ["query_id", "doc_id", "label", "rank", "category", "doc_length", "judge",
                                    "judge_version", "config_hash", "judged_at"]  # fmt: skip
    assert judged[["doc_id", "label", "rank", "category"]].values.tolist() == [
        ["d2", "0", "1", "geo"], ["d3", "1", "2", "geo"], ["d5", "1", "1", "space"], ["d6", "0", "2", "space"],
    ]  # fmt: skip
    assert set(judged["judge"]) == {"rule"} and judged["judged_at"].str.endswith("+00:00").all()

    code, out, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 0, err
    h, j = [0, 2, 0, 0], [0, 1, 1, 0]  # "Paris" alone, a one-word answer, is a keyword: 1, not 2
    # people gave 0 and 2, the judge 0 and 1: two scales, maybe (people's 2 and a judge's 1 meaning relevant), said
    assert "note: people's labels use grades 0, 2 and the judge's 0, 1: a grade only one side gives (2 only " in err
    assert f"Cohen's kappa     {cohen_kappa_score(h, j, labels=[0, 1, 2]):.3f}" in out
    assert "only 4 pair(s) both labelled: a rough figure (label 30 or more to read kappa)" in out
    assert "not in the judge's labels" not in out
    (d / "more.tsv").write_text((d / "human.tsv").read_text() + "q2\td9\t1\n")
    code, more, err = run("judge", "agree", "--human", str(d / "more.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 0 and "1 of people's pair(s) are not in the judge's labels and are not counted" in more
    assert "on 4 pair(s)" in more
    assert f"kappa, quadratic  {cohen_kappa_score(h, j, labels=[0, 1, 2], weights='quadratic'):.3f}" in out
    assert "confusion matrix" in out and "where the judge errs" in out and "space" in out
    assert "length in tokens: a word, or one Chinese, Japanese or Korean character" in out and "<50 tokens" in out
    aliases = ("--human-qrels", str(d / "human.tsv"), "--judge-qrels", str(d / "judged.tsv"))
    assert run("judge", "agree", *aliases)[:2] == (0, out)  # the names eval and compare give the same files

    # a judge's labels are never taken for people's
    code, _, err = run("judge", "agree", "--human", str(d / "judged.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 2 and f"are a judge's labels (rule {RuleJudge.version} " in err
    code, _, err = run("judge", "merge", "--dataset", str(d / "set.jsonl"), "--labels", str(d / "judged.tsv"),
                       "-o", str(d / "merged.qrels"))  # fmt: skip
    assert code == 0 and "warning: " in err and f"holds a judge's labels (rule {RuleJudge.version} " in err


def reads_of(*argv):
    """The command's result, and the names of the files whose bytes it read (one entry a read)."""
    read: list[str] = []

    def count(frame, event, _arg):
        if event == "call" and frame.f_code is Source.data.func.__code__:
            read.append(frame.f_locals["self"].name)

    sys.setprofile(count)
    try:
        found = run(*argv)
    finally:
        sys.setprofile(None)
    return found, read


def test_labels_are_read_once_whether_people_s_or_a_judge_s_gzipped_or_parquet(small_set):
    """judge agree and judge merge read a labels file once (its judges and its labels from the same bytes)."""
    d = small_set
    code, _, err = run("judge", "run", "--judge", "rule", "--dataset", str(d / "set.jsonl"), "--corpus",
                       str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    (d / "human.tsv.gz").write_bytes(gzip.compress((d / "human.tsv").read_bytes()))
    (d / "judged.tsv.gz").write_bytes(gzip.compress((d / "judged.tsv").read_bytes()))
    pd.read_csv(d / "judged.tsv", sep="\t", dtype=str).to_parquet(d / "judged.parquet")
    _, plain, _ = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "judged.tsv"))
    (code, out, err), read = reads_of("judge", "agree", "--human", str(d / "human.tsv.gz"), "--judge",
                                      str(d / "judged.tsv"))  # fmt: skip
    assert code == 0 and out == plain and "Cohen's kappa" in out, err
    assert read.count(str(d / "human.tsv.gz")) == 1
    for judged in ("judged.tsv.gz", "judged.parquet"):  # a judge's labels read as people's are: the same agreement
        (code, out, err), read = reads_of("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / judged))
        assert (code, out) == (0, plain), err
        assert read.count(str(d / judged)) == 1
    (d / "judged.qrels.gz").write_bytes(gzip.compress(b"q1 0 d2 0\nq1 0 d3 1\nq2 0 d5 1\nq2 0 d6 0\n"))
    code, out, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "judged.qrels.gz"))
    kappa = next(line for line in plain.splitlines() if "Cohen's kappa" in line)
    assert code == 0 and kappa in out and "on 4 pair(s)" in out, err
    for judged in ("judged.tsv.gz", "judged.parquet"):
        (code, _, err), read = reads_of("judge", "agree", "--human", str(d / judged), "--judge", str(d / "judged.tsv"))
        assert code == 2 and f"{d / judged}: these are a judge's labels (rule {RuleJudge.version} " in err
        assert read.count(str(d / judged)) == 1
        (code, _, err), read = reads_of("judge", "merge", "--dataset", str(d / "set.jsonl"), "--labels",
                                        str(d / judged), "-o", str(d / "merged.qrels"))  # fmt: skip
        assert code == 0 and f"{d / judged} holds a judge's labels (rule {RuleJudge.version} " in err, err
        assert read.count(str(d / judged)) == 1
    code, _, err = run("judge", "agree", "--human", str(d / "absent.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 2 and "absent.tsv" in err and "nothing at that path" in err


def test_judge_agree_names_the_line_of_a_label_it_cannot_read(small_set):
    """Was: a traceback from pandas for a label that is not a number."""
    d = small_set
    header = "query_id\tdoc_id\tlabel\tjudge\tjudge_version\tconfig_hash"
    for label, message in (("zero", "label 'zero'; expected a whole-number grade >= 0"),
                           ("-1", "label '-1'; expected a whole-number grade >= 0")):  # fmt: skip
        (d / "odd.tsv").write_text(f"{header}\nq1\td2\t0\trule\t2\tabc\nq1\td3\t{label}\trule\t2\tabc\n")
        code, _, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.tsv"))
        assert code == 2 and f"{d / 'odd.tsv'}, line 3: {message}" in err and "Traceback" not in err, err
    # one judge's agreement, never a mix of two judges' labels
    (d / "odd.tsv").write_text(f"{header}\nq1\td2\t0\trule\t2\tabc\nq1\td3\t2\tlearned\t2\tdef\n")
    code, _, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.tsv"))
    assert code == 2 and "odd.tsv, line 3: labels of judge learned 2 def, and of rule 2 abc on line 2" in err, err
    (d / "odd.tsv").write_text("query_id\tdoc_id\tverdict\nq1\td2\t0\n")
    code, _, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.tsv"))
    assert code == 2 and "odd.tsv: no label column (its columns: query_id, doc_id, verdict)" in err, err
    (d / "odd.tsv").write_text("query_id\tdoc_id\tgrade\nq1\td2\t0\n")  # the loaders' names for the label
    assert run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.tsv"))[0] == 0
    # read as every labels file is: a malformed line of a gzipped file, a bad grade in a Parquet file
    (d / "odd.tsv.gz").write_bytes(gzip.compress(f"{header}\nq1\td2\t0\trule\t2\tabc\nq1\td3\t2\trule\n".encode()))
    code, _, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.tsv.gz"))
    assert code == 2 and f"{d / 'odd.tsv.gz'}:3: expected 6 fields like the header" in err, err
    pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d2", "d3"], "label": [0, 7]}).to_parquet(d / "odd.parquet")
    code, _, err = run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "odd.parquet"),
                       "--max-grade", "2")  # fmt: skip
    assert code == 2 and f"{d / 'odd.parquet'}, row 2: label '7'; expected a whole-number grade 0..2" in err, err


def test_judge_agree_reads_people_s_grades_as_judge_run_does_and_names_their_file(small_set):
    """Was: "a label outside the scale 0..2", naming neither the file nor the pair, for a TREC junk grade (-1) in
    people's labels (which judge run and eval read as 0) and for one above --max-grade."""
    d = small_set
    code, _, err = run("judge", "run", "--judge", "rule", "--dataset", str(d / "set.jsonl"), "--corpus",
                       str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    human = (d / "human.tsv").read_text()
    (d / "junk.tsv").write_text(human.replace("q2\td6\t0", "q2\td6\t-1"))
    code, out, err = run("judge", "agree", "--human", str(d / "junk.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 0, err
    assert run("judge", "agree", "--human", str(d / "human.tsv"), "--judge", str(d / "judged.tsv"))[1] == out
    (d / "high.tsv").write_text(human.replace("q2\td6\t0", "q2\td6\t5"))
    code, _, err = run("judge", "agree", "--human", str(d / "high.tsv"), "--judge", str(d / "judged.tsv"),
                       "--max-grade", "2")  # fmt: skip
    assert code == 2 and "Traceback" not in err, err
    assert (
        f"{d / 'high.tsv'}: 1 label(s) above the scale 0..2 (--max-grade), e.g. query q2 document d6 labelled 5" in err
    )


def test_a_pool_given_as_people_s_labels_is_named_a_pool_not_yet_labelled(small_set):
    """Was: "expected TREC qrels lines ... found 'query_id\tdoc_id'" for the pool itself given as --human."""
    d = small_set
    code, _, err = run("judge", "run", "--judge", "rule", "--dataset", str(d / "set.jsonl"), "--corpus",
                       str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    message = (
        f"{d / 'pool.tsv'}: no label column (its columns: query_id, doc_id): the pairs of a pool, not yet labelled"
    )
    code, _, err = run("judge", "agree", "--human", str(d / "pool.tsv"), "--judge", str(d / "judged.tsv"))
    assert code == 2 and message in err, err
    code, _, err = run("judge", "run", "--judge", "learned", "--human", str(d / "pool.tsv"), "--dataset",
                       str(d / "set.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "x.tsv"))  # fmt: skip
    assert code == 2 and message in err, err


def test_judge_run_reports_pairs_without_a_grade(small_set, monkeypatch):
    d = small_set
    (d / "picky.py").write_text("def grade(pair, top):\n    return None if pair.doc_id == 'd6' else 0\n")
    monkeypatch.syspath_prepend(str(d))
    code, _, err = run("judge", "run", "--judge", "callable", "--call", "picky:grade", "--dataset",
                       str(d / "set.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 1
    assert "no grade: query q2 document d6: picky:grade gave no grade" in err
    assert "3 label(s)" in err and "1 pair(s) got no grade" in err
    assert len(pd.read_csv(d / "judged.tsv", sep="\t")) == 3


def test_judge_run_asks_for_what_a_judge_needs(small_set):
    d = small_set
    base = ["judge", "run", "--dataset", str(d / "set.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "x.tsv")]
    code, _, err = run(*base, "--judge", "learned")
    assert code == 2 and "--human" in err
    code, _, err = run(*base, "--judge", "endpoint")
    assert code == 2 and "--model" in err
    # said before any work, not as one "no grade" line per pair
    code, _, err = run(*base, "--judge", "rule")
    assert code == 2 and "--judge rule: no document of the pool has a text (give --corpus" in err
    (d / "q.qrels").write_text("q1 0 d1 1\nq2 0 d4 1\n")
    code, _, err = run("judge", "run", "--dataset", str(d / "q.qrels"), "--corpus", str(d / "corpus.jsonl"),
                       "--pool", str(d / "pool.tsv"), "-o", str(d / "x.tsv"), "--judge", "rule")  # fmt: skip
    assert code == 2 and "no query of the pool has an expected answer or keywords" in err and "no grade" not in err
    assert not (d / "x.tsv").exists()


def test_judge_run_refuses_an_option_of_another_judge(small_set):
    """Was: --folds, --model and --call were accepted and ignored by a judge that does not read them."""
    d = small_set
    base = ["judge", "run", "--dataset", str(d / "set.jsonl"), "--corpus", str(d / "corpus.jsonl"), "--pool",
            str(d / "pool.tsv"), "-o", str(d / "x.tsv")]  # fmt: skip
    learned = ["--judge", "learned", "--human", str(d / "human.tsv")]
    for judge, extra, message in (
        (["--judge", "rule"], ["--folds", "3"], "--folds 3: read only with --judge learned, not --judge rule"),
        (["--judge", "rule"], ["--model", "m"], "--model m: read only with --judge endpoint, not --judge rule"),
        (learned, ["--call", "m:f"], "--call m:f: read only with --judge callable, not --judge learned"),
        (["--judge", "endpoint", "--model", "m"], ["--folds", "2"], "--folds 2: read only with --judge learned"),
    ):
        code, _, err = run(*base, *judge, *extra)
        assert code == 2 and message in err and "Traceback" not in err, (extra, err)
    assert not (d / "x.tsv").exists()
    code, _, err = run(*base, *learned, "--folds", "2")
    assert code == 0, err
    assert run(*base, *learned)[0] == 0  # the default, 5 folds (as many as the 2 labelled queries allow)


def test_judge_run_refuses_a_pool_that_is_empty_or_made_for_another_dataset(small_set):
    """Was: a pandas traceback for an empty pool file; "no document of the pool has a text (give --corpus" when
    --corpus was given but the pool came from another corpus."""
    d = small_set
    data = ["--dataset", str(d / "set.jsonl"), "--corpus", str(d / "corpus.jsonl"), "-o", str(d / "x.tsv")]
    cases = {
        "": f"{d / 'other.tsv'}: an empty file; expected the pool with a header query_id, doc_id",
        "query_id\tdoc_id\n": f"{d / 'other.tsv'}: the header only, no pair to judge",
        "query_id\tdoc_id\nz1\td2\nz2\td3\n": "none of the pool's 2 queries ['z1', 'z2'] is a query of the dataset",
        "query_id\tdoc_id\nq1\tx7\nq2\tx8\n": "none of the pool's 2 documents ['x7', 'x8'] is in the corpus",
    }
    for text, message in cases.items():
        (d / "other.tsv").write_text(text)
        for judge in ("rule", "learned"):
            extra = ["--human", str(d / "human.tsv")] if judge == "learned" else []
            code, _, err = run("judge", "run", "--judge", judge, *extra, *data, "--pool", str(d / "other.tsv"))
            assert code == 2 and message in err and "Traceback" not in err, (text, judge, err)
    assert not (d / "x.tsv").exists()


def test_judge_run_leaves_out_the_pool_s_queries_the_dataset_lacks_and_says_so(small_set):
    """Was: a pool query the dataset lacks got "no grade: the query has neither an expected answer nor keywords"."""
    d = small_set
    (d / "mixed.tsv").write_text("query_id\tdoc_id\nq1\td2\nqNOPE\td3\n")
    code, _, err = run("judge", "run", "--judge", "rule", "--dataset", str(d / "set.jsonl"), "--corpus",
                       str(d / "corpus.jsonl"), "--pool", str(d / "mixed.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    assert "1 of the pool's 2 queries ['qNOPE'] not of the dataset: their 1 pair(s) are left out" in err, err
    assert "neither an expected answer nor keywords" not in err, err
    assert pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)["query_id"].tolist() == ["q1"]


def test_judge_run_learned_trains_on_the_human_labels(small_set):
    d = small_set
    code, _, err = run("judge", "run", "--judge", "learned", "--human", str(d / "human.tsv"), "--folds", "2",
                       "--dataset", str(d / "set.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                       "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    judged = pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)
    assert set(judged["judge"]) == {"learned"} and len(judged) == 4
    # q1's pairs are graded by the model of q2's labels alone (all 0), q2's by q1's
    assert judged.loc[judged["query_id"] == "q1", "label"].tolist() == ["0", "0"]


def test_judge_run_learned_refuses_people_s_labels_of_pairs_it_cannot_read(small_set):
    """Was: labels of queries the dataset lacks, or of documents neither the corpus nor the pool holds (another
    dataset's, ids with a prefix), were learned as pairs with an empty query or document, and the judge graded the
    pool from them without a word."""
    d = small_set
    data = ["--dataset", str(d / "set.jsonl"), "--corpus", str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv")]
    learned = ["judge", "run", "--judge", "learned", "--folds", "2", *data, "-o", str(d / "judged.tsv")]
    human = (d / "human.tsv").read_text()
    for name, text, stray in (
        ("queries.tsv", human.replace("\nq", "\nx"), "of 2 queries ['x1', 'x2'] not in the dataset"),
        (
            "documents.tsv",
            human.replace("\td", "\tz").replace("zoc_id", "doc_id"),
            "of 4 document(s) ['z2', 'z3', 'z5'] and 1 more in neither",
        ),
    ):
        (d / name).write_text(text)
        code, _, err = run(*learned, "--human", str(d / name))
        assert code == 2 and "Traceback" not in err, err
        assert f"{d / name}: none of its 4 label(s) is of a pair the judge can read: all are {stray}" in err, err
    assert not (d / "judged.tsv").exists()
    # a few stray labels are left out, said so: the judge learns what it learns from people's labels alone
    code, _, err = run(*learned, "--human", str(d / "human.tsv"))
    assert code == 0, err
    alone = pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)
    (d / "stray.tsv").write_text(human + "x9\td2\t2\nq1\tz9\t2\n")
    code, _, err = run(*learned, "--human", str(d / "stray.tsv"))
    assert code == 0 and "stray.tsv: 2 of its 6 label(s) are of 1 query ['x9'] not in the dataset" in err, err
    assert "left out of what the learned judge learns from" in err
    assert pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)[["label", "config_hash"]].equals(
        alone[["label", "config_hash"]]
    )


def test_judge_run_learned_over_another_judge_s_labels(small_set):
    d = small_set
    data = ["--dataset", str(d / "set.jsonl"), "--corpus", str(d / "corpus.jsonl"), "--pool", str(d / "pool.tsv")]
    code, _, err = run("judge", "run", "--judge", "rule", *data, "-o", str(d / "rule.tsv"))
    assert code == 0, err
    learned = ["judge", "run", "--judge", "learned", "--human", str(d / "human.tsv"), "--folds", "2", *data]
    code, _, err = run(*learned, "-o", str(d / "alone.tsv"))
    assert code == 0, err
    code, _, err = run(*learned, "--base", str(d / "rule.tsv"), "-o", str(d / "stacked.tsv"))
    assert code == 0, err
    alone, stacked = (pd.read_csv(d / f, sep="\t", dtype=str) for f in ("alone.tsv", "stacked.tsv"))
    assert len(stacked) == 4 and set(stacked["judge"]) == {"learned"}
    # the base judge's labels are part of what decides the grades: another configuration, another hash
    assert set(alone["config_hash"]) != set(stacked["config_hash"])
    code, _, err = run("judge", "run", "--judge", "rule", *data, "--base", str(d / "rule.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and "read only with --judge learned, not --judge rule" in err and "or drop --base" in err, err
    code, _, err = run(
        "judge", "run", "--judge", "rule", *data, "--human", str(d / "human.tsv"), "-o", str(d / "x.tsv")
    )
    assert code == 2 and f"--human {d / 'human.tsv'}: read only with --judge learned, not --judge rule" in err, err
    # people's labels on another scale than the dataset's (0..2 here) are refused, not learned from
    (d / "five.tsv").write_text((d / "human.tsv").read_text().replace("q1\td3\t2", "q1\td3\t5"))
    code, _, err = run(*learned, "--human", str(d / "five.tsv"), "-o", str(d / "x.tsv"))
    assert (
        code == 2
        and "five.tsv: 1 label(s) above the scale 0..2 (the dataset's grades go up to 2; --max-grade sets another top), e.g. query q1 document d3 labelled 5"
        in err
    ), err
    (d / "junk.tsv").write_text((d / "human.tsv").read_text().replace("q2\td5\t0", "q2\td5\t-2"))
    code, _, err = run(*learned, "--human", str(d / "junk.tsv"), "-o", str(d / "junk-out.tsv"))
    assert code == 0, err  # TREC's negative grades (junk) read as 0
    code, _, err = run(*learned, "--base", str(d / "human.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and "these labels name no judge" in err
    rows = (d / "rule.tsv").read_text().splitlines()
    (d / "bad.tsv").write_text("\n".join([rows[0], rows[1].replace("\t0\t", "\tzero\t", 1), *rows[2:]]) + "\n")
    code, _, err = run(*learned, "--base", str(d / "bad.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"{d / 'bad.tsv'}, line 2: label 'zero'; expected a whole-number grade 0..2" in err, err
    header, first, *rest = rows
    cells = first.split("\t")
    wrong = {
        "--1": "line 2: label '--1'; expected a whole-number grade 0..2",
        "\u00b2": "line 2: label '\u00b2'; expected a whole-number grade 0..2",
        "3": "line 2: label '3'; expected a whole-number grade 0..2",
    }
    for label, message in wrong.items():
        (d / "bad.tsv").write_text("\n".join([header, "\t".join([*cells[:2], label, *cells[3:]]), *rest]) + "\n")
        code, _, err = run(*learned, "--base", str(d / "bad.tsv"), "-o", str(d / "x.tsv"))
        assert code == 2 and message in err and "Traceback" not in err, (label, err)
    # a blank line does not shift the line named; a pair graded twice differently, a short row
    other = "\t".join([*cells[:2], "1" if cells[2] != "1" else "0", *cells[3:]])
    (d / "bad.tsv").write_text("\n".join([header, first, "", *rest, other]) + "\n")
    code, _, err = run(*learned, "--base", str(d / "bad.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"line {len(rows) + 2}: query {cells[0]} document {cells[1]} graded" in err, err
    assert f"and {cells[2]} on line 2" in err
    (d / "bad.tsv").write_text("\n".join([header, first, "\t".join(cells[:3])]) + "\n")
    code, _, err = run(*learned, "--base", str(d / "bad.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"bad.tsv:3: expected {len(cells)} fields like the header, found 3" in err, err
    # one judge's labels, never a learned judge's: its grades read people's labels of the other folds
    (d / "two.tsv").write_text("\n".join([*rows, *(r.replace("\trule\t", "\tother\t") for r in rows[1:])]) + "\n")
    code, _, err = run(*learned, "--base", str(d / "two.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"two.tsv, line {len(rows) + 1}: labels of judge other " in err, err
    assert "and of rule " in err and "on line 2: one file holds one judge's labels" in err, err
    code, _, err = run(*learned, "--base", str(d / "stacked.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and "a learned judge's labels (learned 2 " in err and "cannot be the base of another" in err
    # a base that graded none of people's pairs is named by its file
    elsewhere = ["\t".join([q, f"{doc}-other", *more]) for q, doc, *more in (r.split("\t") for r in rows[1:])]
    (d / "elsewhere.tsv").write_text("\n".join([header, *elsewhere]) + "\n")
    code, _, err = run(*learned, "--base", str(d / "elsewhere.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"{d / 'elsewhere.tsv'}: the base judge's labels (" in err and "grade none of" in err, err
    (d / "empty.tsv").write_text(header + "\n")
    code, _, err = run(*learned, "--base", str(d / "empty.tsv"), "-o", str(d / "x.tsv"))
    assert code == 2 and f"{d / 'empty.tsv'}: expected rows below the header line, found the header only" in err, err
    assert not (d / "x.tsv").exists()
    # the pool's run counts: whole numbers, read by the learned judge only
    pool = (d / "pool.tsv").read_text().splitlines()
    (d / "runs.tsv").write_text("\n".join([pool[0] + "\truns", *(row + "\tbm25,dense" for row in pool[1:])]) + "\n")
    pooled = [a if a != str(d / "pool.tsv") else str(d / "runs.tsv") for a in data]
    code, _, err = run(*learned[: -len(data)], *pooled, "-o", str(d / "x.tsv"))
    assert code == 2 and f"{d / 'runs.tsv'}, line 2: runs 'bm25,dense'; expected a whole number >= 0" in err, err
    code, _, err = run("judge", "run", "--judge", "rule", *pooled, "-o", str(d / "x.tsv"))
    assert code == 0, err
    # a pool's rank counts from 1: a rank of 0 is named with its line, not judged (was: read as a count, >= 0)
    ranked = [pool[0] + "\tbest_rank", *(row + f"\t{i}" for i, row in enumerate(pool[1:]))]
    (d / "rank0.tsv").write_text("\n".join(ranked) + "\n")
    pooled = [a if a != str(d / "pool.tsv") else str(d / "rank0.tsv") for a in data]
    code, _, err = run("judge", "run", "--judge", "rule", *pooled, "-o", str(d / "x.tsv"))
    assert code == 2 and f"{d / 'rank0.tsv'}, line 2: best_rank '0'; expected a whole number >= 1 (a rank" in err, err


@pytest.fixture
def chat_server():
    with serve_chat() as url:
        yield url


def test_judge_run_endpoint_asks_a_registered_model(small_set, chat_server, monkeypatch):
    d = small_set
    (d / "pool-text.tsv").write_text("query_id\tdoc_id\ttext\nq1\td2\tholds the ANSWER\nq1\td3\tRELATED only\n"
                                     "q2\td5\tnothing\nq2\td6\tGARBLE forever\n")  # fmt: skip
    monkeypatch.setenv("RAGMETRICS_MODELS", f"stub=openai:{chat_server}/v1?model=judge-model&cache=off")
    code, _, err = run("judge", "run", "--judge", "endpoint", "--model", "stub", "--dataset", str(d / "set.jsonl"),
                       "--pool", str(d / "pool-text.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 1, err  # one pair never got a grade
    assert "no grade: query q2 document d6: no grade 0..2 in 3 answer(s)" in err
    judged = pd.read_csv(d / "judged.tsv", sep="\t", dtype=str)
    assert judged[["doc_id", "label", "judge"]].values.tolist() == [
        ["d2", "2", "endpoint"], ["d3", "1", "endpoint"], ["d5", "0", "endpoint"],
    ]  # fmt: skip
    prompts = [c[0]["content"] for c in Stub.calls]
    assert any("Expected answer: Paris" in p and "holds the ANSWER" in p for p in prompts)


def test_judge_run_reads_the_pools_text_as_it_was_before_pool_neutralised_it(small_set, monkeypatch):
    d = small_set
    (d / "formula.py").write_text("def grade(pair, top):\n    return int(pair.text == '=SUM(A1)')\n")
    (d / "pool-f.tsv").write_text("query_id\tdoc_id\ttext\nq1\td2\t'=SUM(A1)\nq1\td3\t'quoted\n")
    monkeypatch.syspath_prepend(str(d))
    code, _, err = run("judge", "run", "--judge", "callable", "--call", "formula:grade", "--dataset",
                       str(d / "set.jsonl"), "--pool", str(d / "pool-f.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 0, err
    assert pd.read_csv(d / "judged.tsv", sep="\t")["label"].tolist() == [1, 0]


def test_judge_run_that_grades_no_pair_says_so_exits_1_and_writes_no_file(small_set, monkeypatch):
    d = small_set
    (d / "broken.py").write_text("def grade(pair, top):\n    raise RuntimeError('model exploded')\n")
    monkeypatch.syspath_prepend(str(d))
    code, _, err = run("judge", "run", "--judge", "callable", "--call", "broken:grade", "--dataset",
                       str(d / "set.jsonl"), "--pool", str(d / "pool.tsv"), "-o", str(d / "judged.tsv"))  # fmt: skip
    assert code == 1, err
    last = err.splitlines()[-1]
    assert last.startswith("ragmetrics: error: the judge graded no pair: all 4 got no grade (the first, query q1 "
                           "document d2: ") and "model exploded" in last  # fmt: skip
    assert last.endswith(f"{d / 'judged.tsv'} not written") and not (d / "judged.tsv").exists()


def test_a_signed_label_in_a_judge_label_file_is_read_as_the_qrels_reader_reads_it(tmp_path):
    """One rule for an integer a file writes (``LABEL_DIGITS``): ``+2`` in a judge's label file is the grade 2, as
    in TREC qrels, and the same pair graded ``2`` again is no conflict; a pool's rank ``+2`` is the rank 2. Was: a
    pattern of its own refused ``+2`` there ("expected a whole-number grade")."""
    (tmp_path / "judged.tsv").write_text(
        "query_id\tdoc_id\tlabel\tjudge\tjudge_version\tconfig_hash\n"
        "q1\td1\t+2\trule\t1\tabc\nq1\td2\t0\trule\t1\tabc\nq1\td1\t2\trule\t1\tabc\n"
    )
    (tmp_path / "qrels.txt").write_text("q1 0 d1 +2\nq1 0 d2 0\n")
    rows = judge_label_rows(str(tmp_path / "judged.tsv"), 2)
    qrels = load_dataset(str(tmp_path / "qrels.txt")).qrels
    assert (
        dict(zip(rows["doc_id"], rows["label"]))
        == dict(zip(qrels["doc_id"], qrels["relevance"]))
        == {
            "d1": 2,
            "d2": 0,
        }
    )
    _check_counts(pd.DataFrame({"best_rank": ["+2", "1"], "runs": ["0", "+3"]}), "pool.tsv")
    with pytest.raises(RagMetricsError, match=r"^pool\.tsv, line 3: best_rank '\+-1'; expected a whole number >= 1"):
        _check_counts(pd.DataFrame({"best_rank": ["2", "+-1"]}), "pool.tsv")
    # a rank counts from 1, a count from 0: the error says which (was: a rank of 0 passed as a count)
    for column in ("best_rank", "rank"):
        with pytest.raises(RagMetricsError) as found:
            _check_counts(pd.DataFrame({column: ["1", "0"], "runs": ["1", "1"]}), "pool.tsv")
        assert (
            str(found.value) == f"pool.tsv, line 3: {column} '0'; expected a whole number >= 1 (a rank: the first is 1)"
        )
    with pytest.raises(
        RagMetricsError, match=r"^pool\.tsv, line 2: runs '-1'; expected a whole number >= 0 \(a count of runs\)$"
    ):
        _check_counts(pd.DataFrame({"rank": ["1"], "runs": ["-1"]}), "pool.tsv")


def test_labels_named_as_qrels_name_them_are_read():
    """Was: "no column label" for a frame of query_id, doc_id, relevance (the name Dataset, merge and with_labels
    use) or a file's qid, docno, rel."""
    human = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 0]})
    judge = pd.DataFrame({"qid": ["q1", "q2"], "docno": ["d1", "d2"], "rel": [1, 1]})
    found = label_agreement(human, judge)
    assert found.pairs == 2 and found.accuracy == 0.5


def test_an_agreement_on_few_relevant_pairs_is_said_to_be_rough():
    """Was: kappa 0.325 on 40 pairs, 2 of them relevant, read as any other: the chance correction rests on the
    smaller side, and two pairs swing it."""
    pairs = [(f"q{i}", "d", 1 if i < 2 else 0) for i in range(40)]
    human = pd.DataFrame(pairs, columns=["query_id", "doc_id", "label"])
    judge = human.assign(label=[1, 0, 1] + [0] * 37)
    found = label_agreement(human, judge)
    assert found.rough == (
        "only 2 of the 40 pairs people graded relevant: kappa rests on them, a rough figure "
        "(label pairs until 10 or more are relevant)"
    )
    balanced = pd.DataFrame([(f"q{i}", "d", i % 2) for i in range(40)], columns=["query_id", "doc_id", "label"])
    assert label_agreement(balanced, balanced).rough == ""
    # a judge that grades every pair alike: kappa 0 by construction, however many grades agree (was "81%, 0.00")
    flat = label_agreement(balanced, balanced.assign(label=0))
    assert flat.kappa == 0 and flat.rough.startswith("the judge gave all 40 pairs grade 0: kappa is 0 by construction")


def test_two_scales_are_noted_only_when_each_side_gives_a_grade_the_other_never_does():
    from ragmetrics.cli.judging import _note_two_scales

    def said(rows: dict[int, list[int]]) -> str:
        err = io.StringIO()
        _note_two_scales(pd.DataFrame(rows, index=[0, 1, 2]).T, err)  # rows: people's grades, columns: the judge's
        return err.getvalue()

    assert "grades 0, 2 and the judge's 0, 1" in said({0: [5, 1, 0], 1: [0, 0, 0], 2: [1, 4, 0]})
    assert said({0: [5, 1, 0], 1: [1, 3, 0], 2: [1, 4, 0]}) == ""  # people use the judge's 1 too: one scale, wider
    assert said({0: [5, 1, 1], 1: [1, 3, 0], 2: [0, 1, 4]}) == ""  # the same three grades on both sides
