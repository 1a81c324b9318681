"""JSON helpers that keep line numbers: JSONL records, JSON array items and
top-level object members, each with the line it starts on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ragmetrics.errors import ParseError
from ragmetrics.io._source import Source, decode, shorten

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def first_char(source: Source) -> str:
    """The first non-blank byte of the data, as a character ("" when empty)."""
    stripped = source.head.lstrip(b" \t\r\n")
    return chr(stripped[0]) if stripped else ""


def first_record(source: Source) -> Any:
    """The first non-blank line parsed as JSON, or ``None`` when it is not JSON."""
    for raw in source.head.split(b"\n"):
        raw = raw.strip(b" \t\r")
        if raw:
            try:
                return json.loads(raw.decode("utf-8", errors="replace"))
            except ValueError:
                return None
    return None


def _json_error(source: Source, text: str, exc: json.JSONDecodeError, first_line: int = 1) -> ParseError:
    line = text.count("\n", 0, exc.pos) + first_line
    snippet = text[exc.pos : exc.pos + 30].split("\n")[0]
    return ParseError(source.name, line, f"valid JSON ({exc.msg})", shorten(snippet) if snippet else "the end of the data")


def iter_jsonl(source: Source) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for every non-blank line."""
    for lineno, raw in enumerate(source.data.split(b"\n"), 1):
        raw = raw.strip(b" \t\r")
        if not raw:
            continue
        text = decode(raw, source.name, first_line=lineno)
        try:
            yield lineno, json.loads(text)
        except json.JSONDecodeError as exc:
            raise _json_error(source, text, exc, lineno) from None


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _decode_at(source: Source, text: str, pos: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _json_error(source, text, exc) from None


def _expect(source: Source, text: str, pos: int, chars: str, what: str) -> str:
    if pos >= len(text) or text[pos] not in chars:
        found = shorten(text[pos : pos + 20]) if pos < len(text) else "the end of the data"
        raise ParseError(source.name, text.count("\n", 0, pos) + 1, what, found)
    return text[pos]


def scan_array(source: Source, text: str) -> Iterator[tuple[int, Any]]:
    """``(line, item)`` for each item of a top-level JSON array."""
    pos = _skip(text, 0)
    _expect(source, text, pos, "[", "a JSON array '['")
    pos = _skip(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        pos += 1
    else:
        line, last = 1, 0
        while True:
            line += text.count("\n", last, pos)
            last = pos
            item, pos = _decode_at(source, text, pos)
            yield line, item
            pos = _skip(text, pos)
            if _expect(source, text, pos, ",]", "',' or ']' after an array item") == "]":
                pos += 1
                break
            pos = _skip(text, pos + 1)
    _check_trailing(source, text, pos)


def scan_object(source: Source, text: str) -> Iterator[tuple[int, str, Any]]:
    """``(line, key, value)`` for each member of a top-level JSON object."""
    pos = _skip(text, 0)
    _expect(source, text, pos, "{", "a JSON object '{'")
    pos = _skip(text, pos + 1)
    if pos < len(text) and text[pos] == "}":
        pos += 1
    else:
        line, last = 1, 0
        while True:
            line += text.count("\n", last, pos)
            last = pos
            _expect(source, text, pos, '"', "a quoted key")
            key, pos = _decode_at(source, text, pos)
            pos = _skip(text, pos)
            _expect(source, text, pos, ":", "':' after a key")
            value, pos = _decode_at(source, text, _skip(text, pos + 1))
            yield line, key, value
            pos = _skip(text, pos)
            if _expect(source, text, pos, ",}", "',' or '}' after an object member") == "}":
                pos += 1
                break
            pos = _skip(text, pos + 1)
    _check_trailing(source, text, pos)


def _check_trailing(source: Source, text: str, pos: int) -> None:
    pos = _skip(text, pos)
    if pos < len(text):
        raise ParseError(
            source.name, text.count("\n", 0, pos) + 1, "nothing after the JSON value", shorten(text[pos : pos + 20])
        )


def records(source: Source) -> Iterator[tuple[int, int, Any]]:
    """``(line, record_number, value)`` of a JSON array or of JSONL lines."""
    if first_char(source) == "[":
        for number, (line, item) in enumerate(scan_array(source, source.text()), 1):
            yield line, number, item
    else:
        for number, (line, item) in enumerate(iter_jsonl(source), 1):
            yield line, number, item
