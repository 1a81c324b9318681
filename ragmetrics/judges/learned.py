"""The learned judge: a logistic regression on cheap features of a pair, trained on people's labels, cross-fitted
by query so that its grades of the labelled queries are honest. Given another judge's labels (its ``base``), it
reads them as two more features and learns from people's labels how far to trust them: a stacked judge."""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.scripts import CJK_CHARACTER
from ragmetrics.judges.base import Grade, Pair
from ragmetrics.judges.rule import normalise
from ragmetrics.retrieve.bm25 import BM25

FEATURES = ("bm25", "query_overlap", "answer_overlap", "keyword_share", "log_rank", "runs", "log_length")
"""What the model sees of a pair: the BM25 score of its query over the graded and training documents; the shares
of the query's and the expected answer's distinct tokens in the document; the share of expected keywords found;
log(1 + rank) (0 when unknown); how many of the pooled runs retrieved it (0 when unknown); log(1 + the document's
token count)."""

BASE_FEATURES = ("base_grade", "base_missing")
"""What the model sees of a base judge's labels, when it is given some: the base judge's grade of the pair (0 when
it gave none) and 1 when it gave none."""

Labels = Mapping[tuple[str, str], int]
"""Grades by ``(query_id, doc_id)``."""

MIN_EXAMPLES_PER_GRADE = 5
"""Fewer labelled pairs of a grade than this and the judge warns: its grades there are close to guesses. Relevant
pairs (grade > 0) are counted as the cross-fitted models see them: one trained without a fold's queries learning
from fewer relevant pairs than this is warned of, with the number of relevant pairs."""

_WORD = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Word tokens of the :func:`~ragmetrics.judges.rule.normalise` d text; a Chinese, Japanese or Korean run
    is split into its characters."""
    out: list[str] = []
    for word in _WORD.findall(normalise(text)):
        out.extend(list(word) if CJK_CHARACTER.search(word) else [word])
    return out


def _share(part: Sequence[str], whole: set[str]) -> float:
    distinct = set(part)
    return len(distinct & whole) / len(distinct) if distinct else 0.0


def features(pairs: Sequence[Pair], base: Labels | None = None) -> np.ndarray:
    """The :data:`FEATURES` of each pair, one row each (BM25 over the distinct documents of ``pairs``), then its
    :data:`BASE_FEATURES` when a base judge's labels are given."""
    texts: dict[str, str] = {}
    for pair in pairs:
        texts.setdefault(pair.doc_id, pair.text)
    bm25 = _bm25_scores(pairs, texts)
    rows = []
    for i, pair in enumerate(pairs):
        doc = tokens(pair.text)
        words = set(doc)
        keywords = [k for k in pair.expected_keywords if normalise(k)]
        text = normalise(pair.text)
        rows.append([
            bm25[i],
            _share(tokens(pair.query), words),
            _share(tokens(pair.expected_answer), words),
            sum(normalise(k) in text for k in keywords) / len(keywords) if keywords else 0.0,
            math.log1p(max(pair.rank, 0)),
            max(pair.runs, 0),
            math.log1p(len(doc)),
        ])  # fmt: skip
    x = np.asarray(rows, dtype=np.float64).reshape(len(pairs), len(FEATURES))
    if base is None:
        return x
    grades = [base.get((p.query_id, p.doc_id)) for p in pairs]
    stacked = [[0.0, 1.0] if g is None else [float(g), 0.0] for g in grades]
    return np.hstack([x, np.asarray(stacked, dtype=np.float64).reshape(len(pairs), len(BASE_FEATURES))])


def _bm25_scores(pairs: Sequence[Pair], texts: Mapping[str, str]) -> np.ndarray:
    out = np.zeros(len(pairs))
    if not any(texts.values()):
        return out
    frame = pd.DataFrame({"doc_id": list(texts), "text": [t or "" for t in texts.values()]})
    index = BM25.from_documents(frame)
    position = {d: i for i, d in enumerate(frame["doc_id"])}
    by_query: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_query.setdefault(pair.query, []).append(i)
    for query, rows in by_query.items():
        words = index.tokens(query)
        if not words:
            continue
        scores = np.asarray(index.model.get_scores(words), dtype=np.float64)
        for i in rows:
            out[i] = scores[position[pairs[i].doc_id]]
    return out


def folds_of(query_ids: Sequence[str], k: int) -> dict[str, int]:
    """Each labelled query's fold, ``0..k-1``: the queries in the order of a hash of their id, dealt in turn. It
    depends on which queries are labelled, never on their labels."""
    ordered = sorted(set(query_ids), key=lambda q: (hashlib.sha256(q.encode("utf-8")).hexdigest(), q))
    return {q: i % k for i, q in enumerate(ordered)}


def _digest(labels: Labels) -> str:
    """The first 16 hex digits of the SHA-256 of ``labels`` as a sorted JSON list of ``[query_id, doc_id, grade]``."""
    rows = sorted((q, d, int(y)) for (q, d), y in labels.items())
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def _few_relevant(training: Sequence[tuple[Pair, int]], counts: Mapping[int, int], folds: int) -> bool:
    """Warn, and return True, when a cross-fitted model (trained on every fold but one, :func:`folds_of`) learns
    from fewer than :data:`MIN_EXAMPLES_PER_GRADE` relevant (grade > 0) pairs: too few to learn what makes a pair
    relevant, so its grades are close to guesses however many grade-0 pairs there are."""
    relevant = sum(n for g, n in counts.items() if g > 0)
    fold = folds_of([p.query_id for p, _ in training], folds)
    in_fold = Counter(fold[p.query_id] for p, y in training if y > 0)
    fewest = relevant - max(in_fold.values(), default=0)
    if fewest >= MIN_EXAMPLES_PER_GRADE:
        return False
    warnings.warn(
        f"people's labels hold {relevant} relevant (grade > 0) pair(s) of {len(training)} "
        f"({dict(sorted(counts.items()))}): cross-fitted over {folds} folds, a model learns from as few as "
        f"{fewest} of them, fewer than the {MIN_EXAMPLES_PER_GRADE} it needs to learn what makes a pair relevant; "
        "the learned judge's grades are close to guesses; label more relevant pairs (a pool's top ranks hold most "
        "of them) before using it",
        RagMetricsWarning,
        stacklevel=3,
    )
    return True


class LearnedJudge:
    """A logistic regression (scikit-learn, standardised :data:`FEATURES`) trained on ``training``: pairs with a
    person's label. Its grade is not the likeliest one (on a scale where most pairs are 0 that is nearly always
    0) but the model's expected grade cut at the quantiles that give the training pairs the grade shares their
    labels have: the judge grades as many pairs relevant as people would, which is what kappa rewards.

    Cross-fitting by query: the labelled queries are dealt into ``folds`` folds (:func:`folds_of`); a pair of a
    labelled query is graded by the model trained on the other folds only, so it never saw that query's labels
    (its errors there are honest, as on a new query); a pair of any other query is graded by the model trained on
    every label. A model whose training labels hold one grade only predicts that grade. It grades all the pairs
    it is given at once (BM25 is computed over them and the training pairs together).

    ``base``: another judge's grades of the pairs (an endpoint's, a rule's), read as :data:`BASE_FEATURES`: the
    model learns from people's labels when that judge is right (a model endpoint that calls a fifth of the pool
    relevant, say, is right about few of them, and more often where several runs ranked the document high). It
    must have graded some of people's labelled pairs, else there is nothing to learn that from. It must not have
    read people's labels (another learned judge's grades did, of the other folds): stacked on those, a labelled
    query's grade would read its own labels; the CLI and the Judge page refuse them. ``base_source``: where those
    labels came from (a file, a judge's name), named in the judge's refusals."""

    name = "learned"
    version = "2"
    batch = 0  # all pairs in one call
    needs_query = True  # its BM25 and overlap features read the query

    def __init__(
        self,
        training: Sequence[tuple[Pair, int]],
        *,
        folds: int = 5,
        c: float = 1.0,
        base: Labels | None = None,
        base_source: str = "",
    ) -> None:
        if not training:
            raise RagMetricsError("the learned judge needs people's labels to learn from; none were given")
        if folds < 2:
            raise RagMetricsError(f"cross-fitting needs at least 2 folds; got {folds}")
        queries = len({p.query_id for p, _ in training})
        if queries < 2:
            raise RagMetricsError(
                f"people's labels cover {queries} query; cross-fitting by query needs labels on at least 2 "
                "(a few dozen make a useful judge)"
            )
        counts = Counter(int(y) for _, y in training)
        if len(counts) < 2:
            (grade, n), *_ = counts.items()
            raise RagMetricsError(
                f"people's labels are all grade {grade} ({n} pair(s)): a judge learns to tell grades apart from "
                "examples of each; label pairs of other grades too (qrels that list only relevant documents, as "
                "BEIR's do, cannot train it)"
            )
        rare = sorted(g for g, n in counts.items() if n < MIN_EXAMPLES_PER_GRADE)
        if _few_relevant(training, counts, min(folds, queries)):
            rare = [g for g in rare if g <= 0]  # the relevant grades are said by _few_relevant's warning
        if rare:
            warnings.warn(
                f"people's labels hold fewer than {MIN_EXAMPLES_PER_GRADE} pairs of grade(s) "
                f"{', '.join(map(str, rare))} ({dict(sorted(counts.items()))}): the learned judge's grades there are "
                "close to guesses; check its agreement (judge agree) before using them",
                RagMetricsWarning,
                stacklevel=2,
            )
        if base is not None and not any((p.query_id, p.doc_id) in base for p, _ in training):
            where = f"{base_source}: " if base_source else ""
            raise RagMetricsError(
                f"{where}the base judge's labels ({len(base)}) grade none of the {len(training)} pair(s) people labelled: "
                "the learned judge learns how far to trust them from pairs both graded (let that judge grade the "
                "pool that holds people's pairs)"
            )
        if folds > queries:
            warnings.warn(
                f"people's labels cover {queries} queries, fewer than the {folds} folds asked: cross-fitting leaves "
                f"one query out at a time ({queries} folds)",
                RagMetricsWarning,
                stacklevel=2,
            )
        self.training = list(training)
        self.folds = min(folds, queries)
        self.c = c
        self.base = None if base is None else dict(base)

    def config(self) -> Mapping[str, Any]:
        labels = {(p.query_id, p.doc_id): y for p, y in self.training}
        config = {"model": "logistic-regression", "features": list(FEATURES), "folds": self.folds, "C": self.c,
                  "cuts": "training-label shares", "training_labels": _digest(labels),
                  "n_training": len(self.training)}  # fmt: skip
        if self.base is not None:
            config |= {"features": [*FEATURES, *BASE_FEATURES], "base_labels": _digest(self.base),
                       "n_base": len(self.base)}  # fmt: skip
        return config

    def grade(self, pairs: Sequence[Pair], max_grade: int) -> list[Grade]:
        labelled = {(p.query_id, p.doc_id): int(y) for p, y in self.training}
        train_pairs = [p for p, _ in self.training]
        everything = [*train_pairs, *pairs]
        x = features(everything, self.base)
        x_train, x_grade = x[: len(train_pairs)], x[len(train_pairs) :]
        y_train = np.array([labelled[(p.query_id, p.doc_id)] for p in train_pairs])
        fold = folds_of([p.query_id for p in train_pairs], self.folds)
        train_fold = np.array([fold[p.query_id] for p in train_pairs])
        grade_fold = np.array([fold.get(p.query_id, -1) for p in pairs])
        predicted = np.empty(len(pairs), dtype=np.int64)
        for f in [-1, *range(self.folds)]:
            rows = np.flatnonzero(grade_fold == f)
            if len(rows):
                keep = train_fold != f
                predicted[rows] = self._fit_predict(x_train[keep], y_train[keep], x_grade[rows])
        return [Grade(min(max(int(g), 0), max_grade)) for g in predicted]

    def _fit_predict(self, x: np.ndarray, y: np.ndarray, new: np.ndarray) -> np.ndarray:
        try:
            from sklearn.linear_model import LogisticRegression  # noqa: PLC0415 (the judges extra, loaded on use)
            from sklearn.pipeline import make_pipeline  # noqa: PLC0415 (the judges extra, loaded on use)
            from sklearn.preprocessing import StandardScaler  # noqa: PLC0415 (the judges extra, loaded on use)
        except ImportError as exc:
            raise RagMetricsError(
                f"the learned judge needs scikit-learn: pip install 'ragmetrics[judges]' ({exc})"
            ) from None

        grades = np.unique(y)
        if len(grades) == 0:
            raise RagMetricsError("a cross-fitting fold left no label to learn from; label more queries")
        if len(grades) == 1:
            return np.full(len(new), grades[0])
        model = make_pipeline(StandardScaler(), LogisticRegression(C=self.c, max_iter=1000))
        model.fit(x, y)
        classes = np.asarray(model.classes_, dtype=np.int64)
        expected = np.asarray(model.predict_proba(x)) @ classes
        shares = np.cumsum([np.mean(y == g) for g in classes])[:-1]
        cuts = np.quantile(expected, shares)
        new_expected = np.asarray(model.predict_proba(new)) @ classes
        return classes[np.searchsorted(cuts, new_expected, side="right")]
