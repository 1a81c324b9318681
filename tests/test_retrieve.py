"""ragmetrics.retrieve with Python callables: the run, retries, timeouts, failures, the cache, repeats, metadata."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics import Dataset, RagMetricsError, evaluate
from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsWarning
from ragmetrics.retrieve import Hit, ResponseCache, retrieve
from ragmetrics.retrieve.adapters import CallableAdapter, hits_from

DOCS = [f"d{i}" for i in range(20)]
QUERIES = pd.DataFrame({"query_id": [f"q{i}" for i in range(12)], "query": [f"question {i}" for i in range(12)]})
QRELS = pd.DataFrame({"query_id": [f"q{i}" for i in range(12)], "doc_id": [f"d{i}" for i in range(12)], "relevance": 1})
DATASET = Dataset.from_frames(QRELS, QUERIES, name="toy")


def ranked(query: str, k: int) -> list[tuple[str, float]]:
    """The relevant document first for even queries, third for odd ones."""
    i = int(query.split()[-1])
    order = [d for d in DOCS if d != f"d{i}"]
    order.insert(0 if i % 2 == 0 else 2, f"d{i}")
    return [(d, float(len(order) - r)) for r, d in enumerate(order)][:k]


class Counting:
    def __init__(self, fn=ranked):
        self.fn = fn
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, query: str, k: int):
        with self.lock:
            self.calls[query] += 1
            n = self.calls[query]
        return self.fn(query, k, n) if self.fn is not ranked else ranked(query, k)


def test_a_callables_run_evaluates_like_any_other(tmp_path):
    result = retrieve(DATASET, ranked, k=10, cache_dir=tmp_path)
    assert result.run.name == "ranked" and len(result.run) == 120
    assert result.run.frame.groupby("query_id")["rank"].apply(list).iloc[0] == list(range(1, 11))
    mrr = evaluate(DATASET, result.run, ["mrr"]).runs["ranked"].means["mrr"]
    assert mrr == pytest.approx((6 * 1 + 6 / 3) / 12)
    meta = result.metadata
    assert meta["counts"]["answered"] == 12 and meta["counts"]["failed"] == 0 and meta["k"] == 10
    assert meta["retriever"]["kind"] == "callable" and meta["retriever"]["identity"].endswith(":ranked")
    assert set(meta["latency"]) == {"count", "p50_ms", "p95_ms", "max_ms", "mean_ms"}
    assert len(result.latencies) == 12 and (result.latencies >= 0).all()
    decoded = json.loads(result.to_json())
    assert decoded["counts"] == meta["counts"] and len(decoded["calls"]) == 12
    assert list(result.calls_frame().columns) == [
        "query_id",
        "repeat",
        "latency",
        "attempts",
        "cached",
        "hits",
        "error",
    ]


def test_what_a_callable_may_return():
    where = "t"
    assert hits_from([("a", 1), ["b", "2.5", "text"], "c", {"id": 7, "score": None, "source_doc": "S"}], where) == [
        Hit("a", 1.0),
        Hit("b", 2.5, "text"),
        Hit("c"),
        Hit("7", None, None, "S"),
    ]
    assert hits_from([{"meta": {"key": "x"}, "score": 1}], where, doc_id_field="meta.key") == [Hit("x", 1.0)]
    for bad, message in [
        (None, "returned None"),
        ({"doc_id": "a"}, "expected a ranked list"),
        ([3.5], "expected .doc_id, score. pairs"),
        ([(None, 1)], "expected a document id"),
        ([("a", "high")], "is not a number"),
        ([{"score": 1}], "'doc_id' or 'id'"),
        ([("", 1)], "empty"),
    ]:
        with pytest.raises(RagMetricsError, match=message):
            hits_from(bad, where)


def test_ids_only_a_one_argument_function_an_async_one():
    def ids(query):  # no k: cut by the runner
        return [d for d, _ in ranked(query, 100)]

    result = retrieve(DATASET, ids, k=5, cache=False)
    assert not result.run.has_scores and len(result.run) == 60
    assert result.run.frame["score"].tolist()[:5] == [-1.0, -2.0, -3.0, -4.0, -5.0]

    async def coroutine(query, k):
        return [{"doc_id": d, "score": s, "text": f"text of {d}"} for d, s in ranked(query, k)]

    async_run = retrieve(DATASET, coroutine, k=5, cache=False).run
    assert async_run.frame["text"].iloc[0].startswith("text of") and async_run.has_scores


def test_errors_are_retried_with_backoff_and_counted():
    def flaky(query, k, n):
        if n <= 2:
            raise ConnectionError("reset by peer")
        return ranked(query, k)

    fn = Counting(flaky)
    result = retrieve(DATASET, fn, k=5, cache=False, retries=3, backoff=0.001, concurrency=3)
    assert not result.failed and all(n == 3 for n in fn.calls.values())
    assert result.metadata["counts"]["retries"] == 24
    assert {c.attempts for c in result.calls} == {3}


def test_a_query_that_still_fails_is_listed_not_an_empty_ranking():
    def broken_for_q3(query, k, n):
        if query == "question 3":
            raise RuntimeError("index shard down")
        if query == "question 5":
            return []
        return ranked(query, k)

    fn = Counting(broken_for_q3)
    result = retrieve(DATASET, fn, k=5, cache=False, retries=2, backoff=0.001)
    assert [(c.query_id, c.attempts, c.error) for c in result.failed] == [("q3", 3, "RuntimeError: index shard down")]
    assert "q3" not in set(result.run.frame["query_id"])
    assert [c.query_id for c in result.empty] == ["q5"]
    counts = result.metadata["counts"]
    assert (counts["failed"], counts["empty"], counts["answered"], counts["retries"]) == (1, 1, 11, 2)
    assert result.metadata["failed"] == [{"query_id": "q3", "repeat": 0, "error": "RuntimeError: index shard down"}]
    assert result.metadata["empty_queries"] == ["q5"]


def test_a_bad_answer_is_not_retried_and_a_dead_retriever_stops_early():
    def bad_shape(query, k, n):
        return {"results": []} if query == "question 0" else ranked(query, k)

    fn = Counting(bad_shape)
    result = retrieve(DATASET, fn, k=5, cache=False, backoff=0.001, concurrency=1)
    assert fn.calls["question 0"] == 1 and "expected a ranked list" in result.failed[0].error

    def dead(query, k):
        raise ConnectionRefusedError("nobody listening")

    with pytest.raises(RagMetricsError, match=r"failed on the first 5 queries called .*nobody listening"):
        retrieve(DATASET, dead, k=5, cache=False, retries=0, concurrency=1)


def test_a_query_failing_again_on_resume_is_listed(tmp_path):
    def broken_for_q3(query, k):
        if query == "question 3":
            raise RuntimeError("still down")
        return ranked(query, k)

    retrieve(DATASET, broken_for_q3, k=5, cache_dir=tmp_path, retries=0)
    again = retrieve(DATASET, broken_for_q3, k=5, cache_dir=tmp_path, retries=0)  # only q3 is called: it fails
    assert again.metadata["counts"]["called"] == 1 and [c.query_id for c in again.failed] == ["q3"]


def test_a_call_past_its_timeout_fails_and_is_tried_again():
    def slow_once(query, k, n):
        if query == "question 1" and n == 1:
            time.sleep(2)
        return ranked(query, k)

    fn = Counting(slow_once)
    started = time.perf_counter()
    result = retrieve(DATASET, fn, k=5, cache=False, timeout=0.2, retries=1, backoff=0.001)
    assert time.perf_counter() - started < 1.5
    assert not result.failed and result.calls[1].attempts == 2
    fn = Counting(slow_once)
    result = retrieve(DATASET, fn, k=5, cache=False, timeout=0.2, retries=0)
    assert result.failed[0].query_id == "q1" and "timed out after 0.2 s" in result.failed[0].error


def test_concurrency_is_bounded():
    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    def watched(query, k):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return ranked(query, k)

    retrieve(DATASET, watched, k=5, cache=False, concurrency=3)
    assert state["most"] == 3


def test_the_cache_answers_again_for_nothing_and_resumes_a_stopped_run(tmp_path):
    fn = Counting()
    first = retrieve(DATASET, fn, k=5, cache_dir=tmp_path, concurrency=1)
    assert sum(fn.calls.values()) == 12
    again = retrieve(DATASET, fn, k=5, cache_dir=tmp_path)
    assert sum(fn.calls.values()) == 12 and again.run.table.equals(first.run.table)
    assert again.metadata["counts"]["cached"] == 12 and all(c.cached and c.attempts == 0 for c in again.calls)
    assert again.metadata["latency"]["count"] == 12  # the latencies the answers had
    retrieve(DATASET, fn, k=6, cache_dir=tmp_path)  # another k: other answers
    assert sum(fn.calls.values()) == 24
    retrieve(DATASET, fn, k=5, cache_dir=tmp_path, cache="refresh")
    assert sum(fn.calls.values()) == 36
    retrieve(DATASET, fn, k=5, cache_dir=tmp_path, cache_key="ranked-v2")  # a new name: a new key
    assert sum(fn.calls.values()) == 48

    # a progress hook that stops the run: what was answered is stored; the next run asks only the rest
    fresh = tmp_path / "fresh"
    seen = []

    def stop_after_five(done, total):
        seen.append((done, total))
        if done == 5:
            raise KeyboardInterrupt

    fn = Counting()
    with pytest.raises(KeyboardInterrupt):
        retrieve(DATASET, fn, k=5, cache_dir=fresh, concurrency=1, progress=stop_after_five)
    assert seen[0] == (0, 12) and seen[-1] == (5, 12)
    stored = ResponseCache(fresh)
    assert stored.count() >= 5
    stored.close()
    stored = ResponseCache(fresh)
    answered = set(stored.queries())
    stored.close()
    resumed = retrieve(DATASET, fn, k=5, cache_dir=fresh)
    # every answer that had arrived is stored (the answering thread writes it), so nothing is asked twice
    assert len(answered) >= 5 and all(n == 1 for n in fn.calls.values()) and len(fn.calls) == 12
    assert resumed.metadata["counts"]["cached"] == len(answered) and resumed.run.table.equals(first.run.table)


def test_queries_of_one_text_are_asked_once_and_replay_alike(tmp_path):
    """Was: each was called, both answers written to one cache row (the last won), and a replay reported other
    latencies than the run that made the calls."""
    queries = QUERIES.assign(query=[f"question {i % 6}" for i in range(12)])  # q6..q11 repeat q0..q5's texts
    dataset = Dataset.from_frames(QRELS, queries, name="twice")
    fn = Counting()
    first = retrieve(dataset, fn, k=5, cache_dir=tmp_path, repeat=2)
    assert sum(fn.calls.values()) == 12 and set(fn.calls.values()) == {2}  # 6 texts x 2 repeats
    assert first.metadata["counts"]["called"] == 12 and first.metadata["counts"]["cached"] == 12
    shared = {(c.query_id, c.repeat): c.latency for c in first.calls}
    assert all(shared[f"q{i}", r] == shared[f"q{i + 6}", r] for i in range(6) for r in range(2))
    again = retrieve(dataset, fn, k=5, cache_dir=tmp_path, repeat=2)
    assert sum(fn.calls.values()) == 12
    assert {(c.query_id, c.repeat): c.latency for c in again.calls} == shared
    assert again.runs[0].table.equals(first.runs[0].table)


def test_scores_that_rise_along_the_ranking_are_warned_of_as_distances(tmp_path):
    """A run is evaluated by score, higher first: a retriever answering distances would be read in reverse."""

    def distances(query: str, k: int) -> list[tuple[str, float]]:
        return [(d, float(r)) for r, (d, _) in enumerate(ranked(query, k))]  # 0, 1, 2...: lower is better

    with pytest.warns(RagMetricsWarning, match=r"in 12 of 12 answers the scores rise along the order it gave"):
        retrieve(DATASET, distances, k=5, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagMetricsWarning)
        retrieve(DATASET, ranked, k=5, cache=False)  # scores that fall: nothing said


def test_cache_false_writes_nothing(tmp_path):
    retrieve(DATASET, ranked, k=5, cache=False, cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_repeat_reports_the_noise_per_query_and_on_every_mean(tmp_path):
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def jittery(query, k):
        """Queries 1 to 3 swap their first two documents on every second call; the others never change."""
        order = ranked(query, 20)
        with lock:
            calls[query] += 1
            if int(query.split()[-1]) in (1, 2, 3) and calls[query] % 2 == 0:
                order = [order[1], order[0], *order[2:4], ("d99", order[4][1]), *order[5:]]
        return order[:k]

    result = retrieve(DATASET, jittery, k=10, repeat=4, cache_dir=tmp_path, noise_metrics=["mrr", "ndcg@10"])
    assert len(result.runs) == 4 and [r.name for r in result.runs] == ["jittery", "jittery#2", "jittery#3", "jittery#4"]
    noise = result.noise
    assert noise["repeats"] == 4 and noise["queries"] == 12 and noise["interval"] == "min-max of the repeat means"
    for metric in ("mrr", "ndcg@10"):
        m = noise["metrics"][metric]
        assert m["low"] <= m["mean"] <= m["high"] and m["spread"] == pytest.approx(m["high"] - m["low"])
        assert len(m["repeat_means"]) == 4
    steady = [q for q, v in noise["per_query"].items() if not v["changed"]]
    assert {"q0", "q4", "q11"} <= set(steady)
    assert all(noise["per_query"][q]["jaccard"] == 1.0 and noise["per_query"][q]["std"]["mrr"] == 0 for q in steady)
    assert noise["queries_changed"] == 3 and noise["jaccard_at_k"]["min"] < 1
    json.loads(result.to_json())  # serialisable
    # each repeat is cached on its own: a second run calls nothing
    calls = Counter()

    def never(query, k):
        calls[query] += 1
        return []

    identity = result.metadata["retriever"]["identity"]
    cached = retrieve(
        DATASET, never, k=10, repeat=4, cache_dir=tmp_path, cache_key=identity, noise_metrics=["mrr", "ndcg@10"]
    )
    assert not calls and cached.noise == noise


def test_queries_without_text():
    no_text = Dataset.from_frames(QRELS)
    with pytest.raises(RagMetricsError, match="no text"):
        retrieve(no_text, ranked, cache=False)
    some = Dataset.from_frames(QRELS, QUERIES.assign(query=[""] + list(QUERIES["query"][1:])))
    result = retrieve(some, ranked, cache=False)
    assert [(c.query_id, c.error) for c in result.failed] == [("q0", "the query has no text")]


def test_bad_parameters():
    for kwargs in ({"k": 0}, {"concurrency": 0}, {"repeat": 0}, {"retries": -1}, {"timeout": 0}, {"cache": "x"}):
        with pytest.raises(RagMetricsError):
            retrieve(DATASET, ranked, **kwargs)
    with pytest.raises(RagMetricsError, match="expected 'bm25', an http"):
        retrieve(DATASET, "no-such-thing", cache=False)
    with pytest.raises(RagMetricsError, match="cannot import"):
        retrieve(DATASET, "no_such_module_here:fn", cache=False)
    with pytest.raises(RagMetricsError, match="needs the dataset's corpus"):
        retrieve(DATASET, "bm25", cache=False)


def _toy_files(tmp_path: Path) -> list[str]:
    qrels, queries = tmp_path / "qrels.tsv", tmp_path / "queries.jsonl"
    QRELS.assign(x=0)[["query_id", "x", "doc_id", "relevance"]].to_csv(qrels, sep=" ", header=False, index=False)
    QUERIES.rename(columns={"query_id": "id", "query": "text"}).to_json(queries, orient="records", lines=True)
    return ["--dataset", str(qrels), "--queries", str(queries)]


def test_the_command_warns_when_the_run_it_wrote_does_not_meet_the_qrels(tmp_path, monkeypatch):
    """A retriever whose ids name other documents than the qrels' (here a prefix) writes its run, and is told at once
    that eval would refuse it, and why, instead of at the next command."""
    (tmp_path / "prefixed_retrievers_for_test.py").write_text(
        "from tests.test_retrieve import ranked\n"
        "def prefixed(query, k):\n"
        "    return [('doc-' + d, s) for d, s in ranked(query, k)]\n"
        "def make():\n"
        "    return ranked\n"
    )
    monkeypatch.chdir(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    out, err = io.StringIO(), io.StringIO()
    argv = ["retrieve", *_toy_files(tmp_path), "--retriever", "prefixed_retrievers_for_test:prefixed", "-o", "p.trec"]
    assert main([*argv, *cache], out=out, err=err) == 0, err.getvalue()
    warning = err.getvalue()
    assert "warning: eval will refuse this run as written: run 'p': its document ids do not meet the qrels" in warning
    assert "doc-d" in warning and (tmp_path / "p.trec").read_text().startswith("q")

    out, err = io.StringIO(), io.StringIO()
    argv = ["retrieve", *_toy_files(tmp_path), "--retriever", "prefixed_retrievers_for_test:make", "-o", "m.trec"]
    assert main([*argv, *cache], out=out, err=err) == 0, err.getvalue()
    assert "warning" not in err.getvalue()


def test_the_command_prints_the_summary_and_exits_1_when_queries_failed(tmp_path, monkeypatch):
    (tmp_path / "toy_retrievers_for_test.py").write_text(
        "from tests.test_retrieve import ranked\n"
        "def broken(query, k):\n"
        "    if query == 'question 2':\n"
        "        raise ValueError('no shard')\n"
        "    return ranked(query, k)\n"
        "def make():\n"
        "    return ranked\n"
    )
    monkeypatch.chdir(tmp_path)
    data = _toy_files(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "cache"), "--retries", "0"]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out, err = io.StringIO(), Terminal()
    code = main(
        ["retrieve", *data, "--retriever", "toy_retrievers_for_test:make", "-o", "r.trec", *cache], out=out, err=err
    )
    assert code == 0, err.getvalue()
    assert "retrieved 12 queries x 1 with callable 'make'" in out.getvalue()
    assert "retrieve:" in err.getvalue() and "/12 [" in err.getvalue()  # tqdm's bar on a terminal
    meta = json.loads((tmp_path / "r.trec.json").read_text())
    assert meta["retriever"]["identity"] == "callable:toy_retrievers_for_test:make"

    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "retrieve",
            *data,
            "--retriever",
            "toy_retrievers_for_test:broken",
            "-o",
            "b.trec",
            "--meta-out",
            "b.json",
            *cache,
        ],
        out=out,
        err=err,
    )
    assert code == 1
    assert "errors 1, empty 0, retries 0" in out.getvalue()
    assert "1 call(s) failed and are not in the run: q2: ValueError: no shard" in err.getvalue()
    assert "q2" not in (tmp_path / "b.trec").read_text().split()
    assert json.loads((tmp_path / "b.json").read_text())["failed"][0]["query_id"] == "q2"

    # -o -: the run on standard output for a pipe, the report on standard error, no metadata unless asked
    out, err = io.StringIO(), io.StringIO()
    code = main(["retrieve", *data, "--retriever", "toy_retrievers_for_test:make", "-o", "-", *cache], out=out, err=err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert len(lines) == len((tmp_path / "r.trec").read_text().splitlines()) and lines[0].split()[1] == "Q0"
    assert "retrieved 12 queries x 1" in err.getvalue() and "wrote standard output (12 queries" in err.getvalue()
    assert "the metadata not written: give --meta-out" in err.getvalue() and not (tmp_path / "-.json").exists()
    assert not (tmp_path / "-").exists()

    out, err = io.StringIO(), io.StringIO()
    code = main(["retrieve", *data, "--retriever", "nothing", "-o", "n.trec"], out=out, err=err)
    assert (
        code == 2
        and err.getvalue().startswith("ragmetrics: error: retriever 'nothing'")
        and err.getvalue().count("\n") == 1
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(["retrieve", *data, "--retriever", "bm25", "--header", "nocolon", "-o", "n.trec"], out=out, err=err)
    assert code == 2 and "'Name: value'" in err.getvalue()

    # the run and its metadata never replace an input or each other, and nothing is called or written first
    qrels = Path(data[1])
    before = qrels.read_bytes()
    for outputs, said in (
        (["-o", str(qrels)], f"--output {qrels}: is also read as --dataset; writing it would destroy that input"),
        (["-o", "m.trec", "--meta-out", str(qrels)], f"--meta-out {qrels}: is also read as --dataset"),
        (["-o", "b.trec", "--meta-out", "b.trec"], "--meta-out b.trec: is also written as --output; one would replace"),
    ):
        out, err = io.StringIO(), io.StringIO()
        code = main(["retrieve", *data, "--retriever", "toy_retrievers_for_test:make", *outputs, *cache], out, err)
        assert code == 2 and said in err.getvalue() and err.getvalue().count("\n") == 1, err.getvalue()
    assert qrels.read_bytes() == before and json.loads((tmp_path / "b.json").read_text())["failed"]  # as it was
    # a timeout that is no number of seconds is refused before any call: the metadata beside the run stays whole
    for timeout in ("nan", "inf", "-1"):
        out, err = io.StringIO(), io.StringIO()
        argv = ["retrieve", *data, "--retriever", "toy_retrievers_for_test:broken", "-o", "b.trec", "--meta-out",
                "b.json", "--timeout", timeout, *cache]  # fmt: skip
        assert main(argv, out, err) == 2 and "timeout must be a finite number of seconds above 0" in err.getvalue()
    assert json.loads((tmp_path / "b.json").read_text())["failed"][0]["query_id"] == "q2"


def test_eval_imports_none_of_the_retrieval_packages():
    root = Path(__file__).parent / "data" / "scifact"
    code = (
        "import sys, io\n"
        "from ragmetrics.cli import main\n"
        f"main(['eval', '--dataset', {str(root / 'qrels.tsv')!r}, '--run', {str(root / 'bm25-stem.trec.gz')!r}], out=io.StringIO())\n"
        "heavy = ('httpx', 'bm25s', 'Stemmer', 'jieba', 'tqdm', 'langchain_core', 'llama_index', 'ragmetrics.retrieve')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_adapter_object_is_used_as_it_is():
    adapter = CallableAdapter(ranked, name="mine")
    result = retrieve(DATASET, adapter, k=3, cache=False)
    assert result.run.name == "mine" and result.metadata["retriever"]["identity"] == "callable:mine"


def test_a_document_named_twice_in_an_answer_is_written_once(tmp_path):
    """Was: a retriever of chunks named by their document's id (d3 for each of its chunks) had every repeat written
    into the run file, which trec_eval refuses; the first (the best-ranked) is kept, the rest counted and said."""

    def chunks_as_documents(query: str, k: int) -> list[tuple[str, float]]:
        i = int(query.split()[-1])
        return [(f"d{i}", 3.0), ("d19", 2.5), (f"d{i}", 2.0), ("d18", 1.0)]

    result = retrieve(DATASET, chunks_as_documents, k=4, cache_dir=tmp_path)
    ranks = result.run.frame.groupby("query_id")["doc_id"].apply(list)
    assert ranks["q3"] == ["d3", "d19", "d18"] and len(result.run) == 36
    assert result.metadata["counts"]["repeated_hits"] == 12
    queries = tmp_path / "queries.jsonl"
    QUERIES.rename(columns={"query": "text"}).to_json(queries, orient="records", lines=True)
    qrels = tmp_path / "qrels.tsv"
    QRELS.assign(iteration=0)[["query_id", "iteration", "doc_id", "relevance"]].to_csv(
        qrels, sep=" ", header=False, index=False
    )
    module = tmp_path / "twice_retriever.py"
    module.write_text(
        "def search(query, k):\n"
        "    i = int(query.split()[-1])\n"
        "    return [(f'd{i}', 3.0), ('d19', 2.5), (f'd{i}', 2.0)]\n"
    )
    code = subprocess.run(
        [sys.executable, "-m", "ragmetrics", "retrieve", "--dataset", str(qrels), "--queries", str(queries),
         "--retriever", "twice_retriever:search", "--k", "3", "-o", str(tmp_path / "twice.trec"),
         "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert code.returncode == 0, code.stderr
    assert "12 hit(s) named a document the answer had named before: the first kept" in code.stdout + code.stderr
    lines = (tmp_path / "twice.trec").read_text().splitlines()
    assert len(lines) == 24 and len({tuple(line.split()[:3:2]) for line in lines}) == 24
