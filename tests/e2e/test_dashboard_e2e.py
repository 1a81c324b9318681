"""Upload, explore and drill down in a real browser; a bad file shows its line number; a link reopens the view."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import give_files, open_curves, wait_for_app

DATA = Path(__file__).resolve().parent / "data"
TIMEOUT = 60_000

pytestmark = pytest.mark.e2e


def traces(page: Page, index: int = 0) -> list[dict]:
    chart = page.locator(".js-plotly-plot").nth(index)
    chart.wait_for(timeout=TIMEOUT)
    return chart.evaluate("g => g.data.map(t => ({name: t.name, showlegend: t.showlegend, type: t.type}))")


def legend_names(page: Page) -> list[str]:
    return [t["name"] for t in traces(page) if t["showlegend"] is not False and not t["name"].endswith("95% CI")]


def open_page(page: Page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)


def k_box(page: Page):  # type: ignore[no-untyped-def]
    """The sidebar's K number box."""
    return page.locator(".st-key-sidebar-k input")


def set_k(page: Page, k: int) -> None:
    """Type ``k`` into the sidebar's K box (Enter commits it) and wait for the page to show it."""
    box = k_box(page)
    box.fill(str(k))
    box.press("Enter")
    wait_for_app(page)
    expect(box).to_have_value(str(k), timeout=TIMEOUT)
    expect(page).to_have_url(re.compile(rf"[?&]k={k}(&|$)"), timeout=TIMEOUT)  # written at the end of the rerun


def switch_on(page: Page, key: str) -> None:
    """Turn on the toggle with widget key ``key`` and wait for the page's rerun."""
    box = page.locator(f".st-key-{key.replace('.', '-')}")
    switch = box.locator("input[type='checkbox']")
    box.scroll_into_view_if_needed()
    if not switch.is_checked():
        box.locator("label").click()
    expect(switch).to_be_checked(timeout=TIMEOUT)
    wait_for_app(page)


def dropdown_options(page: Page, key: str):  # type: ignore[no-untyped-def]
    """Open the selectbox with widget key ``key`` and return its options."""
    box = page.locator(f".st-key-{key.replace('.', '-')}")
    combo = box.get_by_role("combobox")
    combo.scroll_into_view_if_needed()
    options = page.get_by_test_id("stSelectboxVirtualDropdown").get_by_role("option")
    for _ in range(5):  # a press that lands while the page scrolls only focuses the input
        if combo.get_attribute("aria-expanded") != "true":
            box.get_by_role("button", name="Open").click()
        try:
            expect(options.first).to_be_visible(timeout=2_000)
            break
        except AssertionError:
            continue
    expect(options.first).to_be_visible(timeout=TIMEOUT)
    return options


def test_upload_explore_and_open_a_missed_query(page: Page, app_url: str) -> None:
    # a self-hosted dashboard works offline: nothing it serves makes the browser fetch from another host
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith((app_url, "data:", "blob:")) else elsewhere.append(r.url))
    page.goto(f"{app_url}/upload")
    wait_for_app(page)
    give_files(page, "upload.dataset", DATA / "mini_eval.json")
    expect(page.get_by_text("Loaded mini_eval.json")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    give_files(page, "upload.runs", [DATA / "mini-bm25.trec", DATA / "mini-dense.trec"])
    expect(page.get_by_text("Loaded mini-bm25.trec")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Loaded mini-dense.trec")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Validation report")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)

    open_page(page, "Overview")
    expect(page.get_by_text("mini_eval", exact=False).first).to_be_visible()
    open_curves(page)  # on the first screen: no click
    assert legend_names(page) == ["mini-bm25", "mini-dense"]
    assert "v=1" in page.url and "runs=" in page.url
    # the reports are written when asked for (a deferred download), with the overview's numbers and findings
    for label, marks in (
        ("HTML report", ("<html", "mini_eval", "<h2>Diagnosis</h2>", "misses are near misses (ranks")),
        ("Markdown report", ("## Diagnosis", "### mini-dense: 3 easy queries are missed at K=5")),
    ):
        with page.expect_download(timeout=TIMEOUT) as download:
            page.get_by_role("button", name=label).click()
        text = Path(download.value.path()).read_text(encoding="utf-8")
        assert all(mark in text for mark in marks), (label, text[:500])

    open_page(page, "Missed queries")
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("heading", name="Query detail")).to_be_visible()
    detail = page.get_by_role("heading", level=4)
    expect(detail).to_contain_text("测试问题")
    first = detail.inner_text()
    # open another query's detail
    options = dropdown_options(page, "missed.query")
    assert options.count() >= 2
    options.nth(1).click()
    wait_for_app(page)
    expect(detail).not_to_have_text(first, timeout=TIMEOUT)
    expect(page.get_by_text("Relevant documents", exact=True)).to_be_visible()
    expect(page.get_by_text("top 20 documents")).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]q=t"), timeout=TIMEOUT)
    assert elsewhere == []


def test_malformed_run_shows_its_line_number(page: Page, app_url: str) -> None:
    page.goto(f"{app_url}/upload")
    wait_for_app(page)
    give_files(page, "upload.runs", DATA / "broken-run.trec")
    error = page.get_by_test_id("stAlertContentError")
    expect(error).to_contain_text("broken-run.trec:4: expected 6 fields", timeout=TIMEOUT)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    # what was loaded before is still there
    expect(page.get_by_text("Loaded", exact=True)).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").last).to_be_visible()


def test_a_link_reopens_the_same_view_in_a_fresh_browser(page: Page, browser: Browser, app_url: str) -> None:
    page.goto(f"{app_url}/")
    wait_for_app(page)
    set_k(page, 10)
    expect(page.get_by_role("heading", name="Metrics at K = 10")).to_be_visible(timeout=TIMEOUT)
    open_curves(page)
    link = page.url
    names = legend_names(page)
    assert len(names) == 3

    fresh = browser.new_context()
    other = fresh.new_page()
    other.goto(link)
    wait_for_app(other)
    expect(other.get_by_role("heading", name="Metrics at K = 10")).to_be_visible(timeout=TIMEOUT)
    assert legend_names(other) == names
    # the path share links from `ragmetrics push` use opens the same page, without a "page not found"
    other.goto(link.replace(app_url + "/?", app_url + "/overview?"))
    wait_for_app(other)
    expect(other.get_by_role("heading", name="Metrics at K = 10")).to_be_visible(timeout=TIMEOUT)
    expect(other.get_by_text("Page not found")).to_have_count(0)
    fresh.close()
