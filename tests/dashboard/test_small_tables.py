"""``layout.show_small_table``: a static table reads as typed (``st.table`` takes every cell for Markdown), numbers to
3 decimals under their titles, a missing value as the dash, its CSV the frame's own names and values."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.apptest import shown_cells, shown_table


def _page() -> None:
    import numpy as np
    import pandas as pd

    from dashboard.ui import layout

    frame = pd.DataFrame({"run": ["*bm25*", "1. dense"], "queries": [3, 4], "recall@5": [0.12345, np.nan]})
    layout.show_small_table(frame, key="means", filename="means.csv", labels={"recall@5": "Recall@5"})
    marked = pd.DataFrame({"run": ["_x_"], "met": [None], "verdict": ["✓ 0.5"]})
    layout.show_small_table(marked, key="marked", filename="marked.csv", markdown={"verdict": lambda v: f":green[{v}]"})


def test_a_static_table_shows_its_cells_as_typed_and_a_missing_one_as_the_dash() -> None:
    at = AppTest.from_function(_page).run()
    assert not at.exception
    means = shown_cells(at, "means")
    assert means.to_dict("list") == {"run": ["\\*bm25\\*", "1\\. dense"], "queries": ["3", "4"],
                                     "Recall@5": ["0.123", "—"]}  # fmt: skip
    # a text cell read as the Markdown its maker gives (the targets' colours), a missing one still the dash
    assert shown_cells(at, "marked").to_dict("list") == {
        "run": ["\\_x\\_"],  # only the column given a maker reads as its Markdown
        "met": ["—"],
        "verdict": [":green[✓ 0.5]"],
    }
    assert list(shown_table(at, "means")["run"]) == ["*bm25*", "1. dense"]  # the data itself as it is
