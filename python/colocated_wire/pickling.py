"""Pickled functions (and values) whose shared objects travel through the table.

A closure often captures a Mesh or a NamedSharding that the specs use too.
The pickler gives such objects a *persistent id* instead of pickling them:
the id is a position in `PickledFunction.refs`, and each ref is a table
index, so a captured mesh is written once, in the table, and the pickle
holds a small integer. On load, `persistent_load` returns the lifted object,
the same instance the specs hold. A value's pickle (colocated.v1.2's
PickledValue) works the same way, its leaves' specs (ShapeDtypeStructs)
among the objects it refers to through the table.

Unpickling runs code chosen by whoever wrote the bytes, so it happens only
when the caller passes `allow_pickle=True` (see decode.py).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence
from typing import Any

import cloudpickle

from colocated_wire.entries import ENTRIES
from colocated_wire.table.lower_table import TableBuilder
from colocated_wire.unknown import UnknownEntry

# What a function's pickle refers to through the table: the shared objects, not the leaves.
SHARED_TYPES = tuple(codec.TYPE for kind, codec in ENTRIES.items() if kind != "array_spec")
# What a value's pickle refers to through the table: every kind of entry, as its leaves do.
VALUE_SHARED_TYPES = (*(codec.TYPE for codec in ENTRIES.values()), UnknownEntry)


class _TablePickler(cloudpickle.Pickler):
    def __init__(self, file, builder: TableBuilder, shared_types: tuple[type, ...]):
        super().__init__(file)
        self._builder = builder
        self._shared_types = shared_types
        self.refs: list[int] = []
        self._positions: dict[int, int] = {}  # table index -> position in refs

    def persistent_id(self, obj: Any):
        if not isinstance(obj, self._shared_types):
            return None
        index = self._builder.add(obj)
        position = self._positions.get(index)
        if position is None:
            position = self._positions[index] = len(self.refs)
            self.refs.append(index)
        return position


def pickle_function(
    fun: Any, builder: TableBuilder, shared_types: tuple[type, ...] = SHARED_TYPES
) -> tuple[bytes, list[int]]:
    """(pickle bytes, refs): the function (or value), its objects of `shared_types` added to
    `builder`."""
    with io.BytesIO() as f:
        p = _TablePickler(f, builder, shared_types)
        p.dump(fun)
        return f.getvalue(), p.refs


class _TableUnpickler(pickle.Unpickler):
    def __init__(self, file, shared: Sequence[Any]):
        super().__init__(file)
        self._shared = shared

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, int) or not 0 <= pid < len(self._shared):
            raise pickle.UnpicklingError(f"persistent id {pid!r} is not a position in refs")
        return self._shared[pid]


def unpickle_function(data: bytes, shared: Sequence[Any]) -> Any:
    """Runs the pickle. `shared[k]` is the lifted object of refs[k]."""
    with io.BytesIO(data) as f:
        return _TableUnpickler(f, shared).load()
