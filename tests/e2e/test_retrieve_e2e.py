"""Live retrievers in a real browser: a retriever the deployer registered runs from the "Run a retriever" page with
progress and cancel, and its run lands in the workspace (Diagnosis then offers to run it again with a larger
top_k); "Try hybrid (+BM25)" on Diagnosis fuses the SciFact dense
run with the built-in BM25 and opens Compare on the fused run with its significance."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from dashboard.core.share import ViewState, encode
from dashboard.data import samples
from ragmetrics import align
from ragmetrics.store.database import Store, dataset_id, run_id
from tests.e2e.retrievers import SLOW_DELAY
from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page

pytestmark = pytest.mark.e2e

RETRIEVERS = "stub BM25=tests.e2e.retrievers:scifact_bm25; slow stub BM25=tests.e2e.retrievers:slow_scifact_bm25"


def _scifact():  # type: ignore[no-untyped-def]
    return next(s for s in samples.iter_samples(names=["scifact"]))


def _address(base: str, view: ViewState) -> str:
    return f"{base}/{view.page}?{urlencode(encode(view))}"


def test_a_registered_retriever_runs_from_the_page_with_progress_and_cancel(page: Page, tmp_path: Path) -> None:
    sample = _scifact()
    ds = dataset_id(sample.dataset)
    env = {"RAGMETRICS_RETRIEVERS": RETRIEVERS, "RAGMETRICS_CACHE_DIR": str(tmp_path / "answers")}
    with streamlit_server(data_dir=tmp_path / "data", env=env) as base:
        page.goto(_address(base, ViewState(page="retrieve", dataset=ds)))
        wait_for_app(page)
        form = page.get_by_test_id("stForm")
        form.get_by_test_id("stSelectbox").click()
        page.get_by_role("option", name="slow stub BM25").click()
        form.get_by_label("Run name").fill("stub-bm25")
        form.get_by_role("button", name="Run it").click()
        bar = page.get_by_test_id("stProgress")
        expect(bar).to_contain_text(re.compile(r"slow stub BM25: [1-9]\d* of 300 queries"), timeout=TIMEOUT)
        page.get_by_role("button", name="Cancel").click()
        cancelled = page.get_by_text(re.compile(r"Cancelled after \d+ of 300 queries"))
        expect(cancelled).to_be_visible(timeout=TIMEOUT)
        done_before = int(re.search(r"after (\d+) of", cancelled.inner_text()).group(1))  # type: ignore[union-attr]
        assert 0 < done_before < 300

        # the same retriever again: the answers so far come from the cache, the rest are asked
        form.get_by_test_id("stSelectbox").click()
        page.get_by_role("option", name="slow stub BM25").click()
        form.get_by_label("Run name").fill("stub-bm25")
        form.get_by_role("button", name="Run it").click()
        stored = page.get_by_text(re.compile(r"slow stub BM25: run “stub-bm25” stored, [\d,]+ rows for 300 queries"))
        expect(stored).to_be_visible(timeout=120_000)
        assert "latency p50" in stored.inner_text()
        wait_for_app(page)
        assert "stub-bm25" in page.get_by_test_id("stSidebar").inner_text()  # selected

        # Diagnosis offers to run the retriever that made it again with a larger top_k
        open_page(page, "Diagnosis")
        page.get_by_role("button", name="Re-run slow stub BM25 with top_k = 200").click()
        expect(page.get_by_role("heading", name="Run a retriever", level=1)).to_be_visible(timeout=TIMEOUT)
        # the stub serves at most the file's 100 documents: the same rows, which the store keeps once
        again = page.get_by_text(re.compile(r"gave the same rows as the stored run “stub-bm25” \(29,966 rows\)"))
        expect(again).to_be_visible(timeout=120_000)
    store = Store(f"sqlite:///{tmp_path / 'data' / 'ragmetrics.sqlite'}")
    runs = store.list_runs(ds)
    stored_id = runs.loc[runs["name"] == "stub-bm25", "id"].item()
    assert round(align(sample.dataset, store.get_run(stored_id)).mean("ndcg@10"), 4) == 0.6791  # the file's
    tags = store.tags(stored_id)  # the retriever's metadata, which Workspace and Compare show; tags belong to the
    # content, so the second retrieval (top_k = 200, the same rows) updated them
    assert tags["retriever.label"] == "slow stub BM25" and tags["top_k"] == "200" and tags["errors"] == "0"
    assert float(tags["latency.p50_ms"]) >= 1000 * SLOW_DELAY  # the stub's sleep per call


def test_try_hybrid_on_the_dense_run_opens_compare_with_its_significance(
    page: Page, tmp_path: Path, dashboard_python: str
) -> None:
    """On a server of the README's dashboard install only: the button's BM25 comes with it (no traceback)."""
    sample = _scifact()
    dense = next(r for r, _ in sample.runs if r.name.startswith("dense"))
    view = ViewState(page="diagnosis", dataset=dataset_id(sample.dataset), runs=(run_id(dense),))
    answers = {"RAGMETRICS_CACHE_DIR": str(tmp_path / "answers")}
    with streamlit_server(data_dir=tmp_path / "data", env=answers, python=dashboard_python) as base:
        page.goto(_address(base, view))
        wait_for_app(page)
        page.get_by_role("button", name="Try hybrid (+BM25)").click()
        fused = f"{dense.name} + BM25 (RRF)"
        expect(page.get_by_role("heading", name="Compare runs", level=1)).to_be_visible(timeout=120_000)
        wait_for_app(page)
        body = page.get_by_test_id("stMain")
        expect(body).to_contain_text(fused, timeout=TIMEOUT)
        said = rf"({re.escape(fused)} beats {re.escape(dense.name)} on .* by \+|No significant difference on .*: {re.escape(fused)} is ahead of {re.escape(dense.name)} by \+)"
        verdict = page.get_by_text(re.compile(said))
        expect(verdict.first).to_be_visible(timeout=TIMEOUT)
        said = verdict.first.inner_text()  # the interval adjusted as the p-value is, and excluding 0 when it is
        found = re.search(r"(\d+(?:\.\d+)?)% CI \(Holm-adjusted\) \[([-+]\d\.\d+), ([-+]\d\.\d+)\]\), (not )?significant at "
                          r"α = 0.05 \(p = ", said)  # fmt: skip
        assert found and (found.group(4) is None) == (float(found.group(2)) > 0 or float(found.group(3)) < 0), said
        expect(page.get_by_test_id("stException")).to_have_count(0)
