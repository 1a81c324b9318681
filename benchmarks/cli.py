"""Whole-process benchmark: ``ragmetrics eval`` against a pytrec_eval script that reads and scores the same files.

    python benchmarks/cli.py [--sizes scifact,100k] [--repeat 9]

Each size is run as a user runs it: a fresh process per call, ``ragmetrics eval --dataset QRELS --run RUN`` with
six metrics against ``benchmarks/pytrec_eval_cli.py QRELS RUN`` (pytrec_eval's own parsers and evaluator, the
same six measures), alternately (A B A B ...) after one warm-up each, with the same interpreter
(``sys.executable``). Wall time is measured around each process; peak RSS is the process's own ``ru_maxrss``
(``os.wait4``). The ratio is the median of the pairwise ratios, so a drift in the machine's speed moves both
sides of a pair. The means are checked against each other (1e-9) and the run exits 1 if they differ.

Python's bytecode cache is allowed (``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment):
an installed package has its ``.pyc`` files, and the warm-up writes them for an editable checkout.

Sizes: ``scifact`` is SciFact's BM25 run in ``tests/data/scifact`` (300 queries); ``100k`` is the generated
100,000 queries x 100 of ``benchmarks/generate.py`` (made if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from run import PYTREC_STANDARD  # benchmarks/run.py, beside this file

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
METRICS = PYTREC_STANDARD  # ragmetrics name -> pytrec_eval measure: the engine benchmark's six
SIZES = {
    "scifact": (ROOT / "tests/data/scifact/qrels.tsv", ROOT / "tests/data/scifact/bm25-stem.trec.gz"),
    "100k": (OUT / "100k/qrels.txt", OUT / "100k/run.trec"),
}
TARGETS = {
    "scifact": ("at most 1.5x pytrec_eval's wall time", lambda r: r <= 1.5),
    "100k": ("at least 4x faster", lambda r: r <= 0.25),
}


MINIMAL_TARGET = 1.5
"""``ragmetrics eval`` over the minimal pytrec_eval script (``pytrec_eval_minimal.py``): at most this."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NUMPY_MADVISE_HUGEPAGE"] = (
        "0"  # as ragmetrics' own process sets it (ragmetrics.foundation.memory), for both sides
    )
    return env


def _rusage_wall(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, the process's peak RSS in MiB, its stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    stdout = proc.stdout.read() if proc.stdout else b""
    stderr = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed: {stderr.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, stdout.decode()


def commands(size: str) -> tuple[list[str], list[str], list[str]]:
    """``ragmetrics eval``, the pytrec_eval script with pytrec_eval's own parsers, and the minimal one (a plain
    ``split()`` loop: what a user of pytrec_eval writes first)."""
    qrels, run = SIZES[size]
    ours = [sys.executable, "-m", "ragmetrics", "eval", "--dataset", str(qrels), "--run", str(run), "--format", "json"]
    for metric in METRICS:
        ours += ["-m", metric]
    files = [str(qrels), str(run), *METRICS.values()]
    theirs = [sys.executable, str(ROOT / "benchmarks" / "pytrec_eval_cli.py"), *files]
    minimal = [sys.executable, str(ROOT / "benchmarks" / "pytrec_eval_minimal.py"), *files]
    return ours, theirs, minimal


def means_of(ours: str, theirs: str) -> tuple[dict[str, float], dict[str, float]]:
    runs = json.loads(ours)["runs"]
    mine = next(iter(runs.values()))["mean"]
    other = json.loads(theirs)
    return {m: mine[m] for m in METRICS}, {m: other[METRICS[m]] for m in METRICS}


def measure(size: str, repeat: int) -> dict:
    ours, theirs, minimal = commands(size)
    _rusage_wall(ours), _rusage_wall(theirs), _rusage_wall(minimal)  # warm-up: page cache, bytecode
    pairs, floors = [], []
    for i in range(repeat):
        a = _rusage_wall(ours)
        b = _rusage_wall(theirs)
        c = _rusage_wall(minimal)
        pairs.append((a, b))
        floors.append(c)
        print(
            f"  [{size}] {i + 1}/{repeat}: ragmetrics {a[0]:.3f} s, pytrec_eval {b[0]:.3f} s, minimal {c[0]:.3f} s",
            flush=True,
        )
    mine, other = means_of(pairs[-1][0][2], pairs[-1][1][2])
    _, least = means_of(pairs[-1][0][2], floors[-1][2])
    diff = max(max(abs(mine[m] - other[m]), abs(mine[m] - least[m])) for m in METRICS)
    ratios = [a[0] / b[0] for a, b in pairs]
    minimal_ratios = [a[0] / c[0] for (a, _), c in zip(pairs, floors)]
    return {
        "size": size,
        "ragmetrics_s": statistics.median(a[0] for a, _ in pairs),
        "pytrec_eval_s": statistics.median(b[0] for _, b in pairs),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "minimal_s": statistics.median(c[0] for c in floors),
        "best_ratio": min(a[0] for a, _ in pairs) / min(c[0] for c in floors),
        "minimal_ratio": statistics.median(minimal_ratios),
        "minimal_ratio_min": min(minimal_ratios),
        "minimal_ratio_max": max(minimal_ratios),
        "ragmetrics_rss_mib": max(a[1] for a, _ in pairs),
        "pytrec_eval_rss_mib": max(b[1] for _, b in pairs),
        "max_mean_diff": diff,
        "walls": [[a[0], b[0]] for a, b in pairs],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="scifact,100k", help="comma-separated: " + ", ".join(SIZES))
    parser.add_argument("--repeat", type=int, default=9, help="counted pairs per size (default 9)")
    parser.add_argument("--json", default=str(OUT / "cli.json"), help="where to write every timing")
    args = parser.parse_args()
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if "100k" in sizes and not SIZES["100k"][1].exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--sizes", "100k"], check=True)
    results = [measure(size, args.repeat) for size in sizes]
    print(
        "\n| size | ragmetrics eval s | pytrec_eval script s | ratio (median of pairs, min-max) | target | peak RSS MiB (ours / theirs) | means |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: | --- |")
    failed = False
    for r in results:
        text, holds = TARGETS.get(r["size"], ("", lambda _r: True))
        verdict = ("met" if holds(r["ratio"]) else "missed") if text else ""
        print(
            f"| {r['size']} | {r['ragmetrics_s']:.3f} | {r['pytrec_eval_s']:.3f} | {r['ratio']:.2f}x "
            f"({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) | {text}: {verdict} | {r['ragmetrics_rss_mib']:,.0f} / "
            f"{r['pytrec_eval_rss_mib']:,.0f} | {'equal' if r['max_mean_diff'] < 1e-9 else 'DIFFER'} "
            f"(max diff {r['max_mean_diff']:.1e}) |"
        )
        failed |= r["max_mean_diff"] >= 1e-9
    print(
        "\n| size | ragmetrics eval s | minimal pytrec_eval script s | ratio (median of pairs, min-max) | best over best "
        "| target (best over best) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        holds = r["best_ratio"] <= MINIMAL_TARGET
        print(
            f"| {r['size']} | {r['ragmetrics_s']:.3f} | {r['minimal_s']:.3f} | {r['minimal_ratio']:.2f}x "
            f"({r['minimal_ratio_min']:.2f}-{r['minimal_ratio_max']:.2f}) | {r['best_ratio']:.2f}x | at most "
            f"{MINIMAL_TARGET}x: {'met' if holds else 'missed'} |"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"python": sys.version, "results": results}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
