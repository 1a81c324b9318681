"""The :class:`Alignment`: a run read against a dataset under stated conventions, as a value the caller holds
(made by :func:`ragmetrics.engine.aligning.align`).

It computes per-query metric values, curves over K and the aligned rows on first use, once, whatever the
threads; holding it is how a caller avoids aligning again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa

from ragmetrics.engine import budgets
from ragmetrics.engine import metrics as registry
from ragmetrics.engine.accumulators import Ranking
from ragmetrics.engine.bounds import bounds, label_free
from ragmetrics.engine.conventions import Conventions
from ragmetrics.engine.coverage import Coverage
from ragmetrics.engine.health import Health, explain_no_overlap, health
from ragmetrics.engine.metrics import MetricSpec, metric_name
from ragmetrics.engine.modes import MODES, Mode
from ragmetrics.engine.once import Once
from ragmetrics.engine.order import FrameRows
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.engine.tokens import check as check_tokenizer
from ragmetrics.foundation.errors import MetricNameError, RagMetricsError
from ragmetrics.foundation.ids import dictionary_codes, to_arrow, to_numpy
from ragmetrics.foundation.kernels import take
from ragmetrics.foundation.model import Dataset, Run

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


CURVE_DEPTH = 100
"""Curves are kept to at least this depth: a shallower one is a slice of it (the dashboard's K goes to 100)."""


@dataclass(frozen=True, eq=False)
class Alignment:
    """One run aligned with one dataset under ``conventions``: the ranking, its coverage report, and the
    metrics computed from them on first use (each once; arrays returned are read-only)."""

    dataset: Dataset
    run: Run
    conventions: Conventions
    ranking: Ranking
    coverage: Coverage

    def __repr__(self) -> str:
        return f"Alignment(run={self.run.name!r}, dataset={self.dataset.name!r}, queries={self.n_queries:,})"

    merged: tuple[np.ndarray, FrameRows, np.ndarray] | None = field(default=None, repr=False)
    """Before a document's chunks were merged (repeated rows, the same id again, dropped already): each sorted row's
    query, table row, and whether it was kept (its document's first chunk)."""
    tokenizer: TokenizerLike = "auto"
    """What the token budgets (``recall@512tok``) count with: a name of :data:`ragmetrics.engine.tokens.TOKENIZERS`,
    ``auto`` (by the texts' script) or a callable ``text -> tokens``; :attr:`tokenizer_name` says which was used."""
    _once: Once = field(default_factory=Once, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def derived_count(self) -> int:
        """How many derived values (per-query metric values, curves, ... and its ranking's) it keeps: it grows only
        with them, so a holder measuring its bytes measures again only when this changed."""
        return len(self._once) + self.ranking.derived_count

    @property
    def query_ids(self) -> np.ndarray:
        """The evaluated queries, in dataset order (every per-query array follows it)."""
        return self.ranking.query_ids

    @property
    def n_queries(self) -> int:
        return self.ranking.n_queries

    @property
    def n_rel(self) -> np.ndarray:
        """Relevant documents of each evaluated query (label >= rel_level)."""
        return self.ranking.n_rel

    @property
    def first_rel_rank(self) -> np.ndarray:
        """1-based rank of each query's first relevant document; 0 when none was retrieved."""
        return self.ranking.first_rel_rank

    @property
    def has_text(self) -> bool:
        """True when the run carries chunk text."""
        table = self.run.table
        return "text" in table.column_names and table.column("text").null_count < table.num_rows

    @property
    def health(self) -> Health:
        """How the run meets the judgments (:mod:`ragmetrics.engine.health`); ``health.no_overlap`` says the
        numbers mean nothing, and :meth:`explain_no_overlap` why."""
        return self._once.get("health", lambda: health(self))

    @property
    def tokenizer_name(self) -> str:
        """The tokenizer the token budgets read (``auto`` resolved on the retrieved texts, which it reads)."""
        return budgets.tokenizer(self).name

    def with_tokenizer(self, tokenizer: TokenizerLike) -> Alignment:
        """The same alignment whose token budgets count with ``tokenizer`` (no new alignment; values recomputed)."""
        return replace(self, tokenizer=check_tokenizer(tokenizer))

    def explain_no_overlap(self, audience: str = "cli") -> str:
        """Why the ids do not meet the qrels and the fix tried on the data, in the words of ``audience``
        (``"cli"``, ``"dashboard"`` or ``"library"``: :data:`ragmetrics.engine.health.ADVICE`)."""
        return explain_no_overlap(self, audience)

    @property
    def depth(self) -> int:
        """Most documents ranked for one query (after chunks were merged into documents)."""
        return int(self.ranking.n_ret.max(initial=0))

    def value(self, metric: str | MetricSpec) -> np.ndarray:
        """Per-query values of one metric (float64, read-only)."""
        spec = self._spec(metric)
        return self.values([spec])[spec]

    def values(self, metrics: Sequence[str | MetricSpec]) -> dict[MetricSpec, np.ndarray]:
        """Per-query values of each metric; those not computed before are computed together (one kernel call
        per metric name for all its cut-offs)."""
        specs = list(dict.fromkeys(self._spec(m) for m in metrics))
        todo = [s for s in specs if ("value", s) not in self._once]
        computed = self._compute(todo) if todo else {}

        def kept(spec: MetricSpec) -> np.ndarray:
            found = computed.get(spec)
            return _read_only(found if found is not None else self._compute([spec])[spec])

        return {spec: self._once.get(("value", spec), functools.partial(kept, spec)) for spec in specs}

    def mean(self, metric: str | MetricSpec) -> float:
        """The mean over the evaluated queries (NaN values, LlamaIndex's skipped queries, left out)."""
        values = self.value(metric)
        kept = values[~np.isnan(values)]
        return float(kept.mean()) if len(kept) else float("nan")

    def curve(self, metric: str, k_max: int) -> np.ndarray:
        """Per-query ``metric@k`` for k = 1..k_max, shape (n_queries, k_max), float64, read-only. ``metric`` is
        named without a cut-off (``ndcg``): the curve is every one of them."""
        if not self.mode.curves_and_bounds:
            raise RagMetricsError("curves are computed with the trec_eval conventions only (mode='trec')")
        if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1:
            raise RagMetricsError(f"The 'k_max' parameter must be an int >= 1. Got {k_max!r} instead.")
        name = metric_name(metric)
        try:
            cut = registry.parse_metric(metric)
        except MetricNameError:  # a name that needs a cut-off (recall): named without one, as a curve is
            cut = None
        if cut is not None and (cut.k is not None or cut.tokens is not None):
            raise RagMetricsError(
                f"curve({metric!r}, ...): a curve is the metric at every cut-off 1..k_max; name it without one "
                f"({name!r})"
            )

        def compute_at(depth: int) -> np.ndarray:
            if self.conventions.unjudged != "relevant":
                return registry.curve(self.scored(), name, depth)
            # the best case depends on the cut-off: each k reads its own completed ranking
            columns = [registry.compute(self.scored(k), [MetricSpec(name, k)]) for k in range(1, depth + 1)]
            return np.column_stack([c[MetricSpec(name, k)] for k, c in enumerate(columns, 1)])

        depth = max(int(k_max), CURVE_DEPTH)  # one kept curve per metric serves every k_max up to it
        kept = self._once.get(("curve", name, depth), lambda: _read_only(compute_at(depth)))
        return kept[:, : int(k_max)]

    def scored(self, depth: int | None = None) -> Ranking:
        """The ranking the metrics read under the ``unjudged`` convention: the aligned one (``nonrelevant``), its
        condensed list (``skip``), or completed to ``depth`` (``relevant``; None: the whole ranking)."""
        rule = self.conventions.unjudged
        if rule == "skip":
            return self._once.get("condensed", self.ranking.condensed)
        if rule == "relevant":
            return self._once.get(("completed", depth), lambda: self.ranking.completed(depth))
        return self.ranking

    def under(self, **changes: Any) -> Alignment:
        """The same alignment read under other ``unjudged`` or ``rel_level``-free conventions without aligning again
        (``under(unjudged="relevant")`` gives the optimistic bound); other changes need :func:`align`."""
        conventions = self.conventions.replace(**changes)
        if set(changes) - {"unjudged"}:
            raise RagMetricsError(f"only 'unjudged' can change on an alignment; align again for {sorted(changes)}")
        return replace(self, conventions=conventions)

    def bounded(self, metric: str | MetricSpec, depth: int | None = None) -> MetricSpec:
        """``metric``'s spec when :meth:`bounds` computes it at ``depth``; else the error it raises (a caller that
        prints checks every metric first, so no output is cut short)."""
        if not self.mode.curves_and_bounds:
            raise RagMetricsError("bounds over the unjudged documents are computed with mode='trec' only")
        if depth is not None and (int(depth) != depth or depth < 1):
            raise RagMetricsError(f"bounds: depth must be a whole number of at least 1, got {depth!r}")
        spec = self._spec(metric)
        if spec.tokens is not None:
            raise RagMetricsError(f"bounds over the unjudged documents are not computed for token budgets ({spec})")
        return spec

    def bounds(self, metric: str | MetricSpec, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per-query ``(worst, best)`` values of ``metric`` over every way of judging the unjudged documents the
        run retrieved (``depth``: those in its top ``depth``, the others staying unjudged), each non-relevant or
        relevant at the relevance threshold (exact, read-only; :mod:`ragmetrics.engine.bounds`). The value under
        any such judging lies between them, trec_eval's too. Not in LlamaIndex mode, which scores every unjudged
        document non-relevant."""
        spec = self.bounded(metric, depth)

        def compute() -> tuple[np.ndarray, np.ndarray]:
            if label_free(spec):
                value = self.under(unjudged="nonrelevant").value(spec)
                return value, value
            worst, best = bounds(self.ranking, spec, None if depth is None else int(depth))
            return _read_only(worst), _read_only(best)

        kept: tuple[np.ndarray, np.ndarray] = self._once.get(("bounds", spec, depth), compute)
        return kept

    def mean_bounds(self, metric: str | MetricSpec, depth: int | None = None) -> tuple[float, float]:
        """The mean's two ends: the means of :meth:`bounds` over the queries with a value (each query's documents are
        judged on their own, so these are the lowest and highest mean any judging gives)."""
        worst, best = self.bounds(metric, depth)
        kept = ~np.isnan(worst)
        return (float(worst[kept].mean()), float(best[kept].mean())) if kept.any() else (np.nan, np.nan)

    def computed(self, metric: str | MetricSpec, *, curve: bool = False) -> bool:
        """True when the metric's per-query values (or, ``curve``: its curve) are already computed on this alignment."""
        if curve:
            return ("curve", metric_name(metric), CURVE_DEPTH) in self._once
        return ("value", self._spec(metric)) in self._once

    def same_source(self, dataset: Dataset, conventions: Conventions) -> bool:
        """True when this alignment was made on ``dataset`` (the same object or the same judgments and queries)
        under ``conventions``."""
        if self.conventions != conventions:
            return False
        if self.dataset is dataset:
            return True
        return self.dataset.qrels_table.equals(dataset.qrels_table) and self.dataset.queries_table.equals(
            dataset.queries_table
        )

    def rows(self) -> pd.DataFrame:
        """The run's rows of evaluated queries in ranking order, every chunk of a document at the document's rank.

        Columns: ``q`` (evaluated-query index), ``query_id``, ``rank`` (1-based, as the metrics rank),
        ``doc_id`` (the document), ``chunk_id`` (the row's own id), ``score``, ``label`` (``<NA>`` when not
        judged) and, when the run has them, ``text``. The best-ranked chunk of a document comes first."""
        return self._once.get("rows", self._rows)

    @property
    def mode(self) -> Mode:
        """The kernels this alignment is read with (:data:`ragmetrics.engine.modes.MODES`)."""
        return MODES[self.conventions.mode]

    def once(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked for on this alignment, the kept value after (the modes
        keep what they derive from the ranking here)."""
        kept: T = self._once.get(key, compute)
        return kept

    def _spec(self, metric: str | MetricSpec) -> MetricSpec:
        return self.mode.parse(metric)

    def _compute(self, specs: list[MetricSpec]) -> dict[MetricSpec, np.ndarray]:
        return self.mode.compute(self, specs)

    def _rows(self) -> pd.DataFrame:
        import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

        ranking = self.ranking
        if self.merged is None:
            q, frame_rows = ranking.q, ranking.doc_rows or FrameRows(None, len(ranking.q))
            kept_row = np.arange(len(q))
        else:
            q, frame_rows, kept = self.merged
            # a merged row takes the rank and label of the kept row of its document (its first occurrence)
            assert ranking.documents is not None
            codes = frame_rows.take(dictionary_codes(ranking.documents)[0])
            key = q.astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            kept_row = np.searchsorted(np.flatnonzero(kept), first[inverse])
        label = ranking.label[kept_row]
        table = self.run.table
        order = frame_rows.array()

        def column(values: pa.ChunkedArray) -> pa.ChunkedArray:
            return values if order is None else take(values, to_arrow(order))

        assert ranking.documents is not None
        out = pd.DataFrame(
            {
                "q": q.astype(np.int64),
                "query_id": pd.Categorical.from_codes(q, categories=pd.Index(self.query_ids, dtype="str")),
                "rank": ranking.pos[kept_row].astype(np.int64) + 1,
                "doc_id": column(ranking.documents).to_pandas(),
                "chunk_id": column(table.column("doc_id")).to_pandas(),
                "score": to_numpy(column(table.column("score"))),
                "label": pd.arrays.IntegerArray(label.astype(np.int64), label == ranking.unjudged_label),
            }
        )
        if "text" in table.column_names:
            out["text"] = column(table.column("text")).to_pandas()
        return out.sort_values(["q", "rank"], kind="stable").reset_index(drop=True)


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values
