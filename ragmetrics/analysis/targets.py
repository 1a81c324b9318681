"""Targets: what "good enough" means for a scenario, checked with confidence intervals.

A target passes only when the lower end of the mean's 95% interval
(:func:`ragmetrics.analysis.stats.mean_interval`) clears the threshold ("we are sure it is above"); a mean above the threshold
with an interval that reaches below it is ``uncertain``; a mean at or below
the threshold fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.analysis import stats
from ragmetrics.engine.metrics import better_sign, parse_metric
from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    from ragmetrics.analysis.evaluate import RunResult

COMMON = {"mrr": 0.70, "hits@5": 0.90, "ndcg@10": 0.65}

PROFILES: dict[str, dict[str, float]] = {
    "faq": {"recall@5": 0.90, "recall@10": 0.95, **COMMON},
    "tech": {"recall@5": 0.80, "recall@10": 0.90, **COMMON},
    "legal": {"recall@5": 0.95, "recall@10": 0.98, **COMMON},
    "overview": {"recall@5": 0.60, "recall@10": 0.80, **COMMON},
}
PROFILE_TITLES = {
    "faq": "FAQ / customer support",
    "tech": "Technical documentation",
    "legal": "Legal and compliance",
    "overview": "Open-ended overview",
}


def threshold_text(threshold: float) -> str:
    """A threshold as written: two decimals at least, more when it has them (``0.90``, ``0.955``)."""
    shown = f"{threshold:.2f}"
    return shown if float(shown) == threshold else f"{threshold:.6f}".rstrip("0")


@dataclass(frozen=True)
class TargetCheck:
    metric: str
    threshold: float
    mean: float
    ci_low: float
    ci_high: float
    n: int = 2
    """Queries with a value: below 2 there is no interval, and the check is ``too few`` (never a pass)."""

    @property
    def status(self) -> str:
        """``pass`` (the interval's lower end clears the threshold), ``uncertain`` (only the mean does, or there is
        no interval: every query scored the same), ``fail``, or ``too few`` (fewer than 2 queries with a value)."""
        if self.n < 2:
            return "too few"
        if self.ci_low > self.threshold:
            return "pass"
        if self.mean > self.threshold:
            return "uncertain"
        return "fail"

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def reason(self) -> str:
        interval = (
            f"no interval: every one of the {self.n} queries scored the same"
            if np.isnan(self.ci_low) and self.n >= 2
            else f"95% CI {self.ci_low:.4f}-{self.ci_high:.4f}"
        )
        return (
            f"{self.metric} = {self.mean:.4f} ({interval}) vs target > {threshold_text(self.threshold)}: {self.status}"
        )


TARGET_ITEM = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_\-]*(?:@\d+(?:\s*tok(?:ens)?)?)?)\s*>=?\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*$",
    re.IGNORECASE | re.ASCII,
)
"""One target as text: ``metric>threshold`` (``recall@5>0.9``, ``recall@512tok>0.8``; ``>=`` reads the same: a floor the run's 95% interval
must clear); items are separated by ``,`` or ``;``."""


def target_items(text: str) -> list[tuple[str, str, float | None]]:
    """``(item, metric, threshold)`` of each non-empty item of ``text`` (threshold None: not ``metric>value``)."""
    out: list[tuple[str, str, float | None]] = []
    for item in re.split(r"[;,]", text or ""):
        if item.strip():
            match = TARGET_ITEM.match(item)
            out.append((item.strip(), match.group(1), float(match.group(2))) if match else (item.strip(), "", None))
    return out


class _Pairs(list):
    """A JSON object read as its (key, value) pairs, so a key given twice is seen."""


def resolve_targets(spec: str | Mapping[str, float]) -> dict[str, float]:
    """A profile name (faq, tech, legal, overview), a JSON file ``{metric: threshold}``, targets as text
    (``"ndcg@10>0.6,recall@5>0.9"``, the dashboard's syntax), or a mapping."""
    raw: list[tuple[str, object]]
    source = ""  # a file's name, before what it holds wrong
    if isinstance(spec, Mapping):
        raw = list(spec.items())
    elif spec.strip().lower() in PROFILES:
        raw = list(PROFILES[spec.strip().lower()].items())
    elif "<" in spec and not Path(spec).exists():
        raise RagMetricsError(
            f"targets {spec[:60]!r}: a target is a floor, metric>value (a run passes when the lower end of its 95% "
            "interval clears it); a ceiling (metric<value) is not checked"
        )
    elif ">" in spec and not Path(spec).exists():
        raw = []
        for item, metric, threshold in target_items(spec):
            if threshold is None:
                raise RagMetricsError(f"target {item[:40]!r}: expected metric>value, e.g. recall@5>0.9")
            raw.append((metric, threshold))
    else:
        path = Path(spec)
        if not path.exists():
            raise RagMetricsError(
                f"targets {spec!r}: no such file; expected a profile ({', '.join(PROFILES)}), metric>value items "
                "(e.g. ndcg@10>0.6,recall@5>0.9) or a JSON file of {metric: threshold}"
            )
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_Pairs)
        except json.JSONDecodeError as exc:
            raise RagMetricsError(
                f"{spec}:{exc.lineno}: expected a JSON object {{metric: threshold}}, found {exc.msg}"
            ) from None
        except UnicodeDecodeError:
            raise RagMetricsError(f"{spec}: expected a UTF-8 JSON object {{metric: threshold}}") from None
        if not isinstance(loaded, _Pairs):
            found = "an array" if isinstance(loaded, list) else type(loaded).__name__
            raise RagMetricsError(f"{spec}: expected a JSON object {{metric: threshold}}, found {found}")
        raw, source = loaded, f"{spec}: "
    out: dict[str, float] = {}
    for metric, given in raw:
        if not isinstance(given, (int, float)) or isinstance(given, bool) or not 0 <= given <= 1:
            raise RagMetricsError(
                f"{source}target for {metric!r} must be a number in [0, 1]; got {_given_words(given)}"
            )
        name = str(parse_metric(str(metric)))
        if better_sign(name) < 0:
            raise RagMetricsError(
                f"target {name}>{float(given):g}: {name} is better lower (it counts what is missing), and a target is "
                "a floor a run must clear; a ceiling is not checked"
            )
        if name in out:
            raise RagMetricsError(f"targets: {name} is given twice ({out[name]:g} and {float(given):g}); keep one")
        out[name] = float(given)
    if not out:
        raise RagMetricsError("targets: none given; expected at least one metric>value, e.g. ndcg@10>0.6")
    return out


def _given_words(given: object) -> str:
    """A target's value as given, in words: a number or a string as written, a JSON object or array by its kind."""
    if isinstance(given, _Pairs):
        return (
            "a JSON object (" + ", ".join(f"{key!r}: ..." for key, _ in given[:3]) + ("...)" if len(given) > 3 else ")")
        )
    if isinstance(given, list):
        return "a JSON array"
    return repr(given)


def declared_targets(text: str) -> dict[str, float]:
    """The targets a dataset declares: a profile name or ``metric>value`` items (never a file: a dataset's text is
    not a path to read). A clear error when it is neither."""
    text = text.strip()
    if text.lower() in PROFILES:
        return resolve_targets(text)
    if ">" not in text:
        raise RagMetricsError(
            f"targets {text[:40]!r}: expected a profile ({', '.join(PROFILES)}) or metric>value items, "
            "e.g. ndcg@10>0.6,recall@5>0.9"
        )
    out: dict[str, float] = {}
    for item, metric, threshold in target_items(text):
        if threshold is None:
            raise RagMetricsError(f"target {item[:40]!r}: expected metric>value, e.g. recall@5>0.9")
        out.update(resolve_targets({metric: threshold}))
    return out


def target_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% interval a target is checked against: the run's mean interval every command shows
    (:func:`ragmetrics.analysis.stats.mean_interval`: Clopper-Pearson for values all 0 or 1, else Student's t).
    t's interval of values all 1 is the point [1, 1]: a run at a 0.98 target with every one of its 30 queries a hit
    would pass half the time (a simulation), where the exact interval keeps the chance of passing a run no better
    than its target under 2.5%."""
    low, high = stats.mean_interval(values, within=stats.METRIC_RANGE)
    return float(low), float(high)


def check_targets(
    result: RunResult,
    targets: Mapping[str, float],
) -> list[TargetCheck]:
    """Each target against the run's mean and its 95% interval (:func:`target_interval`)."""
    checks = []
    for metric, threshold in targets.items():
        if metric not in result.values.columns:
            raise RagMetricsError(
                f"target metric {metric!r} was not evaluated; evaluated: {list(result.values.columns)}"
            )
        values = result.values[metric].to_numpy(dtype=np.float64)
        values = values[~np.isnan(values)]
        low, high = target_interval(values)
        checks.append(
            TargetCheck(
                metric,
                threshold,
                float(values.mean()) if len(values) else float("nan"),
                float(low),
                float(high),
                n=len(values),
            )
        )
    return checks
