"""The text behind a query's documents, for reading them: its relevant documents and what a run retrieved, each
with its judgment (relevant, judged non-relevant, unjudged).

A retrieved row's text is the run's chunk text when the run carries it, else the dataset's corpus text of the
chunk's id, else of its document's id (chunk runs against chunk corpora, such as CMRC, need the chunk's own
text: every chunk of an article has the same title). Titles come from the corpus. Every string here is user
content: the pages show it through :func:`dashboard.core.text.highlight_markdown` and :func:`header`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from dashboard.core.queries import query_info
from dashboard.core.results import Alignment, position
from dashboard.core.text import Marks, highlight_markdown, md_escape
from ragmetrics.foundation.model import Dataset

__all__ = [
    "NONRELEVANT",
    "NO_TEXT",
    "PASSAGE_COLUMNS",
    "RELEVANT",
    "UNJUDGED",
    "corpus_frame",
    "header",
    "marks_for",
    "pair_text",
    "relevant_cards",
    "relevant_passages",
    "retrieved_cards",
    "retrieved_passages",
    "status_badge",
    "status_of",
    "textless",
    "titled",
]

RELEVANT, NONRELEVANT, UNJUDGED = "relevant", "judged non-relevant", "unjudged"
_BADGE = {RELEVANT: "green", NONRELEVANT: "red", UNJUDGED: "gray"}

PASSAGE_COLUMNS = ["rank", "doc_id", "chunk_id", "label", "status", "score", "title", "text", "source"]


def status_of(label: object, rel_level: int = 1) -> str:
    """``relevant`` (label >= rel_level), ``judged non-relevant`` (a label below it) or ``unjudged`` (none; a
    negative label, which trec_eval reads as unjudged, too)."""
    if label is None or pd.isna(label) or int(label) < 0:  # type: ignore[call-overload]
        return UNJUDGED
    return RELEVANT if int(label) >= rel_level else NONRELEVANT  # type: ignore[call-overload]


def status_badge(status: str, label: object = None) -> str:
    """Streamlit Markdown badge of a judgment status (fixed text, safe to show)."""
    grade = "" if status == UNJUDGED or label is None or pd.isna(label) else f" ({int(label)})"  # type: ignore[call-overload]
    return f":{_BADGE[status]}-badge[{status}{grade}]"


def corpus_frame(dataset: Dataset, ids: Iterable[str]) -> pd.DataFrame:
    """``title, text`` of the corpus documents among ``ids`` (indexed by doc_id; empty without a corpus)."""
    docs = dataset.documents
    if docs is None or "doc_id" not in docs.columns:
        return pd.DataFrame(columns=["title", "text"], index=pd.Index([], name="doc_id"))
    wanted = docs[docs["doc_id"].isin(list(dict.fromkeys(str(i) for i in ids)))].drop_duplicates("doc_id")
    out = pd.DataFrame(index=pd.Index(wanted["doc_id"].astype("str"), name="doc_id"))
    for column in ("title", "text"):
        values = wanted[column] if column in wanted.columns else pd.Series([""] * len(wanted), index=wanted.index)
        out[column] = values.fillna("").astype("str").to_numpy()
    return out


def _lookup(corpus: pd.DataFrame, column: str, ids: Sequence[str]) -> list[str]:
    found = corpus[column].reindex(list(ids))
    return ["" if pd.isna(v) else str(v) for v in found]


def retrieved_passages(alignment: Alignment, query_id: str, depth: int) -> pd.DataFrame:
    """What the run retrieved for one query to rank ``depth``, one row per retrieved chunk (a document's chunks
    share its rank, best first): ``rank, doc_id, chunk_id, label`` (Int64, NA = unjudged), ``status``, ``score``,
    ``title``, ``text`` and ``source`` (``run`` text, ``corpus`` text, or "" when none is known)."""
    qi = position(alignment, query_id)
    if qi is None:
        return pd.DataFrame(columns=PASSAGE_COLUMNS)
    rows = alignment.rows()
    rows = rows[(rows["q"] == qi) & (rows["rank"] <= depth)].reset_index(drop=True)
    docs = rows["doc_id"].astype("str").tolist()
    chunks = rows["chunk_id"].astype("str").tolist()
    corpus = corpus_frame(alignment.dataset, docs + chunks)
    chunk_text, doc_text = _lookup(corpus, "text", chunks), _lookup(corpus, "text", docs)
    chunk_title, doc_title = _lookup(corpus, "title", chunks), _lookup(corpus, "title", docs)
    run_text = ["" if pd.isna(t) else str(t) for t in rows["text"]] if "text" in rows.columns else [""] * len(rows)
    texts, sources = [], []
    for own, by_chunk, by_doc in zip(run_text, chunk_text, doc_text):
        text, source = (own, "run") if own else (by_chunk, "corpus") if by_chunk else (by_doc, "corpus")
        texts.append(text)
        sources.append(source if text else "")
    level = alignment.conventions.rel_level
    labels = rows["label"].astype("Int64")
    return pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(dtype=np.int64),
            "doc_id": docs,
            "chunk_id": chunks,
            "label": labels.array,
            "status": [status_of(v, level) for v in labels],
            "score": rows["score"].to_numpy(dtype=np.float64),
            "title": [c or d for c, d in zip(chunk_title, doc_title)],
            "text": texts,
            "source": sources,
        },
        columns=PASSAGE_COLUMNS,
    )


def _run_chunk_texts(alignments: Sequence[Alignment], query_id: str, doc_ids: Sequence[str]) -> dict[str, str]:
    """Text of the chunks of ``doc_ids`` that the runs retrieved for the query (each chunk once, best rank first)."""
    wanted = set(doc_ids)
    out: dict[str, dict[str, str]] = {}
    for alignment in alignments:
        qi = position(alignment, query_id)
        if qi is None or not alignment.has_text:
            continue
        rows = alignment.rows()
        rows = rows[(rows["q"] == qi) & rows["doc_id"].isin(wanted) & rows["text"].notna()]
        for doc, chunk, text in zip(rows["doc_id"], rows["chunk_id"], rows["text"]):
            out.setdefault(str(doc), {}).setdefault(str(chunk), str(text))
    return {doc: "\n…\n".join(chunks.values()) for doc, chunks in out.items()}


def titled(title: str, text: str) -> str:
    """A document as the judges and the text metrics read it: its title, a newline and its text (the text alone
    without a title; :meth:`ragmetrics.foundation.model.Dataset.document_texts`)."""
    return f"{title}\n{text}" if title else text


def pair_text(alignments: Sequence[Alignment], dataset: Dataset, query_id: str, doc_id: str) -> dict[str, str]:
    """``title``, ``text`` and ``source`` of one judged or unjudged (query, document) pair: the corpus text of the
    document, else the text of its chunks the runs retrieved for the query."""
    corpus = corpus_frame(dataset, [doc_id])
    title = _lookup(corpus, "title", [doc_id])[0]
    text = _lookup(corpus, "text", [doc_id])[0]
    if text:
        return {"title": title, "text": text, "source": "corpus"}
    chunks = _run_chunk_texts(alignments, query_id, [doc_id]).get(doc_id, "")
    return {"title": title, "text": chunks, "source": "run" if chunks else ""}


NO_TEXT = (
    "No text is known for these documents: the run carries no chunk texts and the dataset has no corpus (upload the "
    "dataset with a *corpus* file to read them here)."
)
"""Said once instead of a card per document that reads "(no text)"."""


def textless(passages: pd.DataFrame) -> bool:
    """True when :func:`retrieved_passages` or :func:`relevant_passages` found text for none of their rows."""
    return not passages.empty and bool((passages["source"].astype("str") == "").all())


def relevant_passages(alignments: Sequence[Alignment], query_id: str) -> pd.DataFrame:
    """A query's relevant documents, best grade first: ``doc_id, relevance, title, text, source`` and ``ranks``
    (each run's rank of it, "—" when not retrieved)."""
    columns = ["doc_id", "relevance", "title", "text", "source", "ranks"]
    if not alignments:
        return pd.DataFrame(columns=columns)
    first = alignments[0]
    qrels = first.dataset.qrels_table
    mask = pc.and_(
        pc.equal(qrels.column("query_id"), pa.scalar(query_id, qrels.schema.field("query_id").type)),
        pc.greater_equal(qrels.column("relevance"), first.conventions.rel_level),
    )
    rel = qrels.filter(mask).to_pandas().sort_values(["relevance", "doc_id"], ascending=[False, True], kind="stable")
    ids = rel["doc_id"].astype("str").tolist()
    corpus = corpus_frame(first.dataset, ids)
    chunk_texts = _run_chunk_texts(alignments, query_id, ids)
    texts = [t or chunk_texts.get(d, "") for d, t in zip(ids, _lookup(corpus, "text", ids))]
    sources = [
        "corpus" if t else "run" if chunk_texts.get(d) else "" for d, t in zip(ids, _lookup(corpus, "text", ids))
    ]
    ranks_by_run = []
    for alignment in alignments:
        qi = position(alignment, query_id)
        ranking = alignment.ranking
        mask_q = ranking.q == qi if qi is not None else np.zeros(len(ranking.q), dtype=bool)
        ranks_by_run.append(
            (alignment.name, {str(d): int(p) + 1 for d, p in zip(ranking.docs(mask_q), ranking.pos[mask_q])})
        )
    ranks = [" · ".join(f"{name} {found.get(d, '—')}" for name, found in ranks_by_run) for d in ids]
    return pd.DataFrame(
        {
            "doc_id": ids,
            "relevance": rel["relevance"].to_numpy(dtype=np.int64),
            "title": _lookup(corpus, "title", ids),
            "text": texts,
            "source": sources,
            "ranks": ranks,
        },
        columns=columns,
    )


def listed(value: object) -> list[object]:
    """A cell that holds a list (expected keywords), as a list; anything else (None, NaN) as an empty one."""
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else []


def marks_for(dataset: Dataset, query_id: str) -> Marks:
    """What to mark in a query's documents: its expected answer, keywords and text."""
    info = query_info(dataset, query_id)
    return Marks(
        answer=str(info.get("expected_answer") or ""),
        keywords=[str(w) for w in listed(info.get("expected_keywords"))],
        query=str(info.get("query") or ""),
    )


_SOURCE = {"run": "text from the run's chunk", "corpus": "text from the corpus", "": "no text known"}


def header(
    doc_id: str,
    *,
    rank: int | None = None,
    chunk_id: str | None = None,
    status: str | None = None,
    label: object = None,
    title: str = "",
    source: str = "",
    extra: str = "",
) -> str:
    """One Markdown line naming a passage: rank, document (and chunk), judgment badge, title, where the text came
    from. Ids and titles are escaped; ``extra`` is Markdown the caller built (escaped)."""
    parts = [f"**#{rank}**"] if rank is not None else []
    parts.append(f"**{md_escape(doc_id)}**")
    if chunk_id and chunk_id != doc_id:
        parts.append(f"chunk {md_escape(chunk_id)}")
    if status:
        parts.append(status_badge(status, label))
    if title:
        parts.append(f"*{md_escape(title)}*")
    parts.append(f":gray[{_SOURCE.get(source, '')}]")
    if extra:
        parts.append(extra)
    return " · ".join(parts)


Card = tuple[str, str]
"""A passage to show: its header and its text with the marks, both escaped Markdown."""


def retrieved_cards(passages: pd.DataFrame, marks: Marks) -> list[Card]:
    """One card per row of :func:`retrieved_passages`: rank, document, chunk, judgment, title, and the marked text."""
    return [
        (
            header(
                str(doc),
                rank=int(rank),
                chunk_id=str(chunk),
                status=str(status),
                label=label,
                title=str(title),
                source=str(source),
                extra=f"score {float(score):.4f}",
            ),
            highlight_markdown(text, marks),
        )
        for rank, doc, chunk, label, status, score, title, text, source in passages[PASSAGE_COLUMNS].itertuples(
            index=False
        )
    ]


def relevant_cards(passages: pd.DataFrame, marks: Marks) -> list[Card]:
    """One card per row of :func:`relevant_passages`: document, grade, title, rank in each run, the marked text."""
    return [
        (
            header(
                str(doc),
                status=RELEVANT,
                label=int(grade),
                title=str(title),
                source=str(source),
                extra=f"rank: {md_escape(ranks)}",
            ),
            highlight_markdown(text, marks),
        )
        for doc, grade, title, text, source, ranks in passages[
            ["doc_id", "relevance", "title", "text", "source", "ranks"]
        ].itertuples(index=False)
    ]
