"""Timeline: the selected dataset's stored runs in time (their ``date`` tag) or another tag's order, the sidebar's
metric with its 95% CI per run, each step's paired test against the run before (and against a pinned baseline),
and the first significant drop flagged; a tag filter (branch, system...). A click on a step's point, or its link,
opens Compare on it.
The numbers are :func:`ragmetrics.analysis.history.timeline`'s, as ``ragmetrics history`` prints them.

Reads ``ds, m, k, by, where, base, t, a`` (see ``dashboard.core.share.PARAM_KEYS``); a pinned baseline is also
selected in the sidebar.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import timeline as tl
from dashboard.core.share import FULL_VIEW
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout, state, widgets

page = layout.page_setup("timeline", "Timeline", needs_runs=False, health_banner=False)
view = page.state
NONE = "(none)"

if page.dataset is not None:
    runs = page.workspace.stored_runs(page.dataset.id)
    if not runs:
        st.info("This dataset has no runs yet: push some (`ragmetrics push --meta date=...`) or upload them.")
    else:
        orders = tl.order_choices(runs)
        filters = [tl.ALL, *tl.tag_filters(runs)]
        names = {r.id: r.name for r in runs}
        if view.order_by not in orders:
            st.info(md_escape(f"No run has a {view.order_by!r} tag: ordered by date."), icon=":material/info:")
        if view.where and view.where not in filters:
            st.info(md_escape(f"No run has the tag {view.where}: showing every run."), icon=":material/info:")
        c1, c2, c3, c4, c5 = st.columns([2, 3, 3, 3, 2])
        with c1:
            state.seed("timeline.by", view.order_by if view.order_by in orders else tl.DATE_TAG,
                       force=page.fresh or state.widget_value("timeline.by") not in orders)  # fmt: skip
            by = st.selectbox(
                "Order by", orders, key="timeline.by", help="The date tag (else the time stored), or a tag's values"
            )
        with c2:
            where = view.where if view.where in filters else tl.ALL
            state.seed("timeline.where", where, force=page.fresh or state.widget_value("timeline.where") not in filters)
            picked = st.selectbox("Only runs tagged", filters, key="timeline.where")
        with c3:
            options = [NONE, *names]
            pinned = view.baseline if view.baseline in names else NONE
            state.seed(
                "timeline.baseline", pinned, force=page.fresh or state.widget_value("timeline.baseline") not in options
            )
            baseline = st.selectbox("Pinned baseline", options, key="timeline.baseline",
                                    format_func=lambda i: names.get(i, i),
                                    help="Every run is also tested against this one")  # fmt: skip
        with c4:
            test = widgets.significance_test_picker("timeline.test", view.test, force=page.fresh)
        with c5:
            alpha = widgets.alpha_picker("timeline.alpha", view.alpha, force=page.fresh)
        base_id = None if baseline == NONE else baseline
        with_baseline = view.with_run(base_id) if base_id else view  # the sidebar shows the baseline
        if with_baseline is None:
            st.caption(md_escape(f"The baseline is not selected in the sidebar: {FULL_VIEW}."))
        view = (with_baseline or view).with_(
            order_by=by, where=None if picked == tl.ALL else picked, baseline=base_id, test=test, alpha=alpha
        )
        spec = metric_spec(view.metric, view.k)
        key, _, value = (view.where or "").partition("=")
        with st.spinner("Testing every step…"):
            line = cache.timeline(page.dataset, runs, spec, by=by, where={key: value} if view.where else {},
                                  baseline=base_id, test=test, alpha=alpha)  # fmt: skip
        for note in line.notes:
            st.caption(md_escape(note))
        if line.frame.empty:
            st.warning("No run matches this filter.", icon=":material/filter_alt_off:")
        else:
            message = tl.drop_message(line, title(spec))
            root = layout.app_base_url("timeline")
            links = [f"{root}/{link}" if root and link else link for link in tl.step_links(line, view)]
            if message and line.first_drop is not None:
                st.error(md_escape(message), icon=":material/trending_down:")
                st.link_button(
                    "Open this step in Compare", links[line.first_drop - 1], icon=":material/compare_arrows:"
                )
            else:
                st.success(
                    f"No significant drop of {title(spec)} over {len(line.frame)} run(s).",
                    icon=":material/check_circle:",
                )
            clicked = layout.show_figure(
                tl.timeline_figure(line, title(spec)),
                key="timeline.figure",
                filename=f"timeline-{spec}",
                clickable=True,
            )
            step = tl.clicked_step(clicked)
            compare = None if step is None else tl.step_view(line, view, step)
            if compare is not None:  # a click on a point opens Compare for that step
                state.write_view_state(compare, reseed=True)
                st.switch_page("views/compare.py")
            shown = [k for k in ("branch", "system", "commit") if any(k in t for t in line.tags.values())]
            table = tl.timeline_table(line, links, shown)
            layout.show_table(
                table,
                key="timeline.table",
                filename=f"timeline-{spec}.csv",
                column_config={
                    "mean": st.column_config.NumberColumn("mean", format="%.4f"),
                    "Δ previous": st.column_config.NumberColumn("Δ previous", format="%+.4f"),
                    "p": st.column_config.NumberColumn("p", format="%.3g", help="Paired test against the run before"),
                    "Δ baseline": st.column_config.NumberColumn("Δ baseline", format="%+.4f"),
                    "p baseline": st.column_config.NumberColumn(
                        "p baseline",
                        format="%.3g",
                        help=f"Paired test against the pinned baseline, {line.baseline_family_text}",
                    ),
                    "compare": st.column_config.LinkColumn(
                        "compare", display_text="open in Compare", help="This run against the one before it"
                    ),
                },
            )
            st.caption(
                f"Δ previous: this run − the run before, with its {tl.intervals_name(line.correction, line.alpha)} "
                f"({line.interval_text}); mean: its 95% CI ({line.mean_interval_text}); p: the {test} "
                f"test, {line.family_text}"
                + (
                    " (each step is its own question, as `ragmetrics history` gates the last one)"
                    if line.correction == "none"
                    else ""
                )
                + f"; a drop is p < {alpha:g} with Δ < 0"
                + (
                    f". p baseline: the {test} test against the pinned baseline, {line.baseline_family_text}"
                    if line.baseline_family_text
                    else ""
                )
                + f". The same numbers: `ragmetrics history --dataset {page.dataset.id} -m {spec}"
                + (f" --by {by}" if by != tl.DATE_TAG else "")
                + (f" --baseline {line.baseline}" if line.baseline else "")
                + (f" --where {view.where}" if view.where else "")
                + "`."
            )

layout.finish(page, view)
