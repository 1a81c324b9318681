"""The filters flag (never drop) planted duplicates, copies, unsupported answers, queries both retrievers miss and
answerable negatives; ``ragmetrics dataset check`` flags removed and changed documents, coverage and size against
targets, and a set too small to separate two runs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.synth.base import Candidate
from ragmetrics.synth.corpus import Document, make_corpus
from ragmetrics.synth.filters import default_retrievers, duplicate_flags, flag, longest_run

pytest.importorskip("bm25s")

DOCS = [
    Document("a", "", "Alpha beta gamma proteins bind the receptor in mice. The binding needs zinc and copper ions."),
    Document(
        "b",
        "",
        "Volcanic ash clouds from Icelandic volcanoes disrupt aviation across northern Europe during spring eruptions.",
    ),
    Document("c", "", "Quantum harmonica tuning uses resonant brass reeds for orchestral performance halls."),
    Document("d", "", "Glacier retreat exposes ancient pollen records preserved beneath Alpine ice sheets."),
    Document("e", "", "Sourdough fermentation relies on wild yeast and lactic bacteria colonies in flour."),
]


def _candidate(query: str, doc: str, *, answer: str = "", category: str = "factual", keywords=()) -> Candidate:
    corpus = make_corpus(DOCS)
    source = next(c for c in corpus.chunks if c.doc_id == doc)
    return Candidate(query, answer, tuple(keywords), category, "medium", source, {"generator": "test"})


@pytest.fixture(scope="module")
def flagged():
    corpus = make_corpus(DOCS)
    planted = [
        _candidate("What is known about alpha beta gamma?", "a", answer="Alpha beta gamma proteins"),  # 1 clean
        _candidate("what is KNOWN about gamma, beta, alpha", "a"),  # 2 duplicate of 1
        _candidate("What is known about alpha beta gamma receptor?", "a"),  # 3 near-duplicate of 1
        _candidate(
            "Do volcanic ash clouds from Icelandic volcanoes disrupt aviation across northern Europe during spring eruptions?",
            "b",
        ),
        _candidate("Which brass reeds tune a harmonica?", "c", answer="a zebra eats striped marmalade"),  # 5
        _candidate("How does sourdough fermentation work?", "d"),  # 6 missed: its source is d, the words are e's
        _candidate("How is zinc related to copper?", "a", category="negative", keywords=("zinc", "copper")),
        _candidate("How is glacier related to sourdough?", "d", category="negative", keywords=("glacier", "sourdough")),
    ]
    return flag(planted, corpus, default_retrievers(corpus))


def test_planted_problems_are_flagged_and_nothing_is_dropped(flagged):
    assert len(flagged) == 8
    flags = [list(c.flags) for c in flagged]
    assert flags[0] == []
    assert flags[1] == ["duplicate of candidate 1"]
    assert flags[2] == ["near-duplicate of candidate 1 (Jaccard 0.88)"]
    assert flags[3] == ["copies the source: a run of 14 words"]
    assert flags[4] == ["expected answer not supported by the source: 0% of its words occur in it"]
    assert flags[5] == ["missed by bm25 and plain bm25 (unstemmed, stopwords kept) in the top 10"]
    assert flags[6] == ["answerable? bm25 finds chunk a, which holds all its keywords"]
    assert flags[7] == []


def test_the_second_retriever_is_named():
    corpus = make_corpus(DOCS)
    missed = _candidate("How does sourdough fermentation work?", "d")
    found = flag([missed], corpus, default_retrievers(corpus, "variant"))
    assert found[0].flags == ("missed by bm25 and bm25 k1=0.9 b=0.4 (a variant of bm25) in the top 10",)
    # the plain retriever's tokens are other: bm25 stems "receptors" to match "receptor", plain does not
    plain = dict(default_retrievers(corpus))["plain bm25 (unstemmed, stopwords kept)"]
    assert [h.doc_id for h in plain.search("the receptor", 10, None)] == ["a"]
    assert plain.search("receptors", 10, None) == []
    assert [h.doc_id for h in dict(default_retrievers(corpus))["bm25"].search("receptors", 10, None)] == ["a"]


def test_one_retriever_says_no_second_confirmed():
    corpus = make_corpus(DOCS)
    found = flag([_candidate("How does sourdough fermentation work?", "d")], corpus, default_retrievers(corpus, "none"))
    assert found[0].flags == ("missed by bm25 in the top 10 (no second retriever to confirm)",)


def test_duplicate_and_run_helpers():
    assert duplicate_flags(["a b c d e", "e d c b a", "a b c d f", "x y"]) == [
        [],
        ["duplicate of candidate 1"],
        [],
        [],
    ]
    assert longest_run("the cat sat on the mat", "a cat sat on the mat today") == 5
    assert longest_run("数据集里有中文", "这个数据集里没有") == 4


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _trec(path: Path, ranked: dict[str, list[str]]) -> Path:
    lines = [f"{q} Q0 {d} {r} {100 - r} x\n" for q, docs in ranked.items() for r, d in enumerate(docs, 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_dataset_check_flags_removed_and_changed_documents(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    _write(corpus, [{"_id": d.doc_id, "title": "", "text": d.text} for d in DOCS])
    out, err = io.StringIO(), io.StringIO()
    evalset = tmp_path / "set.jsonl"
    assert main(["synth", str(corpus), "-o", str(evalset), "--categories", "factual=4"], out, err) == 0, err.getvalue()
    rows = [json.loads(line) for line in evalset.read_text(encoding="utf-8").splitlines()]
    assert main(["dataset", "check", str(evalset), "--corpus", str(corpus)], out, err) == 0, out.getvalue()

    gone, edited = next(iter(rows[0]["relevant_docs"])), next(iter(rows[1]["relevant_docs"]))
    kept = [
        {"_id": d.doc_id, "title": "", "text": d.text + (" Edited." if d.doc_id == edited else "")}
        for d in DOCS
        if d.doc_id != gone
    ]
    _write(corpus, kept)
    out = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--corpus", str(corpus)], out, err) == 1
    report = out.getvalue()
    assert f"missing: query {rows[0]['query_id']}: relevant document(s) not in the corpus: {gone}" in report
    assert f"changed: query {rows[1]['query_id']}: the text of its source {edited} changed" in report
    assert report.count("missing:") == 1 and report.count("changed:") == 1


def _chunked_set(tmp_path, n: int) -> tuple[Path, Path]:
    """Four documents of 50 words each, and a set of ``n`` factual queries synth wrote over their 20-word chunks
    (``set.jsonl``, its chunks beside it in ``set.chunks.jsonl``)."""
    words = [f"word{i}" for i in range(400)]
    corpus = _write(
        tmp_path / "corpus.jsonl",
        [{"_id": f"d{n}", "title": "", "text": " ".join(words[n * 50 : n * 50 + 50]) + "."} for n in range(4)],
    )
    evalset = tmp_path / "set.jsonl"
    argv = ["synth", str(corpus), "-o", str(evalset), "--chunker", "words:20:5", "--categories", f"factual={n}",
            "--no-retrieval-check"]  # fmt: skip
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 0, err.getvalue()
    return corpus, evalset


def test_dataset_check_against_the_sets_chunks_file_takes_its_chunks_as_given(tmp_path):
    """The chunks ``synth --chunks-out`` wrote, two of a document's three removed and the third edited: checked
    against that file, only the removed two are missing and the edited one is changed (was: the file was cut again
    with the chunker the set records, its chunks renamed ``d0#2#0``, so no source text was ever compared)."""
    _, evalset = _chunked_set(tmp_path, 12)
    rows = [json.loads(line) for line in evalset.read_text(encoding="utf-8").splitlines()]
    sourced = next(r for r in rows if r["provenance"]["chunk_id"] == "d0#2")
    assert sourced["relevant_docs"] == {"d0#2": 2, "d0#0": 1, "d0#1": 1}
    chunks = tmp_path / "set.chunks.jsonl"
    kept = [json.loads(line) for line in chunks.read_text(encoding="utf-8").splitlines()]
    kept = [{**c, "text": c["text"] + " Edited."} if c["_id"] == "d0#2" else c for c in kept]
    _write(chunks, [c for c in kept if c["_id"] not in ("d0#0", "d0#1")])

    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(evalset), "--corpus", str(chunks)], out, err) == 1
    report = out.getvalue()
    assert "the corpus taken as given, not cut again with words:20:5: its ids are the set's chunk ids" in err.getvalue()
    assert f"missing: query {sourced['query_id']}: relevant document(s) not in the corpus: d0#0, d0#1\n" in report
    assert f"changed: query {sourced['query_id']}: the text of its source d0#2 changed" in report
    assert report.count("changed:") == 1 and "d0#2," not in report and "d0#2\n" not in report


def test_dataset_check_cuts_the_document_corpus_of_a_set_with_a_query_of_whole_documents(tmp_path):
    """A set synth made over chunks, with a query added by hand that names a whole document (no provenance): checked
    against the document corpus, that corpus is cut with the recorded chunker as before (was: the hand query's
    document id, found among the corpus's ids, made the corpus read as the set's chunks file, taken as given, and
    every generated query's chunks were reported gone)."""
    corpus, evalset = _chunked_set(tmp_path, 6)
    with evalset.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"query_id": "by-hand", "query": "word3", "relevant_docs": {"d0": 1}}) + "\n")

    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(evalset), "--corpus", str(corpus)], out, err) == 0, out.getvalue()
    assert "the corpus chunked with words:20:5, as the set's provenance records" in err.getvalue(), err.getvalue()
    assert "taken as given" not in err.getvalue() and "missing:" not in out.getvalue(), out.getvalue()


def test_dataset_check_refuses_an_empty_corpus_path(tmp_path):
    """``--corpus ''`` is refused, whatever else is given (was: the freshness check skipped without a word,
    ``--chunker`` taken and ignored): as every empty value (``tests/test_cli_rules.py``)."""
    evalset = _write(tmp_path / "set.jsonl", [{"query_id": "q1", "query": "question", "relevant_docs": {"d1": 1}}])
    for extra in ([], ["--chunker", "words:20:5"], ["--parent-separator", "_C"]):
        out, err = io.StringIO(), io.StringIO()
        assert main(["dataset", "check", str(evalset), "--corpus", "", *extra], out, err) == 2, out.getvalue()
        assert err.getvalue() == ("ragmetrics: error: --corpus '': an empty value; give one, or drop --corpus\n"), (
            err.getvalue()
        )
        assert not out.getvalue()


def test_dataset_check_coverage_size_and_power(tmp_path):
    rows = [
        {"query_id": f"q{i}", "query": f"question {i}", "relevant_docs": {f"d{i}": 2}, "category": cat}
        for i, cat in enumerate(["factual"] * 8 + ["negative"] * 2)
    ]
    evalset = _write(tmp_path / "small.jsonl", rows)
    # two runs that differ on one query of ten: a set this small cannot separate them
    a = _trec(tmp_path / "a.trec", {f"q{i}": [f"d{i}", "z"] if i < 6 else ["z", f"d{i}"] for i in range(10)})
    b = _trec(tmp_path / "b.trec", {f"q{i}": [f"d{i}", "z"] if i < 5 else ["z", f"d{i}"] for i in range(10)})
    out, err = io.StringIO(), io.StringIO()
    for row in rows:
        row["difficulty"] = "hard" if row["query_id"] in ("q0", "q1") else "easy"
    evalset = _write(tmp_path / "small.jsonl", rows)
    argv = ["dataset", "check", str(evalset), "--target", "factual=8,negative=5,hard=3", "--stage", "prototype"]
    code = main([*argv, "--run", str(a), "--run", str(b), "--delta", "0.1"], out, err)
    report = out.getvalue()
    assert code == 1, err.getvalue()
    assert "categories: factual 8, negative 2" in report
    assert "coverage: negative: 2 of the 5 targeted (3 short)" in report
    assert "coverage: hard: 2 of the 3 targeted (1 short)" in report
    assert "difficulty: easy 8, hard 2" in report
    assert "coverage: factual: 8 of the 8 targeted (met)" in report  # met targets are said too
    typo = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--target", "factul=3"], io.StringIO(), typo) == 1
    assert "--target factul: no query has this category (nor is it a difficulty); did you mean 'factual'?" in (
        typo.getvalue())  # fmt: skip
    assert "size: 10 queries, fewer than prototype's 20-30 (10 short)" in report
    power = next(line for line in report.splitlines() if line.startswith("power:"))
    assert "NOT separated by these 10 queries" in power
    assert "a difference of 0.1000 needs" in power
    out = io.StringIO()
    assert main([*argv, "--format", "json"], out, err) == 1
    payload = json.loads(out.getvalue())
    assert payload["targets"]["factual"] == {"have": 8, "target": 8, "met": True}
    assert payload["targets"]["negative"] == {"have": 2, "target": 5, "met": False}
    assert payload["size"] == {"stage": "prototype", "problem": True,
                               "line": "size: 10 queries, fewer than prototype's 20-30 (10 short)"}  # fmt: skip
    for target, message in (("factual", "--target: 'factual': expected a count, e.g. factual=20"),
                            ("factual=-3", "--target: 'factual=-3': expected a whole number >= 0 after '='")):  # fmt: skip
        err = io.StringIO()
        assert main(["dataset", "check", str(evalset), "--target", target], io.StringIO(), err) == 2
        assert message in err.getvalue(), err.getvalue()

    # an option of a part of the check that does not run is refused (was: accepted and ignored, a metric never
    # checked), as is a category targeted twice
    refused = (
        (["--metric", "recall@5"], "--metric recall@5: read only with --run given at least 2 times, not 0 (the "
                                   "power check"),
        (["--delta", "0.1", "--run", str(a)], f"--run {a}, --delta 0.1: read only with --run given at least 2 "
                                              "times, not 1 (the power check, which compares two or more runs); give "
                                              "--run at least 2 times, or drop --run and --delta"),
        # was: one run accepted and the power check skipped without a word
        (["--run", str(a)], f"--run {a}: read only with --run given at least 2 times, not 1"),
        (["--chunker", "words"], "--chunker words: read only with --corpus (the cutting of the freshness check's "
                                 "corpus); give --corpus, or drop --chunker"),
        (["--parent-separator", "_C"], "--parent-separator _C: read only with --corpus"),
        (["--target", "hard=1,hard=2"], "--target: 'hard' given twice; expected each name once"),
    )  # fmt: skip
    for extra, message in refused:
        err = io.StringIO()
        assert main(["dataset", "check", str(evalset), *extra], io.StringIO(), err) == 2
        assert message in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()
    out = io.StringIO()
    assert (
        main(["dataset", "check", str(evalset), "--run", str(a), "--run", str(b), "--metric", "hits@1"], out, err) == 1
    )
    assert "power: a vs b on hits@1: difference +0.1000" in out.getvalue(), out.getvalue()
    # a metric that reads the retrieved text reads --corpus's, as eval does (was: asked for the --corpus given)
    corpus = _write(tmp_path / "corpus.jsonl", [{"_id": f"d{i}", "text": f"answer {i} here"} for i in range(10)]
                    + [{"_id": "z", "text": "nothing"}])  # fmt: skip
    answered = _write(tmp_path / "answered.jsonl", [{**row, "expected_answer": f"answer {i}"}
                                                   for i, row in enumerate(rows)])  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    argv = ["dataset", "check", str(answered), "--corpus", str(corpus), "--run", str(a), "--run", str(b)]
    assert main([*argv, "--metric", "answer_in@1"], out, err) in (0, 1), err.getvalue()
    assert "power: a vs b on answer_in@1: difference +0.1000" in out.getvalue(), out.getvalue()
    # three queries: no difference within a metric's range is detectable, and the line says so (was: "detect 4.3")
    few = _write(tmp_path / "few.jsonl", rows[:3])
    out = io.StringIO()
    c = _trec(tmp_path / "c.trec", {"q0": ["d0"], "q1": ["z"], "q2": ["d2"]})
    d = _trec(tmp_path / "d.trec", {"q0": ["d0"], "q1": ["d1"], "q2": ["z"]})
    main(["dataset", "check", str(few), "--run", str(c), "--run", str(d), "--metric", "hits@1"], out, err)
    assert "they detect no difference a metric of 0 to 1 can show (the smallest they would detect is" in out.getvalue()

    # runs made on other queries: refused without naming an override dataset check does not have (was: "...
    # --allow-no-overlap scores it anyway", an option it rejects)
    other = _trec(tmp_path / "other.trec", {"x1": ["d1"], "x2": ["d2"]})
    err = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--run", str(other), "--run", str(a)], io.StringIO(), err) == 2
    assert "run 'other': none of its queries is a query of dataset 'small'" in err.getvalue(), err.getvalue()
    assert "--allow-no-overlap" not in err.getvalue()

    # sixty queries, one run always right and one always wrong: separated
    many = [{"query_id": f"q{i}", "query": f"question {i}", "relevant_docs": {f"d{i}": 1}} for i in range(60)]
    evalset = _write(tmp_path / "many.jsonl", many)
    good = _trec(tmp_path / "good.trec", {f"q{i}": [f"d{i}"] for i in range(60)})
    bad = _trec(tmp_path / "bad.trec", {f"q{i}": ["z"] for i in range(60)})
    out = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--run", str(good), "--run", str(bad)], out, err) == 0
    assert ": separated by these 60 queries" in out.getvalue()
    # five queries without a relevant document (negatives) are not evaluated: the power counts the sixty compared
    unanswerable = [{"query_id": f"n{i}", "query": f"no answer {i}", "category": "negative"} for i in range(5)]
    mixed = _write(tmp_path / "with-negatives.jsonl", many + unanswerable)
    half = _trec(tmp_path / "half.trec", {f"q{i}": [f"d{i}"] if i < 30 else ["z"] for i in range(60)})
    out = io.StringIO()
    assert main(["dataset", "check", str(mixed), "--run", str(good), "--run", str(half)], out, io.StringIO()) == 0
    assert ": separated by these 60 queries; at 80% power they detect" in out.getvalue()
    # a difference the same on every query (here 1): no spread to estimate a detectable difference from
    out = io.StringIO()
    assert main(["dataset", "check", str(mixed), "--run", str(good), "--run", str(bad)], out, io.StringIO()) == 0
    assert "their difference is the same on every one of them" in out.getvalue() and "0.0000" not in out.getvalue()
    # more queries than a stage asks is said, not a finding (it only adds power)
    out = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--stage", "prototype"], out, err) == 0
    assert "size: 60 queries, more than prototype's 20-30 asks (not a finding" in out.getvalue()

    # a run made for another set (no query in common) is refused as eval refuses it, not scored as all zeros
    other = _trec(tmp_path / "other.trec", {f"x{i}": [f"d{i}"] for i in range(60)})
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(evalset), "--run", str(good), "--run", str(other)], out, err) == 2
    assert "none of its queries is a query of dataset" in err.getvalue() and "separated" not in out.getvalue()
    # said once, as the refusal alone (was: first a warning that the run's queries would be "scored 0" and
    # "dropped", then the same diagnosis again as the error)
    assert err.getvalue().count("none of its queries") == 1 and "warning" not in err.getvalue(), err.getvalue()
    # a run that is this set's still has its coverage said before the check
    short = _trec(tmp_path / "short.trec", {f"q{i}": [f"d{i}"] for i in range(50)})
    err = io.StringIO()
    assert main(["dataset", "check", str(evalset), "--run", str(good), "--run", str(short)], io.StringIO(), err) == 0
    assert "run 'short': 10 judged queries missing from the run (scored 0)" in err.getvalue(), err.getvalue()


class _Broken:
    def search(self, query: str, k: int, timeout: float | None):
        raise RuntimeError("the endpoint is down")


def test_a_failing_retriever_is_named_and_the_candidate_kept():
    corpus = make_corpus(DOCS)
    retrievers = [*default_retrievers(corpus, "none"), ("broken", _Broken())]
    found = flag([_candidate("How does sourdough fermentation work?", "d")], corpus, retrievers)
    assert found[0].flags == (
        "not checked by broken: RuntimeError: the endpoint is down",
        "missed by bm25 in the top 10 (no second retriever to confirm)",
    )
