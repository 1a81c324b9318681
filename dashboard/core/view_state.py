"""The view in the URL: a :class:`ViewState` and its query-string codec.

``encode`` turns a state into short, documented keys (``PARAM_KEYS``);
``decode`` reads any mapping of strings (or lists of strings, as AppTest and
repeated keys give) and never raises: unknown keys are ignored, bad values
fall back to defaults with a note saying why. ``reconcile`` then checks the
state against what is loaded (dataset and run ids, categories, query ids).
Ids are content hashes, so a link names the same data on any server that
holds the same files. ``encode(decode(x))`` is a fixed point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from dashboard.core.comparison import ALPHAS, TEST_LABELS
from dashboard.core.evaluation import CURVE_METRICS, K_MAX, METRIC_CHOICES, metric_spec
from dashboard.core.targets import DEFAULT_PROFILE, PROFILES, format_targets, parse_targets
from ragmetrics.errors import RagMetricsError
from ragmetrics.metrics import MetricSpec, parse_metric
from ragmetrics.store import ID_PATTERN

VERSION = "1"

PAGES: tuple[str, ...] = (
    "overview",
    "upload",
    "breakdown",
    "missed",
    "diagnosis",
    "metrics",
    "workspace",
    "compare",
    "power",
)
"""Page keys; each is also the page's URL path (the default page, ``overview``, is served at ``/`` too)."""

PARAM_KEYS: dict[str, str] = {
    "v": "schema version",
    "ds": "dataset id",
    "runs": "selected run ids, comma-separated (or repeated keys)",
    "base": "baseline run id",
    "m": "metric name (recall, precision, f1, hits, ndcg, mrr, map, rprec)",
    "k": "cut-off K",
    "prof": "targets profile (faq, tech, legal, overview)",
    "tgt": "edited targets, e.g. recall@5>0.9;mrr>0.7 (absent = the profile's)",
    "cat": "category filter",
    "diff": "difficulty filter",
    "fr": "run shown on the missed-queries page",
    "q": "selected query id",
    "s": "text search on the missed-queries page",
    "t": "paired test on the Compare page (t, wilcoxon, randomization, bootstrap; absent = t)",
    "a": "significance level alpha on the Compare page (0.01, 0.05, 0.1; absent = 0.05)",
}

_ID_RE = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")
_MAX_TEXT = 500
_MAX_RUNS = 20


@dataclass(frozen=True)
class ViewState:
    page: str = "overview"
    dataset: str | None = None
    runs: tuple[str, ...] = ()
    baseline: str | None = None
    metric: str = "recall"
    k: int = 5
    profile: str = DEFAULT_PROFILE
    targets: str | None = None
    category: str | None = None
    difficulty: str | None = None
    focus_run: str | None = None
    query: str | None = None
    search: str = ""
    test: str = "t"
    alpha: float = 0.05

    def with_(self, **changes: object) -> ViewState:
        return replace(self, **changes)  # type: ignore[arg-type]


def encode(state: ViewState) -> dict[str, str]:
    """Query parameters for ``state`` (the page is the URL path, not a parameter)."""
    out: dict[str, str] = {"v": VERSION}
    if state.dataset:
        out["ds"] = state.dataset
    if state.runs:
        out["runs"] = ",".join(state.runs)
    if state.baseline:
        out["base"] = state.baseline
    out["m"] = state.metric
    out["k"] = str(state.k)
    out["prof"] = state.profile
    if state.targets is not None:
        out["tgt"] = state.targets
    for key, value in (
        ("cat", state.category),
        ("diff", state.difficulty),
        ("fr", state.focus_run),
        ("q", state.query),
    ):
        if value:
            out[key] = value
    if state.search:
        out["s"] = state.search
    if state.test != ViewState.test:
        out["t"] = state.test
    if state.alpha != ViewState.alpha:
        out["a"] = f"{state.alpha:g}"
    return out


def page_path(page: str) -> str:
    """URL path of a page (the default page is also served at ``/``), as in :func:`ragmetrics.store.share_link`."""
    return page if page in PAGES else PAGES[0]


def share_query(state: ViewState) -> str:
    """``path?query`` for a share link, relative to the app's root URL."""
    return f"{page_path(state.page)}?{urlencode(encode(state))}"


def share_url(base_url: str, state: ViewState) -> str:
    """The absolute share link (``base_url`` is the app's root, e.g. ``http://host:8501``)."""
    return base_url.rstrip("/") + "/" + share_query(state)


def app_root(page_url: str | None, page_paths: Sequence[str] = ()) -> str:
    """The app's root URL from the URL of the page in the browser (``st.context.url``); "" when unknown.

    Drops any query or fragment, then the last path segment when it is one of
    ``page_paths`` (the pages' URL paths), keeping a ``server.baseUrlPath`` prefix.
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


def _last(value: str | Sequence[str] | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    items = [str(v) for v in value]
    return items[-1] if items else None


def _all(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else [str(v) for v in value]
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def _clean_text(value: str | None) -> str | None:
    if value is None:
        return None
    text = "".join(ch for ch in value if ch.isprintable()).strip()
    return text[:_MAX_TEXT] or None


def decode(params: Mapping[str, str | Sequence[str]], page: str | None = None) -> tuple[ViewState, list[str]]:
    """Read a state from query parameters; never raises.

    Returns the state and notes (one per value that was ignored or adjusted).
    """
    notes: list[str] = []
    values: dict[str, object] = {}
    try:
        params = dict(params)
    except Exception:
        return ViewState(), ["could not read the link's parameters; showing the default view"]

    def note(msg: str) -> None:
        notes.append(msg)

    def safe(fn: Callable[[], None], key: str) -> None:
        try:
            fn()
        except Exception:
            note(f"ignored the link's {key!r} value")

    if page is not None:
        values["page"] = page if page in PAGES else PAGES[0]
        if page not in PAGES:
            note(f"unknown page {page!r}; showing the overview")

    def version() -> None:
        v = _last(params.get("v"))
        if v is not None and v != VERSION:
            note(f"link made by view-state version {v!r}; read as version {VERSION}")

    def dataset() -> None:
        ds = _last(params.get("ds"))
        if ds is None or ds == "":
            return
        if _ID_RE.match(ds):
            values["dataset"] = ds
        else:
            note(
                f"ignored dataset id {ds[:40]!r}: not an id (ids are 16 hexadecimal digits, as the Workspace page "
                "and `ragmetrics push` show them); check that the whole link was copied"
            )

    def runs() -> None:
        ids = _all(params.get("runs"))
        good = [r for r in dict.fromkeys(ids) if _ID_RE.match(r)]
        if len(good) < len(dict.fromkeys(ids)):
            note(
                "ignored run ids that are not ids (ids are 16 hexadecimal digits); check that the whole link was copied"
            )
        if len(good) > _MAX_RUNS:
            note(f"kept the first {_MAX_RUNS} runs of {len(good)}")
            good = good[:_MAX_RUNS]
        values["runs"] = tuple(good)

    def baseline() -> None:
        base = _last(params.get("base"))
        if base:
            if _ID_RE.match(base):
                values["baseline"] = base
            else:
                note("ignored the baseline: not a run id")

    def metric() -> None:
        m = _last(params.get("m"))
        if not m:
            return
        try:
            spec = parse_metric(m) if "@" in m else metric_spec(m, 1)
            spec = MetricSpec(spec.name, spec.k if "@" in m else None)
        except RagMetricsError:
            note(f"unknown metric {m[:40]!r}; showing recall")
            return
        if spec.name not in METRIC_CHOICES:
            note(f"metric {spec.name!r} is not offered here; showing recall")
            return
        values["metric"] = spec.name
        if spec.k is not None and spec.name in CURVE_METRICS:
            values["k"] = min(spec.k, K_MAX)

    def cutoff() -> None:
        k = _last(params.get("k"))
        if k is None or k == "":
            return
        try:
            number = int(k)
        except ValueError:
            note(f"K must be a whole number, got {k[:20]!r}; using 5")
            return
        if number < 1 or number > K_MAX:
            clamped = min(max(number, 1), K_MAX)
            note(f"K must be between 1 and {K_MAX}, got {number}; using {clamped}")
            number = clamped
        values["k"] = number

    def profile() -> None:
        p = _last(params.get("prof"))
        if p is None or p == "":
            return
        if p in PROFILES:
            values["profile"] = p
        else:
            note(f"unknown targets profile {p[:40]!r}; using {DEFAULT_PROFILE!r}")

    def targets() -> None:
        t = _last(params.get("tgt"))
        if t is None:
            return
        parsed, problems = parse_targets(t)
        notes.extend(problems)
        values["targets"] = format_targets(parsed)

    def texts() -> None:
        for key, name in (("cat", "category"), ("diff", "difficulty"), ("q", "query")):
            value = _clean_text(_last(params.get(key)))
            if value:
                values[name] = value
        fr = _last(params.get("fr"))
        if fr:
            if _ID_RE.match(fr):
                values["focus_run"] = fr
            else:
                note("ignored the focused run: not a run id")
        search = _clean_text(_last(params.get("s")))
        if search:
            values["search"] = search

    def significance() -> None:
        test = _last(params.get("t"))
        if test:
            if test in TEST_LABELS:
                values["test"] = test
            else:
                note(f"unknown test {test[:40]!r}; using the paired t-test (t, wilcoxon, randomization or bootstrap)")
        alpha = _last(params.get("a"))
        if alpha:
            try:
                level = float(alpha)
            except ValueError:
                level = float("nan")
            match = [a for a in ALPHAS if abs(a - level) < 1e-12]
            if match:
                values["alpha"] = match[0]
            else:
                note(f"alpha must be one of {', '.join(f'{a:g}' for a in ALPHAS)}, got {alpha[:20]!r}; using 0.05")

    for fn, key in (
        (version, "v"),
        (dataset, "ds"),
        (runs, "runs"),
        (baseline, "base"),
        (metric, "m"),
        (cutoff, "k"),
        (profile, "prof"),
        (targets, "tgt"),
        (texts, "cat"),
        (significance, "t"),
    ):
        safe(fn, key)
    try:
        return ViewState(**values), notes  # type: ignore[arg-type]
    except Exception:
        return ViewState(), [*notes, "could not read the link; showing the default view"]


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
    if ID_PATTERN.match(ident):
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
) -> tuple[ViewState, list[str]]:
    """Fit ``state`` to what is stored; unknown ids fall back with a note naming them and how to restore them."""
    notes: list[str] = []
    if not datasets:  # the page explains an empty store (see ``missing_note``)
        return state.with_(dataset=None, runs=(), baseline=None, focus_run=None, query=None), notes
    dataset = state.dataset
    if dataset not in datasets:
        fallback = datasets[0]
        if dataset is not None:
            name = facts_for(fallback).name or _short(fallback)
            with_runs = f" and {len(state.runs)} run(s) of it" if state.runs else ""
            notes.append(
                f"This link refers to dataset {dataset[:40]}{with_runs}, which is not loaded on this server "
                f"(its store does not have it){_malformed(dataset)}. {RESTORE} Showing “{name}” instead."
            )
        dataset = fallback
        state = state.with_(runs=(), baseline=None, focus_run=None, query=None, category=None, difficulty=None)
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
    if not runs:
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
            baseline=baseline,
            focus_run=focus,
            category=category,
            difficulty=difficulty,
            query=query,
            k=k,
        ),
        notes,
    )
