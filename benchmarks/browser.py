"""Speed a person feels: a real ``streamlit run`` server on the bundled samples, Debian's chromium, wall clock.

``python benchmarks/browser.py --repeat 5`` (from the repository root, with the ``test`` extra) measures:

- **first start**: a fresh store (the samples are stored), the Overview opened in a fresh browser, to its last chart;
- **overview**: a fresh browser (new context: no cache, no session) opening the Overview of the FAQ sample (106
  queries, three runs) on the warm server, until the page is drawn; then the same with its curves open (``cv=1``);
- **page by address**: each page of ``dashboard.views.VIEWS`` opened by its address in a fresh browser, and in a
  returning browser (a browser profile on disk that has opened the dashboard before: its caches are warm; each
  opening is a new tab, so a new session);
- **change K** and **change runs**: in an open Overview, K typed into its box, one run removed from the selection,
  until the page's rerun finished and everything is drawn again; with the curves folded (the default) and open;
- **change outcome**: on Compare, the queries behind the wins, then the losses (its four figures stay).

"Drawn" means the script finished (the app's ``data-test-script-state`` is ``notRunning``), no skeleton is left,
every table in view holds its canvas (one in a folded section is not drawn) and every Plotly chart its SVG.

Each measure is read on two clocks:

- **page**: the browser's own, from the navigation's start (``performance.timeOrigin``) or from the user's input
  (the Enter key, the click) to the first frame after the page became drawn, seen by a ``MutationObserver`` in the
  page (:data:`PAGE_CLOCK`); this is what a person waits;
- **wall**: Python's, from ``goto`` or the input's dispatch until Playwright's own checks see the page drawn; it adds
  Playwright's round trips to a busy renderer (about 0.1-0.4 s here).

Prints one line per measure (median, min, max in seconds on both clocks) and the load average, and writes them to
``benchmarks/out/browser.json``.
"""

from __future__ import annotations

import argparse
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
PARTS_DRAWN = """[...document.querySelectorAll('.js-plotly-plot')]
      .every(g => g.querySelector('.main-svg') && g.data && g._fullLayout)
    && [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].every(g => g.querySelector('canvas, svg'))
    && [...document.querySelectorAll("[data-testid='stDataFrame']")]
      .every(t => !t.checkVisibility() || t.querySelector('canvas'))"""
"""A JavaScript expression: every Plotly chart holds its SVG, every Vega-Lite chart its canvas, every table in view
its canvas (one in a folded section is not drawn)."""
CHARTS_DRAWN = f"() => {PARTS_DRAWN}"
VIEWPORT = {"width": 1600, "height": 1000}
PAGE_CLOCK = (
    """(() => {
  const clock = (window.__pageClock = { drawnAt: null, actedAt: null, sawRun: false, rising: false });
  const drawnNow = () => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!app) return false;
    const state = app.getAttribute("data-test-script-state");
    if (state === "running") clock.sawRun = true;
    if (!clock.sawRun || state !== "notRunning") return false;
    if (app.getAttribute("data-test-connection-state") !== "CONNECTED") return false;
    if (document.querySelector("[data-testid='stSkeleton']")) return false;
    return PARTS_DRAWN;
  };
  let was = false;
  let generation = 0;  // an input starts a new one: a frame asked for before it does not count
  new MutationObserver((records) => {
    // a rerun may start and end between two callbacks: its "running" is then only in the records
    if (records.some((r) => r.attributeName === "data-test-script-state" && r.oldValue === "running"))
      clock.sawRun = true;
    const now = drawnNow();
    if (now && !was) {
      clock.rising = true;
      const asked = generation;
      requestAnimationFrame(() => {
        if (asked !== generation) return;
        clock.drawnAt = performance.now();
        clock.rising = false;
      });
    }
    was = now;
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeOldValue: true });
  const acted = () => {
    Object.assign(clock, { actedAt: performance.now(), drawnAt: null, sawRun: false, rising: false });
    was = false;
    generation += 1;
  };
  addEventListener("pointerdown", acted, true);
  addEventListener("keydown", (e) => { if (e.key === "Enter") acted(); }, true);
})();"""
).replace("PARTS_DRAWN", PARTS_DRAWN)


Timing = tuple[float, float]  # seconds on the page's clock, on the wall clock


def drawn(page: Page) -> None:
    """Wait until the rerun is over and every chart on the page is drawn."""
    wait_for_app(page, TIMEOUT)
    page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT)


def page_clock(page: Page) -> dict[str, float]:
    """The page's clock (ms since its navigation started) once the frame after the last drawing has begun."""
    try:
        page.wait_for_function(
            "() => window.__pageClock.drawnAt !== null && !window.__pageClock.rising", timeout=TIMEOUT
        )
    except Exception as error:
        raise RuntimeError(f"the page clock saw no drawing: {page.evaluate('() => window.__pageClock')}") from error
    return dict(page.evaluate("() => ({drawnAt: window.__pageClock.drawnAt, actedAt: window.__pageClock.actedAt})"))


def new_context(browser):  # type: ignore[no-untyped-def]
    """A fresh browser context (no cache, no session) with the page clock in every page."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(PAGE_CLOCK)
    return context


def timed_open(context, url: str) -> Timing:  # type: ignore[no-untyped-def]
    """From the navigation's start (page) and from ``goto`` (wall) in a new tab of ``context`` to the drawn page."""
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(url)
        drawn(page)
        wall = time.perf_counter() - start
        return page_clock(page)["drawnAt"] / 1000, wall
    finally:
        page.close()


def fresh_open(browser, url: str) -> Timing:  # type: ignore[no-untyped-def]
    context = new_context(browser)
    try:
        return timed_open(context, url)
    finally:
        context.close()


def timed_change(page: Page, act) -> Timing:  # type: ignore[no-untyped-def]
    """From the input (page) and from its dispatch (wall) until the rerun is over and the page drawn again."""
    start = time.perf_counter()
    act()
    clock = page_clock(page)  # the page saw the input, a rerun (however quick) and the drawing after it
    drawn(page)
    wall = time.perf_counter() - start
    return (clock["drawnAt"] - clock["actedAt"]) / 1000, wall


def change_k(page: Page, repeat: int) -> list[Timing]:
    """K typed into its box, 6 and 7 in turn: always a new value (typing the K in force would not rerun)."""
    box = page.locator(".st-key-sidebar-k input")
    times: list[Timing] = []
    for _ in range(repeat):

        def type_k(k: int = 7 if box.input_value() == "6" else 6) -> None:
            box.fill(str(k))
            box.press("Enter")

        times.append(timed_change(page, type_k))
    return times


def change_runs(page: Page, repeat: int) -> list[Timing]:
    """One run removed from the selection (timed), then put back (not timed)."""
    chips = page.locator(".st-key-sidebar-runs")
    times: list[Timing] = []
    for _ in range(repeat):
        times.append(timed_change(page, lambda: chips.get_by_role("button", name="Remove hybrid-rrf").click()))
        chips.locator("input[role='combobox']").click()
        page.get_by_role("option", name="hybrid-rrf", exact=True).click()
        page.keyboard.press("Escape")
        drawn(page)
    return times


def change_outcome(page: Page, repeat: int) -> list[Timing]:
    """On Compare, the queries behind the wins, then the losses, in turn (the page's figures stay as they are)."""
    radio = page.locator(".st-key-compare-outcome")
    times: list[Timing] = []
    for i in range(repeat):
        name = ("Wins", "Losses")[i % 2]
        times.append(timed_change(page, lambda name=name: radio.get_by_text(name).click()))
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


def summary(timings: list[Timing]) -> dict[str, dict[str, float]]:
    """Median, min, max and count of each clock's seconds."""
    return {
        clock: {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}
        for clock, values in zip(("page", "wall"), zip(*timings))
    }


def page_loads(p, browser, base: str, repeat: int, results: dict[str, dict[str, dict[str, float]]]) -> None:  # type: ignore[no-untyped-def]
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
        returning.add_init_script(PAGE_CLOCK)
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
    results: dict[str, dict[str, dict[str, float]]] = {}
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
            context = new_context(browser)
            page = context.new_page()
            page.goto(f"{base}/")
            drawn(page)
            for shown in ("folded", "open"):
                if shown == "open":
                    open_curves(page, TIMEOUT)
                results[f"change K (Overview, curves {shown})"] = summary(change_k(page, args.repeat))
                results[f"change runs (Overview, curves {shown})"] = summary(change_runs(page, args.repeat))
            page.goto(f"{base}/compare")
            drawn(page)
            results["change outcome (Compare)"] = summary(change_outcome(page, args.repeat))
            context.close()
        browser.close()
    load["after"] = os.getloadavg()
    for name, clocks in results.items():
        print(
            f"{name:<52} "
            + "   ".join(
                f"{clock} {row['median']:.2f} s ({row['min']:.2f}-{row['max']:.2f})" for clock, row in clocks.items()
            )
            + f"   n={clocks['page']['n']}"
        )
    print(f"load average before {load['before'][0]:.2f}, after {load['after'][0]:.2f} (1 min), {os.cpu_count()} cores")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(json.dumps({"results": results, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
