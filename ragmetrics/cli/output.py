"""How evaluated runs are printed: a table, JSON, CSV or Markdown, with the per-query values and the bounds the
unjudged documents leave open when asked for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ragmetrics.analysis.evaluate import EvalResult, RunResult
from ragmetrics.analysis.stats import METRIC_RANGE, is_uncorrected
from ragmetrics.analysis.values import QueryValues, plain
from ragmetrics.cli.evaluating import run_notes
from ragmetrics.cli.options import read_bounds_depth
from ragmetrics.engine.metrics import named_as, parse_metric

if TYPE_CHECKING:
    from ragmetrics.partitioned import PartitionedResult


@dataclass(frozen=True)
class Merged:
    """What ``eval`` prints of :mod:`ragmetrics.analysis.merged`: the means' 95% intervals (``ci``), and the
    fingerprints."""

    ci: bool
    fingerprint: bool

    def rows(self, run: QueryValues) -> dict[str, dict[str, float | str]]:
        """``{"ci_low": {metric: low}, "ci_high": ..., "fingerprint": {metric: hex}}`` (those asked for)."""
        from ragmetrics.analysis.merged import run_sums  # noqa: PLC0415 (start-up: only --ci and --fingerprint need it)

        sums = run_sums(run)
        rows: dict[str, dict[str, float | str]] = {}
        if self.ci:
            ends = [sums.interval(i, within=METRIC_RANGE) for i in range(len(run.metrics))]
            rows["ci_low"] = {m: ends[i][0] for i, m in enumerate(run.metrics)}
            rows["ci_high"] = {m: ends[i][1] for i, m in enumerate(run.metrics)}
        if self.fingerprint:
            rows["fingerprint"] = {m: sums.fingerprint(i) for i, m in enumerate(run.metrics)}
        return rows


def p_text(p_value: float, corrected: float, correction: str | None) -> str:
    """A comparison's p-value as a line prints it: ``p=0.01 (holm 0.03)``, the corrected one beside it, or
    ``p=0.01`` alone when nothing corrects it."""
    if is_uncorrected(correction):
        return f"p={p_value:.4g}"
    return f"p={p_value:.4g} ({correction} {corrected:.4g})"


def num_q(run: RunResult | Any) -> int:
    """trec_eval's ``num_q``: the queries evaluated; in LlamaIndex mode, those with a value (a query LlamaIndex
    refuses, nothing retrieved or nothing relevant, has none and is left out of the means)."""
    conventions = getattr(run, "conventions", None)
    if conventions is None or conventions.mode != "llamaindex" or not run.metrics:
        return int(run.coverage.queries_evaluated)
    values = np.column_stack([run.arrays[metric] for metric in run.metrics])
    return int((~np.isnan(values)).any(axis=1).sum())


def format_table(
    result: EvalResult | PartitionedResult,
    per_query: bool,
    bounds: bool,
    bounds_depth: int | None,
    out: TextIO,
    merged: Merged | None = None,
    names: str = "ragmetrics",
) -> None:
    """trec_eval's layout: ``measure<TAB>query<TAB>value``, 'all' for the mean; ``bounds``: the mean's two ends
    as ``measure:worst`` and ``measure:best``; ``merged``: ``measure:ci_low``, ``measure:ci_high`` and
    ``measure:fingerprint``. ``names="trec_eval"``: trec_eval's ``-q`` output as it prints it: each measure it has
    by its name (``P_5``, ``ndcg_cut_10``, ``recip_rank``; the others as here), the queries in its order (their ids
    compared as bytes, as its ``strcmp``) and before ``runid`` and ``num_q``."""
    as_trec_eval = names == "trec_eval"
    for name, run in result.runs.items():
        printed = {m: named_as(parse_metric(m), names) for m in run.metrics}
        heading = [f"{'runid':<22}\tall\t{name}\n", f"{'num_q':<22}\tall\t{num_q(run)}\n"]
        tokenizer = getattr(run, "tokenizer", None)
        if tokenizer is not None:  # what the token budgets (recall@512tok) counted with
            heading.append(f"{'tokenizer':<22}\tall\t{tokenizer}\n")
        if not as_trec_eval:
            out.writelines(heading)
        if per_query:
            arrays = run.arrays
            assert run.query_ids is not None  # --per-query and --per-query-out are refused together
            order = sorted(
                range(len(run.query_ids)), key=lambda i: str(run.query_ids[i]).encode("utf-8", "surrogatepass")
            )
            for i in order if as_trec_eval else range(len(run.query_ids)):
                qid = run.query_ids[i]
                for metric in run.metrics:
                    out.write(f"{printed[metric]:<22}\t{qid}\t{arrays[metric][i]:.4f}\n")
        if as_trec_eval:
            out.writelines(heading)
        ends = run.mean_bounds(bounds_depth) if bounds and isinstance(run, RunResult) else {}
        extra = merged.rows(run) if merged else {}
        for metric, value in run.means.items():
            shown = printed[metric]
            out.write(f"{shown:<22}\tall\t{value:.4f}\n")
            if metric in ends:
                out.write(f"{shown + ':worst':<22}\tall\t{ends[metric][0]:.4f}\n")
                out.write(f"{shown + ':best':<22}\tall\t{ends[metric][1]:.4f}\n")
            for row, cells in extra.items():
                cell = cells[metric]
                out.write(f"{shown + ':' + row:<22}\tall\t{cell if isinstance(cell, str) else f'{cell:.4f}'}\n")


def wide_frame(
    result: EvalResult | PartitionedResult,
    per_query: bool,
    bounds: bool,
    bounds_depth: int | None = None,
    merged: Merged | None = None,
):
    import pandas as pd  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

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
        if merged:
            rows.update(merged.rows(run))
        mean = pd.DataFrame(list(rows.values()))
        mean.insert(0, "query_id", list(rows))
        mean.insert(0, "run", name)
        parts.append(mean)
        tokenizer = getattr(run, "tokenizer", None)
        if tokenizer is not None:  # what the token budgets (recall@512tok) counted with, beside the run
            for part in parts[-2 if per_query else -1 :]:
                part.insert(1, "tokenizer", tokenizer)
    return pd.concat(parts, ignore_index=True)


def emit(
    result: EvalResult | PartitionedResult,
    fmt: str,
    per_query: bool,
    out: TextIO,
    bounds: str | None = None,
    merged: Merged | None = None,
    names: str = "ragmetrics",
) -> None:
    """``bounds`` (``--bounds``; in-process results only): each mean's two ends over the unjudged documents too;
    ``merged``: the merged intervals and fingerprints (JSON: ``ci`` as ``{metric: [low, high]}`` and
    ``fingerprint`` in each run's entry)."""
    depth = read_bounds_depth(bounds)
    if fmt == "json":
        data = (
            result.to_dict(per_query=per_query, bounds=True, bounds_depth=depth)
            if bounds and isinstance(result, EvalResult)
            else result.to_dict(per_query=per_query)
        )
        for name, run in result.runs.items():  # trec_eval's num_q and the notes a table's stderr holds
            data["runs"][name] = {
                "num_q": num_q(run),
                **data["runs"][name],
                "notes": run_notes(run, bounded=bool(bounds)),
            }
        if merged:
            for name, run in result.runs.items():
                rows = merged.rows(run)
                entry = data["runs"][name]
                if "ci_low" in rows:
                    entry["ci"] = {m: [plain(rows["ci_low"][m]), plain(rows["ci_high"][m])] for m in run.metrics}
                if "fingerprint" in rows:
                    entry["fingerprint"] = rows["fingerprint"]
        json.dump(data, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif fmt == "csv":
        from ragmetrics.io.export import to_safe_csv  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

        frame = wide_frame(result, per_query, bool(bounds), depth, merged)
        out.write(str(to_safe_csv(frame, encoding=None)))  # float64-exact
    elif fmt == "markdown":
        from ragmetrics.io.export import markdown_table  # noqa: PLC0415 (pandas is loaded on use: a table printed needs none)

        frame = wide_frame(result, per_query, bool(bounds), depth, merged)
        kept = per_query or bounds or merged
        out.write(markdown_table(frame if kept else frame.drop(columns="query_id")))
    else:
        format_table(result, per_query, bool(bounds), depth, out, merged, names)
