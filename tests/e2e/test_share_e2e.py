"""Share links in a real browser: a configured view reopens the same in a fresh browser, after a restart, on a second
process sharing one PostgreSQL store; and the link ``ragmetrics push`` prints opens its run.

One SQLite server records the view (it is restarted once); two servers share one PostgreSQL database.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import REPO, give_files, open_curves, share_code, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import DATA, TIMEOUT, dropdown_options, k_box, legend_names, open_page, set_k

pytestmark = pytest.mark.e2e

FILES = [DATA / "mini_eval.json", DATA / "mini-bm25.trec", DATA / "mini-dense.trec"]
NO_SAMPLES = {
    "RAGMETRICS_SAMPLES": "off"
}  # the seeding is covered elsewhere; these stores hold only what the tests put


class Server:
    """A ``streamlit run`` server that a test can restart on the same store."""

    def __init__(self, **kwargs: object) -> None:
        self.kwargs = kwargs
        self.base = ""
        self._running: AbstractContextManager[str] | None = None

    def start(self) -> Server:
        self._running = streamlit_server(**self.kwargs)  # type: ignore[arg-type]
        self.base = self._running.__enter__()
        return self

    def stop(self) -> None:
        if self._running is not None:
            self._running.__exit__(None, None, None)
            self._running = None

    def restart(self) -> Server:
        self.stop()
        return self.start()

    def url(self, link: str) -> str:
        """``link`` (from any server) on this server: same path and query."""
        parts = urlsplit(link)
        return f"{self.base}{parts.path}?{parts.query}"


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(data_dir=tmp_path_factory.mktemp("sqlite-store"), env=NO_SAMPLES).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pg_servers(postgres_url: str) -> Iterator[tuple[Server, Server, str]]:
    """Two dashboard processes on one fresh PostgreSQL database."""
    name = "e2e" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    first = Server(store_url=url, env=NO_SAMPLES).start()
    second = Server(store_url=url, env=NO_SAMPLES).start()
    yield first, second, url
    first.stop()
    second.stop()


# --- reading and driving widgets ---------------------------------------------------------


def _box(page: Page, key: str):  # type: ignore[no-untyped-def]
    return page.locator(f".st-key-{key.replace('.', '-')}")


def _choice(page: Page, key: str) -> str:
    return _box(page, key).locator("input[role='combobox']").first.input_value()


def _pick(page: Page, key: str, label: str) -> None:
    dropdown_options(page, key).get_by_text(label, exact=True).click()
    wait_for_app(page)
    expect(_box(page, key).locator("input[role='combobox']").first).to_have_value(label, timeout=TIMEOUT)


def _chips(page: Page) -> list[str]:
    return (
        _box(page, "sidebar.runs")
        .locator("[data-tag]")
        .evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    )


def widget_values(page: Page) -> dict[str, object]:
    """Every widget the view sets, as shown, on the Missed queries page."""
    expect(page.get_by_role("heading", name="Missed queries", level=1)).to_be_visible(timeout=TIMEOUT)
    detail = page.get_by_role("heading", level=4)
    expect(detail).to_be_visible(timeout=TIMEOUT)
    return {
        "dataset": _choice(page, "sidebar.dataset"),
        "runs": _chips(page),
        "metric": _choice(page, "sidebar.metric"),
        "k": k_box(page).input_value(),
        "focus run": _choice(page, "missed.run"),
        "category": _choice(page, "missed.category"),
        "difficulty": _choice(page, "missed.difficulty"),
        "query": _choice(page, "missed.query"),
        "detail": detail.inner_text(),
    }


def plotted(page: Page) -> list[list[dict[str, object]]]:
    """Open Breakdown (the view carries over) and read every chart's traces: names and y values."""
    open_page(page, "Breakdown")
    charts = page.locator(".js-plotly-plot")
    expect(charts).to_have_count(2, timeout=TIMEOUT)
    return [c.evaluate("g => g.data.map(t => ({name: t.name, y: Array.from(t.y || [])}))") for c in charts.all()]


def upload(page: Page, base: str) -> None:
    page.goto(f"{base}/upload")
    wait_for_app(page)
    upload_files(page)


def k_three_up(page: Page) -> None:
    """Type K = 8 into the sidebar's K box (it was 5)."""
    assert k_box(page).input_value() == "5"
    set_k(page, 8)


def another_missed_query(page: Page) -> str:
    """On Missed queries, pick the second query of the list and wait until the rerun wrote its id to the address;
    returns the label of the query it replaced."""
    first_query = _choice(page, "missed.query")
    dropdown_options(page, "missed.query").nth(1).click()
    wait_for_app(page)
    expect(_box(page, "missed.query").locator("input[role='combobox']")).not_to_have_value(first_query, timeout=TIMEOUT)
    chosen = _choice(page, "missed.query").split(" · ")[0]
    expect(page).to_have_url(
        re.compile(rf"[?&]q={re.escape(chosen)}(&|$)"), timeout=TIMEOUT
    )  # written at the end of the rerun
    return first_query


def upload_files(page: Page) -> None:
    """On the Upload page: the mini dataset, then its runs."""
    give_files(page, "upload.dataset", FILES[0])
    expect(page.get_by_text("Loaded mini_eval.json")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    give_files(page, "upload.runs", list(FILES[1:]))
    expect(page.get_by_text("Loaded mini-dense.trec")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)


def reopen(browser: Browser, link: str) -> tuple[dict[str, object], list[list[dict[str, object]]]]:
    """Open ``link`` in a new browser context (a new session) and read the view."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(link)
        wait_for_app(page)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        return widget_values(page), plotted(page)
    finally:
        context.close()


@pytest.fixture(scope="module")
def shared_view(browser: Browser, sqlite_server: Server) -> dict[str, object]:
    """Upload, choose runs, metric, K and a category, open a query; the page URL and what it shows."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    upload(page, sqlite_server.base)
    open_page(page, "Missed queries")
    assert _chips(page) == ["mini-bm25", "mini-dense"]
    # runs: drop bm25, add it back after dense (order is part of the view)
    _box(page, "sidebar.runs").get_by_role("button", name="Remove mini-bm25").click()
    wait_for_app(page)
    _box(page, "sidebar.runs").locator("input[role='combobox']").click()
    page.get_by_role("option", name="mini-bm25", exact=True).click()
    page.keyboard.press("Escape")
    wait_for_app(page)
    expect(_box(page, "sidebar.runs").locator("[data-tag]")).to_have_count(2, timeout=TIMEOUT)
    _pick(page, "sidebar.metric", "nDCG")
    k_three_up(page)
    _pick(page, "missed.category", "api")
    first_query = another_missed_query(page)

    link = page.url
    assert share_code(page) == link  # "Copy share link" gives exactly the address of the view
    values = widget_values(page)
    assert values["runs"] == ["mini-dense", "mini-bm25"] and values["metric"] == "nDCG" and values["k"] == "8"
    assert values["category"] == "api" and values["query"] != first_query
    for key in ("ds=", "runs=", "m=ndcg", "k=8", "cat=api", "q="):
        assert key in link, key
    traces = plotted(page)
    assert [t["name"] for t in traces[0]] == ["mini-dense", "mini-bm25"] and all(t["y"] for t in traces[0])
    context.close()
    return {"link": link, "values": values, "traces": traces}


def test_the_link_reopens_the_view_in_a_fresh_browser(browser: Browser, shared_view: dict) -> None:
    values, traces = reopen(browser, shared_view["link"])
    assert values == shared_view["values"]
    assert traces == shared_view["traces"]


def test_the_link_reopens_the_view_after_a_restart(browser: Browser, shared_view: dict, sqlite_server: Server) -> None:
    sqlite_server.restart()  # same SQLite data folder, new process (and port)
    values, traces = reopen(browser, sqlite_server.url(shared_view["link"]))
    assert values == shared_view["values"]
    assert traces == shared_view["traces"]


def test_the_link_opens_on_a_second_process_sharing_postgresql(browser: Browser, shared_view: dict, pg_servers) -> None:
    first, second, _ = pg_servers
    context = browser.new_context()
    upload(context.new_page(), first.base)  # the same files, uploaded on the first process: the same ids
    context.close()
    values, traces = reopen(browser, second.url(shared_view["link"]))
    assert values == shared_view["values"]
    assert traces == shared_view["traces"]


def test_the_link_ragmetrics_push_prints_shows_that_run(page: Page, pg_servers, tmp_path: Path) -> None:
    _, second, url = pg_servers
    lines = (DATA / "mini-dense.trec").read_text().splitlines()
    nightly = tmp_path / "nightly-ci.trec"  # a run no server has seen: the top 3 of each query
    nightly.write_text(
        "\n".join(line.replace("mini-dense", "nightly-ci") for line in lines if int(line.split()[3]) <= 3) + "\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmetrics",
            "push",
            "--store",
            url,
            "--dataset",
            str(FILES[0]),
            "--run",
            str(nightly),
            "--base-url",
            second.base,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip().splitlines()[-1]
    assert link.startswith(f"{second.base}/overview?ds=")
    page.goto(link)
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible(timeout=TIMEOUT)
    assert _chips(page) == ["nightly-ci"]
    assert _choice(page, "sidebar.dataset") == "mini_eval"
    open_curves(page)
    assert legend_names(page) == ["nightly-ci"]
    expect(page.get_by_test_id("stAlertContentInfo")).to_have_count(0)  # nothing reported missing
