"""The sign-in boundary around the whole server: an ASGI middleware in front of every HTTP route and websocket.

Streamlit's ``st.App`` (``dashboard/app.py``) puts :class:`SignInGate` before all of its own routes, so with sign-in
configured (:mod:`dashboard.ui.auth`) nothing of the server answers a client that has not signed in: not the
pages, not the websocket (a resumed session included), not uploads, cache control, media or metrics. What stays
open: this module's own sign-in page and ``/_stcore/health`` (``ok``, for load balancers).

* Password: the gate serves its own sign-in form. A right password sets a cookie naming a new sign-in session,
  HMAC-signed with a key made of the server secret and the password's configuration (a new password signs
  everyone out). The secret is the deployer's (``RAGMETRICS_SIGNIN_SECRET``) or a random one the first server
  stores in the store (:mod:`dashboard.data.signin`), so every server sharing the store accepts the cookie and
  nobody can make one from the password or its hash. A cookie lives at most :data:`SESSION_SECONDS`, whatever it
  claims. Signing out revokes the session in the store: its cookie is refused from then on, by every server
  sharing the store, and a websocket still open with it is closed at its next message.
  Guesses are throttled per client address (an IPv6 client by its /64) across sessions, the address being the
  peer's own: ``X-Forwarded-For`` is read only from the proxies the deployer lists (``RAGMETRICS_TRUSTED_PROXIES``;
  none by default). After 20 failures from anywhere the account is locked too, but only for the addresses that
  failed: a right password from an address that has not failed still gets in. A locked client is refused before
  the password is hashed, and one hash runs at a time, so guessing cannot take the CPU.
* OIDC: Streamlit's own sign-in routes stay open; every other request needs Streamlit's signed user cookie of an
  allowed account.
* Whatever the mode, a ``clear_cache`` message on the websocket is dropped: it would rebuild every cached
  resource of the server (the store's pool, the caches, a new sweeper thread) without releasing the old ones.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import html
import ipaddress
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import streamlit as st
from starlette.requests import cookie_parser

from dashboard.ui.signin_config import PROXIES_ENV, allowed, read_config, read_trusted_proxies

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SIGNIN_PATH = "/_ragmetrics/signin"
SIGNOUT_PATH = "/_ragmetrics/signout"
COOKIE = "ragmetrics_signin"
OPEN_PATHS = frozenset({"/_stcore/health"})
OIDC_PATHS = frozenset({"/auth/login", "/auth/logout", "/oauth2callback"})
"""Streamlit's own sign-in routes (``st.login``), open to a browser not signed in yet: these paths exactly."""


def base_path() -> str:
    """The server's ``server.baseUrlPath`` as a path prefix: "" at the root, else ``/rm`` (every path the gate
    answers, opens and sends a browser to is below it, as Streamlit's own are)."""
    prefix = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{prefix}" if prefix else ""


def _below(path: str, base: str) -> str | None:
    """``path`` as the gate compares it: without ``base`` (``/rm/_stcore/health`` is ``/_stcore/health``); None
    for a path outside it (no route of the gate's or Streamlit's: a browser not signed in is sent to sign in)."""
    if not base:
        return path
    if path == base or path.startswith(base + "/"):
        return path[len(base) :] or "/"
    return None


SESSION_SECONDS = 12 * 3600
"""The longest a sign-in lasts: a cookie claiming a later expiry is refused (after :data:`CLOCK_SKEW`)."""
CLOCK_SKEW = 300  # seconds another server's clock may be ahead of this one's
REVOKED_TTL = 2.0  # seconds between readings of the revoked sign-ins another server may have written
MAX_FORM_BYTES = 4096
MAX_PASSWORD_BYTES = 1024
_LOG = logging.getLogger(__name__)


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

    def known(self, key: str) -> bool:
        """Whether ``key`` failed since its last success (as far as the bounded table remembers)."""
        return key in self._state


def cookie_key(secret: bytes, fingerprint: str) -> bytes:
    """The key sign-in cookies are signed with: the server secret and the password's configuration."""
    return hmac.new(secret, b"ragmetrics-signin\0" + fingerprint.encode(), hashlib.sha256).digest()


def _mac(key: bytes, body: str) -> str:
    return base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest()).decode().rstrip("=")


def make_cookie(key: bytes, now: float | None = None, seconds: float = SESSION_SECONDS) -> str:
    """A signed sign-in cookie value, ``<expiry>.<session id>.<mac>``, for a new sign-in session."""
    expiry = int((time.time() if now is None else now) + seconds)
    body = f"{expiry}.{secrets.token_urlsafe(18)}"
    return f"{body}.{_mac(key, body)}"


def read_cookie(value: str | None, key: bytes, now: float | None = None) -> tuple[str, int] | None:
    """``(session id, expiry)`` of a cookie :func:`make_cookie` signed with ``key``, not expired and not claiming
    to live longer than :data:`SESSION_SECONDS`; None for anything else."""
    if not value or value.count(".") != 2:
        return None
    expiry, session, mac = value.split(".")
    if not hmac.compare_digest(_mac(key, f"{expiry}.{session}").encode(), mac.encode("utf-8", "replace")):
        return None
    now = time.time() if now is None else now
    if not (expiry.isascii() and expiry.isdigit() and len(expiry) <= 12):
        return None
    if not now < int(expiry) <= now + SESSION_SECONDS + CLOCK_SKEW:
        return None
    return session, int(expiry)


def signed_in(value: str | None, fingerprint: str) -> bool:
    """Whether a cookie opens this server's gate under this password configuration (for the app's own check,
    :func:`dashboard.ui.auth.gate`); False when no gate runs in this process."""
    gate = SignInGate.latest
    return gate is not None and gate.session_of(value, fingerprint) is not None


def _cookies(scope: Scope) -> dict[str, str]:
    """The request's cookies, read leniently as browsers send them: another app's malformed cookie on the same
    host is skipped, not a reason to lose the others."""
    headers = [value.decode("latin-1") for name, value in scope.get("headers", []) if name == b"cookie"]
    try:
        return cookie_parser("; ".join(headers))
    except Exception:
        return {}


def client_key(scope: Scope) -> str:
    """What the throttle counts a client by: its address (the peer's, or the one a trusted proxy forwarded), an
    IPv6 address by its /64 (one host holds a whole /64)."""
    host = str((scope.get("client") or ("?", 0))[0])
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _safe_next(target: str) -> str:
    """Where to go after signing in: a path on this server only (never another host), as ASCII (non-ASCII
    characters and control characters percent-encoded, so it fits a header)."""
    try:
        parts = urlsplit(target)
    except ValueError:  # "//[": not an address
        return "/"
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return quote(target, safe="/?&=#%:@!$'()*+,;~[]")


def read_forwarded_headers_only_from_trusted_proxies() -> None:
    """Make the server (uvicorn, under Streamlit) take ``X-Forwarded-For`` and ``X-Forwarded-Proto`` only from the
    proxies :func:`read_trusted_proxies` lists, instead of from every client on 127.0.0.1 (uvicorn's default).

    uvicorn wraps the app in its ``ProxyHeadersMiddleware`` right after importing it, and Streamlit gives no
    setting for it: ``dashboard/app.py`` calls this while it is imported, so uvicorn makes this subclass instead,
    with the deployer's list (uvicorn's own reading of the headers: the client is the nearest address that is
    not a trusted proxy). A list that cannot be read trusts no one (the gate says why, :mod:`dashboard.ui.auth`).
    """
    try:
        import uvicorn.config
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
    except ImportError:  # pragma: no cover - Streamlit's server is uvicorn
        return
    if getattr(uvicorn.config.ProxyHeadersMiddleware, "ragmetrics", False):
        return

    class TrustedProxyHeaders(ProxyHeadersMiddleware):
        ragmetrics = True

        def __init__(self, app: Any, trusted_hosts: Any = None) -> None:
            try:
                proxies = read_trusted_proxies()
            except ValueError as err:
                _LOG.error("%s: %s; trusting no proxy", PROXIES_ENV, err)
                proxies = []
            super().__init__(app, trusted_hosts=proxies)

    uvicorn.config.ProxyHeadersMiddleware = TrustedProxyHeaders  # type: ignore[misc]


_STYLE = (
    "body{font-family:sans-serif;max-width:26rem;margin:12vh auto;padding:0 1rem;color:#262730}"
    "input,button{font-size:1rem;padding:.5rem;width:100%;box-sizing:border-box;margin:.4rem 0}"
    "button{background:#1f77b4;color:#fff;border:0;border-radius:.3rem}.error{color:#c0392b}"
)


SIDEBAR_BUTTON_STYLE = (
    "padding:.25rem .75rem;min-height:2.5rem;border-radius:.5rem;border:1px solid rgba(128,128,128,.35);"
    "background:transparent;color:inherit;font:inherit;cursor:pointer;margin-bottom:.75rem"
)
"""The sign-out button in the app's sidebar drawn like Streamlit's secondary buttons (inline: the app's Markdown
keeps no stylesheet), in the theme's text colour so it reads on a light and a dark sidebar."""


def sign_out_form(before: str = "", *, button_style: str = "") -> str:
    """The sign-out control: a form that POSTs to the gate (a GET only asks, so no link or image on another site
    signs a user out; the cookie is ``SameSite=Lax``, so another site's form arrives without it)."""
    style = f" style='{button_style}'" if button_style else ""
    action = base_path() + SIGNOUT_PATH
    return f"<form method=post action='{action}'>{before}<button type=submit{style}>Sign out</button></form>"


def _same_site(scope: Scope) -> bool:
    """False when the browser says the request came from another site (``Sec-Fetch-Site``), or its ``Origin`` is
    not this server's ``Host``; requests without those headers (not from a browser) pass."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope.get("headers", [])}
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    return origin is None or urlsplit(origin).netloc == headers.get("host", "")


def _page(title: str, body: str) -> bytes:
    """A page of the gate's own (no Streamlit): ``body`` is HTML the caller escaped."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body data-ragmetrics-gate><h1>ragmetrics</h1>{body}</body></html>"
    ).encode()


class StoreUnavailable(Exception):
    """The sign-in's store (its secret, its revoked sessions) cannot be read or written."""


class SignInGate:
    """The ASGI middleware (see the module documentation). ``read_config`` gives the current
    :class:`dashboard.ui.signin_config.AuthConfig` (read again at most every ``config_ttl`` seconds); ``store`` opens the
    sign-in's tables (:class:`dashboard.data.signin.SignInStore` of the configured store by default)."""

    latest: SignInGate | None = None
    """The gate the server made (the app's own sign-in check reads it: :func:`signed_in`)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        read_config: Callable[[], Any] | None = None,
        config_ttl: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        store: Callable[[], Any] | None = None,
    ) -> None:
        self.app = app
        self.base = base_path()  # the server's options are read before the app that builds this
        self._read_config = read_config
        self._config_ttl = config_ttl
        self._clock = clock
        self._config: Any = None
        self._config_at = -math.inf
        self.per_client = Throttle(clock=clock)
        self.account = Throttle(limit=20, lock=30.0, longest=300.0, keys=1, clock=clock)
        self._hashing = asyncio.Semaphore(1)
        self.hashes = 0  # passwords checked (tests read it: a locked client costs none)
        self._open_store = store or _open_signin_store
        self._store: Any = None
        self._stored_secret: bytes | None = None
        self._secret: bytes | None = None  # the secret the cookies are signed with (the deployer's or the store's)
        self._store_lock = asyncio.Lock()
        self._revoked: set[str] = set()  # read from the store every REVOKED_TTL seconds
        self._revoked_at = -math.inf
        self._revoked_here: dict[str, float] = {}  # revoked by this server: {session: expiry}, until it expires
        self.dropped = 0  # clear_cache messages dropped (logs and tests)
        SignInGate.latest = self

    def config(self) -> Any:
        if self._clock() - self._config_at > self._config_ttl:
            if self._read_config is None:
                self._read_config = read_config
            self._config = self._read_config()
            self._config_at = self._clock()
        return self._config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        socket = _Socket(self, receive, send) if scope["type"] == "websocket" else None
        if socket is not None:
            receive, send = socket.receive, socket.send
        path = _below(scope.get("path", ""), self.base)
        if path in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        config = self.config()
        if config.mode == "none":
            await self.app(scope, receive, send)
            return
        if config.problem:
            self._config_at = -math.inf  # read again next time: the deployer may be fixing it
            await self._unavailable(scope, send, config.problem)
            return
        if config.mode == "oidc":
            await self._oidc(scope, receive, send, config)
            return
        try:
            if path == SIGNIN_PATH and scope["type"] == "http":
                await self._signin(scope, receive, send, config)
                return
            if path == SIGNOUT_PATH and scope["type"] == "http":
                if scope.get("method") == "POST" and _same_site(scope):
                    await self._signout(scope, send, config)
                else:  # a link (or another site's form) does not sign anyone out: the page asks first
                    await self._confirm_sign_out(send)
                return
            session = await self._session(scope, config)
        except StoreUnavailable as err:
            await self._unavailable(scope, send, f"The sign-in cannot use the store: {err}")
            return
        if session is not None:
            if socket is not None:
                socket.session = session
            await self.app(scope, receive, send)
            return
        await self._deny(scope, send, 401, "Sign in first.")

    async def _unavailable(self, scope: Scope, send: Send, problem: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "sign-in not available"})
            return
        body = _page("Locked - ragmetrics", f"<p class=error>{html.escape(problem)}</p><p>The deployer must "
                     "fix the configuration; until then the dashboard stays locked.</p>")  # fmt: skip
        await _respond(send, 503, body, [(b"content-type", b"text/html; charset=utf-8")])

    # --- the cookie's secret and the revoked sessions ---------------------------------------------

    async def _in_store(self, work: Callable[[Any], Any]) -> Any:
        """``work(store)`` on a thread (the store is a database), the store opened on first use."""

        def run() -> Any:
            if self._store is None:
                self._store = self._open_store()
            return work(self._store)

        try:
            return await asyncio.to_thread(run)
        except Exception as err:
            _LOG.error("sign-in store: %s", err)
            raise StoreUnavailable(str(err).splitlines()[0] if str(err) else type(err).__name__) from None

    async def _key(self, config: Any) -> bytes:
        """The key of this configuration's cookies: the deployer's secret, else the store's (made on first use)."""
        secret = config.secret.encode() if config.secret else None
        if secret is None:
            if self._stored_secret is None:
                async with self._store_lock:
                    if self._stored_secret is None:
                        self._stored_secret = await self._in_store(lambda store: store.secret())
            secret = self._stored_secret
        self._secret = secret
        return cookie_key(secret, config.fingerprint)

    async def _refresh_revoked(self) -> None:
        if self._clock() - self._revoked_at < REVOKED_TTL:
            return
        async with self._store_lock:
            if self._clock() - self._revoked_at < REVOKED_TTL:
                return
            with contextlib.suppress(StoreUnavailable):  # keep what was read last; this server's own revocations hold
                self._revoked = await self._in_store(lambda store: store.revoked())
            self._revoked_at = self._clock()
        now = time.time()
        self._revoked_here = {s: e for s, e in self._revoked_here.items() if e >= now}

    def _is_revoked(self, session: str) -> bool:
        return session in self._revoked or session in self._revoked_here

    def session_of(self, value: str | None, fingerprint: str) -> str | None:
        """The sign-in session a cookie opens, by what this gate knows now (no store access); None when none."""
        if self._secret is None or not fingerprint:
            return None
        found = read_cookie(value, cookie_key(self._secret, fingerprint))
        return None if found is None or self._is_revoked(found[0]) else found[0]

    async def _session(self, scope: Scope, config: Any) -> str | None:
        """The signed-in session of the request's cookie, when it is valid and not revoked."""
        found = read_cookie(_cookies(scope).get(COOKIE), await self._key(config))
        if found is None:
            return None
        await self._refresh_revoked()
        return None if self._is_revoked(found[0]) else found[0]

    async def _signout(self, scope: Scope, send: Send, config: Any) -> None:
        """Revoke the cookie's session (in the store: every server refuses it), clear the cookie, ask again."""
        found = read_cookie(_cookies(scope).get(COOKIE), await self._key(config))
        if found is not None:
            session, expiry = found
            self._revoked_here[session] = float(expiry)
            with contextlib.suppress(StoreUnavailable):  # this server refuses it still; the error is logged
                await self._in_store(lambda store: store.revoke(session, expiry))
        await self._redirect(send, self.base + SIGNIN_PATH, clear=True)

    async def _confirm_sign_out(self, send: Send) -> None:
        body = _page("Sign out - ragmetrics", sign_out_form("<p>Sign out of this dashboard?</p>"))
        await _respond(
            send, 200, body, [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
        )

    # --- password ----------------------------------------------------------------------------

    async def _signin(self, scope: Scope, receive: Receive, send: Send, config: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        target = _safe_next(query.get("next", [self.base + "/"])[0])
        if scope.get("method") != "POST":
            await self._form(send, target)
            return
        body = await _read_body(receive, MAX_FORM_BYTES)
        form = parse_qs(body.decode("utf-8", "replace")) if body is not None else {}
        password = form.get("password", [""])[0]
        target = _safe_next(form.get("next", [target])[0])
        client = client_key(scope)
        wait = self.per_client.wait(client)
        if self.per_client.known(client):  # the account's lock holds for the addresses that failed, not for a new one
            wait = max(wait, self.account.wait("account"))
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
            cookie = make_cookie(await self._key(config))
            await self._redirect(send, target, cookie=cookie, secure=scope.get("scheme") == "https")
            return
        self.per_client.failed(client)
        self.account.failed("account")
        await self._form(send, target, "Wrong password.", status=401)

    async def _form(self, send: Send, target: str, error: str = "", status: int = 200) -> None:
        message = f"<p class=error role=alert>{html.escape(error)}</p>" if error else ""
        body = _page(
            "Sign in - ragmetrics",
            f"<p>This dashboard requires sign-in.</p>{message}<form method=post "
            f"action='{self.base}{SIGNIN_PATH}?next={html.escape(quote(target, safe=''), quote=True)}'>"
            f"<input type=hidden name=next value='{html.escape(target, quote=True)}'>"
            "<label>Password<input type=password name=password autocomplete=current-password autofocus required>"
            "</label><button type=submit>Sign in</button></form>",
        )
        await _respond(send, status, body, [(b"content-type", b"text/html; charset=utf-8")])

    # --- OIDC --------------------------------------------------------------------------------

    async def _oidc(self, scope: Scope, receive: Receive, send: Send, config: Any) -> None:
        path = _below(scope.get("path", ""), self.base)
        if path in OIDC_PATHS:
            await self.app(scope, receive, send)
            return
        user = _streamlit_user(scope)
        if user and user.get("is_logged_in"):
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
            await self._redirect(send, f"{self.base}{SIGNIN_PATH}?next={quote(_safe_next(target), safe='')}")
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


class _Socket:
    """One websocket seen through the gate: ``clear_cache`` messages are dropped, and once its sign-in session
    is revoked the socket is closed at its next message (the app sees the client leave)."""

    def __init__(self, gate: SignInGate, receive: Receive, send: Send) -> None:
        self._gate, self._receive, self._send = gate, receive, send
        self.session: str | None = None
        self.closed = False

    async def receive(self) -> Message:
        while True:
            message = await self._receive()
            if message["type"] != "websocket.receive":
                return message
            if self.session is not None:
                await self._gate._refresh_revoked()
                if self._gate._is_revoked(self.session):
                    await self.send({"type": "websocket.close", "code": 1008, "reason": "signed out"})
                    self.closed = True
                    return {"type": "websocket.disconnect", "code": 1008}
            if _is_clear_cache(message.get("bytes")):
                self._gate.dropped += 1
                continue
            return message

    async def send(self, message: Message) -> None:
        if not self.closed:
            await self._send(message)


def _is_clear_cache(data: bytes | None) -> bool:
    """Whether a websocket message is Streamlit's ``BackMsg`` asking to clear every cache of the server."""
    if not data:
        return False
    from streamlit.proto.BackMsg_pb2 import BackMsg

    try:
        return BackMsg.FromString(data).WhichOneof("type") == "clear_cache"
    except Exception:  # not a BackMsg: Streamlit deals with it
        return False


def _open_signin_store() -> Any:
    from dashboard.data.signin import SignInStore
    from dashboard.ui.cache import store_url

    return SignInStore(store_url())


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None when it is larger than ``limit`` (reading stops there)."""
    chunks: list[bytes] = []
    size = 0
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
