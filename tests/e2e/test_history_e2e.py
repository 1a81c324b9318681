"""History in a real browser: the Timeline of the five seeded SciFact versions flags the same step as
``ragmetrics history``, its controls go into the share link and the link reopens the view in a fresh browser;
the Leaderboard's system tag does the same; a run's metadata edited on the Workspace page is saved."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import Store
from ragmetrics.store.history import store_timeline
from tests.e2e.server import share_code, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT
from tests.e2e.test_share_e2e import NO_SAMPLES, Server, _choice, _pick
from tests.timeline_runs import DATES, DROP_VERSION, SCIFACT, seeded_versions

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def history_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, object]]]:
    folder = tmp_path_factory.mktemp("history-e2e")
    store = Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")
    ds = store.put_dataset(load_dataset(SCIFACT / "qrels.tsv", queries=SCIFACT / "queries.jsonl"), source="qrels.tsv")
    runs = [
        store.put_run(run.with_name(f"bm25-v{n}"), ds, tags={"date": date, "branch": "main", "system": "bm25"})
        for n, (run, date) in enumerate(zip(seeded_versions(), DATES), 1)
    ]
    dense = store.put_run(load_run(SCIFACT / "dense-all-minilm-l6-v2.trec.gz"), ds,
                          tags={"date": "2024-12-01", "branch": "dense-try", "system": "dense"})  # fmt: skip
    line = store_timeline(store, ds, "ndcg@10", where={"branch": "main"})  # what ragmetrics history says
    assert line.drops == [DROP_VERSION]
    server = Server(data_dir=folder, env=NO_SAMPLES).start()
    yield server, {"dataset": ds, "runs": runs, "dense": dense, "store": store, "line": line}
    server.stop()


def _open(page: Page, url: str, heading: str) -> None:
    page.goto(url)
    wait_for_app(page)
    expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def _flag(page: Page) -> str:
    alert = page.get_by_test_id("stAlertContentError").filter(has_text="First significant drop")
    expect(alert).to_be_visible(timeout=TIMEOUT)
    return alert.inner_text()


def _drop_points(page: Page) -> list[object]:
    chart = page.locator(".js-plotly-plot").first
    chart.wait_for(timeout=TIMEOUT)
    return chart.evaluate("g => g.data.filter(t => t.name === 'significant drop').map(t => Array.from(t.x))")


def test_a_runs_metadata_is_edited_on_the_workspace_page(browser: Browser, history_server) -> None:
    server, ids = history_server
    store = ids["store"]
    assert store.tags(ids["dense"])["date"] == "2024-12-01"
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        _open(page, f"{server.base}/workspace?ds={ids['dataset']}", "Workspace")
        _pick(page, "workspace.run", "dense-all-minilm-l6-v2")
        editor = page.locator(f"[class*='st-key-workspace-tags-{ids['dense']}']").get_by_test_id("stDataFrame")
        expect(editor).to_be_visible(timeout=TIMEOUT)
        editor.scroll_into_view_if_needed()
        box = editor.bounding_box()
        assert box is not None
        header = row_height = 35  # rows are ordered by key: branch, date, system
        wait_for_app(page)
        editor.dblclick(position={"x": box["width"] * 0.7, "y": header + 1 * row_height + row_height / 2})
        cell = page.locator("#portal textarea").first  # the cell's editor: filled and committed on the element itself
        expect(cell).to_be_visible(timeout=TIMEOUT)
        cell.fill("2024-12-02")
        cell.press("Enter")
        expect(page.get_by_text("Unsaved changes")).to_be_visible(timeout=TIMEOUT)  # the server has the edit
        wait_for_app(page)
        page.get_by_role("button", name="Save metadata").click()
        wait_for_app(page)
        expect(page.get_by_text("Saved 3 tag(s) of run")).to_be_visible(timeout=TIMEOUT)
        assert store.tags(ids["dense"]) == {"branch": "dense-try", "date": "2024-12-02", "system": "dense"}
    finally:
        context.close()


def test_the_timeline_flags_the_drop_and_its_share_link_reopens_it(browser: Browser, history_server) -> None:
    server, ids = history_server
    line = ids["line"]
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    _open(page, f"{server.base}/timeline?ds={ids['dataset']}&m=ndcg@10", "Timeline")
    flag = _flag(page)  # every run: the dense run (the oldest) is step 1, so the drop is step 6
    assert f"step {DROP_VERSION + 1}" in flag and "bm25-v5" in flag
    _pick(page, "timeline.where", "branch=main")
    _pick(page, "timeline.baseline", "bm25-v1")
    flag = _flag(page)
    step = line.frame.iloc[DROP_VERSION - 1]
    assert f"First significant drop at step {DROP_VERSION} ({DATES[DROP_VERSION - 1]})" in flag
    assert f"Δ {step.delta:+.4f}" in flag  # the number ragmetrics history prints
    assert _drop_points(page) == [[f"{DROP_VERSION} · {DATES[DROP_VERSION - 1]}"]]
    expect(page).to_have_url(re.compile(r"where=branch%3Dmain"), timeout=TIMEOUT)
    link = share_code(page)
    assert "where=branch%3Dmain" in link and f"base={ids['runs'][0]}" in link
    context.close()

    fresh = browser.new_context(viewport={"width": 1500, "height": 1100})  # another person, another session
    try:
        other = fresh.new_page()
        _open(other, link, "Timeline")
        again = _flag(other)
        assert again == flag
        assert _choice(other, "timeline.where") == "branch=main" and _choice(other, "timeline.baseline") == "bm25-v1"
        assert _drop_points(other) == [[f"{DROP_VERSION} · {DATES[DROP_VERSION - 1]}"]]
        # the flagged step opens in Compare: version 4 as the baseline, version 5 against it
        with fresh.expect_page() as opened:
            other.get_by_role("link", name="Open this step in Compare").click()
        compare = opened.value
        wait_for_app(compare)
        expect(compare.get_by_role("heading", name="Compare runs", level=1)).to_be_visible(timeout=TIMEOUT)
        assert _choice(compare, "compare.baseline") == "bm25-v4" and _choice(compare, "compare.run") == "bm25-v5"
        # a click on the drop's point in the chart opens the same step in Compare
        _click_point(other, f"{DROP_VERSION} · {DATES[DROP_VERSION - 1]}")
        expect(other.get_by_role("heading", name="Compare runs", level=1)).to_be_visible(timeout=TIMEOUT)
        wait_for_app(other)
        assert _choice(other, "compare.baseline") == "bm25-v4" and _choice(other, "compare.run") == "bm25-v5"
    finally:
        fresh.close()


def _click_point(page: Page, x: str) -> None:
    """Click the timeline chart's mean point whose x label is ``x`` (its pixel position from plotly's axes)."""
    wait_for_app(page)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    where = page.evaluate(
        """(x) => {
            const gd = document.querySelector('.js-plotly-plot');
            const trace = gd._fullData.find(t => t.name === 'mean');
            const i = trace.x.indexOf(x);
            const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
            return {x: box.left + xa._offset + xa.d2p(x), y: box.top + ya._offset + ya.d2p(trace.y[i])};
        }""",
        x,
    )
    page.mouse.move(where["x"], where["y"])
    page.mouse.click(where["x"], where["y"])


def test_the_leaderboard_share_link_keeps_its_system_tag(browser: Browser, history_server) -> None:
    server, _ = history_server
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        _open(page, f"{server.base}/leaderboard?m=ndcg@10", "Leaderboard")
        _pick(page, "leaderboard.system", "branch")
        expect(page.get_by_text("2 system(s) on 1 dataset(s)")).to_be_visible(timeout=TIMEOUT)
        link = share_code(page)
        assert "sys=branch" in link
        other = context.browser.new_context().new_page()  # type: ignore[union-attr]
        _open(other, link, "Leaderboard")
        assert _choice(other, "leaderboard.system") == "branch"
        expect(other.get_by_text("2 system(s) on 1 dataset(s)")).to_be_visible(timeout=TIMEOUT)
        other.context.close()
    finally:
        context.close()
