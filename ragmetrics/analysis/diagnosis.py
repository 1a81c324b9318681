"""Plain-language diagnosis of a run's misses: deterministic rules, each finding cites the numbers that fired it.

:func:`diagnose_run` evaluates a run and applies the rules; :func:`diagnose`
applies them to a per-query table (:func:`query_table`), which the dashboard
builds from its cached evaluation. The rules and their thresholds:

* ``easy_missed``: more than ``EASY_MISSED_MAX`` (2) easy queries have no
  relevant document in the top K -> check indexing, chunk size and (for a
  dense run) the embedding model's coverage of the domain's terms.
* ``hard_missed``: more than ``HARD_MISSED_MAX`` (2) hard queries are missed
  -> HyDE when some of them are short, a larger top-k plus a reranker, and
  fusion with the other kind of retriever when the run is not a fusion already.
* ``near_miss``: at least ``NEAR_MISS_MIN`` (3) missed queries, and more than
  half of them ("most"), have their first relevant document at ranks
  K+1..max(20, 2K) -> rerank or raise K.
* ``ranking_not_recall``: recall at the run's depth (at most 100) is at least
  ``HIGH_RECALL`` (0.85) but MRR is below ``LOW_MRR`` (0.70) -> the ranking,
  not the recall, is the problem (fusion weights only for a fused run, query
  prompts only for a dense one).
* ``weak_category``: a category with at least ``CATEGORY_MIN_N`` (5) queries
  whose mean is at least ``CATEGORY_GAP`` (0.15) below the mean of all other
  queries -> it is named.

Queries without a relevant document are left out of every rule; a missing
category or difficulty counts as :data:`NO_GROUP`.

Advice is structured (:class:`Advice`): a stable id (``rule.action``, e.g.
``hard_missed.fuse_bm25``), the text, and the evidence values that made it
apply. What kind of run it is (:class:`RunTraits`: fused, lexical, dense) is
read from its name unless the caller knows better, and said in the evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.engine import Alignment, align
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.foundation import scripts
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run

EASY_MISSED_MAX = 2
HARD_MISSED_MAX = 2
NEAR_MISS_MIN = 3
NEAR_MISS_SHARE = 0.5
NEAR_MISS_LIMIT = 20
HIGH_RECALL = 0.85
LOW_MRR = 0.70
CATEGORY_MIN_N = 5
CATEGORY_GAP = 0.15
MIN_TRUSTED_N = 10
#: how queries without a category or difficulty are grouped
NO_GROUP = "(none)"
#: deepest recall the ``ranking_not_recall`` rule looks at
DEEP_K_MAX = 100


THRESHOLDS: tuple[str, ...] = (
    f"easy or hard queries missed: more than {EASY_MISSED_MAX} / {HARD_MISSED_MAX}",
    f"near misses: at least {NEAR_MISS_MIN} and more than {NEAR_MISS_SHARE:.0%} of the misses",
    f"ranking, not recall: deep recall at least {HIGH_RECALL:.2f} and MRR below {LOW_MRR:.2f}",
    f"weak category: at least {CATEGORY_MIN_N} queries, {CATEGORY_GAP:.2f} below the others",
)
"""The rules' thresholds in words (the dashboard's Diagnosis page states them)."""


class Advice(str):
    """One piece of advice: the text (the string itself), a stable ``id`` (``rule.action``) and the ``evidence``
    values that made it apply. A string, so it reads, joins and escapes as its text."""

    id: str
    evidence: dict[str, Any]

    def __new__(cls, id: str, text: str, evidence: dict[str, Any] | None = None) -> Advice:
        self = super().__new__(cls, text)
        self.id = id
        self.evidence = dict(evidence or {})
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Advice, (self.id, str(self), self.evidence))

    @property
    def text(self) -> str:
        return str(self)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": str(self), "evidence": self.evidence}


@dataclass(frozen=True)
class RunTraits:
    """What kind of retriever made a run, for advice that only fits some kinds. ``source``: how it is known."""

    fused: bool = False
    lexical: bool = False
    dense: bool = False
    source: str = "unknown"

    @classmethod
    def from_name(cls, name: str) -> RunTraits:
        """Read from a run's name: ``rrf``/``hybrid``/``fus``/``comb`` fused, ``bm25``/``lexical``/``sparse``/``tfidf``
        lexical, ``dense``/``e5``/``bge``/``minilm``/``embed``/``vector``/``gte`` dense."""
        text = name.lower()
        fused = bool(re.search(r"rrf|hybrid|fus|comb(sum|mnz)", text))
        lexical = bool(re.search(r"bm25|lexical|sparse|tf-?idf|splade", text))
        dense = bool(re.search(r"dense|(^|[^a-z])e5|bge|minilm|embed|vector|gte|mpnet|openai|ada", text))
        return cls(fused=fused, lexical=lexical and not fused, dense=dense and not fused, source=f"its name {name!r}")

    def words(self) -> str:
        kinds = [k for k, on in (("fused", self.fused), ("lexical", self.lexical), ("dense", self.dense)) if on]
        return f"{' and '.join(kinds) or 'of unknown kind'} (from {self.source})"


@dataclass(frozen=True)
class Finding:
    run: str
    rule: str
    title: str
    evidence: str
    advice: tuple[Advice, ...]
    queries: tuple[str, ...] = ()
    severity: str = "warning"
    values: tuple[tuple[str, Any], ...] = ()  # the evidence as numbers: (name, value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "rule": self.rule,
            "severity": self.severity,
            "title": self.title,
            "evidence": self.evidence,
            "values": dict(self.values),
            "advice": [a.to_dict() if isinstance(a, Advice) else {"id": "", "text": str(a)} for a in self.advice],
            "queries": list(self.queries),
        }


def is_short(query: str) -> bool:
    """Short enough that HyDE helps: at most 4 words, or at most 8 characters of CJK text."""
    text = str(query).strip()
    if scripts.CJK_CHARACTER.search(text):
        return len(re.sub(r"\s+", "", text)) <= 8
    return len(text.split()) <= 4


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "—"


def _ids(frame: pd.DataFrame, limit: int = 5) -> tuple[str, ...]:
    return tuple(str(q) for q in frame["query_id"].head(limit))


def _fmt_ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids)


def diagnose(
    run: str,
    table: pd.DataFrame,
    *,
    k: int,
    deep_k: int,
    metric_label: str | None = None,
    low_mrr: float = LOW_MRR,
    traits: RunTraits | None = None,
) -> list[Finding]:
    """Apply every rule to one run's per-query table.

    ``table`` needs ``query_id, query, category, difficulty, n_relevant,
    first_relevant_rank, hit, rr, recall_deep`` and optionally ``value`` (the
    metric compared across categories; ``hit`` otherwise). ``deep_k`` is the
    cut-off of ``recall_deep``. Queries without relevant documents are ignored.
    ``traits``: what kind of run it is (default: read from ``run``, its name).
    """
    traits = traits or RunTraits.from_name(run)
    kind = {"fused": traits.fused, "lexical": traits.lexical, "dense": traits.dense, "kind_from": traits.source}
    table = table[table["n_relevant"] > 0].reset_index(drop=True)
    findings: list[Finding] = []
    if table.empty:
        return findings
    missed = table[~table["hit"].astype(bool)]
    limit = max(NEAR_MISS_LIMIT, 2 * k)

    easy = table[table["difficulty"] == "easy"]
    easy_missed = missed[missed["difficulty"] == "easy"]
    if len(easy_missed) > EASY_MISSED_MAX:
        never = int((easy_missed["first_relevant_rank"] <= 0).sum())
        ids = _ids(easy_missed)
        findings.append(
            Finding(
                run,
                "easy_missed",
                f"{len(easy_missed)} easy queries are missed at K={k}",
                f"{len(easy_missed)} of {len(easy)} easy queries ({_pct(len(easy_missed), len(easy))}) have no relevant "
                f"document in the top {k}; {never} of them never retrieve one at all. Examples: {_fmt_ids(ids)}.",
                tuple(
                    a
                    for a in (
                        Advice(
                            "easy_missed.check_index",
                            "Check that the relevant documents were indexed at all: look their ids up in the index.",
                            {"easy_missed": len(easy_missed), "never_retrieved": never},
                        ),
                        Advice(
                            "easy_missed.chunk_size",
                            "Check the chunk size: an answer split across chunks, or buried in a long chunk, matches "
                            "poorly.",
                            {"easy_missed": len(easy_missed)},
                        ),
                        Advice(
                            "easy_missed.embedding_coverage",
                            "Check that the embedding model covers the domain's terms (product names, codes, jargon); "
                            "try a domain-adapted or multilingual model.",
                            {"easy_missed": len(easy_missed), **kind},
                        )
                        if not traits.lexical
                        else None,
                    )
                    if a is not None
                ),
                ids,
                "error",
                (("easy_missed", len(easy_missed)), ("easy", len(easy)), ("never_retrieved", never)),
            )
        )

    hard = table[table["difficulty"] == "hard"]
    hard_missed = missed[missed["difficulty"] == "hard"]
    if len(hard_missed) > HARD_MISSED_MAX:
        short = int(hard_missed["query"].map(is_short).sum())
        ids = _ids(hard_missed)
        findings.append(
            Finding(
                run,
                "hard_missed",
                f"{len(hard_missed)} hard queries are missed at K={k}",
                f"{len(hard_missed)} of {len(hard)} hard queries ({_pct(len(hard_missed), len(hard))}) have no relevant "
                f"document in the top {k}; {short} of them are short. Examples: {_fmt_ids(ids)}.",
                _hard_advice(len(hard_missed), short, traits, kind),
                ids,
                values=(("hard_missed", len(hard_missed)), ("hard", len(hard)), ("short", short)),
            )
        )

    retrieved_late = missed[missed["first_relevant_rank"] > 0]
    near = missed[(missed["first_relevant_rank"] > k) & (missed["first_relevant_rank"] <= limit)]
    if len(missed) and len(near) >= NEAR_MISS_MIN and len(near) / len(missed) > NEAR_MISS_SHARE:
        median = float(np.median(near["first_relevant_rank"]))
        hits_limit = float(((table["first_relevant_rank"] > 0) & (table["first_relevant_rank"] <= limit)).mean())
        hits_k = float(table["hit"].mean())
        ids = _ids(near)
        findings.append(
            Finding(
                run,
                "near_miss",
                f"Most misses are near misses (ranks {k + 1}–{limit})",
                f"{len(near)} of {len(missed)} missed queries ({_pct(len(near), len(missed))}) have their first relevant "
                f"document at ranks {k + 1}–{limit} (median rank {median:g}); {len(missed) - len(retrieved_late)} are never "
                f"retrieved. Hits@{limit} = {hits_limit:.3f} against Hits@{k} = {hits_k:.3f}.",
                (
                    Advice(
                        "near_miss.rerank",
                        f"Rerank the top {limit}–50 with a cross-encoder so these documents move into the top {k}.",
                        {"near": len(near), "missed": len(missed), "median_rank": median},
                    ),
                    Advice(
                        "near_miss.raise_k",
                        f"Or raise K to {limit} if the generator can take that much context.",
                        {f"hits@{limit}": hits_limit, f"hits@{k}": hits_k},
                    ),
                ),
                ids,
                values=(("near", len(near)), ("missed", len(missed)), ("median_rank", median)),
            )
        )

    recall_deep = float(table["recall_deep"].mean())
    mrr = float(table["rr"].mean())
    if recall_deep >= HIGH_RECALL and mrr < low_mrr:
        at_one = float((table["first_relevant_rank"] == 1).mean())
        below = table[table["first_relevant_rank"] > 1]["first_relevant_rank"]
        median = float(np.median(below)) if len(below) else float("nan")
        findings.append(
            Finding(
                run,
                "ranking_not_recall",
                "Ranking, not recall, is the problem",
                f"Recall@{deep_k} = {recall_deep:.3f} (at least {HIGH_RECALL:.2f}) but MRR = {mrr:.3f} (below {low_mrr:.2f}): "
                f"the relevant documents are retrieved, but only {at_one:.0%} of queries have one at rank 1 "
                f"(elsewhere the first one is at median rank {median:g}).",
                tuple(
                    a
                    for a in (
                        Advice(
                            "ranking_not_recall.rerank",
                            "Add a reranker (cross-encoder) over the retrieved candidates.",
                            {f"recall@{deep_k}": recall_deep, "mrr": mrr},
                        ),
                        Advice(
                            "ranking_not_recall.fusion_weights",
                            "Tune the fusion weights or the score normalisation of this hybrid run.",
                            {"mrr": mrr, **kind},
                        )
                        if traits.fused
                        else None,
                        Advice(
                            "ranking_not_recall.query_prompt",
                            "Check query/passage prompts of the embedding model (e.g. e5's 'query: ' prefix).",
                            {"mrr": mrr, **kind},
                        )
                        if traits.dense
                        else None,
                    )
                    if a is not None
                ),
                values=((f"recall@{deep_k}", recall_deep), ("mrr", mrr), ("at_rank_1", at_one)),
            )
        )

    value = table["value"] if "value" in table.columns else table["hit"].astype(float)
    label = metric_label or f"Hits@{k}"
    categories = table["category"].astype("str")
    for category, n in categories.value_counts().items():
        if n < CATEGORY_MIN_N or n == len(table):
            continue
        inside = value[categories == category]
        outside = value[categories != category]
        gap = float(inside.mean() - outside.mean())
        if gap <= -CATEGORY_GAP:
            small = f" Only {n} queries: too few to be sure." if n < MIN_TRUSTED_N else ""
            ids = _ids(table[(categories == category) & ~table["hit"].astype(bool)])
            findings.append(
                Finding(
                    run,
                    "weak_category",
                    f"Category '{category}' is far below the others",
                    f"{label} = {inside.mean():.3f} on '{category}' (n={n}) against {outside.mean():.3f} on the other "
                    f"{len(outside)} queries ({gap:+.3f}).{small}",
                    (
                        Advice(
                            "weak_category.inspect",
                            f"Open the missed queries filtered to '{category}' and compare what was retrieved with the "
                            "relevant documents.",
                            {"category": str(category), "gap": gap, "n": int(n)},
                        ),
                        Advice(
                            "weak_category.indexing",
                            f"Check that '{category}' documents are indexed and chunked like the rest, and that their "
                            "vocabulary (names, numbers, units) survives tokenisation.",
                            {"category": str(category), "gap": gap},
                        ),
                    ),
                    ids,
                    values=(("category", str(category)), ("n", int(n)), ("gap", gap)),
                )
            )
    return findings


def _hard_advice(missed: int, short: int, traits: RunTraits, kind: dict[str, Any]) -> tuple[Advice, ...]:
    """What to try for missed hard queries, given what the run is: HyDE only with short queries among them, a
    fusion only for a run that is not one already (with BM25 for a dense run, with a dense run for a lexical one)."""
    out = []
    if short:
        out.append(
            Advice(
                "hard_missed.hyde",
                f"HyDE for short queries ({short} here): embed a generated hypothetical answer instead of the bare "
                "question.",
                {"short": short, "hard_missed": missed},
            )
        )
    out.append(
        Advice(
            "hard_missed.rerank",
            "Retrieve a larger top-k (e.g. 50) and rerank it with a cross-encoder.",
            {"hard_missed": missed},
        )
    )
    if not traits.fused:
        if traits.lexical:
            out.append(
                Advice(
                    "hard_missed.fuse_dense",
                    "Hybrid retrieval: fuse this lexical run with a dense one (e.g. reciprocal rank fusion) to catch "
                    "paraphrases.",
                    {"hard_missed": missed, **kind},
                )
            )
        else:
            out.append(
                Advice(
                    "hard_missed.fuse_bm25",
                    "Hybrid retrieval: fuse BM25 with this run (e.g. reciprocal rank fusion) to catch exact terms.",
                    {"hard_missed": missed, **kind},
                )
            )
    return tuple(out)


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    """Findings as a table: ``run, rule, severity, title, evidence, advice, advice_ids, queries``."""
    return pd.DataFrame(
        [
            {
                "run": f.run,
                "rule": f.rule,
                "severity": f.severity,
                "title": f.title,
                "evidence": f.evidence,
                "advice": " | ".join(f.advice),
                "advice_ids": ", ".join(getattr(a, "id", "") for a in f.advice),
                "queries": ", ".join(f.queries),
            }
            for f in findings
        ],
        columns=["run", "rule", "severity", "title", "evidence", "advice", "advice_ids", "queries"],
    )


def query_facets(dataset: Dataset, query_ids: np.ndarray) -> pd.DataFrame:
    """``query_id, query, category, difficulty`` of each of ``query_ids`` (missing facets: :data:`NO_GROUP`)."""

    def grouped(column: str) -> np.ndarray:
        labels = dataset.facet(column, query_ids)
        labels[labels == ""] = NO_GROUP
        return labels

    return pd.DataFrame(
        {
            "query_id": pd.array(query_ids, dtype="str"),
            "query": dataset.facet("query", query_ids),
            "category": grouped("category"),
            "difficulty": grouped("difficulty"),
        }
    )


def query_table(
    dataset: Dataset,
    query_ids: np.ndarray,
    *,
    n_relevant: np.ndarray,
    first_relevant_rank: np.ndarray,
    rr: np.ndarray,
    recall_deep: np.ndarray,
    k: int,
    value: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per evaluated query (``query_ids``, in that order): ``query_id, query, category, difficulty,
    n_relevant, first_relevant_rank`` (0 = not retrieved), ``hit`` (a relevant document in the top K),
    ``rr``, ``recall_deep`` and, when given, ``value`` (the metric compared across categories)."""
    out = query_facets(dataset, query_ids)
    out["n_relevant"] = n_relevant
    out["first_relevant_rank"] = first_relevant_rank
    out["hit"] = (first_relevant_rank > 0) & (first_relevant_rank <= k)
    out["rr"] = rr
    out["recall_deep"] = recall_deep
    if value is not None:
        out["value"] = value
    return out


def diagnose_run(
    dataset: Dataset,
    run: Run | Alignment,
    *,
    k: int = 5,
    metric: str | None = None,
    low_mrr: float = LOW_MRR,
    traits: RunTraits | None = None,
    **conventions: Any,
) -> list[Finding]:
    """Align ``run`` (or take its :class:`ragmetrics.Alignment`; ``conventions`` as :func:`ragmetrics.align`) and
    apply every rule. ``metric`` (e.g. ``"ndcg@10"``) is compared across categories; ``hits@k`` otherwise."""

    if not isinstance(k, (int, np.integer)) or k < 1:
        raise RagMetricsError(f"The 'k' parameter must be an int >= 1. Got {k!r} instead.")
    alignment = run if isinstance(run, Alignment) else align(dataset, run, **conventions)
    compared = str(parse_metric(metric)) if metric else f"hits@{k}"
    deep = min(DEEP_K_MAX, max(alignment.depth, 1))
    table = query_table(
        dataset,
        alignment.query_ids,
        n_relevant=alignment.n_rel,
        first_relevant_rank=alignment.first_rel_rank,
        rr=alignment.value("mrr"),
        recall_deep=alignment.value(f"recall@{deep}"),
        k=k,
        value=alignment.value(compared),
    )
    return diagnose(alignment.name, table, k=k, deep_k=deep, metric_label=compared, low_mrr=low_mrr, traits=traits)
