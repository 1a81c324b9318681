"""Numbers as people read them: a signed difference that never reads as zero when it is not, a share that never
reads as all, none or half when it is not."""

from __future__ import annotations

import math

__all__ = ["share", "signed"]


def signed(value: float, digits: int = 3) -> str:
    """``value`` with its sign, to ``digits`` decimals (``+0.012``); one too small for them keeps 2 significant digits
    (``+0.00042``), so a non-zero difference or interval end never reads ``+0.000`` (an interval that excludes 0
    shows it). NaN reads ``+nan``."""
    shown = f"{value:+.{digits}f}"
    if value != 0 and math.isfinite(value) and float(shown) == 0:
        shown = f"{value:+.{1 - math.floor(math.log10(abs(value)))}f}"
    return shown


def share(fraction: float) -> str:
    """``fraction`` as a percentage in whole numbers (``75%``), except where rounding would misstate it: above 0 and
    under 0.5% reads ``<1%``, under 100% and at or above 99.5% reads ``>99%``, and one that rounds to 50% without
    being half keeps a decimal (``50.3%``), so "most" never stands beside "50%". NaN reads ``—``."""
    if not math.isfinite(fraction):
        return "—"
    shown = f"{100 * fraction:.0f}%"
    if fraction > 0 and shown == "0%":
        return "<1%"
    if fraction < 1 and shown == "100%":
        return ">99%"
    if fraction != 0.5 and shown == "50%":
        return f"{100 * fraction:.1f}%"
    return shown
