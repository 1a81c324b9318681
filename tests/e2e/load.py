"""Bounded load test: N concurrent browser sessions explore the dashboard and upload runs for D seconds.

    python tests/e2e/load.py --sessions 20 --seconds 60 [--json out.json]

One Debian chromium (Playwright's async API) with one browser context per simulated user, against a real
``streamlit run dashboard/app.py`` on loopback with its own SQLite store (``tests.e2e.server``).

* Ramp-up: every session opens the app (on the light Metric definitions page, see ``LANDING``) in its own
  context, a few at a time (a cold page load costs chromium several CPU seconds); the sessions stay connected.
* Steady state, ``--seconds`` long: all sessions at once visit pages through the sidebar menu, move the K
  box (or the win/tie/loss radio on Compare runs), and now and then upload a run file of their own (a
  TREC run for the sample dataset's queries, unique name and content, so every upload is a new run id),
  with 1-3 s of "reading" between interactions. An interaction started before the end is finished.

Every interaction is timed from the action (click, key press, file set) to the app being idle again with
what the action should produce: the element only the new script run renders is visible (the page's
title, the caption's new K, the table of the chosen outcome, ``Loaded <file>`` plus the new run selected
in the sidebar), the script is ``notRunning`` and no skeleton is left.

Errors: ``stException`` elements, ``st.error`` alerts (either one showing while an interaction waits fails
it at once), Streamlit's connection-error dialog or any drop of the websocket after it connected, page
crashes, uncaught page errors, console errors, loopback HTTP 5xx and failed loopback requests, and
interactions that fail. Counted apart, not errors: failed fetches of non-loopback resources (the favicon
from fonts.gstatic.com on an offline machine) and the 404s of Streamlit's base-path probe when a page URL is
opened (``PROBE_404``). An interaction that takes longer than ``--timeout`` counts as a timeout. After an
error or a timeout the session starts over with a fresh page.

After the run every upload the UI confirmed (``Loaded <file> … stored as `<id>```) is looked up in the
server's store (``ragmetrics.store.database.Store`` on ``<data_dir>/ragmetrics.sqlite``): it must be stored under
the content id of the file (``ragmetrics.store.database.run_id``), linked to the dataset it was uploaded to and
named after the file. Latency is reported (p50/p95/max per kind), not asserted.

On Linux the summary also says how many cores the server and chromium used during the timed window
(from /proc), which tells how much of the latency is the browsers' own rendering on the shared cores.

Exit status 0 when there were no errors, no timeouts and no lost uploads; 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: make ``tests`` and ``ragmetrics`` importable
    sys.path.insert(0, str(REPO))

from tests.e2e.server import CHROMIUM_ARGS, chromium_path, streamlit_server

# the pages a user explores (menu titles); Upload is visited to upload
PAGES = [
    "Overview",
    "Breakdown",
    "Missed queries",
    "Diagnosis",
    "Compare runs",
    "Dataset power",
    "Workspace",
    "Metric definitions",
]
SAMPLE = "product_faq_zh"  # the first sample dataset: selected by default, so uploads go to it
# a new session lands on a light page: a cold load of the Overview costs chromium about 5 CPU seconds, of this
# page about half; on the 2 cores that also run the server, that halves the ramp-up (users' browsers do not
# share the server's CPU in real life, so this is the harness's cost, not the dashboard's)
LANDING = ("/metrics", "Metric definitions")
KINDS = ("open", "navigate", "widget", "upload")
OUTCOMES = ("loss", "win", "tie")  # the options of the radio on Compare runs, in order
# Opened at a page's URL, Streamlit's frontend first looks for its server under that path (/metrics/_stcore/health,
# /metrics/_stcore/host-config), gets a 404 and falls back to / (streamlit/streamlit#7074): expected, not an error
PROBE_404 = re.compile(r"^/[^/]+/_stcore/(health|host-config)$")

# In every document: remember every connection state after the first CONNECTED (a drop is an error even
# when it reconnects) and count script-state changes (for the diagnostics of a failed interaction).
INIT_SCRIPT = """
(() => {
  const s = window.__load = {changes: 0, connected: false, drops: []};
  new MutationObserver((records) => {
    for (const r of records) {
      const value = r.target.getAttribute(r.attributeName);
      if (r.attributeName === 'data-test-script-state') s.changes += 1;
      else if (value === 'CONNECTED') s.connected = true;
      else if (s.connected && value) s.drops.push(value);
    }
  }).observe(document, {subtree: true, attributes: true,
                        attributeFilter: ['data-test-script-state', 'data-test-connection-state']});
})();
"""

# Resolves "idle" once the script is not running and no skeleton is left, "dropped" when the connection
# dropped, "timeout" after ``timeout`` ms. No polling: a MutationObserver re-checks on DOM changes (a slow
# interval is the safety net). Called after the element of the new run is visible, so the run has started.
IDLE_JS = """
({timeout}) => new Promise((resolve) => {
  const check = () => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!app || !window.__load) return false;
    if (window.__load.drops.length) return 'dropped';
    return app.getAttribute('data-test-connection-state') === 'CONNECTED'
      && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector("[data-testid='stSkeleton']") ? 'idle' : false;
  };
  let done = false, observer = null, interval = null, timer = null;
  const finish = (value) => {
    if (done) return;
    done = true;
    if (observer) observer.disconnect();
    clearInterval(interval);
    clearTimeout(timer);
    resolve(value);
  };
  const poke = () => { const value = check(); if (value) finish(value); };
  observer = new MutationObserver(poke);
  observer.observe(document, {subtree: true, childList: true, attributes: true,
                              attributeFilter: ['data-test-script-state', 'data-test-connection-state']});
  interval = setInterval(poke, 500);
  timer = setTimeout(() => finish('timeout'), timeout);
  poke();
})
"""

# true once the table of the chosen outcome (key compare.queries.<run>.<metric>.<outcome>) is rendered, or an
# error shows (then the interaction goes on to the checks, which record it)
OUTCOME_TABLE_JS = """
(outcome) => [...document.querySelectorAll("[class*='st-key-compare-queries-']")].some(
  (e) => [...e.classList].some((c) => c.startsWith('st-key-compare-queries-') && c.endsWith('-' + outcome)))
  || !!document.querySelector("[data-testid='stException'], [data-testid='stAlertContentError']")
"""

DESCRIBE_JS = """
() => {
  const app = document.querySelector("[data-testid='stApp']");
  const h1 = document.querySelector('h1');
  const skeletons = document.querySelectorAll("[data-testid='stSkeleton']").length;
  return `script ${app && app.getAttribute('data-test-script-state')}, connection ${app && app.getAttribute('data-test-connection-state')}, `
    + `script-state changes ${window.__load ? window.__load.changes : '?'}, skeletons ${skeletons}, `
    + `title ${h1 ? JSON.stringify(h1.innerText.slice(0, 40)) : '-'}, url ${location.pathname}`;
}
"""

CHECK_JS = r"""
() => {
  const text = (sel) => [...document.querySelectorAll(sel)].map(e => (e.innerText || '').replace(/\s+/g, ' ').trim().slice(0, 300));
  const app = document.querySelector("[data-testid='stApp']");
  return {
    exceptions: text("[data-testid='stException']"),
    errors: text("[data-testid='stAlertContentError']"),
    warnings: text("[data-testid='stAlertContentWarning']"),
    dialogs: text("[role='dialog']").filter(t => /connection error|connecting/i.test(t)),
    drops: window.__load ? window.__load.drops.slice() : [],
    connection: app ? app.getAttribute('data-test-connection-state') : null,
  };
}
"""


# --- results -----------------------------------------------------------------------------


@dataclass
class Interaction:
    session: int
    kind: str  # open | navigate | widget | upload
    detail: str
    start: float  # seconds since the ramp-up started
    seconds: float
    ok: bool
    outcome: str = "ok"  # ok | error | timeout
    phase: str = "steady"  # ramp-up (each session's first page load) | steady (the timed window)


@dataclass
class Upload:
    session: int
    filename: str
    expected_id: str  # ragmetrics.store.database.run_id of the file's content
    confirmed: bool = False  # the UI said "Loaded <filename>"
    ui_id: str | None = None  # the id the UI said it stored
    dataset_id: str | None = None
    seconds: float | None = None
    stored: bool | None = None
    linked: bool | None = None
    stored_name: str | None = None


@dataclass
class Problem:
    session: int
    kind: str  # exception | st.error | connection | crash | pageerror | console | http | request | interaction | driver
    message: str
    at: float
    during: str = ""


@dataclass
class Results:
    interactions: list[Interaction] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    timeouts: list[Problem] = field(default_factory=list)
    external_failures: int = 0  # failed fetches of non-loopback resources (an offline machine), not errors
    aborted_requests: int = 0  # loopback requests the browser cancelled itself, not errors
    base_path_probes: int = 0  # 404s of /<page>/_stcore/health|host-config that Streamlit expects, not errors
    warnings_seen: dict[str, int] = field(default_factory=dict)  # st.warning texts after interactions


def percentile(values: list[float], q: float) -> float | None:
    """Linearly interpolated percentile (``q`` in 0..100); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency_stats(values: list[float]) -> dict[str, Any]:
    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 3)

    return {
        "count": len(values),
        "p50": r(percentile(values, 50)),
        "p95": r(percentile(values, 95)),
        "max": r(max(values) if values else None),
    }


# --- run files ---------------------------------------------------------------------------


class RunFiles:
    """Small TREC runs for the sample dataset's queries, a unique name and content per upload."""

    def __init__(self, folder: Path, seed: int) -> None:
        root = REPO / "sample_runs" / SAMPLE
        evalset = json.loads((root / "eval_set.json").read_text(encoding="utf-8"))
        self.queries = [q["query_id"] for q in evalset]
        self.relevant = {q["query_id"]: list(q.get("relevant_docs") or {}) for q in evalset}
        self.docs = [
            json.loads(line)["id"]
            for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        self.folder, self.seed = folder, seed

    def make(self, session: int, n: int) -> tuple[Path, str]:
        """Write upload ``n`` of ``session``; return its path and content id (``ragmetrics.store.database.run_id``)."""
        from ragmetrics.io import load_run
        from ragmetrics.store.database import run_id

        rng = random.Random(f"{self.seed}:{session}:{n}")
        serial = session * 1000 + n  # part of every score: no two uploads have the same content
        name = f"load-s{session:02d}-n{n:03d}"
        lines = []
        for query in self.queries:
            pool = list(self.docs)
            rng.shuffle(pool)
            found = [d for d in self.relevant.get(query, []) if rng.random() < 0.6]
            ranked = list(dict.fromkeys([*found, *pool]))[:20]
            if rng.random() < 0.3:
                rng.shuffle(ranked)
            for rank, doc in enumerate(ranked, start=1):
                lines.append(f"{query} Q0 {doc} {rank} {100 - rank + serial / 1e6:.6f} {name}")
        path = self.folder / f"{name}.trec"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path, run_id(load_run(path))


# --- one simulated user ------------------------------------------------------------------


class Timeout(Exception):
    pass


class Failed(Exception):
    pass


class User:
    def __init__(
        self,
        index: int,
        base: str,
        browser: Any,
        results: Results,
        files: RunFiles,
        *,
        t0: float,
        timeout: float,
        seed: int,
        upload_every: float,
        think: tuple[float, float],
    ) -> None:
        self.index, self.base, self.browser, self.results, self.files = index, base, browser, results, files
        self.t0, self.timeout_ms = t0, timeout * 1000
        self.rng = random.Random(f"{seed}:user:{index}")
        self.upload_every, self.think = upload_every, think
        self.phase = "ramp-up"
        self.page: Any = None
        self.need_open = True
        self.current = LANDING[1]
        self.n_uploads = 0
        self.since_upload = 0
        self.action = ""

    def now(self) -> float:
        return time.monotonic() - self.t0

    def problem(self, kind: str, message: str) -> None:
        self.results.problems.append(Problem(self.index, kind, message[:500], round(self.now(), 2), self.action))

    # page events --------------------------------------------------------------------------

    @staticmethod
    def _local(url: str) -> bool:
        host = urlparse(url).hostname or ""
        return host in ("127.0.0.1", "localhost", "::1") or url.startswith(("data:", "blob:", "about:"))

    def _on_console(self, msg: Any) -> None:
        if msg.type != "error":
            return
        where = (msg.location or {}).get("url", "")
        if "Failed to load resource" in msg.text and where and not self._local(where):
            return  # counted by _on_request_failed
        if "status of 404" in msg.text and PROBE_404.search(urlparse(where).path):
            self.results.base_path_probes += 1  # Streamlit's own base-path probe on a page URL (streamlit#7074)
            return
        self.problem("console", f"{msg.text} ({where})")

    def _on_request_failed(self, request: Any) -> None:
        failure = request.failure or ""
        if not self._local(request.url):
            self.results.external_failures += 1
        elif "ERR_ABORTED" in failure:
            self.results.aborted_requests += 1
        else:
            self.problem("request", f"{request.method} {request.url}: {failure}")

    def _on_response(self, response: Any) -> None:
        if response.status >= 500 and self._local(response.url):
            self.problem("http", f"HTTP {response.status} {response.request.method} {response.url}")

    async def new_page(self) -> None:
        context = await self.browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce")
        await context.add_init_script(INIT_SCRIPT)
        page = await context.new_page()
        page.set_default_timeout(self.timeout_ms)
        page.on("console", self._on_console)
        page.on("pageerror", lambda err: self.problem("pageerror", str(err)))
        page.on("crash", lambda _page: self.problem("crash", "the page crashed"))
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        self.page = page

    async def restart(self) -> None:
        await self.page.context.close()
        await self.new_page()
        self.need_open = True

    # waiting ------------------------------------------------------------------------------

    def left_ms(self, started: float) -> float:
        left = self.timeout_ms - (time.monotonic() - started) * 1000
        if left <= 0:
            raise Timeout(f"over {self.timeout_ms / 1000:.0f} s")
        return left

    async def visible(self, locator: Any, started: float) -> None:
        """Until ``locator`` shows; an exception or ``st.error`` showing first fails the interaction at once."""
        bad = self.page.get_by_test_id("stException").or_(self.page.get_by_test_id("stAlertContentError"))
        await locator.or_(bad).first.wait_for(state="visible", timeout=self.left_ms(started))
        if await bad.count():
            with contextlib.suppress(Exception):  # let the run finish rendering the message, else take it as it is
                await asyncio.wait_for(self.page.evaluate(IDLE_JS, {"timeout": 10_000}), 15)
            texts = await bad.all_inner_texts()
            raise Failed("the page shows an error: " + " | ".join(" ".join(t.split())[:300] for t in texts))

    async def wait_idle(self, started: float) -> None:
        """Until the script is not running and no skeleton is left; Timeout past the budget, Failed on a drop."""
        left = self.left_ms(started)
        try:
            result = await asyncio.wait_for(self.page.evaluate(IDLE_JS, {"timeout": left}), left / 1000 + 10)
        except asyncio.TimeoutError:
            raise Timeout(f"the page did not answer in {left / 1000:.0f} s") from None
        if result == "timeout":
            raise Timeout(f"the app was still busy after {self.timeout_ms / 1000:.0f} s")
        if result == "dropped":
            raise Failed("the connection to the server dropped")

    async def describe(self) -> str:
        """The app's state in a few words, for the message of a failed interaction."""
        try:
            return str(await asyncio.wait_for(self.page.evaluate(DESCRIBE_JS), 10))
        except Exception as err:
            return f"unavailable ({type(err).__name__})"

    async def check_page(self) -> bool:
        """Record what is wrong on the page; True when nothing is."""
        found = await self.page.evaluate(CHECK_JS)
        for text in found["exceptions"]:
            self.problem("exception", text)
        for text in found["errors"]:
            self.problem("st.error", text)
        for text in found["warnings"]:  # not errors, but worth a look (e.g. a run deleted under the page)
            key = text[:120]
            self.results.warnings_seen[key] = self.results.warnings_seen.get(key, 0) + 1
        dropped = bool(found["dialogs"] or found["drops"] or found["connection"] != "CONNECTED")
        if dropped:
            self.problem(
                "connection", f"state {found['connection']}, drops {found['drops']}, dialog {found['dialogs']}"
            )
        return not (found["exceptions"] or found["errors"] or dropped)

    async def timed(self, kind: str, detail: str, action: Any, expect: Any) -> Interaction:
        """``action()``, then until ``expect(started)`` (what only the new script run renders) holds and the app is idle."""
        self.action = f"{kind}:{detail}"
        start_at = self.now()
        started = time.monotonic()
        errors_before = len(self.results.problems)
        outcome = "ok"
        try:
            await action()
            await expect(started)
            await self.wait_idle(started)
            await expect(started)  # still there once idle: no later rerun took it away
        except Exception as err:
            timeout = isinstance(err, Timeout) or type(err).__name__ == "TimeoutError"
            outcome = "timeout" if timeout else "error"
            first = str(err).splitlines()[0][:300] if str(err) else ""
            entry = Problem(
                self.index,
                "interaction",
                f"{type(err).__name__}: {first} [page: {await self.describe()}]",
                round(self.now(), 2),
                self.action,
            )
            (self.results.timeouts if timeout else self.results.problems).append(entry)
        seconds = time.monotonic() - started
        if outcome == "ok":
            try:
                clean = await self.check_page()
            except Exception as err:
                self.problem("interaction", f"checking the page failed: {type(err).__name__}: {err}")
                clean = False
            # events (console errors, failed requests) during the interaction count against it too
            if not clean or len(self.results.problems) > errors_before:
                outcome = "error"
        record = Interaction(
            self.index, kind, detail, round(start_at, 3), round(seconds, 3), outcome == "ok", outcome, self.phase
        )
        self.results.interactions.append(record)
        self.action = ""
        return record

    # interactions -------------------------------------------------------------------------

    def heading(self, title: str) -> Any:
        return self.page.get_by_role("heading", name=title, level=1, exact=True)

    async def open(self) -> Interaction:
        path, title = LANDING

        async def go() -> None:
            await self.page.goto(self.base + path, wait_until="domcontentloaded", timeout=self.timeout_ms)

        async def expect(started: float) -> None:
            await self.visible(self.heading(title), started)

        record = await self.timed("open", title, go, expect)
        self.current = title
        self.need_open = not record.ok
        return record

    async def navigate(self, title: str) -> Interaction:
        async def click() -> None:
            await self.page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()

        async def expect(started: float) -> None:
            await self.visible(self.heading(title), started)

        record = await self.timed("navigate", title, click, expect)
        if record.ok:
            self.current = title
        return record

    async def move_k(self) -> Interaction:
        """K one up or down in the sidebar's K box; the page's caption then says the new K."""
        box = self.page.locator(".st-key-sidebar-k input")
        current = int(await box.input_value(timeout=self.timeout_ms))
        step = self.rng.choice([-1, 1]) if 1 < current < 20 else (1 if current <= 1 else -1)
        new = current + step
        caption = self.page.get_by_test_id("stCaptionContainer").filter(
            has_text=re.compile(rf"run\(s\) selected · K = {new}$")
        )

        async def press() -> None:
            await box.fill(str(new))
            await box.press("Enter")

        async def expect(started: float) -> None:
            await self.visible(caption, started)

        return await self.timed("widget", f"K {current}->{new} on {self.current}", press, expect)

    async def pick_outcome(self) -> Interaction:
        """Another option of the losses/wins/ties radio on Compare runs; its table then shows."""
        box = self.page.locator(".st-key-compare-outcome")
        radios = box.get_by_role("radio")
        count = await radios.count()
        section = self.page.locator(".st-key-compare-by_query")
        if count == 0 and await section.count():  # query by query is off: turning it on shows the radio

            async def switch() -> None:
                await section.locator("label").click()

            async def shown(started: float) -> None:
                await self.visible(radios.first, started)

            return await self.timed("widget", "query by query on Compare runs", switch, shown)
        if count != len(OUTCOMES):
            return await self.move_k()
        checked = [await radios.nth(i).is_checked() for i in range(count)]
        index = self.rng.choice([i for i in range(count) if not checked[i]])
        outcome = OUTCOMES[index]

        async def click() -> None:
            await box.locator("label").nth(index).click()

        async def expect(started: float) -> None:
            await self.page.wait_for_function(OUTCOME_TABLE_JS, arg=outcome, timeout=self.left_ms(started), polling=250)

        return await self.timed("widget", f"{outcome} on Compare runs", click, expect)

    async def upload(self) -> Interaction:
        if self.current != "Upload":
            record = await self.navigate("Upload")
            if not record.ok:
                return record
        self.n_uploads += 1
        self.since_upload = 0
        path, expected = self.files.make(self.index, self.n_uploads)
        entry = Upload(self.index, path.name, expected)
        self.results.uploads.append(entry)
        loaded = self.page.get_by_test_id("stAlertContentSuccess").filter(has_text=f"Loaded {path.name}")
        selected = self.page.locator(".st-key-sidebar-runs").get_by_text(path.stem, exact=True)

        async def put() -> None:
            await (
                self.page.locator(".st-key-upload-runs")
                .get_by_test_id("stFileUploaderDropzoneInput")
                .set_input_files(str(path))
            )

        async def expect(started: float) -> None:
            await self.visible(loaded, started)
            await self.visible(selected, started)  # the rerun after the upload selected the new run

        record = await self.timed("upload", path.name, put, expect)
        if record.ok:
            found = re.search(r"stored as\s+([0-9a-f]{16})", await loaded.first.inner_text())
            entry.confirmed = True
            entry.ui_id = found.group(1) if found else None
            entry.seconds = record.seconds
            entry.dataset_id = (parse_qs(urlparse(self.page.url).query).get("ds") or [None])[0]
        return record

    async def step(self) -> Interaction:
        """One interaction: about one upload in ``upload_every``, a widget change in 3 of 10, else another page."""
        self.since_upload += 1
        roll = self.rng.random()
        if self.since_upload > self.upload_every or roll < 1 / self.upload_every:
            return await self.upload()
        if roll < 1 / self.upload_every + 0.3:
            if self.current == "Compare runs" and self.rng.random() < 0.5:
                return await self.pick_outcome()
            return await self.move_k()
        return await self.navigate(self.rng.choice([p for p in PAGES if p != self.current]))

    # phases -------------------------------------------------------------------------------

    async def arrive(self) -> None:
        """Ramp-up: open the app in a fresh context (a cold page load)."""
        await self.new_page()
        if not (await self.open()).ok:
            await self.restart()

    async def explore(self, deadline: float) -> None:
        """Steady state: interact until ``deadline``; the interaction under way then is finished."""
        self.phase = "steady"
        await asyncio.sleep(self.rng.uniform(0, self.think[1]))  # not all in the same millisecond
        while time.monotonic() < deadline:
            record = await (self.open() if self.need_open else self.step())
            if not record.ok:  # after an error or a timeout, start over with a fresh page
                await self.restart()
            await asyncio.sleep(self.rng.uniform(*self.think))  # the user reads the page
        await self.page.context.close()


# --- CPU accounting (Linux /proc; empty elsewhere) -----------------------------------------


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command line, CPU seconds so far)."""
    import os

    out: dict[int, tuple[int, str, float]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry.name)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_snapshot(port: str) -> dict[str, float]:
    """CPU seconds used so far by the server on ``port`` and by the chromium processes this process started."""
    import os

    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cmd, _cpu) in procs.items():
        children.setdefault(ppid, []).append(pid)
    mine, todo = set(), [os.getpid()]
    while todo:
        for kid in children.get(todo.pop(), []):
            if kid not in mine:
                mine.add(kid)
                todo.append(kid)
    server = sum(
        cpu for _ppid, cmd, cpu in procs.values() if "streamlit run" in cmd and f"--server.port {port} " in cmd + " "
    )
    chromium = sum(procs[pid][2] for pid in mine if "chromium" in procs[pid][1])
    return {"server": server, "chromium": chromium, "at": time.monotonic(), "load": os.getloadavg()[0]} if procs else {}


def cpu_use(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """Average cores used between two snapshots (chromium: only processes alive at both, so a lower bound)."""
    import os

    if not before or not after:
        return {}
    seconds = max(after["at"] - before["at"], 1e-9)
    return {
        "server_cores": round((after["server"] - before["server"]) / seconds, 2),
        "chromium_cores": round((after["chromium"] - before["chromium"]) / seconds, 2),
        "machine_cores": os.cpu_count(),
        "load_average_1m": round(after["load"], 1),
    }


# --- the whole run -----------------------------------------------------------------------


async def warm_up(browser: Any, base: str, timeout: float) -> float:
    """One page view before the clock starts (the first one stores the sample data); a light page."""
    started = time.monotonic()
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(base + "/metrics", timeout=timeout * 1000)
    await page.get_by_role("heading", name="Metric definitions", level=1, exact=True).wait_for(timeout=timeout * 1000)
    await page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout * 1000)
    await context.close()
    return time.monotonic() - started


async def drive(
    base: str,
    sessions: int,
    seconds: float,
    *,
    timeout: float,
    seed: int,
    upload_every: float,
    folder: Path,
    warmup: bool = True,
    open_concurrency: int = 4,
    think: tuple[float, float] = (1.0, 3.0),
) -> tuple[Results, dict[str, Any]]:
    """Ramp-up, then ``seconds`` of all ``sessions`` exploring; returns the results and timing facts."""
    from playwright.async_api import async_playwright

    executable = chromium_path()
    if executable is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    results = Results()
    files = RunFiles(folder, seed)
    meta: dict[str, Any] = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            meta["warmup_seconds"] = round(await warm_up(browser, base, timeout), 2) if warmup else 0.0
            t0 = time.monotonic()
            users = [
                User(
                    i,
                    base,
                    browser,
                    results,
                    files,
                    t0=t0,
                    timeout=timeout,
                    seed=seed,
                    upload_every=upload_every,
                    think=think,
                )
                for i in range(sessions)
            ]

            def record_crashes(done: list[Any]) -> None:
                for i, outcome in enumerate(done):
                    if isinstance(outcome, BaseException):
                        message = f"{type(outcome).__name__}: {outcome}"
                        results.problems.append(Problem(i, "driver", message[:500], round(time.monotonic() - t0, 2)))

            gate = asyncio.Semaphore(max(open_concurrency, 1))

            async def arrive(user: User) -> None:
                async with gate:
                    await user.arrive()

            port = base.rsplit(":", 1)[-1]
            cpu0 = cpu_snapshot(port)
            record_crashes(await asyncio.gather(*(arrive(u) for u in users), return_exceptions=True))
            start = time.monotonic()
            cpu1 = cpu_snapshot(port)
            meta["ramp_up_seconds"] = round(start - t0, 2)
            deadline = start + seconds
            explorers = [asyncio.create_task(u.explore(deadline)) for u in users]
            await asyncio.sleep(max(deadline - time.monotonic(), 0))
            cpu2 = cpu_snapshot(port)  # at the deadline, before contexts close (their renderers' CPU would vanish)
            record_crashes(await asyncio.gather(*explorers, return_exceptions=True))
            meta["steady_seconds"] = round(time.monotonic() - start, 2)
            meta["cpu"] = {"ramp_up": cpu_use(cpu0, cpu1), "timed_window": cpu_use(cpu1, cpu2)}
        finally:
            await browser.close()
    return results, meta


def verify_store(data_dir: Path, results: Results) -> dict[str, Any]:
    """Look every upload up in the server's SQLite store; return what was found."""
    from ragmetrics.store.database import Store

    store = Store(f"sqlite:///{(data_dir / 'ragmetrics.sqlite').resolve()}")
    try:
        datasets = store.list_datasets()
        sample_id = dict(zip(datasets["name"], datasets["id"])).get(SAMPLE)
        linked_runs: dict[str, dict[str, str]] = {}

        def linked(ds: str | None) -> dict[str, str]:
            if not ds:
                return {}
            if ds not in linked_runs:
                table = store.list_runs(ds)
                linked_runs[ds] = dict(zip(table["id"], table["name"]))
            return linked_runs[ds]

        for up in results.uploads:
            runs = linked(up.dataset_id or sample_id)
            up.stored = store.has_run(up.expected_id)
            up.linked = up.expected_id in runs
            up.stored_name = runs.get(up.expected_id)
        confirmed = [u for u in results.uploads if u.confirmed]
        lost = [u for u in confirmed if not (u.stored and u.linked)]
        ours = {u.expected_id for u in results.uploads}
        in_sample = linked(sample_id)
        return {
            "dataset": SAMPLE,
            "dataset_id": sample_id,
            "runs_in_dataset": len(in_sample),
            "attempted": len(results.uploads),
            "confirmed": len(confirmed),
            "stored": len([rid for rid in in_sample if rid in ours]),
            "confirmed_and_stored": len(confirmed) - len(lost),
            "stored_unconfirmed": len([u for u in results.uploads if not u.confirmed and u.stored]),
            "lost": [u.filename for u in lost],
            "wrong_id": [
                f"{u.filename}: UI {u.ui_id} != content {u.expected_id}" for u in confirmed if u.ui_id != u.expected_id
            ],
            "misnamed": [
                f"{u.filename}: stored as {u.stored_name!r}"
                for u in confirmed
                if u.stored_name is not None and u.stored_name != Path(u.filename).stem
            ],
            "other_datasets": sorted(
                {u.dataset_id for u in results.uploads if u.dataset_id and u.dataset_id != sample_id}
            ),
        }
    finally:
        store.engine.dispose()


def summarize(
    results: Results, meta: dict[str, Any], uploads: dict[str, Any], *, sessions: int, seconds: float
) -> dict[str, Any]:
    ok = [i for i in results.interactions if i.ok]
    steady = [i for i in results.interactions if i.phase == "steady"]
    explored: dict[int, int] = {}  # per session: ok interactions in the timed window, page loads not counted
    for i in steady:
        if i.ok and i.kind != "open":
            explored[i.session] = explored.get(i.session, 0) + 1
    kinds: dict[str, int] = {}
    for p in results.problems:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    window = max(meta.get("steady_seconds") or seconds, 1e-9)
    summary = {
        "sessions": sessions,
        "seconds": seconds,
        **meta,
        "interactions": len(results.interactions),
        "interactions_ok": len(ok),
        "interactions_by_kind": {k: len([i for i in results.interactions if i.kind == k]) for k in KINDS},
        "steady_interactions": len(steady),
        "steady_interactions_per_second": round(len([i for i in steady if i.ok]) / window, 2),
        "sessions_with_interactions": len(explored),
        "min_interactions_per_session": min((explored.get(n, 0) for n in range(sessions)), default=0),
        "errors": len(results.problems),
        "error_kinds": kinds,
        "timeouts": len(results.timeouts),
        "external_resource_failures": results.external_failures,
        "aborted_requests": results.aborted_requests,
        "base_path_probes": results.base_path_probes,
        "warnings_seen": results.warnings_seen,
        "uploads": uploads,
        "latency": {
            "all": latency_stats([i.seconds for i in ok if i.kind != "open"]),
            **{k: latency_stats([i.seconds for i in ok if i.kind == k]) for k in KINDS},
        },
        "navigate_latency_by_page": {
            page: latency_stats([i.seconds for i in ok if i.kind == "navigate" and i.detail == page])
            for page in [*PAGES, "Upload"]
        },
        "error_details": [asdict(p) for p in results.problems[:50]],
        "timeout_details": [asdict(p) for p in results.timeouts[:50]],
        "interaction_log": [asdict(i) for i in results.interactions],
    }
    summary["passed"] = bool(
        summary["errors"] == 0
        and summary["timeouts"] == 0
        and not uploads["lost"]
        and not uploads["wrong_id"]
        and not uploads["misnamed"]
        and uploads["confirmed"] == uploads["confirmed_and_stored"]
    )
    return summary


def format_summary(s: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}s"

    u = s["uploads"]
    by_kind = ", ".join(f"{k} {n}" for k, n in s["interactions_by_kind"].items())
    w = s.get("cpu", {}).get("timed_window")
    cpu_line = (
        [
            (
                f"cpu in the timed window: server {w['server_cores']} cores, chromium {w['chromium_cores']} cores "
                f"(of {w['machine_cores']}; 1-minute load average {w['load_average_1m']})"
            )
        ]
        if w
        else []
    )
    lines = [
        (
            f"load test: {s['sessions']} concurrent browser sessions (one chromium, a context each) on loopback; "
            f"warm-up {s.get('warmup_seconds', 0):.1f} s, ramp-up {s.get('ramp_up_seconds', 0):.1f} s "
            f"({s.get('open_concurrency', '?')} sessions opening at a time), then {s['seconds']:g} s of exploring and uploading "
            f"({s.get('steady_seconds', 0):.1f} s until the last interaction finished)"
        ),
        (
            f"interactions: {s['interactions']} ({s['interactions_ok']} ok): {by_kind}; {s['steady_interactions']} in the timed "
            f"window ({s['steady_interactions_per_second']}/s ok); sessions that explored: "
            f"{s['sessions_with_interactions']}/{s['sessions']} (at least {s['min_interactions_per_session']} each)"
        ),
        (
            f"errors: {s['errors']} {s['error_kinds'] or ''}  timeouts: {s['timeouts']}  "
            f"(not errors: {s['external_resource_failures']} failed non-loopback fetches, {s['aborted_requests']} cancelled requests, "
            f"{s['base_path_probes']} expected 404s of Streamlit's base-path probe)"
        ),
        (
            f"uploads: attempted {u['attempted']}, confirmed in the UI {u['confirmed']}, in the store {u['stored']} "
            f"(confirmed and stored {u['confirmed_and_stored']}), lost {len(u['lost'])}, wrong id {len(u['wrong_id'])}, "
            f"misnamed {len(u['misnamed'])}; dataset {u['dataset']} now has {u['runs_in_dataset']} runs"
        ),
        *cpu_line,
        "latency, action -> app idle with the expected element shown:",
        f"  {'kind':<9} {'n':>5} {'p50':>8} {'p95':>8} {'max':>8}",
    ]
    for kind, st in s["latency"].items():
        lines.append(f"  {kind:<9} {st['count']:>5} {fmt(st['p50']):>8} {fmt(st['p95']):>8} {fmt(st['max']):>8}")
    lines.append("  (all = navigate + widget + upload; open = a new session's cold page load, in the ramp-up)")
    pages = [
        f"{page} {fmt(st['p50'])}/{fmt(st['max'])} (n={st['count']})"
        for page, st in s["navigate_latency_by_page"].items()
        if st["count"]
    ]
    lines.append("  navigate p50/max by page: " + ", ".join(pages))
    if s.get("warnings_seen"):
        lines.append(
            "  st.warning texts seen (not errors): " + "; ".join(f"{n}x {t}" for t, n in s["warnings_seen"].items())
        )
    for p in s["error_details"][:15]:
        lines.append(
            f"  ERROR session {p['session']} at {p['at']}s [{p['kind']}] during {p['during'] or '-'}: {p['message']}"
        )
    for p in s["timeout_details"][:15]:
        lines.append(f"  TIMEOUT session {p['session']} at {p['at']}s during {p['during']}: {p['message']}")
    lines += [f"  LOST upload {name}" for name in u["lost"][:15]]
    lines += [f"  UPLOAD {text}" for text in u["wrong_id"][:5] + u["misnamed"][:5]]
    lines.append("PASSED" if s["passed"] else "FAILED")
    return "\n".join(lines)


def run_load(
    sessions: int = 20,
    seconds: float = 60.0,
    *,
    timeout: float = 120.0,
    seed: int = 1,
    upload_every: float = 4.0,
    data_dir: str | Path | None = None,
    warmup: bool = True,
    open_concurrency: int = 4,
    think: tuple[float, float] = (1.0, 3.0),
) -> dict[str, Any]:
    """Start a server with its own store, drive it, check the store; return the summary."""
    folder = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="ragmetrics-load-"))
    store_dir, runs_dir = folder / "store", folder / "runs"
    store_dir.mkdir(parents=True, exist_ok=True)
    runs_dir.mkdir(parents=True, exist_ok=True)
    try:
        with streamlit_server(data_dir=store_dir) as base:
            results, meta = asyncio.run(
                drive(
                    base,
                    sessions,
                    seconds,
                    timeout=timeout,
                    seed=seed,
                    upload_every=upload_every,
                    folder=runs_dir,
                    warmup=warmup,
                    open_concurrency=open_concurrency,
                    think=think,
                )
            )
            uploads = verify_store(store_dir, results)
        meta.update(open_concurrency=open_concurrency, think_seconds=list(think), interaction_timeout=timeout)
        return summarize(results, meta, uploads, sessions=sessions, seconds=seconds)
    finally:
        if not data_dir:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20, help="concurrent browser sessions (default 20)")
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="length of the timed window after the ramp-up (default 60)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one interaction may take before it counts as a timeout (default 120)",
    )
    parser.add_argument(
        "--upload-every", type=float, default=4.0, help="about one upload per this many interactions (default 4)"
    )
    parser.add_argument(
        "--open-concurrency", type=int, default=4, help="sessions opening the app at once in the ramp-up (default 4)"
    )
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=(1.0, 3.0),
        metavar=("MIN", "MAX"),
        help="seconds a user pauses between interactions, uniform in [MIN, MAX] (default 1 3)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--data-dir", help="keep the store and the generated runs here (default: a temporary folder, removed)"
    )
    parser.add_argument(
        "--no-warmup", action="store_true", help="no page view before the ramp-up (the first one stores the samples)"
    )
    parser.add_argument("--json", help="also write the summary as JSON to this path")
    args = parser.parse_args(argv)
    summary = run_load(
        args.sessions,
        args.seconds,
        timeout=args.timeout,
        seed=args.seed,
        upload_every=args.upload_every,
        data_dir=args.data_dir,
        warmup=not args.no_warmup,
        open_concurrency=args.open_concurrency,
        think=tuple(args.think),
    )
    print(format_summary(summary), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
