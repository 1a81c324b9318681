"""The engine's modes, a registry: which kernels read an alignment, and what a metric's name means under them.

A mode is looked up by :attr:`ragmetrics.engine.conventions.Conventions.mode`, never branched on:
``trec`` (the default) reads the metric registry (:mod:`ragmetrics.engine.metrics`) under the ``unjudged``
convention; ``llamaindex`` reproduces llama_index.core's RetrieverEvaluator (:mod:`ragmetrics.engine.llamaindex`).
A new mode is one :class:`Mode` added to :data:`MODES` (and its name to ``conventions.Mode``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.engine import budgets, llamaindex
from ragmetrics.engine import metrics as registry
from ragmetrics.engine.metrics import MetricSpec, parse_metric
from ragmetrics.engine.text import evidence as text_evidence

if TYPE_CHECKING:
    from ragmetrics.engine.accumulators import Ranking
    from ragmetrics.engine.alignment import Alignment

Values = dict[MetricSpec, np.ndarray]


@dataclass(frozen=True)
class Mode:
    """One way of scoring an alignment.

    ``parse`` reads a metric's name (each mode has its own names and cut-off rules); ``compute`` gives the
    per-query values of parsed metrics; ``curves_and_bounds`` says whether curves over K and the bounds over the
    unjudged documents are defined (they read the trec_eval kernels)."""

    name: str
    parse: Callable[[str | MetricSpec], MetricSpec]
    compute: Callable[[Alignment, list[MetricSpec]], Values]
    curves_and_bounds: bool


def _trec(alignment: Alignment, specs: list[MetricSpec]) -> Values:
    """The registry's kernels on the ranking the ``unjudged`` convention gives; bpref reads its own (it skips
    unjudged documents by definition), text metrics the ranked texts."""
    out: Values = {}
    budgeted = [s for s in specs if s.tokens is not None]
    if budgeted:  # token budgets: a per-query cut-off, read apart (:mod:`ragmetrics.engine.budgets`)
        specs = [s for s in specs if s.tokens is None]
        plain = [s for s in budgeted if not s.info.needs_text]
        if plain:
            out.update(budgets.compute(alignment, alignment.ranking, plain))
        if len(plain) < len(budgeted):
            out.update(budgets.compute(alignment, _with_text(alignment), [s for s in budgeted if s.info.needs_text]))
        if not specs:
            return out
    completed = alignment.conventions.unjudged == "relevant"
    as_defined = [s for s in specs if s.info.reads_judged_only and not completed]
    if as_defined:
        out.update(registry.compute(alignment.ranking, as_defined))
    textual = [s for s in specs if s.info.needs_text]
    if textual:
        out.update(registry.compute(_with_text(alignment), textual))
    rest = [s for s in specs if not ((s.info.reads_judged_only and not completed) or s.info.needs_text)]
    if not completed:
        out.update(registry.compute(alignment.scored(), rest))
        return out
    for depth in dict.fromkeys(s.k for s in rest):  # one completed ranking per cut-off
        out.update(registry.compute(alignment.scored(depth), [s for s in rest if s.k == depth]))
    return out


def _with_text(alignment: Alignment) -> Ranking:
    """The alignment's ranking with what its texts hold, for the text metrics (made once)."""
    with_text: Ranking = alignment.once(
        "evidence", lambda: replace(alignment.ranking, evidence=text_evidence(alignment))
    )
    return with_text


def _llamaindex(alignment: Alignment, specs: list[MetricSpec]) -> Values:
    return llamaindex.compute(alignment.ranking, specs)


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("trec", parse_metric, _trec, curves_and_bounds=True),
        Mode("llamaindex", llamaindex.parse, _llamaindex, curves_and_bounds=False),
    )
}
"""Every mode, by name."""
