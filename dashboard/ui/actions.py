"""Advice that becomes an action: "try hybrid (+BM25)" on Diagnosis builds or reuses BM25 over the dataset's
corpus, fuses it with the run (RRF), stores the fused run and opens Compare on the pair, baseline the run."""

from __future__ import annotations

import streamlit as st

from dashboard.core.text import md_escape
from dashboard.ui import layout, retrievers, state
from ragmetrics.errors import RagMetricsError


def hybrid_button(page: layout.Page, run_id: str) -> None:
    """The "Try hybrid (+BM25)" button of one selected run (when the dataset has a corpus)."""
    dataset = page.dataset
    run = next((r for r in page.runs if r.id == run_id), None)
    if dataset is None or run is None or not retrievers.has_corpus(dataset):
        return
    if not st.button(
        "Try hybrid (+BM25)",
        icon=":material/join_inner:",
        key=f"diagnosis.hybrid.{run_id}",
        help="Fuse this run with the built-in BM25 over the dataset's corpus (reciprocal rank fusion, k = 60), store "
        "the fused run and compare it with this one.",
    ):
        return
    try:
        with st.spinner("Building BM25 over the corpus (once per corpus), retrieving and fusing…"):
            fused = retrievers.try_hybrid(page.workspace, dataset, run)
    except RagMetricsError as err:
        st.error(md_escape(str(err)), icon=":material/error:")
        return
    view = page.state.with_(page="compare", runs=(run.id, fused.id), baseline=run.id, focus_run=fused.id)
    state.write_view_state(view, reseed=True)
    st.switch_page("views/compare.py")
