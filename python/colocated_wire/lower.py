"""Lowering: JAX objects -> entries of one SharedObjectTable.

`TableBuilder.add` appends an object after its dependencies (post-order) and
returns its index; the first encounter fixes the index, so the table order
is canonical (docs/wire-format.md, "Table order"). Objects are deduplicated
by value: an entry's key is its own canonical bytes, which hold its
dependencies as indexes that were deduplicated first, so two objects share
an entry exactly when they would be written alike -- equal-but-distinct
meshes and ShapeDtypeStructs become one entry. A cache by identity makes
repeated references to one object cost a dict lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from colocated.v1 import table_pb2
from colocated_wire.device_ids import lower_device_ids
from colocated_wire.dtypes import dtype_to_wire
from colocated_wire.errors import EncodeError
from colocated_wire.gspmd import lower_hlo_sharding
from colocated_wire.unknown import UnknownEntry

GSPMDSharding = sharding_impls.GSPMDSharding
DeviceList = xc.DeviceList
MAX_DIM = 2**53 - 1

_AXIS_TYPES = {
    jax.sharding.AxisType.Auto: table_pb2.AXIS_TYPE_AUTO,
    jax.sharding.AxisType.Explicit: table_pb2.AXIS_TYPE_EXPLICIT,
    jax.sharding.AxisType.Manual: table_pb2.AXIS_TYPE_MANUAL,
}

# The types the pickler sends through the table (see pickling.py).
SHARED_TYPES = (Mesh, NamedSharding, SingleDeviceSharding, GSPMDSharding, DeviceList)


class TableBuilder:
    """Collects the shared objects of one payload, each distinct value once."""

    def __init__(self) -> None:
        self.table = table_pb2.SharedObjectTable()
        self._by_value: dict[bytes, int] = {}
        self._by_leaf_fields: dict[tuple, int] = {}
        self._by_identity: dict[int, int] = {}
        self._keep_alive: list[Any] = []  # so that ids in _by_identity stay unique

    def add(self, obj: Any) -> int:
        """Adds a shared object (and what it refers to); returns its index."""
        found = self._by_identity.get(id(obj))
        if found is not None:
            return found
        if isinstance(obj, jax.ShapeDtypeStruct):
            index = self._leaf(obj)
        else:
            index = self._intern(self._lower(obj))
        self._by_identity[id(obj)] = index
        self._keep_alive.append(obj)
        return index

    def add_devices(self, devices: DeviceList | Sequence[jax.Device]) -> int:
        """A device list given as a DeviceList or a sequence of devices."""
        if isinstance(devices, DeviceList):
            return self.add(devices)
        return self._device_ids([d.id for d in devices])

    def _leaf(self, spec: jax.ShapeDtypeStruct) -> int:
        # Leaves are many and mostly equal: key them by their fields, before building a message.
        sharding = spec.sharding
        index = None if sharding is None else self.add(self._checked_sharding(sharding))
        key = (index, spec.shape, spec.dtype, bool(spec.weak_type))
        found = self._by_leaf_fields.get(key)
        if found is None:
            found = self._intern(self._array_spec(spec, index))
            self._by_leaf_fields[key] = found
        return found

    def _intern(self, entry: table_pb2.Entry) -> int:
        key = entry.SerializeToString(deterministic=True)
        index = self._by_value.get(key)
        if index is None:
            index = len(self.table.entries)
            self.table.entries.append(entry)
            self._by_value[key] = index
        return index

    def _lower(self, obj: Any) -> table_pb2.Entry:
        if isinstance(obj, NamedSharding):
            return self._named_sharding(obj)
        if isinstance(obj, Mesh):
            return self._mesh(obj)
        if isinstance(obj, DeviceList):
            return table_pb2.Entry(device_list=lower_device_ids([d.id for d in obj]))
        if isinstance(obj, SingleDeviceSharding):
            return self._single_device_sharding(obj)
        if isinstance(obj, GSPMDSharding):
            return self._gspmd_sharding(obj)
        if isinstance(obj, UnknownEntry):
            return table_pb2.Entry.FromString(obj.entry_bytes)
        raise EncodeError(f"{type(obj).__name__} is not a shared object colocated.v1 can write")

    def _device_ids(self, ids: Sequence[int]) -> int:
        return self._intern(table_pb2.Entry(device_list=lower_device_ids(ids)))

    def _mesh(self, mesh: Mesh) -> table_pb2.Entry:
        if mesh.devices.size == 0:  # a decoder refuses it: JAX aborts on shardings over it
            raise EncodeError("a mesh holds no devices")
        device_list = self._device_ids([d.id for d in mesh.devices.flat])
        msg = table_pb2.Mesh(
            device_list=device_list,
            axis_sizes=list(mesh.devices.shape),
            axis_names=_axis_names(mesh.axis_names),
            axis_types=[_AXIS_TYPES[t] for t in mesh.axis_types],
        )
        return table_pb2.Entry(mesh=msg)

    def _named_sharding(self, sharding: NamedSharding) -> table_pb2.Entry:
        if not isinstance(sharding.mesh, Mesh):
            raise EncodeError(
                f"NamedSharding over {type(sharding.mesh).__name__}: only a concrete Mesh encodes"
            )
        msg = table_pb2.NamedSharding(mesh=self.add(sharding.mesh))
        lower_partition_spec(sharding.spec, msg.spec)
        msg.spec.SetInParent()
        kind = _memory_kind(sharding, sharding.mesh.devices.flat[0])
        if kind is not None:
            msg.memory_kind = kind
        return table_pb2.Entry(named_sharding=msg)

    def _single_device_sharding(self, sharding: SingleDeviceSharding) -> table_pb2.Entry:
        (device,) = sharding.device_set
        msg = table_pb2.SingleDeviceSharding(device_id=device.id)
        kind = _memory_kind(sharding, device)
        if kind is not None:
            msg.memory_kind = kind
        return table_pb2.Entry(single_device_sharding=msg)

    def _gspmd_sharding(self, sharding: GSPMDSharding) -> table_pb2.Entry:
        msg = table_pb2.GspmdSharding(device_list=self.add(sharding._internal_device_list))
        lower_hlo_sharding(sharding._hlo_sharding, msg)
        kind = _memory_kind(sharding, sharding._device_assignment[0])
        if kind is not None:
            msg.memory_kind = kind
        return table_pb2.Entry(gspmd_sharding=msg)

    @staticmethod
    def _checked_sharding(sharding: Any) -> Any:
        if not isinstance(sharding, SHARED_TYPES[:4] + (UnknownEntry,)):
            name = type(sharding).__name__
            raise EncodeError(f"ShapeDtypeStruct sharding {name} is not supported")
        return sharding

    def _array_spec(self, spec: jax.ShapeDtypeStruct, sharding: int | None) -> table_pb2.Entry:
        msg = table_pb2.ArraySpec()
        if sharding is not None:
            msg.sharding = sharding
        for d in spec.shape:
            if not isinstance(d, int) or not 0 <= d <= MAX_DIM:
                raise EncodeError(f"shape {spec.shape}: dimensions must be ints in [0, 2**53-1]")
        msg.shape.extend(int(d) for d in spec.shape)
        msg.dtype = dtype_to_wire(spec.dtype)
        msg.weak_type = bool(spec.weak_type)
        return table_pb2.Entry(array_spec=msg)


def _memory_kind(sharding: Any, device: jax.Device) -> str | None:
    """The memory kind to write: None when it is the device's default.

    JAX resolves `memory_kind=None` to the default kind when a sharding is
    built (`NamedSharding(mesh, P()).memory_kind == "device"` on CPU), so the
    two cannot be told apart; the canonical form omits the default.
    """
    kind = sharding.memory_kind
    if kind is None:
        return None
    try:
        default = device.default_memory().kind
    except Exception:  # a backend without memories: keep what the sharding says
        return kind
    return None if kind == default else kind


def _axis_names(names: Sequence[Any]) -> list[str]:
    for n in names:
        if not isinstance(n, str) or not n:
            raise EncodeError(f"mesh axis name {n!r}: axis names must be non-empty str")
    return list(names)


def lower_partition_spec(spec: PartitionSpec, out: table_pb2.PartitionSpec) -> None:
    """Writes what the PartitionSpec literally holds (JAX already turns ('x',) into 'x')."""
    for part in spec.partitions:
        entry = out.entries.add()
        if part is None:
            entry.kind = table_pb2.PARTITION_SPEC_ENTRY_KIND_NONE
        elif part is PartitionSpec.UNCONSTRAINED:
            entry.kind = table_pb2.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED
        elif isinstance(part, str):
            entry.kind = table_pb2.PARTITION_SPEC_ENTRY_KIND_AXIS
            entry.axes.append(part)
        elif isinstance(part, tuple) and all(isinstance(a, str) for a in part):
            entry.kind = table_pb2.PARTITION_SPEC_ENTRY_KIND_TUPLE
            entry.axes.extend(part)
        else:
            raise EncodeError(f"PartitionSpec entry {part!r} is not None, a str or a tuple of str")
    for name, axes in (("unreduced", spec.unreduced), ("reduced", spec.reduced)):
        if not all(isinstance(a, str) for a in axes):
            raise EncodeError(
                f"PartitionSpec {name} axes must be str, got {sorted(map(repr, axes))}"
            )
        getattr(out, name).extend(sorted(axes))  # str order is code-point order
