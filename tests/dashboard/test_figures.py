"""Every dashboard figure is drawn by Plotly's classic script (``dashboard.ui.figures``): the trace types its builders
use, the figures the pages draw, the fallback to ``st.plotly_chart``, and the script's cacheable route."""

from __future__ import annotations

import ast
import gzip
import inspect
import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
from plotly.basedatatypes import BaseTraceType
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

from dashboard.core.charts import DASHBOARD_TRACES, classic_drawable, trace_types
from dashboard.ui import figures
from dashboard.views import VIEWS
from tests.dashboard.apptest import no_problems, open_page

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
BASIC_BUNDLE_TRACES = frozenset({"scatter", "bar", "pie"})  # plotly.js-basic-dist: what a smaller bundle would draw


def _trace_class(name: str) -> str | None:
    """The trace type ``go.<name>`` makes, or None when it is not a trace class."""
    try:
        cls = getattr(go, name)
    except AttributeError:
        return None
    return cls().type if inspect.isclass(cls) and issubclass(cls, BaseTraceType) else None


def _builders_and_traces() -> tuple[list[str], dict[str, set[str]]]:
    """The figure builders of ``dashboard.core`` (functions annotated to return a figure) and, per module, the trace
    types it makes (``go.<Trace>(...)``, ``fig.add_<trace>(...)``, a ``{"type": ...}`` dict)."""
    builders: list[str] = []
    traces: dict[str, set[str]] = {}
    for path in sorted((DASHBOARD / "core").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        made: set[str] = set()
        for node in ast.walk(tree):
            returns = getattr(node, "returns", None)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "Figure" in ast.unparse(returns or ""):
                builders.append(f"{path.stem}.{node.name}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner, attr = node.func.value, node.func.attr
                by_class = _trace_class(attr) if isinstance(owner, ast.Name) and owner.id == "go" else None
                by_method = _trace_class(attr[4:].capitalize()) if attr.startswith("add_") else None
                made.update(kind for kind in (by_class, by_method) if kind)
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    named = isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant)
                    if named and _trace_class(str(value.value).capitalize()):
                        made.add(str(value.value))
        if made:
            traces[path.stem] = made
    return builders, traces


def test_every_figure_builder_makes_only_traces_the_bundle_draws() -> None:
    builders, traces = _builders_and_traces()
    assert len(builders) >= 10, builders  # the curves, precision-recall, forests, deltas, timeline, power...
    assert {"overview.curves_figure", "overview.pr_figure", "timeline.timeline_figure"} <= set(builders)
    used = set().union(*traces.values())
    assert used == DASHBOARD_TRACES, traces  # every trace type a builder makes is named, and none is left over
    assert DASHBOARD_TRACES <= BASIC_BUNDLE_TRACES  # so Plotly's basic bundle would draw them all too
    for source in (DASHBOARD / "core").glob("*.py"):  # no other way in: plotly.express makes its own traces
        assert "plotly.express" not in source.read_text(encoding="utf-8"), source


def test_a_trace_the_bundle_lacks_is_told_apart() -> None:
    figure = go.Figure([go.Scatter(x=[1], y=[1]), go.Bar(x=[1], y=[2])])
    assert trace_types(figure) == {"scatter", "bar"}
    assert classic_drawable(figure, None) and classic_drawable(figure, DASHBOARD_TRACES)
    assert not classic_drawable(go.Figure(go.Pie(values=[1, 2])), DASHBOARD_TRACES)
    assert not classic_drawable(figure, frozenset({"scatter"}))


def _draw_two(bundle: list[str]) -> None:
    import plotly.graph_objects as go  # AppTest runs this function's body as a script

    from dashboard.ui import figures

    figures.BUNDLE_TRACES = frozenset(bundle)
    figures.draw(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), key="a", config={}, clickable=False)
    figures.draw(go.Figure(go.Pie(values=[1, 2])), key="b", config={}, clickable=True)


def test_a_figure_with_a_trace_the_bundle_lacks_falls_back_to_st_plotly_chart() -> None:
    at = AppTest.from_function(_draw_two, kwargs={"bundle": ["scatter", "bar"]}).run()
    try:
        assert not at.exception, at.exception
        drawn = [c for c in at.get("bidi_component") if c.proto.component_name == figures.COMPONENT]
        assert len(drawn) == 1 and json.loads(json.loads(drawn[0].proto.json)["spec"])["data"][0]["type"] == "scatter"
        fallback = at.get("plotly_chart")
        assert len(fallback) == 1 and json.loads(fallback[0].proto.spec)["data"][0]["type"] == "pie"
    finally:
        figures.BUNDLE_TRACES = None


@pytest.mark.parametrize("view", [v.key for v in VIEWS])
def test_every_figure_a_page_draws_goes_through_the_classic_script(view: str, faq_ids) -> None:
    at = open_page(view, {"ds": faq_ids["dataset"], "cv": "1"})
    no_problems(at)
    assert not at.get("plotly_chart")  # no figure falls back
    for element in at.get("bidi_component"):
        if element.proto.component_name == figures.COMPONENT:
            data = json.loads(element.proto.json)
            spec = json.loads(data["spec"])
            assert {t.get("type", "scatter") for t in spec["data"]} <= DASHBOARD_TRACES
            assert data["src"] == figures.SCRIPT_PATH and data["config"]["toImageButtonOptions"]["format"] == "png"
    if view in ("overview", "compare", "power", "timeline"):
        assert any(e.proto.component_name == figures.COMPONENT for e in at.get("bidi_component")), view


def test_the_script_is_served_for_good_and_gzipped_once() -> None:
    client = TestClient(Starlette(routes=figures.script_routes("/team/")))
    raw = figures.served_script()
    # the package's bundle as it ships, after V8's compile hint on a line of its own
    assert raw == b"//# allFunctionsCalledOnLoad\n" + figures.PLOTLY_JS.read_bytes()
    for path in (figures.SCRIPT_PATH, f"/team{figures.SCRIPT_PATH}"):
        response = client.get(path, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200 and response.headers["content-encoding"] == "gzip"
        assert response.content == raw  # the client decoded it
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert response.headers["content-type"].startswith("text/javascript")
    plain = client.get(figures.SCRIPT_PATH, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == raw
    again = client.get(figures.SCRIPT_PATH, headers={"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and not again.content
    assert len(gzip.compress(raw)) < len(raw) / 2
    assert "plotly-" in figures.SCRIPT_PATH and figures.SCRIPT_PATH.endswith(".min.js")
