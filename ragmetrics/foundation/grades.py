"""A dataset's label scale: the whole-number grades ``0..top``, ``top`` its largest grade (at least 1).

A person's label (:meth:`ragmetrics.store.database.Store.add_label`), a judge's
(:func:`ragmetrics.judges.base.run_judge`, :func:`ragmetrics.store.provenance.add_judge_labels`) and a label read
from a judge's file (``ragmetrics judge merge``) are refused off the scale: a grade above it weighs more than any a
judge could give, a negative one is no grade."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.foundation.errors import RagMetricsError

if TYPE_CHECKING:
    from ragmetrics.foundation.model import Dataset

__all__ = [
    "LABEL_DIGITS",
    "LABEL_INT",
    "LABEL_LIMIT",
    "check_grade",
    "grade_problem",
    "is_json_label",
    "max_grade",
    "top_grade",
    "whole",
]

LABEL_DIGITS = r"[+-]?[0-9]+"
"""A relevance label read from a file is an integer written as an integer: as text (TREC, CSV, TSV qrels), an
optional sign then ASCII digits, matched whole (``2``, ``-1``; not ``2.0``, ``2.5`` or ``2e0``); in JSON (an
evaluation set's grades, ranx / pytrec_eval dicts) a JSON integer (:func:`is_json_label`: not ``2.0``, not ``"2"``);
in Parquet a value of an integer column. pytrec_eval takes Python ints only; trec_eval's ``atol`` would read
``2.5`` as 2."""

LABEL_LIMIT = 2**53
"""The largest label magnitude read from any file (TREC, CSV, JSON, Parquet alike): larger ones are not exact as
floats, where the gains are computed, and mean nothing as grades."""

LABEL_INT = re.compile(LABEL_DIGITS)
""":data:`LABEL_DIGITS` compiled, to match whole (``fullmatch``); the same rule reads any integer a file writes as
text (a pool's ranks and counts too): ``int`` alone would also read other scripts' digits ("²"), spaces and
underscores."""


def is_json_label(value: object) -> bool:
    """Whether a JSON value is a label (:data:`LABEL_DIGITS`): a JSON integer, not a bool, a float or a string."""
    return isinstance(value, int) and not isinstance(value, bool)


def top_grade(grades: Iterable[Any]) -> int:
    """The top of the scale that ``grades`` (a dataset's relevance values; None skipped) are on: the largest, at
    least 1."""
    return max([1, *(int(g) for g in grades if g is not None)])


def max_grade(dataset: Dataset) -> int:
    """The top of the dataset's label scale: its largest grade, at least 1."""
    return top_grade(dataset.qrels_table.column("relevance").to_pylist())


def whole(grade: object) -> int | None:
    """``grade`` as an int when it is a whole number (an int, or a float that is one, as a judge's file may give),
    else None (a bool is no grade)."""
    if isinstance(grade, bool):
        return None
    if isinstance(grade, (int, np.integer)):
        return int(grade)
    if isinstance(grade, (float, np.floating)) and float(grade).is_integer():
        return int(grade)
    return None


def grade_problem(grade: object, top: int | None) -> str | None:
    """Why ``grade`` is no grade on the scale ``0..top`` (``top`` None: any whole number >= 0), or None."""
    value = whole(grade)
    if value is not None and value >= 0 and (top is None or value <= top):
        return None
    return f"expected a whole-number grade {'>= 0' if top is None else f'0..{top}'}"


def check_grade(grade: object, top: int | None, scale: str) -> int:
    """``grade`` as an int when it is on the scale ``0..top``; else a :class:`RagMetricsError` naming ``scale``
    (whose scale it is) and the grade."""
    problem, value = grade_problem(grade, top), whole(grade)
    if problem is not None or value is None:
        raise RagMetricsError(f"label {grade!r} is off {scale}: {problem}")
    return value
