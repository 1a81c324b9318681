"""Shared AppTest helpers: open a page (or the router) with URL parameters, read the URL back, check a run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
from streamlit.testing.v1 import AppTest

from dashboard.ui.figures import COMPONENT
from dashboard.views import VIEWS

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
TIMEOUT = 120  # seconds per AppTest run: generous, the machine may be busy with browser tests


def open_page(
    view_key: str,
    params: Mapping[str, str] | None = None,
    state: Mapping[str, object] | None = None,
    *,
    timeout: float = TIMEOUT,
) -> AppTest:
    """Run one page's script (not the router) with ``params`` as its URL query, ``state`` in its session state."""
    view = next(v for v in VIEWS if v.key == view_key)
    at = AppTest.from_file(str(view.path), default_timeout=timeout)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return _run(at, params)


def open_app(params: Mapping[str, str] | None = None, *, user: dict | None = None, timeout: float = TIMEOUT) -> AppTest:
    """Run the router (``dashboard/app.py``); ``user`` sets ``st.user`` (OIDC tests)."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    if user is not None:
        at.user = user
    return _run(at, params)


def _run(at: AppTest, params: Mapping[str, str] | None) -> AppTest:
    for key, value in (params or {}).items():
        at.query_params[key] = value
    return at.run()


def param(at: AppTest, key: str) -> str | None:
    """The URL's value for ``key`` after a run (AppTest gives lists in some releases)."""
    value = at.query_params.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def no_problems(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def figure_specs(at: AppTest) -> list[str]:
    """The JSON of every figure a run drew: by the dashboard's Plotly component (``dashboard.ui.figures``), then by
    ``st.plotly_chart`` (its fallback)."""
    drawn = [json.loads(c.proto.json)["spec"] for c in at.get("bidi_component") if c.proto.component_name == COMPONENT]
    return drawn + [c.proto.spec for c in at.get("plotly_chart")]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(spec) for spec in figure_specs(at)]


def _in_order(at: AppTest) -> list:  # type: ignore[type-arg]
    """The main area's elements, top to bottom as the page shows them."""
    out: list = []  # type: ignore[type-arg]

    def walk(node) -> None:  # type: ignore[no-untyped-def]
        out.append(node)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    return out


def shown_table(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    """The frame of the table ``dashboard.ui.layout.show_table`` (or ``show_small_table``, with its columns' titles)
    showed under ``key`` (AppTest gives a table no key: the table is the one its CSV button, ``key.csv``,
    follows)."""
    table = None
    for node in _in_order(at):
        if node.type in ("dataframe", "table"):
            table = node
        elif node.type == "download_button" and node.key == f"{key}.csv" and table is not None:
            return table.value
    raise AssertionError(f"no table {key!r} on the page")


def shown_cells(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    """The cells of the static table ``dashboard.ui.layout.show_small_table`` showed under ``key``, as the page
    shows them (its Styler's display values: text, numbers to 3 decimals)."""
    table = None
    for node in _in_order(at):
        if node.type == "table":
            table = node
        elif node.type == "download_button" and node.key == f"{key}.csv" and table is not None:
            return pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas()
    raise AssertionError(f"no static table {key!r} on the page")


def drawn_in_order(at: AppTest) -> list[str]:
    """The keys of the main area's tables (as ``show_table`` names them) and figures, top to bottom."""
    return [
        node.key.removesuffix(".csv") if node.type == "download_button" else node.key
        for node in _in_order(at)
        if node.type in ("bidi_component", "plotly_chart")
        or (node.type == "download_button" and str(node.key).endswith(".csv"))
    ]
