"""Evidence spans: how much of the gold evidence (character spans of documents) the retrieved chunks hand over.

The gold evidence of a query is a set of character spans of documents (:func:`ragmetrics.io.spans.load_spans`,
or :func:`spans_from_answers`: every occurrence of the query's expected answer in its relevant documents). Offsets
index the corpus document's ``text`` field (0-based, end excluded). A query's relevant documents here are those
with a span.

Each retrieved chunk (a run row, in ranking order, before chunks are merged into documents) is placed in its
document as ``(document, start, end)``:

1. from ``chunk_spans`` (a table ``chunk_id, doc_id, start, end``) when it names the chunk;
2. a row that is its own document (its id is the document's: a run of whole documents) covers all of it, unless
   it carries a text of its own (a framework's node keyed by its source document's id): that text places it, as
   below;
3. else its text (the run's ``text``, else the corpus ``text`` of its id) is looked for, literally, in its
   document's corpus ``text`` (the document: its ``source_doc``); the first occurrence places it. A text whose
   first line is the document's title (as chunkers often prefix it) is looked for without that line. A chunk found
   nowhere covers nothing and is counted in :attr:`EvidenceResult.unlocated`; a run none of whose chunks is placed
   is an error (its every value would be 0), naming what to give.

The metrics, per evaluated query (:data:`EVIDENCE_METRICS`; ``@k``: the top k chunks; ``@Ttok``: the chunks within
a budget of T tokens, cut as :mod:`ragmetrics.engine.budgets` cuts, the chunk that passes T excluded):

* ``evidence_recall``: for each relevant document, the share of its gold characters that the chunks cover, a
  character covered by several chunks counted once; averaged over the query's relevant documents. White space is
  no gold character (a chunker splitting at a space hands over every word of a span, none of the space between its
  chunks), where the document's text is known. With one chunk
  per whole document it is recall@k (a retrieved relevant document is covered whole).
* ``evidence_recall_chars``: covered gold characters / gold characters, over all the query's relevant documents
  (a long span weighs more).
* ``context_precision``: of the tokens handed over, the share inside gold spans of the query (each chunk's pieces
  inside a span tokenized apart, at most the chunk's own count; a chunk handed over twice counts twice in both). 0
  when nothing is handed over.
* ``tokens_to_evidence``: the tokens handed over up to and including the first chunk that covers a gold
  character; NaN (left out of the mean) when no retrieved chunk does.

A query without spans is NaN in every metric (left out of the means).
"""

from __future__ import annotations

import difflib
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ragmetrics.engine import budgets
from ragmetrics.engine.metrics import (
    BUDGET_SUFFIX,
    EVIDENCE_METRICS,
    budget_spelling,
    parse_metric,
    refuse_negative_cut,
)
from ragmetrics.engine.order import positions, running_sum, segment_starts
from ragmetrics.foundation import scripts
from ragmetrics.foundation.errors import MetricNameError, ParseError, RagMetricsError, source_of
from ragmetrics.foundation.ids import to_arrow
from ragmetrics.foundation.kernels import take

if TYPE_CHECKING:
    from ragmetrics.engine.alignment import Alignment
    from ragmetrics.foundation.model import Dataset, Run

_NAME = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+)\s*(tok|tokens)?)?\s*$", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class EvidenceSpec:
    """``evidence_recall@5`` (``k=5``), ``evidence_recall@512tok`` (``tokens=512``), ``tokens_to_evidence``."""

    name: str
    k: int | None = None
    tokens: int | None = None

    def __str__(self) -> str:
        if self.tokens is not None:
            return f"{self.name}@{self.tokens}{BUDGET_SUFFIX}"
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_evidence(text: str | EvidenceSpec) -> EvidenceSpec:
    """``"evidence_recall@512tok"`` -> ``EvidenceSpec("evidence_recall", tokens=512)``; unknown names and a missing or
    superfluous cut raise :class:`MetricNameError`."""
    if isinstance(text, EvidenceSpec):
        return text
    match = _NAME.match(str(text))
    info = EVIDENCE_METRICS.get(match.group(1).lower()) if match else None
    if match is None or info is None:
        refuse_negative_cut(str(text))
        guess = budget_spelling(str(text), _budgeted)
        if guess is not None:
            raise MetricNameError(
                f"unknown evidence metric {text!r}: a token budget is written NAME@T{BUDGET_SUFFIX}: did you mean "
                f"'{guess}'?"
            )
        _refuse_ranking_metric(str(text))
        close = difflib.get_close_matches(match.group(1).lower() if match else str(text), list(EVIDENCE_METRICS), 1)
        cut = "" if match is None or match.group(2) is None else f"@{match.group(2)}{match.group(3) or ''}"
        hint = f"; did you mean '{close[0]}{cut}'? Known:" if close else "; expected one of"
        raise MetricNameError(
            f"unknown evidence metric {text!r}{hint} "
            + ", ".join(f"{m.name}@k, {m.name}@T{BUDGET_SUFFIX}" if m.cut == "required" else m.name
                        for m in EVIDENCE_METRICS.values())
        )  # fmt: skip
    number = None if match.group(2) is None else int(match.group(2))
    if info.cut == "none":
        if number is not None:
            raise MetricNameError(f"evidence metric {text!r} takes no cut-off; use '{info.name}'")
        return EvidenceSpec(info.name)
    if number is None or number < 1:
        raise MetricNameError(f"evidence metric {text!r} needs a cut-off >= 1, e.g. '{info.name}@5' or "
                              f"'{info.name}@512{BUDGET_SUFFIX}'")  # fmt: skip
    return EvidenceSpec(info.name, None, number) if match.group(3) else EvidenceSpec(info.name, number)


def _budgeted(text: str) -> bool:
    """Whether ``text`` (read by ``_NAME``) names an evidence metric that takes a token budget."""
    match = _NAME.match(text)
    info = EVIDENCE_METRICS.get(match.group(1).lower()) if match else None
    return info is not None and info.cut == "required"


def _refuse_ranking_metric(text: str) -> None:
    """A ranking metric asked of ``evidence`` (``recall@10``) is sent to ``eval``, with the evidence metric beside it
    when there is one (``evidence_recall@10``)."""
    try:
        spec = parse_metric(text)
    except MetricNameError:
        return
    counterpart = {"recall": "evidence_recall", "precision": "context_precision"}.get(spec.name)
    cut = "" if spec.k is None else f"@{spec.k}"
    if spec.tokens is not None:
        cut = f"@{spec.tokens}{BUDGET_SUFFIX}"
    beside = f"; the evidence metric nearest it is '{counterpart}{cut}'" if counterpart and cut else ""
    raise MetricNameError(
        f"metric {text!r} is a ranking metric: it reads the qrels, and `ragmetrics eval` (rm.evaluate in Python) "
        f"computes it{beside}"
    )


def is_evidence_metric(text: str) -> bool:
    """True when ``text`` names an evidence metric (``evidence_recall@5``), whatever its cut."""
    match = _NAME.match(str(text))
    return bool(match) and match.group(1).lower() in EVIDENCE_METRICS  # type: ignore[union-attr]


def counts_tokens(metrics: Sequence[str | EvidenceSpec]) -> bool:
    """True when one of the evidence metrics counts tokens (a budget ``@Ttok``, ``context_precision``,
    ``tokens_to_evidence``): the runs' texts are then tokenized."""
    specs = [parse_evidence(m) for m in metrics]
    return any(s.tokens is not None or s.name in ("context_precision", "tokens_to_evidence") for s in specs)


@dataclass
class EvidenceResult:
    """Per-query values of evidence metrics over :attr:`query_ids` (NaN: a query without spans, or, for
    ``tokens_to_evidence``, without evidence retrieved); ``unlocated``: retrieved chunks placed in no document;
    ``tokenizer``: what the tokens were counted with ("" when no metric counts tokens)."""

    query_ids: np.ndarray
    values: dict[str, np.ndarray]
    tokenizer: str
    unlocated: int
    queries_with_spans: int
    notes: list[str] = field(default_factory=list)

    @property
    def means(self) -> dict[str, float]:
        """Each metric's mean over the queries with a value."""
        out = {}
        for name, values in self.values.items():
            kept = values[~np.isnan(values)]
            out[name] = float(kept.mean()) if len(kept) else float("nan")
        return out


# --- gold spans ---------------------------------------------------------------------------------------------


def _offset(value: Any, query: Any, doc: Any, which: str) -> int:
    """A span's character offset: a whole number (an int, not ``0.9``, ``"10"`` nor ``True``), as the span files'
    reader takes it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise RagMetricsError(
            f"evidence span of ({query}, {doc}): {which} {str(value)[:40]!r} ({type(value).__name__}); expected a "
            "whole-number character offset"
        )
    return int(value)


def _span_rows(spans: Any, gold: bool = True) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """``(query ids, doc ids, starts, ends)`` of spans given as a mapping or a table; ``gold``: the gold evidence,
    which may not be empty (every evidence metric reads it), where chunks' places may."""
    if isinstance(spans, Mapping):
        q, d, s, e = [], [], [], []
        for query, docs in spans.items():
            for doc, pairs in docs.items():
                for start, end in pairs:
                    q.append(str(query))
                    d.append(str(doc))
                    s.append(_offset(start, query, doc, "start"))
                    e.append(_offset(end, query, doc, "end"))
        if not q and gold:
            raise RagMetricsError("no evidence span given: every evidence metric reads gold spans")
        return q, d, np.asarray(s, dtype=np.int64), np.asarray(e, dtype=np.int64)
    table = spans if isinstance(spans, pa.Table) else pa.Table.from_pandas(spans, preserve_index=False)
    missing = [c for c in ("query_id", "doc_id", "start", "end") if c not in table.column_names]
    if missing:
        raise RagMetricsError(f"evidence spans need columns query_id, doc_id, start, end; missing {missing}")
    if table.num_rows == 0 and gold:
        raise RagMetricsError("no evidence span given: every evidence metric reads gold spans")
    queries = [str(v) for v in table.column("query_id").to_pylist()]
    docs = [str(v) for v in table.column("doc_id").to_pylist()]
    offsets = {}
    for which in ("start", "end"):
        column = table.column(which)
        values = column.to_pylist()
        if not pa.types.is_integer(column.type) or column.null_count:
            row = next(i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, int))
            _offset(values[row], queries[row], docs[row], which)
        offsets[which] = np.asarray(values, dtype=np.int64)
    return queries, docs, offsets["start"], offsets["end"]


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching intervals merged, sorted."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _corpus(dataset: Dataset, field: str = "text") -> dict[str, str]:
    """The corpus ``text`` (or ``title``) of each document, {} without a corpus."""
    documents = dataset.documents
    if documents is None or field not in documents.columns:
        return {}
    corpus = documents.drop_duplicates("doc_id")
    return dict(zip(corpus["doc_id"].astype(str), corpus[field].fillna("").astype(str)))


def _locate(chunk: str, document: str, title: str) -> tuple[int, int]:
    """Where ``chunk`` lies in ``document`` (its first occurrence) and its length there; a chunk that begins with
    the document's title on a line of its own (as chunkers prefix it) is looked for without it. (-1, 0): nowhere."""
    if not chunk or not document:
        return -1, 0
    at = document.find(chunk)
    if at >= 0:
        return at, len(chunk)
    title = title.strip()
    head, newline, rest = chunk.partition("\n")
    if title and newline and head.strip() == title and rest:
        at = document.find(rest)
        if at >= 0:
            return at, len(rest)
    return -1, 0


def spans_from_answers(dataset: Dataset, rel_level: int = 1) -> pa.Table:
    """Gold spans located from the queries' expected answers: every literal (case-sensitive) occurrence of a query's
    ``expected_answer`` in the corpus ``text`` of each of its relevant documents (label >= ``rel_level``) that is
    not part of a longer word (``5`` is not found in ``2015``; CJK text has no word edges). A
    relevant document without an occurrence gets no span (it is then not a relevant document of the evidence
    metrics). Columns ``query_id, doc_id, start, end``."""
    relevant = _relevant_texts(dataset, rel_level, "locating answers in documents")
    queries = dataset.queries_table
    answers = dict(zip(queries.column("query_id").to_pylist(), queries.column("expected_answer").to_pylist()))
    rows: list[tuple[str, str, int, int]] = []
    for query, doc, text in relevant:
        answer = str(answers.get(query) or "").strip()
        at = text.find(answer) if answer else -1
        while at >= 0:
            if _whole_words(text, at, at + len(answer)):
                rows.append((query, doc, at, at + len(answer)))
            at = text.find(answer, at + 1)
    return spans_table(rows)


def _relevant_texts(dataset: Dataset, rel_level: int, needs: str) -> list[tuple[str, str, str]]:
    """``(query, document, text)`` of each judged pair, in the qrels' order, whose label is at least ``rel_level``
    and whose document has a corpus text (not empty); ``needs``: what the corpus is needed for, in the error
    without one."""
    corpus = _corpus(dataset)
    if not corpus:
        raise RagMetricsError(f"{needs} needs the corpus texts (--corpus, a BEIR folder)")
    qrels = dataset.qrels_table
    return [
        (query, doc, corpus[doc])
        for query, doc, label in zip(
            qrels.column("query_id").to_pylist(),
            qrels.column("doc_id").to_pylist(),
            qrels.column("relevance").to_pylist(),
        )
        if label >= rel_level and corpus.get(doc)
    ]


def _word_character(character: str) -> bool:
    """A letter or digit of a script written with spaces between words (not a CJK character)."""
    return character.isalnum() and not scripts.CJK_CHARACTER.match(character)


def _whole_words(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` neither begins nor ends inside a word: ``5`` in ``2015`` or ``cat`` in ``cats``
    is not the answer (Chinese and Japanese, written without spaces, have no such edge)."""
    before = start > 0 and _word_character(text[start - 1]) and _word_character(text[start])
    after = end < len(text) and _word_character(text[end]) and _word_character(text[end - 1])
    return not (before or after)


def spans_from_documents(dataset: Dataset, rel_level: int = 1) -> pa.Table:
    """Each relevant document (label >= ``rel_level``) as one gold span covering its whole corpus ``text``: the
    evidence of a dataset whose qrels are at document level only. Evidence recall then reads the share of the
    relevant documents' text the chunks hand over. Columns ``query_id, doc_id, start, end``; a relevant document
    missing from the corpus, or with no text, gets no span."""
    relevant = _relevant_texts(dataset, rel_level, "whole-document evidence")
    return spans_table([(query, doc, 0, len(text)) for query, doc, text in relevant])


def spans_table(rows: Sequence[tuple[str, str, int, int]], key: str = "query_id") -> pa.Table:
    """A ``query_id, doc_id, start, end`` table (``key`` names the first column: ``chunk_id`` for where chunks lie)
    from ``(id, doc_id, start, end)`` tuples, as :mod:`ragmetrics.io.spans` reads one."""
    ids, doc_ids, starts, ends = zip(*rows) if rows else ((), (), (), ())
    return pa.table(
        {
            key: pa.array(ids, type=pa.large_string()),
            "doc_id": pa.array(doc_ids, type=pa.large_string()),
            "start": pa.array(starts, type=pa.int64()),
            "end": pa.array(ends, type=pa.int64()),
        }
    )


# --- chunks placed in their documents -----------------------------------------------------------------------

WHOLE = np.iinfo(np.int64).max
"""The end of a chunk that is its whole document (no text needed to know it covers every span)."""


def _chunk_places(
    alignment: Alignment, chunk_spans: Any, corpus: Mapping[str, str]
) -> tuple[list[str], np.ndarray, np.ndarray, list[str], list[str]]:
    """Each retrieved row's (document, start, end), before merging, in ranking order; start -1 when unplaced; each
    row's own text ("" when unknown); and each row's chunk id. ``corpus``: each document's ``text``
    (:func:`_corpus`)."""
    _q, rows, _kept = budgets.sorted_rows(alignment)
    table = alignment.run.table
    order = rows.array()

    def column(name: str) -> list[Any]:
        values = table.column(name)
        return (values if order is None else take(values, to_arrow(order))).to_pylist()

    chunk_ids = [str(v) for v in column("doc_id")]
    has_source = "source_doc" in table.column_names
    docs = [str(v) for v in column("source_doc")] if has_source else list(chunk_ids)
    if "text" in table.column_names and table.column("text").null_count == 0:
        own: list[Any] = budgets.handed_texts(alignment)  # the token counts' texts: the column is taken once
    else:
        own = column("text") if "text" in table.column_names else [None] * len(chunk_ids)
    titles = _corpus(alignment.dataset, "title")
    given = {} if chunk_spans is None else chunk_places(chunk_spans)
    starts = np.full(len(chunk_ids), -1, dtype=np.int64)
    ends = np.full(len(chunk_ids), -1, dtype=np.int64)
    texts: list[str] = []
    checked: set[str] = set()
    for i, (chunk, doc, text) in enumerate(zip(chunk_ids, docs, own)):
        chunk_text = str(text) if text is not None else corpus.get(chunk, "")
        texts.append(chunk_text)
        if chunk in given:
            if has_source and given[chunk][0] != doc:
                raise _chunk_span_error(
                    chunk_spans,
                    chunk,
                    f"chunk {chunk!r} in document {doc!r} (the source_doc of run {alignment.run.name!r})",
                    f"document {given[chunk][0]!r}",
                )
            docs[i], starts[i], ends[i] = given[chunk]
            if chunk not in checked:  # once a chunk, however many queries retrieve it
                _refuse_misplaced(alignment.run.name, chunk, chunk_text, chunk_spans, given[chunk], corpus)
                checked.add(chunk)
        elif chunk == doc and (text is None or doc not in corpus):
            starts[i], ends[i] = 0, WHOLE
        else:
            at, length = _locate(chunk_text, corpus.get(doc, ""), titles.get(doc, ""))
            if at >= 0:
                starts[i], ends[i] = at, at + length
    return docs, starts, ends, texts, chunk_ids


def _refuse_misplaced(
    run: str, chunk: str, text: str, chunk_spans: Any, place: tuple[str, int, int], corpus: Mapping[str, str]
) -> None:
    """A chunk span whose document text is not the chunk's own: the span credits the chunk with evidence it does not
    hold. Compared as a chunker may have changed them (white space left out, a line joined, compatibility forms
    such as a ligature unfolded: NFKC; a title line before it allowed); checked where both texts are known."""
    doc, start, end = place
    if not text or doc not in corpus:
        return
    placed, own = _comparable(corpus[doc][start:end]), _comparable(text)
    if placed and placed not in own and own not in placed:
        raise _chunk_span_error(
            chunk_spans,
            chunk,
            f"the span where the text of chunk {chunk!r} of run {run!r} lies ({text[:40]!r})",
            f"{doc!r} {start}-{end}, which holds {corpus[doc][start:end][:40]!r}",
        )


def _chunk_span_error(chunk_spans: Any, chunk: str, expected: str, found: str) -> ParseError:
    """A chunk span that does not fit its run, said of the file and line it was read from where the table knows them
    (:func:`ragmetrics.io.spans.load_chunk_spans` keeps both), else of "chunk spans"."""
    source = source_of(chunk_spans)
    line = None
    if source is not None and "line" in chunk_spans.column_names:
        lines = dict(zip(chunk_spans.column("chunk_id").to_pylist(), chunk_spans.column("line").to_pylist()))
        line = lines.get(chunk)
    return ParseError(source or "chunk spans", line, expected, found)


def _comparable(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def _chunk_table(chunk_spans: Any) -> Any:
    """``chunk_id, doc_id, start, end`` read as the span reader's ``query_id`` (the chunk), ``doc_id``, ``start``,
    ``end``."""
    table = (
        chunk_spans if isinstance(chunk_spans, pa.Table) else pa.Table.from_pandas(chunk_spans, preserve_index=False)
    )
    if "chunk_id" not in table.column_names:
        raise RagMetricsError("chunk spans need columns chunk_id, doc_id, start, end")
    return table.rename_columns(["query_id" if c == "chunk_id" else c for c in table.column_names])


def chunk_places(chunk_spans: Any) -> dict[str, tuple[str, int, int]]:
    """Each chunk's ``(document, start, end)`` in a table of chunk spans (``chunk_id, doc_id, start, end``; a later
    row of a chunk wins)."""
    return {
        chunk: (doc, int(start), int(end))
        for chunk, doc, start, end in zip(*_span_rows(_chunk_table(chunk_spans), gold=False))
    }


def with_span_texts(run: Run, chunk_spans: Any, dataset: Dataset) -> Run:
    """``run`` with the text of each chunk that has none (no ``text`` column, or a missing cell) cut from its
    document where ``chunk_spans`` places it (``chunk_id, doc_id, start, end``; the corpus's ``text``): a TREC run of
    chunks then counts its tokens as a run with a text column does. Unchanged without a corpus."""
    table = run.table
    if "text" in table.column_names and table.column("text").null_count == 0:
        return run  # every chunk has its text (an empty one is a text too)
    corpus = _corpus(dataset)
    if not corpus:
        return run
    places = chunk_places(chunk_spans)
    ids = [str(v) for v in table.column("doc_id").to_pylist()]
    own = table.column("text").to_pylist() if "text" in table.column_names else [None] * len(ids)
    texts = []
    for chunk, text in zip(ids, own):
        place = places.get(chunk) if text is None else None
        texts.append(corpus[place[0]][place[1] : place[2]] if place and place[0] in corpus else text)
    return run if texts == own else run.with_columns(text=texts)


# --- the metrics --------------------------------------------------------------------------------------------


def evaluate_evidence(
    alignment: Alignment,
    spans: Any,
    metrics: Sequence[str | EvidenceSpec],
    *,
    chunk_spans: Any = None,
) -> EvidenceResult:
    """Per-query evidence metrics of ``alignment``'s run against gold ``spans`` (a table or DataFrame with
    ``query_id, doc_id, start, end``, or ``{query_id: {doc_id: [(start, end), ...]}}``); ``chunk_spans`` places
    chunks in their documents (``chunk_id, doc_id, start, end``) where the texts cannot. Tokens are counted with the
    alignment's tokenizer (:mod:`ragmetrics.engine.tokens`)."""
    specs = list(dict.fromkeys(parse_evidence(m) for m in metrics))
    q, _rows, _kept = budgets.sorted_rows(alignment)
    n_queries = alignment.n_queries
    starts_q = segment_starts(q, n_queries)
    rank = positions(starts_q, n_queries).astype(np.int64)  # each chunk's 0-based place among its query's chunks

    query_of = {str(qid): i for i, qid in enumerate(alignment.query_ids.tolist())}
    corpus = _corpus(alignment.dataset)
    gold: dict[tuple[int, str], list[tuple[int, int]]] = {}
    rows = _span_rows(spans)
    for query, doc, start, end in zip(*rows):
        if end <= start or start < 0:
            raise RagMetricsError(f"evidence span ({query}, {doc}, {start}, {end}): expected 0 <= start < end")
        if corpus and doc not in corpus:
            raise RagMetricsError(
                f"evidence span ({query}, {doc}, {start}, {end}): document {doc} is not in the corpus"
            )
        if corpus and end > len(corpus[doc]):
            raise RagMetricsError(
                f"evidence span ({query}, {doc}, {start}, {end}): expected a span within the {len(corpus[doc])} "
                f"characters of document {doc}"
            )
        at = query_of.get(query)
        if at is not None:
            gold.setdefault((at, doc), []).append((int(start), int(end)))
    if rows[0] and not gold:
        raise RagMetricsError(
            f"no evidence span is of a query the run is evaluated on (spans of {sorted(set(rows[0]))[:3]}, queries "
            f"{alignment.query_ids[:3].tolist()})"
        )
    pairs = sorted(gold)
    pair_of = {pair: i for i, pair in enumerate(pairs)}
    unions = [_union(gold[pair]) for pair in pairs]
    weigh = _Weigher(corpus, [doc for _at, doc in pairs])
    gold_chars = np.array([weigh(pair[1], u) for pair, u in zip(pairs, unions)], dtype=np.float64)
    if (gold_chars == 0).any():
        blank = int(np.argmax(gold_chars == 0))
        (at, doc), union = pairs[blank], unions[blank]
        raise RagMetricsError(
            f"the evidence spans of query {alignment.query_ids[at]} in document {doc} ({union[:3]}) hold only "
            "white space: expected evidence text"
        )
    pair_q = np.array([p[0] for p in pairs], dtype=np.int64)
    has_spans = np.bincount(pair_q, minlength=n_queries) > 0

    docs, c_start, c_end, texts, chunk_ids = _chunk_places(alignment, chunk_spans, corpus)
    unlocated = int((c_start < 0).sum())
    unplaced = list(dict.fromkeys(chunk_ids[i] for i in np.flatnonzero(c_start < 0).tolist()))
    if unlocated and unlocated == len(q):
        raise RagMetricsError(_placed_nowhere(alignment, docs, bool(corpus), texts))
    # each gold character is credited to the first chunk (in rank order) that covers it: (pair, chunk row, chars)
    event_pair: list[int] = []
    event_row: list[int] = []
    event_chars: list[int] = []
    inside: dict[int, list[tuple[int, int]]] = {}  # chunk row -> its pieces inside the gold spans of its query
    rows_of_pair: dict[int, list[int]] = {}
    for row in np.flatnonzero(c_start >= 0).tolist():
        pair = pair_of.get((int(q[row]), docs[row]))
        if pair is not None:
            rows_of_pair.setdefault(pair, []).append(row)
    for pair, chunk_rows in rows_of_pair.items():
        covered: list[tuple[int, int]] = []
        for row in chunk_rows:  # in rank order
            pieces = _intersect(unions[pair], int(c_start[row]), int(c_end[row]))
            if not pieces:
                continue
            inside[row] = pieces
            doc = pairs[pair][1]
            new = weigh(doc, pieces) - weigh(doc, _overlap(pieces, covered))
            covered = _union(covered + pieces)
            if new:
                event_pair.append(pair)
                event_row.append(row)
                event_chars.append(new)
    e_pair = np.asarray(event_pair, dtype=np.int64)
    e_row = np.asarray(event_row, dtype=np.int64)
    e_chars = np.asarray(event_chars, dtype=np.float64)

    counted_tokens = counts_tokens(specs)
    tokens = budgets.row_tokens(alignment) if counted_tokens else np.ones(len(q), dtype=np.int64)  # @k alone: no text
    cumulative = running_sum(tokens, q, starts_q)
    needs_evidence_tokens = any(s.name == "context_precision" for s in specs)
    evidence_tokens = (
        _evidence_tokens(alignment, corpus, inside, docs, c_start, texts, len(q)) if needs_evidence_tokens else None
    )
    n_pairs = np.bincount(pair_q, minlength=n_queries).astype(np.float64)
    gold_q = np.bincount(pair_q, weights=gold_chars, minlength=n_queries)

    values: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.name == "tokens_to_evidence":
            value = np.full(n_queries, np.nan)
            first_rows = np.sort(e_row)  # rows are in (query, rank) order: a query's smallest row is its first chunk
            found_in, first_at = np.unique(q[first_rows], return_index=True)
            value[found_in] = cumulative[first_rows[first_at]]
            values[str(spec)] = np.where(has_spans, value, np.nan)
            continue
        handed = rank < spec.k if spec.k is not None else cumulative <= int(spec.tokens or 0)
        if spec.name == "context_precision":
            assert evidence_tokens is not None
            handed_tokens = np.bincount(q[handed], weights=tokens[handed], minlength=n_queries)
            found = np.bincount(q[handed], weights=evidence_tokens[handed], minlength=n_queries)
            share = np.divide(found, handed_tokens, out=np.zeros(n_queries), where=handed_tokens > 0)
            values[str(spec)] = np.where(has_spans, share, np.nan)
            continue
        counted = handed[e_row] if len(e_row) else np.zeros(0, dtype=bool)
        covered_chars = np.bincount(e_pair[counted], weights=e_chars[counted], minlength=len(pairs))
        if spec.name == "evidence_recall":
            share = np.divide(covered_chars, gold_chars, out=np.zeros(len(pairs)), where=gold_chars > 0)
            total = np.bincount(pair_q, weights=share, minlength=n_queries)
            value = np.divide(total, n_pairs, out=np.full(n_queries, np.nan), where=n_pairs > 0)
        else:
            total = np.bincount(pair_q, weights=covered_chars, minlength=n_queries)
            value = np.divide(total, gold_q, out=np.full(n_queries, np.nan), where=gold_q > 0)
        values[str(spec)] = value
    notes = []
    with_spans = int(has_spans.sum())
    if with_spans < n_queries:
        notes.append(
            f"{with_spans} of the {n_queries} evaluated queries have gold evidence: the means are over those "
            f"{with_spans}, the other {n_queries - with_spans} left out"
        )
    for name, value in values.items():
        valued = int(np.isfinite(value).sum())
        if name == "tokens_to_evidence" and valued < with_spans:
            notes.append(
                f"tokens_to_evidence is the mean over the {valued} of those {with_spans} queries some retrieved chunk "
                f"hands evidence of; no retrieved chunk covers the other {with_spans - valued}'s"
            )
    outside = sorted({str(q) for q in rows[0]} - set(query_of))
    if outside:
        notes.append(
            f"the spans of {len(outside)} quer{'ies' if len(outside) != 1 else 'y'} the run is not evaluated on "
            f"({', '.join(map(repr, outside[:3]))}{', ...' if len(outside) > 3 else ''}) are left out"
        )
    notes += budgets.budget_notes(alignment, budgets.asked(specs))
    if unlocated:
        shown = ", ".join(map(repr, unplaced[:3])) + (", ..." if len(unplaced) > 3 else "")
        notes.append(
            f"{len(unplaced)} distinct retrieved chunk(s) ({shown}), at {unlocated} place(s) in the rankings, could "
            "not be placed in their document (they cover nothing)"
        )
    return EvidenceResult(
        query_ids=alignment.query_ids,
        values=values,
        tokenizer=budgets.tokenizer(alignment).name if counted_tokens else "",
        unlocated=unlocated,
        queries_with_spans=with_spans,
        notes=notes,
    )


def _placed_nowhere(alignment: Alignment, docs: list[str], has_corpus: bool, texts: list[str]) -> str:
    """Why none of the run's retrieved chunks could be placed in its document, and what to give (``has_corpus``:
    whether the dataset has the documents' texts; ``texts``: each chunk's own text, "" when unknown)."""
    head = (
        f"run {alignment.run.name!r}: none of its {len(docs)} retrieved chunk(s) could be placed in its document, so "
        "every evidence metric would be 0"
    )
    if has_corpus and not any(texts):
        return (
            f"{head}: the chunks have no text to look for in their documents (the run has no text column, and the "
            "corpus holds none of the chunk ids): give the run's chunk texts (a text column), or where each chunk "
            "lies (--chunk-spans, chunk_spans=)"
        )
    if not has_corpus:
        return (
            f"{head}: give the corpus, whose text each chunk's text is looked for in (--corpus, a BEIR folder, "
            "Dataset(documents=...)), or where each chunk lies (--chunk-spans, chunk_spans=)"
        )
    examples = ", ".join(map(repr, list(dict.fromkeys(docs))[:3]))
    return (
        f"{head}: no chunk's text occurs in its document's corpus text (documents such as {examples}): give where "
        "each chunk lies (--chunk-spans, chunk_spans=), or map each chunk to the document it comes from (a source_doc "
        "column, --chunk-pattern, --chunk-mapping)"
    )


def _intersect(gold: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of the (sorted, disjoint) gold intervals inside [start, end)."""
    return [(max(s, start), min(e, end)) for s, e in gold if s < end and e > start]


def _overlap(pieces: list[tuple[int, int]], covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``pieces`` (disjoint) already in ``covered`` (disjoint)."""
    return [(max(s, cs), min(e, ce)) for s, e in pieces for cs, ce in covered if min(e, ce) > max(s, cs)]


def visible_prefix(text: str) -> np.ndarray:
    """``out[i]``: how many of ``text[:i]``'s characters are not white space (``str.isspace``), for ``i`` in
    ``0..len(text)``. Each distinct character is asked once (a lone surrogate is a character, as ``str`` holds it)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    present = np.zeros(sys.maxunicode + 1, dtype=bool)
    present[codes] = True
    distinct = np.flatnonzero(present)
    space = np.zeros(sys.maxunicode + 1, dtype=bool)
    space[distinct] = np.fromiter((chr(c).isspace() for c in distinct.tolist()), dtype=bool, count=len(distinct))
    out = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(~space[codes], out=out[1:])
    return out


class _Weigher:
    """How many gold characters intervals of a document hold: its characters but white space, which carries no
    evidence (a chunker that splits at a space hands over every word of a span, not the space between two chunks);
    every character of a document whose text is unknown. ``docs``: the documents it weighs (their texts counted in
    one pass)."""

    def __init__(self, corpus: Mapping[str, str], docs: Iterable[str]) -> None:
        self.corpus = corpus
        known = [d for d in dict.fromkeys(docs) if d in corpus]
        texts = [corpus[d] for d in known]
        starts = np.cumsum([0, *map(len, texts)]).tolist()
        self.place = {d: (start, len(text)) for d, text, start in zip(known, texts, starts)}
        self.prefix = visible_prefix("".join(texts))

    def __call__(self, doc: str, intervals: Sequence[tuple[int, int]]) -> int:
        if doc not in self.corpus:
            return sum(e - s for s, e in intervals)
        base, last = self.place[doc]
        prefix = self.prefix
        return int(sum(prefix[base + min(e, last)] - prefix[base + min(s, last)] for s, e in intervals))


def _evidence_tokens(
    alignment: Alignment,
    corpus: Mapping[str, str],
    inside: dict[int, list[tuple[int, int]]],
    docs: list[str],
    starts: np.ndarray,
    texts: list[str],
    n_rows: int,
) -> np.ndarray:
    """Each row's tokens inside gold spans: each piece's text (from the corpus document, else the chunk's own text)
    tokenized apart."""
    tokenizer = budgets.tokenizer(alignment)
    out = np.zeros(n_rows, dtype=np.float64)
    for row, pieces in inside.items():
        document = corpus.get(docs[row])
        parts = []
        for s, e in pieces:
            if document is not None:
                parts.append(document[s:e])
            else:
                offset = int(starts[row])
                parts.append(texts[row][s - offset : e - offset])
        out[row] = float(tokenizer.counts(parts).sum())
    return np.minimum(out, budgets.row_tokens(alignment))  # pieces cut mid-word never count more than the chunk
