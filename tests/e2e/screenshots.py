"""Screenshot every page with the bundled sample data into docs/screenshots/ (``python tests/e2e/screenshots.py``;
name page keys, e.g. ``compare power``, to take only those; ``--out DIR`` writes elsewhere).

Most pages show the first sample (product_faq_zh); the Judge and Missed queries pages show CMRC 2018 (Chinese
queries against Chinese Wikipedia chunks whose titles repeat: their text is what tells them apart), so the
pictures show Chinese text rendered with Debian's ``fonts-noto-cjk`` and the marked evidence.

Starts its own ``streamlit run`` server and drives Debian's chromium. A page that shows an exception or an error
box is reported, and the script exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.sync_api import sync_playwright

from dashboard.data import samples
from dashboard.views import VIEWS
from ragmetrics.store.database import dataset_id
from tests.e2e.server import CHROMIUM_ARGS, REPO, chromium_path, streamlit_server, wait_for_app

OUT = REPO / "docs" / "screenshots"
WIDTH = 1440
_CONTENT_HEIGHT = """() => Math.max(...Array.from(document.querySelectorAll(
  "[data-testid='stMain'], [data-testid='stAppViewContainer'], [data-testid='stMainBlockContainer'], [data-testid='stSidebarContent']"
)).map(e => e.scrollHeight))"""


ON_CMRC = ("judge", "missed")
"""Pages shown on the CMRC 2018 sample (the others on the first sample)."""


SHOWN_WITH = {"compare": "jb=1&cv=1"}
"""Controls a page's picture shows turned on (Compare: the bounds from the unjudged documents and query by query;
Overview: its curves)."""


def _cmrc_query() -> str:
    cmrc = next(samples.iter_samples(names=["cmrc2018"]), None)
    return f"?ds={dataset_id(cmrc.dataset)}" if cmrc is not None else ""


def page_query(key: str) -> str:
    """The query string a page's picture opens with ("" for the first sample's default view)."""
    if key not in ON_CMRC:
        return f"?{SHOWN_WITH[key]}" if key in SHOWN_WITH else ""
    return _cmrc_query()


MORE_PICTURES: dict[str, tuple[str, Callable[[], str]]] = {
    "compare-cost-cmrc": (
        "compare",
        lambda: _cmrc_query() + "&m=recall&k=5&ms=recall@256tok,recall@512tok,recall@1024tok,recall@5",
    ),
}
"""Pictures beyond one per page, by file name: the page and its query. ``compare-cost-cmrc``: CMRC 2018's three
runs at 256, 512 and 1024 tokens of context, and recall@5 against the tokens its top 5 chunks cost."""


def pictures(only: set[str]) -> list[tuple[str, str, str]]:
    """(file name, page key, query string) of every picture to take; ``only``: page keys or picture names."""
    every = [(view.key, view.key, page_query(view.key)) for view in VIEWS]
    every += [(name, key, query()) for name, (key, query) in MORE_PICTURES.items()]
    return [shot for shot in every if not only or shot[0] in only or shot[1] in only]


def main() -> None:
    args = sys.argv[1:]
    out = OUT
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1]).resolve()
        del args[at : at + 2]
    out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with streamlit_server() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000}, device_scale_factor=1)
        paths = {view.key: view.url_path for view in VIEWS}
        for name, key, query in pictures(set(args)):
            page.goto(f"{base}/{paths[key]}{query}")
            wait_for_app(page)
            if key in ("overview", "breakdown", "diagnosis", "compare", "power"):
                page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
            # the app scrolls inside its main container, not the document: grow the viewport to fit it
            height = page.evaluate(_CONTENT_HEIGHT)
            page.set_viewport_size({"width": WIDTH, "height": min(max(int(height) + 40, 800), 12000)})
            wait_for_app(page)
            page.wait_for_timeout(800)  # let plotly finish resizing before the picture
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            page.set_viewport_size({"width": WIDTH, "height": 1000})
            shown = [
                e.inner_text()[:300]
                for kind in ("stException", "stAlertContentError")
                for e in page.get_by_test_id(kind).all()
            ]
            problems += [f"{name}: {text}" for text in shown]
            print(
                f"{target.relative_to(REPO) if target.is_relative_to(REPO) else target}"
                + (" (errors)" if shown else "")
            )
        browser.close()
    if problems:
        print("\n".join(["pages with errors:", *problems]))
        sys.exit(1)


if __name__ == "__main__":
    main()
