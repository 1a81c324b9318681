"""Compare, query by query: one run against the baseline on one metric, per query (wins, ties, losses), the
sorted deltas, baseline against run, and one query's two rankings side by side."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.core.charts import base_layout, safe
from dashboard.core.missed import doc_ranks, query_detail_frame
from dashboard.core.results import Alignment, common_query_ids
from dashboard.core.specs import MetricSpec, title
from dashboard.core.text import signed, snippet
from ragmetrics.analysis.diagnosis import query_facets
from ragmetrics.analysis.stats import TIE_TOLERANCE
from ragmetrics.engine.queries import at_positions, query_positions

__all__ = [
    "OUTCOMES",
    "OUTCOME_NAMES",
    "PER_QUERY_COLUMNS",
    "RANKING_COLUMNS",
    "delta_figure",
    "outcome_counts",
    "pair_depth",
    "per_query_frame",
    "queries_with",
    "query_order",
    "query_row",
    "ranking_pair",
    "scatter_figure",
]

OUTCOMES: tuple[str, ...] = ("win", "tie", "loss")
OUTCOME_NAMES: dict[str, str] = {"win": "wins", "tie": "ties", "loss": "losses"}
OUTCOME_COLORS: dict[str, str] = {"win": "#2ca02c", "tie": "#9e9e9e", "loss": "#d62728"}


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


def per_query_frame(base: Alignment, run: Alignment, spec: MetricSpec) -> pd.DataFrame:
    """One row per query both runs were evaluated on: the two values, ``delta = run - baseline``,
    ``outcome`` (win / tie / loss, as :mod:`ragmetrics.analysis.compare` counts them) and where each run's first
    relevant document sits (0 = not retrieved). Sorted by delta, largest win first."""
    ids = common_query_ids([base, run])
    base_at, run_at = query_positions(base.query_ids, ids), query_positions(run.query_ids, ids)
    b, r = at_positions(base.value(spec), base_at), at_positions(run.value(spec), run_at)
    delta = r - b
    outcome = np.where(delta > TIE_TOLERANCE, "win", np.where(delta < -TIE_TOLERANCE, "loss", "tie"))
    shown = query_facets(base.dataset, ids)
    base_first = at_positions(base.first_rel_rank.astype(np.float64), base_at)
    run_first = at_positions(run.first_rel_rank.astype(np.float64), run_at)
    out = pd.DataFrame(
        {
            "query_id": shown["query_id"].to_numpy(),
            "query": shown["query"].to_numpy(),
            "category": shown["category"].to_numpy(),
            "difficulty": shown["difficulty"].to_numpy(),
            "baseline": b,
            "run": r,
            "delta": delta,
            "outcome": outcome,
            "baseline_first_rank": base_first.astype(np.int64),
            "run_first_rank": run_first.astype(np.int64),
        },
        columns=PER_QUERY_COLUMNS,
    )
    return out.sort_values(["delta", "query_id"], ascending=[False, True], kind="stable").reset_index(drop=True)


def query_row(per_query: pd.DataFrame, query_id: str) -> pd.Series:
    """One query's row of :func:`per_query_frame`."""
    return per_query[per_query["query_id"] == query_id].iloc[0]


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


def delta_figure(per_query: pd.DataFrame, *, run: str, baseline: str, spec: MetricSpec) -> go.Figure:
    """Per-query deltas sorted from the largest win to the worst loss; traces ``wins``, ``ties``, ``losses``."""
    label = title(spec)
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
            annotation_text=f"mean Δ {signed(float(data['delta'].mean()))}",
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
    base_layout(fig, 420)
    return fig


def scatter_figure(
    per_query: pd.DataFrame, *, run: str, baseline: str, spec: MetricSpec, max_ids: int = 8
) -> go.Figure:
    """Baseline value (x) against the run's (y), one marker per distinct pair of values sized by how many
    queries share it; traces ``wins``, ``ties``, ``losses`` and the diagonal ``no change``."""
    label = title(spec)
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
        title={"text": "Per query: above the diagonal, the run wins"},
        legend={"orientation": "h", "y": -0.18, "x": 0},
    )
    base_layout(fig, 460)
    return fig


RANKING_COLUMNS = ["rank", "relevant", "judgment", "doc_id", "other_rank", "score"]


def pair_depth(first_ranks: Sequence[int], k: int, *, floor: int = 10, limit: int = 30) -> int:
    """How deep to show two rankings: at least ``max(floor, k)``, deeper to reach either run's first relevant
    document when it sits within ``limit``."""
    found = [int(r) for r in first_ranks if 0 < int(r) <= limit]
    return max(floor, int(k), *found)


def ranking_pair(base: Alignment, run: Alignment, query_id: str, depth: int = 20) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both runs' top ``depth`` documents for one query, side by side.

    Each frame: ``rank, relevant, judgment, doc_id, other_rank`` (the document's rank in the other run, NA = not
    retrieved there), ``score`` and, when known, ``title`` and ``text`` (best chunk), as
    :func:`dashboard.core.missed.query_detail_frame`.
    """
    out = []
    for this, other in ((base, run), (run, base)):
        detail = query_detail_frame(this, query_id, depth)
        ranks = doc_ranks(other, query_id)
        detail = detail.assign(other_rank=pd.array([ranks.get(str(d)) for d in detail["doc_id"]], dtype="Int64"))
        extra = [c for c in ("title", "text") if c in detail.columns]
        out.append(detail[RANKING_COLUMNS + extra].reset_index(drop=True))
    return out[0], out[1]
