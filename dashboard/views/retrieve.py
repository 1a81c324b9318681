"""Run a retriever: call the built-in BM25 or a retriever the deployer registered for every query of the dataset,
with progress and cancel, and store the run it gives (``dashboard.ui.retrievers``). Nobody types an address here:
the choices come from the configuration. Answers are cached per retriever and query, so a cancelled or
interrupted run resumes where it stopped. Reads ``ds``; the stored run is added to ``runs``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core.share import FULL_VIEW
from dashboard.core.text import md_escape
from dashboard.ui import layout, retrievers, state

page = layout.page_setup("retrieve", "Run a retriever", needs_runs=False, writes="storing the runs a retriever gives")
view = page.state
workspace = page.workspace


def _latency(metadata: dict) -> str:
    latency = metadata.get("latency") or {}
    if not latency.get("count"):
        return "no call answered (every answer came from the cache)"
    return f"latency p50 {latency['p50_ms']:.0f} ms, p95 {latency['p95_ms']:.0f} ms, max {latency['max_ms']:.0f} ms"


stored = state.flash()
if stored:
    st.success(md_escape(stored), icon=":material/check_circle:")

if page.dataset is None:
    st.info("Load a dataset first (Upload).", icon=":material/info:")
else:
    dataset = page.dataset
    ended = None
    with layout.refused("Storing the run the retriever gave"):
        ended = retrievers.finish_job(workspace)
    if ended is not None:
        job, ran_on, entry, known = ended
        status = job.status()
        if ran_on is None:
            st.warning(
                f"{md_escape(job.label)} ended, but the dataset it ran on was deleted meanwhile: nothing was stored.",
                icon=":material/warning:",
            )
        elif ran_on.id != dataset.id and entry is not None:
            state.flash(
                f"{job.label}: run “{entry.name}” stored under the dataset it ran on, “{ran_on.name}” "
                f"({len(status.result.run) if status.result else 0:,} rows)."
            )
            st.rerun()
        elif entry is not None and status.result is not None:
            result = status.result
            failed = f"; {len(result.failed)} queries still failed" if result.failed else ""
            what = (
                f"gave the same rows as the stored run “{entry.name}” ({len(result.run):,} rows), so nothing new was stored"
                if known
                else f"run “{entry.name}” stored, {len(result.run):,} rows"
            )
            selected = view.with_run(entry.id)
            state.flash(
                f"{job.label}: {what} for {status.total:,} queries in {status.seconds:.1f} s; "
                f"{_latency(result.metadata)}{failed}. "
                + ("It is selected in the sidebar." if selected is not None else f"Not selected: {FULL_VIEW}.")
            )
            layout.rerun_with(selected or view)
        elif status.cancelled:
            st.warning(
                f"Cancelled after {status.done:,} of {status.total:,} queries. The answers so far are cached: "
                "starting again asks only the queries left.",
                icon=":material/cancel:",
            )
        else:
            st.error(md_escape(f"{job.label}: {status.error}"), icon=":material/error:")

    offered = retrievers.choices(dataset)
    layout.say_registration_problems(retrievers.registration_problems())
    running = retrievers.current_job()
    if not offered:
        st.info(
            "No retriever to run on this dataset: it has no corpus for the built-in BM25, and the deployer registered "
            f"none ({retrievers.ENV} or a [ragmetrics.retrievers] table: docs/deployment.md).",
            icon=":material/info:",
        )
    elif running is None:
        st.caption(
            f"Every query of **{md_escape(dataset.name)}** is sent to the retriever ({retrievers.CONCURRENCY} at a "
            "time, retries with backoff); the run lands in the workspace under this dataset."
        )
        with st.form("retrieve.form", border=True):
            left, middle, right = st.columns([2, 1, 2])
            label = left.selectbox("Retriever", list(offered), key="retrieve.retriever")
            k = middle.number_input("Top k", min_value=1, max_value=1000, value=100, key="retrieve.k")
            name = right.text_input(
                "Run name", key="retrieve.name", placeholder="the retriever's own name", max_chars=200
            )
            if st.form_submit_button(
                "Run it",
                icon=":material/play_arrow:",
                type="primary",
                disabled=workspace.read_only,
                help=layout.writes_help(workspace),
            ):
                retrievers.start_job(dataset, label, k=int(k), name=name.strip())
                st.rerun()
    else:
        job = running

        @st.fragment(run_every=0.5)
        def progress() -> None:
            status = job.status()
            if not status.running:
                st.rerun(scope="app")  # the page stores the run
            done = f"{status.done:,} of {status.total:,} queries" if status.total else "starting…"
            st.progress(status.fraction, text=f"{job.label}: {done} ({status.seconds:.0f} s)")
            if st.button("Cancel", icon=":material/stop:", key="retrieve.cancel"):
                job.cancel()

        progress()

layout.finish(page, view)
