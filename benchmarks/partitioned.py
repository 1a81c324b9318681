"""Partitioned engines against the in-process one, whole processes: peak RSS and wall time of `ragmetrics eval`.

    python benchmarks/partitioned.py --size 1m --engines inprocess,duckdb,polars --memory-limit 2GB
    python benchmarks/partitioned.py --size 1m --engines inprocess,stream,polars --memory-limit 2GB
    python benchmarks/partitioned.py --size 100k --engines spark,inprocess --spark-master 'local[2]'
    python benchmarks/partitioned.py --size 10m --gzip --engines stream   # the run gzipped (generate.py --gzip)

Each engine runs `python -m ragmetrics eval` once under `/usr/bin/time -v` (GNU time's maximum resident set size: of
the largest process it saw end, which for Spark is the driver's Python, not its JVM) on the files of
`benchmarks/generate.py`; the means
printed by every engine must be the same (exit 1 otherwise). The load average is read before each engine. Results go
to `benchmarks/out/partitioned.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import OUT, parse_size, paths

METRICS = ["ndcg@10", "map", "mrr", "recall@100", "precision@10", "hits@5"]


def _measure(argv: list[str], env: dict[str, str]) -> dict[str, object]:
    load = os.getloadavg()
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-3000:]}")
    peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    means = dict(re.findall(r"^(\S+)\s+\tall\t([0-9.]+)$", done.stdout, re.MULTILINE))
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mib": round(peak_kib / 1024),
        "load_before": [round(x, 2) for x in load],
        "means": means,
        "argv": argv,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1m", help="a benchmarks/generate.py size (default 1m: 1M x 100)")
    parser.add_argument("--engines", default="duckdb,inprocess", help="engines to run, in this order")
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB's and the stream engine's --memory-limit")
    parser.add_argument("--buckets", type=int, help="--buckets (default: the engine's)")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--work-dir", help="DuckDB's and Polars' --work-dir (default: a temporary folder)")
    parser.add_argument("--json", default=str(OUT / "partitioned.json"))
    parser.add_argument("--gzip", action="store_true", help="the run as run.trec.gz (generate.py --gzip)")
    args = parser.parse_args()
    label, _, _ = parse_size(args.size)
    qrels, run = paths(label, args.gzip)
    if not run.exists():
        generate = [sys.executable, str(Path(__file__).parent / "generate.py"), "--sizes", args.size]
        subprocess.run(generate + (["--gzip"] if args.gzip else []), check=True)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    results: dict[str, object] = {"size": label, "run_bytes": run.stat().st_size, "engines": {}}
    for engine in args.engines.split(","):
        argv = [sys.executable, "-m", "ragmetrics", "eval", "--dataset", str(qrels), "--run", str(run)]
        argv += [a for m in METRICS for a in ("-m", m)] + ["--engine", engine]
        if engine in ("duckdb", "stream"):
            argv += ["--memory-limit", args.memory_limit]
        if engine in ("duckdb", "polars") and args.work_dir:
            argv += ["--work-dir", args.work_dir]
        if engine == "spark":
            argv += ["--spark-master", args.spark_master]
        if args.buckets and engine != "inprocess":
            argv += ["--buckets", str(args.buckets)]
        measured = _measure(argv, env)
        results["engines"][engine] = measured  # type: ignore[index]
        print(
            f"{engine:<10} {measured['wall_s']:>8} s  {measured['peak_rss_mib']:>7} MiB  load {measured['load_before']}"
            f"  {measured['means']}",
            flush=True,
        )
    means = [m["means"] for m in results["engines"].values()]  # type: ignore[union-attr]
    results["same_means"] = all(m == means[0] for m in means)
    Path(args.json).write_text(json.dumps(results, indent=2))
    print("same means" if results["same_means"] else "MEANS DIFFER")
    return 0 if results["same_means"] else 1


if __name__ == "__main__":
    sys.exit(main())
