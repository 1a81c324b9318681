"""Registered model endpoints against a real OpenAI-compatible server on 127.0.0.1 (tests/model_stub.py): the
key from the environment sent as Bearer and shown nowhere, retries with back-off on 500 and 429, a timeout, a
malformed answer, a redirect and a dead endpoint as one clear error each, the reply cache sparing repeated
requests, and the registry's names and specs."""

from __future__ import annotations

import socket
import time

import pytest

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.registrations import Registrations
from ragmetrics.models.base import BadAnswer, Message, Reply
from ragmetrics.models.cache import CachedModel
from ragmetrics.models.registry import build_model, get_model, registered, registrations
from tests.model_stub import EMPTY, MALFORMED, NO_CHOICES, Fail, ModelStub, Redirect, Slow

KEY = "sk-test-5ecret-key-0123456789"
ASK = [Message("system", "You answer briefly."), Message("user", "What is BM25?")]
CALLS: list[dict] = []


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAGMETRICS_MODELS", raising=False)
    return tmp_path / "cache"


def register(monkeypatch, **specs: str) -> None:
    monkeypatch.setenv("RAGMETRICS_MODELS", "; ".join(f"{name}={spec}" for name, spec in specs.items()))


def openai(stub: ModelStub, options: str = "") -> str:
    return f"openai:{stub.url}?model=qwen2.5&backoff=0.05&cache=off" + options


def test_a_chat_completion_with_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("STUB_KEY", KEY)
    with ModelStub(lambda m: "Okapi BM25 is a ranking function.", key=KEY) as stub:
        register(monkeypatch, local=openai(stub, "&key_env=STUB_KEY"))
        model = get_model("local")
        reply = model.chat(ASK, temperature=0.2, max_tokens=50, seed=3)
    assert reply.text == "Okapi BM25 is a ranking function."
    assert (reply.prompt_tokens, reply.completion_tokens) == (6, 6)
    assert reply.latency_s > 0 and not reply.cached and reply.model == "qwen2.5"
    assert stub.headers[0]["Authorization"] == f"Bearer {KEY}"
    body = stub.requests[0]
    assert body["messages"][1] == {"role": "user", "content": "What is BM25?"}
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"]) == ("qwen2.5", 0.2, 50, 3)
    assert model.name == "local" and KEY not in model.identity and KEY not in repr(model)
    assert model.identity == f"openai:{stub.url} model=qwen2.5"


def test_an_answer_past_the_answer_limit_is_refused_as_it_arrives(monkeypatch):
    monkeypatch.setenv("RAGMETRICS_MAX_ANSWER_BYTES", "200")
    with ModelStub(lambda m: "x" * 500) as stub:
        register(monkeypatch, local=openai(stub))
        with pytest.raises(RagMetricsError, match=r"model 'local' .*the answer is larger than 200 bytes "
                                                   r"\(RAGMETRICS_MAX_ANSWER_BYTES\)"):  # fmt: skip
            get_model("local").chat(ASK)
    monkeypatch.delenv("RAGMETRICS_MAX_ANSWER_BYTES")


def test_a_wrong_key_is_one_line_without_the_key(monkeypatch):
    monkeypatch.setenv("STUB_KEY", KEY)
    with ModelStub(key="another-key") as stub:
        register(monkeypatch, local=openai(stub, "&key_env=STUB_KEY"))
        with pytest.raises(RagMetricsError, match=r"model 'local' .*HTTP 401 \(check the key in STUB_KEY\)") as err:
            get_model("local").chat(ASK)
    assert KEY not in str(err.value) and stub.count == 1  # a 4xx is not retried


def test_an_unset_key_variable_is_named():
    with pytest.raises(RagMetricsError, match=r"NOT_SET_ANYWHERE .* is not set"):
        build_model("m", "openai:http://127.0.0.1:9/v1?model=x&key_env=NOT_SET_ANYWHERE")


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_and_rate_limits_are_retried_with_back_off(monkeypatch, status):
    with ModelStub(lambda m: Fail(status, times=2, text="fine")) as stub:
        register(monkeypatch, local=openai(stub))
        started = time.perf_counter()
        reply = get_model("local").chat(ASK)
        elapsed = time.perf_counter() - started
    assert reply.text == "fine" and stub.count == 3
    assert stub.statuses == [status, status, 200]
    assert elapsed >= 0.05 + 0.1  # backoff 0.05 s, doubled


def test_retry_after_is_honoured(monkeypatch):
    with ModelStub(lambda m: Fail(429, times=1, text="fine", retry_after=0.4)) as stub:
        register(monkeypatch, local=openai(stub))
        started = time.perf_counter()
        assert get_model("local").chat(ASK).text == "fine"
    assert time.perf_counter() - started >= 0.4 and stub.count == 2


def test_attempts_are_bounded_and_the_body_is_never_shown(monkeypatch):
    with ModelStub(lambda m: Fail(500, times=99)) as stub:
        register(monkeypatch, local=openai(stub, "&attempts=3"))
        with pytest.raises(RagMetricsError) as err:
            get_model("local").chat(ASK)
    assert str(err.value) == f"model 'local' ({stub.url}/chat/completions): HTTP 500 (3 attempts)"
    assert stub.count == 3


def test_a_slow_endpoint_times_out(monkeypatch):
    with ModelStub(lambda m: Slow(5.0)) as stub:
        register(monkeypatch, local=openai(stub, "&timeout=0.3&attempts=2"))
        started = time.perf_counter()
        with pytest.raises(RagMetricsError, match=r"^model 'local' \(.*\): timed out after 0.3 s \(2 attempts\)$"):
            get_model("local").chat(ASK)
        assert time.perf_counter() - started < 3
        assert stub.count == 2


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (MALFORMED, "the answer is not JSON, so not a chat completion"),
        (NO_CHOICES, r"the answer is not a chat completion \(no choices\)"),
        (EMPTY, r"the answer is empty \(finish_reason stop\)"),
    ],
)
def test_an_answer_that_is_not_a_chat_completion_is_a_clear_error(monkeypatch, mode, message):
    with ModelStub(lambda m: mode) as stub:
        register(monkeypatch, local=openai(stub))
        with pytest.raises(BadAnswer, match=f"^model 'local' .*: {message}$"):
            get_model("local").chat(ASK)
    assert stub.count == 1  # what is malformed is not asked again


def test_redirects_are_refused(monkeypatch):
    with ModelStub() as elsewhere, ModelStub(lambda m: Redirect(elsewhere.url + "/chat/completions")) as stub:
        register(monkeypatch, local=openai(stub))
        with pytest.raises(RagMetricsError, match="HTTP 307: the endpoint redirects, and redirects are not followed"):
            get_model("local").chat(ASK)
    assert stub.count == 1 and elsewhere.count == 0


def test_a_dead_endpoint_is_named(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    register(monkeypatch, down=f"openai:http://user:pa55word@127.0.0.1:{port}/v1?model=x&backoff=0&attempts=2")
    with pytest.raises(
        RagMetricsError, match=r"^model 'down' \(http://user:\*\*\*@127.*cannot reach the endpoint"
    ) as e:
        get_model("down").chat(ASK)
    assert "pa55word" not in str(e.value) and "(2 attempts)" in str(e.value)
    assert "pa55word" not in get_model("down").identity


def test_the_cache_answers_a_repeated_request(monkeypatch, cache_dir):
    with ModelStub() as stub:
        register(monkeypatch, local=f"openai:{stub.url}?model=qwen2.5")
        model = get_model("local")
        assert isinstance(model, CachedModel)
        first = model.chat(ASK, seed=1)
        again = get_model("local").chat(ASK, seed=1)  # another instance: the cache is on disk
        assert stub.count == 1
        assert again.cached and not first.cached
        assert (again.text, again.prompt_tokens, again.completion_tokens) == (
            first.text,
            first.prompt_tokens,
            first.completion_tokens,
        )
        assert again.latency_s == pytest.approx(first.latency_s)
        model.chat(ASK, seed=2)
        model.chat(ASK, seed=1, temperature=0.5)
        model.chat([*ASK, Message("user", "And TF-IDF?")], seed=1)
        assert stub.count == 4
    assert (cache_dir / "models.sqlite").exists()


def test_failures_are_not_cached(monkeypatch, model_stub):
    stub = model_stub(lambda m: Fail(500, times=1, text="later"))
    register(monkeypatch, local=f"openai:{stub.url}?model=m&attempts=1")
    with pytest.raises(RagMetricsError, match="HTTP 500"):
        get_model("local").chat(ASK)
    assert get_model("local").chat(ASK).text == "later"
    assert stub.count == 2


def fake_model(messages, seed=None):
    """A callable model for the tests: the question back, with the seed it got."""
    CALLS.append({"messages": messages, "seed": seed})
    return {"text": f"{messages[-1]['content']} #{seed}", "prompt_tokens": 7}


def broken_model(messages):
    raise ConnectionError("no GPU today")


def test_a_callable_model(monkeypatch):
    CALLS.clear()
    register(monkeypatch, fn="tests.test_models:fake_model", cached="tests.test_models:fake_model?cache=on")
    reply = get_model("fn").chat(ASK, seed=4, temperature=0.3)
    assert reply == Reply("What is BM25? #4", "tests.test_models:fake_model", 7, None, reply.latency_s)
    assert CALLS[-1] == {"messages": [{"role": m.role, "content": m.content} for m in ASK], "seed": 4}
    get_model("fn").chat(ASK, seed=4)
    assert len(CALLS) == 2  # cache=off by default for a callable
    assert not get_model("cached").chat(ASK, seed=4).cached
    assert get_model("cached").chat(ASK, seed=4).cached and len(CALLS) == 3
    assert get_model("fn").identity == "callable:tests.test_models:fake_model"


def test_a_failing_callable_is_one_error(monkeypatch):
    register(monkeypatch, broken="tests.test_models:broken_model", none="tests.model_stub:NOT_THERE")
    with pytest.raises(RagMetricsError, match=r"model 'broken' .* failed: ConnectionError: no GPU today"):
        get_model("broken").chat(ASK)
    with pytest.raises(RagMetricsError, match=r"model tests.model_stub:NOT_THERE: 'tests.model_stub' has no attribute"):
        get_model("none")


def test_the_registry(monkeypatch):
    monkeypatch.setenv("RAGMETRICS_MODELS", " a = tests.model_stub:echo ;; b=openai:http://h/v1?model=m ; ")
    assert registered() == {"a": "tests.model_stub:echo", "b": "openai:http://h/v1?model=m"}
    with pytest.raises(RagMetricsError, match=r"no model named 'c' is registered \(registered: a, b\)"):
        get_model("c")
    # a deployer's typo is named, never dropped (an item without "=") nor overridden (a name given twice): was
    # "no model named 'qwen' is registered (registered: none ...)", and the last of two specs taken
    monkeypatch.setenv("RAGMETRICS_MODELS", "qwen openai:http://u:pw@h/v1?model=q; m=tests.model_stub:echo; "
                       "m=openai:http://h/v1?model=m")  # fmt: skip
    found = registrations()
    assert found.found == {} and found.problems == (
        "$RAGMETRICS_MODELS, item 1 'qwen openai:http://u:***@h/v1?model=q': expected name=spec, the name without "
        "':', '/', '?', '&' or '#'",
        "$RAGMETRICS_MODELS: 'm' is registered twice; keep one",
    )
    for name in ("qwen", "m"):
        with pytest.raises(RagMetricsError, match=r"no model named '\w+' is registered: \$RAGMETRICS_MODELS, item 1"):
            get_model(name)
    monkeypatch.setenv("RAGMETRICS_MODELS", "local qwen 2.5=tests.model_stub:echo")  # a name may hold spaces
    assert registrations() == Registrations({"local qwen 2.5": "tests.model_stub:echo"}, ())
    monkeypatch.delenv("RAGMETRICS_MODELS")
    with pytest.raises(RagMetricsError, match=r"registered: none: register models in \$RAGMETRICS_MODELS"):
        get_model("a")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:http://h/v1", r"name the model the endpoint serves \(model=...\)"),
        ("openai:http://h/v1?model=m&temperature=1", "unknown option 'temperature'"),
        ("openai:http://h/v1?model=m&timeout=soon", "timeout='soon' is not a number"),
        ("openai:http://h/v1?model=m&cache=maybe", "cache='maybe': expected on or off"),
        ("openai:h/v1?model=m", "openai: is followed by the endpoint's http"),
        ("http://h/v1", "neither openai:URL"),
        ("justaname", "neither openai:URL"),
        ("tests.model_stub:echo?model=m", "unknown option 'model'"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(RagMetricsError, match=message):
        build_model("m", spec)
