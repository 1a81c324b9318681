"""The upload helpers without a server: the uploads' cheap deep copy and the view an upload opens."""

from __future__ import annotations

import copy

from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

from dashboard.core.share import ViewState
from dashboard.ui import ingest
from ragmetrics.io import FORMATS


def test_a_deep_copied_upload_shares_its_bytes_until_written() -> None:
    data = b"q1 Q0 d1 1 2.0 run\n" * 1000
    upload = UploadedFile(UploadedFileRec("id-1", "run.trec", "text/plain", data), None)  # type: ignore[arg-type]
    upload.seek(7)
    [clone] = copy.deepcopy([upload])  # what Streamlit does to a widget's value on every run
    assert clone is not upload and clone.getvalue() is data  # no copy of the bytes
    assert (clone.file_id, clone.name, clone.type, clone.size, clone.tell()) == (
        "id-1",
        "run.trec",
        "text/plain",
        len(data),
        7,
    )
    clone.write(b"XX")  # copy-on-write: the original is untouched
    assert upload.getvalue() is data and clone.getvalue()[7:9] == b"XX"


def _outcome(ident: str, ok: bool = True, fresh: bool = True) -> ingest.Outcome:
    return ingest.Outcome("f", ok, "m", ident, fresh=fresh)


class _Workspace:
    def __init__(self, runs: set[str]) -> None:
        self.stored = runs

    def run(self, dataset: str, ident: str) -> object | None:
        return object() if ident in self.stored else None


def test_an_upload_opens_what_it_added() -> None:
    view = ViewState(dataset="d1", runs=("r1", "gone"), category="c")
    opened = ingest.view_with_dataset(view, _outcome("d2"))
    assert opened is not None and (opened.dataset, opened.runs, opened.category) == ("d2", (), None)
    assert ingest.view_with_dataset(view, _outcome("d1")) is None  # already open
    assert ingest.view_with_dataset(view, _outcome("d2", fresh=False)) is None  # shown again, not added now
    assert ingest.view_with_dataset(view, _outcome("d2", ok=False)) is None

    workspace = _Workspace({"r1", "r2", "r3"})
    added = ingest.view_with_runs(view, [_outcome("r2"), _outcome("bad", ok=False), _outcome("r3")], "d1", workspace)  # type: ignore[arg-type]
    assert added is not None and added.runs == ("r1", "r2", "r3")  # kept the stored selection, dropped the deleted one
    again = ingest.view_with_runs(view, [_outcome("r1")], "d1", workspace)  # type: ignore[arg-type]
    assert again is not None and again.runs == ("r1",)
    assert ingest.view_with_runs(view, [_outcome("r2", fresh=False)], "d1", workspace) is None  # type: ignore[arg-type]


def test_the_uploaders_accept_every_extension_of_the_formats_table() -> None:
    """The file types come from ragmetrics.io.FORMATS: .tab and .qrel qrels upload too (and .gz of any)."""
    for kind, types in (("dataset", ingest.DATASET_TYPES), ("run", ingest.RUN_TYPES)):
        expected = {ext.lstrip(".") for f in FORMATS if f.kind == kind for ext in f.extensions}
        assert set(types) == expected | {"gz"}
    assert {"tab", "qrel", "qrels", "zip"} <= set(ingest.DATASET_TYPES)
    assert {"tab", "trec", "run"} <= set(ingest.RUN_TYPES)
