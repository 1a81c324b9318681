"""Breakdown: one metric@K per category and per difficulty, runs side by side, n per group, 95% CI error bars.

Groups with fewer than 10 queries are hatched and marked "too few". Reads ``ds, runs, m, k``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import figures, frames
from dashboard.core.evaluation import metric_spec, pretty
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout

page = layout.page_setup("breakdown", "Breakdown")
view = page.state

if page.evals and page.dataset is not None:
    spec = str(metric_spec(view.metric, view.k))
    st.caption(
        f"{pretty(spec)} per group (change the metric and K in the sidebar). Error bars: 95% bootstrap interval; "
        f"hatched groups have fewer than {frames.MIN_GROUP} queries, too few to tell."
    )
    for by, title in (("category", "By category"), ("difficulty", "By difficulty")):
        st.subheader(title)
        if not frames.has_groups(page.dataset.dataset, by):
            st.info(f"This dataset has no {by} labels.", icon=":material/info:")
            continue
        table = cache.breakdown_frame(page.dataset.id, page.evals, spec, by)
        left_out = frames.unevaluated_groups(page.dataset.dataset, page.evals[0].query_ids, by)
        if left_out:
            st.caption(
                "Not evaluated (queries without judgments): "
                + ", ".join(f"{md_escape(g)} ({n})" for g, n in left_out.items())
            )
        layout.show_figure(
            figures.breakdown_figure(table, spec, by, runs=page.run_names),
            key=f"breakdown.{by}.chart",
            filename=f"{spec}-by-{by}",
        )
        with st.expander(f"{title}: table"):
            layout.show_table(
                table,
                key=f"breakdown.{by}.table",
                filename=f"{spec}-by-{by}.csv",
                column_config={
                    **layout.number_columns(
                        table, {"mean": pretty(spec), "ci_low": "95% CI low", "ci_high": "95% CI high"}
                    ),
                    "too_few": st.column_config.CheckboxColumn(f"too few (n < {frames.MIN_GROUP})"),
                },
            )

layout.finish(page, view)
