"""Router only: ``streamlit run dashboard/app.py``. Pages live in ``dashboard/views`` (see ``views.VIEWS``)."""

from __future__ import annotations

import streamlit as st

from dashboard.views import VIEWS


def main() -> None:
    # in a function so tests can drive the router (as Streamlit's own hello app does)
    st.set_page_config(page_title="ragmetrics", page_icon=":material/query_stats:", layout="wide")
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
    st.navigation(sections).run()


if __name__ == "__main__":
    main()
