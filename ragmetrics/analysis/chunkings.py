"""Chunkings compared: runs made over different chunkings of one corpus, on the same queries and qrels, read at
document level and at span level, with the statistics of :mod:`ragmetrics.analysis.compare`.

* **Document level**: each run's chunks are merged into their documents (a document ranks at its first chunk) and
  read against the dataset's qrels, so two chunkings meet on the same judgments: ``recall@k``, ``ndcg@k`` and the
  same at a token budget (``recall@512tok``: the documents whose chunks fit in T tokens).
* **Span level**: the share of the gold evidence characters the chunks hand over
  (:mod:`ragmetrics.engine.evidence`): ``evidence_recall`` at k chunks and at T tokens, and ``context_precision`` at
  T tokens (the share of the handed-over tokens that are evidence).

At k chunks a chunking of bigger chunks hands over more text and wins recall for that reason alone; at T tokens
every run hands over the same amount of context (every run's tokens counted with one tokenizer: ``auto`` is picked
once, on all the runs' texts together; runs aligned with different tokenizers are refused). The verdict is therefore read at the budget: the chunking with the
highest span-level evidence recall at T tokens (document-level recall at T tokens when fewer than
:data:`ragmetrics.analysis.compare.MIN_GROUP` queries have evidence), with the
paired test against the baseline corrected over the whole table (every run x metric x level), worded as
:func:`ragmetrics.analysis.verdicts.verdict` words it.

The gold evidence, in order of preference: the spans given; else every occurrence of a query's expected answer in
its relevant documents; else each relevant document as a whole (a dataset with document-level qrels only: span
level then reads how much of the relevant documents' text the chunks hand over). :attr:`ChunkingComparison.evidence`
says which.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from ragmetrics.analysis import stats
from ragmetrics.analysis.compare import (
    MIN_GROUP,
    adjusted_intervals,
    bounds_text,
    corrected_rows,
    interval_at_level,
    paired_row,
    untested_shown,
)
from ragmetrics.analysis.verdicts import verdict, verdict_words
from ragmetrics.engine import Alignment, align
from ragmetrics.engine.budgets import shared_tokenizer, tokens_at_depth
from ragmetrics.engine.evidence import evaluate_evidence, spans_from_answers, spans_from_documents, spans_table
from ragmetrics.engine.metrics import better_sign
from ragmetrics.engine.queries import at_queries
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run

Level = Literal["document", "span"]
Evidence = Literal["given", "answers", "documents"]

EVIDENCE_WORDS: dict[Evidence, str] = {
    "given": "the gold spans given",
    "answers": "the expected answers located in the relevant documents",
    "documents": "the relevant documents as a whole (the dataset has no spans and no located answers)",
}
"""What the span level read as gold evidence, in words."""

DEFAULT_K = 10
"""The cut-off in chunks (documents at document level) when none is given."""

DEFAULT_BUDGET = 512
"""The token budget when none is given."""


def level_metrics(k: int, budget: int) -> dict[Level, tuple[str, ...]]:
    """The metrics read at each level, at ``k`` chunks (documents at document level) and at ``budget`` tokens."""
    return {
        "document": (f"recall@{k}", f"ndcg@{k}", f"recall@{budget}tok", f"ndcg@{budget}tok"),
        "span": (f"evidence_recall@{k}", f"evidence_recall@{budget}tok", f"context_precision@{budget}tok"),
    }


@dataclass(frozen=True, eq=False)
class ChunkingComparison:
    """``table``: one row per (level, metric, run) with the columns of :func:`ragmetrics.analysis.compare.paired_row`
    and ``level``, ``p_value_corrected``, ``significant``, ``verdict``; ``tokens``: per run, the mean tokens its top
    ``k`` chunks put in the context, with its 95% Student's t interval; ``winner``: the run with the highest value of
    ``deciding_metric`` (the budget metric the verdict reads); ``summary``: the verdict in words."""

    table: pd.DataFrame
    tokens: pd.DataFrame
    baseline: str
    k: int
    budget: int
    tokenizer: str
    evidence: Evidence
    deciding_metric: str
    winner: str
    summary: str
    correction: str
    alpha: float
    family_size: int

    def to_dict(self) -> dict[str, Any]:
        keep = ["level", "metric", "run", "baseline", "n", "mean", "mean_ci_low", "mean_ci_high", "delta", "ci_low",
                "ci_high", "p_value", "p_value_corrected", "verdict"]  # fmt: skip
        rows = [
            {key: (None if isinstance(v, float) and np.isnan(v) else v) for key, v in row.items()}
            for row in self.table[keep].to_dict(orient="records")
        ]
        return {
            "baseline": self.baseline,
            "k": self.k,
            "budget_tokens": self.budget,
            "tokenizer": self.tokenizer,
            "evidence": EVIDENCE_WORDS[self.evidence],
            "correction": stats.family_text(self.correction, self.family_size),
            "winner": self.winner,
            "summary": self.summary,
            "comparisons": rows,
            "tokens": self.tokens.to_dict(orient="records"),
        }


def gold_evidence(dataset: Dataset, spans: Any = None, rel_level: int = 1) -> tuple[Any, Evidence]:
    """The gold spans the span level reads, and where they came from (see the module)."""
    if spans is not None:
        return spans, "given"
    if "expected_answer" in dataset.queries_table.column_names:
        located = spans_from_answers(dataset, rel_level)
        if located.num_rows:
            return located, "answers"
    return spans_from_documents(dataset, rel_level), "documents"


def compare_chunkings(
    dataset: Dataset,
    runs: Sequence[Run] | Sequence[Alignment],
    *,
    baseline: str | None = None,
    k: int = DEFAULT_K,
    budget: int = DEFAULT_BUDGET,
    spans: Any = None,
    chunk_spans: Any = None,
    tokenizer: TokenizerLike = "auto",
    rel_level: int = 1,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> ChunkingComparison:
    """Compare runs over different chunkings of ``dataset``'s corpus (see the module). ``runs``: runs (aligned here,
    their chunks mapped to documents by their ``source_doc`` column or the dataset's chunk mapping) or alignments
    already made; ``baseline`` defaults to the first. ``spans``/``chunk_spans``: as
    :func:`ragmetrics.engine.evidence.evaluate_evidence`; ``chunk_spans`` may also map each run's name to its own
    table (chunkings that reuse chunk ids, as ``doc#3``, place them differently). The queries compared are the
    baseline's."""
    if len(runs) < 2:
        raise RagMetricsError("comparing chunkings needs at least two runs (one per chunking)")
    stats.checked_test(test)
    correction = stats.checked_correction(correction)
    alignments = [
        item if isinstance(item, Alignment) else align(dataset, item, tokenizer=tokenizer, rel_level=rel_level)
        for item in runs
    ]
    alignments = shared_tokenizer(alignments)
    tokenizers = list(dict.fromkeys(a.tokenizer_name for a in alignments))
    if len(tokenizers) > 1:
        raise RagMetricsError(
            f"the runs count tokens with different tokenizers ({', '.join(tokenizers)}): runs compared at equal token "
            "cost count with one; align them with the same tokenizer"
        )
    names = [a.name for a in alignments]
    if len(set(names)) < len(names):
        raise RagMetricsError(f"two runs share a name among {names}: name each chunking's run apart")
    baseline = baseline or names[0]
    if baseline not in names:
        raise RagMetricsError(f"baseline {baseline!r} is not among the runs {names}")
    gold, evidence = gold_evidence(dataset, spans, rel_level)
    metrics = level_metrics(k, budget)
    by_name = dict(zip(names, alignments))
    ids = by_name[baseline].query_ids

    @functools.cache
    def values(run: str, level: Level) -> dict[str, np.ndarray]:
        alignment = by_name[run]
        if level == "document":
            arrays = {m: alignment.value(m) for m in metrics["document"]}
        else:
            placed = chunk_spans.get(run) if isinstance(chunk_spans, Mapping) else chunk_spans
            arrays = evaluate_evidence(alignment, gold, metrics["span"], chunk_spans=placed).values
        return {m: at_queries(np.asarray(v, dtype=np.float64), alignment.query_ids, ids) for m, v in arrays.items()}

    rows = []
    for level, names_at in metrics.items():
        for metric in names_at:
            base = values(baseline, level)[metric]
            for run in names:
                current = values(run, level)[metric]
                keep = ~(np.isnan(current) | np.isnan(base))
                row = paired_row(metric, run, baseline, ids[keep], current[keep], base[keep], test, n_resamples, seed)
                rows.append({"level": level, **row})
    tested = pd.DataFrame(rows)
    tested.loc[tested["too_few"].astype(bool), ["p_value", "p_t"]] = np.nan  # not tested: no family counts them
    table = adjusted_intervals(corrected_rows(tested, correction, alpha), correction, alpha)
    table["verdict"] = [
        verdict(r.run, r.baseline, r.delta, r.p_value_corrected, alpha, too_few=bool(r.too_few), direction=r.direction,
                sign=better_sign(r.metric))
        for r in table.itertuples(index=False)
    ]  # fmt: skip
    family_size = int(table["p_value"].notna().sum())
    tokens = _tokens(alignments, k)
    evidence_rows = table[table["metric"] == f"evidence_recall@{budget}tok"]
    enough = bool(len(evidence_rows)) and int(evidence_rows["n"].min()) >= MIN_GROUP
    deciding = f"evidence_recall@{budget}tok" if enough else f"recall@{budget}tok"
    winner, summary = _summary(table, deciding, baseline, correction, family_size, budget)
    return ChunkingComparison(
        table=untested_shown(table),  # a row of too few queries: its delta, no interval and no p-value (as compare)
        tokens=tokens,
        baseline=baseline,
        k=k,
        budget=budget,
        tokenizer=alignments[0].tokenizer_name,
        evidence=evidence,
        deciding_metric=deciding,
        winner=winner,
        summary=summary,
        correction=correction,
        alpha=alpha,
        family_size=family_size,
    )


def _tokens(alignments: Sequence[Alignment], k: int) -> pd.DataFrame:
    rows = []
    for alignment in alignments:
        counted = tokens_at_depth(alignment, k)
        low, high = stats.mean_t_interval(counted)
        rows.append({"run": alignment.name, "k": k, "mean_tokens": float(counted.mean()) if len(counted) else 0.0,
                     "ci_low": float(low), "ci_high": float(high)})  # fmt: skip
    return pd.DataFrame(rows, columns=["run", "k", "mean_tokens", "ci_low", "ci_high"])


def _summary(
    table: pd.DataFrame, metric: str, baseline: str, correction: str, family_size: int, budget: int
) -> tuple[str, str]:
    """The winner at equal token cost and the sentence that says it, with the rows of other metrics that a test
    finds going the other way (:func:`_contrary`)."""
    winner, sentence = _deciding_summary(table, metric, baseline, correction, family_size, budget)
    contrary = _contrary(table, metric, winner, baseline)
    return winner, sentence if not contrary else sentence[:-1] + "; " + contrary + "."


CONTRARY_SHOWN = 3
"""How many contrary rows the summary names (the table holds them all)."""


def _contrary(table: pd.DataFrame, metric: str, winner: str, baseline: str) -> str:
    """The rows, on other metrics than the deciding one, where the corrected test goes against the winner: the
    winner significantly worse than the baseline, or (the baseline winning) another run significantly better."""
    others = table[table["metric"] != metric]
    if winner != baseline:
        against = others[(others["run"] == winner) & others["verdict"].isin(["worse", "exactly worse"])]
    else:
        against = others[(others["run"] != baseline) & others["verdict"].isin(["better", "exactly better"])]
    parts = [
        ("it is significantly worse" if winner != baseline else f"{r.run} is significantly better")
        + f" on {r.metric} ({r.delta:+.4f}"
        + (f", p={r.p_value_corrected:.3g})" if pd.notna(r.p_value_corrected) else ")")
        for r in against.head(CONTRARY_SHOWN).itertuples(index=False)
    ]
    more = len(against) - CONTRARY_SHOWN
    return "" if not parts else "but " + "; ".join(parts) + (f"; and {more} more such row(s)" if more > 0 else "")


def _deciding_summary(
    table: pd.DataFrame, metric: str, baseline: str, correction: str, family_size: int, budget: int
) -> tuple[str, str]:
    """The winner on the deciding ``metric`` and the sentence that says it."""
    rows = table[table["metric"] == metric].set_index("run")
    sign = better_sign(metric)  # the best is the lowest where lower is better (tokens_to_evidence)
    winner = str((sign * rows["mean"]).idxmax())
    family = stats.family_text(correction, family_size)
    best = float(rows.at[winner, "mean"])
    if (rows["mean"] == best).all():
        return winner, (
            f"At {budget} tokens of context, every run has the same {metric} ({best:.4f}) on the "
            f"{int(rows['n'].min())} queries compared: none wins at equal token cost."
        )
    head = (
        f"At {budget} tokens of context, {winner} has the {'highest' if sign > 0 else 'lowest'} {metric} ({best:.4f})"
    )
    if winner == baseline:
        others = rows.drop(index=baseline)
        said = [
            f"{run} {r.delta:+.4f} (p={r.p_value_corrected:.3g}, {verdict_words(r.verdict, baseline)})"
            for run, r in others.iterrows()
        ]
        return winner, f"{head}; against it: " + "; ".join(said) + f" ({family})."
    row = rows.loc[winner]
    words = verdict_words(str(row["verdict"]), baseline)
    level = interval_at_level(correction, float(row["ci_level_adjusted"]))
    ends = bounds_text(float(row["ci_low_adjusted"]), float(row["ci_high_adjusted"]))
    return winner, (
        f"{head}: {words}, {row['delta']:+.4f} ({level} {ends}, p={row['p_value_corrected']:.3g}, {family})."
    )


def chunk_spans_table(chunks: Sequence[tuple[str, str, int, int]]) -> pa.Table:
    """A ``chunk_id, doc_id, start, end`` table (as :func:`ragmetrics.io.spans.load_chunk_spans` reads one) from
    ``(chunk_id, doc_id, start, end)`` tuples, for chunkers that know where each chunk lies."""
    return spans_table(chunks, key="chunk_id")
