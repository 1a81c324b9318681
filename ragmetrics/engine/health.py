"""How well a run meets the judgments: coverage of the top k, relevant documents found, id overlap, and,
when the ids do not meet at all, the likely cause and a fix tried on the data.

A number computed from a run whose ids never meet the qrels means nothing (every metric 0): such an
alignment is refused by the CLI (``--allow-no-overlap`` proceeds) and shown in red by the dashboard.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.foundation.kernels import unique

if TYPE_CHECKING:
    from ragmetrics.engine.alignment import Alignment

NO_OVERLAP = 0.02
"""A run meets the qrels when at least this share of the queries it ranks has a judged document in its ranking
(a share, not a count of rows: sparse qrels judge one document of a thousand retrieved)."""

DIAGNOSIS_QUERIES = 500
"""Queries the fixes are tried on (the first ones the run ranks)."""

_REGEX_SPECIALS = set(".^$*+?{}[]\\|()")

ADVICE: dict[str, dict[str, str]] = {
    "cli": {
        "chunk_pattern": "map chunks to documents with --chunk-pattern '{pattern}' (library: chunk_pattern=)",
        "chunk_ids": "evaluate the chunk ids as given: drop --chunk-pattern/--chunk-mapping, or --level chunk",
        "document_level": "evaluate the documents: drop --level chunk (library: level='auto')",
        "whole_documents": "retrieve over the chunks the qrels judge, not the whole documents (a set synth wrote "
        "with --chunker: index its .chunks.jsonl, not the corpus)",
        "override": "--allow-no-overlap scores it anyway (every metric 0)",
    },
    "library": {
        "chunk_pattern": "map chunks to documents with chunk_pattern='{pattern}'",
        "chunk_ids": "evaluate the chunk ids as given: no chunk_pattern or chunk mapping, or level='chunk'",
        "document_level": "evaluate the documents: level='auto'",
        "whole_documents": "retrieve over the chunks the qrels judge, not the whole documents (a generated set's "
        "chunks file, not the corpus)",
        "override": "",
    },
    "dashboard": {
        "chunk_pattern": "upload the run again with the chunk pattern {pattern} (Upload page, Chunk ids → documents)",
        "chunk_ids": "upload the run again with the chunk pattern and the chunk-mapping file empty",
        "document_level": "evaluate the run at document level (level 'auto')",
        "whole_documents": "run the retriever over the chunks the qrels judge, not the whole documents",
        "override": "",
    },
}
"""The fixes and the override in the words of each interface (``explain_no_overlap(audience=...)``); ``library``:
a function's parameters, for a caller that offers no override (``dataset check``'s power check)."""

CHUNK_SEPARATORS = ("#", "::", "_C", "-C", "_chunk", "-chunk", "__", "_", "-", ":", "|", "/", ".")
"""Separators tried between a document id and a chunk number, most specific first."""
NUMBERING_SEPARATORS = CHUNK_SEPARATORS[: CHUNK_SEPARATORS.index("__")]
"""The separators of :data:`CHUNK_SEPARATORS` that name a chunk (``#``, ``_C``, ...); not the single ``_`` or ``-``
that plain ids hold (``FAQ-11`` is no chunk of ``FAQ``)."""


THIN_JUDGED_AT_10 = 0.5
"""judged@10 below this: most of a run's top 10 is unjudged (:attr:`Health.thinly_judged`)."""


@dataclass(frozen=True)
class Health:
    """What the run and the qrels share, over the evaluated queries.

    ``queries_ranked``: evaluated queries the run ranks documents for; ``queries_meeting``: those with at least
    one judged document in their ranking; ``judged_at_10``: mean share of the top 10 that is judged, a query
    ranking fewer read over what it ranks (the metric judged@10, ir_measures' Judged@10); ``judged_of_ranked``: the
    same (kept for callers that read it); ``relevant_retrieved``: share of the relevant judgments retrieved at any
    rank; ``run_queries_known``: share of the run's distinct queries that are dataset queries."""

    queries_ranked: int
    queries_meeting: int
    judged_at_10: float
    relevant_retrieved: float
    run_queries_known: float
    judged_of_ranked: float

    @property
    def overlap(self) -> float:
        """Share of the ranked queries whose ranking meets the judgments (1.0 when nothing is ranked)."""
        return self.queries_meeting / self.queries_ranked if self.queries_ranked else 1.0

    @property
    def thinly_judged(self) -> bool:
        """True when the run ranks documents and less than :data:`THIN_JUDGED_AT_10` of its top 10 is judged on
        average: most of what its numbers rest on is unjudged (scored by the unjudged convention). Said by the
        CLI's note and the dashboard's upload checks alike."""
        return self.queries_ranked > 0 and self.judged_at_10 < THIN_JUDGED_AT_10

    @property
    def no_overlap(self) -> bool:
        """True when the run ranks documents but (almost) none of its queries' rankings meets the qrels, or none
        of its queries is a dataset query."""
        return (self.queries_ranked > 0 and self.overlap < NO_OVERLAP) or self.run_queries_known == 0.0


@dataclass(frozen=True)
class QueryTallies:
    """Per evaluated query, what :class:`Health` is made of: these add up over any split of the queries, so a run
    evaluated in parts (:mod:`ragmetrics.partitioned`) gets the health of the whole from its parts' tallies."""

    ranked: np.ndarray
    """bool: the run ranks documents for the query."""
    meeting: np.ndarray
    """bool: its ranking holds a judged document."""
    judged_top: np.ndarray
    """int: judged documents in its top 10."""
    relevant_found: np.ndarray
    """int: relevant documents retrieved at any rank."""
    relevant: np.ndarray
    """int: its relevant judgments."""
    ranked_top: np.ndarray
    """int: documents in its top 10 (fewer when it ranks fewer)."""


def query_tallies(alignment: Alignment) -> QueryTallies:
    ranking = alignment.ranking
    judged = ranking.judged
    n = ranking.n_queries
    return QueryTallies(
        ranked=ranking.n_ret > 0,
        meeting=np.bincount(ranking.q[judged], minlength=n) > 0,
        judged_top=np.bincount(ranking.q[judged & (ranking.pos < 10)], minlength=n),
        relevant_found=np.bincount(ranking.q[ranking.rel], minlength=n),
        relevant=ranking.n_rel,
        ranked_top=np.minimum(ranking.n_ret, 10),
    )


def health_of(tallies: QueryTallies, unknown_queries: int, empty_run: bool) -> Health:
    """The health of a run from its queries' tallies, the number of its distinct queries the dataset does not
    know, and whether it has no rows at all."""
    ranked = tallies.ranked
    n_ranked = int(np.count_nonzero(ranked))
    relevant = int(tallies.relevant.sum())
    distinct_run_queries = unknown_queries + n_ranked
    known = 1.0 if distinct_run_queries == 0 else 1.0 - unknown_queries / distinct_run_queries
    if empty_run:
        known = 1.0
    return Health(
        queries_ranked=n_ranked,
        queries_meeting=int(np.count_nonzero(tallies.meeting & ranked)),
        judged_at_10=float((tallies.judged_top[ranked] / tallies.ranked_top[ranked]).mean()) if n_ranked else 0.0,
        relevant_retrieved=int(tallies.relevant_found.sum()) / relevant if relevant else 0.0,
        run_queries_known=known,
        judged_of_ranked=float((tallies.judged_top[ranked] / tallies.ranked_top[ranked]).mean()) if n_ranked else 0.0,
    )


def health(alignment: Alignment) -> Health:
    coverage = alignment.coverage
    return health_of(query_tallies(alignment), len(coverage.not_in_dataset), coverage.empty_run)


# --- why the ids do not meet, and what would fix it --------------------------------------------


@dataclass(frozen=True)
class Fix:
    """A change tried on the data: what it is (for people and as the CLI option), the overlap it gives, and the
    chunk pattern it tried when it is one (so a caller can apply it; ``""``: the run read with no chunk pattern)."""

    cause: str
    advice: str
    overlap: float
    chunk_pattern: str | None = None


def _judged_pairs(alignment: Alignment) -> tuple[dict[str, set[str]], set[str]]:
    qrels = alignment.dataset.qrels_table
    pairs: dict[str, set[str]] = {}
    for q, d in zip(qrels.column("query_id").to_pylist(), qrels.column("doc_id").to_pylist()):
        pairs.setdefault(q, set()).add(d)
    return pairs, {d for docs in pairs.values() for d in docs}


def _run_pairs(alignment: Alignment, column: str) -> dict[str, list[str]]:
    """The first :data:`DIAGNOSIS_QUERIES` ranked queries' ids in ``column`` (``doc_id``, or ``documents``)."""
    table = alignment.run.table
    ids = table.column("query_id").to_pylist()
    docs = (alignment.run.documents() if column == "documents" else table.column("doc_id")).to_pylist()
    out: dict[str, list[str]] = {}
    for q, d in zip(ids, docs):
        if q in out or len(out) < DIAGNOSIS_QUERIES:
            out.setdefault(q, []).append(d)
    return out


def _overlap(run: dict[str, list[str]], judged: dict[str, set[str]], mapped: Callable[[str], str]) -> float:
    known = [q for q in run if q in judged]
    if not known:
        return 0.0
    return sum(any(mapped(d) in judged[q] for d in run[q]) for q in known) / len(known)


def _chunk_fixes(run: dict[str, list[str]], judged: dict[str, set[str]], words: dict[str, str]) -> Iterable[Fix]:
    sample = [d for docs in run.values() for d in docs[:20]][:5000]
    for sep in CHUNK_SEPARATORS:
        if not any(sep in d for d in sample):
            continue
        tails = [d.rsplit(sep, 1)[1] for d in sample if sep in d]
        if len(set(tails)) == 1:  # one constant ending is no chunk numbering (an affix: see _affix_fixes)
            continue
        literal = "".join("\\" + c if c in _REGEX_SPECIALS else c for c in sep)
        pattern = rf"(?P<doc>.+){literal}\d+$" if all(t.isdigit() for t in tails) else sep

        def mapped(d: str, sep: str = sep) -> str:
            return d.rsplit(sep, 1)[0] if sep in d else d

        share = _overlap(run, judged, mapped)
        if share >= NO_OVERLAP:
            yield Fix(
                "the run names chunks and the qrels judge the documents they come from",
                words["chunk_pattern"].format(pattern=pattern),
                share,
                chunk_pattern=pattern,
            )
            return


def _whole_document_fixes(
    run: dict[str, list[str]], judged: dict[str, set[str]], words: dict[str, str]
) -> Iterable[Fix]:
    """The qrels judge numbered chunks (``API-02#0``) of the documents the run names (``API-02``): a run made over
    the whole documents, where the set judges their chunks (a generated set whose chunks file was not indexed)."""
    sample = [d for docs in judged.values() for d in docs][:5000]
    for sep in NUMBERING_SEPARATORS:
        tails = [d.rsplit(sep, 1)[1] for d in sample if sep in d]
        if not tails or not all(t.isdigit() for t in tails):
            continue
        documents = {q: {d.rsplit(sep, 1)[0] if sep in d else d for d in docs} for q, docs in judged.items()}
        share = _overlap(run, documents, lambda d: d)
        if share >= NO_OVERLAP:
            yield Fix(
                f"the qrels judge chunks (their ids end in {sep!r} and a number) of the documents the run names",
                words["whole_documents"],
                share,
            )
            return


CHUNKS_OF_JUDGED_ROWS = 5_000
"""The run's first rows :func:`chunks_of_judged` reads (it runs on every evaluation on the command line); it reads
qrels of up to ten times as many rows, and says nothing of larger ones."""


def chunks_of_judged(alignment: Alignment) -> tuple[float, str, str] | None:
    """A run that names some of its documents as they are judged and others as their chunks (``DEV_3`` and
    ``DEV_3_C0`` where the qrels judge ``DEV_3``): the chunks count as unjudged unless a chunk pattern maps them.
    ``(share of the sampled judged queries whose ranking holds such a chunk, the separator, one of them)`` when at
    least a tenth (and 5) do, else None; None too for a run mapped already or evaluated at chunk level."""
    table = alignment.run.table
    if "source_doc" in table.column_names or alignment.conventions.level == "chunk":
        return None
    head = table.slice(0, CHUNKS_OF_JUDGED_ROWS)  # read on every evaluation: a sample of rows, not the whole run
    run: dict[str, list[str]] = {}
    for q, d in zip(head.column("query_id").to_pylist(), head.column("doc_id").to_pylist()):
        run.setdefault(q, []).append(d)
    qrels = alignment.dataset.qrels_table
    if qrels.num_rows > CHUNKS_OF_JUDGED_ROWS * 10:  # read whole below this (no Arrow kernel: they load pandas)
        return None
    judged: dict[str, set[str]] = {}
    for q, d in zip(qrels.column("query_id").to_pylist(), qrels.column("doc_id").to_pylist()):
        if q in run:
            judged.setdefault(q, set()).add(d)
    run = {q: docs for q, docs in run.items() if q in judged}
    every_id = "\n".join(d for docs in run.values() for d in docs)  # one search per separator, most find none
    for sep in NUMBERING_SEPARATORS:
        if sep not in every_id:
            continue
        chunks = [
            next((d for d in docs if sep in d and d.rsplit(sep, 1)[1].isdigit() and d.rsplit(sep, 1)[0] in judged[q]
                  and d not in judged[q]), None)
            for q, docs in run.items()
        ]  # fmt: skip
        found = [d for d in chunks if d is not None]
        if run and len(found) >= max(5, len(run) // 10):
            return len(found) / len(run), sep, found[0]
    return None


def _affix_fixes(run: dict[str, list[str]], judged: dict[str, set[str]], judged_docs: set[str]) -> Iterable[Fix]:
    """Unicode normalization, case, a prefix or suffix: each a cause only when it makes more queries meet than the
    ids as given do."""
    run_docs = [d for docs in run.values() for d in docs]
    as_given = _overlap(run, judged, lambda d: d)

    def better(share: float) -> bool:
        return share >= NO_OVERLAP and share > as_given

    unnormalized = any(_nfc(d) != d for d in run_docs[:5000]) or any(_nfc(d) != d for d in list(judged_docs)[:5000])
    if unnormalized:
        share = _overlap(run, {q: {_nfc(d) for d in ds} for q, ds in judged.items()}, _nfc)
        if better(share):
            yield Fix(
                "the ids differ in Unicode normalization only (one file writes an accented letter as one character, "
                "the other as a letter and a combining accent)",
                "write both files' ids in one normalization form, e.g. NFC (Python: unicodedata.normalize('NFC', id))",
                share,
            )
            return
    lowered = {d.casefold() for d in judged_docs}
    share = _overlap(run, {q: {d.casefold() for d in ds} for q, ds in judged.items()}, str.casefold)
    if better(share) and lowered:
        yield Fix("the ids differ in case only", "write the run's ids with the qrels' case", share)
    prefix, qprefix = _common_prefix(run_docs), _common_prefix(judged_docs)
    suffix, qsuffix = _common_suffix(run_docs), _common_suffix(judged_docs)
    for what, old, new in (("prefix", prefix, qprefix), ("suffix", suffix, qsuffix)):
        if old == new:
            continue

        def mapped(d: str, what: str = what, old: str = old, new: str = new) -> str:
            if what == "prefix":
                return new + d[len(old) :] if d.startswith(old) else d
            return d[: len(d) - len(old)] + new if old and d.endswith(old) else d + new

        share = _overlap(run, judged, mapped)
        if better(share):
            yield Fix(
                f"the run's ids carry the {what} {old!r} where the qrels' carry {new!r}",
                f"replace the {what} {old!r} by {new!r} in the run's document ids",
                share,
            )


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


PREFIX_SHARE = 0.95
"""A prefix (or suffix) is the ids' own when at least this share of them carry it: one id without it, among
hundreds, does not hide it."""


def _common_prefix(values: Iterable[str]) -> str:
    """The longest prefix at least :data:`PREFIX_SHARE` of (the first 5,000 of) ``values`` start with."""
    items = list(values)[:5000]
    if not items:
        return ""
    needed = PREFIX_SHARE * len(items)
    prefix = ""
    for n in range(1, max(len(i) for i in items) + 1):
        counts = Counter(i[:n] for i in items if len(i) >= n)
        if not counts:
            break
        candidate, count = counts.most_common(1)[0]
        if count < needed or not candidate.startswith(prefix):
            break
        prefix = candidate
    return prefix


def _common_suffix(values: Iterable[str]) -> str:
    return _common_prefix(v[::-1] for v in values)[::-1]


def no_overlap_fix(alignment: Alignment, audience: str = "cli") -> Fix | None:
    """The change tried on the data that makes most of the run's queries meet the qrels (in the words of
    ``audience``), or None when none does (or when the run's queries are not the dataset's)."""
    if alignment.health.run_queries_known == 0.0:
        return None
    return _best_fix(alignment, ADVICE[audience])


def _evaluated_ids(alignment: Alignment) -> str:
    """The run's column whose ids the alignment evaluates: ``doc_id`` at chunk level or without a ``source_doc``
    column, else ``documents`` (each row's document)."""
    mapped = "source_doc" in alignment.run.table.column_names and alignment.conventions.level != "chunk"
    return "documents" if mapped else "doc_id"


def _best_fix(alignment: Alignment, words: dict[str, str]) -> Fix | None:
    judged, judged_docs = _judged_pairs(alignment)
    fixes: list[Fix] = []
    if "source_doc" in alignment.run.table.column_names:
        chunk_level = alignment.conventions.level == "chunk"
        share = _overlap(_run_pairs(alignment, "documents" if chunk_level else "doc_id"), judged, lambda d: d)
        if share >= NO_OVERLAP and chunk_level:
            fixes.append(
                Fix(
                    "the qrels judge the documents the run's chunks were mapped to (a chunk pattern or mapping), but "
                    "chunk level evaluates the chunk ids",
                    words["document_level"],
                    share,
                )
            )
        elif share >= NO_OVERLAP:
            fixes.append(
                Fix(
                    "the qrels judge chunks, but the run was mapped to documents (a chunk pattern or mapping)",
                    words["chunk_ids"],
                    share,
                    chunk_pattern="",
                )
            )
    evaluated = _run_pairs(alignment, _evaluated_ids(alignment))
    if not fixes:
        fixes += list(_chunk_fixes(evaluated, judged, words))
    if not fixes:
        fixes += list(_whole_document_fixes(evaluated, judged, words))
    if not fixes:
        fixes += list(_affix_fixes(evaluated, judged, judged_docs))
    return max(fixes, key=lambda f: f.overlap) if fixes else None


def explain_no_overlap(alignment: Alignment, audience: str = "cli") -> str:
    """One message: what does not meet, the likely cause, and the fix tried with the overlap it would give, in
    the words of ``audience`` (a key of :data:`ADVICE`: the command line's options, or the dashboard's fields)."""
    words = ADVICE[audience]
    override = f" {words['override']}" if words["override"] else ""
    state = alignment.health
    name = alignment.run.name
    _, judged_docs = _judged_pairs(alignment)
    table = alignment.run.table
    run_queries = unique(table.column("query_id")).to_pylist()[:3]
    dataset_queries = alignment.dataset.queries_table.column("query_id").to_pylist()[:3]
    if state.run_queries_known == 0.0:
        return (
            f"run {name!r}: none of its queries is a query of dataset {alignment.dataset.name!r} (run: "
            f"{', '.join(run_queries)}; dataset: {', '.join(dataset_queries)}); it was likely made for another "
            f"dataset: give that dataset, or a queries file whose texts the run's queries match.{override}"
        )
    best = _best_fix(alignment, words)
    evaluated = _run_pairs(alignment, _evaluated_ids(alignment))
    run_docs = list(dict.fromkeys(d for docs in evaluated.values() for d in docs[:1]))[:3]
    head = (
        f"run {name!r}: its document ids do not meet the qrels of dataset {alignment.dataset.name!r} "
        f"({state.queries_meeting} of {state.queries_ranked} ranked queries have a judged document; run ids such as "
        f"{', '.join(run_docs)}, qrels ids such as {', '.join(sorted(judged_docs)[:3])})"
    )
    if best is not None:
        return (
            f"{head}: {best.cause}; {best.advice} (tried: {best.overlap:.0%} of the queries then meet the qrels)."
            + override
        )
    return (
        f"{head}: no chunk pattern, case or prefix change makes them meet; the run was likely made for another "
        f"collection.{override}"
    )
