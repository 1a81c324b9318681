"""The ``ragmetrics`` command line: a thin shell over the library, fit for CI.

Exit codes: 0 success, 1 a check failed (``check``, or ``diagnose --fail-on-error``), 2 bad input or usage.
Errors go to stderr as one line naming the file and line; never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ragmetrics.engine.conventions import CHOICES
from ragmetrics.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.evaluate import DEFAULT_METRICS, EvalResult, RunResult, evaluate
from ragmetrics.metrics import known_metric_names
from ragmetrics.model import Dataset, Run
from ragmetrics.partitioned.engine import ENGINES
from ragmetrics.redact import redact_urls

if TYPE_CHECKING:
    from ragmetrics.partitioned import PartitionedResult

if TYPE_CHECKING:
    from ragmetrics.store import Store


def _whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {minimum}, found {value}")
        return value

    return parse


def _probability(text: str) -> float:
    """An argparse type: a significance level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (e.g. 0.05), found {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1 (e.g. 0.05), found {text!r}")
    return value


def _weights(text: str) -> list[float]:
    """An argparse type: comma-separated finite weights, none negative, at least one positive."""
    import math

    weights = []
    for part in text.split(","):
        try:
            weight = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers (e.g. 1,0.5), found {part!r}") from None
        if not math.isfinite(weight) or weight < 0:
            raise argparse.ArgumentTypeError(f"expected finite weights of 0 or more, found {part!r}")
        weights.append(weight)
    if not any(weights):
        raise argparse.ArgumentTypeError(f"expected at least one weight above 0, found {text!r}")
    return weights


INPUT_OPTIONS = ("dataset", "run", "runs", "baseline", "labels", "queries", "corpus", "chunk_mapping", "targets")
"""The options that name files a command reads (a command writes none of them)."""


def _output_path(args: argparse.Namespace, path: str, option: str) -> str:
    """``path``, a file the command is about to write for ``option``, once it is sure that its folder exists and
    that it is none of the files the command reads (writing it would destroy that input)."""
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise RagMetricsError(f"{option} {path}: the folder {folder} does not exist")
    if not os.path.exists(path):
        return path
    for name in INPUT_OPTIONS:
        value = getattr(args, name, None)
        for given in value if isinstance(value, list) else [value]:
            if isinstance(given, str) and given and os.path.exists(given) and os.path.samefile(given, path):
                raise RagMetricsError(
                    f"{option} {path}: is also read as --{name.replace('_', '-')}; writing it would destroy that "
                    "input: give another path"
                )
    return path


@contextlib.contextmanager
def _replacing(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` (same suffixes) to write to; it replaces ``path`` only once written whole,
    so a failure (a full disk) leaves what was there before. A path that is not a regular file (a pipe, a device)
    is written directly."""
    target = Path(path)
    if target.exists() and not target.is_file():
        yield path
        return
    import tempfile

    # made by this process alone (O_EXCL, a name no one can guess): a file or link planted beside the target is
    # never written through; the name keeps the target's suffixes, which say the format
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=".partial-", suffix=f"-{target.name}")
    os.close(handle)
    temporary = Path(name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as a new file would be, not mkstemp's 0600
        yield str(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _looks_like(path: str, kind: str) -> bool:
    """True when ``path`` sniffs as a ``kind`` ("run" or "dataset") file (for the "did you swap them?" hint)."""
    from ragmetrics.io._source import open_source
    from ragmetrics.io.formats import formats_of

    try:
        source = open_source(path)
        return any(f.name in ("trec", "jsonl", "evalset") and f.sniff(source) for f in formats_of(kind))
    except (RagMetricsError, OSError):
        return False


def _load_dataset(args: argparse.Namespace) -> Dataset:
    from ragmetrics.io import load_dataset

    try:
        return load_dataset(
            args.dataset,
            queries=getattr(args, "queries", None),
            corpus=getattr(args, "corpus", None),
            corpus_size=getattr(args, "corpus_size", None),
        )
    except RagMetricsError as exc:
        if _looks_like(args.dataset, "run"):
            raise RagMetricsError(
                f"{exc} ({args.dataset} looks like a run: did you swap --dataset and --run?)"
            ) from None
        raise


PARALLEL_LOAD_BYTES = 8 << 20
"""Below this many bytes of input files, reading them one after the other is quicker than starting a thread."""


def _total_size(paths: Sequence[str]) -> int:
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))


def _load_inputs(args: argparse.Namespace, paths: Sequence[str]) -> tuple[Dataset, list[Run]]:
    """The dataset and the runs; the dataset is read on another thread while the runs are (file reads and the
    parsers release the GIL), an error in either reported as it would be alone."""
    from concurrent.futures import ThreadPoolExecutor

    if _total_size([args.dataset, *paths]) < PARALLEL_LOAD_BYTES:
        return _load_dataset(args), _load_runs(paths, args)
    with ThreadPoolExecutor(1) as pool:
        dataset = pool.submit(_load_dataset, args)
        try:
            runs = _load_runs(paths, args)
        except BaseException:
            dataset.result()  # the dataset's error, when it has one, is the first to report
            raise
        return dataset.result(), runs


def _load_runs(paths: Sequence[str], args: argparse.Namespace) -> list[Run]:
    from ragmetrics.io import load_run

    runs: list[Run] = []
    seen: dict[str, int] = {}
    for path in paths:
        try:
            run = load_run(
                path,
                chunk_mapping=getattr(args, "chunk_mapping", None),
                chunk_pattern=getattr(args, "chunk_pattern", None),
            )
        except RagMetricsError as exc:
            if _looks_like(path, "dataset") and not _looks_like(path, "run"):
                raise RagMetricsError(f"{exc} ({path} looks like qrels: did you swap --dataset and --run?)") from None
            raise
        count = seen.get(run.name, 0)
        seen[run.name] = count + 1
        if count:
            run = run.with_name(f"{run.name}-{count + 1}")
        runs.append(run)
    return runs


def _format_table(
    result: EvalResult | PartitionedResult, per_query: bool, bounds: bool, bounds_depth: int | None, out: TextIO
) -> None:
    """trec_eval's layout: ``measure<TAB>query<TAB>value``, 'all' for the mean; ``bounds``: the mean's two ends
    as ``measure:worst`` and ``measure:best``."""
    for name, run in result.runs.items():
        out.write(f"{'runid':<22}\tall\t{name}\n")
        out.write(f"{'num_q':<22}\tall\t{run.coverage.queries_evaluated}\n")
        if per_query:
            arrays = run.arrays
            assert run.query_ids is not None  # --per-query and --per-query-out are refused together
            for i, qid in enumerate(run.query_ids):
                for metric in run.metrics:
                    out.write(f"{metric:<22}\t{qid}\t{arrays[metric][i]:.4f}\n")
        ends = run.mean_bounds(bounds_depth) if bounds and isinstance(run, RunResult) else {}
        for metric, value in run.means.items():
            out.write(f"{metric:<22}\tall\t{value:.4f}\n")
            if metric in ends:
                out.write(f"{metric + ':worst':<22}\tall\t{ends[metric][0]:.4f}\n")
                out.write(f"{metric + ':best':<22}\tall\t{ends[metric][1]:.4f}\n")


def _wide(result: EvalResult | PartitionedResult, per_query: bool, bounds: bool, bounds_depth: int | None = None):
    import pandas as pd

    parts = []
    for name, run in result.runs.items():
        if per_query:
            frame = run.values.reset_index()
            frame.insert(0, "run", name)
            parts.append(frame)
        rows = {"all": run.means}
        if bounds and isinstance(run, RunResult):
            ends = run.mean_bounds(bounds_depth)
            rows.update({end: {m: ends[m][i] for m in ends} for i, end in enumerate(("worst", "best"))})
        mean = pd.DataFrame(list(rows.values()))
        mean.insert(0, "query_id", list(rows))
        mean.insert(0, "run", name)
        parts.append(mean)
    return pd.concat(parts, ignore_index=True)


def _emit(
    result: EvalResult | PartitionedResult, fmt: str, per_query: bool, out: TextIO, bounds: str | None = None
) -> None:
    """``bounds`` (``--bounds``; in-process results only): each mean's two ends over the unjudged documents too."""
    depth = _bounds_depth(bounds)
    if fmt == "json":
        import json

        data = (
            result.to_dict(per_query=per_query, bounds=True, bounds_depth=depth)
            if bounds and isinstance(result, EvalResult)
            else result.to_dict(per_query=per_query)
        )
        json.dump(data, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif fmt == "csv":
        from ragmetrics.export import to_safe_csv

        out.write(str(to_safe_csv(_wide(result, per_query, bool(bounds), depth), encoding=None)))  # float64-exact
    elif fmt == "markdown":
        from ragmetrics.export import markdown_table

        frame = _wide(result, per_query, bool(bounds), depth)
        out.write(markdown_table(frame if per_query or bounds else frame.drop(columns="query_id")))
    else:
        _format_table(result, per_query, bool(bounds), depth, out)


JUDGED_NOTE_BELOW = 0.5
"""A note says how much of the top 10 is judged when less than this is."""


def _report_coverage(result: EvalResult | PartitionedResult, err: TextIO) -> None:
    for name, run in result.runs.items():
        notes = run.coverage.notes(run.conventions.missing)
        state = run.health
        if state.queries_ranked and state.judged_of_ranked < JUDGED_NOTE_BELOW:
            short = abs(state.judged_of_ranked - state.judged_at_10) > 0.005  # some queries rank fewer than 10
            share = (
                f", and {state.judged_of_ranked:.0%} of what it ranks in its top 10 is judged: most of it"
                if short
                else ": most of the top 10"
            )
            notes.append(
                f"judged@10 = {state.judged_at_10:.2f}{share} is unjudged (scored as {run.conventions.unjudged}; "
                "eval --bounds gives the worst and best case)"
            )
        if notes:
            err.write(f"ragmetrics: note: run {name!r}: " + "; ".join(notes) + "\n")


def _evaluate(args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: Sequence[str]) -> EvalResult:
    """:func:`ragmetrics.evaluate` under the conventions the options give; the coverage notes are printed by
    :func:`_report_coverage`, not warned. A large run is aligned on two threads."""
    from concurrent.futures import ThreadPoolExecutor

    changes = {"missing": args.missing, "rel_level": args.rel_level, "level": args.level, "unjudged": args.unjudged}
    if getattr(args, "mode", "trec") == "llamaindex":
        changes["mode"] = "llamaindex"
    if dataset.qrels_table.num_rows == 0:
        raise RagMetricsError(
            f"dataset {dataset.name!r} judges no document (its queries have no relevant_docs or qrels): there is "
            "nothing to score a run against"
        )
    with warnings.catch_warnings(), ThreadPoolExecutor(1) as pool:
        warnings.simplefilter("ignore", RagMetricsWarning)
        result = evaluate(dataset, runs, metrics, executor=pool, **changes)
    if not args.allow_no_overlap:
        for run in result.runs.values():
            if run.alignment.health.no_overlap:
                raise RagMetricsError(run.alignment.explain_no_overlap())
    _refuse_meaningless(result, args.rel_level)
    for name, run in result.runs.items():
        ranking = run.alignment.ranking
        if len(ranking.judged) and ranking.judged.all() and len(ranking.judged) == dataset.qrels_table.num_rows:
            warnings.warn(
                f"run {name!r} ranks exactly the judged documents, each once: is it the qrels given as a run "
                "(did you swap --dataset and --run)?",
                RagMetricsWarning,
                stacklevel=2,
            )
    return result


def _refuse_meaningless(result: EvalResult, rel_level: int) -> None:
    """Numbers that cannot mean anything are errors: qrels that judge nothing relevant, or a metric that no query
    has a value of (it needs data the dataset does not hold)."""
    import numpy as np

    for name, run in result.runs.items():
        coverage = run.alignment.coverage
        if coverage.queries_evaluated and len(coverage.no_relevant) >= coverage.queries_evaluated:
            raise RagMetricsError(
                f"the qrels judge no document relevant (label >= {rel_level}, --rel-level) for any evaluated query: "
                "recall, precision and AP would be 0 for every run; check --rel-level and the qrels' labels"
            )
        for metric in run.metrics:  # the alignment's arrays: reading ``run.values`` would import pandas
            values = run.alignment.value(metric)
            if len(values) and np.isnan(values).all():
                raise RagMetricsError(
                    f"{metric}: run {name!r} has no value for any query: the metric needs what this dataset does "
                    "not hold (expected answers, keywords, text or a corpus size), or every query was skipped"
                )


def _per_query_paths(path: str | None, names: Sequence[str]) -> list[str | None]:
    """``--per-query-out``: the path for one run; for several, the run's name before the extension."""
    if path is None:
        return [None] * len(names)
    if len(names) == 1:
        return [path]
    stem, dot, suffix = path.rpartition(".")
    return [f"{stem}.{name}.{suffix}" if dot else f"{path}.{name}" for name in names]


def _eval_partitioned(args: argparse.Namespace, metrics: Sequence[str]) -> PartitionedResult:
    """``eval --engine duckdb|spark``: the inputs read by the engine, bucket by bucket."""
    from ragmetrics.engine import Conventions
    from ragmetrics.partitioned import evaluate_files, run_name

    options = ("queries", "corpus", "chunk_mapping", "bounds")
    refused = [f"--{o.replace('_', '-')}" for o in options if getattr(args, o, None)]
    if refused:
        raise RagMetricsError(
            f"{', '.join(refused)}: not with --engine {args.engine} (it reads qrels and runs only; "
            "--corpus-size and --chunk-pattern are read); use --engine inprocess"
        )
    conventions = Conventions.llamaindex() if args.mode == "llamaindex" else Conventions()
    conventions = conventions.replace(
        missing=args.missing, rel_level=args.rel_level, level=args.level, unjudged=args.unjudged
    )
    names = [run_name(p) for p in args.run]
    result = evaluate_files(
        args.dataset,
        args.run,
        metrics,
        engine=args.engine,
        conventions=conventions,
        buckets=args.buckets,
        memory_limit=args.memory_limit,
        work_dir=args.work_dir,
        spark_master=args.spark_master,
        per_query_out=_per_query_paths(args.per_query_out, names),
        corpus_size=args.corpus_size,
        chunk_pattern=args.chunk_pattern,
    )
    if not args.allow_no_overlap:
        for name, run in result.runs.items():
            state = run.health
            if state.no_overlap:
                raise RagMetricsError(
                    f"run {name!r}: its ids do not meet the qrels ({state.queries_meeting} of {state.queries_ranked} "
                    f"ranked queries have a judged document, {state.run_queries_known:.0%} of its queries are judged "
                    "queries); --engine inprocess says the likely cause; --allow-no-overlap scores it anyway"
                )
    return result


def cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    metrics = args.metric or list(DEFAULT_METRICS)
    if args.per_query and args.per_query_out:
        raise RagMetricsError("--per-query prints the values --per-query-out writes to a file: give one of them")
    if args.per_query_out and not args.per_query_out.endswith(".parquet"):
        raise RagMetricsError(
            f"--per-query-out {args.per_query_out}: expected a path ending in .parquet (the values are written as "
            "Parquet); for CSV, print them with --per-query --format csv"
        )
    if args.engine != "inprocess":
        partitioned = _eval_partitioned(args, metrics)
        _emit(partitioned, args.format, args.per_query, out)
        _report_coverage(partitioned, err)
        for written in partitioned.runs.values():
            if written.per_query_file:
                err.write(f"ragmetrics: wrote {written.per_query_file}: {written.coverage.queries_evaluated} queries\n")
        return 0
    dataset, runs = _load_inputs(args, args.run)
    paths = [
        path if path is None else _output_path(args, path, "--per-query-out")
        for path in _per_query_paths(args.per_query_out, [r.name for r in runs])
    ]
    result = _evaluate(args, dataset, runs, metrics)
    _emit(result, args.format, args.per_query, out, bounds=args.bounds)
    _report_coverage(result, err)
    for run, path in zip(result.runs.values(), paths):
        if path is not None:
            with _replacing(path) as partial:
                run.values.reset_index().to_parquet(partial, index=False)
            err.write(f"ragmetrics: wrote {path}: {run.coverage.queries_evaluated} queries\n")
    return 0


def cmd_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.compare import compare_result

    depth = _bounds_depth(args.bounds)
    dataset, runs = _load_inputs(args, [args.baseline, *args.run])
    result = _evaluate(args, dataset, runs, args.metric or ["ndcg@10"])
    _warn_same_rows(runs[1:], runs[0], err)
    comparison = compare_result(
        result,
        baseline=runs[0].name,
        runs=[r.name for r in runs[1:]],
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        seed=args.seed,
        n_resamples=args.resamples,
        segments=(),
        bounds=bool(args.bounds),
        bounds_depth=depth,
    )
    _refuse_too_few_pairs(comparison.table)
    if args.format == "json":
        import json

        json.dump(comparison.to_dict(), out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        for row in comparison.table.itertuples(index=False):
            mark = "*" if row.significant else " "
            out.write(
                f"{row.metric:<14} {row.run:<24} {row.mean:.4f} vs {row.baseline_mean:.4f}  "
                f"delta {row.delta:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}]  "
                f"p={row.p_value:.4g} ({args.correction} {row.p_value_corrected:.4g}){mark}  "
                f"W/T/L {row.wins}/{row.ties}/{row.losses}" + (_judged_ends(row) if args.bounds else "") + "\n"
            )
        out.write(f"test: {args.test}; * = significant at alpha {args.alpha}, {_family(args, len(comparison.table))}\n")
        if args.bounds:
            where = f" in each run's top {depth}" if depth else ""
            out.write(
                f"if judged: the delta under every way of judging the unjudged documents{where} lies in that "
                "interval; ! = the judgments could flip its sign\n"
            )
    _report_coverage(result, err)
    return 0


def _refuse_too_few_pairs(table: Any) -> None:
    """A paired test on fewer than 2 queries both runs score means nothing (no p-value, an interval of one point):
    an error, not a PASS."""
    few = table[table["n"] < 2]  # the overall rows: a comparison's segments are a table of their own
    if len(few):
        row = few.iloc[0]
        raise RagMetricsError(
            f"{row['metric']}: run {row['run']!r} and the baseline {row['baseline']!r} share {int(row['n'])} query "
            "with a value; a paired test needs at least 2"
        )


def _judged_ends(row: Any) -> str:
    if row.run == row.baseline:
        return f"  if judged [{row.mean_worst:.4f}, {row.mean_best:.4f}]"
    return f"  if judged delta [{row.delta_worst:+.4f}, {row.delta_best:+.4f}]{'!' if row.could_flip else ''}"


def cmd_fuse(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.fusion import fuse, ranked_frame
    from ragmetrics.io import write_trec_run

    output = _output_path(args, args.output, "--output")
    runs = _load_runs(args.runs, args)
    norm = None if args.norm == "none" else args.norm
    fused = fuse(runs, method=args.method, k=args.k, norm=norm, weights=args.weights, depth=args.depth, name=args.name)
    if args.depth_out:
        fused = Run.from_frame(ranked_frame(fused, args.depth_out), name=fused.name)
    with _replacing(output) as partial:
        write_trec_run(fused, partial)
    err.write(f"ragmetrics: wrote {args.output} ({fused.frame['query_id'].nunique()} queries, run {fused.name!r})\n")
    return 0


def _family(args: argparse.Namespace, size: int) -> str:
    """The correction and the family it covers, in words (:func:`ragmetrics.stats.family_text`, as the dashboard)."""
    from ragmetrics.stats import family_text

    return family_text(args.correction, size)


def _warn_same_rows(runs: Sequence[Run], baseline: Run, err: TextIO) -> None:
    for run in runs:
        if run.table.equals(baseline.table):
            err.write(f"ragmetrics: warning: run {run.name!r} has the same rows as the baseline: nothing to compare\n")


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.compare import compare_result
    from ragmetrics.targets import check_targets, resolve_targets

    if not args.targets and not args.baseline:
        raise RagMetricsError(
            "check needs --targets (thresholds to clear), --baseline (no significant regression), or both"
        )
    targets = resolve_targets(args.targets) if args.targets else {}
    dataset, runs = _load_inputs(args, [args.run] + ([args.baseline] if args.baseline else []))
    if args.baseline:
        _warn_same_rows(runs[:1], runs[1], err)
    gated = list(targets) or args.metric or ["ndcg@10"]
    result = _evaluate(args, dataset, runs, list(dict.fromkeys([*gated, *(args.metric or [])])))
    run = runs[0].name
    failures = 0
    depth = _bounds_depth(args.bounds)
    ends = result.runs[run].mean_bounds(depth) if args.bounds else {}
    checks = check_targets(result.runs[run], targets, seed=args.seed)
    for check in checks:
        if check.status == "too few":
            raise RagMetricsError(
                f"target {check.metric}: {check.n} query with a value; checking a target's interval needs at least 2"
            )
    for check in checks:
        failures += not check.passed
        out.write(("PASS " if check.passed else "FAIL ") + check.reason() + "\n")
        if check.metric in ends:
            worst, best = ends[check.metric]
            open_ = worst <= check.threshold if check.passed else best > check.threshold
            out.write(
                f"  if judged: {check.metric} from {worst:.4f} to {best:.4f}"
                + ("; the unjudged documents could flip this check\n" if open_ else "; no judging flips this check\n")
            )
    if args.baseline:
        comparison = compare_result(
            result,
            baseline=runs[1].name,
            runs=[run],
            metrics=result.metrics,
            test=args.test,
            correction=args.correction,
            alpha=args.alpha,
            seed=args.seed,
            n_resamples=args.resamples,
            segments=(),
            bounds=bool(args.bounds),
            bounds_depth=depth,
        )
        _refuse_too_few_pairs(comparison.table)
        for row in comparison.table.itertuples(index=False):
            regression = row.significant and row.delta < 0
            failures += regression
            verdict = (
                "FAIL regression"
                if regression
                else ("PASS improvement" if row.significant else "PASS no significant change")
            )
            out.write(
                f"{verdict}: {row.metric} {row.mean:.4f} vs baseline {row.baseline_mean:.4f} "
                f"(delta {row.delta:+.4f}, 95% CI [{row.ci_low:+.4f}, {row.ci_high:+.4f}], "
                f"p={row.p_value_corrected:.4g} {_family(args, len(comparison.table))}, {args.test})"
                + (_judged_ends(row) if args.bounds else "")
                + "\n"
            )
    out.write(f"{'FAILED' if failures else 'OK'}: {failures} check(s) failed\n")
    return 1 if failures else 0


def cmd_diagnose(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.diagnosis import diagnose_run, findings_frame

    dataset, runs = _load_inputs(args, args.run)
    result = _evaluate(args, dataset, runs, ["mrr"])
    findings = []
    for evaluated in result.runs.values():
        findings += diagnose_run(dataset, evaluated.alignment, k=args.k, metric=args.metric)
    if args.format == "json":
        import json

        json.dump([f.to_dict() for f in findings], out, ensure_ascii=False, indent=1)
        out.write("\n")
    elif args.format == "csv":
        from ragmetrics.export import to_safe_csv

        out.write(str(to_safe_csv(findings_frame(findings), encoding=None)))
    else:
        for run in runs:
            mine = [f for f in findings if f.run == run.name]
            out.write(f"== {run.name}: {len(mine)} finding(s) at K={args.k}\n")
            for f in mine:
                out.write(f"[{f.severity}] {f.title}\n  {f.evidence}\n")
                out.write("".join(f"  - {advice}\n" for advice in f.advice))
    errors = sum(f.severity == "error" for f in findings)
    return 1 if args.fail_on_error and errors else 0


def cmd_push(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.per_query import read_per_query
    from ragmetrics.runmeta import parse_tags, read_sidecar, retriever_tags
    from ragmetrics.share import share_link
    from ragmetrics.store import Store

    if not args.run and not args.per_query:
        raise RagMetricsError("give a --run or a --per-query file to push")
    args.run = args.run or []
    given = parse_tags(args.meta or [])
    dataset, runs = _load_inputs(args, args.run)
    results = [
        read_per_query(path, dataset, name=Path(path).name.removesuffix(".parquet"), filename=path)
        for path in args.per_query or []
    ]
    tags = []
    for path in args.run:  # the metadata ragmetrics retrieve wrote beside the run, then --meta (which wins)
        found = read_sidecar(path)
        tags.append({**(retriever_tags(found) if found else {}), **given})
    store = Store(args.store)
    dataset_files = [args.dataset, *(f for f in (getattr(args, "queries", None), getattr(args, "corpus", None)) if f)]
    dataset_id = store.put_dataset(
        dataset, source=", ".join(Path(f).name for f in dataset_files), targets=args.dataset_targets or ""
    )
    run_ids = [
        store.put_run(run, dataset_id, source=Path(path).name, tags=meta)
        for run, path, meta in zip(runs, args.run, tags)
    ]
    result_ids = [store.put_results(dataset_id, r, source=Path(p).name) for r, p in zip(results, args.per_query or [])]
    base = args.base_url or os.environ.get("RAGMETRICS_BASE_URL", "http://localhost:8501")
    out.write(share_link(base, dataset=dataset_id, runs=run_ids) + "\n")
    tagged = sum(bool(t) for t in tags)
    err.write(
        f"ragmetrics: stored dataset {dataset_id} and {len(run_ids)} run(s) ({', '.join(run_ids)}) in {store.kind} store"
        + (f"; {tagged} with metadata" if tagged else "")
        + (
            f"; {len(result_ids)} per-query result(s) without rankings ({', '.join(result_ids)}), shown on the Overview"
            if result_ids
            else ""
        )
        + "\n"
    )
    return 0


def _store_dataset(args: argparse.Namespace) -> tuple[Store, str]:
    from ragmetrics.history_store import resolve_dataset
    from ragmetrics.store import Store

    store = Store(args.store)
    return store, resolve_dataset(store, args.dataset, queries=getattr(args, "queries", None))


def _stored_run(store: Store, dataset: str | None, spec: str) -> str:
    """A stored run named by its id, or by its name among ``dataset``'s runs."""
    from ragmetrics.share import is_id

    if is_id(spec) and store.has_run(spec):
        return spec
    if dataset is None:
        raise RagMetricsError(f"run {spec[:80]!r} is not a stored run's id (give --dataset to name a run by its name)")
    listing = store.list_runs(dataset)
    named = listing[listing["name"] == spec]
    if len(named) == 1:
        return str(named["id"].iloc[0])
    if len(named) > 1:
        raise RagMetricsError(
            f"{len(named)} runs of this dataset are called {spec!r} ({', '.join(named['id'])}): give the id"
        )
    known = ", ".join(listing["name"].astype(str).tolist()[:10]) or "none"
    raise RagMetricsError(f"run {spec[:80]!r} is neither the id nor the name of a run of this dataset (runs: {known})")


def cmd_history(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.history import timeline_csv, timeline_text
    from ragmetrics.history_store import store_timeline
    from ragmetrics.runmeta import parse_tags

    store, dataset = _store_dataset(args)
    where = parse_tags(args.where or [], "--where")
    baseline = _stored_run(store, dataset, args.baseline) if args.baseline else None
    line = store_timeline(
        store, dataset, args.metric, by=args.by, where=where, baseline=baseline, test=args.test,
        alpha=args.alpha, correction=args.correction, seed=args.seed, n_resamples=args.resamples,
    )  # fmt: skip
    if line.frame.empty:
        raise RagMetricsError(
            f"no run of dataset {dataset} matches"
            + (" " + ", ".join(f"{k}={v}" for k, v in where.items()) if where else "")
            + (f" and has a {args.by!r} tag" if args.by != "date" else "")
        )
    if args.format == "json":
        import json

        json.dump(line.to_dict(), out, ensure_ascii=False, indent=2, allow_nan=False)
        out.write("\n")
    elif args.format == "csv":
        out.write(timeline_csv(line))
    else:
        out.write(timeline_text(line))
    for note in line.notes:
        err.write(f"ragmetrics: note: {note}\n")
    if line.last_step_drops:
        err.write(f"ragmetrics: the last step is a significant drop of {args.metric}\n")
    return 1 if line.last_step_drops else 0


def cmd_leaderboard(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.history_store import resolve_dataset, store_leaderboard
    from ragmetrics.store import Store

    store = Store(args.store)
    datasets = [resolve_dataset(store, d) for d in args.dataset or []]
    board = store_leaderboard(
        store, args.metric, datasets=datasets, system_tag=args.system_tag, test=args.test, alpha=args.alpha,
        seed=args.seed, n_resamples=args.resamples,
    )  # fmt: skip
    if board.means.empty:
        raise RagMetricsError(
            f"no stored run has a {args.system_tag!r} tag (ragmetrics push --meta {args.system_tag}=NAME)"
        )
    if args.format == "json":
        import json

        json.dump(board.to_dict(), out, ensure_ascii=False, indent=2, allow_nan=False)
        out.write("\n")
    else:
        out.write({"markdown": board.to_markdown, "csv": board.to_csv, "latex": board.to_latex}[args.format]())
    for note in board.notes:
        err.write(f"ragmetrics: note: {note}\n")
    return 0


def cmd_meta(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.history_store import resolve_dataset
    from ragmetrics.runmeta import check_key, ir_metadata_yaml, parse_tags
    from ragmetrics.store import Store

    store = Store(args.store)
    dataset = resolve_dataset(store, args.dataset) if args.dataset else None
    run = _stored_run(store, dataset, args.run)
    changes: dict[str, str | None] = {
        **parse_tags(args.set or [], "--set"),
        **{check_key(k): None for k in args.unset or []},
    }
    tags = store.set_tags(run, changes) if changes else store.tags(run)
    if args.format == "json":
        import json

        json.dump({"run_id": run, "tags": tags}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif args.format == "yaml":
        listing = store.list_datasets()
        row = listing[listing["id"] == dataset] if dataset else listing.iloc[0:0]
        name = store.list_runs().set_index("id").at[run, "name"]
        out.write(ir_metadata_yaml(
            tags, run_name=str(name), run_id=run,
            dataset=str(row["name"].iloc[0]) if len(row) else None,
            dataset_source=str(row["source"].iloc[0]) or None if len(row) else None,
        ))  # fmt: skip
    else:
        width = max((len(k) for k in tags), default=0)
        out.write("".join(f"{k:<{width}}  {v}\n" for k, v in tags.items()))
    if changes:
        err.write(f"ragmetrics: run {run}: {len(tags)} tag(s)\n")
    return 0


def _add_eval_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--missing",
        choices=CHOICES["missing"],
        default="zero",
        help="judged queries absent from a run: score 0 (trec_eval -c, default) or skip (pytrec_eval)",
    )
    parser.add_argument("--rel-level", type=int, default=1, help="smallest label counted as relevant (trec_eval -l)")
    parser.add_argument(
        "--level",
        choices=CHOICES["level"],
        default="auto",
        help="evaluate chunks at document level (auto: when the run names source documents)",
    )
    _add_judgment_options(parser)


def cmd_pool(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import csv

    from ragmetrics.export import neutralise
    from ragmetrics.judging import pool

    output = _output_path(args, args.output, "--output")
    dataset, runs = _load_inputs(args, args.run)
    result = _evaluate(args, dataset, runs, ["judged@10"])
    pairs = pool(dataset, [r.alignment for r in result.runs.values()], args.depth)
    columns = ["query_id", "doc_id", *(["text"] if "text" in pairs.columns else [])]
    with _replacing(output) as partial, open(partial, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(columns)
        for row in pairs[columns].itertuples(index=False):
            # ids stay exact (the labels come back keyed on them); text is neutralised for spreadsheets
            cells = [row.query_id, row.doc_id]
            if "text" in columns:
                cells.append(neutralise(" ".join(str(row.text).split())) if isinstance(row.text, str) else "")
            writer.writerow(cells)
    queries = pairs["query_id"].nunique() if len(pairs) else 0
    err.write(
        f"ragmetrics: wrote {args.output}: {len(pairs)} unjudged pair(s) of {queries} queries, top {args.depth}\n"
    )
    return 0


def cmd_judge_merge(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.io import load_dataset, write_trec_qrels
    from ragmetrics.judging import merge

    output = _output_path(args, args.output, "--output")
    dataset = _load_dataset(args)
    labels = load_dataset(args.labels)
    try:
        merged = merge(dataset, labels, override=args.override)
    except RagMetricsError:
        found = merge(dataset, labels, override=True)
        for q, d, old, new in found.conflicts:
            err.write(f"ragmetrics: conflict: query {q} document {d}: judged {old}, labelled {new}\n")
        raise
    with _replacing(output) as partial:
        write_trec_qrels(merged.dataset, partial)
    err.write(
        f"ragmetrics: wrote {args.output}: {merged.dataset.qrels_table.num_rows} judgments "
        f"({merged.added} added, {merged.changed} changed)\n"
    )
    return 0


def _add_judgment_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unjudged",
        choices=CHOICES["unjudged"],
        default="nonrelevant",
        help="retrieved documents the qrels do not label: non-relevant (trec_eval, default), skip (condensed lists: "
        "removed before scoring), relevant (judged relevant within each cut-off; --bounds gives every metric's best "
        "and worst case)",
    )
    parser.add_argument(
        "--allow-no-overlap",
        action="store_true",
        help="score a run whose ids do not meet the qrels (refused by default: every metric would be 0)",
    )


def _add_bounds_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--bounds",
        nargs="?",
        const="all",
        metavar="DEPTH",
        help=f"also print what the unjudged documents leave open: {what} over every way of judging the unjudged "
        "documents the runs retrieved (non-relevant or relevant); with DEPTH, those in each run's top DEPTH (what "
        "judging `ragmetrics pool --depth DEPTH` can change)",
    )


def _bounds_depth(value: str | None) -> int | None:
    """``--bounds``'s depth: None for every retrieved document (``--bounds`` alone)."""
    if value is None or value == "all":
        return None
    if not value.isdigit() or int(value) < 1:
        raise RagMetricsError(f"--bounds: expected a depth of at least 1 (e.g. --bounds 10) or nothing, got {value!r}")
    return int(value)


def _add_test_options(parser: argparse.ArgumentParser) -> None:
    from ragmetrics import stats

    tests = "; ".join(f"{t.name}: {t.title}" for t in stats.TESTS.values())
    parser.add_argument("--test", choices=list(stats.TESTS), default="t", help=f"paired significance test ({tests})")
    parser.add_argument(
        "--correction",
        choices=list(stats.CORRECTIONS),
        default="holm",
        help="multiple-comparison correction over every run x metric compared (default holm)",
    )
    parser.add_argument("--alpha", type=_probability, default=0.05, help="significance level, in (0, 1) (default 0.05)")
    parser.add_argument(
        "--seed", type=_whole_number(0), default=0, help="seed of the resampling tests and intervals (default 0)"
    )
    parser.add_argument(
        "--resamples",
        type=_whole_number(1),
        default=stats.DEFAULT_RESAMPLES,
        help=f"resamples for randomization and bootstrap (default {stats.DEFAULT_RESAMPLES})",
    )


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset", required=True, help="qrels (TREC, CSV, JSON), an evaluation set (JSON/JSONL) or a BEIR folder"
    )
    parser.add_argument("--queries", help="queries file to attach text to TREC qrels")
    parser.add_argument("--corpus", help="corpus.jsonl (gives the corpus size for accuracy@k)")
    parser.add_argument(
        "--corpus-size", type=_whole_number(1), help="number of documents in the collection (accuracy@k)"
    )
    parser.add_argument("--chunk-mapping", help="chunk-to-document mapping file (CSV/TSV/JSONL)")
    parser.add_argument(
        "--chunk-pattern", help="regex with a group 'doc' (or the separator '#') taking the document id from a chunk id"
    )


def _eval_parser(p: argparse.ArgumentParser) -> None:
    p.description = f"Metrics: {known_metric_names()}"
    _add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeat for several runs")
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        help="metric, e.g. ndcg@10 (repeatable); default: " + " ".join(DEFAULT_METRICS),
    )
    _add_eval_options(p)
    _add_bounds_option(p, "each mean's worst and best")
    p.add_argument(
        "--mode",
        choices=CHOICES["mode"],
        default="trec",
        help="conventions: trec_eval (default) or LlamaIndex RetrieverEvaluator",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument(
        "--format",
        choices=["table", "json", "csv", "markdown"],
        default="table",
        help="table: trec_eval's layout (default); json; csv (formula-neutral); markdown",
    )
    _add_engine_options(p)
    p.set_defaults(handler=cmd_eval)


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    engines = "; ".join(f"{name}: {summary}" for name, (_, summary) in ENGINES.items())
    p.add_argument("--engine", choices=list(ENGINES), default="inprocess", help=f"where runs are evaluated ({engines})")
    p.add_argument(
        "--buckets",
        type=_whole_number(1),
        help="duckdb, spark: buckets the queries are hashed into (default: the engine's)",
    )
    p.add_argument("--memory-limit", help="duckdb: its memory limit, e.g. 2GB (default 2GB); beyond it, it spills")
    p.add_argument("--work-dir", help="duckdb: folder for its buckets and spills (default: a temporary folder)")
    p.add_argument("--spark-master", help="spark: master URL of the session started here (default local[*])")
    p.add_argument(
        "--per-query-out",
        help="write the per-query values to this Parquet file (spark: a Parquet folder) where the engine runs, "
        "instead of collecting them; several runs: RUN before the extension",
    )


def _compare_parser(p: argparse.ArgumentParser) -> None:
    _add_data_options(p)
    p.add_argument("--baseline", required=True, help="the baseline run file")
    p.add_argument("--run", action="append", required=True, help="a run file to compare; repeatable")
    p.add_argument("-m", "--metric", action="append", help="metric (repeatable); default ndcg@10")
    _add_eval_options(p)
    _add_bounds_option(p, "each delta's worst and best (and the run's mean's), with a mark where its sign could flip")
    _add_test_options(p)
    p.add_argument("--format", choices=["table", "json"], default="table", help="table (default) or json")
    p.set_defaults(handler=cmd_compare)


def _fuse_parser(p: argparse.ArgumentParser) -> None:
    from ragmetrics import fusion

    p.add_argument("runs", nargs="+", help="run files")
    p.add_argument("--method", choices=fusion.METHODS, default="rrf", help="fusion method")
    p.add_argument("--k", type=_whole_number(0), default=60, help="RRF constant (default 60)")
    p.add_argument(
        "--norm",
        choices=[n or "none" for n in fusion.NORMS],
        default="minmax",
        help="score normalisation (combsum/combmnz)",
    )
    p.add_argument("--weights", type=_weights, help="comma-separated weights, one per run (0 or more)")
    p.add_argument("--depth", type=_whole_number(1), help="fuse only each run's top N")
    p.add_argument("--depth-out", type=_whole_number(1), help="write only the fused top N per query")
    p.add_argument("--name", help="run name (the TREC tag)")
    p.add_argument("-o", "--output", required=True, help="output TREC run file (.gz to compress)")
    p.add_argument("--chunk-mapping", help=argparse.SUPPRESS)
    p.add_argument("--chunk-pattern", help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_fuse)


def _check_parser(p: argparse.ArgumentParser) -> None:
    _add_data_options(p)
    p.add_argument("--run", required=True, help="the run to check")
    p.add_argument("--baseline", help="a baseline run: a significant regression fails the check")
    p.add_argument(
        "--targets",
        help="thresholds: faq, tech, legal, overview, 'ndcg@10>0.6,recall@5>0.9', or a JSON file {metric: threshold}",
    )
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        help="metric the regression gate compares (repeatable; default the targets' or ndcg@10)",
    )
    _add_eval_options(p)
    _add_bounds_option(p, "each target's mean's and each delta's worst and best, and whether they could flip a check")
    _add_test_options(p)
    p.set_defaults(handler=cmd_check)


def _diagnose_parser(p: argparse.ArgumentParser) -> None:
    _add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeatable")
    p.add_argument("--k", type=_whole_number(1), default=5, help="the cut-off a query must hit (default 5)")
    p.add_argument("-m", "--metric", help="the metric compared across categories (default hits@K)")
    _add_eval_options(p)
    p.add_argument("--format", choices=["text", "json", "csv"], default="text", help="text (default), json or csv")
    p.add_argument(
        "--fail-on-error", action="store_true", help="exit 1 when a finding has severity 'error' (easy queries missed)"
    )
    p.set_defaults(handler=cmd_diagnose)


def _add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        help="store URL (sqlite:///path or postgresql+psycopg://...); default: RAGMETRICS_STORE_URL or ./data",
    )


def _push_parser(p: argparse.ArgumentParser) -> None:
    _add_data_options(p)
    p.add_argument("--run", action="append", help="a run file; repeatable")
    p.add_argument(
        "--per-query",
        action="append",
        metavar="PARQUET",
        help="per-query values of a run too large to upload (ragmetrics eval --per-query-out): stored without "
        "rankings, so the dashboard shows their means and intervals; repeatable",
    )
    p.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="a tag on every run pushed (repeatable): commit, branch, system, model, chunk_size, top_k, date, note... "
        "The metadata ragmetrics retrieve wrote beside a run (RUN.json) is read too; --meta wins",
    )
    p.add_argument(
        "--dataset-targets",
        metavar="TARGETS",
        help="the targets the dataset declares, which its Overview checks until a view picks others: a profile "
        "(faq, tech, legal, overview) or 'ndcg@10>0.6,recall@5>0.9'",
    )
    _add_store_option(p)
    p.add_argument("--base-url", help="the dashboard's address; default RAGMETRICS_BASE_URL or http://localhost:8501")
    p.set_defaults(handler=cmd_push)


def _add_stored_dataset_option(p: argparse.ArgumentParser, *, required: bool, repeat: bool = False) -> None:
    p.add_argument(
        "--dataset",
        required=required,
        action="append" if repeat else "store",
        help="a stored dataset: its file (the content id is computed), its stored name, or its id"
        + ("; repeatable (default: every dataset, the newest qrels version of each)" if repeat else ""),
    )


def _history_parser(p: argparse.ArgumentParser) -> None:
    _add_store_option(p)
    _add_stored_dataset_option(p, required=True)
    p.add_argument("--queries", help="the queries file the dataset was pushed with (when --dataset is TREC qrels)")
    p.add_argument("-m", "--metric", default="ndcg@10", help="the metric (default ndcg@10)")
    p.add_argument("--by", default="date", help="order the runs by the date tag (default) or another tag's values")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="only runs with this tag (repeatable)")
    p.add_argument("--baseline", help="a run (id or name) every run is also tested against")
    _add_test_options(p)
    for action in p._actions:
        if action.dest == "correction":
            action.default = "none"
            action.help = "correction over the steps (default none: each step is its own question)"
    p.add_argument("--format", choices=["table", "json", "csv"], default="table", help="table (default), json, csv")
    p.set_defaults(handler=cmd_history)


def _leaderboard_parser(p: argparse.ArgumentParser) -> None:
    _add_store_option(p)
    _add_stored_dataset_option(p, required=False, repeat=True)
    p.add_argument("-m", "--metric", default="ndcg@10", help="the metric (default ndcg@10)")
    p.add_argument("--system-tag", default="system", help="the tag naming each run's system (default system)")
    _add_test_options(p)
    for action in p._actions:
        if action.dest == "correction":
            action.help = argparse.SUPPRESS  # Holm over each dataset's systems
    p.add_argument(
        "--format",
        choices=["markdown", "csv", "latex", "json"],
        default="markdown",
        help="markdown (default), csv, latex, json",
    )
    p.set_defaults(handler=cmd_leaderboard)


def _meta_parser(p: argparse.ArgumentParser) -> None:
    _add_store_option(p)
    p.add_argument("run", help="a stored run: its id, or its name with --dataset")
    _add_stored_dataset_option(p, required=False)
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="set a tag (repeatable)")
    p.add_argument("--unset", action="append", metavar="KEY", help="remove a tag (repeatable)")
    p.add_argument(
        "--format",
        choices=["table", "json", "yaml"],
        default="table",
        help="table (default), json, or yaml: the run's ir_metadata (PRIMAD) description",
    )
    p.set_defaults(handler=cmd_meta)


def _pool_parser(p: argparse.ArgumentParser) -> None:
    _add_data_options(p)
    p.add_argument("--run", action="append", required=True, help="a run file; repeatable (the pool is their union)")
    p.add_argument("--depth", type=_whole_number(1), default=10, help="pool each run's top K (default 10)")
    p.add_argument("-o", "--output", required=True, help="the TSV to write: query_id, doc_id (and text when known)")
    _add_eval_options(p)
    p.set_defaults(handler=cmd_pool)


def _judge_parser(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True)
    m = actions.add_parser("merge", help="add labels to a dataset's judgments and write TREC qrels")
    _add_data_options(m)
    m.add_argument("--labels", required=True, help="the labels: TREC qrels lines, or a TSV with query_id doc_id label")
    m.add_argument("-o", "--output", required=True, help="the merged qrels to write (TREC, .gz to compress)")
    m.add_argument("--override", action="store_true", help="let a new label change a judgment already made")
    m.set_defaults(handler=cmd_judge_merge)


def cmd_retrieve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ragmetrics.retrieve.command import run

    return run(args, _load_dataset(args), out, err)


def _retrieve_parser(p: argparse.ArgumentParser) -> None:
    from ragmetrics.retrieve.command import add_options

    _add_data_options(p)
    add_options(p)
    p.set_defaults(handler=cmd_retrieve)


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "eval": ("evaluate runs against a dataset", _eval_parser),
    "compare": ("compare runs with a baseline: deltas, CIs, paired tests", _compare_parser),
    "fuse": ("fuse runs (reciprocal rank fusion, CombSUM, CombMNZ) into a TREC run", _fuse_parser),
    "check": ("CI gate: targets (with CIs) and no significant regression against a baseline", _check_parser),
    "diagnose": ("plain-language diagnosis of each run's misses at K, with the numbers behind it", _diagnose_parser),
    "push": ("store a dataset and runs in the team's store and print a share link", _push_parser),
    "pool": ("the unjudged (query, document) pairs in the runs' top K, to be judged", _pool_parser),
    "judge": ("judgments: merge new labels into a dataset's qrels", _judge_parser),
    "retrieve": ("call a retriever for every query and write its run, latency and metadata", _retrieve_parser),
    "history": (
        "a stored dataset's runs in time: each step's difference, CI and p-value; exit 1 on a drop",
        _history_parser,
    ),
    "leaderboard": (
        "systems x datasets of the stored runs: means, ranks, ties (markdown, csv, latex)",
        _leaderboard_parser,
    ),
    "meta": (
        "a stored run's metadata: shown; --set KEY=VALUE, --unset KEY; --format yaml exports ir_metadata",
        _meta_parser,
    ),
}
"""The subcommands: name -> (help, the builder of its options)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that subcommand (a CLI call pays for the options it uses)."""
    from ragmetrics import __version__

    parser = argparse.ArgumentParser(prog="ragmetrics", description="Exact retrieval evaluation for RAG and search.")
    parser.add_argument("--version", action="version", version=f"ragmetrics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, build) in COMMANDS.items():
        if command is None or command == name:
            build(sub.add_parser(name, help=help_text))
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RagMetricsWarning)
            try:
                return int(args.handler(args, out, err))
            finally:
                for warning in caught:
                    if issubclass(warning.category, RagMetricsWarning):
                        err.write(f"ragmetrics: warning: {warning.message}\n")
    except RagMetricsError as exc:
        err.write(f"ragmetrics: error: {redact_urls(exc)}\n")
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0
    except OSError as exc:  # a file that cannot be read or written: missing, a folder, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        err.write(f"ragmetrics: error: {where}{exc.strerror or exc}\n")
        return 2


def entry() -> None:  # pragma: no cover - the console script
    """``ragmetrics``: this process is ragmetrics' own, so it makes the process-wide memory choice too, and it ends
    without tearing its modules down: the exit handlers run and the streams are flushed, then the process exits
    (tearing down numpy's and Arrow's modules and thread pools is a tenth of a small evaluation's wall time)."""
    from ragmetrics.memory import use_small_pages_for_this_process

    use_small_pages_for_this_process()
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except OSError as exc:  # standard output on a full disk
        sys.stderr.write(f"ragmetrics: error: standard output: {exc.strerror or exc}\n")
        code = 2
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
