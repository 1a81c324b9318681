"""A chat-completions server on 127.0.0.1 that grades like a judge, for the judges' tests (it speaks the
OpenAI protocol over real HTTP), and a minimal client of it."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.models.base import Message, Reply


class Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/chat/completions: the grade is decided by a marker in the passage; a passage
    saying GARBLE is never answered in form, one saying ONCE only after the retry message."""

    calls: ClassVar[list[list[dict]]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        type(self).calls.append(messages)
        prompt = messages[0]["content"]
        retried = len(messages) > 1
        if "DOWN" in prompt:
            self.send_error(503, "down")
            return
        if "GARBLE" in prompt:
            text = "The passage looks relevant to me, maybe a 2."
        elif "ONCE" in prompt and not retried:
            text = "##final score: two"
        elif "TOOHIGH" in prompt:
            text = "##final score: 7"
        else:
            text = f"##final score: {2 if 'ANSWER' in prompt else 1 if 'RELATED' in prompt else 0}"
        payload = json.dumps({
            "id": "x", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


class HttpChat:
    """A minimal client of an OpenAI-compatible endpoint (stands in for ragmetrics.models' registered ones)."""

    def __init__(self, url: str) -> None:
        self.url, self.name, self.identity = url, "stub", f"openai:{url}:stub-model"

    def chat(self, messages: Sequence[Message], *, temperature=0.0, max_tokens=None, seed=None) -> Reply:
        body = {"model": "stub-model", "messages": [{"role": m.role, "content": m.content} for m in messages],
                "temperature": temperature, "max_tokens": max_tokens, "seed": seed}  # fmt: skip
        request = urllib.request.Request(
            self.url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:  # as the registered models say it: a RagMetricsError
            raise RagMetricsError(f"{self.url}: HTTP {exc.code}") from None
        return Reply(answer["choices"][0]["message"]["content"], answer["model"], 10, 5,
                     time.perf_counter() - started)  # fmt: skip


@contextlib.contextmanager
def serve_chat() -> Iterator[str]:
    """The server's base URL while it runs (its calls recorded in :attr:`Stub.calls`, emptied first)."""
    Stub.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
