"""ragmetrics.synth: corpora in, candidate queries out (the extractive generator), as an evaluation set the loaders
read back; ``ragmetrics synth`` on the command line.

The corpora are the repository's samples of SciFact (English) and CMRC 2018 (Chinese, chunked ``DEV_<n>_C<m>``)
under ``sample_runs/``; SciFact is cut to a seeded sample of 2,000 documents to keep the tests quick.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics import Dataset, Run, evaluate
from ragmetrics.cli import main
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.scripts import jieba_word_tags
from ragmetrics.io import load_dataset
from ragmetrics.retrieve import retrieve
from ragmetrics.synth.check import recorded_chunkers
from ragmetrics.synth.corpus import Document, load_corpus, make_corpus, read_documents, sample_sources
from ragmetrics.synth.extractive import NOT_CONTENT_TAGS, ExtractiveGenerator, sentences
from ragmetrics.synth.generators import GENERATORS, make_generator
from ragmetrics.synth.output import records, write_jsonl
from ragmetrics.synth.pipeline import synthesize

pytest.importorskip("bm25s")
pytest.importorskip("jieba")

SAMPLES = Path(__file__).parent.parent / "sample_runs"
MIX = {"factual": 8, "cloze": 4, "summary": 4, "negative": 4}


@pytest.fixture(scope="module")
def scifact():
    documents = read_documents(SAMPLES / "scifact" / "corpus.jsonl.gz")
    sample = random.Random(0).sample(documents, 2000)
    return make_corpus(sample, chunking="words:120:20")


@pytest.fixture(scope="module")
def cmrc():
    return load_corpus(SAMPLES / "cmrc2018" / "corpus.jsonl.gz", parent_separator="_C")


@pytest.fixture(scope="module")
def generators(scifact, cmrc):
    return {"scifact": ExtractiveGenerator(scifact), "cmrc": ExtractiveGenerator(cmrc)}


def _candidates(corpus, generator, categories, seed=0):
    return synthesize(corpus, generator, categories, seed=seed)


@pytest.mark.parametrize("name", ["scifact", "cmrc"])
def test_requested_counts_each_with_its_source_in_its_qrels(name, request, generators):
    corpus = request.getfixturevalue(name)
    found = _candidates(corpus, generators[name], MIX)
    assert Counter(c.category for c in found) == MIX
    siblings = {doc: {c.chunk_id for c in chunks} for doc, chunks in corpus.chunks_of().items()}
    rows = records(found, corpus)
    for candidate, row in zip(found, rows):
        assert {"generator", "prompt_version", "seed", "source_span", "chunker"} <= set(row["provenance"])
        assert row["provenance"]["generator"] == "extractive"
        if candidate.category == "negative":
            assert row["relevant_docs"] == {}
            continue
        assert row["relevant_docs"][candidate.source.chunk_id] == 2
        assert set(row["relevant_docs"]) == siblings[candidate.source.doc_id]
        assert all(g == 1 for chunk, g in row["relevant_docs"].items() if chunk != candidate.source.chunk_id)
        record, place = row["provenance"]["source_span"].rsplit("[", 1)
        start, end = (int(x) for x in place.rstrip("]").split(":"))
        assert candidate.source.start <= start < end <= candidate.source.end
        # the span is of a corpus record (was: CMRC's parent id with the chunk's own offsets: no such record)
        text = next(d.text for d in corpus.documents if d.doc_id == record)
        assert text[start:end] in candidate.source.text and text[start:end].strip()
    # graded judgments beyond the source chunk exist (precision is not capped at 1/k by construction)
    assert any(len(r["relevant_docs"]) > 1 for r in rows)
    languages = {c.source.language for c in found}
    assert languages == {"en" if name == "scifact" else "zh"}


def test_a_document_stored_twice_is_relevant_twice():
    """Was: the copy of the source document was never judged, so a retriever returning it was scored wrong."""
    texts = ["The mitochondria is the powerhouse of the cell, where respiration makes most of its energy.",
             "Quantum entanglement links particles across distances that light could not cross in time."]  # fmt: skip
    documents = [Document(f"d{i}{copy}", "", t) for i, t in enumerate(texts) for copy in ("", "-copy")]
    corpus = make_corpus(documents, language="en")
    found = _candidates(corpus, ExtractiveGenerator(corpus), {"factual": 2})
    for row in records(found, corpus):
        source = row["provenance"]["chunk_id"].removesuffix("-copy")
        assert row["relevant_docs"] == {source: 2, f"{source}-copy": 2}


def test_a_cloze_blanks_a_term_its_context_does_not_repeat():
    """Was: "Fill in the blank: Researchers measured ____ levels in the valley and zyxqor", answer zyxqor (as
    "... (1966 to ____ 2010), Embase (1980 to July 2010)", answer July, on SciFact)."""
    common = "Researchers measured levels in the valley and they rose sharply after the storm passed quickly."
    documents = [Document(f"f{i}", "", common) for i in range(20)] + [Document("p", "", "A plimbus was seen.")]
    target = "Researchers measured zyxqor levels in the valley and zyxqor rose sharply after the plimbus storm passed."
    corpus = make_corpus([*documents, Document("t", "", target)], language="en")
    source = next(c for c in corpus.chunks if c.doc_id == "t")
    cloze = ExtractiveGenerator(corpus)._one("cloze", source, [source], random.Random(0), 0)
    assert cloze is not None and cloze.expected_answer == "plimbus" and "zyxqor" in cloze.query


@pytest.mark.parametrize("name", ["scifact", "cmrc"])
def test_a_cloze_never_shows_its_own_answer(name, request, generators):
    found = _candidates(request.getfixturevalue(name), generators[name], {"cloze": 40}, seed=3)
    assert len(found) >= 30
    for candidate in found:
        shown = candidate.query.split(":", 1)[-1] if name == "scifact" else candidate.query
        assert candidate.expected_answer.casefold() not in shown.casefold(), (
            candidate.query,
            candidate.expected_answer,
        )


@pytest.mark.parametrize("name", ["scifact", "cmrc"])
def test_deterministic_for_a_seed(name, request, generators):
    corpus = request.getfixturevalue(name)
    first = _candidates(corpus, generators[name], MIX, seed=3)
    again = _candidates(corpus, generators[name], MIX, seed=3)
    other = _candidates(corpus, generators[name], MIX, seed=4)
    assert [(c.query, c.expected_answer, c.source.chunk_id) for c in first] == [
        (c.query, c.expected_answer, c.source.chunk_id) for c in again
    ]
    assert [c.query for c in first] != [c.query for c in other]
    # the ids name the set: the same set written again keeps them, another seed's set shares none
    ids = [[r["query_id"] for r in records(found, corpus)] for found in (first, again, other)]
    assert ids[0] == ids[1] and not set(ids[0]) & set(ids[2])


def test_sources_are_sampled_across_documents(scifact, cmrc):
    for corpus in (scifact, cmrc):
        sources = sample_sources(corpus, 60, seed=0)
        assert len(sources) == 60
        assert len({s.doc_id for s in sources}) == 60  # one chunk per document while documents last
        first = corpus.documents[0].doc_id
        assert sum(s.doc_id == first for s in sources) <= 1
    # fewer documents than sources: every document gives one before any gives a second
    small = make_corpus([Document(f"d{i}", "", "word " * 500) for i in range(3)], chunking="words:100:0")
    taken = sample_sources(small, 7, seed=1)
    assert Counter(s.doc_id for s in taken[:3]) == Counter({"d0": 1, "d1": 1, "d2": 1})
    assert len(taken) == 7


def test_the_loaders_read_the_set_back(tmp_path, scifact, generators):
    found = _candidates(scifact, generators["scifact"], MIX)
    rows = records(found, scifact)
    path = tmp_path / "set.jsonl"
    write_jsonl(path, rows)
    dataset = load_dataset(path)
    queries = dataset.queries.set_index("query_id")
    assert len(queries) == len(rows)
    for row in rows:
        got = queries.loc[row["query_id"]]
        assert got["query"] == row["query"]
        assert got["category"] == row["category"]
        assert got["difficulty"] == row["difficulty"]
        assert list(got["expected_keywords"]) == row["expected_keywords"]
        # a map in an extra column is kept as its JSON text (the loader's convention for extra keys)
        assert json.loads(got["provenance"]) == row["provenance"]
        assert list(got["flags"]) == row["flags"]
    qrels = {(q, d): r for q, d, r in dataset.qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False)}
    expected = {(r["query_id"], d): g for r in rows for d, g in r["relevant_docs"].items()}
    assert qrels == expected


def test_bm25_on_a_generated_set_ranks_above_a_random_run(tmp_path, scifact, generators):
    found = _candidates(scifact, generators["scifact"], {"factual": 60, "cloze": 20, "summary": 20})
    assert len(found) == 100
    evalset, chunks = tmp_path / "set.jsonl", tmp_path / "chunks.jsonl"
    write_jsonl(evalset, records(found, scifact))
    write_jsonl(chunks, scifact.chunk_records())
    dataset = load_dataset(evalset, corpus=chunks)
    bm25 = retrieve(dataset, "bm25", k=10, cache=False, concurrency=1).run
    rng = random.Random(0)
    ids = [c.chunk_id for c in scifact.chunks]
    noise = Run.from_lists({q: rng.sample(ids, 10) for q in dataset.queries["query_id"]}, name="random")
    means = evaluate(dataset, [bm25, noise], ["ndcg@10"]).mean()["ndcg@10"]
    print(f"generated SciFact set: bm25 nDCG@10 {means[bm25.name]:.3f}, random {means['random']:.3f}")
    assert means[bm25.name] > 0.5
    assert means["random"] < 0.05


def test_the_extractive_generator_says_what_it_cannot_write(scifact, generators):
    with pytest.raises(RagMetricsError, match=r"reasoning.*need a model"):
        list(generators["scifact"].generate(sample_sources(scifact, 5, seed=0), {"reasoning": 2}, seed=0))


def test_the_registry(scifact):
    assert set(GENERATORS) >= {"extractive", "model"}
    assert make_generator("extractive", scifact).name == "extractive"
    with pytest.raises(RagMetricsError, match="needs a registered model"):
        make_generator("model", scifact)
    # without the model room this says so; with it, the unknown model is named (never a traceback)
    with pytest.raises(RagMetricsError, match=r"no-such-model-xyz|model generator is not available"):
        make_generator("model", scifact, model="no-such-model-xyz")
    with pytest.raises(RagMetricsError, match="drop --model"):
        make_generator("extractive", scifact, model="m")
    with pytest.raises(RagMetricsError, match="expected one of extractive, model"):
        make_generator("nope", scifact)


def test_chunkers_keep_exact_spans():
    text = "Alpha beta gamma. 数据集 里有 中文。 " + " ".join(f"w{i}" for i in range(50))
    corpus = make_corpus([Document("d", "", text)], chunking="words:10:3", language="en")
    assert corpus.chunker == "words:10:3"
    for chunk in corpus.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.chunk_id.startswith("d#")
    assert corpus.chunks[0].text.startswith("Alpha") and corpus.chunks[-1].text.endswith("w49")
    with pytest.raises(RagMetricsError, match="SIZE"):
        make_corpus([Document("d", "", text)], chunking="words:5:5")
    assert sentences("One sentence here. Two follows! 第三句。第四句") == [(0, 18), (19, 31), (32, 36), (36, 39)]


def test_an_expected_answer_is_a_whole_sentence_where_the_chunk_holds_one():
    """Was: a sentence the chunk's edge cut ("... the Thirty Years War in") could be the expected answer while the
    chunk held a whole one; a fragment is now taken only from a chunk that holds no whole sentence."""
    texts = {
        "d1": "The mitochondria is the powerhouse of the cell. Photosynthesis happens in chloroplasts of plant leaves.",
        "d3": "The Treaty of Westphalia ended the Thirty Years War in 1648. It established state sovereignty principles.",
    }
    corpus = make_corpus([Document(d, "", t) for d, t in texts.items()], chunking="words:10:2", language="en")
    generator = ExtractiveGenerator(corpus)
    split = {
        c.chunk_id: [[c.text[a:b] for a, b in part] for part in generator.whole_sentences(c)] for c in corpus.chunks
    }
    assert split["d1#0"] == [["The mitochondria is the powerhouse of the cell."], ["Photosynthesis happens"]]
    # a chunk keeps the period after its last word (it used to end at the word, the sentence then read as cut)
    assert split["d1#1"] == [["Photosynthesis happens in chloroplasts of plant leaves."], []]
    assert split["d3#0"] == [[], ["The Treaty of Westphalia ended the Thirty Years War in"]]
    assert split["d3#1"] == [["It established state sovereignty principles."], ["War in 1648."]]
    # grouped under a parent id, a record's sentences are read in that record, not in the parent's text
    grouped = make_corpus([Document("p1", "", "A long opening line without any end at all"),
                           Document("p1_C2", "", "The first sentence is here. The second one ends it.")],
                          language="en", parent_separator="_C")  # fmt: skip
    part = next(c for c in grouped.chunks if c.chunk_id == "p1_C2")
    assert ExtractiveGenerator(grouped).whole_sentences(part) == ([(0, 27), (28, 51)], [])
    found = {c.chunk_id: generator._salient(c) for c in corpus.chunks}
    first = next(c for c in corpus.chunks if c.chunk_id == "d1#0")
    assert found["d1#0"] is not None and first.text[found["d1#0"][0] : found["d1#0"][1]].endswith("cell.")


def test_a_folder_file_that_is_not_text_is_refused_with_its_name_and_line(tmp_path):
    """A .txt of other bytes (a binary renamed, a Latin-1 export) is refused where it breaks, not read as U+FFFD;
    UTF-16 with its byte-order mark is text."""
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# Alpha\n\nplain text\n", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("Wide text\n", encoding="utf-16")
    assert [(d.doc_id, d.title, d.text) for d in read_documents(folder)] == [
        ("a.md", "Alpha", "# Alpha\n\nplain text\n"),
        ("sub/b.txt", "b", "Wide text\n"),
    ]
    (folder / "sub" / "c.txt").write_bytes(b"line one\ncaf\xe9 au lait\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["synth", str(folder), "-o", str(tmp_path / "set.jsonl")], out, err) == 2
    assert err.getvalue() == (
        f"ragmetrics: error: {folder / 'sub' / 'c.txt'}:2: expected UTF-8 text, found byte 0xe9\n"
    )
    assert not (tmp_path / "set.jsonl").exists()


def test_cli_synth_from_a_folder_and_from_jsonl(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    rng = random.Random(0)
    vocabulary = [f"term{i}" for i in range(3000)]
    for n in range(12):
        body = ". ".join(
            f"Sentence {k} of this topic mentions {' '.join(rng.sample(vocabulary, 12))}" for k in range(12)
        )
        (folder / f"doc{n:02d}.md").write_text(f"# Topic {n}\n\n{body}.\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "set.jsonl"
    argv = ["synth", str(folder), "-o", str(target), "--categories", "factual=6,negative=2", "--chunker", "words:60:10"]
    assert main(argv, out, err) == 0, err.getvalue()
    assert "8 candidate(s)" in err.getvalue()
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert Counter(r["category"] for r in rows) == {"factual": 6, "negative": 2}
    chunks = tmp_path / "set.chunks.jsonl"
    chunk_ids = {json.loads(line)["_id"] for line in chunks.read_text(encoding="utf-8").splitlines()}
    assert all(set(r["relevant_docs"]) <= chunk_ids for r in rows)
    assert all(r["provenance"]["chunker"] == "words:60:10" for r in rows)
    # checked against the same folder, the corpus is chunked as the provenance records: nothing is missing
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(target), "--corpus", str(folder)], out, err) == 0, out.getvalue()
    assert "the corpus chunked with words:60:10, as the set's provenance records" in err.getvalue()
    assert "freshness: ok" in out.getvalue() and "missing:" not in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(target), "--corpus", str(folder), "--chunker", "none"], out, err) == 1
    assert "--chunker none is not the chunker the set's provenance records (words:60:10)" in err.getvalue()
    assert out.getvalue().count("missing: query") == 6 and "freshness: ok" not in out.getvalue()  # negatives judge none

    jsonl = tmp_path / "kb.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps({"content": p.read_text(encoding="utf-8")}) for p in sorted(folder.iterdir())),
        encoding="utf-8",
    )
    target = tmp_path / "from-jsonl.jsonl"
    assert main(["synth", str(jsonl), "-o", str(target), "--n", "4", "--categories", "factual"], out, err) == 0
    assert not (tmp_path / "from-jsonl.chunks.jsonl").exists()  # taken as given: the corpus's own ids
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4 and all(next(iter(r["relevant_docs"])).startswith("line") for r in rows)

    err = io.StringIO()
    assert main(["synth", str(jsonl), "-o", str(target), "--categories", "procedural=3"], out, err) == 2
    assert "need a model" in err.getvalue()

    # its outputs never replace its corpus or each other (an error before anything is written)
    before = jsonl.read_bytes()
    err = io.StringIO()
    assert main(["synth", str(jsonl), "-o", str(jsonl), "--n", "4", "--no-retrieval-check"], out, err) == 2
    assert (
        f"--output {jsonl}: is also read as the argument corpus; writing it would destroy that input" in err.getvalue()
    )
    assert jsonl.read_bytes() == before
    err, both = io.StringIO(), tmp_path / "both.jsonl"
    argv = ["synth", str(folder), "-o", str(both), "--chunker", "words:60:10", "--chunks-out", str(both), "--n", "2"]
    assert main(argv, out, err) == 2 and not both.exists()
    assert f"--chunks-out {both}: is also written as --output; one would replace the other" in err.getvalue()


def test_cli_synth_on_stopwords_only_says_bm25_has_nothing_to_index(tmp_path):
    """Was: the retrieval filters' BM25 ended in bm25s' traceback (max() of an empty vocabulary)."""
    corpus = _file(tmp_path, '{"id": "a", "text": "the of and to"}\n')
    out, err = io.StringIO(), io.StringIO()
    assert main(["synth", str(corpus), "-o", str(tmp_path / "out.jsonl")], out, err) == 2
    assert "the corpus holds no word to index" in err.getvalue() and "Traceback" not in err.getvalue()


@pytest.mark.parametrize(
    ("make", "extra", "message"),
    [
        (
            lambda p: p / "absent.jsonl",
            [],
            "absent.jsonl: expected an existing file or folder, found nothing at that path",
        ),
        (lambda p: p, [], "expected a corpus file, or a folder of .md or .txt files, found none in the folder"),
        (lambda p: _file(p, '{"id": "a", "text": "x"}\n{not json\n'), [], "corpus.jsonl:2: expected valid JSON"),
        (
            lambda p: _file(p, '{"id": "a", "body": "x"}\n{"name": "b"}\n'),
            [],
            "corpus.jsonl:2: expected a document id (one of _id, id, doc_id, docid), found keys ['name']",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--chunker", "words:5:9"],
            "chunker 'words:5:9': OVERLAP 9 is not below SIZE 5; expected words:SIZE:OVERLAP, SIZE >= 1, 0 <= OVERLAP",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--chunker", "words:abc"],
            "chunker 'words:abc': 'abc' is not a whole number; expected words:SIZE:OVERLAP",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--chunker", "words:5:1:3"],
            "chunker 'words:5:1:3': 3 numbers given; expected words:SIZE:OVERLAP",
        ),
        (lambda p: _file(p, '{"id": "a", "text": "some words"}\n'), ["--chunker", "pages"], "expected one of none"),
        (lambda p: _file(p, '{"id": "a", "text": "some words"}\n'), ["--categories", "factual=x"], "a whole number"),
        (lambda p: _file(p, '{"id": "a", "text": "an ox"}\n'), [], "no candidate could be written"),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--categories", "factual=0"],
            "--categories factual=0: asks for no candidate (every count is 0); give a count of at least 1",
        ),
        (lambda p: _file(p, '{"id": "a", "text": " "}\n'), [], "corpus.jsonl: no document has a text to write"),
        # options that would be ignored (was: accepted and ignored, a file named by --chunks-out never written)
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--categories", "factual,factual", "--n", "4"],
            "--categories: 'factual' given twice; expected each name once",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--categories", "factual=3,cloze=1,factual=5"],
            "--categories: 'factual' given twice",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--chunks-out", "chunks.jsonl"],
            "--chunks-out chunks.jsonl: read only with --chunker other than none (",
        ),
        (
            lambda p: _file(p, '{"id": "a", "text": "some words"}\n'),
            ["--second-retriever", "variant"],
            "--second-retriever variant: read only without --no-retrieval-check (the retrieval filters "
            "--no-retrieval-check turns off); leave out --no-retrieval-check, or drop --second-retriever",
        ),
        (
            lambda p: _file(p, '{"id": "a_1", "text": "some words here"}\n'),
            ["--parent-separator", "_C"],
            "parent separator '_C': no document id holds it (['a_1'])",
        ),
    ],
)
def test_cli_synth_bad_inputs_are_one_line(tmp_path, make, extra, message):
    out, err = io.StringIO(), io.StringIO()
    corpus = make(tmp_path)
    code = main(["synth", str(corpus), "-o", str(tmp_path / "out.jsonl"), "--no-retrieval-check", *extra], out, err)
    assert code == 2
    assert message in err.getvalue()
    assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()


def _file(folder: Path, text: str) -> Path:
    path = folder / "corpus.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_chunker_a_set_records_is_read_back_as_its_spec():
    """The provenance states the chunker's name; ``dataset check`` reads the spec in it (was: the stated name of a
    grouped corpus, "none (documents grouped by ...)", was refused as a chunker)."""

    def made_with(*names: str) -> Dataset:
        queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(len(names))], "query": ["x"] * len(names),
                                "provenance": [json.dumps({"chunker": n}) for n in names]})  # fmt: skip
        qrels = pd.DataFrame({"query_id": ["q0"], "doc_id": ["d"], "relevance": [1]})
        return Dataset.from_frames(qrels, queries)

    assert recorded_chunkers(made_with("words:200:50", "words:200:50")) == ["words:200:50"]
    assert recorded_chunkers(made_with("none (documents grouped by the last '_C' of their ids)")) == ["none"]
    assert recorded_chunkers(made_with("none", "words:60:10")) == ["none", "words:60:10"]


def test_cli_synth_on_a_chinese_corpus_says_nothing_of_jieba_s_dictionary(tmp_path):
    """jieba logs "Building prefix dict ... Prefix dict has been built successfully" to stderr on its first cut;
    ``ragmetrics synth`` on Chinese text (a fresh process, as a user runs it) prints only its own lines."""
    target = tmp_path / "zh.jsonl"
    argv = [sys.executable, "-m", "ragmetrics", "synth", str(SAMPLES / "cmrc2018" / "corpus.jsonl.gz"), "-o",
            str(target), "--categories", "factual=3", "--parent-separator", "_C"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "3 candidate(s)" in done.stderr
    assert "prefix dict" not in done.stderr.lower() and "Loading model" not in done.stderr, done.stderr


def test_synth_says_when_the_corpus_s_ids_number_chunks_and_no_parent_separator_is_given(tmp_path):
    """Was: synth on CMRC's chunks without --parent-separator wrote "from 3651 documents", each chunk its own
    document and its siblings not relevant, with no word. A plain id with a dash or an underscore (FAQ-11) is no
    chunk."""
    from ragmetrics.synth.corpus import chunk_numbering

    assert chunk_numbering(["DEV_0_C0", "DEV_0_C1", "DEV_1_C0"]) == "_C"
    assert chunk_numbering(["a#0", "a#1", "b#0", "c"]) == "#"
    assert chunk_numbering(["FAQ-01", "FAQ-02", "PRICE-01"]) is None
    assert chunk_numbering(["DEV_0_C0", "DEV_1_C0", "DEV_2_C0"]) is None  # one chunk each: nothing to group
    text = "The study of zyx{d} shows that q{c}w{d} compounds alter r{c}v{d} rates in several animal species."
    documents = [{"id": f"D{d}_C{c}", "text": text.format(d=d, c=c)} for d in range(10) for c in range(3)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in documents))
    argv = ["synth", str(tmp_path / "corpus.jsonl"), "-o", str(tmp_path / "set.jsonl"), "--categories", "factual=2",
            "--no-retrieval-check"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    assert (
        "ragmetrics: note: the corpus's ids number chunks of documents after '_C' (D0_C0, D0_C1, ...): "
        "--parent-separator _C grades a query's sibling chunks" in err.getvalue()
    ), err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--parent-separator", "_C"], out, err) == 0, err.getvalue()
    assert "--parent-separator" not in err.getvalue()


def test_cli_synth_writes_only_what_its_name_says_it_holds(tmp_path):
    """Was: ``-o set.csv``, ``set.trec`` or ``set.jsonl.gz`` were written as plain JSONL, which the loaders then read
    (and refused) as a CSV, TREC qrels or a gzip stream; ``-o set.json`` was JSONL too."""
    corpus = str(SAMPLES / "scifact" / "corpus.jsonl.gz")
    base = ["synth", corpus, "--n", "2", "--no-retrieval-check"]
    for name in ("set.csv", "set.trec", "set.jsonl.gz"):
        out, err = io.StringIO(), io.StringIO()
        assert main([*base, "-o", str(tmp_path / name)], out, err) == 2
        assert f"--output {tmp_path / name}: synth writes JSONL records (or a JSON list)" in err.getvalue()
        assert not (tmp_path / name).exists()
    out, err = io.StringIO(), io.StringIO()
    assert main([*base, "-o", str(tmp_path / "set.json")], out, err) == 0, err.getvalue()
    written = json.loads((tmp_path / "set.json").read_text(encoding="utf-8"))
    assert isinstance(written, list) and len(written) == 2
    assert load_dataset(tmp_path / "set.json").queries_table.num_rows == 2
    assert not list(tmp_path.glob(".*partial*"))


def test_synth_s_output_is_written_through_no_planted_link(tmp_path):
    """Was: written through ``.NAME.partial`` (a name anyone could guess), whatever stood there: a symlink planted
    under it had its target overwritten and the output became a link to it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for planted in (tmp_path / ".set.partial.jsonl", tmp_path / ".set.jsonl.partial"):
        planted.symlink_to(victim)
    write_jsonl(tmp_path / "set.jsonl", [{"query": "a"}])
    assert victim.read_text() == "keep me\n"
    assert not (tmp_path / "set.jsonl").is_symlink() and json.loads((tmp_path / "set.jsonl").read_text()) == {
        "query": "a"
    }


def test_cli_synth_warns_of_repeated_ids_and_a_language_the_corpus_is_not_in(tmp_path):
    """Was: a document id given twice was read once in silence, and ``--language en`` on a Chinese corpus wrote
    whole clauses as keywords without a word."""
    lines = [{"id": "a", "text": "Refunds are paid within thirty days of the request."},
             {"id": "a", "text": "Another text under the same id."},
             {"id": "b", "text": "Passwords are reset from the account page by email."}]  # fmt: skip
    corpus = _file(tmp_path, "".join(json.dumps(line) + "\n" for line in lines))
    out, err = io.StringIO(), io.StringIO()
    argv = ["synth", str(corpus), "-o", str(tmp_path / "out.jsonl"), "--no-retrieval-check", "--n", "2"]
    assert main([*argv, "--categories", "factual"], out, err) == 0, err.getvalue()
    assert f"{corpus}: 1 line(s) repeat a document id of an earlier line; the first of each is read" in err.getvalue()
    chinese = tmp_path / "zh"
    chinese.mkdir()
    zh = _file(
        chinese,
        json.dumps({"id": "c", "text": "如果原手机号已经停用，请携带身份证到营业厅办理更换手续。"}, ensure_ascii=False)
        + "\n",
    )
    err = io.StringIO()
    main(["synth", str(zh), "-o", str(tmp_path / "zh-out.jsonl"), "--no-retrieval-check", "--language", "en",
          "--categories", "factual=1"], io.StringIO(), err)  # fmt: skip
    assert "language en: the corpus reads as Chinese" in err.getvalue(), err.getvalue()


def test_chinese_cloze_context_is_whole_words_short_of_a_copy(generators):
    """Was: six characters each side of the blank, cutting words ("乐部（FC ____"), and a longer context would be
    flagged as copying its source (12 consecutive characters)."""
    from ragmetrics.synth.extractive import CLOZE_CONTEXT_CHARACTERS, _word_spans, _words_after, _words_before

    text = "喀山红宝石足球俱乐部（FC Rubin Kazan）是俄罗斯的职业足球会，位于鞑靼斯坦共和国首府喀山。"
    blank = text.index("俄罗斯")
    before, after = _words_before(text, 0, blank), _words_after(text, blank + 3, len(text))
    starts = {a for a, _ in _word_spans(text[:blank])}
    ends = {blank + 3 + b for _, b in _word_spans(text[blank + 3 :])}
    assert text[:blank].endswith(before) and blank - len(before) in starts
    assert text[blank + 3 :].startswith(after) and blank + 3 + len(after) in ends
    assert 0 < len(before) <= CLOZE_CONTEXT_CHARACTERS and 0 < len(after) <= CLOZE_CONTEXT_CHARACTERS


def test_a_chinese_cloze_s_context_starts_and_ends_on_whole_words():
    """Was: "填空：器 App（如 ____ Authenticator": jieba cuts 身份验证器 as 身份验证 + 器, and the context began with the
    lone 器; a lone ideograph joined to one outside the context is left out at either end (one word is always kept)."""
    from ragmetrics.synth.extractive import _words_after, _words_before

    text = "请在手机上安装身份验证器 App（如 Google Authenticator）后扫描二维码。"
    assert _words_before(text, 0, text.index("Google")) == "App（如 "
    after = "开发的战国无双系列的正统第三续作。"
    assert _words_after(after, 0, len(after)) == "开发的战国无双系列"  # not up to the 的 of 的正统
    assert _words_before("验证器", 2, 3) == "器"  # the only word: kept


def test_an_english_cloze_blank_keeps_the_source_s_joins():
    """Was: "Fill in the blank: ____ -factor login asks for a code" for Two-factor: the blank stands where its term
    stood, joined to what the source joins it to."""
    common = "Login asks for a code from an app after the password and the account stays safe from attackers."
    documents = [Document(f"f{i}", "", common) for i in range(20)]
    target = "Login asks for a zorblax-factor code from an app after the password is typed."
    corpus = make_corpus([*documents, Document("t", "", target)], language="en")
    source = next(c for c in corpus.chunks if c.doc_id == "t")
    cloze = ExtractiveGenerator(corpus)._one("cloze", source, [source], random.Random(0), 0)
    assert cloze is not None and cloze.expected_answer == "zorblax"
    assert "for a ____-factor code" in cloze.query, cloze.query


def test_a_cloze_s_context_leaves_no_punctuation_loose_at_its_ends(cmrc, generators):
    """Was: "填空：，第一子、第二子都____" (a comma the cut left first) and "《____ 2010》（" (an opening mark last)."""
    import unicodedata

    for candidate in _candidates(cmrc, generators["cmrc"], {"cloze": 40}, seed=3):
        shown = candidate.query.split("：", 1)[-1]
        assert unicodedata.category(shown[0]) not in ("Po", "Pe", "Pf"), candidate.query
        assert unicodedata.category(shown[-1]) not in ("Po", "Ps", "Pi"), candidate.query


def test_chinese_cloze_queries_are_not_flagged_as_copies(cmrc, generators):
    found = _candidates(cmrc, generators["cmrc"], {"cloze": 20})
    assert len(found) == 20 and not [c.flags for c in found if any("copies the source" in f for f in c.flags)]


def test_chinese_keywords_are_no_function_words(cmrc, generators):
    """Was: jieba's every word of two characters could be a keyword, function words included (因为, 这些, 我们), and
    a negative query asked about two of them."""
    import bm25s.stopwords

    from ragmetrics.synth.extractive import stopwords, tokenize

    sentence = "因为这些问题不是一般的问题，所以我们需要研究深度学习模型的泛化能力。"
    assert [t.key for t in tokenize(sentence, "zh", stopwords())] == ["研究", "深度", "学习", "模型", "泛化", "能力"]
    function_words = set(bm25s.stopwords.STOPWORDS_CHINESE)
    found = _candidates(cmrc, generators["cmrc"], {"factual": 20, "negative": 5})
    used = {keyword for c in found for keyword in c.expected_keywords}
    assert used and not used & function_words, sorted(used & function_words)
    tags = jieba_word_tags()
    assert not {word for word in used if tags.get(word) in NOT_CONTENT_TAGS}, used


@pytest.mark.parametrize(
    ("text", "left_out", "kept"),
    [
        (
            "但是早期的涂鸦却成了新一批的艺术作品。",
            {"一批", "却成"},
            ["早期", "涂鸦", "艺术作品"],
        ),  # a numeral; 却 run in
        ("香港得第四名，得150,000美元。", {"第四名"}, ["香港"]),  # an ordinal
        (
            "萨克斯-瓦福效应，以雷纳·库尔特·萨克斯和亚瑟",
            {"以雷纳"},
            ["萨克斯", "瓦福", "效应", "库尔特", "萨克斯", "亚瑟"],
        ),
        ("现在所剩下的母树存于增城市挂绿广场", {"存于"}, ["剩下", "母树", "增城市", "挂绿", "广场"]),
        (
            '<br clear="all">凤凰队无法参加亚足联冠军杯',
            {"clear", "all"},
            ["凤凰", "参加", "亚足联", "冠军杯"],
        ),  # markup a corpus kept
    ],
)
def test_chinese_keywords_name_something(text, left_out, kept):
    """Was: 一批 and 第四名 (a numeral, an ordinal), and words jieba's HMM made up by running a function word into a
    name (以雷纳 of 以雷纳·库尔特) or a verb (存于, 却成), were keywords of CMRC's factual and negative queries; the
    names jieba's HMM finds (秦升, 东戴琳) stay."""
    from ragmetrics.synth.extractive import stopwords, tokenize

    terms = [t.key for t in tokenize(text, "zh", stopwords())]
    assert terms == kept and not set(terms) & left_out, terms
    assert {"秦升", "东戴琳"} <= {t.key for t in tokenize("即“南秦升、北周挺、东戴琳、西柯钊”。", "zh", stopwords())}


def test_a_chunk_after_a_heading_or_wide_blanks_begins_a_sentence():
    """Was: the sentence before a chunk was looked for in the 8 characters before it, so a chunk after a heading
    line, or after a period and more than seven blanks, took its first sentence for cut; and a chunk ending at a
    paragraph's end took its last one for cut. A lone line break only wraps a sentence (a hard-wrapped text file)."""
    from ragmetrics.synth.extractive import _begins_sentence, _ends_sentence

    text = "# Results\nThe model improves recall. It does.            Then a third\none\n\nNext\n## More\nEnd"
    assert _begins_sentence(text, text.index("The model"))  # after a Markdown heading's line
    assert _begins_sentence(text, text.index("Then a third"))  # a period, then twelve blanks
    assert _begins_sentence(text, text.index("Next"))  # after a blank line
    assert not _begins_sentence(text, text.index("model"))  # inside a sentence
    assert not _begins_sentence(text, text.index("one\n"))  # a wrapped line goes on with its sentence
    assert _ends_sentence(text, text.index(" It does"))  # after the period
    assert _ends_sentence(text, text.index("\n\nNext"))  # a blank line follows
    assert _ends_sentence(text, text.index("\n## More"))  # a heading follows
    assert not _ends_sentence(text, text.index("\none"))  # a wrapped line: the sentence goes on
    assert not _ends_sentence(text, text.index(" a third"))
    assert _ends_sentence(text, len(text)) and _begins_sentence(text, 0)


def test_markup_is_no_term_and_a_comparison_is_text():
    from ragmetrics.synth.extractive import stopwords, tokenize

    def terms(text):
        return [t.key for t in tokenize(text, "en", stopwords())]

    assert terms('<p class="lead">Ribosome</p><!-- note section --><br clear=all>biogenesis') == [
        "ribosome",
        "biogenesis",
    ]
    assert terms("if dose<threshold and weight>limit") == ["dose", "threshold", "weight", "limit"]


def _topic_folder(folder: Path, documents: int = 12) -> Path:
    """Markdown files of rare made-up terms, some in a sub-folder, each under its heading."""
    rng = random.Random(0)
    vocabulary = [f"term{i}" for i in range(3000)]
    for n in range(documents):
        body = ". ".join(
            f"Sentence {k} of this topic mentions {' '.join(rng.sample(vocabulary, 12))}" for k in range(6)
        )
        place = folder / ("sub" if n % 3 == 0 else "") / f"doc{n:02d}.md"
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text(f"# Topic {n}\n\n{body}.\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("shape", ["folder", "id-less jsonl"])
def test_a_set_written_from_a_corpus_is_evaluated_against_the_same_corpus(tmp_path, shape):
    """A folder of Markdown or a JSONL that names no id: synth names the documents, and retrieve and eval read the
    same corpus under the same ids (they refused both, so a set built from a folder had no run to meet it)."""
    corpus: Path = _topic_folder(tmp_path / "kb")
    if shape == "id-less jsonl":
        texts = [d.text for d in read_documents(corpus)]
        corpus = _file(tmp_path, "".join(json.dumps({"text": t}) + "\n" for t in texts))
    target, run = tmp_path / "set.jsonl", tmp_path / "bm25.trec"
    out, err = io.StringIO(), io.StringIO()
    assert main(["synth", str(corpus), "-o", str(target), "--categories", "factual=6"], out, err) == 0, err.getvalue()
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    named = {doc for row in rows for doc in row["relevant_docs"]}
    assert named <= ({d.doc_id for d in read_documents(corpus)})
    assert all(not row["expected_answer"].startswith("#") for row in rows)  # a heading is no sentence of the answer
    retrieving = ["retrieve", "--dataset", str(target), "--corpus", str(corpus), "--retriever", "bm25", "-o", str(run)]
    assert main(retrieving, out, err) == 0, err.getvalue()
    assert {line.split()[2] for line in run.read_text(encoding="utf-8").splitlines()} & named == named
    out = io.StringIO()
    assert (
        main(["eval", "--dataset", str(target), "--run", str(run), "--corpus", str(corpus), "-m", "hits@10"], out, err)
        == 0
    )
    assert [line.split() for line in out.getvalue().splitlines() if line.startswith("hits@10")] == [
        ["hits@10", "all", "1.0000"]
    ]


def test_sentences_run_across_no_blank_line_and_a_heading_is_none():
    text = (
        "# Install the proxy server on a corporate network\nFirst step is here. Second\nwraps.\n\nThird one\n\n## Two"
    )
    assert [text[a:b] for a, b in sentences(text)] == ["First step is here.", "Second\nwraps.", "Third one"]


def test_a_corpus_file_with_an_id_twice_keeps_the_first_as_every_loader_does(tmp_path):
    corpus = _file(tmp_path, '{"id": "a", "text": "first"}\n{"id": "a", "text": "second"}\n')
    with pytest.warns(UserWarning, match=r"corpus.jsonl: 1 line\(s\) repeat a document id of an earlier line"):
        documents = read_documents(corpus)
    assert [(d.doc_id, d.text) for d in documents] == [("a", "first")]


MARKDOWN = """# Plans

The team plan costs six dollars. It bills monthly.

```python
client = Client(token="x"). Then call it.
```

Steps to follow:
- Open the settings page
- Pick a plan. Then save it.
1. Numbered items count too

| plan | price |
|------|-------|
| team | 6 |

> A quoted line stays prose.

    deb https://pkg.example.org stable main. Indented code.
Closing words here
  wrap on."""


def test_a_code_block_or_table_is_no_sentence_and_list_items_are_apart():
    """Was: a whole code block, a table, or five list items merged were written as an expected answer."""
    found = [MARKDOWN[a:b] for a, b in sentences(MARKDOWN)]
    assert found == [
        "The team plan costs six dollars.", "It bills monthly.", "Steps to follow:", "Open the settings page",
        "Pick a plan.", "Then save it.", "Numbered items count too", "A quoted line stays prose.",
        "Closing words here\n  wrap on.",
    ]  # fmt: skip
    # Windows line ends cut the same sentences (a blank line of "\r\n\r\n" ends a paragraph too)
    windows = MARKDOWN.replace("\n", "\r\n")
    assert [windows[a:b].replace("\r\n", "\n") for a, b in sentences(windows)] == found


def test_a_folder_file_with_windows_line_ends_is_the_same_document(tmp_path):
    """A checkout that converts line ends (git's autocrlf) changes no document: ``dataset check`` called it changed."""
    for name, ends in (("unix", "\n"), ("windows", "\r\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "plans.md").write_bytes(MARKDOWN.replace("\n", ends).encode("utf-8"))
    assert read_documents(tmp_path / "unix") == read_documents(tmp_path / "windows")


VOCABULARY = [f"term{i}" for i in range(3000)]


def test_a_mixed_corpus_writes_each_document_s_queries_in_its_own_language():
    """Was: a corpus mostly English read every document as English: a Chinese document's keywords were whole clauses
    (no jieba) and its queries took the English templates."""
    rng = random.Random(1)
    english = [
        Document(
            f"en{i}",
            "",
            ". ".join(f"Topic {i} sentence {k} names {' '.join(rng.sample(VOCABULARY, 8))}" for k in range(6)),
        )
        for i in range(12)
    ]
    chinese = [
        Document(
            "zh1", "", "付款失败后系统会在三天内自动重试扣款。重试三次仍然失败时订阅会暂停，管理员会收到邮件通知。"
        ),
        Document("zh2", "", "托盘图标变成橙色表示同步冲突。打开冲突副本后可以手动比较两个版本并保留需要的内容。"),
    ]
    corpus = make_corpus([*english, *chinese])
    assert corpus.language == "mixed"
    assert {c.doc_id: c.language for c in corpus.chunks if c.doc_id.startswith("zh")} == {"zh1": "zh", "zh2": "zh"}
    found = synthesize(corpus, make_generator("extractive", corpus), {"factual": 14}, seed=0)
    mine = [c for c in found if c.source.doc_id.startswith("zh")]
    assert mine and all(c.query.startswith("关于") for c in mine)  # the Chinese template
    assert all(len(k) <= 4 for c in mine for k in c.expected_keywords)  # jieba's words, not clauses
    assert all(not c.query.startswith("关于") for c in found if c.source.doc_id.startswith("en"))


def test_a_shortfall_says_how_many_chunks_gave_nothing(tmp_path):
    """Was "the sources ran out", where most chunks had been read and given no query."""
    corpus = _topic_folder(tmp_path / "kb", documents=5)
    (corpus / "empty.md").write_text("\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    argv = ["synth", str(corpus), "-o", str(tmp_path / "set.jsonl"), "--categories", "factual=9"]
    assert main(argv, out, err) == 0, err.getvalue()
    said = (
        "factual: 5 of the 9 asked (the chunks ran out: one query a chunk at most, and each of the corpus's 5 chunks "
        "holds one)"
    )
    assert said in err.getvalue(), err.getvalue()
    assert "from 5 documents (none, en), 0 flagged for review; 1 document(s) with no text left out" in err.getvalue()
    (corpus / "code.md").write_text("```\nprint(1)\n```\n", encoding="utf-8")  # a chunk with no prose to ask about
    err = io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    said = "5 of the corpus's 6 chunks hold one; the generator found nothing to write in the other 1)"
    assert said in err.getvalue(), err.getvalue()


def test_dataset_check_finds_queries_asked_twice(tmp_path):
    """Was: a merge of two seeds' sets held the same query twice (5 of 80), each counted in every mean, unsaid."""
    rows = [
        {"query_id": "a-1", "query": "How long do refunds take?", "relevant_docs": {"d1": 1}},
        {"query_id": "b-1", "query": "how long do REFUNDS take", "relevant_docs": {"d1": 1}},
        {"query_id": "a-2", "query": "Which plans include SSO?", "relevant_docs": {"d2": 1}},
    ]
    merged = tmp_path / "merged.jsonl"
    write_jsonl(merged, rows)
    out, err = io.StringIO(), io.StringIO()
    assert main(["dataset", "check", str(merged)], out, err) == 1, err.getvalue()
    assert "duplicate: queries a-1, b-1 ask the same words (each counts in every mean)" in out.getvalue()
    write_jsonl(merged, [rows[0], rows[2]])
    assert main(["dataset", "check", str(merged)], io.StringIO(), io.StringIO()) == 0


def test_a_folder_document_is_not_given_its_heading_twice(tmp_path):
    """Was: a Markdown file's title is its first heading, and pools and judges read "Collecting logs # Collecting
    logs Support ..."; token budgets counted the heading twice."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "logs.md").write_text("# Collecting logs\n\nSupport asks for the logs.\n", encoding="utf-8")
    (tmp_path / "kb" / "notes.txt").write_text("Plain notes without a heading.\n", encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("q1 0 logs.md 1\n", encoding="utf-8")
    dataset = load_dataset(tmp_path / "qrels.tsv", corpus=tmp_path / "kb")
    texts = dataset.document_texts()
    assert texts["logs.md"] == "# Collecting logs\n\nSupport asks for the logs.\n"
    assert texts["notes.txt"] == "notes\nPlain notes without a heading.\n"  # a title of its own: kept
