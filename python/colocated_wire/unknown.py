"""Table entries, and leaves of a value, of a kind this version does not know.

A newer minor version may add entry kinds. A reader that meets one where any
shared object may stand (a leaf's sharding, a pickled function's ref) keeps
it as an `UnknownEntry` holding the entry's bytes, instead of failing; a
reference that needs a particular kind (a mesh's device list, ...) is
`wrong-entry-kind`. `UnknownEntry` subclasses `jax.sharding.Sharding` only so
that a `ShapeDtypeStruct` can hold it; every use of it as a sharding fails
with a clear message. A value's leaf of a kind added later (colocated.v1.2's
ValueLeaf) is an `UnknownValue`, written back as it came.
"""

from __future__ import annotations

import jax


class UnknownEntry(jax.sharding.Sharding):
    def __init__(self, entry_bytes: bytes):
        self.entry_bytes = bytes(entry_bytes)

    def __repr__(self) -> str:
        return f"UnknownEntry({len(self.entry_bytes)} bytes)"

    def __eq__(self, other) -> bool:
        return isinstance(other, UnknownEntry) and other.entry_bytes == self.entry_bytes

    def __hash__(self) -> int:
        return hash((UnknownEntry, self.entry_bytes))

    def _unusable(self, *args, **kwargs):
        raise TypeError("an entry of a kind unknown to this colocated-wire version is not usable")

    device_set = property(_unusable)
    is_fully_addressable = property(_unusable)
    is_fully_replicated = property(_unusable)
    memory_kind = property(_unusable)
    num_devices = property(_unusable)
    _device_assignment = property(_unusable)
    _internal_device_list = property(_unusable)
    with_memory_kind = _unusable
    _to_xla_hlo_sharding = _unusable
    _to_sdy_sharding = _unusable
    shard_shape = _unusable

    def check_compatible_aval(self, aval_shape) -> None:
        """Nothing is known to check; ShapeDtypeStruct calls this when built."""


class UnknownValue:
    """A leaf of a value of a kind this version does not know: its ValueLeaf's bytes, and the
    minor version of the payload it came in (written again, the payload keeps it)."""

    __slots__ = ("leaf_bytes", "minor_version")

    def __init__(self, leaf_bytes: bytes, minor_version: int):
        self.leaf_bytes = bytes(leaf_bytes)
        self.minor_version = minor_version

    def __repr__(self) -> str:
        return f"UnknownValue({len(self.leaf_bytes)} bytes of colocated.v1.{self.minor_version})"

    def __eq__(self, other) -> bool:
        return isinstance(other, UnknownValue) and other.leaf_bytes == self.leaf_bytes

    def __hash__(self) -> int:
        return hash((UnknownValue, self.leaf_bytes))
