"""``ragmetrics retrieve`` against a real HTTP server on 127.0.0.1 serving the SciFact BM25 run, with delays and 500s.

The stub answers each query with the run's ranking for it and counts calls per query; the first call of every
20th query is answered 500. Killed mid-run (a real subprocess, SIGKILL) and started again, the command calls
no query whose answer it had stored.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.retrieve.http import HttpAdapter, fill, parse_request, parse_response

SCIFACT = Path(__file__).parent / "data" / "scifact"
QRELS = str(SCIFACT / "qrels.tsv")
QUERIES = str(SCIFACT / "queries.jsonl")
BM25 = SCIFACT / "bm25-stem.trec.gz"


def _scifact_answers() -> tuple[dict[str, list[dict]], list[str]]:
    texts = {}
    for line in open(QUERIES, encoding="utf-8"):
        record = json.loads(line)
        texts[record["id"]] = record["text"]
    ranked: dict[str, list[dict]] = {}
    with gzip.open(BM25, "rt", encoding="utf-8") as handle:
        for line in handle:
            qid, _, doc, rank, score, _ = line.split()
            ranked.setdefault(texts[qid], []).append({"doc_id": doc, "score": float(score), "rank": int(rank)})
    for hits in ranked.values():
        hits.sort(key=lambda h: h["rank"])
    return ranked, list(texts.values())


ANSWERS, QUERY_TEXTS = _scifact_answers()
FAIL_FIRST = {q for i, q in enumerate(QUERY_TEXTS) if i % 20 == 0}


class Stub:
    """A ThreadingHTTPServer on 127.0.0.1: POST {"query", "k"} -> {"results": [...]}; counts every call."""

    def __init__(self, delay: tuple[float, float] = (0.0, 0.005), fail_first: set[str] = FAIL_FIRST) -> None:
        self.delay = delay
        self.fail_first = fail_first
        self.calls: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.served_500 = 0
        self.lock = threading.Lock()
        self.rng = random.Random(7)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.handle(self, body["query"], int(body["k"]))

            def do_GET(self):
                split = urlsplit(self.path)
                params = {k: v[0] for k, v in parse_qs(split.query).items()}
                if split.path == "/es":
                    hits = ANSWERS.get(params["q"], [])[: int(params["size"])]
                    return self._send(
                        200, {"hits": {"hits": [{"_id": h["doc_id"], "_score": h["score"]} for h in hits]}}
                    )
                if split.path == "/bad":
                    return self._send(404, {"error": "no such index"})
                return stub.handle(self, params["q"], int(params["k"]))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client killed mid-answer: nothing to report

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def handle(self, request, query: str, k: int) -> None:
        with self.lock:
            self.calls[query] += 1
            first = self.calls[query] == 1
            pause = self.rng.uniform(*self.delay)
        time.sleep(pause)
        if first and query in self.fail_first:
            with self.lock:
                self.served_500 += 1
            request._send(500, {"error": "try again"})
            return
        hits = [{"doc_id": h["doc_id"], "score": h["score"]} for h in ANSWERS.get(query, [])[:k]]
        with self.lock:
            self.answered[query] += 1  # counted before it is sent: the client cannot have it uncounted
        request._send(200, {"results": hits})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    yield server
    server.close()


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def ndcg10(run: str) -> str:
    code, out, err = cli("eval", "--dataset", QRELS, "--run", run, "-m", "ndcg@10")
    assert code == 0, err
    return next(line.split("\t")[2] for line in out.splitlines() if line.startswith("ndcg@10"))


def retrieve_args(url: str, output: Path, cache: Path, *more: str) -> list[str]:
    return [
        "retrieve",
        "--dataset",
        QRELS,
        "--queries",
        QUERIES,
        "--retriever",
        url,
        "--k",
        "100",
        "-o",
        str(output),
        "--cache-dir",
        str(cache),
        *more,
    ]


def test_the_run_fetched_over_http_scores_like_the_file_with_retries_counted(stub, tmp_path):
    output = tmp_path / "http.trec"
    code, out, err = cli(*retrieve_args(stub.url, output, tmp_path / "cache", "--concurrency", "8"))
    assert code == 0, err
    assert stub.served_500 == len(FAIL_FIRST) == 15
    assert f"errors 0, empty 0, retries {len(FAIL_FIRST)}" in out
    assert "latency p50 " in out and ", p95 " in out and ", max " in out
    assert ndcg10(str(output)) == "0.6791"
    meta = json.loads((tmp_path / "http.trec.json").read_text())
    assert meta["counts"] == {
        "calls": 300,
        "answered": 300,
        "cached": 0,
        "called": 300,
        "empty": 0,
        "failed": 0,
        "retries": 15,
        "repeated_hits": 0,
    }
    assert meta["retriever"]["kind"] == "http" and meta["retriever"]["url"] == stub.url
    assert meta["latency"]["p50_ms"] <= meta["latency"]["p95_ms"] <= meta["latency"]["max_ms"]
    assert len(meta["calls"]) == 300 and all(row[3] == (2 if i % 20 == 0 else 1) for i, row in enumerate(meta["calls"]))

    # again: every answer from the cache, no call made, the same run
    before = sum(stub.calls.values())
    again = tmp_path / "again.trec"
    code, out, err = cli(*retrieve_args(stub.url, again, tmp_path / "cache"))
    assert code == 0, err
    assert sum(stub.calls.values()) == before
    assert "0 called, 300 from cache" in out
    # the same lines but the run tag: each run is named after its file, as eval reads it back
    assert [line.rsplit(" ", 1) for line in again.read_text().splitlines()] == [
        [line.rsplit(" ", 1)[0], "again"] for line in output.read_text().splitlines()
    ]

    # --no-cache: every query asked again
    code, out, err = cli(*retrieve_args(stub.url, again, tmp_path / "cache", "--no-cache"))
    assert code == 0, err
    assert sum(stub.calls.values()) == before + 300


def test_killed_midway_it_resumes_without_calling_an_answered_query_again(tmp_path):
    stub = Stub(delay=(0.02, 0.05))
    try:
        cache = tmp_path / "cache"
        output = tmp_path / "run.trec"
        command = [sys.executable, "-m", "ragmetrics", *retrieve_args(stub.url, output, cache, "--concurrency", "2")]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while sum(stub.answered.values()) < 40 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        process.kill()
        process.wait(10)
        process.stderr.close()
        answered_at_kill = sum(stub.answered.values())
        assert not output.exists()

        with sqlite3.connect(cache / "retrieve.sqlite") as db:
            stored = {row[0] for row in db.execute("SELECT query FROM answers")}
        # every answer the client had received is stored; those in flight (at most --concurrency) are not
        assert answered_at_kill - 2 <= len(stored) <= answered_at_kill < 300
        calls_before = stub.calls.copy()

        stub.delay = (0.0, 0.002)
        code, out, err = cli(*retrieve_args(stub.url, output, cache, "--concurrency", "4"))
        assert code == 0, err
        assert f"{300 - len(stored)} called, {len(stored)} from cache" in out
        assert all(stub.calls[q] == calls_before[q] for q in stored), "a stored answer was asked for again"
        assert all(stub.calls[q] > calls_before[q] for q in QUERY_TEXTS if q not in stored)
        # only the calls in flight when the process was killed (at most --concurrency of them) were answered twice
        twice = [q for q in QUERY_TEXTS if stub.answered[q] > 1]
        assert len(twice) <= 2 and not set(twice) & stored
        assert ndcg10(str(output)) == "0.6791"
    finally:
        stub.close()


def test_request_templates_and_response_paths(stub, tmp_path):
    base = stub.url.rsplit("/", 1)[0]
    dataset_args = ["--dataset", QRELS, "--queries", QUERIES, "--k", "100", "--cache-dir", str(tmp_path / "c")]
    # an Elasticsearch-shaped answer over GET, mapped with --response
    es = tmp_path / "es.trec"
    code, _, err = cli(
        "retrieve",
        *dataset_args,
        "--retriever",
        f"{base}/es",
        "--request",
        'GET {"q": "{query}", "size": "{k}"}',
        "--response",
        "hits.hits,score=_score",
        "--doc-id-field",
        "_id",
        "-o",
        str(es),
    )
    assert code == 0, err
    assert ndcg10(str(es)) == "0.6791"
    # the query in the URL
    url_run = tmp_path / "url.trec"
    code, _, err = cli("retrieve", *dataset_args, "--retriever", f"{base}/q?q={{query}}&k={{k}}", "-o", str(url_run))
    assert code == 0, err
    assert ndcg10(str(url_run)) == "0.6791"


def test_a_4xx_is_not_retried_and_a_dead_retriever_stops_the_run(stub, tmp_path):
    base = stub.url.rsplit("/", 1)[0]
    code, _, err = cli(
        "retrieve",
        "--dataset",
        QRELS,
        "--queries",
        QUERIES,
        "--retriever",
        f"{base}/bad?q={{query}}",
        "-o",
        str(tmp_path / "x.trec"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert code == 2
    assert err.count("\n") == 1 and "failed on the first 5 queries" in err and "HTTP 404" in err
    assert not (tmp_path / "x.trec").exists()


def test_an_answer_past_the_answer_limit_fails_its_query_and_stops_a_run_of_them(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_MAX_ANSWER_BYTES", "64")
    base = stub.url.rsplit("/", 1)[0]
    code, _, err = cli("retrieve", "--dataset", QRELS, "--queries", QUERIES, "--retriever", f"{base}/q?q={{query}}&k={{k}}",
                       "-o", str(tmp_path / "x.trec"), "--cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "the answer is larger than 64 bytes (RAGMETRICS_MAX_ANSWER_BYTES)" in err, err
    assert not (tmp_path / "x.trec").exists()


def test_template_parsing():
    assert parse_request(None, "http://h/s") == ("POST", {"query": "{query}", "k": "{k}"})
    assert parse_request(None, "http://h/s?q={query}") == ("GET", None)
    method, body = parse_request('PUT {"text": "find: {query}", "n": "{k}", "opts": [1, "{k}"]}', "http://h")
    assert method == "PUT"
    assert fill(body, 'a "quoted" query', 7) == {"text": 'find: a "quoted" query', "n": 7, "opts": [1, 7]}
    assert parse_response("data.hits, doc_id = _id ,text=_source.body", None) == (
        "data.hits",
        {"doc_id": "_id", "text": "_source.body"},
    )
    with pytest.raises(RagMetricsError, match="not JSON"):
        parse_request("{query}", "http://h")
    with pytest.raises(RagMetricsError, match="does not hold"):
        parse_request('{"q": "fixed"}', "http://h")
    with pytest.raises(RagMetricsError, match="the field is one of"):
        parse_response("hits,rank=_rank", None)


def test_answer_shapes():
    adapter = HttpAdapter("http://127.0.0.1:9/x")
    assert adapter.hits([{"id": 3, "score": "1.5", "text": "t"}, "d2"]) == [
        ("3", 1.5, "t", None),
        ("d2", None, None, None),
    ]
    assert adapter.hits({"results": [{"doc_id": "a", "score": 2, "source_doc": "A"}]}) == [("a", 2.0, None, "A")]
    with pytest.raises(RagMetricsError, match="no list of results"):
        adapter.hits({"items": []})
    with pytest.raises(RagMetricsError, match="result 1: no 'doc_id' or 'id'"):
        adapter.hits([{"score": 1}])
    with pytest.raises(RagMetricsError, match="not a finite number"):
        adapter.hits([{"doc_id": "a", "score": "nan"}])
    nested = HttpAdapter("http://127.0.0.1:9/x", response="data.0.hits", doc_id_field="meta.id")
    assert nested.hits({"data": [{"hits": [{"meta": {"id": "z"}, "score": 1}]}]}) == [("z", 1.0, None, None)]
    secret = HttpAdapter("http://127.0.0.1:9/x", headers={"Authorization": "Bearer s3cret"})
    assert "s3cret" not in secret.identity and "s3cret" not in json.dumps(secret.describe())


class Redirector:
    """Two servers on 127.0.0.1: an internal one holding a secret, and an endpoint that answers every call with a
    307 to the internal one (``/redirect``) or with a 403 whose body holds the secret (``/forbidden``)."""

    SECRET = "internal-secret-7f3a"

    def __init__(self) -> None:
        self.internal_calls = 0
        owner = self

        class Internal(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self) -> None:
                owner.internal_calls += 1
                data = json.dumps({"results": [{"doc_id": owner.SECRET, "score": 1.0}], "note": owner.SECRET}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        class Endpoint(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if self.path.startswith("/forbidden"):
                    data = f"denied: {owner.SECRET}".encode()
                    self.send_response(403)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(307)
                self.send_header("Location", owner.internal_url)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _answer

        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for handler in (Internal, Endpoint)]
        for server in self.servers:
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.internal_url = f"http://127.0.0.1:{self.servers[0].server_address[1]}/secret"
        self.port = self.servers[1].server_address[1]

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


@pytest.fixture
def redirector() -> Iterator[Redirector]:
    server = Redirector()
    yield server
    server.close()


@pytest.mark.parametrize("path", ["redirect", "forbidden"])
def test_a_redirect_is_not_followed_and_no_answer_or_credential_is_repeated(redirector, tmp_path, path):
    url = f"http://team:hunter2@127.0.0.1:{redirector.port}/{path}?api_key=hunter3"
    code, _, err = cli(*retrieve_args(url, tmp_path / "x.trec", tmp_path / "cache"))
    assert code == 2 and err.count("\n") == 1, err
    assert redirector.internal_calls == 0  # never reached
    status = "HTTP 307: the endpoint redirects, and redirects are not followed" if path == "redirect" else "HTTP 403"
    assert status in err, err
    for secret in (Redirector.SECRET, "hunter2", "hunter3", "denied"):
        assert secret not in err, err
    assert f"http://team:***@127.0.0.1:{redirector.port}/{path}?api_key=***" in err  # the endpoint, redacted
    assert not (tmp_path / "x.trec").exists()


def test_the_adapter_describes_its_endpoint_without_credentials():
    adapter = HttpAdapter("https://team:hunter2@search.example/q?q={query}&token=hunter3")
    shown = json.dumps(adapter.describe())
    assert "hunter2" not in shown and "hunter3" not in shown and "team:***@search.example" in shown
    # the cache key still tells two endpoints apart that differ only by their credentials
    assert adapter.identity != HttpAdapter("https://team:other@search.example/q?q={query}&token=hunter3").identity
