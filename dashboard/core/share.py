"""The view in a share link: :class:`ViewState`, its query-string codec, and the one place links are built.

A dashboard view (dataset, runs, baseline, metric, K, targets, filters, query, test, alpha) travels as short,
documented query keys (:data:`PARAM_KEYS`); the page is the URL's path. :func:`encode` writes them,
:func:`decode` reads any mapping of strings (or lists of strings, as repeated keys give) and never raises:
unknown keys are ignored, bad values fall back to defaults with a note saying why. ``encode(decode(x))`` is a
fixed point. :func:`share_url` (the dashboard's link, the address it shows) and :func:`share_link` (the short
form ``ragmetrics push`` prints) build every link, so a link the CLI prints and one the dashboard shows read
the same.

Ids are content ids, 16 lowercase hexadecimal digits (:data:`ragmetrics.foundation.ids.CONTENT_ID`, the store's), so a link names
the same data on any server that holds the same files. The choices a link may name come from the library's
registries: metrics (:data:`ragmetrics.engine.metrics.CURVE_METRICS`), paired tests (:data:`ragmetrics.analysis.stats.TESTS`)
and targets profiles (:data:`ragmetrics.analysis.targets.PROFILES`). Whether a state fits what a server has loaded is
the dashboard's business (``dashboard.core.view_state.reconcile``), and so is the list of its pages: here a
page key is only checked for its shape, unless the known pages are passed to :func:`decode`.

This module imports no plotting, database or web library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from ragmetrics.analysis.stats import CORRECTIONS, TESTS
from ragmetrics.analysis.targets import PROFILES, resolve_targets, target_items
from ragmetrics.engine.metrics import CURVE_METRICS, MetricSpec, metric_name, parse_metric
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.store.links import LINK_PAGE
from ragmetrics.store.links import share_link as library_share_link

VERSION = "1"

K_MAX = 100
"""The deepest cut-off a view names (metric@K for K = 1..K_MAX)."""

_MENU_ORDER = ("recall", "precision", "f1", "hits", "ndcg", "mrr", "map")
METRIC_CHOICES: tuple[str, ...] = (
    *sorted(CURVE_METRICS, key=lambda m: (_MENU_ORDER.index(m) if m in _MENU_ORDER else len(_MENU_ORDER), m)),
    "rprec",
)
"""The metrics a view can name, in menu order: the registry's curve metrics (each taking K), then R-precision."""

DEFAULT_METRIC = "recall"
DEFAULT_K = 5
NO_PROFILE = ""
"""No targets profile picked: a view shows the targets its dataset declares, if any, until the user picks a profile,
edits targets or picks :data:`NO_TARGETS`."""
DEFAULT_PROFILE = NO_PROFILE
NO_TARGETS = "none"
"""No targets at all, also for a dataset that declares some."""
DEFAULT_TEST = "t"
DEFAULT_CORRECTION = "holm"
OUTCOMES: tuple[str, ...] = ("loss", "win", "tie")
"""The queries Compare lists behind a run's result (its losses, wins or ties against the baseline)."""
DEFAULT_OUTCOME = "loss"
POWER_LEVELS: tuple[float, ...] = (0.8, 0.9)
"""The statistical powers Dataset power can be asked for."""
DEFAULT_POWER = 0.8
DELTA_RANGE: tuple[float, float] = (0.005, 0.5)
"""The differences to detect Dataset power accepts."""
DEFAULT_DELTA = 0.05
DEFAULT_DEPTH = 10
"""The Judge page's pool depth (1 to K_MAX)."""
BUDGETS: tuple[int, ...] = (128, 256, 512, 1024, 2048, 4096)
"""The token budgets Compare reads chunkings at."""
DEFAULT_BUDGET = 512
JUDGE_QUEUES: dict[str, str] = {"impact": "the pairs that matter most first", "plan": "the planned human sample"}
"""The orders of the Judge page's labelling queue; the first is the default."""
SAMPLE_PLANS: dict[str, str] = {
    "random": "a random sample of the queries",
    "category": "stratified by category (each category in proportion to its queries)",
}
"""The human sample plans (:mod:`dashboard.core.assisted`): the one place one is added; the first is the default."""
DEFAULT_QUEUE, DEFAULT_PLAN = next(iter(JUDGE_QUEUES)), next(iter(SAMPLE_PLANS))
MAX_METRICS = 12
"""The most metrics a view compares (and its link holds): Compare's picker takes no more."""
ALPHAS: tuple[float, ...] = (0.01, 0.05, 0.10)
"""The significance levels a view can name."""
DEFAULT_ALPHA = 0.05
DEFAULT_ORDER = "date"
"""The tag the Timeline orders runs by when a link names none (``ragmetrics history --by``)."""
DEFAULT_SYSTEM_TAG = "system"
"""The tag naming a Leaderboard's systems when a link names none (``ragmetrics leaderboard --system-tag``)."""
DEFAULT_PAGE = LINK_PAGE
"""The page a link opens when it names none (``ragmetrics push`` links open it)."""

NO_RUNS = "none"
"""``runs=none``: the user cleared every run; a link or a page without ``runs`` selects the dataset's first ones."""

PARAM_KEYS: dict[str, str] = {
    "v": "schema version",
    "ds": "dataset id",
    "runs": f"selected run ids, comma-separated (or repeated keys); {NO_RUNS} = none (absent = the dataset's first "
    "five)",
    "base": "baseline run id",
    "m": f"metric name ({', '.join(METRIC_CHOICES)})",
    "k": f"cut-off K (1 to {K_MAX})",
    "prof": f"targets profile ({', '.join(PROFILES)}; {NO_TARGETS} = no targets; absent = the dataset's own, if it "
    "declares any, else none)",
    "tgt": "edited targets, e.g. recall@5>0.9;mrr>0.7 (absent = the profile's)",
    "cat": "category filter",
    "diff": "difficulty filter",
    "fr": "run shown on the missed-queries and compare pages",
    "q": "selected query id",
    "s": "text search on the missed-queries page",
    "t": f"paired test on the Compare page ({', '.join(TESTS)}; absent = {DEFAULT_TEST})",
    "a": f"significance level alpha on the Compare page ({', '.join(f'{a:g}' for a in ALPHAS)}; "
    f"absent = {DEFAULT_ALPHA:g})",
    "c": f"multiple-comparison correction ({', '.join(CORRECTIONS)}; absent = {DEFAULT_CORRECTION})",
    "ms": "the metrics Compare compares, each with its cut-off, e.g. ndcg@10,recall@100 (absent = m at k and the "
    "standard set)",
    "o": f"the queries Compare lists ({', '.join(OUTCOMES)}; absent = {DEFAULT_OUTCOME})",
    "pw": f"power on the Dataset power page ({', '.join(f'{p:g}' for p in POWER_LEVELS)}; absent = {DEFAULT_POWER:g})",
    "d": f"difference to detect on the Dataset power page ({DELTA_RANGE[0]:g} to {DELTA_RANGE[1]:g}; "
    f"absent = {DEFAULT_DELTA:g})",
    "jb": "the Compare page's bounds from the unjudged documents (1 = shown; absent = hidden)",
    "cv": "the section a page folds away, the Upload page's depth chart, the Overview's curve data, Compare's query by "
    "query (1 = open; absent = folded)",
    "dp": f"pool depth on the Judge page (1 to {K_MAX}; absent = {DEFAULT_DEPTH})",
    "tb": f"the token budget Compare reads chunkings at ({', '.join(map(str, BUDGETS))}; absent = {DEFAULT_BUDGET})",
    "jq": f"the Judge page's queue order ({', '.join(JUDGE_QUEUES)}; absent = {DEFAULT_QUEUE})",
    "jp": f"the Judge page's human sample plan ({', '.join(SAMPLE_PLANS)}; absent = {DEFAULT_PLAN})",
    "js": "the judge whose labels the Judge page's agreement shows, judge:NAME@VERSION#HASH (absent = the latest)",
    "bb": "the Build page's batch of candidates (its id)",
    "bc": "the candidate the Build page shows, by its number in the batch (absent = the first left to review)",
    "by": f"the tag the Timeline orders runs by (absent = {DEFAULT_ORDER})",
    "where": "the Timeline's tag filter, KEY=VALUE (absent = every run)",
    "sys": f"the tag naming the Leaderboard's systems (absent = {DEFAULT_SYSTEM_TAG})",
}
"""Every query key a link may carry, with what it means."""

FLAGS: dict[str, tuple[str, str]] = {"jb": ("bounds", "bounds shown"), "cv": ("charts", "folded section open")}
"""The on/off keys of a link: key -> (the :class:`ViewState` field, what 1 means); absent is off."""

_REF_RE = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")  # what may be looked up as an id (reconcile says if it is one)
_PAGE_RE = re.compile(r"^[a-z][a-z0-9_\-]{0,39}$")
_MAX_TEXT = 500
MAX_RUNS = 20
MAX_CANDIDATE = 10**9  # a candidate's number in its batch, read from a link
"""The most runs a view (and its link) holds: the sidebar's picker takes no more."""
FULL_VIEW = f"the sidebar already holds {MAX_RUNS} runs, the most a view and its link keep: remove one to select it"
"""Why a run stored from a page was not selected."""


@dataclass(frozen=True)
class ViewState:
    """Everything a share link names; every field has the default a link without it opens."""

    page: str = DEFAULT_PAGE
    dataset: str | None = None
    runs: tuple[str, ...] = ()
    no_runs: bool = False  # every run cleared by the user (``runs=none``), not the first ones by default
    baseline: str | None = None
    metric: str = DEFAULT_METRIC
    k: int = DEFAULT_K
    profile: str = DEFAULT_PROFILE
    targets: str | None = None
    category: str | None = None
    difficulty: str | None = None
    focus_run: str | None = None
    query: str | None = None
    search: str = ""
    test: str = DEFAULT_TEST
    alpha: float = DEFAULT_ALPHA
    correction: str = DEFAULT_CORRECTION
    metrics: tuple[MetricSpec, ...] = ()
    outcome: str = DEFAULT_OUTCOME
    power: float = DEFAULT_POWER
    delta: float = DEFAULT_DELTA
    depth: int = DEFAULT_DEPTH
    budget: int = DEFAULT_BUDGET
    queue: str = DEFAULT_QUEUE
    plan: str = DEFAULT_PLAN
    shown_judge: str | None = None
    batch: str | None = None  # the Build page's batch of candidates
    candidate: int | None = None  # the Build page's candidate, by its number in the batch
    bounds: bool = False
    charts: bool = False  # the folded section open
    order_by: str = DEFAULT_ORDER
    where: str | None = None  # KEY=VALUE
    system_tag: str = DEFAULT_SYSTEM_TAG

    def with_(self, **changes: object) -> ViewState:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_run(self, run: str) -> ViewState | None:
        """The view with ``run`` selected too (kept where it is when already selected); None when the view
        already holds :data:`MAX_RUNS` others (the caller says so: a run is never dropped in silence)."""
        if run in self.runs:
            return self
        return None if len(self.runs) >= MAX_RUNS else replace(self, runs=(*self.runs, run), no_runs=False)

    @property
    def bounds_depth(self) -> int | None:
        """The depth the bounds from the unjudged documents judge to; None when they are not shown."""
        return self.depth if self.bounds else None


# --- targets as text ---------------------------------------------------------------------


def parse_targets(text: str | None) -> tuple[dict[str, float], list[str]]:
    """Read ``"recall@5>0.9;mrr>0.7"`` (``;`` or ``,`` separated); bad items are skipped with a note."""
    out: dict[str, float] = {}
    notes: list[str] = []
    for item, metric, threshold in target_items(text or ""):
        if threshold is None:
            notes.append(f"ignored target {item[:40]!r}: expected metric>value, e.g. recall@5>0.9")
            continue
        try:
            out.update(resolve_targets({metric: threshold}))
        except RagMetricsError as err:
            notes.append(f"ignored target {item[:40]!r}: {err}")
    return out, notes


def format_targets(targets: Mapping[str, float]) -> str:
    """Inverse of :func:`parse_targets`."""
    return ";".join(f"{m}>{t:g}" for m, t in targets.items())


# --- encode ------------------------------------------------------------------------------


def encode(state: ViewState, *, defaults: bool = True) -> dict[str, str]:
    """Query parameters for ``state`` (the page is the URL path, not a parameter).

    ``defaults=False`` leaves out the schema version and every value equal to the default view's (the
    short form ``ragmetrics push`` prints); decoding either form gives the same state.
    """
    out: dict[str, str] = {"v": VERSION} if defaults else {}
    if state.dataset:
        out["ds"] = state.dataset
    if state.runs:
        out["runs"] = ",".join(state.runs)
    elif state.no_runs:
        out["runs"] = NO_RUNS
    if state.baseline:
        out["base"] = state.baseline
    for key, value, default in (("m", state.metric, DEFAULT_METRIC), ("k", str(state.k), str(DEFAULT_K))):
        if defaults or value != default:
            out[key] = value
    if state.profile:
        out["prof"] = state.profile
    if state.targets is not None:
        out["tgt"] = state.targets
    for key, text in (("cat", state.category), ("diff", state.difficulty), ("fr", state.focus_run), ("q", state.query)):
        if text:
            out[key] = text
    if state.search:
        out["s"] = state.search
    if state.test != DEFAULT_TEST:
        out["t"] = state.test
    if state.alpha != DEFAULT_ALPHA:
        out["a"] = f"{state.alpha:g}"
    if state.correction != DEFAULT_CORRECTION:
        out["c"] = state.correction
    if state.metrics:
        out["ms"] = ",".join(map(str, state.metrics))
    for key, text, default_text in (
        ("o", state.outcome, DEFAULT_OUTCOME),
        ("pw", f"{state.power:g}", f"{DEFAULT_POWER:g}"),
        ("d", f"{state.delta:g}", f"{DEFAULT_DELTA:g}"),
        ("dp", str(state.depth), str(DEFAULT_DEPTH)),
        ("tb", str(state.budget), str(DEFAULT_BUDGET)),
        ("jq", state.queue, DEFAULT_QUEUE),
        ("jp", state.plan, DEFAULT_PLAN),
        ("js", state.shown_judge or "", ""),
        ("bb", state.batch or "", ""),
        ("bc", str(state.candidate or ""), ""),
    ):
        if text != default_text:
            out[key] = text
    for key, (name, _) in FLAGS.items():
        if getattr(state, name):
            out[key] = "1"
    if state.order_by != DEFAULT_ORDER:
        out["by"] = state.order_by
    if state.where:
        out["where"] = state.where
    if state.system_tag != DEFAULT_SYSTEM_TAG:
        out["sys"] = state.system_tag
    return out


# --- links -------------------------------------------------------------------------------


def page_path(page: str) -> str:
    """URL path of a page (its key; a malformed key gives the default page)."""
    return page if _PAGE_RE.match(page or "") else DEFAULT_PAGE


def share_query(state: ViewState, *, short: bool = False) -> str:
    """``path?query`` for a share link, relative to the app's root URL.

    The full form (default) carries every key and is encoded as browsers write a query (it is the address
    the dashboard shows); ``short=True`` leaves out the default values and keeps commas and ``@`` readable,
    for a terminal (what ``ragmetrics push`` prints). Both decode to the same state.
    """
    query = urlencode(encode(state, defaults=not short), safe=",@" if short else "")
    return f"{page_path(state.page)}?{query}"


def share_url(base_url: str, state: ViewState, *, short: bool = False) -> str:
    """The absolute share link (``base_url`` is the app's root, e.g. ``http://host:8501``); see :func:`share_query`."""
    return base_url.rstrip("/") + "/" + share_query(state, short=short)


def share_link(
    base_url: str, *, dataset: str, runs: Sequence[str] = (), page: str = DEFAULT_PAGE, **changes: object
) -> str:
    """The short link that opens ``dataset`` with ``runs`` on ``page`` (``changes``: other :class:`ViewState`
    fields), built as ``ragmetrics push`` builds it (:func:`ragmetrics.store.links.share_link`). Ids are checked
    first."""
    state = ViewState(page=page_path(page), dataset=dataset, runs=tuple(runs)).with_(**changes)
    extra = {key: value for key, value in encode(state, defaults=False).items() if key not in ("ds", "runs")}
    return library_share_link(base_url, dataset=dataset, runs=runs, page=page_path(page), extra=extra)


# --- decode ------------------------------------------------------------------------------


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


def _level(text: str, levels: Sequence[float]) -> float | None:
    """The one of ``levels`` that ``text`` names (``"0.10"`` names 0.1), or None."""
    number = _number(text)
    return next((level for level in levels if number is not None and abs(level - number) < 1e-12), None)


def _number(value: str | None) -> float | None:
    """A finite number, or None (absent or not a number)."""
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return float("nan")
    return number if number == number and abs(number) != float("inf") else float("nan")


def _clean_text(value: str | None) -> str | None:
    if value is None:
        return None
    text = "".join(ch for ch in value if ch.isprintable()).strip()
    return text[:_MAX_TEXT] or None


def _metric(text: str) -> MetricSpec:
    """A metric named with or without its cut-off (``ndcg``, ``nDCG@10``); the cut-off only when given."""
    return parse_metric(text) if "@" in text else MetricSpec(metric_name(text))


def decode(
    params: Mapping[str, str | Sequence[str]], page: str | None = None, *, pages: Sequence[str] | None = None
) -> tuple[ViewState, list[str]]:
    """Read a state from query parameters (and the page from the URL path); never raises.

    ``pages``: the known page keys (the first is shown for an unknown one); without them a page key is only
    checked for its shape. Returns the state and notes (one per value that was ignored or adjusted).
    """
    notes: list[str] = []
    values: dict[str, object] = {}
    try:
        params = dict(params)
    except Exception:
        return ViewState(), ["could not read the link's parameters; showing the default view"]

    def note(msg: str) -> None:
        notes.append(msg)

    def guarded(fn: Callable[[], None], key: str) -> None:
        try:
            fn()
        except Exception:
            note(f"ignored the link's {key!r} value")

    def page_key() -> None:
        if page is None:
            return
        known = list(pages) if pages is not None else None
        if (known is not None and page in known) or (known is None and _PAGE_RE.match(page)):
            values["page"] = page
            return
        fallback = DEFAULT_PAGE if known is None or DEFAULT_PAGE in known else known[0]
        values["page"] = fallback
        note(f"unknown page {str(page)[:40]!r}; showing the {fallback} page")

    def version() -> None:
        v = _last(params.get("v"))
        if v is not None and v != VERSION:
            note(f"link made by view-state version {v[:20]!r}; read as version {VERSION}")

    def dataset() -> None:
        ds = _last(params.get("ds"))
        if not ds:
            return
        if _REF_RE.match(ds):
            values["dataset"] = ds
        else:
            note(
                f"ignored dataset id {ds[:40]!r}: not an id (ids are 16 hexadecimal digits, as the Workspace page "
                "and `ragmetrics push` show them); check that the whole link was copied"
            )

    def runs() -> None:
        ids = list(dict.fromkeys(_all(params.get("runs"))))
        if ids == [NO_RUNS]:
            values["runs"], values["no_runs"] = (), True
            return
        good = [r for r in ids if _REF_RE.match(r)]
        if len(good) < len(ids):
            note(
                "ignored run ids that are not ids (ids are 16 hexadecimal digits); check that the whole link was copied"
            )
        if len(good) > MAX_RUNS:
            note(f"kept the first {MAX_RUNS} runs of {len(good)}")
            good = good[:MAX_RUNS]
        values["runs"] = tuple(good)

    def baseline() -> None:
        base = _last(params.get("base"))
        if base:
            if _REF_RE.match(base):
                values["baseline"] = base
            else:
                note("ignored the baseline: not a run id")

    def metric() -> None:
        m = _last(params.get("m"))
        if not m:
            return
        try:
            spec = _metric(m)
        except RagMetricsError:
            note(f"unknown metric {m[:40]!r}; showing {DEFAULT_METRIC}")
            return
        if spec.name not in METRIC_CHOICES:
            note(f"metric {spec.name!r} is not offered here; showing {DEFAULT_METRIC}")
            return
        values["metric"] = spec.name
        if spec.k is not None and spec.name in CURVE_METRICS:
            values["k"] = min(spec.k, K_MAX)

    def cutoff() -> None:
        k = _last(params.get("k"))
        if not k:
            return
        try:
            number = int(k)
        except ValueError:
            note(f"K must be a whole number, got {k[:20]!r}; using {DEFAULT_K}")
            return
        if number < 1 or number > K_MAX:
            clamped = min(max(number, 1), K_MAX)
            note(f"K must be between 1 and {K_MAX}, got {number}; using {clamped}")
            number = clamped
        values["k"] = number

    def profile() -> None:
        p = _last(params.get("prof"))
        if not p:
            return
        if p in PROFILES or p == NO_TARGETS:
            values["profile"] = p
        else:
            note(f"unknown targets profile {p[:40]!r}; showing no targets (profiles: {', '.join(PROFILES)})")

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
            if _REF_RE.match(fr):
                values["focus_run"] = fr
            else:
                note("ignored the focused run: not a run id")
        search = _clean_text(_last(params.get("s")))
        if search:
            values["search"] = search

    def significance() -> None:
        test = _last(params.get("t"))
        if test:
            if test in TESTS:
                values["test"] = test
            else:
                known = ", ".join(TESTS)
                note(f"unknown test {test[:40]!r}; using the {TESTS[DEFAULT_TEST].title.lower()} ({known})")
        alpha = _last(params.get("a"))
        if alpha:
            match = _level(alpha, ALPHAS)
            if match is not None:
                values["alpha"] = match
            else:
                shown = ", ".join(f"{a:g}" for a in ALPHAS)
                note(f"alpha must be one of {shown}, got {alpha[:20]!r}; using {DEFAULT_ALPHA:g}")

    def correction() -> None:
        c = _last(params.get("c"))
        if c and c not in CORRECTIONS:
            note(f"unknown correction {c[:40]!r}; using {DEFAULT_CORRECTION} ({', '.join(CORRECTIONS)})")
        elif c:
            values["correction"] = c

    def metric_set() -> None:
        items = list(dict.fromkeys(_all(params.get("ms"))))
        specs: list[MetricSpec] = []
        for item in items[:MAX_METRICS]:
            try:
                specs.append(parse_metric(item))
            except RagMetricsError:
                note(f"ignored metric {item[:40]!r} of the compared set: not a metric name")
        if len(items) > MAX_METRICS:
            note(f"kept the first {MAX_METRICS} compared metrics of {len(items)}")
        values["metrics"] = tuple(dict.fromkeys(specs))

    def page_controls() -> None:
        outcome = _last(params.get("o"))
        if outcome and outcome not in OUTCOMES:
            note(f"unknown outcome {outcome[:20]!r}; listing the {DEFAULT_OUTCOME}es")
        elif outcome:
            values["outcome"] = outcome
        level = _last(params.get("pw"))
        if level:
            match = _level(level, POWER_LEVELS)
            if match is not None:
                values["power"] = match
            else:
                note(f"power must be one of {', '.join(f'{p:g}' for p in POWER_LEVELS)}; using {DEFAULT_POWER:g}")
        delta = _number(_last(params.get("d")))
        if delta is not None:
            if DELTA_RANGE[0] <= delta <= DELTA_RANGE[1]:
                values["delta"] = delta
            else:
                note(f"the difference to detect must be between {DELTA_RANGE[0]:g} and {DELTA_RANGE[1]:g}; "
                     f"using {DEFAULT_DELTA:g}")  # fmt: skip
        depth = _number(_last(params.get("dp")))
        if depth is not None:
            if 1 <= depth <= K_MAX and depth == int(depth):
                values["depth"] = int(depth)
            else:
                note(f"the pool depth must be a whole number from 1 to {K_MAX}; using {DEFAULT_DEPTH}")
        budget = _number(_last(params.get("tb")))
        if budget is not None:
            if budget in BUDGETS:
                values["budget"] = int(budget)
            else:
                note(f"the token budget must be one of {', '.join(map(str, BUDGETS))}; using {DEFAULT_BUDGET}")
        for key, name, choices in (("jq", "queue", JUDGE_QUEUES), ("jp", "plan", SAMPLE_PLANS)):
            chosen = _last(params.get(key))
            if chosen in choices:
                values[name] = chosen
            elif chosen:
                note(f"ignored the link's {key!r} value {chosen[:20]!r}: expected one of {', '.join(choices)}")
        judge = _last(params.get("js"))
        if judge and judge.startswith("judge:") and len(judge) <= _MAX_TEXT:
            values["shown_judge"] = judge
        elif judge:
            note(f"ignored the link's 'js' value {judge[:20]!r}: expected judge:NAME@VERSION#HASH")
        batch = _last(params.get("bb"))
        if batch and _REF_RE.match(batch):
            values["batch"] = batch
        elif batch:
            note(f"ignored the link's 'bb' value {batch[:20]!r}: expected a batch id (16 hexadecimal digits)")
        candidate = _last(params.get("bc"))
        if candidate and candidate.isdigit() and 0 < int(candidate) <= MAX_CANDIDATE:
            values["candidate"] = int(candidate)
        elif candidate:
            note(f"ignored the link's 'bc' value {candidate[:20]!r}: expected a candidate's number, 1 or more")
        for key, (name, meaning) in FLAGS.items():
            shown = _last(params.get(key))
            if shown in ("0", "1"):
                values[name] = shown == "1"
            elif shown:
                note(f"ignored the link's {key!r} value {shown[:20]!r}: expected 1 ({meaning}) or 0")

    def tags() -> None:
        from ragmetrics.io.runmeta import check_key, parse_tag

        for key, name, default in (("by", "order_by", DEFAULT_ORDER), ("sys", "system_tag", DEFAULT_SYSTEM_TAG)):
            value = _last(params.get(key))
            if not value:
                continue
            try:
                values[name] = check_key(value)
            except RagMetricsError:
                note(f"ignored the link's {key!r} value {value[:40]!r}: not a tag key; using {default!r}")
        where = _last(params.get("where"))
        if where:
            try:
                tag, text = parse_tag(where, "the link's 'where'")
            except RagMetricsError as err:
                note(f"ignored the tag filter: {err}")
            else:
                values["where"] = f"{tag}={text}"

    for fn, key in (
        (page_key, "page"),
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
        (correction, "c"),
        (metric_set, "ms"),
        (page_controls, "o"),
        (tags, "by"),
    ):
        guarded(fn, key)
    try:
        return ViewState(**values), notes  # type: ignore[arg-type]
    except Exception:
        return ViewState(), [*notes, "could not read the link; showing the default view"]
