"""Memory bounded in bytes on a real server: what a session's uploads and pages made is released after it ends, and
an upload past the session's budget is refused with a clear message (``dashboard.ui.memory``)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.server import ServerURL, give_files, open_curves, streamlit_server, wait_for_app
from tests.e2e.test_dashboard_e2e import TIMEOUT, open_page

pytestmark = [pytest.mark.e2e]

N_QUERIES, DEPTH, N_RUNS = 2_000, 100, 12
SESSION_TTL = "2"  # seconds Streamlit keeps a disconnected session for it to reconnect


def rss(pid: int) -> int:
    """Resident bytes of a process (``VmRSS`` of /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def _write(folder: Path, name: str, n_queries: int = N_QUERIES, n_runs: int = N_RUNS) -> tuple[Path, list[Path]]:
    """An evaluation set ``{name}.json`` of ``n_queries`` queries and ``n_runs`` different runs of ``DEPTH``
    documents each."""
    rng = np.random.default_rng(7)
    relevant = rng.integers(0, 100_000, size=n_queries)
    items = [
        {"query_id": f"Q{i:05d}", "query": f"question {i}", "relevant_docs": {f"D{relevant[i]}": 1}}
        for i in range(n_queries)
    ]
    dataset = folder / f"{name}.json"
    dataset.write_text(json.dumps(items))
    runs = []
    for r in range(n_runs):
        docs = rng.integers(0, 100_000, size=(n_queries, DEPTH))
        hit = rng.random(n_queries) < 0.5
        docs[hit, rng.integers(0, 10)] = relevant[hit]
        lines = [
            f"Q{i:05d} Q0 D{d} {k + 1} {DEPTH - k} run{r}" for i in range(n_queries) for k, d in enumerate(docs[i])
        ]
        path = folder / f"{name}-run{r:02d}.trec"
        path.write_text("\n".join(lines) + "\n")
        runs.append(path)
    return dataset, runs


def _uploader(page: Page, key: str):  # type: ignore[no-untyped-def]
    return page.locator(f".st-key-upload-{key}").get_by_test_id("stFileUploaderDropzoneInput")


def _session(browser: Browser, url: ServerURL, dataset: Path, runs: list[Path]) -> int:
    """One session that uploads ``dataset`` and ``runs`` one after the other, then draws their curves on the
    Overview; the server's RSS at the end, before the session closes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{url}/upload")
    wait_for_app(page)
    give_files(page, "upload.dataset", dataset)
    expect(page.get_by_text(f"Loaded {dataset.name}")).to_be_visible(timeout=TIMEOUT)
    wait_for_app(page)
    for path in runs:
        give_files(page, "upload.runs", path)
        expect(page.get_by_text(f"Loaded {path.name}")).to_be_visible(timeout=TIMEOUT)
        wait_for_app(page)
    open_page(page, "Overview")
    open_curves(page, TIMEOUT)
    peak = rss(url.pid)
    context.close()
    return peak


def _settled(pid: int, *, below: float = 0.0, within: float = 90.0) -> int:
    """The process's RSS once it has not fallen for fifteen seconds (or is ``below``), waiting ``within`` seconds
    at most; the sweeper runs every five seconds."""
    deadline, last, steady = time.monotonic() + within, rss(pid), 0
    while time.monotonic() < deadline and last > below and steady < 15:
        time.sleep(1)
        now = rss(pid)
        steady = steady + 1 if now >= last else 0
        last = min(last, now)
    return last


@pytest.mark.soak
def test_a_sessions_memory_goes_back_after_it_ends(browser: Browser, tmp_path: Path) -> None:
    # A small session first loads every module the pages import (plotly's figure classes, the loaders, the
    # statistics), which stay for the life of the process: the baseline is the server after that session ended.
    warm = _write(tmp_path, "warm_eval", n_queries=200, n_runs=2)
    dataset, runs = _write(tmp_path, "memory_eval")
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": SESSION_TTL}
    with streamlit_server(env=env) as url:
        _session(browser, url, *warm)
        before = _settled(url.pid)
        peak = _session(browser, url, dataset, runs)  # twelve uploads, one after the other, in this one session
        after = _settled(url.pid, below=before + 0.1 * (peak - before))
        print(f"\nserver RSS: {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} MiB after {N_RUNS} uploads, "
              f"{after / 2**20:.0f} MiB after the session ended")  # fmt: skip
        assert peak > before + 200 * 2**20, "the uploads should have cost memory, or this test proves nothing"
        assert after - before <= 0.25 * (peak - before), "more than a quarter of what the session took was kept"


def test_an_upload_past_the_sessions_budget_is_refused_with_the_reason(browser: Browser, tmp_path: Path) -> None:
    big = tmp_path / "too-big.trec"
    big.write_text("".join(f"q{i} Q0 d{i} 1 1.0 x\n" for i in range(60_000)))  # about 1.2 MB
    with streamlit_server(env={"RAGMETRICS_UPLOAD_SESSION_BYTES": "1MB"}) as url:
        page = browser.new_page()
        page.goto(f"{url}/upload")
        wait_for_app(page)
        expect(page.get_by_text("Files in this session's uploaders: 0 bytes of 1 MiB")).to_be_visible()
        _uploader(page, "runs").set_input_files(str(big))
        refused = page.get_by_text("Upload refused: This upload")
        expect(refused).to_be_visible(timeout=TIMEOUT)
        assert "a session may hold 1 MiB (RAGMETRICS_UPLOAD_SESSION_BYTES)" in refused.inner_text()
        expect(page.get_by_text("Loaded too-big.trec")).to_have_count(0)
        page.close()


def _whole_answer(sock: socket.socket) -> str:
    """The server's whole answer: its head, then as many bytes of body as its Content-Length says (a recv can
    return the head alone, the body following in the next packet), or what came before the server closed."""
    answer = b""
    while True:
        head, blank_line, body = answer.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length: *(\d+)", head)
        if blank_line and length and len(body) >= int(length.group(1)):
            return answer.decode("latin-1")
        try:
            more = sock.recv(65536)
        except OSError:
            more = b""
        if not more:
            return answer.decode("latin-1")
        answer += more


def test_an_upload_that_frames_its_body_apart_from_its_stated_length_is_refused(tmp_path: Path) -> None:
    """Was: the budget counted the Content-Length an upload stated, and with a Transfer-Encoding the server frames the
    body by chunks whatever that length says: 10 bytes stated, 100 MiB sent and kept. Such an upload is refused
    before any of its body is read, on a real server, by a raw socket (no client would send it)."""
    with streamlit_server(env={"RAGMETRICS_UPLOAD_SESSION_BYTES": "1MB"}, data_dir=tmp_path) as url:
        parts = urlsplit(url)
        body = b"x" * (4 << 20)  # 4 MiB, four times the session's budget, in one chunk
        request = (
            b"PUT /_stcore/upload_file/session-id/file-id HTTP/1.1\r\n"
            + f"Host: {parts.hostname}:{parts.port}\r\n".encode()
            + b"Content-Length: 10\r\nTransfer-Encoding: chunked\r\nContent-Type: application/octet-stream\r\n\r\n"
            + f"{len(body):x}\r\n".encode()
            + body
            + b"\r\n0\r\n\r\n"
        )
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            with contextlib.suppress(OSError):  # the server may answer and close before the whole body is sent
                sock.sendall(request)
            answer = _whole_answer(sock)
        status = answer.split(" ", 2)[1] if answer.startswith("HTTP/1.1 ") else answer[:80]
        assert status == "411" and "no Transfer-Encoding" in answer, answer[:300]
