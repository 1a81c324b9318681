"""Candidates written by a registered model (:mod:`ragmetrics.models`): one chat request per candidate, with a
prompt per category in the passage's language, asking for one JSON object
``{"query", "answer", "keywords", "difficulty"}``.

Prompts: :data:`PROMPTS` holds, per language (``en``, ``zh``), a system message (the task and the JSON asked
for) and an instruction per category (``factual``, ``reasoning``, ``summary``, ``procedural``, ``negative``);
a category of the user's own gets the language's generic instruction, and a passage in another language the
English prompts, asked to write in the passage's language. A prompt's version is the first 12 hex digits of
the SHA-256 of its template (system message, instruction and the user message's frame), so a changed prompt
is a new version.

The answer is read tolerantly (a code fence or words around the object, keywords as one comma-separated
string, ``question`` for ``query``, a difficulty in either language), and refused when it is no JSON object,
has no query, no answer or keywords (except a negative), a difficulty other than easy, medium or hard, a
Chinese passage's query without Chinese, or a query already written. A refused answer, or a
:class:`~ragmetrics.models.base.BadAnswer` of the endpoint, is asked again with another seed, ``max_attempts``
in all; then the slot is reported in :attr:`ModelGenerator.rejected` (and one warning per call), never emitted.
Any other error of the model (it cannot be reached, keeps failing or timing out) stops the generation.

A ``negative`` candidate asks for a question on the passage's topic that the passage does not answer; it gets
an empty expected answer. Whether the corpus as a whole cannot answer it is checked by the synth filters.

Sources: they are ordered once per seed, documents interleaved (each document's chunks shuffled, then one
chunk of each document in turn), and the candidates take them in that order, category after category, so
consecutive candidates come from different documents.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.scripts import HAN_CHARACTER
from ragmetrics.models.base import BadAnswer, ChatModel, Message
from ragmetrics.synth.base import Candidate, Source

GENERATOR_NAME = "model"
DIFFICULTIES = ("easy", "medium", "hard")
DIFFICULTY_WORDS = {
    "easy": "easy",
    "simple": "easy",
    "medium": "medium",
    "moderate": "medium",
    "hard": "hard",
    "difficult": "hard",
    "简单": "easy",
    "容易": "easy",
    "中等": "medium",
    "一般": "medium",
    "困难": "hard",
    "难": "hard",
}
MAX_QUERY_CHARS = 500
MAX_KEYWORDS = 10

PROMPTS: dict[str, dict[str, Any]] = {
    "en": {
        "system": (
            "You write evaluation questions for a search system, each from one passage of its knowledge base. "
            "Reply with one JSON object and nothing else: "
            '{"query": "...", "answer": "...", "keywords": ["...", "..."], "difficulty": "easy|medium|hard"}. '
            "The query is what a user would type, in English, and never mentions 'the passage' or 'the text'. "
            "The answer is the correct answer according to the passage; keywords are 2 to 6 words or short "
            "phrases of the passage the answer rests on; difficulty is how hard the query is to answer."
        ),
        "frame": '{instruction}\n\nPassage:\n"""\n{passage}\n"""',
        "categories": {
            "factual": "Write a factual query: it asks for one fact the passage states (who, what, when, how much).",
            "reasoning": (
                "Write a reasoning query: its answer combines two or more statements of the passage or follows "
                "from them, and is not one phrase copied from it."
            ),
            "summary": (
                "Write a summary query: it asks for the main point or an overview of what the passage covers; "
                "the answer summarises it in one to three sentences."
            ),
            "procedural": (
                "Write a procedural query: it asks how something is done, measured or achieved according to the "
                "passage; the answer describes the method or the steps."
            ),
            "negative": (
                "Write a negative query: a plausible question on the passage's topic that the passage does NOT "
                'answer (its answer is absent from it). Set "answer" to an empty string and "keywords" to the '
                "query's topic words."
            ),
        },
        "generic": "Write a query of the category '{category}' about the passage.",
        "other_language": " Write the query, answer and keywords in the language of the passage.",
    },
    "zh": {
        "system": (
            "你为一个检索系统编写评测问题，每个问题依据其知识库中的一段文字。只回复一个 JSON 对象，不要其他内容："
            '{"query": "...", "answer": "...", "keywords": ["...", "..."], "difficulty": "easy|medium|hard"}。'
            "query 是用户会输入的中文问题，不要提到“这段文字”或“上文”。answer 是依据这段文字的正确答案；"
            "keywords 是答案所依据的 2 到 6 个原文词语；difficulty 表示问题的难度。"
        ),
        "frame": '{instruction}\n\n文字：\n"""\n{passage}\n"""',
        "categories": {
            "factual": "写一个事实型问题：询问文中明确陈述的一个事实（谁、什么、何时、多少）。",
            "reasoning": "写一个推理型问题：答案需要综合文中两处或以上的陈述或由其推出，而不是照抄原文的一个短语。",
            "summary": "写一个概括型问题：询问这段文字的主旨或概况；答案用一到三句话加以概括。",
            "procedural": "写一个操作型问题：询问文中所述某事是如何完成、测量或实现的；答案描述其方法或步骤。",
            "negative": (
                "写一个无答案问题：与这段文字主题相关、用户可能会问、但这段文字无法回答的问题。"
                '"answer" 设为空字符串，"keywords" 设为问题的主题词。'
            ),
        },
        "generic": "写一个“{category}”类别的问题，依据这段文字。",
        "other_language": "",
    },
}
"""The prompts, per language: ``system``, the user message's ``frame`` (``{instruction}``, ``{passage}``), an
instruction per category and a ``generic`` one (``{category}``)."""


def template_version(template: Any) -> str:
    """The first 12 hex digits of the SHA-256 of a template (any JSON value)."""
    text = json.dumps(template, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


PROMPTS_VERSION = template_version(PROMPTS)
"""The version of :data:`PROMPTS` as a whole (each candidate also records the version of its own prompt)."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_KEYWORD_SPLIT = re.compile(r"[,;，、；]")


@dataclass(frozen=True)
class Prompt:
    """The messages of one category in one language, and the version of their template."""

    system: str
    instruction: str
    frame: str
    version: str

    def messages(self, passage: str) -> list[Message]:
        user = self.frame.replace("{instruction}", self.instruction).replace("{passage}", passage)
        return [Message("system", self.system), Message("user", user)]


def prompt_for(category: str, language: str) -> Prompt:
    """The prompt of ``category`` for a passage in ``language`` (its own, or the English one asking to write in
    the passage's language)."""
    prompts = PROMPTS.get(language)
    system_extra = ""
    if prompts is None:
        prompts = PROMPTS["en"]
        system_extra = prompts["other_language"]
    instruction = prompts["categories"].get(category)
    if instruction is None:
        instruction = prompts["generic"].replace("{category}", category)
    system = prompts["system"] + system_extra
    return Prompt(system, instruction, prompts["frame"], template_version([system, instruction, prompts["frame"]]))


@dataclass(frozen=True)
class Rejection:
    """A candidate slot no attempt filled: its category, the source and why each attempt was refused."""

    category: str
    source: Source
    reasons: tuple[str, ...]


class ModelGenerator:
    """Writes candidates with a registered model (see the module documentation). ``temperature`` is sent with
    every request, and the seed of each attempt is derived from the run's seed, the category, the slot and
    the attempt, so a run is repeatable (and, behind the reply cache, costs nothing the second time).
    The first attempts of ``concurrency`` candidates are asked at once; the answers are taken in order, so the
    candidates are the same whatever the concurrency. ``prompt_version``, when given, must be :data:`PROMPTS_VERSION` (to repeat a run made with these prompts)."""

    name = GENERATOR_NAME

    def __init__(
        self,
        model: ChatModel,
        *,
        prompt_version: str | None = None,
        max_attempts: int = 3,
        temperature: float = 0.7,
        max_tokens: int | None = 512,
        concurrency: int = 4,
    ) -> None:
        if max_attempts < 1 or concurrency < 1:
            raise RagMetricsError("max_attempts and concurrency are at least 1")
        if prompt_version is not None and prompt_version != PROMPTS_VERSION:
            raise RagMetricsError(
                f"prompt version {prompt_version!r} is not this ragmetrics' ({PROMPTS_VERSION}): the prompts "
                "changed since, so the candidates would not be written the same way"
            )
        self.model = model
        self.max_attempts = int(max_attempts)
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.concurrency = int(concurrency)
        self.rejected: list[Rejection] = []

    def generate(self, sources: Sequence[Source], categories: Mapping[str, int], *, seed: int) -> Iterator[Candidate]:
        """``categories[c]`` candidates of each category ``c``, in the order of ``categories``; the slots no
        attempt could fill are in :attr:`rejected` afterwards."""
        if not sources:
            raise RagMetricsError("no sources to write candidates from")
        for category, count in categories.items():
            if count < 0:
                raise RagMetricsError(f"category {category!r}: a count is not negative, found {count}")
        self.rejected = []
        order = interleave(sources, seed)
        slots = [(category, index) for category, count in categories.items() for index in range(count)]
        written: set[str] = set()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="model-generator")
        try:
            for start in range(0, len(slots), self.concurrency):
                batch = [
                    (c, i, order[(start + k) % len(order)])
                    for k, (c, i) in enumerate(slots[start : start + self.concurrency])
                ]
                firsts = [pool.submit(self._ask, source, category, index, seed, 0) for category, index, source in batch]
                for (category, index, source), first in zip(batch, firsts, strict=True):
                    candidate = self._write(source, category, index, seed, written, first)
                    if candidate is not None:
                        written.add(_normal(candidate.query))
                        yield candidate
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if self.rejected:
            per = Counter(r.category for r in self.rejected)
            listed = ", ".join(f"{c}: {n}" for c, n in per.items())
            warnings.warn(
                f"model generator: {len(self.rejected)} candidate(s) not written, every one of "
                f"{self.max_attempts} attempts refused ({listed})",
                RagMetricsWarning,
                stacklevel=2,
            )

    def _ask(self, source: Source, category: str, index: int, seed: int, attempt: int) -> dict[str, Any]:
        """One attempt: the parsed answer, or :class:`BadAnswer`."""
        reply = self.model.chat(
            prompt_for(category, source.language).messages(source.text),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=derive_seed(seed, category, index, attempt),
        )
        return parse_answer(reply.text, category, source.language)

    def _write(
        self, source: Source, category: str, index: int, seed: int, written: set[str], first: Future[dict[str, Any]]
    ) -> Candidate | None:
        prompt = prompt_for(category, source.language)
        reasons = []
        for attempt in range(self.max_attempts):
            attempt_seed = derive_seed(seed, category, index, attempt)
            try:
                fields = first.result() if attempt == 0 else self._ask(source, category, index, seed, attempt)
            except BadAnswer as exc:
                reasons.append(str(exc))
                continue
            if _normal(fields["query"]) in written:
                reasons.append("the query was already written")
                continue
            provenance = {
                "generator": self.name,
                "model": self.model.identity,
                "model_name": self.model.name,
                "prompt_version": prompt.version,
                "prompts_version": PROMPTS_VERSION,
                "seed": str(attempt_seed),
                "run_seed": str(seed),
                "attempt": str(attempt + 1),
                "source_doc": source.doc_id,
                "source_chunk": source.chunk_id,
                "source_span": source.span(0, source.end - source.start),
                "language": source.language,
            }
            return Candidate(
                query=fields["query"],
                expected_answer=fields["answer"],
                expected_keywords=tuple(fields["keywords"]),
                category=category,
                difficulty=fields["difficulty"],
                source=source,
                provenance=provenance,
            )
        self.rejected.append(Rejection(category, source, tuple(reasons)))
        return None


def interleave(sources: Sequence[Source], seed: int) -> list[Source]:
    """``sources`` ordered for a seed: the documents shuffled, each one's chunks shuffled, then one chunk of
    each document in turn."""
    rng = random.Random(seed)
    by_doc: dict[str, list[Source]] = {}
    for source in sources:
        by_doc.setdefault(source.doc_id, []).append(source)
    docs = list(by_doc)
    rng.shuffle(docs)
    for doc in docs:
        rng.shuffle(by_doc[doc])
    out: list[Source] = []
    for depth in range(max(len(chunks) for chunks in by_doc.values())):
        out += [by_doc[doc][depth] for doc in docs if depth < len(by_doc[doc])]
    return out


def derive_seed(seed: int, category: str, index: int, attempt: int) -> int:
    """The seed sent with one attempt: a 31-bit number of the run's seed, the category, the slot and the
    attempt."""
    text = json.dumps([int(seed), category, int(index), int(attempt)], ensure_ascii=False)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) & 0x7FFFFFFF


def parse_answer(text: str, category: str, language: str) -> dict[str, Any]:
    """``{"query", "answer", "keywords", "difficulty"}`` of a model's answer, or :class:`BadAnswer` saying why it
    is refused (see the module documentation)."""
    data = _json_object(text)
    fields = {str(k).strip().lower(): v for k, v in data.items()}
    query = _text(fields, "query", "question")
    if not query:
        raise BadAnswer("the answer has no query")
    if len(query) > MAX_QUERY_CHARS:
        raise BadAnswer(f"the query is longer than {MAX_QUERY_CHARS} characters")
    if language == "zh" and not HAN_CHARACTER.search(query):
        raise BadAnswer("the query of a Chinese passage is not in Chinese")
    negative = category == "negative"
    answer = "" if negative else _text(fields, "answer", "expected_answer")
    if not negative and not answer:
        raise BadAnswer("the answer has no answer")
    keywords = _keywords(fields.get("keywords", fields.get("expected_keywords")))
    if not negative and not keywords:
        raise BadAnswer("the answer has no keywords")
    raw = fields.get("difficulty")
    difficulty = DIFFICULTY_WORDS.get(str(raw).strip().lower()) if isinstance(raw, str) else None
    if difficulty is None:
        raise BadAnswer(f"the difficulty is not one of {list(DIFFICULTIES)}")
    return {"query": query, "answer": answer, "keywords": keywords, "difficulty": difficulty}


def _json_object(text: str) -> dict[str, Any]:
    tries = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        tries.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        tries.append(text[start : end + 1])
    for candidate in tries:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    raise BadAnswer("the answer is not a JSON object")


def _text(fields: Mapping[str, Any], *names: str) -> str:
    for name in names:
        value = fields.get(name)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return ""


def _keywords(value: Any) -> list[str]:
    if isinstance(value, str):
        items: list[Any] = _KEYWORD_SPLIT.split(value)
    elif isinstance(value, list):
        items = value
    else:
        return []
    out: list[str] = []
    for item in items:
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):
            word = " ".join(str(item).split())
            if word and word not in out:
                out.append(word)
    return out[:MAX_KEYWORDS]


def _normal(query: str) -> str:
    return " ".join(query.lower().split())
