"""Caches bounded in bytes: the measure (``dashboard.data.sizes``), the LRU (``dashboard.data.bounded``), the
upload budget's rule (``dashboard.ui.memory``) and a run for another dataset refused before it is stored."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dashboard.data import samples
from dashboard.data.alignments import Alignments, RunRefused, alignment_bytes
from dashboard.data.bounded import ByteLRU
from dashboard.data.sizes import nbytes
from dashboard.data.workspace import Workspace
from dashboard.ui.memory import Budgets, over_budget
from ragmetrics import align
from ragmetrics.foundation.model import Run
from ragmetrics.store.database import Store

MiB = 1 << 20


def test_nbytes_counts_buffers_once_and_what_containers_hold() -> None:
    array = np.zeros(MiB, dtype=np.uint8)
    assert MiB <= nbytes(array) < MiB + 4096
    assert nbytes([array, array[10:], array.reshape(1024, 1024)]) < MiB + 4096  # views share the buffer
    arrow = pa.array(np.arange(MiB // 8, dtype=np.int64))
    assert MiB <= nbytes({"a": arrow, "b": pa.chunked_array([arrow])}) < MiB + 4096
    frame = pd.DataFrame({"x": np.arange(MiB // 8, dtype=np.int64), "s": ["abc" * 10] * (MiB // 8)})
    assert nbytes(frame) > 2 * MiB  # the object column's strings are counted (from a sample)
    assert nbytes({"kept": array}, exclude=[array]) < 4096


def test_byte_lru_keeps_within_its_budget_newest_first() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(10 * MiB, size=len)
    for i in range(5):
        lru.put(f"k{i}", bytes(3 * MiB))
    assert lru.keys() == ["k2", "k3", "k4"] and lru.nbytes == 9 * MiB and lru.evicted == 2
    assert lru.get("k2") is not None  # now the most recent
    lru.put("k5", bytes(3 * MiB))
    assert lru.keys() == ["k4", "k2", "k5"]
    assert lru.put("huge", bytes(11 * MiB)) is not None and "huge" not in lru  # handed back, not kept
    assert lru.nbytes <= lru.budget


def test_byte_lru_remeasures_a_value_that_grew() -> None:
    grown: list[bytes] = [bytes(MiB)]
    lru: ByteLRU[str, list[bytes]] = ByteLRU(4 * MiB, size=lambda v: sum(map(len, v)))
    lru.put("other", [bytes(2 * MiB)])
    lru.put("growing", grown)
    grown.append(bytes(2 * MiB))
    assert lru.remeasure("growing") == 3 * MiB
    assert lru.keys() == ["growing"] and lru.nbytes == 3 * MiB  # the other went to make room


def test_byte_lru_measures_again_only_when_the_growth_mark_changed() -> None:
    measured: list[int] = []

    def size(value: list[bytes]) -> int:
        measured.append(1)
        return sum(map(len, value))

    grown: list[bytes] = [bytes(MiB)]
    lru: ByteLRU[str, list[bytes]] = ByteLRU(8 * MiB, size=size, grown=len)
    lru.put("growing", grown)
    assert lru.remeasure("growing") == MiB and len(measured) == 1  # the same mark: not measured again
    grown.append(bytes(2 * MiB))
    assert lru.remeasure("growing") == 3 * MiB and len(measured) == 2 and lru.nbytes == 3 * MiB
    assert lru.remeasure("growing") == 3 * MiB and len(measured) == 2


def test_an_alignment_held_is_measured_again_when_it_computed_more() -> None:
    sample = next(samples.iter_samples(names=["scifact"]))
    held = Alignments()
    entry_run = sample.runs[0][0]
    key = ("ds", "run", entry_run.name)
    alignment = held._get(key, lambda: align(sample.dataset, entry_run))
    before = held.held.size_of(key)
    assert before == alignment_bytes(alignment)
    assert held._get(key, lambda: pytest.fail("made again")) is alignment and held.held.size_of(key) == before
    alignment.values(["ndcg@10", "recall@100"])  # per-query values computed and kept
    held._get(key, lambda: pytest.fail("made again"))
    assert held.held.size_of(key) == alignment_bytes(alignment) > before


def test_release_drops_only_what_the_ended_session_alone_used() -> None:
    session = {"id": None}
    lru: ByteLRU[str, bytes] = ByteLRU(100 * MiB, size=len, user=lambda: session["id"])
    lru.put("seeded", bytes(MiB))  # outside any session
    session["id"] = "a"
    lru.put("mine", bytes(MiB))
    lru.put("shared", bytes(MiB))
    session["id"] = "b"
    lru.get("shared")
    assert lru.users() == {"a", "b"}
    assert lru.release("a") == MiB
    assert lru.keys() == ["seeded", "shared"]
    assert lru.release("b") == MiB and lru.keys() == ["seeded"]


def test_byte_lru_makes_a_value_once_under_threads() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(10 * MiB, size=len)
    made: list[int] = []
    start = threading.Barrier(4)

    def make() -> bytes:
        made.append(1)
        return bytes(10)

    def worker() -> None:
        start.wait()
        lru.get_or_make("k", make)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1]


def test_upload_budget_per_session_and_in_total() -> None:
    limits = Budgets(upload_session=10 * MiB, upload_total=25 * MiB)
    assert over_budget("a", 4 * MiB, {"a": 6 * MiB}, limits) is None
    reason = over_budget("a", 5 * MiB, {"a": 6 * MiB}, limits)
    assert reason is not None and "a session may hold 10 MiB (RAGMETRICS_UPLOAD_SESSION_BYTES)" in reason
    reason = over_budget("c", 5 * MiB, {"a": 9 * MiB, "b": 9 * MiB, "c": 3 * MiB}, limits)
    assert reason is not None and "limit of 25 MiB (RAGMETRICS_UPLOAD_TOTAL_BYTES)" in reason


def test_budgets_read_sizes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_UPLOAD_SESSION_BYTES", "200MB")
    monkeypatch.setenv("RAGMETRICS_CACHE_BYTES", "1GiB")
    budgets = Budgets.read()
    assert budgets.upload_session == 200 * MiB and budgets.upload_total == Budgets().upload_total
    assert budgets.alignments + budgets.objects + budgets.frames == budgets.cache == 1 << 30


def test_a_run_for_another_dataset_is_refused_before_it_is_stored(tiny, tmp_path) -> None:
    workspace = Workspace(Store(f"sqlite:///{tmp_path / 'ragmetrics.sqlite'}"))  # not the session's store
    entry = workspace.add_dataset(tiny)
    foreign = Run.from_frame(
        pd.DataFrame({"query_id": ["x1", "x2"], "doc_id": ["d1", "d2"], "score": [1.0, 0.5]}), name="foreign"
    )
    with pytest.raises(RunRefused, match=r"none of its queries is a query of dataset .* Not stored") as refused:
        Alignments().add_run(workspace, entry, foreign)
    assert "--allow-no-overlap" not in str(refused.value)  # the dashboard's words, not the command line's
    assert workspace.runs(entry.id) == []


def test_what_a_gzip_inflates_to_counts_against_the_upload_budget() -> None:
    """Was: a 20 MB gzip was inflated to the file limit (1 GiB for uploads) before it was refused, and ten
    sessions at once held ten times that. Its bytes now count against the session's and the server's upload
    budgets as they are produced: it is refused as soon as either is passed, and the bytes are released."""
    import gzip
    import tracemalloc

    from dashboard.ui import memory
    from ragmetrics.foundation.errors import RagMetricsError
    from ragmetrics.io import load_run
    from ragmetrics.io.limits import Limits

    line = b"q1 Q0 D1 1 1.0 bomb\n"
    bomb = gzip.compress(line * ((256 * MiB) // len(line)), compresslevel=6, mtime=0)  # 256 MiB inflated
    limits = Limits(max_bytes=1 << 30, max_ratio=1_000_000)  # the file's own limits would let it through
    gate = memory.UploadBudget(None, limits=lambda: Budgets(upload_session=48 * MiB, upload_total=80 * MiB))  # type: ignore[arg-type]
    try:
        tracemalloc.start()
        with pytest.raises(RagMetricsError) as caught, memory.counted_inflation("session-a"):
            load_run(bomb, filename="bomb.trec.gz", limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        message = str(caught.value)
        assert message.startswith("bomb.trec.gz: decompressed, it takes this session's uploads past 48 MiB")
        assert "RAGMETRICS_UPLOAD_SESSION_BYTES" in message
        assert peak < 48 * MiB + 16 * MiB, peak  # stopped at the budget, not at 256 MiB
        assert gate._inflating == {}  # released

        # another session inflating meanwhile counts against the server's budget
        started, finish = threading.Event(), threading.Event()

        def hold() -> None:
            from ragmetrics.io.limits import inflation_meter

            with memory.counted_inflation("session-b"):
                meter = inflation_meter()  # this thread's
                assert meter is not None
                meter("other.trec.gz", 40 * MiB)
                started.set()
                finish.wait(30)

        other = threading.Thread(target=hold)
        other.start()
        assert started.wait(30)
        try:
            with (
                pytest.raises(RagMetricsError, match="takes the server's uploads past 80 MiB"),
                memory.counted_inflation("session-a"),
            ):
                load_run(bomb, filename="bomb.trec.gz", limits=limits)
        finally:
            finish.set()
            other.join()
        assert gate._inflating == {}
        small = gzip.compress(line * 1000)
        with memory.counted_inflation("session-a"):
            assert len(load_run(small, filename="small.trec.gz", limits=limits)) == 1000  # within the budget: read
    finally:
        memory.UploadBudget.latest = None


def test_what_a_beir_zip_inflates_to_counts_against_the_upload_budget() -> None:
    """Was: a zip's members were capped by the file's ratio only, never counted against the upload budgets a gzip
    is counted against: a 15 MB BEIR zip of a 300 MiB corpus loaded in a session of 64 MiB."""
    import io
    import json
    import tracemalloc
    import zipfile

    from dashboard.ui import memory
    from ragmetrics.foundation.errors import RagMetricsError
    from ragmetrics.io import load_dataset
    from ragmetrics.io.limits import Limits

    record = json.dumps({"_id": "d1", "title": "", "text": "a passage of text " * 50}) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("beir/corpus.jsonl", record * ((128 * MiB) // len(record)))  # 128 MiB inflated
        archive.writestr("beir/queries.jsonl", json.dumps({"_id": "q1", "text": "a question"}) + "\n")
        archive.writestr("beir/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    limits = Limits(max_bytes=1 << 30, max_ratio=1_000_000)
    gate = memory.UploadBudget(None, limits=lambda: Budgets(upload_session=48 * MiB, upload_total=80 * MiB))  # type: ignore[arg-type]
    try:
        tracemalloc.start()
        with pytest.raises(RagMetricsError) as caught, memory.counted_inflation("session-a"):
            load_dataset(buffer.getvalue(), filename="beir.zip", limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert "decompressed, it takes this session's uploads past 48 MiB" in str(caught.value), str(caught.value)
        assert peak < 48 * MiB + 24 * MiB, peak  # stopped at the budget, not at 128 MiB
        assert gate._inflating == {}
    finally:
        memory.UploadBudget.latest = None
