"""Shared pickers: each takes the view's value, returns the widget's value, and writes no view state.

Keys are namespaced (``sidebar.runs``, ``missed.category``). ``force=True``
pushes the view's value into the widget (a link was just opened, or the page
was just switched to).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.core import targets
from dashboard.core.compare import (
    ALPHAS,
    DEFAULT_ALPHA,
    DEFAULT_TEST,
    TESTS,
    correction_title,
    default_baseline,
    test_title,
)
from dashboard.core.share import (
    BUDGETS,
    DEFAULT_BUDGET,
    DEFAULT_CORRECTION,
    MAX_METRICS,
    MAX_RUNS,
    NO_PROFILE,
    ViewState,
)
from dashboard.core.specs import K_MAX, METRIC_CHOICES, metric_title, takes_k
from dashboard.core.targets import DEFAULT_PROFILE, NO_TARGETS, PROFILES, declared_title, profile_title
from dashboard.ui import state
from ragmetrics.analysis.stats import CORRECTIONS
from ragmetrics.engine.metrics import MetricSpec, parse_metric
from ragmetrics.foundation.errors import RagMetricsError

__all__ = [
    "ALL",
    "alpha_picker",
    "baseline_picker",
    "bounds_toggle",
    "correction_picker",
    "dataset_picker",
    "depth_input",
    "folded_section",
    "group_picker",
    "k_picker",
    "metric_picker",
    "metric_set_picker",
    "profile_picker",
    "query_picker",
    "run_focus_picker",
    "run_picker",
    "search_box",
    "shown_section",
    "significance_test_picker",
    "takes_k",
]

ALL = "All"


def dataset_picker(options: Mapping[str, str], value: str | None, *, force: bool) -> str | None:
    """Dataset id; ``options`` maps id -> name."""
    ids = list(options)
    if not ids:
        return None
    key = "sidebar.dataset"
    state.seed(key, value if value in options else ids[0], force=force or state.widget_value(key) not in options)
    return st.selectbox("Dataset", ids, format_func=lambda i: options.get(i, i), key=key)


def run_picker(options: Mapping[str, str], value: Sequence[str], *, force: bool) -> list[str]:
    """Selected run ids; ``options`` maps id -> name."""
    key = "sidebar.runs"
    current = state.widget_value(key)
    stale = current is not None and any(r not in options for r in current)
    state.seed(key, [r for r in value if r in options][:MAX_RUNS], force=force or stale)
    return list(
        st.multiselect(
            "Runs",
            list(options),
            format_func=lambda i: options.get(i, i),
            key=key,
            max_selections=MAX_RUNS,  # as many as a share link holds
            help=f"The runs to compare (at most {MAX_RUNS}); add more on the Upload page.",
        )
    )


def metric_picker(value: str, *, force: bool) -> str:
    key = "sidebar.metric"
    state.seed(key, value if value in METRIC_CHOICES else METRIC_CHOICES[0], force=force)
    return st.selectbox(
        "Metric",
        list(METRIC_CHOICES),
        format_func=metric_title,
        key=key,
        help="Used by the breakdown, the missed-queries page and the category rule of the diagnosis.",
    )


K_PRESETS: tuple[int, ...] = (1, 3, 5, 10, 20, 100)
"""The cut-offs offered as one-click presets beside the K box."""


def _k_from_preset() -> None:
    preset = st.session_state.get("sidebar.k.preset")
    if preset is not None:
        st.session_state["sidebar.k"] = int(preset)


def _preset_from_k() -> None:
    k = st.session_state.get("sidebar.k")
    st.session_state["sidebar.k.preset"] = k if k in K_PRESETS else None


def k_picker(value: int, *, force: bool, k_max: int = K_MAX) -> int:
    """K as a number box (any whole K from 1 to ``k_max``) with one-click presets."""
    key = "sidebar.k"
    k = int(min(max(value, 1), k_max))
    state.seed(key, k, force=force)
    state.seed(f"{key}.preset", k if k in K_PRESETS else None, force=force)
    picked = int(
        st.number_input(
            "K (cut-off)",
            min_value=1,
            max_value=k_max,
            step=1,
            key=key,
            on_change=_preset_from_k,
            help="Metric@K, and 'missed' = no relevant document in the top K. Type any K, or pick a preset below.",
        )
    )
    st.pills(
        "K presets",
        [p for p in K_PRESETS if p <= k_max],
        key=f"{key}.preset",
        on_change=_k_from_preset,
        label_visibility="collapsed",
        help="Common cut-offs",
    )
    return picked


def group_picker(label: str, key: str, options: Sequence[str], value: str | None, *, force: bool) -> str | None:
    """A category or difficulty filter; None means all."""
    choices = [ALL, *options]
    state.seed(key, value if value in options else ALL, force=force or state.widget_value(key) not in choices)
    picked = st.selectbox(label, choices, key=key)
    return None if picked == ALL else picked


def run_focus_picker(options: Mapping[str, str], value: str | None, key: str, *, force: bool) -> str | None:
    ids = list(options)
    if not ids:
        return None
    state.seed(key, value if value in options else ids[0], force=force or state.widget_value(key) not in options)
    return st.selectbox("Run", ids, format_func=lambda i: options.get(i, i), key=key)


def search_box(value: str, key: str, *, force: bool, example: str = "") -> str:
    """Text search; ``example`` (a query of the data at hand) is the placeholder's hint."""
    state.seed(key, value, force=force)
    placeholder = f"e.g. {example}" if example else ""
    return str(st.text_input("Search query text or id", key=key, placeholder=placeholder)).strip()


def profile_picker(value: str, *, force: bool, declared: str = "") -> str:
    """The targets profile: "" is the dataset's ``declared`` targets when it declares some (then "No targets" is
    ``NO_TARGETS``), else no targets, until the user picks one."""
    key = "overview.profile"
    choices = [NO_PROFILE, *([NO_TARGETS] if declared else []), *PROFILES]
    stale = state.widget_value(key) not in choices
    state.seed(key, value if value in choices else DEFAULT_PROFILE, force=force or stale)

    def shown(p: str) -> str:
        if p == NO_PROFILE:
            return declared_title(declared) if declared else "No targets"
        return "No targets" if p == NO_TARGETS else profile_title(p)

    return str(
        st.selectbox(
            "Targets profile",
            choices,
            format_func=shown,
            key=key,
            help="Scenario thresholds to check each run against; edit them below. The set travels with the share link.",
        )
    )


def metric_set_picker(
    chosen: Sequence[MetricSpec],
    default: Sequence[MetricSpec],
    options: Sequence[str],
    *,
    force: bool,
    key: str = "compare.metrics",
) -> tuple[list[MetricSpec], list[str]]:
    """The metrics a page compares, each with its own cut-off; ``chosen`` empty follows ``default`` (the sidebar's
    metric and K) until the user edits the set. Returns the valid specs (the picker is where typed names are read)
    and the entries that are no metric."""
    if force:  # a view from a link or a page switch: the set follows it again
        state.forget_touched(key)
    own = state.touched(key)
    state.seed(key, [str(s) for s in chosen or default][:MAX_METRICS], force=force or (not chosen and not own))
    picked = st.multiselect(
        "Metrics",
        list(dict.fromkeys([*options, *(state.widget_value(key) or [])])),
        key=key,
        max_selections=MAX_METRICS,  # as many as a share link holds
        accept_new_options=True,
        on_change=state.touch,
        args=(key,),
        help="Each with its own cut-off (type e.g. ndcg@7 to add one). All of them are one family for the correction.",
    )
    valid: list[MetricSpec] = []
    bad: list[str] = []
    for item in picked:
        try:
            valid.append(parse_metric(str(item)))
        except (RagMetricsError, ValueError):
            bad.append(str(item))
    return list(dict.fromkeys(valid)), bad


def correction_picker(key: str, value: str, *, force: bool) -> str:
    """The multiple-comparison correction, from the library's registry (:data:`ragmetrics.analysis.stats.CORRECTIONS`)."""
    state.seed(key, value if value in CORRECTIONS else DEFAULT_CORRECTION, force=force)
    return str(
        st.selectbox(
            "Correction",
            list(CORRECTIONS),
            format_func=correction_title,
            key=key,
            help="Over the family the page names: Holm (step-down, controls the family-wise error), Bonferroni "
            "(p × family size), or none (each p-value alone).",
        )
    )


def budget_picker(key: str, value: int, *, force: bool) -> int:
    """A token budget of context, from :data:`dashboard.core.share.BUDGETS`."""
    state.seed(key, value if value in BUDGETS else DEFAULT_BUDGET, force=force)
    return int(
        st.selectbox(
            "Token budget",
            list(BUDGETS),
            key=key,
            format_func=lambda n: f"{n:,} tokens",
            help="The context a pipeline hands the model: each chunking is read on what fits in this many tokens, "
            "so bigger chunks no longer win by holding more text.",
        )
    )


def bounds_toggle(key: str, value: bool, *, force: bool) -> bool:
    """Whether a comparison shows what the unjudged documents leave open (:meth:`ragmetrics.Alignment.bounds`)."""
    state.seed(key, bool(value), force=force)
    return bool(
        st.toggle(
            "Bounds from the unjudged",
            key=key,
            help="Each mean's and each Δ's worst and best over every way of judging the unjudged documents the runs "
            "retrieved (non-relevant or relevant), and whether the judgments could flip a Δ's sign.",
        )
    )


def folded_section(label: str, key: str, view: ViewState, *, force: bool) -> tuple[DeltaGenerator | None, ViewState]:
    """:func:`opened_section` whose open state is the view's ``charts`` (a link keeps it as it was): the section (None
    while folded: a folded chart loads no chart library, a folded table holds no grid in the browser) and the view
    with ``charts`` set to whether it is open."""
    section = opened_section(label, key, opened=view.charts, force=force)
    return section, view.with_(charts=section is not None)


def opened_section(
    label: str, key: str, *, icon: str | None = None, opened: bool = False, force: bool = False
) -> DeltaGenerator | None:
    """An expander whose content the page computes and sends only while it is open (a rerun when it opens or folds):
    the section, or None while it is folded, when the page draws nothing in it (a folded table holds no grid in
    the browser, folded text no Markdown). Open or folded as the user left it, after a look at another page;
    ``opened``: its state in a new session (a link just opened), or pushed in when ``force``."""
    state.keep(key)
    state.seed(key, opened, force=force)
    section = st.expander(label, key=key, icon=icon, on_change="rerun")
    return section if section.open else None


def guarded_button(label: str, *, key: str, refused: str | None, **kwargs: Any) -> bool:
    """``st.button``, drawn disabled while ``refused`` says (in words) why it cannot act now; True when it was
    pressed. A click made while it could act can reach a run that finds it cannot (another tab, server or judge
    changed what it acts on meanwhile): a button drawn disabled returns False even when clicked, so the click is
    recorded by its callback (:func:`dashboard.ui.state.record_click`), and such a click says ``refused`` once
    instead of vanishing without a word. ``kwargs`` go to ``st.button``, all but ``disabled`` and ``on_click``."""
    clicked = state.take_click(key)
    pressed = st.button(
        label, key=key, on_click=state.record_click, args=(key,), disabled=refused is not None, **kwargs
    )
    if clicked and not pressed and refused is not None:
        st.warning(refused, icon=":material/info:")
    return pressed


def shown_section(label: str, key: str, view: ViewState, *, force: bool, help: str) -> ViewState:
    """A toggle for a section the page computes and sends only while it is on, where an expander cannot hold it
    (the section holds expanders of its own); the view with ``charts`` set to it (a link keeps it as it was)."""
    state.seed(key, view.charts, force=force)
    return view.with_(charts=bool(st.toggle(label, key=key, help=help)))


def depth_input(key: str, value: int, label: str, help: str, *, force: bool) -> int:
    """A depth in ranks, 1 to K_MAX: the Judge page's pool, the documents the Compare page's bounds judge."""
    state.seed(key, min(max(int(value), 1), K_MAX), force=force)
    return int(st.number_input(label, min_value=1, max_value=K_MAX, key=key, help=help))


def query_picker(
    options: Sequence[str], labels: Mapping[str, str], value: str | None, key: str, *, force: bool
) -> str | None:
    """One query id from ``options`` (None when there are none)."""
    if not options:
        return None
    state.seed(key, value if value in options else options[0], force=force or state.widget_value(key) not in options)
    return st.selectbox("Query", list(options), format_func=lambda q: labels.get(q, q), key=key)


# --- comparison and power pickers ----------------------------------------------------------


def baseline_picker(
    options: Mapping[str, str],
    value: str | None,
    *,
    force: bool,
    key: str = "compare.baseline",
    avoid: Collection[str] = (),
) -> str | None:
    """The baseline run id (``ViewState.baseline``); ``options`` maps id -> name. With no baseline named, the first
    run not in ``avoid`` (runs whose numbers mean nothing) is the default."""
    ids = list(options)
    if not ids:
        return None
    state.seed(key, default_baseline(ids, value, avoid), force=force or state.widget_value(key) not in options)
    return st.selectbox(
        "Baseline",
        ids,
        format_func=lambda i: options.get(i, i),
        key=key,
        help="Every other selected run is compared with this one, query by query.",
    )


def significance_test_picker(key: str, default: str = DEFAULT_TEST, *, force: bool = False) -> str:
    """The paired significance test, from the library's registry (:data:`ragmetrics.analysis.stats.TESTS`)."""
    state.seed(key, default if default in TESTS else DEFAULT_TEST, force=force or state.widget_value(key) not in TESTS)
    titles = [t.title for t in TESTS.values() if t.resampled]
    resampled = ", ".join(titles[:-1]) + f" and {titles[-1]}" if len(titles) > 1 else "".join(titles)
    return str(
        st.selectbox(
            "Significance test",
            list(TESTS),
            format_func=test_title,
            key=key,
            help=f"Paired on per-query values. {resampled} use 10,000 seeded resamples (Wilcoxon with ties, from 14 to 50 queries), so results repeat exactly.",
        )
    )


def alpha_picker(key: str, default: float = DEFAULT_ALPHA, *, force: bool = False) -> float:
    """The significance level alpha."""
    state.seed(
        key, default if default in ALPHAS else DEFAULT_ALPHA, force=force or state.widget_value(key) not in ALPHAS
    )
    return float(
        st.selectbox(
            "α (significance level)",
            list(ALPHAS),
            format_func=lambda a: f"{a:g}",
            key=key,
            help="A difference is significant when its corrected p-value is below α.",
        )
    )


_TARGETS_BASE = "targets.editor"


def targets_editor(
    profile: str, in_force: targets.Targets, declared: str, *, fresh: bool
) -> tuple[targets.Targets, list[str], bool]:
    """The Overview's editor of the targets in force: the targets it holds, notes on rows it could not read, and
    whether "Reset to the profile" was clicked. A dynamic data editor is tied to the data it is drawn with: drawn
    from the targets the user's last edit made, it was a new editor each run, which lost the next edit and kept a
    reset from taking. So it is drawn from the targets in force when it was first drawn for ``profile`` (a link
    just opened, another page left, a profile picked), and its state holds the user's edits; a reset draws a new
    one from the profile's."""
    base = state.recall(_TARGETS_BASE)
    if fresh or base is None or base[0] != profile:
        base = (profile, targets.format_targets(in_force), 0 if base is None else base[2] + 1)
        state.remember(_TARGETS_BASE, base)
    edited = st.data_editor(
        targets.targets_frame(targets.parse_targets(base[1])[0]),
        key=f"overview.targets.{profile}.{base[2]}",
        num_rows="dynamic",
        hide_index=True,
        column_config={
            "metric": st.column_config.TextColumn("metric", help="e.g. recall@5, mrr, ndcg@10"),
            "threshold": st.column_config.NumberColumn(
                "must be above", min_value=0.0, max_value=1.0, step=0.01, format="%.3f"
            ),
        },
    )
    held, notes = targets.targets_from_frame(edited)
    reset = st.button("Reset to the profile", key="overview.targets.reset")
    if reset:
        profiles = targets.format_targets(targets.profile_targets(profile, declared))
        state.remember(_TARGETS_BASE, (profile, profiles, base[2] + 1))
    return held, notes, reset


def targets_editor_folded() -> None:
    """The editor of :func:`targets_editor` is not drawn this run (its section folded): Streamlit drops its edits,
    so when it is drawn again it starts from the targets then in force (the link's), not from those it was first
    drawn with."""
    base = state.recall(_TARGETS_BASE)
    if base is not None and base[0] is not None:
        state.remember(_TARGETS_BASE, (None, *base[1:]))
