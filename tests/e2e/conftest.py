"""Real browser tests: Debian's chromium (no browser downloads here) against a real ``streamlit run`` server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.install import DashboardInstall
from tests.e2e.server import CHROMIUM_ARGS, chromium_path, streamlit_server

INSTALL_GROUP = "browser-a"
"""The group of the modules with a test on the README's dashboard install: its worker makes that install."""


def _needs_install(item: pytest.Item) -> bool:
    return "dashboard_python" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the browser tests in two groups of whole modules (pyproject's --dist loadgroup): each group runs on one
    # worker, one test after the other, the rest of the suite beside them; the modules with a test on the README's
    # dashboard install in one group, the others shared out between the two by name; the soak runs, which measure a
    # server, in one group of their own
    browser = [item for item in items if "tests/e2e/" in str(item.fspath).replace("\\", "/")]
    installing = {str(item.fspath) for item in browser if _needs_install(item)}
    others = sorted({str(item.fspath) for item in browser} - installing)
    group = dict.fromkeys(installing, INSTALL_GROUP)
    group.update({module: ("browser-b", INSTALL_GROUP)[i % 2] for i, module in enumerate(others)})
    for item in browser:
        item.add_marker(pytest.mark.e2e)
        soak = item.get_closest_marker("soak") is not None
        item.add_marker(pytest.mark.xdist_group("browser-soak" if soak else group[str(item.fspath)]))
    # the tests on the README's dashboard install last, so that install is made while the others run
    items.sort(key=_needs_install)


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


@pytest.fixture(scope="session")
def dashboard_install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardInstall]:
    """The README's dashboard install in a venv of its own, made in the background."""
    install = DashboardInstall(tmp_path_factory.mktemp("dashboard-install") / "venv")
    try:
        yield install
    finally:
        install.close()


@pytest.fixture(autouse=True)
def _install_made_while_the_others_run(request: pytest.FixtureRequest) -> None:
    """Start the README's dashboard install with the first test of :data:`INSTALL_GROUP` that this worker runs,
    when a test of this run needs it (:func:`dashboard_python`): it is made while the others run."""
    marker = request.node.get_closest_marker("xdist_group")
    if marker is not None and marker.args[0] == INSTALL_GROUP and any(map(_needs_install, request.session.items)):
        request.getfixturevalue("dashboard_install")


@pytest.fixture
def dashboard_python(dashboard_install: DashboardInstall) -> str:
    """The Python of the README's dashboard install only (not this ``[test]`` environment): a server started with it
    has what a newcomer's has, no more."""
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
