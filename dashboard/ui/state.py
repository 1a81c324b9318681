"""The only module that touches ``st.query_params`` and ``st.session_state``.

The view lives in the URL (:mod:`dashboard.core.share` is its codec). Switching pages clears the
URL, so the last :class:`ViewState` is also kept in session state and is used
when the URL carries none. Widgets get their starting value from the view
(:func:`seed`); on a fresh view (a link just opened, or another page just
left) the view overwrites whatever the widget held before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from dashboard.core.share import ViewState, decode, encode

_VIEW = "ragmetrics.view"
_PAGE = "ragmetrics.page"
_FORCE = "ragmetrics.force_seed"
_UPLOADS = "ragmetrics.uploads"
_MARKS = "ragmetrics.marks"
_SEEN = "ragmetrics.seen_urls"
_SEEN_MAX = 50
_PAGES = "ragmetrics.pages"
_SHOWN = "ragmetrics.shown_page"  # the page the last run drew
_SECTIONS = "ragmetrics.sections"  # page -> whether its folded section was open when it was left


def set_pages(keys: Sequence[str], paths: Sequence[str]) -> None:
    """The router names the app's pages (their keys and URL paths) for this run; the table is
    ``dashboard.views.VIEWS``, which this layer does not import."""
    st.session_state[_PAGES] = (tuple(keys), tuple(paths))


def pages() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The page keys and URL paths the router named ((), () when a page runs without the router, as in tests)."""
    value = st.session_state.get(_PAGES)
    return value if isinstance(value, tuple) and len(value) == 2 else ((), ())


@dataclass
class PageStart:
    state: ViewState
    notes: list[str]
    fresh: bool


def _url_params() -> dict[str, list[str]]:
    return {key: st.query_params.get_all(key) for key in st.query_params}


def _fingerprint(params: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(params.items()))


def _remember_url(params: dict[str, str]) -> None:
    seen: list[tuple[tuple[str, str], ...]] = st.session_state.setdefault(_SEEN, [])
    key = _fingerprint(params)
    if key in seen:
        seen.remove(key)
    seen.append(key)
    del seen[:-_SEEN_MAX]


def read_view_state(page: str) -> PageStart:
    """The view for this run.

    The URL is read when the session starts (a link was opened) or when it
    holds parameters this session never wrote (e.g. a page link with
    parameters). A URL this session wrote earlier is stale, not news: a rerun
    can be requested before the browser applied the latest URL, and reading
    it then would undo the user's last change. Otherwise the last view is
    used (switching pages clears the URL), with this page's folded section as it was when this page was left
    (folded on a page not shown before).
    """
    params = _url_params()
    flat = {k: v[-1] for k, v in params.items() if v}
    last: ViewState | None = st.session_state.get(_VIEW)
    last_page = st.session_state.get(_PAGE)
    forced = bool(st.session_state.pop(_FORCE, False))
    seen = st.session_state.get(_SEEN, [])
    if last is None or (flat and _fingerprint(flat) not in seen):
        keys, _ = pages()
        state, notes = decode(params, page, pages=keys or None)
        _remember_url(flat)
        st.session_state[_SHOWN] = page
        return PageStart(state, notes, fresh=True)
    view = last.with_(page=page)
    shown = st.session_state.get(_SHOWN)
    if shown != page:  # a folded section is its page's: each page's opens as that page was left
        sections: dict[str, bool] = st.session_state.setdefault(_SECTIONS, {})
        if shown is not None:
            sections[shown] = last.charts
        view = view.with_(charts=sections.get(page, False))
        st.session_state[_SHOWN] = page
    return PageStart(view, [], fresh=forced or last_page != page)


def last_view() -> ViewState | None:
    """The view the last run ended with (None before the first run finished)."""
    return st.session_state.get(_VIEW)


def write_view_state(state: ViewState, *, reseed: bool = False) -> None:
    """Keep ``state`` as the last view and put it in the URL (only when it changed).

    ``reseed`` makes the next run push the view into every widget (use it
    before ``st.rerun()`` after changing the view from code).
    """
    st.session_state[_VIEW] = state
    st.session_state[_PAGE] = state.page
    if reseed:
        st.session_state[_FORCE] = True
    wanted = encode(state)
    _remember_url(wanted)
    current = {k: v[-1] for k, v in _url_params().items() if v}
    if current != wanted:
        st.query_params.from_dict(wanted)


def seed(key: str, value: Any, *, force: bool = False) -> None:
    """Give widget ``key`` its starting value; call before the widget is created."""
    if force or key not in st.session_state:
        st.session_state[key] = value


def touch(key: str) -> None:
    """Remember that the user changed widget ``key`` (an ``on_change`` callback)."""
    st.session_state[f"ragmetrics.touched.{key}"] = True


def touched(key: str) -> bool:
    """True when the user changed widget ``key`` since :func:`forget_touched` (an ``on_change`` of :func:`touch`)."""
    return bool(st.session_state.get(f"ragmetrics.touched.{key}"))


def forget_touched(key: str) -> None:
    """Forget that the user changed widget ``key``."""
    st.session_state.pop(f"ragmetrics.touched.{key}", None)


_RUN = "ragmetrics.run"


def begin_run() -> None:
    """Count this session's page runs (:func:`dashboard.ui.layout.page_setup` calls it first): a click a button's
    callback records belongs to the run that click starts. The widgets' values :func:`keep` names are kept again."""
    st.session_state[_RUN] = int(st.session_state.get(_RUN, 0)) + 1
    _set_again(st.session_state.get(_KEPT, ()))


_KEPT = "ragmetrics.kept"


def keep(*names: str) -> None:
    """Keep the values of the widgets ``names`` for the session, through runs that do not draw them (a folded
    section, another page); a name ending in ``.`` keeps every widget whose key starts with it (one a run, say).
    Streamlit forgets a widget's value at the end of a run that did not draw it, unless the script set that value
    in the run: every run sets the kept values again (:func:`begin_run`). Only for widgets whose value a script may
    set (not buttons), given their starting value by :func:`seed` rather than ``value=``."""
    st.session_state.setdefault(_KEPT, set()).update(names)
    _set_again(names)


def _set_again(names: Iterable[str]) -> None:
    prefixes = tuple(n for n in names if n.endswith("."))
    for key in [k for k in st.session_state if k in names or (prefixes and str(k).startswith(prefixes))]:
        st.session_state[key] = st.session_state[key]


def record_click(key: str) -> None:
    """A button's ``on_click``: remember that ``key`` was clicked (callbacks run before the run the click starts)."""
    st.session_state[f"ragmetrics.clicked.{key}"] = int(st.session_state.get(_RUN, 0))


def take_click(key: str) -> bool:
    """True when a click on ``key`` started this run (:func:`record_click`), forgotten as it is read; a click an
    earlier run recorded and never read (that run stopped before it drew the button) does not count."""
    return st.session_state.pop(f"ragmetrics.clicked.{key}", None) == int(st.session_state.get(_RUN, 0)) - 1


def widget_value(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def remember(key: str, value: Any) -> None:
    """Keep ``value`` for this session under ``key`` (not a widget's key)."""
    st.session_state[f"ragmetrics.remembered.{key}"] = value


def recall(key: str, default: Any = None) -> Any:
    """What :func:`remember` kept under ``key``."""
    return st.session_state.get(f"ragmetrics.remembered.{key}", default)


def upload_outcome(file_id: str) -> Any:
    """What ingesting an uploaded file gave last time (None if it was never ingested)."""
    return st.session_state.get(_UPLOADS, {}).get(file_id)


def remember_upload(file_id: str, outcome: Any) -> None:
    st.session_state.setdefault(_UPLOADS, {})[file_id] = outcome


def digest(value: Hashable) -> str:
    """A short, stable name for ``value`` (its repr), fit for a widget key that must change with it."""
    return hashlib.blake2b(repr(value).encode("utf-8"), digest_size=6).hexdigest()


def changed(mark: str, value: Hashable) -> bool:
    """True when ``value`` differs from the one seen under ``mark`` last time (and remember it)."""
    marks = st.session_state.setdefault(_MARKS, {})
    if marks.get(mark) == value:
        return False
    marks[mark] = value
    return True


def new_pick(mark: str, table_key: str, rows: Sequence[int]) -> bool:
    """True when a row of table ``table_key`` is selected and the selection differs from the one seen under
    ``mark`` last run: a click to follow. The selection is remembered on every run, an empty one too, so a row
    deselected and selected again, or the same row of a new table, is a new click (a mark of the picked query alone
    ignored both once that query was picked by another control)."""
    new = changed(mark, (table_key, tuple(rows)))
    return bool(rows) and new


_PENDING = "ragmetrics.pending"


def ask(action: str, target: Hashable) -> None:
    """Remember that ``action`` on ``target`` waits for the user's confirmation (e.g. a delete)."""
    st.session_state[_PENDING] = (action, target)


def pending() -> tuple[str, Any] | None:
    """The action waiting for confirmation, if any: ``(action, target)``."""
    value = st.session_state.get(_PENDING)
    return value if isinstance(value, tuple) and len(value) == 2 else None


def settle() -> None:
    """Forget the pending action (confirmed or cancelled)."""
    st.session_state.pop(_PENDING, None)


def flash(message: str | None = None) -> str | None:
    """Keep ``message`` for the next run (after ``st.rerun``), or take the kept one."""
    if message is not None:
        st.session_state["ragmetrics.flash"] = message
        return None
    return st.session_state.pop("ragmetrics.flash", None)
