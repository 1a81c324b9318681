"""The one-file overview report: the numbers of the overview, and no markup from user files."""

from __future__ import annotations

import html
import re

import ragmetrics
from dashboard.core import missed, overview, report, targets
from dashboard.core.queries import dataset_summary
from ragmetrics.analysis import diagnosis


def _data(evals, name: str = "product_faq_zh") -> report.ReportInput:
    checks = targets.check_frame(evals, targets.profile_targets("faq"))
    findings = [f for a in evals for f in diagnosis.diagnose(a.name, missed.query_table(a, 5), k=5, deep_k=20)]
    return report.ReportInput(
        dataset=name,
        summary=dataset_summary(evals[0].dataset),
        k=5,
        profile="FAQ / customer support",
        overview=overview.overview_frame(evals, 5),
        summary_ci=overview.summary_frame(evals, overview.overview_specs(5)),
        checks=checks,
        findings=findings,
        link="http://team.example:8501/overview?v=1&k=5",
    )


def test_markdown_report_holds_the_overview(faq_alignments) -> None:
    data = _data(faq_alignments)
    text, page = report.markdown_report(data), report.html_report(data)
    means = overview.overview_frame(faq_alignments, 5)
    assert text.startswith("# Retrieval evaluation: product_faq_zh")
    # the intervals named by the methods that computed them: hits@5 is 0 or 1 per query, nDCG@5 graded
    named = "Means with 95% intervals: Clopper-Pearson (where every query scored 0 or 1) and Student's t."
    assert named in text and named in html.unescape(page)  # the page escapes the apostrophe
    assert "95% bootstrap" not in text
    assert "| run | queries | Recall@5 |" in text
    assert f"{means.loc[0, 'recall@5']:.3f} \\[" in text  # mean with its interval
    assert (
        "Recall@10 > 0.95" in text
        and "## Diagnosis" in text
        and "View: <http://team.example:8501/overview?v=1&k=5>" in text
    )
    advice = [a for f in data.findings for a in f.advice]
    assert advice and all(f"- {a} *{diagnosis.evidence_words(a)}*" in text for a in advice if "*" not in a)
    assert diagnosis.evidence_words(advice[0]) in page  # each advice's evidence


def test_html_report_escapes_user_text(tiny, tiny_runs) -> None:
    evil = tiny_runs[0].with_name("<script>alert(1)</script>")
    evals = [ragmetrics.align(tiny, evil)]
    page = report.html_report(_data(evals, name="<b>data</b>"))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>data</b>" not in page and "&lt;b&gt;data&lt;/b&gt;" in page
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    assert 'class="fail"' in page or 'class="pass"' in page or 'class="uncertain"' in page


def test_markdown_report_escapes_user_text(tiny, tiny_runs) -> None:
    evil = tiny_runs[0].with_name("<img src=x onerror=alert(1)>[click](javascript:alert(2))")
    text = report.markdown_report(_data([ragmetrics.align(tiny, evil)], name="<b>data</b> | *x*"))
    assert "<img" not in text and "<b>" not in text and not re.search(r"(?<!\\)\[[^\]]*\]\(", text)
    assert "&lt;img src=x onerror=alert(1)>\\[click](javascript:alert(2))" in text
    assert text.startswith("# Retrieval evaluation: &lt;b>data&lt;/b> \\| \\*x\\*")
