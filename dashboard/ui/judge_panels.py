"""The Judge page's panels: the notice when another judge labelled a pair first, the pair being judged with its
grade buttons, and the labels given but not saved (withdraw, save as a qrels version). The page pools and orders
the pairs, then calls them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.core import documents, judge
from dashboard.core.queries import query_info
from dashboard.core.share import ViewState
from dashboard.core.specs import MetricSpec, title
from dashboard.core.text import highlight_markdown, md_escape
from dashboard.data.workspace import DatasetEntry, Workspace
from dashboard.ui import assisted, judging, layout, state, widgets
from ragmetrics.foundation.errors import RagMetricsError

NOTHING_PENDING = (
    "No label is pending on this version any more (withdrawn, or saved by another tab or server, meanwhile): "
    "nothing was saved."
)
"""What a Save click that finds no label to save says."""


def conflict_notice(workspace: Workspace, ds: DatasetEntry) -> None:
    """When a grade was not stored because another judge labelled the pair meanwhile: theirs, and the choice."""
    clash = judging.conflict()
    notice = st.empty()  # always drawn: the places below keep their positions whether a notice shows or not
    if clash is not None and clash.dataset_id == ds.id:
        theirs = clash.existing
        where = "saved in a qrels version" if theirs.get("version") else "not in a qrels version yet"
        with notice.container(border=True):
            st.warning(
                f"{md_escape(clash.doc_id)} for {md_escape(clash.query_id)} was labelled **{theirs['label']}** by "
                f"{md_escape(str(theirs['author']))} meanwhile ({where}): your grade **{clash.grade}** was not "
                "stored.",
                icon=":material/group:",
            )
            ours = judge.pair_key(clash.query_id, clash.doc_id)
            with st.container(horizontal=True):
                st.button(
                    f"Replace it with my grade {clash.grade}",
                    key=f"judge.conflict.replace.{ours}",
                    on_click=judging.replace,
                    args=(workspace, clash),
                )
                st.button("Keep their label", key=f"judge.conflict.keep.{ours}", on_click=judging.dismiss_conflict)


def pair_panel(
    page: layout.Page, ds: DatasetEntry, pair: pd.Series | None, claim: judging.Claim | None, todo: pd.DataFrame,
    counts: dict[str, int], pending: pd.DataFrame, spec: MetricSpec, baseline_name: str, depth: int,
) -> None:  # fmt: skip
    """The pair to judge (the query beside the document's text), one button per grade, Skip, the rule's
    suggestion, and the last label's correction buttons; or why there is no pair."""
    workspace, selection = page.workspace, page.selection
    scale = judge.grade_scale(ds.dataset)
    level = page.alignments[0].conventions.rel_level
    # the pair, its buttons and the last label's, in one of two places that take turns when the pair changes: the
    # other place is emptied first, so while the page reruns the previous pair's text and buttons go at once and
    # never show (or take a key) beside the next pair's; a key then grades the pair whose buttons are drawn
    places = (st.empty(), st.empty())
    shown = f"{ds.id}:{judge.pair_key(str(pair['query_id']), str(pair['doc_id'])) if pair else ''}"
    with places[judging.place_for(shown)].container():
        last = judging.last_given()
        if last is not None and last[0] == ds.id and not pending.empty:
            last_query, last_doc, last_grade = last[1:4]
            with st.container(horizontal=True, vertical_alignment="center"):
                st.caption(
                    f"Last label: {md_escape(last_doc)} for {md_escape(last_query)} → **{last_grade}**. A slip? Change it "
                    "(the latest label of a pair is the one saved):"
                )
                for grade in scale:
                    if grade != last_grade:
                        st.button(
                            str(grade),
                            key=f"judge.relabel.{grade}.{judge.pair_key(last_query, last_doc)}",
                            type="tertiary",
                            on_click=judging.give,
                            args=(workspace, ds.id, last_query, last_doc, grade),
                        )
        if pair is None:
            if len(todo):
                st.info("The pairs left were labelled by other judges a moment ago.", icon=":material/group:")
            elif counts["left"]:
                st.info("You skipped every pair that is left.", icon=":material/skip_next:")
                if st.button("Bring the skipped pairs back", key="judge.unskip"):
                    judging.unskip_all(ds.id)
                    st.rerun()
            else:
                st.success(
                    f"Nothing left to judge in the top {depth} of these runs. Save the labels below, or pool deeper.",
                    icon=":material/task_alt:",
                )
        else:
            query_id, doc_id, position = str(pair["query_id"]), str(pair["doc_id"]), int(str(pair["position"]))
            token = judge.pair_key(query_id, doc_id)  # in every key below: a press names the pair it was given for
            info = query_info(ds.dataset, query_id)
            marks = documents.marks_for(ds.dataset, query_id)
            found = documents.pair_text(page.alignments, ds.dataset, query_id, doc_id)
            if claim is not None and claim.shared:
                st.info(
                    "Another judge is being shown this pair too (every pair left is). If they label it first, you "
                    "will be told, and can keep their label or replace it.",
                    icon=":material/group:",
                )
            by_impact = st.session_state.get("judge.order") != "plan"  # the plan's order is not by impact
            if not pair["can_change"] and by_impact and not counts["can_change"]:
                st.info(
                    f"Labelling this pair cannot change anything on {title(spec)} against {md_escape(baseline_name)}: "
                    "every pair left that can comes first, and none is left. Labels still fill the judgments.",
                    icon=":material/info:",
                )
            st.caption(
                f"Pair {position + 1:,} of {len(todo):,} left"
                + (
                    (
                        " (the pair before it is shown in another tab"
                        if position == 1
                        else f" (the {position:,} before it are shown in other tabs"
                    )
                    + ": another judge's, or one of yours reloaded or closed a moment ago, whose pair comes back to "
                    "the queue within seconds)"
                    if position
                    else ""
                )
                + (f", {skipped:,} skipped in this tab" if (skipped := counts["left"] - len(todo)) > 0 else "")
                + f" · best rank {pair['best_rank']} · retrieved there by "
                f"{pair['runs']} of {len(selection)} run(s) · impact on the "
                f"{'mean' if len(selection) == 1 else 'mean difference'} {pair['impact']:.4f}"
            )
            query_side, doc_side = st.columns(2, border=True)
            with query_side:
                st.markdown(f"#### {md_escape(info.get('query', query_id))}")
                st.caption(f"query {md_escape(query_id)}")
                if marks.answer:
                    st.markdown("**Expected answer**")
                    st.markdown(highlight_markdown(marks.answer))
                if marks.keywords:
                    st.markdown("**Expected keywords:** " + ", ".join(md_escape(w) for w in marks.keywords))
                if not (marks.answer or marks.keywords):
                    st.caption("This dataset gives no expected answer or keywords for this query.")
            with doc_side:
                st.markdown(
                    documents.header(doc_id, status=documents.UNJUDGED, title=found["title"], source=found["source"])
                )
                layout.show_legend()
                st.markdown(highlight_markdown(found["text"], marks))
            # the title and the text, as the rule judge and answer_in@k read a document
            suggestion = judge.suggest(marks, documents.titled(found["title"], found["text"]), scale, level)
            buttons = st.columns(len(scale) + 1)
            for column, grade in zip(buttons, scale):
                column.button(
                    judge.grade_title(grade, scale, level),
                    key=f"judge.grade.{grade}.{token}",
                    type="primary" if grade >= level else "secondary",
                    shortcut=str(grade) if 0 <= grade <= 9 else None,
                    on_click=judging.give,
                    args=(workspace, ds.id, query_id, doc_id, grade),
                    width="stretch",
                )
            buttons[-1].button(
                "Skip",
                key=f"judge.skip.{token}",
                icon=":material/skip_next:",
                shortcut="S",
                on_click=judging.skip,
                args=(ds.id, query_id, doc_id),
                width="stretch",
            )
            st.caption("Keys: the grade's digit labels the pair, S skips it (for this session).")
            if suggestion is not None:
                with st.container(border=True):
                    st.markdown(
                        f":material/lightbulb: Rule **{suggestion.rule}** suggests grade **{suggestion.grade}**: "
                        f"{md_escape(suggestion.reason)}. A suggestion, not a judgment: nothing is stored unless you "
                        "accept it (then it is your label, and the store keeps that the rule suggested it)."
                    )
                    st.button(
                        f"Accept the suggestion: {judge.grade_title(suggestion.grade, scale, level)}",
                        key=f"judge.accept.{token}",
                        icon=":material/check:",
                        shortcut="A",
                        on_click=judging.give,
                        args=(workspace, ds.id, query_id, doc_id, suggestion.grade, suggestion.kind),
                    )


def pending_panel(
    workspace: Workspace, ds: DatasetEntry, view: ViewState, pending: pd.DataFrame, labelled: pd.DataFrame
) -> None:
    """The labels given on this version and not saved yet (``pending``; ``labelled``: the pairs people labelled on
    the lineage): withdraw some, or save them all as a qrels version."""
    st.subheader("Labels given, not in a qrels version yet")
    given = judge.pending_table(pending, judging.accepted_suggestions(workspace, ds.id))
    if given.empty:
        st.caption(
            "None yet on this version. Each label is kept in the store the moment it is given (a reload or a restart "
            "loses none); saving makes a new qrels version of them."
        )
    else:
        shown_ids = dict(zip(zip(pending["query_id"].astype("str"), pending["doc_id"].astype("str")), pending["id"]))
        event = layout.show_table(
            given,
            # a new table whenever a label is given, changed or withdrawn (here or elsewhere): no stale selection
            key=f"judge.pending.{judge.pair_key('pending', ','.join(str(i) for i in sorted(shown_ids.values())))}",
            filename=f"labels-{ds.name}.csv",
            column_config={
                "label": st.column_config.NumberColumn("label", format="%d"),
                "suggested_by": st.column_config.TextColumn(
                    "suggested by", help="The rule whose suggestion was accepted"
                ),
            },
            on_select="rerun",
            selection_mode="multi-row",
        )
        chosen = [i for i in getattr(getattr(event, "selection", None), "rows", []) or [] if i < len(given)]
        pairs = [(str(given["query_id"].iloc[i]), str(given["doc_id"].iloc[i])) for i in chosen]
        pairs = [(q, d) for q, d in pairs if (q, d) in shown_ids]
        if st.button(
            f"Withdraw {len(pairs)} selected label(s)" if pairs else "Withdraw selected labels",
            key="judge.withdraw",
            icon=":material/undo:",
            disabled=not pairs,
            help="Select rows of the table to take their labels back before saving: the pairs return to the queue.",
        ):
            taken, kept, gone = judging.withdraw(workspace, ds.id, [(q, d, int(shown_ids[(q, d)])) for q, d in pairs])
            state.flash(
                f"Withdrew {taken} label(s); the pairs are back in the queue."
                + (f" {kept} pair(s) labelled again meanwhile by another judge kept that label." if kept else "")
                + (
                    f" {gone} label(s) were no longer pending (saved in a qrels version, or withdrawn, meanwhile)."
                    if gone
                    else ""
                )
            )
            st.rerun()
    judged_only = judging.pending_judge_pairs(workspace, ds.id, labelled)
    with_judges = False
    if judged_only:
        with_judges = st.checkbox(
            f"Include the judges' labels of {judged_only:,} pair(s) nobody labelled",
            key="judge.save_judges",
            help="Off (the default): the version takes people's labels only; the judges' stay beside it, for the "
            "agreement and the corrected numbers, and their pairs stay in the queue for people. On: they become "
            "judgments of the version, which every page then scores as the truth (the version records them as "
            "the judges': Workspace, Qrels versions).",
        )
    job = assisted.current_job(ds.id)
    judging_now = job is not None and job.status().running
    saves_refused = layout.change_help(workspace, "save versions")
    nothing_to_save = given.empty and not with_judges
    refused = None  # what a click that finds the button disabled is told
    if saves_refused:
        refused = saves_refused
    elif judging_now:
        refused = (
            "A judge started labelling this dataset meanwhile: nothing was saved; save when it ends (or cancel it)."
        )
    elif nothing_to_save:
        refused = NOTHING_PENDING
    pressed = widgets.guarded_button(
        "Save as a new qrels version",
        key="judge.save",
        refused=refused,
        type="primary",
        icon=":material/save:",
        help=saves_refused
        or (
            "A judge is labelling this dataset: save when it ends (or cancel it), so that the labels it gives "
            "are not left behind on this version; people's labels are kept in the store meanwhile."
            if judging_now
            else "Makes a new dataset: these judgments plus the labels, with this dataset's runs; the page opens it."
        ),
    )
    if pressed:
        try:
            saved = judging.save_version(workspace, ds, judges=with_judges)
        except RagMetricsError as err:  # they change no judgment: no version to make
            st.warning(md_escape(str(err)), icon=":material/info:")
            return
        if saved is None:
            st.warning(NOTHING_PENDING, icon=":material/info:")
        elif saved.entry is None:
            st.warning(md_escape(judging.saved_message(workspace, saved)), icon=":material/delete:")
        else:
            state.flash(judging.saved_message(workspace, saved, judged_only if not with_judges else 0))
            layout.rerun_with(view.with_(dataset=saved.version))
