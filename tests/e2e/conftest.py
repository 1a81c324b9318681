"""Real browser tests: Debian's chromium (no browser downloads here) against a real ``streamlit run`` server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.install import DashboardInstall
from tests.e2e.server import CHROMIUM_ARGS, chromium_path, streamlit_server


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups, however this file was loaded
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # one worker runs every browser test, one after the other (pyproject's --dist loadgroup): the other workers run
    # the rest beside them
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group("browser"))
    # the tests on the README's dashboard install last, so that install is made while the others run
    items.sort(key=lambda item: "dashboard_python" in getattr(item, "fixturenames", ()))


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


@pytest.fixture(scope="session", autouse=True)
def dashboard_install(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DashboardInstall | None]:
    """The README's dashboard install in a venv of its own, started with this worker's first browser test when a
    test of this run needs it (:func:`dashboard_python`), so it is made while the others run."""
    if not any("dashboard_python" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    install = DashboardInstall(tmp_path_factory.mktemp("dashboard-install") / "venv")
    try:
        yield install
    finally:
        install.close()


@pytest.fixture
def dashboard_python(dashboard_install: DashboardInstall | None) -> str:
    """The Python of the README's dashboard install only (not this ``[test]`` environment): a server started with it
    has what a newcomer's has, no more."""
    assert dashboard_install is not None
    try:
        python = dashboard_install.python()
    except RuntimeError as exc:
        if os.environ.get("RAGMETRICS_REQUIRE_E2E"):
            pytest.fail(str(exc))
        pytest.skip(f"the README's dashboard install could not be made here: {str(exc)[:300]}")
    test_only = [name for name in ("pytest", "playwright", "pyspark") if dashboard_install.has(name)]
    assert not test_only, f"{python} is not the dashboard install only: it has {test_only}"
    needed = ("streamlit", "bm25s", "sklearn")  # the pages, the built-in BM25, the learned judge and kappa
    assert all(dashboard_install.has(name) for name in needed), f"{python} lacks one of {needed}"
    return python
