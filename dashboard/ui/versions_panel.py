"""The Workspace's qrels versions: a dataset's versions (the labels each added to its parent), the difference between
two of them, and how stable the runs' order and verdicts are under both (:mod:`dashboard.core.versions`)."""

from __future__ import annotations

import streamlit as st

from dashboard.core import versions
from dashboard.core.share import ViewState
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.data.workspace import DatasetEntry, Workspace
from dashboard.ui import cache, layout, state


def versions_panel(workspace: Workspace, dataset: DatasetEntry, view: ViewState) -> None:
    """Draw the panel for ``dataset``'s family of versions; the sidebar's metric at K is the stability's."""
    st.subheader("Qrels versions")
    family = {e.id: e for e in workspace.family(dataset.id)}
    if len(family) < 2:
        st.caption(
            "No qrels version was made from this dataset yet: label pairs on the Judge page, then save them as a "
            "new version. Versions are datasets of their own: the sidebar's dataset picker opens them, and share "
            "links name the version."
        )
    else:
        layout.show_table(
            workspace.version_table(dataset.id),
            key="workspace.versions",
            filename=f"versions-{dataset.name}.csv",
            column_config={
                "id": st.column_config.TextColumn("id", help="The version's content id: the `ds` of share links"),
                "parent": st.column_config.TextColumn("parent", help="The version it was made from"),
                "labels": st.column_config.NumberColumn("labels", format="%d", help="Labels it added to its parent"),
                "people's": st.column_config.NumberColumn("people's", format="%d", help="Of them, people's labels"),
                "judges'": st.column_config.NumberColumn(
                    "judges'", format="%d", help="Of them, a judge's: judgments of this version, not a person's"
                ),
                "judgments": st.column_config.NumberColumn("judgments", format="%d"),
            },
        )
        ids = list(family)
        current = family[dataset.id]
        before_default = current.version.parent if current.version and current.version.parent in family else ids[0]
        after_default = dataset.id if current.version else ids[-1]
        left, right = st.columns(2)

        def _version_label(i: str) -> str:
            return family[i].label if i in family else i

        state.seed(
            "workspace.diff.before", before_default, force=state.widget_value("workspace.diff.before") not in ids
        )
        state.seed("workspace.diff.after", after_default, force=state.widget_value("workspace.diff.after") not in ids)
        before_id = left.selectbox("Before", ids, format_func=_version_label, key="workspace.diff.before")
        after_id = right.selectbox("After", ids, format_func=_version_label, key="workspace.diff.after")
        before, after = family[before_id], family[after_id]
        if before_id == after_id:
            st.info("Pick two different versions to compare them.", icon=":material/compare_arrows:")
        else:
            diff = cache.qrels_diff(before, after)
            counts = versions.diff_counts(diff)
            cols = st.columns(4)
            cols[0].metric("Judgments added", f"{counts['added']:,}")
            cols[1].metric("Changed", f"{counts['changed']:,}")
            cols[2].metric("Removed", f"{counts['removed']:,}")
            cols[3].metric("Judgments after", f"{after.n_judgments:,}", delta=after.n_judgments - before.n_judgments)
            layout.show_table(
                diff,
                key="workspace.diff",
                filename=f"qrels-diff-{before.id}-{after.id}.csv",
                column_config={
                    "before": st.column_config.NumberColumn("before", format="%d"),
                    "after": st.column_config.NumberColumn("after", format="%d"),
                },
            )
            in_both = [r for r in workspace.runs(after.id) if workspace.run(before.id, r.id) is not None]
            spec = metric_spec(view.metric, view.k)
            st.markdown(f"**Stability** of the runs on {title(spec)} (change the metric and K in the sidebar)")
            if not in_both:
                st.info("The two versions share no run to compare.", icon=":material/info:")
            else:
                with st.spinner("Scoring the runs under both versions…"):
                    result = cache.qrels_stability(before, after, in_both, spec, view.test, view.alpha, view.correction)
                summary = versions.stability_summary(result)
                tau_col, swapped_col, changed_col = st.columns(3)
                tau_col.metric(
                    "Kendall's tau",
                    "n/a" if summary.tau is None else f"{summary.tau:.3f}",
                    help="Of the runs' order under both versions: 1 = the same order",
                )
                swapped_col.metric("Swapped pairs", len(summary.swapped))
                changed_col.metric("Changed verdicts", f"{summary.changed} of {summary.pairs}")
                if summary.swapped:
                    st.warning(
                        "Order swapped: " + ", ".join(md_escape(p) for p in summary.swapped),
                        icon=":material/swap_vert:",
                    )
                means = versions.stability_means(result)
                layout.show_table(
                    means,
                    key="workspace.stability.means",
                    filename=f"stability-means-{spec}.csv",
                    column_config=layout.number_columns(
                        means, {"before": "before", "after": "after", "change": "change"}
                    ),
                )
                verdicts = versions.stability_verdicts(result)
                st.caption(
                    f"Each pair under each version: {view.test} test at alpha {view.alpha:g}, {result.family} "
                    "(Compare's test, alpha and correction; one metric, so its own family)."
                )
                layout.show_table(
                    verdicts,
                    key="workspace.stability.verdicts",
                    filename=f"stability-verdicts-{spec}.csv",
                    column_config={
                        **layout.number_columns(
                            verdicts,
                            {
                                "delta_before": "Δ before",
                                "p_before": "p before",
                                "delta_after": "Δ after",
                                "p_after": "p after",
                            },
                        ),
                        "changed": st.column_config.CheckboxColumn("verdict changed"),
                    },
                )
