"""Token budgets: a metric read on what fits in ``T`` tokens of context (``recall@512tok``), per query.

The cut, once per alignment and tokenizer: every chunk the run retrieved for a query, in ranking order (before
chunks were merged into documents: a document's later chunks cost tokens too), costs its tokens; the chunks whose
cumulative count stays within ``T`` are handed over, the chunk that passes ``T`` and all after it are not. A
query's depth is the number of documents handed over (a document ranks at its first chunk, so they are its top
``depth`` documents). The metric is then the registry's ``@k`` kernel at each query's own ``k = depth``: one kernel
call for every distinct depth, its columns gathered per query. A depth of 0 (the first chunk alone passes ``T``)
reads the kernel on the ranking with nothing retrieved: recall, precision, judged and every other metric are then 0
(judged as ir_measures' ``Judged@k`` reads an empty ranking), and :func:`nothing_handed` says for how many queries.

Tokens come from the run's chunk texts (its ``text`` column), else from the dataset's corpus (title and text, as
the text metrics read it, looked up by the row's own id: the chunk id of a chunk run). A row with neither is an
error, never 0 tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import zip_longest
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.engine import metrics as registry
from ragmetrics.engine.metrics import MetricSpec
from ragmetrics.engine.order import FrameRows, positions, running_sum, segment_starts
from ragmetrics.engine.text import TextEvidence
from ragmetrics.engine.tokens import CJK_SAMPLE, Tokenizer, resolve, spread
from ragmetrics.foundation.errors import NoTextError, RagMetricsError
from ragmetrics.foundation.ids import to_arrow
from ragmetrics.foundation.kernels import take

if TYPE_CHECKING:
    from ragmetrics.engine.accumulators import Ranking
    from ragmetrics.engine.alignment import Alignment
    from ragmetrics.engine.evidence import EvidenceSpec


def sorted_rows(alignment: Alignment) -> tuple[np.ndarray, FrameRows, np.ndarray | None]:
    """Every retrieved row before chunks were merged, in ranking order: its query, its table row, and which rows
    are a document's first (None: all are)."""
    if alignment.merged is not None:
        q, rows, kept = alignment.merged
        return q, rows, kept
    ranking = alignment.ranking
    return ranking.q, ranking.doc_rows or FrameRows(None, len(ranking.q)), None


def row_texts(alignment: Alignment) -> list[str]:
    """The text each retrieved row (before merging, in ranking order) hands over: the run's chunk text, else the
    corpus's title and text of the row's own id. A text cell that is empty or blank is no text (it would cost
    nothing, and hand over a chunk free): it is read from the corpus, or refused with the cells that lack one."""
    _q, rows, _kept = sorted_rows(alignment)
    table = alignment.run.table
    order = rows.array()
    if "text" in table.column_names:
        own = table.column("text")
        own_values = own.to_pylist() if order is None else take(own, to_arrow(order)).to_pylist()
        if all(text is not None and str(text).strip() for text in own_values):
            return [str(t) for t in own_values]
    ids_column = table.column("doc_id")
    ids = ids_column.to_pylist() if order is None else take(ids_column, to_arrow(order)).to_pylist()
    if "text" not in table.column_names:
        own_values = [None] * len(ids)
    lookup = _corpus_texts(alignment)
    out: list[str] = []
    missing: list[str] = []
    for doc, text in zip(ids, own_values):
        if text is not None and str(text).strip():
            out.append(str(text))
            continue
        found = None if lookup is None else lookup.get(doc)
        if found is None:
            missing.append(doc)
            out.append("")
        else:
            out.append(found)
    if missing:
        run = alignment.run.name
        distinct = list(dict.fromkeys(missing))
        if lookup is None:
            lacking = (
                f"{len(distinct)} retrieved id(s) have an empty or blank text cell (e.g. "
                f"{', '.join(map(repr, distinct[:3]))})"
                if "text" in table.column_names
                else "the run has no text column"
            )
            raise NoTextError(
                run,
                f"run {run!r}: token budgets count the tokens of the retrieved texts; {lacking} and the dataset has "
                "no corpus: give a run with every chunk's text, or the corpus (--corpus corpus.jsonl, a BEIR "
                "folder, Dataset(documents=...))",
            )
        raise RagMetricsError(
            f"run {run!r}: token budgets count the tokens of the retrieved texts; {len(distinct)} retrieved id(s) "
            f"have no text in the run and are not in the corpus (e.g. {', '.join(map(repr, distinct[:3]))})"
        )
    return out


def _corpus_texts(alignment: Alignment) -> dict[str, str] | None:
    text = alignment.dataset.document_texts()
    return None if text is None else {str(k): v for k, v in text.to_dict().items()}


def tokenizer(alignment: Alignment) -> Tokenizer:
    """The tokenizer the alignment's token budgets read (``auto`` resolved on its texts)."""
    return alignment.once(("tokenizer",), lambda: resolve(alignment.tokenizer, handed_texts(alignment)))


def shared_tokenizer(alignments: Sequence[Alignment]) -> list[Alignment]:
    """The alignments counting tokens with one tokenizer, as the runs of one comparison must: those counting with
    ``auto`` get the tokenizer ``auto`` picks on all their retrieved texts together (each run's distinct texts taken
    in turn, so every run weighs alike in the sample :func:`ragmetrics.engine.tokens.cjk_share` reads). An alignment
    whose own pick is that one is returned as it is, another counts with it (its row texts kept, not read again)."""
    auto = [a for a in alignments if isinstance(a.tokenizer, str) and a.tokenizer == "auto"]
    if len(auto) < 2:
        return list(alignments)
    share = max(CJK_SAMPLE // len(auto), 1)  # every run's texts as many in the sample, spread over each run
    distinct = [spread(list(dict.fromkeys(handed_texts(a))), share) for a in auto]
    chosen = resolve("auto", [t for turn in zip_longest(*distinct) for t in turn if t is not None])
    return [_counting_with(a, chosen) if a in auto and tokenizer(a).name != chosen.name else a for a in alignments]


def _counting_with(alignment: Alignment, chosen: Tokenizer) -> Alignment:
    """``alignment`` counting with ``chosen``, its row texts kept."""
    texts = handed_texts(alignment)
    counting = alignment.with_tokenizer(chosen)
    counting.once(("row texts",), lambda: texts)
    return counting


def handed_texts(alignment: Alignment) -> list[str]:
    """:func:`row_texts`, read once per alignment (the token counts and the evidence metrics share them)."""
    texts: list[str] = alignment.once(("row texts",), lambda: row_texts(alignment))
    return texts


def row_tokens(alignment: Alignment) -> np.ndarray:
    """The token count of each retrieved row before merging, in ranking order (int64, read-only)."""

    def count() -> np.ndarray:
        counts = tokenizer(alignment).counts(handed_texts(alignment))
        counts.flags.writeable = False
        return counts

    counted: np.ndarray = alignment.once(("row tokens",), count)
    return counted


def depths(alignment: Alignment, budgets: np.ndarray) -> np.ndarray:
    """Each query's number of documents handed over within each budget: shape (n_queries, len(budgets)), int64."""
    q, _rows, kept = sorted_rows(alignment)
    n_queries = alignment.n_queries
    tokens = row_tokens(alignment)
    cumulative = running_sum(tokens, q, segment_starts(q, n_queries))
    budgets = np.asarray(budgets, dtype=np.int64)
    out = np.empty((n_queries, len(budgets)), dtype=np.int64)
    first = q if kept is None else q[kept]
    first_cumulative = cumulative if kept is None else cumulative[kept]
    # within a query the cumulative count never falls, so what fits is a prefix: its documents are counted
    for j, budget in enumerate(budgets.tolist()):  # one pass per budget asked for, vectorised over the rows
        out[:, j] = np.bincount(first[first_cumulative <= budget], minlength=n_queries)
    return out


def asked(specs: Iterable[MetricSpec | EvidenceSpec]) -> list[int]:
    """The token budgets ``specs`` read (``recall@512tok``: 512), in their order."""
    return [int(spec.tokens) for spec in specs if spec.tokens is not None]


def first_tokens(alignment: Alignment) -> np.ndarray:
    """Each query's token count of its first retrieved text (0 when it retrieves nothing), int64: what
    :func:`starved` reads. It adds up over any split of the queries (:mod:`ragmetrics.partitioned`)."""
    q, _rows, _kept = sorted_rows(alignment)
    starts = segment_starts(q, alignment.n_queries)
    out = np.zeros(alignment.n_queries, np.int64)
    ranked = np.flatnonzero(np.diff(starts) > 0)
    out[ranked] = row_tokens(alignment)[starts[ranked]]
    return out


def first_tokens_asked(alignment: Alignment, budgets: Sequence[int]) -> np.ndarray | None:
    """:func:`first_tokens` when a token budget is asked for (``budgets``, :func:`asked`), else None: no budget
    reads the count, so none is made (a run without texts has none to make). In process and bucket by bucket
    alike."""
    return first_tokens(alignment) if len(budgets) else None


def starved(first: np.ndarray, budgets: Iterable[int]) -> dict[int, int]:
    """For each budget (smallest first), how many queries it hands nothing: those whose first retrieved text alone
    passes it, of ``first`` (:func:`first_tokens`). Counts of disjoint sets of queries add up."""
    return {budget: int(np.count_nonzero(first > budget)) for budget in sorted(set(budgets))}


def nothing_handed(counts: Mapping[int, int], ranked: int) -> list[str]:
    """A note for each budget that hands over nothing to some query that retrieved something (``counts``: budget
    -> such queries, :func:`starved`; ``ranked``: the queries that retrieved something): those queries score 0 at
    that budget, as an empty ranking does (``judged`` too, as ``judged@k`` on an empty ranking). One note per such
    budget, smallest first; none when every query that retrieved something gets at least its first text."""
    return [
        f"the budget of {budget} tokens hands over nothing for {count} of {ranked} queries (each one's first "
        f"retrieved text is longer): their @{budget}{registry.BUDGET_SUFFIX} values are 0"
        for budget, count in sorted(counts.items())
        if count
    ]


def budget_like_cutoffs(specs: Iterable[MetricSpec], depth: int) -> list[str]:
    """A note for each cut-off in ranks that reads like a token budget (a power of two from 64, none of trec_eval's
    cut-offs) and is deeper than the run ranks for any query (``depth``): ``recall@512`` on a run of 20 reads its
    20 ranks, where ``recall@512tok`` was likely meant."""
    notes = []
    for spec in specs:
        k = spec.k
        if spec.tokens is None and k is not None and k >= 64 and k & (k - 1) == 0 and k > depth:
            notes.append(
                f"{spec} reads {k} ranks, and the run ranks {depth} at most; a budget of {k} tokens is "
                f"{spec.name}@{k}tok"
            )
    return notes


def budget_notes(alignment: Alignment, budgets: Iterable[int]) -> list[str]:
    """:func:`nothing_handed` of an alignment's queries for ``budgets``."""
    asked_for = sorted(set(budgets))
    first = first_tokens_asked(alignment, asked_for)
    if first is None:
        return []
    q, _rows, _kept = sorted_rows(alignment)
    ranked = int(np.count_nonzero(np.diff(segment_starts(q, alignment.n_queries)) > 0))
    return nothing_handed(starved(first, asked_for), ranked)


def context_tokens(alignment: Alignment, budget: int | None = None) -> np.ndarray:
    """Each query's tokens handed over: every retrieved chunk's (``budget``: those within it), float64."""
    q, _rows, _kept = sorted_rows(alignment)
    tokens = row_tokens(alignment)
    if budget is not None:
        cumulative = running_sum(tokens, q, segment_starts(q, alignment.n_queries))
        tokens = np.where(cumulative <= budget, tokens, 0)
    return np.bincount(q, weights=tokens, minlength=alignment.n_queries).astype(np.float64)


def tokens_at_depth(alignment: Alignment, k: int) -> np.ndarray:
    """Each query's tokens in the first ``k`` chunks the run retrieved for it (rows before chunks were merged into
    documents, in ranking order): what a pipeline handing over its top ``k`` chunks puts in the context, float64."""
    q, _rows, _kept = sorted_rows(alignment)
    tokens = row_tokens(alignment)
    place = positions(segment_starts(q, alignment.n_queries), alignment.n_queries)
    return np.bincount(q, weights=np.where(place < k, tokens, 0), minlength=alignment.n_queries).astype(np.float64)


def _empty(ranking: Ranking) -> Ranking:
    """The ranking with nothing retrieved (the judgments kept): what a budget that fits no chunk hands over."""
    none = np.zeros(0, dtype=np.int64)
    evidence = ranking.evidence
    if evidence is not None:
        evidence = TextEvidence(
            keyword_q=none,
            keyword_first=none,
            answer_found=np.zeros(0, dtype=bool),
            n_keywords=evidence.n_keywords,
            has_answer=evidence.has_answer,
        )
    return replace(
        ranking,
        q=none,
        pos=none.astype(np.int32),
        label=ranking.label[:0],
        n_ret=np.zeros(ranking.n_queries, dtype=np.int64),
        doc_rows=None,
        judged_rows=None,
        evidence=evidence,
    )


def compute(alignment: Alignment, ranking: Ranking, specs: list[MetricSpec]) -> dict[MetricSpec, np.ndarray]:
    """Per-query values of token-budget specs (``spec.tokens`` set), read on ``ranking`` (the alignment's, with
    text evidence for the text metrics)."""
    if alignment.conventions.unjudged != "nonrelevant":
        raise RagMetricsError(
            f"token budgets ({', '.join(map(str, specs))}) are read with unjudged='nonrelevant' only: a condensed or "
            "completed ranking is not the context that was handed over"
        )
    budgets = np.array(sorted({int(s.tokens) for s in specs if s.tokens is not None}), dtype=np.int64)
    depth = depths(alignment, budgets)
    column = {int(b): j for j, b in enumerate(budgets.tolist())}
    ks = np.unique(np.maximum(depth, 1))
    at = np.searchsorted(ks, np.maximum(depth, 1))
    rows = np.arange(ranking.n_queries)
    none = depth == 0
    out: dict[MetricSpec, np.ndarray] = {}
    for name in dict.fromkeys(s.name for s in specs):
        info = registry.METRICS[name]
        assert info.cut is not None
        values = info.cut(ranking, ks)
        empty = info.cut(_empty(ranking), np.ones(1, dtype=np.int64))[:, 0] if none.any() else None
        for spec in (s for s in specs if s.name == name):
            j = column[int(spec.tokens or 0)]
            value = values[rows, at[:, j]]
            if empty is not None:
                value = np.where(none[:, j], empty, value)
            out[spec] = value
    return out
