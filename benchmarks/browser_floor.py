"""The framework's floor for ``benchmarks/browser.py``: a bare Streamlit page, then the same page with the kinds
of controls every dashboard page has in its sidebar, one table (``st.dataframe``) and one Plotly chart, each opened
in fresh browser contexts (no cache), as ``browser.py`` opens the dashboard's pages.

    python benchmarks/browser_floor.py --repeat 5

Prints the median (min-max) seconds to the drawn page per variant, on the page's clock (from the navigation's
start, ``browser.PAGE_CLOCK``) and on the wall clock (from ``goto``). What the dashboard's pages take beyond these
is theirs; what these take is Streamlit's and Plotly's JavaScript being loaded, compiled and run.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright

from benchmarks.browser import CHARTS_DRAWN, Timing, new_context, page_clock, summary
from tests.e2e.server import CHROMIUM_ARGS, chromium_path, wait_for_app

APP = """import os
import streamlit as st
st.title("Floor")
st.write("A page with one line of text.")
if os.environ.get("FLOOR_CONTROLS"):  # the kinds the dashboard's sidebar holds
    with st.sidebar:
        st.selectbox("Dataset", ["faq", "scifact"])
        st.multiselect("Runs", ["bm25", "dense", "hybrid"], ["bm25", "dense", "hybrid"])
        st.number_input("K", 1, 100, 10)
        st.pills("K presets", [1, 3, 5, 10, 20, 100])
        st.popover("Copy share link").write("a link")
if os.environ.get("FLOOR_TABLE"):
    import pandas as pd
    st.dataframe(pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
if os.environ.get("FLOOR_STATIC_TABLE"):
    import pandas as pd
    st.table(pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}), hide_index=True)
if os.environ.get("FLOOR_VEGA_CHART"):
    import pandas as pd
    st.vega_lite_chart(
        pd.DataFrame({"x": [1, 2, 3], "y": [1, 3, 2]}),
        {"mark": "line", "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}},
    )
if os.environ.get("FLOOR_CHART"):
    import plotly.graph_objects as go
    st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])))
"""
VARIANTS = {
    "bare page": {},
    "+ the sidebar's controls": {"FLOOR_CONTROLS": "1"},
    "+ one st.dataframe": {"FLOOR_TABLE": "1"},
    "+ one Plotly chart": {"FLOOR_CHART": "1"},
    "+ both": {"FLOOR_TABLE": "1", "FLOOR_CHART": "1"},
    "+ controls, table and chart": {"FLOOR_CONTROLS": "1", "FLOOR_TABLE": "1", "FLOOR_CHART": "1"},
    # what lighter parts would save (not what the dashboard uses: its tables sort, its charts are Plotly's)
    "+ one st.table (static)": {"FLOOR_STATIC_TABLE": "1"},
    "+ one Vega-Lite chart": {"FLOOR_VEGA_CHART": "1"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(app: Path, env: dict[str, str], repeat: int) -> list[Timing]:
    port = free_port()
    argv = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(port), "--server.headless",
            "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]  # fmt: skip
    server = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        times = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            for _ in range(repeat + 1):  # the first opening warms the server, not counted
                context = new_context(browser)
                page = context.new_page()
                started = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/")
                wait_for_app(page)
                page.get_by_text("A page with one line of text.").wait_for()
                page.wait_for_function(CHARTS_DRAWN)
                wall = time.perf_counter() - started
                times.append((page_clock(page)["drawnAt"] / 1000, wall))
                context.close()
            browser.close()
        return times[1:]
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="counted openings per variant (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        app = Path(folder) / "floor.py"
        app.write_text(APP)
        print(f"load average {os.getloadavg()[0]:.2f}")
        for name, env in VARIANTS.items():
            clocks = summary(measure(app, env, args.repeat))
            print(
                f"{name:<28} "
                + "   ".join(f"{c} {r['median']:.2f} s ({r['min']:.2f}-{r['max']:.2f})" for c, r in clocks.items())
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
