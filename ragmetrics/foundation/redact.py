"""Credentials out of every URL that is shown: a store URL, a registered retriever's endpoint, an error message.

:func:`redact_url` hides the password of the user part (``postgresql://team:***@db/rag``) and the value of every
query parameter that names a secret (``?password=***``, ``api_key``, ``access_key``, ``accessToken``...: any name
holding such a word, :data:`_SECRET_PARAMETER`). A user name without a password is
kept, except in ``http(s)://`` and ``ws(s)://`` URLs, where it is often a token. It works on the text, not on a parser
that could refuse it: a password holding an unencoded ``@``, ``#`` or ``?``, or a port that is not a number, is
hidden all the same. :func:`redact_urls` does it to each URL inside a longer message, and :func:`scrub` takes a URL's
secrets out of a message that quotes them without the URL (a driver naming the host it failed to resolve, ``'ss@db'``).
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

__all__ = ["redact_url", "redact_urls", "scrub", "secrets_of"]

HIDDEN = "***"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_SECRET_PARAMETER = re.compile(
    r"(?:pass|pwd|secret|token|auth|key|sig|credential|session|cookie|jwt|bearer|otp|nonce)|^(?:code|sas|sv|se)$",
    re.IGNORECASE,
)
"""A query parameter whose value is hidden: a name holding one of these words (``access_key``, ``accessToken``,
``x-api-key``, ``subscription-key``, ``refresh_token``, ``sslpassword``...; a harmless name that holds one, such as
``keyword``, is hidden too: better than a key shown), or one of the short names that carry a secret alone (Azure
Functions' ``code``, a SAS token's ``sv``/``se``)."""
_TOKEN_SCHEME = re.compile(r"(?:https?|wss?)://", re.IGNORECASE)  # a user part without a password may be a token
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]]+")


def _user_part_end(rest: str) -> int:
    """Where the user part of ``rest`` (a URL after its ``scheme://``) ends: the index after its last ``@``, or 0."""
    strict = re.match(r"[^/?#]*@", rest)
    if strict:
        return strict.end()
    # an unencoded '?' or '#' in a password: "user:pa#ss@host"; taken when what precedes them reads user:password
    loose = re.match(r"[^/]*@", rest)
    if loose and ":" in re.split(r"[?#]", rest, maxsplit=1)[0]:
        return loose.end()
    return 0


def redact_url(url: object) -> str:
    """``url`` with its credentials replaced by ``***`` (see the module documentation); text that is no URL comes
    back as it is."""
    text = str(url)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return text
    head, rest = text[: scheme.end()], text[scheme.end() :]
    end = _user_part_end(rest)
    if end:
        user, colon, _ = rest[: end - 1].partition(":")
        if colon and user:
            rest = f"{user}:{HIDDEN}@" + rest[end:]
        elif colon or _TOKEN_SCHEME.match(head):
            rest = f"{HIDDEN}@" + rest[end:]
    where, question, query = rest.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        items = []
        for item in query.split("&"):
            name, equals, _ = item.partition("=")
            if equals and _SECRET_PARAMETER.search(unquote_plus(name).strip()):
                item = f"{name}={HIDDEN}"
            items.append(item)
        rest = where + "?" + "&".join(items) + hash_ + fragment
    return head + rest


def redact_urls(text: object) -> str:
    """``text`` with :func:`redact_url` applied to every URL in it."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group()), str(text))


def secrets_of(url: object) -> list[str]:
    """The secrets :func:`redact_url` hides in ``url`` (the password, its pieces around an unencoded ``@``, the
    secret parameters' values), longest first."""
    text = str(url)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return []
    rest = text[scheme.end() :]
    found: list[str] = []
    end = _user_part_end(rest)
    if end:
        user, colon, password = rest[: end - 1].partition(":")
        if colon and user:
            found += [password, *(p for p in password.split("@") if len(p) >= 4)]
        elif colon or _TOKEN_SCHEME.match(text):
            found.append(rest[: end - 1])
    _, question, query = rest.partition("?")
    if question:
        for item in query.partition("#")[0].split("&"):
            name, equals, value = item.partition("=")
            if equals and _SECRET_PARAMETER.search(unquote_plus(name).strip()):
                found += [value, unquote_plus(value)]
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: object, url: object) -> str:
    """``text`` with the URLs in it redacted and every secret of ``url`` replaced by ``***``."""
    out = redact_urls(text)
    for secret in secrets_of(url):
        out = out.replace(secret, HIDDEN)
    return out
