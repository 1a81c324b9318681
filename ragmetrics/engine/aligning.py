"""``align``: how a run is read against a dataset under stated conventions into an :class:`Alignment`.

The run is sorted once (see :class:`Conventions`), repeated documents keep their best-ranked row (a repeated row,
the same id again, is dropped: it counts nowhere, not in token budgets nor in chunk ranks), and each
row's label is looked up per query (:mod:`ragmetrics.engine.documents`); the coverage report says what was
found on the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ragmetrics.engine import documents
from ragmetrics.engine.accumulators import Ranking
from ragmetrics.engine.alignment import Alignment
from ragmetrics.engine.conventions import Conventions
from ragmetrics.engine.coverage import Coverage
from ragmetrics.engine.order import FrameRows, positions, segment_starts, trec_order
from ragmetrics.engine.queries import match_queries
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.engine.tokens import check as check_tokenizer
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import dictionary_codes, positions_in, scalar_like, to_arrow, to_numpy
from ragmetrics.foundation.kernels import cast, fill_null, filter_rows, take
from ragmetrics.foundation.model import Dataset, Run

if TYPE_CHECKING:
    from concurrent.futures import Executor


def _objects(values: Any) -> np.ndarray:
    return np.array(values.to_pylist(), dtype=object)


def _names(values: np.ndarray) -> list[str]:
    return [str(v) for v in values]


def align(
    dataset: Dataset,
    run: Run,
    conventions: Conventions | None = None,
    *,
    executor: Executor | None = None,
    tokenizer: TokenizerLike = "auto",
    **changes: Any,
) -> Alignment:
    """Align ``run`` with ``dataset`` under ``conventions`` (default: trec_eval's; ``changes`` override fields,
    e.g. ``align(ds, run, rel_level=2)``).

    ``tokenizer``: what the token budgets (``recall@512tok``) count with (:mod:`ragmetrics.engine.tokens`:
    ``auto``, ``whitespace``, ``jieba`` or a callable ``text -> tokens``).

    ``executor`` (say a ``ThreadPoolExecutor(1)``): a run of a million rows or more is then fingerprinted and
    aligned on two threads. Without one, everything runs on the calling thread.
    """
    if not isinstance(dataset, Dataset) or not isinstance(run, Run):
        raise RagMetricsError(
            f"align takes a Dataset and a Run (ragmetrics.io's loaders, Dataset.from_dict, Run.from_dict); got "
            f"{type(dataset).__name__} and {type(run).__name__}: ragmetrics.evaluate also takes dicts and DataFrames"
        )
    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    tokenizer = check_tokenizer(tokenizer)
    coverage = Coverage()
    table = run.table
    coverage.empty_run = table.num_rows == 0
    if conventions.level == "document" and "source_doc" not in table.column_names:
        raise RagMetricsError(
            f"run {run.name!r}: level='document' needs a source_doc column or a chunk mapping (--chunk-pattern, "
            "--chunk-mapping; in Python ragmetrics.io.attach_source_docs)"
        )
    use_source = conventions.level != "chunk" and "source_doc" in table.column_names
    docs = run.documents() if use_source else table.column("doc_id")
    chunks = table.column("doc_id") if use_source else None
    big = executor is not None and table.num_rows >= documents.SPLIT_ROWS
    # the documents' fingerprints, the alignment's largest step, are computed on another core meanwhile
    ahead = executor.submit(documents.string_fingerprints, docs) if big and executor is not None else None

    query_codes, query_names = dictionary_codes(table.column("query_id"), grouped=True)
    queries = dataset.queries_table
    unique_rows, coverage.matched_by_text = match_queries(
        queries.column("query_id"), queries.column("query"), query_names
    )
    unknown = unique_rows < 0
    if unknown.any():
        coverage.not_in_dataset = filter_rows(query_names, to_arrow(unknown)).to_pylist()
        coverage.rows_not_in_dataset = int(np.bincount(query_codes, minlength=len(query_names))[unknown].sum())

    qrels = dataset.qrels_table
    dataset_ids = _objects(queries.column("query_id"))
    qrels_query = positions_in(qrels.column("query_id"), queries.column("query_id"))
    judged = np.zeros(len(dataset_ids), dtype=bool)
    judged[qrels_query] = True
    coverage.no_judgments = _names(dataset_ids[~judged])
    in_run = np.zeros(len(dataset_ids), dtype=bool)
    in_run[unique_rows[~unknown]] = True
    coverage.missing_in_run = _names(dataset_ids[judged & ~in_run])
    evaluated = judged & in_run if conventions.missing == "skip" else judged
    eval_of_query = np.full(len(dataset_ids), -1, dtype=np.int64)
    eval_of_query[evaluated] = np.arange(int(evaluated.sum()))
    query_ids = dataset_ids[evaluated]
    n_queries = len(query_ids)
    coverage.queries_evaluated = n_queries

    lookup = np.append(eval_of_query, -1)  # the last slot stands for a query the dataset does not have
    eval_of_unique = lookup[np.where(unknown, len(eval_of_query), unique_rows)]
    q = eval_of_unique[query_codes]
    score = to_numpy(table.column("score"))
    if conventions.score_precision == "float32":
        score = score.astype(np.float32).astype(np.float64)
    file_rank = None
    if conventions.order == "file" and "rank" in table.column_names:
        ranks = cast(table.column("rank"), pa.float64())
        file_rank = to_numpy(fill_null(ranks, scalar_like(np.nan, pa.float64())) if ranks.null_count else ranks)
    src: np.ndarray | None = None  # each row's row in the run's table (None: the same)
    if np.any(eval_of_unique < 0):
        keep = q >= 0
        src = np.flatnonzero(keep)
        q, score = q[keep], score[keep]
        file_rank = None if file_rank is None else file_rank[keep]

    qrels_eval = eval_of_query[qrels_query]
    qrels_rows = np.flatnonzero(qrels_eval >= 0)
    qrels_q = qrels_eval[qrels_rows]
    qrels_label = to_numpy(qrels.column("relevance"))[qrels_rows]

    ties = None
    if conventions.order == "score":
        perm, ties = trec_order(q, score, docs, src)
    elif file_rank is not None and not np.isnan(file_rank).any():
        perm = np.lexsort((file_rank, q))
    else:
        perm = np.argsort(q, kind="stable")
    if perm is not None:
        q, score = q[perm], score[perm]
        src = perm if src is None else src[perm]
    frame_rows = FrameRows(src, len(q), None if ties is None else ties[:2])
    tie_pairs = None if ties is None else ties[2]  # rows tied with the next row

    starts = segment_starts(q, n_queries)
    pos = positions(starts, n_queries)
    n_ret = np.diff(starts)
    fingerprints = ahead.result() if ahead is not None else documents.string_fingerprints(docs)
    chunk_dups, doc_dups, label = documents.match(
        documents.SortedRows(
            documents=docs,
            chunks=chunks,
            document_fingerprints=fingerprints,
            chunk_fingerprints=None if chunks is None else documents.string_fingerprints(chunks),
            frame_rows=frame_rows,
            q=q,
            pos=pos,
            starts=starts,
            n_ret=n_ret,
            qrels_q=qrels_q,
            qrels_docs=take(qrels.column("doc_id"), to_arrow(qrels_rows)),
            qrels_label=qrels_label,
            label_dtype=documents.label_dtype(qrels_label, conventions.rel_level),
            fingerprint=documents.string_fingerprints,
        ),
        executor if big else None,
    )
    merged = None
    if len(q):
        coverage.duplicates_dropped = int(chunk_dups.sum())
        if coverage.duplicates_dropped:
            coverage.duplicate_queries = _names(query_ids[_distinct_sorted(q[chunk_dups])])
            if conventions.duplicates == "error":
                first = int(np.flatnonzero(chunk_dups)[0])
                doc = take(docs, to_arrow(frame_rows.of(np.array([first]))))[0].as_py()
                raise RagMetricsError(
                    f"run {run.name!r}: query {query_ids[q[first]]!r} lists document "
                    f"{doc!r} more than once; expected each document once per "
                    "query (duplicates='best' keeps the best-ranked occurrence)"
                )
        if conventions.duplicates != "keep":
            coverage.chunks_merged = int(doc_dups.sum()) - coverage.duplicates_dropped
            if doc_dups.any():
                kept = ~doc_dups
                distinct = ~chunk_dups  # a dropped duplicate is no chunk handed over: it costs no token, takes no rank
                merged = (q[distinct], frame_rows.subset(distinct), kept[distinct])
                q, score, label = q[kept], score[kept], label[kept]
                frame_rows = frame_rows.subset(kept)
                starts = segment_starts(q, n_queries)
                pos = positions(starts, n_queries)
                if tie_pairs is not None:  # rows moved up: count the pairs again
                    tie_pairs = np.flatnonzero((q[1:] == q[:-1]) & (score[1:] == score[:-1]))
    if conventions.order == "score" and tie_pairs is not None:
        coverage.tied_pairs = len(tie_pairs)
        if coverage.tied_pairs:
            tied_q = q[tie_pairs]  # ascending
            coverage.tied_queries = _names(query_ids[_distinct_sorted(tied_q)])
    n_ret = np.diff(starts)

    is_rel = qrels_label >= conventions.rel_level
    n_rel = np.bincount(qrels_q[is_rel], minlength=n_queries).astype(np.int64)
    is_nonrel = (qrels_label >= 0) & ~is_rel
    n_nonrel = np.bincount(qrels_q[is_nonrel], minlength=n_queries).astype(np.int64)
    coverage.no_relevant = _names(query_ids[n_rel == 0])

    ideal_order = np.lexsort((-qrels_label, qrels_q))
    ideal_q = qrels_q[ideal_order]
    ideal_label = qrels_label[ideal_order]
    ideal_pos = np.arange(len(ideal_q), dtype=np.int64) - segment_starts(ideal_q, n_queries)[:-1][ideal_q]

    ranking = Ranking(
        query_ids=query_ids,
        q=q,
        pos=pos,
        label=label,
        rel_level=conventions.rel_level,
        n_rel=n_rel,
        n_nonrel=n_nonrel,
        n_ret=n_ret,
        ideal_q=ideal_q,
        ideal_pos=ideal_pos,
        ideal_label=ideal_label,
        corpus_size=dataset.corpus_size,
        documents=docs,
        doc_rows=None if frame_rows.identity else frame_rows,
    )
    return Alignment(dataset, run, conventions, ranking, coverage, merged, tokenizer)


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of an ascending array."""
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values
