"""Speed a person feels: a real ``streamlit run`` server on the bundled samples, Debian's chromium, wall clock.

``python benchmarks/browser.py --repeat 5`` (from the repository root, with the ``test`` extra) measures:

- **first start**: a fresh store (the samples are stored), the Overview opened in a fresh browser, to its last chart;
- **overview**: a fresh browser (new context: no cache, no session) opening the Overview of the FAQ sample (106
  queries, three runs) on the warm server, until the last chart is drawn;
- **page by address**: each page of ``dashboard.views.VIEWS`` opened by its address in a fresh browser;
- **change K** and **change runs**: in an open Overview, K typed into its box, one run removed from the selection,
  until the page's rerun finished and every chart is drawn again.

"Drawn" means the script finished (the app's ``data-test-script-state`` is ``notRunning``), no skeleton is left,
and every Plotly chart on the page holds its SVG. Prints one line per measure (median, min, max in seconds) and the
load average, and writes them to ``benchmarks/out/browser.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import Page, sync_playwright

from dashboard.views import VIEWS
from tests.e2e.server import CHROMIUM_ARGS, chromium_path, streamlit_server, wait_for_app

TIMEOUT = 120_000
CHARTS_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .every(g => g.querySelector('.main-svg') && g.data && g._fullLayout)"""


def drawn(page: Page) -> None:
    """Wait until the rerun is over and every chart on the page is drawn."""
    wait_for_app(page, TIMEOUT)
    page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT)


def fresh_open(browser, url: str) -> float:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url)
        drawn(page)
        return time.perf_counter() - start
    finally:
        context.close()


def timed_change(page: Page, act) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    act()
    with contextlib.suppress(Exception):  # the rerun starts (a very quick one may be over before it is seen)
        page.wait_for_selector("[data-testid='stApp'][data-test-script-state='running']", timeout=3_000)
    drawn(page)
    return time.perf_counter() - start


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="times each measure is taken (default 5)")
    args = parser.parse_args()
    executable = chromium_path()
    if executable is None:
        print("chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    results: dict[str, dict[str, float]] = {}
    load = {"before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as data, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        with streamlit_server(data_dir=data, timeout=180) as base:
            results["first start: Overview, fresh store"] = summary([fresh_open(browser, f"{base}/")])
            results["overview, fresh browser, warm server"] = summary(
                [fresh_open(browser, f"{base}/") for _ in range(args.repeat)]
            )
            for view in VIEWS:
                url = f"{base}/{view.url_path}"
                fresh_open(browser, url)  # the page's own caches warm, as a teammate's link finds them
                results[f"page by address: {view.key}"] = summary(
                    [fresh_open(browser, url) for _ in range(args.repeat)]
                )
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            page = context.new_page()
            page.goto(f"{base}/")
            drawn(page)
            box = page.locator(".st-key-sidebar-k input")
            ks: list[float] = []
            for i in range(args.repeat):
                k = (6, 7)[i % 2]

                def type_k(k: int = k) -> None:
                    box.fill(str(k))
                    box.press("Enter")

                ks.append(timed_change(page, type_k))
            results["change K (Overview)"] = summary(ks)
            runs: list[float] = []
            chips = page.locator(".st-key-sidebar-runs")
            for _ in range(args.repeat):
                runs.append(timed_change(page, lambda: chips.get_by_role("button", name="Remove hybrid-rrf").click()))
                chips.locator("input[role='combobox']").click()
                page.get_by_role("option", name="hybrid-rrf", exact=True).click()
                page.keyboard.press("Escape")
                drawn(page)
            results["change runs (Overview)"] = summary(runs)
            context.close()
        browser.close()
    load["after"] = os.getloadavg()
    for name, row in results.items():
        print(f"{name:<42} median {row['median']:.2f} s  (min {row['min']:.2f}, max {row['max']:.2f}, n={row['n']})")
    print(f"load average before {load['before'][0]:.2f}, after {load['after'][0]:.2f} (1 min), {os.cpu_count()} cores")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(json.dumps({"results": results, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
