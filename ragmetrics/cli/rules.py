"""The options a command reads only under a condition: :data:`RULES`, the one place such a dependency is added, and
:func:`refuse_unread`, which :func:`ragmetrics.cli.main` calls once after parsing, before the command runs.

An option given where its command would not read it is refused, never taken and ignored, with one message shape::

    --bounds 10: read only without the label files (the corrected estimates are printed alone); drop the label files, or drop --bounds

the option as typed (an alias such as ``--human-qrels`` as given) and its value, the condition it is read under, why,
and what to give or drop. An option counts as given when its value is neither None nor False: the options a rule
refuses have no other default (their defaults, when read, are resolved where they are read).

A condition reads which options are given and at most one other option's value (:class:`Choice`); a rule may refuse
some values of its option only (``compare --test wilcoxon`` on a partitioned engine). Refusals that depend on more
(a file's contents, a corpus cut or not) stay with the commands that read them.

Before the rules, :func:`refuse_empty` refuses an option or argument given an empty value (``--judge-qrels ''``,
a variable that expanded to nothing): no option means anything by an empty text, and read as a path it ends in an
error about the current folder, or is skipped as if not given."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ragmetrics.analysis.merged import MERGED_TESTS
from ragmetrics.analysis.stats import TESTS
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.partitioned import ENGINES

Read = Callable[[str], Any]
"""The value of an option of the parsed command, by any of its spellings (``--per-query-out``)."""


def given(value: Any) -> bool:
    """Whether an option's parsed value says it was given (None and False are the refused options' defaults)."""
    return value is not None and value is not False


def _and(options: Sequence[str]) -> str:
    return " and ".join(options) if len(options) < 3 else ", ".join(options[:-1]) + f" and {options[-1]}"


def _or(values: Sequence[str]) -> str:
    return " or ".join(values) if len(values) < 3 else ", ".join(values[:-1]) + f" or {values[-1]}"


@dataclass(frozen=True)
class With:
    """Read only when every one of ``options`` is given."""

    options: tuple[str, ...]

    def holds(self, read: Read) -> bool:
        return all(given(read(option)) for option in self.options)

    def words(self, read: Read) -> str:
        return f"with {_and(self.options)}"

    def remedy(self, read: Read | None = None) -> str:
        return f"give {_and(self.options)}"


@dataclass(frozen=True)
class Without:
    """Read only when none of ``options`` is given."""

    options: tuple[str, ...]

    def holds(self, read: Read) -> bool:
        return not any(given(read(option)) for option in self.options)

    def words(self, read: Read) -> str:
        return f"without {_and(self.options)}"

    def remedy(self, read: Read | None = None) -> str:
        return f"leave out {_and(self.options)}"


@dataclass(frozen=True)
class Choice:
    """Read only when ``option``'s value is one of ``values()`` (``other``: one of anything but them); ``values``
    is called when a rule is checked, so a registry is read only by the command it belongs to."""

    option: str
    values: Callable[[], Sequence[str]]
    other: bool = False

    def holds(self, read: Read) -> bool:
        return (read(self.option) in self.values()) != self.other

    def words(self, read: Read) -> str:
        if self.other and len(self.values()) == 1:  # the value given is the one excluded: said once
            return f"with {self._named()}"
        return f"with {self._named()}, not {self.option} {read(self.option)}"

    def remedy(self, read: Read | None = None) -> str:
        return f"give {self._named()}"

    def _named(self) -> str:
        if self.other:
            return f"{self.option} other than {_or(self.values())}"
        return f"{self.option} {_or(self.values())}"


@dataclass(frozen=True)
class Repeated:
    """Read only when ``option`` (repeatable) is given at least ``times`` times."""

    option: str
    times: int

    def holds(self, read: Read) -> bool:
        return len(read(self.option) or []) >= self.times

    def words(self, read: Read) -> str:
        return f"with {self.option} given at least {self.times} times, not {len(read(self.option) or [])}"

    def remedy(self, read: Read | None = None) -> str:
        return f"give {self.option} at least {self.times} times"


@dataclass(frozen=True)
class All:
    """Read when every one of ``conditions`` holds (``eval --seed``: with --ci and without the label files). Its
    remedy names only what the command lacks: the options to give that are not given, those to leave out that are."""

    conditions: tuple[With | Without | Choice | Repeated, ...]

    def holds(self, read: Read) -> bool:
        return all(condition.holds(read) for condition in self.conditions)

    def words(self, read: Read) -> str:
        return " and ".join(_merged(self.conditions, lambda c: c.words(read), "with", "without"))

    def remedy(self, read: Read | None = None) -> str:
        unmet = [c for c in self.conditions if read is None or not c.holds(read)]
        if read is not None:  # of a With, the options not given; of a Without, those given
            unmet = [
                type(c)(tuple(o for o in c.options if given(read(o)) == isinstance(c, Without)))
                if isinstance(c, With | Without) else c
                for c in unmet
            ]  # fmt: skip
        return " and ".join(_merged(unmet, lambda c: c.remedy(), "give", "leave out"))


def _merged(
    conditions: Sequence[With | Without | Choice | Repeated], said: Callable[[Any], str], give: str, leave: str
) -> list[str]:
    """``said`` of each of ``conditions``, the options of every With named once after ``give`` and those of every
    Without after ``leave`` ("with --judge-qrels, --human-qrels and --plan", not "with ... and with --plan")."""
    withs = [o for c in conditions if isinstance(c, With) for o in c.options]
    withouts = [o for c in conditions if isinstance(c, Without) for o in c.options]
    return [
        *([f"{give} {_and(withs)}"] if withs else []),
        *([f"{leave} {_and(withouts)}"] if withouts else []),
        *(said(c) for c in conditions if not isinstance(c, With | Without)),
    ]


@dataclass(frozen=True)
class Either:
    """Read when any of ``conditions`` holds (``eval --seed``: with --ci, or with the label files' --plan)."""

    conditions: tuple[With | Without | Choice | Repeated | All, ...]

    def holds(self, read: Read) -> bool:
        return any(condition.holds(read) for condition in self.conditions)

    def words(self, read: Read) -> str:
        return ", or ".join(condition.words(read) for condition in self.conditions)

    def remedy(self, read: Read | None = None) -> str:
        return ", or ".join(condition.remedy(read) for condition in self.conditions)


Condition = With | Without | Choice | Repeated | All | Either


@dataclass(frozen=True)
class Rule:
    """``options`` of each of ``commands`` (as typed: ``judge run``) are read only when ``read`` holds; ``why``: what
    they do there, said in the refusal. ``values``: the options count as given only with one of these values (an
    option read with its other values)."""

    commands: tuple[str, ...]
    options: tuple[str, ...]
    read: Condition
    why: str
    values: tuple[str, ...] = ()

    def given(self, read: Read) -> list[str]:
        """The rule's options given, in the rule's order."""
        return [o for o in self.options if given(read(o)) and (not self.values or read(o) in self.values)]


def _fixed(*values: str) -> Callable[[], Sequence[str]]:
    return lambda: values


def _partitioned() -> list[str]:
    return [name for name in ENGINES if name != "inprocess"]


def _judges_needing(needs: str) -> list[str]:
    from ragmetrics.judges.registry import JUDGES  # noqa: PLC0415 (the judges load pandas: only judge run reads them)

    return [name for name, kind in JUDGES.items() if kind.needs == needs]


def _generators_with_a_model() -> list[str]:
    from ragmetrics.synth.generators import GENERATORS  # noqa: PLC0415 (the generators load pandas: only synth reads them)

    return [name for name, entry in GENERATORS.items() if entry.needs_model]


LABELS = ("--judge-qrels", "--human-qrels")
"""The corrected estimates' inputs (``eval``, ``compare``): a judge's labels and people's labels of a sample."""

JUDGE_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "training": (("--human", "--base", "--folds"), "people's labels a judge learns from, another judge's labels it "
                                                   "learns to correct, its cross-fitting folds"),
    "model": (("--model",), "the registered model endpoint the judge asks"),
    "call": (("--call",), "the function the judge calls"),
}  # fmt: skip
"""``judge run``'s options by the :class:`ragmetrics.judges.registry.JudgeInputs` field they fill (a judge's
``needs``): read only by the judges that need it."""

RULES: tuple[Rule, ...] = (
    Rule(
        ("eval",),
        ("--judge-qrels",),
        Either((With(("--human-qrels",)), With(("--plan",)))),
        "the judge's labels of every query and the human labels of a sample correct each other (with --plan alone: "
        "the first queries to label)",
    ),
    Rule(
        ("compare",),
        ("--judge-qrels",),
        With(("--human-qrels",)),
        "the judge's labels of every query and the human labels of a sample correct each other",
    ),
    Rule(
        ("eval", "compare"),
        ("--human-qrels",),
        With(("--judge-qrels",)),
        "the judge's labels of every query and the human labels of a sample correct each other",
    ),
    # before the rule of the label files: a csv table has no place for the plan, whatever else is given
    Rule(
        ("eval",),
        ("--plan",),
        Choice("--format", _fixed("csv"), other=True),
        "the queries to label next, printed below the table or in the JSON (label_next)",
    ),
    Rule(
        ("eval",),
        ("--plan", "--strata"),
        With(("--judge-qrels",)),
        "the queries to label (the first ones before any human label), docs/ppi.md",
    ),
    Rule(
        ("eval",),
        ("--ppi-target", "--ppi-lambda"),
        With(LABELS),
        "the estimates corrected by a human sample, docs/ppi.md",
    ),
    Rule(
        ("compare",),
        ("--ppi-target", "--ppi-lambda", "--strata", "--plan"),
        With(LABELS),
        "the estimates corrected by a human sample, docs/ppi.md",
    ),
    Rule(
        ("eval",),
        ("--names",),
        Choice("--format", _fixed("table")),
        "it names the lines of trec_eval's layout; json, csv and markdown keep one name per metric",
    ),
    Rule(
        ("eval",),
        ("--ci", "--fingerprint", "--bounds", "--per-query", "--per-query-out", "--names"),
        Without(LABELS),
        "the corrected estimates are printed alone, with intervals of their own",
    ),
    Rule(("compare",), ("--bounds",), Without(LABELS), "the corrected deltas are printed alone"),
    Rule(
        ("compare",),
        ("--test",),
        Without(LABELS),
        "a corrected delta is tested by Student's t on its estimate and standard error (docs/ppi.md)",
        values=tuple(test for test in TESTS if test != "t"),
    ),
    Rule(
        ("compare",),
        ("--resamples",),
        Without(LABELS),
        "the corrected deltas are tested by Student's t, which draws nothing",
    ),
    Rule(
        ("compare",),
        ("--seed",),
        Either((Without(LABELS), With(("--plan",)))),
        "the paired tests' draws, and with the label files the draw of --plan's sample: the corrected deltas' t test "
        "draws nothing",
    ),
    # after the rules of --ci and --plan: with both given, theirs is the refusal to settle first
    Rule(("eval",), ("--seed",), All((With(("--judge-qrels",)), With(("--plan",)))), "the draw of --plan's sample"),
    Rule(
        ("eval",),
        ("--format",),
        Without(LABELS),
        "the corrected estimates print as a table, json or csv",
        values=("markdown",),
    ),
    Rule(
        ("eval", "compare"),
        LABELS,
        Choice("--engine", _fixed("inprocess")),
        "the corrected estimates are computed in this process",
    ),
    Rule(
        ("eval", "compare"),
        ("--queries", "--corpus", "--chunk-mapping", "--bounds"),
        Choice("--engine", _fixed("inprocess")),
        "a partitioned engine reads qrels and runs only; --corpus-size and --chunk-pattern are read",
    ),
    Rule(
        ("compare",),
        ("--test",),
        Choice("--engine", _fixed("inprocess")),
        f"a partitioned engine makes the tests that merge only: {_and(MERGED_TESTS)}",
        values=tuple(test for test in TESTS if test not in MERGED_TESTS),
    ),
    Rule(
        ("eval", "compare"),
        ("--buckets", "--memory-limit", "--work-dir"),
        Choice("--engine", _partitioned),
        "the in-process evaluation holds every input in memory",
    ),
    Rule(
        ("eval", "compare"),
        ("--spark-master",),
        Choice("--engine", _fixed("spark")),
        "the master of the Spark session the spark engine starts; no other engine starts one",
    ),
    Rule(
        ("eval",),
        ("--per-query",),
        Without(("--per-query-out",)),
        "--per-query prints the values --per-query-out writes to a file",
    ),
    Rule(("fuse",), ("--k",), Choice("--method", _fixed("rrf")), "reciprocal rank fusion's rank constant"),
    Rule(
        ("fuse",),
        ("--norm",),
        Choice("--method", _fixed("rrf"), other=True),
        "the normalisation of the scores CombSUM and CombMNZ add",
    ),
    Rule(
        ("check",),
        ("--metric", "--test", "--correction", "--alpha", "--seed", "--resamples"),
        With(("--baseline",)),
        "the regression gate: the metrics it compares with the baseline and its paired test; a target is checked "
        "against the run's 95% interval",
    ),
    Rule(
        ("history",),
        ("--gate",),
        With(("--baseline",)),
        "the gate on the last run against the pinned baseline",
        values=("baseline",),
    ),
    Rule(
        ("evidence",),
        ("--per-query",),
        Without(("--baseline",)),
        "the comparison of chunkings reads its tests off the per-query values but prints none",
    ),
    Rule(
        ("evidence",),
        ("-k", "--budget", "--test", "--correction", "--alpha", "--seed", "--resamples"),
        With(("--baseline",)),
        "the comparison of chunkings: its cut-off in chunks, its token budget and its paired tests",
    ),
    Rule(
        ("evidence",),
        ("--metric", "--spans-from-answers"),
        Without(("--baseline",)),
        "the comparison of chunkings scores its own metrics, its gold evidence the --spans file, else the answers it "
        "locates, else whole documents",
    ),
    *(
        Rule(("judge run",), options, Choice("--judge", partial(_judges_needing, needs)), why)
        for needs, (options, why) in JUDGE_OPTIONS.items()
    ),
    Rule(
        ("dataset check",),
        ("--run", "--metric", "--delta"),
        Repeated("--run", 2),
        "the power check, which compares two or more runs",
    ),
    Rule(
        ("dataset check",),
        ("--chunker", "--parent-separator"),
        With(("--corpus",)),
        "the cutting of the freshness check's corpus",
    ),
    Rule(
        ("synth",), ("--model",), Choice("--generator", _generators_with_a_model), "the model that writes the queries"
    ),
    Rule(
        ("synth",),
        ("--chunks-out",),
        Choice("--chunker", _fixed("none"), other=True),
        "where the chunks a chunker cuts go: with none, the set's ids are the corpus's own",
    ),
    Rule(
        ("synth",),
        ("--second-retriever",),
        Without(("--no-retrieval-check",)),
        "the retrieval filters --no-retrieval-check turns off",
    ),
)
"""Every option a command reads only under a condition: the one place such a dependency is added."""


def rules_of(command: str) -> list[Rule]:
    """The rules of ``command`` (as typed: ``judge run``)."""
    return [rule for rule in RULES if command in rule.commands]


def typed(parser: argparse.ArgumentParser, option: str, argv: Sequence[str]) -> str:
    """``option`` as ``argv`` spells it: the alias given (``--human-qrels`` for ``--human``), else ``option``."""
    spellings = parser._option_string_actions[option].option_strings
    for arg in argv:
        name = arg.partition("=")[0]
        if name in spellings:
            return name
    return option


def _shown(action: argparse.Action, value: Any) -> str:
    """`` VALUE`` as given after the option (nothing after a flag, or an optional value left out)."""
    if action.nargs == 0 or (action.nargs == "?" and value == action.const):
        return ""
    if isinstance(value, list):
        return " " + " ".join(str(v) for v in value)
    return f" {value}"


def refusal(rule: Rule, parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> str | None:
    """The refusal of ``rule`` on the parsed ``args`` (None: none of its options is given where it is not read)."""
    read = partial(_value, parser, args)
    options = rule.given(read)
    if not options or rule.read.holds(read):
        return None
    names = [typed(parser, option, argv) for option in options]
    actions = parser._option_string_actions
    shown = ", ".join(f"{name}{_shown(actions[option], read(option))}" for name, option in zip(names, options))
    return f"{shown}: read only {rule.read.words(read)} ({rule.why}); {rule.read.remedy(read)}, or drop {_and(names)}"


def _value(parser: argparse.ArgumentParser, args: argparse.Namespace, option: str) -> Any:
    return getattr(args, parser._option_string_actions[option].dest, None)


def refuse_empty(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Refuse the first option or argument ``args`` holds an empty (or blank) text for."""
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if action.nargs == 0 or not any(isinstance(v, str) and not v.strip() for v in values):
            continue
        if action.option_strings:
            name = typed(parser, action.option_strings[-1], argv)
            kept = any(isinstance(v, str) and v.strip() for v in values)  # --run a --run '': the other stays
            drop = "" if action.required and not kept else f", or drop {name}"  # a required option dropped is refused
            raise RagMetricsError(f"{name} {_blank(values)}: an empty value; give one{drop}")
        raise RagMetricsError(f"{action.dest} {_blank(values)}: an empty value; expected {action.help or 'a value'}")


def _blank(values: Sequence[Any]) -> str:
    """The empty value given, quoted as a shell would need it."""
    return repr(next(v for v in values if isinstance(v, str) and not v.strip()))


def refuse_unread(command: str, parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Refuse the first option ``args`` gives that ``command`` (parsed by ``parser``, its innermost parser, from
    ``argv``) would not read (:data:`RULES`)."""
    for rule in rules_of(command):
        refused = refusal(rule, parser, args, argv)
        if refused is not None:
            raise RagMetricsError(refused)
