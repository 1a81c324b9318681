"""Page scaffolding: ``page_setup`` (view, sidebar, evaluations), ``finish``, and the one table and figure helpers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
import pyarrow.compute as pc
import streamlit as st

from dashboard.core import results_only
from dashboard.core.intervals import interval_words
from dashboard.core.queries import dataset_summary, group_values
from dashboard.core.share import share_query, share_url
from dashboard.core.specs import K_MAX
from dashboard.core.text import HIGHLIGHT_LEGEND, md_escape
from dashboard.core.view_state import Facts, ViewState, app_root, missing_note, reconcile
from dashboard.data.workspace import DatasetEntry, RunEntry, Workspace, safe_url
from dashboard.ui import cache, figures, state, widgets
from ragmetrics import Alignment
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.redact import scrub
from ragmetrics.io.export import to_safe_csv
from ragmetrics.store.database import StoreKeyError


@dataclass
class Page:
    """What a page works on: the view, the workspace, the dataset, the selected runs and their alignments."""

    state: ViewState
    workspace: Workspace
    dataset: DatasetEntry | None
    runs: list[RunEntry]
    selection: cache.Selection
    fresh: bool

    @property
    def alignments(self) -> list[Alignment]:
        return list(self.selection.alignments)

    @property
    def run_names(self) -> list[str]:
        return list(self.selection.names)

    @property
    def every_run_name(self) -> tuple[str, ...]:
        """Every run of the dataset by name, in stored order: what fixes each run's colour in the charts."""
        return tuple(r.name for r in self.workspace.runs(self.dataset.id)) if self.dataset is not None else ()


def _facts(workspace: Workspace, dataset_id: str) -> Facts:
    entry = workspace.dataset(dataset_id)
    assert entry is not None
    query_ids = entry.dataset.queries_table.column("query_id")
    runs = workspace.runs(dataset_id)
    return Facts(
        runs=[r.id for r in runs],
        run_names={r.id: r.name for r in runs},
        name=entry.name,
        categories=group_values(entry.dataset, "category"),
        difficulties=group_values(entry.dataset, "difficulty"),
        has_query=lambda q: bool(pc.any(pc.equal(query_ids, q)).as_py()),  # one query: no set of 100,000 ids per rerun
        k_max=K_MAX,
    )


def open_workspace(title: str) -> Workspace:
    """The workspace; when the store cannot be opened, say so (without the password) and stop the page."""
    try:
        workspace = cache.get_workspace()
        workspace.datasets()
        cache.start_sweeper()  # once per process: what ended sessions held goes back
        return workspace
    except Exception as err:
        st.title(title)
        url = cache.store_url()
        why = scrub(f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:300]}", url)
        st.error(
            md_escape(
                f"The store at {safe_url(url)} cannot be opened ({why}). "
                "Check RAGMETRICS_STORE_URL (or RAGMETRICS_DATA_DIR) and that the database is running, then reload."
            ),
            icon=":material/database:",
        )
        st.stop()
        raise  # st.stop() raises; this keeps type checkers calm


def page_setup(
    page: str,
    title: str,
    *,
    needs_runs: bool = True,
    health_banner: bool = True,
    shows_results: bool = False,
    writes: str = "",
) -> Page:
    """Read the view, render the title and the sidebar, align the selected runs (cached). A selected run whose ids
    do not meet the qrels gets a red banner saying why (``health_banner``; the upload page shows it in its report).
    ``writes``: what the page stores ("Uploading"), said up front not to be offered on a read-only store (the
    page leaves out or disables its controls: :attr:`Workspace.read_only`)."""
    state.begin_run()
    start = state.read_view_state(page)
    workspace = open_workspace(title)
    if start.fresh:
        workspace.refresh()  # a link just opened or another page: see what other processes stored meanwhile
    dataset_ids = [d.id for d in workspace.datasets()]
    pages, _ = state.pages()
    view, notes = reconcile(start.state, dataset_ids, lambda d: _facts(workspace, d), pages=pages)
    notes = [*start.notes, *notes]
    if not dataset_ids and start.state.dataset:
        notes.append(missing_note(start.state.dataset))
    fresh = start.fresh

    st.title(title)
    with st.sidebar:
        datasets = {d.id: d.label for d in workspace.datasets()}  # the label names the qrels version
        picked = widgets.dataset_picker(datasets, view.dataset, force=fresh)
        if picked != view.dataset:
            view, more = reconcile(
                view.with_(
                    dataset=picked,
                    runs=(),
                    no_runs=False,
                    baseline=None,
                    focus_run=None,
                    query=None,
                    category=None,
                    difficulty=None,
                    shown_judge=None,
                    batch=None,
                    candidate=None,
                ),
                list(datasets),
                lambda d: _facts(workspace, d),
            )
            notes += more
            fresh = True
        run_options = {r.id: r.name for r in workspace.runs(view.dataset)}
        run_ids = widgets.run_picker(run_options, view.runs, force=fresh)
        metric = widgets.metric_picker(view.metric, force=fresh)
        k = widgets.k_picker(view.k, force=fresh)
        view = view.with_(runs=tuple(run_ids), no_runs=not run_ids, metric=metric, k=k)
        if view.focus_run not in run_ids:
            view = view.with_(focus_run=run_ids[0] if run_ids else None)

    for note in notes:
        st.info(md_escape(note), icon=":material/info:")
    if workspace.seed_note:
        st.warning(md_escape(workspace.seed_note), icon=":material/lock:")
    dataset = workspace.dataset(view.dataset)
    runs = [r for r in (workspace.run(view.dataset or "", i) for i in view.runs) if r is not None]
    selection = cache.Selection(dataset.id if dataset else "", (), ())
    if dataset is None:
        empty_state(workspace)
    else:
        _caption(dataset, runs, view)
        if writes and workspace.read_only:
            st.info(read_only_note(writes), icon=":material/lock:")
        if needs_runs and not shows_results:  # a page that needs rankings: say which runs it cannot show
            stored = workspace.results(dataset.id)
            if stored:
                st.caption(md_escape(results_only.not_shown_note([r.name for r in stored])))
        if needs_runs and not runs:
            st.warning(
                "Pick at least one run in the sidebar, make one on the Run a retriever page (the built-in BM25 "
                "needs nothing else), or upload runs on the Upload page.",
                icon=":material/arrow_back:",
            )
        elif runs:
            try:
                with st.spinner("Aligning runs…"):
                    selection = cache.select(dataset, runs)
            except StoreKeyError as err:  # deleted by someone else between the listing and the load
                workspace.refresh()
                st.warning(
                    md_escape(f"{err}. Reload the page to see what the store holds now."),
                    icon=":material/sync_problem:",
                )
            if health_banner and selection.alignments:
                no_overlap_banner(selection)
    return Page(view, workspace, dataset, runs, selection, fresh)


def show_results_only(page: Page) -> None:
    """The dataset's runs stored as per-query results only: their means and 95% intervals (Overview)."""
    stored = page.workspace.results(page.dataset.id) if page.dataset is not None else []
    if not stored:
        return
    st.subheader("Per-query results without rankings")
    frame = cache.results_only_frame(stored)
    st.caption(
        "Runs too large to upload, pushed as per-query values (ragmetrics push --per-query): their means and 95% "
        f"intervals ({interval_words(frame['interval'])}). Curves, breakdowns, missed queries, diagnosis, judging "
        "and comparisons need the rankings, so those pages leave them out."
    )
    show_table(
        frame,
        key="overview.results_only",
        filename="per-query-results.csv",
        column_config={c: st.column_config.NumberColumn(c, format="%.4f") for c in ("mean", "ci_low", "ci_high")},
    )


def no_overlap_banner(selection: cache.Selection) -> None:
    """A red box per selected run whose document ids do not meet the qrels: every number of it is 0 and means
    nothing, so the page says why (the likely cause and a fix tried on the data) instead of plotting zeros."""
    for name, message in cache.no_overlap(selection).items():
        st.error(
            f"**{md_escape(name)}: no overlap with the judgments, its numbers below mean nothing.** "
            + md_escape(message),
            icon=":material/link_off:",
        )


def _caption(dataset: DatasetEntry, runs: list[RunEntry], view: ViewState) -> None:
    summary = dataset_summary(dataset.dataset)
    version = ""
    if dataset.version:  # a version's own name says its number and labels ("faq (+2 labels, v1)") unless renamed
        made = dataset.version
        named = f", v{made.number})" in dataset.name
        said = "" if named else f"qrels v{made.number}, {made.n_labels:,} labels "
        version = f" ({said}by {md_escape(made.author)})"
    st.caption(
        f"Dataset **{md_escape(dataset.name)}**{version}: {summary['queries']:,} "
        f"quer{'y' if summary['queries'] == 1 else 'ies'} "
        f"({summary['judged_queries']:,} judged, {summary['relevant']:,} relevant judgments) · "
        f"{len(runs)} run(s) selected · K = {view.k}"
    )


@contextmanager
def refused(what: str, *, stop: bool = False) -> Iterator[None]:
    """Run the store writes ``what`` names ("Deleting dataset “faq”"): when the store refuses them (its database
    user may not write to it, or what they act on went meanwhile: a :class:`RagMetricsError`), the page says so in
    red, ``what`` and the store's reason, and nothing after the refused call in the block runs (no message of a
    write that was not made). ``stop``: the page stops there too (what follows needs the write)."""
    try:
        yield
    except RagMetricsError as err:
        st.error(md_escape(f"{what} was refused: {err}"), icon=":material/block:")
        if stop:
            st.stop()


def say_registration_problems(problems: Sequence[str]) -> None:
    """The deployer's registrations that are not ``name=spec``, or name one endpoint twice
    (:mod:`ragmetrics.foundation.registrations`): said where their choices are offered, which leave them out."""
    for problem in problems:
        st.warning(md_escape(f"Left out of the choices: {problem}."), icon=":material/settings_alert:")


READ_ONLY_HELP = "This store is read-only: the database user the dashboard connects as may not write to it."
"""Why a control that writes is disabled on a read-only store (its help)."""


def writes_help(workspace: Workspace) -> str | None:
    """The help of a control that writes: :data:`READ_ONLY_HELP` on a read-only store (the control is disabled)."""
    return READ_ONLY_HELP if workspace.read_only else None


def change_help(workspace: Workspace, change: str) -> str | None:
    """The help of a control that makes ``change`` (one of :data:`ragmetrics.store.database.CHANGES`), disabled
    when it is: :data:`READ_ONLY_HELP` on a read-only store, else why this store refuses it; None when it may."""
    if workspace.read_only:
        return writes_help(workspace)
    if workspace.refuses(change):
        return (
            f"This store refuses to {change}: the database user the dashboard connects as may add data "
            "to it, not change what it holds that way."
        )
    return None


def show_refused_change(workspace: Workspace, change: str) -> bool:
    """Say up front, on a store that takes data, that it refuses ``change`` (one of
    :data:`ragmetrics.store.database.CHANGES`), and whom to ask; whether it does (a read-only store says so itself,
    in :func:`page_setup`)."""
    if workspace.read_only or not workspace.refuses(change):
        return False
    st.info(f"{change_help(workspace, change)} Ask the store's owner for the privilege.", icon=":material/lock:")
    return True


def changes_note(workspace: Workspace) -> str | None:
    """What the Workspace page says up front when the store takes uploads but refuses some changes: which, and whom
    to ask; None otherwise (a read-only store says so itself)."""
    refused = workspace.refused_changes()
    if not refused:
        return None
    listed = f"{', '.join(refused[:-1])} or {refused[-1]}" if len(refused) > 1 else refused[0]
    return (
        f"This store takes uploads, but the database user the dashboard connects as may not {listed}: "
        "those controls are disabled. Ask the store's owner for the UPDATE and DELETE privileges on its tables "
        "(and USAGE on its sequences), or to make the change for you."
    )


def read_only_note(writes: str) -> str:
    """What a page that stores ``writes`` says on a read-only store: that it is not offered, and whom to ask."""
    return (
        f"This store is read-only: {writes} is not offered here, as the database user the dashboard connects as may "
        "not write to it. Ask the store's owner for write access, or to load the data for you."
    )


def empty_state(workspace: Workspace) -> None:
    """What a page says when the store holds no dataset: where to add one, or, on a store the dashboard may not
    write to (it could not store the samples either), whom to ask."""
    if workspace.read_only:
        st.info(
            "This store is read-only and holds nothing yet: ask its owner to load data (the database user the "
            "dashboard connects as may not write to it, so it could not store its sample datasets either).",
            icon=":material/lock:",
        )
        return
    st.info(
        "No dataset is stored yet. Upload an evaluation set and runs on the Upload page to start "
        "(they are kept in the store; see the Workspace page).",
        icon=":material/folder_open:",
    )


def _page_paths(page: str) -> list[str]:
    """The pages' URL paths as the router named them (this page's own when it runs alone)."""
    _, paths = state.pages()
    return list(paths) or [page, f"{page}-home"]


def app_base_url(page: str = "") -> str:
    """The app's root URL for share links: ``RAGMETRICS_BASE_URL`` if set, else the browser's address
    (``st.context.url``), else the request's ``Host`` header over http; "" when none is known (AppTest).
    ``X-Forwarded-Host`` and ``-Proto`` are not read: any client may send them (behind a proxy, the deployer sets
    ``RAGMETRICS_BASE_URL``)."""
    configured = os.environ.get("RAGMETRICS_BASE_URL", "").strip()
    if configured:
        return configured.rstrip("/")
    try:
        root = app_root(st.context.url, _page_paths(page))
        if root:
            return root
        headers = st.context.headers
        host = headers.get("Host")
        if host:
            prefix = str(st.get_option("server.baseUrlPath") or "").strip("/")
            return f"http://{host}" + (f"/{prefix}" if prefix else "")
    except Exception:
        pass
    return ""


def share_link(view: ViewState) -> str:
    """The link that reopens ``view``: absolute when the app's address is known, else ``/page?query``."""
    base = app_base_url(view.page)
    return share_url(base, view) if base else "/" + share_query(view)


def share_path(view: ViewState) -> str:
    """``page?query`` of ``view``, relative to the app's root (what the reports print)."""
    return share_query(view)


def share_box(view: ViewState) -> None:
    """The "Copy share link" control at the foot of the sidebar: a popover holding the link in a code block (whose
    copy button copies it). The browser draws a closed popover's content only when it opens, so a page does not load
    the code block's highlighter (1.5 MB of JavaScript) to show the link."""
    with (
        st.sidebar,
        st.popover(
            "Copy share link",
            icon=":material/link:",
            width="stretch",
            help=(
                "Opens this page with the same dataset, runs, metric, K, filters and query for anyone whose dashboard "
                "uses the same store (or holds the same uploaded files)."
            ),
        ),
    ):
        st.caption("This page's view; the button at the block's right copies it.")
        st.code(share_link(view), language=None, wrap_lines=True)


def finish(page: Page, view: ViewState | None = None) -> None:
    """Write the final view to the URL and session, and show the share link."""
    final = view or page.state
    share_box(final)
    state.write_view_state(final)


def rerun_with(view: ViewState) -> None:
    """Make ``view`` the current view, push it into every widget, and rerun."""
    state.write_view_state(view, reseed=True)
    st.rerun()


MISSING = "—"
"""What a table cell without a value shows."""


def show_table(
    frame: pd.DataFrame,
    *,
    key: str,
    filename: str,
    column_config: Mapping[str, Any] | None = None,
    height: int | Literal["auto", "stretch", "content"] = "auto",
    styled: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.dataframe`` (of ``styled`` when given, a Styler of ``frame``) plus a CSV download of ``frame``
    (UTF-8 with BOM, so spreadsheets read Chinese), written when the button is clicked: a session holds no file
    for the tables it only looks at. A missing value reads as a dash (a baseline's own p-value, a label that did
    not exist before), not as Python's ``None``; the CSV keeps it empty."""
    event = st.dataframe(
        frame if styled is None else styled,
        key=key,
        hide_index=True,
        placeholder=MISSING,
        column_config=column_config,
        height=height,
        **kwargs,
    )
    _csv_button(frame, key=key, filename=filename)
    return event


def show_small_table(
    frame: pd.DataFrame,
    *,
    key: str,
    filename: str,
    labels: Mapping[str, str] | None = None,
    texts: Mapping[str, Callable[[Any], str]] | None = None,
    markdown: Mapping[str, Callable[[Any], str]] | None = None,
) -> None:
    """A table of a few rows drawn as static HTML (``st.table``), plus the CSV download of :func:`show_table`: no
    data grid's code, canvas or scrollbars in the browser, every cell in view (a grid costs a page about a tenth of a
    second: ``benchmarks/README.md``). For a summary the reader takes in at a glance (the Overview's means, its
    intervals and targets); a table to sort, search or pick a row from is :func:`show_table`'s. ``labels``: the
    columns to show to 3 decimals, and their titles; ``texts``: how other columns' cells read (a metric by its
    title); ``markdown``: columns whose cells read as the Markdown their maker gives, which makes them safe itself (the
    targets' verdicts in their colours). ``st.table`` reads every cell as Markdown, so any other text cell is
    escaped (a run named ``*bm25*`` reads as typed); a missing value reads as a dash; the CSV keeps the frame's own
    names and values."""
    labels, texts, markdown = labels or {}, texts or {}, markdown or {}
    cells: dict[str, Any] = {}
    for column in frame.columns:
        if column in labels:
            cells[labels[column]] = "{:.3f}"
        elif column in texts:
            cells[column] = lambda value, read=texts[column]: md_escape(read(value))
        elif column in markdown:
            cells[column] = markdown[column]
        elif pd.api.types.is_numeric_dtype(frame[column].dtype):
            cells[column] = None  # as it is, a missing one as the dash
        else:
            cells[column] = md_escape
    st.table(frame.rename(columns=labels).style.format(cells, na_rep=MISSING).hide(axis="index"))
    _csv_button(frame, key=key, filename=filename)


def _csv_button(frame: pd.DataFrame, *, key: str, filename: str) -> None:
    """The CSV download of a table's ``frame`` (UTF-8 with BOM: :func:`ragmetrics.io.export.to_safe_csv`), written
    when clicked (Streamlit's deferred download data)."""
    st.download_button(
        "Download CSV",
        lambda: to_safe_csv(frame),
        file_name=filename,
        mime="text/csv",
        key=f"{key}.csv",
        on_click="ignore",
        icon=":material/download:",
    )


PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def show_figure(fig: go.Figure, *, key: str, filename: str, clickable: bool = False) -> list[dict[str, Any]]:
    """The one place charts are drawn (:func:`dashboard.ui.figures.draw`: Plotly's script loaded so the browser
    code-caches it); the camera button in the chart's toolbar saves a PNG. ``clickable``: a click on a point
    reruns the page, and the clicked points are returned (else [])."""
    config = {**PLOTLY_CONFIG, "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}
    return figures.draw(fig, key=key, config=config, clickable=clickable)


def show_verdict(text: str | None, *, key: str = "verdict") -> None:
    """The verdict line of a comparison (:func:`dashboard.core.compare.verdict`), when there is one; ``key`` tells
    a page's second verdict from its first."""
    if text:
        with st.container(border=True, key=key):
            st.markdown(f":material/gavel: **Verdict.** {text}")


def show_legend() -> None:
    """What the colours of marked text mean."""
    st.markdown(HIGHLIGHT_LEGEND)


def show_passages(cards: Sequence[tuple[str, str]], *, legend: bool = True) -> None:
    """Passages (from ``dashboard.core.documents``: a header and the text with its marks, both escaped Markdown),
    each in a bordered box as one Markdown element; ``legend`` first says what the colours mark."""
    if legend and cards:
        show_legend()
    for head, body in cards:
        with st.container(border=True):
            st.markdown(f"{head}\n\n{body}")


def number_columns(frame: pd.DataFrame, labels: Mapping[str, str], fmt: str = "%.3f") -> dict[str, Any]:
    """Column config showing metric columns with display labels and 3 decimals."""
    return {c: st.column_config.NumberColumn(labels.get(c, c), format=fmt) for c in frame.columns if c in labels}
