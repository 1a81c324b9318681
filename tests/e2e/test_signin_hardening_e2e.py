"""The sign-in gate against a red team, on real ``streamlit run`` servers on 127.0.0.1 with a shared password.

* The cookie is keyed by a random server secret (kept in the store, so servers sharing a store accept each
  other's cookies): a cookie minted from the password hash alone is refused, and so is one that claims a life
  longer than the server gives, even signed with the secret.
* Sign-out revokes the sign-in in the store: the old cookie opens neither a page, the metrics nor the websocket,
  on this server or on another one sharing the store, and a websocket still open with it is closed.
* ``X-Forwarded-For`` is read only from the proxies the deployer lists (none by default): invented addresses all
  count as the real peer's, and the account-wide lock never keeps out a right password from a new address.
* A ``clear_cache`` message (Streamlit's websocket ``BackMsg``) is refused: threads and memory stay flat.
* A non-ASCII ``next`` address and another app's malformed cookie are handled.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.client
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.e2e.server import streamlit_server
from tests.e2e.test_gate_e2e import _in_own_loop, _rss_mib, _websocket

pytestmark = pytest.mark.e2e

PASSWORD = "hardened gate pass phrase"
HASHED = hashlib.sha256(PASSWORD.encode()).hexdigest()  # 64 hex digits: a hash mode whose checks cost no time
COOKIE = "ragmetrics_signin"
TEN_YEARS = 10 * 365 * 86400


def _env(**extra: str) -> dict[str, str]:
    return {
        "RAGMETRICS_PASSWORD_HASH": HASHED,
        "RAGMETRICS_PASSWORD": "",
        "RAGMETRICS_AUTH": "",
        "RAGMETRICS_SAMPLES": "off",
        "RAGMETRICS_SIGNIN_SECRET": "",
        "RAGMETRICS_TRUSTED_PROXIES": "",
        **extra,
    }


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("signin-store")


@pytest.fixture(scope="module")
def server(shared_store: Path) -> Iterator[str]:
    with streamlit_server(env=_env(), data_dir=shared_store) as base:
        yield base


@pytest.fixture(scope="module")
def twin(shared_store: Path, server: str) -> Iterator[str]:
    """A second server on the same store (started after the first one made the store's secret)."""
    with streamlit_server(env=_env(), data_dir=shared_store) as base:
        yield base


def _request(
    base: str, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, source: str = ""
) -> tuple[int, dict[str, str], bytes]:
    """One request on a new connection; ``source``: the loopback address it comes from (127.0.0.0/8 is all ours)."""
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=30, source_address=(source, 0) if source else None
    )
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def _sign_in(
    base: str, password: str = PASSWORD, *, next_: str = "/", headers: dict[str, str] | None = None, source: str = ""
) -> tuple[int, str | None, dict[str, str]]:
    """POST the gate's form as a new client: (status, the sign-in cookie or None, the answer's headers)."""
    body = urllib.parse.urlencode({"password": password, "next": next_}).encode()
    status, answer, _ = _request(
        base,
        "POST",
        "/_ragmetrics/signin",
        body,
        {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
        source,
    )
    cookie = answer.get("set-cookie", "")
    value = cookie.split(";", 1)[0].split("=", 1)[1] if cookie.startswith(COOKIE + "=") else None
    return status, value, answer


def _opens(base: str, cookie: str) -> bool:
    """Whether the cookie opens the server's metrics (a route only a signed-in client reaches)."""
    status, _, _ = _request(base, "GET", "/_stcore/metrics", headers={"Cookie": f"{COOKIE}={cookie}"})
    return status == 200


def _ws(base: str, cookie: str) -> str:
    return _in_own_loop(_websocket(base, {"Cookie": f"{COOKIE}={cookie}"}))


def _old_style_cookie(password_configuration: str, expiry: int) -> str:
    """A cookie as anyone could mint it before: keyed by the password's configuration alone, no server secret."""
    fingerprint = hashlib.sha256(b"ragmetrics-auth\0" + password_configuration.encode()).hexdigest()
    key = hashlib.sha256(b"ragmetrics-signin\0" + fingerprint.encode()).digest()
    body = f"{expiry}.{secrets.token_urlsafe(12)}"
    import base64

    mac = base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest()).decode().rstrip("=")
    return f"{body}.{mac}"


# --- the cookie's key and life ---------------------------------------------------------------------


def test_a_cookie_minted_from_the_password_hash_alone_is_refused(server: str) -> None:
    forged = _old_style_cookie(HASHED, int(time.time()) + TEN_YEARS)
    assert not _opens(server, forged)
    assert _ws(server, forged) == "refused 403"
    status, good, _ = _sign_in(server)
    assert status == 303 and good is not None
    assert _opens(server, good) and _ws(server, good) == "open"


def test_with_a_clear_password_a_cookie_minted_from_the_password_is_refused(tmp_path: Path) -> None:
    """Before, the key was a function of the password alone: a captured cookie let anyone test guesses offline,
    and the password made cookies of any life."""
    env = _env(RAGMETRICS_PASSWORD_HASH="", RAGMETRICS_PASSWORD=PASSWORD)
    with streamlit_server(env=env, data_dir=tmp_path) as base:
        forged = _old_style_cookie(PASSWORD, int(time.time()) + TEN_YEARS)
        assert not _opens(base, forged) and _ws(base, forged) == "refused 403"
        status, good, _ = _sign_in(base)
        assert status == 303 and good is not None and _opens(base, good)


def test_servers_sharing_a_store_share_the_secret_and_another_store_does_not(server: str, twin: str) -> None:
    _, good, _ = _sign_in(server)
    assert good is not None and _opens(twin, good)  # the secret generated on the first start, kept in the store
    with streamlit_server(env=_env()) as stranger:  # its own store: its own secret
        assert not _opens(stranger, good)


def test_a_cookie_claiming_a_ten_year_life_is_refused_even_signed_with_the_secret(tmp_path: Path) -> None:
    from dashboard.ui.gate import cookie_key, make_cookie
    from dashboard.ui.signin_config import _fingerprint

    secret = secrets.token_urlsafe(32)
    key = cookie_key(secret.encode(), _fingerprint(HASHED))
    with streamlit_server(env=_env(RAGMETRICS_SIGNIN_SECRET=secret), data_dir=tmp_path) as base:
        assert _opens(base, make_cookie(key))  # the deployer's secret keys the cookies
        assert not _opens(base, make_cookie(key, seconds=TEN_YEARS))
        assert _ws(base, make_cookie(key, seconds=TEN_YEARS)) == "refused 403"
        assert not _opens(base, make_cookie(key, now=time.time() - 13 * 3600))  # expired
    # a secret too short to be one, or a proxy list that is not one, locks the dashboard and says why
    for setting, value in (
        ("RAGMETRICS_SIGNIN_SECRET", "short"),
        ("RAGMETRICS_TRUSTED_PROXIES", "10.0.0.1, proxy.lan"),
    ):
        with streamlit_server(env=_env(**{setting: value})) as broken:
            status, _, body = _request(broken, "GET", "/_ragmetrics/signin")
            assert status == 503 and setting.encode() in body and b"Traceback" not in body, body


# --- sign-out ----------------------------------------------------------------------------------------


async def _open_socket_closed_by_sign_out(base: str, cookie: str) -> str:
    """Open a websocket with ``cookie``, sign out (another connection), then send a message on the old socket."""
    url = base.replace("http://", "ws://") + "/_stcore/stream"
    async with websockets.connect(url, additional_headers={"Cookie": f"{COOKIE}={cookie}"}, open_timeout=15) as ws:
        status, answer, _ = await asyncio.to_thread(
            _request, base, "POST", "/_ragmetrics/signout", b"", {"Cookie": f"{COOKIE}={cookie}"}
        )
        assert status == 303 and "Max-Age=0" in answer.get("set-cookie", "")
        heartbeat = BackMsg()
        heartbeat.app_heartbeat = True
        try:
            await ws.send(heartbeat.SerializeToString())
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                await asyncio.wait_for(ws.recv(), timeout=15)
        except websockets.ConnectionClosed as closed:
            return f"closed {closed.rcvd.code if closed.rcvd else None}"
        return "still open"


def test_sign_out_revokes_the_cookie_on_every_server_sharing_the_store(server: str, twin: str) -> None:
    _, cookie, _ = _sign_in(server)
    assert cookie is not None
    # a link (GET) only asks, and another site's form (its browser says so) is asked again: neither signs out
    for method, cross_site in (
        ("GET", {}),
        ("POST", {"Sec-Fetch-Site": "cross-site"}),
        ("POST", {"Origin": "https://elsewhere.example"}),
    ):
        status, answer, body = _request(
            server, method, "/_ragmetrics/signout", b"", {"Cookie": f"{COOKIE}={cookie}", **cross_site}
        )
        assert status == 200 and b"<form method=post" in body and "set-cookie" not in answer, (method, cross_site)
        assert _opens(server, cookie), (method, cross_site)
    assert cookie is not None and _opens(server, cookie) and _opens(twin, cookie) and _ws(twin, cookie) == "open"
    assert _in_own_loop(_open_socket_closed_by_sign_out(server, cookie)) == "closed 1008"
    assert not _opens(server, cookie)
    assert _ws(server, cookie) == "refused 403"
    status, answer, _ = _request(server, "GET", "/", headers={"Cookie": f"{COOKIE}={cookie}"})
    assert status == 303 and answer["location"].startswith("/_ragmetrics/signin")
    deadline = time.monotonic() + 10  # the other server reads the revocations from the store every few seconds
    while _opens(twin, cookie) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _opens(twin, cookie) and _ws(twin, cookie) == "refused 403"
    _, again, _ = _sign_in(server)  # a new sign-in is a new session, not revoked
    assert again is not None and _opens(server, again)


def test_on_a_postgresql_store_the_secret_and_the_sign_outs_are_shared(postgres_url: str) -> None:
    import uuid

    import sqlalchemy as sa

    name = "signin" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    with streamlit_server(env=_env(), store_url=url) as first, streamlit_server(env=_env(), store_url=url) as second:
        cookies = [_sign_in(base)[1] for base in (first, second)]  # each server's first need of the secret
        assert all(c is not None and _opens(first, c) and _opens(second, c) for c in cookies)
        status, _, _ = _request(second, "POST", "/_ragmetrics/signout", headers={"Cookie": f"{COOKIE}={cookies[0]}"})
        assert status == 303 and not _opens(second, cookies[0])
        deadline = time.monotonic() + 10
        while _opens(first, cookies[0]) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _opens(first, cookies[0]) and _ws(first, cookies[0]) == "refused 403"
        assert _opens(first, cookies[1]) and _opens(second, cookies[1])  # the other sign-in goes on


# --- forwarded addresses and the throttles ----------------------------------------------------------


@pytest.fixture
def throttled(tmp_path: Path) -> Iterator[str]:
    """A server of its own: the throttles' state belongs to one test."""
    with streamlit_server(env=_env(), data_dir=tmp_path) as base:
        yield base


def test_spoofed_forwarded_addresses_do_not_spread_guesses_or_lock_out_the_right_password(throttled: str) -> None:
    answers = [
        _sign_in(throttled, "wrong", headers={"X-Forwarded-For": f"10.{i // 250}.{i % 250}.7"})[0] for i in range(300)
    ]
    assert answers.count(401) == 5 and answers.count(429) == 295  # every guess counted as 127.0.0.1's
    assert _sign_in(throttled, source="127.0.0.1")[0] == 429  # that address waits, even with the password
    status, cookie, _ = _sign_in(throttled, source="127.0.0.2")  # a new address is let in
    assert status == 303 and cookie is not None and _opens(throttled, cookie)


def test_the_account_lock_does_not_keep_out_a_right_password_from_a_new_address(throttled: str) -> None:
    for host in range(10, 14):  # 20 wrong guesses from four real addresses: the account locks
        assert [_sign_in(throttled, "wrong", source=f"127.0.0.{host}")[0] for _ in range(5)] == [401] * 5
    assert _sign_in(throttled, "wrong", source="127.0.0.20")[0] == 401  # a new address is still checked
    assert _sign_in(throttled, source="127.0.0.20")[0] == 429  # but one that failed waits out the account's lock
    status, cookie, _ = _sign_in(throttled, source="127.0.0.21")
    assert status == 303 and cookie is not None


def test_forwarded_addresses_are_read_from_the_configured_proxy_only(tmp_path: Path) -> None:
    proxy = "127.0.0.3"  # the deployer's proxy; 127.0.0.1 is then just another client
    with streamlit_server(env=_env(RAGMETRICS_TRUSTED_PROXIES=proxy), data_dir=tmp_path) as base:
        for _ in range(5):
            assert _sign_in(base, "wrong", headers={"X-Forwarded-For": "203.0.113.9"}, source=proxy)[0] == 401
        assert _sign_in(base, headers={"X-Forwarded-For": "203.0.113.9"}, source=proxy)[0] == 429  # that client waits
        # another client behind the same proxy is not locked out; what a client prepends is not trusted
        assert _sign_in(base, headers={"X-Forwarded-For": "203.0.113.9, 198.51.100.4"}, source=proxy)[0] == 303
        # a peer that is not the proxy cannot claim to forward for anyone: its own address is counted
        for i in range(5):
            assert _sign_in(base, "wrong", headers={"X-Forwarded-For": f"192.0.2.{i}"}, source="127.0.0.1")[0] == 401
        assert _sign_in(base, headers={"X-Forwarded-For": "192.0.2.99"}, source="127.0.0.1")[0] == 429


# --- clear_cache ---------------------------------------------------------------------------------


def _threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


async def _rerun_and_clear(base: str, cookie: str, rounds: int) -> list[tuple[int, float]]:
    """Run the app, then ``rounds`` times: send ``clear_cache`` and run it again; (threads, RSS MiB) after each run."""
    url = base.replace("http://", "ws://") + "/_stcore/stream"
    pid = base.pid  # type: ignore[attr-defined]
    samples = []
    async with websockets.connect(
        url, additional_headers={"Cookie": f"{COOKIE}={cookie}"}, subprotocols=["streamlit"], open_timeout=15,
        max_size=None,
    ) as ws:  # fmt: skip

        async def run() -> None:
            rerun = BackMsg()
            rerun.rerun_script.query_string = ""
            rerun.rerun_script.page_script_hash = ""
            await ws.send(rerun.SerializeToString())
            while True:
                message = ForwardMsg.FromString(await asyncio.wait_for(ws.recv(), timeout=60))
                if message.WhichOneof("type") == "script_finished":
                    return

        await run()
        for _ in range(rounds + 1):
            samples.append((_threads(pid), _rss_mib(pid)))
            clear = BackMsg()
            clear.clear_cache = True
            await ws.send(clear.SerializeToString())
            await run()
    return samples


@pytest.mark.parametrize(
    ("rounds", "password"),
    [
        pytest.param(10, True, id="10"),
        pytest.param(10, False, id="10-without-sign-in"),
        pytest.param(100, True, id="100", marks=pytest.mark.soak),
    ],
)
def test_clear_cache_messages_leave_threads_and_memory_flat(tmp_path: Path, rounds: int, password: bool) -> None:
    env = _env(RAGMETRICS_SAMPLES="") if password else _env(RAGMETRICS_SAMPLES="", RAGMETRICS_PASSWORD_HASH="")
    with streamlit_server(env=env, data_dir=tmp_path) as base:
        cookie = _sign_in(base)[1] if password else "none"
        assert cookie is not None
        samples = _in_own_loop(_rerun_and_clear(base, cookie, rounds))  # type: ignore[arg-type]
    (threads_first, rss_first), (threads_last, rss_last) = samples[0], samples[-1]
    assert threads_last <= threads_first + 2, samples
    assert rss_last <= rss_first + 100, samples


def test_clear_cache_messages_leave_the_postgresql_connections_flat(postgres_url: str) -> None:
    import uuid

    import sqlalchemy as sa

    name = "clear" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def connections() -> int:
        with admin.connect() as conn:
            query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name")
            return int(conn.execute(query, {"name": name}).scalar_one())

    try:
        url = postgres_url.rsplit("/", 1)[0] + "/" + name
        with streamlit_server(env=_env(), store_url=url) as base:
            _, cookie, _ = _sign_in(base)
            assert cookie is not None
            _in_own_loop(_rerun_and_clear(base, cookie, 0))  # type: ignore[arg-type]
            before = connections()
            _in_own_loop(_rerun_and_clear(base, cookie, 10))  # type: ignore[arg-type]
            assert connections() <= before, (before, connections())
    finally:
        admin.dispose()


# --- odd input ------------------------------------------------------------------------------------


def test_a_non_ascii_next_address_signs_in_and_comes_back(server: str) -> None:
    target = "/overview?q=日本語&x=ü"
    status, cookie, answer = _sign_in(server, next_=target)
    assert status == 303 and cookie is not None
    assert urllib.parse.unquote(answer["location"]) == target
    status, _, body = _request(server, "GET", "/_ragmetrics/signin?next=" + urllib.parse.quote(target))
    assert status == 200 and b"name=password" in body
    status, answer, _ = _request(server, "GET", urllib.parse.quote("/日本?q=é"))
    assert status == 303 and answer["location"].startswith("/_ragmetrics/signin?next=")
    # a next address urlsplit cannot read ("//[": an unclosed IPv6 host) goes home
    status, _, answer = _sign_in(server, next_="//[::1")
    assert status == 303 and answer["location"] == "/"
    # a next address that is not UTF-8 (the form's bytes as a client sent them): not a server error
    body = urllib.parse.urlencode({"password": PASSWORD}).encode() + b"&next=/%FF%FE%0D%0ALocation:%20//evil"
    status, answer, _ = _request(
        server, "POST", "/_ragmetrics/signin", body, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert status == 303 and answer["location"].startswith("/") and "\n" not in answer["location"]


@pytest.mark.parametrize(
    "foreign",
    [
        'other_app="unterminated',
        "other_app=has space",
        "other_app=a\\b",
        "=nameless",
        "other_app",
    ],
)
def test_another_apps_malformed_cookie_does_not_hide_the_sign_in(server: str, foreign: str) -> None:
    _, cookie, _ = _sign_in(server)
    assert cookie is not None
    for header in (f"{foreign}; {COOKIE}={cookie}", f"{COOKIE}={cookie}; {foreign}"):
        status, _, _ = _request(server, "GET", "/_stcore/metrics", headers={"Cookie": header})
        assert status == 200, header
        assert _in_own_loop(_websocket(server, {"Cookie": header})) == "open"
