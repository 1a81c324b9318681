"""Upload: an evaluation dataset and any number of runs, in every format ``ragmetrics.io`` reads, then the
validation report (id mismatches, empty results, duplicates, ties, queries without relevant documents,
small categories, and each run's health: judged@10, relevant documents retrieved, id overlap, with the likely
cause and a fix when a run's ids do not meet the qrels) before anything is scored. Runs of any format may name
chunks: a chunk pattern or a chunk-mapping file maps them to documents. Reads ``ds, runs``; an upload selects
what it added, and ``cv`` (the depth chart drawn).
Uploads land in the store (``ui.cache.get_workspace``); a file that fails to load changes nothing stored.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import health, validation
from dashboard.core.queries import dataset_summary
from dashboard.core.text import md_escape
from dashboard.ui import cache, ingest, layout, state, widgets

page = layout.page_setup(  # the report shows health
    "upload", "Upload", needs_runs=False, health_banner=False, writes="uploading datasets and runs"
)
view = page.state
workspace = page.workspace
if workspace.read_only:  # every upload would be refused: the set-up said so, and whom to ask
    layout.finish(page, view)
    st.stop()

with st.expander("Formats", icon=":material/help:"):
    st.markdown(ingest.FORMATS_HELP)
ingest.show_upload_budget()

st.subheader("1 · Dataset")
st.caption(
    "One file (evaluation set JSON/JSONL, TREC qrels, CSV/TSV/Parquet qrels, ranx JSON, or a BEIR .zip), "
    "or a qrels file together with files named *queries* and *corpus*. Runs below are added to the dataset selected in the sidebar."
)
state.keep(*ingest.TYPED_KEYS)  # what the user typed here waits for the upload while another page is open
name_column, description_column, targets_column = st.columns([1, 2, 1])
name_column.text_input(
    "Name",
    key=ingest.NAME_KEY,
    max_chars=200,
    placeholder="e.g. SciFact test (the file's name when empty)",
    help="How the dataset is named in the pickers and reports; rename it later on the Workspace page.",
)
description_column.text_input(
    "Description",
    key=ingest.DESCRIPTION_KEY,
    max_chars=2000,
    placeholder="what the queries are, where the judgments come from",
)
targets_column.text_input(
    "Targets (optional)",
    key=ingest.TARGETS_KEY,
    max_chars=500,
    placeholder="faq, or ndcg@10>0.6,recall@5>0.9",
    help="The thresholds this dataset's runs should clear: a profile (faq, tech, legal, overview) or metric>value "
    "items. The Overview checks them until a view picks others.",
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
    with st.expander("Chunk ids → documents (optional, any run format)", icon=":material/call_split:"):
        left, right = st.columns(2)
        left.text_input(
            "Chunk pattern",
            key=ingest.CHUNK_PATTERN_KEY,
            placeholder=r"e.g. (?P<doc>.+)_C\d+$  or  #",
            help=ingest.CHUNK_PATTERN_HELP,
        )
        right.file_uploader(
            "Chunk-mapping file",
            type=ingest.CHUNK_MAPPING_TYPES,
            key=ingest.CHUNK_MAPPING_KEY,
            help=ingest.CHUNK_MAPPING_HELP,
        )
        st.caption(
            "Only when the run's ids are chunks and the qrels judge documents. Set these before uploading the runs."
        )
    with st.expander("Run metadata (optional): commit, branch, system, model…", icon=":material/sell:"):
        tags_refused = layout.change_help(workspace, "edit tags")
        if tags_refused:  # an upload's tags are written as edits are: a run uploaded with them would be refused
            st.info(f"{tags_refused} Runs are uploaded here without metadata.", icon=":material/lock:")
        left, right = st.columns(2)
        left.text_area(
            "Tags, one KEY=VALUE per line",
            key=ingest.RUN_TAGS_KEY,
            disabled=bool(tags_refused),
            placeholder="commit=9548cd6\nbranch=main\nsystem=bm25\ndate=2025-03-01",
            help="Set on every run uploaded below (the Timeline orders runs by `date`, the Leaderboard names "
            "systems by `system`); edit them later on the Workspace page.",
        )
        right.file_uploader(
            "Retriever metadata (the RUN.json `ragmetrics retrieve` wrote)",
            type=["json"],
            key=ingest.RETRIEVAL_META_KEY,
            disabled=bool(tags_refused),
            help="Its retriever, top_k, model, latency p50/p95/max, error and empty counts become the runs' tags.",
        )
        st.caption("Set these before uploading the runs.")
    run_files = st.file_uploader(
        "Run files",
        type=ingest.RUN_TYPES,
        accept_multiple_files=True,
        key=ingest.RUNS_KEY,
        on_change=ingest.on_runs_upload,
        args=(page.dataset.id,),
    )
    pattern, mapping = ingest.chunk_options()
    dropped_on = ingest.runs_dataset(page.dataset.id)
    if run_files and dropped_on != page.dataset.id:
        elsewhere = workspace.dataset(dropped_on)
        st.caption(
            f"The files above were added to “{md_escape(elsewhere.name if elsewhere else dropped_on)}”, where they "
            "were dropped; drop files again to add runs to this dataset."
        )
    ingest.show_outcomes(  # as for the dataset above
        ingest.ingest_runs(
            run_files or [],
            dropped_on,
            workspace,
            chunk_pattern=pattern,
            chunk_mapping=mapping,
            **ingest.metadata_options(workspace),
        ),
        dropped_on,
    )

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
                "scope": st.column_config.TextColumn("scope", width="medium"),  # a run's whole name
                "count": st.column_config.NumberColumn("count", width="small"),
                "status": st.column_config.TextColumn("status", width="small"),
                "examples": st.column_config.TextColumn("examples", width="large"),
                "effect": st.column_config.TextColumn("what happens", width="large"),
            },
        )
        st.markdown("**Run health**: how each run meets the judgments")
        layout.show_table(
            health.health_frame(checked.alignments),
            key="upload.health",
            filename="health.csv",
            column_config={
                "status": st.column_config.TextColumn("status", width="medium"),  # "mostly unjudged" whole
                "judged@10": st.column_config.NumberColumn(
                    "judged@10",
                    format="percent",
                    help="Mean share of each query's top 10 that the qrels judge (of what it ranks, when fewer "
                    "than 10)",
                ),
                "relevant_retrieved": st.column_config.NumberColumn(
                    "relevant retrieved", format="percent", help="Share of the relevant judgments retrieved at any rank"
                ),
                "overlap": st.column_config.NumberColumn(
                    "overlap",
                    format="percent",
                    help="Share of the ranked queries whose ranking holds a judged document; below 2% the ids do not meet",
                ),
                "queries_ranked": st.column_config.NumberColumn("queries ranked", format="%d"),
                "queries_meeting": st.column_config.NumberColumn("meeting the qrels", format="%d"),
                "run_queries_known": st.column_config.NumberColumn(
                    "run queries known", format="percent", help="Share of the run's queries that are dataset queries"
                ),
            },
        )
        failing = cache.no_overlap(checked)
        for name, message in failing.items():
            st.error(
                f"**{md_escape(name)}: no overlap with the judgments, every metric would be 0.** " + md_escape(message),
                icon=":material/link_off:",
            )
        if failing:
            st.caption(
                "On this page the **Chunk pattern** and **Chunk-mapping file** fields (under *Chunk ids → documents*) "
                "are what `--chunk-pattern` and `--chunk-mapping` stand for: fill or clear them and upload the run "
                "again. The result pages show such a run in red too."
            )
        section, view = widgets.folded_section(
            "How deep each run ranks: the documents it retrieved per query",
            "upload.depth.shown",
            view,
            force=page.fresh,
        )
        if section is not None:
            with section:
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
