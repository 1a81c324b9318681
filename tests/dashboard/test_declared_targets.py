"""A dataset may declare its own targets (a profile or metric>value items): stored with it, checked on its Overview
until a view picks a profile or "No targets" (which a link then carries as prof=none); other datasets show none."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragmetrics as rm
from dashboard.core import targets
from dashboard.data import samples
from ragmetrics.analysis.targets import PROFILES, declared_targets, resolve_targets
from ragmetrics.store.database import Store, dataset_id
from tests.dashboard.apptest import no_problems, open_page, param

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


def _targets_table(at):  # type: ignore[no-untyped-def]
    return next((t.value for t in at.table if "met" in t.value.columns), None)


def test_declared_targets_read_a_profile_or_items_and_never_a_file(tmp_path) -> None:
    assert declared_targets("faq") == declared_targets(" faq ") == resolve_targets(PROFILES["faq"])
    assert declared_targets("ndcg@10>0.6, recall@5>0.9") == {"ndcg@10": 0.6, "recall@5": 0.9}
    path = tmp_path / "t.json"
    path.write_text('{"ndcg@10": 0.5}')
    for bad in (str(path), "ndcg@10", "recall@5>2", "nope>0.5"):
        with pytest.raises(rm.RagMetricsError):
            declared_targets(bad)
    assert targets.profile_targets("", "faq") == targets.profile_targets("faq")
    assert targets.profile_targets("", "") == {} and targets.profile_targets("none", "faq") == {}
    assert targets.profile_targets("", "not targets") == {}  # a declaration that does not read gives none, never fails


def test_the_store_keeps_what_a_dataset_declares_and_refuses_what_does_not_read(store_url) -> None:
    store = Store(store_url)
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}}, name="faq")
    with pytest.raises(rm.RagMetricsError, match="expected a profile"):
        store.put_dataset(dataset, targets="/etc/passwd")
    assert store.list_datasets().empty  # nothing stored
    ident = store.put_dataset(dataset, targets="ndcg@10>0.6")
    assert store.list_datasets().set_index("id").loc[ident, "targets"] == "ndcg@10>0.6"
    store.put_dataset(dataset, targets="faq")  # a stored copy keeps what it declared
    assert store.list_datasets().set_index("id").loc[ident, "targets"] == "ndcg@10>0.6"


def test_the_faq_sample_declares_its_profile_and_the_overview_checks_it_until_a_view_picks_none(faq_ids) -> None:
    at = open_page("overview", {"ds": faq_ids["dataset"]})
    no_problems(at)
    picker = at.selectbox(key="overview.profile")
    assert picker.value == "" and picker.format_func("") == "The dataset's own (FAQ / customer support)"
    assert picker.format_func("none") == "No targets"
    table = _targets_table(at)
    assert table is not None and "Recall@5 > 0.90" in table.columns  # the FAQ profile's thresholds
    assert param(at, "prof") is None
    at = picker.set_value("none").run()
    no_problems(at)
    assert param(at, "prof") == "none" and _targets_table(at) is None
    reopened = open_page("overview", {"ds": faq_ids["dataset"], "prof": "none"})
    assert reopened.selectbox(key="overview.profile").value == "none" and _targets_table(reopened) is None


def test_a_dataset_that_declares_nothing_shows_no_targets() -> None:
    scifact = next(samples.iter_samples(names=["scifact"]))
    at = open_page("overview", {"ds": dataset_id(scifact.dataset)})
    no_problems(at)
    picker = at.selectbox(key="overview.profile")
    assert picker.value == "" and picker.format_func("") == "No targets" and "none" not in picker.options
    assert _targets_table(at) is None


def test_upload_declares_targets_and_refuses_ones_that_do_not_read(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    content = ("mini_eval.json", (DATA / "mini_eval.json").read_bytes(), "application/json")
    at = open_page("upload")
    at.text_input(key="upload.targets").set_value("recall@5>lots").run()
    at.file_uploader(key="upload.dataset").set_value(content).run()
    assert not at.exception
    errors = " ".join(e.value.replace("\\", "") for e in at.error)
    assert "Targets: target 'recall@5>lots': expected metric>value" in errors and "was not stored" in errors
    store = Store(f"sqlite:///{tmp_path / 'ragmetrics.sqlite'}")
    assert "mini_eval" not in set(store.list_datasets()["name"])
    at = open_page("upload")
    at.text_input(key="upload.targets").set_value("mrr>0.5").run()
    at.file_uploader(key="upload.dataset").set_value(content).run()
    no_problems(at)
    at.file_uploader(key="upload.runs").set_value(
        [("mini-bm25.trec", (DATA / "mini-bm25.trec").read_bytes(), "text/plain")]
    ).run()
    no_problems(at)
    stored = store.list_datasets().set_index("name")
    assert stored.loc["mini_eval", "targets"] == "mrr>0.5"
    overview = open_page("overview", {"ds": str(stored.loc["mini_eval", "id"])})
    table = _targets_table(overview)
    assert table is not None and "MRR > 0.50" in table.columns


def test_a_report_names_the_targets_it_checks() -> None:
    """Was: "targets profile: none" in a report's header above the dataset's own thresholds."""
    assert targets.in_force_title(targets.NO_PROFILE, "faq", True) == targets.declared_title("faq")
    assert targets.in_force_title(targets.NO_PROFILE, "ndcg@10>0.5", True).startswith("The dataset's own")
    assert targets.in_force_title(targets.NO_PROFILE, "", False) == "none"
    assert targets.in_force_title("tech", "faq", True) == targets.profile_title("tech")
