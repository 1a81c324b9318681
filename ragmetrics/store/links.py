"""The share link ``ragmetrics push`` prints: the dashboard's address of a stored dataset and its runs.

The library knows only the few keys a link to stored data needs (the page as the URL's path, ``ds`` the dataset
id, ``runs`` the run ids); the rest of a view's state, and reading a link back, are the dashboard's
(``dashboard.core.share``), which builds its own links on this function so both read the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.ids import is_content_id

LINK_PAGE = "overview"
"""The page a pushed link opens."""


def share_link(
    base_url: str,
    *,
    dataset: str,
    runs: Sequence[str] = (),
    page: str = LINK_PAGE,
    extra: Mapping[str, str] | None = None,
) -> str:
    """``base_url/page?ds=DATASET&runs=A,B`` (``extra``: further query keys, already in the dashboard's form),
    short and readable in a terminal (commas and ``@`` kept). Ids are checked first: content ids only."""
    for ident, what in ((dataset, "dataset"), *((r, "run") for r in runs)):
        if not is_content_id(ident):
            raise RagMetricsError(f"{what} {str(ident)[:40]!r} is not a valid id; expected 16 hexadecimal digits")
    query: dict[str, str] = {"ds": dataset}
    if runs:
        query["runs"] = ",".join(runs)
    query.update(extra or {})
    return f"{base_url.rstrip('/')}/{page}?{urlencode(query, safe=',@')}"
