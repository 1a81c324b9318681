"""Shared fixtures: a real throwaway PostgreSQL server for store tests."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.model_stub import model_stub  # noqa: F401 (the stub chat-completions server, a fixture of every test)


def pytest_configure(config: pytest.Config) -> None:
    # RAGMETRICS_SOAK=1 (.ci/run): the plain command runs the soak runs too, in the same session, so they fill the
    # cores beside the other tests (their browser ones still one at a time, in the browser tests' group); an -m of
    # the caller's own is kept
    if os.environ.get("RAGMETRICS_SOAK") == "1" and config.option.markexpr == "not soak":
        config.option.markexpr = ""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the tests on a Spark session run on one worker (pyproject's --dist loadgroup): one JVM started and warmed, not
    # one per worker
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


@pytest.fixture(scope="session")
def postgres_url():
    """``RAGMETRICS_TEST_POSTGRES_URL`` if set, else a fresh cluster started with Debian's binaries.

    Skips when PostgreSQL is not installed, unless ``RAGMETRICS_REQUIRE_POSTGRES=1`` (CI), where it fails.
    """
    url = os.environ.get("RAGMETRICS_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    initdb, pg_ctl = _postgres_bin("initdb"), _postgres_bin("pg_ctl")
    if not (initdb and pg_ctl):
        if os.environ.get("RAGMETRICS_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL binaries (initdb, pg_ctl) not found; install Debian's postgresql package")
        pytest.skip("PostgreSQL is not installed (Debian package postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="ragmetrics-pg-"))
    data = folder / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_user,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(folder / "log"),
            "-w",
            "-o",
            # one server for the whole session: its workers, the label races' processes and the dashboards the
            # browser tests start each hold a pool of connections (measured: over 100 at once, PostgreSQL's default)
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        time.sleep(0.2)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def database_and_role(postgres_url) -> tuple[str, str]:
    """A fresh database on the test server and a login role of the same name, granted nothing yet: ``(name, the
    database's URL as the server's superuser)``; the role's URL is that URL with ``postgres@`` replaced."""
    name = "d" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        conn.execute(sa.text(f"CREATE ROLE {name} LOGIN"))
    admin.dispose()
    return name, postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the test session (``local[2]``, few shuffle partitions).

    Skips when PySpark or Java is missing, unless ``RAGMETRICS_REQUIRE_SPARK=1`` (CI), where it fails."""
    required = bool(os.environ.get("RAGMETRICS_REQUIRE_SPARK"))
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        if required:
            pytest.fail("PySpark is not installed: pip install -e '.[test]'")
        pytest.skip("PySpark is not installed")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if required:
            pytest.fail("Java is not installed; install Debian's openjdk-17-jre-headless")
        pytest.skip("Java is not installed (Debian package openjdk-17-jre-headless)")
    try:
        session = (
            SparkSession.builder.master("local[2]")
            .appName("ragmetrics-tests")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "1g")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate()
        )
    except Exception as exc:
        if required:
            pytest.fail(f"Spark could not start: {exc}")
        pytest.skip(f"Spark could not start: {exc}")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A store URL for each backend: a SQLite file, or a fresh PostgreSQL database per test (independent tests)."""
    import uuid

    import sqlalchemy as sa

    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    base = request.getfixturevalue("postgres_url")
    name = "t" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield base.rsplit("/", 1)[0] + "/" + name
    # the connections a test's stores still hold (their engines' pools) end with the test, not with the session
    with engine.connect() as conn:
        conn.execute(
            sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :name"), {"name": name}
        )
