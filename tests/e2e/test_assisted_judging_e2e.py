"""Assisted judging in a real browser against a real server, with a stub OpenAI-compatible endpoint on 127.0.0.1
registered through RAGMETRICS_MODELS in the server's environment.

The endpoint judge is run over the pool; the stub holds its answers after the first few, and the server is
stopped mid-run: the labels graded so far are in the store. A new server on the same data resumes the judge
over the rest only. People label the planned sample through the page, across a reload and another restart; no
label is lost, the agreement panel and the corrected numbers appear, the labels are saved as a qrels version and
its share link, opened in a fresh browser, shows the same version with the same numbers.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from dashboard.core.judge import pair_key
from dashboard.data.workspace import Workspace
from ragmetrics.store.database import Store, claims_table
from tests.dashboard.test_assisted import N_QUERIES, TRUTH, assist_dataset, judge_grade, stub_answer
from tests.e2e.server import share_code, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT

pytestmark = pytest.mark.e2e

PAIRS = 2 * N_QUERIES
HELD_AFTER = 8
"""The stub answers this many prompts, then holds the rest until released (a judge caught mid-run)."""
PLANNED = re.compile(r"(\d+) of the (\d+) queries of the plan are labelled")


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


def _seed(folder: Path) -> dict[str, str]:
    ws = Workspace(_store(folder))
    dataset, runs = assist_dataset()
    entry = ws.add_dataset(dataset, source="assist-mini")
    ids = {"dataset": entry.id, **{run.name: ws.add_run(entry.id, run).id for run in runs}}
    ws.store.engine.dispose()
    return ids


def _labels(folder: Path, dataset: str):  # type: ignore[no-untyped-def]
    store = _store(folder)
    try:
        return Workspace(store).lineage_labels(dataset)
    finally:
        store.engine.dispose()


def _lapse_claims(folder: Path) -> None:
    """The pair a reloaded or stopped tab held is no longer held, as when its claim lapses
    (:data:`ragmetrics.store.database.CLAIM_SECONDS` after the tab went): the plan's next pair is offered again."""
    store = _store(folder)
    with store.engine.begin() as conn:
        conn.execute(sa.update(claims_table).values(expires_at=0.0))
    store.engine.dispose()


def _run_judge(page: Page) -> None:
    box = page.locator(".st-key-judge-run_judge").get_by_role("combobox")
    for _ in range(5):  # a rerun arriving as the list opens closes it: open it again
        wait_for_app(page)
        box.click()
        try:
            page.get_by_role("option", name="endpoint", exact=True).click(timeout=5_000)
            break
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")
    expect(box).to_have_value("endpoint", timeout=TIMEOUT)
    expect(page.locator(".st-key-judge-run_model").get_by_role("combobox")).to_have_value("stubjudge")
    page.get_by_role("button", name="Run the judge over the pool").click()


def _follow_plan(page: Page) -> None:
    page.locator(".st-key-judge-order").get_by_text("the planned human sample").click()
    wait_for_app(page)


def _planned(page: Page) -> int:
    text = page.get_by_test_id("stMarkdownContainer").filter(has_text="queries of the plan are labelled").first
    found = PLANNED.search(text.inner_text(timeout=TIMEOUT))
    assert found
    return int(found.group(1))


def _label_shown(page: Page, given: list[tuple[str, str, int]]) -> None:
    """Give the pair shown its true grade with the button drawn for that pair (its key names the pair: a page that
    reran to another pair between reading the header and the click has no such button, and the pair is read again);
    wait until the page shows another pair."""
    for _ in range(5):
        wait_for_app(page)
        header = page.get_by_test_id("stMarkdownContainer").filter(has_text="unjudged ·").first
        doc = header.locator("strong").first.inner_text(timeout=TIMEOUT)
        query = doc.rsplit("-", 1)[0]
        grade = TRUTH[(query, doc)]
        button = page.locator(f".st-key-judge-grade-{grade}-{pair_key(query, doc)}").get_by_role("button")
        try:
            button.click(timeout=5_000)
            break
        except PlaywrightTimeoutError:
            continue
    else:
        raise AssertionError("the pair shown kept changing before its grade button could be pressed")
    given.append((query, doc, grade))
    expect(
        page.get_by_test_id("stMarkdownContainer").filter(has_text="unjudged ·").first.locator("strong").first
    ).not_to_have_text(doc, timeout=TIMEOUT)
    wait_for_app(page)


def _label_until(page: Page, planned: int, given: list[tuple[str, str, int]], most: int) -> None:
    for _ in range(most):
        if _planned(page) >= planned:
            return
        _label_shown(page, given)
    assert _planned(page) >= planned


def test_judge_label_the_plan_restart_and_share(
    page: Page, browser: Browser, tmp_path: Path, model_stub, dashboard_python: str
) -> None:
    ids = _seed(tmp_path)
    release, answered, lock = threading.Event(), [0], threading.Lock()

    def answer(messages: list[dict]) -> str:
        with lock:
            answered[0] += 1
            late = answered[0] > HELD_AFTER
        if late:
            release.wait(120)
        return stub_answer(messages)

    stub = model_stub(answer)
    env = {
        "RAGMETRICS_SAMPLES": "off",
        "RAGMETRICS_MODELS": f"stubjudge=openai:{stub.url}?model=stub-model&cache=off&attempts=1&timeout=120",
    }
    query = f"?ds={ids['dataset']}&runs={ids['alpha']},{ids['beta']}&m=ndcg&k=3"
    given: list[tuple[str, str, int]] = []

    # 1. the judge starts; the stub holds its answers after the first few; the server stops mid-run
    with streamlit_server(data_dir=tmp_path, env=env, python=dashboard_python) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        expect(page.get_by_text("No judge has labelled this pool yet.")).to_be_visible(timeout=TIMEOUT)
        _run_judge(page)
        progress = re.compile(rf"endpoint judge \(stubjudge\): {HELD_AFTER} of {PAIRS} pairs graded")
        expect(page.get_by_text(progress)).to_be_visible(timeout=TIMEOUT)
        stored = _labels(tmp_path, ids["dataset"])
        assert len(stored) == HELD_AFTER and stored["source"].str.startswith("judge:endpoint@1#").all()
        page.reload()  # the job runs on in the server: the reloaded page shows its progress, with Cancel
        wait_for_app(page)
        expect(page.get_by_text(progress)).to_be_visible(timeout=TIMEOUT)
        expect(page.locator(".st-key-judge-cancel_job").get_by_role("button")).to_be_visible()
    release.set()

    # 2. a new server on the same data: the judge's labels are there; run again, it grades only the rest
    _lapse_claims(tmp_path)
    with streamlit_server(data_dir=tmp_path, env=env, python=dashboard_python) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        expect(page.get_by_text("People have labelled none of the judge's pairs yet")).to_be_visible(timeout=TIMEOUT)
        _run_judge(page)
        rest = PAIRS - HELD_AFTER
        expect(page.get_by_text(f"graded {rest} of {rest} pairs; {rest} label(s) stored")).to_be_visible(
            timeout=TIMEOUT
        )
        stored = _labels(tmp_path, ids["dataset"])
        assert len(stored) == PAIRS and len(stored.drop_duplicates(["query_id", "doc_id"])) == PAIRS
        assert all(judge_grade(q, d) == g for q, d, g in zip(stored.query_id, stored.doc_id, stored.label))

        # people label the planned sample: the first planned query, a reload, the second
        _follow_plan(page)
        assert _planned(page) == 0
        _label_until(page, 1, given, 4)
        page.reload()
        wait_for_app(page)
        assert _planned(page) == 1  # nothing lost
        _lapse_claims(tmp_path)
        _follow_plan(page)
        _label_until(page, 2, given, 6)

    # 3. another restart: every label is there; the third planned query, then agreement and corrected numbers
    _lapse_claims(tmp_path)
    with streamlit_server(data_dir=tmp_path, env=env, python=dashboard_python) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        assert _planned(page) == 2
        stored = _labels(tmp_path, ids["dataset"])
        people = stored[stored["source"] == ""]
        assert sorted(zip(people.query_id, people.doc_id, people.label)) == sorted(given)
        _follow_plan(page)
        _label_until(page, 3, given, 8)
        humans = len(given)
        badge = f"{humans} human / {PAIRS - humans} judge labels"
        expect(page.get_by_text(badge)).to_be_visible(timeout=TIMEOUT)
        both = page.get_by_test_id("stMetric").filter(has_text="Pairs both labelled")
        expect(both).to_contain_text(str(humans), timeout=TIMEOUT)
        expect(page.get_by_test_id("stMetric").filter(has_text="Weighted kappa (linear)")).to_be_visible()
        for run in ("alpha", "beta"):  # 3 planned queries labelled: too few to tell, no corrected interval
            too_few = r"\(too few to tell \(fewer than 10 human-labelled queries: no interval, no p-value\)\)"
            line = page.get_by_text(
                re.compile(rf"^{run}: corrected \d\.\d{{3}} {too_few} · judge-only .* · human-only ")
            )
            expect(line).to_be_visible(timeout=TIMEOUT)
        numbers = page.get_by_text(re.compile(r"^beta: corrected ")).inner_text()
        shown = page.get_by_text(re.compile(r"^alpha: corrected ")).inner_text()
        expect(page.get_by_text(re.compile(r"would shrink the corrected interval"))).to_have_count(0)

        # 4. saved as a qrels version; its share link, in a fresh browser, opens that version with the same numbers
        page.locator(".st-key-judge-save").get_by_role("button").click()
        wait_for_app(page)
        expect(page.get_by_text(re.compile(r"Saved \d+ label\(s\) as v\d+: "))).to_be_visible(timeout=TIMEOUT)
        store = _store(tmp_path)
        version = store.versions(ids["dataset"])["id"].iloc[0]
        store.engine.dispose()
        expect(page).to_have_url(re.compile(rf"[?&]ds={version}(&|$)"), timeout=TIMEOUT)
        wait_for_app(page)
        link = share_code(page)
        assert f"ds={version}" in link
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            fresh = context.new_page()
            fresh.goto(link)
            wait_for_app(fresh)
            expect(fresh).to_have_url(re.compile(rf"[?&]ds={version}(&|$)"), timeout=TIMEOUT)
            expect(fresh.get_by_text(badge)).to_be_visible(timeout=TIMEOUT)
            expect(fresh.get_by_text(shown)).to_be_visible(timeout=TIMEOUT)
            expect(fresh.get_by_text(numbers, exact=True)).to_be_visible(timeout=TIMEOUT)
            picker = fresh.locator(".st-key-sidebar-dataset").get_by_role("combobox")
            expect(picker).to_have_value(re.compile(r"qrels v1 by anonymous"), timeout=TIMEOUT)
        finally:
            context.close()
