"""Missed queries: queries with no relevant document in the top K, filtered and searchable, and one query's detail.

Each row: where the first relevant document did appear (near miss at K+1..20 versus deeper or never
retrieved), the relevant documents, the retrieved top K, and which expected keywords the retrieved text
contains (the run's chunk text, else the dataset's corpus). The query's detail shows the text of its relevant documents and of what the
run retrieved (the run's chunk text, else the dataset's corpus), the expected answer, keywords and query words
marked, each retrieved document marked relevant, judged non-relevant or unjudged. Reads ``ds, runs, k, fr,
cat, diff, s, q``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import documents
from dashboard.core import missed as builders
from dashboard.core.queries import (
    has_groups,
    has_keywords,
    judged_group_values,
    query_header,
    query_info,
    query_labels,
    search_example,
)
from dashboard.core.specs import label_title
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout, state, widgets

page = layout.page_setup("missed", "Missed queries")
view = page.state

if page.alignments and page.dataset is not None:
    ds, k, selection = page.dataset, view.k, page.selection
    by_id = selection.by_id
    facets = [by for by in ("category", "difficulty") if has_groups(ds.dataset, by)]  # filters only where labelled
    cols = st.columns([2] * (1 + len(facets)) + [3])
    with cols[0]:
        focus = widgets.run_focus_picker(
            dict(zip(selection.run_ids, selection.names)), view.focus_run, "missed.run", force=page.fresh
        )
    picked: dict[str, str | None] = {"category": None, "difficulty": None}
    for column, by in zip(cols[1:], facets):
        with column:
            picked[by] = widgets.group_picker(
                by.capitalize(),
                f"missed.{by}",
                judged_group_values(ds.dataset, by),
                getattr(view, by),
                force=page.fresh,
            )
    category, difficulty = picked["category"], picked["difficulty"]
    with cols[-1]:
        search = widgets.search_box(view.search, "missed.search", force=page.fresh, example=search_example(ds.dataset))
    view = view.with_(focus_run=focus, category=category, difficulty=difficulty, search=search)
    focus = focus if focus in by_id else selection.run_ids[0]
    run = by_id[focus]

    missed = cache.missed_frame(selection, focus, k)
    shown = builders.filter_queries(missed, category=category, difficulty=difficulty, search=search)
    counts = builders.miss_counts(missed, int((run.n_rel > 0).sum()))
    limit = builders.near_miss_limit(k)
    st.markdown(
        f"**{md_escape(run.name)}** misses **{counts['missed']}** of {counts['total']} queries with relevant documents at "
        f"K = {k}: {counts['near miss']} near miss{'es' * (counts['near miss'] != 1)} (first relevant at ranks "
        f"{k + 1}–{limit}), {counts['deeper']} deeper, "
        f"{counts['not retrieved']} never retrieved. Showing {len(shown)} after filters."
    )
    keywords_known = has_keywords(ds.dataset)
    if keywords_known and not builders.text_known(run):
        st.caption("Neither this run nor the dataset carries document text, so expected keywords cannot be checked.")
    hidden = [*(by for by in ("category", "difficulty") if by not in facets)]
    if not (keywords_known and builders.text_known(run)):
        hidden += ["keywords_found", "keywords_missing"]
    table_key = f"missed.table.{state.digest((focus, k, category, difficulty, search))}"
    event = layout.show_table(
        builders.with_text_for_missing(shown, ["first_relevant_rank"], "not retrieved"),
        # a key per listing: Streamlit keeps a selected row's index when the rows change, so a new K, filter,
        # search or run would otherwise select whichever query now sits at that index
        key=table_key,
        filename=f"missed-{run.name}-k{k}.csv",
        column_config={
            "query_id": st.column_config.TextColumn("query_id", pinned=True),
            "query": st.column_config.TextColumn("query", width="large"),  # what a reader scans for
            "first_relevant_rank": st.column_config.TextColumn("first relevant rank"),
            "relevant_docs": st.column_config.TextColumn("relevant docs (grade)", width="medium"),
            "top_k": st.column_config.TextColumn(f"retrieved top {k}", width="medium"),
            "keywords_found": st.column_config.TextColumn("keywords found"),
            "keywords_missing": st.column_config.TextColumn("keywords missing"),
        },
        column_order=[c for c in builders.MISSED_ORDER if c in shown.columns and c not in hidden],
        on_select="rerun",
        selection_mode="single-row",
        height=min(38 + 35 * max(len(shown), 1), 420),
    )
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    force_query = page.fresh
    if state.new_pick("missed.table.pick", table_key, rows) and rows[0] < len(shown):
        view, force_query = view.with_(query=str(shown["query_id"].iloc[rows[0]])), True

    st.subheader("Query detail")
    options = shown["query_id"].astype("str").tolist()
    labels = query_labels(shown)
    if view.query and view.query not in options:
        info = query_info(ds.dataset, view.query)
        if info:
            options = [view.query, *options]
            labels[view.query] = f"{view.query} · {info['query']}"
    st.caption("Select a row in the table above, or pick a query here.")
    query_id = widgets.query_picker(options, labels, view.query, "missed.query", force=force_query)
    view = view.with_(query=query_id)
    if query_id:
        info = query_info(ds.dataset, query_id)
        keywords = documents.listed(info.get("expected_keywords"))
        st.markdown(query_header(query_id, info, keywords=keywords, then="**Per run**"))
        per_run = builders.query_metrics_frame(page.alignments, query_id, k)
        layout.show_table(
            builders.with_text_for_missing(per_run, ["first_relevant_rank"], "not retrieved"),
            key="missed.detail.runs",
            filename=f"query-{query_id}-runs.csv",
            column_config={
                "first_relevant_rank": st.column_config.TextColumn("first relevant rank"),
                **layout.number_columns(per_run, {c: label_title(c) for c in per_run.columns[3:]}),
            },
        )
        st.markdown("**Relevant documents** and their rank in each run")
        relevant = builders.relevant_docs_frame(page.alignments, query_id)
        layout.show_table(
            builders.with_text_for_missing(relevant, relevant.attrs.get("run_columns", []), "not retrieved"),
            key="missed.detail.relevant",
            filename=f"query-{query_id}-relevant.csv",
        )
        marks = documents.marks_for(ds.dataset, query_id)
        with st.expander("Text of the relevant documents", expanded=True, icon=":material/article:"):
            passages = documents.relevant_passages(page.alignments, query_id)
            if passages.empty:
                st.caption("This query has no relevant document.")
            elif documents.textless(passages):
                st.caption(documents.NO_TEXT)
            else:
                layout.show_passages(documents.relevant_cards(passages, marks))
        depth = max(20, k)
        st.markdown(f"**Retrieved by {md_escape(run.name)}**, top {depth} documents (✓ = relevant)")
        detail = builders.query_detail_frame(run, query_id, depth)
        layout.show_table(
            detail,
            key="missed.detail.retrieved",
            height=38 + 35 * max(len(detail), 1),
            styled=builders.style_relevant(detail),
            filename=f"query-{query_id}-{run.name}.csv",
            column_config={
                "relevant": st.column_config.CheckboxColumn("✓"),
                "score": st.column_config.NumberColumn("score", format="%.4f"),
                "text": st.column_config.TextColumn("text (best chunk)", width="large"),
            },
        )
        shown_depth = min(k, builders.TEXT_DEPTH)
        with st.expander(
            f"Text of what {md_escape(run.name)} retrieved, top {shown_depth}", expanded=True, icon=":material/article:"
        ):
            st.caption(
                "Each retrieved chunk (a document's chunks share its rank) with its judgment: relevant, judged "
                "non-relevant, or unjudged (not in the qrels)."
            )
            passages = documents.retrieved_passages(run, query_id, shown_depth)
            if documents.textless(passages):
                st.caption(documents.NO_TEXT)
            else:
                layout.show_passages(documents.retrieved_cards(passages, marks))

layout.finish(page, view)
