"""Numbers as people read them: a signed difference that never reads as zero when it is not."""

from __future__ import annotations

import math

__all__ = ["signed"]


def signed(value: float, digits: int = 3) -> str:
    """``value`` with its sign, to ``digits`` decimals (``+0.012``); one too small for them keeps 2 significant digits
    (``+0.00042``), so a non-zero difference or interval end never reads ``+0.000`` (an interval that excludes 0
    shows it). NaN reads ``+nan``."""
    shown = f"{value:+.{digits}f}"
    if value != 0 and math.isfinite(value) and float(shown) == 0:
        shown = f"{value:+.{1 - math.floor(math.log10(abs(value)))}f}"
    return shown
