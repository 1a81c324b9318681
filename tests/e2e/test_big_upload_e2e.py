"""A 10,000-query run (1,000,000 rows) uploads through the browser and renders its overview (marker ``slow``).

The time it takes is printed, not asserted (speed is measured, not unit-tested):
``RAGMETRICS_BIG_QUERIES=100000 python -m pytest tests/e2e/test_big_upload_e2e.py -s``
measures the 100,000-query case.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.server import open_curves, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, legend_names, open_page

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.soak]

N_QUERIES = int(os.environ.get("RAGMETRICS_BIG_QUERIES", "10000"))
DEPTH = int(os.environ.get("RAGMETRICS_BIG_DEPTH", "100"))


def _write_big(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    n_docs = 200_000
    items, lines = [], []
    for i in range(N_QUERIES):
        qid = f"Q{i:05d}"
        relevant = rng.choice(n_docs, size=int(rng.integers(1, 4)), replace=False)
        items.append(
            {
                "query_id": qid,
                "query": f"question {i}",
                "relevant_docs": {f"D{d}": 1 for d in relevant},
                "category": ["pricing", "refund", "api", "specs", "faq"][i % 5],
                "difficulty": ["easy", "medium", "hard"][i % 3],
            }
        )
        docs = rng.choice(n_docs, size=DEPTH, replace=False)
        if rng.random() < 0.8:
            docs[int(rng.integers(0, 15))] = relevant[0]
        scores = np.sort(rng.random(DEPTH))[::-1] * 10
        lines.extend(f"{qid} Q0 D{d} {k + 1} {s:.6f} big" for k, (d, s) in enumerate(zip(docs, scores)))
    dataset, run = folder / "big_eval.json", folder / "big-run.trec"
    dataset.write_text(json.dumps(items))
    run.write_text("\n".join(lines) + "\n")
    return dataset, run


def test_ten_thousand_queries_upload_to_overview(page: Page, app_url: str, tmp_path: Path) -> None:
    dataset, run = _write_big(tmp_path)
    os.sync()  # the files were just written: their writeback to disk is not part of the upload being timed
    page.goto(f"{app_url}/upload")
    wait_for_app(page)
    start = time.perf_counter()
    page.locator(".st-key-upload-dataset").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(dataset))
    expect(page.get_by_text("Loaded big_eval.json")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    dataset_loaded = time.perf_counter()
    puts: list[float] = []  # the browser's upload request of the run, start to response (Streamlit's own route)
    page.on(
        "requestfinished", lambda r: puts.append(r.timing["responseEnd"] / 1000) if "upload_file" in r.url else None
    )
    page.locator(".st-key-upload-runs").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(run))
    if (
        N_QUERIES >= 50_000
    ):  # the page says what it is doing while it reads (a small run is read within the spinner's delay)
        expect(page.get_by_text("Reading and storing big-run.trec")).to_be_visible(timeout=TIMEOUT)
    loaded = page.get_by_text("Loaded big-run.trec")
    expect(loaded).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    uploaded = time.perf_counter()
    print(f"\nserver: {loaded.inner_text()}; the upload request took {', '.join(f'{t:.1f}s' for t in puts)}")
    open_page(page, "Overview")
    open_curves(page, TIMEOUT)
    assert legend_names(page) == ["big-run"]
    expect(page.get_by_text(f"{N_QUERIES:,} queries").first).to_be_visible()
    done = time.perf_counter()
    # later interactions are served from cache: another page, then the overview again
    open_page(page, "Breakdown")
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    again = time.perf_counter()
    open_page(page, "Overview")  # the curves stay open: the view carries them
    assert legend_names(page) == ["big-run"]
    revisit = time.perf_counter() - again
    print(
        f"\n{N_QUERIES:,} queries: dataset upload {dataset_loaded - start:.1f}s; run ({run.stat().st_size / 1e6:.0f} MB) "
        f"upload+validation {uploaded - dataset_loaded:.1f}s, overview {done - uploaded:.1f}s, "
        f"run upload to overview {done - dataset_loaded:.1f}s; total {done - start:.1f}s; "
        f"overview again after Breakdown {revisit:.1f}s"
    )
