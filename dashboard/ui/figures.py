"""Plotly figures drawn by Plotly's JavaScript loaded as a classic script, so the browser code-caches it.

``st.plotly_chart`` loads Streamlit's own Plotly chunk as an ES module, which Chrome evaluates again on every
visit (about a second). Here the figure (built with plotly.py, as everywhere in the dashboard) goes to a small
``st.components.v2`` component that adds one classic ``<script src>`` to the page, once per page:
:data:`SCRIPT_PATH`, the ``plotly.min.js`` the installed plotly package ships (the full bundle) after V8's compile
hint (:data:`COMPILE_HINT`), served by the
app's own route (:func:`script_routes`, mounted by ``dashboard/app.py``'s ``st.App``) at an address that names
its version, cached by the browser for a year (``immutable``) and gzipped once per server.

What ``st.plotly_chart`` gave and the component keeps: Streamlit's chart theme (the placeholder colours of
Streamlit's plotly template, the fonts, grid and hover colours, read from the page's theme, light or dark, and
drawn again when the theme changes), hover, the toolbar's PNG download (the figure's ``config``), and a click
on a point (``clickable``: the clicked points, as ``st.plotly_chart``'s ``on_select`` gives them, for the run
after the click). A figure with a trace type the bundle lacks (:data:`BUNDLE_TRACES`) is drawn by
``st.plotly_chart``.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from pathlib import Path
from typing import Any

import anyio.to_thread
import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from plotly.offline import get_plotlyjs_version
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.core.charts import classic_drawable

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
"""The bundle: plotly.js's full ``plotly.min.js`` as the installed plotly package ships it."""
COMPILE_HINT = b"//# allFunctionsCalledOnLoad\n"
"""V8's explicit compile hint, served as the script's first line: Chrome compiles every function of the script as it
loads it (off the page's main thread, while it streams in) instead of each on its first call on the main thread, and
its code cache then holds them all. Measured in ``benchmarks/README.md``."""
BUNDLE_TRACES: frozenset[str] | None = None
"""The trace types :data:`PLOTLY_JS` draws; None: every type plotly.py knows (the full bundle)."""
SCRIPT_PATH = f"/_ragmetrics/plotly-{get_plotlyjs_version()}.min.js"
"""The script's address below the app's root: it names the version, so it can be cached for good."""
CACHE_CONTROL = "public, max-age=31536000, immutable"
COMPONENT = "ragmetrics_plotly"

_bundles: list[tuple[bytes, str]] = []
_bundle_lock = threading.Lock()


def served_script() -> bytes:
    """The script as served: :data:`COMPILE_HINT`, then :data:`PLOTLY_JS` as the package ships it."""
    return COMPILE_HINT + PLOTLY_JS.read_bytes()


def _bundle() -> tuple[bytes, str]:
    """The served script gzipped (once per server; the server keeps only this, about 1.5 MB) and its ETag."""
    with _bundle_lock:
        if not _bundles:
            raw = served_script()
            etag = f'"{hashlib.sha256(raw).hexdigest()[:32]}"'
            _bundles.append((gzip.compress(raw, compresslevel=6, mtime=0), etag))
    return _bundles[0]


async def _serve_script(request: Request) -> Response:
    gz, etag = await anyio.to_thread.run_sync(_bundle)
    headers = {
        "Cache-Control": CACHE_CONTROL,
        "ETag": etag,
        "Vary": "Accept-Encoding",
        "X-Content-Type-Options": "nosniff",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        # already encoded: Streamlit's gzip middleware passes it on as it is
        return Response(gz, media_type="text/javascript", headers={**headers, "Content-Encoding": "gzip"})
    plain = await anyio.to_thread.run_sync(gzip.decompress, gz)  # rare (a client without gzip): off the event loop
    return Response(plain, media_type="text/javascript", headers=headers)


def script_routes(base_url_path: str = "") -> list[Route]:
    """The route that serves :data:`PLOTLY_JS` at :data:`SCRIPT_PATH` (and below ``server.baseUrlPath``)."""
    paths = [SCRIPT_PATH]
    prefix = base_url_path.strip("/")
    if prefix:
        paths.append(f"/{prefix}{SCRIPT_PATH}")
    return [Route(path, _serve_script, methods=["GET", "HEAD"]) for path in paths]


def script_url() -> str:
    """:data:`SCRIPT_PATH` below the server's ``server.baseUrlPath``, as the page asks for it."""
    prefix = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{prefix}{SCRIPT_PATH}" if prefix else SCRIPT_PATH


JS = """
const PLACEHOLDERS = 40;  // Streamlit's plotly template colours: #000001 ... #000040
function loadPlotly(src) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__ragmetricsPlotly) {
    window.__ragmetricsPlotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");  // a classic script: the browser code-caches it
      script.src = src;
      script.async = true;
      script.dataset.ragmetricsPlotly = "";
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { window.__ragmetricsPlotly = null; reject(new Error("cannot load " + src)); };
      document.head.appendChild(script);
    });
  }
  return window.__ragmetricsPlotly;
}
function theme(el) {
  const css = getComputedStyle(el);
  const v = (name, fallback) => (css.getPropertyValue(name) || "").trim() || fallback;
  const list = (name) => v(name, "").split(",").map((s) => s.trim()).filter(Boolean);
  const text = v("--st-text-color", "#31333f");
  const bg = v("--st-background-color", "#ffffff");
  return {
    text, bg,
    heading: v("--st-heading-color", text),
    secondary: v("--st-secondary-background-color", "#f0f2f6"),
    border: v("--st-border-color", "rgba(49,51,63,0.2)"),
    grid: v("--st-border-color-light", "rgba(49,51,63,0.1)"),
    font: v("--st-font", "sans-serif"),
    categorical: list("--st-chart-categorical-colors"),
    sequential: list("--st-chart-sequential-colors"),
    diverging: list("--st-chart-diverging-colors"),
    green: v("--st-green-color", "#21c354"), red: v("--st-red-color", "#ff4b4b"), blue: v("--st-blue-color", "#1c83e1"),
  };
}
function placeholderColor(n, t) {
  const pick = (colors, i) => colors.length ? colors[i % colors.length] : t.text;
  if (n <= 10) return pick(t.categorical, n - 1);
  if (n <= 20) return pick(t.sequential, n - 11);
  if (n <= 30) return pick(t.diverging, n - 21);
  return {32: t.green, 33: t.red, 34: t.blue, 35: t.grid, 36: t.text, 37: t.text, 38: t.bg, 39: t.border,
          40: t.secondary}[n] || t.text;
}
function themed(specText, t) {
  for (let n = PLACEHOLDERS; n >= 1; n--) {
    specText = specText.replaceAll("#0000" + String(n).padStart(2, "0"), placeholderColor(n, t));
  }
  const spec = JSON.parse(specText);
  const layout = (spec.layout = spec.layout || {});
  const template = (layout.template = layout.template || {});
  const axis = {gridcolor: t.grid, zerolinecolor: t.grid, tickcolor: t.grid, linecolor: t.grid,
                tickfont: {color: t.text}, title: {font: {color: t.text}}, automargin: true};
  template.layout = Object.assign({}, template.layout || {}, {
    font: {color: t.text, family: t.font},
    title: {font: {color: t.heading}, x: 0, xanchor: "left"},
    legend: {font: {color: t.text}, bordercolor: "rgba(0,0,0,0)"},
    paper_bgcolor: t.bg, plot_bgcolor: t.bg,
    xaxis: axis, yaxis: axis,
    hoverlabel: {bgcolor: t.bg, bordercolor: t.border, font: {color: t.text}},
  });
  for (const key of Object.keys(layout)) {  // subplots: xaxis2, yaxis2...
    if (/^[xy]axis\\d+$/.test(key)) template.layout[key] = axis;
  }
  return spec;
}
function point(p) {
  const out = {curve_number: p.curveNumber, point_number: p.pointNumber, point_index: p.pointIndex, x: p.x, y: p.y};
  if (p.customdata !== undefined) out.customdata = p.customdata;
  if (p.data && p.data.legendgroup) out.legendgroup = p.data.legendgroup;
  return out;
}
export default function ({ data, parentElement, setTriggerValue }) {
  let box = parentElement.querySelector(":scope > div.ragmetrics-figure");
  if (!box) {
    box = document.createElement("div");
    // marked as a plot from the start: a check for drawn charts waits for this one too
    box.className = "ragmetrics-figure js-plotly-plot";
    box.style.width = "100%";
    parentElement.appendChild(box);
  }
  const spec = themed(data.spec, theme(parentElement));
  box.style.height = (spec.layout.height || 450) + "px";
  let gone = false;
  loadPlotly(data.src).then((Plotly) => {
    if (gone) return;
    return Plotly.react(box, spec.data || [], spec.layout, Object.assign({responsive: true}, data.config)).then(() => {
      if (gone || !data.clickable) return;
      box.removeAllListeners && box.removeAllListeners("plotly_click");
      box.on("plotly_click", (event) => setTriggerValue("select", (event.points || []).map(point)));
    });
  }).catch((error) => {
    box.textContent = String(error);
  });
  return () => {
    gone = true;
    setTimeout(() => { if (!box.isConnected && window.Plotly) window.Plotly.purge(box); }, 0);
  };
}
"""


def _ignore() -> None:
    """A click's rerun needs a callback; the clicked points are read from the result."""


def draw(fig: go.Figure, *, key: str, config: dict[str, Any], clickable: bool) -> list[dict[str, Any]]:
    """Draw ``fig`` (see the module); return the points a click on it chose, for the run after the click (else
    [])."""
    if not classic_drawable(fig, BUNDLE_TRACES):
        if not clickable:
            st.plotly_chart(fig, key=key, config=config, theme="streamlit")
            return []
        event = st.plotly_chart(
            fig, key=key, config=config, theme="streamlit", on_select="rerun", selection_mode="points"
        )
        return list(event.selection.points) if event is not None else []
    component = st.components.v2.component(COMPONENT, js=JS, isolate_styles=False)
    data = {"spec": pio.to_json(fig, validate=False), "config": config, "src": script_url(), "clickable": clickable}
    if not clickable:
        component(key=key, data=data)
        return []
    points = component(key=key, data=data, on_select_change=_ignore).get("select")
    return list(points) if isinstance(points, list) else []
