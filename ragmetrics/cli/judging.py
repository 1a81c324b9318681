"""``ragmetrics judge run`` (a registered judge labels a pool) and ``ragmetrics judge agree`` (how far a judge's
labels agree with people's)."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import warnings
from collections.abc import Callable
from typing import TextIO

import pandas as pd

from ragmetrics.analysis.label_agreement import LENGTH_UNIT, label_agreement
from ragmetrics.cli.inputs import (
    JUDGE_COLUMNS,
    judges_of,
    labels_source,
    output_path,
    read_dataset,
    refuse_above_scale,
)
from ragmetrics.cli.options import add_data_options, whole_number
from ragmetrics.cli.pools import check_label_column
from ragmetrics.foundation.errors import RagMetricsError, RagMetricsWarning
from ragmetrics.foundation.files import replacing
from ragmetrics.foundation.grades import LABEL_INT, grade_problem
from ragmetrics.foundation.model import Dataset
from ragmetrics.io import load_dataset
from ragmetrics.io.columns import id_texts, resolve
from ragmetrics.io.export import is_dangerous, neutralise
from ragmetrics.io.formats import detect
from ragmetrics.io.source import names_of
from ragmetrics.io.tables import read_labels_table
from ragmetrics.judges.base import JudgeLabel, Pair, max_grade, pairs_from_pool, run_judge
from ragmetrics.judges.learned import tokens
from ragmetrics.judges.registry import JUDGES, JudgeInputs, make_judge

FOLDS = JudgeInputs.folds
"""The learned judge's cross-fitting folds when ``--folds`` is not given."""

JUDGED_COLUMNS = ("query_id", "doc_id", "label", "rank", "category", "doc_length", *JUDGE_COLUMNS, "judged_at")
"""The columns ``judge run`` writes: the pair, its grade, what ``judge agree`` groups errors by (``doc_length`` in
:data:`ragmetrics.analysis.label_agreement.LENGTH_UNIT`), and the label's provenance (``judged_at`` in UTC, ISO
8601)."""
SHOWN_PROBLEMS = 20
"""How many ungraded pairs ``judge run`` names one by one (the rest are counted)."""
POOL_NUMBERS: dict[str, tuple[int, str]] = {
    "best_rank": (1, "a rank: the first is 1"),
    "rank": (1, "a rank: the first is 1"),
    "runs": (0, "a count of runs"),
}
"""The whole-number columns a pool file may have, each with the least it may hold and what it is: a rank counts from
1, a count from 0 (:func:`_check_counts`)."""


def read_tsv(path: str, what: str) -> pd.DataFrame:
    """A TSV with a header naming ``query_id`` and ``doc_id``, every cell as text."""
    try:
        frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
    except pd.errors.EmptyDataError:
        raise RagMetricsError(
            f"{path}: an empty file; expected the {what} with a header query_id, doc_id, ..."
        ) from None
    except UnicodeDecodeError as exc:
        raise RagMetricsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    missing = [c for c in ("query_id", "doc_id") if c not in frame.columns]
    if missing:
        header = ",".join(map(str, frame.columns))
        separated = "; it is comma-separated: a TSV's columns are separated by tabs" if "," in header else ""
        raise RagMetricsError(
            f"{path}: the {what} has no column {', '.join(missing)} in its header (a TSV, tab-separated: query_id, "
            f"doc_id, ...){separated}"
        )
    if "text" in frame.columns:  # the pool's text as it was before ``pool`` neutralised it for spreadsheets
        frame["text"] = [t[1:] if t.startswith("'") and is_dangerous(t[1:]) else t for t in frame["text"]]
    return frame


def human_labels(path: str) -> pd.DataFrame:
    """People's labels (TREC qrels, or a TSV ``query_id doc_id label``): ``query_id, doc_id, label``; a judge's
    labels (the TSV ``judge run`` writes) are refused. The file is read once."""
    source = labels_source(path)
    check_label_column(source, path)
    judges = judges_of(source)
    if judges:
        raise RagMetricsError(f"{path}: these are a judge's labels ({', '.join(judges)}), not people's")
    qrels = load_dataset(source).qrels
    return pd.DataFrame({"query_id": qrels["query_id"].astype(str), "doc_id": qrels["doc_id"].astype(str),
                         "label": qrels["relevance"].astype(int)})  # fmt: skip


def training_pairs(dataset_pairs: list[Pair], human: pd.DataFrame, extra: list[Pair]) -> list[tuple[Pair, int]]:
    """People's labelled pairs: the pool's pair when the pool has it (its rank and text), else ``extra``'s."""
    known = {(p.query_id, p.doc_id): p for p in [*extra, *dataset_pairs]}
    out = []
    for q, d, y in human[["query_id", "doc_id", "label"]].itertuples(index=False):
        pair = known.get((q, d))
        if pair is not None:
            out.append((pair, int(y)))
    return out


def judge_labels(path: str, top: int) -> dict[tuple[str, str], int]:
    """One judge's labels (the TSV ``judge run`` writes: ``query_id, doc_id, label``, a pair left without a grade
    empty) by pair, for the learned judge's ``--base``. Refused, each with the file (and line): people's labels
    (they are its ``--human``), several judges' labels in one file, a learned judge's labels (its grades read
    people's labels of the other folds: stacked on them, a labelled query's grade would read its own labels), a
    grade off ``0..top``, a pair graded twice differently, a row with another number of fields than the header, a
    file with no label. The file is read once (:func:`judge_label_rows`); its judges are read off its rows."""
    rows = judge_label_rows(path, top)
    if not set(JUDGE_COLUMNS) <= set(rows.columns):
        raise RagMetricsError(
            f"{path}: these labels name no judge (no judge column): give people's labels as --human, a judge's "
            "as the TSV ragmetrics judge run writes"
        )
    if rows.empty:
        raise RagMetricsError(f"{path}: the header only, no label: the base judge graded nothing")
    judge = " ".join(rows.iloc[0][list(JUDGE_COLUMNS)])  # one judge's (judge_label_rows)
    learned = JUDGES.get(judge.split()[0])
    if learned is not None and learned.needs == "training":
        raise RagMetricsError(
            f"{path}: a learned judge's labels ({judge}) cannot be the base of another: its grades read people's "
            "labels, so a labelled query's grade would read its own (give the labels of the judge it was over)"
        )
    graded = rows.dropna(subset=["label"])
    return dict(zip(zip(graded["query_id"], graded["doc_id"]), graded["label"].astype(int)))


def judge_label_rows(path: str, top: int | None = None) -> pd.DataFrame:
    """The rows of a judge's labels, each pair once: ``query_id``, ``doc_id`` and ``label`` (a number; NaN: no
    grade) and the file's other columns as text (the provenance, ``rank``, ``category``, ``doc_length``). Read as
    the other commands read labels (:func:`ragmetrics.cli.inputs.labels_source`: compressed or not, the TSV
    ``judge run`` writes, CSV, Parquet, with the loaders' column names; TREC qrels and the other dataset formats
    give the pairs and grades alone). Refused, each with the file and line (a row of a Parquet file): a label that
    is not a whole number in ``0..top`` (``>= 0`` without ``top``), a pair graded twice differently, labels of two
    judges, and what the loaders refuse (a row with another number of fields than the header, a file that is not
    UTF-8, a header without a label)."""
    source = labels_source(path)
    check_label_column(source, path)
    table = None if isinstance(source, str) else read_labels_table(source, detect(source, "dataset").name)
    if table is None:
        qrels = load_dataset(source).qrels
        frame = pd.DataFrame({"query_id": qrels["query_id"].astype(str), "doc_id": qrels["doc_id"].astype(str),
                              "label": qrels["relevance"].astype(int)})  # fmt: skip
        for q, d, label in frame.itertuples(index=False):
            problem = grade_problem(label, top)
            if problem is not None:
                raise RagMetricsError(f"{path}: query {q} document {d}: label {label!r}; {problem}")
        return frame
    raw, line_of = table
    names = resolve(raw.columns)
    missing = [c for c in ("query_id", "doc_id", "relevance") if c not in names]
    if missing:  # a BEIR-like score column with no label: the loaders read it as the grade, a judge's file has none
        raise RagMetricsError(
            f"{path}, line 1: the header has no {', '.join(missing)}; expected the TSV ragmetrics judge run writes "
            "(query_id, doc_id, label, ...)"
        )
    renamed = {names["query_id"]: "query_id", names["doc_id"]: "doc_id", names["relevance"]: "label"}
    frame = raw.rename(columns=renamed)
    for column in frame.columns:
        frame[column] = _texts(frame[column])
    judge_at = list(JUDGE_COLUMNS) if set(JUDGE_COLUMNS) <= set(frame.columns) else []

    def at(row: int) -> str:
        line = line_of(row)
        return f"line {line}" if line is not None else f"row {row + 1}"

    kept: list[int] = []
    first: dict[tuple[str, str], tuple[str, int]] = {}
    judge: tuple[tuple[str, ...], int] | None = None
    rows = frame[["query_id", "doc_id", "label", *judge_at]].itertuples(index=False, name=None)
    for row, (q, d, label, *this) in enumerate(rows):
        if not q or not d:
            raise RagMetricsError(f"{path}, {at(row)}: an empty {'query_id' if not q else 'doc_id'}; expected an id")
        if judge is None:
            judge = (tuple(this), row)
        elif tuple(this) != judge[0]:
            raise RagMetricsError(
                f"{path}, {at(row)}: labels of judge {' '.join(this)}, and of {' '.join(judge[0])} on "
                f"{at(judge[1])}: one file holds one judge's labels"
            )
        if label:
            problem = grade_problem(int(label) if LABEL_INT.fullmatch(label) else label, top)
            if problem is not None:
                raise RagMetricsError(f"{path}, {at(row)}: label {label!r}; {problem}")
        earlier = first.get((q, d))
        if earlier is not None:
            if (int(earlier[0]) if earlier[0] else None) != (int(label) if label else None):
                raise RagMetricsError(
                    f"{path}, {at(row)}: query {q} document {d} graded {label or '(none)'}, and {earlier[0] or '(none)'} "
                    f"on {at(earlier[1])}"
                )
            continue
        first[(q, d)] = (label, row)
        kept.append(row)
    frame = frame.iloc[kept].reset_index(drop=True)
    frame["label"] = pd.to_numeric(frame["label"].replace("", None))
    return frame


def _texts(values: pd.Series) -> pd.Series:
    """A column's cells as text, as a TSV holds them: a missing cell empty, a whole number stored as a float
    without its ``.0`` (Parquet's integer column with a gap)."""
    return id_texts(values).fillna("")


def _check_counts(pool: pd.DataFrame, path: str) -> None:
    """Each column of :data:`POOL_NUMBERS` the pool has holds whole numbers no less than its least (a row is named by
    its line, the header being line 1)."""
    for column, (least, what) in POOL_NUMBERS.items():
        if column not in pool.columns:
            continue
        for i, cell in enumerate(pool[column]):
            if not LABEL_INT.fullmatch(cell) or int(cell) < least:
                raise RagMetricsError(
                    f"{path}, line {i + 2}: {column} {cell!r}; expected a whole number >= {least} ({what})"
                )


def _check_pool_meets(pool: pd.DataFrame, path: str, dataset: Dataset) -> pd.DataFrame:
    """The pool's pairs of the dataset's queries, some of them, and where the dataset has a corpus and the pool
    no text, some of its documents the corpus's: else the pool was made for another dataset (or corpus). A pair of
    a query the dataset lacks is left out with a warning (the judge has no query text, answer or keywords of
    it)."""
    if pool.empty:
        raise RagMetricsError(f"{path}: the header only, no pair to judge")
    queries = set(pool["query_id"])
    known = set(dataset.queries_table.column("query_id").to_pylist())
    if not queries & known:
        raise RagMetricsError(
            f"{path}: none of the pool's {len(queries)} queries {names_of(queries, 3)} is a query of the dataset "
            f"{names_of(known, 3)}: the pool was likely made for another dataset"
        )
    if queries - known:
        outside = queries - known
        inside = pool["query_id"].isin(known)
        warnings.warn(
            f"{path}: {len(outside)} of the pool's {len(queries)} queries {names_of(outside, 3)} not of the dataset: "
            f"their {int((~inside).sum())} pair(s) are left out (the judge has no query text, answer or keywords of "
            "them)",
            RagMetricsWarning,
            stacklevel=1,
        )
        pool = pool[inside].reset_index(drop=True)
    corpus = dataset.documents
    has_text = "text" in pool.columns and bool((pool["text"] != "").any())
    ids = set() if corpus is None or "text" not in corpus.columns else set(corpus["doc_id"].astype(str))
    if ids and not has_text and not set(pool["doc_id"]) & ids:
        raise RagMetricsError(
            f"{path}: none of the pool's {pool['doc_id'].nunique()} documents {names_of(set(pool['doc_id']), 3)} is "
            f"in the corpus {names_of(ids, 3)}: the pool was likely made over another corpus"
        )
    return pool


def _labels_to_learn_from(human: pd.DataFrame, path: str, dataset: Dataset, pool: pd.DataFrame) -> pd.DataFrame:
    """People's labels the learned judge can learn from: those of the dataset's queries and, when the dataset has a
    corpus, of documents it or the pool holds. Any other label would be learned as a pair with an empty query or
    document. Refused when no label is such a pair, naming ``path``; the others are left out with a warning."""
    queries = {str(q) for q in dataset.queries_table.column("query_id").to_pylist()}
    texts = dataset.document_texts()
    documents = None if texts is None else {str(d) for d in texts.index} | set(pool["doc_id"])
    query_known = human["query_id"].isin(queries)
    doc_known = query_known if documents is None else human["doc_id"].isin(documents)
    usable = query_known & doc_known
    if usable.all():
        return human
    why = []
    if not query_known.all():
        outside = set(human.loc[~query_known, "query_id"])
        why.append(
            f"{len(outside)} quer{'ies' if len(outside) != 1 else 'y'} {names_of(outside, 3)} not in the dataset "
            f"(its queries are such as {names_of(queries, 3)})"
        )
    if not doc_known.all():
        outside = set(human.loc[~doc_known, "doc_id"])
        why.append(f"{len(outside)} document(s) {names_of(outside, 3)} in neither the corpus nor the pool")
    said = f"of {' and '.join(why)}"
    if not usable.any():
        raise RagMetricsError(
            f"{path}: none of its {len(human)} label(s) is of a pair the judge can read: all are {said}; the labels "
            "were likely made for another dataset or corpus"
        )
    warnings.warn(
        f"{path}: {int((~usable).sum())} of its {len(human)} label(s) are {said}: left out of what the learned "
        "judge learns from (it would read an empty query or document)",
        RagMetricsWarning,
        stacklevel=1,
    )
    return human[usable]


def cmd_judge_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    output = output_path(args, args.output, "--output")
    kind = JUDGES[args.judge]
    dataset = read_dataset(args)
    pool = read_tsv(args.pool, "pool")
    if kind.needs != "training":
        pool = pool.drop(columns=["runs"], errors="ignore")  # read by the learned judge only
    _check_counts(pool, args.pool)
    pool = _check_pool_meets(pool, args.pool, dataset)
    pairs = pairs_from_pool(dataset, pool)
    top = args.max_grade or max_grade(dataset)
    training: list[tuple[Pair, int]] = []
    base: dict[tuple[str, str], int] | None = None
    if kind.needs == "training":
        if not args.human:
            raise RagMetricsError("--judge learned needs --human labels.tsv (people's labels to learn from)")
        human = human_labels(args.human)
        scale = f"the dataset's grades go up to {max_grade(dataset)}; --max-grade sets another top"
        refuse_above_scale(args.human, human, "label", top, scale)
        human["label"] = human["label"].clip(lower=0)  # TREC's negative grades (junk) are not relevant, as 0
        human = _labels_to_learn_from(human, args.human, dataset, pool)
        unpooled = human.merge(pool[["query_id", "doc_id"]], how="left", indicator=True)
        unpooled = unpooled[unpooled["_merge"] == "left_only"][["query_id", "doc_id"]].assign(rank=0)
        training = training_pairs(pairs, human, pairs_from_pool(dataset, unpooled))
        base = judge_labels(args.base, top) if args.base else None
    if kind.needs == "model" and not args.model:
        raise RagMetricsError("--judge endpoint needs --model NAME (a registered model endpoint)")
    if kind.needs == "call" and not args.call:
        raise RagMetricsError("--judge callable needs --call module:attr")
    unable = kind.unable(pairs)
    if unable:
        raise RagMetricsError(f"--judge {args.judge}: {unable}")
    inputs = JudgeInputs(
        training=training,
        base=base,
        base_source=args.base or "",
        model=args.model,
        call=args.call,
        folds=args.folds or FOLDS,
    )
    judge = make_judge(args.judge, inputs)
    labels = run_judge(judge, pairs, top, progress=_progress(err) if err.isatty() else None)
    graded = [x for x in labels if x.label is not None]
    ungraded = [x for x in labels if x.label is None]
    for x in ungraded[:SHOWN_PROBLEMS]:
        err.write(f"ragmetrics: no grade: query {x.pair.query_id} document {x.pair.doc_id}: {x.problem}\n")
    if len(ungraded) > SHOWN_PROBLEMS:
        err.write(f"ragmetrics: ... and {len(ungraded) - SHOWN_PROBLEMS} more pair(s) without a grade\n")
    if ungraded and not graded:  # a file of the header only would pass for a judging that found nothing relevant
        first = ungraded[0]
        err.write(
            f"ragmetrics: error: the judge graded no pair: all {len(ungraded)} got no grade (the first, query "
            f"{first.pair.query_id} document {first.pair.doc_id}: {first.problem}); {args.output} not written\n"
        )
        return 1
    with replacing(output) as partial, open(partial, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(JUDGED_COLUMNS)
        for label in graded:
            writer.writerow(_row(label))
    source = labels[0].provenance.source if labels else f"judge:{judge.name}@{judge.version}"
    err.write(
        f"ragmetrics: wrote {args.output}: {len(graded)} label(s) 0..{top} by {source}"
        + (f"; {len(ungraded)} pair(s) got no grade and are left out\n" if ungraded else "\n")
    )
    return 1 if ungraded else 0


def _progress(err: TextIO) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        err.write(f"\rragmetrics: judged {done}/{total} pair(s)" + ("\n" if done == total else ""))
        err.flush()

    return show


def _row(label: JudgeLabel) -> list[object]:
    pair, p = label.pair, label.provenance
    when = dt.datetime.fromtimestamp(p.created_at, tz=dt.timezone.utc).isoformat(timespec="seconds")
    return [pair.query_id, pair.doc_id, label.label, pair.rank, neutralise(pair.category), len(tokens(pair.text)),
            p.judge, p.version, p.config_hash, when]  # fmt: skip


def cmd_judge_agree(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:

    human = human_labels(args.human)
    if args.max_grade is not None:
        refuse_above_scale(args.human, human, "label", args.max_grade, "--max-grade")
    human["label"] = human["label"].clip(lower=0)  # TREC's negative grades (junk) are not relevant, as 0
    judged = judge_label_rows(args.judge, args.max_grade)
    found = label_agreement(human, judged, max_grade=args.max_grade)
    if found.pairs == 0:
        raise RagMetricsError(f"no pair of {args.judge} is labelled in {args.human}: nothing to compare")
    source = ""
    if "judge" in judged.columns and len(judged):
        first = judged.iloc[0]
        source = f" ({first['judge']} {first.get('judge_version', '')} {first.get('config_hash', '')})".replace(
            "  ", " "
        )
    out.write(f"agreement of the judge{source} with people on {found.pairs} pair(s), grades 0..{found.max_grade}\n")
    if found.ungraded:
        out.write(f"  {found.ungraded} pair(s) the judge left without a grade are not counted\n")
    if found.unjudged:
        out.write(f"  {found.unjudged} of people's pair(s) are not in the judge's labels and are not counted\n")
    if found.rough:
        out.write(f"  {found.rough}\n")
    _note_two_scales(found.confusion, err)
    out.write(f"  accuracy          {found.accuracy:.3f}\n  Cohen's kappa     {_num(found.kappa)}\n")
    if found.max_grade > 1:
        out.write(
            f"  kappa, linear     {_num(found.kappa_linear)}\n  kappa, quadratic  {_num(found.kappa_quadratic)}\n"
        )
    out.write("\nconfusion matrix (rows: people, columns: judge)\n")
    grades = list(found.confusion.columns)
    width = max(6, *(len(str(v)) + 1 for v in found.confusion.to_numpy().ravel()))
    out.write("human\\judge" + "".join(f"{g:>{width}}" for g in grades) + "\n")
    for g in grades:
        out.write(f"{g:<11}" + "".join(f"{int(v):>{width}}" for v in found.confusion.loc[g]) + "\n")
    if len(found.errors):
        unit = f"; length in {LENGTH_UNIT}" if (found.errors["facet"] == "length").any() else ""
        out.write(
            f"\nwhere the judge errs (disagree: share graded differently; bias: judge minus people, mean{unit})\n"
        )
        out.write(f"{'by':<9}{'group':<16}{'pairs':>7}{'disagree':>10}{'bias':>8}\n")
        for row in found.errors.itertuples(index=False):
            out.write(f"{row.facet:<9}{str(row.group)[:15]:<16}{row.pairs:>7}{row.disagree:>10.3f}"
                      f"{row.judge_minus_human:>+8.3f}\n")  # fmt: skip
    return 0


def _note_two_scales(confusion: pd.DataFrame, err: TextIO) -> None:
    """Say when people and the judge grade on two scales (their top grades differ, and each gives a grade the other
    never does: people 0 and 2, the judge 0 and 1): every such pair counts as a disagreement, which may not be meant."""
    people = [int(g) for g in confusion.index if confusion.loc[g].sum() > 0]
    judge = [int(g) for g in confusion.columns if confusion[g].sum() > 0]
    only_people, only_judge = sorted(set(people) - set(judge)), sorted(set(judge) - set(people))
    if people and judge and max(people) != max(judge) and only_people and only_judge:

        def listed(grades: list[int]) -> str:
            return ", ".join(map(str, grades))

        err.write(
            f"ragmetrics: note: people's labels use grades {listed(people)} and the judge's {listed(judge)}: a grade "
            f"only one side gives ({listed(only_people)} only people's, {listed(only_judge)} only the judge's) counts "
            "as a disagreement; if they mean the same, put both on one scale first\n"
        )


def _num(value: float) -> str:
    return "undefined (one grade only)" if math.isnan(value) else f"{value:.3f}"


def run_options(p: argparse.ArgumentParser) -> None:
    add_data_options(p, scoring=False)
    names = "; ".join(f"{name}: {kind.help}" for name, kind in JUDGES.items())
    p.add_argument("--judge", required=True, choices=list(JUDGES), help=f"the judge ({names})")
    p.add_argument("--pool", required=True, help="the pairs to label: the TSV ragmetrics pool writes")
    p.add_argument("-o", "--output", required=True, help=f"the TSV to write: {', '.join(JUDGED_COLUMNS)}")
    p.add_argument(
        "--human",
        "--human-qrels",
        dest="human",
        help="learned: people's labels to learn from (TREC qrels or TSV query_id doc_id label)",
    )
    p.add_argument(
        "--folds",
        type=whole_number(2),
        help=f"learned: cross-fitting folds over the labelled queries (default {FOLDS})",
    )
    p.add_argument(
        "--base",
        help="learned: another judge's labels of the pool (the TSV judge run writes), read as a feature: the "
        "learned judge learns from --human how far to trust them",
    )
    p.add_argument("--model", help="endpoint: the registered model endpoint's name")
    p.add_argument("--call", help="callable: module:attr, called with (pair, max_grade)")
    p.add_argument(
        "--max-grade", type=whole_number(1), help="the top of the label scale (default: the dataset's largest grade)"
    )
    p.set_defaults(handler=cmd_judge_run)


def agree_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--human",
        "--human-qrels",
        dest="human",
        required=True,
        help="people's labels: TREC qrels or a TSV query_id doc_id label",
    )
    p.add_argument(
        "--judge",
        "--judge-qrels",
        dest="judge",
        required=True,
        help="the judge's labels: the TSV ragmetrics judge run writes (gzipped, as CSV or Parquet too), or TREC qrels",
    )
    p.add_argument(
        "--max-grade", type=whole_number(1), help="the top of the label scale (default: the largest grade given)"
    )
    p.set_defaults(handler=cmd_judge_agree)
