"""Work that outlives a change of dataset, on a store of its own: a retrieval job (the built-in BM25 over the FAQ
sample's corpus) and the files in the runs uploader."""

from __future__ import annotations

import pytest

from dashboard.data import samples
from ragmetrics.store.database import Store, dataset_id
from tests.dashboard.apptest import no_problems, open_page

pytestmark = pytest.mark.apptest


@pytest.fixture
def own_store(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    return tmp_path


def _runs_under(store_dir, dataset: str) -> dict[str, str]:
    store = Store(f"sqlite:///{store_dir / 'ragmetrics.sqlite'}")
    runs = store.list_runs(dataset)
    return dict(zip(runs["name"], runs["source"]))


def test_a_retrieval_is_stored_under_the_dataset_it_ran_on_whatever_the_page_shows_when_it_ends(
    own_store, monkeypatch
) -> None:
    """Was: switching the sidebar's dataset while a retrieval ran stored the run under the new dataset (or, on a
    dataset the run does not fit, lost it behind an exception). The retriever takes a tenth of a second a query
    (about 3 s for the FAQ's 106 at 4 at a time), so the switch comes while it runs (the built-in BM25 could end
    before the page's rerun took its job)."""
    monkeypatch.setenv("RAGMETRICS_RETRIEVERS", "slow-faq=tests.e2e.retrievers:slow_faq_answers")
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(own_store / "answers"))  # no answer cached by an earlier test
    faq = dataset_id(next(samples.iter_samples(names=["product_faq_zh"])).dataset)
    other = dataset_id(next(samples.iter_samples(names=["scifact"])).dataset)
    at = open_page("retrieve", {"ds": faq}, timeout=120)
    no_problems(at)
    at.selectbox(key="retrieve.retriever").set_value("slow-faq")
    at.text_input(key="retrieve.name").set_value("bm25-live")
    at.button(key="FormSubmitter:retrieve.form-Run it").click().run()
    job = at.session_state["retrieve.job"]
    assert job.status().running  # the switch below comes while it runs
    at.selectbox(key="sidebar.dataset").set_value(other).run()
    said = [s.value for s in at.success]  # the job may end during this run: its message shows once
    job.wait(120)
    assert job.status().error is None
    at.run()
    no_problems(at)
    said += [s.value for s in at.success]
    assert any("stored under the dataset it ran on" in s for s in said), said
    assert "bm25-live" in _runs_under(own_store, faq)
    assert "bm25-live" not in _runs_under(own_store, other)


def test_runs_in_the_uploader_stay_with_the_dataset_they_were_dropped_on(own_store) -> None:
    """Was: picking another dataset in the sidebar stored the files still in the runs uploader under it too."""
    faq = dataset_id(next(samples.iter_samples(names=["product_faq_zh"])).dataset)
    other = dataset_id(next(samples.iter_samples(names=["scifact"])).dataset)
    lines = (samples.samples_dir() / "product_faq_zh" / "runs" / "dense-e5.jsonl").read_bytes().splitlines()[:40]
    at = open_page("upload", {"ds": faq}, timeout=120)
    at.file_uploader(key="upload.runs").set_value(("my-run.jsonl", b"\n".join(lines), "application/json")).run()
    no_problems(at)
    assert "my-run" in _runs_under(own_store, faq)
    at.selectbox(key="sidebar.dataset").set_value(other).run()
    no_problems(at)
    assert "my-run" not in _runs_under(own_store, other)
    assert any("where they were dropped" in c.value for c in at.caption), [c.value for c in at.caption]


EVIL = "$x^2$ [click](http://evil.example)"


def test_names_from_files_are_shown_as_text_in_headings_and_labels(own_store) -> None:
    """Was: the Workspace's heading and Compare's fusion weights rendered a dataset's or run's name as Markdown
    (a link, LaTeX)."""
    from dashboard.data.workspace import Workspace
    from ragmetrics.foundation.model import Run

    faq = next(samples.iter_samples(names=["product_faq_zh"]))
    workspace = Workspace(Store(f"sqlite:///{own_store / 'ragmetrics.sqlite'}"), cache_bytes=1 << 26)
    entry = workspace.add_dataset(faq.dataset, name=f"<b>DS</b> {EVIL}")
    for i, (run, _) in enumerate(faq.runs[:2]):
        workspace.add_run(entry.id, Run.from_frame(run.frame, name=f"{EVIL} {i}"))
    at = open_page("workspace", {"ds": entry.id}, timeout=120)
    no_problems(at)
    heading = next(s.value for s in at.get("subheader") if s.value.startswith("Dataset “"))
    assert "\\[click\\]" in heading and "\\$" in heading
    at = open_page("compare", {"ds": entry.id}, timeout=120)
    at.session_state["compare.fuse.open"] = True  # fusion opened (folded as the page opens)
    at.run()
    no_problems(at)
    labels = [n.label for n in at.number_input if n.label.startswith("weight")]
    assert labels and all("\\[click\\]" in label and "\\$" in label for label in labels), labels


def test_a_registration_that_is_not_name_spec_is_said_where_the_retrievers_are_offered(own_store, monkeypatch) -> None:
    """Was: an item of ``RAGMETRICS_RETRIEVERS`` without its ``=`` was dropped in silence, and a name given twice
    took its last spec; each is said on the page now, the well-formed ones offered."""
    monkeypatch.setenv("RAGMETRICS_RETRIEVERS", "slow-faq=tests.e2e.retrievers:slow_faq_answers; prod mypkg:search; "
                       "twice=a:b; twice=c:d")  # fmt: skip
    faq = dataset_id(next(samples.iter_samples(names=["product_faq_zh"])).dataset)
    at = open_page("retrieve", {"ds": faq})
    no_problems(at)
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Left out of the choices: $RAGMETRICS_RETRIEVERS, item 2 'prod mypkg:search': expected name=spec" in said
    assert "$RAGMETRICS_RETRIEVERS: 'twice' is registered twice; keep one" in said
    assert "slow-faq" in at.selectbox(key="retrieve.retriever").options
    assert not any("twice" in option for option in at.selectbox(key="retrieve.retriever").options)
