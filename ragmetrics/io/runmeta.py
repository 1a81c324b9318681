"""Run metadata: key-value tags on a stored run, where they come from, and their ir_metadata export.

A tag is a key (letters, digits, ``_ . -``; at most :data:`MAX_KEY_CHARS` characters) and a text value (at most
:data:`MAX_VALUE_BYTES` bytes of UTF-8, no control character). Tags come from ``ragmetrics push --meta KEY=VALUE``,
the dashboard's upload and Workspace pages, and the metadata ``ragmetrics retrieve`` writes beside its run
(``RUN.json``: :func:`retriever_tags` flattens it). The store keeps them per run content id
(:meth:`ragmetrics.store.database.Store.set_tags`): the same rows pushed twice are one run, and the second push's tags
update the first's.

:data:`KNOWN_TAGS` are the keys other features read (``date`` orders the timeline, ``system`` names a leaderboard's
rows, the ``retriever.*`` and ``latency.*`` keys fill the Compare page's latency column); any other key is kept
and shown as it is.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import id_text_problem
from ragmetrics.foundation.version import __version__
from ragmetrics.io._json import parse_value
from ragmetrics.io.source import Source

MAX_KEY_CHARS = 64
MAX_VALUE_BYTES = 2048
_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")

KNOWN_TAGS: dict[str, str] = {
    "date": "when the run was made (ISO 8601, e.g. 2025-03-01 or 2025-03-01T12:00:00); orders the timeline",
    "commit": "the commit of the code that made the run",
    "branch": "the branch it came from",
    "system": "the system's name (the leaderboard's rows)",
    "model": "the embedding or ranking model",
    "index": "the index or collection name",
    "chunk_size": "chunk size used to index the corpus",
    "top_k": "documents asked for per query",
    "note": "free text",
    "author": "who made the run (ir_metadata actor.name)",
    "team": "the team (ir_metadata actor.team)",
    "repository": "the code's repository URL (ir_metadata implementation.source.repository)",
    "cmd": "the command that made the run (ir_metadata implementation.executable.cmd)",
    "retriever.kind": "the retriever's kind (callable, llamaindex, langchain, http, bm25), from ragmetrics retrieve",
    "latency.p50_ms": "median latency per call, milliseconds (ragmetrics retrieve)",
    "latency.p95_ms": "95th percentile latency per call, milliseconds (ragmetrics retrieve)",
    "latency.max_ms": "slowest call, milliseconds (ragmetrics retrieve)",
    "errors": "queries that still failed after the retries (ragmetrics retrieve)",
    "empty": "queries answered with no document (ragmetrics retrieve)",
    "retries": "calls tried again (ragmetrics retrieve)",
}
"""The tag keys other features read, with what they mean (the docs' table and the dashboard's help)."""

LATENCY_TAGS = ("latency.p50_ms", "latency.p95_ms", "latency.max_ms", "errors", "empty")
"""The retriever's latency and failure counts, in the order the Compare page shows them."""


def check_key(key: str) -> str:
    key = str(key).strip()
    if not key or len(key) > MAX_KEY_CHARS or not _KEY_RE.match(key):
        raise RagMetricsError(
            f"tag key {key[:80]!r} is not allowed: expected 1 to {MAX_KEY_CHARS} letters, digits, '_', '.' or '-', "
            "not starting with '.' or '-' (e.g. commit, branch, retriever.kind)"
        )
    return key


def check_value(key: str, value: object) -> str:
    """``value`` as text when a tag can hold it (as the store checks names: not empty, no control character, at most
    :data:`MAX_VALUE_BYTES`; a ``date`` that :func:`parse_date` reads); else a clear error."""

    text = str(value).strip()
    problem = id_text_problem(text, MAX_VALUE_BYTES)
    if problem is not None:
        raise RagMetricsError(f"the value of tag {key!r} {problem}: {text[:80]!r}")
    if key == "date" and parse_date(text) is None:  # it orders the timeline: a text it cannot place is refused
        raise RagMetricsError(
            f"the value of tag 'date' is not an ISO 8601 date: {text[:80]!r}; expected e.g. 2025-03-01 or "
            "2025-03-01T12:00:00 (UTC when no zone is given)"
        )
    return text


def check_tags(tags: Mapping[str, object], stored: Mapping[str, str] | None = None) -> dict[str, str]:
    """``tags`` with checked keys and values (see the module's rules); a bad one is a clear error. A value equal to
    the run's ``stored`` one is kept as stored: a tag saved before a rule existed does not block editing the others
    (it is refused only once changed)."""
    stored = stored or {}
    out = {}
    for key, value in tags.items():
        key = check_key(key)
        out[key] = stored[key] if stored.get(key) == str(value).strip() else check_value(key, value)
    return out


def parse_tag(text: str, where: str = "--meta") -> tuple[str, str]:
    """``KEY=VALUE`` -> (key, value)."""
    key, sep, value = str(text).partition("=")
    if not sep:
        raise RagMetricsError(f"{where} {text[:80]!r}: expected KEY=VALUE, e.g. commit=9548cd6")
    key = check_key(key)
    return key, check_value(key, value)


def parse_tags(items: Iterable[str], where: str = "--meta") -> dict[str, str]:
    """Several ``KEY=VALUE``; blank items are skipped, and a key given twice with two values is refused (neither is
    taken in silence)."""
    out: dict[str, str] = {}
    for item in items:
        if str(item).strip():
            _add_tag(out, *parse_tag(item, where), where)
    return out


def parse_tag_lines(text: str, where: str = "metadata") -> dict[str, str]:
    """``KEY=VALUE`` per line (a form's text area); a bad line, or a key given twice with two values, is an error
    naming it."""
    out: dict[str, str] = {}
    for number, line in enumerate(str(text or "").splitlines(), 1):
        if line.strip():
            place = f"{where}, line {number}:"
            _add_tag(out, *parse_tag(line.strip(), place), place)
    return out


def _add_tag(tags: dict[str, str], key: str, value: str, where: str) -> None:
    if key in tags and tags[key] != value:
        raise RagMetricsError(f"{where} {key}: given twice, {tags[key]!r} and {value!r}; give each key once")
    tags[key] = value


# --- the metadata ragmetrics retrieve writes ---------------------------------------------------------------


def sidecar_path(run_path: str | os.PathLike[str]) -> Path:
    """Where ``ragmetrics retrieve`` writes a run's metadata by default: the run's path + ``.json``."""
    return Path(f"{os.fspath(run_path)}.json")


def is_retrieval_metadata(data: object) -> bool:
    """True for the JSON object ``ragmetrics retrieve`` writes (it has a ``retriever`` and ``latency``)."""
    return isinstance(data, dict) and isinstance(data.get("retriever"), dict) and isinstance(data.get("latency"), dict)


def load_retrieval_metadata(source: str | os.PathLike[str] | bytes, name: str = "") -> dict[str, Any]:
    """The metadata JSON ``ragmetrics retrieve`` wrote (a path or its bytes); a file that is not one is an error."""
    label = name or (os.fspath(source) if not isinstance(source, bytes) else "metadata")
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RagMetricsError(f"{label}: not the JSON metadata ragmetrics retrieve writes ({err})") from None
    # the loaders' JSON reader: a line named, nesting bounded, a key named twice refused
    data = parse_value(Source(label, raw=raw), text, whole=True)[0]
    if not is_retrieval_metadata(data):
        raise RagMetricsError(
            f"{label}: expected the metadata ragmetrics retrieve writes (a JSON object with 'retriever' and 'latency')"
        )
    return data


def read_sidecar(run_path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The retrieval metadata beside ``run_path`` (:func:`sidecar_path`), or None when there is no such file."""
    path = sidecar_path(run_path)
    if not path.is_file():
        return None
    return load_retrieval_metadata(path)


def _scalar(value: object) -> str | None:
    if value is None or (isinstance(value, (dict, list, tuple)) and not value):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return None if not math.isfinite(value) else f"{value:g}"
    if isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text.encode("utf-8")) <= MAX_VALUE_BYTES else None


def retriever_tags(metadata: Mapping[str, Any]) -> dict[str, str]:
    """Tags from the metadata ``ragmetrics retrieve`` writes: ``retriever.<key>`` for each thing known of the
    retriever (kind, identity, parameters, model or index), ``top_k``, ``model`` and ``index`` when known,
    ``latency.p50_ms/p95_ms/max_ms``, ``errors``, ``empty``, ``retries``, ``queries`` and ``date`` (when it
    started). Values too long for a tag are left out."""
    out: dict[str, str] = {}
    retriever = metadata.get("retriever") or {}
    for key, value in retriever.items():
        text = _scalar(value)
        if text is not None and _KEY_RE.match(str(key)) and len(f"retriever.{key}") <= MAX_KEY_CHARS:
            out[f"retriever.{key}"] = text
    for tag, value in (
        ("top_k", metadata.get("k")),
        ("model", retriever.get("model") or retriever.get("model_name")),
        ("index", retriever.get("index_name")),
        ("repeat", metadata.get("repeat")),
        ("queries", metadata.get("queries")),
        ("date", metadata.get("started")),
    ):
        text = _scalar(value)
        if text is not None:
            out[tag] = text
    latency = metadata.get("latency") or {}
    for key in ("p50_ms", "p95_ms", "max_ms", "mean_ms"):
        text = _scalar(latency.get(key))
        if text is not None:
            out[f"latency.{key}"] = text
    counts = metadata.get("counts") or {}
    for tag, key in (("errors", "failed"), ("empty", "empty"), ("retries", "retries")):
        text = _scalar(counts.get(key))
        if text is not None:
            out[tag] = text
    return out


# --- ordering --------------------------------------------------------------------------------------------


def parse_date(text: str) -> datetime | None:
    """A ``date`` tag as a UTC datetime (ISO 8601; a date alone is midnight; no zone is UTC); None when unreadable."""
    try:
        when = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


# --- ir_metadata -----------------------------------------------------------------------------------------

IR_METADATA_SCHEMA = "0.1"
"""The ir_metadata schema version written (https://www.ir-metadata.org)."""

_RETRIEVAL_SKIP = {"kind", "identity", "cache_key"}


def ir_metadata(
    tags: Mapping[str, str],
    *,
    run_name: str,
    run_id: str | None = None,
    dataset: str | None = None,
    dataset_source: str | None = None,
    measures: Iterable[str] = (),
) -> dict[str, Any]:
    """A run's tags as an ir_metadata (PRIMAD, schema 0.1) mapping: the subset that tags can fill.

    * ``schema-version`` 0.1, ``run-version`` 1.0, ``tag``: the run's name.
    * ``platform.software.libraries.python``: ``ragmetrics==VERSION``; ``retrieval toolkit``: the ``retriever.model``
      (e.g. ``bm25s``) when known.
    * ``implementation``: ``executable.cmd`` (``cmd``), ``source.repository`` (``repository``), ``source.commit``
      (``commit``), ``source.lang`` ``[python]`` when the retriever was a Python object.
    * ``method``: ``automatic: true`` for a run ``ragmetrics retrieve`` made; ``retrieval``: one stage named by the
      ``system`` tag (else the run), ``method`` the retriever's kind, and its parameters (``retriever.*``, ``top_k``,
      ``model``, ``index``, ``chunk_size``; numbers and booleans as such) as the stage's keys, as the schema's
      example does.
    * ``actor``: ``name`` (``author``), ``team`` (``team``).
    * ``data.test collection``: ``name`` (the dataset), ``qrels`` (the file(s) it was read from).
    * ``research goal.evaluation.reported measures``: ``measures`` when given.

    Everything else (``date``, ``branch``, ``note``, latency and error counts, any other key) goes under a
    ``ragmetrics`` mapping beside the PRIMAD sections: ir_metadata has no place for it.
    """

    tags = dict(tags)
    used: set[str] = set()

    def take(key: str) -> str | None:
        if key in tags:
            used.add(key)
            return tags[key]
        return None

    out: dict[str, Any] = {"schema-version": float(IR_METADATA_SCHEMA), "run-version": 1.0, "tag": run_name}
    software: dict[str, Any] = {"libraries": {"python": [f"ragmetrics=={__version__}"]}}
    toolkit = tags.get("retriever.model")
    if toolkit:
        software["retrieval toolkit"] = [toolkit]
    out["platform"] = {"software": software}
    measures = list(measures)
    if measures:
        out["research goal"] = {"evaluation": {"reported measures": measures}}
    implementation: dict[str, Any] = {}
    cmd = take("cmd")
    if cmd:
        implementation["executable"] = {"cmd": cmd}
    source: dict[str, Any] = {}
    if tags.get("retriever.kind") in ("callable", "llamaindex", "langchain", "bm25"):
        source["lang"] = ["python"]
    for key in ("repository", "commit"):
        value = take(key)
        if value:
            source[key] = value
    if source:
        implementation["source"] = source
    if implementation:
        out["implementation"] = implementation
    stage: dict[str, Any] = {"name": take("system") or run_name}
    kind = take("retriever.kind")
    if kind:
        stage["method"] = kind
    for key in sorted(tags):
        param = key[len("retriever.") :]
        if key.startswith("retriever.") and param not in _RETRIEVAL_SKIP and param not in stage:
            stage[param] = _yaml_value(take(key))  # one named like the stage's own keys stays under ragmetrics
    for key in ("top_k", "model", "index", "chunk_size"):
        value = take(key)
        if value is not None:
            stage.setdefault(key, _yaml_value(value))
    for key in ("retriever.identity", "retriever.cache_key"):
        take(key)
    method: dict[str, Any] = {}
    if kind:
        method["automatic"] = True
    method["retrieval"] = [stage]
    out["method"] = method
    actor = {k: v for k, v in (("name", take("author")), ("team", take("team"))) if v}
    if actor:
        out["actor"] = actor
    collection = {k: v for k, v in (("name", dataset), ("qrels", dataset_source)) if v}
    if collection:
        out["data"] = {"test collection": collection}
    rest = {k: v for k, v in sorted(tags.items()) if k not in used}
    if run_id:
        rest = {"run_id": run_id, **rest}
    if rest:
        out["ragmetrics"] = rest
    return out


def _yaml_value(text: str | None) -> Any:
    """A parameter as the schema's examples write it: a number or a boolean as such, else the text."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            value = kind(text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        return value if math.isfinite(value) else text
    return text


def ir_metadata_yaml(tags: Mapping[str, str], **options: Any) -> str:
    """:func:`ir_metadata` as YAML (block style, keys in the schema's order)."""
    import yaml  # noqa: PLC0415 (PyYAML is loaded on use, for the ir_metadata export only)

    return yaml.safe_dump(ir_metadata(tags, **options), sort_keys=False, allow_unicode=True, width=120)
