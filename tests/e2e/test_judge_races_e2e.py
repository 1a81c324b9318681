"""The Judge page under fast hands and several judges, in a real browser against real ``streamlit run`` servers
(two judges: two servers on one store, SQLite and PostgreSQL).

A store holds twelve queries whose two runs put 36 unjudged documents in their top 3. Each document has a grade of
its own (from its name), and a press always gives the grade of the document the page shows at that instant (the
shown document is read and the key pressed in one step in the browser), so a grade that lands on another pair,
or a press that leaves no label, is read back from the store.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.data.workspace import Workspace
from ragmetrics import Dataset, Run
from ragmetrics.store.database import Store, labels_table
from tests.e2e.server import streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT

pytestmark = pytest.mark.e2e

N_QUERIES = 12


def grade_of(doc: str) -> int:
    """The grade every press gives ``doc`` (``u<i><a|b|c>``): 0, 1 or 2."""
    return (int(doc[1:-1]) + ord(doc[-1])) % 3


def _dataset() -> tuple[Dataset, list[Run]]:
    qrels = pd.DataFrame(
        [(f"q{i}", f"j{i}", 2 if i % 2 else 1) for i in range(N_QUERIES)] + [("q0", "k0", 0)],
        columns=["query_id", "doc_id", "relevance"],
    )
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(N_QUERIES)],
                            "query": [f"question {i}" for i in range(N_QUERIES)]})  # fmt: skip
    docs = [f"j{i}" for i in range(N_QUERIES)] + ["k0"] + [f"u{i}{x}" for i in range(N_QUERIES) for x in "abc"]
    documents = pd.DataFrame({"doc_id": docs, "title": docs, "text": [f"text of {d}" for d in docs]})
    dataset = Dataset.from_frames(qrels, queries, name="judge-many", documents=documents)

    def run(name: str, rankings: dict[str, list[str]]) -> Run:
        rows = [{"query_id": q, "doc_id": d, "score": 9.0 - i} for q, ds in rankings.items() for i, d in enumerate(ds)]
        return Run.from_frame(pd.DataFrame(rows), name=name)

    return dataset, [
        run("alpha", {f"q{i}": [f"u{i}a", f"j{i}", f"u{i}b"] for i in range(N_QUERIES)}),
        run("beta", {f"q{i}": [f"j{i}", f"u{i}c", f"u{i}a"] for i in range(N_QUERIES)}),
    ]


def _sqlite(folder: Path) -> str:
    return f"sqlite:///{folder / 'ragmetrics.sqlite'}"


def _seed(url: str) -> str:
    store = Store(url)
    ws = Workspace(store)
    dataset, runs = _dataset()
    entry = ws.add_dataset(dataset, source="judge-many")
    run_ids = [ws.add_run(entry.id, run).id for run in runs]
    store.engine.dispose()
    return f"?ds={entry.id}&runs={','.join(run_ids)}&m=ndcg&k=3"


def _labels(url: str) -> pd.DataFrame:
    """Every judgment label stored, oldest first: ``doc_id, label, author``, and the version it was given on and the
    one it went into (``dataset_id, version``), which a failure prints."""
    store = Store(url)
    t = labels_table
    with store.engine.connect() as conn:
        rows = conn.execute(
            t.select()
            .with_only_columns(t.c.doc_id, t.c.label, t.c.author, t.c.dataset_id, t.c.version)
            .where(t.c.kind == "judgment")
            .order_by(t.c.id)
        )
        frame = pd.DataFrame(rows.mappings().all(), columns=["doc_id", "label", "author", "dataset_id", "version"])
    store.engine.dispose()
    return frame


# in one step of the page's own thread: the document shown now, and its grade's key pressed when a grade button
# is drawn (nothing rerenders between the two)
PRESS = """(grades) => {
  const header = [...document.querySelectorAll("[data-testid='stMarkdownContainer']")]
      .find((e) => e.innerText.includes("unjudged ·"));
  if (!header) return null;
  const doc = header.querySelector("strong").innerText;
  const key = String(grades[doc]);
  if (!document.querySelector(`[class*='st-key-judge-grade-${key}']`)) return null;  // no grade button drawn yet
  document.dispatchEvent(new KeyboardEvent("keydown", {key, code: "Digit" + key, bubbles: true}));
  document.dispatchEvent(new KeyboardEvent("keyup", {key, code: "Digit" + key, bubbles: true}));
  return doc;
}"""

GRADES = {f"u{i}{x}": grade_of(f"u{i}{x}") for i in range(N_QUERIES) for x in "abc"}


def _press_fast(page: Page, presses: int, interval_ms: int) -> list[str]:
    """Press the shown pair's grade ``presses`` times, ``interval_ms`` apart; the documents shown at each press."""
    shown = []
    for _ in range(presses):
        doc = page.evaluate(PRESS, GRADES)
        if doc is not None:
            shown.append(str(doc))
        page.wait_for_timeout(interval_ms)
    return shown


def test_fast_keys_grade_the_pair_shown_when_pressed(page: Page, tmp_path: Path) -> None:
    url = _sqlite(tmp_path)
    query = _seed(url)
    with streamlit_server(store_url=url, env={"RAGMETRICS_SAMPLES": "off"}) as base:
        page.goto(f"{base}/judge{query}")
        wait_for_app(page)
        page.get_by_role("heading", name="Judge", level=1).click()  # focus on the page, not on a field
        shown = _press_fast(page, 24, 150)
        page.wait_for_timeout(1500)
        wait_for_app(page)
    labels = _labels(url)
    wrong = [(d, g, grade_of(d)) for d, g in zip(labels["doc_id"], labels["label"]) if g != grade_of(d)]
    assert not wrong, f"grades given to another pair than the one shown (doc, stored, pressed): {wrong}"
    # the page did move on while the keys came (how far depends on how busy the machine is: at least once)
    assert len(set(shown)) >= 2, shown
    missing = sorted(set(shown) - set(labels["doc_id"]))
    assert not missing, f"pairs shown and pressed on that got no label: {missing} (shown {shown})"


SHOWN = """(before) => {
  const header = [...document.querySelectorAll("[data-testid='stMarkdownContainer']")]
      .find((e) => e.innerText.includes("unjudged ·"));
  return (header ? header.querySelector("strong").innerText : null) !== before;
}"""
"""True once the page shows another pair than ``before`` (or none)."""


def _press_and_settle(page: Page, before: str | None = None) -> str | None:
    """Press the grade of the pair the page shows, once it is drawn. ``before``: the pair this page was last pressed
    on; the page must first have moved on from it. A page still drawn from before the last press's rerun (its
    "notRunning" not yet replaced) would take a second press on that pair: two labels of one pair, or one when the
    two triggers of the same button coalesce, a test's artefact. A press that is lost keeps the page on its pair,
    and this times out."""
    if before is not None:
        page.wait_for_function(SHOWN, arg=before, timeout=TIMEOUT)
    wait_for_app(page)
    doc = page.evaluate(PRESS, GRADES)
    return None if doc is None else str(doc)


def test_two_judges_on_two_servers_are_shown_other_pairs_and_lose_no_click(
    page: Page, browser: Browser, store_url: str
) -> None:
    query = _seed(store_url)
    env = {"RAGMETRICS_SAMPLES": "off"}
    pressed: dict[str, list[str]] = {"one": [], "two": []}
    with streamlit_server(store_url=store_url, env=env) as one, streamlit_server(store_url=store_url, env=env) as two:
        context = browser.new_context()
        other = context.new_page()
        judges = {"one": page, "two": other}
        page.goto(f"{one}/judge{query}")
        other.goto(f"{two}/judge{query}")
        for round_ in range(10):
            for name, judge in judges.items():  # both press, then both pages rerun side by side
                doc = _press_and_settle(judge, pressed[name][-1] if pressed[name] else None)
                assert doc is not None, f"judge {name} was shown no pair"
                pressed[name].append(doc)
            if round_ == 4:  # judge one saves a version and goes on judging it; judge two stays on the original
                wait_for_app(page)
                page.locator(".st-key-judge-save").get_by_role("button").click()
                expect(page.get_by_text(re.compile(r"^Saved \d+ label\(s\) as v\d+: "))).to_be_visible(timeout=TIMEOUT)
        for judge in judges.values():
            wait_for_app(judge)
            expect(judge.get_by_text("meanwhile")).to_have_count(0)  # no label was refused: none was shown twice
        context.close()
    labels = _labels(store_url)
    shown_twice = set(pressed["one"]) & set(pressed["two"])
    assert not shown_twice, f"pairs shown to both judges: {sorted(shown_twice)} ({pressed})"
    # every click is a label
    assert len(labels) == len(pressed["one"]) + len(pressed["two"]) == 20, f"{labels.to_string()}\npressed {pressed}"
    twice = labels[labels["doc_id"].duplicated(keep=False)]
    assert twice.empty, f"labelled twice:\n{twice.to_string()}\npressed {pressed}"  # and no pair was labelled twice
    assert sorted(labels["doc_id"]) == sorted(pressed["one"] + pressed["two"])
    wrong = [(d, g) for d, g in zip(labels["doc_id"], labels["label"]) if g != grade_of(d)]
    assert not wrong
