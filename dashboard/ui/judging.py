"""The Judge page's Streamlit glue: who is judging, the labels given (straight to the store, in widget
callbacks, so the page that follows already leaves the pair out), the pairs skipped in this session, and
saving a qrels version.

Every label is written at once (:meth:`ragmetrics.store.Store.add_label`): a reload, a second tab or a server
restart loses none, and every tab and process reading the store sees it. A rule's suggestion is stored
(``kind="suggestion:<rule>"``) only when the judge accepts it, together with the judge's label.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.core.judge import RULES
from dashboard.data.workspace import DatasetEntry, Workspace
from dashboard.ui import auth

_SKIPPED = "ragmetrics.judge.skipped"
_LAST = "ragmetrics.judge.last"
_PLACE = "ragmetrics.judge.place"

__all__ = [
    "accepted_suggestions",
    "author",
    "give",
    "last_given",
    "pending",
    "place_for",
    "save_version",
    "skip",
    "skipped",
    "unskip_all",
]


def author() -> str:
    """The signed-in user's name for the labels ("anonymous" with a shared password or no sign-in)."""
    return auth.user_name()


def give(
    workspace: Workspace,
    dataset_id: str,
    query_id: str,
    doc_id: str,
    grade: int,
    suggestion: str | None = None,
) -> None:
    """Store the judge's label of one pair at once; ``suggestion`` (``suggestion:<rule>``) when the label is a
    rule's suggestion the judge accepted (stored as such too, so where it came from is kept)."""
    who = author()
    if suggestion:
        workspace.add_label(dataset_id, query_id, doc_id, grade, author=who, kind=suggestion)
    workspace.add_label(dataset_id, query_id, doc_id, grade, author=who)
    st.session_state[_LAST] = (dataset_id, query_id, doc_id, int(grade), suggestion or "")


def last_given() -> tuple[str, str, str, int, str] | None:
    """The label this session gave last: ``(dataset, query, document, grade, suggestion kind or "")``."""
    value = st.session_state.get(_LAST)
    return value if isinstance(value, tuple) and len(value) == 5 else None


def place_for(shown: str) -> int:
    """Which of the page's two places (0 or 1) shows the pair ``shown`` names: the same as the last run's while it is
    the same pair, the other one when the pair changes (the page empties the place it leaves)."""
    last = st.session_state.get(_PLACE)
    if isinstance(last, tuple) and len(last) == 2 and last[0] == shown:
        return int(last[1])
    place = 1 - int(last[1]) if isinstance(last, tuple) and len(last) == 2 else 0
    st.session_state[_PLACE] = (shown, place)
    return place


def skip(dataset_id: str, query_id: str, doc_id: str) -> None:
    """Leave a pair for later in this session (it comes back after a reload, or with :func:`unskip_all`)."""
    st.session_state.setdefault(_SKIPPED, {}).setdefault(dataset_id, set()).add((query_id, doc_id))


def skipped(dataset_id: str) -> set[tuple[str, str]]:
    return set(st.session_state.get(_SKIPPED, {}).get(dataset_id, set()))


def unskip_all(dataset_id: str) -> None:
    st.session_state.get(_SKIPPED, {}).pop(dataset_id, None)


def save_version(workspace: Workspace, dataset: DatasetEntry) -> DatasetEntry | None:
    """Save the labels pending on ``dataset`` as a new qrels version by the signed-in user (None: none pending)."""
    return workspace.commit_labels(dataset.id, author=author())


def withdraw(workspace: Workspace, dataset_id: str, pairs: list[tuple[str, str]]) -> int:
    """Take back the pending labels of ``pairs`` (query, document): unlabelled again, back in the queue."""
    return sum(workspace.withdraw_label(dataset_id, q, d) > 0 for q, d in pairs)


def pending(workspace: Workspace, dataset_id: str) -> pd.DataFrame:
    """The labels given on the dataset and not saved yet, read from the store (every tab's, every process's)."""
    return workspace.pending_labels(dataset_id)


def accepted_suggestions(workspace: Workspace, dataset_id: str) -> pd.DataFrame:
    """The rules' suggestions judges accepted on the dataset: ``query_id, doc_id, label, author, created_at, rule``."""
    parts = []
    for rule in RULES:
        found = workspace.pending_labels(dataset_id, kind=f"suggestion:{rule}")
        if len(found):
            parts.append(found.assign(rule=rule))
    if not parts:
        return pd.DataFrame(columns=["query_id", "doc_id", "label", "author", "created_at", "rule"])
    return pd.concat(parts, ignore_index=True)
