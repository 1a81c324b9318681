"""The judging loop in a real browser, across a reload and a server restart: every label is kept.

A store holds a small graded dataset with a corpus (one document's text is hostile HTML) and two runs with four
unjudged documents in their top 3. The Judge page labels pairs with its buttons and with a grade's key, a
reload shows them, the server process is stopped and a new one started on the same store (none lost), a third
label is given, and "Save as a new qrels version" makes a new dataset whose qrels hold the three labels (read
from the store directly).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from dashboard.data.workspace import Workspace
from ragmetrics.store.database import Store, claims_table
from tests.dashboard.test_judge_apptest import judge_dataset
from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT

pytestmark = pytest.mark.e2e

HOSTILE_SHOWN = '<img src=x onerror="alert(1)"> **not bold** [link](javascript:alert(1))'
SUMMARY = re.compile(r"(\d+) of (\d+) unjudged pairs.*?(\d+) label\(s\) given on this version", re.S)


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


def _claims(folder: Path) -> int:
    """How many pairs judging sessions hold in the store."""
    store = _store(folder)
    try:
        with store.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(claims_table)).scalar_one())
    finally:
        store.engine.dispose()


def _seed(folder: Path) -> dict[str, str]:
    store = _store(folder)
    ws = Workspace(store)
    dataset, runs = judge_dataset()
    entry = ws.add_dataset(dataset, source="judge-mini")
    ids = {"dataset": entry.id, **{run.name: ws.add_run(entry.id, run).id for run in runs}}
    store.engine.dispose()
    return ids


def _summary(page: Page) -> tuple[int, int, int]:
    """(left to judge, pooled, labels given and not saved) as the page says."""
    text = page.get_by_test_id("stMarkdownContainer").filter(has_text="unjudged pairs").first.inner_text()
    found = SUMMARY.search(text)
    assert found, text
    left, pooled, given = (int(g) for g in found.groups())
    return left, pooled, given


def _wait_summary(page: Page, left: int, given: int) -> None:
    for _ in range(100):
        wait_for_app(page)
        if _summary(page)[0::2] == (left, given):
            return
        page.wait_for_timeout(100)
    assert _summary(page)[0::2] == (left, given)


def _shown_doc(page: Page) -> str:
    """The id of the document the page asks about (the bold id in its header)."""
    header = page.get_by_test_id("stMarkdownContainer").filter(has_text="unjudged ·").first
    return header.locator("strong").first.inner_text()


def _next_doc(page: Page, labelled: str) -> str:
    """The document shown once the page has moved past ``labelled``, the one just labelled (a labelled pair is not
    shown again): the summary can read the new counts while the header above it still names the labelled one."""
    for _ in range(100):
        wait_for_app(page)
        doc = _shown_doc(page)
        if doc != labelled:
            return doc
        page.wait_for_timeout(100)
    raise AssertionError(f"the page still asks about {labelled!r}, labelled")


def _check_hostile(page: Page, doc: str, dialogs: list[str]) -> bool:
    """When the hostile document is shown, its text is shown as text: no image, no bold, no link, no dialog."""
    if doc != "d4":
        return False
    expect(page.get_by_text(HOSTILE_SHOWN, exact=True)).to_be_visible(timeout=TIMEOUT)
    main = page.get_by_test_id("stMain")
    expect(main.locator("img[src='x']")).to_have_count(0)
    expect(main.locator("a[href^='javascript']")).to_have_count(0)
    expect(main.locator("strong", has_text="not bold")).to_have_count(0)
    assert dialogs == []
    return True


def test_labels_survive_a_reload_and_a_restart_and_become_a_version(page: Page, tmp_path: Path) -> None:
    ids = _seed(tmp_path)
    query = f"?ds={ids['dataset']}&runs={ids['alpha']},{ids['beta']}&m=ndcg&k=3"
    env = {"RAGMETRICS_SAMPLES": "off"}
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    given: list[tuple[str, int]] = []
    hostile_seen = False

    with streamlit_server(data_dir=tmp_path, env=env) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        assert _summary(page) == (4, 4, 0)
        # a click on a grade's button
        doc = _shown_doc(page)
        hostile_seen |= _check_hostile(page, doc, dialogs)
        page.locator("[class*='st-key-judge-grade-1-']").get_by_role("button").click()
        given.append((doc, 1))
        _wait_summary(page, 3, 1)
        # the grade's key
        doc = _next_doc(page, given[0][0])
        hostile_seen |= _check_hostile(page, doc, dialogs)
        page.get_by_role("heading", name="Judge", level=1).click()  # focus on the page, not on a field
        page.keyboard.press("0")
        given.append((doc, 0))
        _wait_summary(page, 2, 2)
        next_up = _next_doc(page, given[1][0])
        # a reload keeps them (they are in the store, not in the browser session)
        page.reload()
        _wait_summary(page, 2, 2)
        held_by_second = _shown_doc(page)  # next_up's other pair while the first session still held next_up, else
        # next_up itself: the sweeper may have let the first session's pair go before the second claimed one
        pending = _store(tmp_path).pending_labels(ids["dataset"])
        assert sorted(zip(pending["doc_id"], pending["label"])) == sorted(given)
        # the reloaded tab's old session lets its pair go once the sweeper sees its browser gone (not after the
        # claim's two minutes): then only the new session holds one, and a further reload is shown the pair that
        # session does not hold, not a pair another judge is being shown
        deadline = time.monotonic() + 30
        while _claims(tmp_path) != 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _claims(tmp_path) == 1
        page.reload()
        _wait_summary(page, 2, 2)
        shown = _shown_doc(page)
        assert shown != held_by_second and next_up in (shown, held_by_second), (shown, held_by_second, next_up)
        expect(page.get_by_text("Another judge is being shown this pair too")).to_have_count(0)

    # the server process is gone; a new one on the same store finds every label
    with streamlit_server(data_dir=tmp_path, env=env) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        assert _summary(page) == (2, 4, 2)
        doc = _shown_doc(page)
        assert doc not in {d for d, _ in given}
        hostile_seen |= _check_hostile(page, doc, dialogs)
        page.locator("[class*='st-key-judge-grade-2-']").get_by_role("button").click()
        given.append((doc, 2))
        _wait_summary(page, 1, 3)
        hostile_seen |= _check_hostile(page, _next_doc(page, doc), dialogs)
        assert hostile_seen  # the hostile document was among the four shown

        page.locator(".st-key-judge-save").get_by_role("button").click()
        wait_for_app(page)
        expect(page.get_by_text("Saved 3 label(s) as v1:")).to_be_visible(timeout=TIMEOUT)
        picker = page.locator(".st-key-sidebar-dataset").get_by_role("combobox")
        expect(picker).to_have_value(re.compile(r"^judge-mini .* · qrels v1 by anonymous, "), timeout=TIMEOUT)

        store = _store(tmp_path)
        versions = store.versions(ids["dataset"])
        assert versions["n_labels"].tolist() == [3] and versions["author"].tolist() == ["anonymous"]
        new = versions["id"].iloc[0]
        expect(page).to_have_url(re.compile(rf"[?&]ds={new}(&|$)"), timeout=TIMEOUT)  # the link pins the version
        qrels = store.get_dataset(new).qrels
        labelled = qrels[qrels["doc_id"].isin([d for d, _ in given])]
        assert sorted(zip(labelled["doc_id"], labelled["relevance"])) == sorted(given)
        assert len(qrels) == 3 + 3  # the three judgments it had, and the three labels
        assert store.pending_labels(ids["dataset"]).empty
        assert sorted(store.list_runs(new)["id"]) == sorted([ids["alpha"], ids["beta"]])
        # the new version is what the page now judges: one pair is left, nothing pending
        _wait_summary(page, 1, 0)
        store.engine.dispose()
