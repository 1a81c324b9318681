"""Deployment settings: the environment first, then the ``[ragmetrics]`` table of ``.streamlit/secrets.toml``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import streamlit as st


def secrets_table() -> Mapping[str, Any]:
    """The ``[ragmetrics]`` table of ``.streamlit/secrets.toml``; {} when there is none.

    Loading the secrets also puts their root-level keys in the environment (Streamlit does that).
    """
    try:
        from streamlit.runtime.secrets import secrets_singleton

        if not secrets_singleton.load_if_toml_exists():
            return {}
        section = st.secrets.get("ragmetrics")
        return dict(section) if isinstance(section, Mapping) else {}
    except Exception:
        return {}


def setting(env: str, key: str, table: Mapping[str, Any]) -> str:
    """``env`` from the environment when set, else ``key`` of ``table`` (stripped; "" when neither)."""
    value = os.environ.get(env, "").strip()
    return value if value else str(table.get(key, "") or "").strip()
