"""JSON helpers that keep line numbers: JSONL records, JSON array items and
top-level object members, each with the line it starts on.

Every parse goes through :func:`parse_value`, which turns what the standard
decoder can throw on hostile input (bad syntax, numbers of more than 4,300
digits, nesting deeper than the interpreter's stack) into a ParseError at the
record's line, and refuses nesting deeper than :data:`MAX_DEPTH` and unpaired
``\\udXXX`` surrogate escapes (they cannot be encoded as UTF-8 later).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io.source import Source, check_line_rows, decode, shorten

_WS = re.compile(r"[ \t\n\r]*")


class RepeatedKey(ValueError):
    """A JSON object that names one key twice (``{"d1": 1, "d1": 0}``): Python's json would keep the last value
    without a word."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A decoded object's pairs as a dict, refused when a key repeats."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_object_once)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

#: deepest nesting of arrays and objects accepted in one record
MAX_DEPTH = 64


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):  # pragma: no cover - depth is checked first
        return False
    return False


def _value_problem(value: Any, text: str, start: int, end: int) -> tuple[str, str] | None:
    """(expected, found) when a decoded value must be refused; looks at its
    text ``text[start:end]`` first, so the usual value costs two counts."""
    if isinstance(value, (dict, list)):
        brackets = text.count("[", start, end) + text.count("{", start, end)
        if brackets > MAX_DEPTH and _too_deep(value):
            return f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting"
    if _SURROGATE_ESCAPE.search(text, start, end) and _has_lone_surrogate(value):
        return "text that can be written as UTF-8", "an unpaired surrogate escape (\\udXXX)"
    return None


def parse_value(source: Source, text: str, pos: int = 0, line: int = 1, *, whole: bool = False) -> tuple[Any, int]:
    """Decode the JSON value at ``text[pos:]`` -> ``(value, end)``; ``line`` is the
    line of ``text[0]``. ``whole``: the value must fill the text (JSONL line)."""
    try:
        if whole:
            value, end = _DECODER.decode(text), len(text)
        else:
            value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _json_error(source, text, exc, line) from None
    except RepeatedKey as exc:
        raise ParseError(
            source.name, line + text.count("\n", 0, pos), "each key once in a JSON object", f"{shorten(exc.key)} again"
        ) from None
    except RecursionError:
        raise ParseError(
            source.name,
            line + text.count("\n", 0, pos),
            f"JSON nested at most {MAX_DEPTH} levels deep",
            "deeper nesting",
        ) from None
    except ValueError as exc:  # int('1' * 5000): "Exceeds the limit (4300 digits) ... value has 5000 digits"
        digits = re.search(r"has ([0-9]+) digits", str(exc))
        raise ParseError(
            source.name,
            line + text.count("\n", 0, pos),
            "JSON numbers of at most 4,300 digits",
            f"a number of {int(digits.group(1)):,} digits" if digits else shorten(str(exc)),
        ) from None
    problem = _value_problem(value, text, pos, end)
    if problem is not None:
        raise ParseError(source.name, line + text.count("\n", 0, pos), *problem)
    return value, end


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
            except (ValueError, RecursionError):
                return None
    return None


def _json_error(source: Source, text: str, exc: json.JSONDecodeError, first_line: int = 1) -> ParseError:
    line = text.count("\n", 0, exc.pos) + first_line
    snippet = text[exc.pos : exc.pos + 30].split("\n")[0]
    return ParseError(
        source.name, line, f"valid JSON ({exc.msg})", shorten(snippet) if snippet else "the end of the data"
    )


def iter_jsonl(source: Source) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for every non-blank line."""
    check_line_rows(source)
    for lineno, raw in enumerate(source.data.split(b"\n"), 1):
        raw = raw.strip(b" \t\r")
        if not raw:
            continue
        text = decode(raw, source.name, first_line=lineno)
        yield lineno, parse_value(source, text, 0, lineno, whole=True)[0]


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _decode_at(source: Source, text: str, pos: int) -> tuple[Any, int]:
    return parse_value(source, text, pos)


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
        line, last, count, limit = 1, 0, 0, source.limits.max_rows
        while True:
            line += text.count("\n", last, pos)
            last = pos
            count += 1
            if count > limit:
                source.limits.check_rows(source.name, count, at_least=True)
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
        line, last, count, limit = 1, 0, 0, source.limits.max_rows
        while True:
            line += text.count("\n", last, pos)
            last = pos
            count += 1
            if count > limit:
                source.limits.check_rows(source.name, count, at_least=True)
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


def whole_array(source: Source) -> list[Any] | None:
    """The items of a top-level JSON array decoded in one call, when nothing in it needs the careful scan
    of :func:`scan_array` (which knows each item's line): valid JSON, no ``\\udXXX`` escape, no item nested
    deeper than :data:`MAX_DEPTH`, no more items than the row limit. ``None`` otherwise, and for JSONL.

    A reader that finds a problem in these items reads the file again with :func:`records`, so every
    message still names the item's line (several times faster than scanning item by item)."""
    if first_char(source) != "[":
        return None
    try:
        text = source.text()
    except ParseError:
        return None
    if _SURROGATE_ESCAPE.search(text):
        return None
    try:
        items = _DECODER.decode(text)
    except (ValueError, RecursionError):  # a repeated key too: the careful scan names its line
        return None
    if not isinstance(items, list) or len(items) > source.limits.max_rows or _any_too_deep(items):
        return None
    return items


def _any_too_deep(items: list[Any]) -> bool:
    """:func:`_too_deep` for each item; walked in full only when an item holds containers two levels down."""
    for item in items:
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                grandchildren = child.values() if isinstance(child, dict) else child
                if any(isinstance(g, (dict, list)) for g in grandchildren):
                    if _too_deep(item):
                        return True
                    break
    return False


def records(source: Source) -> Iterator[tuple[int, int, Any]]:
    """``(line, record_number, value)`` of a JSON array or of JSONL lines."""
    if first_char(source) == "[":
        for number, (line, item) in enumerate(scan_array(source, source.text()), 1):
            yield line, number, item
    else:
        for number, (line, item) in enumerate(iter_jsonl(source), 1):
            yield line, number, item
