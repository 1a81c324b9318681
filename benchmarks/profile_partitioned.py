"""Where a partitioned engine's time goes: one `evaluate_files` call under cProfile, its time split into phases.

    python benchmarks/profile_partitioned.py --size 1m --engine duckdb --memory-limit 2GB
    python benchmarks/profile_partitioned.py --size 100k --engine polars

Phases (cumulative time of the functions named, in this process; a phase's time includes what it calls):

- partition: the engine reads both inputs and writes them hash-partitioned to its work folder (DuckDB's
  `COPY ... PARTITION_BY`, Polars' `sink_parquet(PartitionBy)`), including the line-break check of a TREC file;
- read back: each bucket's Parquet read into Arrow (`read_bucket`);
- TREC parse: a bucket's lines joined and parsed by the TREC loader (`buckets._read`);
- align: `ragmetrics.align` on the bucket (documents matched, rankings built);
- metrics: `Alignment.values` of the metrics asked for;
- merged sums: the fingerprints (and resampled sums) of the bucket (`sums_of`);
- tallies, positions, flags: the run's health per query, the queries' first positions, the coverage flags;
- per bucket, the rest: `evaluate_bucket` minus the phases above (sorting, building the bucket table);
- fold: `combine` minus the buckets (concatenating and ordering the bucket tables).

Written to `benchmarks/out/profile-<engine>-<size>.json` with the load average before and after.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from generate import OUT, parse_size, paths

from ragmetrics.partitioned import evaluate_files

METRICS = ["ndcg@10", "map", "mrr", "recall@100", "precision@10", "hits@5"]
PHASES = {
    "partition": [("partitioned/duck.py", "_partition"), ("partitioned/polar.py", "_partition")],
    "read back": [("partitioned/engine.py", "read_bucket")],
    "TREC parse": [("partitioned/buckets.py", "_read")],
    "align": [("engine/aligning.py", "align")],
    "metrics": [("engine/alignment.py", "values")],
    "merged sums": [("analysis/merged.py", "sums_of")],
    "tallies": [("engine/health.py", "query_tallies")],
    "positions": [("partitioned/buckets.py", "_first_positions")],
    "flags": [("partitioned/buckets.py", "_listed")],
}


def _cumulative(stats: pstats.Stats, wanted: list[tuple[str, str]]) -> float:
    total = 0.0
    for (path, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if any(path.endswith(p) and name == n for p, n in wanted):
            total += cumulative
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k")
    parser.add_argument("--engine", default="duckdb")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--buckets", type=int)
    parser.add_argument("--work-dir")
    args = parser.parse_args()
    label, _, _ = parse_size(args.size)
    qrels, run = paths(label)
    if not run.exists():
        subprocess.run([sys.executable, str(Path(__file__).parent / "generate.py"), "--sizes", args.size], check=True)
    load_before = os.getloadavg()
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    result = evaluate_files(
        str(qrels),
        str(run),
        METRICS,
        engine=args.engine,
        buckets=args.buckets,
        memory_limit=args.memory_limit if args.engine == "duckdb" else None,
        work_dir=args.work_dir,
    )
    profile.disable()
    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    stats = pstats.Stats(profile)
    phases = {name: _cumulative(stats, wanted) for name, wanted in PHASES.items()}
    buckets_total = _cumulative(stats, [("partitioned/buckets.py", "evaluate_bucket")])
    inside = sum(v for k, v in phases.items() if k not in ("partition", "read back"))
    phases["per bucket, the rest"] = buckets_total - inside
    fold = _cumulative(stats, [("partitioned/result.py", "combine")])
    phases["fold"] = fold - buckets_total - phases["read back"] - phases["partition"]
    print(
        f"{args.engine} {label}: {result.buckets} buckets, {wall:.1f} s under the profiler (load {load_before[0]:.2f}"
        f" before, {load_after[0]:.2f} after)"
    )
    for name, seconds in phases.items():
        print(f"  {name:<22} {seconds:8.2f} s  {seconds / wall:6.1%}")
    out = OUT / f"profile-{args.engine}-{label}.json"
    out.write_text(
        json.dumps(
            {
                "engine": args.engine,
                "size": label,
                "buckets": result.buckets,
                "wall_s": round(wall, 2),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in load_after],
                "phases_s": {k: round(v, 2) for k, v in phases.items()},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
