"""A view against what this server has loaded: :func:`reconcile` fits a decoded :class:`ViewState` to the stored
datasets, runs, categories and queries, with a note for each id it cannot find and how to restore it.

The view and its codec (``encode``, ``decode``, share links) are :mod:`dashboard.core.share`, so ``ragmetrics push``
and the dashboard build and read the same links. :func:`app_root` finds the app's root URL from the browser's
address, for absolute share links.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dashboard.core.share import DEFAULT_PAGE, K_MAX, ViewState
from ragmetrics.foundation.ids import is_content_id as is_id

__all__ = ["RESTORE", "Facts", "ViewState", "app_root", "missing_note", "reconcile"]


def app_root(page_url: str | None, page_paths: Sequence[str] = ()) -> str:
    """The app's root URL from the URL of the page in the browser (``st.context.url``); "" when unknown.

    Drops any query or fragment, then the last path segment when it is one of ``page_paths`` (the pages' URL
    paths), keeping a ``server.baseUrlPath`` prefix.
    """
    if not page_url or "://" not in page_url:
        return ""
    url = page_url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if not host:
        return ""
    parts = [p for p in path.split("/") if p] if slash else []
    if parts and parts[-1] in set(page_paths):
        parts = parts[:-1]
    return f"{scheme}://{host}" + "".join(f"/{p}" for p in parts)


@dataclass(frozen=True)
class Facts:
    """What one loaded dataset offers, for :func:`reconcile`."""

    runs: Sequence[str]
    run_names: Mapping[str, str] = field(default_factory=dict)
    name: str = ""  # the dataset's display name
    categories: Sequence[str] = ()
    difficulties: Sequence[str] = ()
    has_query: Callable[[str], bool] = lambda _q: True
    k_max: int = K_MAX


def _short(ident: str) -> str:
    return ident[:12] + ("…" if len(ident) > 12 else "")


def _malformed(ident: str) -> str:
    """A hint when an id cannot be one of ours (ids are 16 hexadecimal digits)."""
    if is_id(ident):
        return ""
    return f" ({ident[:40]!r} is not even a well-formed id: ids are 16 hexadecimal digits, so check that the whole link was copied)"


def missing_note(dataset: str) -> str:
    """What to say when a link names ``dataset`` and the store holds no dataset at all."""
    return (
        f"This link refers to dataset {dataset[:40]}, which is not loaded on this server: "
        f"its store holds no dataset yet{_malformed(dataset)}. {RESTORE}"
    )


RESTORE = (
    "To restore the view, upload the same files on the Upload page (the same content gets the same id), "
    "or run the dashboard on the store that has them (RAGMETRICS_STORE_URL)."
)


def reconcile(
    state: ViewState,
    datasets: Sequence[str],
    facts_for: Callable[[str], Facts],
    *,
    default_runs: int = 5,
    pages: Sequence[str] = (),
) -> tuple[ViewState, list[str]]:
    """Fit ``state`` to what is stored; unknown ids fall back with a note naming them and how to restore them.

    ``pages``: the dashboard's page keys; a page not among them shows the default page, with a note."""
    notes: list[str] = []
    if pages and state.page not in pages:
        fallback = DEFAULT_PAGE if DEFAULT_PAGE in pages else pages[0]
        notes.append(f"unknown page {state.page[:40]!r}; showing the {fallback} page")
        state = state.with_(page=fallback)
    if not datasets:  # the page explains an empty store (see ``missing_note``)
        return state.with_(dataset=None, runs=(), baseline=None, focus_run=None, query=None), notes
    dataset = state.dataset
    if dataset is None or dataset not in datasets:
        fallback = datasets[0]
        if dataset is not None:
            name = facts_for(fallback).name or _short(fallback)
            with_runs = f" and {len(state.runs)} run(s) of it" if state.runs else ""
            notes.append(
                f"This link refers to dataset {dataset[:40]}{with_runs}, which is not loaded on this server "
                f"(its store does not have it){_malformed(dataset)}. {RESTORE} Showing “{name}” instead."
            )
        dataset = fallback
        state = state.with_(
            runs=(), no_runs=False, baseline=None, focus_run=None, query=None, category=None, difficulty=None
        )
    facts = facts_for(dataset)
    known = list(facts.runs)
    runs = [r for r in state.runs if r in known]
    missing = [r for r in state.runs if r not in known]
    if missing:
        shown = ", ".join(r[:40] for r in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        hint = "".join(_malformed(r) for r in missing[:1])
        notes.append(
            f"{len(missing)} run(s) of this link are not loaded here for this dataset: {shown}{hint}. "
            "To restore the view, upload the same run files on the Upload page with this dataset selected, "
            "or run the dashboard on the store that has them (RAGMETRICS_STORE_URL)."
        )
    if not runs and not (state.no_runs and not state.runs):  # cleared by the user: none; else the first ones
        runs = known[:default_runs]
    baseline = state.baseline if state.baseline in runs else None
    focus = state.focus_run if state.focus_run in runs else (runs[0] if runs else None)
    category = state.category
    if category is not None and category not in facts.categories:
        notes.append(f"category {category!r} is not in this dataset; showing all categories")
        category = None
    difficulty = state.difficulty
    if difficulty is not None and difficulty not in facts.difficulties:
        notes.append(f"difficulty {difficulty!r} is not in this dataset; showing all difficulties")
        difficulty = None
    query = state.query
    if query is not None and not facts.has_query(query):
        notes.append(f"query {query[:40]!r} is not in this dataset")
        query = None
    k = min(state.k, max(facts.k_max, 1))
    return (
        state.with_(
            dataset=dataset,
            runs=tuple(runs),
            no_runs=not runs,
            baseline=baseline,
            focus_run=focus,
            category=category,
            difficulty=difficulty,
            query=query,
            k=k,
        ),
        notes,
    )
