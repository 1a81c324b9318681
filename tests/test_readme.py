"""The README's promises that a test can hold it to."""

from __future__ import annotations

import re
import shlex
import string
import subprocess
import sys
from pathlib import Path

import pytest

from ragmetrics.analysis.compare import COMPARISON_FIELDS
from ragmetrics.analysis.stats import MEAN_INTERVAL_RULE, delta_interval_method

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BEGIN = "<!-- metrics table: python scripts/readme_metrics.py -->"
END = "<!-- end metrics table -->"


def _section(title: str) -> str:
    """The text under ``## title`` up to the next ``## `` heading."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_metrics_table_is_the_registry_script_output():
    table = _section("Metrics")
    assert BEGIN in table and END in table, f"the Metrics section lacks the markers {BEGIN} ... {END}"
    pasted = table.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    generated = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme_metrics.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert pasted == generated, (
        "README's metrics table differs from the registry: run `python scripts/readme_metrics.py` "
        "and paste its output between the markers"
    )


def test_every_registered_metric_is_in_the_table():
    import ragmetrics as rm

    table = _section("Metrics")
    for info in rm.METRICS.values():
        assert re.search(rf"`{info.name}(@k)?`", table), f"README metrics table lacks {info.name}"


@pytest.mark.parametrize("flag", ["budget", "reads_relevant_count"])
def test_the_conventions_list_the_registry_s_flagged_metrics(flag: str):
    """docs/conventions.md names, after "the registry's `MetricInfo.FLAG`:", the metrics the flag marks: all of them
    and no other, in the registry's order."""
    from ragmetrics.engine.metrics import METRICS

    text = " ".join((ROOT / "docs" / "conventions.md").read_text(encoding="utf-8").split())
    found = re.search(rf"the registry's `MetricInfo\.{flag}`: ([a-z_0-9, ]+)\)", text)
    assert found, f"docs/conventions.md no longer lists the metrics of MetricInfo.{flag}"
    assert found[1].split(", ") == [name for name, info in METRICS.items() if getattr(info, flag)]


def test_the_two_setup_commands_and_the_ci_test_command_agree():
    setup = _section("Set-up")
    assert 'pip install -e ".[dashboard]" && streamlit run dashboard/app.py' in setup
    assert 'pip install -e ".[test]" && python -m pytest' in setup
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "python -m pytest" in [line.strip() for line in ci], ".ci/run no longer runs the README's `python -m pytest`"


def test_the_readme_stays_short():
    size = len(README.encode("utf-8"))
    assert size < 12_500, f"README.md is {size:,} bytes; keep it under 12,500 and move reference material to docs/"


@pytest.mark.parametrize(
    "path", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_no_diary_in_the_docs(path: Path):
    """Docs state what is true of the code; timings of a session belong to benchmarks/README.md's tables."""
    text = path.read_text(encoding="utf-8")
    for pattern, what in (
        (r"\b20\d\d-\d\d-\d\d\b", "a date"),
        (r"\b\d{1,2}:\d\d(?:-\d{1,2}:\d\d)? ?UTC\b", "a clock time"),
        (r"\b[Ss]ession \d", "a session name"),
        (r"measured on commit|at commit \"", "a commit a measurement was made on"),
    ):
        found = re.search(pattern, text)
        assert not found, f"{path.name} holds {what}: {found.group(0)!r}"


def test_the_docs_state_the_mean_interval_rule_in_the_registry_s_words():
    """A doc that states how a mean's interval is chosen ("Clopper-Pearson where every query ...") states it as
    ``stats.MEAN_INTERVAL_RULE`` says it, so a change of the rule cannot leave a copy behind. Was: docs/scale.md said
    "Clopper-Pearson when every query scored exactly 0 or 1, ..., else the Poisson bootstrap"; then the in-process
    statements left out the normal interval above 20,000 queries."""
    stating = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = " ".join(path.read_text(encoding="utf-8").split())  # a statement may be wrapped
        for found in re.finditer(r"Clopper-Pearson [^.;()]*?every query", text):
            said = text[found.start() :]
            assert said.startswith(MEAN_INTERVAL_RULE), f"{path.name} states the rule as {said[:90]!r}"
            stating.add(path.name)
    # the Overview, the Timeline, the results-only means and eval --ci
    assert {"dashboard.md", "history.md", "scale.md"} <= stating


DELTA_RULE_STATED = re.compile(r"paired[ -]bootstrap[^.;()`]*?(?:normal|queries|uncorrected)|Student's t(?:, u| at e)")
"""Where a text states how a paired difference's interval is chosen: Student's t uncorrected or at a comparison's
level (or the paired bootstrap it replaced)."""


def test_the_docs_state_the_delta_interval_rule_in_the_registry_s_words():
    """A doc that states how a paired difference's interval is chosen ("Student's t, uncorrected", "Student's t at
    ... level") states it as ``stats.delta_interval_method`` says it (uncorrected or at each comparison's
    level), so a change of the rule cannot leave a copy behind. Was: docs/history.md said "paired bootstrap up to
    20,000 queries, normal approximation above" without "uncorrected" and "Student's t at the level the correction
    tested the step at"; docs/conventions.md "95% paired-bootstrap interval (in process, the normal approximation
    above 20,000 queries)"."""
    rules = [delta_interval_method(correction) for correction in ("none", "holm")]
    stating = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = " ".join(path.read_text(encoding="utf-8").split())  # a statement may be wrapped
        for found in DELTA_RULE_STATED.finditer(text):
            said = text[found.start() :]
            assert any(said.startswith(rule) for rule in rules), f"{path.name} states the rule as {found.group(0)!r}"
            stating.add((path.name, said.startswith(rules[0])))
    # compare's footers (README, ppi) say the corrected rule; the Timeline and the conventions state both
    assert {("README.md", False), ("history.md", True), ("history.md", False)} <= stating
    assert {("conventions.md", True), ("conventions.md", False), ("ppi.md", False)} <= stating


def test_the_compare_json_fields_are_documented_once_as_the_registry_lists_them():
    """docs/conventions.md names the fields of a row of ``compare --format json`` (in process and on the engines
    alike): ``COMPARISON_FIELDS``, in its order, and no other."""
    text = " ".join((ROOT / "docs" / "conventions.md").read_text(encoding="utf-8").split())
    said = text.split("each row with (`ragmetrics.analysis.compare.COMPARISON_FIELDS`):", 1)[1].split(". ", 1)[0]
    named = [name for name in re.findall(r"`([a-z_]+)`", said) if name != "bounds"]
    assert named == list(COMPARISON_FIELDS), named


def _table_after(path: str, heading: str) -> list[list[str]]:
    """The first Markdown table under ``heading`` in ``docs/path``: its rows (the header and rule left out), each
    a list of its cells."""
    text = (ROOT / "docs" / path).read_text(encoding="utf-8").split(heading, 1)[1]
    table = "|" + text.split("\n|", 1)[1].split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()][2:]


def _keys(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


def test_the_share_link_keys_are_the_link_s():
    """docs/store.md's table names every key a link may carry (``PARAM_KEYS``) and no other."""
    from dashboard.core.share import PARAM_KEYS

    listed = set().union(*(_keys(row[0]) for row in _table_after("store.md", "## Share links")))
    assert listed == set(PARAM_KEYS), f"missing {set(PARAM_KEYS) - listed}, not a key {listed - set(PARAM_KEYS)}"


def test_the_pages_table_lists_every_page():
    from dashboard.views import VIEWS

    listed = [row[0] for row in _table_after("dashboard.md", "## Pages")]
    assert sorted(listed) == sorted(view.title for view in VIEWS)


def test_the_tags_table_names_the_tags_other_features_read():
    """docs/history.md's table of tags: ``KNOWN_TAGS``, every key and no other."""
    from ragmetrics.io.runmeta import KNOWN_TAGS

    listed = set().union(*(_keys(row[0]) for row in _table_after("history.md", "## Tags")))
    assert listed == set(KNOWN_TAGS), f"missing {set(KNOWN_TAGS) - listed}, not read {listed - set(KNOWN_TAGS)}"


def test_the_architecture_names_every_engine():
    from ragmetrics.partitioned import ENGINES

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"\(`ENGINES`: ([`a-z, ]+)\)", text)
    assert found, "docs/architecture.md no longer lists the engines after `ENGINES`:"
    assert re.findall(r"`([a-z]+)`", found[1]) == list(ENGINES)


def _blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each code block's steps: every ``$ ...`` line (a line ending in ``\\`` joined with the next) and the lines
    shown under it."""
    blocks: list[list[tuple[str, list[str]]]] = []
    in_block = continued = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block, continued = not in_block, False
            if in_block:
                blocks.append([])
        elif not in_block:
            continue
        elif continued:
            command, shown = blocks[-1][-1]
            blocks[-1][-1] = (command + " " + line.strip().removesuffix("\\").strip(), shown)
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            blocks[-1].append((line[2:].removesuffix("\\").strip(), []))
            continued = line.endswith("\\")
        elif blocks[-1]:
            blocks[-1][-1][1].append(line)
    return [block for block in blocks if block]


TRANSCRIPTS = [step for block in _blocks(README) for step in block if step[0].startswith("ragmetrics ")]
"""Each ``$ ragmetrics ...`` line of the README's code blocks and the lines shown under it."""


def _printed(command: str, cwd: Path) -> tuple[list[str], list[str]]:
    """What ``command`` (``ragmetrics ...`` or ``python ...``) prints, run in ``cwd`` with this interpreter: its
    standard output then standard error, and the same without stderr's notes."""
    words = shlex.split(command, comments=True)
    argv = [sys.executable, *words[1:]] if words[0] == "python" else [sys.executable, "-m", *words]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=120)
    said = done.stderr.splitlines()
    notes_left_out = [line for line in said if not line.startswith("ragmetrics: note:")]
    return done.stdout.splitlines() + said, done.stdout.splitlines() + notes_left_out


def _in_checkout(tmp_path: Path) -> Path:
    """``tmp_path`` with the checkout's folders the transcripts' relative paths name."""
    for folder in ("tests", "sample_runs", "scripts"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    return tmp_path


def test_the_readme_shows_its_commands_with_what_they_print():
    """The transcripts below are read from the README's code blocks: a change of their form would leave none."""
    assert {command.split()[1] for command, lines in TRANSCRIPTS if lines} >= {"eval", "compare", "check", "pool"}


@pytest.mark.parametrize(("command", "lines"), TRANSCRIPTS, ids=[command.split()[1] for command, _ in TRANSCRIPTS])
def test_the_readme_s_transcripts_are_what_the_commands_print(command: str, lines: list[str], tmp_path: Path):
    """What the README shows under a command is what it prints (standard output, then standard error, whose notes
    it may leave out), run where the README's relative paths lead."""
    printed, without_notes = _printed(command, _in_checkout(tmp_path))
    assert lines in (printed, without_notes), printed


RUNNABLE_STEP = re.compile(r"[A-Z]\w*=\S+|ragmetrics |python scripts/")
"""A docs step a test can run: a shell variable set, a ``ragmetrics`` command, a script of the checkout's."""


def _runnable(block: list[tuple[str, list[str]]]) -> bool:
    """Whether every step of a docs block can run in a fresh folder: each one of :data:`RUNNABLE_STEP`, no path
    outside the folder (an absolute one), and something shown to hold it to."""
    return all(
        RUNNABLE_STEP.match(command) and " /" not in command and ":////" not in command for command, _ in block
    ) and any(shown for _, shown in block)


DOCS_TRANSCRIPTS = {
    path.name: runnable
    for path in sorted((ROOT / "docs").glob("*.md"))
    if (runnable := [block for block in _blocks(path.read_text(encoding="utf-8")) if _runnable(block)])
}
"""Each doc's blocks a test can run, in the doc's order (a later block may read what an earlier one wrote)."""


def test_the_docs_show_commands_a_test_can_run():
    """The docs' transcripts below are found by their form: a change of it would leave none to run."""
    commands = [command for blocks in DOCS_TRANSCRIPTS.values() for block in blocks for command, _ in block]
    assert {"conventions.md", "history.md"} <= set(DOCS_TRANSCRIPTS), list(DOCS_TRANSCRIPTS)
    assert {c.split()[1] for c in commands if c.startswith("ragmetrics ")} >= {"eval", "evidence", "history"}


def _in_order(shown: list[str], printed: list[str]) -> bool:
    """Whether every line ``shown`` is among ``printed``, in their order (the docs may leave lines out, and say so)."""
    rest = iter(printed)
    return all(any(line == other for other in rest) for line in shown)


@pytest.mark.parametrize("name", list(DOCS_TRANSCRIPTS))
def test_the_docs_transcripts_are_what_the_commands_print(name: str, tmp_path: Path):
    """Every step of a doc's runnable blocks run in turn in one folder, a shell variable a step sets read into the
    steps after it; the lines shown under a step are among what it prints, in order (its standard output, then
    standard error)."""
    folder, variables = _in_checkout(tmp_path), {}
    for block in DOCS_TRANSCRIPTS[name]:
        for command, shown in block:
            if not command.startswith(("ragmetrics ", "python ")):
                key, value = command.split("=", 1)
                variables[key] = value
                continue
            printed, _ = _printed(string.Template(command).safe_substitute(variables), folder)
            assert _in_order(shown, printed), (name, command, printed)


PYTHON_EXAMPLE = re.compile(r"```python\n(.*?)```\n\n```\n(.*?)```", re.DOTALL)
"""A Python block and the block right after it: what it prints."""
PYTHON_EXAMPLES = [
    pytest.param(code, shown, id=f"{path.name}:{n}")
    for path in (ROOT / "README.md", ROOT / "docs" / "synth.md", ROOT / "docs" / "judging.md")
    for n, (code, shown) in enumerate(PYTHON_EXAMPLE.findall(path.read_text(encoding="utf-8")), 1)
]


def test_the_python_examples_are_found():
    """By their form: a change of it would leave none to run."""
    assert {p.id.split(":")[0] for p in PYTHON_EXAMPLES} == {"README.md", "synth.md", "judging.md"}


@pytest.mark.parametrize(("code", "shown"), PYTHON_EXAMPLES)
def test_the_python_examples_print_what_they_show(code: str, shown: str, tmp_path: Path):
    """Each Python example run as a script where its relative paths lead: it prints what the block after it shows."""
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=_in_checkout(tmp_path), timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown, done.stdout
