"""Targets in the dashboard: the library's scenario profiles (``ragmetrics.analysis.targets``), editable, checked per run.

A target set is an ordered ``{metric: threshold}`` mapping meaning "metric >
threshold". Checks use :func:`ragmetrics.analysis.targets.check_targets`, so a run gets
the same verdict here as from ``ragmetrics check``: ``pass`` when the lower
end of the mean's 95% interval (:func:`ragmetrics.analysis.stats.mean_interval`) clears the threshold, ``uncertain``
when only the mean does, ``fail`` otherwise. The view state stores an edited
set as text (``recall@5>0.9;mrr>0.7``, :func:`dashboard.core.share.format_targets`); pure, no Streamlit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from dashboard.core.results import Alignment, run_result
from dashboard.core.share import DEFAULT_PROFILE, NO_PROFILE, NO_TARGETS, format_targets, parse_targets
from dashboard.core.specs import label_title
from dashboard.core.text import md_escape
from ragmetrics.analysis.targets import (
    PROFILE_TITLES,
    PROFILES,
    check_targets,
    declared_targets,
    resolve_targets,
    threshold_text,
)
from ragmetrics.foundation.errors import RagMetricsError

__all__ = [
    "CHECK_COLUMNS",
    "DEFAULT_PROFILE",
    "DESCRIPTIONS",
    "NO_PROFILE",
    "NO_TARGETS",
    "PROFILES",
    "check_frame",
    "current_targets",
    "declared_title",
    "edited_text",
    "format_targets",
    "label",
    "marked_cell",
    "parse_targets",
    "profile_targets",
    "profile_title",
    "targets_frame",
    "targets_from_frame",
    "targets_table",
    "threshold_for",
]

DESCRIPTIONS = {
    "faq": "Short factual questions over a curated FAQ: nearly every answer must be in the top 5.",
    "tech": "API references, manuals and specifications.",
    "legal": "Legal and compliance: missing a clause is costly, so near-complete recall.",
    "overview": "Open-ended overview questions over a broad, loosely curated collection.",
}
MARKS = {"pass": "✓", "uncertain": "?", "fail": "✗", "too few": "·"}

Targets = dict[str, float]


def profile_title(key: str) -> str:
    return PROFILE_TITLES.get(key, key)


def profile_targets(key: str, declared: str = "") -> Targets:
    """The thresholds of a profile: ``NO_PROFILE`` reads the dataset's ``declared`` targets (a profile name or
    ``metric>value`` items; none when it declares none or they do not read), ``NO_TARGETS`` and an unknown key none."""
    if key == NO_PROFILE and declared:
        try:
            return declared_targets(declared)
        except RagMetricsError:
            return {}
    return dict(PROFILES.get(key, {}))


def declared_title(declared: str) -> str:
    """How the profile picker names a dataset's own targets."""
    shown = profile_title(declared) if declared in PROFILES else declared
    return f"The dataset's own ({shown})"


def in_force_title(key: str, declared: str, any_in_force: bool) -> str:
    """The targets a view checks, in words (a report's header): the profile picked, the dataset's own when none is
    picked and it declares some, else ``none``."""
    if key == NO_PROFILE:
        return declared_title(declared) if declared and any_in_force else "none"
    return profile_title(key)


def label(metric: str, threshold: float) -> str:
    """``Recall@5 > 0.90``: two decimals at least, more when the threshold has them (``> 0.955``)."""
    return f"{label_title(metric)} > {threshold_text(threshold)}"


def current_targets(profile: str, edited: str | None, declared: str = "") -> tuple[Targets, list[str]]:
    """The targets in force: the edited set when there is one, else the profile's (:func:`profile_targets`)."""
    if edited is None:
        return profile_targets(profile, declared), []
    return parse_targets(edited)


def edited_text(profile: str, targets: Mapping[str, float], declared: str = "") -> str | None:
    """What the view stores: None when ``targets`` equal the profile's (same order), else their text."""
    same = list(targets.items()) == list(profile_targets(profile, declared).items())
    return None if same else format_targets(targets)


def threshold_for(targets: Mapping[str, float], metric: str, default: float) -> float:
    return float(targets.get(metric, default))


TARGET_COLUMNS = ["metric", "threshold"]


def targets_frame(targets: Mapping[str, float]) -> pd.DataFrame:
    """Targets as an editable table: ``metric, threshold``."""
    return pd.DataFrame(
        {
            "metric": pd.Series(list(targets), dtype="str"),  # text even when empty (the editor checks the type)
            "threshold": pd.Series(list(targets.values()), dtype="float64"),
        },
        columns=TARGET_COLUMNS,
    )


def targets_from_frame(frame: pd.DataFrame) -> tuple[Targets, list[str]]:
    """Read an edited :func:`targets_frame`; empty rows are dropped, bad ones skipped with a note."""
    out: Targets = {}
    notes: list[str] = []
    for i, row in enumerate(frame.to_dict("records"), start=1):
        metric, threshold = row.get("metric"), row.get("threshold")
        if metric is None or (isinstance(metric, float) and math.isnan(metric)) or not str(metric).strip():
            continue
        try:
            out.update(resolve_targets({str(metric).strip(): float(threshold)}))
        except (RagMetricsError, TypeError, ValueError) as err:
            notes.append(f"target row {i} ignored: {err}")
    return out, notes


CHECK_COLUMNS = ["run", "metric", "target", "threshold", "value", "ci_low", "ci_high", "status", "passed"]


def check_frame(alignments: Sequence[Alignment], targets: Mapping[str, float]) -> pd.DataFrame:
    """Each run against each target, with :func:`ragmetrics.analysis.targets.check_targets` semantics.

    One row per (run, target): ``run, metric, target`` (label), ``threshold``,
    ``value`` (the mean), ``ci_low, ci_high`` (95%: :func:`ragmetrics.analysis.targets.target_interval`), ``status``
    (pass / uncertain / fail / too few: under 2 queries) and ``passed``.
    """
    rows = []
    for alignment in alignments:
        if not targets:
            break
        for check in check_targets(run_result(alignment, list(targets)), targets):
            rows.append(
                {
                    "run": alignment.name,
                    "metric": check.metric,
                    "target": label(check.metric, check.threshold),
                    "threshold": check.threshold,
                    "value": check.mean,
                    "ci_low": check.ci_low,
                    "ci_high": check.ci_high,
                    "status": check.status,
                    "passed": check.passed,
                }
            )
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def targets_table(checks: pd.DataFrame) -> pd.DataFrame:
    """Wide display of :func:`check_frame`: one row per run, a ``"✓ 0.934"`` / ``"? 0.912"`` / ``"✗ 0.812"``
    column per target, and ``met`` ("3/5")."""
    if checks.empty:
        return pd.DataFrame(columns=["run", "met"])
    cells = checks.assign(
        cell=[
            f"{MARKS[s]} " + ("—" if math.isnan(v) else f"{v:.3f}") for s, v in zip(checks["status"], checks["value"])
        ]
    )
    order = list(dict.fromkeys(checks["target"]))
    runs = list(dict.fromkeys(checks["run"]))
    wide = cells.pivot(index="run", columns="target", values="cell").loc[runs, order]
    met = checks.groupby("run", sort=False)["passed"].agg(lambda s: f"{int(s.sum())}/{len(s)}")
    wide.insert(0, "met", met.loc[runs])
    wide = wide.reset_index()
    wide.columns.name = None
    return wide


VERDICT_COLOURS = {"pass": "green", "uncertain": "orange", "fail": "red", "too few": "gray"}
"""Each verdict's colour, as Streamlit's Markdown names it (``:green[...]``): each theme, light or dark, draws it in
a text colour of its own, readable on its background (a fixed colour cannot be: no green reads on both)."""


_VERDICT_CELL = re.compile("^(" + "|".join(map(re.escape, MARKS.values())) + r") (—|-?\d+\.\d{3})$")
"""A verdict's cell as :func:`targets_table` writes it: its mark, then the mean to 3 decimals or the dash."""


def marked_cell(value: object) -> str:
    """A verdict cell of :func:`targets_table` (a target's column) as Markdown, in its verdict's colour
    (:data:`VERDICT_COLOURS`), a fail in bold; a cell not written as a verdict escaped as it is."""
    text = md_escape(value)
    found = _VERDICT_CELL.match(str(value))
    if found is None:
        return text
    status = next(s for s, mark in MARKS.items() if mark == found.group(1))
    return f":{VERDICT_COLOURS[status]}[{f'**{text}**' if status == 'fail' else text}]"
