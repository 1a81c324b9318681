"""The Judge page's assisted judging: a judge's labels beside people's, their agreement, the human sample to label
and the metric corrected by it (prediction-powered inference, :mod:`ragmetrics.analysis.ppi`).

Conventions. ``labels`` is every judgment given on a dataset's lineage, oldest first (``query_id, doc_id, label,
source``; :func:`ragmetrics.store.provenance.lineage_labels`): ``source`` empty for a person's label,
``judge:NAME@VERSION#HASH`` for a judge's. A pair's latest label of each side counts. Everything is measured on
the lineage's original judgments (``base``: the dataset no label went into) and its ``pool``, the unjudged pairs
of the runs' top depth (:func:`ragmetrics.analysis.judging.pool`).

The human sample is the plan's order (:func:`plan_order`, :func:`ragmetrics.analysis.ppi.sample_plan`, seeded,
random or stratified by category) read from its start: a planned query is labelled when people labelled every
pooled pair of it (one with no pooled pair needs nothing), and the sample is the longest labelled prefix of the
plan, so it stays a random sample whatever order people work in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dashboard.core.share import SAMPLE_PLANS
from dashboard.core.text import md_escape
from ragmetrics.analysis import ppi
from ragmetrics.analysis.compare import (
    DEFAULT_FAMILY,
    bounds_text,
    interval_at_level,
    mean_bounds_text,
    untested_shown,
)
from ragmetrics.analysis.evaluate import RunResult, evaluate
from ragmetrics.analysis.judging import judged_twice
from ragmetrics.analysis.label_agreement import LabelAgreement, label_agreement
from ragmetrics.analysis.stats import correction_title, family_text, is_uncorrected
from ragmetrics.analysis.verdicts import SAID
from ragmetrics.engine.conventions import Conventions
from ragmetrics.engine.metrics import MetricSpec
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.provenance import HUMAN, parse_source

__all__ = [
    "HUMAN",
    "PLANS",
    "SEED",
    "Sample",
    "agreement",
    "badge",
    "corrected_deltas",
    "corrected_table",
    "delta_words",
    "human_labels",
    "judge_labels",
    "judge_reach_words",
    "judge_sources",
    "judge_title",
    "plan_order",
    "plan_queue",
    "sample_of",
    "to_judge",
]

SEED = 0
"""The plan's seed: the same dataset and runs give every judge (tab, server) the same plan."""
PLANS = SAMPLE_PLANS


def _latest(labels: pd.DataFrame) -> pd.DataFrame:
    out = labels.astype({"query_id": str, "doc_id": str}).drop_duplicates(["query_id", "doc_id"], keep="last")
    return out[["query_id", "doc_id", "label"]].reset_index(drop=True)


def human_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """People's labels, the latest per pair: ``query_id, doc_id, label``."""
    return _latest(labels[labels["source"] == HUMAN])


def judge_labels(labels: pd.DataFrame, source: str) -> pd.DataFrame:
    """The judge ``source``'s labels, the latest per pair: ``query_id, doc_id, label``."""
    return _latest(labels[labels["source"] == source])


def judge_sources(labels: pd.DataFrame) -> list[str]:
    """The judges that labelled on the lineage (their sources), the latest to label first."""
    theirs = labels[labels["source"] != HUMAN]
    return list(dict.fromkeys(reversed(theirs["source"].astype(str).tolist())))


def judge_name(source: str) -> str:
    """``judge:endpoint@1#0123456789abcdef`` -> ``endpoint`` (its registry name)."""
    parsed = parse_source(source)
    return parsed[0] if parsed else ""


def judge_title(source: str) -> str:
    """``judge:endpoint@1#0123456789abcdef`` -> ``endpoint v1 · 01234567`` (its configuration's hash, cut)."""
    parsed = parse_source(source)
    return f"{parsed[0]} v{parsed[1]} · {parsed[2][:8]}" if parsed else ""


def to_judge(pool: pd.DataFrame, labels: pd.DataFrame, source: str) -> pd.DataFrame:
    """The pool's pairs a judge of ``source`` has still to grade: every pair it has not labelled yet (a run started
    again resumes where the last one stopped). People's pairs too: the corrected means compare the judge's grade
    with the person's on the human sample, so a judge run after people labelled must grade their pairs (its grade
    never overrides a person's: :func:`ragmetrics.store.provenance.add_judge_labels`)."""
    if pool.empty:
        return pool
    done = labels[labels["source"] == source]
    taken = set(zip(done["query_id"].astype(str), done["doc_id"].astype(str)))
    keep = [(q, d) not in taken for q, d in zip(pool["query_id"].astype(str), pool["doc_id"].astype(str))]
    return pool[keep].reset_index(drop=True)


def plan_order(base: Dataset, query_ids: Sequence[str], plan: str) -> list[str]:
    """Every query of ``query_ids`` in the order to label them (:func:`ragmetrics.analysis.ppi.sample_plan`,
    :data:`SEED`): ``random``, or stratified by ``category``; the dataset's negative queries left out (their answer
    is not in the corpus: nothing is pooled of them). The plan does not depend on the labels given."""
    negative = set(base.negative_queries())
    ids = [str(q) for q in query_ids if str(q) not in negative]
    strata = base.facet("category", ids) if plan == "category" else None
    return ppi.sample_plan(ids, seed=SEED, strata=strata)


@dataclass(frozen=True)
class Sample:
    """The human sample: ``queries`` (the plan's longest labelled prefix), ``next_query`` (the first planned query
    not labelled yet, None when all are), ``pairs_left`` (its pooled pairs without a person's label) and
    ``beyond`` (planned queries labelled after the prefix: they join the sample when the gap before them is
    filled)."""

    queries: tuple[str, ...]
    next_query: str | None
    pairs_left: int
    beyond: int


def sample_of(plan: Sequence[str], pool: pd.DataFrame, human: pd.DataFrame) -> Sample:
    """The human sample people's labels ``human`` make of ``plan`` over ``pool`` (see the module's note)."""
    done = set(zip(human["query_id"].astype(str), human["doc_id"].astype(str)))
    open_pairs: dict[str, int] = {}
    for q, d in zip(pool["query_id"].astype(str), pool["doc_id"].astype(str)):
        if (q, d) not in done:
            open_pairs[q] = open_pairs.get(q, 0) + 1
    prefix: list[str] = []
    for i, query in enumerate(plan):
        if open_pairs.get(query, 0):
            beyond = sum(not open_pairs.get(q, 0) and _touched(q, pool) for q in plan[i + 1 :])
            return Sample(tuple(prefix), query, open_pairs[query], beyond)
        prefix.append(query)
    return Sample(tuple(prefix), None, 0, 0)


def _touched(query: str, pool: pd.DataFrame) -> bool:
    return bool((pool["query_id"].astype(str) == query).any())


def plan_queue(todo: pd.DataFrame, plan: Sequence[str]) -> pd.DataFrame:
    """The open pairs ``todo`` (the page's queue, labelled and skipped pairs out) in the plan's order: its queries'
    pairs first to last, each query's by best rank; a ``planned`` column numbers the query in the plan (1 first)."""
    if todo.empty:
        return todo.assign(planned=pd.Series(dtype=np.int64))
    position = {q: i + 1 for i, q in enumerate(plan)}
    out = todo.assign(planned=todo["query_id"].astype(str).map(position).fillna(len(position) + 1).astype(np.int64))
    return out.sort_values(["planned", "best_rank", "doc_id"], kind="stable").reset_index(drop=True)


def agreement(
    human: pd.DataFrame, judge: pd.DataFrame, pool: pd.DataFrame, base: Dataset, max_grade: int
) -> LabelAgreement | None:
    """:func:`ragmetrics.analysis.label_agreement.label_agreement` of the judge's labels with people's on the pairs
    both labelled, with each pair's best rank in the pool, its query's category and its document's length in
    words (where the judge errs); None when they share no pair."""
    both = judge.merge(human[["query_id", "doc_id"]], on=["query_id", "doc_id"])
    if both.empty:
        return None
    pooled = pool.astype({"query_id": str, "doc_id": str})
    extra = pooled[["query_id", "doc_id", "best_rank"]].rename(columns={"best_rank": "rank"})
    if "text" in pooled.columns:
        extra = extra.assign(doc_length=[len(t.split()) if isinstance(t, str) else np.nan for t in pooled["text"]])
    facts = both.merge(extra, on=["query_id", "doc_id"], how="left")
    facts["category"] = base.facet("category", facts["query_id"].to_numpy())
    return label_agreement(human, facts, max_grade=max_grade)


def badge(human: pd.DataFrame, judge: pd.DataFrame) -> str:
    """``H human / J judge labels``: people's labels, and the judge's on pairs no person labelled (a person's wins
    where both did)."""
    people = set(zip(human["query_id"], human["doc_id"]))
    theirs = sum((q, d) not in people for q, d in zip(judge["query_id"], judge["doc_id"]))
    return f"{len(people):,} human / {theirs:,} judge labels"


def corrected_table(
    base: Dataset,
    runs: Sequence[Run],
    spec: MetricSpec,
    human: pd.DataFrame,
    judge: pd.DataFrame,
    sample: Sequence[str],
    *,
    conventions: Conventions | None = None,
    strata: bool = False,
) -> pd.DataFrame:
    """Each run's ``spec`` three ways: corrected by the human ``sample`` (PPI++), the judge's labels alone and the
    sample's human labels alone, each with its 95% interval (:func:`ragmetrics.analysis.ppi.corrected_means`;
    ``strata``: by category). The judge's labels fill the pairs ``base`` leaves unjudged; people's are added
    (winning where they differ). Columns: ``run, corrected, corrected_low, corrected_high, judge_only,
    judge_low, judge_high, human_only, human_low, human_high, n_labelled, n_queries, too_few, no_spread, more,
    projected``
    (the half width were ``more`` queries labelled beyond these; a ``too_few`` row has no corrected interval, as
    every output shows it: :func:`ragmetrics.analysis.compare.untested_shown`). Fewer than
    :data:`ragmetrics.analysis.ppi.MIN_LABELLED` labelled queries: a
    :class:`~ragmetrics.foundation.errors.RagMetricsError`."""
    under_judge, under_people, strata_of = _under(base, runs, [spec], human, judge, conventions, strata)
    frame = untested_shown(
        ppi.corrected_means(under_judge, under_people, list(sample), metrics=[str(spec)], strata=strata_of)
    )
    names = {
        "estimate": "corrected", "ci_low": "corrected_low", "ci_high": "corrected_high",
        "judge": "judge_only", "human": "human_only",
    }  # fmt: skip
    columns = ["run", "corrected", "corrected_low", "corrected_high", "judge_only", "judge_low", "judge_high",
               "human_only", "human_low", "human_high", "n_labelled", "n_queries", "too_few", "no_spread", "more",
               "projected"]  # fmt: skip
    return frame.rename(columns=names)[columns]


def _under(
    base: Dataset,
    runs: Sequence[Run],
    specs: Sequence[MetricSpec],
    human: pd.DataFrame,
    judge: pd.DataFrame,
    conventions: Conventions | None,
    strata: bool,
) -> tuple[dict[str, RunResult], dict[str, RunResult], dict[str, str] | None]:
    """The runs evaluated on ``specs`` under the judge's labels (filling ``base``'s holes) and under people's (added,
    winning), and each query's category when ``strata``."""
    as_qrels = {"label": "relevance"}
    judged, people = judged_twice(base, judge.rename(columns=as_qrels), human.rename(columns=as_qrels))
    under_judge = evaluate(judged, list(runs), list(specs), conventions=conventions, warn=False).runs
    under_people = evaluate(people, list(runs), list(specs), conventions=conventions, warn=False).runs
    strata_of = None
    if strata:
        ids = next(iter(under_judge.values())).query_ids
        strata_of = dict(zip(np.asarray(ids).astype(str), base.facet("category", ids)))
    return under_judge, under_people, strata_of


def corrected_deltas(
    base: Dataset,
    runs: Sequence[Run],
    baseline: str,
    spec: MetricSpec,
    human: pd.DataFrame,
    judge: pd.DataFrame,
    sample: Sequence[str],
    *,
    family_specs: Sequence[MetricSpec] = (),
    conventions: Conventions | None = None,
    strata: bool = False,
    correction: str = "holm",
    alpha: float = 0.05,
    family: str = DEFAULT_FAMILY,
) -> pd.DataFrame:
    """Each run's paired difference from ``baseline`` on ``spec``, corrected by the human ``sample``, beside the
    judge-only and human-only differences (:func:`ragmetrics.analysis.ppi.corrected_comparison`): its p-value
    corrected by ``correction`` over Compare's ``family`` (:data:`ragmetrics.analysis.compare.FAMILIES`) of the runs
    on every metric of ``family_specs`` (``spec`` among them; default ``spec`` alone), and its interval adjusted the
    same way: ``run, delta, ci_low_adjusted, ci_high_adjusted, ci_level_adjusted, ci_method_adjusted,
    p_value_corrected, verdict, family_size, family_exact, family_covers (said by :func:`family_words`), judge_delta, judge_low, judge_high, human_delta, human_low, human_high, n_labelled,
    n_queries, differing, too_few, exact, no_spread`` (the flags :func:`ragmetrics.analysis.ppi.unreadable_rows` reads:
    a too-few row's interval is not shown, so no caution is about it)
    (``verdict``: :func:`ragmetrics.analysis.verdicts.verdict`'s code, said by :func:`delta_words`)."""
    specs = list(dict.fromkeys([*family_specs, spec]))
    under_judge, under_people, strata_of = _under(base, runs, specs, human, judge, conventions, strata)
    frame = ppi.corrected_comparison(
        under_judge, under_people, list(sample), baseline=baseline, metrics=[str(s) for s in specs],
        correction=correction, alpha=alpha, strata=strata_of, family=family,
    )  # fmt: skip
    columns = ["run", "delta", "ci_low_adjusted", "ci_high_adjusted", "ci_level_adjusted", "ci_method_adjusted",
               "p_value_corrected", "verdict", "family_size", "family_exact", "family_covers", "judge_delta", "judge_low", "judge_high",
               "human_delta", "human_low", "human_high", "n_labelled", "n_queries", "differing", "too_few", "exact",
               "no_spread"]  # fmt: skip
    if frame.empty:
        return pd.DataFrame(columns=columns)
    return frame[frame["metric"] == str(spec)][columns].reset_index(drop=True)


def family_words(deltas: pd.DataFrame, correction: str) -> str:
    """The family the p-values of :func:`corrected_deltas` were corrected over, in the CLI's words
    (:func:`ragmetrics.analysis.stats.family_text` of the computation's ``family_size`` and ``family_covers``)."""
    return family_text(correction, int(deltas["family_size"].iloc[0]), str(deltas["family_covers"].iloc[0]))


def judge_reach_words(pool: pd.DataFrame, judge: pd.DataFrame, depth: int) -> str:
    """What the judge labelled of the ``pool`` (the unjudged pairs of the runs' top ``depth``), in words: all of it,
    or how much, where it ran at another depth or before a run was added (the rest count as the qrels leave them)."""
    pairs = set(zip(pool["query_id"].astype(str), pool["doc_id"].astype(str))) if len(pool) else set()
    labelled = set(zip(judge["query_id"].astype(str), judge["doc_id"].astype(str))) if len(judge) else set()
    reached = len(pairs & labelled)
    if reached == len(pairs):
        return f"labelled the unjudged documents of the runs' top {depth}"
    return (
        f"labelled {reached:,} of the {len(pairs):,} unjudged documents of the runs' top {depth} (the others count as "
        "the qrels leave them: run the judge at this depth on the Judge page)"
    )


def mean_words(row: Any, *, others_intervals: bool) -> str:
    """One row of :func:`corrected_table` in words (markdown): the run's corrected mean with its 95% interval (a
    too-few row: none, :data:`ragmetrics.analysis.ppi.TOO_FEW_WORDS` saying why, as the CLI; a ``no_spread`` row:
    none, its width 0 measuring nothing), then its judge-only
    and human-only means (``others_intervals``: with their intervals)."""
    if row.too_few:
        interval = f"({ppi.TOO_FEW_WORDS})"
    elif row.no_spread:  # width 0 measures nothing, least of all certainty: no interval, as the CLI
        interval = "(no interval: the labelled queries score alike)"
    else:
        interval = f"[{row.corrected_low:.3f}, {row.corrected_high:.3f}]"

    def alone(mean: float, low: float, high: float) -> str:
        if not others_intervals:
            return f"{mean:.3f}"
        # a sample's interval of width 0 (a stratified one that scored alike) measures nothing: none, as the CLI's
        return f"{mean:.3f} {mean_bounds_text(*ppi.sample_ends(low, high), digits=3)}"

    return (
        f"**{md_escape(str(row.run))}**: corrected **{row.corrected:.3f}** {interval} · judge-only "
        f"{alone(row.judge_only, row.judge_low, row.judge_high)} · human-only "
        f"{alone(row.human_only, row.human_low, row.human_high)}"
    )


def delta_words(row: Any, baseline: str, correction: str) -> str:
    """One row of :func:`corrected_deltas` as Compare's corrected panel says it (markdown): the corrected Δ, its
    interval named as the CLI names it (:func:`ragmetrics.analysis.compare.interval_at_level`), the verdict in the
    words of :data:`ragmetrics.analysis.verdicts.SAID` (its ``mark``: the CLI's story of significance, one
    registry), the p-value corrected by ``correction`` (``no p-value`` where it has none) and the judge-only and
    human-only Δs. A too-few row shows neither interval nor p-value, as the CLI
    (:data:`ragmetrics.analysis.ppi.TOO_FEW_WORDS`)."""
    judged = f"{md_escape(SAID[row.verdict].mark)} ({_p_text(row.p_value_corrected, correction)})"
    interval = (
        f"{interval_at_level(correction, row.ci_level_adjusted, row.ci_method_adjusted)} "
        f"{bounds_text(row.ci_low_adjusted, row.ci_high_adjusted, digits=3)}"
    )
    if row.verdict == "too few":  # the CLI's words: a test on so few is not to be trusted (ppi.MIN_TESTED)
        interval, judged = "no interval", md_escape(ppi.TOO_FEW_WORDS)
    return (
        f"**{md_escape(str(row.run))}** − {md_escape(baseline)}: corrected Δ **{row.delta:+.3f}** {interval} · "
        f"{judged} · judge-only {row.judge_delta:+.3f} · human-only {row.human_delta:+.3f}"
    )


def _p_text(p: float | None, correction: str) -> str:
    """A corrected p-value as the panel says it: ``Holm p 0.042``, ``no p-value`` where it has none."""
    p_name = "p" if is_uncorrected(correction) else f"{correction_title(correction)} p"
    return "no p-value" if p is None or math.isnan(p) else f"{p_name} {p:.3g}"
