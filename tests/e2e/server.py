"""A real ``streamlit run dashboard/app.py`` server and Debian's chromium, for the e2e tests and the screenshot script."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coloraide import Color

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerURL(str):
    """A server's base URL that also knows the server's process id (for tests that read its memory)."""

    pid: int


@contextmanager
def streamlit_server(
    timeout: float = 90.0,
    *,
    data_dir: str | Path | None = None,
    store_url: str | None = None,
    env: dict[str, str] | None = None,
    app: str = "dashboard/app.py",
    python: str | None = None,
    base_url_path: str = "",
) -> Iterator[ServerURL]:
    """Start the dashboard (or another ``app`` of this repository, by its path from the root) on a free port, wait for /_stcore/health, yield its base URL (with the ``pid``); print
    the log on teardown.

    The server gets its own store: ``store_url`` (``RAGMETRICS_STORE_URL``) when given, else a SQLite file in
    ``data_dir`` (``RAGMETRICS_DATA_DIR``), else in a fresh temporary folder; never ./data or a team's store.
    Start it again with the same ``data_dir`` to restart on the same data. ``env`` adds environment variables;
    ``python`` is the interpreter that runs it (this one by default; the README's dashboard install's in the
    newcomer tests). ``base_url_path``: Streamlit's ``server.baseUrlPath`` (the URL yielded is still the root's).
    """
    port = free_port()
    own: str | None = None
    log = tempfile.NamedTemporaryFile("w+", prefix="streamlit-", suffix=".log", delete=False)
    extra = env or {}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RAGMETRICS_STORE_URL", "RAGMETRICS_DATA_DIR", "RAGMETRICS_BASE_URL")
    }
    env["PYTHONUNBUFFERED"] = "1"
    if store_url:
        env["RAGMETRICS_STORE_URL"] = store_url
    else:
        own = None if data_dir else tempfile.mkdtemp(prefix="ragmetrics-e2e-data-")
        env["RAGMETRICS_DATA_DIR"] = str(data_dir or own)
    env.update(extra)
    proc = subprocess.Popen(
        [
            python or sys.executable,
            "-m",
            "streamlit",
            "run",
            app,
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            *(["--server.baseUrlPath", base_url_path] if base_url_path else []),
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{Path(log.name).read_text()}")
            try:
                prefix = f"/{base_url_path.strip('/')}" if base_url_path else ""
                with urllib.request.urlopen(f"{base}{prefix}/_stcore/health", timeout=2) as response:
                    if response.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not become healthy in {timeout}s:\n{Path(log.name).read_text()}")
            time.sleep(0.3)
        url = ServerURL(base)
        url.pid = proc.pid
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = Path(log.name).read_text()
        if text.strip():
            print(f"--- streamlit server log ({log.name}) ---\n{text[-5000:]}")
        if own:
            shutil.rmtree(own, ignore_errors=True)


def wait_for_app(page, timeout: float = 60_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app is connected, the script finished and no skeleton is left (no fixed sleeps)."""
    from playwright.sync_api import expect

    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=timeout)
    # a rerun may start just after load: wait for "running" to be over
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=timeout)
    page.wait_for_function(
        "() => document.querySelector(\"[data-testid='stApp']\").getAttribute('data-test-script-state') === 'notRunning'",
        timeout=timeout,
    )
    # a figure is drawn once Plotly's script has loaded (dashboard.ui.figures), after the script run
    page.wait_for_function(
        "() => [...document.querySelectorAll('.ragmetrics-figure')].every(g => g._fullLayout && g.querySelector('.main-svg'))",
        timeout=timeout,
    )


def give_files(
    page,
    key: str,
    paths: str | Path | list[str | Path],
    *,
    tries: int = 3,
    timeout: float = 60_000,
    replace: bool = False,
) -> None:  # type: ignore[no-untyped-def]
    """Give ``paths`` to the file uploader with widget key ``key`` and wait until each is uploaded; ``replace``: take
    out the files it lists first. Files given while a rerun replaces the uploader's input are dropped by the browser
    (the uploader then lists none of them): they are given again, up to ``tries`` times; a listing that took some of
    them and not the others fails."""
    from playwright.sync_api import expect

    files = [Path(p) for p in (paths if isinstance(paths, list) else [paths])]
    box = page.locator(f".st-key-{key.replace('.', '-')}")
    remove = box.get_by_role("button", name=re.compile(r"^Remove "))
    while replace and remove.count():
        remove.first.click()
        wait_for_app(page)
    chips = box.get_by_test_id("stFileChip")  # one per file listed, uploading or uploaded
    before = chips.count()
    for attempt in range(tries):
        box.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([str(f) for f in files])
        try:
            expect(chips).to_have_count(before + len(files), timeout=10_000)
            break
        except AssertionError:
            # given again only when the uploader took none of them: files it took would be listed twice
            if attempt == tries - 1 or chips.count() > before:
                raise
            wait_for_app(page)
    for f in files:  # uploaded: its button says Remove (Cancel upload while it uploads), naming it whole
        expect(box.get_by_role("button", name=f"Remove {f.name}", exact=True).first).to_be_visible(timeout=timeout)


def open_curves(page, timeout: float = 60_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the Overview's curves (drawn on its first screen, no click needed) are both drawn."""
    wait_for_app(page, timeout)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2", timeout=timeout)


def share_code(page, timeout: float = 60_000) -> str:  # type: ignore[no-untyped-def]
    """The link in the sidebar's "Copy share link" popover (opened, read, closed)."""
    page.get_by_test_id("stSidebar").get_by_role("button", name="Copy share link").click()
    code = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode")
    code.wait_for(timeout=timeout)
    text = str(code.inner_text()).strip()
    page.keyboard.press("Escape")
    return text


WCAG_AA = 4.5
"""The least contrast WCAG 2.1 asks of normal text (level AA, success criterion 1.4.3)."""


def mark_contrasts(page) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each marked text on the page (Streamlit's coloured backgrounds) and its WCAG 2.1 contrast: the text's colour
    against its background laid over the page's (a background with alpha is seen over what is under it)."""
    found = page.evaluate(
        """() => { const app = getComputedStyle(document.querySelector("[data-testid='stApp']")).backgroundColor;
           return [...document.querySelectorAll('.stMarkdownColoredBackground')].map(mark => {
               const text = mark.querySelector('span') || mark;
               return [text.textContent, getComputedStyle(text).color, getComputedStyle(mark).backgroundColor, app];
           }); }"""
    )
    contrasts = {}
    for text, colour, background, under in found:
        seen = Color.layer([background, under], space="srgb")
        contrasts[text] = Color.layer([colour, seen], space="srgb").contrast(seen, method="wcag21")
    return contrasts
