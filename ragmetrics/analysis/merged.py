"""Statistics that merge: intervals of means, sign-flip randomization and t tests, and a parity fingerprint, from
sums that any split of the queries adds up to, bit for bit.

Whatever draws a resample here is a function of the query id and the resample index, never of a query's place:

* a query's **key** is a 64-bit hash of its id's UTF-8 bytes (FNV-1a, then the splitmix64 finaliser), computed once
  per query, vectorised over the ids (:func:`id_keys`);
* the sign of query ``q`` in resample ``b`` is the top bit of the ``b``-th output of a splitmix64 stream seeded by
  ``(key_q, seed)``: ``fmix(base_q + (b + 1) * 0x9E3779B97F4A7C15)`` in numpy uint64 arithmetic.

So a bucket can compute, for its own queries, per metric: the count, the sum and the sum of squares of the values,
and per resample ``b`` ``S_b`` (the sum of sign x value); the whole evaluation's sums are the buckets' sums added.
Bit-identity under any split and order is guaranteed by making every sum a sum of integers: a value ``x`` in [-1, 1]
(every metric of the registry, and every difference of two) is held as the fixed-point integer ``round(x * 2^31)``
(so a mean computed from the sums differs from the float mean by at most 2^-32), and every sum is an int64 sum,
which is associative and commutative even when it wraps (it is modular); the totals fit in an int64 (no wrap at the
end) up to 2^31 queries. The float sums a matmul makes are exact too: the signs multiply 16-bit halves of the
fixed-point values, every partial sum an integer below 2^53, whatever the order. Only then are the statistics
computed, from the same integers everywhere.

The **interval of a mean** is :func:`ragmetrics.analysis.stats.mean_interval`'s rule read from the exact sums: the
exact binomial (Clopper-Pearson) interval where every value is 0 or 1, none where every value is another same value,
else Student's t from the count, the sum and the sum of squares (no resample needed). The **sign-flip randomization test** of "mean = 0" on paired differences:
``T_b = sum_q s_qb d_q`` against the observed ``T = sum_q d_q``, compared as integers; p = (#{|T_b| >= |T|} + 1) /
(B + 1). The **paired t test** needs only ``n``, the sum of the differences and the sum of their squares (exact
integers), and scipy's t distribution.

The **fingerprint** of a metric is ``sum_q fmix(fmix(key_q ^ C) ^ bits(x_q)) mod 2^64`` over every evaluated query
(``bits``: the value's float64 bits, NaN and -0.0 made canonical): independent of order and split, and a changed
value changes it (``fmix`` is a bijection, so the changed term differs).

:class:`Sums` holds one such set of sums per metric; its :meth:`Sums.to_bytes` is what a bucket emits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ragmetrics.analysis import stats
from ragmetrics.analysis.values import QueryValues
from ragmetrics.foundation.errors import RagMetricsError

MERGED_TESTS = ("t", "randomization")
"""The paired tests of :data:`ragmetrics.analysis.stats.TESTS` these sums make (the others read each query's
value): what ``compare`` offers on a partitioned engine."""
SCALE_BITS = 31
"""A value ``x`` is held as ``round(x * 2^SCALE_BITS)``."""
FIXED = ("count", "total", "squares_low", "squares_high", "fingerprint", "zero_or_one", "above", "below")
"""The columns of a metric's row of :attr:`Sums.table` before the resamples: the queries with a value, the sum of
their fixed-point values, the sum of their squares (low and high 32 bits of each square, summed apart), the
fingerprint (every evaluated query, NaN included), the values exactly 0 or 1 (:func:`stats.zero_or_one`, on
the float values: a value within 2^-32 of 0 or 1 has their fixed-point value and is neither), and the values above
:data:`stats.TIE_TOLERANCE` and below its negative (on the float values: of paired differences, the wins and the
losses)."""
MAX_QUERIES = 1 << 31
"""Up to this many queries with a value, no sum wraps."""

_U64 = np.uint64
GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_SIGNS, _FINGERPRINT = 2, 3
"""The purposes a query's stream is seeded with (the signs' stream and the fingerprint's salt)."""
_CELLS = 1 << 22
"""Resample x query cells drawn at a time (32 MB of uint64)."""
_CANONICAL_NAN = 0x7FF8000000000000


def fmix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection of 64-bit words), elementwise on a uint64 array."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> _U64(30))) * _U64(_MIX1)
        z = (z ^ (z >> _U64(27))) * _U64(_MIX2)
        return z ^ (z >> _U64(31))


def id_keys(ids: pa.Array | pa.ChunkedArray | Sequence[str] | np.ndarray) -> np.ndarray:
    """A 64-bit key per query id: FNV-1a over the id's UTF-8 bytes, its length mixed in, through :func:`fmix`.
    Vectorised: one numpy pass per byte position, queries sorted by length so each pass takes the ids that long."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if not isinstance(ids, pa.Array):
        ids = pa.array(list(ids), pa.large_string())
    array = ids.cast(pa.large_string())
    n = len(array)
    if n == 0:
        return np.zeros(0, np.uint64)
    if array.null_count:
        raise RagMetricsError("query ids to hash: a null id")
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], np.int64)[array.offset : array.offset + n + 1]
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    starts, lengths = starts[order], lengths[order]
    keys = np.full(n, _FNV_OFFSET, np.uint64)
    longest = int(lengths[0])
    # how many ids are longer than j, for every j: the ids a pass at byte j takes (a prefix, as sorted)
    longer = np.searchsorted(-lengths, -np.arange(longest), side="left")
    with np.errstate(over="ignore"):
        for j in range(longest):
            taken = int(longer[j])
            keys[:taken] = (keys[:taken] ^ data[starts[:taken] + j].astype(np.uint64)) * _U64(_FNV_PRIME)
        keys = fmix(keys ^ lengths.astype(np.uint64))
    out = np.empty(n, np.uint64)
    out[order] = keys
    return out


def _seeded(keys: np.ndarray, seed: int, purpose: int) -> np.ndarray:
    """Each query's stream base for ``(seed, purpose)``."""
    salt = fmix(np.array([(seed * 4 + purpose) & 0xFFFFFFFFFFFFFFFF], np.uint64))
    with np.errstate(over="ignore"):
        return fmix(keys ^ salt)


def _words(bases: np.ndarray, first: int, rows: int) -> np.ndarray:
    """The stream words of resamples ``first .. first + rows - 1``: (rows, queries) uint64."""
    steps = (np.arange(first + 1, first + rows + 1, dtype=np.uint64) * _U64(GOLDEN))[:, None]
    with np.errstate(over="ignore"):
        return fmix(bases[None, :] + steps)


def fixed_point(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(round(x * 2^31) as int64, has a value)``; NaN has none (held as 0). A value outside [-1, 1] is refused."""
    values = np.asarray(values, np.float64)
    valid = ~np.isnan(values)
    if np.any(np.abs(values[valid]) > 1.0):
        raise RagMetricsError(
            f"merged statistics hold values in [-1, 1]; found {float(np.max(np.abs(values[valid])))!r}"
        )
    return np.where(valid, np.rint(values * float(1 << SCALE_BITS)), 0.0).astype(np.int64), valid


def value_bits(values: np.ndarray) -> np.ndarray:
    """The float64 bits of each value, NaN and -0.0 canonical (as uint64)."""
    values = np.asarray(values, np.float64) + 0.0  # -0.0 + 0.0 is 0.0
    bits = values.view(np.uint64).copy()
    bits[np.isnan(values)] = _U64(_CANONICAL_NAN)
    return bits


@dataclass(frozen=True)
class Sums:
    """Sums over a set of queries, one row per metric (in the order of the metrics they were made for):
    :data:`FIXED`, then ``S_b`` for each of ``resamples`` resamples (int64, modular)."""

    table: np.ndarray
    resamples: int
    seed: int

    @property
    def metrics(self) -> int:
        return int(self.table.shape[0])

    def to_bytes(self) -> bytes:
        """What a bucket emits: ``resamples``, ``seed`` and the table, little-endian int64."""
        header = np.array([self.resamples, self.seed], "<i8")
        return header.tobytes() + self.table.astype("<i8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes, metrics: int) -> Sums:
        header = np.frombuffer(data, "<i8", count=2)
        table = np.frombuffer(data, "<i8", offset=16).astype(np.int64).reshape(metrics, -1)
        return cls(table, int(header[0]), int(header[1]))

    @classmethod
    def empty(cls, metrics: int, resamples: int = 0, seed: int = 0) -> Sums:
        return cls(np.zeros((metrics, len(FIXED) + resamples), np.int64), resamples, seed)

    def merge(self, other: Sums) -> Sums:
        """The sums of both sets (their queries disjoint)."""
        if (self.table.shape, self.resamples, self.seed) != (other.table.shape, other.resamples, other.seed):
            raise RagMetricsError(
                f"sums of {self.resamples} resamples (seed {self.seed}) and of {other.resamples} (seed {other.seed}) "
                "do not add up"
            )
        with np.errstate(over="ignore"):
            return Sums(self.table + other.table, self.resamples, self.seed)

    def _column(self, name: str) -> np.ndarray:
        return self.table[:, FIXED.index(name)]

    def count(self, metric: int) -> int:
        return int(self._column("count")[metric])

    def _signed(self, metric: int) -> np.ndarray:
        """``S_b`` of each resample."""
        return self.table[metric, len(FIXED) : len(FIXED) + self.resamples]

    def _checked(self, metric: int) -> int:
        n = self.count(metric)
        if n >= MAX_QUERIES:
            raise RagMetricsError(f"merged statistics hold up to {MAX_QUERIES - 1} queries; got {n}")
        return n

    def _resampled_needed(self) -> None:
        if not self.resamples:
            raise RagMetricsError("these sums were made without resamples (resamples=0): no randomization p-value")

    def mean(self, metric: int) -> float:
        """The mean of the fixed-point values (within 2^-32 of the float mean); NaN for no query."""
        n = self._checked(metric)
        return int(self._column("total")[metric]) / n / (1 << SCALE_BITS) if n else math.nan

    def above(self, metric: int) -> int:
        """The values above :data:`stats.TIE_TOLERANCE` (of paired differences: the queries the run wins)."""
        return int(self._column("above")[metric])

    def below(self, metric: int) -> int:
        """The values below ``-``:data:`stats.TIE_TOLERANCE` (of paired differences: the queries the run loses)."""
        return int(self._column("below")[metric])

    def binary(self, metric: int) -> bool:
        """Whether there are values and every one is exactly 0 or 1, as :func:`stats.mean_interval` decides it (on
        the float values, counted before they are made fixed-point)."""
        n = self._checked(metric)
        return n > 0 and int(self._column("zero_or_one")[metric]) == n

    def interval(
        self,
        metric: int,
        confidence: float = 0.95,
        *,
        binomial: bool = True,
        within: tuple[float, float] | None = None,
    ) -> tuple[float, float]:
        """The interval of the mean under the convention of :func:`ragmetrics.analysis.stats.mean_interval`: the exact
        binomial (Clopper-Pearson) interval when every value is 0 or 1 (:meth:`binary`, two values at least), none
        (NaN) when every value is the same other value (:func:`ragmetrics.analysis.stats.constant_columns`), else
        Student's t from the exact count, sum and sum of squares (:meth:`sd`), held to contain the mean; NaN below
        two queries. ``binomial`` False: Student's t whatever the values (a paired difference's interval, as
        :func:`ragmetrics.analysis.stats.mean_t_interval` in process). ``within``: the range the values lie in, to
        clip the interval to (a metric's: :data:`ragmetrics.analysis.stats.METRIC_RANGE`), as ``mean_interval``."""
        n = self._checked(metric)
        if n < 2:
            return math.nan, math.nan
        if binomial and self.binary(metric):
            return stats.proportion_interval(int(self._column("total")[metric]) >> SCALE_BITS, n, confidence)
        if binomial and self._spread(metric)[2] == 0:  # every value the same: no spread to read an interval from
            return math.nan, math.nan
        mean = self.mean(metric)
        t_low, t_high = stats.t_interval(np.array(mean), np.array(self.sd(metric)), np.array(n), confidence)
        low, high = min(float(t_low), mean), max(float(t_high), mean)
        if within is None:
            return low, high
        return max(low, within[0]), min(high, within[1])

    def sign_flip_p(self, metric: int) -> float:
        """Two-sided p of the sign-flip randomization test of "mean = 0" (the values being paired differences):
        (#{|S_b| >= |T|} + 1) / (resamples + 1), compared as integers; no query: NaN."""
        self._resampled_needed()
        if self._checked(metric) == 0:
            return math.nan
        observed = abs(int(self._column("total")[metric]))
        flipped = np.abs(self._signed(metric))
        hits = int(np.count_nonzero(flipped >= observed))
        return (hits + 1) / (self.resamples + 1)

    def _spread(self, metric: int) -> tuple[int, int, int]:
        """``(n, total, n * squares - total^2)``: the count, the sum and n (n - 1) times the sample variance, in
        units of 2^-62, as exact integers."""
        n = self._checked(metric)
        total = int(self._column("total")[metric])
        squares = (int(self._column("squares_high")[metric]) << 32) + int(self._column("squares_low")[metric])
        return n, total, n * squares - total * total

    def sd(self, metric: int) -> float:
        """The values' sample standard deviation (n - 1) from the exact sums; fewer than 2 values: NaN."""
        n, _, spread = self._spread(metric)
        if n < 2:
            return math.nan
        return math.sqrt(max(spread, 0) / (n * (n - 1))) / (1 << SCALE_BITS)

    def t_p(self, metric: int) -> float:
        """Two-sided p of the one-sample t test of "mean = 0" (of paired differences: the paired t test) from the
        count, the sum and the sum of squares; fewer than 2 queries: NaN; zero variance: 1 if every value is 0,
        else the exact sign-flip p, 2^(1 - n) (:func:`ragmetrics.analysis.stats.constant_difference_p`, as
        :func:`ragmetrics.analysis.stats.paired_p_value`)."""
        from scipy import stats as sps  # noqa: PLC0415 (SciPy is loaded on use: import ragmetrics stays light)

        n, total, spread = self._spread(metric)
        if n < 2:
            return math.nan
        if spread <= 0:
            return 1.0 if total == 0 else stats.constant_difference_p(n)
        t = (total / n) / math.sqrt(spread / (n * n * (n - 1)))
        return float(2 * sps.t.sf(abs(t), n - 1))

    def fingerprint(self, metric: int) -> str:
        """The metric's fingerprint, 16 hex digits."""
        return f"{int(self._column('fingerprint')[metric]) & 0xFFFFFFFFFFFFFFFF:016x}"


def sums_of(
    ids: pa.Array | pa.ChunkedArray | Sequence[str] | np.ndarray,
    values: Sequence[np.ndarray],
    resamples: int = 0,
    seed: int = 0,
    keys: np.ndarray | None = None,
) -> Sums:
    """The :class:`Sums` of a set of queries: ``ids`` and, per metric, the values in the same order (NaN: no
    value). ``keys``: the ids' :func:`id_keys` when already computed."""
    if resamples < 0 or seed < 0:
        raise RagMetricsError(f"resamples and seed: whole numbers of at least 0; got {resamples!r}, {seed!r}")
    keys = id_keys(ids) if keys is None else keys
    m, n = len(values), len(keys)
    table = np.zeros((m, len(FIXED) + resamples), np.int64)
    if n == 0:
        return Sums(table, resamples, seed)
    fixed, valid = zip(*(fixed_point(v) for v in values)) if m else ((), ())
    salted = fmix(keys ^ _U64(_FINGERPRINT))
    with np.errstate(over="ignore"):
        for i in range(m):
            x, has = fixed[i], valid[i]
            squares = (x * x).astype(np.uint64)  # |x| <= 2^31: the square fits
            table[i, 0] = int(np.count_nonzero(has))
            table[i, 1] = int(x.sum())
            table[i, 2] = int((squares & _U64(0xFFFFFFFF)).sum(dtype=np.uint64))
            table[i, 3] = int((squares >> _U64(32)).sum(dtype=np.uint64))
            table[i, 4] = np.uint64(fmix(salted ^ value_bits(values[i])).sum(dtype=np.uint64)).view(np.int64)
            floats = np.asarray(values[i], np.float64)
            table[i, 5] = int(np.count_nonzero(stats.zero_or_one(floats)))
            table[i, 6] = int(np.count_nonzero(floats > stats.TIE_TOLERANCE))
            table[i, 7] = int(np.count_nonzero(floats < -stats.TIE_TOLERANCE))
    if resamples and m:
        _resample_sums(table, keys, fixed, resamples, seed)
    return Sums(table, resamples, seed)


def _halves(fixed: Sequence[np.ndarray]) -> np.ndarray:
    """(queries, 2 * metrics) float64: per metric, the low 16 bits and the rest of the fixed-point value (so a sign
    times either is below 2^16 in size and any sum of 2^32 of them is exact)."""
    columns = []
    for x in fixed:
        columns += [(x & 0xFFFF).astype(np.float64), (x >> 16).astype(np.float64)]
    return np.stack(columns, axis=1)


def _resample_sums(table: np.ndarray, keys: np.ndarray, fixed: Sequence[np.ndarray], resamples: int, seed: int) -> None:
    m, n = len(fixed), len(keys)
    halves = _halves(fixed)
    sign_bases = _seeded(keys, seed, _SIGNS)
    rows = max(1, min(resamples, _CELLS // n))
    per = max(1, _CELLS // rows)
    base = len(FIXED)
    for first in range(0, resamples, rows):
        count = min(rows, resamples - first)
        signed = np.zeros((count, 2 * m), np.float64)
        for start in range(0, n, per):
            part = slice(start, start + per)
            signs = 1.0 - 2.0 * (_words(sign_bases[part], first, count) >> _U64(63)).astype(np.float64)
            signed += signs @ halves[part]
        exact = signed.astype(np.int64)
        with np.errstate(over="ignore"):
            for i in range(m):
                table[i, base + first : base + first + count] = exact[:, 2 * i + 1] * 65536 + exact[:, 2 * i]


def merge_all(parts: Iterable[Sums], metrics: int, resamples: int = 0, seed: int = 0) -> Sums:
    """Every part added (none: empty sums)."""
    total = Sums.empty(metrics, resamples, seed)
    for part in parts:
        total = total.merge(part)
    return total


def run_sums(run: QueryValues, resamples: int = 0, seed: int = 0) -> Sums:
    """A run's :class:`Sums`: those its buckets emitted (a partitioned run's ``sums``) when they hold these
    resamples, else made here from its collected per-query values (the same numbers: the sums do not depend on how
    the queries are split)."""
    emitted: Sums | None = getattr(run, "sums", None)
    if emitted is not None and (resamples == 0 or (emitted.resamples, emitted.seed) == (resamples, seed)):
        return emitted
    if run.query_ids is None:
        raise RagMetricsError(
            f"run {run.name!r}: its per-query values were written to a file and its buckets made no sums of "
            f"{resamples} resamples (seed {seed})"
        )
    return sums_of(run.query_ids, [run.arrays[m] for m in run.metrics], resamples, seed)
