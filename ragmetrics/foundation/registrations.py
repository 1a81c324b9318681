"""What a deployer registers by name in an environment variable: ``name=spec`` items separated by ``;``
(``RAGMETRICS_MODELS``, the dashboard's ``RAGMETRICS_RETRIEVERS``). One reader, so a typo is said the same way
everywhere: an item that is not ``name=spec`` and a name given twice are problems, named by the variable and the
item's place (its secrets redacted), never dropped or overridden in silence. A name given twice is offered by
neither of its specs: which one the deployer meant is theirs to say."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.redact import redact_urls

NAME = re.compile(r"[^:/?&#]+")
"""A registered name: any text but a spec's characters (``:``, ``/``, ``?``, ``&``, ``#``), spaces included (a
retriever's label, ``slow stub BM25``); one with them is an item missing its ``=`` before a spec whose query has one:
``qwen openai:http://h/v1?model=q``."""


@dataclass(frozen=True)
class Registrations:
    """``found``: ``{name: spec}`` of the well-formed items; ``problems``: each one that is not, in words."""

    found: dict[str, str]
    problems: tuple[str, ...]

    def checked(self) -> dict[str, str]:
        """``found``, or an error naming every problem (a command that uses the registry refuses a broken one)."""
        if self.problems:
            raise RagMetricsError("; ".join(self.problems))
        return self.found


def read_registrations(variable: str) -> Registrations:
    """The items of the environment variable ``variable`` (blank items skipped: a trailing ``;`` is none)."""
    found: dict[str, str] = {}
    twice: set[str] = set()
    problems: list[str] = []
    for number, item in enumerate(os.environ.get(variable, "").split(";"), 1):
        if not item.strip():
            continue
        name, sep, spec = (part.strip() for part in item.partition("="))
        if not sep or not NAME.fullmatch(name) or not spec:
            shown = redact_urls(item.strip())
            problems.append(
                f"${variable}, item {number} {shown[:60]!r}: expected name=spec, the name without ':', '/', '?', "
                "'&' or '#'"
            )
        elif name in found or name in twice:
            if name not in twice:
                problems.append(f"${variable}: {name!r} is registered twice; keep one")
            twice.add(name)
            found.pop(name, None)
        else:
            found[name] = spec
    return Registrations(found, tuple(problems))
