"""Column aliases for tabular inputs (CSV, TSV, Parquet, flat JSONL rows) and
the vectorized value checks that turn a bad cell into a line-numbered error."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ragmetrics.foundation.columns import ALIASES, normalise_name, resolve
from ragmetrics.foundation.errors import ParseError, RagMetricsWarning
from ragmetrics.foundation.grades import LABEL_DIGITS, LABEL_LIMIT
from ragmetrics.foundation.ids import first_duplicate, float_id_texts, scalar_like
from ragmetrics.foundation.kernels import cast, fill_null, match_regex
from ragmetrics.foundation.model import Dataset, Run, query_id_from_text
from ragmetrics.io.source import Source, at_lines, names_of, shorten

QUERY_FACETS = ("category", "difficulty", "expected_answer")
QUERY_TEXT_NAMES = ("query", "question", "query_text")

FLOAT_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
INT_PATTERN = r"^[+-]?[0-9]+(\.0*)?$"
INT_LIMIT = LABEL_LIMIT  # labels and ranks beyond this are not exact as floats (and mean nothing)

LineOf = Callable[[int], int | None]


def describe_aliases(canonical: Sequence[str]) -> str:
    return "; ".join(
        f"{c} (or {'/'.join(a for a in ALIASES[c] if a != c)})" if len(ALIASES[c]) > 1 else c for c in canonical
    )


def missing_columns_error(
    source: Source | str, line: int | None, missing: list[str], found: Iterable[str]
) -> ParseError:
    """``missing`` columns of ``source`` (or a file's name), beside every column it has (``found``, in its order)."""
    listed = names_of(found, 20, sort=False)
    return ParseError(
        source if isinstance(source, str) else source.name,
        line,
        f"column(s) {describe_aliases(missing)}",
        f"missing {missing}; columns found: {listed}",
    )


def _cell_error(source: Source, line_of: LineOf, row: int, column: str, what: str, value: object) -> ParseError:
    if isinstance(value, np.generic):
        value = value.item()
    line = line_of(row)
    where = "" if line is not None else f" (row {row + 1})"
    return ParseError(source.name, line, f"{what} in column {shorten(column)}", f"{shorten(value)}{where}")


ID_BLANKS = " \t"
"""The blanks stripped around an id read from a table cell."""


def id_texts(values: pd.Series) -> pd.Series:
    """The ids a column holds, as text, stripped of :data:`ID_BLANKS` (a missing value stays missing). A number is
    written as Python writes it, a float column as :func:`ragmetrics.foundation.ids.float_id_texts` writes it
    (``3.0`` -> ``3``)."""
    values = values.reset_index(drop=True)
    if pd.api.types.is_float_dtype(values.dtype):
        floats = values.to_numpy(dtype=getattr(values.dtype, "numpy_dtype", values.dtype), na_value=np.nan)
        values = float_id_texts(floats).to_pandas().astype("str")
    elif values.dtype != "str":
        out = values.astype("str")
        values = out.where(values.notna(), None) if values.isna().any() else out
    return values.str.strip(ID_BLANKS)


def as_id_column(source: Source, line_of: LineOf, values: pd.Series, column: str) -> pd.Series:
    """Strings (:func:`id_texts`), never empty."""
    values = id_texts(values)
    bad = values.isna() | (values.str.len() == 0)
    if bad.any():
        row = int(bad.to_numpy().argmax())
        raise _cell_error(
            source, line_of, row, column, "a non-empty id", values.iloc[row] if not pd.isna(values.iloc[row]) else ""
        )
    return values


def _matches(strings: pa.Array, pattern: str) -> np.ndarray:
    """Whether each string matches ``pattern`` (a null does not)."""
    return fill_null(match_regex(strings, pattern), scalar_like(False, pa.bool_())).to_numpy(zero_copy_only=False)


def as_float_column(source: Source, line_of: LineOf, values: pd.Series, column: str) -> np.ndarray:
    """Finite float64 values; strings must look like decimal numbers."""
    values = values.reset_index(drop=True)
    if pd.api.types.is_bool_dtype(values.dtype) and len(values):
        raise _cell_error(source, line_of, 0, column, "a number", values.iloc[0])
    if pd.api.types.is_numeric_dtype(values.dtype):
        out = values.to_numpy(dtype="float64", na_value=np.nan)
    else:
        arr = pa.array(values.astype("str").where(values.notna(), None).str.strip(" \t"), type=pa.string())
        ok = _matches(arr, FLOAT_PATTERN)
        if not ok.all():
            row = int(np.argmin(ok))
            raise _cell_error(
                source,
                line_of,
                row,
                column,
                "a finite number",
                values.iloc[row] if not pd.isna(values.iloc[row]) else "",
            )
        out = cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    finite = np.isfinite(out)
    if not finite.all():
        row = int(np.argmin(finite))
        raise _cell_error(source, line_of, row, column, "a finite number", values.iloc[row])
    return out


def as_int_column(source: Source, line_of: LineOf, values: pd.Series, column: str) -> np.ndarray:
    """Integer labels (``2`` or ``2.0``, not ``2.5``)."""
    values = values.reset_index(drop=True)
    if pd.api.types.is_bool_dtype(values.dtype) and len(values):
        raise _cell_error(source, line_of, 0, column, "an integer", values.iloc[0])
    if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
        exact = values.to_numpy()
        big = (exact > INT_LIMIT) | (exact < -INT_LIMIT)  # no abs(): -2^63 has none in int64
        if big.any():
            row = int(np.argmax(big))
            raise _cell_error(source, line_of, row, column, f"an integer of at most {INT_LIMIT:,}", values.iloc[row])
        return values.to_numpy(dtype="int64")
    if pd.api.types.is_numeric_dtype(values.dtype):
        floats = values.to_numpy(dtype="float64", na_value=np.nan)
        ok = (
            np.isfinite(floats)
            & (np.mod(np.nan_to_num(floats, nan=0.5), 1) == 0)
            & (np.abs(np.nan_to_num(floats)) <= INT_LIMIT)
        )
        if not ok.all():
            row = int(np.argmin(ok))
            raise _cell_error(source, line_of, row, column, "an integer", values.iloc[row])
        return floats.astype("int64")
    arr = pa.array(values.astype("str").where(values.notna(), None).str.strip(" \t"), type=pa.string())
    ok = _matches(arr, INT_PATTERN)
    if not ok.all():
        row = int(np.argmin(ok))
        raise _cell_error(
            source, line_of, row, column, "an integer", values.iloc[row] if not pd.isna(values.iloc[row]) else ""
        )
    floats = cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    for near in np.flatnonzero(np.abs(floats) >= INT_LIMIT).tolist():  # near the limit a float rounds: read exactly
        if abs(int(str(arr[near].as_py()).split(".")[0])) > INT_LIMIT:
            raise _cell_error(source, line_of, near, column, f"an integer of at most {INT_LIMIT:,}", values.iloc[near])
    return floats.astype("int64")


def as_label_column(source: Source, line_of: LineOf, values: pd.Series, column: str) -> np.ndarray:
    """Relevance labels, each an integer written as one (:data:`ragmetrics.foundation.grades.LABEL_DIGITS`): text
    ``2`` or an integer column; ``2.0``, ``2.5`` and a float column are refused at their row."""
    values = values.reset_index(drop=True)
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
    if numeric and not pd.api.types.is_integer_dtype(values.dtype) and len(values):
        row = int(values.isna().to_numpy().argmax())  # a missing label (an integer column with nulls), else the first
        raise _cell_error(
            source, line_of, row, column, "an integer", "" if pd.isna(values.iloc[row]) else values.iloc[row]
        )
    if not numeric and len(values):
        arr = pa.array(values.astype("str").where(values.notna(), None).str.strip(" \t"), type=pa.string())
        ok = _matches(arr, f"^{LABEL_DIGITS}$")
        if not ok.all():
            row = int(np.argmin(ok))
            raise _cell_error(
                source, line_of, row, column, "an integer", values.iloc[row] if not pd.isna(values.iloc[row]) else ""
            )
    return as_int_column(source, line_of, values, column)


def hashed_query_ids(texts: pd.Series) -> pd.Series:
    """``query_id_from_text`` for each text, computed once per distinct text."""
    codes, uniques = pd.factorize(texts)
    ids = np.array([query_id_from_text(t) for t in uniques], dtype=object)
    return pd.Series(ids[codes], dtype="str")


def _say_file_order(source: Source, frame: pd.DataFrame, cols: dict[str, str]) -> None:
    """A run without a score or rank column is ranked in file order; columns left unread (a ``similarity``, a
    ``distance``) are said, since one of them may be the score under another name."""
    unread = [str(c) for c in frame.columns if c not in cols.values()]
    if unread:
        warnings.warn(
            f"{source.name}: no score or rank column, so each query's documents are ranked in file order; "
            f"column(s) {', '.join(map(repr, unread[:5]))} not read (name the score column 'score'; a distance "
            "ranks the other way: negate it)",
            RagMetricsWarning,
            stacklevel=3,
        )


def run_from_columns(
    source: Source, frame: pd.DataFrame, line_of: LineOf, *, name: str, header_line: int | None
) -> Run:
    """A Run from a frame with aliased column names."""
    cols = resolve(frame.columns)
    missing = [c for c in ("query_id", "doc_id") if c not in cols]
    if missing:
        raise missing_columns_error(source, header_line, missing, frame.attrs.get("all_columns", frame.columns))
    # a "chunk_id" column next to a document column: the chunk is what was retrieved
    norm = {normalise_name(c): c for c in frame.columns}
    if "chunk_id" in norm and "source_doc" not in cols and cols["doc_id"] != norm["chunk_id"]:
        cols["source_doc"] = cols["doc_id"]
        cols["doc_id"] = norm["chunk_id"]
    out = pd.DataFrame()
    qcol = cols["query_id"]
    qids = as_id_column(source, line_of, frame[qcol], qcol)
    out["query_id"] = hashed_query_ids(qids) if normalise_name(qcol) == "query" else qids
    out["doc_id"] = as_id_column(source, line_of, frame[cols["doc_id"]], cols["doc_id"])
    if "score" in cols:
        out["score"] = as_float_column(source, line_of, frame[cols["score"]], cols["score"])
    elif "rank" not in cols:
        _say_file_order(source, frame, cols)
    if "rank" in cols:
        ranks = frame[cols["rank"]].reset_index(drop=True)
        if "score" in cols:  # informative only: gaps allowed
            given = ranks.notna() & (ranks.astype("str").str.strip() != "")
            values = np.full(len(ranks), np.nan)
            if given.any():
                values[given.to_numpy()] = as_int_column(
                    source, lambda row: line_of(int(np.flatnonzero(given.to_numpy())[row])), ranks[given], cols["rank"]
                )
            out["rank"] = values
        else:
            out["rank"] = as_int_column(source, line_of, ranks, cols["rank"])
    for optional in ("text", "source_doc"):
        if optional in cols:
            values = frame[cols[optional]].reset_index(drop=True)
            values = values.astype("str").where(values.notna(), None)
            if optional == "source_doc":
                values = values.where(values.str.len() > 0, None)
            out[optional] = values
    limit = source.limits.max_id_bytes
    return at_lines(source, line_of, lambda: Run.from_frame(out, name=name, max_id_bytes=limit))


def dataset_from_columns(
    source: Source, frame: pd.DataFrame, line_of: LineOf, *, name: str, header_line: int | None
) -> Dataset:
    """A Dataset (qrels plus what the table says about queries) from aliased columns."""
    cols = resolve(frame.columns)
    if "relevance" not in cols and "score" in cols:  # BEIR qrels: query-id corpus-id score
        cols["relevance"] = cols.pop("score")
    missing = [c for c in ("query_id", "doc_id", "relevance") if c not in cols]
    if missing:
        raise missing_columns_error(source, header_line, missing, frame.attrs.get("all_columns", frame.columns))
    qcol = cols["query_id"]
    raw_q = as_id_column(source, line_of, frame[qcol], qcol)
    from_text = normalise_name(qcol) == "query"
    qrels = pd.DataFrame(
        {
            "query_id": hashed_query_ids(raw_q) if from_text else raw_q,
            "doc_id": as_id_column(source, line_of, frame[cols["doc_id"]], cols["doc_id"]),
            "relevance": as_label_column(source, line_of, frame[cols["relevance"]], cols["relevance"]),
        }
    )
    check_duplicate_judgments(source, qrels, line_of)
    queries = pd.DataFrame({"query_id": qrels["query_id"]})
    norm = {normalise_name(c): c for c in frame.columns if c not in cols.values()}
    if from_text:
        queries["query"] = raw_q
    else:
        for text_name in QUERY_TEXT_NAMES:
            if text_name in norm:
                queries["query"] = frame[norm[text_name]].reset_index(drop=True).astype("str")
                break
    for facet in QUERY_FACETS:
        if facet in norm:
            queries[facet] = frame[norm[facet]].reset_index(drop=True).astype("str")
    queries = queries.drop_duplicates("query_id", keep="first").reset_index(drop=True)
    limit = source.limits.max_id_bytes
    return at_lines(source, line_of, lambda: Dataset.from_frames(qrels, queries, name=name, max_id_bytes=limit))


def check_duplicate_judgments(source: Source, qrels: pd.DataFrame, line_of: LineOf) -> None:
    found = first_duplicate(qrels["query_id"], qrels["doc_id"])
    if found is not None:
        row, first = found
        q, d = qrels["query_id"].iloc[row], qrels["doc_id"].iloc[row]
        first_line, line = line_of(first), line_of(row)
        said = f"a second label for query {shorten(q)}, document {shorten(d)}"
        if first_line is None:
            said += f" (first on row {first + 1})"
        if line is None:
            said += f" (row {row + 1})"
        raise ParseError(source.name, line, "one label per query and document", said, first_line=first_line)
