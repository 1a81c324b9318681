"""``evaluate``: per-query values, means, curves over K and a coverage report, for one or more runs.

Each run is aligned once (:func:`ragmetrics.align`); the results keep the alignments, so asking for more
metrics, curves or the aligned rows later computes only what is new. Nothing here imports pandas until a
frame is asked for.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.analysis.values import plain, results_dict, values_frame
from ragmetrics.engine import Alignment, Conventions, Coverage, Ranking, align, budgets
from ragmetrics.engine.conventions import Mode
from ragmetrics.engine.health import Health
from ragmetrics.engine.metrics import MetricSpec, expand_trec_eval_groups, metric_name, named_as, parse_metric
from ragmetrics.engine.once import Once
from ragmetrics.engine.tokens import TokenizerLike
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run

if TYPE_CHECKING:
    from concurrent.futures import Executor

    import pandas as pd

DEFAULT_METRICS = ("ndcg@10", "recall@5", "recall@10", "precision@5", "hits@5", "mrr", "map")


@dataclass(frozen=True, eq=False)
class RunResult:
    """One run's results: the alignment and the metrics asked for, parsed once (:attr:`specs`, in order; their
    canonical names are :attr:`metrics`)."""

    alignment: Alignment
    specs: tuple[MetricSpec, ...]
    _frames: Once = field(default_factory=Once, init=False, repr=False)

    def __repr__(self) -> str:
        return f"RunResult(run={self.name!r}, queries={self.alignment.n_queries:,}, metrics={list(self.metrics)})"

    @property
    def metrics(self) -> tuple[str, ...]:
        """The canonical names of :attr:`specs` (``ndcg@10``), the keys of every mapping below."""
        return tuple(str(spec) for spec in self.specs)

    @property
    def name(self) -> str:
        return self.alignment.name

    @property
    def coverage(self) -> Coverage:
        return self.alignment.coverage

    @property
    def ranking(self) -> Ranking:
        return self.alignment.ranking

    @property
    def health(self) -> Health:
        return self.alignment.health

    @property
    def conventions(self) -> Conventions:
        return self.alignment.conventions

    @property
    def mode(self) -> Mode:
        return self.alignment.conventions.mode

    @property
    def query_ids(self) -> np.ndarray:
        return self.alignment.query_ids

    def array(self, metric: str | MetricSpec) -> np.ndarray:
        """Per-query values of one metric, aligned with :attr:`query_ids` (read-only)."""
        return self.alignment.value(metric)

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        values = self.alignment.values(list(self.specs))
        return {str(spec): array for spec, array in values.items()}

    @property
    def means(self) -> dict[str, float]:
        """Arithmetic mean of each metric over the evaluated queries (NaN values, LlamaIndex skips, left out)."""
        return {str(spec): self.alignment.mean(spec) for spec in self.specs}

    @property
    def budgeted(self) -> bool:
        """True when a metric is read at a token budget (``recall@512tok``)."""
        return any(spec.tokens is not None for spec in self.specs)

    @property
    def budget_notes(self) -> list[str]:
        """A note for each token budget asked for that hands over nothing to some query
        (:func:`ragmetrics.engine.budgets.nothing_handed`), and one for a cut-off in ranks that reads as a budget
        (:func:`budgets.budget_like_cutoffs`)."""
        return budgets.budget_notes(self.alignment, budgets.asked(self.specs)) + budgets.budget_like_cutoffs(
            self.specs, self.alignment.depth
        )

    @property
    def tokenizer(self) -> str | None:
        """The tokenizer the token budgets were counted with; None when no metric is read at a budget."""
        return self.alignment.tokenizer_name if self.budgeted else None

    def mean_bounds(self, depth: int | None = None) -> dict[str, tuple[float, float]]:
        """Each metric's mean at the two ends the unjudged documents leave open, ``{metric: (worst, best)}``: the
        lowest and highest mean over every way of judging the unjudged documents the run retrieved (``depth``: in
        its top ``depth``; :meth:`ragmetrics.Alignment.bounds`)."""
        return {str(spec): self.alignment.mean_bounds(spec, depth) for spec in self.specs}

    @property
    def values(self) -> pd.DataFrame:
        """Per-query values: a frame indexed by query_id, one column per metric (:func:`values_frame`)."""
        return self._frames.get("values", lambda: values_frame(self)).copy(deep=False)

    @property
    def mean(self) -> pd.Series:
        import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

        return pd.Series(self.means, dtype=np.float64)

    def curve(self, metric: str, k_max: int) -> np.ndarray:
        """Per-query ``metric@k`` for k = 1..k_max, shape (n_queries, k_max)."""
        return self.alignment.curve(metric, k_max)


class EvalResult:
    """Results of one or more runs on one dataset: ``runs`` maps a run name to its :class:`RunResult`;
    ``metrics`` are canonical names in the order asked for."""

    def __init__(self, dataset: Dataset, specs: list[MetricSpec], runs: dict[str, RunResult], k_max: int):
        self.dataset = dataset
        self.specs = specs
        self.metrics = [str(s) for s in specs]
        self.runs = runs
        self.k_max = k_max

    @property
    def run_names(self) -> list[str]:
        return list(self.runs)

    def __repr__(self) -> str:
        return f"EvalResult(dataset={self.dataset.name!r}, runs={self.run_names}, metrics={self.metrics})"

    def __getitem__(self, name: str) -> RunResult:
        return self.runs[name]

    def mean(self, names: str = "ragmetrics") -> pd.DataFrame:
        """Means: one row per run, one column per metric, named by its canonical name (``precision@5``) or, with
        ``names="trec_eval"``, as trec_eval prints it (``P_5``, ``ndcg_cut_10``, ``recip_rank``: as pytrec_eval's
        keys and ``eval --names trec_eval``; a metric trec_eval lacks keeps its name)."""
        import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

        frame = pd.DataFrame(
            [r.means for r in self.runs.values()], index=pd.Index(self.run_names, name="run"), columns=self.metrics
        )
        return self._named(frame.astype(np.float64), names)

    def per_query(self, run: str | None = None, names: str = "ragmetrics") -> pd.DataFrame:
        """Per-query values; for all runs the index is (run, query_id); ``names`` as in :meth:`mean`."""
        import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

        if run is not None:
            return self._named(self.runs[run].values, names)
        frame = pd.concat({name: r.values for name, r in self.runs.items()}, names=["run", "query_id"])
        return self._named(frame, names)

    def _named(self, frame: pd.DataFrame, names: str) -> pd.DataFrame:
        renamed = {str(spec): named_as(spec, names) for spec in self.specs}
        return frame if all(k == v for k, v in renamed.items()) else frame.rename(columns=renamed)

    @property
    def coverage(self) -> dict[str, Coverage]:
        return {name: r.coverage for name, r in self.runs.items()}

    def curves(
        self, metrics: Sequence[str] = ("precision", "recall", "f1", "hits", "ndcg"), k_max: int | None = None
    ) -> pd.DataFrame:
        """Mean ``metric@k`` for k = 1..k_max (default: the result's): long frame (run, metric, k, value)."""
        import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: import ragmetrics stays light)

        if k_max is not None and (isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1):
            raise RagMetricsError(f"The 'k_max' parameter must be an int >= 1 or None. Got {k_max!r} instead.")
        k_max = k_max or self.k_max
        parts = []
        for name, result in self.runs.items():
            for metric in metrics:
                values = result.curve(metric, k_max)
                mean = values.mean(axis=0) if len(values) else np.zeros(k_max)
                parts.append(
                    pd.DataFrame(
                        {
                            "run": name,
                            "metric": metric_name(metric),
                            "k": np.arange(1, k_max + 1),
                            "value": mean,
                        }
                    )
                )
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "metric", "k", "value"])

    def to_dict(self, per_query: bool = False, bounds: bool = False, bounds_depth: int | None = None) -> dict[str, Any]:
        """``{"runs": {RUN: {"mean": {METRIC: v}, "per_query": {QID: {METRIC: v}}}}}``; ``bounds`` adds
        ``"bounds": {METRIC: {"worst": v, "best": v}}`` per run (:meth:`RunResult.mean_bounds` to ``bounds_depth``)."""
        out = results_dict(self.runs.values(), per_query)
        if bounds:
            for name, run in self.runs.items():
                out["runs"][name]["bounds"] = {
                    m: {"worst": plain(w), "best": plain(b)} for m, (w, b) in run.mean_bounds(bounds_depth).items()
                }
        return out


def _as_dataset(dataset: Any) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, Mapping):
        return Dataset.from_dict(dataset)
    if hasattr(dataset, "columns"):  # a qrels DataFrame
        return Dataset.from_frames(dataset)
    raise RagMetricsError(
        f"expected a Dataset, a qrels DataFrame or a {{query_id: {{doc_id: label}}}} dict, got {type(dataset).__name__}"
    )


_RUNS_EXPECTED = (
    "expected a Run, an Alignment, a list of them, {name: Run}, a run DataFrame or a {query_id: {doc_id: score}} dict"
)


def _as_runs(runs: Any) -> list[Run | Alignment]:
    if isinstance(runs, (Run, Alignment)):
        return [runs]
    if hasattr(runs, "columns") and not isinstance(runs, Mapping):  # one run as a DataFrame, as the qrels may be
        if len(runs) == 0:
            raise RagMetricsError(
                "the run DataFrame has no rows: nothing to evaluate (an empty run file is refused too)"
            )
        return [Run.from_frame(runs)]
    if isinstance(runs, Mapping):
        values = list(runs.values())
        if values and all(isinstance(v, Run) for v in values):
            return [v.with_name(str(k)) for k, v in runs.items()]
        if all(isinstance(v, Mapping) for v in values):
            return [Run.from_dict(runs)]
        raise RagMetricsError(_RUNS_EXPECTED)
    out = list(runs) if isinstance(runs, Iterable) else [runs]
    if not all(isinstance(r, (Run, Alignment)) for r in out):
        raise RagMetricsError(_RUNS_EXPECTED)
    return out


def evaluate(
    dataset: Dataset | Mapping[str, Mapping[str, int]] | Any,
    runs: Run | Alignment | Iterable[Run | Alignment] | Mapping[str, Any],
    metrics: Sequence[str | MetricSpec] | str | None = None,
    *,
    conventions: Conventions | None = None,
    k_max: int | None = None,
    warn: bool = True,
    executor: Executor | None = None,
    tokenizer: TokenizerLike | None = None,
    **changes: Any,
) -> EvalResult:
    """Evaluate one or more runs against a dataset.

    ``conventions`` (a :class:`ragmetrics.Conventions`; default trec_eval 10.0 run with ``-c``), or its
    fields as keywords: ``missing``, ``rel_level``, ``level``, ``order``, ``score_precision``,
    ``duplicates``, ``mode`` (``"llamaindex"`` reproduces llama_index.core's RetrieverEvaluator, see
    :mod:`ragmetrics.engine.llamaindex`). In short:

    * Ranking: score descending as float64, ties by doc_id descending (byte order); the rank column and file
      order are ignored (``order="file"`` keeps the given order).
    * Duplicate (query, doc) rows keep the best-ranked occurrence and are counted in the coverage report.
    * Chunks with a ``source_doc`` count as their document, at the rank of its first chunk.
    * Queries: those with at least one judgment, in dataset order. A judged query absent from the run scores
      0 (``missing="skip"`` leaves it out); run queries unknown to the dataset (matched by id, else by query
      text) are dropped; all is reported in the coverage report.
    * Relevant means label >= ``rel_level``; nDCG gains are the raw labels.

    ``runs`` may hold :class:`ragmetrics.Alignment` s already made (on this dataset, under these conventions):
    they are used as they are. ``executor`` is passed to :func:`ragmetrics.align`.

    ``metrics`` may name trec_eval's measure groups (``"official"``, ``"set"``, ``"all_trec"``): the measures of each
    that ragmetrics computes, at trec_eval's default cut-offs (a warning names those left out).

    ``tokenizer``: what the token budgets (``recall@512tok``: the metric on the chunks that fit in 512 tokens)
    count with: ``auto`` (jieba for Chinese texts, else whitespace; picked once, on every run's texts together, so
    all runs count alike: :func:`ragmetrics.engine.budgets.shared_tokenizer`), ``whitespace``, ``jieba`` or a
    callable ``text -> tokens`` (:mod:`ragmetrics.engine.tokens`); None (the default): ``auto`` for a run, and for an
    :class:`~ragmetrics.Alignment` the tokenizer it was aligned with (``align`` itself takes no None: it has no
    tokenizer of its own to keep); :attr:`RunResult.tokenizer` names it.
    """
    data = _as_dataset(dataset)
    run_list = _as_runs(runs)
    names = [r.name for r in run_list]
    if len(set(names)) != len(names):
        raise RagMetricsError(f"run names must be unique; got {names}")
    if "mode" in changes and changes["mode"] == "llamaindex" and conventions is None:
        conventions = Conventions.llamaindex()
        changes.pop("mode")
    conventions = (conventions or Conventions()).replace(**changes) if changes else conventions or Conventions()
    if metrics is None:
        metrics = DEFAULT_METRICS
    if isinstance(metrics, str):
        metrics = [metrics]
    # trec_eval's groups and measures at every cut-off, under trec_eval's conventions (LlamaIndex's "recall" is its own)
    expansion = expand_trec_eval_groups(m for m in metrics if not isinstance(m, MetricSpec))
    if (
        expansion.expanded and conventions.mode == "trec"
    ):  # a trec_eval group asked for (-m official), or a measure at every cut-off (-m P)
        metrics = [*expansion.names, *(m for m in metrics if isinstance(m, MetricSpec))]
        if warn and expansion.note():
            warnings.warn(str(expansion.note()), RagMetricsWarning, stacklevel=2)
    if k_max is not None and (not isinstance(k_max, (int, np.integer)) or k_max < 1):
        raise RagMetricsError(f"The 'k_max' parameter must be an int >= 1 or None. Got {k_max!r} instead.")

    results: dict[str, RunResult] = {}
    alignments = [_aligned(data, run, conventions, executor, tokenizer) for run in run_list]
    if alignments:
        specs = list(dict.fromkeys(alignments[0].mode.parse(m) for m in metrics))
        if not specs:
            raise RagMetricsError("no metric to compute; pass metric names such as ['ndcg@10', 'recall@5']")
        if any(s.tokens is not None for s in specs):
            alignments = budgets.shared_tokenizer(alignments)
    else:
        specs = list(dict.fromkeys(parse_metric(m) for m in metrics))
    for alignment in alignments:
        alignment.values(specs)
        results[alignment.name] = RunResult(alignment, tuple(specs))
        if warn:
            conventions = alignment.conventions
            notes = alignment.coverage.notes(conventions.missing, mode=conventions.mode)
            if alignment.health.no_overlap and alignment.dataset.qrels_table.num_rows:  # every value reads 0
                notes.append(alignment.explain_no_overlap("library").removeprefix(f"run {alignment.name!r}: "))
            notes += results[alignment.name].budget_notes  # a budget that hands some queries nothing
            _warn(alignment.name, notes)
    if k_max is None:
        deepest = max([s.k for s in specs if s.k is not None], default=10)
        retrieved = max((r.alignment.depth for r in results.values()), default=0)
        k_max = max(deepest, min(100, max(retrieved, 1)))
    return EvalResult(data, specs, results, int(k_max))


def _aligned(
    dataset: Dataset,
    run: Run | Alignment,
    conventions: Conventions,
    executor: Executor | None,
    tokenizer: TokenizerLike | None,
) -> Alignment:
    if isinstance(run, Run):
        return align(dataset, run, conventions, executor=executor, tokenizer="auto" if tokenizer is None else tokenizer)
    if tokenizer is not None and tokenizer is not run.tokenizer:
        run = run.with_tokenizer(tokenizer)
    if not run.same_source(dataset, conventions):
        raise RagMetricsError(
            f"the alignment of run {run.name!r} was made on another dataset or under other conventions "
            f"({run.conventions}); pass the run itself to align it again"
        )
    return run


def _warn(name: str, notes: list[str]) -> None:
    if notes:
        warnings.warn(f"run {name!r}: " + "; ".join(notes), RagMetricsWarning, stacklevel=3)
