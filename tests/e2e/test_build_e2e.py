"""Building a dataset in a real browser: 10 candidates generated from the SciFact sample's corpus with the extractive
generator (cancelled once, then resumed), reviewed with the keyboard (6 accepted, 2 edited, 2 rejected) across a reload and a server restart on the
same store; the dataset made has 8 queries with their provenance, the built-in BM25 run on it from "Run a
retriever" shows its numbers on the Overview, and a share link reopens it."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.core.share import ViewState, encode
from dashboard.data import samples
from dashboard.data.workspace import Workspace
from ragmetrics import align
from ragmetrics.store.candidates import CandidateStore
from ragmetrics.store.database import Store
from tests.e2e.server import share_code, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page
from tests.e2e.test_share_e2e import NO_SAMPLES, Server

pytestmark = pytest.mark.e2e

GENERATION_TIMEOUT = 180_000  # the corpus is tokenized and indexed twice (the filters' retrievers) first
# the decision per candidate, in order; "reload" and "restart" happen before the candidate they precede
PLAN = ["a", "a", "x", "reload", "a", "e", "a", "restart", "a", "x", "e", "a"]


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


def _showing(page: Page, position: int) -> None:
    expect(page.get_by_text(f"Candidate {position} of 10", exact=False)).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)


def _overview_numbers(page: Page) -> list[dict[str, str]]:
    with page.expect_download(timeout=TIMEOUT) as download:
        page.locator(".st-key-overview-metrics-csv").get_by_role("button").click()
    return list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8-sig"))))


def test_build_review_and_use_a_generated_dataset(page: Page, browser: Browser, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    workspace = Workspace(_store(data))
    workspace.seed(lambda: samples.iter_samples(names=["scifact"]))  # SciFact with its corpus, as a new store has it
    scifact = next(d for d in workspace.datasets() if d.name == "scifact")
    workspace.store.engine.dispose()

    server = Server(data_dir=data, env=NO_SAMPLES).start()
    try:
        address = f"/build?{urlencode(encode(ViewState(page='build', dataset=scifact.id)))}"
        page.goto(server.base + address)
        wait_for_app(page)
        expect(page.locator(".st-key-build-generator input[role='combobox']")).to_have_value("extractive")
        page.get_by_role("button", name="Generate").click()
        # cancelled while the corpus is read and indexed (seconds), then resumed
        expect(page.get_by_test_id("stProgress")).to_contain_text(
            re.compile(r"(Reading and indexing the corpus|Generating): \d+ of 10 candidates stored"), timeout=TIMEOUT
        )
        page.get_by_role("button", name="Cancel").click()
        stopped = page.get_by_text(re.compile(r"Generation stopped after \d+ of 10 candidates"))
        expect(stopped).to_be_visible(timeout=GENERATION_TIMEOUT)
        wait_for_app(page)
        page.get_by_role("button", name="Resume").click()
        expect(page.get_by_text("10 of 10 candidates left to review", exact=False)).to_be_visible(
            timeout=GENERATION_TIMEOUT
        )
        expect(page.get_by_test_id("stProgress")).to_have_count(0, timeout=GENERATION_TIMEOUT)  # flags are in
        position = 1
        edited: list[str] = []
        for step in PLAN:
            if step in ("reload", "restart"):
                # the last key's review reached the server (the page moved on) before the page or server goes: a
                # key pressed as the server dies never arrives, which no page can keep
                _showing(page, position)
            if step == "reload":
                page.reload()
            elif step == "restart":
                server.restart()
                page.goto(server.base + address)
            else:
                _showing(page, position)
                page.get_by_role("heading", name="Build dataset", level=1).click()  # focus on the page, not a field
                if step == "e":
                    page.keyboard.press("e")
                    form = page.get_by_test_id("stForm")
                    box = form.get_by_label("Query", exact=True)
                    expect(box).to_be_visible(timeout=TIMEOUT)
                    wait_for_app(page)  # the run that opened the form is over before it is submitted
                    text = f"Which finding does edited candidate {position} describe?"
                    box.fill(text)
                    box.press("Enter")  # submits the form
                    edited.append(text)
                else:
                    page.keyboard.press(step)
                position += 1
                continue
            wait_for_app(page)
        expect(page.get_by_text("Every candidate of this batch is reviewed.")).to_be_visible(timeout=TIMEOUT)
        expect(page.get_by_text("0 of 10 candidates left to review: 6 accepted, 2 edited, 2 rejected.")).to_be_visible()

        page.get_by_role("button", name="Make dataset").click()
        expect(page.get_by_text(re.compile(r"stored: 8 queries with their provenance"))).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)

        store = _store(data)
        batch = CandidateStore(store).batches(scifact.id)[0]
        assert batch.dataset_id is not None
        built = store.get_dataset(batch.dataset_id)
        assert len(built.queries) == 8 and set(edited) <= set(built.queries["query"])
        provenance = [json.loads(p) for p in built.queries["provenance"]]
        assert all(p["generator"] == "extractive" and p["prompt_version"] and p["seed"] == "0" for p in provenance)
        assert all(re.fullmatch(r".+\[\d+:\d+\]", p["source_span"]) for p in provenance)
        assert sorted(p["review"] for p in provenance) == ["accepted"] * 6 + ["edited"] * 2
        assert batch.parent == scifact.id
        decisions = [c.decision for c in CandidateStore(store).candidates(batch.id)]
        assert decisions == ["accepted", "accepted", "rejected", "accepted", "edited", "accepted", "accepted",
                             "rejected", "edited", "accepted"]  # fmt: skip

        # the new dataset is the sidebar's: run the built-in BM25 on it
        open_page(page, "Run a retriever")
        form = page.get_by_test_id("stForm")
        expect(form.locator("input[role='combobox']").first).to_have_value(re.compile("^BM25 \\(built in"))
        form.get_by_label("Run name").fill("bm25-on-built")
        form.get_by_role("button", name="Run it").click()
        expect(page.get_by_text(re.compile(r"run “bm25-on-built” stored"))).to_be_visible(timeout=120_000)
        wait_for_app(page)

        open_page(page, "Overview")
        rows = _overview_numbers(page)
        runs = store.list_runs(batch.dataset_id)
        run = store.get_run(runs.loc[runs["name"] == "bm25-on-built", "id"].item())
        alignment = align(built, run)
        assert [r["run"] for r in rows] == ["bm25-on-built"]
        assert int(rows[0]["queries"]) == alignment.n_queries
        ndcg = next(c for c in rows[0] if c.startswith("ndcg@"))
        assert float(rows[0][ndcg]) == pytest.approx(alignment.mean(ndcg), abs=1e-9)

        link = share_code(page)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            other = context.new_page()
            other.goto(server.url(link))
            wait_for_app(other)
            expect(other.get_by_role("heading", name="Overview", level=1)).to_be_visible(timeout=TIMEOUT)
            picked = other.locator(".st-key-sidebar-dataset input[role='combobox']").first
            expect(picked).to_have_value(re.compile(re.escape(built.name)))
            assert _overview_numbers(other) == rows
        finally:
            context.close()
    finally:
        server.stop()
