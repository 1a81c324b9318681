"""Metric definitions: every metric of the ``ragmetrics`` registry with its formula and conventions. Reads no URL params."""

from __future__ import annotations

import streamlit as st

from dashboard.core.metrics_reference import metrics_reference_frame
from dashboard.ui import layout

page = layout.page_setup("metrics", "Metric definitions", needs_runs=False)

st.markdown(
    "The numbers in this dashboard equal trec_eval's (run with `-c`) wherever trec_eval has the measure. "
    "Common rules: a document is relevant when its label is at least 1; a run is ranked by score descending, "
    "ties broken by document id descending; a judged query missing from a run scores 0 and counts in the mean; "
    "chunks are mapped to their document, which counts at the rank of its first chunk."
)
reference = metrics_reference_frame()
for row in reference.itertuples(index=False):
    # one Markdown element a card (the browser lays out each element on its own); the formula as inline code: a
    # code block would load its highlighter for one line
    also = f"Also accepted: {row.aliases}. " if row.aliases else ""
    trec_eval = ", ".join(f"`{name}`" for name in row.trec_eval.split(", ")) if row.trec_eval else ""
    title = f"**{row.display}** · `{row.name}`" + (f" · trec_eval {trec_eval}" if trec_eval else "")
    st.container(border=True).markdown(
        f"{title}\n\n`{row.formula}`\n\n{row.conventions}\n\n:gray[{also}Cut-off: {row.cutoff}.]"
    )
with st.expander("As a table"):
    layout.show_table(reference, key="metrics.table", filename="metrics.csv")

layout.finish(page)
