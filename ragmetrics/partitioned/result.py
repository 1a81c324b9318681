"""The result of a partitioned evaluation: every bucket's table folded into a :class:`PartitionedRun`, whose values
and coverage report equal the in-process engine's on the whole input."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ragmetrics.analysis.merged import Sums, merge_all
from ragmetrics.analysis.values import means, results_dict, values_frame
from ragmetrics.engine import Conventions, Coverage, budgets
from ragmetrics.engine.health import Health, QueryTallies, health_of
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.foundation.errors import RagMetricsWarning
from ragmetrics.foundation.ids import to_numpy
from ragmetrics.partitioned.buckets import (
    EVALUATED,
    FIRST_TOKENS,
    FLAGS,
    SKIPPED,
    TALLIES,
    TOTALS,
    UNKNOWN,
    budgets_of,
    pattern_warning,
    schema,
    starved_of,
)

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class PartitionedRun:
    """One run evaluated bucket by bucket: per-query values in dataset order, the coverage report and the health,
    equal to the in-process engine's. ``ids`` (Arrow text) and :attr:`query_ids` (the same as Python strings, made
    on first use: 10M of them take about 0.7 GB) are None when the per-query rows were written to a file instead of
    collected (the values are kept: means and paired tests need only them)."""

    name: str
    metrics: tuple[str, ...]
    conventions: Conventions
    ids: pa.ChunkedArray | None
    arrays: dict[str, np.ndarray]
    coverage: Coverage
    health: Health
    per_query_file: str | None = None
    sums: Sums | None = None
    """Every bucket's :class:`ragmetrics.analysis.merged.Sums` added: the fingerprints, and the merged intervals
    and tests when the plan asked for resamples (equal, bit for bit, for any bucket count, engine and order)."""
    tokenizer: str | None = None
    """The tokenizer the token budgets (``recall@512tok``) counted with; None when no metric reads a budget."""
    starved: Mapping[int, int] = field(default_factory=dict)
    """Each token budget asked for -> the queries it hands nothing (:func:`ragmetrics.engine.budgets.starved`)."""

    @property
    def budget_notes(self) -> list[str]:
        """A note for each token budget asked for that hands over nothing to some query, as in process
        (:func:`ragmetrics.engine.budgets.nothing_handed`)."""
        return budgets.nothing_handed(self.starved, self.health.queries_ranked)

    @cached_property
    def query_ids(self) -> np.ndarray | None:
        """The evaluated queries' ids in dataset order, as an array of Python strings."""
        return None if self.ids is None else np.array(self.ids.to_pylist(), dtype=object)

    @property
    def means(self) -> dict[str, float]:
        """As :meth:`ragmetrics.Alignment.mean`: over the evaluated queries, NaN values left out."""
        return means(self)

    def array(self, metric: str) -> np.ndarray:

        return self.arrays[str(parse_metric(metric))]

    @property
    def values(self) -> pd.DataFrame:
        """Per-query values: a frame indexed by query_id, one column per metric (:func:`values_frame`)."""
        return values_frame(self)


def combine(
    run_name: str,
    metrics: Sequence[str],
    conventions: Conventions,
    tables: Iterable[pa.Table],
    *,
    keep_ids: bool = True,
    per_query_file: str | None = None,
    tokenizer: str | None = None,
    chunk_pattern: str | None = None,
) -> PartitionedRun:
    """Fold bucket tables (any order, any split) into the run's result. The evaluated queries' rows are the bulk
    (one a query): they are put in dataset order a column at a time, never as a second whole table. A
    ``chunk_pattern`` (the plan's) that matched none of the run's ids is warned of once, in the in-process words
    (:func:`ragmetrics.partitioned.buckets.pattern_warning`)."""
    per_query: list[pa.Table] = []  # the evaluated queries' rows, only the columns read below
    few: list[pa.Table] = []  # the unknown and skipped queries and the totals
    asked = budgets_of(metrics, conventions)
    # the first texts' token counts are kept only when a budget reads them: a column as long as the queries
    wanted = ["position", "query_id", *FLAGS, *TALLIES, *([FIRST_TOKENS] if asked else []), *metrics]
    for part in tables:
        evaluated = to_numpy(part.column("kind")) == EVALUATED
        per_query.append((part if evaluated.all() else part.filter(pa.array(evaluated))).select(wanted))
        if not evaluated.all():
            few.append(part.filter(pa.array(~evaluated)))
    table = pa.concat_tables(per_query) if per_query else schema(metrics).empty_table().select(wanted)
    del per_query  # the concatenation holds the same buffers
    others = pa.concat_tables(few) if few else schema(metrics).empty_table()
    in_order = pc.sort_indices(table.column("position"))

    def column(name: str) -> pa.ChunkedArray:
        return table.column(name).take(in_order)

    query_id = column("query_id")
    coverage = coverage_of(table, others, len(query_id))
    other_kind = to_numpy(others.column("kind"))
    unknown_queries = int(np.count_nonzero(other_kind == UNKNOWN))
    totals = others.filter(pa.array(other_kind == TOTALS))
    missed = pattern_warning(run_name, chunk_pattern, totals)
    if missed is not None:
        warnings.warn(missed, RagMetricsWarning, stacklevel=2)
    tallies = QueryTallies(**{name: to_numpy(column(name)) for name in TALLIES})
    health = health_of(tallies, unknown_queries, coverage.empty_run)
    arrays = {m: _floats(column(m)) for m in metrics}
    starved = starved_of(table, asked)
    emitted = [Sums.from_bytes(b, len(metrics)) for b in totals.column("sums").to_pylist() if b is not None]
    sums = merge_all(emitted, len(metrics), emitted[0].resamples, emitted[0].seed) if emitted else None
    return PartitionedRun(
        run_name,
        tuple(metrics),
        conventions,
        query_id if keep_ids else None,
        arrays,
        coverage,
        health,
        per_query_file=per_query_file,
        sums=sums,
        tokenizer=tokenizer,
        starved=starved,
    )


def coverage_of(evaluated: pa.Table, others: pa.Table, queries_evaluated: int) -> Coverage:
    """The coverage report of a run from its bucket tables' rows: ``evaluated``, rows of evaluated queries (any
    order; all of them or only those a flag of :data:`FLAGS` marks), ``others``, every other row (unknown and
    skipped queries, the totals), and the count of evaluated queries. The lists of ids are in dataset order."""
    others = others.take(pc.sort_indices(others, sort_keys=[("position", "ascending")]))
    kind = to_numpy(others.column("kind"))
    unknown = others.filter(pa.array(kind == UNKNOWN))
    totals = others.filter(pa.array(kind == TOTALS))
    skipped = others.filter(pa.array(kind == SKIPPED))

    def total(name: str) -> int:
        return int(pc.sum(totals.column(name)).as_py() or 0)

    def ids_where(flag: str, *also: pa.Table) -> list[str]:
        """The ids of the flagged queries (the few, filtered before they are put in order), and ``also``'s."""
        flagged = pa.concat_tables([evaluated.select(["position", "query_id"]).filter(evaluated.column(flag)), *also])
        return flagged.column("query_id").take(pc.sort_indices(flagged.column("position"))).to_pylist()

    return Coverage(
        queries_evaluated=queries_evaluated,
        missing_in_run=ids_where("missing_in_run", skipped.select(["position", "query_id"])),
        not_in_dataset=unknown.column("query_id").to_pylist(),
        rows_not_in_dataset=total("unknown_rows"),
        no_judgments=[],
        no_relevant=ids_where("no_relevant"),
        matched_by_text=total("matched_by_text"),
        duplicates_dropped=total("duplicates_dropped"),
        duplicate_queries=ids_where("duplicate"),
        chunks_merged=total("chunks_merged"),
        tied_pairs=total("tied_pairs"),
        tied_queries=ids_where("tied"),
        empty_run=total("run_rows") == 0,
    )


def _floats(values: pa.ChunkedArray) -> np.ndarray:
    array = to_numpy(values.cast(pa.float64())).astype(np.float64, copy=True)
    array.flags.writeable = False
    return array


class PartitionedResult:
    """Results of one or more runs evaluated by an engine: ``runs`` maps a run name to its :class:`PartitionedRun`,
    ``metrics`` are canonical names in the order asked for, ``engine`` names the engine."""

    def __init__(self, runs: dict[str, PartitionedRun], metrics: Sequence[str], engine: str, buckets: int) -> None:
        self.runs = runs
        self.metrics = list(metrics)
        self.engine = engine
        self.buckets = buckets

    @property
    def run_names(self) -> list[str]:
        return list(self.runs)

    def __getitem__(self, name: str) -> PartitionedRun:
        return self.runs[name]

    def mean(self) -> pd.DataFrame:
        """Means: one row per run, one column per metric."""

        frame = pd.DataFrame(
            [r.means for r in self.runs.values()], index=pd.Index(self.run_names, name="run"), columns=self.metrics
        )
        return frame.astype(np.float64)

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """As :meth:`ragmetrics.analysis.evaluate.EvalResult.to_dict`."""

        return results_dict(self.runs.values(), per_query)
