"""The server under attack, sign-in on: raw HTTP and websocket clients on 127.0.0.1 against a real server.

Nothing of the server answers a client that has not signed in (pages, static files, metrics, uploads, the
websocket, a resumed session), and password guesses are throttled per client across sessions, refused before
the password is hashed, so a guessing client neither gets in nor takes the CPU from a signed-in user.
"""

from __future__ import annotations

import asyncio
import http.client
import statistics
import threading
import time
import urllib.parse
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from dashboard.ui.gate import COOKIE, SESSION_SECONDS, make_cookie
from dashboard.ui.signin_config import hash_password
from tests.e2e.server import streamlit_server

pytestmark = pytest.mark.e2e

PASSWORD = "gate e2e pass phrase"
HASHED = hash_password(PASSWORD)  # PBKDF2, 600,000 iterations: what a deployment stores


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    env = {
        "RAGMETRICS_PASSWORD_HASH": HASHED,
        "RAGMETRICS_PASSWORD": "",
        "RAGMETRICS_AUTH": "",
        "RAGMETRICS_SAMPLES": "off",
    }
    with streamlit_server(env=env) as base:
        yield base


def _request(base: str, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None):
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _sign_in(base: str, password: str = PASSWORD) -> tuple[int, str | None]:
    """POST the gate's form as a new client (a new connection, no cookie): (status, the sign-in cookie)."""
    body = urllib.parse.urlencode({"password": password, "next": "/"}).encode()
    status, headers, _ = _request(
        base, "POST", "/_ragmetrics/signin", body, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    cookie = headers.get("set-cookie", "")
    value = cookie.split(";", 1)[0].split("=", 1)[1] if cookie.startswith(COOKIE + "=") else None
    return status, value


def _server_pid(base: str) -> int:
    port = urllib.parse.urlsplit(base).port
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"streamlit" in b" ".join(cmdline) and str(port).encode() in cmdline:
                return int(proc.name)
    raise AssertionError("no server process found")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


async def _websocket(base: str, headers: dict[str, str] | None = None, subprotocols: list[str] | None = None) -> str:
    url = base.replace("http://", "ws://") + "/_stcore/stream"
    try:
        async with websockets.connect(
            url, additional_headers=headers or {}, subprotocols=subprotocols, open_timeout=15
        ):
            return "open"
    except websockets.InvalidStatus as err:
        return f"refused {err.response.status_code}"


def _in_own_loop(coroutine: Coroutine[Any, Any, str]) -> str:
    """``asyncio.run`` on a thread of its own: the browser tests of the same process keep a loop running here."""
    result: list[str] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(coroutine)))
    thread.start()
    thread.join()
    return result[0]


ROUTES = [
    ("GET", "/"),
    ("GET", "/overview?ds=0123456789abcdef"),
    ("GET", "/_stcore/metrics"),
    ("GET", "/_stcore/host-config"),
    ("GET", "/_stcore/allowed-message-origins"),
    ("GET", "/static/js/index.js"),
    ("GET", "/media/0123456789abcdef.png"),
    ("GET", "/app/static/favicon.svg"),
    ("GET", "/component/x/index.html"),
    ("PUT", "/_stcore/upload_file/session/file"),
    ("DELETE", "/_stcore/upload_file/session/file"),
    ("POST", "/_stcore/upload_file/session/file"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_signed_out_client_gets_nothing_of_the_server(server: str, method: str, path: str) -> None:
    status, headers, body = _request(server, method, path, b"x" * 1000 if method != "GET" else b"")
    if method == "GET":
        assert status == 303 and headers["location"].startswith("/_ragmetrics/signin?next=")
    else:
        assert status == 401
    assert b"streamlit" not in body.lower() and len(body) < 200


def test_only_health_and_the_sign_in_page_answer(server: str) -> None:
    assert _request(server, "GET", "/_stcore/health")[2] == b"ok"
    status, _, body = _request(server, "GET", "/_ragmetrics/signin?next=%2Foverview")
    assert status == 200 and b'name="password"' in body.replace(b"name=password", b'name="password"')
    # a next address on another host is never followed
    status, headers, _ = _request(
        server, "POST", "/_ragmetrics/signin",
        urllib.parse.urlencode({"password": PASSWORD, "next": "//evil.example/x"}).encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert status == 303 and headers["location"] == "/"


def test_the_websocket_refuses_a_client_that_has_not_signed_in(server: str) -> None:
    assert _in_own_loop(_websocket(server)) == "refused 403"
    forged = make_cookie(b"not the server's key")  # well formed, signed with another key
    assert _in_own_loop(_websocket(server, {"Cookie": f"{COOKIE}={forged}"})) == "refused 403"
    _, good = _sign_in(server)
    assert good is not None
    expiry, nonce, mac = good.split(".")
    tampered = f"{int(expiry) + SESSION_SECONDS}.{nonce}.{mac}"  # a longer life, the old signature
    assert _in_own_loop(_websocket(server, {"Cookie": f"{COOKIE}={tampered}"})) == "refused 403"
    assert _in_own_loop(_websocket(server, {"Cookie": f"{COOKIE}={good}"})) == "open"


def test_a_session_is_resumed_only_with_the_proof_of_sign_in(server: str) -> None:
    """Streamlit resumes a session from its id in the websocket's subprotocols; without the cookie, no socket opens,
    so nothing is resumed, whatever id the client names."""
    _, good = _sign_in(server)
    subprotocols = ["streamlit", "xsrf-token-from-a-proxy-log", "0123456789abcdef-session-id"]
    assert _in_own_loop(_websocket(server, {"Cookie": f"{COOKIE}={good}"}, subprotocols)) == "open"
    assert _in_own_loop(_websocket(server, None, subprotocols)) == "refused 403"


def test_uploads_are_refused_before_their_bytes_are_kept(server: str) -> None:
    pid = _server_pid(server)
    before = _rss_mib(pid)
    chunk = b"\0" * (20 << 20)
    for i in range(5):
        try:
            status, _, _ = _request(server, "PUT", f"/_stcore/upload_file/s{i}/f{i}", chunk)
        except (ConnectionError, OSError):
            status = 401  # the server answered and closed before taking the whole body
        assert status == 401
    assert _rss_mib(pid) < before + 50  # 100 MB sent, none of it kept


def test_guesses_are_throttled_across_sessions_and_cost_no_hash_once_locked(server: str) -> None:
    pid = _server_pid(server)
    # five wrong passwords, each from a new connection with no cookie: a new "session" each time
    for _ in range(5):
        assert _sign_in(server, "wrong guess")[0] == 401
    cpu_before = _cpu_seconds(pid)
    started = time.perf_counter()
    answers = [_sign_in(server, "another guess")[0] for _ in range(40)]
    elapsed = time.perf_counter() - started
    assert answers == [429] * 40  # locked for this client, whatever session it opens
    assert _cpu_seconds(pid) - cpu_before < 1.0  # 40 refusals without a PBKDF2 of 600,000 iterations each
    assert elapsed < 10
    assert _sign_in(server)[0] == 429  # not even the right password, until the pause is over


def test_a_signed_in_user_is_not_slowed_by_a_guessing_client(tmp_path) -> None:
    """A second server (its own throttle state): a signed-in client's requests while another hammers the form."""
    env = {
        "RAGMETRICS_PASSWORD_HASH": HASHED,
        "RAGMETRICS_PASSWORD": "",
        "RAGMETRICS_AUTH": "",
        "RAGMETRICS_SAMPLES": "off",
    }
    with streamlit_server(env=env, data_dir=tmp_path) as base:
        _, good = _sign_in(base)
        headers = {"Cookie": f"{COOKIE}={good}"}

        def timed(n: int) -> float:
            times = []
            for _ in range(n):
                start = time.perf_counter()
                status, _, _ = _request(base, "GET", "/_stcore/host-config", headers=headers)
                assert status == 200
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        timed(10)
        quiet = timed(40)
        stop = threading.Event()

        def guess() -> None:
            while not stop.is_set():
                _sign_in(base, "wrong")

        guessers = [threading.Thread(target=guess, daemon=True) for _ in range(4)]
        for thread in guessers:
            thread.start()
        try:
            time.sleep(1.0)
            busy = timed(40)
        finally:
            stop.set()
            for thread in guessers:
                thread.join(timeout=30)
        assert busy <= max(1.5 * quiet, quiet + 0.005), (quiet, busy)


def test_the_gate_answers_below_the_server_s_base_url_path(tmp_path) -> None:
    """Was: the gate compared paths from the root, so under ``--server.baseUrlPath rm`` the health check a load
    balancer asks (``/rm/_stcore/health``) was sent to sign in, and the sign-in form and its redirects were at
    ``/_ragmetrics/signin``, which a proxy forwarding only ``/rm/`` never reaches."""
    env = {
        "RAGMETRICS_PASSWORD_HASH": HASHED,
        "RAGMETRICS_PASSWORD": "",
        "RAGMETRICS_AUTH": "",
        "RAGMETRICS_SAMPLES": "off",
    }
    with streamlit_server(env=env, data_dir=tmp_path, base_url_path="rm") as base:
        status, _, body = _request(base, "GET", "/rm/_stcore/health")
        assert (status, body) == (200, b"ok")
        status, headers, _ = _request(base, "GET", "/rm/missed?k=3")
        assert status == 303 and headers["location"] == "/rm/_ragmetrics/signin?next=%2Frm%2Fmissed%3Fk%3D3"
        status, _, page = _request(base, "GET", "/rm/_ragmetrics/signin")
        assert status == 200 and b"action='/rm/_ragmetrics/signin?next=%2Frm%2F'" in page
        form = urllib.parse.urlencode({"password": PASSWORD, "next": "/rm/missed"}).encode()
        status, headers, _ = _request(
            base, "POST", "/rm/_ragmetrics/signin", form, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert status == 303 and headers["location"] == "/rm/missed" and COOKIE in headers.get("set-cookie", "")
        assert _request(base, "GET", "/_ragmetrics/signin")[0] != 200  # the root is not the gate's any more
