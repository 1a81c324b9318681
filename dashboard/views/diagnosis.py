"""Diagnosis: deterministic rules over each selected run at K, each citing the numbers that fired it.

Rules (see ``ragmetrics.analysis.diagnosis``): easy queries missed, hard queries missed, near misses at ranks K+1..20,
high recall but low MRR, a category far below the others. Reads ``ds, runs, m, k``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import diagnosis
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import actions, cache, layout

page = layout.page_setup("diagnosis", "Diagnosis")
view = page.state

ICONS = {"error": ":red[:material/error:]", "warning": ":orange[:material/warning:]", "info": ":blue[:material/info:]"}

if page.alignments and page.dataset is not None:
    selection, k = page.selection, view.k
    spec = metric_spec(view.metric, view.k)
    low_mrr = diagnosis.LOW_MRR
    st.caption(
        f"At K = {k}; categories compared on {title(spec)}. The rules' own thresholds: "
        + "; ".join(md_escape(t) for t in diagnosis.THRESHOLDS)
        + ". Change K and the metric in the sidebar."
    )
    all_findings = []
    tables = {}
    for run_id, name in zip(selection.run_ids, selection.names):
        traits = cache.run_traits(selection, run_id, page.workspace.tags(run_id))
        found = cache.findings(selection, run_id, k, spec, title(spec), low_mrr, traits)
        tables[name] = cache.query_table(selection, run_id, k, spec)
        all_findings += found
        st.subheader(md_escape(name))
        st.caption(md_escape(f"The run is {traits.words()}: the advice below fits that."))
        if not found:
            st.success("No rule fired for this run.", icon=":material/check_circle:")
        for f in found:
            with st.container(border=True):
                st.markdown(f"{ICONS.get(f.severity, ICONS['warning'])} **{md_escape(f.title)}**")
                st.markdown(md_escape(f.evidence))
                for advice in f.advice:
                    st.markdown(f"- {md_escape(advice)}")
                    because = diagnosis.evidence_words(advice)
                    if because:
                        st.caption(md_escape(because))
        if diagnosis.suggests_bm25(traits):
            actions.hybrid_button(page, run_id)
        actions.raise_k_button(page, run_id)
    st.subheader("Where the first relevant document sits")
    layout.show_figure(
        diagnosis.rank_histogram_figure(tables, k, runs=page.run_names),
        key="diagnosis.ranks",
        filename=f"first-relevant-rank-k{k}",
    )
    with st.expander("All findings as a table"):
        layout.show_table(diagnosis.findings_frame(all_findings), key="diagnosis.table", filename=f"diagnosis-k{k}.csv")

layout.finish(page, view)
