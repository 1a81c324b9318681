"""Upload: an evaluation dataset and any number of runs, in every format ``ragmetrics.io`` reads, then the
validation report (id mismatches, empty results, duplicates, ties, queries without relevant documents,
small categories) before anything is scored. Reads ``ds, runs``; an upload selects what it added.
Uploads land in the store (``ui.cache.get_workspace``); a file that fails to load changes nothing stored.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import validation
from dashboard.core.queries import dataset_summary
from dashboard.core.text import md_escape
from dashboard.ui import cache, ingest, layout

page = layout.page_setup("upload", "Upload", needs_runs=False)
view = page.state
workspace = page.workspace

with st.expander("Formats", icon=":material/help:"):
    st.markdown(ingest.FORMATS_HELP)

st.subheader("1 · Dataset")
st.caption(
    "One file (evaluation set JSON/JSONL, TREC qrels, CSV/TSV/Parquet qrels, ranx JSON, or a BEIR .zip), "
    "or a qrels file together with files named *queries* and *corpus*. Runs below are added to the dataset selected in the sidebar."
)
dataset_files = st.file_uploader(
    "Dataset files",
    type=ingest.DATASET_TYPES,
    accept_multiple_files=True,
    key=ingest.DATASET_KEY,
    on_change=ingest.on_dataset_upload,
)
ingest.show_outcomes([ingest.ingest_dataset(dataset_files or [], workspace)])  # the callback ingested it: its outcome

st.subheader("2 · Runs")
if page.dataset is None:
    st.info("Load a dataset first.")
else:
    st.caption(
        f"Runs are added to **{md_escape(page.dataset.name)}**. TREC, JSONL, CSV/TSV, Parquet or ranx JSON; .gz is fine."
    )
    run_files = st.file_uploader(
        "Run files",
        type=ingest.RUN_TYPES,
        accept_multiple_files=True,
        key=ingest.RUNS_KEY,
        on_change=ingest.on_runs_upload,
        args=(page.dataset.id,),
    )
    ingest.show_outcomes(ingest.ingest_runs(run_files or [], page.dataset.id, workspace))  # as for the dataset above

    st.subheader("3 · Validation report")
    runs = page.runs or workspace.runs(page.dataset.id)
    if not runs:
        st.info("Upload at least one run to see how it lines up with the dataset.")
    else:
        with st.spinner("Checking the runs against the dataset…"):
            checked = cache.select(page.dataset, runs)
            report = cache.validation_frame(page.dataset, checked)
        cache.prefetch_curves(checked.alignments)  # for the overview, while this page is drawn and read
        summary = dataset_summary(page.dataset.dataset)
        cols = st.columns(4)
        cols[0].metric("Queries", f"{summary['queries']:,}")
        cols[1].metric("Judged queries", f"{summary['judged_queries']:,}")
        cols[2].metric("Runs checked", len(checked))
        cols[3].metric("Checks to look at", validation.to_look_at(report))
        layout.show_table(
            report,
            key="upload.validation",
            filename="validation.csv",
            height=min(38 + 35 * len(report), 1200),
            column_config={
                "scope": st.column_config.TextColumn("scope", width="small"),
                "count": st.column_config.NumberColumn("count", width="small"),
                "status": st.column_config.TextColumn("status", width="small"),
                "examples": st.column_config.TextColumn("examples", width="medium"),
                "effect": st.column_config.TextColumn("what happens", width="medium"),
            },
        )
        layout.show_figure(
            validation.depth_figure(validation.depth_frame(checked.alignments), runs=list(checked.names)),
            key="upload.depth",
            filename="depth",
        )
        st.caption("Everything looks right? Open **Overview** in the menu: the uploaded runs are selected.")

st.subheader("Loaded")
st.caption(
    "Everything uploaded is kept in the store, so it survives a restart and, with a shared PostgreSQL store, "
    "every dashboard process sees it. Rename or delete on the **Workspace** page (menu, under Data)."
)
layout.show_table(workspace.dataset_table(), key="upload.workspace", filename="datasets.csv")

layout.finish(page, view)
