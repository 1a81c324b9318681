"""Router only: ``streamlit run dashboard/app.py``. Pages live in ``dashboard/views`` (see ``views.VIEWS``).

When the deployer configures sign-in (``dashboard.ui.auth``: a shared password or OIDC), the gate runs first:
until the session is signed in, no page runs, nothing reads the store and the sidebar has no menu.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from dashboard.ui import auth, figures, state
from dashboard.ui.gate import SignInGate, read_forwarded_headers_only_from_trusted_proxies
from dashboard.ui.memory import UploadBudget
from dashboard.views import VIEWS
from ragmetrics.foundation.memory import use_small_pages_for_this_process

# `streamlit run dashboard/app.py` finds this and serves the app through it: the sign-in gate wraps every route
# and the websocket of the server, before any of Streamlit's own (dashboard.ui.gate); behind it, uploads are kept
# within the session's and the server's budget (dashboard.ui.memory); its one route of its own serves Plotly's
# script, which the browser caches and code-caches (dashboard.ui.figures)
read_forwarded_headers_only_from_trusted_proxies()  # uvicorn reads X-Forwarded-* only from the deployer's proxies
app = st.App(
    __file__,
    routes=figures.script_routes(str(st.get_option("server.baseUrlPath") or "")),
    middleware=[Middleware(SignInGate), Middleware(UploadBudget)],
)

# Streamlit's own table export (the toolbar's "Download as CSV") does not neutralise formulas, where the app's
# download buttons do (ragmetrics.io.export): it is off, whatever configuration the server was started with
st.set_option("client.disableDataExport", True)

# a file served by this server: a Material icon would make every browser fetch it from Google's font CDN
FAVICON = str(Path(__file__).parent / "assets" / "favicon.svg")


def main() -> None:
    # in a function so tests can drive the router (as Streamlit's own hello app does)
    st.set_page_config(page_title="ragmetrics", page_icon=FAVICON, layout="wide")
    use_small_pages_for_this_process()  # the server is ragmetrics' own process (see ragmetrics.foundation.memory)
    signed_in = auth.gate()  # draws the sign-in form when sign-in is configured and still needed
    state.set_pages([v.key for v in VIEWS], [p for v in VIEWS for p in (v.key, f"{v.key}-home")])
    sections: dict[str, list[st.Page]] = {}
    for view in VIEWS:
        if view.default:
            # served at "/"; the hidden twin keeps "/overview" (the path in share links) working too
            page = st.Page(view.path, title=view.title, icon=view.icon, url_path=f"{view.key}-home", default=True)
            twin = st.Page(view.path, title=view.title, icon=view.icon, url_path=view.key, visibility="hidden")
            sections.setdefault(view.section, []).extend([page, twin])
        else:
            page = st.Page(view.path, title=view.title, icon=view.icon, url_path=view.key)
            sections.setdefault(view.section, []).append(page)
    if not signed_in:
        # No menu and no page run (so no store access); registering the pages keeps the address's page path,
        # which Streamlit would otherwise reset to "/", so a share link opens its page once signed in.
        st.navigation(sections, position="hidden")
        return
    st.navigation(sections, expanded=True).run()  # every page listed: no "View more" fold


if __name__ == "__main__":
    main()
