"""Cases the partitioned engines must evaluate exactly as the in-process engine does, and the comparison.

Each case is a qrels file and a run file on disk. ``hard`` is generated: one query holding most of the run's rows
(a skewed bucket), judged queries missing from the run, run queries the qrels do not know, repeated documents,
tied scores, graded, zero and negative labels, a query without a relevant document, comment and blank lines,
tabs and runs of blanks between fields.
"""

from __future__ import annotations

import decimal
import io
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq

import ragmetrics as rm
from ragmetrics.io import load_dataset, load_run

DATA = Path(__file__).parent / "data"
TREC = DATA / "trec_eval"
SCIFACT = DATA / "scifact"

CONFORMANCE = [
    ("qrels.test", "results.test"),
    ("qrels.test.with-comments", "results.test"),
    ("qrels.test", "results.trunc"),
    ("qrels.rel_level", "results.test"),
    ("qrels-302.test", "results-302.test"),
    ("qrels.comment.test", "results.comment.test"),
]
"""trec_eval's own test files (tests/test_parity_pytrec_eval.py reads the same pairs)."""

METRICS = [
    "ndcg@10",
    "ndcg",
    "map",
    "map@100",
    "mrr",
    "mrr@10",
    "recall@5",
    "recall@100",
    "precision@5",
    "f1@10",
    "hits@5",
    "rprec",
    "bpref",
    "judged@10",
]
BUCKETS = (1, 2, 7, 16)
SMALL_BUCKETS = (1, 8)
"""The bucket counts a small case is read with (8: its queries in several buckets)."""


def _parquet(columns: dict[str, pa.Array | list]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


_QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(1, 7) for d in range(1, 5))
_RUN = "".join(f"q{q} Q0 d{d} {d} {10 - d} t\n" for q in range(1, 7) for d in (4, 2, 1, 3))

_FLOAT_IDS = [1e-05, 1.5, 1e16, 1e20, 0.1 + 0.2, 123456789.125, 2.5e-07, 1e22, -0.0, 3.0]
_FLOAT_TEXTS = ["1e-05", "1.5", "1e+16", "1e+20", "0.30000000000000004", "123456789.125", "2.5e-07", "1e+22", "0", "3"]
"""Query ids stored as floats, and the text the loader reads each as (Python's shortest form; a whole number as an
integer)."""
_DECIMALS = [decimal.Decimal(d) for d in ("5.00", "7.50", "12.25", "-3.10")]
_DECIMAL_TEXTS = ["5", "7.5", "12.25", "-3.1"]


def _float_run(ids: list, kind: pa.DataType) -> bytes:
    rows = [(q, d) for q in ids for d in range(1, 4)]
    return _parquet(
        {
            "query_id": pa.array([q for q, _ in rows], kind),
            "doc_id": [f"d{d}" for _, d in rows],
            "score": [float(4 - d) for _, d in rows],
        }
    )


def _judging(texts: list[str]) -> bytes:
    return "".join(f"{q} 0 d{d} {d % 2}\n" for q in texts for d in range(1, 4)).encode()


_CSV_HEAD = "query_id,doc_id,relevance\n"
_CSV_QRELS = "".join(f"q{q},d{d},{(q + d) % 3}\n" for q in range(1, 7) for d in range(1, 5))
_CSV_BUT_Q1 = "".join(f"q{q},d{d},{(q + d) % 3}\n" for q in range(2, 7) for d in range(1, 5))
_RUN_BUT_Q1 = "".join(f"q{q} Q0 d{d} {d} {10 - d} t\n" for q in range(2, 7) for d in (4, 2, 1, 3))
_NAN_RUN = _parquet(
    {
        "query_id": [f"q{i // 4 + 1}" for i in range(24)],
        "doc_id": [f"d{i % 4 + 1}" for i in range(24)],
        "score": [float("nan") if i == 21 else 1.0 + i % 4 for i in range(24)],
    }
)
"""A Parquet run whose row 22 (of the last queries) has no score."""

SMALL_CASES: dict[str, tuple[str, bytes, str, bytes]] = {
    "bom_on_trec_qrels_and_run": ("qrels.txt", ("\ufeff" + _QRELS).encode(), "run.trec", ("\ufeff" + _RUN).encode()),
    "bom_on_trec_run": ("qrels.txt", _QRELS.encode(), "run.trec", ("\ufeff" + _RUN).encode()),
    "float_query_ids_in_a_parquet_run": (
        "qrels.txt",
        _judging(_FLOAT_TEXTS),
        "run.parquet",
        _float_run(_FLOAT_IDS, pa.float64()),
    ),
    "decimal_query_ids_in_a_parquet_run": (
        "qrels.txt",
        _judging(_DECIMAL_TEXTS),
        "run.parquet",
        _float_run(_DECIMALS, pa.decimal128(10, 2)),
    ),
    "decimal_query_ids_in_parquet_qrels": (
        "qrels.parquet",
        _parquet(
            {
                "query_id": pa.array([q for q in _DECIMALS for _ in range(3)], pa.decimal128(10, 2)),
                "doc_id": [f"d{d}" for _ in _DECIMALS for d in range(1, 4)],
                "relevance": [d % 2 for _ in _DECIMALS for d in range(1, 4)],
            }
        ),
        "run.trec",
        "".join(f"{q} Q0 d{d} {d} {4 - d} t\n" for q in _DECIMAL_TEXTS for d in (2, 1, 3)).encode(),
    ),
    "csv_cell_of_blanks_then_a_quote": (
        "qrels.csv",
        (_CSV_HEAD + 'q1, "d1" ,1\nq1,d9,0\n' + _CSV_BUT_Q1).encode(),
        "run.trec",
        ('q1 Q0 "d1" 1 3 t\nq1 Q0 d1 2 2 t\n' + _RUN_BUT_Q1).encode(),
    ),
    "csv_blank_lines_crlf_and_quoted_cells": (
        "qrels.csv",
        ("\n" + _CSV_HEAD + 'q1,"d,1",1\n\nq1,"d""2",1\nq1,d3,0\n\n' + _CSV_BUT_Q1 + "\n\n")
        .replace("\n", "\r\n")
        .encode(),
        "run.trec",
        ('q1 Q0 d,1 1 3 t\nq1 Q0 d"2 2 2 t\n' + _RUN_BUT_Q1).encode(),
    ),
}
"""Small cases every engine must read as the in-process loader does: name -> (qrels file name, its bytes, run file
name, its bytes). Each run holds each query's lines together (the stream engine reads it too)."""


SMALL_ERRORS: dict[str, tuple[str, bytes, str, bytes]] = {
    "csv_row_short_of_a_field": ("qrels.csv", (_CSV_HEAD + _CSV_QRELS + "q6,d9\n").encode(), "run.trec", _RUN.encode()),
    "csv_row_with_a_field_too_many": (
        "qrels.csv",
        (_CSV_HEAD + "q0,d1,1,9\n" + _CSV_QRELS).encode(),
        "run.trec",
        _RUN.encode(),
    ),
    "csv_mixed_line_ends_and_a_field_too_many": (
        "qrels.csv",
        (_CSV_HEAD.replace("\n", "\r\n") + _CSV_QRELS + "q6,d9,1,9\r\n").encode(),
        "run.trec",
        _RUN.encode(),
    ),
    "csv_unterminated_quote": (
        "qrels.csv",
        (_CSV_HEAD + 'q0,"d1,1\n' + _CSV_QRELS).encode(),
        "run.trec",
        _RUN.encode(),
    ),
    "csv_bad_label_after_blank_lines_and_a_quoted_line_break": (
        "qrels.csv",
        ("\n" + _CSV_HEAD.replace("\n", ",category\n") + 'q1,d1,1,"two\nlines"\n\n\nq1,d2,high,x\n').encode(),
        "run.trec",
        _RUN.encode(),
    ),
    "csv_run_row_short_of_its_rank": (
        "qrels.txt",
        _QRELS.encode(),
        "run.csv",
        ("query_id,doc_id,score,rank\nq1,d1,2,1\nq1,d2,1\n" + "q2,d1,1,1\n").encode(),
    ),
    "parquet_run_without_a_score_in_a_later_row": ("qrels.txt", _QRELS.encode(), "run.parquet", _NAN_RUN),
    # its document column under a name no alias reads: named beside every column (the engines read only those
    # they want, and left it out)
    "parquet_run_with_its_document_column_unnamed": (
        "qrels.txt",
        _QRELS.encode(),
        "run.parquet",
        _parquet({"query_id": ["q1", "q2"], "document": ["d1", "d1"], "score": [1.0, 2.0]}),
    ),
    "csv_run_with_texts_row_short_of_a_field": (
        "qrels.txt",
        _QRELS.encode(),
        "run.csv",
        "query_id,doc_id,score,text\nq1,d1,2,今天天气很好\nq1,d2,1\nq2,d1,1,a few words\n".encode(),
    ),
    "csv_run_line_of_delimiters_only_after_a_blank_line": (
        "qrels.txt",
        _QRELS.encode(),
        "run.csv",
        b"query_id,doc_id,score\nq1,d1,2\n\n,,\nq1,d2,1\nq2,d1,1\n",
    ),
    "csv_run_line_of_one_delimiter_among_blank_lines": (
        "qrels.txt",
        _QRELS.encode(),
        "run.csv",
        b"query_id,doc_id,score\r\nq1,d1,2\r\n\r\n,\r\n\r\nq2,d1,1\r\n",
    ),
    "csv_qrels_line_of_delimiters_and_quotes_after_a_quoted_blank_line": (
        "qrels.csv",
        (
            _CSV_HEAD.replace("\n", ",note\n") + 'q1,d1,1,"two\n\nlines"\n\n"",,,\n' + _CSV_BUT_Q1.replace("\n", ",x\n")
        ).encode(),
        "run.trec",
        _RUN.encode(),
    ),
    "bad_first_line_after_a_bom": (
        "qrels.txt",
        _QRELS.encode(),
        "run.trec",
        ("\ufeffq1 Q0 d1 1 high t\n" + _RUN).encode(),
    ),
}
"""Small cases the in-process loader refuses: every engine must refuse them with the same message (the file, the
line, what was expected), as :data:`SMALL_CASES`."""


BUDGET_TEXTS = {
    "mixed": ("今天天气很好我们去公园散步吧", "a few english words "),
    "cjk": ("今天天气很好我们去公园散步吧", "明天 下雨 我们 在家 看书 吧 "),
    "english": ("one, two; three.", "a few, english words. "),
    "bilingual": ("今天天气很好, let us go 去公园散步吧", "明天 rain 我们 stay 在家 看书 "),
}
"""The texts of :func:`write_budget_case`: q1's, and the other queries' (repeated by the document's number)."""


def write_budget_case(folder: Path, texts: str = "mixed", fmt: str = "parquet") -> tuple[Path, Path]:
    """Qrels and a run with chunk texts (Parquet, or ``fmt`` ``"csv"``), for token budgets (``recall@4tok``):
    q1's texts and the others' of :data:`BUDGET_TEXTS` (``mixed``: q1's Chinese, jieba counting its words and
    whitespace one token a text, the others English: ``auto`` depends on which texts come first; ``cjk``: every
    text mostly Chinese; ``english``: none, with punctuation, which jieba counts and whitespace does not;
    ``bilingual``: every text English and Chinese, at least a fifth of it Chinese)."""
    first, other = BUDGET_TEXTS[texts]
    rows = [(1, d, first) for d in range(1, 4)]
    rows += [(q, d, other * d) for q in range(2, 9) for d in range(1, 4)]
    columns = {
        "query_id": [f"q{q}" for q, _, _ in rows],
        "doc_id": [f"d{d}" for _, d, _ in rows],
        "score": [float(4 - d) for _, d, _ in rows],
        "text": [t for *_, t in rows],
    }
    run = folder / f"budget.{fmt}"
    if fmt == "csv":
        pa.csv.write_csv(pa.table(columns), run)
    else:
        run.write_bytes(_parquet(columns))
    qrels = folder / "budget-qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} 1\n" for q in range(1, 9) for d in (2, 3)), encoding="utf-8")
    return qrels, run


def write_small_case(folder: Path, name: str) -> tuple[Path, Path]:
    """The files of the case ``name`` of :data:`SMALL_CASES` or :data:`SMALL_ERRORS` in ``folder``."""
    qrels_name, qrels_data, run_name, run_data = {**SMALL_CASES, **SMALL_ERRORS}[name]
    qrels, run = folder / qrels_name, folder / run_name
    qrels.write_bytes(qrels_data)
    run.write_bytes(run_data)
    return qrels, run


def write_hard_case(folder: Path, seed: int = 7) -> tuple[Path, Path]:
    """The generated case: ``qrels.txt`` and ``run.trec`` in ``folder``."""
    rng = random.Random(seed)
    qrels_lines = ["# judgments of the generated case", ""]
    judged = [f"q{i}" for i in range(40)]
    for q in judged:
        for d in rng.sample(range(400), rng.randint(1, 12)):
            label = rng.choice([-1, 0, 0, 1, 1, 2, 3]) if q != "q3" else 0  # q3: no relevant document
            sep = rng.choice([" ", "\t", "  "])
            qrels_lines.append(sep.join([q, "0", f"d{d}", str(label)]))
    run_lines = ["# a run", ""]
    in_run = [q for q in judged if q not in {"q31", "q32", "q33", "q34"}]  # judged, missing from the run
    unknown = ["u1", "u2", "u9", "zz"]  # in the run, unknown to the qrels
    for q in in_run + unknown:
        depth = 3000 if q == "q5" else rng.randint(1, 40)  # q5 holds most of the rows
        docs = [rng.randrange(400) for _ in range(depth)]  # repeats: duplicate rows
        for rank, d in enumerate(docs, 1):
            score = round(rng.choice([1.0, 0.5, rng.random()]), 3)  # ties
            sep = rng.choice([" ", "\t", " \t "])
            run_lines.append(sep.join([q, "Q0", f"d{d}", str(rank), str(score), "tag"]))
    rng.shuffle(run_lines)  # rows of a query scattered over the file
    qrels_path, run_path = folder / "qrels.txt", folder / "run.trec"
    qrels_path.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    run_path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    return qrels_path, run_path


def write_grouped(run: Path, folder: Path) -> Path:
    """``run`` with each query's lines together (in the order of each query's first line, file order within a
    query; comment and blank lines first), as nearly every tool writes a run: what ``--engine stream`` reads."""
    lines = run.read_text(encoding="utf-8").splitlines()
    other = [line for line in lines if not line.split() or line.split()[0].startswith("#")]
    data = [line for line in lines if line.split() and not line.split()[0].startswith("#")]
    first: dict[str, int] = {}
    for i, line in enumerate(data):
        first.setdefault(line.split()[0], i)
    data.sort(key=lambda line: first[line.split()[0]])  # stable: file order within a query
    grouped = folder / f"grouped-{run.name}"
    grouped.write_text("\n".join(other + data) + "\n", encoding="utf-8")
    return grouped


def as_tables(qrels: Path, run: Path, folder: Path, fmt: str) -> tuple[Path, Path]:
    """The same case as CSV or Parquet files (the in-process loaders read them back identically)."""
    dataset, loaded = load_dataset(qrels), load_run(run)
    qrels_frame = dataset.qrels
    run_frame = loaded.frame[["query_id", "doc_id", "score"]]
    out_q, out_r = folder / f"qrels.{fmt}", folder / f"{run.name.split('.')[0]}.{fmt}"
    if fmt == "csv":
        qrels_frame.to_csv(out_q, index=False)
        run_frame.to_csv(out_r, index=False)
    else:
        qrels_frame.to_parquet(out_q, index=False)
        run_frame.to_parquet(out_r, index=False)
    return out_q, out_r


def reference(qrels: Path, run: Path, **conventions) -> rm.Alignment:
    """The in-process engine on the whole input."""
    return rm.align(load_dataset(qrels), load_run(run), **conventions)


def assert_same(found, alignment: rm.Alignment, metrics=METRICS) -> int:
    """Every per-query value (exactly, NaN where NaN), the query order, the coverage report and the health equal;
    returns the number of values compared."""
    assert found.query_ids is not None
    assert list(found.query_ids) == list(alignment.query_ids)
    compared = 0
    for metric in metrics:
        ours, theirs = found.array(metric), alignment.value(metric)
        np.testing.assert_array_equal(ours, theirs, err_msg=metric)
        compared += len(theirs)
    assert found.coverage == alignment.coverage
    assert found.coverage.summary() == alignment.coverage.summary()
    assert found.health == alignment.health
    return compared


REFUSED_COMPARISONS: dict[str, tuple[bytes, bytes, bytes, str, str]] = {
    "qrels_judging_nothing_relevant": (
        b"q1 0 d1 0\nq2 0 d2 -1\nq3 0 d1 0\n",
        b"q1 Q0 d1 1 1 t\nq2 Q0 d2 1 1 t\nq3 Q0 d2 1 1 t\n",
        b"q1 Q0 d2 1 1 t\nq2 Q0 d1 1 1 t\nq3 Q0 d1 1 1 t\n",
        "the qrels judge no document relevant (label >= 1, --rel-level) for any evaluated query",
        "--allow-no-relevant",
    ),
    "a_run_whose_ids_meet_no_judged_query": (
        b"q1 0 d1 1\nq2 0 d2 1\nq3 0 d1 1\n",
        b"q1 Q0 d1 1 1 t\nq2 Q0 d2 1 1 t\nq3 Q0 d2 1 1 t\n",
        b"x1 Q0 d1 1 1 t\nx2 Q0 d2 1 1 t\nx3 Q0 d1 1 1 t\n",
        "run 'run': its ids do not meet the qrels (none of its 3 queries is a query of the dataset, e.g. 'x1', 'x2', "
        "'x3')",
        "--allow-no-overlap",
    ),
}
"""Comparisons ``compare`` refuses in process and on every engine: name -> (qrels, baseline run, run, what the
partitioned engines say, the option that scores it anyway). The files are ``qrels.txt``, ``baseline.trec`` and
``run.trec``."""


def write_refused_comparison(folder: Path, name: str) -> list[str]:
    """The files of the case ``name`` of :data:`REFUSED_COMPARISONS` in ``folder``, as ``compare``'s arguments."""
    qrels_data, baseline_data, run_data, *_ = REFUSED_COMPARISONS[name]
    paths = folder / "qrels.txt", folder / "baseline.trec", folder / "run.trec"
    for path, data in zip(paths, (qrels_data, baseline_data, run_data)):
        path.write_bytes(data)
    return ["compare", "--dataset", str(paths[0]), "--baseline", str(paths[1]), "--run", str(paths[2]), "-m", "map"]
