"""Real browser tests: Debian's chromium (no browser downloads here) against a real ``streamlit run`` server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.server import CHROMIUM_ARGS, chromium_path, streamlit_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # one worker runs every browser test, one after the other (pyproject's --dist loadgroup): the other workers run
    # the rest beside them
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    executable = chromium_path()
    if executable is None:
        if os.environ.get("RAGMETRICS_REQUIRE_E2E"):
            pytest.fail("chromium is not installed but RAGMETRICS_REQUIRE_E2E is set (apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return {**browser_type_launch_args, "executable_path": executable, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    with streamlit_server() as base:
        yield base
