"""Comparison, dataset power and fusion builders: :class:`RunEval` s in, frames and plotly figures out; no Streamlit.

The numbers come from the library (:func:`ragmetrics.compare.compare_result`,
:func:`ragmetrics.compare.discriminative_power`, :mod:`ragmetrics.stats`,
:func:`ragmetrics.fusion.fuse`); this module aligns the dashboard's cached
evaluations into an :class:`~ragmetrics.evaluate.EvalResult`, shapes the
results for tables and draws them. Figures follow :mod:`dashboard.core.figures`
(trace names are run names or fixed labels, user text escaped).
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core import frames
from dashboard.core.evaluation import K_MAX, METRIC_CHOICES, RunEval, common_query_ids, metric_spec, pretty
from dashboard.core.figures import _base_layout, safe
from dashboard.core.text import snippet
from ragmetrics import stats
from ragmetrics.compare import MIN_GROUP, TIE_TOLERANCE, Comparison, compare_result, discriminative_power  # noqa: F401 (MIN_GROUP is read by the views)
from ragmetrics.evaluate import EvalResult, RunResult, evaluate
from ragmetrics.fusion import METHODS, fuse
from ragmetrics.io import write_trec_run
from ragmetrics.metrics import parse_metric
from ragmetrics.model import Dataset, Run

SEED = 0
"""Every resampling test and interval on these pages is seeded, so a view repeats exactly."""

TESTS: tuple[str, ...] = stats.TESTS
TEST_LABELS: dict[str, str] = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank",
    "randomization": "Fisher randomization",
    "bootstrap": "paired bootstrap",
}
ALPHAS: tuple[float, ...] = (0.01, 0.05, 0.10)
STANDARD_METRICS: tuple[str, ...] = ("recall", "precision", "ndcg", "hits", "mrr")
"""Compared besides the sidebar metric, all at the sidebar's K."""

BETTER = "▲ better"
WORSE = "▼ worse"
NOT_SIGNIFICANT = "not significant"
BASELINE = "baseline"
TOO_FEW = "too few to tell"
MARK_COLORS: dict[str, str] = {
    BETTER: "#2ca02c",
    WORSE: "#d62728",
    NOT_SIGNIFICANT: "#7f7f7f",
    TOO_FEW: "#bbbbbb",
    BASELINE: "#1f77b4",
}
OUTCOMES: tuple[str, ...] = ("win", "tie", "loss")
OUTCOME_NAMES: dict[str, str] = {"win": "wins", "tie": "ties", "loss": "losses"}
OUTCOME_COLORS: dict[str, str] = {"win": "#2ca02c", "tie": "#9e9e9e", "loss": "#d62728"}


# --- aligning the dashboard's evaluations ------------------------------------------------


def compare_specs(metric: str, k: int) -> list[str]:
    """The sidebar metric and the standard ones, all at ``k``, in a fixed order (so table rows stay put)."""
    names = [m for m in METRIC_CHOICES if m in STANDARD_METRICS or m == metric]
    return list(dict.fromkeys(str(metric_spec(m, k)) for m in names))


def eval_result(evals: Sequence[RunEval], specs: Sequence[str]) -> EvalResult:
    """The per-query values of ``specs`` for every run, aligned on the queries all runs were evaluated on."""
    if not evals:
        raise ValueError("eval_result needs at least one run")
    ids = [str(q) for q in common_query_ids(evals)]
    runs: dict[str, RunResult] = {}
    for ev in evals:
        part = ev.result_for(specs)
        runs[ev.name] = RunResult(ev.name, part.values.loc[ids], part.coverage, part.ranking)
    return EvalResult(evals[0].dataset, [parse_metric(s) for s in specs], runs, K_MAX)


def metric_name(spec: str) -> str:
    """The sidebar metric of a compared spec: ``ndcg@5`` -> ``ndcg``."""
    return parse_metric(spec).name


def run_comparison(
    evals: Sequence[RunEval],
    baseline: str,
    specs: Sequence[str],
    *,
    test: str = "t",
    alpha: float = 0.05,
    seed: int = SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> Comparison:
    """:func:`ragmetrics.compare.compare_result` on the dashboard's evaluations (``baseline`` is a run name)."""
    return compare_result(
        eval_result(evals, specs),
        baseline=baseline,
        metrics=list(specs),
        test=test,
        alpha=alpha,
        seed=seed,
        n_resamples=n_resamples,
    )


# --- the comparison table ----------------------------------------------------------------


def significance_mark(
    run: str, baseline: str, delta: float, p_corrected: float, alpha: float, too_few: bool = False
) -> str:
    """``baseline``, ``too few to tell``, ``▲ better`` / ``▼ worse`` (Holm-corrected p < alpha) or ``not significant``."""
    if run == baseline:
        return BASELINE
    if too_few:
        return TOO_FEW
    if p_corrected is None or (isinstance(p_corrected, float) and math.isnan(p_corrected)):
        return NOT_SIGNIFICANT
    if p_corrected < alpha and delta > 0:
        return BETTER
    if p_corrected < alpha and delta < 0:
        return WORSE
    return NOT_SIGNIFICANT


COMPARISON_COLUMNS = [
    "metric",
    "run",
    "n",
    "mean",
    "mean_ci_low",
    "mean_ci_high",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_value_corrected",
    "significance",
    "wins",
    "ties",
    "losses",
]


def comparison_frame(comparison: Comparison) -> pd.DataFrame:
    """One row per (metric, run), the baseline first within each metric; ``significance`` from :func:`significance_mark`.

    Numbers are :attr:`Comparison.table`'s (the baseline row keeps its mean and CI; its delta is 0 and it has no p).
    """
    table = comparison.table
    if table.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    metrics = list(dict.fromkeys(table["metric"]))
    order = sorted(
        range(len(table)),
        key=lambda i: (metrics.index(table["metric"].iloc[i]), table["run"].iloc[i] != comparison.baseline, i),
    )
    part = table.iloc[order].reset_index(drop=True)
    out = part[[c for c in COMPARISON_COLUMNS if c in part.columns and c != "significance"]].copy()
    out["significance"] = [
        significance_mark(r, comparison.baseline, d, p, comparison.alpha)
        for r, d, p in zip(part["run"], part["delta"], part["p_value_corrected"])
    ]
    return out[COMPARISON_COLUMNS]


def format_p(p: float) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return "<0.0001" if p < 0.0001 else f"{p:.4f}"


def format_ci(low: float, high: float) -> str:
    if any(v is None or math.isnan(v) for v in (low, high)):
        return "—"
    return f"[{low:.3f}, {high:.3f}]"


def comparison_display(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """:func:`comparison_frame` for reading (same rows, same order): CIs and p-values as text, W / T / L in one column."""
    is_base = frame["run"] == baseline
    return pd.DataFrame(
        {
            "metric": [pretty(m) for m in frame["metric"]],
            "run": frame["run"].astype("str"),
            "n": frame["n"].astype(int),
            "mean": frame["mean"].astype(float),
            "mean 95% CI": [format_ci(lo, hi) for lo, hi in zip(frame["mean_ci_low"], frame["mean_ci_high"])],
            "Δ vs baseline": ["" if b else f"{d:+.3f}" for b, d in zip(is_base, frame["delta"])],
            "Δ 95% CI": [
                "" if b else format_ci(lo, hi) for b, lo, hi in zip(is_base, frame["ci_low"], frame["ci_high"])
            ],
            "p": [format_p(p) for p in frame["p_value"]],
            "p (Holm)": [format_p(p) for p in frame["p_value_corrected"]],
            "significance": frame["significance"],
            "W / T / L": [
                "" if b else f"{w} / {t} / {lo}"
                for b, w, t, lo in zip(is_base, frame["wins"], frame["ties"], frame["losses"])
            ],
        }
    )


def style_marks(display: pd.DataFrame, focus_row: int | None = None) -> Any:
    """A Styler colouring the ``significance`` column; ``focus_row`` (the row the charts below show) in bold."""

    def colour(value: object) -> str:
        color = MARK_COLORS.get(str(value))
        return f"color: {color}; font-weight: 600" if color and value not in (NOT_SIGNIFICANT, TOO_FEW) else ""

    styler = display.style.map(colour, subset=["significance"]).format({"mean": "{:.3f}"})
    if focus_row is not None and 0 <= focus_row < len(display):
        styler = styler.apply(
            lambda row: ["font-weight: 700; background-color: #eef4fb" if row.name == focus_row else "" for _ in row],
            axis=1,
        )
    return styler


def forest_figure(
    frame: pd.DataFrame, *, labels: Sequence[str], title: str, x_title: str = "Δ vs baseline (95% CI)"
) -> go.Figure:
    """Deltas with their 95% CI as horizontal error bars, one row per ``labels`` entry (top to bottom).

    ``frame`` has ``delta, ci_low, ci_high, significance`` (and ``n``); traces
    are named by significance (``▲ better``, ``▼ worse``, ``not significant``,
    ``too few to tell``), a dotted line marks 0.
    """
    fig = go.Figure()
    data = frame.reset_index(drop=True).assign(label=[safe(x) for x in labels])
    for mark in (BETTER, WORSE, NOT_SIGNIFICANT, TOO_FEW):
        part = data[data["significance"] == mark]
        if part.empty:
            continue
        delta = part["delta"].astype(float)
        fig.add_trace(
            go.Scatter(
                x=delta.tolist(),
                y=part["label"].tolist(),
                mode="markers",
                name=mark,
                marker={
                    "color": MARK_COLORS[mark],
                    "size": 10,
                    "symbol": "circle-open" if mark == TOO_FEW else "circle",
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": (part["ci_high"].astype(float) - delta).clip(lower=0).fillna(0).tolist(),
                    "arrayminus": (delta - part["ci_low"].astype(float)).clip(lower=0).fillna(0).tolist(),
                    "color": MARK_COLORS[mark],
                    "thickness": 1.5,
                    "width": 4,
                },
                customdata=list(zip(part["ci_low"], part["ci_high"], part.get("n", pd.Series([0] * len(part))))),
                hovertemplate="%{y}<br>Δ %{x:+.3f}<br>95% CI %{customdata[0]:+.3f} – %{customdata[1]:+.3f}"
                "<br>n=%{customdata[2]}<extra>%{fullData.name}</extra>",
            )
        )
    fig.add_vline(x=0, line_dash="dot", line_color="#666")
    fig.update_yaxes(categoryorder="array", categoryarray=list(data["label"])[::-1], type="category")
    fig.update_xaxes(title_text=x_title, zeroline=False)
    _base_layout(fig, 90 + 32 * max(len(data), 2))
    fig.update_layout(
        title={"text": safe(title)},
        showlegend=True,
        legend={"orientation": "h", "y": -0.25 if len(data) > 4 else -0.5, "x": 0},
    )
    return fig


# --- per query ---------------------------------------------------------------------------


PER_QUERY_COLUMNS = [
    "query_id",
    "query",
    "category",
    "difficulty",
    "baseline",
    "run",
    "delta",
    "outcome",
    "baseline_first_rank",
    "run_first_rank",
]


def per_query_frame(base: RunEval, run: RunEval, spec: str) -> pd.DataFrame:
    """One row per query both runs were evaluated on: the two values, ``delta = run - baseline``,
    ``outcome`` (win / tie / loss, as :mod:`ragmetrics.compare` counts them) and where each run's first
    relevant document sits (0 = not retrieved). Sorted by delta, largest win first."""
    ids = common_query_ids([base, run])
    facets = frames._query_facets(base).set_index("query_id")
    bi = pd.Index(base.query_ids).get_indexer(ids)
    ri = pd.Index(run.query_ids).get_indexer(ids)
    b = base.values(spec)[bi]
    r = run.values(spec)[ri]
    delta = r - b
    outcome = np.where(delta > TIE_TOLERANCE, "win", np.where(delta < -TIE_TOLERANCE, "loss", "tie"))
    keys = pd.Index([str(q) for q in ids])
    out = pd.DataFrame(
        {
            "query_id": keys.to_numpy(),
            "query": facets["query"].reindex(keys).to_numpy(),
            "category": facets["category"].reindex(keys).to_numpy(),
            "difficulty": facets["difficulty"].reindex(keys).to_numpy(),
            "baseline": b,
            "run": r,
            "delta": delta,
            "outcome": outcome,
            "baseline_first_rank": base.first_rel_rank[bi].astype(np.int64),
            "run_first_rank": run.first_rel_rank[ri].astype(np.int64),
        },
        columns=PER_QUERY_COLUMNS,
    )
    return out.sort_values(["delta", "query_id"], ascending=[False, True], kind="stable").reset_index(drop=True)


def outcome_counts(per_query: pd.DataFrame) -> dict[str, int]:
    counts = per_query["outcome"].value_counts()
    return {o: int(counts.get(o, 0)) for o in OUTCOMES}


def queries_with(per_query: pd.DataFrame, outcome: str) -> pd.DataFrame:
    """The rows of one outcome, the largest change first (losses: the worst first)."""
    part = per_query[per_query["outcome"] == outcome]
    if outcome == "loss":
        part = part.sort_values(["delta", "query_id"], ascending=[True, True], kind="stable")
    return part.reset_index(drop=True)


def query_order(per_query: pd.DataFrame) -> list[str]:
    """Query ids for a picker: losses first (worst first), then wins (largest first), then ties."""
    parts = [queries_with(per_query, o)["query_id"] for o in ("loss", "win", "tie")]
    return [str(q) for part in parts for q in part]


def _hover_text(part: pd.DataFrame) -> list[str]:
    return [f"{safe(q)} · {safe(snippet(t, 40))}" for q, t in zip(part["query_id"], part["query"])]


def delta_figure(per_query: pd.DataFrame, *, run: str, baseline: str, spec: str) -> go.Figure:
    """Per-query deltas sorted from the largest win to the worst loss; traces ``wins``, ``ties``, ``losses``."""
    label = pretty(spec)
    data = per_query.reset_index(drop=True)
    position = np.arange(1, len(data) + 1)
    fig = go.Figure()
    for outcome in OUTCOMES:
        mask = (data["outcome"] == outcome).to_numpy()
        part = data[mask]
        fig.add_trace(
            go.Bar(
                x=position[mask].tolist(),
                y=part["delta"].astype(float).tolist(),
                name=f"{OUTCOME_NAMES[outcome]} ({int(mask.sum())})",
                marker={"color": OUTCOME_COLORS[outcome], "line": {"width": 0}},
                customdata=list(zip(_hover_text(part), part["baseline"], part["run"])),
                hovertemplate="%{customdata[0]}<br>Δ %{y:+.3f} (%{customdata[1]:.3f} → %{customdata[2]:.3f})<extra></extra>",
            )
        )
    if len(data):
        fig.add_hline(
            y=float(data["delta"].mean()),
            line_dash="dot",
            line_color="#444",
            annotation_text=f"mean Δ {float(data['delta'].mean()):+.3f}",
            annotation_position="top right",
        )
    fig.update_layout(
        barmode="overlay",
        bargap=0.05,
        title={"text": f"{label}: {safe(run)} − {safe(baseline)}, per query (sorted)"},
        legend={"orientation": "h", "y": -0.18, "x": 0},
    )
    fig.update_xaxes(title_text="queries, sorted by Δ", showticklabels=False)
    fig.update_yaxes(title_text=f"Δ {label}", zeroline=True, zerolinecolor="#999")
    _base_layout(fig, 420)
    return fig


def scatter_figure(per_query: pd.DataFrame, *, run: str, baseline: str, spec: str, max_ids: int = 8) -> go.Figure:
    """Baseline value (x) against the run's (y), one marker per distinct pair of values sized by how many
    queries share it; traces ``wins``, ``ties``, ``losses`` and the diagonal ``no change``."""
    label = pretty(spec)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", name="no change", line={"dash": "dot", "color": "#888"}, hoverinfo="skip"
        )
    )
    for outcome in OUTCOMES:
        part = per_query[per_query["outcome"] == outcome]
        if part.empty:
            continue
        grouped = part.groupby([part["baseline"].round(6), part["run"].round(6)], sort=True)["query_id"].agg(list)
        xs = [float(x) for x, _ in grouped.index]
        ys = [float(y) for _, y in grouped.index]
        counts = [len(ids) for ids in grouped]
        ids = [
            ", ".join(safe(i) for i in items[:max_ids])
            + (f", … (+{len(items) - max_ids})" if len(items) > max_ids else "")
            for items in grouped
        ]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers",
                name=f"{OUTCOME_NAMES[outcome]} ({len(part)})",
                marker={
                    "color": OUTCOME_COLORS[outcome],
                    "opacity": 0.75,
                    "line": {"width": 0.5, "color": "white"},
                    "size": [8 + 5 * math.sqrt(c - 1) for c in counts],
                },
                customdata=list(zip(counts, ids)),
                hovertemplate=f"{safe(baseline)} %{{x:.3f}} → {safe(run)} %{{y:.3f}}"
                "<br>%{customdata[0]} queries: %{customdata[1]}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=f"{label} · {safe(baseline)} (baseline)", range=[-0.04, 1.04])
    fig.update_yaxes(title_text=f"{label} · {safe(run)}", range=[-0.04, 1.04], scaleanchor="x", scaleratio=1)
    fig.update_layout(
        title={"text": "Per query: baseline against run (above the diagonal: the run wins)"},
        legend={"orientation": "h", "y": -0.18, "x": 0},
    )
    _base_layout(fig, 460)
    return fig


def _doc_ranks(ev: RunEval, query_id: str) -> dict[str, int]:
    where = np.flatnonzero(ev.query_ids == query_id)
    if len(where) == 0:
        return {}
    ranking = ev.ranking
    mask = ranking.q == int(where[0])
    docs = ranking.docs(mask)
    return {str(d): int(p) + 1 for d, p in zip(docs, ranking.pos[mask])}


RANKING_COLUMNS = ["rank", "relevant", "judgment", "doc_id", "other_rank", "score"]


def pair_depth(first_ranks: Sequence[int], k: int, *, floor: int = 10, limit: int = 30) -> int:
    """How deep to show two rankings: at least ``max(floor, k)``, deeper to reach either run's first relevant
    document when it sits within ``limit``."""
    found = [int(r) for r in first_ranks if 0 < int(r) <= limit]
    return max(floor, int(k), *found)


def ranking_pair(base: RunEval, run: RunEval, query_id: str, depth: int = 20) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both runs' top ``depth`` documents for one query, side by side.

    Each frame: ``rank, relevant, judgment, doc_id, other_rank`` (the document's rank in the other run, NA = not
    retrieved there), ``score`` and, when known, ``title`` and ``text`` (best chunk), as
    :func:`dashboard.core.frames.query_detail_frame`.
    """
    out = []
    for this, other in ((base, run), (run, base)):
        detail = frames.query_detail_frame(this, query_id, depth)
        ranks = _doc_ranks(other, query_id)
        detail = detail.assign(other_rank=pd.array([ranks.get(str(d)) for d in detail["doc_id"]], dtype="Int64"))
        extra = [c for c in ("title", "text") if c in detail.columns]
        out.append(detail[RANKING_COLUMNS + extra].reset_index(drop=True))
    return out[0], out[1]


# --- segments ----------------------------------------------------------------------------

SEGMENT_COLUMNS = [
    "segment",
    "group",
    "n",
    "baseline_mean",
    "mean",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_value_corrected",
    "significance",
    "wins",
    "ties",
    "losses",
    "too_few",
]


def segment_frame(comparison: Comparison, spec: str, run: str, dataset: Dataset | None = None) -> pd.DataFrame:
    """One run against the baseline on one metric, per category and per difficulty.

    Groups in the dashboard's order (categories by size, difficulties easy → hard when ``dataset`` is given);
    ``significance`` is ``too few to tell`` when n < :data:`ragmetrics.compare.MIN_GROUP`; the Holm
    correction is the library's (within a facet, across runs × metrics × groups).
    """
    seg = comparison.segments
    if seg.empty or "segment" not in seg.columns:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    part = seg[(seg["metric"] == spec) & (seg["run"] == run)].copy()
    if part.empty:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    if dataset is not None:
        rank = {}
        for facet in part["segment"].unique():
            if facet in dataset.queries.columns:
                rank.update({(facet, g): i for i, g in enumerate(frames.group_values(dataset, facet))})
        part["_order"] = [rank.get((s, g), 10_000) for s, g in zip(part["segment"], part["group"])]
        facets = list(dict.fromkeys(part["segment"]))
        part["_facet"] = [facets.index(s) for s in part["segment"]]
        part = part.sort_values(["_facet", "_order", "group"], kind="stable")
    part["significance"] = [
        significance_mark(run, comparison.baseline, d, p, comparison.alpha, bool(tf))
        for d, p, tf in zip(part["delta"], part["p_value_corrected"], part["too_few"])
    ]
    return part[SEGMENT_COLUMNS].reset_index(drop=True)


def segment_labels(frame: pd.DataFrame) -> list[str]:
    return [f"{s}: {g} (n={n})" for s, g, n in zip(frame["segment"], frame["group"], frame["n"])]


# --- dataset power -----------------------------------------------------------------------

RULES_OF_THUMB: tuple[tuple[str, int, int], ...] = (
    ("prototype", 20, 30),
    ("development", 50, 100),
    ("release", 100, 200),
)
"""Query-set sizes teams use as rules of thumb."""

POWER_LEVELS: tuple[float, ...] = (0.8, 0.9)
PAIR_COLUMNS = ["metric", "run_a", "run_b", "delta", "p_value", "significant", "sd_difference"]


def power_pairs(
    result: EvalResult, specs: Sequence[str], *, test: str = "t", alpha: float = 0.05, seed: int = SEED
) -> pd.DataFrame:
    """:func:`ragmetrics.compare.discriminative_power` for each metric, stacked with a ``metric`` column."""
    parts = []
    for spec in specs:
        pairs = discriminative_power(result, spec, test=test, alpha=alpha, seed=seed)
        parts.append(pairs.assign(metric=spec))
    if not parts:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    return pd.concat(parts, ignore_index=True)[PAIR_COLUMNS]


def _mdd(sd: float, n: int, alpha: float, power: float) -> float:
    if sd is None or math.isnan(sd):
        return float("nan")
    return float(stats.min_detectable_delta(sd, n, alpha=alpha, power=power))


def queries_needed(delta: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """:func:`ragmetrics.stats.queries_needed` for |delta|; None when delta is 0 or either value is unknown."""
    if sd is None or math.isnan(sd) or delta is None or math.isnan(delta) or abs(delta) <= 0:
        return None
    return stats.queries_needed(abs(delta), sd, alpha=alpha, power=power)


POWER_COLUMNS = ["metric", "label", "pairs", "significant", "share", "sd_median", "mdd"]


def power_table(pairs: pd.DataFrame, n_queries: int, *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Per metric: run pairs, how many differ significantly (uncorrected p < alpha), their ``share`` (the
    discriminative power), the median SD of per-query differences, and ``mdd``: the smallest mean difference
    the dataset's ``n_queries`` detect with that SD at ``alpha`` and ``power``."""
    rows = []
    for metric, part in pairs.groupby("metric", sort=False):
        sd = float(part["sd_difference"].median()) if len(part) else float("nan")
        rows.append(
            {
                "metric": metric,
                "label": pretty(str(metric)),
                "pairs": len(part),
                "significant": int(part["significant"].sum()),
                "share": float(part["significant"].mean()) if len(part) else float("nan"),
                "sd_median": sd,
                "mdd": _mdd(sd, n_queries, alpha, power),
            }
        )
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def pairs_table(
    pairs: pd.DataFrame, spec: str, n_queries: int, *, alpha: float = 0.05, power: float = 0.8
) -> pd.DataFrame:
    """The run pairs of one metric: ``delta`` (a − b), p, ``significant``, the pair's SD, its smallest
    detectable difference ``mdd`` and ``queries_needed`` to detect the observed |delta|."""
    part = pairs[pairs["metric"] == spec].reset_index(drop=True)
    out = part[["run_a", "run_b", "delta", "p_value", "significant", "sd_difference"]].copy()
    out["mdd"] = [_mdd(sd, n_queries, alpha, power) for sd in part["sd_difference"]]
    out["queries_needed"] = pd.array(
        [queries_needed(d, sd, alpha, power) for d, sd in zip(part["delta"], part["sd_difference"])], dtype="Int64"
    )
    return out


def stage_of(n_queries: int) -> str:
    """Where a query-set size sits against :data:`RULES_OF_THUMB`."""
    if n_queries < RULES_OF_THUMB[0][1]:
        return "below prototype size"
    for name, low, high in reversed(RULES_OF_THUMB):
        if low <= n_queries <= high:
            return f"{name} size"
    if n_queries > RULES_OF_THUMB[-1][2]:
        return "beyond release size"
    for (name, _, high), (nxt, low, _) in itertools.pairwise(RULES_OF_THUMB):
        if high < n_queries < low:
            return f"between {name} and {nxt} size"
    return ""


RULES_COLUMNS = ["stage", "queries", "mdd_low_end", "mdd_high_end"]


def rules_frame(sd: float, n_queries: int, *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """The rules of thumb with the smallest detectable difference at each end of the range, and this dataset."""
    rows: list[dict[str, object]] = [
        {
            "stage": name,
            "queries": f"{low}–{high}",
            "mdd_low_end": _mdd(sd, low, alpha, power),
            "mdd_high_end": _mdd(sd, high, alpha, power),
        }
        for name, low, high in RULES_OF_THUMB
    ]
    here = _mdd(sd, n_queries, alpha, power)
    rows.append({"stage": "this dataset", "queries": f"{n_queries}", "mdd_low_end": here, "mdd_high_end": here})
    return pd.DataFrame(rows, columns=RULES_COLUMNS)


def needed_frame(sd: float, deltas: Sequence[float], *, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Queries needed to detect each difference in ``deltas`` with SD ``sd``: ``delta, queries_needed, stage``."""
    rows = []
    for delta in deltas:
        n = queries_needed(delta, sd, alpha, power)
        rows.append({"delta": float(delta), "queries_needed": n, "stage": stage_of(n) if n is not None else ""})
    out = pd.DataFrame(rows, columns=["delta", "queries_needed", "stage"])
    out["queries_needed"] = pd.array(out["queries_needed"], dtype="Int64")
    return out


def typical_sd(sds: Sequence[float]) -> float:
    """The median of the run pairs' SDs of per-query differences (NaN when there is none)."""
    values = [float(s) for s in sds if s is not None and not math.isnan(s)]
    return float(np.median(values)) if values else float("nan")


def power_curve_frame(
    sds: Sequence[float], *, alpha: float = 0.05, power: float = 0.8, n_min: int = 10, n_max: int = 1000
) -> pd.DataFrame:
    """Smallest detectable difference (:func:`ragmetrics.stats.min_detectable_delta`) against query count
    ``n`` for the median (``mdd``), lowest and highest SD of ``sds``."""
    values = [float(s) for s in sds if s is not None and not math.isnan(s)]
    if not values:
        return pd.DataFrame(columns=["n", "mdd", "mdd_low", "mdd_high"])
    ns = [int(n) for n in np.unique(np.round(np.geomspace(n_min, n_max, 80)).astype(int))]
    levels = {"mdd": typical_sd(values), "mdd_low": min(values), "mdd_high": max(values)}
    return pd.DataFrame({"n": ns, **{col: [_mdd(sd, n, alpha, power) for n in ns] for col, sd in levels.items()}})


def power_figure(
    curve: pd.DataFrame,
    n_queries: int,
    sd: float,
    *,
    metric: str,
    target_delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> go.Figure:
    """The smallest detectable Δ against the number of queries (log x), with the rules-of-thumb ranges shaded,
    this dataset's size marked and, with ``target_delta``, how many queries that difference needs (SD ``sd``).

    ``curve`` is :func:`power_curve_frame`. Traces: ``range over run pairs`` (band), ``median run pair``,
    ``this dataset``.
    """
    label = pretty(metric)
    fig = go.Figure()
    shades = ("rgba(255,193,7,0.18)", "rgba(156,39,176,0.10)", "rgba(76,175,80,0.16)")
    for (name, low, high), color in zip(RULES_OF_THUMB, shades):
        # on a log axis plotly.js places shapes by data value but annotations by log10 of it
        fig.add_vrect(x0=low, x1=high, fillcolor=color, line_width=0, layer="below")
        fig.add_annotation(
            x=math.log10(math.sqrt(low * high)),
            y=0.99,
            yref="paper",
            yanchor="top",
            showarrow=False,
            text=f"{name}<br>{low}–{high}",
            font={"size": 11, "color": "#555"},
        )
    top = 0.0
    if len(curve):
        ns = curve["n"].tolist()
        fig.add_trace(
            go.Scatter(
                x=ns + ns[::-1],
                y=curve["mdd_high"].tolist() + curve["mdd_low"].tolist()[::-1],
                fill="toself",
                fillcolor="rgba(31,119,180,0.15)",
                line={"width": 0},
                hoverinfo="skip",
                name="range over run pairs",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=ns,
                y=curve["mdd"].tolist(),
                mode="lines",
                line={"color": "#1f77b4", "width": 2.5},
                name="median run pair",
                hovertemplate="%{x} queries → detects Δ ≥ %{y:.3f}<extra></extra>",
            )
        )
        top = float(curve["mdd_high"].max())
    here = _mdd(sd, n_queries, alpha, power)
    if not math.isnan(here):
        fig.add_trace(
            go.Scatter(
                x=[n_queries],
                y=[here],
                mode="markers+text",
                name="this dataset",
                marker={"size": 13, "color": "#d62728", "symbol": "diamond"},
                text=[f"{n_queries} queries: Δ ≥ {here:.3f}"],
                textposition="top right",
                hovertemplate="this dataset: %{x} queries → Δ ≥ %{y:.3f}<extra></extra>",
            )
        )
    needed = queries_needed(target_delta or 0.0, sd, alpha, power)
    if target_delta and needed is not None:
        fig.add_hline(
            y=target_delta,
            line_dash="dot",
            line_color="#444",
            annotation_text=f"Δ = {target_delta:g} needs ≈ {needed:,} queries",
            annotation_position="bottom right",
        )
    fig.update_yaxes(range=[0, max(top, target_delta or 0.0, 0.01) * 1.08])
    n_max = max([1000, n_queries * 1.2, *(curve["n"].tolist() if len(curve) else [])])
    fig.update_xaxes(
        type="log",
        title_text="queries in the dataset",
        range=[1.0, math.log10(n_max)],
        tickvals=[v for v in (10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000) if v <= n_max],
    )
    fig.update_yaxes(title_text=f"smallest detectable Δ {label}")
    fig.update_layout(
        title={"text": f"Smallest difference in {label} a paired test detects (α = {alpha:g}, power {power:.0%})"},
        legend={"orientation": "h", "y": -0.2, "x": 0},
    )
    _base_layout(fig, 440)
    return fig


# --- fusion ------------------------------------------------------------------------------

FUSION_METHODS: tuple[str, ...] = METHODS
FUSION_LABELS: dict[str, str] = {"rrf": "RRF", "combsum": "CombSUM", "combmnz": "CombMNZ"}
NORM_CHOICES: tuple[str, ...] = ("minmax", "zscore", "none")
NORM_LABELS: dict[str, str] = {"minmax": "min–max per query", "zscore": "z-score per query", "none": "raw scores"}


def fused_name(
    names: Sequence[str],
    method: str,
    *,
    k: int = 60,
    norm: str | None = "minmax",
    weights: Sequence[float] | None = None,
) -> str:
    """A readable default name: ``rrf60(bm25+dense)``, ``combsum-zscore(0.7·bm25+0.3·dense)``."""
    label = f"rrf{k}" if method == "rrf" else f"{method}-{norm or 'raw'}"
    uniform = weights is None or len({float(w) for w in weights}) <= 1
    parts = list(names) if uniform else [f"{float(w):g}·{n}" for w, n in zip(weights or [], names)]
    return f"{label}({'+'.join(parts)})"


def fuse_runs(
    runs: Sequence[Run],
    *,
    method: str = "rrf",
    k: int = 60,
    norm: str | None = "minmax",
    weights: Sequence[float] | None = None,
    name: str | None = None,
) -> Run:
    """:func:`ragmetrics.fusion.fuse`, keeping each (query, document) row's ``source_doc`` and ``text`` from
    the first input run that has it, so fused chunk runs still evaluate at document level and show text."""
    norm = None if norm in (None, "none") else norm
    label = name or fused_name([r.name for r in runs], method, k=k, norm=norm, weights=weights)
    fused = fuse(runs, method=method, k=int(k), norm=norm, weights=weights, name=label)
    carried = [
        c for c in ("source_doc", "text") if c not in fused.frame.columns and any(c in r.frame.columns for r in runs)
    ]
    if not carried:
        return fused
    extra = pd.concat(
        [r.frame[["query_id", "doc_id", *[c for c in carried if c in r.frame.columns]]] for r in runs],
        ignore_index=True,
    )
    extra = extra.dropna(subset=[c for c in carried if c in extra.columns], how="all")
    extra = extra.drop_duplicates(["query_id", "doc_id"], keep="first")
    frame = fused.frame.merge(extra, on=["query_id", "doc_id"], how="left")
    return Run.from_frame(frame, name=label)


def trec_bytes(run: Run) -> bytes:
    """The run as a TREC run file (``qid Q0 docid rank score tag``)."""
    buffer = io.BytesIO()
    write_trec_run(run, buffer)
    return buffer.getvalue()


def fusion_preview(dataset: Dataset, inputs: Sequence[Run], fused: Run, specs: Sequence[str]) -> pd.DataFrame:
    """Means of ``specs`` for each input run and the fused one: ``run, role`` (input / fused) and one column per metric."""
    result = evaluate(dataset, [*inputs, fused], list(specs), warn=False)
    means = result.mean()
    rows = []
    for name in means.index:
        row: dict[str, object] = {"run": name, "role": "fused" if name == fused.name else "input"}
        row.update({spec: float(means.loc[name, spec]) for spec in specs})
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "role", *specs])


def fusion_source(
    names: Sequence[str],
    method: str,
    *,
    k: int,
    norm: str | None,
    weights: Mapping[str, float] | Sequence[float] | None,
) -> str:
    """The workspace's ``source`` text for a fused run."""
    detail = f"k={k}" if method == "rrf" else f"norm={norm or 'none'}"
    w = list(weights.values()) if isinstance(weights, Mapping) else list(weights or [])
    weight_text = "" if not w or len(set(w)) <= 1 else " weights=" + "/".join(f"{x:g}" for x in w)
    return f"fusion: {method} {detail}{weight_text} of {', '.join(names)}"


def file_stem(name: str) -> str:
    """A file name for a run name: letters, digits, ``.``, ``-``, ``_`` and ``+`` kept, anything else ``_``."""
    stem = re.sub(r"[^\w.+-]+", "_", name, flags=re.ASCII).strip("._")
    return stem or "fused-run"
