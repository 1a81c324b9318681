"""The sign-in boundary around the whole server: an ASGI middleware in front of every HTTP route and websocket.

Streamlit's ``st.App`` (``dashboard/app.py``) puts :class:`SignInGate` before all of its own routes, so with sign-in
configured (:mod:`dashboard.ui.auth`) nothing of the server answers a client that has not signed in: not the
pages, not the websocket (a resumed session included), not uploads, cache control, media or metrics. What stays
open: this module's own sign-in page and ``/_stcore/health`` (``ok``, for load balancers).

* Password: the gate serves its own sign-in form. A right password sets an HMAC-signed cookie (keyed by the
  password's configuration, so every server sharing it accepts it and a new password signs everyone out).
  Guesses are throttled per client address and for the account as a whole, across sessions; a locked client
  is refused before the password is hashed, and one hash runs at a time, so guessing cannot take the CPU.
* OIDC: Streamlit's own sign-in routes stay open; every other request needs Streamlit's signed user cookie of an
  allowed account.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import html
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SIGNIN_PATH = "/_ragmetrics/signin"
SIGNOUT_PATH = "/_ragmetrics/signout"
COOKIE = "ragmetrics_signin"
OPEN_PATHS = frozenset({"/_stcore/health"})
OIDC_PATHS = ("/auth/", "/oauth2callback")
SESSION_SECONDS = 12 * 3600
MAX_FORM_BYTES = 4096
MAX_PASSWORD_BYTES = 1024


@dataclass
class Throttle:
    """Failed sign-ins per key (a client address, or the account): after ``limit`` failures the key is locked,
    ``lock`` seconds the first time and twice as long each time after, up to ``longest``; a success clears it.
    At most ``keys`` addresses are remembered (the oldest forgotten first), so the table is bounded."""

    limit: int = 5
    lock: float = 30.0
    longest: float = 900.0
    keys: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _state: OrderedDict[str, tuple[int, float, int]] = field(default_factory=OrderedDict)  # failures, until, locks

    def wait(self, key: str) -> float:
        """Seconds ``key`` must still wait (0: it may try)."""
        until = self._state.get(key, (0, 0.0, 0))[1]
        return max(0.0, until - self.clock())

    def failed(self, key: str) -> None:
        failures, until, locks = self._state.pop(key, (0, 0.0, 0))
        failures += 1
        if failures >= self.limit:
            until = self.clock() + min(self.longest, self.lock * 2**locks)
            failures, locks = 0, locks + 1
        self._state[key] = (failures, until, locks)
        while len(self._state) > self.keys:
            self._state.popitem(last=False)

    def passed(self, key: str) -> None:
        self._state.pop(key, None)


def _cookie_key(fingerprint: str) -> bytes:
    return hashlib.sha256(b"ragmetrics-signin\0" + fingerprint.encode()).digest()


def make_cookie(fingerprint: str, now: float | None = None) -> str:
    """A signed sign-in cookie value: ``<expiry>.<nonce>.<mac>``."""
    expiry = int((time.time() if now is None else now) + SESSION_SECONDS)
    body = f"{expiry}.{secrets.token_urlsafe(12)}"
    mac = hmac.new(_cookie_key(fingerprint), body.encode(), hashlib.sha256).digest()
    return f"{body}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"


def cookie_valid(value: str | None, fingerprint: str, now: float | None = None) -> bool:
    """True for a cookie :func:`make_cookie` made under this password configuration, not yet expired."""
    if not value or not fingerprint or value.count(".") != 2:
        return False
    expiry, nonce, mac = value.split(".")
    body = f"{expiry}.{nonce}"
    want = base64.urlsafe_b64encode(hmac.new(_cookie_key(fingerprint), body.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(want.decode().rstrip("="), mac):
        return False
    return expiry.isdigit() and int(expiry) > (time.time() if now is None else now)


def _cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:
                continue
    return {key: morsel.value for key, morsel in jar.items()}


def _safe_next(target: str) -> str:
    """Where to go after signing in: a path on this server only (never another host)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


_STYLE = (
    "body{font-family:sans-serif;max-width:26rem;margin:12vh auto;padding:0 1rem;color:#262730}"
    "input,button{font-size:1rem;padding:.5rem;width:100%;box-sizing:border-box;margin:.4rem 0}"
    "button{background:#1f77b4;color:#fff;border:0;border-radius:.3rem}.error{color:#c0392b}"
)


def _page(title: str, body: str) -> bytes:
    """A page of the gate's own (no Streamlit): ``body`` is HTML the caller escaped."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body data-ragmetrics-gate><h1>ragmetrics</h1>{body}</body></html>"
    ).encode()


class SignInGate:
    """The ASGI middleware (see the module documentation). ``read_config`` gives the current
    :class:`dashboard.ui.auth.AuthConfig` (read again at most every ``config_ttl`` seconds)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        read_config: Callable[[], Any] | None = None,
        config_ttl: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self._read_config = read_config
        self._config_ttl = config_ttl
        self._clock = clock
        self._config: Any = None
        self._config_at = -math.inf
        self.per_client = Throttle(clock=clock)
        self.account = Throttle(limit=20, lock=30.0, longest=300.0, keys=1, clock=clock)
        self._hashing = asyncio.Semaphore(1)
        self.hashes = 0  # passwords checked (tests read it: a locked client costs none)

    def config(self) -> Any:
        if self._clock() - self._config_at > self._config_ttl:
            if self._read_config is None:
                from dashboard.ui.auth import read_config

                self._read_config = read_config
            self._config = self._read_config()
            self._config_at = self._clock()
        return self._config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        config = self.config()
        if config.mode == "none":
            await self.app(scope, receive, send)
            return
        if config.problem:
            self._config_at = -math.inf  # read again next time: the deployer may be fixing it
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": "sign-in not available"})
                return
            body = _page("Locked - ragmetrics", f"<p class=error>{html.escape(config.problem)}</p><p>The deployer must "
                         "fix the configuration; until then the dashboard stays locked.</p>")  # fmt: skip
            await _respond(send, 503, body, [(b"content-type", b"text/html; charset=utf-8")])
            return
        if config.mode == "oidc":
            await self._oidc(scope, receive, send, config)
            return
        if path == SIGNIN_PATH and scope["type"] == "http":
            await self._signin(scope, receive, send, config)
            return
        if path == SIGNOUT_PATH and scope["type"] == "http":
            await self._redirect(send, SIGNIN_PATH, clear=True)
            return
        if cookie_valid(_cookies(scope).get(COOKIE), config.fingerprint):
            await self.app(scope, receive, send)
            return
        await self._deny(scope, send, 401, "Sign in first.")

    # --- password ----------------------------------------------------------------------------

    async def _signin(self, scope: Scope, receive: Receive, send: Send, config: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        target = _safe_next(query.get("next", ["/"])[0])
        if scope.get("method") != "POST":
            await self._form(send, target)
            return
        body = await _read_body(receive, MAX_FORM_BYTES)
        form = parse_qs(body.decode("utf-8", "replace")) if body is not None else {}
        password = form.get("password", [""])[0]
        target = _safe_next(form.get("next", [target])[0])
        client = (scope.get("client") or ("?", 0))[0]
        wait = max(self.per_client.wait(client), self.account.wait("account"))
        if wait > 0:
            await self._form(send, target, f"Too many wrong passwords. Try again in {math.ceil(wait)} s.", status=429)
            return
        if body is None or not password or len(password.encode()) > MAX_PASSWORD_BYTES:
            self.per_client.failed(client)  # not well formed: refused without hashing, but counted
            await self._form(send, target, "Wrong password.", status=401)
            return
        async with self._hashing:  # one hash at a time: guessing never takes more than one core
            self.hashes += 1
            right = await asyncio.to_thread(config.check, password)
        if right:
            self.per_client.passed(client)
            await self._redirect(
                send, target, cookie=make_cookie(config.fingerprint), secure=scope.get("scheme") == "https"
            )
            return
        self.per_client.failed(client)
        self.account.failed("account")
        await self._form(send, target, "Wrong password.", status=401)

    async def _form(self, send: Send, target: str, error: str = "", status: int = 200) -> None:
        message = f"<p class=error role=alert>{html.escape(error)}</p>" if error else ""
        body = _page(
            "Sign in - ragmetrics",
            f"<p>This dashboard requires sign-in.</p>{message}<form method=post "
            f"action='{SIGNIN_PATH}?next={html.escape(quote(target, safe=''), quote=True)}'>"
            f"<input type=hidden name=next value='{html.escape(target, quote=True)}'>"
            "<label>Password<input type=password name=password autocomplete=current-password autofocus required>"
            "</label><button type=submit>Sign in</button></form>",
        )
        await _respond(send, status, body, [(b"content-type", b"text/html; charset=utf-8")])

    # --- OIDC --------------------------------------------------------------------------------

    async def _oidc(self, scope: Scope, receive: Receive, send: Send, config: Any) -> None:
        path = scope.get("path", "")
        if path.startswith(OIDC_PATHS):
            await self.app(scope, receive, send)
            return
        user = _streamlit_user(scope)
        if user and user.get("is_logged_in"):
            from dashboard.ui.auth import allowed

            if allowed(str(user.get("email") or ""), config.allow, user.get("email_verified")):
                await self.app(scope, receive, send)
                return
            await self._deny(scope, send, 403, "This account may not open this dashboard.")
            return
        if path == SIGNIN_PATH and scope["type"] == "http":
            from streamlit.user_info import generate_login_redirect_url

            # Streamlit's own login address (a signed, short-lived provider token), as st.login makes it
            login = generate_login_redirect_url(config.provider or "default")
            body = _page(
                "Sign in - ragmetrics",
                f"<p>This dashboard requires sign-in.</p><p><a href='{html.escape(login, quote=True)}'>"
                "<button type=button>Sign in</button></a></p>",
            )
            await _respond(send, 200, body, [(b"content-type", b"text/html; charset=utf-8")])
            return
        await self._deny(scope, send, 401, "Sign in first.")

    # --- answers -----------------------------------------------------------------------------

    async def _deny(self, scope: Scope, send: Send, status: int, text: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "sign-in required"})
            return
        if scope.get("method") in ("GET", "HEAD") and status == 401:
            target = scope.get("path", "/") + (
                "?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else ""
            )
            await self._redirect(send, f"{SIGNIN_PATH}?next={quote(_safe_next(target), safe='')}")
            return
        await _respond(send, status, text.encode(), [(b"content-type", b"text/plain; charset=utf-8")])

    async def _redirect(
        self, send: Send, location: str, *, cookie: str | None = None, clear: bool = False, secure: bool = False
    ) -> None:
        headers = [(b"location", location.encode("latin-1")), (b"cache-control", b"no-store")]
        if cookie is not None:
            flags = "; Secure" if secure else ""
            headers.append(
                (
                    b"set-cookie",
                    f"{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Lax; Max-Age={SESSION_SECONDS}{flags}".encode(),
                )
            )
        if clear:
            headers.append((b"set-cookie", f"{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0".encode()))
        await _respond(send, 303, b"", headers)


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None when it is larger than ``limit`` (reading stops there)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _streamlit_user(scope: Scope) -> dict[str, Any] | None:
    """The signed-in user Streamlit's OIDC login put in its signed cookie (None when absent or forged), read
    with Streamlit's own decoder (``streamlit==1.67``, pinned)."""
    import json

    try:
        from streamlit.web.server.starlette.starlette_websocket import _get_signed_cookie_with_chunks
    except ImportError:  # pragma: no cover - another Streamlit: refuse rather than guess
        return None
    try:
        raw = _get_signed_cookie_with_chunks(_cookies(scope), "_streamlit_user")
        payload = json.loads(raw) if raw else None
    except Exception:
        return None
    return payload if isinstance(payload, dict) else None
