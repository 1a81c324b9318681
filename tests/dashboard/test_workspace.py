"""The store-backed workspace without Streamlit: persistence, names, rename and delete, seeding once, two processes."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from dashboard.core.share import decode
from dashboard.core.view_state import Facts, ViewState, app_root, missing_note, reconcile
from dashboard.data import samples
from dashboard.data.alignments import Alignments
from dashboard.data.workspace import SAMPLES_MARKER, Workspace, human_size, safe_url, samples_marker_id
from ragmetrics import Run
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io import load_dataset, load_run
from ragmetrics.store.database import Store, dataset_id, run_id

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


@pytest.fixture(scope="module")
def mini():
    return load_dataset(DATA / "mini_eval.json"), load_run(DATA / "mini-bm25.trec"), load_run(DATA / "mini-dense.trec")


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ragmetrics.sqlite'}"


def test_what_is_added_survives_a_restart(tmp_path, mini) -> None:
    dataset, bm25, dense = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset, source="mini_eval.json")
    a, b = ws.add_run(entry.id, bm25), ws.add_run(entry.id, dense)
    assert entry.id == dataset_id(dataset) and (a.id, b.id) == (run_id(bm25), run_id(dense))
    assert ws.add_dataset(dataset) is entry and ws.add_run(entry.id, bm25) is a

    again = Workspace(Store(_sqlite(tmp_path)))  # a new process on the same file
    assert [d.id for d in again.datasets()] == [entry.id]
    assert [(r.id, r.name) for r in again.runs(entry.id)] == [(a.id, "mini-bm25"), (b.id, "mini-dense")]
    stored = again.dataset(entry.id)
    assert stored is not None and stored.n_queries == 12 and stored.size_bytes > 0
    assert dataset_id(stored.dataset) == entry.id
    assert run_id(again.run(entry.id, b.id).run) == b.id  # type: ignore[union-attr]
    assert again.run(entry.id, "0" * 16) is None and again.dataset("nope") is None and again.runs("nope") == []


def test_names_are_unique_per_dataset_and_renames_reach_the_content(tmp_path, mini) -> None:
    dataset, bm25, dense = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset)
    ws.add_run(entry.id, bm25)
    clash = ws.add_run(entry.id, dense.with_name("mini-bm25"))
    assert clash.name == "mini-bm25 (2)" and clash.run.name == "mini-bm25 (2)"
    renamed = ws.rename_run(entry.id, clash.id, "dense")
    assert renamed.name == "dense" and renamed.run.name == "dense"
    with pytest.raises(RagMetricsError, match="already called 'mini-bm25'"):
        ws.rename_run(entry.id, clash.id, "mini-bm25")
    assert ws.rename_dataset(entry.id, "  mini  ").name == "mini"
    assert ws.dataset(entry.id).dataset.name == "mini"  # type: ignore[union-attr]
    with pytest.raises(RagMetricsError, match="empty"):
        ws.rename_dataset(entry.id, "   ")
    table = ws.run_table(entry.id)
    assert table["name"].tolist() == ["mini-bm25", "dense"] and table["rows"].tolist() == [
        len(bm25.frame),
        len(dense.frame),
    ]
    assert ws.dataset_table()[["name", "queries", "runs"]].values.tolist() == [["mini", 12, 2]]


def test_delete_takes_the_runs_no_other_dataset_uses(tmp_path, mini) -> None:
    dataset, bm25, dense = mini
    store = Store(_sqlite(tmp_path))
    ws = Workspace(store)
    first = ws.add_dataset(dataset)
    other = ws.add_dataset(dataset.__class__.from_frames(dataset.qrels.iloc[:10], dataset.queries, name="mini-part"))
    a = ws.add_run(first.id, bm25)
    b = ws.add_run(first.id, dense)
    ws.add_run(other.id, dense)  # shared
    assert ws.shared_runs(first.id) == {b.id}
    assert ws.delete_dataset(first.id) == (1, 0)
    assert ws.dataset(first.id) is None and not store.has_run(a.id) and store.has_run(b.id)
    assert [r.id for r in ws.runs(other.id)] == [b.id]
    ws.delete_run(b.id)
    assert ws.runs(other.id) == [] and not store.has_run(b.id)


def test_a_run_needs_a_stored_dataset_and_a_failure_changes_nothing(tmp_path, mini) -> None:
    dataset, bm25, _ = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset)
    with pytest.raises(KeyError, match="no dataset"):
        ws.add_run("0123456789abcdef", bm25)
    assert [d.id for d in ws.datasets()] == [entry.id] and ws.runs(entry.id) == []


def test_samples_are_seeded_once_per_store(tmp_path, monkeypatch) -> None:
    store = Store(_sqlite(tmp_path))
    assert store.put_view(SAMPLES_MARKER) == samples_marker_id()  # the workspace computes the store's id
    store.engine.dispose()
    (tmp_path / "ragmetrics.sqlite").unlink()

    calls = []

    def only_faq():
        calls.append(1)
        return samples.iter_samples(names=["product_faq_zh"])

    ws = Workspace(Store(_sqlite(tmp_path)))
    assert ws.seed(only_faq) is True
    names = [d.name for d in ws.datasets()]
    assert names == ["product_faq_zh"] and len(ws.runs(ws.datasets()[0].id)) == 3
    ws.delete_dataset(ws.datasets()[0].id)
    again = Workspace(Store(_sqlite(tmp_path)))  # a restart: the deleted sample stays deleted
    assert again.seed(only_faq) is False and again.datasets() == [] and len(calls) == 1
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    assert samples.manifest() == []


def refuse_runs_after(stored: int) -> str:
    """A trigger that refuses every run after the first ``stored``, as SQLite refuses a read-only file's writes."""
    return (
        f"CREATE TRIGGER refused BEFORE INSERT ON runs WHEN (SELECT count(*) FROM runs) >= {stored} "
        "BEGIN SELECT RAISE(ABORT, 'attempt to write a readonly database'); END"
    )


def test_a_seeding_refused_part_way_says_what_it_stored_and_what_it_was_refused(tmp_path) -> None:
    """Was: a write refused part-way through the samples left those stored before it, no marker, and said nothing.
    Now the workspace says what it stored, which write was refused and why; the next start tries again."""
    store = Store(_sqlite(tmp_path))
    with store.engine.begin() as conn:
        conn.execute(sa.text(refuse_runs_after(1)))
    ws = Workspace(store)
    faq = next(samples.iter_samples(names=["product_faq_zh"]))
    first, second = (run.name for run, _ in faq.runs[:2])
    assert ws.seed(lambda: samples.iter_samples(names=["product_faq_zh"])) is False
    assert ws.seed_note is not None and ws.seed_note.startswith(
        f"The sample data was stored in part: stored sample dataset 'product_faq_zh', run {first!r} of "
        f"'product_faq_zh'; then run {second!r} of 'product_faq_zh' was refused, and nothing after it was tried. "
        f"store sqlite:///{tmp_path / 'ragmetrics.sqlite'}: the database user that opened it may not write to it "
        "(attempt to write a readonly database); nothing was written"
    )
    assert [d.name for d in ws.datasets()] == ["product_faq_zh"] and [r.name for r in ws.runs(ws.datasets()[0].id)] == [
        first
    ]
    assert not store.has_view(samples_marker_id())
    # the note follows the store: it stays while the store refuses, and goes once the samples are all stored (was:
    # it and the read-only mark stayed until a restart)
    ws.refresh()
    assert ws.seed_note is not None and ws.read_only and len(ws.runs(ws.datasets()[0].id)) == 1
    with store.engine.begin() as conn:  # the owner grants write access
        conn.execute(sa.text("DROP TRIGGER refused"))
    ws.refresh()
    assert ws.seed_note is None and not ws.read_only and store.has_view(samples_marker_id())
    assert [r.name for r in ws.runs(ws.datasets()[0].id)] == [run.name for run, _ in faq.runs]


def test_a_family_is_read_with_the_listing(tmp_path) -> None:
    """Was: every ``Workspace.family`` call read the store's lineage. Now it is kept with the datasets' listing,
    and forgotten by refresh() and by a write through the workspace (a new version)."""
    store = Store(_sqlite(tmp_path))
    ws = Workspace(store)
    ws.seed(lambda: samples.iter_samples(names=["product_faq_zh"]))
    reads: list[str] = []
    family = store.family  # the store's own method, counted: what it reads is the real store's

    def counted(ident: str) -> list[str]:
        reads.append(ident)
        return family(ident)

    store.family = counted  # type: ignore[method-assign]
    original = ws.datasets()[0]
    assert [e.id for e in ws.family(original.id)] == [original.id] == [e.id for e in ws.family(original.id)]
    assert len(reads) == 1
    ws.refresh()
    ws.family(original.id)
    assert len(reads) == 2
    query, doc = original.dataset.qrels[["query_id", "doc_id"]].iloc[0]
    ws.add_label(original.id, str(query), str(doc), 0, author="ann")
    saved = ws.commit_labels(original.id, author="ann")
    assert saved is not None and saved.entry is not None
    assert [e.id for e in ws.family(original.id)] == [original.id, saved.entry.id] and len(reads) == 3


def test_two_processes_share_one_postgresql_store(postgres_url, mini) -> None:
    name = "w" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    dataset, bm25, _ = mini
    one, two = Workspace(Store(url)), Workspace(Store(url))
    assert two.datasets() == []
    entry = one.add_dataset(dataset)
    run = one.add_run(entry.id, bm25)
    # the other process asks by id (as a link does): a miss re-reads the store at once
    seen = two.run(entry.id, run.id)
    assert seen is not None and seen.name == "mini-bm25" and run_id(seen.run) == run.id
    one.rename_run(entry.id, run.id, "bm25 v2")
    two.refresh()
    assert two.run(entry.id, run.id).name == "bm25 v2"  # type: ignore[union-attr]
    assert two.describe_store() == f"PostgreSQL at {url}"


def test_store_urls_are_shown_without_passwords() -> None:
    assert safe_url("postgresql+psycopg://team:s3cret@db:5432/rag") == "postgresql+psycopg://team:***@db:5432/rag"
    assert human_size(512) == "512 B" and human_size(2 * 1024 * 1024) == "2.0 MB"


def test_app_root_from_the_browser_address() -> None:
    paths = ["overview", "overview-home", "missed", "workspace"]
    assert app_root("http://h:8501/missed", paths) == "http://h:8501"
    assert app_root("http://h:8501/", paths) == "http://h:8501"
    assert app_root("https://h/team/dash/workspace?x=1#top", paths) == "https://h/team/dash"
    assert app_root("https://h/team/dash", paths) == "https://h/team/dash"
    assert app_root(None, paths) == "" and app_root("garbage", paths) == ""


def _facts(_dataset: str) -> Facts:
    return Facts(runs=["a" * 16], name="mini")


def test_unknown_and_malformed_ids_say_what_is_missing_and_how_to_restore() -> None:
    unknown = "0123456789abcdef"
    _, notes = reconcile(ViewState(dataset=unknown), ["f" * 16], _facts)
    assert unknown in notes[0] and "upload the same files" in notes[0] and "RAGMETRICS_STORE_URL" in notes[0]
    assert "Showing “mini” instead" in notes[0] and "well-formed" not in notes[0]
    _, notes = reconcile(ViewState(dataset="dead"), ["f" * 16], _facts)
    assert "not even a well-formed id" in notes[0]
    _, notes = reconcile(ViewState(dataset="f" * 16, runs=("b" * 16, "oops")), ["f" * 16], _facts)
    assert "2 run(s)" in notes[0] and "b" * 16 in notes[0] and "upload the same run files" in notes[0]
    _, notes = decode({"ds": "../../etc"})
    assert "not an id" in notes[0] and "16 hexadecimal digits" in notes[0]
    note = missing_note(unknown)
    assert unknown in note and "holds no dataset yet" in note and "Upload page" in note


def test_tight_upload_limits_do_not_refuse_the_bundled_samples(tmp_path, monkeypatch) -> None:
    """A deployer's RAGMETRICS_MAX_ROWS below a sample's size (bm25.jsonl: 1,019+ rows) limits uploads, not the samples."""
    monkeypatch.setenv("RAGMETRICS_MAX_ROWS", "1000")
    ws = Workspace(Store(_sqlite(tmp_path)))
    assert ws.seed(lambda: samples.iter_samples(names=["product_faq_zh"])) is True
    assert [len(ws.runs(d.id)) for d in ws.datasets()] == [3]
    from ragmetrics.foundation.errors import ParseError
    from ragmetrics.io import load_run

    with pytest.raises(ParseError, match=r"the limit is 1,000 \(RAGMETRICS_MAX_ROWS\)"):
        load_run(samples.samples_dir() / "product_faq_zh" / "runs" / "bm25.jsonl")


def test_the_alignment_made_while_a_run_is_stored_is_the_one_the_pages_reuse(tmp_path, mini, monkeypatch) -> None:
    """ingest's ``meanwhile``: the run is aligned while its rows are written, and the pages find that alignment."""
    from dashboard.data import alignments as module

    dataset, bm25, _ = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset)
    builds = []
    original = module.align
    monkeypatch.setattr(module, "align", lambda *a, **k: builds.append(1) or original(*a, **k))
    held = Alignments()
    run_entry = held.add_run(ws, entry, bm25, source="mini-bm25.trec")
    assert builds == [1] and run_entry.id == run_id(bm25)
    again = held.get(entry, run_entry)
    assert builds == [1]  # aligned once, while storing
    assert again is held.get(ws.dataset(entry.id), ws.run(entry.id, run_entry.id))  # type: ignore[arg-type]
    assert again.run.name == run_entry.name and again.mean("mrr") > 0

    monkeypatch.setattr(module, "align", lambda *a, **k: 1 / 0)
    failing = held.add_run(ws, entry, load_run(DATA / "mini-dense.trec"))
    assert ws.run(entry.id, failing.id) is not None  # an error in the side work does not stop the store
    with pytest.raises(ZeroDivisionError):  # the page meets it
        held.get(entry, failing)

    # the same file again: the stored entry comes back at once, without waiting for this copy's side work
    import threading

    release, finished = threading.Event(), []
    again_entry = ws.add_run(
        entry.id,
        load_run(DATA / "mini-bm25.trec"),
        admit=lambda stored: release.wait(30) and finished.append(stored),
    )
    assert again_entry.id == run_entry.id and again_entry.run is run_entry.run and not finished
    release.set()
    assert ws.stored_run(entry.id, load_run(DATA / "mini-bm25.trec").with_name("any name")) is again_entry


def test_alignments_are_made_once_under_threads_and_kept_in_an_lru(tmp_path, mini, monkeypatch) -> None:
    import threading
    import time

    from dashboard.data import alignments as module
    from dashboard.data.alignments import alignment_bytes

    dataset, bm25, dense = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset)
    a, b = ws.add_run(entry.id, bm25), ws.add_run(entry.id, dense)
    builds = []
    original = module.align

    def slow(*args, **kwargs):
        builds.append(args[1].name)
        time.sleep(0.05)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "align", slow)
    one = alignment_bytes(Alignments().get(entry, a))
    builds.clear()
    held = Alignments(max_bytes=int(one * 1.5))
    got = []
    threads = [threading.Thread(target=lambda: got.append(held.get(entry, a))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["mini-bm25"] and all(g is got[0] for g in got)
    held.get(entry, b)  # two do not fit in the budget: the least recently used goes
    assert (entry.id, a.id, a.name) not in held and (entry.id, b.id, b.name) in held
    assert held.held.nbytes <= held.held.budget and held.held.evicted == 1
    renamed = ws.rename_run(entry.id, b.id, "dense v2")
    assert held.get(entry, renamed).name == "dense v2"  # the name is in the key: a rename shows


def test_workspace_ids_and_names(tiny, tiny_runs) -> None:
    ws = Workspace()
    entry = ws.add_dataset(tiny, name="tiny")
    assert ws.add_dataset(tiny).id == entry.id == dataset_id(tiny)
    first = ws.add_run(entry.id, tiny_runs[0])
    shuffled = Run.from_frame(tiny_runs[0].frame.sample(frac=1.0, random_state=0), name="other name")
    assert run_id(shuffled) == first.id  # row order and name are not content
    assert ws.add_run(entry.id, shuffled) is first
    renamed = ws.add_run(entry.id, Run.from_frame(tiny_runs[1].frame, name="run-a"))
    assert renamed.name == "run-a (2)" and renamed.run.name == "run-a (2)"
    assert [r.name for r in ws.runs(entry.id)] == ["run-a", "run-a (2)"]
    assert ws.dataset_table()["runs"].tolist() == [2]
    assert ws.run_table(entry.id)["name"].tolist() == ["run-a", "run-a (2)"]


def test_a_renamed_dataset_or_run_is_one_object_for_every_caller(tmp_path, mini) -> None:
    """A rename must not hand out a new object at each access (one copy in memory per content)."""
    dataset, bm25, _ = mini
    ws = Workspace(Store(_sqlite(tmp_path)))
    entry = ws.add_dataset(dataset, name="renamed at upload")
    run_entry = ws.add_run(entry.id, bm25)
    assert entry.dataset is ws.dataset(entry.id).dataset and entry.dataset.name == "renamed at upload"  # type: ignore[union-attr]
    ws.rename_run(entry.id, run_entry.id, "later name")
    first, second = ws.run(entry.id, run_entry.id), ws.run(entry.id, run_entry.id)
    assert first is not None and second is not None and first.run is second.run and first.run.name == "later name"
