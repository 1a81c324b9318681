"""``eval`` and ``compare`` with ``--judge-qrels J --human-qrels H``: the means and deltas corrected by a human
sample (prediction-powered inference, :mod:`ragmetrics.analysis.ppi`), beside the judge-only and human-only ones.

The dataset's judgments are what is known; J, a judge's labels, fills the pairs they leave unjudged; H, the human
labels of a random sample of queries, is added to them (winning where it differs). The queries H names are the
human-labelled sample."""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Callable
from typing import Any, TextIO

import pandas as pd

from ragmetrics.analysis import ppi
from ragmetrics.analysis.compare import (
    bounds_text,
    interval_at_level,
    intervals_name,
    mean_bounds_text,
    untested_shown,
)
from ragmetrics.analysis.evaluate import EvalResult
from ragmetrics.analysis.judging import (
    Labelled,
    judged_by_the_judge_alone,
    judged_by_the_judge_alone_words,
    labelled_in_part,
    labels_retrieved,
    with_labels,
)
from ragmetrics.analysis.stats import delta_interval_method, family_text
from ragmetrics.analysis.verdicts import SAID
from ragmetrics.cli.evaluating import evaluate_runs
from ragmetrics.cli.inputs import judges_of, labels_source, refuse_above_scale
from ragmetrics.cli.options import LAMBDAS, option_value
from ragmetrics.cli.output import p_text
from ragmetrics.cli.pools import check_label_column, refuse_labels_of_another_dataset
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.foundation.numbers import signed
from ragmetrics.io import load_dataset
from ragmetrics.io.source import names_of
from ragmetrics.judges.base import max_grade


def _judge_labels(args: argparse.Namespace, dataset: Dataset, runs: list[Run], source: Any) -> Dataset:
    """The judge's labels (``--judge-qrels``, read from ``source``), refused when they label none of the queries
    of the dataset or of the runs (the judge labels the queries the dataset does not judge: of either)."""
    judge_labels = load_dataset(source)
    ranked = {str(q) for run in runs for q in run.table.column("query_id").unique().to_pylist()}
    known = set(dataset.queries_table.column("query_id").to_pylist())
    refuse_labels_of_another_dataset(args.judge_qrels, judge_labels, known | ranked, "the dataset or the runs")
    return judge_labels


def evaluate_labelled(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: list[str]
) -> tuple[EvalResult, EvalResult, Labelled]:
    """The runs evaluated under the judge's labels and under the human labels."""
    human_source, judge_source = labels_source(args.human_qrels), labels_source(args.judge_qrels)  # each read once
    check_label_column(human_source, args.human_qrels)
    check_label_column(judge_source, args.judge_qrels)
    judges = judges_of(human_source)
    if judges:
        raise RagMetricsError(f"{args.human_qrels}: --human-qrels holds a judge's labels ({', '.join(judges)}), "
                              "not people's; give them as --judge-qrels")  # fmt: skip
    judge_labels, human_labels = _judge_labels(args, dataset, runs, judge_source), load_dataset(human_source)
    # people label a sample of the queries the dataset and the judge's labels judge
    known = set(dataset.queries_table.column("query_id").to_pylist())
    judged = known | set(judge_labels.qrels_table.column("query_id").to_pylist())
    refuse_labels_of_another_dataset(args.human_qrels, human_labels, judged, "the dataset or the judge's labels")
    top = max(max_grade(dataset), max_grade(judge_labels))
    if dataset.qrels_table.num_rows and max_grade(judge_labels) > max_grade(dataset):
        warnings.warn(
            f"{args.judge_qrels}: the judge's grades reach {max_grade(judge_labels)}, the dataset's "
            f"{max_grade(dataset)}: a graded metric's gains (ndcg) mix two scales; judge on the dataset's scale "
            f"(judge run --max-grade {max_grade(dataset)}) to keep one",
            RagMetricsWarning,
            stacklevel=1,
        )
    refuse_above_scale(args.human_qrels, human_labels.qrels, "relevance", top, "the dataset's and the judge's labels")
    labelled = with_labels(dataset, judge_labels, human_labels)
    population = set(labelled.judge.queries_table.column("query_id").to_pylist())
    _judged_by_the_judge_alone(args, dataset, labelled)
    in_part = labelled_in_part(dataset, judge_labels.qrels, human_labels)
    if in_part:
        pairs = sum(in_part.values())
        warnings.warn(
            f"{args.human_qrels} labels {len(in_part)} sampled quer{'ies' if len(in_part) != 1 else 'y'} in part "
            f"{names_of(list(in_part), 5)}: {pairs} pair(s) the judge labels have no human label, and the human "
            "values count them non-relevant, which biases the correction; label every pair the judge labels in a "
            "sampled query (0 where it is not relevant)",
            RagMetricsWarning,
            stacklevel=1,
        )
    outside = [q for q in labelled.queries if q not in population]
    if outside:
        many = len(outside) != 1
        warnings.warn(
            f"{args.human_qrels} labels {len(outside)} quer{'ies' if many else 'y'} that neither the dataset nor "
            f"the judge's labels have {names_of(outside, 5)}: left out of the human sample (a sampled query left "
            "out makes the sample no longer random); check the query ids",
            RagMetricsWarning,
            stacklevel=1,
        )
    if args.strata and args.strata not in dataset.queries_table.column_names:
        raise RagMetricsError(f"--strata {args.strata}: the dataset's queries have no such column")
    if args.strata and not any(
        v is not None and str(v).strip() for v in dataset.queries_table.column(args.strata).to_pylist()
    ):
        raise RagMetricsError(
            f"--strata {args.strata}: no query of the dataset has a {args.strata} (qrels carry none: give an "
            "evaluation set that has them)"
        )
    judge = evaluate_runs(args, labelled.judge, runs, metrics, given=False)  # the pool's labels judge what it ranks
    human = evaluate_runs(args, labelled.human, runs, metrics, given=False)
    _labels_meet_the_runs(args, args.judge_qrels, judge_labels, judge)
    _labels_meet_the_runs(args, args.human_qrels, human_labels, human)
    return judge, human, labelled


def _labels_meet_the_runs(args: argparse.Namespace, path: str, labels: Dataset, result: EvalResult) -> None:
    """Refuse a run none of whose retrieved documents (read as it is evaluated) the labels in ``path`` label: the
    corrected numbers would rest on labels of nothing the run ranks (ids of another level or scheme); with
    ``--allow-no-overlap`` a warning, the numbers computed all the same."""
    pairs = labels.qrels_table.num_rows
    for name, run in result.runs.items():
        met, fix = labels_retrieved(run.alignment, labels)
        if met or not pairs:
            continue
        cause = f" (read against these labels alone: {fix.cause})" if fix is not None else ""
        said = (
            f"{path}: 0 of its {pairs} labelled (query, document) pairs are documents run {name!r} retrieved, its "
            f"ids read as it is evaluated{cause}: the corrected numbers would rest on labels of nothing it ranks; "
            "label the ids the run is evaluated at (a chunk run against document-level labels, or the reverse, meets "
            "none)"
        )
        if not getattr(args, "allow_no_overlap", False):
            raise RagMetricsError(f"{said}; --allow-no-overlap computes them anyway")
        warnings.warn(said, RagMetricsWarning, stacklevel=1)


def _judged_by_the_judge_alone(args: argparse.Namespace, dataset: Dataset, labelled: Labelled) -> None:
    """Warn of the queries the dataset does not judge that the judge's labels bring in with nothing relevant: the
    corrected means count them, where plain ``eval`` leaves a query without judgments out (a negative query, one
    with no answer in the corpus, belongs out of the pool)."""
    empty = judged_by_the_judge_alone(dataset, labelled.judge.qrels, people=labelled.queries)
    if empty:
        warnings.warn(f"{args.judge_qrels}: {judged_by_the_judge_alone_words(empty)}", RagMetricsWarning, stacklevel=1)


def _options(args: argparse.Namespace, result: EvalResult) -> dict[str, Any]:
    options: dict[str, Any] = {
        "lam": LAMBDAS[option_value(args, "ppi_lambda")],
        "population": option_value(args, "ppi_target"),
    }
    if args.strata:
        ids = result.dataset.query_ids
        options["strata"] = dict(zip(ids.astype(str), result.dataset.facet(args.strata, ids)))
    return options


def _plan(args: argparse.Namespace, result: EvalResult, labelled: Labelled) -> dict[str, Any] | None:
    """``--plan K``: the next K queries to label (a seeded random sample of the unlabelled, within the strata) and
    how many are unlabelled; None without it."""
    if not args.plan:
        return None
    ids = next(iter(result.runs.values())).query_ids
    strata = result.dataset.facet(args.strata, ids) if args.strata else None
    plan = ppi.sample_plan(ids, args.plan, seed=option_value(args, "seed"), strata=strata, labelled=labelled.queries)
    done = set(labelled.queries)
    return {"queries": [str(q) for q in plan], "unlabelled": sum(str(q) not in done for q in ids)}


def _write_plan(plan: dict[str, Any] | None, out: TextIO) -> None:
    if plan is not None:
        out.write(f"label next ({len(plan['queries'])} of the {plan['unlabelled']} unlabelled): "
                  f"{' '.join(plan['queries'])}\n")  # fmt: skip


def _estimated(
    compute: Callable[[], pd.DataFrame], plan: dict[str, Any] | None, json_key: str | None, out: TextIO
) -> pd.DataFrame:
    """``compute()``; when it refuses (too few labelled queries, say), the plan is still written first (in the JSON
    under ``json_key`` when the output is JSON): it is what says which queries to label next."""
    try:
        return compute()
    except RagMetricsError:
        if json_key is not None and plan is not None:
            _json(pd.DataFrame(), json_key, out, plan)
        else:
            _write_plan(plan, out)
        raise


def _interval(value: float, low: float, high: float, difference: bool = False) -> str:
    """An estimate and its interval as ``eval`` and ``compare`` print every other: a mean's
    (:func:`ragmetrics.analysis.compare.mean_bounds_text`), a difference's signed (:func:`bounds_text`); an
    interval with a missing end reads ``[no interval]`` either way."""
    if not difference:
        return f"{value:.4f} {mean_bounds_text(low, high)}"
    return f"{signed(value, 4)} {bounds_text(low, high, none='[no interval]')}"


def _footer(args: argparse.Namespace, frame: pd.DataFrame, out: TextIO, intervals: str = "95% intervals") -> None:
    """The sample's line: the rows' most labelled and most scored queries (a run without values on some queries
    scores fewer, an exact row of a comparison among them)."""
    labelled, queries = int(frame["n_labelled"].max()), int(frame["n_queries"].max())
    who = (
        f"all {queries} queries human-labelled (the judge's labels add nothing)"
        if labelled == queries
        else f"{labelled} of {queries} queries human-labelled, the rest the judge's"
    )
    strata = f"; stratified by {args.strata}" if args.strata else ""
    out.write(
        f"{who}; {intervals} for {ppi.POPULATIONS[option_value(args, 'ppi_target')]}, within the metric's range; "
        f"lambda {option_value(args, 'ppi_lambda')}{strata}; {ppi.JUDGE_ONLY_WORDS}\n"
    )


def _unreadable(args: argparse.Namespace, frame: pd.DataFrame, err: TextIO, paired: bool = False) -> None:
    """The notes when intervals (of means, or ``paired`` differences) cannot be read yet, each once
    (:func:`ppi.unreadable_rows`)."""
    for _kind, words in ppi.unreadable_rows(frame, population=option_value(args, "ppi_target"), paired=paired):
        err.write(f"ragmetrics: note: {words}; label more (--plan)\n")


def _shrinks(ci_low: float, ci_high: float, more: int, projected: float) -> str:
    """ "with N more labelled: about +-x", unless nothing is left to label or the interval has no width to shrink."""
    return f"  with {more} more labelled: about +-{projected:.4f}" if more and ci_high - ci_low > 1e-12 else ""


def _json(frame: pd.DataFrame, key: str, out: TextIO, plan: dict[str, Any] | None = None) -> None:
    """``{key: [row, ...]}`` (NaN as null), with ``label_next`` (``--plan``'s queries) when planned."""
    rows = [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in frame.to_dict("records")
    ]
    json.dump({key: rows, **({"label_next": plan} if plan is not None else {})}, out, ensure_ascii=False, indent=2)
    out.write("\n")


def eval_first_plan(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: list[str], out: TextIO
) -> EvalResult:
    """``eval --judge-qrels --plan K`` before any human label: the first K queries to label (the sample the
    corrected estimates will read, seeded, within the strata), of the queries the dataset and the judge's labels
    judge; returns the judge's result (for the coverage notes)."""
    judge_source = labels_source(args.judge_qrels)
    check_label_column(judge_source, args.judge_qrels)
    judge_labels = _judge_labels(args, dataset, runs, judge_source)
    labelled = with_labels(dataset, judge_labels, Dataset.from_dict({}, name="no human labels yet"))
    judge = evaluate_runs(args, labelled.judge, runs, metrics, given=False)
    plan = _plan(args, judge, labelled)
    if args.format == "json":
        json.dump({"label_next": plan}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        _write_plan(plan, out)
        out.write(
            "label these queries' retrieved documents (query_id, doc_id, label; 0 for a query with nothing relevant), "
            "then give them as --human-qrels: the corrected estimates read them in this order (docs/ppi.md)\n"
        )
    return judge


def eval_corrected(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: list[str], out: TextIO, err: TextIO
) -> EvalResult:
    """``eval --judge-qrels --human-qrels``: each run's and metric's corrected mean; returns the judge's result
    (for the coverage notes)."""
    judge, human, labelled = evaluate_labelled(args, dataset, runs, metrics)
    plan = _plan(args, judge, labelled)
    frame = _estimated(
        lambda: ppi.corrected_means(judge.runs, human.runs, labelled.queries, **_options(args, judge)),
        plan,
        "corrected" if args.format == "json" else None,
        out,
    )
    _unreadable(args, frame, err)
    shown = untested_shown(frame)
    if args.format == "json":
        _json(shown, "corrected", out, plan)
    elif args.format == "csv":
        out.write(shown.to_csv(index=False))
    else:
        for r in shown.itertuples(index=False):
            if r.too_few:
                corrected = f"{r.estimate:.4f} no interval (too few to tell)?"
            elif r.exact:  # the mean over exactly these queries, all human-labelled: no sampling error (as compare)
                corrected = f"{r.estimate:.4f} exact"
            elif r.no_spread:  # its width 0 measures nothing: no interval, as a corrected delta's
                corrected = f"{r.estimate:.4f} no interval (width 0: the labelled queries score alike)"
            else:
                corrected = _interval(r.estimate, r.ci_low, r.ci_high)
            # beside a sample's estimate, an interval of width 0 (a stratified one that scored alike) measures
            # nothing: none is printed; an exact mean's is its point
            judge_low, judge_high, human_low, human_high = (
                (r.judge_low, r.judge_high, r.human_low, r.human_high)
                if r.exact
                else (*ppi.sample_ends(r.judge_low, r.judge_high), *ppi.sample_ends(r.human_low, r.human_high))
            )
            out.write(
                f"{r.metric:<14} {r.run:<24} corrected {corrected}  "
                f"judge-only {_interval(r.judge, judge_low, judge_high)}  "
                f"human-only {_interval(r.human, human_low, human_high)}  lambda {r.lam:.2f}"
                + ("" if r.too_few or r.no_spread else _shrinks(r.ci_low, r.ci_high, r.more, r.projected))
                + "\n"
            )
        _footer(args, frame, out)
        if frame["too_few"].any():
            out.write(f"? = {ppi.TOO_FEW_WORDS}\n")
        _write_plan(plan, out)
    return judge


def compare_corrected(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: list[str], out: TextIO, err: TextIO
) -> EvalResult:
    """``compare --judge-qrels --human-qrels``: each run's corrected delta against the baseline (the first run),
    its p-value corrected over every run x metric as ``compare``'s are."""
    judge, human, labelled = evaluate_labelled(args, dataset, runs, metrics)
    plan = _plan(args, judge, labelled)
    frame = _estimated(
        lambda: ppi.corrected_comparison(
            judge.runs,
            human.runs,
            labelled.queries,
            baseline=runs[0].name,
            correction=args.correction,
            alpha=args.alpha,
            family=args.family,
            **_options(args, judge),
        ),
        plan,
        "comparisons" if args.format == "json" else None,
        out,
    )
    _unreadable(args, frame, err, paired=True)
    # only beside an interval shown: an exact delta has none, nor has a too-few one
    counts = frame.loc[~frame["exact"] & ~frame["too_few"], "n_labelled"].tolist() if len(frame) else []
    tuned = ppi.tuned_lambda_note(min(counts), LAMBDAS[option_value(args, "ppi_lambda")]) if counts else None
    if tuned is not None:
        err.write(f"ragmetrics: note: {tuned}\n")
    if args.format == "json":
        _json(untested_shown(frame), "comparisons", out, plan)
        return judge
    for r in frame.itertuples(index=False):
        mark = "*" if r.significant else ("?" if r.too_few or r.no_spread else " ")
        interval = (
            f"{interval_at_level(args.correction, r.ci_level_adjusted, r.ci_method_adjusted)} "
            f"{bounds_text(r.ci_low_adjusted, r.ci_high_adjusted)}"
        )
        if r.exact:
            p = SAID[r.verdict].term
        elif r.too_few:
            interval, p = "no interval", "p=n/a (too few to tell)"
        elif r.no_spread:  # its width 0 measures nothing: shown as no interval, as a too-few row's
            interval, p = "no interval (width 0)", "p=n/a (cannot tell)"
        else:
            p = p_text(r.p_value, r.p_value_corrected, args.correction)
        out.write(
            f"{r.metric:<14} {r.run:<24} vs {r.baseline}: corrected delta {r.delta:+.4f} {interval}  {p}{mark}  "
            f"judge-only {_interval(r.judge_delta, r.judge_low_adjusted, r.judge_high_adjusted, True)}  "
            f"human-only {_interval(r.human_delta, r.human_low_adjusted, r.human_high_adjusted, True)}\n"
        )
    _footer(args, frame, out, "intervals (the last line says at which level)")
    scope = str(frame["family_covers"].iloc[0])
    size = int(frame["family_size"].iloc[0])
    tested = (
        f"p: the t test of the corrected delta; * = significant at alpha {args.alpha}, "
        f"{family_text(args.correction, size, scope)}"
        if size
        else "p: none, every delta is exact"
    )
    sampled = frame.loc[~frame["exact"], "ci_method_adjusted"]
    intervals = []
    if len(sampled):
        intervals.append(
            f"{intervals_name(args.correction, args.alpha)} ({delta_interval_method(args.correction, sampled)})"
        )
    if frame["exact"].any():
        intervals.append(delta_interval_method(args.correction, ["exact"]))
    out.write(
        f"{tested}; intervals: {'; '.join(intervals)}"
        + (f"; ? = {ppi.TOO_FEW_WORDS}" if frame["too_few"].any() else "")
        + (
            "; ? = cannot tell: an interval of width 0 (the labelled queries' human-minus-judge differences all "
            "alike) measures nothing, so it has no p-value and no verdict"
            if frame["no_spread"].any()
            else ""
        )
        + (
            "; exact: every query the pair scores human-labelled, so the delta is these queries' own (no sampling "
            "error: nothing to test, and out of the correction's family)"
            if frame["exact"].any()
            else ""
        )
        + "\n"
    )
    _write_plan(plan, out)
    return judge
