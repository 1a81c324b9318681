"""What the dashboard server's allocator setting costs the engine: parse, the standard set and the curves of one
generated run, in fresh processes, with and without :func:`ragmetrics.foundation.memory.hand_freed_memory_back_promptly`.

    python benchmarks/allocator.py --size 100k --repeat 5

Both sides switch numpy's huge-page advice off, as the server does; the two alternate, one process each time. The
memory this setting gives back is measured by ``tests/e2e/test_memory_e2e.py`` (it prints the server's RSS).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import parse_size, paths

REPO = Path(__file__).resolve().parents[1]
STANDARD = ["ndcg@10", "map", "mrr", "recall@100", "precision@10", "hits@5"]
PHASES = ("parse", "standard", "curves")

WORKER = """
import json, sys, time
import ragmetrics as rm
from ragmetrics.foundation import memory
from ragmetrics.io import load_dataset, load_run
memory.use_small_pages_for_this_process()
if sys.argv[1] == "on":
    memory.hand_freed_memory_back_promptly()
t0 = time.perf_counter()
dataset, run = load_dataset(sys.argv[2]), load_run(sys.argv[3])
t1 = time.perf_counter()
alignment = rm.align(dataset, run)
rm.evaluate(dataset, alignment, json.loads(sys.argv[4]), warn=False)
t2 = time.perf_counter()
[alignment.curve(m, 100).mean(axis=0) for m in ("precision", "recall", "f1", "hits")]
t3 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2]))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k", help="a benchmarks/generate.py size (default 100k: 100k x 100)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    label, _, _ = parse_size(args.size)
    qrels, run = paths(label)
    if not run.exists():
        subprocess.run([sys.executable, str(Path(__file__).parent / "generate.py"), "--sizes", args.size], check=True)
    times: dict[str, list[list[float]]] = {"off": [], "on": []}
    for _ in range(args.repeat):
        for side in times:
            argv = [sys.executable, "-c", WORKER, side, str(qrels), str(run), json.dumps(STANDARD)]
            done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
            times[side].append(json.loads(done.stdout))
    print(f"{label}, median of {args.repeat} processes each (seconds)")
    print(f"{'phase':<10} {'default':>8} {'server':>8} {'ratio':>6}")
    for i, phase in enumerate(PHASES):
        off = statistics.median(t[i] for t in times["off"])
        on = statistics.median(t[i] for t in times["on"])
        print(f"{phase:<10} {off:8.2f} {on:8.2f} {on / off:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
