"""The model generator against a real OpenAI-compatible server on 127.0.0.1 (tests/model_stub.py) that writes
candidates from the passage it is sent: SciFact passages (English) and CMRC chunks (Chinese) give the requested
number of candidates per category, each with its provenance; answers that are malformed, refused or slow are
asked again with another seed or reported, never emitted."""

from __future__ import annotations

import io
import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.models.base import BadAnswer
from ragmetrics.models.registry import get_model
from ragmetrics.synth.base import DEFAULT_CATEGORIES, Source
from ragmetrics.synth.model_generator import (
    PROMPTS,
    PROMPTS_VERSION,
    ModelGenerator,
    interleave,
    parse_answer,
    prompt_for,
)
from tests.model_stub import EMPTY, MALFORMED, NO_CHOICES, Fail, ModelStub, Slow

DATA = Path(__file__).parent / "data" / "model-generator"
PASSAGE = re.compile(r'"""\n(.*)\n"""', re.DOTALL)


def sources(name: str, language: str) -> list[Source]:
    out = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out.append(Source(record["id"], record["id"], record["text"], 0, len(record["text"]), language))
    return out


SCIFACT = sources("scifact.jsonl", "en")
CMRC = sources("cmrc.jsonl", "zh")


def category_of(messages: list[dict]) -> tuple[str, str]:
    """(language, category) of a request, read from the prompt the generator sent."""
    user = messages[-1]["content"]
    for language, prompts in PROMPTS.items():
        for category, instruction in prompts["categories"].items():
            if user.startswith(instruction):
                return language, category
    return ("zh" if messages[0]["content"].startswith("你") else "en"), "custom"


def writer(messages: list[dict]) -> str:
    """A good model: a query made of the passage's first words and the category."""
    language, category = category_of(messages)
    passage = PASSAGE.search(messages[-1]["content"]).group(1)
    if language == "zh":
        query = f"{category}：{passage[:12]}是什么？"
        keywords = [passage[:4], passage[4:8]]
    else:
        words = passage.split()
        query = f"{category}: what about {' '.join(words[:6])}?"
        keywords = words[:3]
    answer = "" if category == "negative" else passage[:40]
    return json.dumps({"query": query, "answer": answer, "keywords": keywords, "difficulty": "medium"})


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))


def model_of(monkeypatch, stub: ModelStub, options: str = "&cache=off"):
    monkeypatch.setenv("RAGMETRICS_MODELS", f"gen=openai:{stub.url}?model=qwen2.5&backoff=0.01{options}")
    return get_model("gen")


def check(candidates, categories, sources_used, language):
    assert Counter(c.category for c in candidates) == {c: n for c, n in categories.items() if n}
    for c in candidates:
        p = c.provenance
        assert p["generator"] == "model" and p["model_name"] == "gen" and "qwen2.5" in p["model"]
        assert p["prompt_version"] == prompt_for(c.category, language).version
        assert p["prompts_version"] == PROMPTS_VERSION
        # doc[start:end], as the extractive generator writes it and docs/synth.md says
        assert p["source_span"] == f"{c.source.doc_id}[{c.source.start}:{c.source.end}]"
        assert p["source_doc"] == c.source.doc_id
        assert int(p["seed"]) >= 0 and p["language"] == language
        assert c.source in sources_used and c.difficulty == "medium" and c.query
        assert (c.expected_answer == "") == (c.category == "negative")
        assert c.expected_keywords


def test_scifact_candidates_per_category(monkeypatch):
    categories = dict.fromkeys(DEFAULT_CATEGORIES, 2)
    with ModelStub(writer) as stub:
        generator = ModelGenerator(model_of(monkeypatch, stub))
        candidates = list(generator.generate(SCIFACT, categories, seed=7))
        assert stub.count == 10
    check(candidates, categories, SCIFACT, "en")
    assert not generator.rejected
    # every request is in English, with its category's instruction, and the passage
    first = stub.requests[0]["messages"]
    assert first[0]["content"] == PROMPTS["en"]["system"] and "JSON" in first[0]["content"]
    assert {category_of(r["messages"])[1] for r in stub.requests} == set(DEFAULT_CATEGORIES)
    # five prompts, five versions; sources spread over the documents
    assert len({c.provenance["prompt_version"] for c in candidates}) == 5
    used = Counter(c.source.doc_id for c in candidates)
    assert set(used) == {s.doc_id for s in SCIFACT} and max(used.values()) - min(used.values()) <= 1


def test_cmrc_candidates_in_chinese(monkeypatch):
    categories = {"factual": 3, "reasoning": 1, "summary": 1, "procedural": 1, "negative": 2, "对比": 1}
    with ModelStub(writer) as stub:
        candidates = list(ModelGenerator(model_of(monkeypatch, stub)).generate(CMRC, categories, seed=1))
    check(candidates, categories, CMRC, "zh")
    systems = {r["messages"][0]["content"] for r in stub.requests}
    assert systems == {PROMPTS["zh"]["system"]}
    assert any("“对比”类别" in r["messages"][1]["content"] for r in stub.requests)  # the user's category
    assert all(re.search(r"[\u4e00-\u9fff]", c.query) for c in candidates)


def test_bad_answers_are_asked_again_with_another_seed(monkeypatch):
    bad = [
        "Sure! Here is a question about the passage.",  # no JSON
        json.dumps({"answer": "x", "keywords": ["a"], "difficulty": "easy"}),  # no query
        json.dumps({"query": "q?", "answer": "x", "keywords": ["a"], "difficulty": "trivial"}),
        json.dumps({"query": "What is it?", "answer": "", "keywords": ["a"], "difficulty": "easy"}),
        MALFORMED,
        NO_CHOICES,
        EMPTY,
    ]
    seen: Counter[str] = Counter()

    def flaky(messages: list[dict]):
        key = messages[-1]["content"]
        seen[key] += 1
        if seen[key] == 1:
            return bad[len(seen) % len(bad)]
        return Slow(0.05, writer(messages))

    categories = {"factual": 2, "reasoning": 2, "summary": 2, "procedural": 1, "negative": 1}
    with ModelStub(flaky) as stub:
        generator = ModelGenerator(model_of(monkeypatch, stub), max_attempts=3)
        candidates = list(generator.generate(SCIFACT, categories, seed=3))
    check(candidates, categories, SCIFACT, "en")
    assert not generator.rejected
    assert {c.provenance["attempt"] for c in candidates} == {"2"}
    seeds = [r["seed"] for r in stub.requests]
    # each slot asked twice, with two seeds
    assert len(set(seeds)) == len(seeds) == stub.count == 2 * len(candidates)


def test_a_slot_no_attempt_fills_is_reported_never_emitted(monkeypatch):
    def stubborn(messages: list[dict]):
        _, category = category_of(messages)
        if category == "summary":
            return '```json\n{"query": "", "answer": "nothing"}\n```'
        if category == "reasoning":
            return json.dumps({"query": "The same question?", "answer": "a", "keywords": "a", "difficulty": "hard"})
        return writer(messages)

    categories = {"factual": 2, "reasoning": 2, "summary": 2}
    with ModelStub(stubborn) as stub:
        generator = ModelGenerator(model_of(monkeypatch, stub), max_attempts=2)
        with pytest.warns(RagMetricsWarning, match=r"3 candidate\(s\) not written.*reasoning: 1, summary: 2"):
            candidates = list(generator.generate(SCIFACT, categories, seed=5))
    assert Counter(c.category for c in candidates) == {"factual": 2, "reasoning": 1}
    assert [c.query for c in candidates if c.category == "reasoning"] == ["The same question?"]
    assert stub.count == 2 + 1 + 2 + 2 * 2
    rejected = {(r.category, r.reasons) for r in generator.rejected}
    assert ("reasoning", ("the query was already written",) * 2) in rejected
    assert ("summary", ("the answer has no query",) * 2) in rejected


def test_a_dead_endpoint_stops_the_generation(monkeypatch):
    with ModelStub(lambda m: Fail(503, times=99)) as stub:
        generator = ModelGenerator(model_of(monkeypatch, stub, "&cache=off&attempts=2"), concurrency=2)
        with pytest.raises(RagMetricsError, match=r"^model 'gen' .*HTTP 503 \(2 attempts\)$"):
            list(generator.generate(SCIFACT, {"factual": 5}, seed=1))
        assert stub.count == 2 * 2  # the first batch of two, each tried twice by the client; no more


def test_a_run_is_repeatable_and_the_second_costs_nothing(monkeypatch):
    categories = {"factual": 2, "negative": 2, "summary": 1}
    with ModelStub(writer) as stub:
        model = model_of(monkeypatch, stub, "")
        first = list(ModelGenerator(model).generate(SCIFACT + CMRC, categories, seed=11))
        asked = stub.count
        again = list(ModelGenerator(model_of(monkeypatch, stub, "")).generate(SCIFACT + CMRC, categories, seed=11))
        assert stub.count == asked == 5
        other = list(ModelGenerator(model).generate(SCIFACT + CMRC, categories, seed=12))
    assert first == again
    assert [c.provenance["seed"] for c in first] != [c.provenance["seed"] for c in other]


def test_concurrent_requests_give_the_same_candidates(monkeypatch):
    categories = {"factual": 4, "summary": 4}
    with ModelStub(lambda m: Slow(0.3, writer(m))) as stub:
        model = model_of(monkeypatch, stub)
        started = time.perf_counter()
        together = list(ModelGenerator(model, concurrency=4).generate(SCIFACT, categories, seed=2))
        elapsed = time.perf_counter() - started
        one_by_one = list(ModelGenerator(model, concurrency=1).generate(SCIFACT, categories, seed=2))
    assert together == one_by_one and len(together) == 8
    assert elapsed < 8 * 0.3 / 2  # two batches of four at once


def test_the_answer_is_read_tolerantly():
    text = 'Here you go:\n```json\n{"Question": " How  large? ", "Answer": 42, "keywords": "size, scale", "Difficulty": "Hard"}\n```'
    assert parse_answer(text, "factual", "en") == {
        "query": "How large?",
        "answer": "42",
        "keywords": ["size", "scale"],
        "difficulty": "hard",
    }
    zh = '{"query": "它有多大？", "answer": "很大", "keywords": "大小、规模", "difficulty": "困难"}'
    assert parse_answer(zh, "factual", "zh")["keywords"] == ["大小", "规模"]
    negative = parse_answer('{"query": "Who else?", "answer": "unknown", "difficulty": "easy"}', "negative", "en")
    assert negative["answer"] == "" and negative["keywords"] == []
    with pytest.raises(BadAnswer, match="not in Chinese"):
        parse_answer('{"query": "How big?", "answer": "big", "keywords": ["a"], "difficulty": "easy"}', "factual", "zh")
    with pytest.raises(BadAnswer, match="not a JSON object"):
        parse_answer('["query"]', "factual", "en")


def test_sources_are_taken_across_documents():
    chunks = [Source(f"d{d}", f"d{d}_c{c}", f"text {d} {c}", 0, 6, "en") for d in range(4) for c in range(3)]
    order = interleave(chunks, seed=2)
    assert sorted(order, key=lambda s: s.chunk_id) == chunks
    assert [len({s.doc_id for s in order[i : i + 4]}) for i in (0, 4, 8)] == [4, 4, 4]
    assert order == interleave(chunks, seed=2) and order != interleave(chunks, seed=3)
    with pytest.raises(RagMetricsError, match="no sources"):
        list(ModelGenerator(object()).generate([], {"factual": 1}, seed=1))  # type: ignore[arg-type]


def test_a_prompt_version_is_pinned():
    assert ModelGenerator(object(), prompt_version=PROMPTS_VERSION).max_attempts == 3  # type: ignore[arg-type]
    with pytest.raises(RagMetricsError, match="prompt version '0123456789ab' is not this ragmetrics'"):
        ModelGenerator(object(), prompt_version="0123456789ab")  # type: ignore[arg-type]


def test_cli_synth_with_a_registered_model_writes_only_good_candidates(monkeypatch, tmp_path):
    """``ragmetrics synth --generator model`` on a CMRC sample (Chinese) against the stub: every third request is
    answered with something that is not a candidate; those are asked again, and the set holds only good ones, the
    requested number per category, each with its provenance."""
    corpus = tmp_path / "corpus.jsonl"
    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmrc2018-chunks" / "corpus.jsonl"
    source = shared if shared.exists() else DATA / "cmrc.jsonl"
    with source.open(encoding="utf-8") as f:
        lines = [next(f) for _ in range(40)] if source == shared else f.readlines()
    corpus.write_text("".join(lines), encoding="utf-8")
    asked = Counter()

    def flaky(messages: list[dict]) -> object:
        asked["n"] += 1
        return MALFORMED if asked["n"] % 3 == 0 else writer(messages)

    with ModelStub(flaky) as stub:
        monkeypatch.setenv("RAGMETRICS_MODELS", f"gen=openai:{stub.url}?model=qwen2.5&backoff=0.01&cache=off")
        target = tmp_path / "set.jsonl"
        out, err = io.StringIO(), io.StringIO()
        argv = ["synth", str(corpus), "-o", str(target), "--generator", "model", "--model", "gen",
                "--categories", "factual=3,summary=2,negative=1", "--language", "zh", "--no-retrieval-check"]  # fmt: skip
        assert main(argv, out, err) == 0, err.getvalue()
        assert stub.count > 6  # the malformed answers were asked again
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert Counter(r["category"] for r in rows) == {"factual": 3, "summary": 2, "negative": 1}
    for row in rows:
        assert row["query"] and re.search(r"[\u4e00-\u9fff]", row["query"])
        assert row["provenance"]["generator"] == "model" and row["provenance"]["model_name"] == "gen"
        assert (row["relevant_docs"] == {}) == (row["category"] == "negative")


def test_cli_synth_says_each_category_s_own_shortfall_and_why(monkeypatch, tmp_path):
    """A model that answers the same candidate every time: one is written, every other slot is refused as a
    repeat; each category's line counts its own slots and quotes the refusal, and an --n that counts nothing is
    said to be unused."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text((DATA / "cmrc.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    first: list[object] = []

    def same(messages: list[dict]) -> object:
        first.append(first[0] if first else writer(messages))
        return first[0]

    with ModelStub(same) as stub:
        monkeypatch.setenv("RAGMETRICS_MODELS", f"gen=openai:{stub.url}?model=qwen2.5&backoff=0.01&cache=off")
        out, err = io.StringIO(), io.StringIO()
        argv = ["synth", str(corpus), "-o", str(tmp_path / "set.jsonl"), "--generator", "model", "--model", "gen",
                "--categories", "factual=3,summary=2", "--n", "8", "--language", "zh", "--no-retrieval-check"]  # fmt: skip
        assert main(argv, out, err) == 0, err.getvalue()
    said = err.getvalue()
    assert "--n 8 not used: --categories gives each category its count (5 in all)" in said
    assert re.search(r"factual: 1 of the 3 asked \(2 slot\(s\) rejected by the generator; the last refusal: ", said)
    assert re.search(r"summary: 0 of the 2 asked \(2 slot\(s\) rejected by the generator; the last refusal: ", said)
