"""Workspace: what the store holds. Every stored dataset with its size, query count and time added, the runs
of the dataset selected in the sidebar, and rename and delete (delete asks first). The qrels versions of the
selected dataset's lineage (parent, author, time, labels), the difference between two of them (added, changed,
removed judgments) and whether they tell the same story about the runs on the sidebar's metric (Kendall's tau,
swapped pairs, changed verdicts). The picked run's metadata (tags) is edited here and downloads as ir_metadata
YAML. Reads ``ds, runs, m, k``.

Everything here is shared: the store is the team's when it is PostgreSQL, so a rename or delete is seen by
everyone using it, and links to deleted data stop working until the same files are uploaded again.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard.core import RagMetricsError, metadata
from dashboard.core.text import md_escape
from dashboard.ui import layout, state
from dashboard.ui.versions_panel import versions_panel

page = layout.page_setup("workspace", "Workspace", needs_runs=False)
view = page.state
workspace = page.workspace

message = state.flash()
if message:
    st.success(md_escape(message), icon=":material/check_circle:")

refused = layout.changes_note(workspace)
if refused:
    st.info(refused, icon=":material/lock:")

datasets = workspace.datasets()
n_runs = len({r.id for d in datasets for r in workspace.runs(d.id)})
st.markdown(
    f"**{len(datasets)}** dataset(s) and **{n_runs}** run(s) in the store "
    f"({md_escape(workspace.describe_store())}). Uploads land here automatically; ids are hashes of the content, "
    "so the same files get the same id on every server."
)

st.subheader("Datasets")
table = workspace.dataset_table()
layout.show_table(
    table,
    key="workspace.datasets",
    filename="datasets.csv",
    column_config={
        "id": st.column_config.TextColumn("id", help="Content id: the `ds` of share links"),
        "queries": st.column_config.NumberColumn("queries", format="%d"),
        "judgments": st.column_config.NumberColumn("judgments", format="%d"),
        "runs": st.column_config.NumberColumn("runs", format="%d"),
        "size": st.column_config.TextColumn("size", help="Stored size (compressed)"),
        "added": st.column_config.TextColumn("time added"),
        "source": st.column_config.TextColumn("source", help="The file(s) it was first read from"),
        "description": st.column_config.TextColumn("description", width="large"),
    },
)


def _rename(label: str, key: str, current: str, apply: Callable[[str], Any]) -> None:
    """A name field and a Rename button; ``apply(name)`` renames and returns the new entry."""
    with st.form(key=key, border=False):
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        name = left.text_input(label, value=current, key=f"{key}.name", max_chars=200)
        if right.form_submit_button(
            "Rename",
            icon=":material/edit:",
            disabled=workspace.refuses("rename"),
            help=layout.change_help(workspace, "rename"),
        ):
            if name.strip() == current:
                return
            try:
                entry = apply(name)
            except RagMetricsError as err:  # empty, taken, or gone meanwhile
                st.error(md_escape(str(err)), icon=":material/error:")
                return
            state.flash(f"Renamed “{current}” to “{entry.name}”.")
            layout.rerun_with(view)


def _confirm(what: str, detail: str, on_yes: Callable[[], None]) -> None:
    """The question a pending delete waits on, with Delete and Cancel."""
    with st.container(border=True):
        st.warning(md_escape(f"Delete {what}? {detail}"), icon=":material/warning:")
        yes, no, _ = st.columns([1, 1, 4])
        if yes.button("Delete", type="primary", key="workspace.confirm.yes", icon=":material/delete:"):
            state.settle()
            on_yes()
        if no.button("Cancel", key="workspace.confirm.no"):
            state.settle()
            st.rerun()


def _metadata_editor(run_id: str, run_name: str) -> None:
    """The run's tags as an editable table, saved together; its ir_metadata YAML as a download."""
    st.markdown(
        "**Metadata** of the run: its tags (commit, branch, system, model, chunk_size, top_k, date, note, and what "
        "`ragmetrics retrieve` recorded). Add, edit or delete rows, then save.",
        help="Keys other pages read: " + "; ".join(f"{k}: {v}" for k, v in metadata.KNOWN_TAGS.items()),
    )
    tags = workspace.tags(run_id)
    version = hashlib.sha256(repr(sorted(tags.items())).encode("utf-8")).hexdigest()[:8]  # a fresh editor per save
    edited = st.data_editor(
        metadata.tag_frame(tags),
        key=f"workspace.tags.{run_id}.{version}",
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "key": st.column_config.TextColumn("key", help="Letters, digits, _ . - (e.g. commit, retriever.kind)"),
            "value": st.column_config.TextColumn("value", width="large"),
        },
    )
    changed = not metadata.tag_frame(tags).equals(edited.reset_index(drop=True))
    save, download, note = st.columns([1, 2, 2], vertical_alignment="center")
    if changed:
        note.caption(":material/edit_note: Unsaved changes")
    if save.button("Save metadata", key=f"workspace.tags.save.{run_id}", icon=":material/save:",
                   disabled=workspace.refuses("edit tags"), help=layout.change_help(workspace, "edit tags")):  # fmt: skip
        try:
            new = metadata.tags_from_frame(edited, tags)
            workspace.set_tags(run_id, new, replace=True)
        except RagMetricsError as err:
            st.error(md_escape(str(err)), icon=":material/error:")
        else:
            state.flash(f"Saved {len(new)} tag(s) of run “{run_name}”.")
            layout.rerun_with(view)
    if dataset is not None:
        named, source = dataset.name, dataset.source or None  # bound now: the file is written on a later click
        download.download_button(
            "Download ir_metadata YAML",
            lambda: metadata.ir_metadata_yaml(tags, run_name=run_name, run_id=run_id, dataset=named,
                                              dataset_source=source),
            file_name=f"{run_name}.ir_metadata.yaml", mime="application/yaml",
            key=f"workspace.tags.yaml.{run_id}", on_click="ignore", icon=":material/download:",
            help="The run's tags in the ir_metadata (PRIMAD) format; see docs/history.md for the subset written",
        )  # fmt: skip


dataset = page.dataset
if dataset is not None:  # without one, the page's set-up said where to add one, or whom to ask
    st.subheader(f"Dataset “{md_escape(dataset.name)}”")
    st.caption(
        f"`{dataset.id}` · {dataset.n_queries:,} queries · {dataset.n_judgments:,} judgments · "
        f"added {dataset.added:%Y-%m-%d %H:%M} UTC"
        + (f" from {md_escape(dataset.source)}" if dataset.source else "")
        + ". Pick another dataset in the sidebar."
    )
    if dataset.description:
        st.markdown(md_escape(dataset.description))
    _rename(
        "Dataset name",
        f"workspace.rename.dataset.{dataset.id}",
        dataset.name,
        functools.partial(workspace.rename_dataset, dataset.id),
    )
    pending = state.pending()
    if pending == ("delete-dataset", dataset.id):
        runs_here = workspace.runs(dataset.id)
        shared = workspace.shared_runs(dataset.id)
        going = len(runs_here) - len(shared)
        detail = (
            f"This removes “{dataset.name}” and {going} of its {len(runs_here)} run(s) from the store, for everyone "
            "using it"
            + (f" ({len(shared)} run(s) stay: other datasets use them)" if shared else "")
            + ". Links to it stop working until the same files are uploaded again."
        )
        staying = [e for e in workspace.family(dataset.id) if e.id != dataset.id]  # where a version's labels move
        if dataset.version is not None and staying:
            detail += " Its labels not saved yet move to the nearest dataset of its lineage that stays."
        elif workspace.pending_place(dataset.id) == dataset.id and len(unsaved := workspace.pending_labels(dataset.id)):
            detail += f" Its {len(unsaved)} label(s) not saved in a version go with it."

        def _delete_dataset(ident: str = dataset.id, name: str = dataset.name) -> None:
            with layout.refused(f"Deleting dataset “{name}”"):
                n, labels = workspace.delete_dataset(ident)
                state.flash(
                    f"Deleted dataset “{name}”, {n} run(s)" + (f" and {labels} unsaved label(s)." if labels else ".")
                )
                layout.rerun_with(
                    view.with_(
                        dataset=None, runs=(), baseline=None, focus_run=None, query=None, category=None, difficulty=None
                    )
                )

        _confirm(f"dataset “{dataset.name}”", detail, _delete_dataset)
    elif st.button("Delete dataset…", key="workspace.delete.dataset", icon=":material/delete:",
                   disabled=workspace.refuses("delete"), help=layout.change_help(workspace, "delete")):  # fmt: skip
        state.ask("delete-dataset", dataset.id)
        st.rerun()

    versions_panel(workspace, dataset, view)

    st.subheader("Runs")
    runs = workspace.runs(dataset.id)
    if not runs:
        st.info(
            "This dataset has no runs." + ("" if workspace.read_only else " Add some on the Upload page."),
            icon=":material/upload_file:",
        )
    else:
        layout.show_table(
            workspace.run_table(dataset.id),
            key="workspace.runs",
            filename=f"runs-{dataset.name}.csv",
            column_config={
                "id": st.column_config.TextColumn("id", help="Content id: one of the `runs` of share links"),
                "queries": st.column_config.NumberColumn("queries", format="%d"),
                "rows": st.column_config.NumberColumn("rows", format="%d"),
                "size": st.column_config.TextColumn("size", help="Stored size (compressed)"),
                "added": st.column_config.TextColumn("time added"),
                "source": st.column_config.TextColumn("source", help="The file it was first read from"),
            },
        )
        names = {r.id: r.name for r in runs}
        picked = st.selectbox(
            "Run to rename or delete", list(names), format_func=lambda i: names.get(i, i), key="workspace.run"
        )
        run = workspace.run(dataset.id, picked) if picked else None
        if run is not None:
            _rename(
                "Run name",
                f"workspace.rename.run.{run.id}",
                run.name,
                functools.partial(workspace.rename_run, dataset.id, run.id),
            )
            _metadata_editor(run.id, run.name)
            if state.pending() == ("delete-run", run.id):
                others = [d.name for d in workspace.datasets() if d.id != dataset.id and workspace.run(d.id, run.id)]
                detail = (
                    f"This removes run “{run.name}” ({run.n_rows:,} rows) from the store, for everyone using it"
                    + (f", also from {', '.join(others)}" if others else "")
                    + ". Links that name it will say it is missing until the same file is uploaded again."
                )

                def _delete_run(ident: str = run.id, name: str = run.name) -> None:
                    with layout.refused(f"Deleting run “{name}”"):
                        workspace.delete_run(ident)
                        state.flash(f"Deleted run “{name}”.")
                        left = tuple(r for r in view.runs if r != ident)
                        layout.rerun_with(
                            view.with_(runs=left, baseline=view.baseline if view.baseline != ident else None)
                        )

                _confirm(f"run “{run.name}”", detail, _delete_run)
            elif st.button("Delete run…", key="workspace.delete.run", icon=":material/delete:",
                           disabled=workspace.refuses("delete"), help=layout.change_help(workspace, "delete")):  # fmt: skip
                state.ask("delete-run", run.id)
                st.rerun()

    stored = workspace.results(dataset.id)
    if stored:
        st.subheader("Per-query results without rankings")
        st.caption("Pushed with ragmetrics push --per-query; the Overview shows their means and intervals.")
        layout.show_table(
            workspace.results_table(dataset.id), key="workspace.results", filename=f"results-{dataset.name}.csv"
        )
        labels = {r.id: r.name for r in stored}
        gone = st.selectbox(
            "Results to delete", list(labels), format_func=lambda i: labels.get(i, i), key="workspace.results.pick"
        )
        if gone and st.button("Delete these results", key="workspace.results.delete", icon=":material/delete:",
                              disabled=workspace.refuses("delete results"),
                              help=layout.change_help(workspace, "delete results")):  # fmt: skip
            with layout.refused(f"Deleting the per-query results “{labels[gone]}”"):
                workspace.delete_results(gone)
                state.flash(f"Deleted the per-query results “{labels[gone]}”.")
                st.rerun()

layout.finish(page, view)
