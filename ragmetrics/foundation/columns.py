"""The names a column of a tabular input goes by (CSV, TSV, Parquet, flat JSONL rows, a pandas or Polars frame):
``qid`` is ``query_id``, ``docno`` is ``doc_id``, ``label`` is ``relevance``. Every reader of a table resolves its
columns here, the files' loaders and the frames' constructors alike."""

from __future__ import annotations

from collections.abc import Iterable

ALIASES: dict[str, tuple[str, ...]] = {
    "query_id": ("query_id", "qid", "query", "topic", "topic_id"),
    "doc_id": ("doc_id", "docid", "docno", "doc", "chunk_id", "corpus_id"),
    "score": ("score",),
    "rank": ("rank",),
    "relevance": ("relevance", "label", "rel", "grade"),
    "text": ("text", "chunk_text", "content"),
    "source_doc": ("source_doc", "document_id", "parent_doc"),
}
"""canonical name -> accepted names, in order of preference (compared after lower-casing and turning ``-`` and
`` `` into ``_``)."""


def alias_renames(names: Iterable[str], canonical: Iterable[str] | None = None) -> dict[str, str]:
    """``{column: canonical name}`` for the columns among ``names`` that give a ``canonical`` column (every one of
    :data:`ALIASES` when None) under an alias, where no column already has the canonical name: what a frame is
    renamed by to be read as a file's columns are."""
    given = [str(n) for n in names]
    wanted = set(ALIASES if canonical is None else canonical)
    return {
        column: name
        for name, column in resolve(given).items()
        if name in wanted and column != name and name not in given
    }


def normalise_name(name: str) -> str:
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def resolve(columns: Iterable[str]) -> dict[str, str]:
    """canonical name -> the column that provides it (first alias found)."""
    by_norm: dict[str, str] = {}
    for name in columns:
        by_norm.setdefault(normalise_name(name), name)
    out: dict[str, str] = {}
    used: set[str] = set()
    for canonical, names in ALIASES.items():
        for alias in names:
            column = by_norm.get(alias)
            if column is not None and column not in used:
                out[canonical] = column
                used.add(column)
                break
    return out
