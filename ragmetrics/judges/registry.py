"""The judges, by name: :data:`JUDGES` is the one place a judge is added; the CLI's ``--judge`` choices and help
come from it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.judges.base import NO_QUERY, Judge, Pair, ungradable
from ragmetrics.judges.call import CallableJudge
from ragmetrics.judges.endpoint import EndpointJudge
from ragmetrics.judges.learned import LearnedJudge
from ragmetrics.judges.rule import RuleJudge
from ragmetrics.models.base import ChatModel
from ragmetrics.models.registry import get_model


@dataclass(frozen=True)
class JudgeInputs:
    """What a judge may be built from: people's labelled pairs (``training``, the learned judge) and another
    judge's grades it learns to correct (``base``, by ``(query_id, doc_id)``; optional; ``base_source``: where they
    came from, named in refusals), a registered model's name
    or the model itself (the endpoint judge), ``module:attr`` or the function itself (the callable judge)."""

    training: Sequence[tuple[Pair, int]] = ()
    base: Mapping[tuple[str, str], int] | None = None
    base_source: str = ""
    model: str | ChatModel | None = None
    call: str | Callable[[Pair, int], Any] | None = None
    folds: int = 5
    attempts: int = 3


def unreadable(judge: type) -> Callable[[Sequence[Pair]], str | None]:
    """Why a judge of class ``judge`` could grade none of a pool: every pair lacks what it reads
    (:func:`ragmetrics.judges.base.ungradable`, the rule :func:`ragmetrics.judges.base.run_judge` applies to each
    pair); None when some pair has it."""

    def unable(pairs: Sequence[Pair]) -> str | None:
        missing = [ungradable(judge, p) for p in pairs]
        if not pairs or not all(missing):
            return None
        no_query = sum(grade is NO_QUERY for grade in missing)
        if no_query == len(pairs):
            return (
                "no query of the pool has a text (give --queries, or an evaluation set that holds the queries): "
                "the judge would grade the documents against an empty query"
            )
        if no_query == 0:
            return "no document of the pool has a text (give --corpus, or a pool with a text column)"
        return (
            f"no pair of the pool has both texts the judge reads: {no_query} lack the query's text (give --queries), "
            f"{len(pairs) - no_query} the document's (give --corpus, or a pool with a text column)"
        )

    return unable


def _nothing_to_find(pairs: Sequence[Pair]) -> str | None:
    if pairs and not any(p.expected_answer or p.expected_keywords for p in pairs):
        return (
            "no query of the pool has an expected answer or keywords for the rule to look for (qrels carry none: "
            "give an evaluation set that has them, or another judge)"
        )
    reason = unreadable(RuleJudge)(pairs)
    if reason is None and not any((p.expected_answer or p.expected_keywords) and p.text.strip() for p in pairs):
        return (
            "no pair of the pool has both a document text and its query's expected answer or keywords: the rule "
            "would find nothing in any of them (give --corpus, or an evaluation set with answers or keywords)"
        )
    return reason


@dataclass(frozen=True)
class JudgeKind:
    """A registered judge: its help line, the :class:`JudgeInputs` field it needs (``""``: none), how it is
    built, and ``unable``: why it could grade none of some pairs (None: it can try), asked before any work."""

    help: str
    needs: str
    build: Callable[[JudgeInputs], Judge]
    unable: Callable[[Sequence[Pair]], str | None] = lambda pairs: None


def chat_model(model: str | ChatModel | None) -> ChatModel:
    """``model`` itself, or the registered endpoint of that name (:func:`ragmetrics.models.registry.get_model`)."""
    if model is None:
        raise RagMetricsError("the endpoint judge needs a registered model (--model NAME)")
    return get_model(model) if isinstance(model, str) else model


def _learned(inputs: JudgeInputs) -> Judge:
    return LearnedJudge(inputs.training, folds=inputs.folds, base=inputs.base, base_source=inputs.base_source)


def _endpoint(inputs: JudgeInputs) -> Judge:
    return EndpointJudge(chat_model(inputs.model), attempts=inputs.attempts)


def _callable(inputs: JudgeInputs) -> Judge:
    call = inputs.call
    if callable(call):  # a function given in Python: named by where it was defined
        spec = f"{getattr(call, '__module__', None) or '?'}:{getattr(call, '__qualname__', type(call).__name__)}"
        return CallableJudge(spec, function=call)
    if not isinstance(call, str) or not call:
        raise RagMetricsError(
            f"the callable judge needs module:attr (--call module:attr) or, in Python, a function (pair, max_grade) "
            f"-> grade; got {type(call).__name__}"
        )
    return CallableJudge(call)


JUDGES: dict[str, JudgeKind] = {
    "rule": JudgeKind(
        "the expected answer or keywords found in the document's text", "", lambda _: RuleJudge(), _nothing_to_find
    ),
    "learned": JudgeKind(
        "a logistic regression on cheap features (and another judge's labels, if given), trained on people's "
        "labels, cross-fitted by query",
        "training",
        _learned,
        unreadable(LearnedJudge),
    ),
    "endpoint": JudgeKind(
        "a registered chat model, asked with a UMBRELA-style graded prompt",
        "model",
        _endpoint,
        unreadable(EndpointJudge),
    ),
    "callable": JudgeKind("a Python function module:attr, called with (pair, max_grade)", "call", _callable),
}
"""The judges, by name: the one place a judge is added."""


def make_judge(name: str, inputs: JudgeInputs | None = None) -> Judge:
    """The judge ``name`` of :data:`JUDGES`, built from ``inputs``."""
    kind = JUDGES.get(name)
    if kind is None:
        raise RagMetricsError(f"judge {name!r} is not registered; expected one of {', '.join(JUDGES)}")
    return kind.build(inputs or JudgeInputs())
