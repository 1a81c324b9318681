"""Text helpers for showing user-supplied strings safely."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: object) -> str:
    """Escape Markdown (and the HTML-ish ``<``/``>``) so user text renders literally in ``st.markdown``."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", "  \n")


def snippet(text: object, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
