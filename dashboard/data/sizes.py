"""How many bytes a value holds in memory, measured from its buffers.

Arrow arrays count their buffers, numpy arrays their data, pandas frames ``memory_usage`` (object columns by a
sample of their values), and the containers, dataclasses and objects around them are walked. A buffer seen twice
(a numpy view, an Arrow array made from a numpy array without a copy, one object reached by two paths) is counted
once, by its address. Sequences of Python objects longer than ``SAMPLE`` are estimated from ``SAMPLE`` of their
items, so measuring stays cheap whatever the size.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import types
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["SAMPLE", "nbytes"]

SAMPLE = 1000
"""Items measured of a longer sequence of Python objects (the rest estimated from them)."""

_DEPTH = 12
_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Thread,
    threading.Condition,
    threading.Event,
)


def nbytes(value: Any, *, exclude: Iterable[Any] = ()) -> int:
    """Bytes ``value`` holds, with everything reachable from it; objects in ``exclude`` (and what only they
    reach) are not counted, e.g. parts another cache counts."""
    walk = _Walk(exclude)
    walk.add(value, 0)
    return walk.total()


class _Walk:
    def __init__(self, exclude: Iterable[Any]) -> None:
        # every object walked is kept alive until the walk ends, so no temporary (an Arrow column's wrapper)
        # frees its id for another object to be mistaken for it
        self.kept = list(exclude)
        self.seen = {id(x) for x in self.kept}
        self.buffers: dict[int, int] = {}  # address -> bytes
        self.objects = 0

    def total(self) -> int:
        return self.objects + sum(self.buffers.values())

    def buffer(self, address: int, size: int) -> None:
        if size > self.buffers.get(address, 0):
            self.buffers[address] = size

    def add(self, obj: Any, depth: int) -> None:
        if obj is None or isinstance(obj, (bool, int, float, complex)) or id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        self.kept.append(obj)
        if isinstance(obj, np.ndarray):
            self.numpy(obj, depth)
        elif isinstance(obj, (pa.Table, pa.RecordBatch)):
            for column in obj.columns:
                self.add(column, depth + 1)
        elif isinstance(obj, pa.ChunkedArray):
            for chunk in obj.chunks:
                self.add(chunk, depth + 1)
        elif isinstance(obj, pa.Array):
            self.arrow(obj, depth)
        elif isinstance(obj, pa.Buffer):
            self.buffer(obj.address, obj.size)
        elif isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
            self.pandas(obj)
        elif isinstance(obj, (str, bytes, bytearray, memoryview, *_OPAQUE)) or depth > _DEPTH:
            self.objects += sys.getsizeof(obj)
        elif isinstance(obj, dict):
            self.objects += sys.getsizeof(obj)
            self.items([*obj.keys(), *obj.values()], depth)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            self.objects += sys.getsizeof(obj)
            self.items(list(obj), depth)
        else:
            self.objects += sys.getsizeof(obj)
            self.items(_attributes(obj), depth)

    def items(self, values: Sequence[Any] | np.ndarray, depth: int) -> None:
        """Every item of a short sequence; ``SAMPLE`` evenly spread items of a long one, scaled to its length."""
        if len(values) <= SAMPLE:
            for value in values:
                self.add(value, depth + 1)
            return
        before = self.total()
        step = len(values) / SAMPLE
        for i in range(SAMPLE):
            self.add(values[int(i * step)], depth + 1)
        self.objects += int((self.total() - before) * (step - 1))

    def numpy(self, array: np.ndarray, depth: int) -> None:
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        self.buffer(root.__array_interface__["data"][0], root.nbytes)
        if array.dtype == object:
            self.items(array.ravel(), depth)

    def arrow(self, array: pa.Array, depth: int) -> None:
        for buffer in array.buffers():
            if buffer is not None:
                self.buffer(buffer.address, buffer.size)
        if isinstance(array, pa.DictionaryArray):
            self.add(array.dictionary, depth + 1)

    def pandas(self, obj: pd.DataFrame | pd.Series | pd.Index) -> None:
        frame = obj.to_frame() if isinstance(obj, (pd.Series, pd.Index)) else obj
        self.objects += int(frame.memory_usage(index=not isinstance(obj, pd.Index), deep=False).sum())
        columns = [frame.iloc[:, i] for i in range(frame.shape[1]) if frame.dtypes.iloc[i] == np.dtype(object)]
        if frame.index.dtype == object and not isinstance(obj, pd.Index):
            columns.append(frame.index.to_series())
        for column in columns:
            self.items(column.to_numpy(copy=False), 0)


def _attributes(obj: Any) -> list[Any]:
    """The attribute values of an object: its dataclass fields, ``__dict__`` and ``__slots__``."""
    values: list[Any] = []
    if dataclasses.is_dataclass(obj):
        values += [getattr(obj, f.name, None) for f in dataclasses.fields(obj)]
    values += list(getattr(obj, "__dict__", {}).values())
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                values.append(getattr(obj, slot))
    return values
