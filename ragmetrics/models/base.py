"""What a caller of a model endpoint sees: the messages it sends and the :class:`Reply` it gets back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragmetrics.foundation.errors import RagMetricsError


class BadAnswer(RagMetricsError):
    """The endpoint answered, but not with a usable reply (not JSON, not a chat completion, empty): asking
    again, with another seed, may do better. Any other :class:`RagMetricsError` of a model (it cannot be
    reached, it keeps timing out or failing, it refuses the key) says the endpoint is not usable now."""


@dataclass(frozen=True)
class Message:
    """One chat message: ``role`` is ``system``, ``user`` or ``assistant``."""

    role: str
    content: str


@dataclass(frozen=True)
class Reply:
    """A model's answer with what it cost: tokens as the endpoint counted them (``None`` when it did not say),
    the wall time of the call that produced it, and whether it came from the cache (then ``latency_s`` is the
    original call's)."""

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cached: bool = False


class ChatModel(Protocol):
    """A registered model endpoint. ``name`` is the deployer's name for it; ``identity`` says what answers
    (endpoint and model, credentials redacted) and keys its cache."""

    name: str
    identity: str

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Reply: ...
