"""Write ``ranx-fusion.json.gz``: ranx's fusions of SciFact's BM25 and dense runs, for ``tests/test_fusion.py``.

    python tests/data/scifact/make_ranx_fusion.py      # needs ranx (pip install ranx)

ranx compiles its fusion with numba on first use (about half a minute on a fresh machine), so the tests compare
against ranx's output kept here rather than run it. The inputs are exactly the tests' (:func:`ranx_inputs`):
reciprocal rank fusion (k = 60) of the runs' ranks given to ranx as scores (minus the rank, so that ranx's own tie
order is out of the comparison), and CombSUM / CombMNZ of the scores under min-max and z-score (ranx's ``zmuv``)
normalisation. For every query the file keeps how many documents ranx fused, their scores' sum and their sum of
squares (z-scores sum to about 0); for every 15th
query (in sorted order) every document's score, to 13 significant digits (the tests compare to 1e-12).
"""

from __future__ import annotations

import gzip
import json
import sys
from importlib.metadata import version
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
OUT = HERE / "ranx-fusion.json.gz"
METHODS = {  # our name: (the score column given to ranx, ranx.fuse's arguments), as the tests called ranx
    "rrf": ("neg_rank", {"method": "rrf", "params": {"k": 60}}),
    "combsum-minmax": ("score", {"method": "sum", "norm": "min-max"}),
    "combsum-zscore": ("score", {"method": "sum", "norm": "zmuv"}),
    "combmnz-minmax": ("score", {"method": "mnz", "norm": "min-max"}),
    "combmnz-zscore": ("score", {"method": "mnz", "norm": "zmuv"}),
}
EVERY = 15
"""Every how many queries (sorted) the file keeps each document's score."""


def ranx_inputs(bm25, dense) -> dict[str, list[pd.DataFrame]]:  # type: ignore[no-untyped-def]
    """The frames each method gives ranx, as ``query_id, doc_id`` and the score column: the ranked runs (with
    ``neg_rank``) for RRF, the runs without repeated documents for the score fusions."""
    from ragmetrics.analysis.fusion import ranked_frame  # noqa: PLC0415 (the script runs from the repository root)

    ranked = [ranked_frame(r).assign(neg_rank=lambda f: -f["rank"].astype(float)) for r in (bm25, dense)]
    scored = [r.frame.drop_duplicates(["query_id", "doc_id"]) for r in (bm25, dense)]
    return {"neg_rank": ranked, "score": scored}


def _digits(value: float) -> float:
    return float(f"{value:.13g}")


def kept_queries(queries: list[str]) -> set[str]:
    return set(sorted(queries)[::EVERY])


def main() -> int:
    import ranx  # noqa: PLC0415 (needed by this script only)

    sys.path.insert(0, str(HERE.parents[2]))
    from ragmetrics.io import load_run  # noqa: PLC0415

    bm25, dense = load_run(HERE / "bm25-stem.trec.gz"), load_run(HERE / "dense-all-minilm-l6-v2.trec.gz")
    inputs = ranx_inputs(bm25, dense)
    out: dict[str, object] = {"ranx": version("ranx"), "every": EVERY, "methods": {}}
    for name, (column, arguments) in METHODS.items():
        runs = []
        for frame in inputs[column]:
            scores: dict[str, dict[str, float]] = {}
            for qid, doc, score in frame[["query_id", "doc_id", column]].itertuples(index=False):
                scores.setdefault(str(qid), {})[str(doc)] = float(score)
            runs.append(ranx.Run(scores))
        fused = ranx.fuse(runs, **arguments).to_dict()
        kept = kept_queries(list(fused))
        out["methods"][name] = {  # type: ignore[index]
            "per_query": {
                q: [len(d), _digits(sum(d.values())), _digits(sum(v * v for v in d.values()))] for q, d in fused.items()
            },
            "scores": {q: {doc: _digits(v) for doc, v in d.items()} for q, d in fused.items() if q in kept},
        }
    with gzip.open(OUT, "wt", encoding="utf-8") as f:
        json.dump(out, f, sort_keys=True, separators=(",", ":"))
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, ranx {version('ranx')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
