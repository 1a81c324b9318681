"""What the judge commands read of a labels file before its rows: whether it is a pool not yet labelled. Apart from
``ragmetrics.cli.inputs``, which every command loads: reading column names loads pandas (``ragmetrics.io.columns``),
and an evaluation on the command line loads neither pandas nor ``pyarrow.compute``."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.io.columns import describe_aliases, resolve
from ragmetrics.io.source import names_of, open_source


def check_label_column(labels: Any, path: str) -> None:
    """A table of pairs without a label (a pool not yet labelled) is named as such, not as TREC lines of 3 fields.
    ``labels``: the file at ``path``, opened (:func:`ragmetrics.cli.inputs.labels_source`)."""
    source = open_source(labels)
    if source.is_dir:
        return
    first = source.head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    names = first.split("\t") if "\t" in first else first.split(",")
    found = resolve(names)
    if "query_id" in found and "doc_id" in found and not {"relevance", "score"} & set(found):  # BEIR's: score
        raise RagMetricsError(
            f"{path}: no label column (its columns: {', '.join(n.strip() for n in names)}): the pairs of a pool, "
            f"not yet labelled; add a column {describe_aliases(['relevance'])} with each pair's grade"
        )


def refuse_labels_of_another_dataset(
    path: str, labels: Dataset, known: Collection[str], of: str = "the dataset"
) -> None:
    """Labels none of whose queries is among ``known`` (the queries of ``of``) were made for another dataset:
    refused, before any check of their grades (whose complaint would name the wrong cause)."""
    labelled = set(labels.qrels_table.column("query_id").to_pylist())
    if labelled and not labelled & set(known):
        raise RagMetricsError(
            f"{path}: none of its {len(labelled)} labelled queries {names_of(labelled, 3)} is a query of {of} "
            f"{names_of(known, 3)}: the labels were likely made for another dataset"
        )
