"""The models the deployer registers, looked up by name: nobody passes an address at use time.

Register them in the environment, ``RAGMETRICS_MODELS="name=spec; other=spec"``, where a spec is one of

* ``openai:URL?model=M[&key_env=VAR][&timeout=S][&attempts=N][&backoff=S][&cache=on|off]``: an
  OpenAI-compatible chat-completions endpoint at ``URL`` (its base, ending before ``/chat/completions``), serving
  model ``M``; the API key is read from the environment variable ``VAR``. Defaults: ``timeout=60``,
  ``attempts=4``, ``backoff=0.5``, ``cache=on`` (:mod:`ragmetrics.models.openai_chat`);
* ``module:attr[?cache=on|off]``: a Python callable (:mod:`ragmetrics.models.callable`); ``cache=off`` by
  default, since the code behind it may change while its name does not.

Every option after ``?`` is one of :data:`OPTIONS`; another is an error, so the endpoint's URL has no query of
its own. The spec is configuration: it is never shown whole (its URL's credentials are hidden).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.redact import redact_url
from ragmetrics.foundation.registrations import Registrations, read_registrations
from ragmetrics.models.base import ChatModel
from ragmetrics.models.cache import CachedModel, ReplyCache
from ragmetrics.models.callable import CallableModel
from ragmetrics.models.openai_chat import OpenAIChat

ENV = "RAGMETRICS_MODELS"
OPENAI = "openai:"
OPTIONS = {
    "openai": ("model", "key_env", "timeout", "attempts", "backoff", "cache"),
    "callable": ("cache",),
}
"""The options each kind of spec takes."""
SWITCH = {"on": True, "true": True, "1": True, "yes": True, "off": False, "false": False, "0": False, "no": False}


def registrations() -> Registrations:
    """The models registered in ``$RAGMETRICS_MODELS`` (``name=spec`` items separated by ``;``), with the items that
    are not (:mod:`ragmetrics.foundation.registrations`)."""
    return read_registrations(ENV)


def registered() -> dict[str, str]:
    """``{name: spec}`` of the well-formed registrations (a page offers these, and says the others)."""
    return registrations().found


def get_model(name: str, *, cache_dir: str | os.PathLike[str] | None = None) -> ChatModel:
    """The registered model ``name``, behind the reply cache unless its spec says ``cache=off``
    (``cache_dir``: the cache folder, ``$RAGMETRICS_CACHE_DIR`` by default). A name not registered is refused
    with the registry's problems, when it has any (the item meant may be the malformed one)."""
    known = registrations()
    if name not in known.found:
        if known.problems:
            raise RagMetricsError(f"no model named {name!r} is registered: " + "; ".join(known.problems))
        listed = ", ".join(sorted(known.found)) if known.found else f"none: register models in ${ENV}"
        raise RagMetricsError(f"no model named {name!r} is registered (registered: {listed})")
    return build_model(name, known.found[name], cache_dir=cache_dir)


def build_model(name: str, spec: str, *, cache_dir: str | os.PathLike[str] | None = None) -> ChatModel:
    """The model a spec describes (see the module documentation), named ``name``."""
    text = spec.strip()
    target, _, query = text.partition("?")
    kind = "openai" if target.startswith(OPENAI) else "callable"
    options = _options(name, kind, query)
    model: ChatModel
    if kind == "openai":
        url = target[len(OPENAI) :]
        if not url.startswith(("http://", "https://")):
            raise RagMetricsError(f"model {name!r}: openai: is followed by the endpoint's http(s):// URL")
        model = OpenAIChat(
            name,
            url,
            options.get("model", ""),
            key_env=options.get("key_env") or None,
            timeout=_number(name, options, "timeout", 60.0),
            attempts=int(_number(name, options, "attempts", 4)),
            backoff=_number(name, options, "backoff", 0.5),
        )
        cache = _switch(name, options, True)
    else:
        if ":" not in target or target.startswith(("http://", "https://")):
            raise RagMetricsError(
                f"model {name!r}: the spec {redact_url(target)!r} is neither openai:URL?model=... nor module:attr"
            )
        model = CallableModel.from_target(name, target)
        cache = _switch(name, options, False)
    return CachedModel(model, ReplyCache(Path(cache_dir) if cache_dir is not None else None)) if cache else model


def _options(name: str, kind: str, query: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise RagMetricsError(f"model {name!r}: the options after '?' are name=value pairs joined by '&'") from None
    options: dict[str, str] = {}
    for key, value in pairs:
        if key not in OPTIONS[kind]:
            raise RagMetricsError(
                f"model {name!r}: unknown option {key!r} ({'an' if kind[0] in 'aeiou' else 'a'} {kind} model takes "
                f"{list(OPTIONS[kind])})"
            )
        options[key] = value.strip()
    return options


def _number(name: str, options: dict[str, str], key: str, default: float) -> float:
    if key not in options:
        return default
    try:
        return float(options[key])
    except ValueError:
        raise RagMetricsError(f"model {name!r}: {key}={options[key]!r} is not a number") from None


def _switch(name: str, options: dict[str, str], default: bool) -> bool:
    if "cache" not in options:
        return default
    value = SWITCH.get(options["cache"].lower())
    if value is None:
        raise RagMetricsError(f"model {name!r}: cache={options['cache']!r}: expected on or off")
    return value
