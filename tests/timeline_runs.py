"""Five versions of the SciFact BM25 run with seeded changes, for the history tests (CLI, dashboard, browser).

Versions 2 to 4 each swap two neighbours in the top 10 of a tenth of the queries (noise); version 5 pushes the
top 3 documents of a third of the queries below rank 20: a significant drop of nDCG@10 from version 4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragmetrics.foundation.model import Run
from ragmetrics.io import load_run, write_trec_run

SCIFACT = Path(__file__).parent / "data" / "scifact"
DROP_VERSION = 5
"""The version whose step is the significant drop."""
DATES = ["2025-01-06", "2025-01-13", "2025-01-20", "2025-01-27", "2025-02-03"]


def _perturbed(run: Run, rng: np.random.Generator, share: float, top: int, below: float) -> Run:
    """``run`` with, for a ``share`` of its queries, the first ``top`` documents' scores lowered by ``below``
    places' worth of score (the score of the document that many ranks further down, minus a little)."""
    frame = run.frame.sort_values(["query_id", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
    queries = frame["query_id"].unique()
    chosen = set(rng.choice(queries, size=max(1, int(share * len(queries))), replace=False))
    scores = frame["score"].to_numpy(dtype=np.float64).copy()
    for query, rows in frame.groupby("query_id", sort=False).indices.items():
        if query not in chosen or len(rows) <= top:
            continue
        floor = scores[rows[min(len(rows) - 1, int(below))]]
        scores[rows[:top]] = floor - 1e-3 * (1 + np.arange(top))
    frame["score"] = scores
    return Run.from_frame(frame, name=run.name)


def _swapped(run: Run, rng: np.random.Generator, share: float) -> Run:
    """``run`` with, for a ``share`` of its queries, two neighbours in the top 10 swapped (may help or hurt)."""
    frame = run.frame.sort_values(["query_id", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
    queries = frame["query_id"].unique()
    chosen = set(rng.choice(queries, size=max(1, int(share * len(queries))), replace=False))
    scores = frame["score"].to_numpy(dtype=np.float64).copy()
    for query, rows in frame.groupby("query_id", sort=False).indices.items():
        if query in chosen and len(rows) > 10:
            at = int(rng.integers(0, 9))
            scores[[rows[at], rows[at + 1]]] = scores[[rows[at + 1], rows[at]]]
    frame["score"] = scores
    return Run.from_frame(frame, name=run.name)


def seeded_versions(seed: int = 7) -> list[Run]:
    """The five versions, in order (all named ``bm25-stem``, as a nightly job would name them)."""
    rng = np.random.default_rng(seed)
    base = load_run(SCIFACT / "bm25-stem.trec.gz")
    versions = [base]
    for _ in range(3):  # noise: two neighbours of the top 10 swapped in a tenth of the queries
        versions.append(_swapped(versions[-1], rng, share=0.1))
    versions.append(_perturbed(versions[-1], rng, share=0.33, top=3, below=20))
    return versions


def write_versions(folder: Path, seed: int = 7) -> list[Path]:
    """The versions as TREC files ``v1.trec`` ... ``v5.trec`` in ``folder``."""
    paths = []
    for number, run in enumerate(seeded_versions(seed), 1):
        path = folder / f"v{number}.trec"
        write_trec_run(run, path)
        paths.append(path)
    return paths
