"""What ``module:attr`` names, and where caches live: the two things a registered endpoint of any room needs
(a retriever's, a model's) that belong to no room above."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError


def import_target(spec: str, what: str = "target") -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted); the current directory is importable. ``what``
    names the thing in errors (``retriever``, ``model``)."""

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise RagMetricsError(f"{what} {spec!r}: expected module:attr")
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RagMetricsError(f"{what} {spec}: cannot import {module_name!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise RagMetricsError(f"{what} {spec}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def default_cache_dir() -> Path:
    """``$RAGMETRICS_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragmetrics``, else ``~/.cache/ragmetrics``."""
    given = os.environ.get("RAGMETRICS_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "ragmetrics"
