"""The framework's floor for ``benchmarks/browser.py``: a Streamlit app whose one page holds only the kinds of
elements its address asks for, each drawn the way the dashboard draws it.

    streamlit run benchmarks/browser_floor.py   # from the repository root; browser.py starts it itself
    # then open /?kinds=controls,table,chart, /by-path?kinds=controls,table,chart&tables=5&charts=2, ...

``browser.py`` reads which kinds each dashboard page holds (:data:`KINDS`, the same names as its detector) and
times this page with the same kinds beside it, in the same fresh and returning browsers: what a dashboard page
takes beyond its floor is the dashboard's own; what the floor takes is Streamlit's and Plotly's JavaScript being
loaded, compiled and run. The floor holds one table and one chart unless the address asks for as many as the
dashboard's page holds (``tables=N``, ``charts=N``).

Drawn the dashboard's way: the server is an ``st.App`` that mounts the dashboard's route for Plotly's classic
script (``dashboard.ui.figures.script_routes``, as ``dashboard/app.py`` does), tables and charts go through
``dashboard.ui.layout.show_table`` and ``show_figure`` (the table with its CSV button; the chart by the classic
script's component), and the page sits under a sidebar menu of several pages, as every dashboard page does.

Asked for a mix (``mix=heading:3,markdown:15,selectbox:4``), the page also holds as many of each other element of
the dashboard's page (:data:`ELEMENTS`: headings, text, metrics, inputs, buttons, static tables drawn as
``layout.show_small_table`` draws them, folded sections, rows of columns, bordered containers),
each drawn plainly, beyond those it holds already: the framework's cost of the page's element count.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.ui import figures, layout

app = st.App(__file__, routes=figures.script_routes(str(st.get_option("server.baseUrlPath") or "")))
st.set_option("client.disableDataExport", True)  # as the dashboard's server

FRAME = pd.DataFrame({"run": ["bm25", "dense", "hybrid"], "recall@10": [0.61, 0.68, 0.72]})


def controls() -> None:
    """The kinds of controls the dashboard's sidebar holds (its share link in a popover)."""
    with st.sidebar:
        st.selectbox("Dataset", ["faq", "scifact"], key="floor.dataset")
        st.multiselect("Runs", list(FRAME["run"]), list(FRAME["run"]), key="floor.runs")
        st.selectbox("Metric", ["recall", "ndcg", "mrr"], key="floor.metric")
        st.number_input("K", 1, 100, 10, key="floor.k")
        st.pills("K presets", [1, 3, 5, 10, 20, 100], key="floor.presets")
        st.toggle("Bounds", key="floor.bounds")
        with st.popover("Copy share link"):
            st.code("http://127.0.0.1/?k=10", language=None, wrap_lines=True)


def how_many(name: str) -> int:
    """How many of a kind the address asks for (``tables=5``, ``charts=2``); one by default."""
    value = str(st.query_params.get(name, "1"))
    return int(value) if value.isdigit() else 1


def table() -> None:
    for n in range(how_many("tables")):
        layout.show_table(FRAME, key=f"floor.table.{n}", filename="floor.csv")


def chart() -> None:
    for n in range(how_many("charts")):
        figure = go.Figure(go.Scatter(x=[1, 2, 3], y=[0.61, 0.68, 0.72], mode="lines+markers", name="recall"))
        layout.show_figure(figure, key=f"floor.chart.{n}", filename="floor")


def plotly_chart() -> None:
    """A figure the classic script's bundle lacks a trace for: ``st.plotly_chart`` (``figures.draw``)."""
    st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])), key="floor.plotly_chart", theme="streamlit")


def uploader() -> None:
    st.file_uploader("Runs", accept_multiple_files=True, key="floor.uploader")


def _columns(n: int) -> None:
    st.columns(2)  # a row of two empty columns


def _expander(n: int) -> None:
    with st.expander(f"Section {n}"):
        pass  # folded and empty: what it holds is counted as the page's other elements


# the other elements of a page's main area by kind (browser.ELEMENTS_HELD counts them the same way), the n-th of
# each drawn plainly; the floor page with the same elements draws as many of each as the page holds
# beyond its own (``mix=markdown:15,selectbox:4``)
ELEMENTS: dict[str, Callable[[int], None]] = {
    "heading": lambda n: st.subheader(f"Heading {n}"),
    "markdown": lambda n: st.markdown(f"A line of text with **bold** and `code` ({n})."),
    "metric": lambda n: st.metric(f"Metric {n}", "0.61", "+0.02"),
    "button": lambda n: st.button(f"Button {n}", key=f"floor.button.{n}"),
    "selectbox": lambda n: st.selectbox(f"Choice {n}", ["a", "b", "c"], key=f"floor.selectbox.{n}"),
    "multiselect": lambda n: st.multiselect(f"Choices {n}", ["a", "b", "c"], ["a"], key=f"floor.multiselect.{n}"),
    "number_input": lambda n: st.number_input(f"Number {n}", 1, 100, 10, key=f"floor.number.{n}"),
    "text_input": lambda n: st.text_input(f"Text {n}", key=f"floor.text.{n}"),
    "text_area": lambda n: st.text_area(f"Texts {n}", key=f"floor.text_area.{n}"),
    "radio": lambda n: st.radio(f"Option {n}", ["a", "b"], horizontal=True, key=f"floor.radio.{n}"),
    "checkbox": lambda n: st.checkbox(f"Check {n}", key=f"floor.checkbox.{n}"),
    "uploader": lambda n: st.file_uploader(f"Files {n}", accept_multiple_files=True, key=f"floor.uploader.{n}"),
    "static_table": lambda n: layout.show_small_table(FRAME, key=f"floor.static_table.{n}", filename="floor.csv"),
    "expander": _expander,
    "columns": _columns,
    "container": lambda n: st.container(border=True),
}


def mix() -> dict[str, int]:
    """The elements the address asks for (``mix=markdown:15,selectbox:4``): none unless asked."""
    asked: dict[str, int] = {}
    for part in str(st.query_params.get("mix", "")).split(","):
        name, _, count = part.partition(":")
        if name:
            asked[name] = int(count)
    return asked


# the kinds of elements a page may hold, each drawn as the dashboard draws it (browser.KINDS_HELD finds them);
# a comment, not a docstring: Streamlit's magic would write a bare string on the page
KINDS: dict[str, Callable[[], None]] = {
    "controls": controls,
    "table": table,
    "chart": chart,
    "plotly_chart": plotly_chart,
    "uploader": uploader,
}


def floor_page() -> None:
    asked = [kind for kind in str(st.query_params.get("kinds", "")).split(",") if kind]
    elements = mix()
    unknown = sorted(set(asked) - set(KINDS)) + sorted(set(elements) - set(ELEMENTS))
    if unknown:
        st.error(f"Unknown kinds {unknown}; known: {sorted(KINDS)}, {sorted(ELEMENTS)}")
        return
    st.title("Floor")
    st.write("A page with one line of text.")
    for name, count in elements.items():
        for n in range(count):
            ELEMENTS[name](n)
    for kind in asked:
        KINDS[kind]()


def floor_page_by_path() -> None:
    """The floor page at a path of its own (``browser.FLOOR_PATH``), as the dashboard's pages but the Overview."""
    floor_page()


def other_page() -> None:
    st.title("Another page")


def main() -> None:
    st.set_page_config(page_title="floor", layout="wide")
    pages = [
        st.Page(floor_page, title="Floor", url_path="floor", default=True),
        st.Page(floor_page_by_path, title="Floor by path", url_path="by-path"),
    ]
    pages += [st.Page(other_page, title=f"Page {n}", url_path=f"page{n}") for n in range(3, 8)]
    st.navigation({"Results": pages[:4], "Data": pages[4:]}, expanded=True).run()


if __name__ == "__main__":  # streamlit runs the script as __main__; its app discovery imports it first
    main()
