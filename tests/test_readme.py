"""The README's promises that a test can hold it to."""

from __future__ import annotations

import re
from pathlib import Path

import ragmetrics as rm

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_registered_metric_is_documented():
    table = README.split("## Metrics", 1)[1].split("### LlamaIndex", 1)[0]
    for info in rm.METRICS.values():
        assert re.search(rf"`{info.name}(@k)?`", table), f"README metrics table lacks {info.name}"


def test_the_two_setup_commands_and_the_ci_test_command_agree():
    setup = README.split("## Set-up", 1)[1].split("## Library", 1)[0]
    assert 'pip install -e ".[dashboard]" && streamlit run dashboard/app.py' in setup
    assert 'pip install -e ".[test]" && python -m pytest' in setup
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert "python -m pytest" in ci.splitlines()[-1]
