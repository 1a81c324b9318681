"""Advice that becomes an action on Diagnosis: "try hybrid (+BM25)" builds or reuses BM25 over the dataset's
corpus, fuses it with the run (RRF), stores the fused run and opens Compare on the pair, baseline the run; "raise
top_k" runs the registered retriever that made the run again with a larger k, on the "Run a retriever" page."""

from __future__ import annotations

import streamlit as st

from dashboard.core.text import md_escape
from dashboard.ui import layout, retrievers, state
from ragmetrics.foundation.errors import RagMetricsError


def hybrid_button(page: layout.Page, run_id: str) -> None:
    """The "Try hybrid (+BM25)" button of one selected run (when the dataset has a corpus); Diagnosis offers it
    only to a run that is neither fused nor lexical (:func:`dashboard.core.diagnosis.suggests_bm25`)."""
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


def raise_k_button(page: layout.Page, run_id: str) -> None:
    """The "Re-run with a larger top_k" button of a selected run that a registered retriever (or BM25) made."""
    dataset = page.dataset
    run = next((r for r in page.runs if r.id == run_id), None)
    label = None if dataset is None or run is None else retrievers.made_by(dataset, run)
    if dataset is None or run is None or label is None or retrievers.current_job() is not None:
        return
    k = min(RAISED_K_MAX, max(2 * page.selection.by_id[run_id].depth, RAISED_K_MIN))
    if st.button(
        f"Re-run {label} with top_k = {k}",
        icon=":material/expand:",
        key=f"diagnosis.top_k.{run_id}",
        help="Ask the retriever that made this run for more documents per query (relevant documents it ranked "
        "too deep, or not at all, may come in); the new run lands in the workspace.",
    ):
        retrievers.start_job(dataset, label, k=k, name=f"{run.name} (top {k})")
        st.switch_page("views/retrieve.py")


RAISED_K_MIN, RAISED_K_MAX = 50, 1000
"""The larger top_k offered: twice the run's depth, within these."""
