"""Credentials never shown: store URLs (CLI errors, the Workspace page) and retriever endpoints share one redaction."""

from __future__ import annotations

import io
import socket

import pytest

from dashboard.data.workspace import safe_url
from ragmetrics.cli import main
from ragmetrics.foundation.redact import redact_url, redact_urls, scrub
from ragmetrics.store.database import Store, StoreOpenError


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://team:s3cret@db:5432/rag", "postgresql+psycopg://team:***@db:5432/rag"),
        ("postgresql+psycopg://team:p@ss@db/rag", "postgresql+psycopg://team:***@db/rag"),  # an unencoded @
        ("postgresql+psycopg://team:p#ss?w@db/rag", "postgresql+psycopg://team:***@db/rag"),
        ("postgresql+psycopg://team:s3cret@db:abc/rag", "postgresql+psycopg://team:***@db:abc/rag"),
        (
            "postgresql+psycopg://db/rag?user=team&password=s3cret&sslmode=require",
            "postgresql+psycopg://db/rag?user=team&password=***&sslmode=require",
        ),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/x", "postgresql+psycopg://postgres@127.0.0.1:5432/x"),
        (
            "https://s3cret@search.internal/q?q={query}&api_key=s3cret",
            "https://***@search.internal/q?q={query}&api_key=***",
        ),
        ("https://u:s3cret@h/search?Token=s3cret#top", "https://u:***@h/search?Token=***#top"),
        ("http://127.0.0.1:8080/search?q={query}&k={k}", "http://127.0.0.1:8080/search?q={query}&k={k}"),
        ("sqlite:////srv/ragmetrics.sqlite", "sqlite:////srv/ragmetrics.sqlite"),
        # any name holding a secret's word, as cloud services name them, and the short ones that carry one alone
        (
            "http://h/api?access_key=K1&accessToken=K2&private_token=K3&x-api-key=K4&subscription-key=K5"
            "&refresh_token=K6&code=K7&top_k=10&index=prod",
            "http://h/api?access_key=***&accessToken=***&private_token=***&x-api-key=***&subscription-key=***"
            "&refresh_token=***&code=***&top_k=10&index=prod",
        ),
        ("not a url", "not a url"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert safe_url(url) == shown  # the dashboard's store URL is the same function


def test_urls_inside_messages_and_secrets_quoted_without_their_url() -> None:
    message = "ConnectError: 'https://u:s3cret@h/x' failed; retry https://tok3n@h2/y"
    assert redact_urls(message) == "ConnectError: 'https://u:***@h/x' failed; retry https://***@h2/y"
    assert redact_urls("http:GET https://h/q?q={query}&token=s3cret request=null") == (
        "http:GET https://h/q?q={query}&token=*** request=null"
    )
    url = "postgresql+psycopg://team:hunter@2024@db/rag"
    assert scrub("could not resolve host '2024@db'", url) == "could not resolve host '***@db'"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql+psycopg://team:hunter2@127.0.0.1:abc/rag", "its port is not a number"),
        ("postgresql+psycopg://team:hunter2@secret-tail@127.0.0.1:{port}/rag", "its password holds an '@'"),
        ("postgresql+psycopg://127.0.0.1:{port}/rag?user=team&password=hunter2", "OperationalError"),
        ("postgresql+psycopg://team:hunter2@127.0.0.1:{port}/rag", "OperationalError"),
    ],
)
def test_a_store_that_cannot_be_opened_is_one_line_without_its_credentials(url: str, why: str) -> None:
    url = url.format(port=_closed_port())
    with pytest.raises(StoreOpenError) as caught:
        Store(url)
    message = str(caught.value)
    assert why in message and "hunter2" not in message and "secret-tail" not in message, message
    out, err = io.StringIO(), io.StringIO()
    assert main(["history", "--dataset", "x", "--store", url], out=out, err=err) == 2
    assert (
        err.getvalue().startswith("ragmetrics: error: store postgresql+psycopg://") and err.getvalue().count("\n") == 1
    )
    assert "hunter2" not in err.getvalue() and "secret-tail" not in err.getvalue(), err.getvalue()
