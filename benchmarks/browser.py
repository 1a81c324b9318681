"""Speed a person feels: a real ``streamlit run`` server on the bundled samples, Debian's chromium, beside the
framework's floor (``benchmarks/browser_floor.py``), in one run.

``python benchmarks/browser.py --repeat 5`` (from the repository root, with the ``test`` extra) starts the
dashboard on a fresh store (the first start stores the samples) and the floor app, and measures:

- **first start**: the Overview opened in a fresh browser on the fresh store, to its last chart;
- **page by address**: each page of ``dashboard.views.VIEWS`` (the Overview with its curves, drawn on its first
  screen) opened by its address, and beside each the floor page with the same kinds of elements
  (:data:`KINDS_HELD`: the sidebar's controls, tables, charts drawn by the classic script, ...), read from the
  dashboard's page itself, beside that the floor page with as many tables and charts as the dashboard's page
  (:func:`same_counts`), and the one with those and as many other elements of each kind in its main area
  (:data:`ELEMENTS_HELD`: headings, text, inputs, buttons, folded sections, ...); in a fresh browser (a new context: no cache, no session) and in a returning one (a
  browser profile on disk that has opened every page before: its caches are warm; each opening is a new tab, so a
  new session). Every page is opened once before it is timed (the servers' caches warm, as a teammate's link
  finds them), then the rounds go over every dashboard page and every floor page in turn, so a change in the
  machine's speed falls on both;
- **change K** and **change runs**: in an open Overview, K typed into its box, one run removed from the selection,
  until the page's rerun finished and everything is drawn again;
- **change outcome**: on Compare with its query by query on, the queries behind the wins, then the losses (its four
  figures stay).

"Drawn" means the script finished (the app's ``data-test-script-state`` is ``notRunning``), no skeleton is left,
every table in view holds its canvas (one in a folded section is not drawn) and every Plotly chart its SVG.

Each measure is read on three clocks:

- **page**: the browser's own, from the navigation's start (``performance.timeOrigin``) or from the user's input
  (the Enter key, the click) to the first frame after the page became drawn, seen by a ``MutationObserver`` in the
  page (:data:`PAGE_CLOCK`): the whole page, every chart below the first screen included;
- **first screen**: the same clock, to the first frame after everything in the first screen (the viewport) was drawn
  (:data:`FIRST_SCREEN_DRAWN`): what a person waits to see before scrolling;
- **wall**: Python's, from ``goto`` or the input's dispatch until Playwright's own checks see the page drawn; it adds
  Playwright's round trips to a busy renderer (about 0.1-0.4 s here).

Prints each page beside its floor and their ratio (medians, page clock; fresh and returning), each page's first
screen, the issue's targets (:data:`TARGETS`), every measure (median, min, max on each clock) and the 1-minute load
average before and after, and writes them to ``benchmarks/out/browser.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import Page, sync_playwright
from plotly.offline import get_plotlyjs_version

from dashboard.ui import figures
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
IN_VIEW = (
    ".filter(e => { const r = e.getBoundingClientRect(); return r.height > 0 && r.bottom > 0 && r.top < innerHeight; })"
)
FIRST_SCREEN_DRAWN = (
    PARTS_DRAWN.replace(
        "[...document.querySelectorAll('.js-plotly-plot')]",
        f"[...document.querySelectorAll('.js-plotly-plot')]{IN_VIEW}",
    )
    .replace(
        """[...document.querySelectorAll("[data-testid='stVegaLiteChart']")]""",
        f"""[...document.querySelectorAll("[data-testid='stVegaLiteChart']")]{IN_VIEW}""",
    )
    .replace(
        """[...document.querySelectorAll("[data-testid='stDataFrame']")]""",
        f"""[...document.querySelectorAll("[data-testid='stDataFrame']")]{IN_VIEW}""",
    )
)
"""As :data:`PARTS_DRAWN`, for the charts and tables in the first screen (the viewport) only: what a person sees
when the page opens, before scrolling; :data:`PARTS_DRAWN` waits for every one."""
VIEWPORT = {"width": 1600, "height": 1000}
PAGE_CLOCK = (
    (
        """(() => {
  const clock = (window.__pageClock = { drawnAt: null, firstScreenAt: null, actedAt: null, sawRun: false, rising: false });
  const drawnNow = () => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!app) return false;
    const state = app.getAttribute("data-test-script-state");
    if (state === "running") clock.sawRun = true;
    // a page just opened may show its first run all at once (its "running" never drawn, the app's element made
    // after the run): its elements in the main block then say a run happened; an input needs a rerun seen
    const ran = clock.sawRun
      || (clock.actedAt === null && document.querySelector("[data-testid='stMain'] [data-testid='stElementContainer']"));
    if (!ran || state !== "notRunning") return false;
    if (app.getAttribute("data-test-connection-state") !== "CONNECTED") return false;
    if (document.querySelector("[data-testid='stSkeleton']")) return false;
    return FIRST_SCREEN_DRAWN ? (PARTS_DRAWN ? "all" : "first") : false;
  };
  let was = false;
  let generation = 0;  // an input starts a new one: a frame asked for before it does not count
  new MutationObserver((records) => {
    // a rerun may start and end between two callbacks: its "running" is then only in the records
    if (records.some((r) => r.attributeName === "data-test-script-state" && r.oldValue === "running"))
      clock.sawRun = true;
    const now = drawnNow();
    for (const [reached, field] of [[!!now && !was, "firstScreenAt"], [now === "all" && was !== "all", "drawnAt"]]) {
      if (!reached) continue;
      clock.rising = true;
      const asked = generation;
      requestAnimationFrame(() => {
        if (asked !== generation) return;
        clock[field] = performance.now();
        clock.rising = false;
      });
    }
    was = now;
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeOldValue: true });
  const acted = () => {
    Object.assign(clock, { actedAt: performance.now(), drawnAt: null, firstScreenAt: null, sawRun: false, rising: false });
    was = false;
    generation += 1;
  };
  addEventListener("pointerdown", acted, true);
  addEventListener("keydown", (e) => { if (e.key === "Enter") acted(); }, true);
})();"""
    )
    .replace("FIRST_SCREEN_DRAWN", FIRST_SCREEN_DRAWN)
    .replace("PARTS_DRAWN", PARTS_DRAWN)
)


Timing = tuple[float, float, float]
"""Seconds: on the page's clock until the page is drawn (every chart), until its first screen is; on the wall clock."""
CLOCKS = ("page", "first screen", "wall")


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
    return dict(
        page.evaluate(
            "() => ({drawnAt: window.__pageClock.drawnAt, firstScreenAt: window.__pageClock.firstScreenAt,"
            " actedAt: window.__pageClock.actedAt})"
        )
    )


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
        clock = page_clock(page)
        return clock["drawnAt"] / 1000, clock["firstScreenAt"] / 1000, wall
    finally:
        page.close()


def fresh_open(browser, url: str) -> Timing:  # type: ignore[no-untyped-def]
    context = new_context(browser)
    try:
        return timed_open(context, url)
    finally:
        context.close()


def once_more_on_failure(open_, *args) -> Timing:  # type: ignore[no-untyped-def]
    """``open_(*args)``, and once more if it fails (said on stderr): one opening that a starved machine lets time
    out does not end a run of hundreds; a second failure does."""
    try:
        return open_(*args)
    except Exception as error:
        progress(f"{args[-1]} failed ({str(error).splitlines()[0][:200]}); opened once more")
        return open_(*args)


def timed_change(page: Page, act) -> Timing:  # type: ignore[no-untyped-def]
    """From the input (page) and from its dispatch (wall) until the rerun is over and the page drawn again."""
    start = time.perf_counter()
    act()
    clock = page_clock(page)  # the page saw the input, a rerun (however quick) and the drawing after it
    drawn(page)
    wall = time.perf_counter() - start
    return (clock["drawnAt"] - clock["actedAt"]) / 1000, (clock["firstScreenAt"] - clock["actedAt"]) / 1000, wall


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
        for clock, values in zip(CLOCKS, zip(*timings))
    }


KINDS_HELD = """() => {
  const has = (selector) => document.querySelector(selector) !== null;
  const held = [];
  if (has("[data-testid='stSidebar'] :is([data-testid='stSelectbox'], [data-testid='stMultiSelect'], [data-testid='stNumberInput'])"))
    held.push("controls");
  if (has("[data-testid='stDataFrame']")) held.push("table");
  if (has(".ragmetrics-figure")) held.push("chart");
  if (has("[data-testid='stPlotlyChart']")) held.push("plotly_chart");
  if (has("[data-testid='stFileUploader']")) held.push("uploader");
  return held;
}"""
"""A JavaScript function: the kinds of elements a drawn page holds, named as ``browser_floor.KINDS`` draws them
(its sidebar's controls, a table, a chart drawn by the classic script, one drawn by ``st.plotly_chart``, a file
uploader): the kinds that load code of their own in the browser."""
HOW_MANY = """() => ({
  tables: document.querySelectorAll("[data-testid='stDataFrame']").length,
  charts: document.querySelectorAll(".js-plotly-plot").length,
  classic_charts: document.querySelectorAll(".ragmetrics-figure").length,
  elements: document.querySelectorAll("[data-testid='stElementContainer']").length,
})"""
"""A JavaScript function: how many tables, charts (of them, how many drawn by the classic script) and elements (of
any kind) a drawn page holds; a page far above its floor often holds many more of them than the floor's one of
each, so each page is also held against a floor page with as many tables and charts (:func:`same_counts`)."""
ELEMENTS_HELD = """() => {
  const names = {
    stHeading: "heading", stMarkdown: "markdown", stMetric: "metric", stButton: "button", stSelectbox: "selectbox",
    stMultiSelect: "multiselect", stNumberInput: "number_input", stTextInput: "text_input", stTextArea: "text_area",
    stRadio: "radio", stCheckbox: "checkbox", stFileUploader: "uploader", stTable: "static_table",
  };
  const drawnWithTables = new Set(["stFullScreenFrame", "stDownloadButton", "stEmpty"]);
  const held = {};
  const add = (name) => { held[name] = (held[name] || 0) + 1; };
  document.querySelectorAll("[data-testid='stMain'] [data-testid='stElementContainer'] > [data-testid]").forEach((e) => {
    const id = e.getAttribute("data-testid");
    if (!drawnWithTables.has(id)) add(names[id] || `other:${id}`);
  });
  for (const [selector, name] of [
    ["[data-testid='stExpander']", "expander"],
    ["[data-testid='stHorizontalBlock']", "columns"],
    ["[data-testid='stLayoutWrapper'] > [data-testid='stVerticalBlock']", "container"],
  ])
    document.querySelectorAll(`[data-testid='stMain'] ${selector}`).forEach(() => add(name));
  return held;
}"""
"""A JavaScript function: the page's other elements in its main area by kind (``browser_floor.ELEMENTS``' names;
``other:ID`` for one the floor cannot draw), beside the tables and charts (their frames and CSV buttons are theirs):
a floor page asked for the same counts (:class:`Floor`'s ``mix``) holds as many elements as the page."""
FLOOR_APP = "benchmarks/browser_floor.py"
BUNDLE_COST = (("controls", "table"), ("controls", "table", "chart"))
"""Two floor pages always timed: without and with one chart; the difference is what Plotly's script costs."""
RATIO_TARGET = 1.2
TARGETS = {
    "Overview, returning browser": ("page by address, returning browser: overview", 1.0),
    "Overview, fresh browser": ("page by address: overview", 2.0),
    "change K": ("change K (Overview)", 0.5),
    "change runs": ("change runs (Overview)", 0.5),
}
"""The issue's targets: a name, the measure it reads and the seconds (page clock, median) it must stay under."""
Results = dict[str, dict[str, dict[str, float]]]


def progress(line: str) -> None:
    """Where the run is, on stderr (the results go to stdout at the end)."""
    print(f"{time.strftime('%H:%M:%S')} {line} (load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)


class Held(NamedTuple):
    """What a drawn page holds: the ``kinds`` of elements (:data:`KINDS_HELD`), how ``many`` tables, charts and
    elements (:data:`HOW_MANY`) and its other ``elements`` by kind (:data:`ELEMENTS_HELD`)."""

    kinds: tuple[str, ...]
    many: dict[str, int]
    elements: dict[str, int]


def kinds_held(browser, url: str) -> Held:  # type: ignore[no-untyped-def]
    """Open ``url`` in a fresh browser (not timed: it warms the server's caches); what it holds."""
    context = new_context(browser)
    try:
        page = context.new_page()
        page.goto(url)
        drawn(page)
        return Held(tuple(page.evaluate(KINDS_HELD)), dict(page.evaluate(HOW_MANY)), dict(page.evaluate(ELEMENTS_HELD)))
    finally:
        context.close()


Counts = tuple[int, int]
"""How many tables and charts drawn by the classic script a floor page holds."""


def same_counts(kinds: tuple[str, ...], many: dict[str, int]) -> Counts | None:
    """The tables and classic charts of a dashboard page holding ``kinds`` and ``many`` (:data:`HOW_MANY`), asked
    of a floor page with the same kinds; None where the floor's one of each already holds as many."""
    counts = (many["tables"] * ("table" in kinds), many["classic_charts"] * ("chart" in kinds))
    return None if counts == (int("table" in kinds), int("chart" in kinds)) else counts


class Floor(NamedTuple):
    """A floor page: the ``kinds`` it holds, as many tables and classic charts as ``counts`` (one of each when
    None), and with a ``mix`` as many more other elements of each kind (``browser_floor.ELEMENTS``); opened at ``/`` or, ``by_path``, at a page's own path, as every dashboard page but the Overview is.
    Opened at a path, Streamlit's frontend first asks for its health and host config under that path, then under
    ``/``: about 0.1 s before the session starts, on the floor as on the dashboard."""

    kinds: tuple[str, ...]
    counts: Counts | None = None
    by_path: bool = False
    mix: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        name = f"floor: {','.join(self.kinds) or 'bare'}"
        if self.counts:
            name += f" ({self.counts[0]} tables, {self.counts[1]} charts)"
        if self.mix:
            name += f" with {self.mix_text}"
        return name + (" by path" if self.by_path else "")

    @property
    def mix_text(self) -> str:
        return ",".join(f"{kind}:{count}" for kind, count in self.mix)

    def url(self, base: str) -> str:
        extra = f"&tables={self.counts[0]}&charts={self.counts[1]}" if self.counts else ""
        extra += f"&mix={self.mix_text}" if self.mix else ""
        return f"{base}/{FLOOR_PATH if self.by_path else ''}?kinds={','.join(self.kinds)}{extra}"


FLOOR_PATH = "by-path"
"""The floor app's page at a path of its own (``browser_floor.py``), the same page as its default one."""


def floors_of(held: dict[str, Held]) -> dict[str, tuple[Floor, Floor]]:
    """Each dashboard page's two floors: one table and one chart of its kinds, and as many as the page holds; both
    opened as the page is, at ``/`` or at a path."""
    by_path = {view.key: bool(view.url_path) for view in VIEWS}
    return {
        view: (Floor(kinds, None, by_path[view]), Floor(kinds, same_counts(kinds, many), by_path[view]))
        for view, (kinds, many, _) in held.items()
    }


def with_elements(floor: Floor, page: dict[str, int], floor_holds: dict[str, int]) -> Floor:
    """``floor`` asked for the other elements ``page`` holds beyond those ``floor_holds`` already (its tables' and
    charts' own), of each kind the floor draws."""
    more = ((kind, n - floor_holds.get(kind, 0)) for kind, n in page.items() if not kind.startswith("other:"))
    return floor._replace(mix=tuple(sorted((kind, n) for kind, n in more if n > 0)))


def by_address(p, browser, urls: dict[str, str], repeat: int, results: Results) -> None:  # type: ignore[no-untyped-def]
    """Every address in ``urls`` (opened once before), timed in fresh browsers, then in a returning one; each
    round opens every address once, in turn."""
    fresh: dict[str, list[Timing]] = {name: [] for name in urls}
    for round_ in range(repeat):
        progress(f"fresh browsers, round {round_ + 1} of {repeat}")
        for name, url in urls.items():
            fresh[name].append(once_more_on_failure(fresh_open, browser, url))
    returning: dict[str, list[Timing]] = {name: [] for name in urls}
    with tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
        try:
            context.add_init_script(PAGE_CLOCK)
            # the browser has opened every page before, and every script they load at least twice (Chrome keeps a
            # script's compiled code from its second load on): the floor's pages hold one chart at most, the
            # dashboard's several
            for url in [*urls.values(), *(url for name, url in urls.items() if name.startswith("floor: "))]:
                once_more_on_failure(timed_open, context, url)
            for round_ in range(repeat):
                progress(f"returning browser, round {round_ + 1} of {repeat}")
                for name, url in urls.items():
                    returning[name].append(once_more_on_failure(timed_open, context, url))
        finally:
            context.close()
    for name in urls:
        results[f"page by address: {name}"] = summary(fresh[name])
        results[f"page by address, returning browser: {name}"] = summary(returning[name])


def changes(browser, base: str, repeat: int, results: Results) -> None:  # type: ignore[no-untyped-def]
    """K and the runs changed in an open Overview (its curves drawn), the outcome on Compare."""
    context = new_context(browser)
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        drawn(page)
        open_curves(page, TIMEOUT)
        results["change K (Overview)"] = summary(change_k(page, repeat))
        results["change runs (Overview)"] = summary(change_runs(page, repeat))
        page.goto(f"{base}/compare?cv=1")  # its query by query on
        drawn(page)
        results["change outcome (Compare)"] = summary(change_outcome(page, repeat))
    finally:
        context.close()


def median(results: Results, name: str) -> float:
    return results[name]["page"]["median"]


def report(
    results: Results,
    held: dict[str, Held],
    floors: dict[str, tuple[Floor, ...]],
    load: dict[str, tuple[float, ...]],
) -> list[str]:
    """The lines printed: each page beside its floor, the targets, what the bundle costs, every measure, the load
    average."""
    lines = []
    fresh, returning = "page by address: ", "page by address, returning browser: "
    if held:
        heads = " ".join(f"{f:>6} {'ratio':>6}" for f in ("floor", "floor=", "floor#"))
        lines.append(
            f"{'page':<12} {'kinds':<24} {'tables':>6} {'charts':>6} {'elems':>5}   {'fresh':>6} {heads}   "
            f"{'return':>6} {heads}   {'1st fr':>6} {'1st rt':>6}   (page clock, medians, s; 1st: its first screen, "
            "fresh and returning)"
        )
        for view, (kinds, many, _) in held.items():
            cells = []
            for prefix in (fresh, returning):
                own = median(results, prefix + view)
                cell = f"{own:6.2f}"
                for floor in floors[view]:
                    bare = median(results, prefix + floor.name)
                    cell += f" {bare:6.2f} {own / bare:5.2f}{' ' if own <= RATIO_TARGET * bare else '!'}"
                cells.append(cell)
            first = (results[prefix + view]["first screen"]["median"] for prefix in (fresh, returning))
            lines.append(
                f"{view:<12} {','.join(kinds) or 'bare':<24} {many['tables']:>6} {many['charts']:>6} "
                f"{many['elements']:>5}   " + "   ".join(cells) + "   " + " ".join(f"{s:6.2f}" for s in first)
            )
        lines.append(
            f"(! above {RATIO_TARGET}x its floor; 'floor' holds one table and one chart of its kinds, 'floor=' as many "
            "tables and charts as the page, 'floor#' those and as many other elements of each kind (headings, text, "
            "inputs, buttons, folded sections, rows of columns, containers); each opened as the page is, at / or at a path)"
        )
        for view, (_, _, elements) in held.items():
            lines.append(f"  {view}: {', '.join(f'{kind} {n}' for kind, n in sorted(elements.items()))}")
        without, with_chart = (Floor(kinds).name for kinds in BUNDLE_COST)
        lines.append(
            f"the chart's script, {figures.PLOTLY_JS.name} {get_plotlyjs_version()} "
            f"({figures.PLOTLY_JS.stat().st_size / 1e6:.1f} MB, {len(gzip.compress(figures.PLOTLY_JS.read_bytes())) / 1e6:.1f} MB gzipped), "
            f"costs a floor page {median(results, fresh + with_chart) - median(results, fresh + without):.2f} s "
            f"in a fresh browser, {median(results, returning + with_chart) - median(results, returning + without):.2f}"
            " s in a returning one"
        )
    for name, (measure, limit) in TARGETS.items():
        if measure in results:
            seconds = median(results, measure)
            lines.append(f"{name:<30} {seconds:.2f} s  {'meets' if seconds < limit else 'MISSES'} < {limit} s")
    for name, clocks in results.items():
        lines.append(
            f"{name:<62} "
            + "   ".join(
                f"{clock} {row['median']:.2f} s ({row['min']:.2f}-{row['max']:.2f})" for clock, row in clocks.items()
            )
            + f"   n={clocks['page']['n']}"
        )
    lines.append(
        f"load average before {load['before'][0]:.2f}, after {load['after'][0]:.2f} (1 min), {os.cpu_count()} cores"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="times each measure is taken (default 5)")
    parser.add_argument("--changes-only", action="store_true", help="only the changes of K, runs and outcome")
    parser.add_argument(
        "--pages",
        type=lambda text: text.split(","),
        default=[view.key for view in VIEWS],
        help="the dashboard pages timed by address, by key, comma-separated (default: every page)",
    )
    args = parser.parse_args()
    unknown = sorted(set(args.pages) - {view.key for view in VIEWS})
    if unknown:
        parser.error(f"unknown pages {unknown}; known: {', '.join(view.key for view in VIEWS)}")
    executable = chromium_path()
    if executable is None:
        print("chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    results: Results = {}
    held: dict[str, Held] = {}
    floors: dict[str, tuple[Floor, ...]] = {}
    load = {"before": os.getloadavg()}
    with (
        tempfile.TemporaryDirectory() as data,
        sync_playwright() as p,
        streamlit_server(data_dir=data, timeout=180) as base,
        streamlit_server(timeout=180, app=FLOOR_APP) as floor,
    ):
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            progress("first start")
            results["first start: Overview, fresh store"] = summary([fresh_open(browser, f"{base}/")])
            if args.changes_only:
                for url in (f"{base}/", f"{base}/compare"):  # the server's caches warm, as the page loads warm them
                    fresh_open(browser, url)
            else:
                urls = {view.key: f"{base}/{view.url_path}" for view in VIEWS if view.key in args.pages}
                progress("every page opened once: the kinds it holds")
                held = {view: kinds_held(browser, url) for view, url in urls.items()}
                floor_holds: dict[Floor, dict[str, int]] = {}

                def check(page_floor: Floor, more: dict[str, int] | None = None) -> None:
                    """The floor draws what it is asked for, no less, no more (``more``: its other elements)."""
                    url = page_floor.url(floor)
                    found, many, elements = kinds_held(browser, url)
                    counts = (many["tables"], many["classic_charts"])
                    if (
                        found != page_floor.kinds
                        or page_floor.counts not in (None, counts)
                        or more not in (None, elements)
                    ):
                        raise RuntimeError(f"the floor page {url} holds {found} {many} {elements}, not {page_floor}")
                    floor_holds[page_floor] = elements
                    urls[page_floor.name] = url

                pairs = floors_of(held)
                for page_floor in dict.fromkeys(
                    [*(f for pair in pairs.values() for f in pair), *map(Floor, BUNDLE_COST)]
                ):
                    check(page_floor)
                floors = {}
                for view, (plain, same) in pairs.items():
                    mixed = with_elements(same, held[view].elements, floor_holds[same])
                    if mixed not in floor_holds:
                        more = dict(floor_holds[same])
                        for kind, n in mixed.mix:
                            more[kind] = more.get(kind, 0) + n
                        check(mixed, more)
                    floors[view] = (plain, same, mixed)
                by_address(p, browser, urls, args.repeat, results)
            wait_until_idle(base.pid)
            progress("changes")
            changes(browser, base, args.repeat, results)
        finally:
            browser.close()
    load["after"] = os.getloadavg()
    lines = report(results, held, floors, load)
    print("\n".join(lines))
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(
        json.dumps({"results": results, "kinds": held, "load": load, "lines": lines}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
