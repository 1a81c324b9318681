"""An HTTP JSON endpoint as a retriever (``httpx``, imported when the first call is made).

By default each query is a ``POST`` of ``{"query": TEXT, "k": K}``, answered by a JSON list, or an object
with a ``results`` list, of objects with ``doc_id`` (or ``id``), ``score`` and optionally ``text`` and
``source_doc``. Other endpoints are described by two strings:

* ``request``: ``[METHOD ]JSON``, a template whose strings may hold ``{query}`` and ``{k}``; a string that is
  exactly ``"{k}"`` becomes the number. ``GET`` sends the template's top-level fields as URL parameters.
  Examples: ``{"q": "{query}", "top_k": "{k}", "index": "docs"}``, ``GET {"q": "{query}", "n": "{k}"}``.
  A URL holding ``{query}`` (``https://host/search?q={query}&k={k}``) is a GET of that URL by default.
* ``response``: comma-separated items, a dotted path to the list (``data.hits``; ``hits.hits``) and
  ``field=path`` mappings for ``doc_id``, ``score``, ``text``, ``source_doc``:
  ``hits.hits,doc_id=_id,score=_score,text=_source.body``. ``doc_id_field`` is the same as ``doc_id=``.

Answers 429 and 5xx, timeouts and lost connections are retried by the runner; other 4xx answers and
responses of the wrong shape fail at once. Headers (an API key) are sent but are not part of the cache key.

The endpoint is called at its own address only: a redirect (3xx) is not followed but fails the call, so a
registered endpoint cannot send the server to another host. An error says the answer's status, never its body,
and the URL's credentials are hidden wherever it is shown (:func:`ragmetrics.foundation.redact.redact_url`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from ragmetrics.foundation.clients import ClientPerThread
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.redact import redact_url, redact_urls, scrub
from ragmetrics.io.limits import LimitError, capped_bytes
from ragmetrics.retrieve.adapters import Adapter, CallError, Hit, as_doc_id, as_score, lookup

DEFAULT_REQUEST = 'POST {"query": "{query}", "k": "{k}"}'
FIELDS = ("doc_id", "score", "text", "source_doc")
METHODS = ("GET", "POST", "PUT")


def parse_request(template: str | None, url: str) -> tuple[str, Any]:
    """``(method, JSON template)`` of a request template (``None``: the default, or a GET of a URL template)."""
    if template is None:
        if "{query}" in url:
            return "GET", None
        template = DEFAULT_REQUEST
    text = template.strip()
    method = "POST"
    word, _, rest = text.partition(" ")
    if word.upper() in METHODS:
        method, text = word.upper(), rest.strip()
    elif text.upper() in METHODS:
        method, text = text.upper(), ""
    if not text:
        if "{query}" not in url:
            raise RagMetricsError(f"request template {template!r}: give a JSON template or put {{query}} in the URL")
        return method, None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RagMetricsError(f"request template {template!r} is not JSON: {exc.msg} (column {exc.colno})") from None
    if "{query}" not in text and "{query}" not in url:
        raise RagMetricsError(f"request template {template!r} does not hold {{query}}")
    if method == "GET" and not isinstance(body, dict):
        raise RagMetricsError(f"request template {template!r}: a GET template is a JSON object of URL parameters")
    return method, body


def fill(template: Any, query: str, k: int) -> Any:
    """The template with ``{query}`` and ``{k}`` put in (as values: no JSON is built from strings)."""
    if isinstance(template, str):
        if template == "{k}":
            return k
        return template.replace("{query}", query).replace("{k}", str(k))
    if isinstance(template, list):
        return [fill(v, query, k) for v in template]
    if isinstance(template, dict):
        return {key: fill(v, query, k) for key, v in template.items()}
    return template


def parse_response(spec: str | None, doc_id_field: str | None) -> tuple[str | None, dict[str, str]]:
    """``(list path or None for the default, {field: path})``."""
    path: str | None = None
    fields: dict[str, str] = {}
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            field, _, where = (s.strip() for s in item.partition("="))
            if field not in FIELDS:
                raise RagMetricsError(f"response mapping {item!r}: the field is one of {list(FIELDS)}")
            fields[field] = where
        elif path is None:
            path = "" if item in (".", "$") else item
        else:
            raise RagMetricsError(f"response {spec!r}: two list paths ({path!r} and {item!r})")
    if doc_id_field:
        fields["doc_id"] = doc_id_field
    return path, fields


class HttpAdapter(Adapter):
    """A retriever behind an HTTP JSON endpoint; one ``httpx.Client`` for each of the runner's threads
    (:mod:`ragmetrics.foundation.clients`)."""

    kind = "http"
    native_timeout = True

    def __init__(
        self,
        url: str,
        *,
        request: str | None = None,
        response: str | None = None,
        doc_id_field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url
        self.request = request
        self.response = response
        self.method, self.template = parse_request(request, url)
        self.list_path, self.fields = parse_response(response, doc_id_field)
        self.headers = dict(headers or {})
        self._clients: ClientPerThread[Any] = ClientPerThread(self._new_client)

    @property
    def identity(self) -> str:
        parts = [f"http:{self.method} {self.url}", f"request={json.dumps(self.template, sort_keys=True)}"]
        if self.list_path is not None:
            parts.append(f"list={self.list_path}")
        parts += [f"{k}={v}" for k, v in sorted(self.fields.items())]
        return " ".join(parts)

    @property
    def default_name(self) -> str:

        split = urlsplit(self.url)
        return (split.hostname or "http") + (split.path.rstrip("/").replace("/", "_") if split.path else "")

    def describe(self) -> dict[str, Any]:
        # the identity keeps the URL whole (the cache key: two endpoints that differ by their key stay apart); what
        # is shown of it hides the credentials
        return {
            **super().describe(),
            "identity": redact_urls(self.identity),
            "url": redact_url(self.url),
            "method": self.method,
            "request": self.template,
            "response": self.response,
            "fields": self.fields or None,
            "headers": sorted(self.headers) or None,  # the names only: values may be secrets
        }

    def _new_client(self) -> Any:
        import httpx  # noqa: PLC0415 (the retrieve extra, loaded on use)

        return httpx.Client(headers=self.headers, follow_redirects=False)

    def close(self) -> None:
        self._clients.close()

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        import httpx  # noqa: PLC0415 (the retrieve extra, loaded on use)

        client = self._clients.get()
        url = self.url.replace("{query}", quote(query, safe="")).replace("{k}", str(k))
        body = None if self.template is None else fill(self.template, query, k)
        request = {"params": body} if self.method == "GET" else {"json": body}
        try:
            with client.stream(self.method, url, timeout=timeout, **request) as answer:
                status = answer.status_code
                if status == 429 or status >= 500:
                    raise CallError(f"HTTP {status}", retry_after=_retry_after(answer.headers.get("retry-after")))
                if 300 <= status < 400:
                    raise CallError(
                        f"HTTP {status}: the endpoint redirects, and redirects are not followed (register the "
                        "address that answers)",
                        retryable=False,
                    )
                if status >= 400:
                    raise CallError(f"HTTP {status}", retryable=False)
                content = capped_bytes(answer.iter_bytes(), "the retriever")
        except httpx.TimeoutException:
            raise CallError(f"timed out after {timeout} s") from None
        except httpx.HTTPError as exc:
            raise CallError(scrub(f"{type(exc).__name__}: {exc}", self.url)) from None
        except LimitError as exc:
            raise CallError(str(exc), retryable=False) from None
        try:
            data = json.loads(content)
        except ValueError:
            raise CallError(f"HTTP {status}: the answer is not JSON", retryable=False) from None
        return self.hits(data)

    def hits(self, data: Any) -> list[Hit]:
        """The hits of one decoded answer."""
        if self.list_path is not None:
            items = lookup(data, self.list_path) if self.list_path else data
        else:
            items = data.get("results") if isinstance(data, dict) else data
        if not isinstance(items, list):
            where = f"at {self.list_path!r}" if self.list_path else "(a list, or an object with a 'results' list)"
            raise RagMetricsError(f"the answer has no list of results {where}: found {type(items).__name__}")
        fields = self.fields
        out = []
        for i, item in enumerate(items):
            where = f"result {i + 1}"
            if isinstance(item, str):
                out.append(Hit(as_doc_id(item, where)))
                continue
            raw = lookup(item, fields["doc_id"]) if "doc_id" in fields else _first(item, "doc_id", "id")
            if raw is None:
                wanted = repr(fields["doc_id"]) if "doc_id" in fields else "'doc_id' or 'id'"
                raise RagMetricsError(f"{where}: no {wanted}")  # what the answer holds is not repeated
            if isinstance(raw, bool) or not isinstance(raw, (str, int)):
                raise RagMetricsError(
                    f"{where}: expected a document id (a string or an integer), found a {type(raw).__name__}"
                )
            score = lookup(item, fields.get("score", "score"))
            text = lookup(item, fields.get("text", "text"))
            source = lookup(item, fields.get("source_doc", "source_doc"))
            try:
                value = as_score(score, where)
            except RagMetricsError:
                raise RagMetricsError(f"{where}: the score is not a finite number") from None
            out.append(
                Hit(
                    as_doc_id(raw, where),
                    value,
                    None if text is None else str(text),
                    None if source is None else str(source),
                )
            )
        return out


def _first(item: Any, *keys: str) -> Any:
    if not isinstance(item, dict):
        return None
    for key in keys:
        if item.get(key) is not None:
            return item[key]
    return None


def _retry_after(value: str | None) -> float | None:
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None
