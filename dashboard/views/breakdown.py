"""Breakdown: one metric@K per category and per difficulty, runs side by side, n per group, 95% CI error bars.

Groups with fewer than ``MIN_GROUP`` (10) queries are hatched and marked "too few". Reads ``ds, runs, m, k``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import breakdown
from dashboard.core.intervals import MEAN_INTERVAL_RULE
from dashboard.core.queries import has_groups, unevaluated_groups
from dashboard.core.specs import metric_spec, title
from dashboard.core.text import md_escape
from dashboard.ui import cache, layout

page = layout.page_setup("breakdown", "Breakdown")
view = page.state

if page.alignments and page.dataset is not None:
    spec = metric_spec(view.metric, view.k)
    st.caption(
        f"{title(spec)} per group (change the metric and K in the sidebar). Error bars: the 95% interval of each mean "
        f"({MEAN_INTERVAL_RULE}); "
        f"hatched groups have fewer than {breakdown.MIN_GROUP} queries, too few to tell."
    )
    for by, heading in (("category", "By category"), ("difficulty", "By difficulty")):
        st.subheader(heading)
        if not has_groups(page.dataset.dataset, by):
            st.info(f"This dataset has no {by} labels.", icon=":material/info:")
            continue
        table = cache.breakdown_frame(page.selection, spec, by)
        left_out = unevaluated_groups(page.dataset.dataset, page.alignments[0].query_ids, by)
        if left_out:
            st.caption(
                "Not evaluated (queries without judgments): "
                + ", ".join(f"{md_escape(g)} ({n})" for g, n in left_out.items())
            )
        layout.show_figure(
            breakdown.breakdown_figure(table, spec, by, runs=page.run_names, every=page.every_run_name),
            key=f"breakdown.{by}.chart",
            filename=f"{spec}-by-{by}",
        )
        with st.expander(f"{heading}: table"):
            layout.show_table(
                table,
                key=f"breakdown.{by}.table",
                filename=f"{spec}-by-{by}.csv",
                column_config={
                    **layout.number_columns(
                        table, {"mean": title(spec), "ci_low": "95% CI low", "ci_high": "95% CI high"}
                    ),
                    "too_few": st.column_config.CheckboxColumn(f"too few (n < {breakdown.MIN_GROUP})"),
                },
            )

layout.finish(page, view)
