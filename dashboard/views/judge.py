"""Judge: fill the holes in the judgments, the pairs that matter most first, and save them as a qrels version.

Pools the unjudged (query, document) pairs of the selected runs' top *depth* (default 10), orders them by how
much labelling each relevant would move the comparison on the sidebar's metric at K against the baseline
(pairs that cannot change anything come last), and shows one pair at a time: the query, its expected answer
and keywords beside the document's text with the evidence marked, one button per grade of the dataset's scale
(keys 0-9 press them). Every label is stored at once (author: the signed-in user, else "anonymous"), so a
reload, a second tab or a restarted server keeps it; "Save as a new qrels version" makes them a new dataset
(the dataset picker and share links then name it). A rule's suggestion (expected answer or keywords found in
the text) is offered with the rule's name and stored only when accepted. Reads ``ds, runs, base, m, k, dp, jq, jp, js``.

Several judges (tabs, servers) on one store: each is shown a pair no other holds and nobody has labelled on the
dataset's lineage, pending or saved; a grade names the pair whose buttons were pressed, and one given after
someone else labelled the pair is not stored over theirs but shown, with the choice to replace it.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import judge
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import assisted, cache, judging, layout, state, widgets
from dashboard.ui.judge_panels import conflict_notice, pair_panel, pending_panel

page = layout.page_setup("judge", "Judge", writes="labelling (each label is kept in the store)")
view = page.state

message = state.flash()
if message:
    st.success(md_escape(message), icon=":material/check_circle:")

if page.alignments and page.dataset is not None:
    ds, selection, workspace = page.dataset, page.selection, page.workspace
    spec = metric_spec(view.metric, view.k)
    names = dict(zip(selection.run_ids, selection.names))
    left, middle, _ = st.columns([1, 1, 2])
    with left:
        depth = widgets.depth_input(
            "judge.depth",
            view.depth,
            "Pool depth",
            "The unjudged documents of each selected run's top this many ranks are pooled.",
            force=page.fresh,
        )
    with middle:
        baseline = widgets.baseline_picker(
            names, view.baseline, force=page.fresh, key="judge.baseline", avoid=cache.meaningless_runs(selection)
        )
    view = view.with_(baseline=baseline, depth=depth)
    baseline_name = names.get(baseline or "", selection.names[0])

    newer = judging.newer_version(workspace, ds)
    if newer is not None:
        st.info(
            md_escape(
                f"A newer qrels version of this dataset was saved since: “{newer.name}”. Labels given here are "
                "pending on it, and saving makes the next version from it."
            ),
            icon=":material/new_releases:",
        )
        if st.button("Open the newer version", key="judge.newer", icon=":material/arrow_forward:"):
            layout.rerun_with(view.with_(dataset=newer.id))

    with st.spinner("Pooling the unjudged documents and weighing each one…"):
        queue = cache.judge_queue(selection, depth, spec, baseline_name)
    pending = judging.pending(workspace, ds.id)
    labelled = judging.labelled(workspace, ds.id)  # by anyone, pending or saved: none is offered again
    todo = judge.open_pairs(queue, labelled, judging.skipped(ds.id))
    counts = judge.queue_summary(queue, judge.open_pairs(queue, labelled), pending)
    # with one run, a pair's impact is the change of that run's own mean (judging.label_impact)
    moved = (
        f"{title(spec)}'s mean of **{md_escape(baseline_name)}**"
        if len(selection) == 1
        else f"{title(spec)}'s comparison against **{md_escape(baseline_name)}**"
    )
    outside = counts["pending_outside"]
    st.markdown(
        f"**{counts['left']:,}** of {counts['pooled']:,} unjudged pairs in the top {depth} of {len(selection)} run(s) "
        f"are left to judge ({counts['labelled']:,} labelled): **{counts['can_change']:,}** can move {moved} and come "
        f"first; {counts['cannot']:,} cannot change anything on it and come last. **{len(pending):,}** label(s) "
        "given on this version, not in a qrels version yet"
        + (
            f" ({outside:,} of them on pairs outside this pool: deeper ranks, or runs not selected)."
            if outside
            else "."
        )
        + md_escape(judge.not_pooled_note(ds.dataset))
    )

    state.seed("judge.order", view.queue, force=page.fresh)
    state.seed("judge.plan", view.plan, force=page.fresh)
    shown = st.session_state.get("judge.shown_judge") if not page.fresh else None
    started = st.session_state.get(assisted.FOLLOW_KEY)  # the judge this tab started here, once it has labelled
    follow = started[1] if started and started[0] == ds.id else None
    view = view.with_(
        queue=st.session_state["judge.order"],
        plan=st.session_state["judge.plan"],
        shown_judge=shown or view.shown_judge,
    )
    helper = assisted.assist(workspace, ds, selection, depth, view, follow=follow)
    if follow and helper.source == follow:
        del st.session_state[assisted.FOLLOW_KEY]
    todo = assisted.queue_order(todo, helper)
    if workspace.read_only:  # no pair to hold, no label to keep: the set-up said so, and whom to ask
        layout.finish(page, view)
        st.stop()
    if layout.show_refused_change(workspace, "judge"):  # a pair is held by letting go of the last: every one refused
        layout.finish(page, view)
        st.stop()
    with layout.refused("Judging (holding the pair shown for this tab, then keeping its labels)", stop=True):
        claim = judging.claim(workspace, ds.id, todo)  # held for this tab: judges elsewhere are shown other pairs
    pair = None if claim is None else judge.next_pair(todo, (claim.query_id, claim.doc_id))
    conflict_notice(workspace, ds)
    pair_panel(page, ds, pair, claim, todo, counts, pending, spec, baseline_name, depth)
    pending_panel(workspace, ds, view, pending, labelled)
    assisted.panels(workspace, ds, selection, spec, helper)
    view = view.with_(
        queue=st.session_state["judge.order"], plan=st.session_state["judge.plan"], shown_judge=helper.source or None
    )
    if pair is not None:

        @st.fragment(run_every=judging.HOLD_EVERY)
        def _keep_holding() -> None:  # while the tab is open, its pair is not offered to other judges
            judging.hold(workspace, ds.id)

        _keep_holding()
    with st.expander("The queue (next pairs first)"):
        layout.show_table(
            todo.head(500),
            key="judge.queue",
            filename=f"judge-queue-{ds.name}.csv",
            column_config={"impact": st.column_config.NumberColumn("impact", format="%.4f")},
        )

layout.finish(page, view)
