"""The options a command reads only under a condition (``ragmetrics.cli.rules.RULES``): each is refused where it
would be taken and ignored, with one message shape, before any file is read."""

from __future__ import annotations

import argparse
import io
import itertools
import re

import pytest

from ragmetrics.cli import COMMANDS, build_parser, main
from ragmetrics.cli.options import option_value
from ragmetrics.cli.rules import (
    RULES,
    All,
    Choice,
    Either,
    Repeated,
    Rule,
    With,
    Without,
    refusal,
    refuse_empty,
    rules_of,
)  # fmt: skip
from ragmetrics.foundation.errors import RagMetricsError


def command_parser(command: str) -> argparse.ArgumentParser:
    """The innermost parser of ``command`` (``judge run``)."""
    parser = build_parser(command.split()[0])
    for word in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def value_for(action: argparse.Action, avoid: tuple[str, ...] = ()) -> list[str]:
    """A value ``action`` parses (none for a flag), not one of ``avoid``."""
    if action.nargs == 0:
        return []
    if action.choices:
        return [next(str(c) for c in action.choices if c not in avoid)]
    for candidate in ("2", "0.5", "x"):
        try:
            if action.type is not None:
                action.type(candidate)  # type: ignore[operator]
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        return [candidate]
    raise AssertionError(f"no value found for {action.option_strings}")


def unmet(rule: Rule, parser: argparse.ArgumentParser) -> list[str]:
    """Options that make ``rule``'s condition false."""
    actions = parser._option_string_actions
    condition = rule.read
    if isinstance(condition, Either):  # each alternative false at once
        return [part for each in condition.conditions for part in unmet(Rule((), (), each, ""), parser)]
    if isinstance(condition, All):  # its first part false
        return unmet(Rule((), (), condition.conditions[0], ""), parser)
    if isinstance(condition, With | Repeated):
        return []
    if isinstance(condition, Without):
        return [part for option in condition.options for part in [option, *value_for(actions[option])]]
    assert isinstance(condition, Choice)
    if condition.other:
        return [condition.option, condition.values()[0]]
    return [condition.option, *value_for(actions[condition.option], avoid=tuple(condition.values()))]


def required(parser: argparse.ArgumentParser, supplied: list[str]) -> list[str]:
    """The command's required arguments not in ``supplied``, each with a value (files that need not exist: the
    refusal comes before any is read)."""
    argv: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if not action.option_strings:
            argv.append("x")
        elif action.required and not set(action.option_strings) & set(supplied):
            argv += [action.option_strings[-1], *value_for(action)]
    return argv


CASES = [
    pytest.param(rule, command, id=f"{command} {' '.join(rule.options)} {type(rule.read).__name__}")
    for rule in RULES
    for command in rule.commands
]


@pytest.mark.parametrize(("rule", "command"), CASES)
def test_every_rule_refuses_its_options_where_they_are_not_read(rule: Rule, command: str) -> None:
    """Generated from the table: a rule added is walked too. Its options are given together (one alone may be
    refused by another rule first: --judge-qrels without --human-qrels), where its condition does not hold."""
    parser = command_parser(command)
    context = unmet(rule, parser)
    actions = parser._option_string_actions
    given = [[option, *([rule.values[0]] if rule.values else value_for(actions[option]))] for option in rule.options]
    argv = [*command.split(), *required(parser, context), *context, *(part for pair in given for part in pair)]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 2, argv
    said = err.getvalue()
    named = ", ".join(" ".join(pair) for pair in given)
    assert said.startswith(f"ragmetrics: error: {named}: read only "), (argv, said)
    args = parser.parse_args(argv[len(command.split()) :])
    read = lambda option: getattr(args, actions[option].dest, None)  # noqa: E731
    remedy = rule.read.remedy(read)
    assert f"({rule.why}); {remedy}, or drop " in said, said
    dropped = said.rpartition(", or drop ")[2]
    assert all(option in dropped for option in rule.options), said
    assert said.count("\n") == 1 and "Traceback" not in said and not out.getvalue(), said


def met(rule: Rule, parser: argparse.ArgumentParser) -> list[str]:
    """Options that make ``rule``'s condition hold."""
    actions = parser._option_string_actions
    condition = rule.read
    if isinstance(condition, Either):  # its first alternative
        return met(Rule((), (), condition.conditions[0], ""), parser)
    if isinstance(condition, All):  # every part at once
        return [part for each in condition.conditions for part in met(Rule((), (), each, ""), parser)]
    if isinstance(condition, With):
        return [part for option in condition.options for part in [option, *value_for(actions[option])]]
    if isinstance(condition, Without):
        return []
    if isinstance(condition, Repeated):
        return [part for _ in range(condition.times) for part in [condition.option, "x"]]
    if condition.other:
        return [condition.option, *value_for(actions[condition.option], avoid=tuple(condition.values()))]
    return [condition.option, condition.values()[0]]


@pytest.mark.parametrize(("rule", "command"), CASES)
def test_every_rule_takes_its_options_where_they_are_read(rule: Rule, command: str) -> None:
    parser = command_parser(command)
    context = met(rule, parser)
    actions = parser._option_string_actions
    given = [[option, *([rule.values[0]] if rule.values else value_for(actions[option]))] for option in rule.options]
    argv = [*required(parser, context), *context, *(part for pair in given for part in pair)]
    args = parser.parse_args(argv)
    assert refusal(rule, parser, args, argv) is None, argv


def test_the_table_names_options_each_command_has() -> None:
    """Every option a rule names, and every option its condition reads, is one of its commands' options (the
    walk above would fail on a misspelled one only where it is read)."""
    for rule in RULES:
        alternatives = rule.read.conditions if isinstance(rule.read, Either) else (rule.read,)
        parts = [p for a in alternatives for p in (a.conditions if isinstance(a, All) else (a,))]
        read = [o for c in parts for o in (c.options if isinstance(c, With | Without) else (c.option,))]
        for command in rule.commands:
            known = command_parser(command)._option_string_actions
            assert set(rule.options) | set(read) <= set(known), (command, rule)


def test_an_alias_is_named_as_typed() -> None:
    """``judge run``'s ``--human`` is also spelled ``--human-qrels``: the refusal names the one given."""
    argv = ["judge", "run", "--dataset", "d", "--pool", "p", "-o", "o", "--judge", "rule", "--human-qrels", "h.tsv"]
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 2
    assert err.getvalue().startswith("ragmetrics: error: --human-qrels h.tsv: read only with --judge learned, not "
                                      "--judge rule"), err.getvalue()  # fmt: skip
    assert "or drop --human-qrels\n" in err.getvalue()


def test_a_rule_met_refuses_nothing() -> None:
    """The options given where they are read pass the check (and fail later, on the files that do not exist)."""
    for argv in (
        [
            "eval",
            "--dataset",
            "none.qrels",
            "--run",
            "none.trec",
            "--judge-qrels",
            "j",
            "--human-qrels",
            "h",
            "--plan",
            "5",
            "--seed",
            "2",
        ],
        ["eval", "--dataset", "none.qrels", "--run", "none.trec", "--engine", "duckdb", "--buckets", "2"],
        ["dataset", "check", "none.jsonl", "--run", "a", "--run", "b", "--metric", "map", "--delta", "0.1"],
    ):
        err = io.StringIO()
        assert main(argv, io.StringIO(), err) == 2
        assert "read only" not in err.getvalue(), err.getvalue()


def test_the_check_leaves_the_options_as_parsed_and_their_defaults_are_resolved_where_read() -> None:
    """Was: eval's check of --seed (and of --resamples, no option of eval now) wrote their defaults into the parsed
    options, and the check of the corrected estimates' options wrote --ppi-target's and --ppi-lambda's."""
    parser = command_parser("eval")
    for argv, seed in ((["--plan", "5"], 0), (["--plan", "5", "--seed", "4"], 4), ([], 0)):
        args = parser.parse_args(["--dataset", "q", "--run", "r", "--judge-qrels", "j", "--human-qrels", "h", *argv])
        before = vars(args).copy()
        for rule in rules_of("eval"):
            refusal(rule, parser, args, argv)
        assert vars(args) == before
        assert args.ppi_target is None and args.ppi_lambda is None and option_value(args, "seed") == seed
        assert (option_value(args, "ppi_target"), option_value(args, "ppi_lambda")) == ("queries", "tuned")


EVAL_CONDITIONED = {"--judge-qrels": ["j"], "--human-qrels": ["h"], "--ci": [], "--plan": ["5"], "--seed": ["3"]}


def _eval_refusal(given: set[str]) -> tuple[str, str] | None:
    """The option ``eval`` refuses first with ``given`` (and files that need not exist), and its remedy."""
    argv = ["eval", "--dataset", "none.qrels", "--run", "none.trec"]
    argv += [part for option in sorted(given) for part in [option, *EVAL_CONDITIONED[option]]]
    err = io.StringIO()
    assert main(argv, io.StringIO(), err) == 2
    said = re.match(r"ragmetrics: error: (--[\w-]+)[^:]*: read only .*?\); (.*)\n$", err.getvalue())
    return None if said is None else (said[1], said[2])


def test_no_remedy_is_refused_in_turn() -> None:
    """Every combination of the label files, --ci, --plan and --seed on ``eval``: each alternative of a refusal's
    remedy, followed, is not refused again for the same option (was: ``eval --seed 3`` said "give --judge-qrels and
    --human-qrels", which followed said "give --plan"; with the label files, "leave out --judge-qrels and
    --human-qrels", which followed said "give --ci")."""
    for picked in itertools.product((False, True), repeat=len(EVAL_CONDITIONED)):
        given = {option for option, on in zip(EVAL_CONDITIONED, picked) if on}
        refused = _eval_refusal(given)
        if refused is None:
            continue
        option, remedy = refused
        for alternative in remedy.split(", or "):
            changed = set(given)
            for part in re.split(r" and (?=give |leave out |drop )", alternative):
                named = set(re.findall(r"--[\w-]+", part))
                changed = changed | named if part.startswith("give ") else changed - named
            again = _eval_refusal(changed)
            assert again is None or again[0] != option or option not in changed, (sorted(given), alternative, again)


def test_eval_s_seed_is_taken_exactly_where_it_is_read() -> None:
    """--seed draws --plan's sample (with the label files): taken there, refused elsewhere (--ci's intervals draw
    nothing), with a remedy that names only what the command lacks."""
    assert _eval_refusal({"--judge-qrels", "--human-qrels", "--plan", "--seed"}) is None
    assert _eval_refusal({"--judge-qrels", "--plan", "--seed"}) is None  # the first plan, before any human label
    assert _eval_refusal({"--seed"}) == _eval_refusal({"--ci", "--seed"}) == (
        "--seed", "give --judge-qrels and --plan, or drop --seed"
    )  # fmt: skip
    assert _eval_refusal({"--judge-qrels", "--human-qrels", "--seed"}) == ("--seed", "give --plan, or drop --seed")


def every_command() -> list[str]:
    """Every command as typed, its subcommands spelled out (``judge run``)."""
    found = []
    for name in COMMANDS:
        nested = [a for a in command_parser(name)._actions if isinstance(a, argparse._SubParsersAction)]
        found += [f"{name} {sub}" for a in nested for sub in a.choices] if nested else [name]
    return found


def text_values(command: str) -> list[argparse.Action]:
    """The options and arguments of ``command`` that take a text as typed (no type, no choices)."""
    return [
        a for a in command_parser(command)._actions
        if a.nargs != 0 and a.type is None and not a.choices and not isinstance(a, argparse._SubParsersAction)
        and a.dest not in ("help", "version")
    ]  # fmt: skip


@pytest.mark.parametrize("command", every_command())
def test_every_text_option_and_argument_refuses_an_empty_value(command: str) -> None:
    """Was: ``--judge-qrels ''`` read as the current folder ("expected a BEIR folder"), ``synth ''`` wrote a set
    from the current folder's files, ``--run ''`` named no file: an empty value is refused, naming what was typed."""
    parser = command_parser(command)
    actions = text_values(command)
    assert actions, command
    for action in actions:
        for blank in ("", "  "):
            args = argparse.Namespace(**{a.dest: None for a in parser._actions})
            setattr(args, action.dest, [blank] if action.nargs in ("*", "+") or "append" in type(action).__name__.lower()
                    else blank)  # fmt: skip
            with pytest.raises(RagMetricsError) as refused:
                refuse_empty(parser, args, [])
            said = str(refused.value)
            assert said.startswith(f"{action.option_strings[-1] if action.option_strings else action.dest} {blank!r}: ")
            assert "an empty value" in said


def test_an_empty_value_is_refused_before_any_file_is_read(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.md").write_text("a document the current folder holds, which synth must not read as a corpus")
    for argv, said in (
        (["synth", "", "-o", "set.jsonl"], "corpus '': an empty value; expected a BEIR corpus.jsonl"),
        (["eval", "--dataset", "q", "--run", "r", "--judge-qrels=", "--human-qrels", "h"],
         "--judge-qrels '': an empty value; give one, or drop --judge-qrels"),
        (["judge", "agree", "--human", " ", "--judge", "j"], "--human ' ': an empty value; give one\n"),  # required
        (["eval", "--dataset", "q", "--run", "r", "--run", ""], "--run '': an empty value; give one, or drop --run"),
        (["eval", "--dataset", "", "--run", "r"], "--dataset '': an empty value; give one\n"),  # required: no drop
        (["eval", "--dataset", "q", "--run", " "], "--run ' ': an empty value; give one\n"),
        (["synth", "c", "-o", ""], "-o '': an empty value; give one\n"),
    ):  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out, err) == 2
        assert err.getvalue().startswith(f"ragmetrics: error: {said}"), err.getvalue()
        assert not out.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_compare_s_seed_is_read_with_the_label_files_only_beside_plan() -> None:
    """Was: refused with the label files whatever else was given, though --plan's sample is drawn with it."""
    parser = command_parser("compare")
    labels = ["--dataset", "q", "--baseline", "b", "--run", "r", "--judge-qrels", "j", "--human-qrels", "h"]
    planned = [*labels, "--plan", "5", "--seed", "4"]
    args = parser.parse_args(planned)
    assert all(refusal(rule, parser, args, planned) is None for rule in rules_of("compare"))
    for extra, refused in (
        (["--seed", "4"], "--seed 4: read only"),
        (["--plan", "5", "--resamples", "9"], "--resamples 9"),
    ):
        err = io.StringIO()
        assert main(["compare", *labels, *extra], io.StringIO(), err) == 2
        assert err.getvalue().startswith(f"ragmetrics: error: {refused}"), err.getvalue()
    assert "give --plan" in _compare_refusal(["--seed", "4"])


def _compare_refusal(extra: list[str]) -> str:
    err = io.StringIO()
    main(["compare", "--dataset", "q", "--baseline", "b", "--run", "r", "--judge-qrels", "j", "--human-qrels", "h",
          *extra], io.StringIO(), err)  # fmt: skip
    return err.getvalue()
