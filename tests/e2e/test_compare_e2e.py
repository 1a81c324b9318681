"""Compare two runs in a real browser and open one query's two rankings side by side; the link reopens the view."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, dropdown_options, open_page, set_k, switch_on

pytestmark = pytest.mark.e2e


def pick(page: Page, key: str, label: str) -> None:
    """Choose the option whose text is ``label`` in the selectbox with widget key ``key``."""
    options = dropdown_options(page, key)
    options.filter(has_text=re.compile(rf"^{re.escape(label)}$")).first.click()
    wait_for_app(page)


def click_row(page: Page, key_prefix: str, row: int) -> None:
    """Click the selection box of ``row`` in the data grid whose widget key starts with ``key_prefix`` (a canvas)."""
    grid = page.locator(f"[class*='st-key-{key_prefix}']").get_by_test_id("stDataFrame").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    assert box is not None
    header = row_height = 35
    page.mouse.click(box["x"] + 15, box["y"] + header + row * row_height + row_height / 2)
    wait_for_app(page)


def chart_names(page: Page) -> list[list[str]]:
    """Trace names of every chart on the page, read in one step once the app is idle and every chart drawn
    (counting first and then waiting chart by chart raced with reruns that re-mount the charts)."""
    wait_for_app(page)
    page.wait_for_function(
        "() => { const gs = [...document.querySelectorAll('.js-plotly-plot')];"
        " return gs.length > 0 && gs.every(g => Array.isArray(g.data)); }",
        timeout=TIMEOUT,
    )
    return page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g.data.map(t => t.name))")


def test_compare_two_runs_and_open_a_querys_rankings(page: Page, browser: Browser, app_url: str) -> None:
    page.goto(f"{app_url}/")
    wait_for_app(page)
    open_page(page, "Compare runs")
    expect(page.get_by_text("Each run against", exact=False)).to_be_visible(timeout=TIMEOUT)

    # dense-e5 as the baseline, hybrid-rrf as the run looked at query by query
    pick(page, "compare.baseline", "dense-e5")
    expect(page.get_by_text("Each run against dense-e5", exact=False)).to_be_visible(timeout=TIMEOUT)
    pick(page, "compare.run", "hybrid-rrf")
    expect(page.locator(".st-key-compare-by_query input[type='checkbox']")).not_to_be_checked()
    expect(page.locator(".st-key-compare-outcome")).to_have_count(0)  # query by query: off until asked
    switch_on(page, "compare.by_query")  # query by query: off until asked
    summary = page.get_by_text(re.compile(r"hybrid-rrf against dense-e5 on Recall@5 \(pick"))
    expect(summary).to_be_visible(timeout=TIMEOUT)
    assert re.search(r"wins \d+, ties \d+, losses \d+ of 91 queries", summary.inner_text())

    names = chart_names(page)
    assert any({"▲ better", "not significant"} & set(n) for n in names)  # the deltas with their CIs
    assert any(n and n[0].startswith("wins (") for n in names)  # sorted per-query deltas
    assert any(n and n[0] == "no change" for n in names)  # baseline-versus-run scatter

    # selecting a row of the table shows that run and metric query by query
    click_row(
        page, "compare-table", 10
    )  # metrics in order, each with dense-e5 (baseline), bm25, hybrid-rrf: nDCG@5 · bm25
    summary = page.get_by_text(re.compile(r"bm25 against dense-e5 on nDCG@5 \(pick"))
    expect(summary).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    expect(page).to_have_url(re.compile(r"[?&]m=ndcg(&|$)"), timeout=TIMEOUT)

    # one query's two rankings side by side, relevant documents marked
    heading = page.get_by_role("heading", level=4)
    expect(heading).to_have_count(1, timeout=TIMEOUT)
    first = heading.inner_text()
    options = dropdown_options(page, "compare.query")
    assert options.count() >= 4  # a virtual list: only the visible options are in the DOM
    wanted = options.nth(3).inner_text()
    query_id = wanted.split(" · ")[0]
    options.nth(3).click()
    wait_for_app(page)
    expect(heading).not_to_have_text(first, timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(r"^dense-e5 \(baseline\) · top \d+"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^bm25 \(run\) · top \d+"))).to_be_visible()
    rankings = page.locator("[data-testid='stDataFrame']").filter(has=page.get_by_text("rank in other"))
    expect(rankings).to_have_count(2, timeout=TIMEOUT)
    # the address is written at the end of the rerun that drew the rankings: wait for it
    expect(page).to_have_url(re.compile(rf"[?&]q={re.escape(query_id)}(&|$)"), timeout=TIMEOUT)
    assert "base=" in page.url and "fr=" in page.url

    # the link opens the same comparison and query in a fresh browser
    link = page.url
    text = heading.inner_text()
    fresh = browser.new_context()
    other = fresh.new_page()
    other.goto(link)
    wait_for_app(other)
    expect(other.get_by_role("heading", name="Compare runs", level=1)).to_be_visible(timeout=TIMEOUT)
    expect(other.get_by_role("heading", level=4)).to_have_text(text, timeout=TIMEOUT)
    expect(other.get_by_text(re.compile(r"^dense-e5 \(baseline\) · top \d+"))).to_be_visible(timeout=TIMEOUT)
    expect(other.get_by_text(re.compile(r"bm25 against dense-e5 on nDCG@5 \(pick"))).to_be_visible(timeout=TIMEOUT)
    fresh.close()


def test_the_same_pair_shows_the_same_p_value_and_family_on_overview_compare_and_power(
    page: Page, app_url: str
) -> None:
    """One story of significance: SciFact's three sample runs, nDCG@10. The Overview's and Compare's verdicts (the
    best run against the baseline) give one corrected p-value and name one family; Dataset power lists the same
    pair with that p-value under the same family's name."""
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{app_url}/")
    wait_for_app(page)
    pick(page, "sidebar.dataset", "scifact")
    pick(page, "sidebar.metric", "nDCG")
    set_k(page, 10)
    said = {}
    for title in ("Overview", "Compare runs"):
        open_page(page, title)
        verdict = page.locator(".st-key-verdict")
        expect(verdict).to_contain_text(re.compile(r"hybrid-rrf60 (beats|is ahead of) bm25-stem"), timeout=TIMEOUT)
        found = re.search(
            r"p = ([<\d.]+), (Holm-corrected over \d+ comparison\(s\) \(all pairs of 3 runs[^)]*\))",
            verdict.inner_text(),
        )
        assert found, verdict.inner_text()
        said[title] = found.groups()
    assert said["Overview"] == said["Compare runs"]
    p, family = said["Overview"]
    assert p != "<0.0001"  # a p-value that tells one correction from another

    open_page(page, "Dataset power")
    short = family.split(" (")[0]  # the chip names the correction and its size; the caption the family in full
    expect(page.get_by_test_id("stMetricDelta").filter(has_text=short)).to_be_visible(timeout=TIMEOUT)
    chip = page.get_by_test_id("stMetricDelta").filter(has_text=short).first
    assert chip.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the chip's text is cut off"
    expect(page.get_by_test_id("stCaptionContainer").filter(has_text=family).first).to_be_visible(timeout=TIMEOUT)
    with page.expect_download(timeout=TIMEOUT) as download:
        page.locator(".st-key-power-pairs-csv").get_by_role("button").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8-sig"))))
    pair = [r for r in rows if {r["run_a"], r["run_b"]} == {"hybrid-rrf60", "bm25-stem"}]
    assert len(pair) == 1 and f"{float(pair[0]['p_value_corrected']):.4f}" == p, (pair, p)
