"""Lifting: a validated table -> JAX objects, in one forward pass.

Entries refer only backwards, so lifting entry i finds its dependencies
already lifted. Each entry becomes exactly one Python object, shared by
everything that refers to it: two leaves on one sharding hold the same
NamedSharding instance, and all shardings on one mesh the same Mesh.
Lifting trusts validation for everything about the payload itself; what
can still fail is this process (a device id it lacks, a memory kind its
backend does not have), which is a `LiftError`.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from colocated.v1 import table_pb2
from colocated_wire.devices import device_for_id, devices_for_ids
from colocated_wire.dtypes import dtype_from_wire
from colocated_wire.errors import LiftError
from colocated_wire.gspmd import lift_hlo_sharding
from colocated_wire.unknown import UnknownEntry
from colocated_wire.validate import ValidatedTable

_AXIS_TYPES = {
    table_pb2.AXIS_TYPE_AUTO: jax.sharding.AxisType.Auto,
    table_pb2.AXIS_TYPE_EXPLICIT: jax.sharding.AxisType.Explicit,
    table_pb2.AXIS_TYPE_MANUAL: jax.sharding.AxisType.Manual,
}


def lift_table(vt: ValidatedTable, path: str = "table") -> list[Any]:
    objects: list[Any] = []
    for i, entry in enumerate(vt.table.entries):
        kind = vt.kinds[i]
        try:
            objects.append(_lift_entry(entry, kind, i, vt, objects))
        except LiftError as e:
            raise LiftError(f"{path}[{i}].{kind}: {e}") from e
        except (ValueError, TypeError, RuntimeError) as e:
            raise LiftError(f"{path}[{i}].{kind}: JAX refused the object: {e}") from e
    return objects


def _memory_kind(msg, device: jax.Device) -> str | None:
    """The memory kind, which must be one that `device` (of this process) addresses."""
    if not msg.HasField("memory_kind"):
        return None
    kind = msg.memory_kind
    try:
        kinds = {m.kind for m in device.addressable_memories()}
    except Exception:  # a backend without memories: JAX decides
        return kind
    if kind not in kinds:
        have = ", ".join(sorted(kinds))
        raise LiftError(f"memory kind {kind!r} is not one of {device}'s ({have})")
    return kind


def _lift_entry(entry: table_pb2.Entry, kind, i: int, vt: ValidatedTable, objects: list) -> Any:
    if kind == "device_list":
        return xc.DeviceList(tuple(devices_for_ids(vt.device_ids[i])))
    if kind == "mesh":
        m = entry.mesh
        device_list = objects[m.device_list]
        # fromiter fills an object array several times faster than slice assignment.
        devices = np.fromiter(device_list, dtype=object, count=len(device_list))
        return Mesh(
            devices.reshape(tuple(m.axis_sizes)),
            tuple(m.axis_names),
            axis_types=tuple(_AXIS_TYPES[t] for t in m.axis_types),
        )
    if kind == "named_sharding":
        s = entry.named_sharding
        mesh = objects[s.mesh]
        kind = _memory_kind(s, mesh.devices.flat[0])
        return NamedSharding(mesh, lift_partition_spec(s.spec), memory_kind=kind)
    if kind == "single_device_sharding":
        s = entry.single_device_sharding
        device = device_for_id(s.device_id)
        return SingleDeviceSharding(device, memory_kind=_memory_kind(s, device))
    if kind == "gspmd_sharding":
        g = entry.gspmd_sharding
        hlo = lift_hlo_sharding(g, vt.tile_ids.get(i))
        devices = objects[g.device_list]
        kind = _memory_kind(g, devices[0])
        return sharding_impls.GSPMDSharding(devices, hlo, memory_kind=kind)
    if kind == "array_spec":
        a = entry.array_spec
        sharding = objects[a.sharding] if a.HasField("sharding") else None
        return jax.ShapeDtypeStruct(
            tuple(a.shape), dtype_from_wire(a.dtype), sharding=sharding, weak_type=a.weak_type
        )
    return UnknownEntry(entry.SerializeToString(deterministic=True))


def lift_partition_spec(spec: table_pb2.PartitionSpec) -> PartitionSpec:
    parts: list[Any] = []
    for e in spec.entries:
        if e.kind == table_pb2.PARTITION_SPEC_ENTRY_KIND_NONE:
            parts.append(None)
        elif e.kind == table_pb2.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
            parts.append(PartitionSpec.UNCONSTRAINED)
        elif e.kind == table_pb2.PARTITION_SPEC_ENTRY_KIND_AXIS:
            parts.append(e.axes[0])
        else:
            parts.append(tuple(e.axes))
    return PartitionSpec(
        *parts, unreduced=frozenset(spec.unreduced), reduced=frozenset(spec.reduced)
    )
