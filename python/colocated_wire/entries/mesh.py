"""Mesh entries: a device list reference, and the axes (sizes, names, types) that shape it.

JAX interns meshes, so one Mesh object stands for one value for as long as it
lives. Lowering remembers each mesh's payload-independent part (its device
list entry's bytes and its axes) by the mesh, weakly; lifting remembers each
lifted mesh by its ids and axes, weakly. A mesh this process lowered or lifted
before then costs a dict lookup instead of a pass over its devices.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from jax.sharding import Mesh

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.devices import devices_for_ids, ids_key, remember_mesh
from colocated_wire.entries import device_list
from colocated_wire.entries.device_list import DEVICE_LIST
from colocated_wire.entries.enum_names import wire_names
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.jax_compat.axis_types import AXIS_TYPE_NAMED, axis_types_of, make_mesh

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = Mesh
# Axis types by name: AXIS_TYPE_EXPLICIT is AxisType.Explicit.
AXIS_TYPES = {
    v: AXIS_TYPE_NAMED[n.capitalize()]
    for v, n in wire_names(table_pb2.AxisType, "AXIS_TYPE_").items()
}
_AXIS_TYPES_TO_WIRE = {t: v for v, t in AXIS_TYPES.items()}
# A reference to a mesh.
MESH = frozenset({"mesh"})


class Lowered(NamedTuple):
    """What lowering a mesh gives whatever the payload: its device list entry's bytes, and
    its message without the reference to that entry."""

    device_list_entry: bytes
    message: table_pb2.Mesh


_LOWERED: weakref.WeakKeyDictionary[Mesh, Lowered] = weakref.WeakKeyDictionary()
# Lifted meshes by (ids_key, sizes, names, wire axis types).
_LIFTED: weakref.WeakValueDictionary[tuple, Mesh] = weakref.WeakValueDictionary()


def mesh_problem(
    sizes: Sequence[int], names: Sequence[str], type_count: int, device_count: int
) -> Problem | None:
    """A mesh's axes against its device count: counts, then names, then sizes."""
    if not len(sizes) == len(names) == type_count:
        detail = f"{len(sizes)} sizes, {len(names)} names and {type_count} types disagree"
        return Problem("invalid-mesh", detail)
    for k, name in enumerate(names):
        if not name:
            return Problem("invalid-value", "empty axis name", f".axis_names[{k}]")
        if name in names[:k]:
            return Problem("invalid-mesh", f"axis {name!r} repeats", f".axis_names[{k}]")
    if int(np.prod(sizes, dtype=object)) != device_count:
        detail = f"sizes {list(sizes)} do not hold {device_count} devices"
        return Problem("invalid-mesh", detail, ".axis_sizes")
    if device_count == 0:  # JAX aborts the process on a sharding over an empty mesh
        return Problem("invalid-mesh", "a mesh holds no devices", ".axis_sizes")
    return None


def lower(mesh: Mesh, ctx: LowerContext) -> table_pb2.Mesh:
    """The Mesh message; its devices are added to the table first."""
    done = _LOWERED.get(mesh)
    if done is None:
        done = _lower(mesh)
        _LOWERED[mesh] = done
    msg = table_pb2.Mesh(device_list=ctx.builder.add_entry_bytes(done.device_list_entry))
    msg.MergeFrom(done.message)
    return msg


def _lower(mesh: Mesh) -> Lowered:
    names = _axis_names(mesh.axis_names)
    sizes = list(mesh.devices.shape)
    types = axis_types_of(mesh)
    refuse("mesh", mesh_problem(sizes, names, len(types), mesh.devices.size))
    # Once per mesh: a device's id is a C++ property, read one device at a time.
    ids = device_list.lower_device_ids([d.id for d in mesh.devices.flat])
    entry = table_pb2.Entry(device_list=ids)
    message = table_pb2.Mesh(
        axis_sizes=sizes,
        axis_names=names,
        axis_types=[_AXIS_TYPES_TO_WIRE[t] for t in types],
    )
    return Lowered(entry.SerializeToString(deterministic=True), message)


def _axis_names(names: Sequence[Any]) -> list[str]:
    for n in names:
        if not isinstance(n, str) or not n:
            raise EncodeError(f"mesh axis name {n!r}: axis names must be non-empty str")
    return list(names)


def check(msg: table_pb2.Mesh, ctx: CheckContext) -> np.ndarray:
    """Checks the device list reference, the rank, the axis types, then the axes; the facts
    are the device list's ids."""
    path, refs = ctx.path, ctx.refs
    dl = refs.require(msg, "device_list", f"{path}.device_list", DEVICE_LIST, ctx.index)
    sizes, names, types = list(msg.axis_sizes), list(msg.axis_names), list(msg.axis_types)
    if len(sizes) > ctx.limits.max_rank:
        raise DecodeError(
            f"{path}.axis_sizes",
            "limit-exceeded",
            f"rank {len(sizes)} exceeds the limit of {ctx.limits.max_rank}",
        )
    for k, t in enumerate(types):
        if t not in AXIS_TYPES:
            raise DecodeError(f"{path}.axis_types[{k}]", "unknown-enum", f"unknown axis type {t}")
    ids = refs.facts[dl]
    raise_problem(path, mesh_problem(sizes, names, len(types), len(ids)))
    return ids


def lift(msg: table_pb2.Mesh, ctx: LiftContext) -> Mesh:
    """The Mesh of the checked ids and axes: the one lifted before, while it lives."""
    return lift_planned(plan(msg), ctx)


def plan(msg: table_pb2.Mesh) -> tuple:
    """(sizes, names, types) of a checked entry's axes."""
    return (tuple(msg.axis_sizes), tuple(msg.axis_names), tuple(msg.axis_types))


def lift_planned(plan: tuple, ctx: LiftContext) -> Mesh:
    """The Mesh of a plan and the checked ids: the one lifted before, while it lives."""
    ids = ctx.facts
    devices_key = ids_key(ids)
    sizes, names, types = plan
    key = (devices_key, sizes, names, types)
    mesh = _LIFTED.get(key)
    if mesh is None:
        devices = devices_for_ids(ids).reshape(sizes)
        mesh = make_mesh(devices, names, tuple(AXIS_TYPES[t] for t in types))
        _LIFTED[key] = mesh
        remember_mesh(devices_key, mesh)
    return mesh
