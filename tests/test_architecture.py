"""The library's rooms (docs/architecture.md): what importing it loads, and what a reader finds at the top of a file.

The layers and the absence of circles are held by import-linter's contracts (``lint-imports`` in ``.ci/run``); these
tests hold what those cannot see."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "ragmetrics"


@pytest.mark.parametrize("module", ["ragmetrics", "ragmetrics.cli", "ragmetrics.partitioned", "ragmetrics.store.links"])
def test_importing_the_library_or_its_cli_loads_neither_pandas_nor_sqlalchemy(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in ('pandas', 'sqlalchemy', 'scipy') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", f"import {module} loads {loaded.strip()}"


def _deferred_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, first line of the statement)`` of each import inside a function."""
    lines = path.read_text().splitlines()
    found = []

    class Visitor(ast.NodeVisitor):
        depth = 0

        def visit_FunctionDef(self, node: ast.AST) -> None:
            self.depth += 1
            self.generic_visit(node)
            self.depth -= 1

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
            if self.depth:
                found.append((node.lineno, lines[node.end_lineno - 1]))

        visit_ImportFrom = visit_Import

    Visitor().visit(ast.parse(path.read_text()))
    return found


def test_every_import_inside_a_function_says_why() -> None:
    """ruff's PLC0415 holds the library's imports at the top; the few exceptions (heavy or optional dependencies
    loaded on use, the CLI's commands imported when run) carry their reason beside the ``noqa``."""
    unexplained = [
        f"{path.relative_to(LIBRARY.parent)}:{line}"
        for path in sorted(LIBRARY.rglob("*.py"))
        for line, text in _deferred_imports(path)
        if "noqa: PLC0415 (" not in text
    ]
    assert unexplained == []


def test_the_lower_rooms_call_arrow_kernels_by_name_not_through_pyarrow_compute() -> None:
    """foundation, engine and io use ``ragmetrics.foundation.kernels``: ``pyarrow.compute``'s import is a tenth of a
    small CLI evaluation (the run-time check: tests/test_cli_hostile.py)."""
    rooms = [LIBRARY / room for room in ("foundation", "engine", "io")]
    importing = [
        str(path.relative_to(LIBRARY.parent))
        for room in rooms
        for path in sorted(room.rglob("*.py"))
        if path.name != "kernels.py"  # its fallback, should a pyarrow release move the compiled module
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name == "pyarrow.compute" or name.startswith("pyarrow.compute.")
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
        )
    ]
    assert rooms[0].is_dir() and importing == []


def test_runs_that_left_out_other_queries_are_paired_by_query_not_by_position() -> None:
    """Under ``missing="skip"`` two runs hold values for different queries; every comparison pairs them by query
    (ragmetrics.engine.queries.at_queries), never by position in their arrays."""
    import ragmetrics as rm
    from ragmetrics.analysis.compare import compare_result, discriminative_power

    dataset = rm.Dataset.from_dict({f"q{i}": {"a": 1} for i in range(4)})
    first = rm.Run.from_dict({"q0": {"a": 1.0}, "q1": {"x": 1.0}, "q2": {"a": 1.0}}, name="first")
    second = rm.Run.from_dict({"q1": {"a": 1.0}, "q2": {"a": 1.0}, "q3": {"x": 1.0}}, name="second")
    result = rm.evaluate(dataset, [first, second], ["mrr"], missing="skip", warn=False)
    # shared queries: q1 (first 0, second 1) and q2 (1 and 1); by position the pairs would be (1, 1) and (0, 1)
    power = discriminative_power(result, "mrr")
    assert power["delta"].tolist() == [-0.5]
    row = compare_result(result, baseline="first", segments=()).table.set_index("run").loc["second"]
    assert (row["n"], row["delta"], row["wins"], row["ties"]) == (2, 0.5, 1, 1)


def test_no_dashboard_text_names_an_interval_method_of_its_own() -> None:
    """A page names an interval by the library's words (``stats.interval_words`` and ``MEAN_INTERVAL_RULE`` for a
    mean's, ``stats.delta_interval_method`` for a delta's, ``stats.TESTS`` for a test): a string of the dashboard
    that says "bootstrap" itself said it of means that were Clopper-Pearson. Docstrings are not shown."""
    dashboard = LIBRARY.parent / "dashboard"
    said = []
    for path in sorted(dashboard.rglob("*.py")):
        text = path.read_text()
        if "bootstrap" not in text.lower():
            continue  # parsing only the files that say it keeps the check fast
        tree = ast.parse(text)
        docstrings = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        said += [
            f"{path.relative_to(dashboard.parent)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and "bootstrap" in node.value.lower()
        ]
    assert said == []
