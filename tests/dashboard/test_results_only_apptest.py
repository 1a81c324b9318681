"""A run stored as per-query results only: the Overview shows its means and intervals, the Workspace lists it,
and a page that needs rankings says it leaves it out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.core.results_only import RESULTS_COLUMNS
from dashboard.core.text import md_escape
from dashboard.data import samples
from ragmetrics import align
from ragmetrics.analysis.per_query import PerQueryResults
from ragmetrics.store.database import Store
from tests.dashboard.apptest import no_problems, open_page

pytestmark = pytest.mark.apptest


@pytest.fixture
def results_store(monkeypatch, tmp_path, faq_ids):
    """A store of its own holding the FAQ samples and per-query results of its BM25 run."""
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    store = Store(f"sqlite:///{(tmp_path / 'ragmetrics.sqlite').resolve()}")
    sample = next(samples.iter_samples(names=["product_faq_zh"]))
    bm25 = next(r for r, _ in sample.runs if r.name == "bm25")
    alignment = align(sample.dataset, bm25)
    frame = pd.DataFrame({"query_id": list(alignment.query_ids), "ndcg@10": alignment.value("ndcg@10")})
    store.put_dataset(sample.dataset)
    store.put_results(faq_ids["dataset"], PerQueryResults("bm25-at-scale", frame))
    return alignment


def test_results_only_runs_are_shown_where_they_can_be(results_store, faq_ids) -> None:
    at = open_page("overview", {"ds": faq_ids["dataset"]})
    no_problems(at)
    assert any(h.value == "Per-query results without rankings" for h in at.subheader)
    table = next(d.value for d in at.dataframe if list(d.value.columns) == RESULTS_COLUMNS)
    row = table.set_index("run").loc["bm25-at-scale"]
    assert row["metric"] == "ndcg@10" and row["queries"] == len(results_store.query_ids)
    assert np.isclose(row["mean"], results_store.mean("ndcg@10"), atol=1e-12)
    assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    # a graded metric: Student's t, named so (was "bootstrap" whatever the values)
    assert row["interval"] == "t"
    assert any("their means and 95% intervals (Student's t)." in c.value for c in at.caption)

    missed = open_page("missed", {"ds": faq_ids["dataset"]})
    no_problems(missed)
    assert any(md_escape("Not on this page: bm25-at-scale, stored") in c.value for c in missed.caption)

    workspace = open_page("workspace", {"ds": faq_ids["dataset"]})
    no_problems(workspace)
    listed = next(d.value for d in workspace.dataframe if "metrics" in d.value.columns)
    assert listed["name"].tolist() == ["bm25-at-scale"] and listed["metrics"].tolist() == ["ndcg@10"]
