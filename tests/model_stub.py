"""A stub OpenAI-compatible chat-completions server for tests: real HTTP on 127.0.0.1 (a stdlib
ThreadingHTTPServer in a thread), answering ``POST /v1/chat/completions``.

``ModelStub(answer)`` answers each request with ``answer(messages)``, where ``messages`` is the request's list
of ``{"role", "content"}`` dicts: a string is the completion's content, or a mode says what goes wrong:

* :data:`MALFORMED`: a 200 whose body is not JSON; :data:`NO_CHOICES`: a JSON object without ``choices``;
  :data:`EMPTY`: a completion whose content is empty;
* ``Slow(seconds, text)``: the answer after ``seconds`` (past the client's timeout);
* ``Fail(status, times, text)``: HTTP ``status`` (500, 429...) the first ``times`` times this same request
  (messages and seed) is made, then ``text``; ``retry_after`` sets the header;
* ``Redirect(location)``: a 307 to ``location``.

The stub counts and keeps every request (``requests``: the JSON bodies; ``headers``: their headers; ``ports``: the
client's port, which tells the connections apart), so a test sees what was sent and what the cache spared. With ``key=``, a request without ``Authorization: Bearer KEY``
is answered 401. With ``keep_alive=True`` the stub speaks HTTP/1.1 with persistent connections and Nagle's
algorithm off, so a test that makes thousands of calls (a judge over a pool) pays no connection set-up per call.
Use it as a context manager: ``with ModelStub(fn) as stub: stub.url`` (the ``.../v1`` base),
or through the ``model_stub`` fixture (every test has it, by tests/conftest.py): ``stub = model_stub(fn)``
starts one, stopped when the test ends.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Mode:
    what: str


MALFORMED = Mode("malformed")
NO_CHOICES = Mode("no choices")
EMPTY = Mode("empty")


@dataclass(frozen=True)
class Slow:
    seconds: float
    text: str = "late"


@dataclass(frozen=True)
class Fail:
    status: int = 500
    times: int = 1
    text: str = "ok"
    retry_after: float | None = None


@dataclass(frozen=True)
class Redirect:
    location: str


Answer = str | Mode | Slow | Fail | Redirect


def echo(messages: list[dict]) -> str:
    """The default answer: the last message's content, reversed word by word."""
    return " ".join(reversed(messages[-1]["content"].split())) or "empty"


class ModelStub:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 (see the module documentation)."""

    def __init__(
        self,
        answer: Callable[[list[dict]], Answer] = echo,
        *,
        model: str = "stub-model",
        key: str | None = None,
        keep_alive: bool = False,
    ) -> None:
        self.answer = answer
        self.model = model
        self.key = key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.ports: list[int] = []
        self.statuses: list[int] = []
        self.failed: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        handler = self._handler()
        if keep_alive:
            handler.protocol_version = "HTTP/1.1"
            handler.disable_nagle_algorithm = True
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.block_on_close = not keep_alive  # an idle persistent connection does not hold up the stop
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def count(self) -> int:
        """How many requests reached the endpoint."""
        with self.lock:
            return len(self.requests)

    def __enter__(self) -> ModelStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def completion(self, text: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()), "total_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                with stub.lock:
                    stub.statuses.append(status)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), headers)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": "not found"})
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": "bad json"})
                    return
                with stub.lock:
                    stub.requests.append(body)
                    stub.headers.append(dict(self.headers.items()))
                    stub.ports.append(self.client_address[1])
                if stub.key is not None and self.headers.get("Authorization") != f"Bearer {stub.key}":
                    self._json(401, {"error": {"message": "invalid api key"}})
                    return
                messages = body.get("messages", [])
                answer = stub.answer(messages)
                if isinstance(answer, Fail):
                    request = json.dumps([messages, body.get("seed")], sort_keys=True)
                    with stub.lock:
                        stub.failed[request] += 1
                        fail = stub.failed[request] <= answer.times
                    if fail:
                        headers = {} if answer.retry_after is None else {"Retry-After": f"{answer.retry_after:g}"}
                        self._json(answer.status, {"error": {"message": "secret server detail"}}, headers)
                        return
                    answer = answer.text
                if isinstance(answer, Slow):
                    stub.stopping.wait(answer.seconds)
                    answer = answer.text
                if isinstance(answer, Redirect):
                    self._send(307, b"", {"Location": answer.location})
                elif answer == MALFORMED:
                    self._send(200, b'{"choices": [ this is not json')
                elif answer == NO_CHOICES:
                    self._json(200, {"id": "x", "object": "chat.completion", "model": stub.model})
                elif answer == EMPTY:
                    self._json(200, stub.completion("", body))
                else:
                    self._json(200, stub.completion(str(answer), body))

        return Handler


@pytest.fixture
def model_stub() -> Iterator[Callable[..., ModelStub]]:
    """``model_stub(answer, **options)``: a started :class:`ModelStub`, stopped when the test ends."""
    started: list[ModelStub] = []

    def start(answer: Callable[[list[dict]], Answer] = echo, **options: Any) -> ModelStub:
        stub = ModelStub(answer, **options).__enter__()
        started.append(stub)
        return stub

    yield start
    for stub in started:
        stub.__exit__(None, None, None)
