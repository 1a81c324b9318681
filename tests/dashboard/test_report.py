"""The one-file overview report: the numbers of the overview, and no markup from user files."""

from __future__ import annotations

from dashboard.core import frames, report, targets
from dashboard.core.evaluation import evaluate_run
from ragmetrics import Run, diagnosis


def _data(evals, name: str = "product_faq_zh") -> report.ReportInput:
    checks = targets.check_frame(evals, targets.profile_targets("faq"))
    findings = [f for ev in evals for f in diagnosis.diagnose(ev.name, frames.query_table(ev, 5), k=5, deep_k=20)]
    return report.ReportInput(
        dataset=name,
        summary=frames.dataset_summary(evals[0].dataset),
        k=5,
        profile="FAQ / customer support",
        overview=frames.overview_frame(evals, 5),
        summary_ci=frames.summary_frame(evals, [str(s) for s in frames.overview_specs(5)]),
        checks=checks,
        findings=findings,
        link="overview?v=1&k=5",
    )


def test_markdown_report_holds_the_overview(faq_evals) -> None:
    text = report.markdown_report(_data(faq_evals))
    overview = frames.overview_frame(faq_evals, 5)
    assert text.startswith("# Retrieval evaluation: product_faq_zh")
    assert "| run | queries | Recall@5 |" in text
    assert f"{overview.loc[0, 'recall@5']:.3f} [" in text  # mean with its interval
    assert "Recall@10 > 0.95" in text and "## Diagnosis" in text and "overview?v=1&k=5" in text


def test_html_report_escapes_user_text(tiny, tiny_runs) -> None:
    evil = Run.from_frame(tiny_runs[0].frame, name="<script>alert(1)</script>")
    evals = [evaluate_run(tiny, evil)]
    page = report.html_report(_data(evals, name="<b>data</b>"))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>data</b>" not in page and "&lt;b&gt;data&lt;/b&gt;" in page
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    assert 'class="fail"' in page or 'class="pass"' in page or 'class="uncertain"' in page
