"""How a run is read against the judgments: one immutable value, named in every result.

The defaults are trec_eval 10.0 run with ``-c``; :meth:`Conventions.llamaindex` reproduces
llama_index.core's ``RetrieverEvaluator`` (see :mod:`ragmetrics.engine.llamaindex`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from ragmetrics.foundation.errors import RagMetricsError

Missing = Literal["zero", "skip"]
Level = Literal["auto", "document", "chunk"]
Order = Literal["score", "file"]
ScorePrecision = Literal["float64", "float32"]
Duplicates = Literal["best", "error", "keep"]
Mode = Literal["trec", "llamaindex"]
Unjudged = Literal["nonrelevant", "skip", "relevant"]


@dataclass(frozen=True)
class Conventions:
    """The rules of one alignment.

    * ``rel_level``: a label >= this is relevant (trec_eval ``-l``); nDCG's gains are the raw labels.
    * ``missing``: a judged query absent from the run scores 0 (``zero``, trec_eval ``-c``) or is left out
      (``skip``, pytrec_eval).
    * ``level``: with a ``source_doc`` column, chunks count as their document at the rank of its first chunk
      (``auto`` / ``document``); ``chunk`` evaluates chunk ids as given.
    * ``order``: score descending as float64, ties by doc_id descending in byte order (``score``, trec_eval;
      the rank column and line order are ignored), or the order given (``file``: the rank column, else line order).
    * ``score_precision``: ``float32`` rounds scores as pytrec_eval and trec_eval <= 9.0.8 do before sorting.
    * ``duplicates``: a repeated (query, document) keeps its best-ranked row (``best``), is refused (``error``,
      as trec_eval) or is kept (``keep``, LlamaIndex).
    * ``mode``: which kernels compute the metrics (``trec`` or ``llamaindex``).
    * ``unjudged``: a retrieved document the qrels do not label is non-relevant (``nonrelevant``, trec_eval),
      removed from the ranking before scoring with the negatively labelled ones (``skip``: condensed lists, as
      Sakai's, trec_eval -J and ir_measures' judged_only), or relevant with the smallest relevant grade wherever it
      is within the metric's cut-off (``relevant``: the optimistic bound, R and the ideal ranking counting it).
    """

    rel_level: int = 1
    missing: Missing = "zero"
    level: Level = "auto"
    order: Order = "score"
    score_precision: ScorePrecision = "float64"
    duplicates: Duplicates = "best"
    mode: Mode = "trec"
    unjudged: Unjudged = "nonrelevant"

    def __post_init__(self) -> None:
        if isinstance(self.rel_level, bool) or not isinstance(self.rel_level, numbers.Integral):
            raise RagMetricsError(f"The 'rel_level' parameter must be an int. Got {self.rel_level!r} instead.")
        object.__setattr__(self, "rel_level", int(self.rel_level))
        for name, choices in CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                listed = ", ".join(repr(c) for c in choices)
                raise RagMetricsError(f"The {name!r} parameter must be one of {listed}. Got {value!r} instead.")
        if self.mode == "llamaindex" and self.unjudged != "nonrelevant":
            raise RagMetricsError("LlamaIndex mode scores unjudged documents as non-relevant, as LlamaIndex does")

    @classmethod
    def llamaindex(cls, **changes: Any) -> Conventions:
        """LlamaIndex's RetrieverEvaluator: list order, duplicates kept, its own kernels."""
        return cls(**{"order": "file", "duplicates": "keep", "mode": "llamaindex", **changes})

    def replace(self, **changes: Any) -> Conventions:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = sorted(set(changes) - set(values))
        if unknown:
            raise RagMetricsError(f"unknown convention(s) {unknown}; the conventions are {sorted(values)}")
        return Conventions(**{**values, **changes})


CHOICES: dict[str, tuple[str, ...]] = {
    "missing": get_args(Missing),
    "level": get_args(Level),
    "order": get_args(Order),
    "score_precision": get_args(ScorePrecision),
    "duplicates": get_args(Duplicates),
    "mode": get_args(Mode),
    "unjudged": get_args(Unjudged),
}
"""The allowed values of each convention (the CLI's choices come from here)."""
