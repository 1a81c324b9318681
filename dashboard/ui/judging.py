"""The Judge page's Streamlit glue: who is judging, the labels given (straight to the store, in widget
callbacks, so the page that follows already leaves the pair out), the pairs skipped in this session, and
saving a qrels version.

Every label is written at once (:meth:`ragmetrics.store.database.Store.add_label`): a reload, a second tab or a server
restart loses none, and every tab and process reading the store sees it. A rule's suggestion is stored
(``kind="suggestion:<rule>"``) only when the judge accepts it, together with the judge's label.

Each session (a tab) holds the pair it is shown (:func:`claim`), so judges elsewhere are shown other pairs, and
writes a label only over what it saw (:func:`give`): a label another judge gave meanwhile becomes
:func:`conflict`, for the page to show.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.core.judge import RULES
from dashboard.data.workspace import DatasetEntry, SavedEntry, Workspace
from dashboard.ui import auth
from ragmetrics.store.database import Claim, LabelConflict

_SKIPPED = "ragmetrics.judge.skipped"
_LAST = "ragmetrics.judge.last"
_HOLDER = "ragmetrics.judge.holder"
_OWN = "ragmetrics.judge.own"
_CONFLICT = "ragmetrics.judge.conflict"
_PLACE = "ragmetrics.judge.place"

__all__ = [
    "Conflict",
    "accepted_suggestions",
    "author",
    "claim",
    "conflict",
    "dismiss_conflict",
    "give",
    "hold",
    "labelled",
    "last_given",
    "newer_version",
    "pending",
    "place_for",
    "replace",
    "save_version",
    "saved_message",
    "skip",
    "skipped",
    "unskip_all",
]


def author() -> str:
    """The signed-in user's name for the labels ("anonymous" with a shared password or no sign-in)."""
    return auth.user_name()


@dataclass(frozen=True)
class Conflict:
    """A grade refused because another label was given for the pair since the page showed it: the judge's
    ``grade`` (and the ``suggestion`` kind it accepted, or "") and the label given meanwhile (``existing``:
    ``label, author, version`` ...)."""

    dataset_id: str
    query_id: str
    doc_id: str
    grade: int
    suggestion: str
    existing: dict[str, Any] = field(hash=False)


def holder() -> str:
    """This judging session's token (a browser tab's): it holds the pair the page shows it. The workspace knows
    which Streamlit session gave it, so the sweeper lets the pair go when the tab's browser goes
    (:class:`dashboard.data.workspace.ClaimHolders`)."""
    value = st.session_state.get(_HOLDER)
    if not isinstance(value, str):
        value = st.session_state[_HOLDER] = secrets.token_hex(8)
    return value


def give(
    workspace: Workspace,
    dataset_id: str,
    query_id: str,
    doc_id: str,
    grade: int,
    suggestion: str | None = None,
) -> None:
    """Store the judge's label of one pair at once; ``suggestion`` (``suggestion:<rule>``) when the label is a
    rule's suggestion the judge accepted (stored as such too, so where it came from is kept).

    Only over what the judge saw: the pair unlabelled, or this session's own latest label of it. A label another
    judge gave meanwhile is not overwritten; it is kept as :func:`conflict` for the page to show, with the choice
    to replace it (:func:`replace`)."""
    own = st.session_state.setdefault(_OWN, {})
    try:
        ident = workspace.add_label(
            dataset_id,
            query_id,
            doc_id,
            grade,
            author=author(),
            expect=own.get((dataset_id, query_id, doc_id)),
            accepted=suggestion,
        )
    except LabelConflict as err:
        st.session_state[_CONFLICT] = Conflict(dataset_id, query_id, doc_id, int(grade), suggestion or "", err.existing)
        return
    _given(dataset_id, query_id, doc_id, grade, suggestion, ident)


def _given(dataset_id: str, query_id: str, doc_id: str, grade: int, suggestion: str | None, ident: int) -> None:
    st.session_state.setdefault(_OWN, {})[(dataset_id, query_id, doc_id)] = ident
    st.session_state[_LAST] = (dataset_id, query_id, doc_id, int(grade), suggestion or "")
    st.session_state.pop(_CONFLICT, None)


def replace(workspace: Workspace, clash: Conflict) -> None:
    """Store the refused grade of ``clash`` over the label given meanwhile: the judge saw it and chose theirs."""
    ident = workspace.add_label(
        clash.dataset_id, clash.query_id, clash.doc_id, clash.grade, author=author(), accepted=clash.suggestion or None
    )
    _given(clash.dataset_id, clash.query_id, clash.doc_id, clash.grade, clash.suggestion, ident)


def conflict() -> Conflict | None:
    """The grade this session gave last that was refused because of a label given meanwhile, if any."""
    value = st.session_state.get(_CONFLICT)
    return value if isinstance(value, Conflict) else None


def dismiss_conflict() -> None:
    """Keep the label given meanwhile (the refused grade is dropped)."""
    st.session_state.pop(_CONFLICT, None)


HOLD_EVERY = 30.0
"""Seconds between two renewals of the pair a tab is shown (:func:`hold`), well within the claim's life
(:data:`ragmetrics.store.CLAIM_SECONDS`): a tab left open keeps its pair; a closed one lets it go."""


def hold(workspace: Workspace, dataset_id: str) -> None:
    """Renew this session's claim on the pair it is shown (the judge is still reading it)."""
    workspace.renew_claims(dataset_id, holder())


def labelled(workspace: Workspace, dataset_id: str) -> pd.DataFrame:
    """The pairs a person labelled on the dataset's lineage, pending or saved in a version: ``query_id, doc_id`` (a
    judge's label leaves its pair to people)."""
    return workspace.labelled_pairs(dataset_id)


def claim(workspace: Workspace, dataset_id: str, todo: pd.DataFrame) -> Claim | None:
    """The pair of ``todo`` (the queue left, best first) to show this session, held for it so that judges on other
    tabs and servers are shown other pairs (:meth:`ragmetrics.store.database.Store.claim_pair`)."""
    pairs = list(zip(todo["query_id"].astype("str"), todo["doc_id"].astype("str"))) if len(todo) else []
    return workspace.claim_pair(dataset_id, pairs, holder())


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


def save_version(workspace: Workspace, dataset: DatasetEntry, *, judges: bool = False) -> SavedEntry | None:
    """Save the labels pending on ``dataset`` as a new qrels version by the signed-in user: the version that holds
    them and whether this save made it (None: none pending); people's only unless ``judges`` (then the judges' too,
    as judgments the version records as theirs).
    :class:`RagMetricsError` when they would make no new version (they change no judgment)."""
    return workspace.commit_labels(dataset.id, author=author(), judges=judges)


def saved_message(workspace: Workspace, saved: SavedEntry, left_out: int = 0) -> str:
    """What the page says of a save (:func:`save_version`): ``saved as vN`` when it made the version, ``already
    saved as vN by another save`` when another tab or server saved the labels first; with the version's count of
    people's and judges' labels (others' saved with them included). ``left_out``: the pairs only a judge labelled
    that this save left out (said only of a version it made); of a version deleted since, its id and that it was."""
    entry = saved.entry
    if entry is None:
        by = "" if saved.made else ", by another save (another tab or server),"
        return (
            f"The labels were saved{by} as qrels version {saved.version}, which has since been deleted (another "
            "tab or server deleted it): the labels went with it."
        )
    number = f"v{entry.version.number}" if entry.version is not None else "a new qrels version"
    people, judges = workspace.version_sources(entry.id)
    counts = f"“{entry.name}” ({entry.id}): {people} people's, {judges} a judge's."
    if not saved.made:
        return f"These labels were already saved as {number} by another save (another tab or server): {counts}"
    note = f" The judges' labels of {left_out:,} pair(s) were left out." if left_out else ""
    return f"Saved {people + judges} label(s) as {number}: {counts}{note}"


def newer_version(workspace: Workspace, dataset: DatasetEntry) -> DatasetEntry | None:
    """The newest qrels version made from ``dataset`` (or from its versions) since the page read it: where the
    labels given on it are pending now (:meth:`ragmetrics.store.database.Store.pending_place`); None when it is
    the newest."""
    place = workspace.pending_place(dataset.id)
    if place == dataset.id:
        return None
    if workspace.dataset(place) is None:  # saved on another server since this one listed the datasets
        workspace.refresh()
    return workspace.dataset(place)


def withdraw(workspace: Workspace, dataset_id: str, labels: list[tuple[str, str, int]]) -> tuple[int, int, int]:
    """Take back the pending ``labels`` (query, document, row id as shown): unlabelled again, back in the queue.
    Returns how many went, how many were kept because the pair was labelled again meanwhile, and how many were
    no longer pending (saved in a version, or withdrawn, by another tab or server meanwhile)."""
    taken = kept = saved = 0
    for query_id, doc_id, ident in labels:
        try:
            went = workspace.withdraw_label(dataset_id, query_id, doc_id, expect=ident) > 0
        except LabelConflict:
            kept += 1
            continue
        taken += went
        saved += not went
    return taken, kept, saved


def pending(workspace: Workspace, dataset_id: str) -> pd.DataFrame:
    """The labels people gave on the dataset and not saved yet, read from the store (every tab's, every process's)."""
    return workspace.pending_labels(dataset_id, judges=False)


def pending_judge_pairs(workspace: Workspace, dataset_id: str, people_labelled: pd.DataFrame) -> int:
    """How many pairs a judge labelled on the dataset, not saved yet, that no person labelled on its lineage
    (``people_labelled``: :func:`labelled`): the judges' labels a version could take."""
    everyone = workspace.pending_labels(dataset_id)
    people = set(zip(*(people_labelled[c].astype(str) for c in ("query_id", "doc_id"))))
    return sum((q, d) not in people for q, d in zip(everyone["query_id"].astype(str), everyone["doc_id"].astype(str)))


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
