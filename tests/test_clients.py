"""One HTTP client per calling thread (ragmetrics.foundation.clients): what each thread gets, when a client is
closed, and the endpoint model and the HTTP retriever calling a real server on 127.0.0.1 from several threads, each
thread over a connection of its own."""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from ragmetrics.foundation.clients import ClientPerThread
from ragmetrics.models.base import Message
from ragmetrics.models.openai_chat import OpenAIChat
from ragmetrics.retrieve.http import HttpAdapter
from tests.model_stub import ModelStub
from tests.test_retrieve_http import Stub


class Counted:
    """A client that says whether it was closed."""

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def in_thread(clients: ClientPerThread[Counted]) -> Counted:
    got: list[Counted] = []
    thread = threading.Thread(target=lambda: got.append(clients.get()))
    thread.start()
    thread.join()
    return got[0]


def test_each_thread_has_its_own_client_and_keeps_it() -> None:
    clients = ClientPerThread(Counted)
    barrier = threading.Barrier(4)

    def twice(_: int) -> tuple[Counted, Counted]:
        first = clients.get()
        barrier.wait()  # the four threads are alive together: none of their clients can be taken for an ended one
        return first, clients.get()

    with ThreadPoolExecutor(4) as pool:
        pairs = list(pool.map(twice, range(4)))
    assert all(first is second for first, second in pairs)
    assert len({id(first) for first, _ in pairs}) == 4 and len(clients) == 4
    assert not any(first.closed for first, _ in pairs)


def test_the_clients_of_ended_threads_are_closed_when_a_new_thread_asks() -> None:
    clients = ClientPerThread(Counted)
    ended = [in_thread(clients) for _ in range(3)]
    # each thread ended before the next asked: the next one's call closed the client before it
    assert [c.closed for c in ended] == [1, 1, 0] and len(clients) == 1
    mine = clients.get()
    assert ended[-1].closed == 1 and len(clients) == 1 and mine.closed == 0
    assert clients.get() is mine


def test_close_closes_every_client_and_later_calls_make_new_ones() -> None:
    clients = ClientPerThread(Counted)
    mine = clients.get()
    clients.close()
    assert mine.closed == 1 and len(clients) == 0
    again = clients.get()
    assert again is not mine and again.closed == 0
    clients.close()
    clients.close()
    assert again.closed == 1


def test_the_endpoint_model_s_threads_each_keep_one_connection() -> None:
    with ModelStub(keep_alive=True) as stub:
        model = OpenAIChat("stub", stub.url, "stub-model", attempts=1)
        barrier = threading.Barrier(4)
        by_thread: dict[str, list[int]] = defaultdict(list)

        def ask(worker: int) -> None:
            barrier.wait()
            for call in range(5):
                model.chat([Message("user", f"worker {worker} call {call}")])

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(ask, range(4)))
        for body, port in zip(stub.requests, stub.ports):
            by_thread[body["messages"][0]["content"].split(" call ")[0]].append(port)
        model.close()
    assert len(stub.requests) == 20
    assert all(len(set(ports)) == 1 for ports in by_thread.values()), by_thread
    assert len({ports[0] for ports in by_thread.values()}) == 4


def test_the_http_retriever_s_threads_each_have_a_client() -> None:
    server = Stub(delay=(0.0, 0.0), fail_first=set())
    try:
        adapter = HttpAdapter(server.url)
        barrier = threading.Barrier(3)

        def search(_: int) -> int:
            barrier.wait()
            return len(adapter.search("what is bm25", 5, 10.0))

        with ThreadPoolExecutor(3) as pool:
            list(pool.map(search, range(3)))
        assert len(adapter._clients) == 3
        adapter.close()
        assert len(adapter._clients) == 0
    finally:
        server.close()
