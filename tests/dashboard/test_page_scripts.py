"""The page scripts as Streamlit compiles them: the server runs with magic off (``.streamlit/config.toml``), so no
page may rely on a bare expression being written to it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dashboard.views import VIEWS

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "dashboard" / "app.py", *(view.path for view in VIEWS)]


def _written_by_magic(path: Path) -> list[str]:
    """Statements Streamlit's magic would write to the page: bare expressions that are not calls, awaits, yields or
    a body's first string (a docstring)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, statement in enumerate(body):
                if not isinstance(statement, ast.Expr):
                    continue
                value = statement.value
                if isinstance(value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)):
                    continue
                if i == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    continue
                found.append(f"{path.name}:{statement.lineno}: {ast.unparse(statement)[:60]}")
    return found


def test_magic_is_off_and_no_page_relies_on_it() -> None:
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    runner = re.search(r"^\[runner\]$(.*?)(?=^\[|\Z)", config, re.M | re.S)
    assert runner and re.search(r"^magicEnabled = false$", runner.group(1), re.M)
    assert len(SCRIPTS) == len(VIEWS) + 1
    assert [line for path in SCRIPTS for line in _written_by_magic(path)] == []


def test_the_check_sees_what_magic_would_write(tmp_path: Path) -> None:
    script = tmp_path / "page.py"
    script.write_text('"""doc"""\nimport streamlit as st\nx = 1\nx\nst.write(x)\n"a later string"\n')
    assert _written_by_magic(script) == ["page.py:4: x", "page.py:6: 'a later string'"]
