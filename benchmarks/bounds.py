"""What the bounds from the unjudged documents cost: ``Alignment.bounds`` on a generated run, one process, one core.

    python benchmarks/bounds.py --size 100k

For each (metric, depth) it prints the seconds to compute the per-query ends and the three means (worst, trec_eval's
value, best). The search takes one evaluation per unjudged rank, so whole-ranking metrics at full depth cost the
most.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import parse_size, paths

CASES = [("precision@10", None), ("ndcg@10", None), ("ndcg@10", 10), ("map", 10), ("map", None)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k", help="a benchmarks/generate.py size (default 100k: 100k x 100)")
    args = parser.parse_args()
    label, _, _ = parse_size(args.size)
    qrels, run = paths(label)
    if not run.exists():
        subprocess.run([sys.executable, str(Path(__file__).parent / "generate.py"), "--sizes", args.size], check=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import ragmetrics as rm
    from ragmetrics.foundation.memory import use_small_pages_for_this_process
    from ragmetrics.io import load_dataset, load_run

    use_small_pages_for_this_process()
    alignment = rm.align(load_dataset(qrels), load_run(run))
    print(f"{label}: {alignment.n_queries:,} queries, {len(alignment.ranking.q):,} ranked rows")
    for metric, depth in CASES:
        started = time.perf_counter()
        worst, best = alignment.bounds(metric, depth)
        took = time.perf_counter() - started
        where = "whole ranking" if depth is None else f"depth {depth}"
        print(f"{metric:<14} {where:<14} {took:7.2f} s   worst {worst.mean():.4f}  "
              f"trec_eval {alignment.mean(metric):.4f}  best {best.mean():.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
