"""What a number allows one to say: the refusals and verdicts every front end reads, the CLI and the dashboard alike.

* :func:`refuse_meaningless`: numbers that cannot mean anything are errors, not 0s (qrels that judge nothing
  relevant when a metric reads relevance, a metric no query has a value of), unless the user insists.
* :func:`refuse_too_few_pairs`: a paired test on fewer than 2 queries is an error, not a pass.
* :func:`verdict`: one comparison row in words: ``baseline``, ``too few``, ``better``, ``worse`` (significant after
  the correction, on the side the test found), ``mixed`` (significant, but the test's side is not the mean delta's:
  Wilcoxon's signed ranks against the mean; :func:`mixed_words` says so) or ``not significant``; for an exact delta
  (no sampling error: nothing to test) ``no difference``, ``exactly better`` or ``exactly worse``; a CI gate fails on
  a regression only (:attr:`VerdictSaid.fails`: ``worse``, ``exactly worse``).
* :data:`SAID`: each verdict's words in every context that says one (a sentence, a table cell, the dashboard's mark,
  ``check``'s gate line, a timeline step, a stability pair), the one place they are written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from ragmetrics.analysis import stats
from ragmetrics.analysis.evaluate import EvalResult
from ragmetrics.engine.bounds import label_free
from ragmetrics.engine.modes import MODES
from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    from ragmetrics.partitioned.result import PartitionedResult

Verdict = Literal[
    "baseline",
    "too few",
    "cannot tell",
    "better",
    "worse",
    "mixed",
    "not significant",
    "no difference",
    "exactly better",
    "exactly worse",
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


def verdict(
    run: str,
    baseline: str,
    delta: float,
    p_corrected: float | None,
    alpha: float,
    *,
    too_few: bool = False,
    no_spread: bool = False,
    direction: float | None = None,
    exact: bool = False,
    sign: int = 1,
) -> Verdict:
    """One run against the baseline on one metric: ``better`` or ``worse`` when the corrected p-value is below
    ``alpha``, on the side the test found (the sign of ``direction``, the test's own statistic:
    :func:`ragmetrics.analysis.stats.test_direction`; None: the test's is the mean, ``delta``); ``mixed`` when that
    side is not the mean delta's (a significant Wilcoxon test whose signed ranks favour the run while the mean is
    lower: neither a regression nor an improvement); ``not significant`` otherwise (a missing p-value too), ``too
    few`` when the pair holds too few queries to tell, ``cannot tell`` when its interval has width 0 (``no_spread``:
    a sample that shows no spread measures nothing), ``baseline`` for the baseline itself. An ``exact`` delta (the
    mean over exactly the queries asked about, every one labelled: no sampling error, so no test and no p-value) is
    ``no difference`` within :data:`ragmetrics.analysis.stats.TIE_TOLERANCE` of 0, else ``exactly better`` or
    ``exactly worse`` by that delta. ``sign``: -1 for a metric where lower is better
    (:func:`ragmetrics.engine.metrics.better_sign`): a lower value is then ``better``."""
    if run == baseline:
        return "baseline"
    delta = sign * delta
    direction = None if direction is None else sign * direction
    if exact:
        if abs(delta) <= stats.TIE_TOLERANCE:
            return "no difference"
        return "exactly better" if delta > 0 else "exactly worse"
    if too_few:
        return "too few"
    if no_spread:
        return "cannot tell"
    if p_corrected is None or (isinstance(p_corrected, float) and math.isnan(p_corrected)):
        return "not significant"
    side = delta if direction is None or math.isnan(direction) else direction
    if not p_corrected < alpha:
        return "not significant"
    if np.sign(side) != np.sign(delta):
        return "mixed"
    if side > 0:
        return "better"
    if side < 0:
        return "worse"
    return "not significant"


@dataclass(frozen=True)
class VerdictSaid:
    """One verdict of :func:`verdict` in the words of every context that says it; a new verdict needs one
    :data:`SAID` entry, and every field is required."""

    sentence: str
    """In a sentence against ``{baseline}`` (:func:`verdict_words`)."""
    term: str
    """In a table cell (the CLI's tables, the dashboard's tables)."""
    mark: str
    """The dashboard's mark in a comparison table (``▲ better``)."""
    gate: str
    """The line ``check --baseline`` prints: it fails where :attr:`fails` says so."""
    step: str
    """A timeline step against the run before (``ragmetrics history``, the Timeline page)."""
    pair: str
    """A pair of runs scored under two qrels versions (``ragmetrics stability``, the Workspace), ``{run}`` against
    ``{baseline}``, on the side the test found."""
    fails: bool
    """Whether a CI gate (``check --baseline``) fails on it: a regression, found by a test or exact."""


SAID: dict[Verdict, VerdictSaid] = {
    "baseline": VerdictSaid(
        sentence="the baseline",
        term="baseline",
        mark="baseline",
        gate="PASS no significant change",
        step="the baseline",
        pair="not significant",
        fails=False,
    ),
    "too few": VerdictSaid(
        sentence="too few queries to tell it from {baseline}",
        term="too few to tell",
        mark="too few to tell",
        gate="PASS too few queries to tell",
        step="too few to tell",
        pair="too few to tell",
        fails=False,
    ),
    "cannot tell": VerdictSaid(
        sentence="cannot tell it from {baseline} (an interval of width 0 measures nothing)",
        term="cannot tell (interval of width 0)",
        mark="cannot tell (interval of width 0)",
        gate="PASS cannot tell (interval of width 0)",
        step="cannot tell (interval of width 0)",
        pair="cannot tell (interval of width 0)",
        fails=False,
    ),
    "better": VerdictSaid(
        sentence="significantly better than {baseline}",
        term="better",
        mark="▲ better",
        gate="PASS improvement",
        step="significant rise",
        pair="{run} better",
        fails=False,
    ),
    "worse": VerdictSaid(
        sentence="significantly worse than {baseline}",
        term="worse",
        mark="▼ worse",
        gate="FAIL regression",
        step="significant drop",
        pair="{baseline} better",
        fails=True,
    ),
    "mixed": VerdictSaid(
        sentence="no verdict against {baseline}: the test and the mean disagree",
        term="test and mean disagree",
        mark="test and mean disagree",
        gate="PASS no verdict, the test and the mean disagree",
        step="significant, but the test and the mean disagree",
        pair="the test and the mean disagree",
        fails=False,
    ),
    "not significant": VerdictSaid(
        sentence="no significant difference from {baseline}",
        term="not significant",
        mark="not significant",
        gate="PASS no significant change",
        step="no significant change",
        pair="not significant",
        fails=False,
    ),
    "no difference": VerdictSaid(
        sentence="no difference from {baseline} (exact: every query labelled)",
        term="no difference (exact)",
        mark="no difference (exact)",
        gate="PASS no difference (exact)",
        step="no change (exact)",
        pair="no difference (exact)",
        fails=False,
    ),
    "exactly better": VerdictSaid(
        sentence="better than {baseline}, exactly (every query labelled: nothing to test)",
        term="better (exact)",
        mark="▲ better (exact)",
        gate="PASS improvement (exact)",
        step="rise (exact)",
        pair="{run} better (exact)",
        fails=False,
    ),
    "exactly worse": VerdictSaid(
        sentence="worse than {baseline}, exactly (every query labelled: nothing to test)",
        term="worse (exact)",
        mark="▼ worse (exact)",
        gate="FAIL regression (exact)",
        step="drop (exact)",
        pair="{baseline} better (exact)",
        fails=True,
    ),
}
"""Each verdict of :func:`verdict` in every context's words, the one place they are written; JSON keeps the codes."""

VERDICT_WORDS: dict[Verdict, str] = {code: said.sentence for code, said in SAID.items()}
"""Each verdict of :func:`verdict` as a sentence says it (:func:`verdict_words`; :attr:`VerdictSaid.sentence`)."""


def verdict_words(code: str, baseline: str = "the baseline") -> str:
    """A verdict code of :func:`verdict` in the words a sentence or a table read by people uses, against
    ``baseline``: ``significantly better than bm25``, ``no verdict against bm25: the test and the mean disagree``,
    ``no significant difference from bm25``; never the raw code (``mixed``, ``cannot tell``)."""
    return VERDICT_WORDS[code].format(baseline=baseline)  # type: ignore[index]


VERDICT_TERMS: dict[Verdict, str] = {code: said.term for code, said in SAID.items()}
"""Each verdict of :func:`verdict` as a table cell says it (the CLI's tables; :attr:`VerdictSaid.term`)."""


def pair_words(code: Verdict, run: str, baseline: str) -> str:
    """A pair's verdict (:func:`verdict` of ``run`` against ``baseline``) as ``ragmetrics stability`` and the
    Workspace say it: the better run by name, ``the test and the mean disagree`` or ``not significant``."""
    return SAID[code].pair.format(run=run, baseline=baseline)


def mixed_words(test: str, direction: float, delta: float) -> str:
    """Why a ``mixed`` verdict is none: the test found one side, the mean delta is on the other."""
    side = "better" if direction > 0 else "worse"
    found = stats.TESTS[test]
    return (
        f"{found.title} finds the run {side} ({found.direction_name} = {direction:+.4g}) while the mean delta is "
        f"{delta:+.4f}: the two disagree, no regression or improvement is called"
    )


def interval_disagreement(
    low: float, high: float, significant: bool, correction: str | None, test: str, method: object = None
) -> str:
    """The words said where the interval shown beside a p-value and the test's verdict disagree (the interval leaves
    out 0 while p >= alpha, or holds it while p < alpha), empty where they agree: the two are computed apart (the
    interval by ``method``, a row's ``ci_method_adjusted``, in the words of
    :func:`ragmetrics.analysis.stats.delta_interval_method`, the verdict by the chosen test), so they can differ at the
    margin. Every front end says it in these words (the CLI's compare and check, the dashboard). Nothing for an exact
    delta (``method`` ``exact``): it has no sampling interval to disagree with a test, and no test."""
    if method == "exact":
        return ""
    excludes_zero = low > 0 or high < 0
    if excludes_zero == bool(significant):
        return ""
    title = stats.TESTS[test].title if test in stats.TESTS else test
    return (
        f"The interval ({stats.delta_interval_method(correction, [method])}) and the verdict ({title}) are computed apart: "
        f"here they disagree, the interval {'leaving out' if excludes_zero else 'holding'} 0."
    )


def refuse_meaningless(
    result: EvalResult | PartitionedResult, rel_level: int, *, allow_no_relevant: bool = False
) -> None:
    """Numbers that cannot mean anything are errors: qrels that judge nothing relevant when a metric reads relevance
    (unless ``allow_no_relevant``: the 0s trec_eval and ir_measures give), or a metric that no query has a value of
    (it needs data the dataset does not hold). In-process results and a partitioned engine's alike."""
    for name, run in result.runs.items():
        coverage = run.coverage
        # the arrays: reading ``run.values`` would import pandas
        valued = [int(np.count_nonzero(~np.isnan(run.array(metric)))) for metric in run.metrics]
        refuse_meaningless_counts(
            name,
            run.metrics,
            run.conventions.mode,
            coverage.queries_evaluated,
            len(coverage.no_relevant),
            valued,
            rel_level,
            allow_no_relevant=allow_no_relevant,
        )


def refuse_meaningless_counts(
    name: str,
    metrics: Sequence[str],
    mode: str,
    evaluated: int,
    no_relevant: int,
    valued: Sequence[int],
    rel_level: int,
    *,
    allow_no_relevant: bool = False,
) -> None:
    """:func:`refuse_meaningless` of one run from its counts: its ``evaluated`` queries, those of them without a
    relevant document (``no_relevant``) and, for each of ``metrics`` (in ``mode``), the queries with a value
    (``valued``); what a run compared bucket by bucket adds up without collecting its values."""
    specs = [MODES[mode].parse(metric) for metric in metrics]
    reads_relevance = [str(spec) for spec in specs if not label_free(spec)]
    if evaluated and no_relevant >= evaluated and reads_relevance and not allow_no_relevant:
        raise RagMetricsError(
            f"the qrels judge no document relevant (label >= {rel_level}, --rel-level) for any evaluated query: "
            f"{reads_relevance[0]} would be 0 for every run; check --rel-level and the qrels' labels, or "
            "--allow-no-relevant scores it anyway"
        )
    for spec, count in zip(specs, valued):
        if evaluated and not count:
            raise RagMetricsError(
                f"{spec}: run {name!r} has no value for any query: the metric needs what this dataset does "
                "not hold (expected answers, keywords, text or a corpus size), or every query was skipped"
            )


def refuse_too_few_pairs(table: Any) -> None:
    """A paired test on fewer than 2 queries both runs score means nothing (no p-value, an interval of one point):
    an error, not a pass. ``table``: a comparison's table (:attr:`ragmetrics.analysis.compare.Comparison.table`)."""
    few = table[(table["n"] < 2) & (table["run"] != table["baseline"])]  # the baseline's own row is no pair
    if len(few):
        row = few.iloc[0]
        raise RagMetricsError(
            f"{row['metric']}: run {row['run']!r} and the baseline {row['baseline']!r} share {int(row['n'])} query "
            "with a value; a paired test needs at least 2"
        )
