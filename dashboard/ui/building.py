"""The Build dataset page's Streamlit glue: the generators offered (from the registries, never an address typed
into the page), starting and resuming a batch's generation, the review decisions (straight to the store, in widget
callbacks, so the page that follows already shows the next candidate), the edit being made, and making the
dataset.

Every decision is written at once (:meth:`ragmetrics.store.candidates.CandidateStore.review`) with the reviewer (the
signed-in user, else "anonymous") and the time: a reload, a second tab or a server restart loses none. A decision
is only taken for a candidate as this session was shown it: undecided, or, shown again to be reviewed again (from
the decisions, or named by a share link), with the decision it then had. One decided or changed since (another
tab, another reviewer, a key pressed while the page reran reaching the previous candidate's button) keeps that
decision, and the page that follows says so, with who decided it (:func:`not_taken`); an edit saved over it stays on
its form with the same words, and a second save takes it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from dashboard.data.entries import utc, when
from dashboard.data.jobs import GenerationJob, generation, start_generation
from dashboard.data.workspace import DatasetEntry, Workspace
from dashboard.ui import auth
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.models.registry import registered, registrations
from ragmetrics.store.candidates import Batch, Reviewed
from ragmetrics.synth.build import apply_edit, categories_of
from ragmetrics.synth.generators import GENERATORS

_EDITING = "ragmetrics.build.editing"
_REVISING = "ragmetrics.build.revising"
_NOT_TAKEN = "ragmetrics.build.not_taken"
_SHOWN = "ragmetrics.build.shown"
_SHOWN_KEPT = 64
"""How many candidates' shown states a session keeps (the last ones shown: a key can only reach a recent one)."""
_PROBLEM = "ragmetrics.build.problem"

__all__ = [
    "batch_label",
    "decide",
    "decision_rows",
    "default_categories",
    "edit_problem",
    "editing",
    "even_mix",
    "generator_choices",
    "job_of",
    "model_registration_problems",
    "next_candidate",
    "not_taken",
    "resume",
    "reviewer",
    "revise",
    "save_edit",
    "stamp",
    "start",
    "start_editing",
    "stop_editing",
    "stop_revising",
]


def generator_choices() -> dict[str, tuple[str, str | None]]:
    """``{label: (generator, model)}``: each generator of the registry that needs no model, and a model generator
    per model the deployer registered (``RAGMETRICS_MODELS``)."""
    offered: dict[str, tuple[str, str | None]] = {}
    models = registered()  # the environment read once, not once per generator that needs a model
    for name, entry in GENERATORS.items():
        if entry.needs_model:
            for model in models:
                offered[f"{name}: {model}"] = (name, model)
        else:
            offered[name] = (name, None)
    return offered


def model_registration_problems() -> tuple[str, ...]:
    """The items of ``$RAGMETRICS_MODELS`` the model generators leave out, in words."""
    return registrations().problems


def even_mix(categories: Sequence[str], n: int) -> dict[str, int]:
    """``n`` candidates shared by ``categories`` in order, the first ones taking the remainder."""
    if not categories:
        return {}
    share, extra = divmod(n, len(categories))
    return {c: share + (i < extra) for i, c in enumerate(categories)}


def default_categories(label: str) -> tuple[str, ...]:
    generator, _ = generator_choices()[label]
    return categories_of(generator)


def seeds_built(dataset: Dataset) -> set[tuple[str, int]]:
    """The ``(generator, seed)`` pairs the dataset's queries were generated with, read from their ``provenance`` (a
    set ``synth`` or this page built; none for another set)."""
    table = dataset.queries_table
    if "provenance" not in table.column_names:
        return set()
    found: set[tuple[str, int]] = set()
    for text in dict.fromkeys(table.column("provenance").to_pylist()):
        try:
            record = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            continue
        seed = record.get("seed") if isinstance(record, dict) else None
        if record and str(seed).isdigit() and record.get("generator"):  # written as a number or its text
            found.add((str(record["generator"]), int(str(seed))))
    return found


def grouping_words(dataset: Dataset, separator: str) -> str:
    """What a chunk separator does to the dataset's stored documents, in words: how many documents it groups them
    into and the largest group, so a separator that is no chunks' (``-`` of ``FAQ-11``, grading a whole family
    relevant) shows before a batch is generated."""
    documents = dataset.documents
    ids = [] if documents is None else [str(i) for i in documents["doc_id"]]
    groups = Counter(i.rsplit(separator, 1)[0] for i in ids if separator in i)
    if not groups:
        return f"No stored document's id holds {separator!r}: each document is its own."
    head, size = groups.most_common(1)[0]
    words = (
        f"{separator!r} groups {sum(groups.values()):,} of the {len(ids):,} stored documents into {len(groups):,} "
        f"documents, the largest {head!r} of {size:,} chunks"
    )
    if size > max(10, len(ids) // 10):
        words += (
            f": a query written from one of them grades all {size:,} relevant; is {separator!r} what ends a "
            "document's id before its chunk number?"
        )
        return words
    return words + "."


def start(
    workspace: Workspace,
    dataset: DatasetEntry,
    label: str,
    mix: Mapping[str, int],
    seed: int,
    parent_separator: str = "",
) -> GenerationJob:
    """A new batch from ``dataset``'s corpus with the offered generator ``label``, generating; ``parent_separator``:
    the stored documents are chunks of documents whose ids end before its last occurrence (CMRC's ``_C``). A batch
    asked for alike while one is still generating in this process (a double click on Generate) is that one: the
    same candidates would be written twice."""
    offered = generator_choices()
    if label not in offered:
        raise RagMetricsError(f"no generator {label!r} is offered here")
    generator, model = offered[label]
    settings = {"model": model, "categories": dict(mix), "seed": int(seed), "chunker": "none",
                "parent_separator": parent_separator.strip()}  # fmt: skip
    for existing in workspace.candidates.batches(dataset.id):
        job = generation(existing.id)
        alike = existing.generator == generator and json.dumps(existing.settings, sort_keys=True) == json.dumps(
            settings, sort_keys=True
        )
        if alike and job is not None and job.status().running:
            return job
    batch = workspace.candidates.new_batch(dataset.id, generator, settings, sum(mix.values()), author=auth.user_name())
    return _launch(workspace, dataset, batch, generator, settings)


def resume(workspace: Workspace, batch: Batch) -> GenerationJob:
    """Generate the rest of a stopped or interrupted ``batch`` (the candidates stored stay)."""
    dataset = workspace.dataset(batch.parent)
    if dataset is None:
        raise RagMetricsError(f"dataset {batch.parent}, the batch's corpus, is not in this store any more")
    workspace.candidates.set_status(batch.id, "generating")
    return _launch(workspace, dataset, batch.id, batch.generator, batch.settings)


def _launch(
    workspace: Workspace, dataset: DatasetEntry, batch: str, generator: str, settings: Mapping[str, Any]
) -> GenerationJob:
    categories = {str(k): int(v) for k, v in dict(settings.get("categories") or {}).items()}
    job = GenerationJob(workspace.candidates, batch, dataset.dataset, generator, categories,
                        int(settings.get("seed") or 0), settings.get("model"),
                        str(settings.get("parent_separator") or "") or None)  # fmt: skip
    return start_generation(job)


def job_of(batch: str) -> GenerationJob | None:
    return generation(batch)


def next_candidate(candidates: Sequence[Reviewed], batch: str) -> Reviewed | None:
    """The candidate to show: the one the reviewer asked to review again, else the first undecided; remembered as
    shown, with its decision then (:func:`decide` takes a decision only for a candidate still so; while it is
    being edited, as it was when the edit began)."""
    again = st.session_state.get(_REVISING)
    item = None
    if isinstance(again, tuple) and again[0] == batch:
        item = next((c for c in candidates if c.position == again[1]), None)
    if item is None:
        item = next((c for c in candidates if c.decision is None), None)
    if item is not None and not editing(batch, item.position):  # an edit is of the candidate as it was when begun
        shown = st.session_state.setdefault(_SHOWN, {})
        shown.pop((batch, item.position), None)
        shown[batch, item.position] = (item.decision, item.reviewed_at)
        while len(shown) > _SHOWN_KEPT:
            shown.pop(next(iter(shown)))
    return item


def _changed_since_shown(workspace: Workspace, batch: str, position: int) -> Reviewed | None:
    """The candidate at ``position`` if it was decided, or decided otherwise, since this session was shown it (then
    remembered as shown so: a second choice takes); None when a decision may be taken (undecided, as shown, or
    gone)."""
    current = {c.position: c for c in workspace.candidates.candidates(batch)}.get(position)
    if current is None or current.decision is None:
        return None
    shown = st.session_state.setdefault(_SHOWN, {})
    if (current.decision, current.reviewed_at) == tuple(shown.get((batch, position), (None, None))):
        return None
    shown[batch, position] = (current.decision, current.reviewed_at)
    return current


def _kept_words(current: Reviewed, chosen: str) -> str:
    return (
        f"Candidate {current.position} was {current.decision} by {current.reviewer or 'anonymous'} "
        f"({stamp(current.reviewed_at)}) after it was shown to you, when you chose {chosen}: it keeps that decision."
    )


def decide(workspace: Workspace, batch: str, position: int, decision: str) -> None:
    """A button's callback: keep ``decision`` for the candidate, unless it was decided or changed since this
    session was shown it (see the module; the same decision made meanwhile is kept without a word)."""
    changed = _changed_since_shown(workspace, batch, position)
    if changed is not None:
        if changed.decision != decision:
            st.session_state[_NOT_TAKEN] = _kept_words(changed, decision) + " Choose again to change it."
        return
    workspace.candidates.review(batch, position, decision, reviewer=auth.user_name())
    st.session_state.pop(_REVISING, None)
    stop_editing()


def not_taken() -> str | None:
    """The decision this session chose for a candidate already decided, in words, once (the page says it)."""
    said = st.session_state.pop(_NOT_TAKEN, None)
    return said if isinstance(said, str) else None


def revise(batch: str, position: int) -> None:
    """Show a decided candidate again, to change its decision."""
    st.session_state[_REVISING] = (batch, position)
    stop_editing()


def stop_revising() -> None:
    """Back to the queue: the candidate shown again keeps the decision it had."""
    st.session_state.pop(_REVISING, None)
    stop_editing()


def start_editing(batch: str, position: int) -> None:
    st.session_state[_EDITING] = (batch, position)
    st.session_state.pop(_PROBLEM, None)


def stop_editing() -> None:
    st.session_state.pop(_EDITING, None)
    st.session_state.pop(_PROBLEM, None)


def editing(batch: str, position: int) -> bool:
    return st.session_state.get(_EDITING) == (batch, position)


def edit_problem() -> str | None:
    value = st.session_state.get(_PROBLEM)
    return value if isinstance(value, str) else None


def save_edit(workspace: Workspace, batch: str, item: Reviewed, known_docs: set[str], prefix: str) -> None:
    """The edit form's callback: the fields read from ``prefix``-keyed widgets, checked, kept as ``edited``; a
    problem stays on the form (nothing is stored)."""
    values = st.session_state
    try:
        edited = apply_edit(
            item.final,
            query=str(values.get(prefix + "query", "")),
            expected_answer=str(values.get(prefix + "answer", "")),
            keywords=str(values.get(prefix + "keywords", "")),
            category=str(values.get(prefix + "category", "")),
            difficulty=str(values.get(prefix + "difficulty", "")),
            relevant=str(values.get(prefix + "relevant", "")),
            known_docs=known_docs,
        )
    except RagMetricsError as err:
        st.session_state[_PROBLEM] = str(err)
        return
    changed = _changed_since_shown(workspace, batch, item.position)
    if changed is not None:
        st.session_state[_PROBLEM] = _kept_words(changed, "to save an edit") + " Save again to replace it."
        return
    workspace.candidates.review(batch, item.position, "edited", reviewer=auth.user_name(), edited=edited)
    st.session_state.pop(_REVISING, None)
    stop_editing()


def stamp(timestamp: float | None) -> str:
    """A stored time as the dashboard shows times (UTC)."""
    return "" if timestamp is None else when(utc(timestamp))


def batch_label(batch: Batch) -> str:
    """The batch picker's name for ``batch``: what never changes (when, which generator, seed, how many asked, and
    its id: two batches made alike in one minute differ by it, and Streamlit's select box tells options apart by
    their labels). Streamlit's select box keeps an option's first label on the page, so where it stands
    (:func:`batch_state`) is said beside it, not in it."""
    model = batch.settings.get("model")
    return (
        f"{stamp(batch.created_at)}: {batch.generator}{f' ({model})' if model else ''}, seed "
        f"{batch.settings.get('seed', 0)}, {batch.requested} asked ({batch.id[:6]})"
    )


def batch_state(batch: Batch) -> str:
    """Where ``batch`` stands: ``7 of 10 candidates stored, generating``; ``, made a dataset`` once it did."""
    made = ", made a dataset" if batch.dataset_id else ""
    return f"{batch.stored:,} of {batch.requested:,} candidates stored, {batch.status}{made}"


def decision_rows(candidates: Sequence[Reviewed]) -> list[dict[str, Any]]:
    """One row per decided candidate, for the page's table."""
    return [
        {
            "position": c.position,
            "query": c.final.get("query", ""),
            "decision": c.decision,
            "reviewer": c.reviewer,
            "when": stamp(c.reviewed_at),
        }
        for c in candidates
        if c.decision is not None
    ]


def reviewer() -> str:
    """Who reviews: the signed-in user, else "anonymous"."""
    return auth.user_name()
