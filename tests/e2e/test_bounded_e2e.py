"""Bounded work, outbound calls and secrets on a real ``streamlit run`` server in Debian's chromium.

* A chunk pattern that backtracks without end (``(?P<doc>(a|a)+)$`` on a 40-character chunk id) is stopped and named
  on the Upload page, while the server's health endpoint answers within 1 s throughout.
* A registered HTTP retriever whose endpoint answers 307 to another local port holding a secret: the redirect is
  not followed (the secret's server is never called), and no page shows the secret or the endpoint's credentials.
* A store URL holding ``?password=``: the Workspace page shows it without the password.
* The tables' toolbar offers no "Download as CSV" (Streamlit's own export writes formulas as they are).
"""

from __future__ import annotations

import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from dashboard.core.share import ViewState, encode
from dashboard.data import samples
from ragmetrics.store.database import dataset_id
from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT
from tests.test_retrieve_http import Redirector

pytestmark = pytest.mark.e2e


class HealthProbe:
    """Asks ``/_stcore/health`` every 0.1 s in a thread and keeps the slowest answer's time (a failure counts as
    the probe's timeout)."""

    def __init__(self, base: str, timeout: float = 5.0) -> None:
        self.base, self.timeout = base, timeout
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def _probe(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=self.timeout) as answer:
                    answer.read()
                self.times.append(time.perf_counter() - start)
            except OSError:
                self.times.append(self.timeout)
            self._stop.wait(0.1)

    @contextmanager
    def running(self) -> Iterator[HealthProbe]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=self.timeout + 1)


def _body_text(page: Page) -> str:
    return page.locator("body").inner_text()


def test_a_chunk_pattern_that_backtracks_is_stopped_while_the_server_answers(page: Page, tmp_path: Path) -> None:
    run = tmp_path / "chunks.trec"
    run.write_text(f"q1 Q0 {'a' * 40}! 1 2.0 t\nq1 Q0 doc#1 2 1.0 t\n")
    with streamlit_server(data_dir=tmp_path / "data") as base:
        page.goto(f"{base}/upload")
        wait_for_app(page)
        page.get_by_text("Chunk ids → documents").click()
        pattern = page.get_by_role("textbox", name="Chunk pattern")
        pattern.fill("(?P<doc>(a|a)+)$")
        pattern.press("Enter")
        wait_for_app(page)
        with HealthProbe(base).running() as probe:
            page.locator(".st-key-upload-runs").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(run))
            error = page.get_by_test_id("stAlertContentError").filter(has_text="chunks.trec")
            expect(error).to_contain_text("chunk pattern '(?P<doc>(a|a)+)$' is too slow", timeout=TIMEOUT)
            time.sleep(0.5)  # a few more probes after the refusal
        assert "(a|a)+" in error.inner_text() and "aaaaaaaaaa" in error.inner_text()
        assert len(probe.times) >= 10 and max(probe.times) < 1.0, probe.times
        expect(page.get_by_test_id("stException")).to_have_count(0)


def test_a_registered_endpoint_that_redirects_is_refused_and_shows_no_secret(page: Page, tmp_path: Path) -> None:
    sample = next(samples.iter_samples(names=["scifact"]))
    redirector = Redirector()
    endpoint = f"http://team:hunter2@127.0.0.1:{redirector.port}/redirect?api_key=hunter3"
    env = {"RAGMETRICS_RETRIEVERS": f"internal={endpoint}", "RAGMETRICS_CACHE_DIR": str(tmp_path / "answers")}
    try:
        with streamlit_server(data_dir=tmp_path / "data", env=env) as base:
            view = ViewState(page="retrieve", dataset=dataset_id(sample.dataset))
            page.goto(f"{base}/{view.page}?{urlencode(encode(view))}")
            wait_for_app(page)
            form = page.get_by_test_id("stForm")
            form.get_by_test_id("stSelectbox").click()
            page.get_by_role("option", name="internal").click()
            form.get_by_role("textbox", name="Run name").fill("internal")
            form.get_by_role("button", name="Run it").click()
            error = page.get_by_test_id("stAlertContentError")
            expect(error).to_contain_text(
                "HTTP 307: the endpoint redirects, and redirects are not followed", timeout=TIMEOUT
            )
            shown = error.inner_text()
            assert f"team:***@127.0.0.1:{redirector.port}/redirect?api\\_key=***" in shown or "team:***@" in shown
            for page_name in ("retrieve", "workspace"):
                page.goto(f"{base}/{page_name}?{urlencode(encode(view.with_(page=page_name)))}")
                wait_for_app(page)
                text = _body_text(page)
                for secret in (Redirector.SECRET, "hunter2", "hunter3"):
                    assert secret not in text, (page_name, secret)
        assert redirector.internal_calls == 0
    finally:
        redirector.close()


def test_the_workspace_shows_a_store_url_without_its_password(page: Page, postgres_url: str) -> None:
    import sqlalchemy as sa

    name = "b" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    store_url = f"{postgres_url.rsplit('/', 1)[0]}/{name}?password=hunter2-in-the-query"
    with streamlit_server(store_url=store_url) as base:
        page.goto(f"{base}/workspace")
        wait_for_app(page)
        expect(page.get_by_text("password=***")).to_be_visible(timeout=TIMEOUT)
        assert "hunter2" not in _body_text(page)


def test_no_table_offers_streamlits_own_csv_download(page: Page, tmp_path: Path) -> None:
    with streamlit_server(data_dir=tmp_path / "data") as base:
        page.goto(f"{base}/workspace")
        wait_for_app(page)
        table = page.get_by_test_id("stDataFrame").first
        expect(table).to_be_visible(timeout=TIMEOUT)
        table.hover()
        toolbar = page.get_by_test_id("stElementToolbar").first
        expect(toolbar.get_by_role("button", name="Search")).to_be_visible(timeout=TIMEOUT)  # the toolbar is there
        expect(page.get_by_role("button", name="Download as CSV")).to_have_count(0)
        expect(page.get_by_role("button", name="Download CSV").first).to_be_visible()  # the app's, neutralised


def test_a_gzip_upload_is_refused_once_it_inflates_past_the_sessions_budget(page: Page, tmp_path: Path) -> None:
    """Was: a small gzip was inflated to the upload file limit (1 GiB) before it was refused."""
    import gzip

    line = b"q1 Q0 D1 1 1.0 bomb\n"
    bomb = tmp_path / "bomb.trec.gz"
    bomb.write_bytes(gzip.compress(line * ((256 << 20) // len(line)), compresslevel=6, mtime=0))  # 256 MiB inflated
    env = {"RAGMETRICS_UPLOAD_SESSION_BYTES": "48M", "RAGMETRICS_MAX_RATIO": "1000000"}
    with streamlit_server(data_dir=tmp_path / "data", env=env) as base:
        page.goto(f"{base}/upload")
        wait_for_app(page)
        page.locator(".st-key-upload-runs").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(bomb))
        error = page.get_by_test_id("stAlertContentError").filter(has_text="bomb.trec.gz")
        expect(error).to_contain_text(
            "bomb.trec.gz: decompressed, it takes this session's uploads past 48 MiB (RAGMETRICS_UPLOAD_SESSION_BYTES)",
            timeout=TIMEOUT,
        )
        expect(page.get_by_test_id("stException")).to_have_count(0)
