"""How the sign-in gate names a client for its throttle, and which proxy lists it accepts (dashboard.ui.gate)."""

from __future__ import annotations

import pytest

from dashboard.ui.gate import client_key
from dashboard.ui.signin_config import parse_proxies


def _scope(host: str) -> dict:
    return {"type": "http", "client": (host, 51234)}


def test_an_ipv6_client_counts_by_its_64_so_it_cannot_spread_guesses_over_its_addresses() -> None:
    one, other = client_key(_scope("2001:db8:1:2::1")), client_key(_scope("2001:db8:1:2:ffff:ffff:ffff:ffff"))
    assert one == other == "2001:db8:1:2::/64"
    assert client_key(_scope("2001:db8:1:3::1")) != one  # the next /64 is another client


def test_an_ipv4_client_counts_by_its_address_however_it_is_written() -> None:
    assert client_key(_scope("203.0.113.9")) == "203.0.113.9"
    assert client_key(_scope("::ffff:203.0.113.9")) == "203.0.113.9"  # a dual-stack socket's form of it
    assert client_key(_scope("203.0.113.10")) != "203.0.113.9"
    assert client_key({"type": "http"}) == "?"  # no peer (a test client): one key for all of them


def test_the_trusted_proxies_setting() -> None:
    assert parse_proxies("") == [] and parse_proxies(None) == []
    assert parse_proxies(" 10.0.0.5, 10.1.0.0/16 ,::1") == ["10.0.0.5", "10.1.0.0/16", "::1"]
    assert parse_proxies(["10.0.0.5", "fd00::/8"]) == ["10.0.0.5", "fd00::/8"]  # a TOML list
    assert parse_proxies("*") == ["*"]
    with pytest.raises(ValueError, match=r"'proxy\.lan' is not an IP address or network"):
        parse_proxies("10.0.0.1, proxy.lan")


def test_oidc_opens_streamlit_s_sign_in_routes_exactly() -> None:
    """Was: with OIDC, any path beginning with ``/auth/`` or ``/oauth2callback`` (``/auth/x``,
    ``/oauth2callbackX``) reached the app without sign-in; only Streamlit's own routes are open now."""
    import asyncio
    from types import SimpleNamespace

    from dashboard.ui.gate import SignInGate

    reached: list[str] = []

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        reached.append(scope["path"])

    config = SimpleNamespace(mode="oidc", problem=None, allow=(), provider="default")
    gate = SignInGate(app, read_config=lambda: config)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    for path in (
        "/auth/login",
        "/auth/logout",
        "/oauth2callback",
        "/auth/x",
        "/auth/_stcore/metrics",
        "/oauth2callbackX",
    ):
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "headers": [],
            "query_string": b"",
            "client": ("127.0.0.1", 1),
        }
        asyncio.run(gate(scope, receive, send))
    assert reached == ["/auth/login", "/auth/logout", "/oauth2callback"]
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert statuses == [303, 303, 303]  # each of the others sent to sign in
