"""Write the files of docs/conventions.md's "Chunkings compared" example: SciFact's sample corpus chunked two ways
(windows of 128 words sharing 32, and of 512 words sharing 64), each chunking indexed by the built-in BM25 and run
on SciFact's queries (top 100 chunks), and where every chunk lies in its document.

    python scripts/make_chunk_runs.py [OUT_DIR]   # from a checkout, with the retrieve extra (bm25s)

writes ``chunks-128.csv`` and ``chunks-512.csv`` (``query_id, doc_id, score, text, source_doc``: the chunk's id,
``DOC#N@SIZE``, its text and document) and ``chunk-spans.tsv`` (``chunk_id, doc_id, start, end``) into ``OUT_DIR`` (default: the
current folder). ``tests/dashboard/test_chunkings.py`` builds its runs with :func:`chunk_runs`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset
from ragmetrics.retrieve import retrieve
from ragmetrics.retrieve.bm25 import BM25
from ragmetrics.synth.corpus import Document, make_corpus

SCIFACT = Path(__file__).resolve().parents[1] / "sample_runs" / "scifact"
CHUNKINGS = ("words:128:32", "words:512:64")
"""The two chunkings, as ``make_corpus`` takes them (``words:SIZE:OVERLAP``)."""
RUN_COLUMNS = ["query_id", "doc_id", "score", "text", "source_doc"]
SPAN_COLUMNS = ["chunk_id", "doc_id", "start", "end"]

Place = tuple[str, str, int, int]
"""Where a chunk lies: its id, its document's id, its first and past-the-last character."""


def scifact() -> Dataset:
    """The SciFact sample: qrels, queries and its corpus."""
    return load_dataset(
        SCIFACT / "qrels.tsv", queries=SCIFACT / "queries.jsonl", corpus=SCIFACT / "corpus.jsonl.gz", name="scifact"
    )


def chunk_runs(dataset: Dataset) -> tuple[list[Run], list[Place]]:
    """One BM25 run per chunking of ``dataset``'s documents (top 100 chunks, each row with its chunk's text and
    document, named ``chunks-SIZE``), and where every chunk of both chunkings lies in its document."""
    documents = [Document(str(r.doc_id), str(r.title or ""), str(r.text or "")) for r in dataset.documents.itertuples()]
    runs, places = [], []
    for spec in CHUNKINGS:
        size = spec.split(":")[1]
        corpus = make_corpus(documents, chunking=spec, language="en")
        ids = [f"{c.chunk_id}@{size}" for c in corpus.chunks]  # one chunk spans file serves both: ids of their own
        chunks = pd.DataFrame({"doc_id": ids, "title": "", "text": [c.text for c in corpus.chunks]})
        name = f"chunks-{size}"
        found = retrieve(dataset, BM25.from_documents(chunks, cache_dir=None), k=100, name=name, concurrency=1)
        if found.failed:
            raise RuntimeError(f"{name}: {len(found.failed)} queries failed")
        frame = found.run.frame
        frame["text"] = frame["doc_id"].map(dict(zip(chunks["doc_id"], chunks["text"])))
        frame["source_doc"] = frame["doc_id"].map({i: c.doc_id for i, c in zip(ids, corpus.chunks)})
        runs.append(Run.from_frame(frame, name=name))
        places += [(i, c.doc_id, c.start, c.end) for i, c in zip(ids, corpus.chunks)]
    return runs, places


def write(runs: list[Run], places: list[Place], folder: Path) -> list[Path]:
    """Each run as ``NAME.csv`` and the chunks' places as ``chunk-spans.tsv`` in ``folder``; the runs' paths."""
    paths = []
    for run in runs:
        path = folder / f"{run.name}.csv"
        run.frame[RUN_COLUMNS].to_csv(path, index=False)
        paths.append(path)
    pd.DataFrame(places, columns=SPAN_COLUMNS).to_csv(folder / "chunk-spans.tsv", sep="\t", index=False)
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    out.mkdir(parents=True, exist_ok=True)
    written = write(*chunk_runs(scifact()), out)
    print(f"wrote {', '.join(p.name for p in written)} and chunk-spans.tsv in {out}")
