"""The callable judge: a Python function ``module:attr`` the user names."""

from __future__ import annotations

import hashlib
import inspect
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.importer import import_target
from ragmetrics.judges.base import Grade, Pair


def import_function(spec: str) -> Callable[[Pair, int], Any]:
    """The callable ``module:attr`` names (``attr`` may be dotted; the current directory is importable)."""
    found = import_target(spec, "callable judge")
    if not callable(found):
        raise RagMetricsError(f"callable judge {spec}: {spec.partition(':')[2]!r} is not callable")
    function: Callable[[Pair, int], Any] = found
    return function


class CallableJudge:
    """Calls ``function(pair, max_grade)`` for each pair (a :class:`~ragmetrics.judges.base.Pair`); it returns an
    integer grade ``0..max_grade``, or None for no grade. Anything else, or an exception, leaves the pair without
    a grade and says why. Its version is the module's ``__version__`` (``0`` without one); its configuration hash
    covers ``module:attr`` and the function's source when it can be read."""

    name = "callable"
    needs_text = False  # the function decides what it reads

    def __init__(self, spec: str, function: Callable[[Pair, int], Any] | None = None) -> None:
        self.spec = spec
        self.function = function if function is not None else import_function(spec)
        module = sys.modules.get(getattr(self.function, "__module__", "") or "")
        self.version = str(getattr(module, "__version__", "0"))

    def config(self) -> Mapping[str, Any]:
        try:
            source = inspect.getsource(self.function)
        except (OSError, TypeError):
            source = ""
        return {"callable": self.spec, "source": hashlib.sha256(source.encode("utf-8")).hexdigest()}

    def grade(self, pairs: Sequence[Pair], max_grade: int) -> list[Grade]:
        out = []
        for pair in pairs:
            try:
                value = self.function(pair, max_grade)
            except Exception as exc:  # the user's code: its failure is reported for the pair
                out.append(Grade(None, f"{self.spec} raised {type(exc).__name__}: {exc}"))
                continue
            if value is None:
                out.append(Grade(None, f"{self.spec} gave no grade"))
            elif isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= max_grade:
                out.append(Grade(None, f"{self.spec} returned {value!r}; expected an integer 0..{max_grade}"))
            else:  # numpy's integers too: a classifier's predict gives them
                out.append(Grade(int(value)))
        return out
