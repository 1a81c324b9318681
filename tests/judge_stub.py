"""A chat-completions server on 127.0.0.1 that grades like a judge, for the judges' tests (it speaks the
OpenAI protocol over real HTTP)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar


class Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/chat/completions: the grade is decided by a marker in the passage (ANSWER 2,
    RELATED 1, else 0); a passage saying GARBLE is never answered in form, ONCE only after the retry message,
    TOOHIGH with a grade off the scale; DOWN gets HTTP 503; NOTJSON's first answer is not JSON."""

    calls: ClassVar[list[list[dict]]] = []
    seen: ClassVar[dict[str, int]] = {}

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        type(self).calls.append(messages)
        prompt = messages[0]["content"]
        retried = len(messages) > 1
        seen = type(self).seen
        seen[prompt] = seen.get(prompt, 0) + 1
        if "NOTJSON" in prompt and seen[prompt] == 1:  # the first answer to this question is no chat completion
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "8")
            self.end_headers()
            self.wfile.write(b"not json")
            return
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


@contextlib.contextmanager
def serve_chat() -> Iterator[str]:
    """The server's base URL while it runs (its calls recorded in :attr:`Stub.calls`, emptied first)."""
    Stub.calls = []
    Stub.seen = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
