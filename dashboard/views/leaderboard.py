"""Leaderboard: systems (the values of a tag, ``system`` by default) x the stored datasets (the newest qrels
version of each) on the sidebar's metric: each dataset's mean and the system's rank, the mean rank and the mean
over datasets, a † where a system does not differ significantly from the dataset's best; Markdown, CSV and LaTeX
downloads. The numbers are :func:`ragmetrics.analysis.history.leaderboard`'s, as ``ragmetrics leaderboard`` prints them.

Reads ``m, k, sys, t, a`` (see ``dashboard.core.share.PARAM_KEYS``).
"""

from __future__ import annotations

import functools

import streamlit as st

from dashboard.core import leaderboard as lb
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout, state, widgets

page = layout.page_setup("leaderboard", "Leaderboard", needs_runs=False, health_banner=False)
view = page.state
workspace = page.workspace

datasets = [(d, workspace.stored_runs(d.id)) for d in workspace.leaf_datasets()]
every_run = [r for _, runs in datasets for r in runs]
choices = lb.system_tags(every_run)
if not choices:
    st.info(
        "No stored run has a tag yet. Tag runs with their system (`ragmetrics push --meta system=NAME`, the Upload "
        "page's metadata, or the Workspace page) to rank them here.",
        icon=":material/sell:",
    )
else:
    c1, c2, c3 = st.columns([3, 3, 2])
    with c1:
        if view.system_tag not in choices:
            st.caption(md_escape(f"No run has a {view.system_tag!r} tag: showing {choices[0]!r}."))
        start = view.system_tag if view.system_tag in choices else choices[0]
        state.seed(
            "leaderboard.system", start, force=page.fresh or state.widget_value("leaderboard.system") not in choices
        )
        system_tag = st.selectbox("Systems are named by the tag", choices, key="leaderboard.system")
    with c2:
        test = widgets.significance_test_picker("leaderboard.test", view.test, force=page.fresh)
    with c3:
        alpha = widgets.alpha_picker("leaderboard.alpha", view.alpha, force=page.fresh)
    view = view.with_(system_tag=system_tag, test=test, alpha=alpha)
    spec = metric_spec(view.metric, view.k)
    with st.spinner("Scoring every system on every dataset…"):
        board = cache.leaderboard(datasets, spec, system_tag=system_tag, test=test, alpha=alpha)
    if board.means.empty:
        st.info(md_escape(f"No run has a {system_tag!r} tag."), icon=":material/sell:")
    else:
        st.markdown(f"**{title(spec)}**: {len(board.means)} system(s) on {len(board.datasets)} dataset(s).")
        layout.show_table(lb.leaderboard_table(board), key="leaderboard.table", filename=f"leaderboard-{spec}.csv")
        st.caption(
            md_escape(board.footnote()) + ". The mean and mean rank need a run on every dataset. A † asks another "
            "question than the Overview's verdict and Compare: each system against its dataset's best on this one "
            "metric, where they correct over every pair of the runs they compare x every metric they show, so a pair "
            "can differ significantly here and not there."
        )
        for note in board.notes:
            st.caption(md_escape(note))
        cols = st.columns(len(lb.EXPORTS))
        for col, (label, (extension, mime)) in zip(cols, lb.EXPORTS.items()):
            col.download_button(
                f"Download {label}", functools.partial(lb.export, board, label), file_name=f"leaderboard-{spec}.{extension}", mime=mime,
                key=f"leaderboard.{extension}", on_click="ignore", icon=":material/download:",
            )  # fmt: skip
        with st.expander("The run behind each cell", icon=":material/table_rows:"):
            layout.show_table(board.runs, key="leaderboard.runs", filename=f"leaderboard-runs-{spec}.csv")

layout.finish(page, view)
