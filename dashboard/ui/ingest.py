"""Uploaded files -> ``ragmetrics.io`` loaders -> the workspace (and so the store).

Each uploaded file is ingested once (remembered by its upload id), so reruns
do not parse it again and its outcome (the loader's message, with the line
number, or what was added) keeps showing while the file stays in the
uploader. The uploaders ingest in their ``on_change`` callbacks
(:func:`on_dataset_upload`, :func:`on_runs_upload`), which Streamlit runs
before the page: the page then starts on the view that opens what was added,
instead of drawing itself twice (the second pass cost about 1 s with a 334 MB
run). A bad file never shows a traceback and never removes anything already
stored: it fails before the store is written, and each store write is one
transaction.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError
from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

from dashboard.core.share import ViewState
from dashboard.core.text import md_escape
from dashboard.data.alignments import RunRefused
from dashboard.data.workspace import Workspace
from dashboard.ui import cache, memory, state
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.io import FORMATS, load_dataset, load_run
from ragmetrics.io.limits import ENV_VARS, Limits, human_bytes

# uploads from the browser get tighter defaults than the CLI; a RAGMETRICS_MAX_* variable still wins
_UPLOAD_DEFAULTS = {"max_bytes": 1 << 30, "max_rows": 20_000_000, "max_queries": 1_000_000}
UPLOAD_LIMITS = Limits.from_env(
    None, **{k: v for k, v in _UPLOAD_DEFAULTS.items() if not os.environ.get(ENV_VARS[k], "").strip()}
)


def _deepcopy_sharing_bytes(self: UploadedFile, memo: dict[int, Any]) -> UploadedFile:
    """A deep copy of an upload that shares its bytes until one of the two is written to (BytesIO's
    copy-on-write), as Streamlit means uploads to behave (streamlit#2410). Streamlit deep-copies every widget's
    value on every run, and BytesIO's own deep copy copies the bytes: for a 334 MB run that was 0.4-0.8 s and
    334 MB more on each run of the Upload page while the file sat in the uploader."""
    clone = UploadedFile(UploadedFileRec(self.file_id, self.name, self.type, self.getvalue()), self._file_urls)
    clone.seek(self.tell())
    memo[id(self)] = clone
    return clone


UploadedFile.__deepcopy__ = _deepcopy_sharing_bytes  # type: ignore[attr-defined]


def upload_types(kind: str) -> list[str]:
    """What the uploader of ``kind`` (``dataset`` or ``run``) accepts: every extension the formats table
    (:data:`ragmetrics.io.FORMATS`) gives that kind, and ``gz`` (any of them gzipped; the readers detect it)."""
    return sorted({ext.lstrip(".") for f in FORMATS if f.kind == kind for ext in f.extensions} | {"gz"})


DATASET_TYPES = upload_types("dataset")
RUN_TYPES = upload_types("run")


@dataclass
class Outcome:
    filename: str
    ok: bool
    message: str
    ident: str | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    fresh: bool = False  # ingested in this script run (not remembered from an earlier one)
    refused: RunRefused | None = None  # a run not stored because its ids do not meet the qrels
    file_id: str = ""


def is_new(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.fresh


def _formats_help() -> str:
    lines = []
    for kind, title in (("dataset", "Datasets"), ("run", "Runs")):
        lines.append(f"**{title}**")
        lines += [f"- {md_escape(f.label())}" for f in FORMATS if f.kind == kind]
    return "\n".join(lines)


def _error_text(filename: str, err: Exception) -> str:
    if isinstance(err, RagMetricsError):
        text = str(err)
        return text if filename in text else f"{filename}: {text}"
    if isinstance(err, SQLAlchemyError):  # read fine, but the store refused it: nothing was written
        first = str(err).splitlines()[0][:300] if str(err) else ""
        return f"{filename}: could not be stored; the store is unchanged ({type(err).__name__}: {first})"
    return f"{filename}: could not be read ({type(err).__name__}: {err})"


def _role(name: str) -> str:
    lower = PurePath(name).name.lower()
    if "corpus" in lower or lower.startswith(("docs", "documents")):
        return "corpus"
    if "queries" in lower or "topics" in lower:
        return "queries"
    return "main"


def ingest_dataset(files: Sequence[Any], workspace: Workspace) -> Outcome | None:
    """Load a dataset from one file, or from a judgments file plus ``*queries*`` / ``*corpus*`` files."""
    if not files:
        return None
    key = "dataset:" + "|".join(sorted(f.file_id for f in files))
    known = state.upload_outcome(key)
    if known is not None:
        return known
    names = ", ".join(f.name for f in files)
    roles: dict[str, Any] = {}
    for f in files:
        roles.setdefault(_role(f.name), f)
    mains = [f.name for f in files if _role(f.name) == "main"]
    main = roles.get("main") or roles.get("queries")
    start = time.perf_counter()
    if main is None:
        outcome = Outcome(names, False, f"{names}: expected a judgments file or evaluation set besides the corpus")
    elif len(mains) > 1:
        outcome = Outcome(
            names,
            False,
            f"{names}: files uploaded together make one dataset (one judgments file or evaluation set, with files "
            f"named *queries* and *corpus*), got {len(mains)} of them; remove all but one to load it",
        )
    elif (bad := _bad_targets(dataset_labels()[2])) is not None:
        outcome = Outcome(names, False, f"Targets: {bad}; the dataset was not stored")
    else:
        try:
            with (
                st.spinner(md_escape(f"Reading and storing {names} ({human_bytes(sum(f.size for f in files))})…")),
                warnings.catch_warnings(record=True) as caught,
                memory.counted_inflation(memory.current_session()),  # what a gzip inflates to, against the budget
            ):
                warnings.simplefilter("always", RagMetricsWarning)
                extra: dict[str, Any] = {}
                if "queries" in roles and roles["queries"] is not main:
                    extra["queries"] = (roles["queries"].getvalue(), roles["queries"].name)
                if "corpus" in roles:
                    extra["corpus"] = (roles["corpus"].getvalue(), roles["corpus"].name)
                dataset = load_dataset(main.getvalue(), filename=main.name, limits=UPLOAD_LIMITS, **extra)
                name, description, declared = dataset_labels()
                ident = workspace.content_id(dataset)
                before = workspace.dataset(ident)
                entry = workspace.add_dataset(
                    dataset, name=name, source=names, description=description, targets=declared, ident=ident
                )
            kept = (
                " (stored before, the same content: its name, description and targets are kept; rename it on Workspace)"
                if before is not None and (name not in (None, before.name) or description or declared)
                else ""
            )
            outcome = Outcome(
                names,
                True,
                f"dataset “{entry.name}”: {len(dataset):,} queries, {dataset.qrels_table.num_rows:,} judgments{kept}",
                entry.id,
                [str(w.message) for w in caught],
                time.perf_counter() - start,
            )
        except Exception as err:
            outcome = Outcome(names, False, _error_text(main.name, err))
    state.remember_upload(key, outcome)
    return replace(outcome, fresh=True)


def _bad_targets(text: str) -> str | None:
    """Why the targets typed for a dataset do not read (None: they do, or none were typed)."""
    if not text:
        return None
    from ragmetrics.analysis.targets import declared_targets

    try:
        declared_targets(text)
    except RagMetricsError as err:
        return str(err)
    return None


def ingest_runs(
    files: Sequence[Any],
    dataset_id: str,
    workspace: Workspace,
    *,
    chunk_pattern: str = "",
    chunk_mapping: Any = None,
    tags_text: str = "",
    retrieval_metadata: Any = None,
) -> list[Outcome]:
    """Load each run file into the workspace under ``dataset_id``; one outcome per file. ``chunk_pattern`` (a
    regular expression or a separator) and ``chunk_mapping`` (an uploaded chunk-to-document file) map a run's
    chunk ids to documents (:func:`ragmetrics.io.load_run`), for runs of any format; a run is read again when
    they change. ``tags_text`` (``KEY=VALUE`` lines) and ``retrieval_metadata`` (an uploaded ``RUN.json`` that
    ``ragmetrics retrieve`` wrote) are the runs' metadata (:mod:`ragmetrics.io.runmeta`); the typed tags win."""
    outcomes = []
    pattern = (chunk_pattern or "").strip()
    mapping_id = getattr(chunk_mapping, "file_id", "") if chunk_mapping is not None else ""
    insisted = set(state.recall(INSISTED) or ())
    for f in files:
        insist = f.file_id in insisted
        key = f"run:{dataset_id}:{f.file_id}:{pattern}:{mapping_id}:{insist}"
        known = state.upload_outcome(key)
        if known is not None:
            outcomes.append(known)
            continue
        start = time.perf_counter()
        try:
            tags = run_tags(tags_text, retrieval_metadata)
            with (
                st.spinner(md_escape(f"Reading and storing {f.name} ({human_bytes(f.size)})…")),
                warnings.catch_warnings(record=True) as caught,
                memory.counted_inflation(memory.current_session()),  # what a gzip inflates to, against the budget
            ):
                warnings.simplefilter("always", RagMetricsWarning)
                run = load_run(
                    f.getvalue(),
                    filename=f.name,
                    limits=UPLOAD_LIMITS,
                    chunk_pattern=pattern or None,
                    chunk_mapping=(chunk_mapping.getvalue(), chunk_mapping.name) if chunk_mapping is not None else None,
                )
                dataset = workspace.dataset(dataset_id)
                # the validation report's alignment is made while the rows are stored, and kept for the pages
                entry = (
                    workspace.add_run(dataset_id, run, source=f.name, tags=tags)  # raises: the dataset is gone
                    if dataset is None
                    else cache.add_run(workspace, dataset, run, source=f.name, tags=tags, insist=insist)
                )
            mapped = " and ".join(
                ([f"pattern {pattern}"] if pattern else []) + ([f"mapping {chunk_mapping.name}"] if mapping_id else [])
            )
            outcome = Outcome(
                f.name,
                True,
                f"run “{entry.name}”: {len(run):,} rows"
                + (f", chunks mapped to documents by {mapped}" if mapped else "")
                + (f", {len(tags)} metadata tag(s)" if tags else ""),
                entry.id,
                [str(w.message) for w in caught],
                time.perf_counter() - start,
            )
        except RunRefused as err:
            outcome = Outcome(f.name, False, _error_text(f.name, err), refused=err, file_id=f.file_id)
        except Exception as err:
            outcome = Outcome(f.name, False, _error_text(f.name, err))
        state.remember_upload(key, outcome)
        outcomes.append(replace(outcome, fresh=True))
    return outcomes


def run_tags(tags_text: str, retrieval_metadata: Any = None) -> dict[str, str]:
    """The tags the upload's metadata fields give: those of an uploaded retrieval metadata JSON, then the typed
    ``KEY=VALUE`` lines (which win); a bad line or file is an error naming it."""
    from ragmetrics.io.runmeta import load_retrieval_metadata, parse_tag_lines, retriever_tags

    found = {}
    if retrieval_metadata is not None:
        found = retriever_tags(load_retrieval_metadata(retrieval_metadata.getvalue(), retrieval_metadata.name))
    return {**found, **parse_tag_lines(tags_text, "Run metadata")}


DATASET_KEY = "upload.dataset"
NAME_KEY = "upload.name"
DESCRIPTION_KEY = "upload.description"
TARGETS_KEY = "upload.targets"


def dataset_labels() -> tuple[str | None, str, str]:
    """The name, description and targets typed for the next dataset upload (None, "", "" when left empty: the
    file's name, no description, no targets)."""
    name = " ".join(str(state.widget_value(NAME_KEY) or "").split())
    targets = str(state.widget_value(TARGETS_KEY) or "").strip()
    return name or None, str(state.widget_value(DESCRIPTION_KEY) or "").strip(), targets


RUNS_KEY = "upload.runs"
CHUNK_PATTERN_KEY = "upload.chunk_pattern"
CHUNK_MAPPING_KEY = "upload.chunk_mapping"
RUN_TAGS_KEY = "upload.run_tags"
RETRIEVAL_META_KEY = "upload.retrieval_meta"
TYPED_KEYS = (NAME_KEY, DESCRIPTION_KEY, TARGETS_KEY, CHUNK_PATTERN_KEY, RUN_TAGS_KEY)
"""The Upload page's typed inputs, kept while another page is open (``state.keep``; files cannot be)."""
CHUNK_MAPPING_TYPES = ["csv", "tsv", "tab", "txt", "json", "jsonl", "gz"]

CHUNK_PATTERN_HELP = (
    "When a run names chunks and the qrels judge the documents they come from: a regular expression whose group "
    "`doc` (else its first group) is the document id, e.g. `(?P<doc>.+)_C\\d+$` for `DEV_3_C0` → `DEV_3` or "
    "`(?P<doc>.+)#\\d+$` for `doc#3`; or a plain separator such as `#` (the document is what precedes its last "
    "occurrence). A document then counts at the rank of its first chunk. Leave it empty when the qrels judge the "
    "chunks themselves. Works for every run format; set it before uploading the runs (changing it reads the runs "
    "in the uploader again)."
)
CHUNK_MAPPING_HELP = (
    "A chunk-to-document file: CSV/TSV with `chunk_id` and `doc_id` (or `source_doc`) columns, JSONL of such "
    "records, or one JSON object `{chunk_id: doc_id}`. It wins over the pattern where both name a chunk. Works for "
    "every run format; upload it before the runs."
)


def chunk_options() -> tuple[str, Any]:
    """The chunk pattern and chunk-mapping file the upload page's fields hold ("", None when empty)."""
    return str(state.widget_value(CHUNK_PATTERN_KEY) or "").strip(), state.widget_value(CHUNK_MAPPING_KEY)


def metadata_options(workspace: Workspace) -> dict[str, Any]:
    """What the upload page's metadata fields hold, as :func:`ingest_runs`'s keyword arguments; none when the store
    refuses to edit tags (an upload's are written as edits are: the fields are disabled, and what they held before
    the store began refusing stays in the session)."""
    if workspace.refuses("edit tags"):
        return {}
    return {
        "tags_text": str(state.widget_value(RUN_TAGS_KEY) or ""),
        "retrieval_metadata": state.widget_value(RETRIEVAL_META_KEY),
    }


def view_with_dataset(view: ViewState, outcome: Outcome | None) -> ViewState | None:
    """The view that opens a dataset this run added (None when nothing new was added)."""
    if outcome is None or not (outcome.ok and outcome.ident and outcome.ident != view.dataset and is_new(outcome)):
        return None
    return view.with_(
        dataset=outcome.ident, runs=(), baseline=None, focus_run=None, query=None, category=None, difficulty=None
    )


def view_with_runs(
    view: ViewState, outcomes: Sequence[Outcome], dataset_id: str, workspace: Workspace
) -> ViewState | None:
    """The view that also selects the runs this run added (None when nothing new was added)."""
    added = [o.ident for o in outcomes if o.ok and o.ident and is_new(o)]
    if not added:
        return None
    kept = [r for r in view.runs if workspace.run(dataset_id, r)] if view.dataset == dataset_id else []
    return view.with_(dataset=dataset_id, runs=tuple(dict.fromkeys([*kept, *added])))


def on_dataset_upload() -> None:
    """``on_change`` of the dataset uploader: ingest before the page runs; the page opens the new dataset."""
    outcome = ingest_dataset(state.widget_value(DATASET_KEY) or [], cache.get_workspace())
    _start_page_on(lambda view: view_with_dataset(view, outcome))


INSISTED = "upload.runs.insisted"
"""The files (by uploader file id) whose refused runs the user chose to store anyway."""


def apply_chunk_pattern(dataset_id: str, pattern: str) -> None:
    """``on_click`` of a refused run's fix: the chunk pattern field takes the pattern the library tried, and the
    runs are read again with it (the page then selects those stored)."""
    st.session_state[CHUNK_PATTERN_KEY] = pattern
    on_runs_upload(dataset_id)


def store_anyway(dataset_id: str, file_id: str) -> None:
    """``on_click`` of a refused run's override: store it though its ids do not meet the qrels (its numbers are
    trec_eval's zeros; the result pages mark it)."""
    state.remember(INSISTED, [*(state.recall(INSISTED) or ()), file_id])
    on_runs_upload(dataset_id)


RUNS_DATASET = "upload.runs.dataset"
"""Where the files in the runs uploader were dropped: the dataset they are stored under (:func:`runs_dataset`)."""


def runs_dataset(shown: str) -> str:
    """The dataset the files in the runs uploader belong to: the one shown when they were dropped. A dataset
    picked afterwards does not take them (the uploader keeps its files across the change)."""
    return str(state.recall(RUNS_DATASET) or shown)


def on_runs_upload(dataset_id: str) -> None:
    """``on_change`` of the runs uploader: ingest before the page runs; the page selects the new runs."""
    state.remember(RUNS_DATASET, dataset_id)
    workspace = cache.get_workspace()
    pattern, mapping = chunk_options()
    outcomes = ingest_runs(
        state.widget_value(RUNS_KEY) or [], dataset_id, workspace, chunk_pattern=pattern, chunk_mapping=mapping,
        **metadata_options(workspace),
    )  # fmt: skip
    _start_page_on(lambda view: view_with_runs(view, outcomes, dataset_id, workspace))


def _start_page_on(change: Callable[[ViewState], ViewState | None]) -> None:
    """Make ``change(last view)`` the view the page starts on (and push it into the widgets), if it changes it."""
    view = state.last_view()
    changed = change(view) if view is not None else None
    if changed is not None:
        state.write_view_state(changed, reseed=True)


def show_upload_budget() -> None:
    """The bytes this session's uploaders hold against its budget, and the last upload refused for it and why
    (:mod:`dashboard.ui.memory`)."""
    session = memory.current_session()
    refused = memory.last_refusal(session)
    if refused:
        st.error(md_escape(f"Upload refused: {refused}"), icon=":material/block:")
    held = memory.upload_bytes().get(session or "", 0)
    limit = memory.budgets().upload_session
    st.caption(
        f"Files in this session's uploaders: {human_bytes(held)} of {human_bytes(limit)}; an upload past that is "
        "refused (remove files with ×, or start a new session)."
    )


def show_outcomes(outcomes: Sequence[Outcome | None], dataset_id: str | None = None) -> None:
    """One line per file: st.success / st.error with the loader's message, and warnings; under a refused run
    (of ``dataset_id``), the fix the library tried, applied in place, and the override."""
    for outcome in outcomes:
        if outcome is None:
            continue
        if outcome.ok:
            stored = f", stored as `{outcome.ident}`" if outcome.ident else ""
            st.success(
                f"Loaded {md_escape(outcome.filename)} → {md_escape(outcome.message)} ({outcome.seconds:.1f} s){stored}",
                icon=":material/check_circle:",
            )
        else:
            st.error(md_escape(outcome.message), icon=":material/error:")
            refused = outcome.refused.refusal if outcome.refused is not None else None
            if refused is not None and dataset_id is not None:
                with st.container(horizontal=True):
                    if refused.chunk_pattern is not None:
                        st.button(
                            f"Apply the chunk pattern {refused.chunk_pattern} and load it again"
                            if refused.chunk_pattern
                            else "Clear the chunk pattern and load it again",
                            key=f"upload.fix.{outcome.file_id}",
                            type="primary",
                            icon=":material/build:",
                            on_click=apply_chunk_pattern,
                            args=(dataset_id, refused.chunk_pattern),
                        )
                    if refused.insistable:
                        st.button(
                            "Store it anyway (every metric 0)",
                            key=f"upload.insist.{outcome.file_id}",
                            icon=":material/warning:",
                            on_click=store_anyway,
                            args=(dataset_id, outcome.file_id),
                        )
        for warning in outcome.warnings:
            st.warning(md_escape(f"{outcome.filename}: {warning}"))


FORMATS_HELP = _formats_help()
