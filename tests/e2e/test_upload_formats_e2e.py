"""Every extension of the formats table uploads in the browser: qrels named ``*.tab`` and ``*.qrel`` (which the
uploader refused before its types came from ``ragmetrics.io.FORMATS``) are read and stored under their content id."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ragmetrics.io import load_dataset
from ragmetrics.store.database import Store, dataset_id
from tests.e2e.server import give_files, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import DATA, TIMEOUT, open_page

pytestmark = pytest.mark.e2e

FILES = (DATA / "mini-qrels.tab", DATA / "mini.qrel")


def test_tab_and_qrel_qrels_upload_and_are_stored(page: Page, tmp_path: Path) -> None:
    expected = {path.name: dataset_id(load_dataset(path)) for path in FILES}
    assert len(set(expected.values())) == 2  # two different datasets
    with streamlit_server(data_dir=tmp_path, env={"RAGMETRICS_SAMPLES": "off"}) as base:
        page.goto(f"{base}/upload")
        wait_for_app(page)
        for path in FILES:
            # one dataset per upload: the file before is taken out of the uploader first (files in it together
            # are one dataset: judgments, queries, corpus)
            give_files(page, "upload.dataset", path, replace=True)
            loaded = page.get_by_test_id("stAlertContentSuccess").filter(has_text=f"Loaded {path.name}")
            expect(loaded).to_be_visible(timeout=TIMEOUT)
            expect(loaded).to_contain_text(expected[path.name])  # "stored as <content id>"
            wait_for_app(page)
            # the browser did not refuse the file type, and nothing failed
            expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            expect(page.get_by_text("is not allowed")).to_have_count(0)
        store = Store(f"sqlite:///{(tmp_path / 'ragmetrics.sqlite').resolve()}")
        try:
            stored = store.list_datasets()
        finally:
            store.engine.dispose()
        assert sorted(stored["id"]) == sorted(expected.values())
        assert dict(zip(stored["id"], stored["n_queries"])) == {
            expected["mini-qrels.tab"]: 6,
            expected["mini.qrel"]: 12,
        }
        # the Workspace page lists both
        open_page(page, "Workspace")
        expect(page.get_by_test_id("stDataFrame").first).to_be_visible(timeout=TIMEOUT)
        expect(page.get_by_text("2 dataset(s)", exact=False)).to_be_visible(timeout=TIMEOUT)
