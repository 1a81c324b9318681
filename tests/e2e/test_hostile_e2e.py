"""Hostile input in a real browser against a real ``streamlit run`` server.

* Uploads over a limit (too many rows, gzip bombs, a file above Streamlit's own upload cap) each get a clear
  message naming the file and the limit, never a traceback, and store nothing; a second session (a second browser
  context) opened on a share link with hostile ids (``x' OR 1=1--``) gets a note and its charts, and is served
  while the first session's bombs are being refused.
* A query text holding ``<script>``/``onerror`` markup and a query id starting with ``=`` show as literal text on
  the Missed queries and Compare pages (nothing runs, no element is injected) and the CSV download neutralises the
  formula.

Each test starts its own server (its own SQLite store), so the limits set in its environment apply to it alone.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from ragmetrics.store.database import Store
from tests.e2e.server import WCAG_AA, give_files, mark_contrasts, open_curves, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, legend_names, open_page, switch_on

pytestmark = pytest.mark.e2e

SAMPLE_RUNS = ["bm25", "dense-e5", "hybrid-rrf"]  # the first bundled dataset (product_faq_zh) and its runs

# -- limits, bombs and other sessions ------------------------------------------------------------

# The row limit stays above the bundled samples' largest run (81,200 rows): the samples are seeded through the
# same loaders, which read RAGMETRICS_MAX_ROWS too.
MAX_ROWS = 100_000
STREAMLIT_CAP_MB = 5
LIMIT_ENV = {"RAGMETRICS_MAX_ROWS": "100_000", "STREAMLIT_SERVER_MAX_UPLOAD_SIZE": str(STREAMLIT_CAP_MB)}
HOSTILE_ID = "x' OR 1=1--"
COPIES = tuple(
    range(2, 11)
)  # more bombs: the app spends a few seconds refusing them, while the other session is served


def _trec_lines(n: int, tag: str) -> bytes:
    return "".join(f"q{i // 100} Q0 D{i} {i % 100 + 1} {1000 - i % 100} {tag}\n" for i in range(n)).encode()


def write_hostile_uploads(folder: Path) -> dict[str, Path]:
    """A run one row over the limit, gzip bombs (1 GB of TREC lines in 2.5 MiB each) and a file over Streamlit's cap."""
    rows = folder / "too-many-rows.trec"
    rows.write_bytes(_trec_lines(MAX_ROWS + 1, "rows"))
    # 64 gzip members of 16 MiB of the same valid TREC line each: one file of about 1 GiB once inflated (`gzip -d` reads
    # every member), built by compressing 16 MiB once
    line = b"q1 Q0 D1 1 1.0 bomb\n"
    member = gzip.compress(line * ((16 << 20) // len(line)), compresslevel=9, mtime=0)
    bomb = folder / "bomb.trec.gz"
    bomb.write_bytes(member * 64)
    for copy in COPIES:
        (folder / f"bomb-{copy}.trec.gz").write_bytes(member * 64)
    huge = folder / "huge.trec"
    huge.write_bytes(_trec_lines(200_000, "huge"))  # about 5.4 MB
    assert bomb.stat().st_size < 3 << 20 and rows.stat().st_size < STREAMLIT_CAP_MB * 1_000_000
    assert huge.stat().st_size > STREAMLIT_CAP_MB * (1 << 20)  # over the cap whether Streamlit counts MB or MiB
    inflated = len(gzip.decompress(member))  # the bomb is real: 64 members, each 16 MiB inflated
    assert bomb.read_bytes() == member * 64 and inflated == (16 << 20) - (16 << 20) % len(line)
    assert 64 * inflated > 1_000_000_000 and 64 * inflated > 400 * bomb.stat().st_size  # 1 GB from 2.5 MiB
    return {"rows": rows, "bomb": bomb, "huge": huge, **{f"bomb-{c}": folder / f"bomb-{c}.trec.gz" for c in COPIES}}


# when the first error message appears, on the browser's clock (shared by every page of the browser)
RECORD_FIRST_ERROR = """() => {
  window.__firstError = null;
  const seen = () => document.querySelector("[data-testid='stAlertContentError']");
  new MutationObserver(() => { if (window.__firstError === null && seen()) window.__firstError = Date.now(); })
    .observe(document.body, {childList: true, subtree: true});
}"""


def bomb_message(name: str) -> re.Pattern[str]:
    return re.compile(
        re.escape(f"{name} expands more than 100-fold when decompressed (2.5 MiB to over ")
        + r"\d+ MiB"
        + re.escape("), which looks like a decompression bomb; the limit is 100x (RAGMETRICS_MAX_RATIO)")
    )


def stored_runs(data_dir: Path) -> list[tuple[str, str]]:
    store = Store(f"sqlite:///{data_dir / 'ragmetrics.sqlite'}")
    try:
        runs = store.list_runs()
        return sorted(zip(runs["id"], runs["name"]))
    finally:
        store.engine.dispose()


def test_over_limit_uploads_and_a_gzip_bomb_explain_themselves_while_other_sessions_work(
    browser: Browser, tmp_path: Path
) -> None:
    start = time.perf_counter()
    files = write_hostile_uploads(tmp_path)
    data_dir = tmp_path / "store"
    stages = [("files", time.perf_counter() - start)]
    with streamlit_server(env=LIMIT_ENV, data_dir=data_dir) as base:
        uploader = browser.new_context(viewport={"width": 1400, "height": 1000})
        viewer = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = uploader.new_page()
            page.goto(f"{base}/upload")
            wait_for_app(page)  # the first start stores the bundled samples
            expect(page.get_by_text("Runs are added to product_faq_zh")).to_be_visible(timeout=TIMEOUT)
            before = stored_runs(data_dir)
            assert len(before) == 9, before  # three bundled datasets with three runs each
            stages.append(("server and samples", time.perf_counter() - start))

            # a second session opens a share link with hostile ids (a new browser context loads the app) ...
            other = viewer.new_page()
            hostile = quote(HOSTILE_ID)
            other.goto(f"{base}/overview?ds={hostile}&runs={hostile}&k=5&cv=1")  # with the curves drawn
            wait_for_app(other)
            assert legend_names(other) == SAMPLE_RUNS  # the default view's charts
            notes = other.get_by_test_id("stAlertContentInfo")
            expect(notes.filter(has_text="ignored dataset id")).to_contain_text(
                '"x\' OR 1=1--": not an id (ids are 16 hexadecimal digits', timeout=TIMEOUT
            )
            expect(notes.filter(has_text="ignored run ids that are not ids")).to_have_count(1)
            expect(other.get_by_test_id("stException")).to_have_count(0)
            stages.append(("second session", time.perf_counter() - start))

            # ... and while the first session's uploads are being refused (seconds of inflating bombs), it opens
            # another page and gets its charts
            page.evaluate(RECORD_FIRST_ERROR)
            page.locator(".st-key-upload-runs").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
                [str(files[name]) for name in ("bomb", *(f"bomb-{c}" for c in COPIES), "rows", "huge")]
            )
            page.wait_for_selector("[data-testid='stApp'][data-test-script-state='running']", timeout=TIMEOUT)
            open_page(other, "Breakdown")
            expect(other.locator(".js-plotly-plot").first).to_be_visible(timeout=TIMEOUT)
            expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)  # the uploads are still being read
            assert page.locator("[data-testid='stApp']").get_attribute("data-test-script-state") == "running"
            served_at = other.evaluate("() => Date.now()")
            stages.append(("page opened during the uploads", time.perf_counter() - start))

            # each refused file says which file and which limit
            errors = page.get_by_test_id("stAlertContentError")
            expect(errors.filter(has_text="too-many-rows.trec")).to_contain_text(
                f"too-many-rows.trec has {MAX_ROWS + 1:,} rows; the limit is {MAX_ROWS:,} (RAGMETRICS_MAX_ROWS)",
                timeout=TIMEOUT,
            )
            for name in ("bomb", *(f"bomb-{c}" for c in COPIES)):
                expect(errors.filter(has_text=f"{name}.trec.gz")).to_contain_text(
                    bomb_message(f"{name}.trec.gz"), timeout=TIMEOUT
                )
            # Streamlit's own cap: the uploader refuses the file next to its name; it never reaches the app
            huge = (
                page.locator(".st-key-upload-runs")
                .get_by_test_id("stFileUploader")
                .get_by_test_id("stFileChip")
                .filter(has_text="huge.trec")
            )
            expect(huge).to_contain_text(f"File must be {STREAMLIT_CAP_MB}.0MB or smaller.", timeout=TIMEOUT)
            wait_for_app(page)
            expect(errors).to_have_count(2 + len(COPIES))
            expect(errors.filter(has_text="huge.trec")).to_have_count(0)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            expect(page.get_by_test_id("stAlertContentSuccess")).to_have_count(0)
            for error in errors.all():  # one line each, no traceback
                assert "Traceback" not in error.inner_text() and 'File "' not in error.inner_text()
            stages.append(("uploads refused", time.perf_counter() - start))
            margin = (page.evaluate("() => window.__firstError") - served_at) / 1000

            # nothing was stored, the uploading session still shows the samples, the server still serves everyone
            assert stored_runs(data_dir) == before
            chips = page.get_by_test_id("stSidebar").locator(".st-key-sidebar-runs [data-tag]")
            assert chips.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))") == SAMPLE_RUNS
            open_page(other, "Missed queries")
            expect(other.get_by_role("heading", level=4)).to_be_visible(timeout=TIMEOUT)
            open_page(page, "Overview")
            open_curves(page, TIMEOUT)
            assert legend_names(page) == SAMPLE_RUNS
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=10) as response:
                assert response.read().decode().strip() == "ok"
            stages.append(("both sessions after", time.perf_counter() - start))
            print("\n" + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in stages))
            print(f"the other session's page was served {margin:.1f}s before the first refusal showed")
        finally:
            uploader.close()
            viewer.close()


# -- markup and formulas in query text and ids -------------------------------------------------

EVIL_ID = '=HYPERLINK("http://evil.example/","x")'
# its first 39 characters, which the hover text of the Compare charts shows, hold a tag plotly would render (<b>)
EVIL_TEXT = '<script>window.__xss=1</script><b>b</b><img src=x onerror="window.__xss=2">'
EVIL_ANSWER = "<b>bold?</b> [click](javascript:window.__xss=3)"
EVIL_KEYWORD = "<svg onload=window.__xss=4>"
EVIL_DOC = '<img src=x onerror="window.__xss=5">'  # a document id, in a JSONL run (a TREC line splits at spaces)
# the text of the run's passage for it: markup, Streamlit's own marks and icons, Markdown, and the keyword to mark
EVIL_PASSAGE = f"{EVIL_TEXT} :red-background[not ours] :material/home: **b** # h {EVIL_KEYWORD}:{EVIL_KEYWORD}"


def write_hostile_dataset(folder: Path) -> dict[str, Path]:
    """An evaluation set whose first query has a script for text and a formula for id; two runs that disagree on it."""
    items = [
        {
            "query_id": EVIL_ID,
            "query": EVIL_TEXT,
            "relevant_docs": {"D1": 1},
            "category": "evil",
            "difficulty": "hard",
            "expected_answer": EVIL_ANSWER,
            "expected_keywords": [EVIL_KEYWORD],
        }
    ]
    items += [
        {
            "query_id": f"q{i}",
            "query": f"plain question {i}",
            "relevant_docs": {f"D{i}": 1},
            "category": "plain",
            "difficulty": "easy",
        }
        for i in range(2, 6)
    ]
    dataset = folder / "hostile_eval.json"
    dataset.write_text(json.dumps(items), encoding="utf-8")
    paths = {"dataset": dataset}
    for tag, evil_docs in (("misses-it", [EVIL_DOC, "D8", "D7"]), ("finds-it", ["D1", "D9", "D8"])):
        rankings = {
            str(item["query_id"]): evil_docs
            if item["query_id"] == EVIL_ID
            else [next(iter(item["relevant_docs"])), "D9", "D8"]
            for item in items
        }
        if tag == "misses-it":  # with the passages' text: the Missed page shows each in a card headed by its id
            paths[tag] = folder / f"{tag}.jsonl"
            paths[tag].write_text(
                "".join(
                    json.dumps(
                        {
                            "query_id": q,
                            "retrieved": [
                                {"doc_id": d, "score": 10 - rank, "text": EVIL_PASSAGE if d == EVIL_DOC else f"p{rank}"}
                                for rank, d in enumerate(docs, 1)
                            ],
                        }
                    )
                    + "\n"
                    for q, docs in rankings.items()
                ),
                encoding="utf-8",
            )
            continue
        lines = [
            f"{q} Q0 {doc} {rank} {10 - rank} {tag}" for q, docs in rankings.items() for rank, doc in enumerate(docs, 1)
        ]
        paths[tag] = folder / f"{tag}.trec"
        paths[tag].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def assert_nothing_ran(page: Page) -> None:
    """No payload executed and none of its elements or handlers made it into the page."""
    assert page.evaluate("() => window.__xss") is None
    assert page.evaluate("() => [...document.scripts].filter(s => s.textContent.includes('__xss')).length") == 0
    assert page.locator("img[src='x'], svg[onload], [onerror], [onload], a[href^='javascript']").count() == 0
    assert (
        page.evaluate(
            "() => [...document.querySelectorAll('b')].filter(b => ['b', 'bold?'].includes(b.textContent)).length"
        )
        == 0
    )


def test_script_query_text_and_formula_id_render_inert_and_export_neutralised(browser: Browser, tmp_path: Path) -> None:
    start = time.perf_counter()
    files = write_hostile_dataset(tmp_path)
    with streamlit_server(env={"RAGMETRICS_SAMPLES": "off"}, data_dir=tmp_path / "store") as base:
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        try:
            page = context.new_page()
            page.goto(f"{base}/upload")
            wait_for_app(page)
            give_files(page, "upload.dataset", files["dataset"])
            expect(page.get_by_text("Loaded hostile_eval.json")).to_be_visible(timeout=TIMEOUT)
            wait_for_app(page)
            give_files(page, "upload.runs", [files["misses-it"], files["finds-it"]])
            expect(page.get_by_text("Loaded finds-it.trec")).to_be_visible(timeout=TIMEOUT)
            expect(page.get_by_text("Loaded misses-it.jsonl")).to_be_visible(timeout=TIMEOUT)
            wait_for_app(page)
            assert_nothing_ran(page)

            # Missed queries: "misses-it" (the first run) misses only the hostile query, so its detail opens
            open_page(page, "Missed queries")
            detail = page.get_by_role("heading", level=4)
            expect(detail).to_have_text(EVIL_TEXT, timeout=TIMEOUT)  # the markup, shown as the text it is
            main = page.get_by_test_id("stMain")
            expect(main.locator("code").filter(has_text=EVIL_ID)).to_have_text(EVIL_ID)
            expect(main.get_by_text(f"Expected answer: {EVIL_ANSWER}")).to_be_visible()
            expect(main.get_by_text(f"Expected keywords: {EVIL_KEYWORD}")).to_be_visible()
            # the passage's card: its header (the document id) and its text, one Markdown element: the text shown as
            # it is, the expected keyword marked twice (the second right after a colon), the text's own marks not
            card = main.get_by_test_id("stMarkdownContainer").filter(has=page.locator("strong", has_text=EVIL_DOC))
            expect(card.locator("strong").filter(has_text=EVIL_DOC).first).to_have_text(EVIL_DOC)
            expect(card.locator("p").last).to_have_text(EVIL_PASSAGE)
            marked = card.locator(".stMarkdownColoredBackground").all_inner_texts()
            assert marked.count(EVIL_KEYWORD) == 2 and "not ours" not in " ".join(marked), marked
            contrasts = mark_contrasts(page)  # the legend's marks and the passage's, in the light theme
            assert len(contrasts) >= 4 and min(contrasts.values()) >= WCAG_AA, contrasts
            picker = page.locator(".st-key-missed-query input[role='combobox']")
            expect(picker).to_have_value(f"{EVIL_ID} · {EVIL_TEXT[:59]}…")
            expect(page.get_by_test_id("stException")).to_have_count(0)
            assert_nothing_ran(page)

            # the missed-queries CSV: the formula id is neutralised, the markup is plain quoted text
            with page.expect_download(timeout=TIMEOUT) as download:
                page.locator("[class*='st-key-missed-table-'][class*='-csv']").get_by_role("button").click()
            raw = Path(download.value.path()).read_bytes()
            assert download.value.suggested_filename == "missed-misses-it-k5.csv"
            assert raw.startswith(b"\xef\xbb\xbf")
            rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
            assert [r["query_id"] for r in rows] == ["'" + EVIL_ID]
            assert rows[0]["query"] == EVIL_TEXT
            text = raw.decode("utf-8-sig")
            quoted = EVIL_ID.replace('"', '""')  # as CSV writes it inside a quoted cell
            assert text.count(quoted) == 1 and f'"\'{quoted}"' in text  # the one cell: "'=HYPERLINK(""http...
            for cell in (c for r in csv.reader(io.StringIO(text)) for c in r):
                assert not cell.lstrip().startswith(("=", "+", "@")), cell

            # Compare runs: the only query the two runs disagree on is listed first, with its text as text
            open_page(page, "Compare runs")
            switch_on(page, "compare.by_query")
            expect(page.get_by_role("heading", name="One query, both rankings")).to_be_visible(timeout=TIMEOUT)
            expect(page.get_by_role("heading", level=4)).to_have_text(EVIL_TEXT, timeout=TIMEOUT)
            expect(page.get_by_test_id("stMain").locator("code").filter(has_text=EVIL_ID)).to_have_text(EVIL_ID)
            # plotly renders some markup (<b>, <a>...) in hover text: hovering the query's bar (the one win) shows it as text
            chart = page.locator(".js-plotly-plot:has(.barlayer .point)").first
            chart.scroll_into_view_if_needed()
            box = chart.locator(".barlayer .trace").first.locator(".point path").first.bounding_box()
            assert box is not None and box["height"] > 10
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            hover = chart.locator(".hoverlayer .hovertext tspan.line")
            expect(hover.first).to_have_text(f"{EVIL_ID} · {EVIL_TEXT[:39]}…", timeout=TIMEOUT)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            assert_nothing_ran(page)

            # the payload is live: put into the page as HTML, it runs; shown by the dashboard, it did not
            page.evaluate(
                "t => { const d = document.createElement('div'); d.innerHTML = t; document.body.append(d); }", EVIL_TEXT
            )
            page.wait_for_function("() => window.__xss === 2", timeout=TIMEOUT)
            print(f"\nhostile text and ids: {time.perf_counter() - start:.1f}s")
        finally:
            context.close()
