"""Compare: is a run better than the baseline, or is that noise? And "what if we went hybrid?" (fusion).

Per metric at K: mean with 95% CI, delta against the baseline with its CI, paired p-value, Holm-corrected p,
a significance mark and win/tie/loss counts (``ragmetrics.analysis.compare``). Selecting a row shows that run and
metric query by query: the queries behind its wins and losses, sorted deltas, baseline-versus-run scatter,
one query's two rankings side by side, and the same comparison per category and difficulty. Fusion adds a
fused run to the workspace, so every page sees it, and downloads it as a TREC file.

Reads ``ds, runs, base, m, k, fr, q, t, a, c, ms, o, jb, dp`` (see ``dashboard.core.share.PARAM_KEYS``).
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import compare_queries as by_query
from dashboard.core import documents, metadata
from dashboard.core.missed import TEXT_DEPTH, style_relevant
from dashboard.core.queries import query_info, query_labels, query_line
from dashboard.core.specs import label_title, metric_spec, sidebar_names, title
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout, state, widgets
from dashboard.ui.fusion_panel import fusion_panel

page = layout.page_setup("compare", "Compare runs")
view = page.state

if page.dataset is not None and len(page.alignments) == 1:
    st.info(
        "Pick at least two runs in the sidebar to compare them, or fuse runs into a new one below.",
        icon=":material/info:",
    )

if page.dataset is not None and len(page.alignments) >= 2:
    ds, k, selection = page.dataset, view.k, page.selection
    by_id = selection.by_id
    names = dict(zip(selection.run_ids, selection.names))

    c1, c2, c3, c4, c5 = st.columns([3, 3, 3, 2, 2])
    with c1:
        base_id = widgets.baseline_picker(names, view.baseline, force=page.fresh) or selection.run_ids[0]
    base = by_id[base_id]
    others = {rid: name for rid, name in names.items() if rid != base_id}
    with c2:
        focus_id = widgets.run_focus_picker(others, view.focus_run, "compare.run", force=page.fresh) or next(
            iter(others)
        )
    with c3:
        test = widgets.significance_test_picker("compare.test", view.test, force=page.fresh)
    with c4:
        alpha = widgets.alpha_picker("compare.alpha", view.alpha, force=page.fresh)
    with c5:
        correction = widgets.correction_picker("compare.correction", view.correction, force=page.fresh)
    default_specs = cmp.compare_specs(view.metric, k)
    specs, not_metrics = widgets.metric_set_picker(
        view.metrics, default_specs, cmp.metric_options(k, view.metrics), force=page.fresh
    )
    for item in not_metrics:
        st.warning(md_escape(f"{item!r} is not a metric name (e.g. ndcg@10, recall@100, mrr); left out."))
    specs, not_computable = cmp.computable_specs(page.alignments, specs or default_specs)
    for note in not_computable:
        st.warning(md_escape(note))
    specs = specs or cmp.computable_specs(page.alignments, default_specs)[0]
    b1, b2, _ = st.columns([3, 2, 7], vertical_alignment="bottom")
    with b1:
        bounds = widgets.bounds_toggle("compare.bounds", view.bounds, force=page.fresh)
    depth = view.depth
    if bounds:
        with b2:
            depth = widgets.depth_input(
                "compare.bounds_depth",
                view.depth,
                "Judged to depth",
                "The unjudged documents in each run's top this many ranks are the ones judged (the Judge page pools "
                "the same depth); deeper ones stay unjudged.",
                force=page.fresh,
            )
    view = view.with_(
        baseline=base_id,
        focus_run=focus_id,
        test=test,
        alpha=alpha,
        correction=correction,
        metrics=() if specs == default_specs else tuple(specs),
        bounds=bounds,
        depth=depth,
    )
    sidebar_spec = metric_spec(view.metric, k)
    spec = sidebar_spec if sidebar_spec in specs else specs[0]

    with st.spinner(f"Running the {cmp.test_title(test)} on every run and metric…"):
        comparison = cache.comparison(selection, base.name, specs, test, alpha, correction, view.bounds_depth)
    layout.show_verdict(cmp.verdict(comparison, spec))
    st.caption(
        f"Each run against **{md_escape(base.name)}** on the same {base.n_queries:,} queries: mean with its 95% bootstrap "
        f"interval, Δ = run − baseline with its paired-bootstrap interval, the p-value of the paired test "
        f"({cmp.test_title(test)}) and the corrected one: {cmp.family_text(comparison)} (every run × metric of the "
        f"table). ▲/▼: corrected p < {alpha:g}. W / T / L: queries the run wins, ties and loses. "
        "**Select a row** to see its queries below."
        + (
            f" *If judged*: the worst and best over every way of judging the unjudged documents in each run's top "
            f"{depth} (a Δ's ends count a document both runs retrieved at both ends, so they may be wider than any "
            "one judging); *could flip*: judging them could reverse the Δ's sign."
            if bounds
            else ""
        )
    )
    table = cmp.comparison_frame(comparison)
    display = cmp.comparison_display(table, base.name, comparison.correction)
    focus = by_id[focus_id]
    focus_row = cmp.row_of(table, spec, focus.name)
    table_key = f"compare.table.{base_id}.{focus_id}.{spec}.{test}.{alpha}.{correction}.{len(specs)}.{bounds}.{depth}"
    event = layout.show_table(
        table,
        key=table_key,
        filename=f"compare-{base.name}-k{k}-{test}.csv",
        styled=cmp.style_marks(display, focus_row),
        column_config={
            "mean": st.column_config.NumberColumn("mean", format="%.3f"),
            "n": st.column_config.NumberColumn("n", format="%d"),
            "significance": st.column_config.TextColumn(
                "significance", help=f"{cmp.correction_title(correction)} p < {alpha:g}"
            ),
        },
        on_select="rerun",
        selection_mode="single-row",
        selection_default={"selection": {"rows": [focus_row] if focus_row is not None else []}},
        height=38 + 35 * max(len(display), 1),
    )
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    if rows and rows[0] < len(table):
        picked_metric, picked_run = str(table["metric"].iloc[rows[0]]), str(table["run"].iloc[rows[0]])
        picked_id = next((rid for rid, name in others.items() if name == picked_run), None)
        picked = (table_key, rows[0], picked_metric, picked_run)
        picked_spec = next(s for s in specs if str(s) == picked_metric)
        # the sidebar cannot name every compared metric (mrr without a cut-off, bpref, K above its range): such a
        # pick focuses its run on the sidebar's metric; and a pick is followed once, so no view can select the
        # same row again and rerun forever
        shown = sidebar_names(picked_spec, view.k)
        followable = picked_id is not None and ((shown and picked_spec != spec) or picked_id != focus_id)
        if followable and state.changed("compare.table.pick", picked):
            moved = view.with_(metric=picked_spec.name, k=picked_spec.k or view.k) if shown else view
            # the compared set stays as it is, and so does its correction's family
            layout.rerun_with(moved.with_(focus_run=picked_id, metrics=tuple(specs)))

    deltas = cmp.against_baseline(table, base.name)
    layout.show_figure(
        cache.figure(
            cmp.forest_figure,
            deltas,
            labels=[f"{label_title(m)} · {r}" for m, r in zip(deltas["metric"], deltas["run"])],
            title=f"Δ against {base.name} with 95% CI",
        ),
        key="compare.forest",
        filename=f"compare-deltas-{base.name}",
    )

    # --- the retrievers' latency beside their quality (run metadata) ------------------
    run_tags = page.workspace.tags_of(ds.id)
    if any(k in run_tags.get(r, {}) for r in names for k in metadata.LATENCY_COLUMNS):
        st.markdown(
            f"**Latency beside quality**: {title(spec)} and what `ragmetrics retrieve` recorded of each retriever "
            "(edit a run's metadata on the Workspace page)"
        )
        quality = table[table["metric"] == str(spec)].set_index("run")["mean"].to_dict()
        latency = metadata.latency_frame(names, run_tags, quality, title(spec))
        layout.show_table(latency, key="compare.latency", filename=f"compare-latency-{spec}.csv",
                          column_config=layout.number_columns(latency, {title(spec): title(spec)}, "%.4f"))  # fmt: skip

    # --- one run, one metric, query by query -------------------------------------------
    st.subheader("Query by query")
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
    pick = layout.show_table(
        listed,
        key=f"compare.queries.{focus_id}.{spec}.{outcome}",
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
    if picked_rows and picked_rows[0] < len(listed):
        chosen = str(listed["query_id"].iloc[picked_rows[0]])
        if state.changed("compare.queries.pick", (focus_id, spec, outcome, chosen)):
            view, force_query = view.with_(query=chosen), True

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
        st.markdown(f"#### {md_escape(info.get('query', query_id))}")
        st.markdown(
            query_line(query_id, info) + f" · {title(spec)} {row['baseline']:.3f} → {row['run']:.3f} "
            f"(Δ {row['delta']:+.3f}, a {row['outcome']} for {md_escape(focus.name)})"
        )
        if info.get("expected_answer"):
            st.markdown(f"**Expected answer:** {md_escape(info['expected_answer'])}")
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
                    placeholder="—",
                )
                text_depth = min(depth, TEXT_DEPTH)
                with st.expander(f"Text of the top {text_depth}", icon=":material/article:"):
                    layout.show_passages(
                        documents.retrieved_cards(
                            documents.retrieved_passages(shown_run, query_id, text_depth),
                            documents.marks_for(ds.dataset, query_id),
                        )
                    )
        if st.button("Open this query in Missed queries", icon=":material/search_off:", key="compare.open_missed"):
            state.write_view_state(view.with_(focus_run=focus_id, query=query_id))
            st.switch_page("views/missed.py")

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
                if cmp.correction_title(correction) == "uncorrected"
                else f"{cmp.correction_title(correction)}-corrected within each facet (across runs × metrics × groups)"
            )
            + f". Groups with fewer than {cmp.MIN_GROUP} queries are "
            "marked *too few to tell* whatever their p-value."
        )
        layout.show_figure(
            cache.figure(
                cmp.forest_figure,
                segments,
                labels=cmp.segment_labels(segments),
                title=f"Δ {title(spec)} per group: {focus.name} − {base.name}",
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

# --- fusion ------------------------------------------------------------------------------
if page.dataset is not None:
    fusion_panel(page, page.dataset, view)

layout.finish(page, view)
