"""Lowering into a table: JAX objects -> entries of one SharedObjectTable.

`TableBuilder.add` appends an object after its dependencies (post-order) and
returns its index; the first encounter fixes the index, so the table order
is canonical (docs/wire-format.md, "Table order"). Objects are deduplicated
by value: an entry's key is its own canonical bytes, which hold its
dependencies as indexes that were deduplicated first, so two objects share
an entry exactly when they would be written alike -- equal-but-distinct
meshes and ShapeDtypeStructs become one entry. A cache by identity makes
repeated references to one object cost a dict lookup, and a kind with a
`key` (leaves, named shardings) is found by its fields before any message is
built. What stays true across payloads (a mesh's device list, a sharding's
spec) is remembered by the entry modules, weakly, and handed back as bytes or
messages whose references are this payload's indices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import jax

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries import codec_of, device_list
from colocated_wire.errors import EncodeError
from colocated_wire.unknown import UnknownEntry
from colocated_wire.version import SCHEMA_MINOR_VERSION


@dataclasses.dataclass(slots=True)
class LowerContext:
    """What an entry's `lower` adds its dependencies to."""

    builder: TableBuilder


class TableBuilder:
    """Collects the shared objects of one payload, each distinct value once, writing nothing
    newer than the minor version the payload targets."""

    def __init__(self, target_minor_version: int = SCHEMA_MINOR_VERSION) -> None:
        self.target_minor_version = target_minor_version
        self.table = table_pb2.SharedObjectTable()
        self._ctx = LowerContext(self)
        self._by_value: dict[bytes, int] = {}
        self._by_key: dict[tuple, int] = {}
        self._by_identity: dict[int, int] = {}
        self._keep_alive: list[Any] = []  # so that ids in _by_identity stay unique
        # Leaves by their parts, for array_spec.add_leaves.
        self.leaves: dict[tuple, int] = {}
        self.entry_bytes: list[bytes] = []  # each entry's canonical bytes, by index

    def add(self, obj: Any) -> int:
        """Adds a shared object (and what it refers to); returns its index."""
        found = self._by_identity.get(id(obj))
        if found is not None:
            return found
        codec = _CODECS.get(type(obj)) or _codec(obj)
        key = None if codec is None or codec[2] is None else codec[2](obj, self._ctx)
        if key is None:
            index = self._intern(self._lower(obj, codec))
        else:
            # Leaves and shardings are many and mostly equal: keyed by their fields (and the
            # indices of what they refer to) before a message is built.
            key = (codec[0], key)
            try:
                index = self._by_key.get(key)
            except TypeError:  # an unhashable field, which lowering refuses
                index = key = None
            if index is None:
                index = self._intern(self._lower(obj, codec))
                if key is not None:
                    self._by_key[key] = index
        self._by_identity[id(obj)] = index
        self._keep_alive.append(obj)
        return index

    def add_devices(self, devices: Iterable[jax.Device]) -> int:
        """A device list given as a DeviceList or any iterable of devices."""
        if isinstance(devices, device_list.TYPE):
            return self.add(devices)
        return self._intern(table_pb2.Entry(device_list=device_list.lower(devices, self._ctx)))

    def add_entry_bytes(self, entry: bytes) -> int:
        """An entry given as its canonical bytes (an `Entry` lowered before); returns its index."""
        index = self._by_value.get(entry)
        if index is None:
            index = len(self.table.entries)
            self.table.entries.add().ParseFromString(entry)
            self._by_value[entry] = index
            self.entry_bytes.append(entry)
        return index

    def hold(self, obj: Any) -> None:
        """Keeps `obj` alive as long as the builder, so that ids taken from it stay its own."""
        self._keep_alive.append(obj)

    def _intern(self, entry: table_pb2.Entry) -> int:
        key = entry.SerializeToString(deterministic=True)
        index = self._by_value.get(key)
        if index is None:
            index = len(self.table.entries)
            self.table.entries.append(entry)
            self._by_value[key] = index
            self.entry_bytes.append(key)
        return index

    def _lower(self, obj: Any, codec: tuple[str, Any, Any] | None) -> table_pb2.Entry:
        if isinstance(obj, UnknownEntry):  # a kind of a newer minor version, written as it came
            return table_pb2.Entry.FromString(obj.entry_bytes)
        if codec is None:
            raise EncodeError(f"{type(obj).__name__} is not a shared object colocated.v1 can write")
        kind, module, _ = codec
        return table_pb2.Entry(**{kind: module.lower(obj, self._ctx)})


# (kind, module, its `key` or None) by class; codec_of depends on the class only.
_CODECS: dict[type, tuple[str, ModuleType, Callable | None]] = {}


def _codec(obj: Any) -> tuple[str, ModuleType, Callable | None] | None:
    if isinstance(obj, UnknownEntry):
        return None
    found = codec_of(obj)
    if found is None:
        return None
    codec = _CODECS[type(obj)] = (*found, getattr(found[1], "key", None))
    return codec
