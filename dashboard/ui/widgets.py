"""Shared pickers: each takes the view's value, returns the widget's value, and writes no view state.

Keys are namespaced (``sidebar.runs``, ``missed.category``). ``force=True``
pushes the view's value into the widget (a link was just opened, or the page
was just switched to).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from dashboard.core.compare import ALPHAS, DEFAULT_ALPHA, DEFAULT_TEST, TESTS, test_title
from dashboard.core.specs import K_MAX, METRIC_CHOICES, metric_title, takes_k
from dashboard.core.targets import DEFAULT_PROFILE, PROFILES, profile_title
from dashboard.ui import state

__all__ = [
    "ALL",
    "alpha_picker",
    "baseline_picker",
    "dataset_picker",
    "group_picker",
    "k_picker",
    "metric_picker",
    "profile_picker",
    "query_picker",
    "run_focus_picker",
    "run_picker",
    "search_box",
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
    state.seed(key, [r for r in value if r in options], force=force or stale)
    return list(
        st.multiselect(
            "Runs",
            list(options),
            format_func=lambda i: options.get(i, i),
            key=key,
            help="The runs to compare; add more on the Upload page.",
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


def k_picker(value: int, *, force: bool, k_max: int = K_MAX) -> int:
    key = "sidebar.k"
    state.seed(key, int(min(max(value, 1), k_max)), force=force)
    return int(
        st.slider("K (cut-off)", 1, k_max, key=key, help="Metric@K, and 'missed' = no relevant document in the top K.")
    )


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


def search_box(value: str, key: str, *, force: bool) -> str:
    state.seed(key, value, force=force)
    return str(st.text_input("Search query text or id", key=key, placeholder="e.g. 退款 or q012")).strip()


def profile_picker(value: str, *, force: bool) -> str:
    key = "overview.profile"
    state.seed(key, value if value in PROFILES else DEFAULT_PROFILE, force=force)
    return st.selectbox(
        "Targets profile",
        list(PROFILES),
        format_func=profile_title,
        key=key,
        help="Scenario thresholds; edit them below. The edited set travels with the share link.",
    )


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
    options: Mapping[str, str], value: str | None, *, force: bool, key: str = "compare.baseline"
) -> str | None:
    """The baseline run id (``ViewState.baseline``); ``options`` maps id -> name."""
    ids = list(options)
    if not ids:
        return None
    state.seed(key, value if value in options else ids[0], force=force or state.widget_value(key) not in options)
    return st.selectbox(
        "Baseline",
        ids,
        format_func=lambda i: options.get(i, i),
        key=key,
        help="Every other selected run is compared with this one, query by query.",
    )


def significance_test_picker(key: str, default: str = DEFAULT_TEST, *, force: bool = False) -> str:
    """The paired significance test, from the library's registry (:data:`ragmetrics.stats.TESTS`)."""
    state.seed(key, default if default in TESTS else DEFAULT_TEST, force=force or state.widget_value(key) not in TESTS)
    resampled = " and ".join(t.title for t in TESTS.values() if t.resampled)
    return str(
        st.selectbox(
            "Significance test",
            list(TESTS),
            format_func=test_title,
            key=key,
            help=f"Paired on per-query values. {resampled} use 10,000 seeded resamples, so results repeat exactly.",
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
            help="A difference is significant when its corrected p-value (Holm) is below α.",
        )
    )
