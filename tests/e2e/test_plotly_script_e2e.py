"""The Overview's curves are on its first screen, drawn by Plotly's script loaded as a classic script from an address
the browser caches for good (``dashboard.ui.figures``): a returning browser takes it from its cache."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from dashboard.ui.figures import SCRIPT_PATH
from tests.e2e.server import WCAG_AA, mark_contrasts, streamlit_server, wait_for_app

TIMEOUT = 60_000

pytestmark = pytest.mark.e2e

DRAWN = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.length >= 2 && plots.every(g => g._fullLayout && g.querySelector('.main-svg'));
}"""


def rgb(color: str) -> str:
    """``#RRGGBB`` as the browser writes a computed colour."""
    h = color.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[i : i + 2], 16) for i in (0, 2, 4))) if len(h) == 6 else color


def test_the_overview_draws_its_curves_at_once_with_a_cached_classic_plotly_script(
    browser: Browser, app_url: str
) -> None:
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        responses: list = []
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        page.on("response", lambda r: responses.append(r) if r.url.endswith(SCRIPT_PATH) else None)
        page.goto(f"{app_url}/")
        wait_for_app(page, TIMEOUT)
        page.wait_for_function(DRAWN, timeout=TIMEOUT)  # no click anywhere: the curves are on the first screen
        plots = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => ({
                traces: g.data.length, points: g.querySelectorAll('.scatterlayer .trace').length,
                folded: !!g.closest('details'), title: g._fullLayout.title.text || '',
                paper: g._fullLayout.paper_bgcolor, font: g._fullLayout.font.color}))"""
        )
        assert len(plots) == 2, plots  # the curves over K, precision against recall
        assert all(p["traces"] >= 3 and p["points"] >= 3 and not p["folded"] for p in plots), plots
        # Streamlit's theme, read from the page: the app's background and text colour, not Plotly's defaults
        colors = page.evaluate(
            """() => { const s = getComputedStyle(document.querySelector("[data-testid='stApp']"));
                       return {bg: s.backgroundColor, text: s.color}; }"""
        )
        assert all(rgb(p["paper"]) == colors["bg"] and rgb(p["font"]) == colors["text"] for p in plots), (plots, colors)

        scripts = page.evaluate(
            """() => [...document.querySelectorAll('script[src]')]
                .filter(s => s.src.includes('/_ragmetrics/plotly-'))
                .map(s => ({src: s.src, type: s.type, module: s.type === 'module'}))"""
        )
        assert len(scripts) == 1 and scripts[0]["src"].endswith(SCRIPT_PATH), scripts  # loaded once for both
        assert scripts[0]["type"] in ("", "text/javascript") and not scripts[0]["module"]  # a classic script
        assert not any("PlotlyChart" in url for url in asked)  # Streamlit's ES-module chunk is not loaded
        assert len(responses) == 1 and responses[0].status == 200
        headers = responses[0].all_headers()
        assert headers["cache-control"] == "public, max-age=31536000, immutable", headers
        assert headers.get("content-encoding") == "gzip"

        # hover shows a point's label, as st.plotly_chart did
        box = page.locator(".js-plotly-plot").first
        box.scroll_into_view_if_needed()
        where = page.evaluate(
            """() => { const gd = document.querySelector('.js-plotly-plot');
                const t = gd._fullData.findIndex(t => t.visible !== false && t.mode && t.mode.includes('lines'));
                const tr = gd._fullData[t], xa = gd._fullLayout[(tr.xaxis || 'x').replace('x', 'xaxis')],
                      ya = gd._fullLayout[(tr.yaxis || 'y').replace('y', 'yaxis')], b = gd.getBoundingClientRect();
                return {x: b.left + xa._offset + xa.d2p(tr.x[2]), y: b.top + ya._offset + ya.d2p(tr.y[2])}; }"""
        )
        page.mouse.move(where["x"], where["y"])
        page.wait_for_function(
            "() => document.querySelector('.js-plotly-plot .hoverlayer .hovertext') !== null", timeout=TIMEOUT
        )
        # the toolbar's camera downloads a PNG
        box.hover()
        with page.expect_download(timeout=TIMEOUT) as download:
            box.locator(
                ".modebar-btn[data-attr='format'], .modebar-btn[data-title^='Download plot as a PNG']"
            ).first.click()
        assert download.value.suggested_filename == "curves.png"

        # a returning browser (the same profile, a new tab and session): the script comes from the cache
        again = context.new_page()
        cdp = context.new_cdp_session(again)
        cdp.send("Network.enable")
        script: list[dict] = []  # how the returning tab got the script
        cdp.on(
            "Network.responseReceived",
            lambda e: script.append(e["response"]) if e["response"]["url"].endswith(SCRIPT_PATH) else None,
        )
        again.goto(f"{app_url}/")
        wait_for_app(again, TIMEOUT)
        again.wait_for_function(DRAWN, timeout=TIMEOUT)
        assert len(script) == 1, script
        assert script[0].get("fromDiskCache") or script[0].get("fromMemoryCache"), script  # not asked of the server
    finally:
        context.close()


def test_a_dark_theme_draws_the_curves_dark_and_the_marks_readable(browser: Browser) -> None:
    with streamlit_server(env={"STREAMLIT_THEME_BASE": "dark"}) as base:
        context = browser.new_context(viewport={"width": 1500, "height": 1100})
        try:
            page = context.new_page()
            page.goto(f"{base}/")
            wait_for_app(page, TIMEOUT)
            page.wait_for_function(DRAWN, timeout=TIMEOUT)
            plots = page.evaluate(
                """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => ({
                    paper: g._fullLayout.paper_bgcolor, font: g._fullLayout.font.color,
                    grid: g._fullLayout.yaxis.gridcolor}))"""
            )
            colors = page.evaluate(
                """() => { const s = getComputedStyle(document.querySelector("[data-testid='stApp']"));
                           return {bg: s.backgroundColor, text: s.color}; }"""
            )
            dark = [int(c) for c in colors["bg"][4:-1].split(",")]
            assert sum(dark) < 3 * 80, colors  # the page is dark
            assert all(rgb(p["paper"]) == colors["bg"] and rgb(p["font"]) == colors["text"] for p in plots), (
                plots,
                colors,
            )
            # the marked passages (Missed queries' first query) read in the dark theme's shades
            page.goto(f"{base}/missed")
            wait_for_app(page, TIMEOUT)
            contrasts = mark_contrasts(page)
            assert len(contrasts) >= 3 and min(contrasts.values()) >= WCAG_AA, contrasts
        finally:
            context.close()
