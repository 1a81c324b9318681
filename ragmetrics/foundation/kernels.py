"""Arrow's compute kernels, called by name.

``pyarrow.compute`` writes a documented Python wrapper for each of Arrow's ~290 kernels when it is first imported,
and Arrow's own array methods (``Array.cast``, ``.take``, ``.filter``, ``.unique``, ``.fill_null``) import it on
their first call. That import is about a tenth of a whole ``ragmetrics eval`` process on a few hundred
queries (``benchmarks/cli.py``). The library's lower rooms (foundation, engine, io) call the kernels they use through
the functions below instead: each calls the kernel by name with ``call_function``, which ``pyarrow.compute``
re-exports from the compiled ``pyarrow._compute`` module imported here. Each gives what its ``pyarrow.compute``
namesake gives with its default options for the arguments it takes (:func:`fill_null` takes a fill value of the
values' type, where ``pyarrow.compute`` casts it); a test in ``tests/test_cli_hostile.py`` checks that a
plain ``ragmetrics eval`` never imports ``pyarrow.compute``, and the engine's parity tests check the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import pyarrow as pa

try:  # the compiled module pyarrow.compute re-exports; pyarrow.compute itself if a release moves it
    from pyarrow import _compute as compiled
except ImportError:  # pragma: no cover - depends on the installed pyarrow
    import pyarrow.compute as compiled

call_function = compiled.call_function
CastOptions = compiled.CastOptions
MatchSubstringOptions, SetLookupOptions, SortOptions = (
    compiled.MatchSubstringOptions,
    compiled.SetLookupOptions,
    compiled.SortOptions,
)

Data: TypeAlias = pa.Array | pa.ChunkedArray
Columnar: TypeAlias = pa.Array | pa.ChunkedArray | pa.Table | pa.RecordBatch


def cast(values: Data, target_type: pa.DataType, *, safe: bool = True) -> Data:
    """``values`` as ``target_type`` (``pyarrow.compute.cast``); ``safe``: a cast that loses information (an
    overflow, a truncated decimal) is an error, else it is made."""
    return call_function("cast", [values], CastOptions.safe(target_type) if safe else CastOptions.unsafe(target_type))


def take(values: Columnar, indices: Data | Sequence[int]) -> Any:
    """The rows at ``indices``, bounds-checked."""
    return call_function("take", [values, indices])


def filter_rows(values: Columnar, mask: Data) -> Any:
    """The rows where ``mask`` is true (a null drops the row)."""
    return call_function("filter", [values, mask])


def sort_indices(values: Columnar, sort_keys: Sequence[tuple[str, str]] | None = None) -> pa.Array:
    """The stable order of ``values`` by ``sort_keys`` (``(column, "ascending" | "descending")``; an array
    without keys ascending), nulls last."""
    options = None if sort_keys is None else SortOptions(sort_keys=list(sort_keys))
    return call_function("sort_indices", [values], options)


def fill_null(values: Data, fill_value: pa.Scalar | Data) -> Data:
    """``values`` with each null replaced by ``fill_value``, an Arrow scalar or array of ``values``' type
    (``ragmetrics.foundation.ids.scalar_like`` builds one without pyarrow's pandas check)."""
    return call_function("coalesce", [values, fill_value])


def coalesce(*values: Data) -> Data:
    """Row by row, the first of ``values`` that is not null."""
    return call_function("coalesce", list(values))


def is_in(values: Data, value_set: Data) -> Data:
    """Whether each value is one of ``value_set`` (a null is when ``value_set`` holds a null)."""
    return call_function("is_in", [values], SetLookupOptions(value_set))


def index_in(values: Data, value_set: Data) -> Data:
    """Each value's position in ``value_set``, null where it is absent."""
    return call_function("index_in", [values], SetLookupOptions(value_set))


def match_regex(values: Data, pattern: str) -> Data:
    """Whether each string matches ``pattern`` anywhere (RE2 syntax, as ``match_substring_regex``)."""
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def unique(values: Data) -> pa.Array:
    """The distinct values, in order of first appearance."""
    return call_function("unique", [values])


def dictionary_encode(values: Data) -> Data:
    """``values`` as dictionary codes into its distinct values (in order of first appearance)."""
    return call_function("dictionary_encode", [values])


def run_end_encode(values: pa.Array) -> pa.Array:
    """``values`` as runs of equal neighbours (int32 run ends)."""
    return call_function("run_end_encode", [values])


def elementwise(kernel: str, *arguments: Data | pa.Scalar) -> Data:
    """A kernel with no options applied row by row: ``equal``, ``not_equal``, ``and``, ``invert``,
    ``binary_length``, ``list_flatten``, ``list_value_length``, ``utf8_trim_whitespace``, ``binary_join``,
    ``binary_join_element_wise`` (its last argument the separator)."""
    return call_function(kernel, list(arguments))


def aggregate(kernel: str, values: Data) -> Any:
    """An aggregate with its default options (nulls skipped): ``sum``, ``max``, ``min``, ``any``, ``all``; the
    Python value, ``None`` for no non-null value."""
    return call_function(kernel, [values]).as_py()
