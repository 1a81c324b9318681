"""Leaderboard: systems (a tag's values) x datasets, built on :func:`ragmetrics.analysis.history.leaderboard`; the page
shows the library's table and offers its Markdown, CSV and LaTeX exports."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ragmetrics.analysis.history import Leaderboard, StoredRun

__all__ = ["EXPORTS", "leaderboard_table", "system_tags"]

EXPORTS: dict[str, tuple[str, str]] = {
    "Markdown": ("md", "text/markdown"),
    "CSV": ("csv", "text/csv"),
    "LaTeX": ("tex", "application/x-tex"),
}
"""The downloads the page offers: label -> (file extension, MIME type)."""


def export(board: Leaderboard, label: str) -> str:
    return {"Markdown": board.to_markdown, "CSV": board.to_csv, "LaTeX": board.to_latex}[label]()


def system_tags(runs: Sequence[StoredRun], default: str = "system") -> list[str]:
    """The tag keys that can name systems (``default`` first when some run has it)."""
    keys = sorted({k for r in runs for k in r.tags})
    return ([default] if default in keys else []) + [k for k in keys if k != default]


def leaderboard_table(board: Leaderboard) -> pd.DataFrame:
    """The table as shown: ``mean† (rank)`` per dataset, the mean rank and the mean over datasets."""
    return board.cells()
