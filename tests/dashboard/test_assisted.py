"""Assisted judging's builders (dashboard.core.assisted) and the judge job (dashboard.data.jobs.JudgeJob), on a
real SQLite store: the human sample is the plan's labelled prefix, a judge resumes where it stopped and never
overrides a person, the corrected numbers equal the library's PPI over the same labels."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.core import assisted
from dashboard.data.jobs import JudgeJob
from dashboard.data.workspace import Workspace
from ragmetrics import Dataset, Run, evaluate
from ragmetrics.analysis import ppi
from ragmetrics.analysis.compare import family_scope
from ragmetrics.analysis.judging import merge, pool
from ragmetrics.analysis.stats import family_text
from ragmetrics.analysis.verdicts import SAID
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.judges.base import max_grade, pairs_from_pool, provenance_of
from ragmetrics.judges.call import CallableJudge
from ragmetrics.judges.endpoint import parse_grade, prompt
from ragmetrics.store.database import Store

N_QUERIES = 12
DOC = re.compile(r"Document (\S+) ")


def _truth() -> dict[tuple[str, str], int]:
    """The true grade of every unjudged pair the two runs pool at depth 3: ``-b`` relevant (1) on every third
    query, ``-c`` highly relevant (2) on every fourth."""
    out = {}
    for i in range(N_QUERIES):
        q = f"q{i:02d}"
        out[(q, f"{q}-b")] = 1 if i % 3 == 0 else 0
        out[(q, f"{q}-c")] = 2 if i % 4 == 0 else 0
    return out


TRUTH = _truth()
JUDGE_WRONG = {(f"q{i:02d}", f"q{i:02d}-b") for i in range(1, N_QUERIES, 2)}
"""The pairs the stub judge grades wrongly (it says 1 where the truth is 0, or 0 where it is 1)."""


def judge_grade(query_id: str, doc_id: str) -> int:
    """What the stub judge answers: the truth, flipped between 0 and 1 on :data:`JUDGE_WRONG`."""
    grade = TRUTH[(query_id, doc_id)]
    return (1 - min(grade, 1)) if (query_id, doc_id) in JUDGE_WRONG else grade


def stub_answer(messages: list[dict]) -> str:
    """The OpenAI-compatible stub's answer to the endpoint judge's prompt: ``##final score: N`` for the document
    the passage names."""
    prompt = messages[0]["content"]
    doc = DOC.search(prompt)
    assert doc, prompt
    query = doc.group(1).split("-")[0]
    return f"##final score: {judge_grade(query, doc.group(1))}"


def assist_dataset() -> tuple[Dataset, list[Run]]:
    """Twelve queries in two categories, each with one judged document (grade 2) and two unjudged ones the runs
    retrieve in their top 3; a corpus whose texts name their document; two runs."""
    ids = [f"q{i:02d}" for i in range(N_QUERIES)]
    qrels = pd.DataFrame([(q, f"{q}-a", 2) for q in ids], columns=["query_id", "doc_id", "relevance"])
    queries = pd.DataFrame(
        {
            "query_id": ids,
            "query": [f"question number {i}" for i in range(N_QUERIES)],
            "category": ["billing" if i % 2 else "account" for i in range(N_QUERIES)],
            "expected_answer": [f"answer {i}" for i in range(N_QUERIES)],
        }
    )
    docs = [(f"{q}-{s}", f"Document {q}-{s} says something about question {q}.") for q in ids for s in "abc"]
    documents = pd.DataFrame(docs, columns=["doc_id", "text"])
    dataset = Dataset.from_frames(qrels, queries, name="assist-mini", documents=documents)

    def run(name: str, order: str) -> Run:
        rows = [{"query_id": q, "doc_id": f"{q}-{s}", "score": 9.0 - j} for q in ids for j, s in enumerate(order)]
        return Run.from_frame(pd.DataFrame(rows), name=name)

    return dataset, [run("alpha", "abc"), run("beta", "bca")]


def _labels(rows: list[tuple[str, str, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "label", "source"])


JUDGE = "judge:endpoint@1#0123456789abcdef"


def test_the_plan_leaves_the_negative_queries_out() -> None:
    """Was: the plan put a generated negative query first (nothing relevant to find), people labelled its pairs 0
    and every run was then scored a miss on it. The plan holds every other query."""
    dataset, _ = assist_dataset()
    ids = dataset.query_ids.astype(str).tolist()
    queries = dataset.queries.assign(category=["negative" if q == ids[0] else "account" for q in ids])
    negative = Dataset.from_frames(dataset.qrels[dataset.qrels["query_id"] != ids[0]], queries, name="with a negative")
    assert negative.negative_queries() == [ids[0]]
    plan = assisted.plan_order(negative, ids, "random")
    assert sorted(plan) == sorted(ids[1:]) and plan == assisted.plan_order(negative, ids, "random")


def test_the_sample_is_the_plans_labelled_prefix() -> None:
    dataset, runs = assist_dataset()
    pooled = pool(dataset, runs, 3)
    assert len(pooled) == 2 * N_QUERIES
    plan = assisted.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")
    assert sorted(plan) == sorted(dataset.query_ids.astype(str)) and plan == assisted.plan_order(
        dataset, dataset.query_ids.astype(str).tolist(), "random"
    )
    first, second, third = plan[:3]
    # the first and the third planned queries fully labelled, the second half: the sample is the first alone
    given = [(q, f"{q}-{s}", TRUTH[(q, f"{q}-{s}")], "") for q in (first, third) for s in "bc"]
    given.append((second, f"{second}-b", 0, ""))
    human = assisted.human_labels(_labels(given))
    sample = assisted.sample_of(plan, pooled, human)
    assert sample.queries == (first,) and sample.next_query == second and sample.pairs_left == 1 and sample.beyond == 1
    # the gap filled: the third joins
    human = assisted.human_labels(_labels([*given, (second, f"{second}-c", 0, "")]))
    assert assisted.sample_of(plan, pooled, human).queries == (first, second, third)
    # the queue in the plan's order: the second query's last pair first, then the fourth's
    todo = pooled.assign(impact=0.0, runs=2)
    todo = todo[
        [(q, d) not in set(zip(human["query_id"], human["doc_id"])) for q, d in zip(todo.query_id, todo.doc_id)]
    ]
    queue = assisted.plan_queue(todo, plan)
    assert queue["query_id"].tolist()[:2] == [plan[3], plan[3]] and queue["planned"].iloc[0] == 4


def test_stratified_plan_interleaves_the_categories() -> None:
    dataset, _ = assist_dataset()
    plan = assisted.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "category")
    categories = dataset.facet("category", plan[:4])
    assert sorted(categories) == ["account", "account", "billing", "billing"]


def test_a_judge_resumes_and_never_overrides_a_person(tmp_path: Path) -> None:
    ws = Workspace(Store(f"sqlite:///{tmp_path / 'store.sqlite'}"))
    dataset, runs = assist_dataset()
    entry = ws.add_dataset(dataset)
    pooled = pool(dataset, runs, 3)
    person = pooled.iloc[0]
    ws.add_label(entry.id, person["query_id"], person["doc_id"], 2, author="ann")
    gate, asked = threading.Event(), []

    def grade(pair, top):  # type: ignore[no-untyped-def]
        asked.append(pair.doc_id)
        if len(asked) > 8:
            gate.wait(10)
        return judge_grade(pair.query_id, pair.doc_id)

    judge = CallableJudge("tests:grade", grade)
    source = provenance_of(judge, 2).source
    labels = ws.lineage_labels(entry.id)
    todo = assisted.to_judge(pooled, labels, source)
    assert len(todo) == len(pooled)  # the person's pair too: the corrected means compare the judge with her there

    def save(given):  # type: ignore[no-untyped-def]
        rows = [(x.pair.query_id, x.pair.doc_id, int(x.label)) for x in given]
        return ws.add_judge_labels(entry.id, rows, given[0].provenance)

    job = JudgeJob(judge, pairs_from_pool(dataset, todo), max_grade(dataset), save, "callable").start()
    while job.status().done < 8:
        assert job.wait(0.05) is False
    job.cancel()
    gate.set()
    assert job.wait(10)
    status = job.status()
    assert status.cancelled and status.stored == status.done == 16 and status.total == len(todo)
    labels = ws.lineage_labels(entry.id)
    assert (labels["source"] == source).sum() == 16  # in the store, with their provenance
    # started again it grades only the rest; the person's label stays hers
    rest = assisted.to_judge(pooled, labels, source)
    assert len(rest) == len(todo) - 16
    again = JudgeJob(judge, pairs_from_pool(dataset, rest), max_grade(dataset), save, "callable").start()
    gate.set()
    assert again.wait(10) and again.status().error is None and again.status().stored == len(rest)
    labels = ws.lineage_labels(entry.id)
    mine = assisted.judge_labels(labels, source)
    assert len(mine) == len(pooled)
    assert assisted.human_labels(labels).values.tolist() == [[person["query_id"], person["doc_id"], 2]]
    # her label is the one pending for the pair, and a version of people's labels takes hers alone
    people = ws.pending_labels(entry.id, judges=False)
    assert people[["query_id", "doc_id", "label"]].values.tolist() == [[person["query_id"], person["doc_id"], 2]]
    hers = ws.pending_labels(entry.id).set_index(["query_id", "doc_id"]).loc[(person["query_id"], person["doc_id"])]
    assert hers["label"] == 2 and hers["author"] == "ann"
    version = ws.commit_labels(entry.id, author="ann", judges=False).entry
    assert version is not None and ws.version_sources(version.id) == (1, 0)
    # the judge's moved on to the version, pending there; the original's pending labels are read there too
    assert len(ws.pending_labels(version.id)) == len(pooled)
    assert ws.pending_labels(entry.id).equals(ws.pending_labels(version.id))
    assert len(assisted.judge_labels(ws.lineage_labels(version.id), source)) == len(pooled)
    # saved with the judges, they count apart, and the judge's grade of her pair never goes in over hers
    both = ws.commit_labels(version.id, author="ann", judges=True).entry
    assert both is not None and ws.version_sources(both.id) == (0, len(pooled) - 1)
    qrels = both.dataset.qrels
    hers = qrels[
        (qrels["query_id"].astype(str) == person["query_id"]) & (qrels["doc_id"].astype(str) == person["doc_id"])
    ]
    assert hers["relevance"].tolist() == [2]
    assert assisted.judge_sources(labels) == [source]
    assert assisted.judge_title(source).startswith("callable v0 · ")
    ws.store.engine.dispose()


def test_agreement_and_the_corrected_numbers_match_the_library() -> None:
    dataset, runs = assist_dataset()
    pooled = pool(dataset, runs, 3)
    judge = pd.DataFrame([(q, d, judge_grade(q, d)) for q, d in TRUTH], columns=["query_id", "doc_id", "label"])
    plan = assisted.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")
    sampled = plan[:6]
    human = pd.DataFrame(
        [(q, d, g) for (q, d), g in TRUTH.items() if q in sampled], columns=["query_id", "doc_id", "label"]
    )
    sample = assisted.sample_of(plan, pooled, human)
    assert sample.queries == tuple(sampled)
    found = assisted.agreement(human, judge, pooled, dataset, 2)
    assert found is not None and found.pairs == 12 and found.max_grade == 2
    wrong = sum((q, d) in JUDGE_WRONG for q, d in zip(human.query_id, human.doc_id))
    assert found.accuracy == pytest.approx(1 - wrong / 12)
    assert int(np.trace(found.confusion.to_numpy())) == 12 - wrong
    assert set(found.errors["facet"]) == {"rank", "category", "length"}
    assert assisted.badge(human, judge) == f"12 human / {2 * N_QUERIES - 12} judge labels"

    spec = parse_metric("ndcg@3")
    table = assisted.corrected_table(dataset, runs, spec, human, judge, sample.queries)
    # the same numbers from the library directly
    as_qrels = {"label": "relevance"}
    under_judge = evaluate(merge(dataset, judge.rename(columns=as_qrels)).dataset, runs, ["ndcg@3"], warn=False)
    under_people = evaluate(
        merge(dataset, human.rename(columns=as_qrels), override=True).dataset, runs, ["ndcg@3"], warn=False
    )
    expected = ppi.corrected_means(under_judge.runs, under_people.runs, sampled, metrics=["ndcg@3"])
    assert table["run"].tolist() == ["alpha", "beta"]
    assert np.allclose(table["corrected"], expected["estimate"]) and np.allclose(table["judge_only"], expected["judge"])
    assert np.allclose(table["human_only"], expected["human"])
    assert (table["n_labelled"] == 6).all() and (table["n_queries"] == N_QUERIES).all()
    # 6 labelled queries: too few to tell, no corrected interval (as a corrected delta of so few)
    assert table["too_few"].all() and table[["corrected_low", "corrected_high"]].isna().all().all()
    assert not expected["too_few"].any() or expected["ci_low"].notna().all()  # the library keeps it, flagged
    # the judge-only mean is the one under the judge's labels
    assert table["judge_only"].iloc[1] == pytest.approx(under_judge.runs["beta"].means["ndcg@3"])
    with pytest.raises(Exception, match="labelled"):
        assisted.corrected_table(dataset, runs, spec, human, judge, sample.queries[:1])


def test_the_corrected_panel_says_the_library_s_verdict_in_the_registry_s_words() -> None:
    """Compare's corrected panel reads each row's ``verdict`` (:func:`ragmetrics.analysis.ppi.corrected_comparison`'s,
    the CLI's) and says it by :data:`SAID`'s mark; it worked out its own marks from ``significant``, ``too_few`` and
    ``no_spread`` (a bare "▲"/"▼", nothing where not significant, a "cannot tell" of its own)."""
    dataset, runs = assist_dataset()
    judge = pd.DataFrame([(q, d, judge_grade(q, d)) for q, d in TRUTH], columns=["query_id", "doc_id", "label"])
    plan = assisted.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")
    seen = set()
    for labelled in (6, N_QUERIES):
        sampled = tuple(plan[:labelled])
        human = pd.DataFrame(
            [(q, d, g) for (q, d), g in TRUTH.items() if q in sampled], columns=["query_id", "doc_id", "label"]
        )
        specs = [parse_metric(m) for m in ("ndcg@3", "p@3")]
        as_qrels = {"label": "relevance"}
        under_judge = evaluate(merge(dataset, judge.rename(columns=as_qrels)).dataset, runs, specs, warn=False)
        people = merge(dataset, human.rename(columns=as_qrels), override=True).dataset
        under_people = evaluate(people, runs, specs, warn=False)
        library = ppi.corrected_comparison(under_judge.runs, under_people.runs, sampled, baseline="alpha")
        for spec in specs:
            deltas = assisted.corrected_deltas(dataset, runs, "alpha", spec, human, judge, sampled, family_specs=specs)
            (row,) = deltas.itertuples(index=False)
            assert row.verdict == library.set_index("metric").loc[str(spec), "verdict"]
            said = assisted.delta_words(row, "alpha", "holm").replace("\\", "")
            assert f" · {SAID[row.verdict].mark}" in said, said
            if row.verdict == "too few":  # a test on so few is not to be trusted: no interval and no p, as the CLI's
                assert f"{row.delta:+.3f}** no interval · {ppi.TOO_FEW_WORDS} · " in said, said
                assert "CI" not in said and "Holm p" not in said, said
            else:
                assert ("(no p-value)" in said) == np.isnan(row.p_value_corrected), said
            seen.add(row.verdict)
    assert seen == {"too few", "worse", "cannot tell"}  # measured on these labels


def test_the_corrected_panel_names_the_family_its_p_values_were_corrected_over() -> None:
    """The panel's family words are the computation's (``family_covers``: :func:`family_scope` of the family the
    p-values were corrected over); they said "all pairs" of the selection's runs whatever was computed. With three
    runs and two metrics the two families differ in size, words and corrected p-values."""
    dataset, runs = assist_dataset()
    order = [
        {"query_id": q, "doc_id": f"{q}-{s}", "score": 9.0 - j} for q in dataset.query_ids for j, s in enumerate("cab")
    ]
    runs = [*runs, Run.from_frame(pd.DataFrame(order), name="gamma")]
    judge = pd.DataFrame([(q, d, judge_grade(q, d)) for q, d in TRUTH], columns=["query_id", "doc_id", "label"])
    human = pd.DataFrame([(q, d, g) for (q, d), g in TRUTH.items()], columns=["query_id", "doc_id", "label"])
    specs = [parse_metric(m) for m in ("ndcg@3", "p@3")]
    sampled = dataset.query_ids.astype(str).tolist()
    corrected = {}
    for family, size, words in (("pairs", 6, "all pairs of 3 runs x 2 metrics"),
                                ("baseline", 4, "2 runs against the baseline x 2 metrics")):  # fmt: skip
        deltas = assisted.corrected_deltas(
            dataset, runs, "alpha", specs[0], human, judge, sampled, family_specs=specs, family=family
        )
        assert list(deltas["family_size"].unique()) == [size] and list(deltas["family_exact"].unique()) == [0]
        assert assisted.family_words(deltas, "holm") == family_text("holm", size, family_scope(family, 3, 2))
        assert assisted.family_words(deltas, "holm") == f"Holm-corrected over {size} comparison(s) ({words})"
        corrected[family] = deltas["p_value_corrected"].to_numpy()
    assert (corrected["baseline"] <= corrected["pairs"]).all() and (corrected["baseline"] < corrected["pairs"]).any()


def test_the_stub_answer_parses_as_the_endpoint_judge_reads_it() -> None:
    dataset, runs = assist_dataset()
    pairs = pairs_from_pool(dataset, pool(dataset, runs, 3))
    for pair in pairs[:4]:
        answer = stub_answer([{"role": "user", "content": prompt(pair, 2)}])
        assert parse_grade(answer, 2) == judge_grade(pair.query_id, pair.doc_id)


def test_lineage_labels_follow_a_saved_version(tmp_path: Path) -> None:
    ws = Workspace(Store(f"sqlite:///{tmp_path / 'store.sqlite'}"))
    dataset, _ = assist_dataset()
    entry = ws.add_dataset(dataset)
    judge = CallableJudge("tests:truth", lambda pair, top: judge_grade(pair.query_id, pair.doc_id))
    ws.add_judge_labels(entry.id, [("q00", "q00-b", 0), ("q00", "q00-c", 2)], provenance_of(judge, 2))
    ws.add_label(entry.id, "q00", "q00-b", 1, author="ann")
    saved = ws.commit_labels(entry.id, author="ann").entry
    assert saved is not None
    ws.add_label(saved.id, "q01", "q01-b", 0, author="bob")
    before, after = ws.lineage_labels(entry.id), ws.lineage_labels(saved.id)
    assert before.equals(after)  # the lineage reads the same from any of its versions
    assert after[["query_id", "doc_id", "label"]].values.tolist() == [
        ["q00", "q00-b", 0], ["q00", "q00-c", 2], ["q00", "q00-b", 1], ["q01", "q01-b", 0],
    ]  # fmt: skip
    assert (after["source"] == "").tolist() == [False, False, True, True]
    assert after["version"].tolist()[:3] == [saved.id] * 3 and after["version"].isna().tolist()[3]
    human = assisted.human_labels(after)
    assert human.values.tolist() == [["q00", "q00-b", 1], ["q01", "q01-b", 0]]
    assert (
        assisted.badge(human, assisted.judge_labels(after, provenance_of(judge, 2).source))
        == "2 human / 1 judge labels"
    )
    ws.store.engine.dispose()


def test_a_corrected_mean_of_width_0_is_said_without_an_interval() -> None:
    """As the CLI: labelled queries that all score alike give an interval of width 0, which measures nothing (was
    "corrected 1.000 [1.000, 1.000]" beside the warning)."""
    row = pd.DataFrame(
        [
            {
                "run": "bm25",
                "corrected": 1.0,
                "corrected_low": 1.0,
                "corrected_high": 1.0,
                "judge_only": 0.97,
                "judge_low": 0.95,
                "judge_high": 0.99,
                "human_only": 1.0,
                "human_low": 0.74,
                "human_high": 1.0,
                "too_few": False,
                "no_spread": True,
            }
        ]
    )
    said = assisted.mean_words(next(row.itertuples(index=False)), others_intervals=True)
    assert (
        "corrected **1.000** (no interval: the labelled queries score alike)" in said and "[1.000, 1.000]" not in said
    )
    spread = assisted.mean_words(next(row.assign(no_spread=False).itertuples(index=False)), others_intervals=False)
    assert "corrected **1.000** [1.000, 1.000]" in spread
    # a human-only (or judge-only) interval of width 0, a stratified sample's t interval that scored alike, reads as
    # none too (was "human-only 1.000 [1.000, 1.000]" under the warning that such an interval measures nothing)
    flat_human = row.assign(human_low=1.0, human_high=1.0)
    said = assisted.mean_words(next(flat_human.itertuples(index=False)), others_intervals=True)
    assert "human-only 1.000 [no interval]" in said and "judge-only 0.970 [0.950, 0.990]" in said


def test_the_corrected_box_says_how_much_of_the_pool_the_judge_labelled() -> None:
    """Was: "labelled the unjudged documents of the runs' top 20" after a judge ran at depth 10 (1,126 of 2,206)."""
    pool = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"]})
    judge = pd.DataFrame({"query_id": ["q1", "q2", "q9"], "doc_id": ["a", "c", "z"], "label": [1, 0, 1]})
    assert assisted.judge_reach_words(pool, judge, 20) == (
        "labelled 2 of the 3 unjudged documents of the runs' top 20 (the others count as the qrels leave them: run "
        "the judge at this depth on the Judge page)"
    )
    whole = pd.concat([judge, pd.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "label": [0]})])
    assert assisted.judge_reach_words(pool, whole, 10) == "labelled the unjudged documents of the runs' top 10"
