"""The judges (ragmetrics.judges): the rule judge on hand cases, the learned judge on SciFact's pool (its kappa on
the queries it never saw, and cross-fitting), the endpoint judge against a real OpenAI-style HTTP server on
127.0.0.1, the callable judge, and the registry."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.io import load_dataset
from ragmetrics.judges.base import NO_QUERY, NO_TEXT, Grade, Pair, max_grade, pairs_from_pool, provenance_of, run_judge
from ragmetrics.judges.call import CallableJudge
from ragmetrics.judges.endpoint import RETRY, EndpointJudge, parse_grade
from ragmetrics.judges.learned import LearnedJudge, features, folds_of
from ragmetrics.judges.registry import JUDGES, JudgeInputs, make_judge
from ragmetrics.judges.rule import RuleJudge, found
from ragmetrics.models.openai_chat import OpenAIChat
from tests.judge_stub import Stub, serve_chat
from tests.model_stub import MALFORMED, ModelStub

SCIFACT = "tests/data/scifact"
RUNS = ("bm25-stem", "dense-all-minilm-l6-v2", "hybrid-rrf60")


def pair(text: str, answer: str = "", keywords: Sequence[str] = (), **kw) -> Pair:
    return Pair("q1", "what?", "d1", text, expected_answer=answer, expected_keywords=tuple(keywords), **kw)


# --- the rule judge -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer", "keywords", "top", "want"),
    [
        ("The capital of France is Paris.", "paris", ("france", "capital"), 3, 3),  # the answer, any case, in context
        ("The capital of France is Paris.", "paris", (), 3, 2),  # one word alone is a keyword: max - 1
        ("Its capital is Paris, on the Seine.", "capital is paris", (), 3, 3),  # an answer of words: the top grade
        ("The capital of France is Lyon.", "paris", (), 3, 0),  # an answer, no keyword, not found
        ("Parisian cafés", "paris", (), 3, 0),  # whole words only
        ("France and its capital", "", ("france", "capital"), 3, 2),  # every keyword: max - 1
        ("France and its capital", "paris", ("france", "capital"), 3, 1),  # a one-word answer is a keyword: 2/3
        ("France and its regions", "paris", ("france", "capital"), 3, 0),  # half of them, but one term only
        ("France and its regions", "paris", ("france", "capital", "seine", "louvre"), 4, 0),  # 1/4: under half
        ("France and the Seine", "", ("france", "capital", "seine", "louvre"), 4, 2),  # 2/4: 1 + floor(1.0)
        ("France and its capital", "", ("france", "capital", "seine"), 3, 1),  # 2/3: 1 + floor(0.67)
        ("Only France here", "", ("france", "paris", "seine", "louvre", "capital"), 2, 0),  # 1/5
        ("France", "", ("france",), 2, 1),  # the one keyword of a query that has one: every keyword, max - 1
        ("France, its capital, the Seine", "", ("france", "capital", "seine", "louvre"), 4, 2),  # 3/4: 1 + floor(1.5)
        ("nothing here", "", ("france", "capital"), 3, 0),
        ("France and its capital", "", ("france", "capital"), 1, 1),  # binary: every keyword
        ("France and its regions", "", ("france", "capital"), 1, 0),  # binary: not every keyword
        ("北京是中国的首都。", "北京", ("首都",), 2, 2),  # Chinese: a substring, in context
        ("北京的咖啡馆", "北京", ("首都",), 2, 0),  # a one-word answer without its context: one keyword of two
        (
            "研究发现: 2型糖尿病患者的胰岛素抵抗与饮食有关。",
            "2型糖尿病患者的胰岛素抵抗",
            ("肥胖",),
            3,
            3,
        ),  # not one word
        ("ｐａｒｉｓ is wide", "Paris", (), 1, 1),  # NFKC
    ],
)
def test_rule_judge_grades_hand_cases(text, answer, keywords, top, want):
    assert RuleJudge().grade([pair(text, answer, keywords)], top)[0].label == want


@pytest.mark.parametrize(
    ("query", "answer", "text", "want"),
    [
        ("Fill in the blank: each invoice is sent on the first day of the billing ____ by email",
         "cycle", "Invoices: each invoice is sent on the first day of the billing\ncycle by email.", 2),
        ("Fill in the blank: each invoice is sent on the first day of the billing ____ by email",
         "cycle", "A cycle of releases ships every month.", 1),  # the word alone: a keyword's grade
        ("Fill in the blank: ____ is the default port", "8080", "Use 8080 is the default port.", 2),
        ("填空：团队版每个席位每月____美元", "6", "价格：团队版每个席位每月 6 美元。", 2),
    ],
)  # fmt: skip
def test_rule_judge_gives_a_cloze_s_own_passage_the_top_grade(query, answer, text, want):
    """Was: a cloze's answer is one word, a keyword, so its source passage got 1 of 2, as any passage with the word:
    the context the query shows, its blank filled, finds the passage it was cut from."""
    cloze = Pair(query_id="q", query=query, doc_id="d", text=text, expected_answer=answer, expected_keywords=(answer,))
    assert RuleJudge().grade([cloze], 2)[0].label == want


def test_rule_judge_gives_no_grade_without_an_expectation():
    grade = RuleJudge().grade([pair("anything")], 2)[0]
    assert grade.label is None
    assert "neither an expected answer nor keywords" in grade.problem
    assert found("cat", "a cat sat") and not found("cat", "category")


# --- the learned judge on SciFact ---------------------------------------------------------------


@pytest.fixture(scope="module")
def scifact_pool():
    """SciFact's pool (the top 10 of its three runs, judged or not; each pair's best rank and how many runs
    retrieved it, as ``ragmetrics pool`` writes them) with the truth: 1 when the qrels judge the
    pair relevant, else 0 (SciFact judges only relevant documents)."""
    dataset = load_dataset(
        f"{SCIFACT}/qrels.tsv", queries=f"{SCIFACT}/queries.jsonl", corpus=f"{SCIFACT}/pool-docs.jsonl.gz"
    )
    frames = []
    for name in RUNS:
        run = pd.read_csv(f"{SCIFACT}/{name}.trec.gz", sep=r"\s+", header=None, dtype={0: str, 2: str},
                          names=["query_id", "q0", "doc_id", "rank", "score", "tag"])  # fmt: skip
        frames.append(run[run["rank"] <= 10])
    grouped = pd.concat(frames).groupby(["query_id", "doc_id"], sort=True)["rank"]
    pooled = grouped.agg(best_rank="min", runs="size").reset_index()
    pairs = pairs_from_pool(dataset, pooled)
    relevant = {(q, d) for q, d in zip(dataset.qrels["query_id"], dataset.qrels["doc_id"], strict=True)}
    truth = np.array([int((p.query_id, p.doc_id) in relevant) for p in pairs])
    return dataset, pairs, truth


def test_learned_judge_on_a_labelled_tenth_of_scifact(scifact_pool):
    dataset, pairs, truth = scifact_pool
    queries = sorted({p.query_id for p in pairs})
    rng = np.random.default_rng(7)
    labelled = set(rng.choice(queries, size=len(queries) // 10, replace=False).tolist())
    training = [(p, int(y)) for p, y in zip(pairs, truth, strict=True) if p.query_id in labelled]
    judge = LearnedJudge(training, folds=5)
    labels = run_judge(judge, pairs, max_grade(dataset))
    predicted = np.array([x.label for x in labels])
    rest = np.array([p.query_id not in labelled for p in pairs])
    kappa = cohen_kappa_score(truth[rest], predicted[rest])
    honest = cohen_kappa_score(truth[~rest], predicted[~rest])  # the labelled queries, each by a model without it
    constant = cohen_kappa_score(truth[rest], np.full(rest.sum(), np.bincount(truth[~rest]).argmax()))
    print(
        f"\nlearned judge, SciFact pool top 10 of 3 runs: {len(pairs)} pairs, {len(labelled)} labelled queries "
        f"({len(training)} pairs); kappa on the other {rest.sum()} pairs {kappa:.3f} "
        f"(constant predictor {constant:.3f}); cross-fitted kappa on the labelled pairs {honest:.3f}; "
        f"accuracy {np.mean(truth[rest] == predicted[rest]):.3f}"
    )
    assert labels[0].provenance.judge == "learned"
    assert kappa > constant + 0.1
    assert honest > 0


@pytest.mark.parametrize("stacked", [False, True], ids=["alone", "over a base judge"])
def test_learned_judge_never_sees_the_labels_it_grades(scifact_pool, stacked):
    """Cross-fitting: flipping every label of one query changes none of that query's grades (a model trained on
    all labels would move with them), while it does change the grades of queries nobody labelled; the same over a
    base judge's labels (fixed: they do not read people's)."""
    _, pairs, truth = scifact_pool
    noisy = np.random.default_rng(3).random(len(pairs)) < 0.2
    base = (
        {(p.query_id, p.doc_id): int(t != n) for p, t, n in zip(pairs, truth, noisy, strict=True)} if stacked else None
    )
    queries = sorted({p.query_id for p in pairs})[:80]
    chosen = [p for p in pairs if p.query_id in set(queries)]
    y = np.array([truth[pairs.index(p)] for p in chosen])
    labelled = set(queries[:40])
    training = [(p, int(v)) for p, v in zip(chosen, y, strict=True) if p.query_id in labelled]
    target = next(q for q in sorted(labelled) if sum(v for p, v in training if p.query_id == q) > 0)
    flipped = [(p, 1 - v if p.query_id == target else v) for p, v in training]
    before = [g.label for g in LearnedJudge(training, base=base).grade(chosen, 1)]
    after = [g.label for g in LearnedJudge(flipped, base=base).grade(chosen, 1)]
    own = [i for i, p in enumerate(chosen) if p.query_id == target]
    unlabelled = [i for i, p in enumerate(chosen) if p.query_id not in labelled]
    assert [before[i] for i in own] == [after[i] for i in own]
    assert LearnedJudge(training).config() != LearnedJudge(flipped).config()  # the provenance says which labels
    assert [before[i] for i in unlabelled] != [after[i] for i in unlabelled]  # graded by a model that saw the flip
    # a model fitted on every label, the target's too, moves with the flip (else this test could not fail)
    x = features(chosen)
    train = np.array([p.query_id in labelled for p in chosen])
    y_flipped = np.array([v for _, v in flipped])
    judge = LearnedJudge(training)
    seen = judge._fit_predict(x[train], y[train], x[own])
    assert not np.array_equal(seen, judge._fit_predict(x[train], y_flipped, x[own]))


def test_learned_judge_over_a_base_judge_learns_how_far_to_trust_it(scifact_pool):
    """Stacked on a base judge's labels: a base judge that is right every time is followed (kappa near 1 on the
    pairs nobody labelled), one that answers at random is not (about the learned judge alone); a base judge that
    graded none of people's pairs gives nothing to learn from and is refused."""
    dataset, pairs, truth = scifact_pool
    queries = sorted({p.query_id for p in pairs})
    rng = np.random.default_rng(7)
    labelled = set(rng.choice(queries, size=len(queries) // 10, replace=False).tolist())
    training = [(p, int(y)) for p, y in zip(pairs, truth, strict=True) if p.query_id in labelled]
    rest = np.array([p.query_id not in labelled for p in pairs])
    keys = [(p.query_id, p.doc_id) for p in pairs]

    def kappa(base: dict | None) -> float:
        labels = run_judge(LearnedJudge(training, base=base), pairs, max_grade(dataset))
        return cohen_kappa_score(truth[rest], np.array([x.label for x in labels])[rest])

    alone = kappa(None)
    right = kappa(dict(zip(keys, truth.tolist(), strict=True)))
    noise = kappa(dict(zip(keys, rng.integers(0, 2, len(pairs)).tolist(), strict=True)))
    print(f"\nlearned judge alone {alone:.3f}; over a base judge always right {right:.3f}, at random {noise:.3f}")
    assert right > 0.9 and right > alone + 0.3
    assert abs(noise - alone) < 0.1
    one = next(k for k in keys if k[0] in labelled)
    assert LearnedJudge(training, base={one: 1}).config() != LearnedJudge(training).config()
    elsewhere = {k: 1 for k, p in zip(keys, pairs, strict=True) if p.query_id not in labelled}
    with pytest.raises(RagMetricsError, match=r"grade none of the .* pair\(s\) people labelled"):
        LearnedJudge(training, base=elsewhere)


def test_folds_depend_on_the_queries_only():
    folds = folds_of([f"q{i}" for i in range(10)], 3)
    assert sorted(np.bincount(list(folds.values()))) == [3, 3, 4]
    assert folds == folds_of([f"q{i}" for i in reversed(range(10))], 3)
    with pytest.raises(RagMetricsError, match="people's labels"):
        LearnedJudge([])
    with pytest.raises(RagMetricsError, match="cover 1 query"):
        LearnedJudge([(pair("a"), 1), (pair("b"), 0)])


# --- the endpoint judge against a real HTTP server ---------------------------------------------------------


def http_chat(url: str) -> OpenAIChat:
    """The registered models' OpenAI-compatible client, at the stub, without its own retries."""
    return OpenAIChat("stub", url + "/v1", "judge-model", attempts=1, backoff=0.0)


@pytest.fixture
def chat_server():
    with serve_chat() as url:
        yield url


def test_endpoint_judge_grades_retries_and_reports(chat_server):
    judge = make_judge("endpoint", JudgeInputs(model=http_chat(chat_server), attempts=3))
    pairs = [
        pair("holds the ANSWER", "the answer"),
        pair("RELATED but no answer"),
        pair("off topic"),
        pair("ONCE malformed, then fine ANSWER"),
        pair("GARBLE forever"),
        pair("TOOHIGH grade"),
        pair("NOTJSON first, then the ANSWER"),
    ]
    labels = run_judge(judge, pairs, 2)
    assert [x.label for x in labels] == [2, 1, 0, 2, None, None, 2]
    assert "in 3 answer(s)" in labels[4].problem and "maybe a 2" in labels[4].problem
    assert labels[0].provenance.judge == "endpoint" and len(labels[0].provenance.config_hash) == 16
    first = next(c[0]["content"] for c in Stub.calls if "holds the ANSWER" in c[0]["content"])
    assert "Expected answer: the answer" in first and "0 to 2" in first and "Query: what?" in first
    retried = [c for c in Stub.calls if len(c) > 1]
    assert len(retried) == 1 + 2 + 2  # ONCE once; GARBLE and TOOHIGH twice each
    assert retried[0][-1]["content"] == RETRY.format(max_grade=2)
    assert judge.failures == 2  # type: ignore[attr-defined]
    asked = [c for c in Stub.calls if "NOTJSON" in c[0]["content"]]
    assert len(asked) == 2 and asked[0] == asked[1]  # an unusable reply: the same question again, no retry message


def test_endpoint_judge_reports_failed_calls_and_stops_when_the_endpoint_is_down(chat_server):
    judge = EndpointJudge(http_chat(chat_server), max_failed_calls=3, concurrency=1)  # "in a row": one at a time
    labels = run_judge(judge, [pair("DOWN once"), pair("holds the ANSWER"), pair("DOWN"), pair("DOWN")], 2)
    assert [x.label for x in labels] == [None, 2, None, None]
    assert "the call failed: " in labels[0].problem and "HTTP 503" in labels[0].problem
    Stub.calls.clear()
    with pytest.raises(RagMetricsError, match=r"^model stub: 3 calls in a row failed; the last: .*HTTP 503"):
        run_judge(EndpointJudge(http_chat(chat_server), max_failed_calls=3, concurrency=4), [pair("DOWN")] * 40, 2)
    assert len(Stub.calls) <= 3 + 3  # the threshold's calls, and at most one more in flight per other thread
    judge = EndpointJudge(http_chat(chat_server), max_failed_calls=3, concurrency=1)
    with pytest.raises(RagMetricsError, match="3 calls in a row failed"):
        run_judge(judge, [pair("DOWN")] * 4, 2)
    assert run_judge(judge, [pair("ANSWER")], 2)[0].label == 2  # asked again afresh: the endpoint is back


def test_endpoint_judge_stops_when_the_model_never_answers_with_a_grade(chat_server):
    """Was: a model that answers, but never in form, was asked ``attempts`` times about every pair (600 calls for
    200 pairs) before anything was said."""
    Stub.calls.clear()
    judge = EndpointJudge(http_chat(chat_server), attempts=3, max_ungraded=4, concurrency=1)
    with pytest.raises(
        RagMetricsError, match=r"^model stub: 4 pairs in a row got no grade 0\.\.2 in 3 answer\(s\) each"
    ):
        run_judge(judge, [pair("GARBLE")] * 200, 2)
    assert len(Stub.calls) == 4 * 3
    # a grade between them starts the count again: pairs left ungraded here and there are only reported
    mixed = [pair("GARBLE"), pair("GARBLE"), pair("holds the ANSWER")] * 3
    assert [g.label for g in run_judge(judge, mixed, 2)] == [None, None, 2] * 3


def test_endpoint_judge_stopped_by_replies_that_are_no_chat_completion_says_so_whole():
    """Was: an endpoint answering HTML stopped the judge with "check that the model follows the prompt", the cause
    cut at 120 characters mid-word: it is the URL that is wrong, not the model."""
    with ModelStub(lambda m: MALFORMED) as stub:
        judge = EndpointJudge(OpenAIChat("html", stub.url, "m", attempts=1, backoff=0.0), attempts=2, max_ungraded=3,
                              concurrency=1)  # fmt: skip
        with pytest.raises(RagMetricsError) as stopped:
            run_judge(judge, [pair("ANSWER")] * 10, 2)
    said = str(stopped.value)
    assert said.startswith("model html: 3 pairs in a row got no usable reply in 2 call(s) each; the last: ")
    assert said.endswith(
        "the answer is not JSON, so not a chat completion: check that the model's URL is an OpenAI-compatible "
        "endpoint (its /v1, where /chat/completions answers)"
    )
    assert "follows the prompt" not in said


def test_endpoint_judge_asks_nothing_about_an_empty_query_or_document(chat_server):
    Stub.calls.clear()
    no_query = Pair("q1", " ", "d1", "holds the ANSWER")
    no_text = Pair("q2", "what?", "d2", "")
    grades = run_judge(EndpointJudge(http_chat(chat_server), concurrency=1), [no_query, no_text, pair("ANSWER")], 2)
    assert [(g.label, g.problem) for g in grades[:2]] == [(None, NO_QUERY.problem), (None, NO_TEXT.problem)]
    assert grades[2].label == 2 and len(Stub.calls) == 1
    training = [(Pair(f"q{i}", "what?", f"d{i}", "a text"), i % 2) for i in range(12)]
    learned = run_judge(LearnedJudge(training), [no_query, pair("a text")], 1)
    assert learned[0].problem == NO_QUERY.problem and learned[1].label is not None
    for name in ("endpoint", "learned"):  # with no query text at all, the judge refuses before any work
        assert "no query of the pool has a text (give --queries" in str(JUDGES[name].unable([no_query]))


@pytest.mark.parametrize(
    ("name", "kind"),
    [("endpoint", EndpointJudge), ("learned", LearnedJudge), ("callable", CallableJudge), ("rule", RuleJudge)],
)
def test_a_judge_refuses_a_pool_exactly_when_run_judge_would_ask_it_about_no_pair(name, kind):
    """The registry's refusal before any work and run_judge's per-pair rule are one rule (was: a pool of a pair
    without query text and one without document text was accepted, and then no pair was asked)."""

    class Recording:
        name, version = "recording", "1"
        needs_text = getattr(kind, "needs_text", True)
        needs_query = getattr(kind, "needs_query", False)

        def __init__(self) -> None:
            self.asked: list[Pair] = []

        def config(self):
            return {}

        def grade(self, pairs, top):
            self.asked.extend(pairs)
            return [Grade(0) for _ in pairs]

    rng = np.random.default_rng(7)
    refused = 0
    for _ in range(300):
        pool = [
            Pair(f"q{i}", str(rng.choice(["what?", " "])), f"d{i}", str(rng.choice(["a text", ""])), "", ("text",))
            for i in range(int(rng.integers(1, 4)))
        ]
        judge = Recording()
        run_judge(judge, pool, 1)
        reason = JUDGES[name].unable(pool)
        assert (reason is not None) == (not judge.asked), (pool, reason)
        refused += reason is not None
    assert 0 < refused < 300 or name == "callable"  # a callable decides what it reads: never refused for text
    mixed = JUDGES["endpoint"].unable([Pair("q1", " ", "d1", "a text"), Pair("q2", "what?", "d2", "")])
    assert mixed is not None and "1 lack the query's text" in mixed and "1 the document's" in mixed


def test_learned_judge_refuses_labels_of_one_grade_and_warns_of_a_rare_one():
    training = [(Pair(f"q{i}", "what?", f"d{i}", "text"), 1) for i in range(30)]
    with pytest.raises(RagMetricsError, match=r"people's labels are all grade 1 \(30 pair\(s\)\).*BEIR"):
        LearnedJudge(training)
    with pytest.warns(RagMetricsWarning, match=r"fewer than 5 pairs of grade\(s\) 0 \(\{0: 2, 1: 30\}\)"):
        LearnedJudge([*training, (Pair("q0", "what?", "x", "t"), 0), (Pair("q1", "what?", "y", "t"), 0)])


def test_learned_judge_says_it_has_too_few_relevant_pairs_to_learn_from():
    """Was: 6 relevant pairs among 66 passed without a word (split over two grades: the generic advice of a rare
    grade). Cross-fitted over 5 folds, some model learns from at most 4 of them: said, with the count."""
    zeros = [(Pair(f"q{i}", "what?", f"d{i}-{k}", "text"), 0) for i in range(12) for k in range(5)]
    few = [*zeros, *((Pair(f"q{i}", "what?", f"d{i}-rel", "text"), 1) for i in range(6))]
    with pytest.warns(RagMetricsWarning) as said:
        LearnedJudge(few, folds=5)
    (message,) = [str(w.message) for w in said]
    assert message.startswith("people's labels hold 6 relevant (grade > 0) pair(s) of 66 ({0: 60, 1: 6}): ")
    assert "cross-fitted over 5 folds, a model learns from as few as" in message
    assert "fewer than the 5 it needs to learn what makes a pair relevant" in message
    assert "label more relevant pairs" in message and "check its agreement" not in message
    fewest = int(message.split("as few as ")[1].split()[0])
    assert fewest < 5
    # grades 1 and 2, 3 pairs each: said once, as relevant pairs, not as two rare grades
    graded = [*zeros, *((Pair(f"q{i}", "what?", f"d{i}-rel", "text"), 1 + i % 2) for i in range(6))]
    with pytest.warns(RagMetricsWarning) as said:
        LearnedJudge(graded, folds=5)
    assert [str(w.message)[:50] for w in said] == ["people's labels hold 6 relevant (grade > 0) pair(s"]
    # enough relevant pairs for every model: nothing said
    many = [*zeros, *((Pair(f"q{i}", "what?", f"d{i}-rel{k}", "text"), 1) for i in range(12) for k in range(2))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagMetricsWarning)
        LearnedJudge(many, folds=5)


def test_endpoint_judge_grades_the_same_at_any_concurrency(chat_server):
    texts = ["ANSWER", "RELATED", "nothing", "ONCE then ANSWER", "GARBLE", "NOTJSON RELATED"] * 4
    pairs = [Pair(f"q{i}", "what?", f"d{i}", t) for i, t in enumerate(texts)]
    alone = [g.label for g in EndpointJudge(http_chat(chat_server), concurrency=1).grade(pairs, 2)]
    together = [g.label for g in EndpointJudge(http_chat(chat_server), concurrency=4).grade(pairs, 2)]
    assert alone == together == [2, 1, 0, 2, None, 1] * 4


def test_parse_grade_is_strict():
    assert parse_grade("##final score: 2", 3) == 2
    assert parse_grade("M: 2\nT: 1\n##final score: 1\n", 3) == 1
    assert parse_grade("##final score: 4", 3) is None
    assert parse_grade("score: 2", 3) is None
    assert parse_grade("##final score: 1\n##final score: 2", 3) is None
    assert parse_grade("##final score: 0 ... ##final score: 1", 3) is None
    assert parse_grade("", 3) is None
    assert parse_grade("**##final score: 2**", 3) == 2 and parse_grade("##final score: __1__\n", 3) == 1
    assert parse_grade("**##final score: 2** or 3", 3) is None


# --- the callable judge and the registry -------------------------------------------------------------------


def test_callable_judge(tmp_path, monkeypatch):
    (tmp_path / "my_judges.py").write_text(
        "__version__ = '2.1'\n"
        "def by_length(pair, max_grade):\n"
        "    if 'boom' in pair.text:\n        raise ValueError('boom')\n"
        "    if 'none' in pair.text:\n        return None\n"
        "    return min(len(pair.text.split()), max_grade + (1 if 'over' in pair.text else 0))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    judge = make_judge("callable", JudgeInputs(call="my_judges:by_length"))
    labels = run_judge(judge, [pair("one"), pair("a b c d"), pair("boom"), pair("none"), pair("over a b c")], 3)
    assert [x.label for x in labels] == [1, 3, None, None, None]
    assert "ValueError: boom" in labels[2].problem and "returned 4" in labels[4].problem
    assert labels[0].provenance.version == "2.1"
    with pytest.raises(RagMetricsError, match="has no attribute"):
        make_judge("callable", JudgeInputs(call="my_judges:nothing"))


def test_registry_names_every_judge_and_refuses_others():
    assert set(JUDGES) == {"rule", "learned", "endpoint", "callable"}
    assert make_judge("rule").name == "rule"
    with pytest.raises(RagMetricsError, match="not registered"):
        make_judge("oracle")
    with pytest.raises(RagMetricsError, match="--model"):
        make_judge("endpoint")


def test_a_pair_without_text_gets_no_grade_from_a_judge_that_reads_text():
    labels = run_judge(RuleJudge(), [pair("", "paris"), pair("Paris", "paris")], 1)
    assert [x.label for x in labels] == [None, 1]
    assert "text is unknown" in labels[0].problem
    called = CallableJudge("x:y", lambda p, top: 1)  # a function decides what it reads
    assert [x.label for x in run_judge(called, [pair("")], 1)] == [1]


def test_a_callable_judge_may_grade_with_numpy_integers():
    """A classifier's predict gives numpy integers: they are grades; booleans and floats are not."""
    for value, label in ((np.int64(1), 1), (np.uint8(2), 2), (True, None), (np.float64(1.0), None), (1.5, None)):
        [graded] = run_judge(CallableJudge("x:y", lambda p, top, v=value: v), [pair("a")], 2)
        assert graded.label == label, value


def grade_one(pair, top):
    return 1


def test_the_registry_builds_a_callable_judge_from_a_function_given_in_python():
    """Was: AttributeError: 'function' object has no attribute 'partition' (the registry read a module:attr)."""
    from ragmetrics.judges.registry import JudgeInputs, make_judge

    judge = make_judge("callable", JudgeInputs(call=grade_one))
    assert judge.spec == "tests.test_judges:grade_one"
    assert [x.label for x in run_judge(judge, [pair("a")], 1)] == [1]
    with pytest.raises(RagMetricsError, match=r"needs module:attr .* or, in Python, a function .*; got int"):
        make_judge("callable", JudgeInputs(call=3))  # type: ignore[arg-type]


def test_a_grade_off_the_scale_is_an_error():
    class Wild:
        name, version = "wild", "1"

        def config(self):
            return {}

        def grade(self, pairs, top):
            return [Grade(top + 1) for _ in pairs]

    with pytest.raises(RagMetricsError, match=r"expected a whole-number grade 0\.\.2"):
        run_judge(Wild(), [pair("x")], 2)


def test_the_scale_is_part_of_a_label_s_provenance():
    """Labels given on 0..1 and on 0..2 differ (the rule grades a found answer 2 on the second), so they never
    share one identity: the store skips pairs already labelled under the same name, version and hash."""
    pair = Pair("q1", "who wrote it", "d1", "Ann wrote it.", expected_answer="Ann wrote it")
    one, two = (run_judge(RuleJudge(), [pair], top)[0] for top in (1, 2))
    assert (one.label, two.label) == (1, 2)
    assert one.provenance.config_hash != two.provenance.config_hash
    assert two.provenance.config_hash == provenance_of(RuleJudge(), 2).config_hash


def test_learned_judge_with_more_folds_than_labelled_queries_says_it_leaves_one_out():
    """More folds than labelled queries is leave-one-query-out (the extra folds are empty): said, and the judge's
    configuration (its provenance hash) records the folds it used, so the same labels give the same judge."""
    training = [(Pair(f"q{i % 3}", "what?", f"d{i}", "text"), i % 2) for i in range(12)]
    with pytest.warns(RagMetricsWarning, match=r"cover 3 queries, fewer than the 10 folds asked.*\(3 folds\)"):
        many = LearnedJudge(training, folds=10)
    assert many.folds == 3 and many.config() == LearnedJudge(training, folds=3).config()
