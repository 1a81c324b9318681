"""Paired statistics of two runs through a partitioned engine, folded bucket by bucket: the merged sums
(:mod:`ragmetrics.analysis.merged`) of each query's difference, so the paired t test, the sign-flip randomization
test and Student's t interval of the delta need no run's per-query values in one place.

Both runs are bucketed by the same function of the query id into the same number of buckets, so bucket ``k`` of one
run and bucket ``k`` of the other hold the same queries: their bucket tables are taken in step (an engine yields its
buckets in bucket order; Spark yields every bucket in one table), joined by query id, and reduced to the sums of the
differences (run minus baseline, over the queries where both have a value) before the next bucket is read.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragmetrics.analysis.merged import Sums, id_keys, sums_of
from ragmetrics.analysis.stats import delta_method
from ragmetrics.engine import Conventions, Coverage, budgets
from ragmetrics.engine.health import Health
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.ids import to_numpy
from ragmetrics.io import unique_names
from ragmetrics.partitioned.buckets import (
    EVALUATED,
    FLAGS,
    TOTALS,
    UNKNOWN,
    Plan,
    budgets_of,
    pattern_warning,
    starved_of,
)
from ragmetrics.partitioned.engine import Options, engine_class
from ragmetrics.partitioned.files import budget_tokenizer, canonical_metrics, counting, run_name
from ragmetrics.partitioned.result import coverage_of
from ragmetrics.partitioned.scripts import file_sides


@dataclass(frozen=True)
class PairedStatistics:
    """One metric's paired comparison from merged sums: ``n`` queries with both values, the two runs' means over
    them and the mean ``delta`` (run minus baseline; fixed point: within 2^-32 of the float means), its
    Student's t interval (differences all 0 or 1 included, as in process), the differences' sample standard
    deviation (the t intervals beside a corrected p-value read it too), the two-sided p-values of the paired t test
    and of the sign-flip randomization test (NaN when the sums hold no resamples), and the queries the run ``wins``, ``ties`` and ``losses`` on
    (:data:`ragmetrics.analysis.stats.TIE_TOLERANCE`); ``ci_method``: the interval's method
    (:data:`ragmetrics.analysis.stats.DeltaIntervalMethod`), ``t`` from 2 queries on."""

    metric: str
    n: int
    run_mean: float
    baseline_mean: float
    delta: float
    ci_low: float
    ci_high: float
    sd_difference: float
    p_t: float
    p_randomization: float
    wins: int = 0
    ties: int = 0
    losses: int = 0
    ci_method: str = "t"


def statistics_of(sums: Sums, sides: Sums, metrics: Sequence[str], confidence: float = 0.95) -> list[PairedStatistics]:
    """The :class:`PairedStatistics` of sums of differences and of the sums of both sides' values (the run's
    metrics, then the baseline's), one per metric."""
    out = []
    m = len(metrics)
    for i, metric in enumerate(metrics):
        low, high = sums.interval(i, confidence, binomial=False)
        means = sides.mean(i), sides.mean(m + i)
        n, wins, losses = sums.count(i), sums.above(i), sums.below(i)
        tests = sums.sd(i), sums.t_p(i), sums.sign_flip_p(i) if sums.resamples else np.nan
        out.append(
            PairedStatistics(
                metric, n, *means, sums.mean(i), low, high, *tests, wins, n - wins - losses, losses, delta_method(n)
            )
        )
    return out


def difference_sums(
    run: pa.Table, baseline: pa.Table, metrics: Sequence[str], resamples: int, seed: int
) -> tuple[Sums, Sums]:
    """The sums of ``run - baseline`` over the evaluated queries of two bucket tables of the same queries where
    both have a value, and (without resamples) the sums of each side's values there: the run's metrics, then the
    baseline's."""
    columns = ["query_id", *metrics]
    left = run.filter(pc.equal(run.column("kind"), EVALUATED)).select(columns)
    right = baseline.filter(pc.equal(baseline.column("kind"), EVALUATED)).select(columns)
    right = right.rename_columns(["query_id", *(f"baseline:{m}" for m in metrics)])
    joined = left.join(right, keys="query_id", join_type="inner")
    ids = joined.column("query_id")
    keys = id_keys(ids)
    mine = [to_numpy(joined.column(m)).astype(np.float64) for m in metrics]
    theirs = [to_numpy(joined.column(f"baseline:{m}")).astype(np.float64) for m in metrics]
    differences = [a - b for a, b in zip(mine, theirs)]
    both = [np.where(np.isnan(d), np.nan, v) for values in (mine, theirs) for d, v in zip(differences, values)]
    return sums_of(ids, differences, resamples, seed, keys), sums_of(ids, both, 0, 0, keys)


def compare_files(
    dataset: str,
    baseline: str,
    run: str,
    metrics: Sequence[str],
    **options: Any,
) -> list[PairedStatistics]:
    """``run`` against ``baseline`` (files) on ``dataset``: :func:`compare_pairs` of one pair."""
    return compare_pairs(dataset, [run, baseline], [(0, 1)], metrics, **options)[0]


@dataclass(frozen=True)
class RunTotals:
    """What the refusals read of one run compared bucket by bucket, added up from its bucket tables without its
    per-query values: its evaluated queries, those without a relevant document, each metric's queries with a value
    (``valued``, in the order of ``metrics``), and what its :attr:`health` is made of."""

    name: str
    metrics: tuple[str, ...]
    conventions: Conventions
    queries_evaluated: int = 0
    no_relevant: int = 0
    valued: tuple[int, ...] = ()
    queries_ranked: int = 0
    queries_meeting: int = 0
    judged_share: float = 0.0
    """The sum over the ranked queries of the share of their top 10 that is judged."""
    relevant_found: int = 0
    relevant: int = 0
    unknown_queries: int = 0
    run_rows: int = 0
    flagged: tuple[pa.Table, ...] = ()
    """Each bucket's rows the :attr:`coverage` reads: those of the queries a coverage list names, and the totals."""
    starved: Mapping[int, int] = field(default_factory=dict)
    """Each token budget asked for -> the queries it hands nothing (:func:`ragmetrics.engine.budgets.starved`)."""

    def add(self, table: pa.Table) -> RunTotals:
        """These totals and a bucket table's."""
        kind = to_numpy(table.column("kind"))
        evaluated = table.filter(pa.array(kind == EVALUATED))
        named = np.logical_or.reduce([to_numpy(table.column(flag)).astype(bool) for flag in FLAGS])
        kept = table.drop_columns([*self.metrics, "sums"]).filter(pa.array((kind != EVALUATED) | named))
        ranked = to_numpy(evaluated.column("ranked")).astype(bool)
        meeting = to_numpy(evaluated.column("meeting")).astype(bool)
        judged_top = to_numpy(evaluated.column("judged_top"))[ranked]
        ranked_top = to_numpy(evaluated.column("ranked_top"))[ranked]
        totals = table.filter(pa.array(kind == TOTALS))
        valued = [
            int(np.count_nonzero(~np.isnan(to_numpy(evaluated.column(m)).astype(np.float64)))) for m in self.metrics
        ]
        starved = starved_of(evaluated, budgets_of(self.metrics, self.conventions))
        return replace(
            self,
            queries_evaluated=self.queries_evaluated + evaluated.num_rows,
            no_relevant=self.no_relevant + int(np.count_nonzero(to_numpy(evaluated.column("no_relevant")))),
            valued=tuple(a + b for a, b in zip(self.valued or (0,) * len(self.metrics), valued)),
            queries_ranked=self.queries_ranked + int(np.count_nonzero(ranked)),
            queries_meeting=self.queries_meeting + int(np.count_nonzero(meeting & ranked)),
            judged_share=self.judged_share + float((judged_top / ranked_top).sum()),
            relevant_found=self.relevant_found + int(to_numpy(evaluated.column("relevant_found")).sum()),
            relevant=self.relevant + int(to_numpy(evaluated.column("relevant")).sum()),
            unknown_queries=self.unknown_queries + int(np.count_nonzero(kind == UNKNOWN)),
            run_rows=self.run_rows + int(pc.sum(totals.column("run_rows")).as_py() or 0),
            flagged=(*self.flagged, kept),
            starved={budget: self.starved.get(budget, 0) + count for budget, count in starved.items()},
        )

    @property
    def totals_rows(self) -> pa.Table:
        """Every bucket's totals row (:data:`ragmetrics.partitioned.buckets.TOTALS`), kept in :attr:`flagged`."""
        rows = [table.filter(pc.equal(table.column("kind"), TOTALS)) for table in self.flagged]
        return pa.concat_tables(rows) if rows else pa.table({"run_rows": pa.array([], pa.int64())})

    @property
    def coverage(self) -> Coverage:
        """The run's coverage report, equal to the in-process one
        (:func:`ragmetrics.partitioned.result.coverage_of`)."""
        rows = pa.concat_tables(self.flagged) if self.flagged else None
        if rows is None:
            return Coverage(queries_evaluated=0, empty_run=True)
        evaluated = to_numpy(rows.column("kind")) == EVALUATED
        return coverage_of(rows.filter(pa.array(evaluated)), rows.filter(pa.array(~evaluated)), self.queries_evaluated)

    @property
    def budget_notes(self) -> list[str]:
        """A note for each token budget asked for that hands over nothing to some query, as in process
        (:func:`ragmetrics.engine.budgets.nothing_handed`)."""
        return budgets.nothing_handed(self.starved, self.queries_ranked)

    @property
    def health(self) -> Health:
        """The run's health (:func:`ragmetrics.engine.health.health_of`), its mean share of judged documents added
        bucket by bucket (equal to the in-process one but for the last bits)."""
        distinct = self.unknown_queries + self.queries_ranked
        known = 1.0 if distinct == 0 or self.run_rows == 0 else 1.0 - self.unknown_queries / distinct
        judged = self.judged_share / self.queries_ranked if self.queries_ranked else 0.0
        return Health(
            queries_ranked=self.queries_ranked,
            queries_meeting=self.queries_meeting,
            judged_at_10=judged,
            relevant_retrieved=self.relevant_found / self.relevant if self.relevant else 0.0,
            run_queries_known=known,
            judged_of_ranked=judged,
        )


@dataclass(frozen=True)
class PairedRuns:
    """:func:`paired_runs`' answer: one :class:`PairedStatistics` per metric for each pair (``statistics``), the
    :class:`RunTotals` of each run a pair names (``runs``: index into the runs given -> totals), and the tokenizer
    the token budgets counted with (None when no metric reads a budget)."""

    statistics: list[list[PairedStatistics]]
    runs: dict[int, RunTotals]
    tokenizer: str | None = None


def compare_pairs(
    dataset: str,
    runs: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    metrics: Sequence[str],
    **options: Any,
) -> list[list[PairedStatistics]]:
    """Each ``(run, baseline)`` of ``pairs`` (indexes into ``runs``, files) on ``dataset``: the ``statistics`` of
    :func:`paired_runs` (the same options)."""
    return paired_runs(dataset, runs, pairs, metrics, **options).statistics


def paired_runs(
    dataset: str,
    runs: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    metrics: Sequence[str],
    *,
    engine: str = "duckdb",
    conventions: Conventions | None = None,
    buckets: int | None = None,
    resamples: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    memory_limit: str | None = None,
    work_dir: str | None = None,
    spark_master: str | None = None,
    tokenizer: TokenizerLike = "auto",
    chunk_pattern: str | None = None,
    corpus_size: int | None = None,
    **changes: Any,
) -> PairedRuns:
    """Each ``(run, baseline)`` of ``pairs`` (indexes into ``runs``, files) on ``dataset`` through ``engine``, one
    :class:`PairedStatistics` per metric, equal bit for bit for any engine and bucket count (the resampling is a
    function of the query id), and each run's :class:`RunTotals`. Every run is read once, all runs' buckets in step,
    whatever the number of pairs. ``resamples`` (and ``seed``): the sign-flip resamples of the randomization
    p-value (0, the default: none, ``p_randomization`` NaN; the t test and the intervals need none). ``tokenizer``:
    what the token budgets count with (as
    :func:`ragmetrics.partitioned.evaluate_files`), as ``chunk_pattern`` (warned of once per run when it matches
    none of its ids) and ``corpus_size``. A run is named as the loaders name it, runs of the same name apart as in process
    (:func:`ragmetrics.io.unique_names`)."""
    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    names = canonical_metrics(list(metrics), conventions)
    options = Options(buckets=buckets, memory_limit=memory_limit, work_dir=work_dir, spark_master=spark_master)
    used = sorted({i for pair in pairs for i in pair})
    named = unique_names([run_name(path) for path in runs])
    with engine_class(engine)(options) as executor:
        if not executor.same_buckets_for_every_run:
            raise RagMetricsError(
                f"--engine {engine} cuts each run into its own slices; paired statistics take two runs' buckets in "
                "step: use --engine polars or duckdb (or inprocess)"
            )
        qrels = executor.describe(dataset, "dataset")
        inputs = {i: executor.describe(runs[i], "run") for i in used}
        counted_with = budget_tokenizer(names, conventions, tokenizer, engine, file_sides(list(inputs.values())))
        tokenizer = counting(tokenizer, counted_with)
        count = buckets or max(executor.buckets_for(qrels, found) for found in inputs.values())
        plans = {
            i: Plan(named[i], f.side, qrels.side, names, conventions, corpus_size, chunk_pattern, tokenizer=tokenizer)
            for i, f in inputs.items()
        }
        in_step = zip(*(executor.bucket_tables(plans[i], qrels, inputs[i], count) for i in used))
        totals = [Sums.empty(len(names), resamples, seed) for _ in pairs]
        sides = [Sums.empty(2 * len(names)) for _ in pairs]
        added = {i: RunTotals(plans[i].run_name, names, conventions) for i in used}
        for tables in in_step:
            bucket = dict(zip(used, tables))
            for i, table in bucket.items():
                added[i] = added[i].add(table)
            for k, (mine, theirs) in enumerate(pairs):
                differences, values = difference_sums(bucket[mine], bucket[theirs], names, resamples, seed)
                totals[k], sides[k] = totals[k].merge(differences), sides[k].merge(values)
    for run in added.values():
        missed = pattern_warning(run.name, chunk_pattern, run.totals_rows)
        if missed is not None:
            warnings.warn(missed, RagMetricsWarning, stacklevel=2)
    statistics = [statistics_of(total, side, names, confidence) for total, side in zip(totals, sides)]
    return PairedRuns(statistics, added, counted_with)
