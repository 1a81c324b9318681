"""Run health in a real browser: a run whose ids do not meet the qrels is refused where the user looks, with the
likely cause and the fix the library tried, applied in place; stored only when the user insists.

CMRC 2018's qrels judge chunks (``DEV_3_C0``); its BM25 run uploaded with the chunk pattern
``(?P<doc>.+)_C\\d+$`` names documents (``DEV_3``): nothing meets, so the Upload page refuses it, saying the qrels
judge chunks while the run was mapped to documents. Stored anyway, the Overview says so in red. The same run against
SciFact's qrels names another dataset's queries: refused, with no override. Against paragraph-level qrels (the
chunks' documents), the chunk run is refused with the chunk pattern that fixes it; one click applies it and the
run is stored, mapped, and selected.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.server import give_files, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CMRC_QRELS = REPO / "sample_runs" / "cmrc2018" / "qrels.tsv"
CMRC_RUN = REPO / "sample_runs" / "cmrc2018" / "runs" / "bm25-jieba.trec.gz"
SCIFACT_QRELS = REPO / "tests" / "data" / "scifact" / "qrels.tsv"
PATTERN = r"(?P<doc>.+)_C\d+$"


def _upload(page: Page, key: str, path: Path, *, loaded: bool = True) -> None:
    """Upload one file into the uploader ``key``; wait for it to be loaded (or, ``loaded=False``, refused)."""
    give_files(page, key, path, replace=True)  # one file per upload here
    outcome = "stAlertContentSuccess" if loaded else "stAlertContentError"
    expect(page.get_by_test_id(outcome).filter(has_text=path.name)).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)


def _set_pattern(page: Page, value: str) -> None:
    expander = page.get_by_test_id("stExpander").filter(has_text="Chunk ids → documents")
    field = page.locator(".st-key-upload-chunk_pattern").get_by_test_id("stTextInputField")
    if not field.is_visible():
        expander.get_by_text("Chunk ids → documents").click()
    field.fill(value)
    field.press("Enter")
    wait_for_app(page)


def test_no_overlap_names_its_cause_in_red(page: Page, tmp_path: Path) -> None:
    with streamlit_server(data_dir=tmp_path, env={"RAGMETRICS_SAMPLES": "off"}) as base:
        page.goto(f"{base}/upload")
        wait_for_app(page)
        _upload(page, "upload.dataset", CMRC_QRELS)
        _set_pattern(page, PATTERN)
        _upload(page, "upload.runs", CMRC_RUN, loaded=False)
        refused = page.get_by_test_id("stAlertContentError").filter(has_text=CMRC_RUN.name)
        expect(refused).to_contain_text("the qrels judge chunks, but the run was mapped to documents")
        expect(refused).to_contain_text("Not stored.")
        expect(page.get_by_text("Upload at least one run")).to_be_visible()  # nothing stored, nothing selected
        page.get_by_role("button", name="Store it anyway (every metric 0)").click()
        wait_for_app(page)
        expect(page.get_by_text("chunks mapped to documents by pattern")).to_be_visible(timeout=TIMEOUT)
        red = page.get_by_test_id("stAlertContentError").filter(has_text="no overlap with the judgments")
        expect(red).to_have_count(1, timeout=TIMEOUT)
        expect(red).to_contain_text("the qrels judge chunks, but the run was mapped to documents")
        expect(red).to_contain_text("0 of 812 ranked queries have a judged document")
        checks = page.get_by_test_id("stMetric").filter(has_text="Checks to look at")
        expect(checks.get_by_test_id("stMetricValue")).to_have_text("1")

        # the result pages say it in red instead of plotting zeros as if they meant something
        open_page(page, "Overview")
        banner = page.get_by_test_id("stAlertContentError").filter(has_text="its numbers below mean nothing")
        expect(banner).to_have_count(1, timeout=TIMEOUT)
        expect(banner).to_contain_text("bm25-jieba")

        # the same run against SciFact's qrels: another dataset's queries, refused at upload (nothing stored)
        open_page(page, "Upload")
        _upload(page, "upload.dataset", SCIFACT_QRELS)
        _set_pattern(page, "")
        _upload(page, "upload.runs", CMRC_RUN, loaded=False)
        red = page.get_by_test_id("stAlertContentError").filter(has_text="none of its queries is a query of dataset")
        expect(red).to_have_count(1, timeout=TIMEOUT)
        expect(red).to_contain_text("likely made for another dataset")
        expect(red).to_contain_text("Not stored; upload it under the dataset it was made for")
        expect(red).not_to_contain_text("--allow-no-overlap")
        expect(page.get_by_role("button", name="Store it anyway (every metric 0)")).to_have_count(0)
        expect(page.get_by_text("Upload at least one run")).to_be_visible()
        expect(page.get_by_test_id("stException")).to_have_count(0)


def test_a_chunk_run_against_document_qrels_is_refused_and_the_fix_applies_in_place(page: Page, tmp_path: Path) -> None:
    documents = tmp_path / "cmrc-documents.tsv"
    lines = CMRC_QRELS.read_text(encoding="utf-8").splitlines()
    documents.write_text(
        "\n".join(dict.fromkeys(re.sub(r"_C\d+(\s)", r"\1", line, count=1) for line in lines)) + "\n",
        encoding="utf-8",
    )
    with streamlit_server(data_dir=tmp_path / "store", env={"RAGMETRICS_SAMPLES": "off"}) as base:
        page.goto(f"{base}/upload")
        wait_for_app(page)
        _upload(page, "upload.dataset", documents)
        _upload(page, "upload.runs", CMRC_RUN, loaded=False)
        refused = page.get_by_test_id("stAlertContentError").filter(has_text=CMRC_RUN.name)
        expect(refused).to_contain_text("the run names chunks and the qrels judge the documents they come from")
        expect(page.get_by_text("Upload at least one run")).to_be_visible()
        page.get_by_role("button", name=re.compile(r"^Apply the chunk pattern .+ and load it again$")).click()
        wait_for_app(page)
        loaded = page.get_by_test_id("stAlertContentSuccess").filter(has_text=CMRC_RUN.name)
        expect(loaded).to_contain_text("chunks mapped to documents by pattern", timeout=TIMEOUT)
        field = page.locator(".st-key-upload-chunk_pattern").get_by_test_id("stTextInputField")
        expect(field).to_have_value(PATTERN)
        expect(page.get_by_test_id("stAlertContentError").filter(has_text="no overlap")).to_have_count(0)
        expect(page.get_by_test_id("stException")).to_have_count(0)
