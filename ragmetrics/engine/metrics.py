"""The metric registry: the one place a metric is added.

A metric is a :class:`MetricInfo` (name, aliases, formula, conventions) plus a
vectorised kernel over a :class:`~ragmetrics.ranking.Ranking`. Names follow
ranx / ir_measures habits (``ndcg@10``, ``recall@5``, ``mrr``, ``map@100``);
:func:`parse_metric` accepts case-insensitive aliases (``nDCG@10``, ``P@5``,
``R@5``, ``RR``, ``AP``, ``hit_rate@5``, ``success@5``) and returns the
canonical :class:`MetricSpec`.

Kernels return one value per evaluated query: shape ``(n_queries, len(ks))``
for cut-off metrics (``ks`` are 1-based cut-offs), shape ``(n_queries,)`` for
metrics computed over the whole ranking.

Token budgets: every metric with a cut-off kernel (:attr:`MetricInfo.budget`) is also read at a budget of
``T`` tokens, named ``name@Ttok`` (``recall@512tok``; ``@512tokens`` is read too). Each query's ranking is
cut after the last document whose chunks all fit: the chunks handed over are counted in ranking order
(every retrieved chunk, also the later chunks of a document already ranked), and the chunk whose
cumulative count passes ``T`` is not included, nor any chunk after it. The metric is then its ``@k``
kernel at that query's own depth ``k`` (the documents ranked before the cut), so precision@Ttok divides
by the documents handed over, not by a fixed k (f1 and unj likewise, relative_precision by the smaller of
that and R, and nDCG cuts its ideal ranking there); a budget that the first chunk alone exceeds hands over
nothing (every metric as for an empty ranking). With one token per document and ``T = k`` each equals ``name@k`` whenever the ranking holds at
least ``k`` documents (recall, hits, mrr, map and judged whatever its length). See :mod:`ragmetrics.engine.budgets` and, for the
tokenizers, :mod:`ragmetrics.engine.tokens`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from ragmetrics.engine.accumulators import Gain
from ragmetrics.foundation.errors import MetricNameError, RagMetricsError

if TYPE_CHECKING:
    from ragmetrics.engine.accumulators import Ranking
    from ragmetrics.engine.text import TextEvidence

KRule = Literal["required", "optional", "none"]
CutKernel = Callable[["Ranking", np.ndarray], np.ndarray]
"""``(ranking, ks) -> (n_queries, len(ks))`` float64 matrix (``ks``: 1-based cut-offs)."""
FullKernel = Callable[["Ranking"], np.ndarray]
PersistenceKernel = Callable[["Ranking", float], np.ndarray]
"""``(ranking, p) -> (n_queries,)``: a metric of the user's persistence ``p`` (rank-biased precision)."""


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is: its canonical name, aliases, text for people, and kernels.

    ``cut`` computes the metric at cut-offs ``ks`` (see :data:`CutKernel`); ``full`` over the whole
    ranking (for metrics whose ``k`` is optional or absent). ``trec_eval``
    names the trec_eval measure it equals (``None`` when trec_eval has none): a cut-off family's name (``P``: ``P_5``),
    or, for a metric whose cut-off is optional, trec_eval's ``*_cut`` measure, whose uncut name is the metric uncut
    (``ndcg_cut``: ``ndcg``, ``ndcg_cut_10``); see :func:`trec_eval_name`.
    """

    name: str
    pretty: str
    k: KRule
    formula: str
    conventions: str
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    cut: CutKernel | None = None
    full: FullKernel | None = None
    needs_corpus: bool = False
    curve: bool = False
    llamaindex: str | None = field(default=None)
    title: str = ""
    """The name in a page's headings and pickers (``Precision``); the short ``pretty`` (``P``) when empty."""
    reads_judged_only: bool = False
    """The metric skips unjudged documents by its own definition (bpref), so ``nonrelevant`` and ``skip`` do not
    change it; ``relevant`` judges them, which does."""
    needs_text: bool = False
    """Read from the ranked documents' text (the run's chunk text or the dataset's corpus), not the judgments."""
    persistence: float | None = None
    """The default of the metric's persistence parameter ``p`` (rbp: 0.9, as trec_eval); None when it takes none.
    ``rbp_p=0.95`` (trec_eval's printed name) or ``rbp.p=0.95`` (its ``-m`` form) asks for another ``p``."""
    with_p: PersistenceKernel | None = None
    higher_is_better: bool = True
    """False for a metric that measures a lack (unj@k, rbp_resid: unjudged documents): every verdict, win, rank, best
    and gate reads its deltas the other way (:func:`better_sign`)."""
    reads_relevant_count: bool = False
    """Reads R, the ideal ranking or the count of judged non-relevant documents, so judging a document relevant
    can lower it (a new relevant document far down raises R more than the sum: AP 1.0 can fall to 0.52); the
    bounds the judgments leave open are then searched over how many are judged relevant
    (:mod:`ragmetrics.engine.bounds`)."""

    def __post_init__(self) -> None:
        if not self.title:
            object.__setattr__(self, "title", self.pretty)

    @property
    def budget(self) -> bool:
        """Read at a token budget too (``name@Ttok``): every metric with a cut-off kernel."""
        return self.cut is not None


@dataclass(frozen=True, order=True)
class MetricSpec:
    """A metric with its cut-off: ``MetricSpec("ndcg", 10)`` is ``ndcg@10``."""

    name: str
    k: int | None = None
    p: float | None = None
    """The persistence of a metric that takes one (rbp), None for its default."""
    tokens: int | None = None
    """The token budget T of ``name@Ttok`` (``k`` is then None); None for a metric read at ranks."""

    def __str__(self) -> str:
        base = self.name if self.p is None else f"{self.name}_p={self.p:g}"
        return base + self._cut()

    def _cut(self) -> str:
        if self.tokens is not None:
            return f"@{self.tokens}{BUDGET_SUFFIX}"
        return "" if self.k is None else f"@{self.k}"

    @property
    def info(self) -> MetricInfo:
        return METRICS[self.name]

    @property
    def pretty(self) -> str:
        base = METRICS[self.name].pretty + ("" if self.p is None else f"_p={self.p:g}")
        return base + self._cut()

    @property
    def title(self) -> str:
        """``Precision@5``, ``nDCG@10``: the registry's title with the cut-off."""
        base = METRICS[self.name].title + ("" if self.p is None else f" (p={self.p:g})")
        return base + self._cut()


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator in float64, 0 where the denominator is 0."""
    numerator = np.asarray(numerator)  # integer counts are divided as they are: no float64 copy first
    denominator = np.broadcast_to(np.asarray(denominator, dtype=np.float64), numerator.shape)
    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _col(values: np.ndarray) -> np.ndarray:
    return values[:, None]


# --- kernels -----------------------------------------------------------------------------


def _matrix(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return np.empty((r.n_queries, len(ks)), dtype=np.float64)


def _precision(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return np.divide(r.hits_at(ks), ks[None, :].astype(np.float64), out=_matrix(r, ks))


def _recall(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return _safe_divide(r.hits_at(ks), _col(r.n_rel))


def _f1(r: Ranking, ks: np.ndarray) -> np.ndarray:
    # 2 * hits / (k + R) in one matrix: k + R is exact and doubling is exact, so this equals the textbook order
    out = np.add(ks[None, :], _col(r.n_rel), dtype=np.float64, out=_matrix(r, ks))
    np.divide(r.hits_at(ks), out, out=out, dtype=np.float64)
    out *= 2.0
    return out


def _hits(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return np.minimum(r.hits_at(ks), 1.0, out=_matrix(r, ks))  # counts are >= 0: 1 where any relevant document


def _judged(r: Ranking, ks: np.ndarray) -> np.ndarray:
    # ir_measures' Judged@k: a ranking shorter than k is read over what it ranks (0 when it ranks nothing)
    return _safe_divide(r.judged_at(ks), np.minimum(ks[None, :], _col(r.n_ret)))


def _evidence(r: Ranking) -> TextEvidence:
    if r.evidence is None:
        raise RagMetricsError("this ranking carries no text evidence; text metrics are computed by an Alignment")
    return r.evidence


def _keyword_recall(r: Ranking, ks: np.ndarray) -> np.ndarray:
    evidence = _evidence(r)
    depth = min(int(ks.max()), int(r.n_ret.max(initial=0)) + 1)  # past every ranking the count stops growing
    shallow = evidence.keyword_first < depth
    # each found keyword counted at the rank where it is first found, then summed along the ranks
    cells = evidence.keyword_q[shallow] * depth + evidence.keyword_first[shallow]
    found = np.bincount(cells, minlength=r.n_queries * depth).reshape(r.n_queries, depth)
    np.cumsum(found, axis=1, out=found)
    hits = found[:, np.minimum(ks, depth) - 1].astype(np.float64)
    out = np.full(hits.shape, np.nan)
    asked = evidence.n_keywords > 0
    out[asked] = hits[asked] / evidence.n_keywords[asked, None]
    return out


def _answer_in(r: Ranking, ks: np.ndarray) -> np.ndarray:
    evidence = _evidence(r)
    first = np.zeros(r.n_queries, dtype=np.int64)
    rows = np.flatnonzero(evidence.answer_found)
    queries, at = np.unique(r.q[rows], return_index=True)  # rows are sorted by (q, pos): the first wins
    first[queries] = r.pos[rows[at]] + 1
    out = ((first[:, None] > 0) & (first[:, None] <= ks[None, :])).astype(np.float64)
    out[~evidence.has_answer] = np.nan
    return out


def _rr_cut(r: Ranking, ks: np.ndarray) -> np.ndarray:
    first = _col(r.first_rel_rank)  # 1-based, 0 when none retrieved
    return np.where((first > 0) & (first <= ks[None, :]), 1.0 / np.maximum(first, 1), 0.0)


def _rr(r: Ranking) -> np.ndarray:
    return np.where(r.first_rel_rank > 0, 1.0 / np.maximum(r.first_rel_rank, 1), 0.0)


def _ap_cut(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return _safe_divide(r.precision_sum_at(ks), _col(r.n_rel))


def _ap(r: Ranking) -> np.ndarray:
    return _safe_divide(r.precision_sum_full(), r.n_rel)


def _ndcg_cut(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return _safe_divide(r.dcg_at(ks, Gain.LINEAR), r.ideal_dcg_at(ks, Gain.LINEAR))


def _ndcg(r: Ranking) -> np.ndarray:
    return _safe_divide(r.dcg_full(Gain.LINEAR), r.ideal_dcg_full(Gain.LINEAR))


def _ndcg_exp_cut(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return _safe_divide(r.dcg_at(ks, Gain.EXPONENTIAL), r.ideal_dcg_at(ks, Gain.EXPONENTIAL))


def _ndcg_exp(r: Ranking) -> np.ndarray:
    return _safe_divide(r.dcg_full(Gain.EXPONENTIAL), r.ideal_dcg_full(Gain.EXPONENTIAL))


def _rprec(r: Ranking) -> np.ndarray:
    return _safe_divide(r.hits_at_own_r(), r.n_rel)


def _bpref(r: Ranking) -> np.ndarray:
    return _safe_divide(r.bpref_sum(), r.n_rel)


def _relative_precision(r: Ranking, ks: np.ndarray) -> np.ndarray:
    return _safe_divide(r.hits_at(ks), np.minimum(ks[None, :], _col(r.n_rel)))


# --- trec_eval's set measures: the retrieved documents as one unranked set ------------------------


def _set_precision(r: Ranking) -> np.ndarray:
    return _safe_divide(r.hits_full(), r.n_ret)


def _set_recall(r: Ranking) -> np.ndarray:
    return _safe_divide(r.hits_full(), r.n_rel)


def _set_f1(r: Ranking) -> np.ndarray:
    return _safe_divide(2.0 * r.hits_full(), r.n_ret + r.n_rel)  # 2PR / (P + R) with P = h / n, R = h / R


def _set_map(r: Ranking) -> np.ndarray:
    return _set_precision(r) * _set_recall(r)


def _set_relative_precision(r: Ranking) -> np.ndarray:
    return _safe_divide(r.hits_full(), np.minimum(r.n_ret, r.n_rel))


def _accuracy(r: Ranking, ks: np.ndarray) -> np.ndarray:
    if r.corpus_size is None:
        raise RagMetricsError(
            "accuracy@k needs the corpus size (the number of documents in the collection); "
            "give it (the CLI's --corpus-size or --corpus; corpus_size= or corpus= in Python), or load a BEIR folder "
            "with its corpus"
        )
    n = float(r.corpus_size)
    tp = r.hits_at(ks)
    retrieved = np.minimum(ks[None, :], _col(r.n_ret)).astype(np.float64)
    false_pos = retrieved - tp
    false_neg = _col(r.n_rel) - tp
    true_neg = n - tp - false_pos - false_neg
    if np.any(true_neg < 0):
        raise RagMetricsError(
            f"accuracy@k: corpus_size={r.corpus_size} is smaller than the documents one query "
            "retrieved plus its relevant documents; expected the size of the whole collection"
        )
    return (tp + true_neg) / n


# --- trec_eval 10.0: rank-biased precision, its residual, unjudged at k -----------------------

RBP_PERSISTENCE = 0.9
"""trec_eval's default persistence for rbp and rbp_resid."""


def _unjudged_rows(r: Ranking) -> np.ndarray:
    """trec_eval's unjudged documents: not in the qrels, or labelled with a negative number."""
    return ~r.judged | (r.label < 0)


def _rbp_gain(r: Ranking) -> np.ndarray:
    """Each row's gain: its label, divided by the query's highest label when that is above 1 (trec_eval scales the
    gains 0..max into [0, 1]); 0 for unjudged, zero and negative labels."""
    top = r.ideal_pos == 0  # the ideal ranking is sorted by label, descending: its first row has the highest label
    highest = np.ones(r.n_queries, dtype=np.float64)
    highest[r.ideal_q[top]] = np.maximum(r.ideal_label[top], 1)
    return np.where(r.label > 0, r.label, 0) / highest[r.q]


def _rbp_p(r: Ranking, p: float) -> np.ndarray:
    weights = _rbp_gain(r) * np.power(p, r.pos, dtype=np.float64)
    return (1.0 - p) * np.bincount(r.q, weights=weights, minlength=r.n_queries)


def _rbp(r: Ranking) -> np.ndarray:
    return _rbp_p(r, RBP_PERSISTENCE)


def _rbp_resid_p(r: Ranking, p: float) -> np.ndarray:
    unjudged = _unjudged_rows(r)
    weight = np.bincount(r.q[unjudged], weights=np.power(p, r.pos[unjudged], dtype=np.float64), minlength=r.n_queries)
    count = np.bincount(r.q[unjudged], minlength=r.n_queries)
    tail = np.power(p, r.n_ret, dtype=np.float64)  # the ranks below the last retrieved one
    return np.where(count > 0, tail + (1.0 - p) * weight, 0.0)


def _rbp_resid(r: Ranking) -> np.ndarray:
    return _rbp_resid_p(r, RBP_PERSISTENCE)


def _unj(r: Ranking, ks: np.ndarray) -> np.ndarray:
    rows = np.flatnonzero(_unjudged_rows(r))
    order = np.argsort(ks, kind="stable")
    # each unjudged row counts at every cut-off past its rank: the first such cut-off (in ks ascending), then a
    # cumulative sum along the cut-offs
    first = np.searchsorted(ks[order], r.pos[rows] + 1, side="left")
    width = len(ks) + 1
    counts = np.bincount(r.q[rows] * width + first, minlength=r.n_queries * width).reshape(r.n_queries, width)
    at_sorted = np.cumsum(counts[:, :-1], axis=1)
    out = _matrix(r, ks)
    out[:, order] = at_sorted / ks[order][None, :].astype(np.float64)
    return out


# --- the registry ------------------------------------------------------------------------

_TIES = "Ranking: score descending, ties broken by doc_id descending (trec_eval)."
_SET = "Read on the retrieved set, unranked: order and ties do not change it; a document retrieved twice counts once."

METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo(
            "precision",
            "P",
            "required",
            "TP@k / k",
            "Divides by k even when fewer than k documents were retrieved (missing ranks count as "
            "non-relevant). Relevant = label >= rel_level. " + _TIES,
            aliases=("p", "prec"),
            title="Precision",
            trec_eval="P",
            cut=_precision,
            curve=True,
        ),
        MetricInfo(
            "recall",
            "Recall",
            "required",
            "TP@k / R, R = number of relevant documents in the qrels",
            "0 when the query has no relevant document. " + _TIES,
            aliases=("r", "rec"),
            trec_eval="recall",
            cut=_recall,
            curve=True,
            reads_relevant_count=True,
        ),
        MetricInfo(
            "f1",
            "F1",
            "required",
            "2·TP@k / (k + R) = harmonic mean of P@k and Recall@k",
            "0 when nothing relevant is in the top k. Not trec_eval's set_F (set_f1 here, read over every retrieved "
            "document). " + _TIES,
            aliases=("f",),
            cut=_f1,
            curve=True,
            reads_relevant_count=True,
        ),
        MetricInfo(
            "hits",
            "Hits",
            "required",
            "1 if any relevant document is in the top k, else 0 (mean = hit rate)",
            "Binary, like ir_measures Success@k and ranx hit_rate@k; not ranx's hits (a count). " + _TIES,
            aliases=("hit_rate", "hitrate", "success", "hit"),
            trec_eval="success",
            cut=_hits,
            curve=True,
        ),
        MetricInfo(
            "mrr",
            "MRR",
            "optional",
            "1 / rank of the first relevant document (0 if none; mrr@k: 0 beyond k)",
            "Per query this is the reciprocal rank; its mean is MRR. " + _TIES,
            aliases=("rr", "recip_rank", "reciprocal_rank"),
            trec_eval="recip_rank",
            cut=_rr_cut,
            full=_rr,
            curve=True,
        ),
        MetricInfo(
            "map",
            "MAP",
            "optional",
            "(1/R) · Σ over relevant ranks i ≤ k of TP@i / i",
            "Divides by all R relevant documents, retrieved or not, also for map@k, never by min(k, R). " + _TIES,
            aliases=("ap", "average_precision", "map_cut"),
            trec_eval="map_cut",
            reads_relevant_count=True,
            cut=_ap_cut,
            full=_ap,
            curve=True,
        ),
        MetricInfo(
            "ndcg",
            "nDCG",
            "optional",
            "DCG@k / IDCG@k, DCG = Σ_{i≤k} label_i / log2(i + 1)",
            "Gain = the raw label (linear, trec_eval), labels <= 0 give 0; rel_level does not "
            "change gains. IDCG from all judged labels of the query sorted descending, cut at k. "
            "IDCG = 0 gives 0. " + _TIES,
            aliases=("ndcg_cut",),
            trec_eval="ndcg_cut",
            reads_relevant_count=True,
            cut=_ndcg_cut,
            full=_ndcg,
            curve=True,
        ),
        MetricInfo(
            "ndcg_exp",
            "nDCG-exp",
            "optional",
            "DCG@k / IDCG@k with gain 2^label − 1",
            "Exponential gain (Burges; ranx ndcg_burges). Equals ndcg for binary labels. " + _TIES,
            aliases=("ndcg_burges",),
            reads_relevant_count=True,
            cut=_ndcg_exp_cut,
            full=_ndcg_exp,
        ),
        MetricInfo(
            "rprec",
            "R-Prec",
            "none",
            "TP@R / R",
            "Precision at rank R (the number of relevant documents); divides by R even when "
            "fewer were retrieved; 0 when R = 0. " + _TIES,
            aliases=("r_precision", "rprecision", "r-prec", "r-precision"),
            trec_eval="Rprec",
            reads_relevant_count=True,
            full=_rprec,
        ),
        MetricInfo(
            "bpref",
            "bpref",
            "none",
            "(1/R) · Σ over relevant retrieved d of (1 − min(N_d, R) / min(N, R))",
            "Unjudged and negative-label documents are skipped. N = judged non-relevant documents (0 <= label < "
            "rel_level) of the query, N_d = those ranked above d; a term is 1 when N_d = 0. " + _TIES,
            trec_eval="bpref",
            reads_judged_only=True,
            reads_relevant_count=True,
            full=_bpref,
        ),
        MetricInfo(
            "relative_precision",
            "RelP",
            "required",
            "TP@k / min(k, R)",
            "Precision up to rank R, recall past it; 0 when R = 0. It reaches 1 when the top k holds as many relevant "
            "documents as it can. " + _TIES,
            aliases=("relative_p", "relp"),
            title="Relative precision",
            trec_eval="relative_P",
            cut=_relative_precision,
            reads_relevant_count=True,
        ),
        MetricInfo(
            "set_precision",
            "SetP",
            "none",
            "TP / n, n = documents retrieved",
            "Every retrieved document counts, however deep; 0 when nothing is retrieved. " + _SET,
            aliases=("set_p", "setp"),
            title="Set precision",
            trec_eval="set_P",
            full=_set_precision,
        ),
        MetricInfo(
            "set_recall",
            "SetR",
            "none",
            "TP / R, TP over every retrieved document",
            "Recall@k with k past the deepest ranking; 0 when R = 0. " + _SET,
            aliases=("setr",),
            title="Set recall",
            trec_eval="set_recall",
            full=_set_recall,
        ),
        MetricInfo(
            "set_f1",
            "SetF",
            "none",
            "2·TP / (n + R)",
            "Beta 1, trec_eval's default; 0 when nothing relevant is retrieved. Other betas (set_F.2) are not "
            "computed. The harmonic mean of set precision and set recall. " + _SET,
            aliases=("set_f", "setf"),
            title="Set F1",
            trec_eval="set_F",
            full=_set_f1,
        ),
        MetricInfo(
            "set_map",
            "SetAP",
            "none",
            "(TP / n) · (TP / R)",
            "0 when n = 0 or R = 0. Set precision times set recall. " + _SET,
            aliases=("setap",),
            title="Set AP",
            trec_eval="set_map",
            full=_set_map,
        ),
        MetricInfo(
            "set_relative_precision",
            "SetRelP",
            "none",
            "TP / min(n, R)",
            "0 when n = 0 or R = 0. It reaches 1 when the set holds as many relevant documents as it can. " + _SET,
            aliases=("set_relative_p", "setrelp"),
            title="Set relative precision",
            trec_eval="set_relative_P",
            full=_set_relative_precision,
        ),
        MetricInfo(
            "judged",
            "Judged",
            "required",
            "judged in the top k / min(k, retrieved)",
            "How much of the top k the judgments cover (ir_measures Judged@k): a document is judged when the qrels "
            "label it, whatever the label. A negative label counts as judged. A ranking shorter than k is read over "
            "what it ranks, as ir_measures reads it; an empty one scores 0. Read on the ranking as retrieved (under "
            "--unjudged skip every remaining document is judged). " + _TIES,
            aliases=("judged_at",),
            cut=_judged,
            curve=False,
        ),
        MetricInfo(
            "keyword_recall",
            "KwRecall",
            "required",
            "expected keywords found in the top-k texts / expected keywords",
            "Case-insensitive literal match; a query without expected keywords is left out (NaN). The text is that "
            "of the top k documents (every retrieved chunk of a document, else the corpus title and text). "
            "Every expected keyword counts, however many. Needs text; no judgments are read.",
            aliases=("keyword_recall_at", "kw_recall"),
            cut=_keyword_recall,
            needs_text=True,
            title="Keyword recall",
        ),
        MetricInfo(
            "answer_in",
            "AnswerIn",
            "required",
            "1 if the expected answer occurs in a top-k text, else 0",
            "Case-insensitive literal match of the whole expected answer; a query without one is left out (NaN). "
            "Needs text; no judgments are read.",
            aliases=("answer_at", "answer_recall"),
            cut=_answer_in,
            needs_text=True,
            title="Answer in top k",
        ),
        MetricInfo(
            "accuracy",
            "Accuracy",
            "required",
            "(TP + TN) / N over a corpus of N documents, top k retrieved",
            "Needs the corpus size. FP = min(k, retrieved) − TP, FN = R − TP, TN = N − TP − FP − FN; "
            "an empty ranking scores (N − R) / N. " + _TIES,
            aliases=("acc",),
            cut=_accuracy,
            needs_corpus=True,
            reads_relevant_count=True,
        ),
        MetricInfo(
            "rbp",
            "RBP",
            "none",
            "(1 − p) · Σ_i gain_i · p^(i−1), p = 0.9",
            "Gain = the label scaled to [0, 1] (trec_eval 10.0). Rank-biased precision (Moffat & Zobel 2008): a "
            "label is divided by the query's highest label when that is above 1; unjudged, zero and negative labels "
            "give 0; rel_level does not change gains. Summed over the retrieved ranks only (rbp_resid is what "
            "the rest may add). rbp_p=0.95 (trec_eval: rbp.p=0.95) sets the persistence p, 0 < p < 1. " + _TIES,
            title="Rank-biased precision",
            trec_eval="rbp",
            full=_rbp,
            persistence=RBP_PERSISTENCE,
            with_p=_rbp_p,
            reads_relevant_count=True,
        ),
        MetricInfo(
            "rbp_resid",
            "RBP resid",
            "none",
            "p^n + (1 − p) · Σ_{unjudged i} p^(i−1)",
            "0 when no retrieved document is unjudged (trec_eval 10.0). Otherwise the weight RBP leaves open: the "
            "unjudged retrieved ranks plus every rank below the n retrieved (trec_eval reports no residual for a "
            "short ranking without unjudged documents). Unjudged = not in the qrels or a negative label; rbp + "
            "rbp_resid is RBP's upper bound. rbp_resid_p=0.95 sets p. " + _TIES,
            aliases=("rbp_residual",),
            title="RBP residual",
            trec_eval="rbp_resid",
            higher_is_better=False,
            full=_rbp_resid,
            persistence=RBP_PERSISTENCE,
            with_p=_rbp_resid_p,
        ),
        MetricInfo(
            "unj",
            "Unj",
            "required",
            "unjudged in the top k / k",
            "Unjudged = not in the qrels or a negative label (trec_eval 10.0). So unj@k is not 1 − judged@k when "
            "labels are negative. Divides by k even when fewer were retrieved (missing ranks count as judged). "
            "Read on the ranking as scored: under --unjudged skip only negative labels are left unjudged. " + _TIES,
            aliases=("unjudged",),
            title="Unjudged",
            trec_eval="unj",
            higher_is_better=False,
            cut=_unj,
        ),
    )
}

_ALIASES: dict[str, str] = {}
for _info in METRICS.values():
    for _name in (_info.name, *_info.aliases):
        _ALIASES[_name.lower()] = _info.name

BUDGET_SUFFIX = "tok"
"""``recall@512tok``: the metric at a budget of 512 tokens (``@512tokens`` is read too)."""

_METRIC_RE = re.compile(
    r"^\s*([A-Za-z][A-Za-z0-9_\-]*?)\s*(?:[@._](\d+)(?:\s*(tok|tokens))?)?\s*$", re.IGNORECASE | re.ASCII
)
_EVERY_CUTOFF = ("ndcg_cut", "map_cut")
"""trec_eval's names of a metric at every one of its cut-offs: read only with one (``ndcg_cut_10``)."""
MAX_CUTOFF = 2**63 - 1
"""The deepest cut-off or token budget a metric takes (the engines hold K as a 64-bit integer): deeper than any
ranking or context."""
_PERSISTENCE_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*?)[._]p\s*=\s*(\S*?)\s*$", re.IGNORECASE)
"""``rbp_p=0.95`` (trec_eval's printed name) and ``rbp.p=0.95`` (its ``-m`` parameter)."""


def _with_persistence(text: str, raw: str, value: str) -> MetricSpec:
    name = _ALIASES.get(raw.lower())
    if name is None:
        return parse_metric(raw)  # the unknown name's own error, with its "did you mean"
    info = METRICS[name]
    if info.persistence is None:
        persistent = ", ".join(m.name for m in METRICS.values() if m.persistence is not None)
        raise MetricNameError(f"metric {text!r}: {name} takes no persistence p (only {persistent} do)")
    try:
        p = float(value)
    except ValueError:
        p = float("nan")
    if not 0.0 < p < 1.0:
        raise MetricNameError(
            f"metric {text!r}: the persistence p must be a number between 0 and 1, e.g. '{name}_p=0.95'. "
            f"Got {value!r} instead."
        )
    return MetricSpec(name, None, None if p == info.persistence else p)


TREC_EVAL_NOT_COMPUTED: dict[str, str] = {
    "iprec_at_recall": "interpolated precision at fixed recall levels",
    "11pt_avg": "11-point interpolated average precision",
    "gm_map": "geometric mean of average precision",
    "gm_bpref": "geometric mean of bpref",
    "infAP": "inferred average precision",
    "num_ret": "a count of retrieved documents",
    "num_rel": "a count of relevant documents",
    "num_rel_ret": "a count of relevant retrieved documents",
    "utility": "a utility score",
    "Rprec_mult": "R-precision at multiples of R",
    "binG": "binary gain",
    "G": "gain",
    "Rndcg": "nDCG with a rank cut-off at R",
    "ndcg_rel": "nDCG averaged over relevant documents",
    "relstring": "the grades of the top documents as a string",
    "num_nonrel_judged_ret": "a count of judged nonrelevant retrieved documents",
}
"""trec_eval measures ragmetrics does not compute, in trec_eval's spelling: asked for, they get this instead of a
"did you mean" that points at an unrelated metric."""


EvidenceCut = Literal["required", "none"]


@dataclass(frozen=True)
class EvidenceMetric:
    """One evidence metric: its name, whether it takes a cut (``@k`` or ``@Ttok``), its formula."""

    name: str
    cut: EvidenceCut
    formula: str
    higher_is_better: bool = True
    value_range: tuple[float, float] = (0.0, 1.0)
    """Where a query's value lies: a share in [0, 1], or a count of tokens (``tokens_to_evidence``: [0, inf))."""


EVIDENCE_METRICS: dict[str, EvidenceMetric] = {
    m.name: m
    for m in (
        EvidenceMetric(
            "evidence_recall", "required", "mean over relevant documents of covered gold characters / gold characters"
        ),
        EvidenceMetric(
            "evidence_recall_chars", "required", "covered gold characters / gold characters, over the query's documents"
        ),
        EvidenceMetric("context_precision", "required", "tokens inside gold spans / tokens handed over"),
        EvidenceMetric(
            "tokens_to_evidence",
            "none",
            "tokens handed over up to the first chunk covering evidence",
            higher_is_better=False,
            value_range=(0.0, math.inf),
        ),
    )
}
"""Every evidence metric, by name: computed from gold spans by :mod:`ragmetrics.engine.evidence` (``ragmetrics
evidence``), not by :func:`parse_metric`'s engine, which names the command when one is asked of it."""


PEER_NOT_COMPUTED: dict[str, str] = {
    "err": "ir_measures' ERR (expected reciprocal rank, a cascade model of graded relevance)",
    "nerr": "ir_measures' nERR (normalised expected reciprocal rank)",
    "alpha_ndcg": "ir_measures' alpha_nDCG (novelty and diversity over subtopics)",
    "compat": "ir_measures' Compat (compatibility with an ideal ranking)",
    "sdcg": "ir_measures' SDCG (scaled DCG)",
    "iprec": "ir_measures' IPrec (interpolated precision)",
    "numq": "ir_measures' NumQ (a count of queries; every table here says num_q)",
    "numret": "ir_measures' NumRet (a count of retrieved documents)",
    "numrel": "ir_measures' NumRel (a count of relevant documents)",
    "numrelret": "ir_measures' NumRelRet (a count of relevant retrieved documents)",
    "strecall": "ir_measures' StRecall (subtopic recall)",
    "insq": "ir_measures' INSQ (a C/W/L user model)",
    "inst": "ir_measures' INST (a C/W/L user model)",
}
"""Other tools' measures ragmetrics does not compute, by lower-cased name: asked for, they get this instead of a "did
you mean" that points at an unrelated metric (ERR's was mrr)."""


def _not_computed(text: str) -> str | None:
    """The trec_eval measure ``text`` names that this library does not compute (the longest that fits), or None."""
    lowered = text.lower()
    for name in sorted(TREC_EVAL_NOT_COMPUTED, key=len, reverse=True):
        if lowered == name.lower() or re.match(rf"{re.escape(name.lower())}[._]", lowered):
            return name
    return None


_SET_F_BETA = re.compile(r"^\s*set_f[._](\S+?)\s*$", re.IGNORECASE)
"""trec_eval's ``set_F.2`` (``-m set_F.2``: F at beta 2); ``set_f1`` is its default beta 1."""


def _set_f_at_beta(text: str) -> MetricSpec:
    """``set_F.1`` is ``set_f1``; another beta is refused by its trec_eval name, never read as a cut-off."""
    beta = _SET_F_BETA.match(text)
    assert beta is not None
    try:
        value = float(beta.group(1))
    except ValueError:
        value = float("nan")
    if value == 1.0:
        return MetricSpec("set_f1")
    raise MetricNameError(
        f"metric {text!r}: trec_eval's set_F at beta {beta.group(1)} is not computed by ragmetrics; set_f1 is set_F "
        "at its default beta 1"
    )


_DECIMAL_CUTOFF = re.compile(r"\s*([A-Za-z][\w\-]*?)[@._](\d+\.\d+|-\d+(?:\.\d+)?)\s*", re.ASCII)
"""A cut-off with decimals or a sign (``P_5.0``, ``recall@5.5``, ``precision@-1``): no cut-off, said as such."""


_IR_MEASURES_PARAMETERS = re.compile(r"^\s*([A-Za-z][\w-]*)\s*\(([^()]*)\)\s*(?:@\s*(\d+))?\s*$")
"""ir_measures' ``P(rel=2)@5``: a measure with parameters in parentheses."""


def _refuse_ir_measures_parameters(text: str) -> None:
    """ir_measures' parameters (``P(rel=2)@5``, ``nDCG(dcg=exp-log2)@10``, ``RBP(p=0.8)``) are not read here: each
    is answered with what takes its place (a convention of the whole evaluation, or another metric's name)."""
    found = _IR_MEASURES_PARAMETERS.match(text)
    if found is None:
        return
    name, cut = found.group(1), f"@{found.group(3)}" if found.group(3) else ""
    said: list[str] = []
    for pair in (p.strip() for p in re.split(r",(?![^{]*})", found.group(2)) if p.strip()):  # gains={0:0,1:1}
        key, _, value = (part.strip() for part in pair.partition("="))
        if key == "rel":
            said.append(f"rel={value} is the relevance level of the whole evaluation (--rel-level {value}, "
                        f"rel_level={value})")  # fmt: skip
        elif key == "judged_only":
            skip = value.lower() in ("true", "1")
            said.append("judged_only=True is --unjudged skip (unjudged='skip')" if skip else f"{pair} is the default")
        elif key == "dcg" and value == "exp-log2":
            said.append(f"dcg=exp-log2 is 'ndcg_exp{cut}' (gain 2^label - 1)")
        elif key == "p" and name.lower() == "rbp":
            said.append(f"p={value} is 'rbp_p={value}' (trec_eval 10.0's rbp)")
        elif key == "cutoff":
            said.append(f"cutoff={value} is '@{value}'")
        else:
            said.append(f"{key}= is not read here")
    raise MetricNameError(
        f"metric {text!r}: ir_measures' parameters are not read here, the name is: {name}{cut}; "
        + "; ".join(said or ["() takes nothing"])
    )


def _refuse_decimal_cutoff(text: str) -> None:
    """A known name with a cut-off written with decimals (``P_5.0``, ``ndcg@10.0``) is refused as such, with the
    whole cut-off it may mean, rather than read as another name (``P_5`` at k 0)."""
    decimal = _DECIMAL_CUTOFF.fullmatch(text)
    if decimal and decimal.group(1).lower() in _ALIASES:
        known, value = _ALIASES[decimal.group(1).lower()], float(decimal.group(2))
        hint = f"; did you mean '{known}@{int(value)}'?" if value.is_integer() and value >= 1 else ""
        raise MetricNameError(f"metric {text!r}: the cut-off k is a whole number >= 1, found {decimal.group(2)}{hint}")


def _suggestion(raw: str, k_text: str | None, budget: str | None) -> str:
    """ "; did you mean 'X'?" for an unknown name: the closest known one with the cut-off or token budget given,
    adapted to what it takes (``@k`` where one is needed, none where it takes none), offered only when it parses;
    else nothing."""
    for close in difflib.get_close_matches(raw.lower(), sorted(_ALIASES), n=3, cutoff=0.5):
        name = _ALIASES[close]
        takes = METRICS[name].k
        if takes == "none":
            guess = name
        elif k_text is None:
            guess = f"{name}@k" if takes == "required" else name
        else:
            guess = f"{name}@{k_text}{BUDGET_SUFFIX if budget else ''}"
        try:
            parse_metric(guess.replace("@k", "@10"))
        except MetricNameError:
            continue
        return f"; did you mean '{guess}'?"
    return ""


def refuse_negative_cut(text: str) -> None:
    """A cut-off or a token budget written below zero (``recall@-5tok``) is said to be one, not an unreadable
    name."""
    negative = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_\-]*?)\s*@\s*(-\s*\d+)\s*(tok|tokens)?\s*", text, re.IGNORECASE)
    if negative is not None:
        what = "token budget T" if negative.group(3) else "cut-off k"
        raise MetricNameError(f"metric {text!r}: the {what} is a whole number >= 1, found {negative.group(2)}")


def budget_spelling(text: str, known: Callable[[str], bool]) -> str | None:
    """``NAME@T<suffix>`` for a token budget misspelt (``recall@512tk``, ``recall@512toks``) when ``known`` takes
    it; else None."""
    misspelt = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_\-]*?)\s*@\s*(\d+)\s*(t[a-z]*)\s*", text, re.IGNORECASE)
    if misspelt is None:
        return None
    guess = f"{misspelt.group(1)}@{misspelt.group(2)}{BUDGET_SUFFIX}"
    return guess if known(guess) else None


def _budget_suggestion(text: str) -> str:
    """What to say of a token budget misspelt (``recall@512tk``, ``recall@512toks``): how one is written and the
    guess, offered only when it parses; else nothing."""
    guess = budget_spelling(text, _parses)
    if guess is None:
        return ""
    return f"a token budget is written NAME@T{BUDGET_SUFFIX}: did you mean '{guess}'? A name with an optional @k"


def _parses(text: str) -> bool:
    try:
        parse_metric(text)
    except MetricNameError:
        return False
    return True


def parse_metric(text: str | MetricSpec) -> MetricSpec:
    """Parse ``"nDCG@10"`` into ``MetricSpec("ndcg", 10)``.

    Accepts canonical names and aliases, case-insensitively, with ``@k`` (also
    trec_eval's ``P_5`` / ``P.5``), and a persistence for the metrics that take one
    (``rbp_p=0.95``, trec_eval's ``rbp.p=0.95``). Raises :class:`MetricNameError` with a
    "did you mean" suggestion for unknown names and when a cut-off is missing
    or not allowed.
    """
    if isinstance(text, MetricSpec):
        return text
    if _SET_F_BETA.match(str(text)):
        return _set_f_at_beta(str(text))
    persistence = _PERSISTENCE_RE.match(str(text))
    if persistence:
        return _with_persistence(str(text), persistence.group(1), persistence.group(2))
    match = _METRIC_RE.match(str(text))
    missing = None if match and match.group(1).lower() in _ALIASES else _not_computed(str(text))
    if missing is not None:
        raise MetricNameError(
            f"metric {text!r}: trec_eval's {missing} ({TREC_EVAL_NOT_COMPUTED[missing]}) is not computed by "
            f"ragmetrics. Known: {known_metric_names()}"
        )
    if match and match.group(1).lower() in ("runid", "num_q"):
        raise MetricNameError(
            f"metric {text!r}: every table prints the run's name (runid) and how many queries it was scored on "
            "(num_q), as trec_eval does; they are not metrics to ask for"
        )
    peer = PEER_NOT_COMPUTED.get(match.group(1).lower()) if match else None
    if peer is not None:
        raise MetricNameError(
            f"metric {text!r}: {peer} is not computed by ragmetrics (no metric here is read as it). Known: "
            f"{known_metric_names()}"
        )
    _refuse_decimal_cutoff(str(text))
    _refuse_ir_measures_parameters(str(text))
    refuse_negative_cut(str(text))
    if not match:
        raise MetricNameError(
            f"cannot read metric {text!r}; {_budget_suggestion(str(text)) or 'expected a name with an optional @k'}"
            f", e.g. 'ndcg@10'. Known: {known_metric_names()}"
        )
    raw, k_text, budget = match.group(1), match.group(2), match.group(3)
    name = _ALIASES.get(raw.lower())
    if name is None:
        glued = re.fullmatch(r"(.*?[A-Za-z])(\d+)", raw)  # "ndcg10": a known name with its cut-off glued on
        if glued and glued.group(1).lower() in _ALIASES and k_text is None:
            known, digits = _ALIASES[glued.group(1).lower()], glued.group(2)
            raise MetricNameError(
                f"unknown metric {text!r}; did you mean '{known}@{digits}'? Known: {known_metric_names()}"
            )
        if raw in TREC_EVAL_GROUPS:
            raise MetricNameError(
                f"{text!r} is trec_eval's group of measures "
                f"({', '.join([m for m, _ in TREC_EVAL_MEASURES if m in TREC_EVAL_GROUPS[raw]][:4])}, ...): "
                "evaluate and compare read it; here name one metric, e.g. 'ndcg@10'"
            )
        if raw.lower() in EVIDENCE_METRICS:
            raise MetricNameError(
                f"metric {text!r} is an evidence metric: it reads gold spans, and `ragmetrics evidence` computes it "
                f"(--spans or --spans-from-answers). Known here: {known_metric_names()}"
            )
        hint = _suggestion(raw, k_text, budget)
        raise MetricNameError(f"unknown metric {text!r}{hint} Known: {known_metric_names()}")
    info = METRICS[name]
    if raw.lower() in _EVERY_CUTOFF and k_text is None:
        raise MetricNameError(
            f"metric {text!r}: trec_eval's {raw} is the metric at each of its cut-offs (5, 10, 15, 20, 30, 100, 200, "
            f"500, 1000), not {name} uncut; give one, e.g. '{raw}_10' or '{name}@10' (or '{name}' uncut)"
        )
    if k_text is not None and int(k_text) > MAX_CUTOFF:
        raise MetricNameError(
            f"metric {text!r}: the {'token budget' if budget else 'cut-off k'} must be at most {MAX_CUTOFF:,} "
            f"(deeper than any {'context' if budget else 'ranking'}). Got {int(k_text):,} instead."
        )
    if budget is not None:
        return _budget(str(text), info, int(k_text))
    k = int(k_text) if k_text is not None else None
    if k is not None and k < 1:
        raise MetricNameError(f"metric {text!r}: the cut-off k is a whole number >= 1, found {k}")
    if info.k == "required" and k is None:
        raise MetricNameError(f"metric {text!r} needs a cut-off, e.g. '{name}@10'")
    if info.k == "none" and k is not None:
        raise MetricNameError(f"metric {text!r} takes no cut-off; use '{name}'")
    return MetricSpec(name, k)


def _budget(text: str, info: MetricInfo, tokens: int) -> MetricSpec:
    if not info.budget:
        budgeted = ", ".join(m.name for m in METRICS.values() if m.budget)
        raise MetricNameError(f"metric {text!r}: {info.name} takes no token budget (only {budgeted} do)")
    if tokens < 1:
        raise MetricNameError(f"metric {text!r}: the token budget must be an int >= 1. Got {tokens} instead.")
    return MetricSpec(info.name, None, None, tokens)


TREC_EVAL_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cut-offs of P, recall, ndcg_cut, map_cut and relative_P."""
TREC_EVAL_MEASURES: tuple[tuple[str, tuple[int, ...]], ...] = (
    *((m, ()) for m in ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank")),
    ("iprec_at_recall", ()),
    ("P", TREC_EVAL_CUTOFFS),
    ("recall", TREC_EVAL_CUTOFFS),
    *((m, ()) for m in ("infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel")),
    ("Rndcg", ()),
    ("ndcg_cut", TREC_EVAL_CUTOFFS),
    ("map_cut", TREC_EVAL_CUTOFFS),
    ("relative_P", TREC_EVAL_CUTOFFS),
    ("success", (1, 5, 10)),
    *((m, ()) for m in ("set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret")),
    ("rbp", ()),
    ("rbp_resid", ()),
    ("unj", (5, 10, 20)),
    ("relstring", ()),
)
"""trec_eval 10.0's measures in the order it prints them, each with its default cut-offs (none: one value; the
cut-offs of a measure ragmetrics does not compute are not needed). ``runid`` and ``num_q`` are printed always."""
TREC_EVAL_GROUPS: dict[str, frozenset[str]] = {
    "official": frozenset(("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                           "iprec_at_recall", "P")),
    "set": frozenset(("num_ret", "num_rel", "num_rel_ret", "set_P", "set_relative_P", "set_recall", "set_map",
                      "set_F", "utility")),
    "all_trec": frozenset(m for m, _ in TREC_EVAL_MEASURES),
}  # fmt: skip
"""trec_eval's measure groups (``-m official``, its default; ``-m set``; ``-m all_trec``), as trec_eval 10.0 defines
them: tests/test_parity_pytrec_eval.py holds them to trec_eval's outputs and to pytrec_eval's nicknames."""


_EVERY_CUT = {m: cuts for m, cuts in TREC_EVAL_MEASURES if cuts and m not in TREC_EVAL_NOT_COMPUTED}
"""trec_eval's measures computed here that it reads at each of its cut-offs when named bare (``-m P``)."""


@dataclass(frozen=True)
class GroupExpansion:
    """Metric names with trec_eval's groups replaced: ``names`` (canonical, in trec_eval's order, each once) and,
    by group, the trec_eval measures of it ragmetrics does not compute."""

    names: list[str]
    left_out: dict[str, list[str]]
    expanded: bool = False
    """Whether any name was a group (or a measure at every cut-off) and was replaced."""

    def note(self) -> str | None:
        """What each group left out, in words; None when nothing was."""
        said = [
            f"trec_eval's '{group}' also holds measures not computed here: "
            + ", ".join(f"{m} ({TREC_EVAL_NOT_COMPUTED[m]})" for m in missing)
            for group, missing in self.left_out.items()
            if missing
        ]
        return "; ".join(said) or None


def expand_trec_eval_groups(names: Iterable[str]) -> GroupExpansion:
    """``["official", "ndcg@10"]`` -> the metrics of trec_eval's ``official`` group that ragmetrics computes, at
    trec_eval's default cut-offs and in its order (``map``, ``rprec``, ``bpref``, ``mrr``, ``precision@5`` ...
    ``precision@1000``), then ``ndcg@10``. A trec_eval measure named bare, in trec_eval's spelling (``P``,
    ``recall``, ``ndcg_cut``, ``success``), is the measure at each of its default cut-offs, as ``trec_eval -m P``
    prints it. A name that is neither is kept as given (parsed later)."""
    out: list[str] = []
    left_out: dict[str, list[str]] = {}
    expanded = False
    for name in names:
        text = str(name).strip()
        if text in _EVERY_CUT:  # trec_eval's -m P: P at each of its cut-offs
            out.extend(str(parse_metric(f"{text}_{k}")) for k in _EVERY_CUT[text])
            expanded = True
            continue
        group = TREC_EVAL_GROUPS.get(text)
        if group is None:
            out.append(name)
            continue
        expanded = True
        missing = left_out.setdefault(str(name).strip(), [])
        for measure, cutoffs in TREC_EVAL_MEASURES:
            if measure not in group:
                continue
            if measure in TREC_EVAL_NOT_COMPUTED:
                missing.append(measure)
                continue
            out.extend(str(parse_metric(f"{measure}_{k}" if cutoffs else measure)) for k in cutoffs or (0,))
    return GroupExpansion(list(dict.fromkeys(out)), left_out, expanded)


def trec_eval_name(spec: MetricSpec) -> str | None:
    """The name trec_eval prints for ``spec``'s value (``precision@5``: ``P_5``; ``ndcg``: ``ndcg``; ``ndcg@10``:
    ``ndcg_cut_10``; ``map@10``: ``map_cut_10``; ``mrr``: ``recip_rank``); None where trec_eval has no such measure
    (``mrr@10``, ``judged@10``, ``recall@512tok``, ``rbp_p=0.95``)."""
    info = METRICS[spec.name]
    if info.trec_eval is None or spec.tokens is not None or spec.p is not None:
        return None
    uncut, cut = _trec_eval_forms(info)
    if spec.k is None:
        return uncut
    return f"{cut}_{spec.k}" if cut else None


def _trec_eval_forms(info: MetricInfo) -> tuple[str | None, str | None]:
    """``info``'s trec_eval measure uncut (``ndcg``; None for a cut-off family) and as the family of its cut-offs
    (``ndcg_cut``, printed ``ndcg_cut_10``; None for a measure trec_eval reads whole, ``recip_rank``)."""
    name = info.trec_eval
    if name is None:
        return None, None
    cut = name if info.k == "required" or name.endswith("_cut") else None
    return (None if info.k == "required" else name.removesuffix("_cut")), cut


NAMINGS = ("ragmetrics", "trec_eval")
"""How results name their metrics: ``ragmetrics``' canonical names (``precision@5``, ``ndcg@10``, ``mrr``), or
trec_eval's (``P_5``, ``ndcg_cut_10``, ``recip_rank``; a metric trec_eval lacks keeps its canonical name)."""


def named_as(spec: MetricSpec, names: str = "ragmetrics") -> str:
    """``spec``'s name in the naming ``names`` (:data:`NAMINGS`)."""
    if names not in NAMINGS:
        raise RagMetricsError(f"names={names!r}: expected one of {', '.join(map(repr, NAMINGS))}")
    return (trec_eval_name(spec) if names == "trec_eval" else None) or str(spec)


def trec_eval_names(info: MetricInfo) -> list[str]:
    """The names trec_eval prints for ``info``'s values, ``k`` for a cut-off (``ndcg``, ``ndcg_cut_k``; ``P_k``);
    empty when trec_eval has none."""
    uncut, cut = _trec_eval_forms(info)
    return [*([uncut] if uncut else []), *([f"{cut}_k"] if cut else [])]


def better_sign(metric: str | MetricSpec) -> int:
    """+1 where a higher value is better (most metrics), -1 where lower is (``unj@k``, ``rbp_resid``,
    ``tokens_to_evidence``): a delta times it is positive when the run is better. A name no registry knows reads +1."""
    if isinstance(metric, MetricSpec):
        return 1 if METRICS[metric.name].higher_is_better else -1
    try:
        name = metric_name(metric)
    except MetricNameError:
        evidence = EVIDENCE_METRICS.get(str(metric).split("@", 1)[0].strip().lower())
        return -1 if evidence is not None and not evidence.higher_is_better else 1
    return 1 if METRICS[name].higher_is_better else -1


UNIT_RANGE = (0.0, 1.0)
"""Where the per-query values of every metric of the registry lie (``tests/test_properties.py``)."""


def value_range(metric: str | MetricSpec) -> tuple[float, float]:
    """Where ``metric``'s per-query values, and so its mean and the ends of the mean's interval, lie: [0, 1] for
    the registry's metrics and the evidence shares, [0, inf) for ``tokens_to_evidence`` (tokens); a name no
    registry knows is not bounded."""
    if isinstance(metric, MetricSpec):
        return UNIT_RANGE
    try:
        metric_name(metric)
    except MetricNameError:
        evidence = EVIDENCE_METRICS.get(str(metric).split("@", 1)[0].strip().lower())
        return evidence.value_range if evidence is not None else (-math.inf, math.inf)
    return UNIT_RANGE


def delta_range(metric: str | MetricSpec) -> tuple[float, float]:
    """Where a paired difference of two of ``metric``'s values lies (:func:`value_range`), and so the ends of the
    delta's interval (a t interval of 3 queries at a Holm-adjusted level reached [-2.58, +2.45] for precision@5)."""
    low, high = value_range(metric)
    return low - high, high - low


def metric_name(text: str | MetricSpec) -> str:
    """The canonical name of a metric given with or without its cut-off (``nDCG``, ``ndcg@10``, ``P_5`` ->
    ``ndcg``, ``ndcg``, ``precision``): what a curve, a picker or a column of every cut-off is named by. Unknown
    names raise :class:`MetricNameError` with its "did you mean"."""
    if isinstance(text, MetricSpec):
        return text.name
    match = _METRIC_RE.match(str(text))
    if match and match.group(2) is None:
        name = _ALIASES.get(match.group(1).lower())
        if name is not None:
            return name
    return parse_metric(text).name


def known_metric_names() -> str:
    """The canonical names, with @k where a cut-off is required or allowed, and the token-budget form once."""
    shown = {"required": "@k", "optional": "[@k]", "none": ""}
    names = ", ".join(f"{m.name}{shown[m.k]}" for m in METRICS.values())
    return f"{names}; at a token budget T: NAME@T{BUDGET_SUFFIX} (e.g. recall@512{BUDGET_SUFFIX})"


def compute(ranking: Ranking, specs: list[MetricSpec]) -> dict[MetricSpec, np.ndarray]:
    """Per-query values of every spec, sharing one kernel call per metric name."""
    out: dict[MetricSpec, np.ndarray] = {}
    by_name: dict[str, list[MetricSpec]] = {}
    for spec in specs:
        if spec.tokens is not None:
            raise RagMetricsError(f"{spec}: token budgets are read on an Alignment, in process (--engine inprocess)")
        by_name.setdefault(spec.name, []).append(spec)
    for name, group in by_name.items():
        info = METRICS[name]
        cut = [s for s in group if s.k is not None]
        if cut:
            assert info.cut is not None
            ks = np.array([s.k for s in cut], dtype=np.int64)
            values = info.cut(ranking, ks)
            for i, spec in enumerate(cut):
                out[spec] = values[:, i]
        for spec in group:
            if spec.k is None and spec.p is not None:
                assert info.with_p is not None
                out[spec] = info.with_p(ranking, spec.p)
            elif spec.k is None:
                assert info.full is not None
                out[spec] = info.full(ranking)
    return out


def curve(ranking: Ranking, name: str, k_max: int) -> np.ndarray:
    """Per-query values of ``name@k`` for k = 1..k_max: shape (n_queries, k_max)."""
    info = METRICS[name]
    if info.cut is None:
        raise MetricNameError(f"metric {name!r} has no cut-off, so it has no curve over k")
    return info.cut(ranking, np.arange(1, k_max + 1, dtype=np.int64))


CURVE_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS.values() if m.curve)
