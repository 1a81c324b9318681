"""The Workspace page, share links and unknown or malformed ids under AppTest, each test on its own SQLite store."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa

import ragmetrics
from dashboard.core.share import decode
from dashboard.data.workspace import Workspace
from dashboard.ui import layout
from dashboard.views import VIEWS
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import CHANGES, Store, StoreWriteRefused, dataset_id, run_id
from tests.dashboard.apptest import no_problems, open_page, param, shown_table

pytestmark = pytest.mark.apptest

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


@pytest.fixture
def store_dir(tmp_path, monkeypatch) -> Path:
    """A fresh, empty store for this test (no samples): what the page shows is what the test put there."""
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.delenv("RAGMETRICS_BASE_URL", raising=False)
    return tmp_path


@pytest.fixture
def mini(store_dir) -> dict[str, str]:
    """The e2e mini dataset and its two runs, stored as an earlier upload would have."""
    ws = Workspace(Store(f"sqlite:///{store_dir / 'ragmetrics.sqlite'}"))
    entry = ws.add_dataset(
        load_dataset(DATA / "mini_eval.json"), source="mini_eval.json", description="A made-up FAQ set."
    )
    ids = {"dataset": entry.id}
    for name in ("mini-bm25", "mini-dense"):
        ids[name] = ws.add_run(entry.id, load_run(DATA / f"{name}.trec"), source=f"{name}.trec").id
    ws.store.engine.dispose()
    return ids


def _text(elements) -> str:  # type: ignore[no-untyped-def]
    return " ".join(e.value for e in elements).replace("\\", "")


def test_workspace_lists_what_is_stored(mini) -> None:
    at = open_page("workspace")
    no_problems(at)
    datasets = at.dataframe[0].value
    assert datasets[["name", "id", "queries", "judgments", "runs"]].values.tolist() == [
        ["mini_eval", mini["dataset"], 12, 24, 2]
    ]
    assert datasets["size"].iloc[0].endswith("KB") and datasets["added"].iloc[0].endswith("UTC")
    runs = at.dataframe[1].value
    assert runs["name"].tolist() == ["mini-bm25", "mini-dense"]
    assert runs["id"].tolist() == [mini["mini-bm25"], mini["mini-dense"]]
    assert set(runs.columns) >= {"queries", "rows", "size", "added"}
    # where each came from, read back from the store (a fresh server process here)
    assert datasets[["source", "description"]].values.tolist() == [["mini_eval.json", "A made-up FAQ set."]]
    assert runs["source"].tolist() == ["mini-bm25.trec", "mini-dense.trec"]
    assert "A made-up FAQ set." in _text(at.markdown) and "from mini_eval.json" in _text(at.caption)
    assert "**1** dataset(s) and **2** run(s)" in _text(at.markdown)
    assert param(at, "ds") == mini["dataset"]


def test_rename_a_dataset_and_a_run(mini) -> None:
    timeline = open_page("timeline", {"ds": mini["dataset"]})  # drawn (and cached) under the old names
    assert "mini-dense" in set(timeline.dataframe[0].value["run"])
    at = open_page("workspace")
    at.text_input(key=f"workspace.rename.dataset.{mini['dataset']}.name").set_value("FAQ v2")
    next(b for b in at.button if b.label == "Rename").click().run()
    no_problems(at)
    assert "Renamed “mini_eval” to “FAQ v2”" in _text(at.success)
    assert at.dataframe[0].value["name"].tolist() == ["FAQ v2"]
    at.selectbox(key="workspace.run").set_value(mini["mini-dense"]).run()
    at.text_input(key=f"workspace.rename.run.{mini['mini-dense']}.name").set_value("dense-e5")
    [b for b in at.button if b.label == "Rename"][1].click().run()
    no_problems(at)
    assert at.dataframe[1].value["name"].tolist() == ["mini-bm25", "dense-e5"]
    # another page shows the new names (evaluations are cached per content, and per name)
    overview = open_page("overview", {"ds": mini["dataset"]})
    no_problems(overview)
    assert list(shown_table(overview, "overview.metrics")["run"]) == ["mini-bm25", "dense-e5"]
    timeline = open_page("timeline", {"ds": mini["dataset"]})  # was: the old name, cached by run id and tags
    assert "dense-e5" in set(timeline.dataframe[0].value["run"]) and "mini-dense" not in set(
        timeline.dataframe[0].value["run"]
    )
    # a name another run has is refused with a message, nothing changes
    at.text_input(key=f"workspace.rename.run.{mini['mini-dense']}.name").set_value("mini-bm25")
    [b for b in at.button if b.label == "Rename"][1].click().run()
    assert not at.exception and "already called 'mini-bm25'" in _text(at.error)
    assert at.dataframe[1].value["name"].tolist() == ["mini-bm25", "dense-e5"]


def test_a_store_that_takes_uploads_but_refuses_renames_and_deletes_says_so_before_a_click(
    database_and_role, store_dir, monkeypatch
) -> None:
    """Was: a PostgreSQL role with INSERT but not UPDATE or DELETE on the store's tables opened as writable, every
    rename and delete offered, and the first one refused turned the whole store read-only (uploads included). Now the
    Workspace page says up front what the store refuses, its rename and delete buttons are disabled with the reason
    as their help, and uploads stay offered."""
    name, owner_url = database_and_role
    owner = Workspace(Store(owner_url))
    entry = owner.add_dataset(load_dataset(DATA / "mini_eval.json"))
    owner.add_run(entry.id, load_run(DATA / "mini-bm25.trec"))
    with owner.store.engine.begin() as conn:
        conn.execute(sa.text(f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {name}"))
    owner.store.engine.dispose()
    url = owner_url.replace("postgres@", f"{name}@", 1)
    monkeypatch.setenv("RAGMETRICS_STORE_URL", url)
    at = open_page("workspace", {"ds": entry.id})
    no_problems(at)
    assert [i.value for i in at.info if "takes uploads" in i.value] == [
        "This store takes uploads, but the database user the dashboard connects as may not rename, delete, edit tags, "
        "delete results, judge, save versions, build datasets or review candidates: those controls are disabled. Ask the "
        "store's owner for the UPDATE and DELETE "
        "privileges on its tables (and USAGE on its sequences), or to make the change for you."
    ]
    renames = [b for b in at.button if b.label == "Rename"]
    deletes = [at.button(key="workspace.delete.dataset"), at.button(key="workspace.delete.run")]
    tags = [b for b in at.button if b.label == "Save metadata"]
    assert len(renames) == 2 and len(tags) == 1 and all(b.disabled for b in renames + deletes + tags)
    workspace = Workspace(Store(url))  # as the page's, opened by the same role
    assert {b.proto.help for b in renames} == {layout.change_help(workspace, "rename")}
    assert {b.proto.help for b in deletes} == {layout.change_help(workspace, "delete")}
    assert tags[0].proto.help == layout.change_help(workspace, "edit tags")
    assert layout.change_help(workspace, "delete") == (
        "This store refuses to delete: the database user the dashboard connects as may add data to it, not change "
        "what it holds that way."
    )
    assert not workspace.read_only
    assert workspace.refused_changes() == list(CHANGES)  # every one
    judging = open_page("judge", {"ds": entry.id})  # every pair shown would be refused: said, none held
    no_problems(judging)
    assert [i.value for i in judging.info if "refuses to judge" in i.value] == [
        f"{layout.change_help(workspace, 'judge')} Ask the store's owner for the privilege."
    ]
    with pytest.raises(StoreWriteRefused):  # an upload with tags is an edit of them (ON CONFLICT DO UPDATE)
        workspace.add_run(entry.id, load_run(DATA / "mini-bm25.trec"), tags={"k": "v"})
    # a refused write to the datasets marks the store read-only; a grant since shows on the next page's refresh
    owner_engine = sa.create_engine(owner_url)
    with owner_engine.begin() as conn:
        conn.execute(sa.text(f"REVOKE INSERT ON datasets FROM {name}"))
    with pytest.raises(StoreWriteRefused):
        workspace.add_dataset(ragmetrics.Dataset.from_dict({"q": {"d": 1}}))
    assert workspace.read_only
    with owner_engine.begin() as conn:
        conn.execute(sa.text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}"))
        conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name}"))
    owner_engine.dispose()
    workspace.refresh()
    assert not workspace.read_only and workspace.refused_changes() == []


def test_a_store_that_takes_labels_but_refuses_saving_versions_disables_save_and_drops_refused_tags(
    database_and_role, store_dir, monkeypatch
) -> None:
    """Was: saving a qrels version was no change of its own: a PostgreSQL role that may judge (add labels, hold
    pairs) but not update the labels a version stamps saw Judge's Save enabled, and its click was refused in red.
    Now the open reads that privilege with the others, the Workspace page names it, and Save is disabled with the
    reason. Tags typed before the store began refusing tag edits no longer go with an upload (it was refused)."""
    from dashboard.ui import ingest

    name, owner_url = database_and_role
    owner = Workspace(Store(owner_url))
    entry = owner.add_dataset(load_dataset(DATA / "mini_eval.json"))
    run = owner.add_run(entry.id, load_run(DATA / "mini-bm25.trec"))
    with owner.store.engine.begin() as conn:  # adding anything, and judging: holding pairs, withdrawing labels
        conn.execute(sa.text(f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {name}"))
        conn.execute(sa.text(f"GRANT UPDATE, DELETE ON label_claims TO {name}"))
        conn.execute(sa.text(f"GRANT DELETE ON labels TO {name}"))
    url = owner_url.replace("postgres@", f"{name}@", 1)
    monkeypatch.setenv("RAGMETRICS_STORE_URL", url)
    workspace = Workspace(Store(url))
    assert not workspace.read_only  # a label is numbered by the labels' sequence: no USAGE of it, no judging
    assert workspace.refused_changes() == list(CHANGES)  # every one
    with owner.store.engine.begin() as conn:
        conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {name}"))
    owner.store.engine.dispose()
    workspace.refresh()  # read again while the store refuses a change: the grant shows
    assert workspace.refused_changes() == [
        "rename",
        "delete",
        "edit tags",
        "delete results",
        "save versions",
        "build datasets",
    ]
    assert ingest.metadata_options(workspace) == {}  # the Upload page's tag fields, disabled: not read
    at = open_page("judge", {"ds": entry.id, "runs": run.id, "k": "5"})
    no_problems(at)
    grades = [b for b in at.button if str(b.key).startswith("judge.grade.1.")]
    assert len(grades) == 1
    grades[0].click().run()
    no_problems(at)
    assert len(workspace.store.pending_labels(entry.id)) == 1  # the label is kept
    save = at.button(key="judge.save")
    assert save.disabled and save.proto.help == layout.change_help(workspace, "save versions")
    assert save.proto.help.startswith("This store refuses to save versions: ")
    with pytest.raises(StoreWriteRefused):  # as a click would have been
        workspace.store.commit_labels(entry.id)
    assert workspace.store.versions(entry.id).empty and len(workspace.store.pending_labels(entry.id)) == 1


def test_delete_asks_first(mini, store_dir) -> None:
    at = open_page("workspace")
    at.button(key="workspace.delete.run").click().run()  # the first run is picked
    no_problems(at)
    assert "Delete run “mini-bm25”?" in _text(at.warning)
    assert len(at.dataframe[1].value) == 2  # nothing deleted yet
    at.button(key="workspace.confirm.no").click().run()
    assert not at.warning and len(at.dataframe[1].value) == 2
    at.button(key="workspace.delete.run").click().run()
    at.button(key="workspace.confirm.yes").click().run()
    no_problems(at)
    assert at.dataframe[1].value["name"].tolist() == ["mini-dense"]
    assert param(at, "runs") == mini["mini-dense"]

    at.button(key="workspace.delete.dataset").click().run()
    assert "Delete dataset “mini_eval”?" in _text(at.warning) and "1 of its 1 run(s)" in _text(at.warning)
    at.button(key="workspace.confirm.yes").click().run()
    no_problems(at)
    assert "Deleted dataset “mini_eval”, 1 run(s)." in _text(at.success)
    assert at.dataframe[0].value.empty and param(at, "ds") is None
    store = Store(f"sqlite:///{store_dir / 'ragmetrics.sqlite'}")  # gone from the store itself
    assert store.list_datasets().empty and store.list_runs().empty


def test_deleting_the_last_stored_version_of_a_deleted_original_says_its_labels_go(mini, store_dir) -> None:
    store = Store(f"sqlite:///{store_dir / 'ragmetrics.sqlite'}")
    original = mini["dataset"]
    store.add_label(original, "t01", "new-doc", 1, author="ann")
    v1 = store.commit_labels(original, author="ann").version
    assert v1 is not None
    store.delete_dataset(original)
    store.add_label(v1, "t01", "other-doc", 1, author="ann")
    store.engine.dispose()
    at = open_page("workspace", {"ds": v1})
    at.button(key="workspace.delete.dataset").click().run()
    no_problems(at)
    assert "Its 1 label(s) not saved in a version go with it." in _text(at.warning)
    assert "not saved yet move" not in _text(at.warning)


def test_an_upload_lands_in_the_store_and_survives_a_restart(store_dir) -> None:
    import streamlit as st

    at = open_page("upload")
    no_problems(at)
    at.file_uploader(key="upload.dataset").set_value(
        ("mini_eval.json", (DATA / "mini_eval.json").read_bytes(), "application/json")
    )
    at.run()
    at.file_uploader(key="upload.runs").set_value(
        [(n, (DATA / n).read_bytes(), "text/plain") for n in ("mini-bm25.trec", "broken-run.trec")]
    )
    at.run()
    assert not at.exception and "broken-run.trec:4" in _text(at.error)  # the bad file is refused ...
    ds = param(at, "ds")
    runs = param(at, "runs")
    assert ds == dataset_id(load_dataset(DATA / "mini_eval.json")) and runs == run_id(load_run(DATA / "mini-bm25.trec"))
    assert f"stored as `{ds}`" in _text(at.success)
    st.cache_resource.clear()  # ... and after a "restart" (no cached store or workspace) the good ones are there
    again = open_page("overview", {"ds": ds, "runs": runs, "k": "3"})
    no_problems(again)
    assert list(shown_table(again, "overview.metrics")["run"]) == ["mini-bm25"] and not at.info
    assert Store(f"sqlite:///{store_dir / 'ragmetrics.sqlite'}").has_run(runs)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            {"ds": "0123456789abcdef"},
            [
                "dataset 0123456789abcdef",
                "not loaded on this server",
                "upload the same files",
                "RAGMETRICS_STORE_URL",
                "Showing “mini_eval” instead",
            ],
        ),
        ({"ds": "dead"}, ["dataset dead", "not even a well-formed id"]),
        ({"ds": "../../etc/passwd"}, ["not an id", "16 hexadecimal digits"]),
        (
            {"runs": "ffffffffffffffff,zz"},
            ["2 run(s) of this link are not loaded here", "ffffffffffffffff", "upload the same run files"],
        ),
        (
            {"k": "abc", "m": "nope", "cat": "no such", "q": "q404", "zzz": "1"},
            ["K must be a whole number", "unknown metric", "category 'no such'", "query 'q404'"],
        ),
    ],
    ids=["unknown-dataset", "malformed-dataset", "not-an-id", "unknown-runs", "bad-values"],
)
@pytest.mark.parametrize("page", ["overview", "missed", "workspace"])
def test_unknown_or_malformed_ids_explain_instead_of_failing(mini, page, params, expected) -> None:
    if "runs" in params:
        params = {"ds": mini["dataset"], **params}
    if "cat" in params:
        params = {"ds": mini["dataset"], **params}
    at = open_page(page, params)
    no_problems(at)
    assert at.title[0].value  # never a blank page
    notes = _text(at.info)
    for fragment in expected:
        assert fragment in notes, (fragment, notes)
    assert param(at, "ds") == mini["dataset"]  # the page still shows what the store has


def test_a_link_to_an_empty_store_says_what_is_missing(store_dir) -> None:
    at = open_page("overview", {"ds": "0123456789abcdef", "runs": "ffffffffffffffff"})
    no_problems(at)
    notes = _text(at.info)
    assert "dataset 0123456789abcdef" in notes and "holds no dataset yet" in notes and "Upload page" in notes


def test_a_store_that_cannot_be_opened_is_explained(monkeypatch, store_dir) -> None:
    monkeypatch.setenv("RAGMETRICS_STORE_URL", "postgresql+psycopg://team:s3cret@127.0.0.1:1/rag?connect_timeout=2")
    at = open_page("overview")
    assert not at.exception
    message = _text(at.error)
    assert "cannot be opened" in message and "RAGMETRICS_STORE_URL" in message and "s3cret" not in message


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql+psycopg://team:s3cret@tail-secret@127.0.0.1:1/rag", "its password holds an '@'"),
        ("postgresql+psycopg://127.0.0.1:1/rag?user=team&password=s3cret&connect_timeout=2", "password=***"),
        ("postgresql+psycopg://team:s3cret@127.0.0.1:abc/rag", "its port is not a number"),
    ],
)
def test_a_store_url_is_shown_without_any_of_its_secrets(monkeypatch, store_dir, url: str, why: str) -> None:
    """Was: the tail of a password holding '@' and a ?password= parameter were shown."""
    monkeypatch.setenv("RAGMETRICS_STORE_URL", url)
    at = open_page("workspace")
    assert not at.exception
    message = _text(at.error)
    assert "cannot be opened" in message and why in message.replace("\\", ""), message
    assert "s3cret" not in message and "tail-secret" not in message, message


def test_every_page_shows_a_share_link_that_reopens_it(mini, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETRICS_BASE_URL", "https://rag.example.com/dash/")
    for view in VIEWS:
        if view.key in ("compare", "power"):  # pages of a parallel change; covered by their own tests
            continue
        at = open_page(view.key, {"ds": mini["dataset"], "runs": mini["mini-dense"], "k": "7", "m": "ndcg"})
        no_problems(at)
        link = at.code[-1].value
        parts = urlsplit(link)
        assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"https://rag.example.com/dash/{view.key}", link
        state, notes = decode(parse_qs(parts.query), parts.path.rsplit("/", 1)[-1])
        assert notes == [] and state.page == view.key
        assert (state.dataset, state.runs, state.k, state.metric) == (mini["dataset"], (mini["mini-dense"],), 7, "ndcg")
        blocks = [b.proto for b in at.sidebar.children.values() if type(b).__name__ == "Block"]
        popovers = [p.popover.label for p in blocks if p.WhichOneof("type") == "popover"]
        assert popovers == ["Copy share link"], popovers  # the link sits in the sidebar's one popover


def test_the_link_ragmetrics_push_prints_opens_its_run(mini) -> None:
    from dashboard.core.share import share_link

    link = share_link("http://localhost:8501", dataset=mini["dataset"], runs=[mini["mini-dense"]])
    parts = urlsplit(link)
    assert parts.path == "/overview"
    at = open_page("overview", {k: v[-1] for k, v in parse_qs(parts.query).items()})
    no_problems(at)
    assert at.multiselect(key="sidebar.runs").value == [mini["mini-dense"]]
    assert list(shown_table(at, "overview.metrics")["run"]) == ["mini-dense"]


def test_the_store_url_comes_from_the_environment(store_dir, monkeypatch) -> None:
    from dashboard.ui import cache

    assert cache.store_url() == f"sqlite:///{(store_dir / 'ragmetrics.sqlite').resolve()}"
    monkeypatch.setenv("RAGMETRICS_STORE_URL", "postgresql+psycopg://team@db/rag")
    assert cache.store_url() == "postgresql+psycopg://team@db/rag"


def test_a_dataset_uploaded_again_under_another_name_says_the_stored_one_is_kept(store_dir) -> None:
    """Was: "Loaded … → dataset “cmrc2018”" for an upload named "cmrc-upload", the name and description typed
    silently dropped (the same content is stored once)."""
    at = open_page("upload")
    dataset_file = ("mini_eval.json", (DATA / "mini_eval.json").read_bytes(), "application/json")
    at.file_uploader(key="upload.dataset").set_value(dataset_file)
    at.run()
    assert "stored before" not in _text(at.success)
    again = open_page("upload")
    again.text_input(key="upload.name").input("another name")
    again.file_uploader(key="upload.dataset").set_value(dataset_file)
    again.run()
    no_problems(again)
    said = _text(again.success)
    assert "stored before, the same content: its name, description and targets are kept; rename it on" in said
    assert "another name" not in said
