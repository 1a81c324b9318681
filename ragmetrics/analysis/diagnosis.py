"""Plain-language diagnosis of a run's misses: deterministic rules, each finding cites the numbers that fired it.

:func:`diagnose_run` evaluates a run and applies the rules; :func:`diagnose`
applies them to a per-query table (:func:`query_table`), which the dashboard
builds from its cached evaluation. The rules and their thresholds:

* ``easy_missed``: more than ``EASY_MISSED_MAX`` (2) easy queries have no
  relevant document in the top K -> check indexing, chunk size and (for a
  dense run) the embedding model's coverage of the domain's terms.
* ``hard_missed``: more than ``HARD_MISSED_MAX`` (2) hard queries are missed
  -> HyDE (query expansion for a lexical run) when some of them are short, a
  larger top-k plus a reranker, and fusion with the other kind of retriever when
  the run is not a fusion already.
* ``near_miss``: at least ``NEAR_MISS_MIN`` (3) missed queries, and more than
  half of them ("most"), have their first relevant document at ranks
  K+1..max(20, 2K) -> rerank or raise K. The evidence says how many queries are
  missed at all; under ``FEW_MISSED_SHARE`` (5%) of them it is "info", not a
  warning.
* ``ranking_not_recall``: recall at the run's depth (at most 100) is at least
  ``HIGH_RECALL`` (0.85) but MRR is below ``LOW_MRR`` (0.70) -> the ranking,
  not the recall, is the problem (fusion weights only for a fused run, k1 and b
  only for a BM25 run, query prefixes only for a dense run whose family uses one
  or is not known).
* ``weak_category``: a category with at least ``CATEGORY_MIN_N`` (5) queries
  whose mean is at least ``CATEGORY_GAP`` (0.15) below the mean of all other
  queries -> it is named.

Queries without a relevant document are left out of every rule; a missing
category or difficulty counts as :data:`NO_GROUP`.

Advice is structured (:class:`Advice`): a stable id (``rule.action``, e.g.
``hard_missed.fuse_bm25``), the text, the evidence values that made it apply,
and that evidence in words (``because``: the numbers and what they mean).

The diagnosis reads the run before it advises (:class:`RunTraits`): fused or
not, lexical or dense, and its model family (:data:`FAMILIES`) when known, from
its tags (``fusion``, ``retriever.kind``, ``model``: what ``ragmetrics
retrieve`` and the dashboard record), else its name, and a fusion also from the
shape of its scores (reciprocal rank fusion's top scores sit at n/(k+1)). Advice
that only fits some runs is given only to them: no fusion to a fused run, no
BM25 parameters to a dense one, no query prefix to a model family without one;
a run of unknown kind gets the conditional wording ("if this run is dense").

A share is worded by :func:`quantifier` / :func:`share_words` everywhere:
"most" only above half, and the counts always said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.engine import Alignment, align
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.foundation import scripts
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.numbers import share

EASY_MISSED_MAX = 2
HARD_MISSED_MAX = 2
NEAR_MISS_MIN = 3
NEAR_MISS_SHARE = 0.5
NEAR_MISS_LIMIT = 20
#: below this share of the queries missed, near misses are worth knowing, not a warning
FEW_MISSED_SHARE = 0.05
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
    f"near misses: at least {NEAR_MISS_MIN} and more than {NEAR_MISS_SHARE:.0%} of the misses (info when under "
    f"{FEW_MISSED_SHARE:.0%} of the queries are missed)",
    f"ranking, not recall: deep recall at least {HIGH_RECALL:.2f} and MRR below {LOW_MRR:.2f}",
    f"weak category: at least {CATEGORY_MIN_N} queries, {CATEGORY_GAP:.2f} below the others",
)
"""The rules' thresholds in words (the dashboard's Diagnosis page states them)."""


class Advice(str):
    """One piece of advice: the text (the string itself), a stable ``id`` (``rule.action``), the ``evidence``
    values that made it apply and ``because``, that evidence in words (the numbers and what they mean). A string,
    so it reads, joins and escapes as its text."""

    id: str
    evidence: dict[str, Any]
    because: str

    def __new__(cls, id: str, text: str, evidence: dict[str, Any] | None = None, because: str = "") -> Advice:
        self = super().__new__(cls, text)
        self.id = id
        self.evidence = dict(evidence or {})
        self.because = because
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Advice, (self.id, str(self), self.evidence, self.because))

    @property
    def text(self) -> str:
        return str(self)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": str(self), "because": self.because, "evidence": self.evidence}


def evidence_words(advice: str) -> str:
    """Why an advice is given, as a sentence: "Because " and its :attr:`Advice.because`; "" for advice without
    one (a plain string)."""
    because = getattr(advice, "because", "")
    first = because.split(" ", 1)[0]
    if first.isalpha() and first.istitle():  # "Of the 10 ...", not "Hits@20" nor "MRR"
        because = because[0].lower() + because[1:]
    return f"Because {because}" if because else ""


def quantifier(part: int, whole: int) -> str:
    """The word for ``part`` of ``whole``: ``none``, ``all``, ``most`` (more than half: never at half or below),
    ``half`` or ``some``."""
    if part <= 0:
        return "none"
    if part >= whole:
        return "all"
    if 2 * part > whole:
        return "most"
    return "half" if 2 * part == whole else "some"


def share_words(part: int, whole: int, noun: str = "") -> str:
    """``part`` of ``whole`` (``noun``) in words, the counts always said, the word chosen by :func:`quantifier`:
    "most easy queries (9 of 12, 75%)", "all 12 easy queries", "none of the 12 easy queries", "half of the 12 easy
    queries (6)", "3 of 12 easy queries (25%)". Without ``noun`` it is "of them": "most of them (9 of 12)", "all 12
    of them", "none of them", "half of them (6 of 12)", "3 of them"."""
    word = quantifier(part, whole)
    if not noun:
        return {
            "none": "none of them", "all": f"all {whole} of them" if whole > 1 else "it",
            "most": f"most of them ({part} of {whole})", "half": f"half of them ({part} of {whole})",
        }.get(word, f"{part} of them")  # fmt: skip
    return {
        "none": f"none of the {whole} {noun}", "all": f"all {whole} {noun}" if whole > 1 else f"1 of 1 {noun} (100%)",
        "most": f"most {noun} ({part} of {whole}, {_pct(part, whole)})",
        "half": f"half of the {whole} {noun} ({part})",
    }.get(word, f"{part} of {whole} {noun} ({_pct(part, whole)})")  # fmt: skip


@dataclass(frozen=True)
class ModelFamily:
    """A retrieval model family the advice knows: its ``name``, the ``pattern`` a run's name or model tag matches,
    its ``kind`` (``lexical`` or ``dense``) and, for a dense family trained with them, the ``query_prefix`` its
    queries should start with and the ``passage_prefix`` of its passages."""

    name: str
    pattern: str
    kind: str
    query_prefix: str = ""
    passage_prefix: str = ""


FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("BM25", r"bm25|okapi", "lexical"),
    ModelFamily("TF-IDF", r"tf-?idf", "lexical"),
    ModelFamily("SPLADE", r"splade", "lexical"),
    ModelFamily("e5", r"(^|[^a-z0-9])e5([^a-z0-9]|$)", "dense", "query: ", "passage: "),
    ModelFamily("BGE", r"bge", "dense", "Represent this sentence for searching relevant passages: "),
    ModelFamily("nomic-embed", r"nomic", "dense", "search_query: ", "search_document: "),
    ModelFamily("Instructor", r"instructor", "dense", "Represent the question for retrieving supporting documents: "),
    ModelFamily("GTE", r"(^|[^a-z])gte", "dense"),
    ModelFamily("MiniLM", r"minilm", "dense"),
    ModelFamily("MPNet", r"mpnet", "dense"),
    ModelFamily("OpenAI embeddings", r"text-embedding|ada-?002|openai", "dense"),
)
"""The model families the advice tells apart, first match wins: the one place a family is added."""

FUSED_WORDS = r"rrf|hybrid|fus(ed|ion)|comb-?(sum|mnz)"
LEXICAL_WORDS = r"lexical|sparse|keyword"
DENSE_WORDS = r"dense|embed|vector|bi-?encoder"
"""Words of a run's name or ``retriever.kind`` tag that say its kind without naming a family."""
RRF_SHARE = 0.2
RRF_K_MIN = 10
"""A run's scores look like reciprocal rank fusion when at least ``RRF_SHARE`` of its queries share one top score
n/(k+1) (n = 2..5 fused runs, k = ``RRF_K_MIN``..1000: 60 is usual) and every score is in (0, 1]."""
KIND_TAGS = ("fusion", "retriever.kind", "model", "retriever.model", "retriever.model_name", "system")
"""The tags read for a run's kind, in this order."""


def family_of(text: str) -> ModelFamily | None:
    """The first of :data:`FAMILIES` whose pattern ``text`` matches (case-insensitive)."""
    lowered = str(text).lower()
    return next((f for f in FAMILIES if re.search(f.pattern, lowered)), None)


def rrf_shape(top_scores: np.ndarray, scores_in_unit: bool = True) -> tuple[int, int, int] | None:
    """``(n, k, queries)`` when a run's per-query top scores look like reciprocal rank fusion of ``n`` runs with
    constant ``k``: the most frequent top score is n/(k+1) for ``queries`` queries, at least :data:`RRF_SHARE` of
    them (``scores_in_unit``: every score of the run is in (0, 1]); else None."""
    top = np.asarray(top_scores, dtype=float)
    top = top[np.isfinite(top)]
    if not scores_in_unit or len(top) < 5:
        return None
    values, counts = np.unique(np.round(top, 9), return_counts=True)
    best = int(np.argmax(counts))
    if counts[best] < RRF_SHARE * len(top) or not 0 < values[best] <= 1:
        return None
    for n in range(2, 6):
        k = n / values[best] - 1
        if RRF_K_MIN <= round(k) <= 1000 and abs(k - round(k)) < 1e-3:
            return n, round(k), int(counts[best])
    return None


@dataclass(frozen=True)
class RunTraits:
    """What kind of retriever made a run, for advice that only fits some kinds: ``fused``, ``lexical``, ``dense``
    (at most one is true; none when nothing says), the model ``family`` (a :data:`FAMILIES` name, "" when unknown)
    and ``source``: how it is known, in words."""

    fused: bool = False
    lexical: bool = False
    dense: bool = False
    family: str = ""
    source: str = "nothing says: neither its tags, its name nor its scores"

    @property
    def kind(self) -> str:
        """``fused``, ``lexical``, ``dense`` or ``unknown``."""
        return "fused" if self.fused else "lexical" if self.lexical else "dense" if self.dense else "unknown"

    @property
    def model_family(self) -> ModelFamily | None:
        return next((f for f in FAMILIES if f.name == self.family), None)

    @classmethod
    def from_name(cls, name: str) -> RunTraits:
        """Read from a run's name alone (see :meth:`read`)."""
        return cls.read(name)

    @classmethod
    def read(
        cls, name: str, tags: Mapping[str, str] | None = None, top_scores: np.ndarray | None = None,
        scores_in_unit: bool = False,
    ) -> RunTraits:  # fmt: skip
        """Read what the run is: its ``tags`` first (``fusion`` set: fused; ``retriever.kind``, ``model``,
        ``retriever.model``, ``system``: a family of :data:`FAMILIES` or a kind's word), then its ``name``, and a
        fusion also from its per-query ``top_scores`` (:func:`rrf_shape`; ``scores_in_unit``: all its scores lie in
        (0, 1])."""
        tags = tags or {}
        said = [(f"its tag {key}={tags[key]}", str(tags[key])) for key in KIND_TAGS if tags.get(key)]
        said.append((f"its name {name!r}", str(name)))
        for where, text in said:
            if where.startswith("its tag fusion=") or re.search(FUSED_WORDS, text.lower()):
                return cls(fused=True, source=where)
        if top_scores is not None:
            shape = rrf_shape(top_scores, scores_in_unit)
            if shape is not None:
                n, k, queries = shape
                return cls(
                    fused=True,
                    source=f"its scores: the top score of {queries} of {len(top_scores)} queries is {n}/{k + 1}, "
                    f"as reciprocal rank fusion of {n} runs with k = {k} gives",
                )
        for where, text in said:
            family = family_of(text)
            if family is not None:
                return cls(lexical=family.kind == "lexical", dense=family.kind == "dense", family=family.name,
                           source=where)  # fmt: skip
        for where, text in said:
            if re.search(LEXICAL_WORDS, text.lower()):
                return cls(lexical=True, source=where)
            if re.search(DENSE_WORDS, text.lower()):
                return cls(dense=True, source=where)
        return cls()

    def words(self) -> str:
        """What the run is and how that is known, e.g. "dense (MiniLM), from its name 'dense-minilm'"."""
        if self.kind == "unknown":
            return (
                f"of unknown kind ({self.source}; tag it retriever.kind=dense, lexical or fused, or model=NAME, "
                "for advice that fits it)"
            )
        family = f" ({self.family})" if self.family else ""
        return f"{self.kind}{family}, from {self.source}"

    def evidence(self) -> dict[str, Any]:
        """The kind as evidence values (an :class:`Advice`'s ``evidence``)."""
        return {"kind": self.kind, "family": self.family, "kind_from": self.source}


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
    return share(part / whole) if whole else "—"


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
    table = table[table["n_relevant"] > 0].reset_index(drop=True)
    if table.empty:
        return []
    findings = [
        *_easy_missed(run, table, k, traits),
        *_hard_missed(run, table, k, traits),
        *_near_miss(run, table, k),
        *_ranking_not_recall(run, table, deep_k, low_mrr, traits),
        *_weak_categories(run, table, k, metric_label),
    ]
    return findings


def _missed(table: pd.DataFrame) -> pd.DataFrame:
    return table[~table["hit"].astype(bool)]


def _easy_missed(run: str, table: pd.DataFrame, k: int, traits: RunTraits) -> list[Finding]:
    easy = table[table["difficulty"] == "easy"]
    missed = _missed(easy)
    if len(missed) <= EASY_MISSED_MAX:
        return []
    never = int((missed["first_relevant_rank"] <= 0).sum())
    ids = _ids(missed)
    shares = f"{share_words(len(missed), len(easy), 'easy queries')} have no relevant document in the top {k}"
    never_words = f"{share_words(never, len(missed))} never retrieve one at all"
    advice = [
        Advice(
            "easy_missed.check_index",
            "Check that the relevant documents were indexed at all: look their ids up in the index.",
            {"easy_missed": len(missed), "never_retrieved": never},
            f"{shares}, and {never_words}: a relevant document an easy query never retrieves is often not in the "
            "index at all."
            if never
            else f"{shares}; each of them retrieves a relevant document deeper down, so the index has them: look at "
            "how they are ranked rather than whether they are indexed.",
        ),
        Advice(
            "easy_missed.chunk_size",
            "Check the chunk size: an answer split across chunks, or buried in a long chunk, matches poorly.",
            {"easy_missed": len(missed)},
            f"{shares}: when an easy query's words are in a document and it still ranks low, the chunking is a "
            "usual cause.",
        ),
    ]
    if not traits.lexical and not traits.fused:
        conditional = "" if traits.dense else "If this run is dense: "
        advice.append(
            Advice(
                "easy_missed.embedding_coverage",
                f"{conditional}Check that the embedding model covers the domain's terms (product names, codes, "
                "jargon); try a domain-adapted or multilingual model.",
                {"easy_missed": len(missed), **traits.evidence()},
                f"{shares}, and the run is {traits.words()}: a general embedding model may not know the domain's "
                "terms, where a lexical retriever would match them as they are.",
            )
        )
    return [
        Finding(
            run,
            "easy_missed",
            f"{len(missed)} easy queries are missed at K={k}",
            f"{shares}; {never_words}. Examples: {_fmt_ids(ids)}.",
            tuple(advice),
            ids,
            "error",
            (("easy_missed", len(missed)), ("easy", len(easy)), ("never_retrieved", never)),
        )
    ]


def _hard_missed(run: str, table: pd.DataFrame, k: int, traits: RunTraits) -> list[Finding]:
    hard = table[table["difficulty"] == "hard"]
    missed = _missed(hard)
    if len(missed) <= HARD_MISSED_MAX:
        return []
    short = int(missed["query"].map(is_short).sum())
    deeper = int((missed["first_relevant_rank"] > k).sum())
    ids = _ids(missed)
    shares = f"{share_words(len(missed), len(hard), 'hard queries')} have no relevant document in the top {k}"
    return [
        Finding(
            run,
            "hard_missed",
            f"{len(missed)} hard queries are missed at K={k}",
            f"{shares}; {share_words(short, len(missed))} {'is' if short == 1 else 'are'} short. "
            f"Examples: {_fmt_ids(ids)}.",
            _hard_advice(len(missed), len(hard), short, deeper, k, traits),
            ids,
            values=(("hard_missed", len(missed)), ("hard", len(hard)), ("short", short), ("deeper", deeper)),
        )
    ]


def _hard_advice(missed: int, hard: int, short: int, deeper: int, k: int, traits: RunTraits) -> tuple[Advice, ...]:
    """What to try for missed hard queries, given what the run is: for short queries among them, HyDE (a dense or
    unknown run) or query expansion (a lexical one); a reranker over a larger top-k; a fusion only for a run that
    is not one already (with BM25 for a dense run, with a dense run for a lexical one, either for a run of unknown
    kind, said so)."""
    kind = traits.evidence()
    shares = f"{share_words(missed, hard, 'hard queries')} are missed at K={k}"
    out = []
    if short:
        short_words = f"{share_words(short, missed)} {'is' if short == 1 else 'are'} short (at most 4 words)"
        if traits.lexical:
            out.append(
                Advice(
                    "hard_missed.expand",
                    f"Expand short queries ({short} here): pseudo-relevance feedback (e.g. RM3) or a generated "
                    "answer appended to the query gives BM25 more terms to match.",
                    {"short": short, "hard_missed": missed, **kind},
                    f"Of the {missed} missed hard queries, {short_words}, and the run is {traits.words()}: a short "
                    "query gives a lexical retriever few terms to match.",
                )
            )
        else:
            out.append(
                Advice(
                    "hard_missed.hyde",
                    f"HyDE for short queries ({short} here): embed a generated hypothetical answer instead of the "
                    "bare question.",
                    {"short": short, "hard_missed": missed, **kind},
                    f"Of the {missed} missed hard queries, {short_words}: a short question gives the retriever "
                    "little to go on, and a hypothetical answer looks more like the documents.",
                )
            )
    out.append(
        Advice(
            "hard_missed.rerank",
            "Retrieve a larger top-k (e.g. 50) and rerank it with a cross-encoder.",
            {"hard_missed": missed, "deeper": deeper},
            f"{shares}; {share_words(deeper, missed)} {'has' if deeper == 1 else 'have'} a relevant document deeper "
            "in the run, which a reranker over a larger top-k can lift into the top K."
            if deeper
            else f"{shares}, and none of them has a relevant document anywhere in the run: a larger top-k reranked "
            "helps only if the retriever finds them deeper.",
        )
    )
    if traits.fused:
        return tuple(out)
    if traits.lexical:
        out.append(
            Advice(
                "hard_missed.fuse_dense",
                "Hybrid retrieval: fuse this lexical run with a dense one (e.g. reciprocal rank fusion) to catch "
                "paraphrases.",
                {"hard_missed": missed, **kind},
                f"{shares}, and the run is {traits.words()}: a lexical retriever misses documents that say the same "
                "thing in other words, which a dense one finds.",
            )
        )
    elif traits.dense:
        out.append(
            Advice(
                "hard_missed.fuse_bm25",
                "Hybrid retrieval: fuse BM25 with this run (e.g. reciprocal rank fusion) to catch exact terms.",
                {"hard_missed": missed, **kind},
                f"{shares}, and the run is {traits.words()}: a dense retriever blurs exact terms (names, codes, "
                "numbers) that BM25 matches.",
            )
        )
    else:
        out.append(
            Advice(
                "hard_missed.fuse_other",
                "If this run uses one kind of retriever only, fuse it with the other kind (a dense run with BM25, a "
                "lexical run with a dense one), e.g. by reciprocal rank fusion.",
                {"hard_missed": missed, **kind},
                f"{shares}; the run is {traits.words()}, so which fusion fits cannot be said.",
            )
        )
    return tuple(out)


def _near_miss(run: str, table: pd.DataFrame, k: int) -> list[Finding]:
    missed = _missed(table)
    limit = max(NEAR_MISS_LIMIT, 2 * k)
    near = missed[(missed["first_relevant_rank"] > k) & (missed["first_relevant_rank"] <= limit)]
    if not len(missed) or len(near) < NEAR_MISS_MIN or len(near) / len(missed) <= NEAR_MISS_SHARE:
        return []
    never = int((missed["first_relevant_rank"] <= 0).sum())
    median = float(np.median(near["first_relevant_rank"]))
    hits_limit = float(((table["first_relevant_rank"] > 0) & (table["first_relevant_rank"] <= limit)).mean())
    hits_k = float(table["hit"].mean())
    ids = _ids(near)
    near_words = share_words(len(near), len(missed), "missed queries")
    missed_words = share_words(len(missed), len(table), "queries")
    word = quantifier(len(near), len(missed))
    never_words = (
        f"{share_words(never, len(missed))} {'is' if never == 1 else 'are'} not retrieved at all"
        if never
        else "each of them is retrieved somewhere in the run"
    )
    return [
        Finding(
            run,
            "near_miss",
            f"{word.capitalize()} of the {len(missed)} misses are near misses (ranks {k + 1}–{limit})",
            f"{missed_words} are missed at K={k}; {near_words} have their first relevant document at ranks "
            f"{k + 1}–{limit} (median rank {median:g}); {never_words}. Hits@{limit} = {hits_limit:.3f} against "
            f"Hits@{k} = {hits_k:.3f}.",
            (
                Advice(
                    "near_miss.rerank",
                    f"Rerank the top {limit}–50 with a cross-encoder so these documents move into the top {k}.",
                    {"near": len(near), "missed": len(missed), "median_rank": median},
                    f"{near_words} have a relevant document just below K (median rank {median:g}): it is retrieved, "
                    "only ranked too low, which is what a reranker fixes.",
                ),
                Advice(
                    "near_miss.raise_k",
                    f"Or raise K to {limit} if the generator can take that much context.",
                    {f"hits@{limit}": hits_limit, f"hits@{k}": hits_k},
                    f"Hits@{limit} = {hits_limit:.3f} against Hits@{k} = {hits_k:.3f}: with K = {limit}, "
                    f"{len(near)} more of the {len(table)} queries would hand the generator a relevant document.",
                ),
            ),
            ids,
            severity="info" if len(missed) < FEW_MISSED_SHARE * len(table) else "warning",
            values=(("near", len(near)), ("missed", len(missed)), ("queries", len(table)), ("median_rank", median)),
        )
    ]


def _ranking_not_recall(run: str, table: pd.DataFrame, deep_k: int, low_mrr: float, traits: RunTraits) -> list[Finding]:
    recall_deep = float(table["recall_deep"].mean())
    mrr = float(table["rr"].mean())
    if recall_deep < HIGH_RECALL or mrr >= low_mrr:
        return []
    at_one = int((table["first_relevant_rank"] == 1).sum())
    below = table[table["first_relevant_rank"] > 1]["first_relevant_rank"]
    median = float(np.median(below)) if len(below) else float("nan")
    numbers = (
        f"Recall@{deep_k} = {recall_deep:.3f} (at least {HIGH_RECALL:.2f}) but MRR = {mrr:.3f} (below {low_mrr:.2f})"
    )
    at_one_words = f"{share_words(at_one, len(table), 'queries')} have one at rank 1"
    placed = (
        f"{share_words(len(below), len(table), 'queries')} have their first relevant document below rank 1"
        + (f" (median rank {median:g})" if len(below) else "")
        + f", {at_one} at rank 1"
    )
    kind = traits.evidence()
    family = traits.model_family
    advice = [
        Advice(
            "ranking_not_recall.rerank",
            "Add a reranker (cross-encoder) over the retrieved candidates.",
            {f"recall@{deep_k}": recall_deep, "mrr": mrr},
            f"{numbers}: the relevant documents are retrieved but ranked low where it counts: {placed}. A reranker "
            "reorders what is retrieved.",
        )
    ]
    if traits.fused:
        advice.append(
            Advice(
                "ranking_not_recall.fusion_weights",
                "Tune the fusion weights or the score normalisation of this hybrid run.",
                {"mrr": mrr, **kind},
                f"{numbers}, and the run is {traits.words()}: how its parts are weighed decides the order of what "
                "they retrieve together.",
            )
        )
    elif traits.lexical and traits.family == "BM25":
        advice.append(
            Advice(
                "ranking_not_recall.bm25_params",
                "Tune BM25's k1 (term-frequency saturation) and b (length normalisation) on part of the queries.",
                {"mrr": mrr, **kind},
                f"{numbers}, and the run is {traits.words()}: its parameters decide how it orders the documents "
                "it finds.",
            )
        )
    elif traits.dense and (family is None or family.query_prefix):
        prefix = (
            f"{family.name}'s query prefix {family.query_prefix!r}"
            + (f" and passage prefix {family.passage_prefix!r}" if family.passage_prefix else "")
            if family is not None
            else "the query prefix or instruction the embedding model was trained with (e5: 'query: ', nomic: "
            "'search_query: ', BGE: its retrieval instruction)"
        )
        known = f"the {family.name} family expects it" if family is not None else "its model family is not known"
        advice.append(
            Advice(
                "ranking_not_recall.query_prompt",
                f"Check that queries are embedded with {prefix}.",
                {"mrr": mrr, **kind},
                f"{numbers}, and the run is {traits.words()}; {known}, and a model used without its prefix ranks "
                "worse.",
            )
        )
    joint = ";" if quantifier(at_one, len(table)) in ("most", "all") else ", but only"  # never "only most"
    return [
        Finding(
            run,
            "ranking_not_recall",
            "Ranking, not recall, is the problem",
            f"{numbers}: the relevant documents are retrieved{joint} {at_one_words} (elsewhere the first one is "
            f"at median rank {median:g}).",
            tuple(advice),
            values=((f"recall@{deep_k}", recall_deep), ("mrr", mrr), ("at_rank_1", at_one / len(table))),
        )
    ]


def _weak_categories(run: str, table: pd.DataFrame, k: int, metric_label: str | None) -> list[Finding]:
    value = table["value"] if "value" in table.columns else table["hit"].astype(float)
    label = metric_label or f"Hits@{k}"
    categories = table["category"].astype("str")
    findings = []
    for category, n in categories.value_counts().items():
        if n < CATEGORY_MIN_N or n == len(table):
            continue
        inside = value[categories == category]
        outside = value[categories != category]
        gap = float(inside.mean() - outside.mean())
        if gap > -CATEGORY_GAP:
            continue
        small = f" Only {n} queries: too few to be sure." if n < MIN_TRUSTED_N else ""
        missed = table[(categories == category) & ~table["hit"].astype(bool)]
        numbers = (
            f"{label} = {inside.mean():.3f} on '{category}' (n={n}) against {outside.mean():.3f} on the other "
            f"{len(outside)} queries ({gap:+.3f})"
        )
        missed_words = f"{share_words(len(missed), int(n), f'{category!r} queries')} are missed at K={k}"
        findings.append(
            Finding(
                run,
                "weak_category",
                f"Category '{category}' is far below the others",
                f"{numbers}.{small}",
                (
                    Advice(
                        "weak_category.inspect",
                        f"Open the missed queries filtered to '{category}' and compare what was retrieved with the "
                        "relevant documents.",
                        {"category": str(category), "gap": gap, "n": int(n)},
                        f"{numbers}; {missed_words}: what they retrieve instead shows why.",
                    )
                    if len(missed)
                    else Advice(
                        "weak_category.ranks",
                        f"Compare the '{category}' queries' values query by query (Breakdown, or the per-query "
                        "values): their relevant documents are found but ranked lower than elsewhere.",
                        {"category": str(category), "gap": gap, "n": int(n)},
                        f"{numbers}; {missed_words}, so the gap is in the ranks of what they find.",
                    ),
                    Advice(
                        "weak_category.indexing",
                        f"Check that '{category}' documents are indexed and chunked like the rest, and that their "
                        "vocabulary (names, numbers, units) survives tokenisation.",
                        {"category": str(category), "gap": gap},
                        f"{numbers}: a whole category far below the rest points at how its documents were "
                        "prepared more than at the retriever.",
                    ),
                ),
                _ids(missed),
                values=(("category", str(category)), ("n", int(n)), ("gap", gap)),
            )
        )
    return findings


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
    apply every rule. ``metric`` (e.g. ``"ndcg@10"``) is compared across categories; ``hits@k`` otherwise.
    ``traits``: what kind of run it is (default: :func:`run_traits` of the run alone, no tags)."""

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
    traits = traits or run_traits(alignment.run)
    return diagnose(alignment.name, table, k=k, deep_k=deep, metric_label=compared, low_mrr=low_mrr, traits=traits)


def run_traits(run: Run, tags: Mapping[str, str] | None = None) -> RunTraits:
    """:meth:`RunTraits.read` of a run: its ``tags`` (a stored run's, or those ``ragmetrics retrieve`` wrote
    beside it), its name and its scores."""
    table = run.table
    scores = table.column("score").to_numpy()
    top = pd.Series(scores).groupby(table.column("query_id").to_numpy()).max().to_numpy() if len(scores) else None
    in_unit = bool(len(scores)) and bool(np.all((scores > 0) & (scores <= 1)))
    return RunTraits.read(run.name, tags, top, in_unit)
