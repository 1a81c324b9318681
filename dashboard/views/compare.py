"""Compare: is a run better than the baseline, or is that noise? And "what if we went hybrid?" (fusion).

Per metric at K: mean with 95% CI, delta against the baseline with its CI, paired p-value, Holm-corrected p,
a significance mark and win/tie/loss counts (``ragmetrics.analysis.compare``). Selecting a row shows query by query
(another row: that run and metric), a section computed and drawn only while it is on: the queries behind its wins and losses,
sorted deltas, baseline-versus-run scatter, one query's two rankings side by side, and the same comparison per
category and difficulty. Fusion adds a fused run to the workspace, so every page sees it, and downloads it as a
TREC file.

Reads ``ds, runs, base, m, k, fr, q, t, a, c, ms, o, jb, dp, cv`` (see ``dashboard.core.share.PARAM_KEYS``).
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import metadata
from dashboard.core.intervals import MEAN_INTERVAL_RULE
from dashboard.core.specs import label_title, sidebar_names, title
from dashboard.core.text import md_escape
from dashboard.ui import assisted, cache, layout, state, widgets
from dashboard.ui.compare_panels import chunkings_panel, cost_panel, queries_panel, rankings_panel, segments_panel
from dashboard.ui.fusion_panel import fusion_panel

page = layout.page_setup("compare", "Compare runs")
view = page.state

if page.dataset is not None and len(page.alignments) == 1:
    st.info(
        "Pick at least two runs in the sidebar to compare them, or fuse runs into a new one below (open “Fuse runs”).",
        icon=":material/info:",
    )

if page.dataset is not None and len(page.alignments) >= 2:
    ds, k, selection = page.dataset, view.k, page.selection
    by_id = selection.by_id
    names = dict(zip(selection.run_ids, selection.names))

    c1, c2, c3, c4, c5 = st.columns([3, 3, 3, 2, 2])
    with c1:
        base_id = (
            widgets.baseline_picker(names, view.baseline, force=page.fresh, avoid=cache.meaningless_runs(selection))
            or selection.run_ids[0]
        )
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
    specs, not_computable = cmp.compared_specs(page.alignments, view.metric, k, specs)
    for note in not_computable:
        st.warning(md_escape(note))
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
    spec = cmp.focus_spec(specs, view.metric, k)

    with st.spinner(f"Running the {cmp.test_title(test)} on every run and metric…"):
        comparison = cache.comparison(selection, base.name, specs, test, alpha, correction, view.bounds_depth)
    layout.show_verdict(cmp.verdict(comparison, spec))
    st.caption(
        f"Each run against **{md_escape(base.name)}** on the same {base.n_queries:,} queries: mean with its 95% interval "
        f"({MEAN_INTERVAL_RULE}), Δ = run − baseline with its {cmp.intervals_name(correction, alpha)} "
        f"({comparison.interval_method}), the p-value of the paired test "
        f"({cmp.test_title(test)}) and the corrected one: {cmp.family_text(comparison)}, as on the Overview and "
        f"Dataset power (the table shows the baseline's pairs). ▲/▼: corrected p < {alpha:g}. W / T / L: queries the run wins, ties and loses. "
        "**Select a row**, or turn on *query by query* below, to see its queries (another row: that run's and "
        "metric's)."
        + (
            f" *If judged*: the worst and best over every way of judging the unjudged documents in each run's top "
            f"{depth} (a Δ's ends count a document both runs retrieved at both ends, so they may be wider than any "
            "one judging); *could flip*: judging them could reverse the Δ's sign."
            if bounds
            else ""
        )
    )
    assisted.corrected_elsewhere(
        page.workspace, ds, selection, spec, view.depth, view, baseline=base.name, family_specs=specs,
        correction=correction, alpha=alpha, family=comparison.family,
    )  # fmt: skip
    table = cmp.comparison_frame(comparison)
    display = cmp.comparison_display(table, base.name, comparison.correction)
    focus = by_id[focus_id]
    focus_row = cmp.row_of(table, spec, focus.name)
    # keyed on what its rows are: a stored selection never names the row of another run or metric
    rows_of = state.digest((selection.run_ids, tuple(map(str, specs))))
    table_key = f"compare.table.{base_id}.{focus_id}.{spec}.{test}.{alpha}.{correction}.{rows_of}.{bounds}.{depth}"
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
    # the table's key names its focus row, selected by default: any other selection is the user's click, followed
    # once (the same selection seen again, after a rerun this page asked for, is not a click)
    clicked = rows != ([focus_row] if focus_row is not None else [])
    new_selection = state.changed("compare.table.rows", (table_key, tuple(rows)))
    if rows and rows[0] < len(table):
        picked_metric, picked_run = str(table["metric"].iloc[rows[0]]), str(table["run"].iloc[rows[0]])
        picked_id = next((rid for rid, name in others.items() if name == picked_run), None)
        picked_spec = next(s for s in specs if str(s) == picked_metric)
        # the sidebar cannot name every compared metric (mrr without a cut-off, bpref, K above its range): such a
        # pick focuses its run on the sidebar's metric
        shown = sidebar_names(picked_spec, view.k)
        followable = picked_id is not None and ((shown and picked_spec != spec) or picked_id != focus_id)
        if followable and clicked and new_selection:
            moved = view.with_(metric=picked_spec.name, k=picked_spec.k or view.k) if shown else view
            # the compared set stays as it is, and so does its correction's family; a pick shows its queries
            layout.rerun_with(moved.with_(focus_run=picked_id, metrics=tuple(specs), charts=True))
    # a click that moves nothing (the focus row again, a baseline's row, a row the sidebar cannot name) shows the
    # focused run's queries; once per click, so the switch can still be turned off
    if clicked and new_selection and not view.charts:
        layout.rerun_with(view.with_(charts=True))

    deltas = cmp.against_baseline(table, base.name)
    layout.show_figure(
        cache.figure(
            cmp.forest_figure,
            deltas,
            labels=[f"{label_title(m)} · {r}" for m, r in zip(deltas["metric"], deltas["run"])],
            title=f"Δ against {base.name} with the {cmp.intervals_name(correction, alpha)}",
        ),
        key="compare.forest",
        filename=f"compare-deltas-{base.name}",
    )
    cost_panel(selection, spec, k)
    view = chunkings_panel(page, view, selection, base, test, alpha, correction)

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

    # --- one run, one metric: its queries, one query's two rankings, its groups -----------
    st.subheader("Query by query")
    view = widgets.shown_section(
        md_escape(f"{focus.name} against {base.name} on {title(spec)}: its queries, one query's rankings, its groups"),
        "compare.by_query",
        view,
        force=page.fresh,
        help="Selecting a row of the table above turns this on (another row: for that row). Computed and drawn only "
        "while on: "
        "the queries behind the wins, ties and losses, one query's two rankings side by side, the comparison "
        "within each category and difficulty.",
    )
    if view.charts:
        view, force_query, per_query = queries_panel(page, view, base, focus, focus_id, spec)
        view = rankings_panel(ds, view, base, focus, focus_id, spec, per_query, force_query=force_query)
        segments_panel(ds, comparison, base, focus, spec, correction)

# --- fusion ------------------------------------------------------------------------------
if page.dataset is not None:
    fusion_panel(page, page.dataset, view)

layout.finish(page, view)
