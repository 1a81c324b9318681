"""Spreadsheet-safe CSV export: formula injection neutralised, numbers intact."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.io.export import (
    TRIGGERS,
    is_dangerous,
    neutralise,
    safe_frame,
    to_safe_csv,
)


def rows(data: bytes | str) -> list[list[str]]:
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize(
    "cell",
    [
        "=1+1",
        "+1+1",
        "-1+1",
        "@SUM(A1:A9)",
        '=HYPERLINK("http://x","y")',
        "\t=1",
        "\r=1",
        "\n=1",
        "  =1",
        "=cmd|' /C calc'!A0",
        "-",
        "+",
        "@",
        "＝1+1",
        "－2+3",
        "\tx",
    ],
)
def test_dangerous_text_is_prefixed_with_a_quote(cell: str) -> None:
    assert is_dangerous(cell)
    assert neutralise(cell) == "'" + cell
    out = rows(to_safe_csv(pd.DataFrame({"query": [cell]})))
    assert out[1][0] == "'" + cell


@pytest.mark.parametrize("cell", ["plain", "a=b", "q-1", "'=already text", "", "文档", "1+1", "#tag", "(1)"])
def test_harmless_text_is_unchanged(cell: str) -> None:
    assert not is_dangerous(cell)
    assert neutralise(cell) == cell


@pytest.mark.parametrize("cell", ["-3", "-0.25", "+1.5e-3", "-12%", "-.5", "+7", "-1,5"])
def test_text_that_is_exactly_a_number_is_unchanged(cell: str) -> None:
    assert neutralise(cell) == cell


def test_numbers_stay_numbers() -> None:
    frame = pd.DataFrame(
        {
            "delta": [-0.25, 1.0, -3.0],
            "count": [-1, 0, 2],
            "flag": [True, False, True],
            "when": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"]),
            "nan": [np.nan, -1.5, None],
        }
    )
    back = pd.read_csv(io.BytesIO(to_safe_csv(frame)), parse_dates=["when"])
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    out = rows(to_safe_csv(frame))
    assert [r[0] for r in out[1:]] == ["-0.25", "1.0", "-3.0"] and [r[1] for r in out[1:]] == ["-1", "0", "2"]


def test_mixed_object_columns_touch_only_text() -> None:
    frame = pd.DataFrame({"mixed": ["=a", -1, 2.5, None, "-5", "-x", True]}, dtype=object)
    out = [r[0] for r in rows(to_safe_csv(frame))[1:]]
    assert out == ["'=a", "-1", "2.5", "", "-5", "'-x", "True"]


def test_headers_index_and_categories_are_neutralised() -> None:
    frame = pd.DataFrame({"=run": ["@x"], "ok": pd.Categorical(["+y"])}, index=pd.Index(["=id"], name="-name"))
    out = rows(to_safe_csv(frame, index=True))
    assert out[0] == ["'-name", "'=run", "ok"]
    assert out[1] == ["'=id", "'@x", "'+y"]
    multi = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("=a", "b"), ("c", "@d")]))
    assert list(safe_frame(multi).columns) == [("'=a", "b"), ("c", "'@d")]


def test_string_dtype_columns_and_missing_values() -> None:
    frame = pd.DataFrame(
        {"q": pd.array(["=1", None, "ok"], dtype="string"), "s": pd.Series(["-x", "y", None], dtype="str")}
    )
    out = rows(to_safe_csv(frame))
    assert out[1] == ["'=1", "'-x"] and out[2] == ["", "y"] and out[3] == ["ok", ""]


def test_bytes_with_bom_by_default_or_text() -> None:
    frame = pd.DataFrame({"q": ["é"]})
    assert to_safe_csv(frame).startswith(b"\xef\xbb\xbf")
    assert to_safe_csv(frame, encoding=None) == '"q"\n"é"\n'
    assert to_safe_csv(frame, encoding=None, quoting=csv.QUOTE_MINIMAL) == "q\né\n"


def test_a_carriage_return_inside_a_cell_cannot_start_a_row() -> None:
    """pandas writes a lone CR bare with its default line ending; quoted here."""
    frame = pd.DataFrame({"query": ['harmless\r=HYPERLINK("http://evil")'], "n": [-1]})
    assert rows(to_safe_csv(frame)) == [["query", "n"], ['harmless\r=HYPERLINK("http://evil")', "-1"]]


def test_input_frame_is_not_modified() -> None:
    frame = pd.DataFrame({"q": ["=1"]})
    to_safe_csv(frame)
    assert frame["q"].iloc[0] == "=1"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(max_size=12), min_size=1, max_size=8), st.lists(st.floats(allow_nan=True), min_size=1, max_size=8)
)
def test_no_cell_of_the_export_starts_a_formula(texts: list[str], numbers: list[float]) -> None:
    """Property: read back as CSV, no text cell begins with a trigger unless it is a
    number; numeric columns round-trip to the same values."""
    n = min(len(texts), len(numbers))
    frame = pd.DataFrame({"text": texts[:n], "number": numbers[:n]})
    back = pd.read_csv(io.BytesIO(to_safe_csv(frame)), keep_default_na=False, dtype={"text": str})
    for cell in back["text"]:
        assert not is_dangerous(cell), cell
    for original, cell in zip(frame["text"], back["text"]):
        if original.strip(" \r\n") != original or "\r" in original:
            continue  # the CSV reader itself normalises line breaks and such
        assert cell in (original, "'" + original)
    parsed = pd.to_numeric(back["number"].replace("", np.nan))
    np.testing.assert_array_equal(parsed.to_numpy(dtype=float), frame["number"].to_numpy(dtype=float))
    assert set(TRIGGERS) >= {"=", "+", "-", "@", "\t", "\r"}
