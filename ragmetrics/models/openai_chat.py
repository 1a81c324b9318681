"""An OpenAI-compatible chat-completions endpoint (hosted APIs, vLLM, Ollama, llama.cpp's server) as a
:class:`~ragmetrics.models.base.ChatModel` (``httpx``, imported when the first call is made).

Each call is a ``POST {base}/chat/completions`` of ``{"model", "messages", "temperature"[, "max_tokens",
"seed"]}``; the answer must be a chat completion: a JSON object whose ``choices[0].message.content`` is a
non-empty string. ``usage.prompt_tokens`` and ``usage.completion_tokens`` are recorded when the endpoint gives
them.

Connection errors, timeouts, 429 and 5xx answers are retried, ``attempts`` in all, after ``backoff`` seconds
doubled at each retry (at most :data:`MAX_BACKOFF`; a 429's or 503's ``Retry-After`` is honoured up to that).
Anything else fails at once with a :class:`~ragmetrics.foundation.errors.RagMetricsError` naming the model's
registered name: another 4xx; an answer that is not JSON or not a chat completion, or is empty, is a
:class:`~ragmetrics.models.base.BadAnswer` (a caller may ask again with another seed).

As for a registered retriever (:mod:`ragmetrics.retrieve.http`): the endpoint is called at its own address
only (a redirect fails the call), an error says the answer's status and never its body, and the URL's
credentials are hidden wherever it is shown. The API key is read from the environment variable the
registration names (``key_env``) and sent as ``Authorization: Bearer``; it is never part of the identity, the
cache key or a message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from ragmetrics.foundation.clients import ClientPerThread
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.redact import HIDDEN, redact_url, scrub
from ragmetrics.io.limits import capped_bytes
from ragmetrics.models.base import BadAnswer, Message, Reply

MAX_BACKOFF = 30.0
"""The longest wait between two attempts, in seconds."""


class OpenAIChat:
    """A chat-completions endpoint at ``base_url`` (``.../v1``) serving ``model``."""

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        *,
        key_env: str | None = None,
        timeout: float = 60.0,
        attempts: int = 4,
        backoff: float = 0.5,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise RagMetricsError(f"model {name!r}: the endpoint is an http:// or https:// URL")
        if not model:
            raise RagMetricsError(f"model {name!r}: name the model the endpoint serves (model=...)")
        if attempts < 1 or timeout <= 0 or backoff < 0:
            raise RagMetricsError(f"model {name!r}: attempts >= 1, timeout > 0 and backoff >= 0")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.key_env = key_env
        self.timeout = float(timeout)
        self.attempts = int(attempts)
        self.backoff = float(backoff)
        self.identity = f"openai:{redact_url(self.base_url)} model={model}"
        self._key: str | None = None
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise RagMetricsError(f"model {name!r}: the environment variable {key_env} (its key_env) is not set")
            self._key = key
        self._clients: ClientPerThread[Any] = ClientPerThread(self._new_client)

    def __repr__(self) -> str:
        return f"OpenAIChat({self.name!r}, {self.identity!r})"

    def _where(self) -> str:
        return f"model {self.name!r} ({redact_url(self.url)})"

    def _safe(self, text: str) -> str:
        out = scrub(text, self.url)
        return out.replace(self._key, HIDDEN) if self._key else out

    def _new_client(self) -> Any:
        import httpx  # noqa: PLC0415 (an optional dependency, loaded on use)

        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        return httpx.Client(headers=headers, follow_redirects=False)

    def close(self) -> None:
        """Close the connections of every thread that called the endpoint."""
        self._clients.close()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Reply:
        import httpx  # noqa: PLC0415 (an optional dependency, loaded on use)

        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if seed is not None:
            body["seed"] = seed
        client = self._clients.get()
        problem = ""
        for attempt in range(self.attempts):
            wait: float | None = None
            started = time.perf_counter()
            try:
                with client.stream("POST", self.url, json=body, timeout=self.timeout) as answer:
                    status = answer.status_code
                    if status == 429 or status >= 500:
                        problem = f"HTTP {status}"
                        wait = _retry_after(answer.headers.get("retry-after"))
                    else:
                        content = capped_bytes(answer.iter_bytes(), self._where())
                        return self._reply(content, status, time.perf_counter() - started)
            except httpx.TimeoutException:
                problem = f"timed out after {self.timeout:g} s"
            except httpx.HTTPError as exc:
                problem = self._safe(f"cannot reach the endpoint: {type(exc).__name__}: {exc}")
            if attempt + 1 < self.attempts:
                pause = min(self.backoff * 2**attempt, MAX_BACKOFF)
                time.sleep(pause if wait is None else min(max(wait, pause), MAX_BACKOFF))
        tries = "1 attempt" if self.attempts == 1 else f"{self.attempts} attempts"
        raise RagMetricsError(f"{self._where()}: {problem} ({tries})")

    def _reply(self, content: bytes, status: int, latency: float) -> Reply:
        if 300 <= status < 400:
            raise RagMetricsError(
                f"{self._where()}: HTTP {status}: the endpoint redirects, and redirects are not followed "
                "(register the address that answers)"
            )
        if status in (401, 403):
            hint = f" (check the key in {self.key_env})" if self.key_env else " (does it need a key_env?)"
            raise RagMetricsError(f"{self._where()}: HTTP {status}{hint}")
        if status >= 400:
            raise RagMetricsError(f"{self._where()}: HTTP {status}")
        try:
            data = json.loads(content)
        except ValueError:
            raise BadAnswer(f"{self._where()}: the answer is not JSON, so not a chat completion") from None
        return parse_completion(data, self.model, latency, self._where())


def parse_completion(data: Any, model: str, latency: float, where: str) -> Reply:
    """The :class:`Reply` of a decoded chat completion; an error naming ``where`` for anything else."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise BadAnswer(f"{where}: the answer is not a chat completion (no choices)")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise BadAnswer(f"{where}: the answer is not a chat completion (no choices[0].message.content)")
    if not content.strip():
        reason = first.get("finish_reason") if isinstance(first, dict) else None
        raise BadAnswer(f"{where}: the answer is empty" + (f" (finish_reason {reason})" if reason else ""))
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    answered = data.get("model")
    return Reply(
        text=content,
        model=answered if isinstance(answered, str) and answered else model,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        latency_s=latency,
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _retry_after(value: str | None) -> float | None:
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None
