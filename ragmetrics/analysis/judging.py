"""Filling the holes in the judgments: pool what the runs retrieved unjudged, merge the labels given back.

* :func:`pool`: the unjudged (query, document) pairs in the top ``depth`` of one or more runs, each pair once, in
  dataset query order and, within a query, by the best rank any run gave it (with the text when it is known);
* :func:`merge`: the dataset with new labels added; a label for a pair that is already judged with another
  grade is a conflict, refused unless ``override``;
* :func:`with_labels`: a dataset's judgments completed by a judge's labels, and by human labels of a sample of
  queries (what :mod:`ragmetrics.analysis.ppi` corrects the one with the other by).

Both work at the level the runs are evaluated at (documents when chunks are mapped to them), so what is judged
is what the metrics read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ragmetrics.analysis.fusion import ranked_frame
from ragmetrics.engine import Alignment, Ranking, align
from ragmetrics.engine.health import Fix, no_overlap_fix
from ragmetrics.engine.metrics import MetricSpec, compute, parse_metric
from ragmetrics.engine.order import segment_starts
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import NEGATIVE, Dataset, Run
from ragmetrics.io.source import names_of

if TYPE_CHECKING:
    import pandas as pd


def pool(dataset: Dataset, runs: Sequence[Run | Alignment], depth: int, **conventions: Any) -> pd.DataFrame:
    """Unjudged pairs of the runs' top ``depth``: ``query_id, doc_id, best_rank, runs`` (how many runs retrieved
    it there) and ``text`` when the dataset's documents (:meth:`Dataset.document_texts`, title and text) or a run's
    chunks carry it, in the dataset's query order.

    A query of the dataset that judges no document yet (a new query, a generated one) is pooled too: its top
    ``depth`` in the run's own order (:func:`ragmetrics.analysis.fusion.ranked_frame`, trec_eval's), every document
    of it unjudged; a chunk run's chunks as their documents, as the judged queries' (a document at its best chunk).
    Queries the dataset does not have are not pooled, nor its negative queries
    (:meth:`~ragmetrics.foundation.model.Dataset.negative_queries`: their answer is not in the corpus)."""

    if not isinstance(depth, (int, np.integer)) or depth < 1:
        raise RagMetricsError(f"The 'depth' parameter must be an int >= 1. Got {depth!r} instead.")
    negative = set(dataset.negative_queries())
    position = {query: i for i, query in enumerate(dataset.query_ids.astype(str)) if query not in negative}
    parts = []
    for run in runs:
        alignment = run if isinstance(run, Alignment) else align(dataset, run, **conventions)
        rows = alignment.rows()
        top = rows[(rows["rank"] <= depth) & rows["label"].isna()]
        top = top.drop_duplicates(["q", "doc_id"], keep="first")  # a document once, at its best chunk
        frame = pd.DataFrame({"query_id": top["query_id"].astype(str).to_numpy(),
                              "doc_id": top["doc_id"].to_numpy(), "rank": top["rank"].to_numpy()})  # fmt: skip
        if "text" in top.columns:
            frame["text"] = top["text"].to_numpy()
        parts.append(frame)
        unjudged = set(position) - set(alignment.query_ids.astype(str))
        if unjudged:
            others = alignment.run.of_queries(unjudged)
            if alignment.conventions.level != "chunk" and "source_doc" in others.table.column_names:
                others = others.with_columns(doc_id=others.documents())  # chunks pooled as their documents
            ranked = ranked_frame(others, depth)
            parts.append(pd.DataFrame({"query_id": ranked["query_id"].astype(str).to_numpy(),
                                       "doc_id": ranked["doc_id"].to_numpy(), "rank": ranked["rank"].to_numpy()}))  # fmt: skip
    columns = ["query_id", "doc_id", "best_rank", "runs"]
    if not parts or all(p.empty for p in parts):
        return pd.DataFrame(columns=columns)
    stacked = pd.concat([p for p in parts if not p.empty], ignore_index=True)
    stacked["q"] = stacked["query_id"].map(position)
    grouped = stacked.groupby(["q", "query_id", "doc_id"], sort=False)
    out = grouped.agg(best_rank=("rank", "min"), runs=("rank", "size")).reset_index()
    if "text" in stacked.columns:
        texts = stacked.dropna(subset=["text"]).drop_duplicates(["query_id", "doc_id"])[["query_id", "doc_id", "text"]]
        out = out.merge(texts, on=["query_id", "doc_id"], how="left")
    corpus = dataset.document_texts()
    if corpus is not None:
        known = out["doc_id"].map(corpus)
        out["text"] = known.where(known.notna(), out["text"]) if "text" in out.columns else known
    out = out.sort_values(["q", "best_rank", "doc_id"], kind="stable").drop(columns="q").reset_index(drop=True)
    return out[[*columns, *(["text"] if "text" in out.columns else [])]]


@dataclass(frozen=True)
class Merged:
    """The dataset with the new labels, what was added, and the conflicts (``query_id, doc_id, old, new``)."""

    dataset: Dataset
    added: int
    changed: int
    conflicts: list[tuple[str, str, int, int]]


def merge(dataset: Dataset, labels: Dataset | pd.DataFrame, *, override: bool = False) -> Merged:
    """Add ``labels`` (a dataset whose qrels are the new labels, or a frame ``query_id, doc_id, relevance``) to
    ``dataset``'s judgments. A label for an already-judged pair with another grade is a conflict: refused with
    the list unless ``override`` (the new grade wins); the same grade again changes nothing."""
    new = labels.qrels_table if isinstance(labels, Dataset) else Dataset.from_frames(labels).qrels_table
    old = dataset.qrels_table
    existing = dict(
        zip(
            zip(old.column("query_id").to_pylist(), old.column("doc_id").to_pylist()),
            old.column("relevance").to_pylist(),
        )
    )
    added: dict[tuple[str, str], int] = {}
    conflicts: list[tuple[str, str, int, int]] = []
    for q, d, r in zip(
        new.column("query_id").to_pylist(), new.column("doc_id").to_pylist(), new.column("relevance").to_pylist()
    ):
        before = existing.get((q, d))
        if before is None:
            added[(q, d)] = r
        elif before != r:
            conflicts.append((q, d, before, r))
    if conflicts and not override:
        shown = "; ".join(f"{q} {d}: {a} -> {b}" for q, d, a, b in conflicts[:5])
        more = f" (and {len(conflicts) - 5} more)" if len(conflicts) > 5 else ""
        raise RagMetricsError(
            f"{len(conflicts)} label(s) would change a judgment already made: {shown}{more}; "
            "pass override (--override) to let the new labels win"
        )
    merged = dict(existing)
    for q, d, _, r in conflicts:
        merged[(q, d)] = r
    merged.update(added)
    table = pa.table(
        {
            "query_id": pa.array([k[0] for k in merged], pa.large_string()),
            "doc_id": pa.array([k[1] for k in merged], pa.large_string()),
            "relevance": pa.array(list(merged.values()), pa.int64()),
        }
    )
    result = Dataset.from_tables(table, dataset.queries_table, name=dataset.name, corpus_size=dataset.corpus_size,
                                 documents=dataset.documents, judged_once=True)  # fmt: skip
    return Merged(result, len(added), len(conflicts), conflicts)


def diff(before: Dataset, after: Dataset) -> pd.DataFrame:
    """How two versions' judgments differ: ``query_id, doc_id, before, after, change`` (added, removed, changed),
    in query then document order."""

    old = before.qrels.rename(columns={"relevance": "before"})
    new = after.qrels.rename(columns={"relevance": "after"})
    both = old.merge(new, on=["query_id", "doc_id"], how="outer")
    both = both[both["before"].ne(both["after"]) | both["before"].isna() | both["after"].isna()].copy()
    both["change"] = [
        "added" if pd.isna(b) else "removed" if pd.isna(a) else "changed" for b, a in zip(both["before"], both["after"])
    ]
    for column in ("before", "after"):
        both[column] = both[column].astype("Int64")
    return both.sort_values(["query_id", "doc_id"]).reset_index(drop=True)[
        ["query_id", "doc_id", "before", "after", "change"]
    ]


def label_impact(
    alignments: Mapping[str, Alignment], pairs: pd.DataFrame, metric: str | MetricSpec, baseline: str | None = None
) -> pd.DataFrame:
    """How much judging each pooled pair relevant would move the comparison on ``metric``.

    ``pairs`` (``query_id, doc_id``, as :func:`pool` gives) are judged one at a time with the smallest relevant
    grade; for each run the metric's value on that query is computed with and without it (exactly, by the
    registry's kernel on a ranking with one copy of the query per pair). ``impact`` is the change of the mean
    difference between the runs and ``baseline`` (the first run by default; with one run, of its mean), so a pair
    both runs rank alike moves little and one neither ranks within the cut-off moves nothing. Returned sorted by
    impact, largest first: ``query_id, doc_id, impact`` and ``delta_<run>`` per run."""

    names = list(alignments)
    if not names:
        raise RagMetricsError("label_impact needs at least one alignment")
    baseline = baseline or names[0]
    spec = parse_metric(metric)
    out = pairs[["query_id", "doc_id"]].reset_index(drop=True).copy()
    n_queries = max(alignments[baseline].n_queries, 1)
    for name in names:
        ranking = alignments[name].ranking
        qindex = {q: i for i, q in enumerate(ranking.query_ids.tolist())}
        q = np.array([qindex.get(x, -1) for x in out["query_id"]], dtype=np.int64)
        known = q >= 0
        delta = np.zeros(len(out))
        if known.any():
            with_label = compute(_one_more_relevant(ranking, q[known], out["doc_id"].to_numpy()[known]), [spec])[spec]
            without = compute(ranking, [spec])[spec][q[known]]
            delta[known] = np.nan_to_num(with_label - without)
        out[f"delta_{name}"] = delta
    others = [n for n in names if n != baseline] or [baseline]
    base = out[f"delta_{baseline}"] if len(names) > 1 else 0.0
    out["impact"] = sum((out[f"delta_{n}"] - base).abs() for n in others) / n_queries / len(others)
    return out.sort_values("impact", ascending=False, kind="stable").reset_index(drop=True)[
        ["query_id", "doc_id", "impact", *[f"delta_{n}" for n in names]]
    ]


def _one_more_relevant(ranking: Ranking, q: np.ndarray, docs: np.ndarray) -> Ranking:
    """One copy of query ``q[i]``'s ranking per pair ``i``, with document ``docs[i]`` judged relevant (the smallest
    relevant grade) in copy ``i``: its row relabelled when ranked, R and the ideal ranking one more either way."""

    grade = max(ranking.rel_level, 1)
    starts = segment_starts(ranking.q, ranking.n_queries)
    lengths = ranking.n_ret[q]
    source = np.concatenate([np.arange(starts[x], starts[x + 1]) for x in q]) if len(q) else np.zeros(0, np.int64)
    copy = np.repeat(np.arange(len(q)), lengths)
    label = ranking.label[source].astype(np.promote_types(ranking.label.dtype, np.min_scalar_type(grade)))
    ranked_docs = ranking.docs(source) if len(source) else np.zeros(0, dtype=object)
    label[(ranked_docs == docs[copy]) & ~ranking.judged[source]] = grade
    ideal_rows = [np.flatnonzero(ranking.ideal_q == x) for x in q]
    ideal_q = (
        np.concatenate([np.full(len(r) + 1, i) for i, r in enumerate(ideal_rows)]) if len(q) else np.zeros(0, np.int64)
    )
    ideal_label = (
        np.concatenate([np.r_[ranking.ideal_label[r], grade] for r in ideal_rows]) if len(q) else np.zeros(0, np.int64)
    )
    order = np.lexsort((-ideal_label, ideal_q))
    ideal_q, ideal_label = ideal_q[order], ideal_label[order]
    ideal_pos = np.arange(len(ideal_q)) - segment_starts(ideal_q, len(q))[:-1][ideal_q]
    return Ranking(
        query_ids=ranking.query_ids[q],
        q=copy,
        pos=ranking.pos[source],
        label=label,
        rel_level=ranking.rel_level,
        n_rel=ranking.n_rel[q] + 1,
        n_nonrel=ranking.n_nonrel[q],
        n_ret=lengths,
        ideal_q=ideal_q,
        ideal_pos=ideal_pos,
        ideal_label=ideal_label,
        corpus_size=ranking.corpus_size,
    )


@dataclass(frozen=True)
class Labelled:
    """A dataset's judgments twice over: ``judge`` with a judge's labels filling the pairs they leave unjudged (the
    dataset's own labels are kept where both label a pair), ``human`` with the human labels added (they win where
    they differ), and ``queries``, the human-labelled queries: every query the human labels name."""

    judge: Dataset
    human: Dataset
    queries: tuple[str, ...]


def with_labels(dataset: Dataset, judge_labels: Dataset, human_labels: Dataset) -> Labelled:
    """The judgments :func:`ragmetrics.analysis.ppi.corrected_means` compares (see :class:`Labelled`). A query the humans sampled must be
    named in ``human_labels`` even when nothing in it is relevant (label it 0): a sampled query left out would no
    longer make the sample random."""
    judge, human = judged_twice(dataset, judge_labels.qrels, human_labels)
    human_ids = human_labels.qrels_table.column("query_id").to_pylist()
    return Labelled(judge=judge, human=human, queries=tuple(dict.fromkeys(str(q) for q in human_ids)))


def judged_twice(
    dataset: Dataset, judge_labels: pd.DataFrame, human_labels: Dataset | pd.DataFrame
) -> tuple[Dataset, Dataset]:
    """``dataset``'s judgments completed by a judge's labels, and by people's (``query_id, doc_id, relevance``
    frames; people's may be a dataset): the judge's fill only the pairs ``dataset`` leaves unjudged, people's are
    added and win where they differ (:class:`Labelled`'s ``judge`` and ``human``)."""
    judged = dataset.qrels[["query_id", "doc_id"]].astype(str).assign(known=True)
    labels = judge_labels.astype({"query_id": str, "doc_id": str}).merge(judged, on=["query_id", "doc_id"], how="left")
    holes = labels[labels["known"].isna()][["query_id", "doc_id", "relevance"]]
    return merge(dataset, holes).dataset, merge(dataset, human_labels, override=True).dataset


def labelled_in_part(dataset: Dataset, judge_labels: pd.DataFrame, human_labels: Dataset) -> dict[str, int]:
    """The human-sampled queries (those ``human_labels`` names) with pairs the judge labels that neither the dataset
    nor people do, and how many: the human values count such a pair non-relevant, so a sampled query labelled in
    part biases the human-minus-judge differences (toward 0 relevant) with nothing to show it. Only when people
    label both ways (some label 0 or below): labels that list only the relevant pairs follow TREC's convention, the
    rest non-relevant, and are complete as they are."""
    if not (human_labels.qrels["relevance"] <= 0).any():
        return {}
    known = pd.concat([dataset.qrels[["query_id", "doc_id"]], human_labels.qrels[["query_id", "doc_id"]]])
    known = known.astype(str).drop_duplicates().assign(known=True)
    sampled = set(human_labels.qrels_table.column("query_id").to_pylist())
    judged = judge_labels[["query_id", "doc_id"]].astype(str)
    judged = judged[judged["query_id"].isin(sampled)].merge(known, on=["query_id", "doc_id"], how="left")
    missing = judged[judged["known"].isna()]
    return {str(q): int(n) for q, n in missing.groupby("query_id", sort=True).size().items()}


def labels_retrieved(alignment: Alignment, labels: Dataset, audience: str = "cli") -> tuple[int, Fix | None]:
    """How many of ``labels``' (query, document) pairs ``alignment``'s run retrieved at any rank, its rows read as
    ``alignment`` reads them (:meth:`Alignment.rows`: chunks as their documents when they are mapped to them; the
    alignment of a dataset that holds the labels, as the corrected estimates' are), and, when it retrieved none, the
    likely cause and fix in the words of ``audience``: the run aligned with ``labels`` alone under its conventions
    (:func:`ragmetrics.engine.health.no_overlap_fix`; None when no change tried makes them meet)."""
    rows = alignment.rows()
    retrieved = set(zip(rows["query_id"].astype(str), rows["doc_id"].astype(str)))
    table = labels.qrels_table
    pairs = zip(table.column("query_id").to_pylist(), table.column("doc_id").to_pylist())
    met = len({pair for pair in pairs if pair in retrieved})
    if met:
        return met, None
    return 0, no_overlap_fix(align(labels, alignment.run, alignment.conventions), audience)


def not_pooled_words(negative: Sequence[str], *, named: bool = True) -> str:
    """What :func:`pool` leaves out, in the words the CLI and the dashboard say: the dataset's ``negative`` queries
    (:meth:`~ragmetrics.foundation.model.Dataset.negative_queries`), at most three ``named``; "" when none."""
    if not negative:
        return ""
    many = len(negative) != 1
    shown = f" {names_of(negative, 3)}" if named else ""
    return (
        f"{len(negative)} negative quer{'ies' if many else 'y'}{shown} (category {NEGATIVE}: "
        f"{'their' if many else 'its'} answer is not in the corpus) {'are' if many else 'is'} not pooled: there is "
        "nothing relevant to judge"
    )


def judged_by_the_judge_alone(
    dataset: Dataset, labels: pd.DataFrame, rel_level: int = 1, people: Collection[str] = ()
) -> list[str]:
    """The queries ``dataset`` does not judge that the judge's ``labels`` (``query_id, doc_id, relevance``) judge,
    none of them relevant (below ``rel_level``), less those ``people`` labelled (their labels judge them): corrected
    means count them (0 where a metric needs a relevant document), where plain ``eval`` leaves a query without
    judgments out. A query with no answer in the corpus (a negative one) pooled by mistake shows up here. Sorted."""
    known = set(dataset.qrels_table.column("query_id").to_pylist()) | {str(q) for q in people}
    brought = labels[~labels["query_id"].astype(str).isin(known)]
    if brought.empty:
        return []
    relevant = brought.groupby(brought["query_id"].astype(str))["relevance"].max() >= rel_level
    return sorted(str(q) for q in relevant.index[~relevant.to_numpy()])


def judged_by_the_judge_alone_words(queries: Sequence[str]) -> str:
    """:func:`judged_by_the_judge_alone`'s ``queries`` in the words the CLI and the dashboard say (at most five
    named)."""
    many = len(queries) != 1
    shown = ", ".join(str(q) for q in queries[:5]) + (f" and {len(queries) - 5:,} more" if len(queries) > 5 else "")
    return (
        f"{len(queries)} quer{'ies' if many else 'y'} the dataset does not judge {'are' if many else 'is'} judged by "
        f"the judge's labels alone, none relevant ({shown}): the corrected means count them (0 where a metric needs "
        "a relevant document), where plain eval leaves a query without judgments out; a query with no answer in the "
        "corpus (a negative one) belongs out of the pool"
    )
