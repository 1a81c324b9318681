"""Ids as Arrow strings: validation, dictionary codes, 64-bit fingerprints, lookups.

Every id column the engine reads is an Arrow string array (``string`` or
``large_string``, possibly chunked); nothing here builds Python strings per row.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.kernels import (
    aggregate,
    cast,
    dictionary_encode,
    elementwise,
    fill_null,
    index_in,
    run_end_encode,
    sort_indices,
    take,
)

Strings: TypeAlias = pa.Array | pa.ChunkedArray

# pyarrow imports pandas (most of a small CLI call) the first time it converts Python or numpy values (``pa.array``,
# ``Array.to_numpy``, scalars), to check whether they are pandas objects; the CLI's path builds and reads
# numeric arrays through the buffers below instead, so that a plain ``ragmetrics eval`` never pays for it.


def to_arrow(values: np.ndarray) -> pa.Array:
    """A 1-d numpy array of numbers or booleans as an Arrow array (zero-copy for numbers)."""
    values = np.ascontiguousarray(values)
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow array of numbers or booleans without nulls as numpy (zero-copy for one chunk of numbers)."""
    chunks = chunks_of(values)
    if len(chunks) != 1:
        parts = [to_numpy(c) for c in chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=values.type.to_pandas_dtype())
    chunk = chunks[0]
    if chunk.null_count:
        raise ValueError("to_numpy: the array has nulls; fill them first")
    data = chunk.buffers()[1]
    if pa.types.is_boolean(chunk.type):
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        return np.unpackbits(raw, bitorder="little", count=chunk.offset + len(chunk))[chunk.offset :].astype(bool)
    dtype = np.dtype(chunk.type.to_pandas_dtype())
    if data is None:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(data, dtype=dtype)[chunk.offset : chunk.offset + len(chunk)]


def table_of(columns: dict[str, pa.Array | pa.ChunkedArray]) -> pa.Table:
    """An Arrow table of Arrow columns (``pa.table`` of a dict checks for pandas first)."""
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def empty_strings(n: int) -> pa.Array:
    """``n`` empty large strings."""
    return pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int64)), pa.py_buffer(b"")]
    )


def empty_lists(n: int, kind: pa.DataType) -> pa.Array:
    """``n`` empty lists of ``kind`` (a list type with int32 offsets)."""
    return cast(pa.ListArray.from_arrays(to_arrow(np.zeros(n + 1, np.int32)), pa.nulls(0, kind.value_type)), kind)


def scalar_like(value: float | int, kind: pa.DataType) -> pa.Scalar:
    """An Arrow scalar built without pyarrow's pandas check (see :func:`to_arrow`)."""
    return to_arrow(np.array([value], dtype=kind.to_pandas_dtype()))[0]


def chunks_of(array: Strings) -> list[pa.Array]:
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def offsets_of(chunk: pa.Array) -> np.ndarray:
    """A string chunk's offsets as a numpy view (``len(chunk) + 1`` of them, its slicing applied)."""
    large = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    width = np.int64 if large else np.int32
    return np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset : chunk.offset + len(chunk) + 1]


def is_strings(array: Strings) -> bool:
    return pa.types.is_string(array.type) or pa.types.is_large_string(array.type)


def as_strings(values: Any) -> Strings:
    """The values as Arrow large strings, zero-copy for Arrow-backed string columns (pandas' ``str``).

    Values that are not strings are converted with ``str``; missing values stay null."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        array = values
    else:
        try:
            array = pa.array(values, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            texts = [None if v is None else str(v) for v in values]
            _refuse_surrogates(texts)
            array = pa.array(texts, type=pa.large_string())
    if pa.types.is_large_string(array.type):
        return array
    if pa.types.is_string(array.type) or pa.types.is_null(array.type):
        return cast(array, pa.large_string())
    if pa.types.is_dictionary(array.type):
        return as_strings(cast(array, array.type.value_type))
    return cast(array, pa.large_string()) if _castable(array.type) else _stringify(array)


def _refuse_surrogates(texts: list[str | None]) -> None:
    """Ids are Unicode text: a lone surrogate (what ``errors="surrogateescape"`` leaves of undecodable bytes) has no
    UTF-8 form, so it is refused by its id rather than failing in the encoder."""
    for text in filter(None, texts):
        found = SURROGATE.search(text)
        if found is not None:
            raise RagMetricsError(
                f"id {text[:80]!r} holds a lone surrogate (U+{ord(found.group()):04X}), which is not text; decode the ids "
                "strictly (bytes that are not UTF-8 have no place in an id)"
            )


SURROGATE = re.compile("[\ud800-\udfff]")


def _castable(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_binary(kind)  # booleans as Python writes them, as the loaders


def _stringify(array: Strings) -> pa.Array:
    """Decimals as :func:`whole_decimals` reads them, floats as :func:`float_id_texts` writes them (half floats as
    float64, as the loaders read them), other values as Python prints them, nulls kept."""
    if pa.types.is_decimal(array.type):
        array = whole_decimals(array)
        if not pa.types.is_floating(array.type):
            return cast(array, pa.large_string())
    if pa.types.is_float16(array.type):
        array = cast(array, pa.float64())
    if pa.types.is_floating(array.type):
        return float_id_texts(array.to_numpy(zero_copy_only=False))
    return pa.array([None if v is None else str(v) for v in array.to_pylist()], type=pa.large_string())


WHOLE_FLOAT_IDS_BELOW = 2**53
"""Below this size every whole number is a float exactly, so a float id that holds one is read as that integer."""


def float_id_texts(values: np.ndarray) -> pa.Array:
    """The ids a float column holds, as Arrow large strings (null where missing): a whole number below 2**53 as an
    integer (``3.0`` -> ``3``: integer ids turned float by a CSV round trip or a column with a gap), any other number
    as numpy writes it (``1e-05``, ``0.30000000000000004``, ``inf``). Every loader and engine reads a typed float
    column so; text that reads ``3.0`` stays ``3.0``, as in trec_eval. The whole numbers are written by Arrow's cast
    (no Python string per row); only a column holding other numbers builds them."""
    finite = np.isfinite(values)
    missing = np.isnan(values)
    whole = finite & (np.mod(np.where(finite, values, 0.5), 1) == 0) & (np.abs(values) < WHOLE_FLOAT_IDS_BELOW)
    integers = pa.array(np.where(whole, values, 0).astype(np.int64), mask=missing if missing.any() else None)
    texts = cast(integers, pa.large_string())
    other = ~whole & ~missing
    if not other.any():
        return texts
    written = texts.to_numpy(zero_copy_only=False).astype(object)
    written[other] = values[other].astype(str)
    return pa.array(written, type=pa.large_string())


def whole_decimals(array: Strings) -> Strings:
    """A decimal column as the numbers it holds: 64-bit integers when every value is whole and fits, the exact
    digits as text when whole beyond them (ids exported as NUMBER(38,0): 10**17 + 1 and 10**17 + 2 stay apart),
    else float64 (a fraction). What every loader and Python entry point reads a decimal column as."""
    try:
        return cast(array, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:
        return cast(cast(array, pa.decimal128(38, 0)), pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return cast(array, pa.float64(), safe=False)


MAX_ID_BYTES = 4096
"""The longest id the model takes (``Limits.max_id_bytes`` for the loaders): every step on ids is linear in their
length, and no real document or query id comes near it."""


def id_text_problem(value: str, max_bytes: int | None = MAX_ID_BYTES) -> str | None:
    """What is wrong with one id (as :func:`id_problem` says it), or None."""
    if not value:
        return "is empty"
    size = len(value.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        return f"has {size:,} bytes; the limit is {max_bytes:,}"
    bad = next((c for c in value if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        return f"holds a control character (byte 0x{ord(bad):02x})"
    hidden = next((c for c in value if _is_hidden_control(ord(c))), None)
    if hidden is not None:
        return _hidden_problem(ord(hidden))
    surrogate = SURROGATE.search(value)
    return None if surrogate is None else f"holds a lone surrogate (U+{ord(surrogate.group()):04X}), which is not text"


_BIDI_CONTROLS = frozenset((*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
"""Bidirectional embeddings, overrides and isolates (LRE..RLO, LRI..PDI): they reorder how an id is shown."""


BYTE_ORDER_MARK = 0xFEFF
"""U+FEFF inside an id: a file's byte-order mark left where two files were joined (``cat a.trec b.trec``), the id
then unlike every other (``\ufeffq2`` is not ``q2``); a loader drops the mark at a file's start only."""


def _is_hidden_control(code: int) -> bool:
    return 0x80 <= code <= 0x9F or code in _BIDI_CONTROLS or code == BYTE_ORDER_MARK


def _hidden_problem(code: int) -> str:
    if 0x80 <= code <= 0x9F:
        return f"holds a control character (U+{code:04X})"
    if code == BYTE_ORDER_MARK:
        return "holds a byte-order mark (U+FEFF), as where two files were joined: a file's mark belongs at its start"
    return f"holds a bidirectional control character (U+{code:04X}), which changes how the id is shown"


def _hidden_control_at(data: np.ndarray) -> tuple[int, int] | None:
    """``(byte offset, code point)`` of the first C1 control (UTF-8 C2 80..C2 9F), bidirectional control
    (E2 80 AA..AE, E2 81 A6..A9) or byte-order mark (EF BB BF) in UTF-8 ``data``, or None; only bytes that can start
    one are looked at."""
    if len(data) < 2:
        return None
    lead = np.flatnonzero((data[:-1] == 0xC2) | (data[:-1] == 0xE2) | (data[:-1] == 0xEF))
    if not len(lead):
        return None
    second = data[lead + 1]
    third = data[np.minimum(lead + 2, len(data) - 1)]
    has_third = lead + 2 < len(data)
    c1 = (data[lead] == 0xC2) & (second >= 0x80) & (second <= 0x9F)
    bidi = (
        (data[lead] == 0xE2)
        & has_third
        & (
            ((second == 0x80) & (third >= 0xAA) & (third <= 0xAE))
            | ((second == 0x81) & (third >= 0xA6) & (third <= 0xA9))
        )
    )
    mark = (data[lead] == 0xEF) & has_third & (second == 0xBB) & (third == 0xBF)
    hit = np.flatnonzero(c1 | bidi | mark)
    if not len(hit):
        return None
    at = int(lead[hit[0]])
    raw = bytes(data[at : at + (2 if data[at] == 0xC2 else 3)])
    return at, ord(raw.decode("utf-8"))


def first_empty(array: Strings) -> int | None:
    """Row of the first null or empty string, or ``None`` (offsets only, no Python strings)."""
    found = id_problem(array, None)
    return found[0] if found is not None and found[1] == "is empty" else None


def id_problem(array: Strings, max_bytes: int | None = MAX_ID_BYTES) -> tuple[int, str] | None:
    """``(row, what is wrong)`` of the first id that is empty, longer than ``max_bytes`` (None: any length) or holds a
    control character (NUL, a line break, a C1 control such as U+009B, a bidirectional override or isolate, a
    byte-order mark);
    ``None`` when every id is fine. Reads Arrow's buffers only: one pass
    over the offsets and one over the bytes, no Python strings."""
    at = 0
    for chunk in chunks_of(array):
        n = len(chunk)
        if n:
            offsets = offsets_of(chunk)
            lengths = offsets[1:] - offsets[:-1]
            if chunk.null_count:
                lengths = np.where(to_numpy(chunk.is_valid()), lengths, 0)
            if int(lengths.min()) == 0:
                return at + int(np.argmin(lengths)), "is empty"
            if max_bytes is not None and int(lengths.max()) > max_bytes:
                row = int(np.argmax(lengths > max_bytes))
                return at + row, f"has {int(lengths[row]):,} bytes; the limit is {max_bytes:,}"
            data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
            # DEL (0x7f) is looked for only when some byte reaches it (never in ASCII-only ids below it)
            if len(data) and (int(data.min()) < 0x20 or (int(data.max()) >= 0x7F and bool((data == 0x7F).any()))):
                bad = int(np.flatnonzero((data < 0x20) | (data == 0x7F))[0])
                row = int(np.searchsorted(offsets, bad + int(offsets[0]), side="right")) - 1
                return at + row, f"holds a control character (byte 0x{int(data[bad]):02x})"
            hidden = _hidden_control_at(data) if len(data) and int(data.max()) >= 0xC2 else None
            if hidden is not None:
                row = int(np.searchsorted(offsets, hidden[0] + int(offsets[0]), side="right")) - 1
                return at + row, _hidden_problem(hidden[1])
        at += n
    return None


def first_duplicate(first: Strings, second: Strings) -> tuple[int, int] | None:
    """``(row, earlier_row)`` of the first row whose (first, second) pair already appeared, or ``None``.

    Arrow sorts the pairs (stable) and compares neighbours, in C++ without a Python object per row."""
    n = len(first)
    if n < 2:
        return None
    first, second = as_strings(first), as_strings(second)
    order = sort_indices(
        pa.Table.from_arrays([first, second], names=["a", "b"]), [("a", "ascending"), ("b", "ascending")]
    )
    sorted_a, sorted_b = take(first, order), take(second, order)
    same = elementwise(
        "and",
        elementwise("equal", sorted_a.slice(1), sorted_a.slice(0, n - 1)),
        elementwise("equal", sorted_b.slice(1), sorted_b.slice(0, n - 1)),
    )
    mask = to_numpy(same)
    del sorted_a, sorted_b
    if not mask.any():
        return None
    row = int(to_numpy(order)[1:][mask].min())
    match = to_numpy(
        elementwise("and", elementwise("equal", first, first[row]), elementwise("equal", second, second[row]))
    )
    return row, int(np.argmax(match))


def positions_in(values: Strings, names: Strings) -> np.ndarray:
    """Each value's position among the distinct ``names``, -1 when absent (Arrow's hash lookup), int64."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(names) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    found = index_in(values, names if names.type == values.type else cast(names, values.type))
    if found.null_count:
        found = fill_null(found, scalar_like(-1, found.type))
    return to_numpy(found).astype(np.int64, copy=False)


def dictionary_codes(array: Strings, *, grouped: bool = False) -> tuple[np.ndarray, pa.Array]:
    """``(codes, names)``: int32 codes in first-seen order and the distinct strings (``names[codes]`` is the column).

    ``grouped``: the column comes in blocks of equal values (a run's query ids), so only the first value of
    each block is hashed."""
    if grouped and len(array) > 1:
        pieces = [run_end_encode(c) for c in chunks_of(array) if len(c)]
        if sum(len(p.values) for p in pieces) * 4 < len(array):
            codes, names = _dictionary_encode(pa.concat_arrays([p.values for p in pieces]))
            lengths = np.concatenate([np.diff(to_numpy(p.run_ends), prepend=0) for p in pieces])
            return np.repeat(codes, lengths), names
    return _dictionary_encode(array)


def _dictionary_encode(array: Strings) -> tuple[np.ndarray, pa.Array]:
    encoded = dictionary_encode(array)
    if isinstance(encoded, pa.ChunkedArray):  # chunks share one growing dictionary: the last is complete
        if encoded.num_chunks == 0:
            return np.zeros(0, dtype=np.int32), pa.nulls(0, type=array.type)
        codes = np.concatenate([to_numpy(chunk.indices) for chunk in encoded.chunks])
        return codes.astype(np.int32, copy=False), encoded.chunk(encoded.num_chunks - 1).dictionary
    return to_numpy(encoded.indices).astype(np.int32, copy=False), encoded.dictionary


def take_strings(values: Strings, rows: np.ndarray) -> Strings:
    """``values[rows]``; ascending rows are taken chunk by chunk (4x faster than Arrow's take over a chunked
    array, which locates each row among the chunks)."""
    if (
        not isinstance(values, pa.ChunkedArray)
        or values.num_chunks < 2
        or len(rows) < 2
        or np.any(rows[1:] < rows[:-1])
    ):
        return take(values, to_arrow(np.asarray(rows, dtype=np.int64)))
    bounds = np.cumsum([0] + [len(c) for c in values.chunks])
    cuts = np.searchsorted(rows, bounds)
    return pa.chunked_array(
        [
            take(chunk, to_arrow(np.asarray(rows[cuts[i] : cuts[i + 1]] - bounds[i], dtype=np.int64)))
            for i, chunk in enumerate(values.chunks)
            if cuts[i + 1] > cuts[i]
        ],
        type=values.type,
    )


def same_strings(left: Strings, left_rows: np.ndarray, right: Strings, right_rows: np.ndarray) -> bool:
    """``left[left_rows] == right[right_rows]`` for every pair (byte equality, in Arrow)."""
    if len(left_rows) == 0:
        return True
    order = np.argsort(left_rows, kind="stable")
    a = take_strings(left, left_rows[order])
    b = take_strings(right, right_rows[order])
    if a.type != b.type:
        b = cast(b, a.type)
    return bool(aggregate("all", elementwise("equal", a, b)))


def byte_order(names: Strings) -> np.ndarray:
    """Rank of each string among ``names`` in byte (code point) order, computed by Arrow in C++."""
    order = to_numpy(sort_indices(names))
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


# --- fingerprints ----------------------------------------------------------------------------

_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_SEED, _MIX, _SHIFT = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(31)

FINGERPRINT_BLOCK = 1 << 15
"""Rows fingerprinted at a time: the block's temporaries stay in the core's cache and are reused, where
whole-column temporaries are fresh pages to fault in at every step."""


def _mix(h: np.ndarray, word: np.ndarray) -> None:
    """One step, in place: h = f(h xor word), f a bijection of 64-bit words."""
    h ^= word
    h *= _MIX
    h ^= h >> _SHIFT


def string_fingerprints(array: Strings) -> np.ndarray:
    """A 64-bit fingerprint of each string (its UTF-8 bytes and length), uint64.

    Equal strings always get equal fingerprints; different strings almost never do, so whoever needs
    exactness checks fingerprint matches against the strings. Read from Arrow's buffers eight bytes at a
    time, a block of rows at a time. The store's run ids hash these values: the function must not change.
    """
    chunks = chunks_of(array)
    out = np.empty(sum(len(c) for c in chunks), dtype=np.uint64)
    at = 0
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if not pa.types.is_large_string(chunk.type):
            chunk = cast(chunk, pa.large_string())
        offsets = offsets_of(chunk)
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
        for first in range(0, len(chunk), FINGERPRINT_BLOCK):
            block = offsets[first : first + FINGERPRINT_BLOCK + 1]
            _fingerprint_block(data, block, out[at + first : at + first + len(block) - 1])
        at += len(chunk)
    return out


def _fingerprint_block(data: np.ndarray, offsets: np.ndarray, h: np.ndarray) -> None:
    """Fingerprints of the strings ``data[offsets[i]:offsets[i + 1]]`` into ``h``."""
    base, end = int(offsets[0]), int(offsets[-1])
    start = offsets[:-1] - base
    length = np.diff(offsets)
    shortest, longest = int(length.min()), int(length.max())
    # zero bytes past the end: every word read below lies inside the copy (words of ids that ended are masked off)
    padded = np.zeros(end - base + longest + 16, dtype=np.uint8)
    padded[: end - base] = data[base:end]
    words = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    n = len(h)
    np.multiply(length.astype(np.uint64), _SEED, out=h)
    for k in range(0, longest, 8):
        # an id of L bytes mixes in its ceil(L / 8) words, whatever the other ids' lengths
        if shortest > k:  # every id goes on: all rows, masked only where an id ends within the word
            _mix(h, words[start + k] & _BYTE_MASKS[np.minimum(length - k, 8)] if shortest < k + 8 else words[start + k])
        elif np.count_nonzero(live := length > k) * 4 > n:  # most go on: mix all, keep the ended ones' values
            mixed = h.copy()
            _mix(mixed, words[start + k] & _BYTE_MASKS[np.clip(length - k, 0, 8)])
            np.copyto(h, mixed, where=live)
        else:  # a few long ids: only their rows
            rows = np.flatnonzero(live)
            mixed = h[rows]
            _mix(mixed, words[start[rows] + k] & _BYTE_MASKS[np.minimum(length[rows] - k, 8)])
            h[rows] = mixed


CONTENT_ID = re.compile(r"^[0-9a-f]{16}$")
"""A content id (of a dataset, a run, a view or a qrels version): 16 lowercase hexadecimal digits, the store's
hash of the normalized content, so the same files give the same id on any server."""


def is_content_id(value: object) -> bool:
    """True when ``value`` is a well-formed content id (see :data:`CONTENT_ID`)."""
    return isinstance(value, str) and CONTENT_ID.match(value) is not None
