"""Targets: the library's profiles, editing, and pass / uncertain / fail as ``ragmetrics check`` says."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.core import targets
from ragmetrics.analysis.targets import check_targets


def test_profiles_hold_the_issue_thresholds() -> None:
    expected = {"faq": (0.90, 0.95), "tech": (0.80, 0.90), "legal": (0.95, 0.98), "overview": (0.60, 0.80)}
    for key, (r5, r10) in expected.items():
        t = targets.profile_targets(key)
        assert (t["recall@5"], t["recall@10"]) == (r5, r10)
        assert (t["mrr"], t["hits@5"], t["ndcg@10"]) == (0.70, 0.90, 0.65)
        assert targets.profile_title(key)
    assert targets.profile_targets("nope") == {} and targets.profile_targets("") == {}  # no profile: no targets


def test_parse_and_format_round_trip() -> None:
    parsed, notes = targets.parse_targets("R@5>0.9; mrr>0.7,nDCG@10 > 0.65")
    assert parsed == {"recall@5": 0.9, "mrr": 0.7, "ndcg@10": 0.65} and notes == []
    assert targets.format_targets(parsed) == "recall@5>0.9;mrr>0.7;ndcg@10>0.65"
    assert targets.parse_targets(targets.format_targets(parsed))[0] == parsed
    parsed, notes = targets.parse_targets("recall@5>0.9;bogus>0.5;mrr<0.3;hits@5>7")
    assert parsed == {"recall@5": 0.9}
    assert len(notes) == 3


def test_edited_text_only_when_different() -> None:
    faq = targets.profile_targets("faq")
    assert targets.edited_text("faq", faq) is None
    changed = {**faq, "recall@5": 0.8}
    assert targets.edited_text("faq", changed) == targets.format_targets(changed)
    assert targets.current_targets("faq", targets.edited_text("faq", changed))[0] == changed
    assert targets.current_targets("legal", None)[0] == targets.profile_targets("legal")


def test_targets_from_editor_frame() -> None:
    frame = targets.targets_frame({"recall@5": 0.9, "mrr": 0.7})
    assert list(frame.columns) == ["metric", "threshold"]
    frame.loc[len(frame)] = ["ndgc@10", 0.5]  # typo
    frame.loc[len(frame)] = [None, None]  # an empty new row
    parsed, notes = targets.targets_from_frame(frame)
    assert parsed == {"recall@5": 0.9, "mrr": 0.7}
    assert len(notes) == 1 and "ndcg" in notes[0]


def test_check_frame_agrees_with_ragmetrics_check(faq_alignments, faq_result) -> None:
    wanted = targets.profile_targets("faq")
    checks = targets.check_frame(faq_alignments, wanted)
    assert list(checks.columns) == targets.CHECK_COLUMNS
    assert len(checks) == len(faq_alignments) * len(wanted)
    for run in faq_result.run_names:
        library = {c.metric: c for c in check_targets(faq_result[run], {m: wanted[m] for m in wanted})}
        mine = checks[checks["run"] == run].set_index("metric")
        for metric, check in library.items():
            assert mine.loc[metric, "status"] == check.status
            assert mine.loc[metric, "value"] == pytest.approx(check.mean, abs=1e-6)
            assert mine.loc[metric, "ci_low"] == pytest.approx(check.ci_low, abs=1e-6)
    assert set(checks["status"]) <= {"pass", "uncertain", "fail"}
    assert (checks["passed"] == (checks["status"] == "pass")).all()


def test_targets_table_and_style(faq_alignments) -> None:
    checks = targets.check_frame(faq_alignments, {"recall@5": 0.9, "hits@5": 0.5})
    wide = targets.targets_table(checks)
    assert list(wide.columns) == ["run", "met", "Recall@5 > 0.90", "Hits@5 > 0.50"]
    assert wide["run"].tolist() == [ev.name for ev in faq_alignments]
    assert all(cell.startswith("✗ ") for cell in wide["Recall@5 > 0.90"])
    assert all(cell.startswith("✓ ") for cell in wide["Hits@5 > 0.50"])
    assert set(wide["met"]) == {"1/2"}
    # each verdict in its colour as the theme draws it (Streamlit's Markdown), a fail in bold; other cells escaped
    assert targets.marked_cell(wide["Recall@5 > 0.90"].iloc[0]).startswith(":red[**✗ ")
    assert targets.marked_cell(wide["Hits@5 > 0.50"].iloc[0]).startswith(":green[✓ ")
    assert targets.marked_cell("? 0.912") == ":orange[? 0\\.912]"
    assert targets.marked_cell("· —") == ":gray[· —]"
    assert targets.marked_cell("*bm25*") == "\\*bm25\\*" and targets.marked_cell("1/2") == "1/2"
    assert targets.marked_cell("✓ best run") == "✓ best run"  # a run's name that starts with a mark
    assert targets.targets_table(pd.DataFrame(columns=targets.CHECK_COLUMNS)).empty


def test_a_threshold_is_labelled_with_every_decimal_it_has() -> None:
    """Was: 0.955 was labelled "> 0.95", so a run at 0.952 read "✗ 0.952" under "> 0.95"."""
    from dashboard.core.targets import label

    assert label("recall@5", 0.955) == "Recall@5 > 0.955"
    assert label("recall@5", 0.9) == "Recall@5 > 0.90"
