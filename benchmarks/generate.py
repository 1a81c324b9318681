"""Seeded synthetic TREC qrels and runs for the speed benchmark.

    python benchmarks/generate.py --sizes 1k,10k,100k,10kx1000,1m

writes ``benchmarks/out/<size>/qrels.txt`` and ``benchmarks/out/<size>/run.trec``
(``1k`` = 1,000 queries x 100 retrieved, ``10kx1000`` = 10,000 x 1,000). The
same size and seed always give byte-identical files; existing files are kept
unless ``--force``. ``--gzip`` writes the run as ``run.trec.gz`` instead (gzip level
1, streamed chunk by chunk: 10M x 100 takes about a fifth of its 37 GB of text).

What the data looks like:

* queries ``q1`` .. ``qN``; documents ``doc0`` .. ``doc999982`` (a corpus of
  999,983 ids, mostly ``doc123456``-like), each query's documents
  (retrieved or judged) distinct and scattered over the corpus;
* qrels: per query 1 + Poisson(1.5) relevant documents (labels 1/2/3 with
  probabilities .5/.3/.2, at most 10) and Poisson(4) judged non-relevant ones
  (label 0); ~75 % of the relevant and ~85 % of the non-relevant judged
  documents are retrieved, at ranks drawn with weights 1/(rank + 5) (relevant
  ones tend to rank higher), the others are judged but not retrieved;
* run: ``qid Q0 docid rank score bench``, lines in rank order, scores
  descending with 4 decimals, between about 20 and 70 at depth 100 (10 and 80
  at depth 1000); about 3 % of consecutive pairs tie. Four decimals below 100
  stay distinct and ordered as float32, so pytrec_eval (which rounds scores to
  float32) ranks exactly as float64 tools do: ties are true ties, broken by
  doc id descending everywhere.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import re
import sys
import time
from pathlib import Path

# numpy and pyarrow are imported inside the functions that need them, so that
# run.py's driver can use parse_size() and paths() and stay a small process
# (a worker's ru_maxrss starts from its parent's peak RSS at exec).
OUT = Path(__file__).resolve().parent / "out"
CORPUS = 999_983  # prime: doc = (mult * H[j] + base) mod CORPUS is a bijection in j
SEED = 20240611
TIE_RATE = 0.03
MAX_REL = 10
UNRETRIEVED_SLOTS = MAX_REL + 40  # j-indices past the depth, for judged docs not retrieved


def parse_size(text: str) -> tuple[str, int, int]:
    """'100k' -> ('100k', 100000, 100); '10kx1000' -> ('10kx1000', 10000, 1000)."""
    m = re.fullmatch(r"\s*(\d+)([km]?)(?:x(\d+))?\s*", text.lower())
    if not m:
        raise SystemExit(f"bad size {text!r}; expected e.g. 1k, 100k, 1m, 10kx1000")
    n = int(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2)]
    depth = int(m.group(3) or 100)
    label = f"{m.group(1)}{m.group(2)}" + (f"x{depth}" if depth != 100 else "")
    return label, n, depth


def paths(label: str, gzipped: bool = False) -> tuple[Path, Path]:
    folder = OUT / label
    return folder / "qrels.txt", folder / ("run.trec.gz" if gzipped else "run.trec")


def _strings(values, prefix: str):
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(values), pa.string()), "")


def _write(lines, stream) -> None:
    """Write a string array whose values already end with a newline: its data buffer is the text."""
    import numpy as np
    import pyarrow as pa

    lines = lines.cast(pa.large_string()) if lines.type == pa.string() else lines
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    stream.write(memoryview(data)[offsets[0] : offsets[-1]])


def _scatter(depth: int):
    """Distinct offsets H[j] in 0..CORPUS-1 for the j-indices 0 .. depth + UNRETRIEVED_SLOTS - 1."""
    import numpy as np

    return np.random.default_rng(SEED).choice(CORPUS, size=depth + UNRETRIEVED_SLOTS, replace=False).astype(np.int64)


def _chunk(rng, q0: int, nq: int, depth: int):
    """Run lines and qrels lines for queries q0 .. q0 + nq - 1."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    qnum = np.arange(q0 + 1, q0 + nq + 1, dtype=np.int64)
    base = rng.integers(0, CORPUS, size=nq, dtype=np.int64)
    mult = rng.integers(1, CORPUS, size=nq, dtype=np.int64)
    scatter = _scatter(depth)

    # judged documents: how many, which are retrieved, and at which ranks
    n_rel = np.minimum(1 + rng.poisson(1.5, nq), MAX_REL)
    n_non = np.minimum(rng.poisson(4.0, nq), UNRETRIEVED_SLOTS - MAX_REL)
    rel_ret = rng.binomial(n_rel, 0.75)
    non_ret = np.minimum(rng.binomial(n_non, 0.85), depth - rel_ret)
    # weighted sample of ranks without replacement (exponential keys, smallest first)
    weights = 1.0 / (np.arange(depth) + 5.0)
    keys = rng.exponential(size=(nq, depth)) / weights
    order = np.argsort(keys, axis=1)  # order[:, i] = rank of the i-th sampled document
    slot = np.arange(depth)[None, :]
    judged_ret = slot < (rel_ret + non_ret)[:, None]
    is_rel_ret = slot < rel_ret[:, None]
    labels_rel = rng.choice(np.array([1, 2, 3]), p=[0.5, 0.3, 0.2], size=(nq, MAX_REL))

    qi, si = np.nonzero(judged_ret)
    ret_rank = order[qi, si]
    ret_label = np.where(is_rel_ret[qi, si], labels_rel[qi, np.minimum(si, MAX_REL - 1)], 0)
    ret_j = ret_rank  # the document at rank r has j-index r

    # judged but not retrieved: j-indices depth, depth + 1, ...
    n_unret_rel = n_rel - rel_ret
    n_unret_non = n_non - non_ret
    n_unret = n_unret_rel + n_unret_non
    uq = np.repeat(np.arange(nq), n_unret)
    within = np.arange(len(uq)) - np.repeat(np.cumsum(n_unret) - n_unret, n_unret)
    un_rel = within < n_unret_rel[uq]
    un_label = np.where(un_rel, labels_rel[uq, np.minimum(rel_ret[uq] + within, MAX_REL - 1)], 0)
    un_j = depth + within

    jq = np.concatenate([qi, uq])
    jj = np.concatenate([ret_j, un_j])
    jl = np.concatenate([ret_label, un_label])
    sort = np.lexsort((jj, jq))
    jq, jj, jl = jq[sort], jj[sort], jl[sort]
    jdoc = (mult[jq] * scatter[jj] + base[jq]) % CORPUS
    qrels = pc.binary_join_element_wise(
        _strings(qnum[jq], "q"),
        "0",
        _strings(jdoc, "doc"),
        pc.binary_join_element_wise(pc.cast(pa.array(jl), pa.string()), "\n", ""),
        " ",
    )

    # run: scores descending by rank, 4 decimals, some ties
    start = rng.uniform(50.0, 70.0, size=(nq, 1)) if depth <= 200 else rng.uniform(60.0, 80.0, size=(nq, 1))
    step = rng.exponential(0.3 if depth <= 200 else 0.05, size=(nq, depth))
    step[:, 0] = 0.0
    step[rng.random((nq, depth)) < TIE_RATE] = 0.0
    score_units = np.round(start * 10_000).astype(np.int64) - np.cumsum(
        np.round(step * 10_000).astype(np.int64), axis=1
    )
    score = score_units / 10_000.0
    rank = np.broadcast_to(np.arange(1, depth + 1), (nq, depth)).ravel()
    rdoc = ((mult[:, None] * scatter[None, :depth] + base[:, None]) % CORPUS).ravel()
    run = pc.binary_join_element_wise(
        _strings(np.repeat(qnum, depth), "q"),
        "Q0",
        _strings(rdoc, "doc"),
        pc.cast(pa.array(rank), pa.string()),
        pc.cast(pa.array(score.ravel()), pa.string()),
        "bench\n",
        " ",
    )
    return run, qrels


def generate(
    size: str, *, seed: int = SEED, force: bool = False, quiet: bool = False, gzipped: bool = False
) -> tuple[Path, Path]:
    label, n, depth = parse_size(size)
    qrels_path, run_path = paths(label, gzipped)
    if qrels_path.exists() and run_path.exists() and not force:
        return qrels_path, run_path
    import numpy as np

    qrels_path.parent.mkdir(parents=True, exist_ok=True)
    # the seed folds in the size, so each size is its own reproducible draw
    rng = np.random.default_rng([seed, n, depth])
    rows_per_chunk = 2_000_000
    step = max(1, rows_per_chunk // depth)
    t0 = time.perf_counter()
    tmp_q, tmp_r = qrels_path.with_suffix(".tmp"), run_path.with_suffix(".tmp")
    opener = functools.partial(gzip.open, compresslevel=1) if gzipped else open
    with open(tmp_q, "wb") as fq, opener(tmp_r, "wb") as fr:
        for q0 in range(0, n, step):
            run, qrels = _chunk(rng, q0, min(step, n - q0), depth)
            _write(run, fr)
            _write(qrels, fq)
    os.replace(tmp_q, qrels_path)
    os.replace(tmp_r, run_path)
    if not quiet:
        mb = run_path.stat().st_size / 2**20
        print(
            f"{label}: {n:,} queries x {depth} -> {run_path} ({mb:,.0f} MiB) in {time.perf_counter() - t0:.1f}s",
            file=sys.stderr,
        )
    return qrels_path, run_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1k,10k,100k,10kx1000", help="comma-separated, e.g. 1k,10k,100k,10kx1000,1m")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    parser.add_argument("--gzip", action="store_true", help="write the run as run.trec.gz (gzip level 1)")
    args = parser.parse_args(argv)
    for size in args.sizes.split(","):
        generate(size, seed=args.seed, force=args.force, gzipped=args.gzip)


if __name__ == "__main__":
    main()
