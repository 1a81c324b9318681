"""Builders of the Judge page, the query detail's passages, run health and qrels versions, on hand-made data."""

from __future__ import annotations

import pandas as pd
import pytest

import ragmetrics
from dashboard.core import documents, health, judge, validation, versions
from dashboard.core.text import Marks
from ragmetrics import Dataset, Run
from ragmetrics.analysis.judging import merge
from ragmetrics.analysis.stability import stability


@pytest.fixture(scope="module")
def graded() -> Dataset:
    """Three queries, graded 0-3, with a corpus; every chunk of document A has the same title."""
    qrels = pd.DataFrame(
        [
            ("q1", "A#0", 3),
            ("q1", "B#0", 0),
            ("q2", "C#0", 1),
            ("q3", "D#0", 2),
        ],
        columns=["query_id", "doc_id", "relevance"],
    )
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "query": ["年付多少钱？", "how to refund", "where is the office"],
            "expected_answer": ["168 元", "", ""],
            "expected_keywords": [["年付", "168 元"], ["refund", "form"], []],
        }
    )
    docs = pd.DataFrame(
        {
            "doc_id": ["A#0", "A#1", "B#0", "C#0", "C#1", "D#0", "E#0"],
            "title": ["价格", "价格", "退款", "Refunds", "Refunds", "Office", "Other"],
            "text": [
                "个人 Pro 年付 168 元。",
                "月付 18 元。",
                "退款政策。",
                "Fill in the refund form.",
                "Refund <b>within</b> 14 days.",
                "The office is in Berlin.",
                "Nothing here.",
            ],
        }
    )
    return Dataset.from_frames(qrels, queries, name="graded", documents=docs)


def _run(name: str, rankings: dict[str, list[str]]) -> Run:
    rows = [{"query_id": q, "doc_id": d, "score": 10.0 - i} for q, docs in rankings.items() for i, d in enumerate(docs)]
    return Run.from_frame(pd.DataFrame(rows), name=name)


@pytest.fixture(scope="module")
def runs(graded: Dataset) -> dict[str, ragmetrics.Alignment]:
    a = _run("a", {"q1": ["A#1", "A#0", "B#0"], "q2": ["C#1", "E#0", "C#0"], "q3": ["E#0", "D#0"]})
    b = _run("b", {"q1": ["A#0", "A#1"], "q2": ["C#0", "C#1"], "q3": ["D#0", "E#0"]})
    return {r.name: ragmetrics.align(graded, r) for r in (a, b)}


# --- passages ------------------------------------------------------------------------------


def test_retrieved_passages_read_each_chunks_own_text_and_judgment(runs) -> None:
    passages = documents.retrieved_passages(runs["a"], "q1", 10)
    assert list(passages.columns) == documents.PASSAGE_COLUMNS
    assert passages[["rank", "doc_id", "status"]].values.tolist() == [
        [1, "A#1", "unjudged"],
        [2, "A#0", "relevant"],
        [3, "B#0", "judged non-relevant"],
    ]
    # the same title for every chunk of A: the text tells them apart
    assert passages["title"].tolist()[:2] == ["价格", "价格"]
    assert passages["text"].tolist()[:2] == ["月付 18 元。", "个人 Pro 年付 168 元。"]
    assert set(passages["source"]) == {"corpus"}
    assert passages["label"].tolist()[1:] == [3, 0] and pd.isna(passages["label"].iloc[0])
    assert documents.retrieved_passages(runs["a"], "q1", 1)["doc_id"].tolist() == ["A#1"]
    assert documents.retrieved_passages(runs["a"], "nope", 10).empty
    assert not documents.textless(passages) and not documents.textless(passages.iloc[:0])


def test_without_any_text_the_passages_say_so_once(runs) -> None:
    """A dataset without a corpus and a run without chunk texts: one sentence, not a "(no text)" card a document."""
    bare = ragmetrics.Dataset.from_frames(runs["a"].dataset.qrels)
    run = ragmetrics.align(bare, runs["a"].run)
    assert documents.textless(documents.retrieved_passages(run, "q1", 10))
    assert documents.textless(documents.relevant_passages([run], "q1"))


def test_a_runs_chunk_text_wins_and_mapped_chunks_share_the_documents_rank(graded) -> None:
    run = Run.from_frame(
        pd.DataFrame(
            {
                "query_id": ["q3", "q3", "q3"],
                "doc_id": ["D#0-a", "D#0-b", "E#0-a"],
                "score": [3.0, 2.0, 1.0],
                "text": ["office in Berlin", "second chunk", None],
                "source_doc": ["D#0", "D#0", "E#0"],
            }
        ),
        name="chunks",
    )
    passages = documents.retrieved_passages(ragmetrics.align(graded, run), "q3", 10)
    assert passages[["rank", "doc_id", "chunk_id", "status", "source"]].values.tolist() == [
        [1, "D#0", "D#0-a", "relevant", "run"],
        [1, "D#0", "D#0-b", "relevant", "run"],
        [2, "E#0", "E#0-a", "unjudged", "corpus"],  # no chunk text: the corpus text of its document
    ]
    assert passages["text"].tolist() == ["office in Berlin", "second chunk", "Nothing here."]


def test_relevant_passages_with_text_grade_and_ranks(runs) -> None:
    rel = documents.relevant_passages(list(runs.values()), "q1")
    assert rel[["doc_id", "relevance", "title", "text", "source"]].values.tolist() == [
        ["A#0", 3, "价格", "个人 Pro 年付 168 元。", "corpus"]
    ]
    assert rel["ranks"].iloc[0] == "a 2 · b 1"
    assert documents.relevant_passages(list(runs.values()), "q3")["ranks"].iloc[0] == "a 2 · b 1"


def test_cards_escape_ids_titles_and_text(graded) -> None:
    run = _run("r", {"q2": ["C#1"]})
    cards = documents.retrieved_cards(
        documents.retrieved_passages(ragmetrics.align(graded, run), "q2", 5), Marks(keywords=["refund"])
    )
    head, body = cards[0]
    assert head.startswith("**#1** · **C\\#1** · :gray-badge[unjudged] · *Refunds*")
    assert "\\<b\\>within\\</b\\>" in body and "<b>" not in body
    assert ":orange-background[:orange[Refund]]" in body  # a keyword's colour
    assert documents.status_badge("relevant", 2) == ":green-badge[relevant (2)]"
    assert documents.status_of(-1) == "unjudged" and documents.status_of(0) == "judged non-relevant"


def test_pair_text_from_the_corpus_else_from_the_runs_chunks(graded, runs) -> None:
    assert documents.pair_text(list(runs.values()), graded, "q1", "A#1") == {
        "title": "价格",
        "text": "月付 18 元。",
        "source": "corpus",
    }
    run = Run.from_frame(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["Z#0"], "score": [1.0], "text": ["unseen chunk"]}), name="t"
    )
    assert documents.pair_text([ragmetrics.align(graded, run)], graded, "q1", "Z#0")["text"] == "unseen chunk"
    assert documents.pair_text([], graded, "q1", "nowhere") == {"title": "", "text": "", "source": ""}


# --- the judge's queue, scale and suggestions --------------------------------------------


def test_grade_scale_is_the_datasets_labels_and_at_least_binary(graded, tiny) -> None:
    assert judge.grade_scale(graded) == [0, 1, 2, 3]
    assert judge.grade_scale(tiny) == [0, 1, 2]
    binary = Dataset.from_frames(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]}))
    assert judge.grade_scale(binary) == [0, 1]
    assert [judge.grade_title(g, [0, 1, 2, 3]) for g in (0, 1, 3)] == [
        "0 · not relevant",
        "1 · relevant",
        "3 · highly relevant",
    ]


def test_queue_orders_by_impact_and_puts_what_cannot_change_anything_last(runs) -> None:
    queue = judge.queue_frame(runs, 10, "recall@1", "a")
    assert list(queue.columns) == judge.QUEUE_COLUMNS
    pairs = list(zip(queue["query_id"], queue["doc_id"]))
    assert set(pairs) == {("q1", "A#1"), ("q2", "C#1"), ("q2", "E#0"), ("q3", "E#0")}
    assert queue["impact"].is_monotonic_decreasing
    changing = queue[queue["can_change"]]
    assert len(changing) and (changing["impact"] > 0).all()
    assert (queue.loc[~queue["can_change"], "impact"] == 0).all()
    assert queue["can_change"].tolist() == sorted(queue["can_change"], reverse=True)  # zero impact last
    # a pair only run a ranks first moves a against b: the top of the queue
    assert pairs[0] in {("q1", "A#1"), ("q2", "C#1"), ("q3", "E#0")}


def test_open_pairs_leave_out_labelled_and_skipped(runs) -> None:
    queue = judge.queue_frame(runs, 10, "ndcg@3", None)
    pending = pd.DataFrame({"query_id": ["q1"], "doc_id": ["A#1"], "label": [1]})
    left = judge.open_pairs(queue, pending, {("q2", "E#0")})
    assert ("q1", "A#1") not in set(zip(left["query_id"], left["doc_id"]))
    assert ("q2", "E#0") not in set(zip(left["query_id"], left["doc_id"]))
    assert len(left) == len(queue) - 2
    summary = judge.queue_summary(queue, left)
    assert summary["pooled"] == len(queue) and summary["left"] == len(left)
    assert summary["labelled"] == 2 and summary["pending_outside"] == 0  # labelled, and skipped in this tab
    deeper = pd.concat([pending, pd.DataFrame({"query_id": ["q1"], "doc_id": ["Z#0"], "label": [0]})])
    assert judge.queue_summary(queue, left, deeper)["pending_outside"] == 1  # a label on a pair the pool lacks
    assert summary["can_change"] + summary["cannot"] == len(left)
    assert judge.open_pairs(queue, pending.iloc[0:0]).equals(queue)
    head = judge.next_pair(left)
    assert head is not None and (head["query_id"], head["doc_id"]) == (left["query_id"][0], left["doc_id"][0])
    assert isinstance(head["best_rank"], int) and isinstance(head["can_change"], bool)
    assert judge.next_pair(left.iloc[0:0]) is None


def test_queue_of_fully_judged_runs_is_empty(graded) -> None:
    judged = _run("j", {"q1": ["A#0", "B#0"], "q2": ["C#0"]})
    assert judge.queue_frame({"j": ragmetrics.align(graded, judged)}, 10, "recall@5", None).empty


def test_suggestions_name_their_rule_and_need_enough_evidence() -> None:
    scale = [0, 1, 2, 3]
    answer = judge.suggest(Marks(answer="168 元", keywords=["年付"]), "年付 168 元", scale)
    assert answer is not None and (answer.rule, answer.grade, answer.kind) == ("answer", 3, "suggestion:answer")
    both = judge.suggest(Marks(keywords=["Refund", "form"]), "the refund FORM", scale)
    assert both is not None and (both.rule, both.grade, both.kind) == ("keywords", 1, "suggestion:keywords")
    assert "2 of 2" in both.reason
    assert judge.suggest(Marks(keywords=["refund", "form"]), "a refund", scale) is None  # one of two: too little
    assert judge.suggest(Marks(keywords=["a", "b", "c"]), "a b", scale) is not None  # two of three
    assert judge.suggest(Marks(), "anything", scale) is None
    assert judge.suggest(Marks(answer="x"), "", scale) is None
    # a one-word answer (a cloze's blank) found is a mention, maybe not the answer: the smallest relevant grade
    cloze = judge.suggest(Marks(answer="Cas9"), "Cas9 is cheap to order.", scale)
    assert cloze is not None and (cloze.rule, cloze.grade) == ("answer", 1) and "one word" in cloze.reason


def test_a_suggestion_reads_the_title_as_the_rule_judge_does() -> None:
    """Was: the page suggested from the text alone, where the rule judge and answer_in@k read the title too."""
    corpus = pd.DataFrame({"doc_id": ["d1"], "title": ["巴黎"], "text": ["法国的首都。"]})
    dataset = Dataset.from_frames(pd.DataFrame({"query_id": ["q"], "doc_id": ["d1"], "relevance": [1]}),
                                  documents=corpus)  # fmt: skip
    read = documents.titled("巴黎", "法国的首都。")
    assert read == dataset.document_texts()["d1"] and documents.titled("", "text") == "text"
    found = judge.suggest(Marks(answer="巴黎"), read, [0, 1, 2])
    assert found is not None and found.rule == "answer"


def test_pending_table_newest_first_with_the_accepted_rule() -> None:
    pending = pd.DataFrame(
        {
            "query_id": ["q1", "q2"],
            "doc_id": ["d1", "d2"],
            "label": [1, 0],
            "author": ["ann", "bob"],
            "created_at": [1_700_000_000.0, 1_700_000_100.0],
        }
    )
    accepted = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "label": [1], "rule": ["keywords"]})
    table = judge.pending_table(pending, accepted)
    assert table[["query_id", "author", "suggested_by"]].values.tolist() == [
        ["q2", "bob", ""],
        ["q1", "ann", "keywords"],
    ]
    assert table["given"].iloc[0] == "2023-11-14 22:15:00 UTC"
    assert judge.pending_table(pending.iloc[0:0]).empty


# --- run health ------------------------------------------------------------------------------


def test_health_frame_and_no_overlap_messages(graded, runs) -> None:
    chunky = _run("docs", {"q1": ["A", "B"], "q2": ["C"], "q3": ["D"]})  # document ids against chunk qrels
    elsewhere = _run("other", {"x1": ["A#0"], "x2": ["B#0"]})  # another dataset's queries
    alignments = [runs["a"], ragmetrics.align(graded, chunky), ragmetrics.align(graded, elsewhere)]
    frame = health.health_frame(alignments)
    assert list(frame.columns) == health.HEALTH_COLUMNS
    assert frame["status"].tolist() == ["ok", "no overlap", "no overlap"]
    assert frame.loc[0, "overlap"] == 1.0 and frame.loc[0, "relevant_retrieved"] == 1.0
    assert frame.loc[1, "overlap"] == 0.0 and frame.loc[1, "queries_ranked"] == 3
    messages = health.no_overlap_messages(alignments)
    assert set(messages) == {"docs", "other"}
    assert "another dataset" in messages["other"]
    report = validation.validation_frame(graded, alignments)
    rows = report[report["check"].str.startswith("ranked queries with no judged document")]
    assert rows["status"].tolist() == ["ok", "error", "error"]
    assert "every metric 0" in rows["effect"].iloc[1]
    assert validation.to_look_at(report) >= 2


# --- qrels versions ------------------------------------------------------------------------


def test_diff_counts_and_stability_summaries(graded, runs) -> None:
    labels = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["A#1", "E#0", "D#0"], "relevance": [2, 0, 0]})
    after = merge(graded, labels, override=True).dataset
    diff = ragmetrics.analysis.judging.diff(graded, after)
    assert versions.diff_counts(diff) == {"added": 2, "changed": 1, "removed": 0}
    result = stability(graded, after, [a.run for a in runs.values()], "recall@1")
    summary = versions.stability_summary(result)
    assert summary.pairs == 1 and summary.changed <= summary.pairs and isinstance(summary.swapped, list)
    means = versions.stability_means(result)
    assert means.columns.tolist() == ["run", "before", "after", "change", "rank_before", "rank_after"]
    assert (means["change"] == means["after"] - means["before"]).all()
    verdicts = versions.stability_verdicts(result)
    assert verdicts["changed"].tolist() == sorted(verdicts["changed"], reverse=True)
    one = stability(graded, after, [runs["a"].run], "recall@1")
    assert versions.stability_summary(one).tau is None


def test_missed_keywords_read_the_corpus_when_the_run_has_no_text(runs) -> None:
    from dashboard.core import missed

    assert missed.text_known(runs["a"]) and not runs["a"].has_text
    frame = missed.missed_frame(runs["a"], 1).set_index("query_id")
    assert frame.loc["q2", "keywords_found"] == "1/2" and frame.loc["q2", "keywords_missing"] == "form"
    assert frame.loc["q1", "keywords_found"] == "0/2"
