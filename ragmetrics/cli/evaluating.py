"""The evaluation every command that scores runs makes: the conventions the options give, the coverage notes on
stderr, and the refusal of numbers that cannot mean anything."""

from __future__ import annotations

import argparse
import contextlib
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, TextIO

from ragmetrics.analysis.evaluate import EvalResult, evaluate
from ragmetrics.analysis.verdicts import refuse_meaningless
from ragmetrics.cli.options import convention_changes
from ragmetrics.engine.health import chunks_of_judged
from ragmetrics.engine.tokens import UnfitTokenizerWarning
from ragmetrics.foundation.errors import NoTextError, RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.model import Dataset, Run

if TYPE_CHECKING:
    from ragmetrics.engine import Conventions, Coverage
    from ragmetrics.engine.alignment import Alignment
    from ragmetrics.engine.health import Health


class Covered(Protocol):
    """A run as its coverage notes read it: an in-process or partitioned result's run, or the totals of a run
    compared bucket by bucket."""

    @property
    def coverage(self) -> Coverage: ...

    @property
    def conventions(self) -> Conventions: ...

    @property
    def health(self) -> Health: ...

    @property
    def budget_notes(self) -> list[str]: ...


def report_coverage(runs: Mapping[str, Covered], err: TextIO, *, bounded: bool = False) -> None:
    """Each run's :func:`run_notes` on stderr, one line per run."""
    for name, run in runs.items():
        notes = run_notes(run, bounded=bounded)
        if notes:
            err.write(f"ragmetrics: note: run {name!r}: " + "; ".join(notes) + "\n")


def run_notes(run: Covered, *, bounded: bool = False) -> list[str]:
    """A run's coverage notes, a note for each token budget that hands some query nothing, and a note when most of
    its top 10 is unjudged, unless ``bounded``: the worst and best case printed beside each value already say how
    much the unjudged documents may move it. Written to stderr beside a table, held in the JSON beside the means."""
    notes = run.coverage.notes(run.conventions.missing, mode=run.conventions.mode) + run.budget_notes
    state = run.health
    if state.thinly_judged and not bounded:
        specs = list(getattr(run, "specs", None) or [])
        bounded_metrics = not specs or any(getattr(spec, "tokens", None) is None for spec in specs)
        hint = (  # --bounds computes none at a token budget
            "; eval --bounds gives the worst and best case"
            if run.conventions.mode == "trec" and bounded_metrics
            else ""
        )
        notes.append(
            f"judged@10 = {state.judged_at_10:.2f}: most of the top 10 is unjudged (scored as "
            f"{run.conventions.unjudged}{hint})"
        )
    return notes


def refuse_no_overlap(args: argparse.Namespace, dataset: Dataset, alignments: Iterable[Alignment]) -> None:
    """A run whose ids do not meet the qrels is refused, with the likely cause and the fix tried on the data
    (:meth:`Alignment.explain_no_overlap`), unless ``--allow-no-overlap``: every number read off it would be 0. Empty
    qrels (``--allow-no-relevant``) leave no query to meet."""
    if args.allow_no_overlap or not dataset.qrels_table.num_rows:
        return
    for alignment in alignments:
        if alignment.health.no_overlap:
            raise RagMetricsError(alignment.explain_no_overlap())


@contextlib.contextmanager
def engine_texts(args: argparse.Namespace) -> Iterator[None]:
    """Around a partitioned engine's work: a token budget on a run without texts is said in the engine's terms
    (it reads the run's own text column, no corpus), not with the in-process advice to give ``--corpus``."""
    try:
        yield
    except NoTextError as exc:
        raise RagMetricsError(
            f"run {exc.run!r}: token budgets count the tokens of the retrieved texts, and --engine {args.engine} reads "
            "them from the run's own text column only (no corpus), which it lacks: give a run with its chunks' texts, "
            "or --engine inprocess with --corpus"
        ) from None


def refuse_no_overlap_partitioned(args: argparse.Namespace, name: str, run: Covered) -> None:
    """A run a partitioned engine scored whose ids do not meet the qrels is refused (as :func:`refuse_no_overlap`,
    from its health and coverage: the engine holds no alignment to try fixes on), unless ``--allow-no-overlap``.
    A run none of whose queries is a dataset query ranks no evaluated query: its own queries are counted then."""
    state = run.health
    if args.allow_no_overlap or not state.no_overlap:
        return
    unknown = run.coverage.not_in_dataset
    if state.run_queries_known == 0.0 and unknown:
        found = (
            f"none of its {len(unknown)} queries is a query of the dataset, e.g. {', '.join(map(repr, unknown[:3]))}"
        )
    else:
        found = (
            f"{state.queries_meeting} of {state.queries_ranked} ranked queries have a judged document, "
            f"{state.run_queries_known:.0%} of its queries are judged queries"
        )
    raise RagMetricsError(
        f"run {name!r}: its ids do not meet the qrels ({found}); --engine inprocess says the likely cause; "
        "--allow-no-overlap scores it anyway"
    )


def evaluate_runs(
    args: argparse.Namespace, dataset: Dataset, runs: list[Run], metrics: Sequence[str], *, given: bool = True
) -> EvalResult:
    """:func:`ragmetrics.analysis.evaluate` under the conventions the options give; the coverage notes are printed by
    :func:`report_coverage`, not warned. A large run is aligned on two threads. ``given``: ``dataset`` is the one
    the user gave (not one completed by labels of the run's own pool, which judge exactly what it ranks), so a run
    ranking exactly its judged documents is asked about (the qrels given as a run)."""

    changes = convention_changes(args)
    if dataset.qrels_table.num_rows == 0 and not getattr(args, "allow_no_relevant", False):
        raise RagMetricsError(
            f"dataset {dataset.name!r} judges no document (its queries have no relevant_docs or qrels): there is "
            "nothing to score a run against; --allow-no-relevant scores it anyway (no query has a value)"
        )
    with warnings.catch_warnings(), ThreadPoolExecutor(1) as pool:
        warnings.simplefilter("ignore", RagMetricsWarning)
        warnings.simplefilter("default", UnfitTokenizerWarning)  # before the filter above: said, once
        result = evaluate(
            dataset, runs, metrics, executor=pool, tokenizer=getattr(args, "tokenizer", "auto"), **changes
        )
    refuse_no_overlap(args, dataset, [run.alignment for run in result.runs.values()])
    for name, run in result.runs.items():
        mixed = chunks_of_judged(run.alignment)
        if mixed is not None:
            share, sep, example = mixed
            literal = re.escape(sep)
            warnings.warn(
                f"run {name!r}: in {share:.0%} of the queries read it retrieves chunks of the documents the qrels "
                f"judge (such as {example!r}), beside documents named as judged: the chunks count as unjudged; "
                f"--chunk-pattern '(?P<doc>.+){literal}\\d+$' reads them as their documents",
                RagMetricsWarning,
                stacklevel=2,
            )
    refuse_meaningless(result, args.rel_level, allow_no_relevant=getattr(args, "allow_no_relevant", False))
    for name, run in result.runs.items() if given else ():
        ranking = run.alignment.ranking
        if len(ranking.judged) and ranking.judged.all() and len(ranking.judged) == dataset.qrels_table.num_rows:
            warnings.warn(
                f"run {name!r} ranks exactly the judged documents, each once: is it the qrels given as a run "
                "(did you swap --dataset and --run)?",
                RagMetricsWarning,
                stacklevel=2,
            )
    return result
