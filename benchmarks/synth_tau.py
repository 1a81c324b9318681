"""Does a generated set rank retrievers as the real queries do? Kendall tau between two rankings of the same
retrievers by nDCG@10: on SciFact's real test queries and on an extractive set generated from SciFact's corpus.

Only the built-in BM25 can be run on generated queries here (the shared dense and hybrid runs were made on the
real queries, and dense encoding takes 10 to 25 minutes on 2 cores), so the retrievers compared are BM25 variants
(k1, b) and BM25 over unstemmed tokens with stopwords kept: the tau says whether the generated set orders lexical
systems as the real one does, not whether it orders different kinds of retriever correctly.

    python benchmarks/synth_tau.py [--data /work/shared/data/scifact] [--n 150] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ragmetrics import evaluate
from ragmetrics.io import load_dataset
from ragmetrics.retrieve import BM25, retrieve
from ragmetrics.synth.corpus import load_corpus
from ragmetrics.synth.extractive import ExtractiveGenerator
from ragmetrics.synth.filters import PlainBM25
from ragmetrics.synth.output import records, write_jsonl
from ragmetrics.synth.pipeline import synthesize

VARIANTS = [(1.2, 0.75), (0.9, 0.4), (2.0, 0.75), (1.2, 0.3), (0.6, 0.9), (1.6, 1.0)]


def scores(dataset, documents, plain: PlainBM25) -> dict[str, float]:
    runs = []
    for k1, b in VARIANTS:
        adapter = BM25.from_documents(documents, k1=k1, b=b, language="en")
        runs.append(retrieve(dataset, adapter, k=10, cache=False, concurrency=1, name=f"bm25 k1={k1} b={b}").run)

    def unstemmed(query: str, k: int) -> list[tuple[str, float]]:
        return [(h.doc_id, h.score) for h in plain.search(query, k, None)]

    runs.append(retrieve(dataset, unstemmed, k=10, cache=False, concurrency=1, name="plain bm25").run)
    means = evaluate(dataset, runs, ["ndcg@10"]).mean()["ndcg@10"]
    return {name: float(means[name]) for name in means.index}


def main() -> int:
    from scipy.stats import kendalltau

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/work/shared/data/scifact")
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = Path(args.data)
    real = load_dataset(data / "qrels.tsv", queries=data / "queries.jsonl", corpus=data / "corpus.jsonl")
    documents = real.documents
    corpus = load_corpus(data / "corpus.jsonl")
    share = args.n // 3
    mix = {"factual": args.n - 2 * share, "cloze": share, "summary": share}
    candidates = synthesize(corpus, ExtractiveGenerator(corpus), mix, seed=args.seed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "set.jsonl"
        write_jsonl(path, records(candidates, corpus))
        generated = load_dataset(path, corpus=data / "corpus.jsonl")
    plain = PlainBM25(corpus)
    on_real, on_generated = scores(real, documents, plain), scores(generated, documents, plain)
    names = list(on_real)
    tau, p = kendalltau([on_real[n] for n in names], [on_generated[n] for n in names])
    json.dump(
        {
            "queries": {"real": len(real), "generated": len(generated)},
            "ndcg@10": {n: {"real": round(on_real[n], 4), "generated": round(on_generated[n], 4)} for n in names},
            "kendall_tau": round(float(tau), 3),
            "p_value": round(float(p), 3),
        },
        sys.stdout,
        indent=2,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
