"""Keeping an evaluation set honest (``ragmetrics dataset check``): freshness against the current corpus, coverage
per category and difficulty against targets and the size guidance per stage, and power with two or more runs.

* freshness: the queries whose relevant documents are not in the corpus any more (ids checked against the corpus's
  chunk ids and document ids), and, for a generated set, those whose source chunk's text changed since it was made
  (its ``provenance.source_sha256``);
* duplicates: queries that ask the same words (in any order and case), as a merge of two generated sets leaves them;
* coverage: queries per category and per difficulty; a ``target`` per category (or per difficulty: easy, medium,
  hard) is met or short by N; the set's size is checked against :data:`STAGES` (the seed's guidance);
* power: every pair of runs' paired test on one metric (:func:`ragmetrics.analysis.compare.discriminative_power`):
  separated or not, the smallest difference the set detects at 80% power (the paired t-test's), and the queries a
  chosen difference (default: the observed one) would need (:mod:`ragmetrics.analysis.stats`).
"""

from __future__ import annotations

import json
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ragmetrics.analysis.compare import discriminative_power
from ragmetrics.analysis.evaluate import evaluate
from ragmetrics.analysis.stats import min_detectable_delta, queries_needed
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.synth.corpus import Corpus
from ragmetrics.synth.filters import units
from ragmetrics.synth.output import source_digest

STAGES: dict[str, tuple[int, int]] = {
    "prototype": (20, 30),
    "development": (50, 100),
    "pre-release": (100, 200),
    "production": (50, 100),
}
"""Queries an evaluation set should hold at each stage (``production``: a sample of production traffic)."""
DIFFICULTIES = ("easy", "medium", "hard")
"""Target names read as difficulties, not categories."""
ALPHA = 0.05
POWER = 0.8


@dataclass(frozen=True)
class Age:
    """How old a dataset version is: ``since`` (seconds since the epoch) and how that is known (``known_from``:
    ``store``, the time the store received this exact content; ``review``, the latest review decision recorded in
    its queries' provenance; ``file``, the file's last modification, an upper bound on freshness only)."""

    since: float
    known_from: str
    detail: str = ""

    def days(self, now: float) -> float:
        return max(0.0, (now - self.since) / 86400.0)

    def line(self, now: float) -> str:
        when = datetime.fromtimestamp(self.since, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        how = {
            "store": "stored",
            "review": "last reviewed (its provenance)",
            "file": "the file last written (not in a store, no review time in its provenance)",
        }[self.known_from]
        return f"age: {self.days(now):.1f} days ({how} {when}{'; ' + self.detail if self.detail else ''})"


@dataclass
class CheckReport:
    queries: int
    missing: list[tuple[str, list[str]]] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)
    duplicates: list[list[str]] = field(default_factory=list)
    """The query ids of each group of queries that ask the same words (in any order and case): a merged set's
    repeats, counted twice in every mean."""
    categories: dict[str, int] = field(default_factory=dict)
    difficulties: dict[str, int] = field(default_factory=dict)
    targets: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Every target given, met or short: name -> (have, target)."""
    stage: str | None = None
    size_problem: str | None = None
    size_note: str | None = None
    power: list[dict[str, Any]] = field(default_factory=list)
    age: Age | None = None
    corpus_checked: bool = False
    """A corpus was given: the missing and changed lines, or the freshness line that says none, are its findings."""

    @property
    def problems(self) -> int:
        """How many findings call for action (missing or changed sources, queries asked twice, short categories,
        fewer queries than its stage asks, run pairs the set does not separate)."""
        return (
            len(self.missing)
            + len(self.changed)
            + len(self.duplicates)
            + len(self.shortfalls)
            + (self.size_problem is not None)
            + sum(not row["separated"] for row in self.power)
        )

    @property
    def shortfalls(self) -> dict[str, tuple[int, int]]:
        """The targets not met: name -> (have, target)."""
        return {name: (have, want) for name, (have, want) in self.targets.items() if have < want}

    @property
    def size_line(self) -> str | None:
        """The set's size against its stage (a problem, a note, or within it); None without a stage."""
        if self.stage is None:
            return None
        low, high = STAGES[self.stage]
        return (
            self.size_problem or self.size_note or f"size: {self.queries} queries, within {self.stage}'s {low}-{high}"
        )

    def lines(self) -> list[str]:
        """The report as plain lines."""
        out = [f"queries: {self.queries}"]
        if self.age is not None:
            out.append(self.age.line(time.time()))
        for qid, docs in self.missing:
            out.append(f"missing: query {qid}: relevant document(s) not in the corpus: {', '.join(docs)}")
        for qid, chunk in self.changed:
            out.append(f"changed: query {qid}: the text of its source {chunk} changed since the set was made")
        if self.corpus_checked and not self.missing and not self.changed:
            out.append("freshness: ok (every relevant document is in the corpus, no source text changed)")
        for ids in self.duplicates:
            out.append(f"duplicate: queries {', '.join(ids)} ask the same words (each counts in every mean)")
        out.append("categories: " + (", ".join(f"{k} {v}" for k, v in self.categories.items()) or "none given"))
        out.append("difficulty: " + (", ".join(f"{k} {v}" for k, v in self.difficulties.items()) or "none given"))
        for category, (have, want) in self.targets.items():
            verdict = f"{want - have} short" if have < want else "met"
            out.append(f"coverage: {category}: {have} of the {want} targeted ({verdict})")
        if self.size_line is not None:
            out.append(self.size_line)
        for row in self.power:
            out.append(row["line"])
        return out


def missing_documents(dataset: Dataset, known: set[str]) -> list[tuple[str, list[str]]]:
    """``(query_id, [doc_id, ...])`` of the queries with relevant documents not in ``known``."""
    qrels = dataset.qrels
    judged = qrels[qrels["relevance"] > 0]
    gone = judged[~judged["doc_id"].isin(known)]
    return [(str(q), sorted(map(str, g["doc_id"]))) for q, g in gone.groupby("query_id", sort=True)]


def judged_among(dataset: Dataset, ids: set[str]) -> list[str]:
    """The set's chunk ids that are among ``ids`` (a corpus's own ids), sorted: a corpus whose own ids are the set's
    chunk ids is the set's chunks (``synth --chunks-out``), already cut. The set's chunk ids are the relevant
    documents of the queries whose provenance records a chunker that cuts (not ``none``): a query without one (added
    by hand, or from other qrels) names whole documents, which a document corpus holds too."""
    cut = {query for query, chunker in _chunkers(dataset).items() if chunker != "none"}
    qrels = dataset.qrels
    judged = qrels.loc[(qrels["relevance"] > 0) & qrels["query_id"].astype(str).isin(cut), "doc_id"]
    return sorted(set(map(str, judged[judged.isin(ids)])))


def _provenance(found: Any) -> Mapping[str, Any] | None:
    """A query's provenance as a map (the loaders keep a map in an extra column as its JSON text), or None."""
    if isinstance(found, str):
        try:
            found = json.loads(found)
        except json.JSONDecodeError:
            return None
    return found if isinstance(found, Mapping) else None


def recorded_chunkers(dataset: Dataset) -> list[str]:
    """The chunkers the set's queries were made with, as ``--chunker`` specs (their provenance records the stated
    name, ``words:200:50`` or ``none (documents grouped by ...)``, whose first word is the spec), sorted."""
    return sorted(set(_chunkers(dataset).values()))


def _chunkers(dataset: Dataset) -> dict[str, str]:
    """Each query's chunker as a ``--chunker`` spec, the first word of the name its provenance records
    (``words:200:50``, ``none (documents grouped by ...)``); queries whose provenance records none are left out."""
    queries = dataset.queries
    if "provenance" not in queries.columns:
        return {}
    return {
        str(query): str(p["chunker"]).split()[0]
        for query, found in zip(queries["query_id"], queries["provenance"])
        if (p := _provenance(found)) and p.get("chunker")
    }


def changed_sources(provenances: Iterable[tuple[str, Any]], corpus: Corpus) -> list[tuple[str, str]]:
    """``(query_id, chunk_id)`` of generated queries whose source chunk still exists but whose text changed."""
    texts = {c.chunk_id: c.text for c in corpus.chunks}
    out = []
    for qid, found in provenances:
        provenance = _provenance(found)
        if provenance is None:
            continue
        chunk, digest = provenance.get("chunk_id"), provenance.get("source_sha256")
        if (
            isinstance(chunk, str)
            and isinstance(digest, str)
            and chunk in texts
            and source_digest(texts[chunk]) != digest
        ):
            out.append((qid, chunk))
    return out


def reviewed_at(provenances: Iterable[Any]) -> float | None:
    """The latest ``reviewed_at`` (seconds since the epoch) in the queries' provenance (a set made on the Build
    dataset page records it), or None."""
    latest: float | None = None
    for found in provenances:
        provenance = found
        if isinstance(found, str):
            try:
                provenance = json.loads(found)
            except json.JSONDecodeError:
                continue
        if not isinstance(provenance, Mapping):
            continue
        try:
            moment = float(provenance.get("reviewed_at") or "nan")
        except (TypeError, ValueError):
            continue
        if moment == moment:
            latest = moment if latest is None else max(latest, moment)
    return latest


def duplicate_queries(ids: Iterable[Any], texts: Iterable[Any]) -> list[list[str]]:
    """The ids of each group of queries whose texts hold the same words in any order and case (as synth's duplicate
    flag reads them, :func:`ragmetrics.synth.filters.units`), in set order; a query without words is none."""
    groups: dict[frozenset[str], list[str]] = {}
    for qid, text in zip(ids, texts):
        words = frozenset(units(str(text))) if isinstance(text, str) else frozenset()
        if words:
            groups.setdefault(words, []).append(str(qid))
    return [found for found in groups.values() if len(found) > 1]


def counts(values: Iterable[Any]) -> dict[str, int]:
    found = Counter(str(v) if v is not None and str(v) not in ("", "nan") else "(none)" for v in values)
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def power_rows(
    dataset: Dataset, runs: Sequence[Run], metric: str, *, delta: float | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """Per pair of runs: the observed difference, its p-value, whether the set separates them, the smallest
    difference it detects and the queries ``delta`` (default: the observed difference) would need."""
    with warnings.catch_warnings(record=True) as said:  # held until the runs are known to be this set's
        warnings.simplefilter("always")
        result = evaluate(dataset, list(runs), [metric])
    for run in result.runs.values():  # a run made for another set: its every value 0, a "difference" of nothing
        if run.alignment.health.run_queries_known == 0.0:  # refused alone, not after warnings it makes moot
            raise RagMetricsError(run.alignment.explain_no_overlap(audience="library"))
    for warning in said:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    with warnings.catch_warnings():  # evaluate has said what it had to say about the runs' coverage
        warnings.simplefilter("ignore", RagMetricsWarning)
        table = discriminative_power(result, metric, alpha=ALPHA, seed=seed)
    rows = []
    for row in table.to_dict("records"):
        n = int(row["n"])  # the queries evaluated on both runs, not every query of the set (a negative one has none)
        sd = float(row["sd_difference"])
        detectable = min_detectable_delta(sd, n, alpha=ALPHA, power=POWER) if sd == sd else float("nan")
        wanted = delta if delta is not None else abs(float(row["delta"]))
        needed = queries_needed(wanted, sd, alpha=ALPHA, power=POWER) if wanted > 0 and sd == sd and sd > 0 else None
        separated = bool(row["significant"])
        verdict = "separated" if separated else "NOT separated"
        line = (
            f"power: {row['run_a']} vs {row['run_b']} on {metric}: difference {row['delta']:+.4f}, "
            f"p={row['p_value']:.3g}: {verdict} by these {n} queries; "
            + (
                f"at {POWER:.0%} power they detect no difference a metric of 0 to 1 can show (the smallest they "
                f"would detect is {detectable:.4f})"
                if sd > 0 and detectable > 1
                else f"at {POWER:.0%} power they detect {detectable:.4f}"
                if sd > 0
                else "their difference is the same on every one of them, so the smallest detectable difference "
                "cannot be estimated"
            )
        )
        if needed is not None:
            more = max(0, needed - n)
            line += f"; a difference of {wanted:.4f} needs {needed} queries ({more} more)"
        rows.append({**row, "separated": separated, "min_detectable": detectable, "needed": needed, "line": line})
    return rows


def check(
    dataset: Dataset,
    corpus: Corpus | None = None,
    *,
    targets: Mapping[str, int] | None = None,
    stage: str | None = None,
    runs: Sequence[Run] = (),
    metric: str = "ndcg@10",
    delta: float | None = None,
) -> CheckReport:
    """The whole check (see the module); ``corpus`` None skips freshness, fewer than two runs skip power."""
    queries = dataset.queries
    report = CheckReport(queries=len(queries))
    if corpus is not None:
        report.corpus_checked = True
        known = {c.chunk_id for c in corpus.chunks} | {d.doc_id for d in corpus.documents}
        report.missing = missing_documents(dataset, known)
        if "provenance" in queries.columns:
            report.changed = changed_sources(zip(queries["query_id"], queries["provenance"]), corpus)
    if "query" in queries.columns:
        report.duplicates = duplicate_queries(queries["query_id"], queries["query"])
    report.categories = counts(queries["category"]) if "category" in queries.columns else {}
    report.difficulties = counts(queries["difficulty"]) if "difficulty" in queries.columns else {}
    for name, want in (targets or {}).items():
        # a target names a category, or a difficulty (easy, medium, hard)
        have = (report.difficulties if name in DIFFICULTIES else report.categories).get(name, 0)
        report.targets[name] = (have, want)
    if stage is not None:
        report.stage = stage
        low, high = STAGES[stage]
        if report.queries < low:
            report.size_problem = (
                f"size: {report.queries} queries, fewer than {stage}'s {low}-{high} ({low - report.queries} short)"
            )
        elif report.queries > high:  # more queries only add power: said, not a finding
            report.size_note = (
                f"size: {report.queries} queries, more than {stage}'s {low}-{high} asks (not a finding: more "
                "queries separate runs better, at the cost of judging them)"
            )
    if len(runs) >= 2:
        report.power = power_rows(dataset, runs, metric, delta=delta)
    return report
