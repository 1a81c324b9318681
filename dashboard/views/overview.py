"""Overview, top to bottom: the verdict (the best run against the baseline on the sidebar's metric at K), the curves
over K (on the first screen: Plotly's script is code-cached by the browser, see ``dashboard.ui.figures``), each
selected run at K (means with 95% intervals), the precision-recall chart, targets pass/fail when a profile is picked,
the report.

Reads ``ds, runs, base, m, k, prof, tgt, t, a, c, ms, jb, dp, cv`` from the URL (see ``dashboard.core.share.PARAM_KEYS``); the
verdict is Compare's, on the same family of comparisons.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import diagnosis, overview, report, targets
from dashboard.core.intervals import MEAN_INTERVAL_RULE, interval_name, interval_words
from dashboard.core.queries import dataset_summary
from dashboard.core.specs import label_title, metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import assisted, cache, layout, widgets

page = layout.page_setup("overview", "Overview", shows_results=True)
view = page.state

if page.alignments and page.dataset is not None:
    selection, alignments, k, ds = page.selection, page.alignments, view.k, page.dataset
    names = dict(zip(selection.run_ids, selection.names))
    comparison = None
    if len(alignments) >= 2:
        left, _ = st.columns([1, 2])
        with left:
            base_id = widgets.baseline_picker(
                names, view.baseline, force=page.fresh, key="overview.baseline", avoid=cache.meaningless_runs(selection)
            )
        view = view.with_(baseline=base_id)
        specs = cmp.compared_specs(alignments, view.metric, k, view.metrics)[0]
        spec = cmp.focus_spec(specs, view.metric, k)  # Compare's focus, on Compare's family
        comparison = cache.comparison(
            selection,
            names[base_id or selection.run_ids[0]],
            specs,
            view.test,
            view.alpha,
            view.correction,
            view.bounds_depth,
            segments=False,
        )
        layout.show_verdict(cmp.verdict(comparison, spec))
        focus = "the sidebar's metric and K" if spec == metric_spec(view.metric, k) else "the first metric compared"
        st.caption(
            f"On {title(spec)} ({focus}); {cmp.family_text(comparison)}, the family of Compare and Dataset power too. "
            "Test, α, correction, the metrics and the bounds from the unjudged documents: **Compare runs** page."
        )
        depths = overview.unequal_depths(alignments, spec.k)
        if depths:
            st.caption(md_escape(depths))

    st.subheader("Curves over K")
    k_max = overview.display_k_max(alignments)
    n_queries = alignments[0].n_queries
    with st.spinner("Computing confidence bands…"):
        curves = cache.curve_frame(selection, k_max)
        curves_figure, pr_figure = cache.curve_figures(selection, k_max, page.run_names, page.every_run_name)
    st.caption(
        f"Mean over {n_queries:,} queries{overview.left_out_words(alignments[0])} for K = 1…{k_max}; shaded: the 95% "
        "interval of each mean, "
        f"{interval_words(curves['interval'])}. The camera button in a chart's toolbar saves it as PNG."
    )
    layout.show_figure(curves_figure, key="overview.curves", filename="curves")

    st.subheader(f"Metrics at K = {k}")
    means = overview.overview_frame(alignments, k)
    labels = {c: label_title(c) for c in means.columns[2:]}
    layout.show_small_table(means, key="overview.metrics", filename=f"overview-k{k}.csv", labels=labels)
    assisted.corrected_elsewhere(page.workspace, ds, selection, metric_spec(view.metric, k), view.depth, view)
    summary = cache.summary_frame(selection, overview.overview_specs(k), view.bounds_depth)
    heading = f"Means with 95% confidence intervals: {interval_words(summary['interval'])}"
    if view.bounds:
        heading += f", and their worst and best if the unjudged documents in each run's top {view.depth} were judged"
    intervals = widgets.opened_section(heading, "overview.ci.open", opened=view.bounds)
    if intervals is not None:
        with intervals:
            layout.show_small_table(
                summary,
                key="overview.ci",
                filename=f"overview-ci-k{k}.csv",
                labels={
                    "mean": "mean",
                    "ci_low": "95% CI low",
                    "ci_high": "95% CI high",
                    "worst": "if judged: worst",
                    "best": "if judged: best",
                },
                texts={"metric": label_title, "interval": interval_name},
            )

    layout.show_figure(pr_figure, key="overview.pr", filename="precision-recall")
    numbers, view = widgets.folded_section(
        "Curve data: the numbers behind both charts", "overview.curve_data", view, force=page.fresh
    )
    if numbers is not None:
        with numbers:
            layout.show_table(curves, key="overview.curves.table", filename="curves.csv")

    st.subheader("Targets")
    left, right = st.columns([1, 2])
    with left:
        declared = page.dataset.targets if page.dataset is not None else ""
        profile = widgets.profile_picker(view.profile, force=page.fresh, declared=declared)
        if profile != view.profile:
            view = view.with_(profile=profile, targets=None)
        if profile == targets.NO_PROFILE and declared:
            st.caption("The thresholds this dataset declares; pick a profile or No targets to change them.")
        else:
            st.caption(targets.DESCRIPTIONS.get(profile, "Pick a profile to check each run against its thresholds."))
    in_force, notes = targets.current_targets(view.profile, view.targets, declared)
    if view.profile or in_force:
        with right:
            editing = widgets.opened_section("Edit targets", "overview.targets.edit", icon=":material/edit:")
        if editing is None:
            widgets.targets_editor_folded()
        else:
            with editing:
                in_force, more, reset = widgets.targets_editor(view.profile, in_force, declared, fresh=page.fresh)
                notes += more
                if reset:
                    layout.rerun_with(view.with_(targets=None))
        view = view.with_(targets=targets.edited_text(view.profile, in_force, declared))
    for note in notes:
        st.warning(note)
    checks = cache.target_checks(selection, targets.format_targets(in_force))
    if in_force:
        st.caption(
            f"✓ pass: the lower end of the mean's 95% interval ({MEAN_INTERVAL_RULE}) clears the target · "
            "? uncertain: only the mean does · "
            "✗ fail (same verdicts as `ragmetrics check`)."
        )
        wide = targets.targets_table(checks)
        verdicts = dict.fromkeys(wide.columns.drop(["run", "met"]), targets.marked_cell)
        layout.show_small_table(wide, key="overview.targets", filename="targets.csv", markdown=verdicts)

    st.subheader("Report")
    link = layout.share_link(view)

    hits = metric_spec("hits", k)

    def report_input() -> report.ReportInput:
        # runs when a report is downloaded (Streamlit's deferred download), not on every draw of the page
        return report.ReportInput(
            dataset=ds.name,
            summary=dataset_summary(ds.dataset),
            k=k,
            profile=targets.in_force_title(view.profile, declared, bool(in_force)),
            overview=means,
            summary_ci=summary,
            checks=checks,
            findings=[f for a in alignments for f in diagnosis.run_findings(a, k, hits, hits.title)],
            link=link,
            verdict=(cmp.verdict(comparison, spec, markdown=False) or "") if comparison else "",
            comparison=cmp.comparison_display(
                cmp.comparison_frame(comparison), comparison.baseline, comparison.correction
            )
            if comparison
            else None,
            family=cmp.family_text(comparison) if comparison else "",
        )

    c1, c2, _ = st.columns([1, 1, 3])
    c1.download_button(
        "HTML report",
        lambda: report.html_report(report_input()).encode("utf-8"),
        file_name=f"ragmetrics-{ds.name}-k{k}.html",
        mime="text/html",
        on_click="ignore",
        icon=":material/description:",
        key="overview.report.html",
    )
    c2.download_button(
        "Markdown report",
        lambda: report.markdown_report(report_input()).encode("utf-8"),
        file_name=f"ragmetrics-{ds.name}-k{k}.md",
        mime="text/markdown",
        on_click="ignore",
        icon=":material/article:",
        key="overview.report.md",
    )

layout.show_results_only(page)
layout.finish(page, view)
