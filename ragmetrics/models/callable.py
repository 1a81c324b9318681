"""A Python callable as a :class:`~ragmetrics.models.base.ChatModel`: ``module:attr`` naming a function (or a
zero-argument factory of one) that takes the messages as OpenAI-style dicts, ``[{"role", "content"}, ...]``,
and returns the answer's text, a :class:`~ragmetrics.models.base.Reply`, an object with a ``text`` attribute,
or a dict with ``text`` or ``content`` (and optionally ``prompt_tokens``, ``completion_tokens``, ``model``).

The keyword parameters ``temperature``, ``max_tokens`` and ``seed`` are passed to the function when it accepts
them (by name, or through ``**kwargs``). An exception in the function, or an answer of none of these shapes,
is a :class:`~ragmetrics.foundation.errors.RagMetricsError` naming the model's registered name.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.importer import import_target
from ragmetrics.models.base import BadAnswer, Message, Reply

PARAMETERS = ("temperature", "max_tokens", "seed")


class CallableModel:
    """``fn(messages[, temperature=, max_tokens=, seed=])`` as a model; ``target`` (``module:attr``) is its
    identity."""

    def __init__(self, name: str, fn: Callable[..., Any], target: str) -> None:
        if not callable(fn):
            raise RagMetricsError(f"model {name!r}: {target} is not callable")
        self.name = name
        self.fn = fn
        self.target = target
        self.identity = f"callable:{target}"
        self._accepts = _accepted(fn)

    @classmethod
    def from_target(cls, name: str, target: str) -> CallableModel:
        """The model ``module:attr`` names; a class or a zero-argument factory is called once to get it."""
        obj = import_target(target, "model")
        if isinstance(obj, type) or (callable(obj) and _positional(obj) == 0):
            try:
                obj = obj()
            except Exception as exc:
                raise RagMetricsError(f"model {name!r}: the factory {target} failed: {type(exc).__name__}") from exc
        return cls(name, obj, target)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Reply:
        given = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
        kwargs = {k: v for k, v in given.items() if k in self._accepts}
        started = time.perf_counter()
        try:
            out = self.fn([{"role": m.role, "content": m.content} for m in messages], **kwargs)
        except RagMetricsError:
            raise
        except Exception as exc:
            raise RagMetricsError(f"model {self.name!r} ({self.target}) failed: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - started
        return self._reply(out, latency)

    def _reply(self, out: Any, latency: float) -> Reply:
        if isinstance(out, Reply):
            return out
        fields: dict[str, Any] = {}
        if isinstance(out, str):
            text: Any = out
        elif isinstance(out, dict):
            text = out.get("text", out.get("content"))
            fields = out
        else:
            text = getattr(out, "text", None)
            fields = {k: getattr(out, k, None) for k in ("model", "prompt_tokens", "completion_tokens")}
        if not isinstance(text, str):
            raise BadAnswer(
                f"model {self.name!r} ({self.target}) answered a {type(out).__name__}: expected a string, a Reply, "
                "or an object or dict with a text"
            )
        if not text.strip():
            raise BadAnswer(f"model {self.name!r} ({self.target}): the answer is empty")
        model = fields.get("model")
        return Reply(
            text=text,
            model=model if isinstance(model, str) and model else self.target,
            prompt_tokens=_count(fields.get("prompt_tokens")),
            completion_tokens=_count(fields.get("completion_tokens")),
            latency_s=latency,
        )


def _accepted(fn: Callable[..., Any]) -> frozenset[str]:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return frozenset(PARAMETERS)
    return frozenset(p.name for p in parameters if p.name in PARAMETERS and p.kind is not p.POSITIONAL_ONLY)


def _positional(fn: Any) -> int | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
