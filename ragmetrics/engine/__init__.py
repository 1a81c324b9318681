"""The engine: a run aligned with a dataset (:func:`align`) and what metrics read from it.

One module per concern, each readable alone: ``conventions`` (the rules), ``queries`` (which query a run
row is), ``order`` (ranking order and ties), ``documents`` (labels and repeated documents),
``accumulators`` (cumulative sums per query), ``coverage`` (what alignment found), ``health`` (how the ids
meet the judgments), ``alignment`` (the value), ``aligning`` (how it is made).
"""

from ragmetrics.engine.accumulators import Cumulative, Gain, Ranking
from ragmetrics.engine.aligning import align
from ragmetrics.engine.alignment import Alignment
from ragmetrics.engine.conventions import Conventions
from ragmetrics.engine.coverage import Coverage
from ragmetrics.engine.health import Health

__all__ = ["Alignment", "Conventions", "Coverage", "Cumulative", "Gain", "Health", "Ranking", "align"]
