"""A one-file report of the overview, as HTML (self-contained, no scripts) or Markdown.

All user text (run names, categories, query ids) is escaped: the HTML report
never carries markup that came from an uploaded file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from dashboard.core.intervals import interval_words
from dashboard.core.specs import label_title
from ragmetrics.analysis.compare import mean_bounds_text
from ragmetrics.analysis.diagnosis import Finding, evidence_words
from ragmetrics.io.export import markdown_cell, markdown_table


@dataclass(frozen=True)
class ReportInput:
    dataset: str
    summary: dict[str, int]
    k: int
    profile: str
    overview: pd.DataFrame  # overview.overview_frame
    summary_ci: pd.DataFrame  # overview.summary_frame (run, metric, mean, ci_low, ci_high, interval)
    checks: pd.DataFrame  # targets.check_frame
    findings: Sequence[Finding]
    link: str = ""  # the view's absolute share link ("" when the app's address is unknown)
    verdict: str = ""  # plain text (dashboard.core.compare.verdict)
    comparison: pd.DataFrame | None = None  # dashboard.core.compare.comparison_display
    family: str = ""  # the correction's family in words (Holm-corrected over 8 comparison(s))

    @property
    def link_line(self) -> str:
        if self.link.startswith(("http://", "https://")):
            return self.link
        return "unknown address: set RAGMETRICS_BASE_URL to the dashboard's address for a link in the report"


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def _display_overview(data: ReportInput) -> pd.DataFrame:
    frame = data.overview.copy()
    ci = data.summary_ci.set_index(["run", "metric"]) if len(data.summary_ci) else None
    for column in frame.columns[2:]:
        cells = []
        for run, value in zip(frame["run"], frame[column]):
            cell = _fmt(value)
            if ci is not None and (run, column) in ci.index:
                low, high = ci.loc[(run, column), ["ci_low", "ci_high"]]
                if not (math.isnan(low) or math.isnan(high)):
                    cell += f" [{low:.3f}, {high:.3f}]"
            cells.append(cell)
        frame[column] = cells
    frame.columns = ["run", "queries", *[label_title(c) for c in frame.columns[2:]]]
    return frame


def intervals_sentence(summary_ci: pd.DataFrame) -> str:
    """The report's words for its means' intervals, named by the methods that computed them (the ``interval``
    column of :func:`dashboard.core.overview.summary_frame`; without it, the rule)."""
    methods = summary_ci["interval"] if "interval" in summary_ci.columns else ()
    return f"Means with 95% intervals: {interval_words(methods)}."


def _display_checks(checks: pd.DataFrame) -> pd.DataFrame:
    if checks.empty:
        return pd.DataFrame(columns=["run", "target", "value", "95% CI", "result"])
    return pd.DataFrame(
        {
            "run": checks["run"],
            "target": checks["target"],
            "value": [_fmt(v) for v in checks["value"]],
            "95% CI": [
                mean_bounds_text(lo, hi, "–", 3).strip("[]") for lo, hi in zip(checks["ci_low"], checks["ci_high"])
            ],
            "result": [str(s) for s in checks["status"]],
        }
    )


def _md_table(frame: pd.DataFrame) -> str:
    return markdown_table(frame.map(_fmt)).rstrip("\n")


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def markdown_report(data: ReportInput) -> str:
    s = data.summary
    parts = [
        f"# Retrieval evaluation: {markdown_cell(data.dataset)}",
        "",
        f"{s['queries']:,} queries ({s['judged_queries']:,} judged), K = {data.k}, targets profile: {markdown_cell(data.profile)}. "
        f"Generated {_stamp()} by ragmetrics. {intervals_sentence(data.summary_ci)}",
        "",
        f"## Metrics at K = {data.k}",
        "",
        _md_table(_display_overview(data)),
        "",
        "## Targets",
        "",
        _md_table(_display_checks(data.checks)),
        "",
    ]
    if data.comparison is not None and len(data.comparison):
        parts += ["## Comparison", "", markdown_cell(data.verdict), "", _md_table(data.comparison), "",
                  markdown_cell(f"p-values {data.family}."), ""]  # fmt: skip
    parts += ["## Diagnosis", ""]
    if not data.findings:
        parts.append("No rule fired.")
    for f in data.findings:
        parts += [f"### {markdown_cell(f.run)}: {markdown_cell(f.title)}", "", markdown_cell(f.evidence), ""]
        parts += [
            f"- {markdown_cell(a)}" + (f" *{markdown_cell(evidence_words(a))}*" if evidence_words(a) else "")
            for a in f.advice
        ]
        parts.append("")
    line = data.link_line
    parts += ["", f"View: <{line}>" if line.startswith(("http://", "https://")) else f"View: {line}"]
    return "\n".join(parts) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC",sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}h3{font-size:1.05rem}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.3rem .6rem;text-align:left}
th{background:#f5f5f5}td.pass{color:#1a7f37}td.uncertain{color:#b26a00}td.fail{color:#c62828;font-weight:600}.muted{color:#666;font-size:.9rem}
.finding{border-left:4px solid #f0ad4e;padding:.2rem 1rem;margin:1rem 0;background:#fffaf0}
"""


def _html_table(frame: pd.DataFrame, classes_from: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, row):
            text = html.escape(_fmt(value))
            cls = f' class="{value}"' if column == classes_from and value in ("pass", "uncertain", "fail") else ""
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def html_report(data: ReportInput) -> str:
    s = data.summary
    e = html.escape
    findings = []
    for f in data.findings:
        advice = "".join(
            f"<li>{e(a)}"
            + (f'<br><span class="muted">{e(evidence_words(a))}</span>' if evidence_words(a) else "")
            + "</li>"
            for a in f.advice
        )
        findings.append(
            f'<div class="finding"><h3>{e(f.run)}: {e(f.title)}</h3><p>{e(f.evidence)}</p><ul>{advice}</ul></div>'
        )
    line = data.link_line
    link = (
        f'<p class="muted">View: <a href="{e(line)}">{e(line)}</a></p>'
        if line.startswith(("http://", "https://"))
        else f'<p class="muted">View: {e(line)}</p>'
    )
    comparison = ""
    if data.comparison is not None and len(data.comparison):
        comparison = (
            f"<h2>Comparison</h2><p>{e(data.verdict)}</p>{_html_table(data.comparison)}"
            f'<p class="muted">p-values {e(data.family)}.</p>'
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ragmetrics report: {e(data.dataset)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Retrieval evaluation: {e(data.dataset)}</h1>"
        f'<p class="muted">{s["queries"]:,} queries ({s["judged_queries"]:,} judged), K = {data.k}, '
        f"targets profile: {e(data.profile)}. Generated {_stamp()} by ragmetrics. {e(intervals_sentence(data.summary_ci))}</p>"
        f"<h2>Metrics at K = {data.k}</h2>{_html_table(_display_overview(data))}"
        f"<h2>Targets</h2>{_html_table(_display_checks(data.checks), classes_from='result')}"
        f"{comparison}<h2>Diagnosis</h2>{''.join(findings) or '<p>No rule fired.</p>'}{link}"
        "</body></html>"
    )
