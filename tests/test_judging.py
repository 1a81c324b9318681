"""Filling the holes in the judgments, end to end and offline: hide judgments, pool, label, merge."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest

import ragmetrics as rm
from ragmetrics.analysis.compare import compare_result
from ragmetrics.analysis.judging import judged_by_the_judge_alone, merge, pool
from ragmetrics.cli import main
from ragmetrics.cli.judging import read_tsv
from ragmetrics.io import load_dataset, load_run
from ragmetrics.judges.base import pairs_from_pool

SCIFACT = Path(__file__).parent / "data" / "scifact"
RUNS = [SCIFACT / "bm25-stem.trec.gz", SCIFACT / "dense-all-minilm-l6-v2.trec.gz", SCIFACT / "hybrid-rrf60.trec.gz"]


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], out=out, err=err), out.getvalue(), err.getvalue()


def _qrels_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def _verdicts(dataset: rm.Dataset, runs: list[rm.Run]) -> dict[tuple[str, str], bool]:
    result = rm.evaluate(dataset, runs, ["ndcg@10"], warn=False)
    out = {}
    for a, b in combinations(result.run_names, 2):
        table = compare_result(result, baseline=a, runs=[b], seed=0, segments=()).table
        out[(a, b)] = bool(table["significant"].iloc[0])
    return out


def test_hide_pool_label_merge_gives_full_coverage_and_the_full_qrels_order_and_verdicts(tmp_path):
    full = _qrels_lines(SCIFACT / "qrels.tsv")
    rng = random.Random(7)
    hidden = set(rng.sample(range(len(full)), k=round(0.3 * len(full))))
    partial = tmp_path / "partial.qrels"
    partial.write_text("\n".join(line for i, line in enumerate(full) if i not in hidden) + "\n")
    truth = {(f[0], f[2]): int(f[3]) for f in (line.split() for line in full)}

    code, _, err = run_cli("pool", "--dataset", partial, *[a for r in RUNS for a in ("--run", r)], "--depth", 10,
                           "-o", tmp_path / "pool.tsv")  # fmt: skip
    assert code == 0, err
    with open(tmp_path / "pool.tsv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["query_id", "doc_id", "best_rank", "runs"]
    pairs = [tuple(r[:2]) for r in rows[1:]]
    best = {}  # each pair's best rank over the runs, from the runs themselves
    for run in (load_run(r) for r in RUNS):
        ranked = run.table.to_pandas().sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
        ranked["rank"] = ranked.groupby("query_id", sort=False).cumcount() + 1
        for q, d, rank in zip(ranked["query_id"], ranked["doc_id"], ranked["rank"]):
            best[(q, d)] = min(rank, best.get((q, d), rank))
    assert all(int(r[2]) == best[(r[0], r[1])] <= 10 for r in rows[1:])
    assert len(pairs) == len(set(pairs)) > 0
    # a judge that reads the full qrels (pairs it does not know are 0)
    labels = tmp_path / "labels.tsv"
    labels.write_text("query_id\tdoc_id\tlabel\n" + "".join(f"{q}\t{d}\t{truth.get((q, d), 0)}\n" for q, d in pairs))
    code, _, err = run_cli("judge", "merge", "--dataset", partial, "--labels", labels, "-o", tmp_path / "merged.qrels")
    assert code == 0, err

    merged = load_dataset(tmp_path / "merged.qrels")
    complete = load_dataset(SCIFACT / "qrels.tsv")
    runs = [load_run(r) for r in RUNS]
    on_merged = rm.evaluate(merged, runs, ["judged@10", "ndcg@10"], warn=False)
    on_full = rm.evaluate(complete, runs, ["ndcg@10"], warn=False)
    assert all(on_merged[r.name].means["judged@10"] == 1.0 for r in runs)
    by_merged = on_merged.mean()["ndcg@10"].sort_values().index.tolist()
    by_full = on_full.mean()["ndcg@10"].sort_values().index.tolist()
    assert by_merged == by_full
    assert _verdicts(merged, runs) == _verdicts(complete, runs)
    # and before the loop the holes were there, and each run's bounds to depth 10 held what judging its own top 10
    # gave (the pool of all three runs also judges documents a run ranks below 10, which its bounds leave unjudged)
    before = rm.evaluate(load_dataset(partial), runs, ["judged@10"], warn=False)
    assert all(before[r.name].means["judged@10"] < 1.0 for r in runs)
    for run in runs:
        alignment = rm.align(load_dataset(partial), run)
        own = pool(load_dataset(partial), [alignment], 10)
        given = pd.DataFrame(
            {
                "query_id": own["query_id"],
                "doc_id": own["doc_id"],
                "relevance": [truth.get((q, d), 0) for q, d in zip(own["query_id"], own["doc_id"])],
            }
        )
        judged = rm.align(merge(load_dataset(partial), given).dataset, run)
        assert list(judged.query_ids) == list(alignment.query_ids)
        for metric in ("ndcg@10", "map", "recall@10", "rprec"):
            worst, best = alignment.bounds(metric, 10)
            value = judged.value(metric)
            assert ((worst - 1e-12 <= value) & (value <= best + 1e-12)).all(), (run.name, metric)
            assert (worst < best).any(), (run.name, metric)


def test_a_query_that_judges_nothing_yet_is_pooled_in_the_runs_order() -> None:
    """A new query (in the dataset, no judgment yet) is what most needs judging: its top K is pooled, in trec_eval's
    order (score, then document id descending), and so is a document two runs share, once; a query the dataset
    does not have is not."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}, "new": {}}, name="with a new query")
    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "new", "new", "new", "stranger"],
            "doc_id": ["d1", "d2", "a", "b", "c", "z"],
            "score": [2.0, 1.0, 1.0, 3.0, 1.0, 9.0],
        }
    )
    one = rm.Run.from_frame(frame, name="one")
    two = rm.Run.from_frame(frame[frame["doc_id"] != "b"], name="two")
    pooled = pool(dataset, [one, two], 2)
    assert list(zip(pooled["query_id"], pooled["doc_id"], pooled["best_rank"], pooled["runs"])) == [
        ("q1", "d2", 2, 2),
        ("new", "b", 1, 1),
        ("new", "c", 1, 2),  # one's second (a tie on score: the larger id first, as trec_eval), two's first
        ("new", "a", 2, 1),
    ]


def test_a_negative_query_is_not_pooled_and_pool_says_so(tmp_path):
    """Was: a generated negative query (its answer not in the corpus) was pooled, judged, planned for people to
    label and then counted as a query every run misses. Only a query of category negative that judges nothing is
    negative: a new query without a category is pooled, and so is a "negative" one someone judged."""
    rows = [
        {"query_id": "known", "query": "a", "category": "factual", "relevant_docs": {"d1": 1}},
        {"query_id": "new", "query": "b", "category": "", "relevant_docs": {}},
        {"query_id": "neg", "query": "c", "category": "Negative", "relevant_docs": {}},
        {"query_id": "neg-judged", "query": "d", "category": "negative", "relevant_docs": {"d1": 0}},
    ]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "run.trec").write_text(
        "".join(
            f"{q} Q0 {d} {k} {3 - k} r\n"
            for q in ("known", "new", "neg", "neg-judged")
            for k, d in ((1, "d1"), (2, "d2"))
        )
    )
    dataset = load_dataset(tmp_path / "set.jsonl")
    assert dataset.negative_queries() == ["neg"]
    pooled = pool(dataset, [load_run(tmp_path / "run.trec")], 2)
    assert set(pooled["query_id"]) == {"known", "new", "neg-judged"}
    out, err = io.StringIO(), io.StringIO()
    argv = ["pool", "--dataset", str(tmp_path / "set.jsonl"), "--run", str(tmp_path / "run.trec"), "--depth", "2",
            "-o", str(tmp_path / "pool.tsv")]  # fmt: skip
    assert main(argv, out, err) == 0, err.getvalue()
    assert (
        "ragmetrics: note: 1 negative query ['neg'] (category negative: its answer is not in the corpus) is not pooled: "
        "there is nothing relevant to judge\n" in err.getvalue()
    ), err.getvalue()
    assert "neg\t" not in (tmp_path / "pool.tsv").read_text()


def test_queries_the_qrels_do_not_judge_are_not_pooled_and_an_evaluation_set_is_named(tmp_path):
    """Was: qrels with ``--queries`` naming more queries pooled only the judged ones, the rest "not pooled (a pool is
    of the dataset's queries)", as if the ids were wrong; the note now says what keeps them."""
    (tmp_path / "qrels.tsv").write_text("q1 0 d1 1\n")
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": q}) + "\n" for q in ("q1", "q2")))
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 d{k} {k} {3 - k} r\n" for q in ("q1", "q2") for k in (1, 2)))
    out, err = io.StringIO(), io.StringIO()
    argv = ["pool", "--dataset", str(tmp_path / "qrels.tsv"), "--queries", str(tmp_path / "queries.jsonl"),
            "--run", str(tmp_path / "run.trec"), "--depth", "2", "-o", str(tmp_path / "pool.tsv")]  # fmt: skip
    assert main(argv, out, err) == 0, err.getvalue()
    said = err.getvalue()
    assert "ranks 1 query the dataset does not have ['q2']: not pooled" in said, said
    assert f"if {tmp_path / 'queries.jsonl'} names them: a dataset read from qrels holds the queries its qrels" in said
    assert "an evaluation set (JSON/JSONL) keeps queries without judgments too" in said


def test_the_pool_carries_text_when_the_dataset_knows_it(tmp_path):
    sample = Path(__file__).parents[1] / "sample_runs" / "scifact"
    code, _, err = run_cli("pool", "--dataset", sample / "qrels.tsv", "--corpus", sample / "corpus.jsonl.gz",
                           "--run", sample / "runs" / "bm25-stem.trec.gz", "--depth", 3, "-o", tmp_path / "pool.tsv")  # fmt: skip
    assert code == 0, err
    with open(tmp_path / "pool.tsv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["query_id", "doc_id", "best_rank", "runs", "text"]
    assert all(len(r) == 5 and 1 <= int(r[2]) <= 3 and r[3] == "1" and r[4] for r in rows[1:])
    assert "warning" not in err
    # another dataset's corpus (none of the documents the qrels and runs name): refused, not an empty column
    (tmp_path / "other.jsonl").write_text('{"_id": "elsewhere", "text": "another corpus"}\n')
    code, _, err = run_cli("pool", "--dataset", sample / "qrels.tsv", "--corpus", tmp_path / "other.jsonl",
                           "--run", sample / "runs" / "bm25-stem.trec.gz", "--depth", 3, "-o", tmp_path / "p2.tsv")  # fmt: skip
    assert code == 2 and "other.jsonl: holds none of the" in err and not (tmp_path / "p2.tsv").exists(), err
    # one that holds judged documents but none of those pooled: said, not an empty column in silence
    judged = next(line.split()[2] for line in (sample / "qrels.tsv").read_text().splitlines() if line[0].isdigit())
    (tmp_path / "judged.jsonl").write_text(f'{{"_id": "{judged}", "text": "a judged document only"}}\n')
    code, _, err = run_cli("pool", "--dataset", sample / "qrels.tsv", "--corpus", tmp_path / "judged.jsonl",
                           "--run", sample / "runs" / "bm25-stem.trec.gz", "--depth", 3, "-o", tmp_path / "p3.tsv")  # fmt: skip
    assert code == 0 and "pooled documents has a text in the corpus (--corpus)" in err, err
    # a run's queries the dataset lacks are said not to be pooled (was: dropped without a word)
    extra = tmp_path / "extra.trec"
    extra.write_text(gzip.decompress((sample / "runs" / "bm25-stem.trec.gz").read_bytes()).decode()
                     + "unknown-q Q0 some-doc 1 9.0 t\n", encoding="utf-8")  # fmt: skip
    code, _, err = run_cli("pool", "--dataset", sample / "qrels.tsv", "--run", extra, "--depth", 3,
                           "-o", tmp_path / "p4.tsv")  # fmt: skip
    assert code == 0 and "run 'extra' ranks 1 query the dataset does not have ['unknown-q']: not pooled" in err, err


def test_a_judge_reads_the_same_passage_from_a_pool_with_text_one_without_and_the_pool_in_memory(tmp_path):
    """The passage a judge grades is the document's title and text, its white space collapsed, whichever way the
    pool was made: so the same judge (one provenance hash) gives the same labels from the CLI and the dashboard."""
    sample = Path(__file__).parents[1] / "sample_runs" / "scifact"
    data = ["--dataset", sample / "qrels.tsv", "--corpus", sample / "corpus.jsonl.gz"]
    made = ["--run", sample / "runs" / "bm25-stem.trec.gz", "--depth", 3]
    assert run_cli("pool", *data, *made, "-o", tmp_path / "text.tsv")[0] == 0
    assert run_cli("pool", "--dataset", sample / "qrels.tsv", *made, "-o", tmp_path / "bare.tsv")[0] == 0
    dataset = load_dataset(sample / "qrels.tsv", corpus=sample / "corpus.jsonl.gz")
    in_memory = pool(dataset, [load_run(sample / "runs" / "bm25-stem.trec.gz")], 3)
    read = {name: read_tsv(tmp_path / f"{name}.tsv", "pool") for name in ("text", "bare")}
    assert "text" in read["text"].columns and "text" not in read["bare"].columns
    passages = [
        [(p.query_id, p.doc_id, p.text) for p in pairs_from_pool(dataset, frame)]
        for frame in (read["text"], read["bare"], in_memory)
    ]
    assert passages[0] == passages[1] == passages[2]
    # without the corpus, the pool file's text is the passage: the same, quotes and all
    alone = rm.Dataset.from_frames(dataset.qrels, dataset.queries)
    assert [(p.query_id, p.doc_id, p.text) for p in pairs_from_pool(alone, read["text"])] == passages[0]
    assert any('"' in t for _, _, t in passages[0])
    documents = dataset.documents.set_index("doc_id")
    titled = [(d, t) for _, d, t in passages[0] if documents.loc[d, "title"]]
    assert titled and all(t.startswith(" ".join(documents.loc[d, "title"].split())) for d, t in titled)


def _qrels_and_labels(folder, qrels: str, labels: str):
    """A TREC qrels file and a labels TSV (``query_id doc_id label``) of those lines, in ``folder``."""
    (folder / "q.qrels").write_text(qrels)
    (folder / "l.tsv").write_text("query_id\tdoc_id\tlabel\n" + labels)
    return folder / "q.qrels", folder / "l.tsv"


def test_a_label_that_changes_a_judgment_is_a_conflict_unless_overridden(tmp_path):
    qrels, labels = _qrels_and_labels(tmp_path, "q1 0 d1 1\nq1 0 d2 0\n", "q1\td1\t2\nq1\td2\t0\nq1\td3\t1\n")
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / "m.qrels")
    assert code == 2
    assert "conflict: query q1 document d1: judged 1, labelled 2" in err and "1 label(s) would change" in err
    assert not (tmp_path / "m.qrels").exists()
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / "m.qrels",
                           "--override")  # fmt: skip
    assert code == 0 and "1 added, 1 changed" in err
    assert sorted(_qrels_lines(tmp_path / "m.qrels")) == ["q1 0 d1 2", "q1 0 d2 0", "q1 0 d3 1"]


def test_trec_qrels_lines_are_labels_too(tmp_path):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    labels = tmp_path / "more.qrels"
    labels.write_text("q1 0 d4 2\n")
    code, _, _ = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / "m.qrels")
    assert code == 0 and sorted(_qrels_lines(tmp_path / "m.qrels")) == ["q1 0 d1 1", "q1 0 d4 2"]


def test_label_impact_equals_scoring_each_label_on_its_own():
    from ragmetrics.analysis.judging import label_impact, pool

    full = load_dataset(SCIFACT / "qrels.tsv")
    qrels = full.qrels
    keep = random.Random(1).sample(range(len(qrels)), k=len(qrels) * 2 // 3)
    partial = rm.Dataset.from_frames(qrels.iloc[sorted(keep)].reset_index(drop=True), name="partial")
    runs = [load_run(r) for r in RUNS[::2]]
    alignments = {r.name: rm.align(partial, r) for r in runs}
    pairs = pool(partial, list(alignments.values()), 10)
    impact = label_impact(alignments, pairs, "ndcg@10")
    assert impact["impact"].is_monotonic_decreasing and (impact["impact"] >= 0).all()
    for row in impact.sample(12, random_state=0).itertuples(index=False):
        more = rm.Dataset.from_frames(
            pd.concat(
                [partial.qrels, pd.DataFrame({"query_id": [row.query_id], "doc_id": [row.doc_id], "relevance": [1]})]
            ),
            name="more",
        )
        for run in runs:
            before = rm.evaluate(partial, run, ["ndcg@10"], warn=False)[run.name].values.at[row.query_id, "ndcg@10"]
            after = rm.evaluate(more, run, ["ndcg@10"], warn=False)[run.name].values.at[row.query_id, "ndcg@10"]
            got = impact[(impact.query_id == row.query_id) & (impact.doc_id == row.doc_id)][f"delta_{run.name}"].iloc[0]
            assert got == pytest.approx(after - before, abs=1e-12)


def test_merge_says_when_labels_name_queries_the_dataset_lacks_and_refuses_an_output_it_cannot_write(tmp_path):
    qrels, labels = _qrels_and_labels(tmp_path, "q1 0 d1 1\n", "q1\td2\t1\nZZZ\td1\t1\n")
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / "m.qrels")
    assert code == 0 and "labels 1 query the dataset does not have ['ZZZ']" in err and "2 added" in err
    for name in ("m.json", "m.jsonl", "m.qrels.gz", "m.parquet"):
        code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / name)
        assert code == 2 and "judge merge writes TREC qrels lines" in err and not (tmp_path / name).exists()
    # labels none of whose queries is the dataset's: made for another dataset, refused
    _, foreign = _qrels_and_labels(tmp_path, "q1 0 d1 1\n", "ZZZ\td1\t1\nYYY\td2\t0\n")
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", foreign, "-o", tmp_path / "f.qrels")
    assert code == 2 and "none of its 2 labelled queries ['YYY', 'ZZZ'] is a query of the dataset ['q1']" in err, err
    assert not (tmp_path / "f.qrels").exists()
    # labels of queries the --queries file adds (no judgment yet) are new queries, merged with the warning
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "one"}\n{"_id": "ZZZ", "text": "new"}\n')
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--queries", tmp_path / "queries.jsonl",
                           "--labels", foreign, "-o", tmp_path / "f.qrels")  # fmt: skip
    assert code == 0 and "merged as new judged queries" in err, err


def test_merge_says_when_the_labels_grade_above_the_datasets_scale(tmp_path):
    """Was: a label of 5 merged into binary qrels without a word (eval --human-qrels refuses it); the merged qrels'
    scale becomes 0..5 and graded metrics weigh the new grades so: said, the merge done."""
    qrels, labels = _qrels_and_labels(tmp_path, "q1 0 d1 1\n", "q1\td2\t5\n")
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", labels, "-o", tmp_path / "m.qrels")
    assert code == 0 and "grades up to 5, the dataset's judgments up to 1: the merged qrels' scale is 0..5" in err
    assert (tmp_path / "m.qrels").read_text().split("\n")[1] == "q1 0 d2 5"
    _, within = _qrels_and_labels(tmp_path, "q1 0 d1 1\n", "q1\td2\t1\n")
    code, _, err = run_cli("judge", "merge", "--dataset", qrels, "--labels", within, "-o", tmp_path / "w.qrels")
    assert code == 0 and "grades up to" not in err, err


@pytest.mark.parametrize("option", [["--unjudged", "relevant"], ["--missing", "skip"], ["--tokenizer", "jieba"],
                                    ["--corpus-size", "5"], ["--rel-level", "2"]])  # fmt: skip
def test_pool_refuses_the_scoring_options_it_would_not_read(tmp_path, option):
    """pool lists unjudged pairs: how they would be scored does not change them, so those options are not taken
    (they were, and changed nothing)."""
    argv = ["pool", "--dataset", str(SCIFACT / "qrels.tsv"), "--run", str(RUNS[0]), "-o", str(tmp_path / "p.tsv")]
    with pytest.raises(SystemExit) as stopped:
        run_cli(*argv, *option)
    assert stopped.value.code == 2 and not (tmp_path / "p.tsv").exists()
    code, _, err = run_cli(*argv, "--level", "auto", "--allow-no-relevant")  # what pooling reads: still taken
    assert code == 0, err


def test_pool_refuses_a_run_given_twice(tmp_path):
    """Was: the same run given twice (or a copy of it) was pooled as two runs, every pair's runs count doubled
    (a feature of the learned judge)."""
    copy = tmp_path / "copy.trec.gz"
    copy.write_bytes(RUNS[0].read_bytes())
    argv = ["pool", "--dataset", str(SCIFACT / "qrels.tsv"), "-o", str(tmp_path / "p.tsv")]
    for twice in ([RUNS[0], RUNS[1], RUNS[0]], [RUNS[0], copy]):
        code, _, err = run_cli(*argv, *(a for r in twice for a in ("--run", str(r))))
        assert code == 2 and f"--run {twice[-1]}: the same run as --run {RUNS[0]}; expected each run once" in err
    assert not (tmp_path / "p.tsv").exists()
    code, _, err = run_cli(*argv, "--run", str(RUNS[0]), "--run", str(RUNS[1]))
    assert code == 0, err
    assert set(pd.read_csv(tmp_path / "p.tsv", sep="\t")["runs"]) == {1, 2}


def test_merge_into_an_evaluation_set_keeps_its_queries_answers_and_provenance(tmp_path):
    """--dataset an evaluation set, -o .jsonl or .json: the set again with each query's judgments merged, every
    other field as it was (the TREC qrels it wrote before lost them); labels of a query the set lacks are refused
    (a record needs its text)."""
    import json

    records = [
        {"query_id": "q1", "query": "capital of France?", "expected_answer": "Paris", "expected_keywords": ["paris"],
         "category": "geo", "difficulty": "easy", "provenance": {"generator": "extractive", "seed": "0"},
         "relevant_docs": {"d1": 2}},
        {"query": "a gas giant?", "category": "space", "relevant_docs": ["d4"]},  # no id: from its text
    ]  # fmt: skip
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    second = load_dataset(tmp_path / "set.jsonl").queries_table.column("query_id")[1].as_py()
    (tmp_path / "labels.tsv").write_text(f"query_id\tdoc_id\tlabel\nq1\td2\t0\n{second}\td5\t1\n", encoding="utf-8")
    for name in ("merged.jsonl", "merged.json"):
        code, _, err = run_cli("judge", "merge", "--dataset", tmp_path / "set.jsonl", "--labels",
                               tmp_path / "labels.tsv", "-o", tmp_path / name)  # fmt: skip
        assert code == 0, err
        assert "4 judgments in the evaluation set, every other field kept (2 added, 0 changed)" in err
        text = (tmp_path / name).read_text(encoding="utf-8")
        rows = json.loads(text) if name.endswith(".json") else [json.loads(line) for line in text.splitlines()]
        assert rows[0] == records[0] | {"relevant_docs": {"d1": 2, "d2": 0}}
        assert rows[1] == records[1] | {"relevant_docs": {"d4": 1, "d5": 1}}
        merged = load_dataset(tmp_path / name)
        assert merged.queries_table.column("category").to_pylist() == ["geo", "space"]
    (tmp_path / "other.tsv").write_text("query_id\tdoc_id\tlabel\nq1\td3\t1\nq9\td2\t0\n", encoding="utf-8")
    code, _, err = run_cli("judge", "merge", "--dataset", tmp_path / "set.jsonl", "--labels", tmp_path / "other.tsv",
                           "-o", tmp_path / "refused.jsonl")  # fmt: skip
    assert code == 2 and "labels 1 query the evaluation set does not have ['q9']" in err
    assert not (tmp_path / "refused.jsonl").exists()
    code, _, err = run_cli("judge", "merge", "--dataset", SCIFACT / "qrels.tsv", "--labels", tmp_path / "labels.tsv",
                           "-o", tmp_path / "x.jsonl")  # fmt: skip
    assert code == 2 and "or .json/.jsonl when --dataset is an evaluation set" in err


def test_merge_names_a_pool_that_was_not_labelled_yet(tmp_path):
    pooled = tmp_path / "pool.tsv"
    code, _, err = run_cli("pool", "--dataset", SCIFACT / "qrels.tsv", "--run", RUNS[0], "-o", pooled)
    assert code == 0, err
    code, _, err = run_cli("judge", "merge", "--dataset", SCIFACT / "qrels.tsv", "--labels", pooled, "-o",
                           tmp_path / "merged.tsv")  # fmt: skip
    assert code == 2 and not (tmp_path / "merged.tsv").exists()
    assert f"{pooled}: no label column (its columns: query_id, doc_id, best_rank, runs): the pairs of a pool" in err
    assert "add a column relevance (or label/rel/grade)" in err
    beir = tmp_path / "beir.tsv"  # BEIR's qrels header: the score is the label
    beir.write_text("query-id\tcorpus-id\tscore\n1\tnew-doc\t1\n", encoding="utf-8")
    code, _, err = run_cli("judge", "merge", "--dataset", SCIFACT / "qrels.tsv", "--labels", beir, "-o",
                           tmp_path / "merged.tsv")  # fmt: skip
    assert code == 0 and "(1 added, 0 changed)" in err, err


def test_the_queries_a_judge_alone_judges_with_nothing_relevant_are_named():
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}})
    labels = pd.DataFrame({"query_id": ["q1", "neg", "neg", "new", "new", "q1"],
                           "doc_id": ["d2", "a", "b", "c", "d", "d3"], "relevance": [0, 0, 0, 0, 2, 0]})  # fmt: skip
    # q1 is the dataset's own; "new" has a relevant label; "neg" only non-relevant ones
    assert judged_by_the_judge_alone(dataset, labels) == ["neg"]
    assert judged_by_the_judge_alone(dataset, labels, rel_level=3) == ["neg", "new"]
    assert judged_by_the_judge_alone(dataset, labels[labels["query_id"] == "q1"]) == []
    # a query people labelled is theirs to judge, whatever the judge said of it (was warned of all the same)
    assert judged_by_the_judge_alone(dataset, labels, people=["neg"]) == []


def test_a_chunk_run_pools_the_queries_without_judgments_as_documents_too():
    """The FAQ sample's runs retrieve chunks (``PRICE-06#1``); its queries without judgments were pooled as raw
    chunk ids, which no corpus text names and no label of a document counts for. Now as documents, at their best
    chunk, with their text, as the judged queries are. (The sample's are negative queries, which are not pooled:
    here they are made new queries, of no category.)"""
    folder = Path(__file__).parents[1] / "sample_runs" / "product_faq_zh"
    dataset = load_dataset(folder / "eval_set.json", corpus=folder / "corpus.jsonl")
    assert (
        len(dataset.negative_queries()) == 15
        and pool(dataset, [load_run(folder / "runs" / "bm25.jsonl")], 10)["query_id"]
        .isin(dataset.negative_queries())
        .sum()
        == 0
    )
    dataset = dataset.with_queries(dataset.queries.assign(category=""))
    run = load_run(folder / "runs" / "bm25.jsonl")
    pooled = pool(dataset, [run], 10)
    judged = set(dataset.qrels["query_id"])
    unjudged = pooled[~pooled["query_id"].isin(judged)]
    assert len(unjudged) and unjudged["query_id"].nunique() >= 2
    documents = set(dataset.documents["doc_id"])
    assert set(pooled["doc_id"]) <= documents, sorted(set(pooled["doc_id"]) - documents)[:5]
    assert pooled["text"].map(lambda t: isinstance(t, str) and bool(t)).all()
    assert (unjudged.groupby("query_id")["best_rank"].max() <= 10).all()
    assert not unjudged.duplicated(["query_id", "doc_id"]).any()


def test_a_comma_separated_pool_is_told_it_should_be_tab_separated(tmp_path):
    """Was: "the pool has no column query_id, doc_id in its header", although the header holds both."""
    qrels, pool = tmp_path / "q.qrels", tmp_path / "pool.csv"
    qrels.write_text("q1 0 d1 1\n")
    pool.write_text("query_id,doc_id\nq1,d1\n")
    code, _, err = run_cli(
        "judge", "run", "--judge", "rule", "--dataset", qrels, "--pool", pool, "-o", tmp_path / "j.tsv"
    )
    assert code == 2 and "it is comma-separated: a TSV's columns are separated by tabs" in err, err
