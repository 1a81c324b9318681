"""``ragmetrics synth``: candidate queries from a corpus, written as an evaluation set (JSONL) with provenance and
the filters' flags. The generators and chunkers are those registered in :mod:`ragmetrics.synth.generators` and
:mod:`ragmetrics.synth.corpus`."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from ragmetrics.cli.inputs import output_paths
from ragmetrics.cli.options import whole_number
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.synth.base import DEFAULT_CATEGORIES
from ragmetrics.synth.corpus import CHUNKERS, Corpus, chunk_numbering, load_corpus
from ragmetrics.synth.filters import SECOND_RETRIEVERS, default_retrievers
from ragmetrics.synth.generators import GENERATORS, make_generator
from ragmetrics.synth.output import records, write_jsonl
from ragmetrics.synth.pipeline import shortfall, synthesize

_NAME = re.compile(r"^[\w-]+$")

WRITTEN_SUFFIXES = (".jsonl", ".json")
"""The names synth's evaluation set and chunks may take: what the loaders read as JSONL or a JSON list."""

DEFAULT_COUNT = 50
"""Candidates ``synth`` writes when neither ``--n`` nor counts in ``--categories`` say."""


class CategoryCounts(NamedTuple):
    counts: dict[str, int]
    shares_n: bool
    """Whether ``n`` was used: some category took a share of it (a name without a count, or ``default``)."""


def parse_categories(
    text: str | None, n: int, default: tuple[str, ...], *, option: str = "--categories", counts: bool = False
) -> CategoryCounts:
    """``factual=20,negative=5`` as given; names without counts (``factual,negative``, or none given: ``default``)
    share ``n`` evenly, the first ones taking the remainder. ``counts``: every name needs its count (a target).
    Errors name ``option``."""
    names: list[str] = []
    fixed: dict[str, int] = {}
    for part in text.split(",") if text else list(default):
        name, sep, count = part.strip().partition("=")
        if not _NAME.match(name):
            raise RagMetricsError(f"{option}: {part.strip()!r} is not a category name (e.g. factual=20)")
        if name in fixed or name in names:
            raise RagMetricsError(f"{option}: {name!r} given twice; expected each name once")
        if sep:
            if not count.strip().isdigit():
                raise RagMetricsError(f"{option}: {part.strip()!r}: expected a whole number >= 0 after '='")
            fixed[name] = int(count)
        elif counts:
            raise RagMetricsError(f"{option}: {part.strip()!r}: expected a count, e.g. {name}=20")
        else:
            names.append(name)
    if names:
        left = max(0, n - sum(fixed.values()))
        share, extra = divmod(left, len(names))
        for i, name in enumerate(names):
            fixed[name] = share + (i < extra)
    return CategoryCounts(fixed, shares_n=bool(names))


def _retrievers(spec: str, corpus: Corpus) -> list[tuple[str, Any]]:
    if spec in SECOND_RETRIEVERS:
        return default_retrievers(corpus, spec)
    from ragmetrics.retrieve import resolve  # noqa: PLC0415 (httpx and friends are loaded on use)

    return [*default_retrievers(corpus, "none"), (spec, resolve(spec))]


def cmd_synth(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    for option, path in (("--output", args.output), ("--chunks-out", args.chunks_out)):
        if path and Path(path).suffix.lower() not in WRITTEN_SUFFIXES:
            raise RagMetricsError(
                f"{option} {path}: synth writes JSONL records (or a JSON list): name the file *.jsonl or *.json "
                "(other names, a .gz among them, would hold JSONL that the readers take for another format)"
            )
    corpus = load_corpus(
        args.corpus, chunking=args.chunker, language=args.language, parent_separator=args.parent_separator
    )
    separator = (
        None if args.parent_separator or corpus.rechunked else chunk_numbering([d.doc_id for d in corpus.documents])
    )
    if separator is not None:
        err.write(
            f"ragmetrics: note: the corpus's ids number chunks of documents after {separator!r} "
            f"({', '.join(d.doc_id for d in corpus.documents[:2])}, ...): --parent-separator {separator} grades a "
            "query's sibling chunks (its document's other chunks) relevant too\n"
        )
    generator = make_generator(args.generator, corpus, model=args.model)
    default = tuple(getattr(generator, "categories", DEFAULT_CATEGORIES))
    categories, shares_n = parse_categories(args.categories, DEFAULT_COUNT if args.n is None else args.n, default)
    if not sum(categories.values()):  # only counts given can all be 0: --n is at least 1
        raise RagMetricsError(
            f"--categories {args.categories}: asks for no candidate (every count is 0); give a count of at least 1"
        )
    if args.n is not None and not shares_n:
        err.write(
            f"ragmetrics: warning: --n {args.n} not used: --categories gives each category its count "
            f"({sum(categories.values())} in all)\n"
        )
    if args.chunks_out and not corpus.rechunked:
        raise RagMetricsError(
            f"--chunks-out {args.chunks_out}: --chunker {args.chunker} writes no chunks (the set's ids are the "
            "corpus's own); give --chunker words:SIZE:OVERLAP, or drop --chunks-out"
        )
    chunks = args.chunks_out or str(Path(args.output).with_suffix("")) + ".chunks.jsonl"
    output_paths(
        args,
        {"--output": args.output, **({"--chunks-out": chunks} if corpus.rechunked else {})},
        positional=("corpus",),
    )
    second = "plain" if args.second_retriever is None else args.second_retriever
    retrievers = [] if args.no_retrieval_check else _retrievers(second, corpus)
    candidates = synthesize(corpus, generator, categories, seed=args.seed, retrievers=retrievers)
    if not candidates:
        raise RagMetricsError(
            f"{args.corpus}: no candidate could be written from its {len(corpus.chunks)} chunk(s) "
            "(too little text, or no term rare enough to ask about)"
        )
    write_jsonl(args.output, records(candidates, corpus))
    flagged = sum(bool(c.flags) for c in candidates)
    textless = len(corpus.documents) - len(corpus.chunks_of())
    err.write(
        f"ragmetrics: wrote {args.output}: {len(candidates)} candidate(s) from {len(corpus.chunks_of())} documents "
        f"({corpus.chunker}, {corpus.language}), {flagged} flagged for review"
        + (f"; {textless} document(s) with no text left out (a retriever still indexes them)" if textless else "")
        + "\n"
    )
    rejected: dict[str, list[Any]] = {}  # a model generator's slots no attempt could fill, by category
    for rejection in getattr(generator, "rejected", ()):
        rejected.setdefault(rejection.category, []).append(rejection)
    for category, (made, asked) in shortfall(candidates, categories).items():
        refused = rejected.get(category, [])
        why = (
            f"{len(refused)} slot(s) rejected by the generator; the last refusal: {refused[-1].reasons[-1]}"
            if refused and refused[-1].reasons
            else _chunks_ran_out(len(corpus.chunks), len(candidates))
        )
        err.write(f"ragmetrics: warning: {category}: {made} of the {asked} asked ({why})\n")
    if corpus.rechunked:
        write_jsonl(chunks, corpus.chunk_records())
        err.write(
            f"ragmetrics: wrote {chunks}: the corpus cut into its {len(corpus.chunks)} chunks (the relevant_docs are "
            "chunk ids: retrieve and evaluate over these chunks)\n"
        )
    return 0


def _chunks_ran_out(chunks: int, written: int) -> str:
    """Why a category got fewer queries than asked when no slot was refused: every chunk gives one query at most."""
    if written >= chunks:
        return f"the chunks ran out: one query a chunk at most, and each of the corpus's {chunks} chunks holds one"
    return (
        f"the chunks ran out: one query a chunk at most, and {written} of the corpus's {chunks} chunks hold one; "
        f"the generator found nothing to write in the other {chunks - written}"
    )


def synth_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("corpus", help="a BEIR corpus.jsonl, a JSONL of {id, text} objects, or a folder of .md/.txt files")
    p.add_argument(
        "-o", "--output", required=True, help="the evaluation set to write: *.jsonl (JSONL) or *.json (a JSON list)"
    )
    p.add_argument(
        "--generator",
        choices=list(GENERATORS),
        default="extractive",
        help="; ".join(f"{name}: {entry.help}" for name, entry in GENERATORS.items()),
    )
    p.add_argument("--model", help="a registered model's name (--generator model)")
    p.add_argument("--n", type=whole_number(1), help=f"candidates to write (default {DEFAULT_COUNT})")
    p.add_argument(
        "--categories",
        help="NAME=COUNT,... (e.g. factual=20,negative=5), or names sharing --n (default: the generator's categories)",
    )
    p.add_argument("--seed", type=int, default=0, help="the seed of the sampling and the generator (default 0)")
    p.add_argument(
        "--chunker",
        default="none",
        help="; ".join(f"{name}: {what}" for name, what in CHUNKERS.items()) + " (default none)",
    )
    p.add_argument(
        "--parent-separator",
        help="a corpus already chunked (--chunker none): a chunk's document is its id before the last SEPARATOR "
        "(e.g. _C for DEV_0_C1), its other chunks graded 1",
    )
    p.add_argument("--language", choices=["auto", "en", "zh"], default="auto", help="the corpus language")
    p.add_argument(
        "--second-retriever",
        help="the retriever that must also miss a query for it to be flagged: "
        + "; ".join(f"{name}: {what}" for name, what in SECOND_RETRIEVERS.items())
        + "; or a retriever spec (URL, module:attr) returning the chunk ids (default plain)",
    )
    p.add_argument("--no-retrieval-check", action="store_true", help="skip the retrieval filters")
    p.add_argument("--chunks-out", help="where to write the chunks when chunking (default OUTPUT.chunks.jsonl)")
    p.set_defaults(handler=cmd_synth)
