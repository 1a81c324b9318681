"""The README's dashboard install in a virtual environment of its own, for the browser tests of a newcomer's path.

The tests run in the ``[test]`` environment, which holds every extra: a button that needs a package the dashboard
install does not bring would pass there and fail for a newcomer. :class:`DashboardInstall` makes a fresh venv (no
system site packages) and runs the README's own ``pip install ... [dashboard] ...`` command in it, read from the
README (so the test follows the README), in the background while other browser tests run; the tests that need it
start their server with that venv's Python.

``RAGMETRICS_DASHBOARD_PYTHON`` names a Python that already has the install (a local run made it once).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.server import REPO

README_DASHBOARD_INSTALL = re.compile(r"^(pip install [^&\n]*\[dashboard\][^&\n]*?)\s*&&", re.MULTILINE)
"""The README's set-up line that installs the dashboard: ``pip install ... ".[dashboard]" && streamlit run ...``."""


def readme_install_arguments(readme: Path = REPO / "README.md") -> list[str]:
    """The arguments of the README's dashboard ``pip install`` (after ``pip``)."""
    found = README_DASHBOARD_INSTALL.search(readme.read_text(encoding="utf-8"))
    if found is None:
        raise AssertionError(f"{readme}: no set-up line 'pip install ...[dashboard]... && streamlit run ...'")
    words = shlex.split(found.group(1))
    return words[1:]


class DashboardInstall:
    """A venv with only the README's dashboard install, being made by a background process from construction on."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.log = where.with_suffix(".log")
        given = os.environ.get("RAGMETRICS_DASHBOARD_PYTHON")
        self._given = given if given and Path(given).exists() else None
        self._process: subprocess.Popen[bytes] | None = None
        self._failed: str | None = None  # why it could not even start (told by python(), to the tests needing it)
        if self._given is not None:
            return
        try:
            pip = " ".join(shlex.quote(w) for w in readme_install_arguments())
            python = shlex.quote(str(self.python_path))
            script = (
                f"{shlex.quote(sys.executable)} -m venv {shlex.quote(str(where))} && "
                f"exec {python} -m pip --disable-pip-version-check -q {pip}"
            )
            with self.log.open("wb") as log:
                self._process = subprocess.Popen(
                    ["sh", "-c", script], cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
        except (AssertionError, OSError) as exc:
            self._failed = str(exc)

    @property
    def python_path(self) -> Path:
        return self.where / "bin" / "python"

    def python(self, timeout: float = 600.0) -> str:
        """The venv's Python once the install finished; an error with pip's output if it failed."""
        if self._given is not None:
            return self._given
        if self._failed is not None or self._process is None:
            raise RuntimeError(f"the README's dashboard install could not start: {self._failed}")
        try:
            code = self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            code = None
        if code != 0:
            self._failed = f"it ended with {code} (None: not within {timeout:.0f} s)"
            raise RuntimeError(f"the README's dashboard install failed ({code}):\n{self.log.read_text()[-4000:]}")
        return str(self.python_path)

    def has(self, module: str) -> bool:
        """Whether the install's Python finds ``module``."""
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        return subprocess.run([self.python(), "-c", probe], cwd="/", check=False).returncode == 0

    def close(self) -> None:
        """Stop the install if it is still running (the shell and pip: its own process group)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
