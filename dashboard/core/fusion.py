"""Fusion: "what if we went hybrid?" Fuse runs (:func:`ragmetrics.analysis.fusion.fuse`), preview the fused run against its
inputs, name it, and write it as a TREC run file."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from dashboard.core.results import Alignment
from dashboard.core.specs import MetricSpec
from ragmetrics.analysis.fusion import METHODS, NORMS, fuse
from ragmetrics.foundation.model import Run
from ragmetrics.io import write_trec_run
from ragmetrics.io.trec import trec_run_problem

__all__ = [
    "FUSION_LABELS",
    "FUSION_METHODS",
    "NORM_CHOICES",
    "NORM_LABELS",
    "Run",
    "file_stem",
    "fuse_runs",
    "fused_name",
    "fusion_preview",
    "fusion_source",
    "fusion_tags",
    "trec_bytes",
]

FUSION_METHODS: tuple[str, ...] = METHODS
FUSION_LABELS: dict[str, str] = {"rrf": "RRF", "combsum": "CombSUM", "combmnz": "CombMNZ"}
NORM_CHOICES: tuple[str, ...] = tuple("none" if n is None else n for n in NORMS)
"""The library's normalisations, ``none`` for raw scores."""
NORM_LABELS: dict[str, str] = {"minmax": "min–max per query", "zscore": "z-score per query", "none": "raw scores"}


def _norm(norm: str | None) -> str | None:
    return None if norm in (None, "none") else norm


def fused_name(
    names: Sequence[str],
    method: str,
    *,
    k: int = 60,
    norm: str | None = "minmax",
    weights: Sequence[float] | None = None,
) -> str:
    """A readable default name: ``rrf60(bm25+dense)``, ``combsum-zscore(0.7·bm25+0.3·dense)``."""
    label = f"rrf{k}" if method == "rrf" else f"{method}-{_norm(norm) or 'raw'}"
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
    """:func:`ragmetrics.analysis.fusion.fuse` under :func:`fused_name` (fused chunk runs keep ``source_doc`` and ``text``,
    so they still evaluate at document level and show text)."""
    label = name or fused_name([r.name for r in runs], method, k=k, norm=norm, weights=weights)
    return fuse(runs, method=method, k=int(k), norm=_norm(norm), weights=weights, name=label)


def trec_problem(run: Run) -> str | None:
    """Why the run cannot be a TREC run file (an id holding whitespace), or None: the download is offered only
    when it can be written."""
    return trec_run_problem(run)


def trec_bytes(run: Run) -> bytes:
    """The run as a TREC run file (``qid Q0 docid rank score tag``)."""
    buffer = io.BytesIO()
    write_trec_run(run, buffer)
    return buffer.getvalue()


def fusion_preview(inputs: Sequence[Alignment], fused: Alignment, specs: Sequence[MetricSpec]) -> pd.DataFrame:
    """Means of ``specs`` for each input run and the fused one: ``run, role`` (input / fused) and one column per
    metric (the inputs' alignments are the pages' own: only the fused run is new)."""
    rows = []
    for alignment, role in [*((a, "input") for a in inputs), (fused, "fused")]:
        row: dict[str, object] = {"run": alignment.name, "role": role}
        row.update({str(spec): alignment.mean(spec) for spec in specs})
        rows.append(row)
    return pd.DataFrame(rows, columns=["run", "role", *map(str, specs)])


def fusion_source(
    names: Sequence[str],
    method: str,
    *,
    k: int,
    norm: str | None,
    weights: Mapping[str, float] | Sequence[float] | None,
) -> str:
    """The workspace's ``source`` text for a fused run."""
    detail = f"k={k}" if method == "rrf" else f"norm={_norm(norm) or 'none'}"
    w = list(weights.values()) if isinstance(weights, Mapping) else list(weights or [])
    weight_text = "" if not w or len(set(w)) <= 1 else " weights=" + "/".join(f"{x:g}" for x in w)
    return f"fusion: {method} {detail}{weight_text} of {', '.join(names)}"


def fusion_tags(
    names: Sequence[str],
    method: str,
    *,
    k: int,
    norm: str | None,
    weights: Mapping[str, float] | Sequence[float] | None,
) -> dict[str, str]:
    """The metadata tags of a fused run, as ``ragmetrics.analysis.diagnosis`` reads a run's kind (``fusion``, its
    parameters and inputs): Diagnosis then knows it fused from its tags, not from its name."""
    tags = {"fusion": method, "fusion.of": " + ".join(names)}
    if method == "rrf":
        tags["fusion.k"] = str(k)
    else:
        tags["fusion.norm"] = _norm(norm) or "none"
    w = list(weights.values()) if isinstance(weights, Mapping) else list(weights or [])
    if w and len(set(w)) > 1:
        tags["fusion.weights"] = "/".join(f"{x:g}" for x in w)
    return tags


def file_stem(name: str) -> str:
    """A file name for a run name: letters, digits, ``.``, ``-``, ``_`` and ``+`` kept, anything else ``_``."""
    stem = re.sub(r"[^\w.+-]+", "_", name, flags=re.ASCII).strip("._")
    return stem or "fused-run"
