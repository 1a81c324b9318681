"""Dataset power: can this query set tell the runs apart, and how many queries would it take?

Across every pair of the selected runs: the share whose difference is significant at alpha (discriminative
power); from the observed SD of per-query differences, the smallest difference the dataset detects and the
queries needed for a given one, both at the level the family's correction tests its strictest comparison at
(alpha / m under Holm or Bonferroni, alpha uncorrected), against the rules of thumb (20-30 queries to prototype, 50-100 in
development, 100-200 before release). The pairs and their corrected p-values are those of the Overview's and
Compare's comparison (one family: every pair of the selected runs × the compared metrics, ``ms``). Reads ``ds,
runs, base, m, k, ms, t, a, c, pw, d``.
"""

from __future__ import annotations

import streamlit as st

from dashboard.core import compare as cmp
from dashboard.core import power as power_mod
from dashboard.core.compare import correction_title, test_title
from dashboard.core.power import DELTA_RANGE, POWER_LEVELS
from dashboard.core.specs import title
from dashboard.ui import cache, layout, state, widgets

page = layout.page_setup("power", "Dataset power")
view = page.state

if page.dataset is not None and len(page.alignments) == 1:
    st.info("Dataset power compares runs pairwise: pick at least two runs in the sidebar.", icon=":material/info:")

if page.dataset is not None and len(page.alignments) >= 2:
    selection, k = page.selection, view.k
    specs = cmp.compared_specs(page.alignments, view.metric, k, view.metrics)[0]
    spec = cmp.focus_spec(specs, view.metric, k)
    names = dict(zip(selection.run_ids, selection.names))
    base_id = (
        cmp.default_baseline(selection.run_ids, view.baseline, cache.meaningless_runs(selection))
        or selection.run_ids[0]
    )

    c1, c2, c3, c4, c5 = st.columns(5)
    with c1:
        test = widgets.significance_test_picker("power.test", view.test, force=page.fresh)
    with c2:
        alpha = widgets.alpha_picker("power.alpha", view.alpha, force=page.fresh)
    with c3:
        correction = widgets.correction_picker("power.correction", view.correction, force=page.fresh)
    with c4:
        state.seed("power.level", view.power, force=page.fresh)
        power = float(
            st.selectbox(
                "Power",
                list(POWER_LEVELS),
                format_func=lambda p: f"{p:.0%}",
                key="power.level",
                help="The chance of detecting a real difference of the given size.",
            )
        )
    with c5:
        state.seed("power.target", view.delta, force=page.fresh)
        target = round(
            float(
                st.number_input(
                    "Difference to detect (Δ)",
                    min_value=DELTA_RANGE[0],
                    max_value=DELTA_RANGE[1],
                    step=0.005,
                    format="%.3f",
                    key="power.target",
                )
            ),
            4,
        )
    view = view.with_(test=test, alpha=alpha, correction=correction, power=power, delta=target)

    with st.spinner(f"Testing every run pair ({test_title(test)})…"):
        comparison = cache.comparison(selection, names[base_id], specs, test, alpha, correction, segments=False)
    planned = cache.power_plan(selection, names[base_id], specs, spec, test, alpha, correction, power, target)
    n, sd, needed, here = planned.n_queries, planned.sd, planned.needed, planned.here
    family = cmp.family_text(comparison)
    family_short = cmp.family_words(comparison.correction, comparison.family_size)
    planned_at = cmp.planning_words(correction, alpha, comparison.family_size)
    if not cmp.is_uncorrected(correction):
        planned_at += f" ({family_short}: a difference this large is found whatever its rank among the p-values)"

    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Queries", f"{n:,}", power_mod.stage_of(n), delta_color="off", delta_arrow="off")
    m2.metric(
        f"Run pairs significant ({title(spec)})",
        f"{int(here['significant'])} of {int(here['pairs'])} ({here['share']:.0%})",
        family_short,
        help=f"Discriminative power: the share of run pairs significant, {family}, as on the Overview and Compare.",
        delta_color="off",
        delta_arrow="off",
    )
    m3.metric(
        "Smallest detectable Δ",
        f"{here['mdd']:.3f}",
        f"SD of differences {sd:.3f} (median pair)",
        delta_color="off",
        delta_arrow="off",
    )
    m4.metric(
        f"Queries to detect Δ = {target:g}",
        "—" if needed is None else f"{needed:,}",
        None if needed is None else power_mod.stage_of(needed),
        delta_color="off",
        delta_arrow="off",
    )
    st.caption(
        f"Smallest detectable Δ: the difference a paired t-test finds with {power:.0%} power at "
        f"{planned_at} (the noncentral t distribution), where SD is the standard deviation of the per-query differences between "
        f"two runs; the queries needed are planned at the same level. Discriminative power: the share of run pairs whose p-value ({test_title(test)}) is below α, "
        f"{family}, as on the Overview and Compare (Sakai defines it uncorrected: pick “uncorrected”). "
        "More runs in the sidebar give more pairs."
    )
    layout.show_figure(planned.figure, key="power.curve", filename=f"power-{spec}")

    st.subheader("Discriminative power per metric")
    layout.show_table(
        planned.metrics,
        key="power.metrics",
        filename=f"discriminative-power-k{k}-{test}.csv",
        column_order=[c for c in planned.metrics.columns if c != "metric"],
        column_config={
            "label": st.column_config.TextColumn("metric"),
            "significant": st.column_config.NumberColumn(
                f"pairs with {correction_title(correction)} p < {alpha:g}", format="%d"
            ),
            "share": st.column_config.ProgressColumn(
                "discriminative power", format="percent", min_value=0.0, max_value=1.0
            ),
            "sd_median": st.column_config.NumberColumn("SD of differences (median pair)", format="%.3f"),
            "mdd": st.column_config.NumberColumn(f"smallest detectable Δ at n = {n}", format="%.3f"),
        },
    )

    st.subheader(f"Run pairs on {title(spec)}")
    layout.show_table(
        planned.pairs,
        key="power.pairs",
        filename=f"pairs-{spec}-{test}.csv",
        column_config={
            "delta": st.column_config.NumberColumn("Δ (a − b)", format="%+.3f"),
            "p_value": st.column_config.NumberColumn("p", format="%.4f"),
            "p_value_corrected": st.column_config.NumberColumn(f"p ({correction_title(correction)})", format="%.4f"),
            "significant": st.column_config.CheckboxColumn(f"{correction_title(correction)} p < {alpha:g}"),
            "sd_difference": st.column_config.NumberColumn("SD of differences", format="%.3f"),
            "mdd": st.column_config.NumberColumn("smallest detectable Δ", format="%.3f"),
            "queries_needed": st.column_config.NumberColumn("queries to detect this Δ", format="%d"),
        },
    )

    st.subheader("Against the rules of thumb")
    left, right = st.columns(2)
    with left:
        layout.show_table(
            planned.rules,
            key="power.rules",
            filename="rules-of-thumb.csv",
            column_config={
                "mdd_low_end": st.column_config.NumberColumn(
                    "Δ at low end",
                    format="%.3f",
                    help="Smallest detectable difference with the fewest queries of the range",
                ),
                "mdd_high_end": st.column_config.NumberColumn(
                    "Δ at high end",
                    format="%.3f",
                    help="Smallest detectable difference with the most queries of the range",
                ),
            },
        )
    with right:
        layout.show_table(
            planned.needed_table,
            key="power.needed",
            filename="queries-needed.csv",
            column_config={
                "delta": st.column_config.NumberColumn("Δ to detect", format="%.3f"),
                "queries_needed": st.column_config.NumberColumn("queries needed", format="%d"),
            },
        )

layout.finish(page, view)
