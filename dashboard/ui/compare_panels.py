"""Compare's panels for one run against the baseline on one metric: its queries (wins, ties, losses, the sorted
deltas and the scatter), one query's two rankings side by side, and the comparison per category and difficulty.
The page reads state and calls them; each returns the view with what its controls changed."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import compare_queries as by_query
from dashboard.core import cost, documents
from dashboard.core.missed import TEXT_DEPTH, style_relevant
from dashboard.core.queries import query_header, query_info, query_labels
from dashboard.core.share import ViewState
from dashboard.core.specs import MetricSpec, title
from dashboard.core.text import md_escape
from dashboard.data.workspace import DatasetEntry
from dashboard.ui import cache, layout, state, widgets
from dashboard.ui.cache import Selection
from ragmetrics import Alignment
from ragmetrics.analysis.compare import Comparison


def queries_panel(
    page: layout.Page, view: ViewState, base: Alignment, focus: Alignment, focus_id: str, spec: MetricSpec
) -> tuple[ViewState, bool, pd.DataFrame]:
    """The focused run's queries against the baseline: outcome counts, the queries behind one outcome (a selected
    row picks the query shown below), the sorted deltas and the scatter. Returns the view, whether the query
    picker follows the view (a fresh view or a row just picked) and the per-query frame."""
    per_query = by_query.per_query_frame(base, focus, spec)
    counts = by_query.outcome_counts(per_query)
    st.markdown(
        f"**{md_escape(focus.name)}** against **{md_escape(base.name)}** on **{title(spec)}** "
        f"(pick the run above or select a row; metric and K in the sidebar): wins **{counts['win']}**, "
        f"ties **{counts['tie']}**, losses **{counts['loss']}** of {len(per_query)} queries."
    )
    state.seed("compare.outcome", view.outcome, force=page.fresh)
    outcome = st.radio(
        "Show the queries behind",
        list(cmp.OUTCOMES),
        horizontal=True,
        key="compare.outcome",
        format_func=lambda o: f"{by_query.OUTCOME_NAMES[o]} ({counts[o]})",
    )
    view = view.with_(outcome=outcome)
    listed = by_query.queries_with(per_query, outcome)
    table_key = f"compare.queries.{focus_id}.{spec}.{outcome}"
    pick = layout.show_table(
        listed,
        key=table_key,
        filename=f"{outcome}-{focus.name}-vs-{base.name}-{spec}.csv",
        column_config={
            "query_id": st.column_config.TextColumn("query_id", pinned=True),
            "query": st.column_config.TextColumn("query", width="large"),
            "baseline": st.column_config.NumberColumn(f"{base.name}", format="%.3f"),
            "run": st.column_config.NumberColumn(f"{focus.name}", format="%.3f"),
            "delta": st.column_config.NumberColumn("Δ", format="%+.3f"),
            "baseline_first_rank": st.column_config.NumberColumn(
                f"first relevant · {base.name}", format="%d", help="0 = not retrieved"
            ),
            "run_first_rank": st.column_config.NumberColumn(
                f"first relevant · {focus.name}", format="%d", help="0 = not retrieved"
            ),
        },
        column_order=[c for c in listed.columns if c != "outcome"],
        on_select="rerun",
        selection_mode="single-row",
        height=min(38 + 35 * max(len(listed), 1), 320),
    )
    force_query = page.fresh
    picked_rows = list(getattr(getattr(pick, "selection", None), "rows", []) or [])
    if state.new_pick("compare.queries.pick", table_key, picked_rows) and picked_rows[0] < len(listed):
        view, force_query = view.with_(query=str(listed["query_id"].iloc[picked_rows[0]])), True

    left, right = st.columns(2)
    with left:
        layout.show_figure(
            cache.figure(by_query.delta_figure, per_query, run=focus.name, baseline=base.name, spec=spec),
            key="compare.deltas",
            filename=f"deltas-{focus.name}-vs-{base.name}",
        )
    with right:
        layout.show_figure(
            cache.figure(by_query.scatter_figure, per_query, run=focus.name, baseline=base.name, spec=spec),
            key="compare.scatter",
            filename=f"scatter-{focus.name}-vs-{base.name}",
        )
    return view, force_query, per_query


def rankings_panel(
    ds: DatasetEntry, view: ViewState, base: Alignment, focus: Alignment, focus_id: str, spec: MetricSpec,
    per_query: pd.DataFrame, *, force_query: bool,
) -> ViewState:  # fmt: skip
    """One query's two rankings side by side, with the text of their top documents."""
    k = view.k
    # --- one query, both rankings ------------------------------------------------------
    st.subheader("One query, both rankings")
    st.caption(
        "Select a query in the table above or pick one here (losses first). ✓ marks relevant documents; "
        "“rank in other” is where the other run put the same document."
    )
    options = by_query.query_order(per_query)
    labels = query_labels(per_query)
    query_id = widgets.query_picker(options, labels, view.query, "compare.query", force=force_query)
    view = view.with_(query=query_id)
    if query_id:
        info = query_info(ds.dataset, query_id)
        row = by_query.query_row(per_query, query_id)
        st.markdown(
            query_header(
                query_id,
                info,
                after_line=f" · {title(spec)} {row['baseline']:.3f} → {row['run']:.3f} "
                f"(Δ {row['delta']:+.3f}, a {row['outcome']} for {md_escape(focus.name)})",
            )
        )
        depth = by_query.pair_depth([row["baseline_first_rank"], row["run_first_rank"]], k)
        base_rank, run_rank = by_query.ranking_pair(base, focus, query_id, depth)
        config = {
            "rank": st.column_config.NumberColumn("rank", format="%d", width="small"),
            "relevant": st.column_config.CheckboxColumn("✓", width="small"),
            "judgment": st.column_config.TextColumn("grade", width="small"),
            "doc_id": st.column_config.TextColumn("doc_id"),
            "other_rank": st.column_config.NumberColumn(
                "rank in other", format="%d", help="empty: not retrieved by the other run"
            ),
            "score": st.column_config.NumberColumn("score", format="%.4f"),
            "title": st.column_config.TextColumn("title", width="medium"),
            "text": st.column_config.TextColumn("text (best chunk)", width="large"),
        }
        col_a, col_b = st.columns(2)
        for column, shown_run, ranked, role in ((col_a, base, base_rank, "baseline"), (col_b, focus, run_rank, "run")):
            with column:
                first = int(row["baseline_first_rank" if role == "baseline" else "run_first_rank"])
                st.markdown(
                    f"**{md_escape(shown_run.name)}** ({role}) · top {depth} · first relevant at "
                    + (f"rank **{first}**" if first > 0 else "**not retrieved**")
                )
                layout.show_table(
                    ranked,
                    key=f"compare.ranking.{role}",
                    filename=f"query-{query_id}-{shown_run.name}.csv",
                    styled=style_relevant(ranked),
                    column_config=config,
                    column_order=[
                        c
                        for c in ("rank", "relevant", "judgment", "doc_id", "other_rank", "title", "text", "score")
                        if c in ranked.columns
                    ],
                    height=38 + 35 * max(len(ranked), 1),
                )
                text_depth = min(depth, TEXT_DEPTH)
                # folded, the passages are neither computed nor sent: the page draws two tables, not the dozens
                # of text boxes a folded section would still hold in the browser
                text = widgets.opened_section(
                    f"Text of the top {text_depth}", f"compare.text.{role}", icon=":material/article:"
                )
                if text is not None:
                    with text:
                        layout.show_passages(
                            documents.retrieved_cards(
                                documents.retrieved_passages(shown_run, query_id, text_depth),
                                documents.marks_for(ds.dataset, query_id),
                            )
                        )
        if st.button("Open this query in Missed queries", icon=":material/search_off:", key="compare.open_missed"):
            state.write_view_state(view.with_(focus_run=focus_id, query=query_id))
            st.switch_page("views/missed.py")
    return view


def segments_panel(
    ds: DatasetEntry, comparison: Comparison, base: Alignment, focus: Alignment, spec: MetricSpec, correction: str
) -> None:
    """The focused run against the baseline within each category and difficulty."""
    # --- segments ----------------------------------------------------------------------
    st.subheader("By category and difficulty")
    segments = cmp.segment_frame(comparison, spec, focus.name, ds.dataset)
    if segments.empty:
        st.info("This dataset has no category or difficulty labels.", icon=":material/info:")
    else:
        st.caption(
            f"{md_escape(focus.name)} against {md_escape(base.name)} on {title(spec)} within each group; "
            + (
                "p-values uncorrected"
                if cmp.is_uncorrected(correction)
                else f"{cmp.correction_title(correction)}-corrected within each facet, over the family of the table "
                "above (every pair of the selected runs × the compared metrics) × the facet's groups"
            )
            + f". Groups with fewer than {cmp.MIN_GROUP} queries are *too few to tell*: their Δ is shown, with no "
            "interval and no p-value (a test on so few is not to be trusted)."
        )
        layout.show_figure(
            cache.figure(
                cmp.forest_figure,
                segments,
                labels=cmp.segment_labels(segments),
                title=f"Δ {title(spec)} per group: {focus.name} − {base.name} ({cmp.intervals_name(correction, comparison.alpha)})",
            ),
            key="compare.segments.chart",
            filename=f"segments-{focus.name}-vs-{base.name}",
        )
        with st.expander("Per-group table"):
            layout.show_table(
                segments,
                key="compare.segments.table",
                filename=f"segments-{focus.name}-vs-{base.name}-{spec}.csv",
                column_config={
                    **layout.number_columns(segments, {c: c for c in ("baseline_mean", "mean", "ci_low", "ci_high")}),
                    "delta": st.column_config.NumberColumn("Δ", format="%+.3f"),
                    "p_value": st.column_config.NumberColumn("p", format="%.4f"),
                    "p_value_corrected": st.column_config.NumberColumn(
                        f"p ({cmp.correction_title(correction)})", format="%.4f"
                    ),
                    "too_few": st.column_config.CheckboxColumn(f"too few (n < {cmp.MIN_GROUP})"),
                },
            )


def cost_panel(selection: Selection, spec: MetricSpec, k: int) -> None:
    """Quality against context cost: ``spec`` against the tokens each run's top ``k`` chunks put in the context
    (:mod:`dashboard.core.cost`), or why it cannot be drawn (the runs' chunks carry no text)."""
    with st.expander(f"{title(spec)} against the context it costs (tokens of the top {k} chunks)", expanded=True):
        found = cache.cost_frame(selection, spec, k)
        if isinstance(found, str):
            st.caption(
                md_escape(f"Not drawn: {found}") + " Runs that carry their chunk texts, or a dataset with a corpus, "
                "give the tokens each ranking costs."
            )
            return
        layout.show_figure(
            cache.figure(cost.cost_figure, found, spec=spec, k=k), key="compare.cost", filename=f"cost-{spec}-k{k}"
        )


def chunkings_panel(
    page: layout.Page, view: ViewState, selection: Selection, baseline: Alignment, test: str, alpha: float,
    correction: str,
) -> ViewState:  # fmt: skip
    """The selected runs over different chunkings of the corpus (runs whose rows are chunks: a ``source_doc``
    column), compared at document and span level at K chunks and at a token budget
    (:mod:`ragmetrics.analysis.chunkings`), with which chunking wins at equal token cost. Nothing when fewer than
    two such runs are selected. Returns the view with the budget picked."""
    chunked = tuple(rid for rid, a in zip(selection.run_ids, selection.alignments) if cost.is_chunk_run(a))
    if len(chunked) < 2:
        return view
    runs = Selection(selection.dataset_id, chunked, tuple(selection.by_id[rid] for rid in chunked))
    base_name = baseline.name if baseline.name in runs.names else runs.names[0]
    heading = f"Chunked runs compared: {len(chunked)} runs whose rows are chunks (other chunkings, or other retrievers"
    with st.expander(f"{heading} over chunks), at document and span level", expanded=True):
        left, _ = st.columns([2, 5])
        with left:
            budget = widgets.budget_picker("compare.budget", view.budget, force=page.fresh)
        view = view.with_(budget=budget)
        found = cache.chunking_comparison(runs, base_name, view.k, budget, test, alpha, correction)
        if isinstance(found, str):
            st.caption(md_escape(f"Not compared: {found}"))
            return view
        layout.show_verdict(cost.chunking_verdict(found), key="chunkings-verdict")
        st.caption(cost.chunking_caption(found))
        table = cost.chunking_frame(found)
        layout.show_table(
            table,
            key=f"compare.chunkings.{base_name}.{view.k}.{budget}.{test}.{alpha}.{correction}",
            filename=f"chunkings-{base_name}-k{view.k}-{budget}tok.csv",
            column_config={
                **layout.number_columns(table, cost.CHUNKING_NUMBERS, "%.4f"),
                "p_value_corrected": st.column_config.NumberColumn(
                    cost.CHUNKING_NUMBERS["p_value_corrected"], format="%.4g"
                ),
            },
        )
    return view
