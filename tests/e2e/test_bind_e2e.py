"""The README's ``streamlit run dashboard/app.py``, with no address given, listens on this machine only."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.e2e.server import REPO, free_port


def _listening_addresses(port: int) -> set[str]:
    """The IPv4 and IPv6 addresses with a socket listening on ``port`` (``/proc/net/tcp*``, state 0A)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_the_default_server_listens_on_loopback_only() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_SERVER_ADDRESS")}
    env["RAGMETRICS_DATA_DIR"] = tempfile.mkdtemp(prefix="ragmetrics-bind-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard/app.py", "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    assert response.read() == b"ok"
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.3)
        addresses = _listening_addresses(port)
        # 0100007F is 127.0.0.1; an address of all zeros (0.0.0.0 or ::) would take connections from anywhere
        assert addresses and addresses <= {"0100007F", "00000000000000000000000001000000"}, addresses
    finally:
        proc.terminate()
        proc.wait(timeout=20)
