"""Memory bounded in bytes on a real server: what a session's uploads and pages made is released after it ends, and
an upload past the session's budget is refused with a clear message (``dashboard.ui.memory``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page

pytestmark = [pytest.mark.e2e]

N_QUERIES, DEPTH, N_RUNS = 2_000, 100, 12
SESSION_TTL = "2"  # seconds Streamlit keeps a disconnected session for it to reconnect


def rss(pid: int) -> int:
    """Resident bytes of a process (``VmRSS`` of /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def _write(folder: Path) -> tuple[Path, list[Path]]:
    """An evaluation set of ``N_QUERIES`` queries and ``N_RUNS`` different runs of ``DEPTH`` documents each."""
    rng = np.random.default_rng(7)
    relevant = rng.integers(0, 100_000, size=N_QUERIES)
    items = [
        {"query_id": f"Q{i:05d}", "query": f"question {i}", "relevant_docs": {f"D{relevant[i]}": 1}}
        for i in range(N_QUERIES)
    ]
    dataset = folder / "memory_eval.json"
    dataset.write_text(json.dumps(items))
    runs = []
    for r in range(N_RUNS):
        docs = rng.integers(0, 100_000, size=(N_QUERIES, DEPTH))
        hit = rng.random(N_QUERIES) < 0.5
        docs[hit, rng.integers(0, 10)] = relevant[hit]
        lines = [
            f"Q{i:05d} Q0 D{d} {k + 1} {DEPTH - k} run{r}" for i in range(N_QUERIES) for k, d in enumerate(docs[i])
        ]
        path = folder / f"run{r:02d}.trec"
        path.write_text("\n".join(lines) + "\n")
        runs.append(path)
    return dataset, runs


def _uploader(page: Page, key: str):  # type: ignore[no-untyped-def]
    return page.locator(f".st-key-upload-{key}").get_by_test_id("stFileUploaderDropzoneInput")


@pytest.mark.soak
def test_a_sessions_memory_goes_back_after_it_ends(browser: Browser, tmp_path: Path) -> None:
    dataset, runs = _write(tmp_path)
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": SESSION_TTL}
    with streamlit_server(env=env) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{url}/upload")
        wait_for_app(page)
        before = rss(url.pid)

        _uploader(page, "dataset").set_input_files(str(dataset))
        expect(page.get_by_text("Loaded memory_eval.json")).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)
        for path in runs:  # twelve uploads, one after the other, in this one session
            _uploader(page, "runs").set_input_files(str(path))
            expect(page.get_by_text(f"Loaded {path.name}")).to_be_visible(timeout=TIMEOUT)
            wait_for_app(page)
        open_page(page, "Overview")  # curves of the twelve runs
        expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)
        peak = rss(url.pid)
        context.close()

        deadline, after = time.monotonic() + 90, rss(url.pid)
        while after > 1.5 * before and time.monotonic() < deadline:
            time.sleep(1)
            after = rss(url.pid)
        print(f"\nserver RSS: {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} MiB after {N_RUNS} uploads, "
              f"{after / 2**20:.0f} MiB after the session ended")  # fmt: skip
        assert peak > 1.5 * before, "the uploads should have cost memory, or this test proves nothing"
        assert after <= 1.5 * before


def test_an_upload_past_the_sessions_budget_is_refused_with_the_reason(browser: Browser, tmp_path: Path) -> None:
    big = tmp_path / "too-big.trec"
    big.write_text("".join(f"q{i} Q0 d{i} 1 1.0 x\n" for i in range(60_000)))  # about 1.2 MB
    with streamlit_server(env={"RAGMETRICS_UPLOAD_SESSION_BYTES": "1MB"}) as url:
        page = browser.new_page()
        page.goto(f"{url}/upload")
        wait_for_app(page)
        expect(page.get_by_text("Files in this session's uploaders: 0 bytes of 1 MiB")).to_be_visible()
        _uploader(page, "runs").set_input_files(str(big))
        refused = page.get_by_text("Upload refused: This upload")
        expect(refused).to_be_visible(timeout=TIMEOUT)
        assert "a session may hold 1 MiB (RAGMETRICS_UPLOAD_SESSION_BYTES)" in refused.inner_text()
        expect(page.get_by_text("Loaded too-big.trec")).to_have_count(0)
        page.close()
