"""``ragmetrics compare`` (deltas, intervals and paired tests against a baseline) and ``ragmetrics check`` (the CI
gate: targets with their intervals, and no significant regression)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import pandas as pd

from ragmetrics.analysis.compare import (
    COMPARISON_FIELDS,
    DEFAULT_FAMILY,
    FAMILIES,
    Comparison,
    adjusted_intervals,
    bounds_text,
    compare_result,
    family_fields,
    family_scope,
    intervals_name,
    json_row,
    no_bound_words,
    percent,
)
from ragmetrics.analysis.evaluate import EvalResult
from ragmetrics.analysis.stats import BOOTSTRAP_MIN_QUERIES, CORRECTIONS, delta_interval_method, family_text
from ragmetrics.analysis.targets import check_targets, resolve_targets
from ragmetrics.analysis.verdicts import (
    SAID,
    interval_disagreement,
    mixed_words,
    refuse_meaningless_counts,
    refuse_too_few_pairs,
    verdict,
)
from ragmetrics.cli.corrected import compare_corrected
from ragmetrics.cli.evaluating import engine_texts, evaluate_runs, refuse_no_overlap_partitioned, report_coverage
from ragmetrics.cli.inputs import read_inputs, refuse_stdin_on, same_file
from ragmetrics.cli.options import (
    Once,
    add_bounds_option,
    add_data_options,
    add_engine_options,
    add_eval_options,
    add_format_option,
    add_metric_option,
    add_ppi_options,
    add_test_options,
    engine_arguments,
    option_value,
    read_bounds_depth,
    resolve_read_defaults,
    wants_ppi,
)
from ragmetrics.cli.output import p_text
from ragmetrics.engine.metrics import better_sign
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Run

if TYPE_CHECKING:
    from ragmetrics.partitioned.paired import PairedRuns


def paired_comparison(
    args: argparse.Namespace,
    result: EvalResult,
    baseline: str,
    runs: Sequence[str],
    depth: int | None,
    family: str = DEFAULT_FAMILY,
) -> Comparison:
    """``runs`` against ``baseline`` under the options' test, correction, alpha, seed and resamples (no segments;
    the bounds when ``--bounds``), corrected over ``family``; a pair of fewer than 2 queries is refused."""
    comparison = compare_result(
        result,
        baseline=baseline,
        runs=list(runs),
        metrics=result.metrics,
        test=option_value(args, "test"),  # check parses them to None when not given
        correction=option_value(args, "correction"),
        alpha=option_value(args, "alpha"),
        seed=option_value(args, "seed"),
        n_resamples=option_value(args, "resamples"),
        segments=(),
        bounds=bool(args.bounds),
        bounds_depth=depth,
        family=family,
    )
    refuse_too_few_pairs(comparison.table)
    return comparison


COMPARED_BY_DEFAULT = "ndcg@10"
"""The metric ``compare`` and ``check`` read when ``-m`` names none."""


def compared_metrics(args: argparse.Namespace) -> list[str]:
    """The metrics ``-m`` names, else :data:`COMPARED_BY_DEFAULT`."""
    return list(args.metric or [COMPARED_BY_DEFAULT])


def compare_partitioned(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``compare --engine duckdb|polars|spark``: each run against the baseline from sums the buckets add up (the paired t
    test, the sign-flip randomization test, Student's t interval of the delta): equal for every engine and
    bucket count, no run's per-query values collected; each run's coverage notes as in process."""
    runs = [args.baseline, *args.run]
    refuse_stdin_on(args.engine, [args.dataset, *runs])
    against_baseline = [(i, 0) for i in range(1, len(runs))]
    among_runs = (
        [(j, i) for i in range(1, len(runs)) for j in range(i + 1, len(runs))] if args.family == "pairs" else []
    )
    paired = merged_pairs(args, runs, against_baseline + among_runs)
    for i in range(1, len(runs)):
        if same_file(runs[i], runs[0]):  # the rows are not read here: a file of the baseline's bytes has its rows
            warn_same_as_baseline(paired.runs[i].name, err)
    found_pairs = paired.statistics
    # by metric, then run: the order of the in-process table (text and JSON alike)
    rows = [
        (paired.runs[i].name, statistics[m], _p_value(args, statistics[m]))
        for m in range(len(found_pairs[0]))  # one statistic per metric, in the order given
        for (i, _), statistics in zip(against_baseline, found_pairs)
    ]
    # --family pairs: the runs against each other too, which the correction covers with the baseline's
    family_p = [p for *_, p in rows] + [
        _p_value(args, found) for statistics in found_pairs[len(against_baseline) :] for found in statistics
    ]
    corrected = CORRECTIONS[args.correction](np.array(family_p, dtype=np.float64))[: len(rows)]
    listed = []
    for (name, found, p), adjusted in zip(rows, corrected):
        fields = asdict(found)
        fields["mean"] = fields.pop("run_mean")
        listed.append(
            {"metric": found.metric, "baseline": paired.runs[0].name, "run": name, **fields}
            | {"p_value": p, "p_value_corrected": float(adjusted)}
        )
    # the interval beside a corrected p-value is corrected the same way, as in process (docs/conventions.md)
    listed = adjusted_intervals(pd.DataFrame(listed), args.correction, args.alpha, len(family_p)).to_dict("records")
    if args.format == "json":
        metrics = len(compared_metrics(args))
        scope = family_scope(args.family, len(runs), metrics)
        shown = {
            "engine": args.engine,
            "test": args.test,
            "comparisons": [json_row({k: row[k] for k in COMPARISON_FIELDS}) for row in listed],
            "family": family_fields(args.correction, len(family_p), scope),
        }
        json.dump(shown, out, ensure_ascii=False, indent=2)
        out.write("\n")
        report_coverage({totals.name: totals for totals in paired.runs.values()}, err)
        return 0
    for row in listed:
        out.write(f"{delta_line(row, args.correction, row['p_value_corrected'] < args.alpha)}  n {row['n']}\n")
        # the merged tests' side is the mean delta's (stats.test_direction)
        out.write(row_notes({**row, "direction": row["delta"]}, args.alpha, args.correction, args.test))
    out.write(
        f"test: {args.test}, merged over the buckets of --engine {args.engine}"
        + (" (resampled by a hash of the query id)" if args.test == "randomization" else "")
        + "; "
        f"* = significant at alpha {args.alpha}, {family(args, len(family_p), len(args.metric or ['ndcg@10']))}; "
        f"{interval_words(args.correction, [row['ci_method_adjusted'] for row in listed], args.alpha)}\n"
    )
    out.write(tokenizer_line({totals.name: paired.tokenizer for totals in paired.runs.values()}))
    report_coverage({totals.name: totals for totals in paired.runs.values()}, err)
    return 0


def tokenizer_line(tokenizers: Mapping[str, str | None]) -> str:
    """What the token budgets (``recall@512tok``) of each run counted with, under a comparison; empty when no
    metric reads a budget (every tokenizer None)."""
    named = {name: tokenizer for name, tokenizer in tokenizers.items() if tokenizer is not None}
    if not named:
        return ""
    distinct = sorted(set(named.values()))
    return f"tokenizer: {distinct[0]}\n" if len(distinct) == 1 else f"tokenizers: {named}\n"


def delta_line(row: Mapping[str, Any], correction: str, significant: bool) -> str:
    """A comparison's line, in process or merged: the two means, the delta with its interval at the level of its
    correction (``ci_*_adjusted``), the p-value and the corrected one, ``*`` when significant."""
    return (
        f"{row['metric']:<14} {row['run']:<24} {row['mean']:.4f} vs {row['baseline_mean']:.4f}  "
        f"delta {row['delta']:+.4f} {percent(row['ci_level_adjusted'])}% "
        f"{bounds_text(row['ci_low_adjusted'], row['ci_high_adjusted'])}  "
        f"{p_text(row['p_value'], row['p_value_corrected'], correction)}{'*' if significant else ' '}"
    )


def _p_value(args: argparse.Namespace, found: Any) -> float:
    return float(found.p_t if args.test == "t" else found.p_randomization)


def merged_pairs(args: argparse.Namespace, runs: list[str], pairs: list[tuple[int, int]]) -> PairedRuns:
    """Each ``(run, baseline)`` of ``pairs`` (indexes into ``runs``, files) through the options' engine, from the
    sums its buckets add up, every run read once (:func:`ragmetrics.partitioned.paired.paired_runs`): one result
    per metric for each pair, and each run's totals."""
    from ragmetrics.partitioned.paired import paired_runs  # noqa: PLC0415 (the partitioned engines load on use: a comparison in this process needs none)

    with engine_texts(args):
        found = paired_runs(
            args.dataset,
            runs,
            pairs,
            compared_metrics(args),
            resamples=args.resamples if args.test == "randomization" else 0,  # the t test and interval need none
            seed=args.seed,
            **engine_arguments(args),
        )
    # refused as the in-process comparison refuses them (:func:`ragmetrics.cli.evaluating.evaluate_runs`)
    for totals in found.runs.values():
        refuse_no_overlap_partitioned(args, totals.name, totals)
    for totals in found.runs.values():
        refuse_meaningless_counts(
            totals.name,
            totals.metrics,
            totals.conventions.mode,
            totals.queries_evaluated,
            totals.no_relevant,
            totals.valued,
            args.rel_level,
            allow_no_relevant=args.allow_no_relevant,
        )
    return found


def cmd_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    args = resolve_read_defaults(args)
    corrected = wants_ppi(args)
    if args.engine != "inprocess":
        return compare_partitioned(args, out, err)
    depth = read_bounds_depth(args.bounds)
    dataset, runs = read_inputs(args, [args.baseline, *args.run])
    if corrected:
        warn_same_rows(runs[1:], runs[0], err)
        report_coverage(compare_corrected(args, dataset, runs, compared_metrics(args), out, err).runs, err)
        return 0
    result = evaluate_runs(args, dataset, runs, compared_metrics(args))
    warn_same_rows(runs[1:], runs[0], err)
    comparison = paired_comparison(args, result, runs[0].name, [r.name for r in runs[1:]], depth, args.family)
    if args.format == "json":
        shown = {"engine": args.engine, "test": args.test, **comparison.to_dict()}
        json.dump(shown, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        for row in comparison.table.itertuples(index=False):
            out.write(
                f"{delta_line(row._asdict(), args.correction, bool(row.significant))}  "
                f"W/T/L {row.wins}/{row.ties}/{row.losses}" + (judged_ends(row) if args.bounds else "") + "\n"
            )
            out.write(row_notes(row._asdict(), comparison.alpha, comparison.correction, comparison.test))
        out.write(
            f"test: {args.test}; * = significant at alpha {args.alpha}, {comparison.family_text}; "
            f"{interval_words(args.correction, comparison.table['ci_method_adjusted'], args.alpha)}\n"
        )
        out.write(tokenizer_line({name: run.tokenizer for name, run in result.runs.items()}))
        if args.test == "bootstrap" and (comparison.table["n"] < BOOTSTRAP_MIN_QUERIES).any():
            out.write(
                f"bootstrap: below {BOOTSTRAP_MIN_QUERIES} queries too few to resample; p is the exact "
                "randomization test's\n"
            )
        if args.bounds:
            where = f" in each run's top {depth}" if depth else ""
            out.write(
                f"if judged: the delta under every way of judging the unjudged documents{where} lies in that "
                "interval; ! = the judgments could flip its sign\n"
            )
    report_coverage(result.runs, err, bounded=bool(args.bounds))
    return 0


def row_notes(row: Mapping[str, Any], alpha: float, correction: str, test: str) -> str:
    """The lines under a comparison's row: a significant test whose side is not the mean delta's
    (:func:`ragmetrics.analysis.verdicts.mixed_words`), an interval that disagrees with the p-value beside it
    (:func:`ragmetrics.analysis.verdicts.interval_disagreement`, the dashboard's words), a constant difference's
    missing interval (:func:`ragmetrics.analysis.compare.adjusted_intervals`); empty when there is nothing to say."""
    notes = []
    if row["run"] != row["baseline"]:
        significant = bool(row["p_value_corrected"] < alpha)
        disagreement = interval_disagreement(
            row["ci_low_adjusted"], row["ci_high_adjusted"], significant, correction, test, row["ci_method_adjusted"]
        )
        if disagreement:
            notes.append(disagreement)
        if np.isnan(row["ci_low_adjusted"]) and not np.isnan(row["delta"]):
            notes.append(no_bound_words(int(row["n"])))
    said = verdict(
        row["run"],
        row["baseline"],
        row["delta"],
        row["p_value_corrected"],
        alpha,
        direction=row["direction"],
        sign=better_sign(row["metric"]),
    )
    if said == "mixed":
        notes.append(mixed_words(test, row["direction"], row["delta"]))
    return "".join(f"  note: {note}\n" for note in notes)


def interval_words(correction: str, methods: Iterable[object], alpha: float = 0.05) -> str:
    """The footer's words for the intervals of :func:`ragmetrics.analysis.compare.adjusted_level` computed by
    ``methods`` (the rows' ``ci_method_adjusted``), named as the dashboard names them
    (:func:`ragmetrics.analysis.compare.intervals_name`, :func:`ragmetrics.analysis.stats.delta_interval_method`;
    docs/conventions.md, Significance)."""
    return f"intervals: {intervals_name(correction, alpha)} ({delta_interval_method(correction, methods)})"


def judged_ends(row: Any) -> str:
    if row.run == row.baseline:
        return f"  if judged [{row.mean_worst:.4f}, {row.mean_best:.4f}]"
    return f"  if judged delta [{row.delta_worst:+.4f}, {row.delta_best:+.4f}]{'!' if row.could_flip else ''}"


def family(args: argparse.Namespace, size: int, metrics: int) -> str:
    """The correction and the family it covers, in words (:func:`ragmetrics.analysis.stats.family_text` and
    :data:`ragmetrics.analysis.compare.FAMILIES`, as the dashboard)."""
    return family_text(args.correction, size, family_scope(args.family, len(args.run) + 1, metrics))


def warn_same_rows(runs: Sequence[Run], baseline: Run, err: TextIO) -> None:
    """:func:`warn_same_as_baseline` of each of ``runs`` whose loaded rows equal the baseline's."""
    for run in runs:
        if run.table.equals(baseline.table):
            warn_same_as_baseline(run.name, err)


def warn_same_as_baseline(name: str, err: TextIO) -> None:
    """The warning of a run that has the same rows as the baseline, in process (equal loaded rows) and on a
    partitioned engine (a file of the baseline's bytes: :func:`ragmetrics.cli.inputs.same_file`)."""
    err.write(f"ragmetrics: warning: run {name!r} has the same rows as the baseline: nothing to compare\n")


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    if not args.targets and not args.baseline:
        raise RagMetricsError(
            "check needs --targets (thresholds to clear), --baseline (no significant regression), or both"
        )
    targets = resolve_targets(args.targets) if args.targets else {}
    dataset, runs = read_inputs(args, [args.run] + ([args.baseline] if args.baseline else []))
    if args.baseline:
        warn_same_rows(runs[:1], runs[1], err)
    gated = list(targets) or compared_metrics(args)
    result = evaluate_runs(args, dataset, runs, list(dict.fromkeys([*gated, *(args.metric or [])])))
    run = runs[0].name
    failures = 0
    depth = read_bounds_depth(args.bounds)
    ends = result.runs[run].mean_bounds(depth) if args.bounds else {}
    checks = check_targets(result.runs[run], targets)
    for check in checks:
        if check.status == "too few":
            raise RagMetricsError(
                f"target {check.metric}: {check.n} query with a value; checking a target's interval needs at least 2"
            )
    targets_out: list[dict[str, Any]] = []
    for check in checks:
        failures += not check.passed
        record: dict[str, Any] = {**asdict(check), "status": check.status, "passed": check.passed}
        lines = [("PASS " if check.passed else "FAIL ") + check.reason()]
        if check.metric in ends:
            worst, best = ends[check.metric]
            open_ = worst <= check.threshold if check.passed else best > check.threshold
            record["if_judged"] = {"worst": worst, "best": best, "could_flip": bool(open_)}
            lines.append(
                f"  if judged: {check.metric} from {worst:.4f} to {best:.4f}"
                + ("; the unjudged documents could flip this check" if open_ else "; no judging flips this check")
            )
        targets_out.append(json_row(record))
        if args.format != "json":
            out.write("\n".join(lines) + "\n")
    regression: dict[str, Any] | None = None
    if args.baseline:
        comparison = paired_comparison(args, result, runs[1].name, [run], depth)
        regression = {"test": comparison.test, **comparison.to_dict()}
        for row, shown in zip(comparison.table.itertuples(index=False), regression["comparisons"]):
            said = verdict(
                row.run, row.baseline, row.delta, row.p_value_corrected, comparison.alpha, direction=row.direction,
                sign=better_sign(row.metric),
            )  # fmt: skip
            failures += SAID[said].fails
            shown.update(verdict=said, passed=not SAID[said].fails)
            if args.format == "json":
                continue
            out.write(
                f"{SAID[said].gate}: {row.metric} {row.mean:.4f} vs baseline {row.baseline_mean:.4f} "
                f"(delta {row.delta:+.4f}, {comparison.adjusted_interval_name(row.ci_level_adjusted)} "
                f"{bounds_text(row.ci_low_adjusted, row.ci_high_adjusted)}, "
                f"p={row.p_value_corrected:.4g} {comparison.family_text}, {comparison.test})"
                + (judged_ends(row) if args.bounds else "")
                + "\n"
            )
            out.write(row_notes(row._asdict(), comparison.alpha, comparison.correction, comparison.test))
    if args.format == "json":
        payload = {"run": run, "passed": not failures, "failures": failures, "targets": targets_out}
        json.dump({**payload, "regression": regression}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        out.write(f"{'FAILED' if failures else 'OK'}: {failures} check(s) failed\n")
    report_coverage(result.runs, err, bounded=bool(args.bounds))  # a gate passed or failed on ids that do not meet
    return 1 if failures else 0


def compare_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    p.add_argument("--baseline", required=True, help="the baseline run file")
    p.add_argument("--run", action="append", required=True, help="a run file to compare; repeatable")
    add_metric_option(p, f"metric; default {COMPARED_BY_DEFAULT}")
    add_eval_options(p)
    add_bounds_option(p, "each delta's worst and best (and the run's mean's), with a mark where its sign could flip")
    add_test_options(p, defaults=False)  # with the label files --resamples is not read, --seed only beside --plan
    p.add_argument(
        "--family",
        choices=list(FAMILIES),
        default=DEFAULT_FAMILY,
        help="what the correction covers: pairs = every pair of the runs (baseline included) x every metric, so a "
        "pair's corrected p-value does not depend on which run is the baseline, as on every dashboard page "
        "(default); baseline = each run against the baseline x every metric",
    )
    add_format_option(p, "json")
    add_ppi_options(p)
    add_engine_options(p, per_query_out=False)
    p.set_defaults(handler=cmd_compare)


def check_parser(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    p.add_argument(
        "--run",
        required=True,
        action=Once,
        why="check gates one run (run check once per run, or compare several with ragmetrics compare)",
        help="the run to check (one)",
    )
    p.add_argument(
        "--baseline",
        action=Once,
        why="check gates one run against one baseline",
        help="a baseline run: a significant regression fails the check",
    )
    p.add_argument(
        "--targets",
        action=Once,
        why="give every threshold in one list, e.g. 'ndcg@10>0.6,recall@5>0.9'",
        help="thresholds: faq, tech, legal, overview, 'ndcg@10>0.6,recall@5>0.9', or a JSON file {metric: threshold}",
    )
    add_metric_option(
        p, f"metric the regression gate compares, beside the targets' metrics (with neither: {COMPARED_BY_DEFAULT})"
    )
    add_eval_options(p)
    add_bounds_option(p, "each target's mean's and each delta's worst and best, and whether they could flip a check")
    add_test_options(p, defaults=False)  # read with --baseline only
    add_format_option(p, "json", help_text="table or json (default table); the exit code is the gate's either way")
    p.set_defaults(handler=cmd_check)
