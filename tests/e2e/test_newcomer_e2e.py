"""A newcomer's first minutes on a fresh store: upload SciFact with a name, see no wall of red, choose a baseline,
read the verdict, and open the share link in a fresh browser to find every control as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import give_files, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, dropdown_options, open_page, set_k, switch_on

pytestmark = pytest.mark.e2e

SCIFACT = Path(__file__).resolve().parents[1] / "data" / "scifact"

READ_CONTROLS = """() => {
  const out = {};
  for (const box of document.querySelectorAll("[class*='st-key-']")) {
    const key = [...box.classList].find(c => c.startsWith('st-key-')).slice(7);
    if (box.querySelector("[class*='st-key-']")) continue;  // a container: its widgets are read themselves
    const chips = [...box.querySelectorAll('[data-tag]')].map(e => e.getAttribute('aria-label'));
    const combo = box.querySelector("input[role='combobox']");
    const number = box.querySelector("input[type='number']");
    const text = box.querySelector("input[type='text']:not([role='combobox'])");
    const radio = box.querySelector("input[type='radio']:checked");
    const check = box.querySelector("input[type='checkbox']");
    const pills = [...box.querySelectorAll("button[aria-checked='true']")].map(b => b.innerText.trim());
    if (box.querySelector('[data-testid=stMultiSelect]')) out[key] = chips;
    else if (combo) out[key] = combo.value;
    else if (number) out[key] = number.value;
    else if (text) out[key] = text.value;
    else if (radio) out[key] = radio.closest('label').innerText.trim();
    else if (check) out[key] = check.checked;
    else if (box.querySelector("[data-testid=stButtonGroup]")) out[key] = pills;
  }
  return out;
}"""
"""Every widget on the page that has a key, by key, as the browser shows it."""


def controls(page: Page) -> dict[str, object]:
    wait_for_app(page)
    return page.evaluate(READ_CONTROLS)


def pick(page: Page, key: str, label: str) -> None:
    box = page.locator(f".st-key-{key.replace('.', '-')}")
    dropdown_options(page, key).get_by_text(label, exact=True).click()
    wait_for_app(page)
    expect(box.locator("input[role='combobox']").first).to_have_value(label, timeout=TIMEOUT)


def test_a_newcomer_uploads_scifact_reads_the_verdict_and_shares_every_control(
    page: Page, browser: Browser, tmp_path: Path, dashboard_python: str
) -> None:
    """On a server of the README's dashboard install only (``dashboard_python``), as a newcomer has it."""
    with streamlit_server(data_dir=tmp_path, env={"RAGMETRICS_SAMPLES": "off"}, python=dashboard_python) as base:
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.goto(f"{base}/upload")
        wait_for_app(page)
        # the dataset, named and described before it is uploaded
        for key, text in (("upload-name", "SciFact test"), ("upload-description", "300 claims, BEIR test qrels")):
            field = page.locator(f".st-key-{key} input")
            field.fill(text)
            field.press("Enter")
            wait_for_app(page)
        give_files(page, "upload.dataset", [SCIFACT / "qrels.tsv", SCIFACT / "queries.jsonl"])
        expect(page.get_by_text("dataset “SciFact test”: 300 queries")).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)
        give_files(page, "upload.runs", [SCIFACT / "bm25-stem.trec.gz", SCIFACT / "hybrid-rrf60.trec.gz"])
        expect(page.get_by_text("Loaded hybrid-rrf60.trec.gz")).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)
        expect(page.locator(".st-key-sidebar-dataset input[role='combobox']")).to_have_value("SciFact test")

        # Overview: no target profile until one is picked, so no wall of red crosses and no red box
        open_page(page, "Overview")
        pick(page, "sidebar.metric", "nDCG")
        set_k(page, 10)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
        expect(page.get_by_text("✗", exact=False)).to_have_count(0)
        expect(page.locator(".st-key-overview-profile input[role='combobox']")).to_have_value("No targets")
        pick(page, "overview.baseline", "bm25-stem")
        verdict = page.locator(".st-key-verdict")
        expect(verdict).to_contain_text("hybrid-rrf60 beats bm25-stem on nDCG@10 by +0.034", timeout=TIMEOUT)
        expect(verdict).to_contain_text("significant at α = 0.05")
        expect(verdict).to_contain_text("Holm-corrected over")

        # Compare: the same verdict; change the controls a newcomer tries, then share the link
        open_page(page, "Compare runs")
        expect(page.locator(".st-key-verdict")).to_contain_text("hybrid-rrf60 beats bm25-stem on nDCG@10")
        pick(page, "compare.correction", "Bonferroni")
        pick(page, "compare.test", "Paired bootstrap")
        switch_on(page, "compare.by_query")
        page.locator(".st-key-compare-outcome").get_by_text("wins", exact=False).click()
        expect(page).to_have_url(re.compile(r"[?&]o=win(&|$)"), timeout=TIMEOUT)  # written at the end of the rerun
        wait_for_app(page)
        expect(page.locator(".st-key-verdict")).to_contain_text("Bonferroni-corrected over")
        shown = controls(page)
        assert shown["compare-correction"] == "Bonferroni" and shown["compare-test"] == "Paired bootstrap"
        assert str(shown["compare-outcome"]).startswith("wins") and shown["sidebar-k"] == "10"
        assert shown["compare-by_query"] is True and shown["compare-bounds"] is False
        assert shown["sidebar-k-preset"] == ["10"]
        assert shown["sidebar-runs"] == ["bm25-stem", "hybrid-rrf60"] and shown["sidebar-dataset"] == "SciFact test"
        link = page.url

        fresh = browser.new_context(viewport={"width": 1600, "height": 1000})
        try:
            other = fresh.new_page()
            other.goto(link)
            wait_for_app(other)
            expect(other.get_by_role("heading", name="Compare runs", level=1)).to_be_visible(timeout=TIMEOUT)
            expect(other.get_by_test_id("stException")).to_have_count(0)
            assert controls(other) == shown
            expect(other.locator(".st-key-verdict")).to_contain_text("Bonferroni-corrected over")
        finally:
            fresh.close()
