"""Speed a person feels: a real ``streamlit run`` server on the bundled samples, Debian's chromium, wall clock.

``python benchmarks/browser.py --repeat 5`` (from the repository root, with the ``test`` extra) measures:

- **first start**: a fresh store (the samples are stored), the Overview opened in a fresh browser, to its last chart;
- **overview**: a fresh browser (new context: no cache, no session) opening the Overview of the FAQ sample (106
  queries, three runs) on the warm server, until the page is drawn; then the same with its curves open (``cv=1``);
- **page by address**: each page of ``dashboard.views.VIEWS`` opened by its address in a fresh browser, and in a
  returning browser (a browser profile on disk that has opened the dashboard before: its caches are warm; each
  opening is a new tab, so a new session);
- **change K** and **change runs**: in an open Overview, K typed into its box, one run removed from the selection,
  until the page's rerun finished and everything is drawn again; with the curves folded (the default) and open.

"Drawn" means the script finished (the app's ``data-test-script-state`` is ``notRunning``), no skeleton is left,
every table in view holds its canvas (one in a folded section is not drawn) and every Plotly chart its SVG. Prints one line per measure (median, min, max in seconds) and the
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
from tests.e2e.server import CHROMIUM_ARGS, chromium_path, open_curves, streamlit_server, wait_for_app

TIMEOUT = 120_000
CHARTS_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')]
        .every(g => g.querySelector('.main-svg') && g.data && g._fullLayout)
    && [...document.querySelectorAll("[data-testid='stDataFrame']")]
        .every(t => !t.checkVisibility() || t.querySelector('canvas'))"""
VIEWPORT = {"width": 1600, "height": 1000}


def drawn(page: Page) -> None:
    """Wait until the rerun is over and every chart on the page is drawn."""
    wait_for_app(page, TIMEOUT)
    page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT)


def timed_open(context, url: str) -> float:  # type: ignore[no-untyped-def]
    """Seconds from ``goto`` in a new tab of ``context`` until the page is drawn."""
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(url)
        drawn(page)
        return time.perf_counter() - start
    finally:
        page.close()


def fresh_open(browser, url: str) -> float:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport=VIEWPORT)
    try:
        return timed_open(context, url)
    finally:
        context.close()


def timed_change(page: Page, act) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    act()
    with contextlib.suppress(Exception):  # the rerun starts (a very quick one may be over before it is seen)
        page.wait_for_selector("[data-testid='stApp'][data-test-script-state='running']", timeout=3_000)
    drawn(page)
    return time.perf_counter() - start


def change_k(page: Page, repeat: int) -> list[float]:
    box = page.locator(".st-key-sidebar-k input")
    times: list[float] = []
    for i in range(repeat):

        def type_k(k: int = (6, 7)[i % 2]) -> None:
            box.fill(str(k))
            box.press("Enter")

        times.append(timed_change(page, type_k))
    return times


def change_runs(page: Page, repeat: int) -> list[float]:
    """One run removed from the selection (timed), then put back (not timed)."""
    chips = page.locator(".st-key-sidebar-runs")
    times: list[float] = []
    for _ in range(repeat):
        times.append(timed_change(page, lambda: chips.get_by_role("button", name="Remove hybrid-rrf").click()))
        chips.locator("input[role='combobox']").click()
        page.get_by_role("option", name="hybrid-rrf", exact=True).click()
        page.keyboard.press("Escape")
        drawn(page)
    return times


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, window: float = 2.0, busy: float = 0.05) -> None:
    """Wait until the server spends under ``busy`` of a core over ``window`` seconds (the first start stores the
    samples and warms caches on its own threads for a while after its first page is drawn)."""
    for _ in range(120):
        before = cpu_seconds(pid)
        time.sleep(window)
        if cpu_seconds(pid) - before < busy * window:
            return


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def page_loads(p, browser, base: str, repeat: int, results: dict[str, dict[str, float]]) -> None:  # type: ignore[no-untyped-def]
    """The Overview in fresh browsers (folded and with its curves open), then every page by address in fresh
    browsers and in a returning one."""
    results["overview, fresh browser, warm server"] = summary([fresh_open(browser, f"{base}/") for _ in range(repeat)])
    fresh_open(browser, f"{base}/?cv=1")  # the curves' caches warm
    results["overview with its curves open, fresh browser"] = summary(
        [fresh_open(browser, f"{base}/?cv=1") for _ in range(repeat)]
    )
    for view in VIEWS:
        url = f"{base}/{view.url_path}"
        fresh_open(browser, url)  # the page's own caches warm, as a teammate's link finds them
        results[f"page by address: {view.key}"] = summary([fresh_open(browser, url) for _ in range(repeat)])
    with tempfile.TemporaryDirectory() as profile:
        returning = p.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
        for view in VIEWS:  # the browser has opened every page before
            timed_open(returning, f"{base}/{view.url_path}")
        for view in VIEWS:
            url = f"{base}/{view.url_path}"
            results[f"page by address, returning browser: {view.key}"] = summary(
                [timed_open(returning, url) for _ in range(repeat)]
            )
        returning.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="times each measure is taken (default 5)")
    parser.add_argument("--changes-only", action="store_true", help="only the changes of K and of the runs")
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
            if args.changes_only:
                for url in (f"{base}/", f"{base}/?cv=1"):  # the server's caches warm, as the page loads warm them
                    fresh_open(browser, url)
            else:
                page_loads(p, browser, base, args.repeat, results)
            wait_until_idle(base.pid)
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            page.goto(f"{base}/")
            drawn(page)
            for shown in ("folded", "open"):
                if shown == "open":
                    open_curves(page, TIMEOUT)
                results[f"change K (Overview, curves {shown})"] = summary(change_k(page, args.repeat))
                results[f"change runs (Overview, curves {shown})"] = summary(change_runs(page, args.repeat))
            context.close()
        browser.close()
    load["after"] = os.getloadavg()
    for name, row in results.items():
        print(f"{name:<52} median {row['median']:.2f} s  (min {row['min']:.2f}, max {row['max']:.2f}, n={row['n']})")
    print(f"load average before {load['before'][0]:.2f}, after {load['after'][0]:.2f} (1 min), {os.cpu_count()} cores")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(json.dumps({"results": results, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
