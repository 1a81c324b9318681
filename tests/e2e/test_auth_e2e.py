"""Sign-in in a real browser against a real ``streamlit run`` server.

Shared password (``RAGMETRICS_PASSWORD``): every page and share link answers with the server gate's sign-in page
(``dashboard.ui.gate``: no Streamlit app at all); the right password opens the link's own view (same page path, same
query); a wrong one keeps it locked; signing out locks the browser again.

OIDC (``RAGMETRICS_AUTH=oidc``): Streamlit's own ``st.login`` flow against a minimal OpenID provider served here on
127.0.0.1 (discovery, authorize, token with an RS256 id_token, JWKS); needs ``streamlit[auth]`` (Authlib).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.views import VIEWS
from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page
from tests.e2e.test_share_e2e import another_missed_query, k_three_up, upload_files, widget_values

pytestmark = pytest.mark.e2e

PASSWORD = "e2e shared pass phrase"
# what a signed-in page shows (checked present after sign-in, so their absence before it means something)
PAGE_PARTS = ("stDataFrame", "stSelectbox", "stMultiSelect", "stNumberInput", "stPopover", "stPlotlyChart")
SLOW = 3 * TIMEOUT  # the first run of a page after sign-in opens the store (2 cores, other browser tests alongside)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    # "" clears what the developer's shell may hold (a hash there would win over the password)
    env = {
        "RAGMETRICS_PASSWORD": PASSWORD,
        "RAGMETRICS_PASSWORD_HASH": "",
        "RAGMETRICS_AUTH": "",
        "RAGMETRICS_SAMPLES": "off",
    }
    with streamlit_server(env=env) as base:
        yield base


GATE_FORM = "body[data-ragmetrics-gate]"  # a page of the server's sign-in gate, not of the app


def _open(page: Page, url: str) -> None:
    """Go to ``url``; wait for the app unless the gate answered with its sign-in page."""
    page.goto(url)
    if page.locator(GATE_FORM).count() == 0:
        wait_for_app(page)


@contextmanager
def _fresh_page(browser: Browser, url: str | None = None) -> Iterator[Page]:
    """A page in a new browser context (a new session, no cookies), at ``url``; closed after."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        if url is not None:
            _open(page, url)
        yield page
    finally:
        context.close()


def _password(page: Page):  # type: ignore[no-untyped-def]
    return page.get_by_label("Password", exact=True)


def sidebar_elements(page: Page):  # type: ignore[no-untyped-def]
    """Whatever the script put in the sidebar (after a sign-out the frontend may keep the empty panel open)."""
    return page.get_by_test_id("stSidebar").get_by_test_id("stElementContainer")


def assert_locked(page: Page, link: str | None = None) -> None:
    """Only the gate's sign-in form: no Streamlit app (so no heading of a page, no menu, no widget, chart or table);
    ``link``: the address it will open after sign-in is that one."""
    expect(_password(page)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    headings = page.get_by_role("heading", level=1)
    expect(headings).to_have_count(1)
    expect(headings).to_have_text("ragmetrics")
    expect(page.get_by_test_id("stApp")).to_have_count(0)
    for hidden in PAGE_PARTS:
        expect(page.get_by_test_id(hidden)).to_have_count(0)
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
    assert urlsplit(page.url).path == "/_ragmetrics/signin"
    if link is not None:
        target = parse_qs(urlsplit(page.url).query)["next"][0]
        want = urlsplit(link)
        _same_address(target, want.path + ("?" + want.query if want.query else ""))


def sign_in(page: Page, password: str) -> None:
    _password(page).fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("load")
    if page.locator(GATE_FORM).count() == 0:
        wait_for_app(page)


def _same_address(url: str, link: str) -> None:
    got, want = urlsplit(url), urlsplit(link)
    assert got.path == want.path
    assert sorted(parse_qsl(got.query)) == sorted(parse_qsl(want.query))


@pytest.fixture(scope="module")
def shared_link(browser: Browser, server: str) -> dict[str, object]:
    """Sign in, upload a dataset and two runs, set K and a query on Missed queries: the link and what it shows."""
    with _fresh_page(browser, f"{server}/upload") as page:
        assert_locked(page, f"{server}/upload")
        sign_in(page, PASSWORD)
        expect(page.get_by_role("heading", name="Upload", level=1)).to_be_visible(timeout=SLOW)
        wait_for_app(page)
        upload_files(page)

        open_page(page, "Missed queries")
        k_three_up(page)
        another_missed_query(page)
        link = page.url
        for key in ("/missed?", "ds=", "runs=", "k=8", "q="):
            assert key in link, key
        values = widget_values(page)
    return {"link": link, "values": values}


def test_a_share_link_asks_for_the_password_then_opens_its_view(browser: Browser, shared_link: dict) -> None:
    link = str(shared_link["link"])
    with _fresh_page(browser, link) as page:
        assert_locked(page, link)  # the gate keeps the link's address to open after sign-in

        sign_in(page, PASSWORD)
        expect(page.get_by_role("heading", name="Missed queries", level=1)).to_be_visible(timeout=SLOW)
        wait_for_app(page)
        expect(_password(page)).to_have_count(0)
        expect(page.get_by_test_id("stSidebarNav")).to_be_visible()
        expect(sidebar_elements(page).first).to_be_visible()
        for shown in PAGE_PARTS[:-1]:  # Missed queries has no chart; Overview's is checked below
            expect(page.get_by_test_id(shown).first).to_be_visible(timeout=TIMEOUT)
        assert widget_values(page) == shared_link["values"]
        _same_address(page.url, link)


def test_a_wrong_password_keeps_the_link_locked(browser: Browser, shared_link: dict) -> None:
    link = str(shared_link["link"])
    with _fresh_page(browser, link) as page:
        for attempt in ("wrong", PASSWORD.upper()):
            sign_in(page, attempt)
            expect(page.get_by_text("Wrong password.")).to_be_visible(timeout=TIMEOUT)
            assert_locked(page, link)
            expect(_password(page)).to_have_value("")  # the form forgets what was typed
        expect(page.get_by_role("heading", name="Missed queries")).to_have_count(0)
        assert PASSWORD.upper() not in page.content()


def test_every_page_is_locked_and_sign_out_locks_again(browser: Browser, server: str, shared_link: dict) -> None:
    with _fresh_page(browser) as page:
        for view in VIEWS:
            _open(page, f"{server}/{view.key}?v=1&k=7")
            assert_locked(page, f"{server}/{view.key}?v=1&k=7")
        sign_in(page, PASSWORD)  # on the last page of the menu
        last = VIEWS[-1]
        expect(page.get_by_role("heading", name=last.title, level=1)).to_be_visible(timeout=SLOW)
        wait_for_app(page)
        assert urlsplit(page.url).path == f"/{last.key}"
        open_page(page, VIEWS[0].title)  # signed in for the session: the menu works (the uploaded runs are shown)
        expect(page.get_by_test_id("stTable").first).to_be_visible(timeout=TIMEOUT)

        page.get_by_test_id("stSidebar").get_by_text("Sign out").click()
        page.wait_for_load_state("load")
        assert_locked(page)
        _open(page, f"{server}/{VIEWS[0].key}")  # signed out in this browser: every page locked again
        assert_locked(page)


# --- OIDC: Streamlit's st.login against a provider served here --------------------------------------


class FakeOpenIDProvider:
    """A minimal OpenID provider on 127.0.0.1: discovery, an authorize endpoint that signs the user in at once
    (no login page), a token endpoint that checks the client and issues an RS256 id_token, and its JWKS."""

    def __init__(self, client_id: str, client_secret: str, user: dict[str, str]) -> None:
        from joserfc.jwk import RSAKey

        self.client_id, self.client_secret, self.user = client_id, client_secret, user
        self.key = RSAKey.generate_key(2048, parameters={"kid": "e2e"}, private=True)
        self.codes: dict[str, str | None] = {}  # code -> nonce
        self.authorized = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.base,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "jwks_uri": f"{self.base}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }

    def id_token(self, nonce: str | None) -> str:
        from joserfc import jwt

        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.base,
            "sub": "user-1",
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
        }
        claims.update(self.user)
        if nonce:
            claims["nonce"] = nonce
        return jwt.encode({"alg": "RS256", "kid": "e2e"}, claims, self.key)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, body: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._json(idp.metadata())
                elif url.path == "/jwks":
                    self._json({"keys": [idp.key.as_dict(private=False)]})
                elif url.path == "/authorize" and query.get("client_id") == idp.client_id and "state" in query:
                    idp.authorized += 1
                    code = secrets.token_urlsafe(16)
                    idp.codes[code] = query.get("nonce")
                    self.send_response(302)
                    self.send_header(
                        "Location", query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
                    )
                    self.end_headers()
                else:
                    self._json({"error": "invalid_request"}, 400)

            def do_POST(self) -> None:
                form = {
                    k: v[-1]
                    for k, v in parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()).items()
                }
                client = (form.get("client_id"), form.get("client_secret"))
                basic = self.headers.get("Authorization", "")
                if basic.startswith("Basic "):
                    name, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
                    client = (name, secret)
                if (
                    urlsplit(self.path).path != "/token"
                    or client != (idp.client_id, idp.client_secret)
                    or form.get("code") not in idp.codes
                ):
                    self._json({"error": "invalid_grant"}, 400)
                    return
                nonce = idp.codes.pop(form["code"])
                self._json(
                    {
                        "access_token": secrets.token_urlsafe(16),
                        "token_type": "Bearer",
                        "expires_in": 300,
                        "id_token": idp.id_token(nonce),
                    }
                )

        return Handler

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def oidc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeOpenIDProvider]]:
    """The dashboard with ``RAGMETRICS_AUTH=oidc`` and an ``[auth]`` table pointing at the provider above."""
    for module in ("authlib", "httpx", "joserfc"):
        try:
            __import__(module)
        except ImportError:
            if os.environ.get("RAGMETRICS_REQUIRE_E2E"):
                pytest.fail(f"{module} is missing: pip install -e '.[test]' (streamlit[auth])")
            pytest.skip(f"{module} is missing (pip install 'streamlit[auth]')")
    secrets_toml = Path(tmp_path_factory.mktemp("oidc")) / "secrets.toml"
    env = {
        "RAGMETRICS_AUTH": "oidc",
        "RAGMETRICS_AUTH_ALLOW": "@example.com",
        "STREAMLIT_SECRETS_FILES": str(secrets_toml),
        "RAGMETRICS_SAMPLES": "off",
    }
    user = {"name": "Ada Lovelace", "email": "ada@example.com"}
    idp = FakeOpenIDProvider("ragmetrics-e2e", secrets.token_urlsafe(16), user)
    idp.start()
    try:
        with streamlit_server(env=env) as base:
            # written once the port is known; Streamlit reads the secrets at the first session
            secrets_toml.write_text(
                "[auth]\n"
                f'redirect_uri = "{base}/oauth2callback"\n'
                f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
                f'client_id = "{idp.client_id}"\n'
                f'client_secret = "{idp.client_secret}"\n'
                f'server_metadata_url = "{idp.base}/.well-known/openid-configuration"\n'
            )
            yield base, idp
    finally:
        idp.stop()


def test_oidc_sign_in_opens_the_dashboard_and_sign_out_locks_it(browser: Browser, oidc_server) -> None:
    base, idp = oidc_server
    link = f"{base}/missed?v=1&k=8"
    with _fresh_page(browser, link) as page:
        expect(page.get_by_role("heading", level=1)).to_have_text("ragmetrics", timeout=TIMEOUT)
        expect(page.locator(GATE_FORM)).to_have_count(1)  # the gate's page: no app, no menu, no widget
        expect(page.get_by_test_id("stApp")).to_have_count(0)
        expect(_password(page)).to_have_count(0)

        # Sign in -> /auth/login -> the provider -> /oauth2callback (token exchange, id_token checked) -> "/"
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible(timeout=SLOW)
        wait_for_app(page)
        assert idp.authorized == 1
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_text("Signed in as Ada Lovelace")).to_be_visible()
        expect(page.get_by_test_id("stSidebarNav")).to_be_visible()

        page.goto(link)  # Streamlit's login lands on "/"; the link itself opens now (the login cookie is set)
        expect(page.get_by_role("heading", name="Missed queries", level=1)).to_be_visible(timeout=SLOW)
        wait_for_app(page)
        assert urlsplit(page.url).path == "/missed" and ("k", "8") in parse_qsl(urlsplit(page.url).query)

        sidebar.get_by_role("button", name="Sign out").click()  # st.logout -> /auth/logout -> "/" without the cookie
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=SLOW)
        expect(page.get_by_role("heading", level=1)).to_have_text("ragmetrics")
        expect(page.locator(GATE_FORM)).to_have_count(1)
        expect(page.get_by_test_id("stApp")).to_have_count(0)


def test_oidc_without_sign_in_a_fresh_browser_stays_locked(browser: Browser, oidc_server) -> None:
    base, _ = oidc_server
    with _fresh_page(browser) as page:
        for view in VIEWS:
            _open(page, f"{base}/{view.key}?v=1")
            expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=TIMEOUT)
            expect(page.get_by_role("heading", level=1)).to_have_text("ragmetrics")
            expect(page.locator(GATE_FORM)).to_have_count(1)
            expect(page.get_by_test_id("stApp")).to_have_count(0)
            for hidden in PAGE_PARTS:
                expect(page.get_by_test_id(hidden)).to_have_count(0)
