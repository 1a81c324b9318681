"""The model-endpoint judge: a registered chat model grades each pair with a prompt in the style of UMBRELA
(Upadhyay et al., 2024, after Thomas et al.'s Bing prompt), on the dataset's own scale."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.judges.base import Grade, Pair
from ragmetrics.models.base import BadAnswer, ChatModel, Message

PROMPT = """Given a query and a passage, you must provide a score on an integer scale of 0 to {max_grade} with the \
following meanings:
{scale}
Important instruction: assign a score of 1 or more only if the passage answers the query at least in part; a \
passage that only shares words with the query scores 0.

Query: {query}
{expected}Passage: {text}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O).
The final score must be an integer value only. Do not provide any code in the result. Provide the final score in \
the format:
##final score: <score>
without providing any reasoning."""
"""The grading prompt; ``{scale}`` is :func:`scale_text`, ``{expected}`` the expected answer's line (empty when
the query has none)."""

RETRY = (
    "Your answer could not be read. Reply with exactly one line of the form '##final score: N' where N is an "
    "integer from 0 to {max_grade}, and nothing else."
)
"""The message sent after an answer that did not parse, before asking again."""

_FINAL = re.compile(r"##\s*final score\s*:\s*[*_]*\s*(-?\d+)\s*[*_]*\s*$", re.IGNORECASE | re.MULTILINE)
"""The grade line; Markdown emphasis around it (``**##final score: 2**``, as chat models format) is no part of it."""
_MENTION = re.compile(r"##\s*final score", re.IGNORECASE)


def scale_text(max_grade: int) -> str:
    """The meaning of each grade ``0..max_grade``: 0 unrelated, ``max`` the answer, in between partial (the two
    ends and the middle in the words of UMBRELA's four-point scale)."""
    lines = ["0 = the passage has nothing to do with the query"]
    for g in range(1, max_grade):
        lines.append(
            "1 = the passage seems related to the query but does not answer it"
            if g == 1
            else f"{g} = the passage has some answer for the query, but it is unclear or hidden amongst extraneous "
            f"information (higher: more of the answer)"
        )
    lines.append(f"{max_grade} = the passage is dedicated to the query and contains the exact answer")
    return "\n".join(lines)


def prompt(pair: Pair, max_grade: int, *, max_chars: int = 4000) -> str:
    """The :data:`PROMPT` for ``pair`` (its text cut to ``max_chars`` characters)."""
    expected = f"Expected answer: {pair.expected_answer}\n" if pair.expected_answer.strip() else ""
    return PROMPT.format(
        max_grade=max_grade, scale=scale_text(max_grade), query=pair.query, expected=expected,
        text=pair.text[:max_chars],
    )  # fmt: skip


def parse_grade(answer: str, max_grade: int) -> int | None:
    """The grade of an answer: exactly one ``##final score: N`` line with ``0 <= N <= max_grade``; else None."""
    found = _FINAL.findall(answer)
    if len(found) != 1 or len(_MENTION.findall(answer)) != 1:  # two scores on one line are two answers too
        return None
    grade = int(found[0])
    return grade if 0 <= grade <= max_grade else None


class EndpointJudge:
    """Asks ``model`` to grade each pair (:func:`prompt`, temperature 0, ``seed``). An answer that does not parse
    (:func:`parse_grade`), or an unusable reply (:class:`~ragmetrics.models.base.BadAnswer`), is answered with
    :data:`RETRY` and asked again with the next seed, up to ``attempts`` answers in all; then
    the pair gets no grade and its ``problem`` quotes the last answer (never a 0 for it). ``concurrency`` pairs are
    graded at once. A call that fails (the
    model's own retries spent) leaves its pair without a grade, saying why; ``max_failed_calls`` failures in a row
    stop the judge with that error (an endpoint that is down is not asked about every pair), and so do
    ``max_ungraded`` pairs in a row left without a grade after every attempt (a model that answers, but never in the
    form the prompt asks for, is not asked ``attempts`` times about every pair)."""

    name = "endpoint"
    version = "1"
    needs_query = True

    def __init__(
        self,
        model: ChatModel,
        *,
        attempts: int = 3,
        seed: int | None = 0,
        max_chars: int = 4000,
        max_failed_calls: int = 5,
        max_ungraded: int = 10,
        concurrency: int = 4,
    ) -> None:
        if concurrency < 1:
            raise RagMetricsError(f"the endpoint judge's concurrency is at least 1; got {concurrency}")
        self.model = model
        self.concurrency = concurrency
        self._lock = threading.Lock()
        self.max_failed_calls = max(1, max_failed_calls)
        self.failed_in_a_row = 0
        self.max_ungraded = max(1, max_ungraded)
        self.ungraded_in_a_row = 0
        self.stopped: str | None = None  # why, once the calls or the pairs failed in a row: no call after it
        self.attempts = max(1, attempts)
        self.seed = seed
        self.max_chars = max_chars
        self.retries = 0
        self.failures = 0

    def config(self) -> Mapping[str, Any]:
        return {"model": self.model.identity, "prompt": PROMPT, "retry": RETRY, "attempts": self.attempts,
                "seed": self.seed, "max_chars": self.max_chars, "temperature": 0.0}  # fmt: skip

    def _raise_if_stopped(self) -> None:
        """Once ``max_failed_calls`` calls failed in a row, no thread asks the model again."""
        if self.stopped is not None:
            raise RagMetricsError(self.stopped)

    def grade(self, pairs: Sequence[Pair], max_grade: int) -> list[Grade]:
        """The grades of ``pairs``, in their order; ``concurrency`` pairs are asked about at once (a pair's grade
        does not depend on the others). A judge stopped by failed calls is asked again here, afresh."""
        self.stopped, self.failed_in_a_row, self.ungraded_in_a_row = None, 0, 0
        if self.concurrency == 1 or len(pairs) < 2:
            return [self.grade_one(pair, max_grade) for pair in pairs]
        with ThreadPoolExecutor(min(self.concurrency, len(pairs)), thread_name_prefix="endpoint-judge") as pool:
            return list(pool.map(lambda pair: self.grade_one(pair, max_grade), pairs))

    def grade_one(self, pair: Pair, max_grade: int) -> Grade:
        self._raise_if_stopped()
        messages = [Message("user", prompt(pair, max_grade, max_chars=self.max_chars))]
        answer = ""
        unusable: str | None = None  # the last attempt's reply was no chat completion at all: why
        for attempt in range(self.attempts):
            last = attempt + 1 == self.attempts
            seed = None if self.seed is None else self.seed + attempt
            if attempt:
                self._raise_if_stopped()
            try:
                answer = self.model.chat(messages, temperature=0.0, max_tokens=64, seed=seed).text
            except BadAnswer as exc:  # an unusable reply (not a chat completion, empty): the same question again
                with self._lock:
                    self.failed_in_a_row = 0
                    self.retries += not last
                answer, unusable = f"(no usable reply: {exc})", str(exc)
                continue
            except RagMetricsError as exc:
                with self._lock:
                    self.failures += 1
                    self.failed_in_a_row += 1
                    if self.failed_in_a_row >= self.max_failed_calls and self.stopped is None:
                        self.stopped = (
                            f"model {self.model.name}: {self.failed_in_a_row} calls in a row failed; the last: {exc}"
                        )
                self._raise_if_stopped()
                return Grade(None, f"the call failed: {exc}")
            unusable = None
            with self._lock:
                self.failed_in_a_row = 0
            grade = parse_grade(answer, max_grade)
            if grade is not None:
                with self._lock:
                    self.ungraded_in_a_row = 0
                return Grade(grade)
            if not last:
                with self._lock:
                    self.retries += 1
                messages = [*messages, Message("assistant", answer), Message("user", RETRY.format(max_grade=max_grade))]
        shown = " ".join(answer.split())[:120]
        with self._lock:
            self.failures += 1
            self.ungraded_in_a_row += 1
            if self.ungraded_in_a_row >= self.max_ungraded and self.stopped is None:
                self.stopped = (
                    f"model {self.model.name}: {self.ungraded_in_a_row} pairs in a row got no usable reply in "
                    f"{self.attempts} call(s) each; the last: {unusable}: check that the model's URL is an "
                    "OpenAI-compatible endpoint (its /v1, where /chat/completions answers)"
                    if unusable is not None
                    else f"model {self.model.name}: {self.ungraded_in_a_row} pairs in a row got no grade "
                    f"0..{max_grade} in {self.attempts} answer(s) each; the last answer: {shown!r}: check that the "
                    "model follows the prompt (a chat or instruction model)"
                )
        if unusable is not None:
            return Grade(None, f"no usable reply in {self.attempts} call(s); the last: {unusable}")
        return Grade(None, f"no grade 0..{max_grade} in {self.attempts} answer(s); the last: {shown!r}")
