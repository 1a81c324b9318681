"""Compare's fusion panel: "what if we went hybrid?". Runs picked with a method (RRF, CombSUM, CombMNZ), weights
and a name are fused (:mod:`dashboard.core.fusion`), previewed against their inputs at K, downloaded as a TREC
file, or added to the workspace like any other run (every page then sees it)."""

from __future__ import annotations

import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import fusion
from dashboard.core.share import FULL_VIEW, ViewState
from dashboard.core.specs import title
from dashboard.core.text import md_escape
from dashboard.data.workspace import DatasetEntry
from dashboard.ui import cache, layout, state, widgets

OPEN = "compare.fuse.open"
KEPT = (OPEN, "compare.fuse.runs", "compare.fuse.method", "compare.fuse.k", "compare.fuse.norm", "compare.fuse.name")
WEIGHT = "compare.fuse.w."  # one weight a run, keyed by the run's id


def fusion_panel(page: layout.Page, ds: DatasetEntry, view: ViewState) -> None:
    """Draw the panel for the runs of ``ds``, folded: its controls and preview are computed and sent only while it
    is open (a rerun when it opens or folds); adding the fused run reruns the page with it selected."""
    st.divider()
    st.subheader("What if we went hybrid? Fuse runs")
    # its settings stay as the user left them while it is folded or another page is open
    state.keep(*KEPT, WEIGHT)
    section = widgets.opened_section(
        "Fuse runs (RRF, CombSUM, CombMNZ) and preview the fused run against its inputs",
        OPEN,
        icon=":material/call_merge:",
    )
    if section is not None:
        with section:
            _fuse(page, ds, view)


def _fuse(page: layout.Page, ds: DatasetEntry, view: ViewState) -> None:
    stored = page.workspace.runs(ds.id)
    fusable = {r.id: r.name for r in stored}
    if len(fusable) < 2:
        st.info("Fusion needs at least two runs of this dataset; add runs on the Upload page.", icon=":material/info:")
    else:
        st.caption(
            "RRF adds 1 / (k + rank) over the runs that retrieved a document; CombSUM adds normalised scores; CombMNZ "
            "multiplies that sum by the number of runs that retrieved it. Ties are broken deterministically. "
            "**Add** makes the fused run a run like any other: it is stored, selected in the sidebar and shown on every page."
        )
        key = "compare.fuse.runs"
        state.seed(
            key,
            [r for r in view.runs if r in fusable][:2] or list(fusable)[:2],
            force=any(r not in fusable for r in (state.widget_value(key) or [])),
        )
        c1, c2, c3, c4 = st.columns([4, 2, 1, 2])
        with c1:
            chosen_ids = st.multiselect("Runs to fuse", list(fusable), format_func=lambda i: fusable.get(i, i), key=key)
        with c2:
            method = st.selectbox(
                "Method",
                list(fusion.FUSION_METHODS),
                format_func=lambda m: fusion.FUSION_LABELS[m],
                key="compare.fuse.method",
            )
        with c3:
            state.seed("compare.fuse.k", 60)
            rrf_k = int(
                st.number_input(
                    "k",
                    min_value=0,
                    max_value=1000,
                    step=10,
                    key="compare.fuse.k",
                    disabled=method != "rrf",
                    help="RRF's rank offset (60 in Cormack et al.)",
                )
            )
        with c4:
            norm = st.selectbox(
                "Score normalisation",
                list(fusion.NORM_CHOICES),
                format_func=lambda n: fusion.NORM_LABELS[n],
                key="compare.fuse.norm",
                disabled=method == "rrf",
                help="CombSUM and CombMNZ only",
            )
        weights: list[float] = []
        if chosen_ids:
            wcols = st.columns(max(len(chosen_ids), 4))
            for i, rid in enumerate(chosen_ids):
                with wcols[i % len(wcols)]:
                    state.seed(WEIGHT + rid, 1.0)
                    weights.append(
                        float(
                            st.number_input(
                                f"weight · {md_escape(fusable[rid])}",
                                min_value=0.0,
                                max_value=10.0,
                                step=0.1,
                                key=WEIGHT + rid,
                            )
                        )
                    )
        entries = [r for r in stored if r.id in chosen_ids]
        entries.sort(key=lambda r: chosen_ids.index(r.id))
        default_name = fusion.fused_name([r.name for r in entries], method, k=rrf_k, norm=norm, weights=weights)
        name = str(
            st.text_input("Name of the fused run", placeholder=default_name, key="compare.fuse.name", max_chars=200)
        ).strip()
        if len(entries) < 2:
            st.caption("Pick at least two runs to fuse.")
        elif not any(weights):
            st.caption("Give one run a weight above 0: with every weight 0, every fused score is 0.")
        else:
            with st.spinner("Fusing…"):
                fused, fused_alignment = cache.fused_run(
                    ds, entries, method=method, k=rrf_k, norm=norm, weights=weights, name=name or default_name
                )
                specs_now = cmp.compare_specs(view.metric, view.k, view.metrics)
                inputs = cache.select(ds, entries)
                preview = cache.fusion_preview(
                    inputs, fused_alignment, (method, rrf_k, norm, tuple(weights), fused.name), specs_now
                )
            st.markdown(f"**{md_escape(fused.name)}** against its inputs at K = {view.k}:")
            layout.show_table(
                preview,
                key="compare.fuse.preview",
                filename=f"fusion-preview-k{view.k}.csv",
                column_config={
                    **layout.number_columns(preview, {str(s): title(s) for s in specs_now}),
                    "role": st.column_config.TextColumn("role", width="small"),
                },
            )
            existing = page.workspace.stored_run(ds.id, fused)
            b1, b2, _ = st.columns([2, 2, 3])
            with b1:
                add = st.button(
                    "Add to the workspace and compare",
                    icon=":material/add_circle:",
                    type="primary",
                    key="compare.fuse.add",
                    disabled=existing is not None and existing.id in view.runs,
                )
            with b2:
                unwritable = fusion.trec_problem(fused)  # written on click: a refusal then would be a server error
                st.download_button(
                    "Download TREC run",
                    (lambda: fusion.trec_bytes(fused)) if unwritable is None else b"",
                    file_name=f"{fusion.file_stem(fused.name)}.trec",
                    mime="text/plain",
                    on_click="ignore",
                    icon=":material/download:",
                    key="compare.fuse.download",
                    disabled=unwritable is not None,
                    help=None if unwritable is None else f"Not offered: {unwritable}.",
                )
                if unwritable is not None:
                    st.caption(md_escape(f"No TREC file of this run: {unwritable}."))
            if existing is not None:
                where = (
                    "selected in the sidebar"
                    if existing.id in view.runs
                    else "stored (select it in the sidebar to see it)"
                    if view.with_run(existing.id) is not None
                    else f"stored, not selected: {FULL_VIEW}"
                )
                st.success(
                    f"This fused run is in the workspace as **{md_escape(existing.name)}**, {where}.",
                    icon=":material/check_circle:",
                )
            if add:
                entry = cache.add_run(
                    page.workspace,
                    ds,
                    fused,
                    source=fusion.fusion_source([r.name for r in entries], method, k=rrf_k, norm=norm, weights=weights),
                    tags=fusion.fusion_tags([r.name for r in entries], method, k=rrf_k, norm=norm, weights=weights),
                )
                selected = view.with_run(entry.id)
                if selected is None:  # stored, and said so below
                    st.rerun()
                else:
                    runs = selected.runs
                    layout.rerun_with(selected.with_(focus_run=entry.id if len(runs) > 1 else view.focus_run))
