"""NamedSharding entries: a mesh reference, a PartitionSpec over its axes, a memory kind.

Programs make a fresh NamedSharding per array, most of them equal. Within a
payload they are keyed by their mesh's index and their spec's fields, so
equal ones cost a dict lookup; across payloads each mesh (weakly) keeps the
messages of its shardings without the mesh's index, which is the payload's.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries.memory_kind import (
    check_memory_kind,
    lift_memory_kind,
    lower_memory_kind,
)
from colocated_wire.entries.mesh import MESH
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import EncodeError
from colocated_wire.jax_compat.partition_spec import make_spec, spec_fields
from colocated_wire.jax_compat.spec_identity import lifted_specs, spec_key

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = NamedSharding
_P = table_pb2
# The fewest and most axes of each PartitionSpec entry kind (None: no most).
_SPEC_KINDS = {
    _P.PARTITION_SPEC_ENTRY_KIND_NONE: (0, 0),
    _P.PARTITION_SPEC_ENTRY_KIND_AXIS: (1, 1),
    _P.PARTITION_SPEC_ENTRY_KIND_TUPLE: (0, None),
    _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED: (0, 0),
}


class SpecAxisRules:
    """The axes of one PartitionSpec, checked one at a time in order, as JAX checks them."""

    def __init__(self, mesh_axes: Sequence[str], mesh_types: Sequence[int]):
        self.types = dict(zip(mesh_axes, mesh_types, strict=True))
        self.used: set[str] = set()

    def axis(self, name: str, role: str = "partition") -> Problem | None:
        """The next axis the spec names: a mesh axis, used once; unreduced and reduced Explicit."""
        if name not in self.types:
            return Problem("unknown-axis", f"the mesh has no axis {name!r}")
        if name in self.used:
            return Problem("repeated-axis", f"axis {name!r} appears twice")
        self.used.add(name)
        if role != "partition" and self.types[name] != _P.AXIS_TYPE_EXPLICIT:
            return Problem("invalid-value", f"{role} axis {name!r} is not Explicit")
        return None

    def unconstrained(self) -> Problem | None:
        """An UNCONSTRAINED entry needs an Auto axis."""
        if _P.AXIS_TYPE_AUTO in self.types.values():
            return None
        return Problem("invalid-value", "UNCONSTRAINED needs a mesh with an Auto axis")


def spec_axes_problem(
    spec: table_pb2.PartitionSpec, mesh_axes: Sequence[str], mesh_types: Sequence[int]
) -> Problem | None:
    """A PartitionSpec message against its mesh: each entry (kind, arity, axes), then
    unreduced and reduced, in order; `at` is below the spec."""
    rules = SpecAxisRules(mesh_axes, mesh_types)
    for j, e in enumerate(spec.entries):
        at = f".entries[{j}]"
        bounds = _SPEC_KINDS.get(e.kind)
        if bounds is None:
            return Problem("unknown-enum", f"unknown entry kind {e.kind}", f"{at}.kind")
        lo, hi = bounds
        if len(e.axes) < lo or (hi is not None and len(e.axes) > hi):
            name = _P.PartitionSpecEntryKind.Name(e.kind)
            return Problem("invalid-value", f"{len(e.axes)} axes for a {name} entry", f"{at}.axes")
        if e.kind == _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
            problem = rules.unconstrained()
            if problem is not None:
                return problem._replace(at=at)
        for k, a in enumerate(e.axes):
            problem = rules.axis(a)
            if problem is not None:
                return problem._replace(at=f"{at}.axes[{k}]")
    for role in ("unreduced", "reduced"):
        for k, a in enumerate(getattr(spec, role)):
            problem = rules.axis(a, role)
            if problem is not None:
                return problem._replace(at=f".{role}[{k}]")
    return None


# Per mesh: a sharding's message without its mesh reference, by `_fields`.
_LOWERED: weakref.WeakKeyDictionary[Mesh, dict[Hashable, bytes]] = weakref.WeakKeyDictionary()


def _fields(sharding: NamedSharding) -> tuple:
    """What a sharding writes besides its mesh, as plain values (hashable if it lowers)."""
    return (*spec_fields(sharding.spec), sharding.memory_kind)


def key(sharding: NamedSharding, ctx: LowerContext) -> Hashable | None:
    """What makes two NamedShardings one entry, known before a message is built; adds the
    mesh. None when only `lower` can tell."""
    mesh = sharding.mesh
    if not isinstance(mesh, Mesh):
        return None
    # The spec by identity, not its fields: JAX >= 0.10 interns PartitionSpecs, so equal specs
    # are one object and this hashes nothing of them; an equal spec that is another object is
    # found by its bytes once lowered. The builder keeps the sharding, so the spec's id stays its
    # own. An older JAX does not intern them: there spec_key is the spec itself.
    return (ctx.builder.add(mesh), spec_key(sharding.spec), sharding.memory_kind)


def lower(sharding: NamedSharding, ctx: LowerContext) -> table_pb2.NamedSharding:
    """The NamedSharding message; its mesh is added to the table first."""
    mesh = sharding.mesh
    if not isinstance(mesh, Mesh):
        raise EncodeError(f"NamedSharding over {type(mesh).__name__}: only a concrete Mesh encodes")
    index = ctx.builder.add(mesh)
    fields = _fields(sharding)
    done = _LOWERED.get(mesh)
    if done is None:
        done = _LOWERED.setdefault(mesh, {})
    try:
        found = done.get(fields)
    except TypeError:  # an unhashable field, which lowering refuses below
        found = fields = None
    if found is not None:
        msg = table_pb2.NamedSharding.FromString(found)
        msg.mesh = index
        return msg
    msg = table_pb2.NamedSharding()
    lower_partition_spec(sharding.spec, msg.spec)
    msg.spec.SetInParent()
    axes = ctx.builder.table.entries[index].mesh
    refuse("NamedSharding", spec_axes_problem(msg.spec, axes.axis_names, axes.axis_types))
    kind = lower_memory_kind(sharding, mesh.devices.flat[0])
    if kind is not None:
        msg.memory_kind = kind
    if fields is not None:
        done[fields] = msg.SerializeToString(deterministic=True)
    msg.mesh = index
    return msg


def lower_partition_spec(spec: PartitionSpec, out: table_pb2.PartitionSpec) -> None:
    """Writes what the PartitionSpec literally holds (JAX already turns ('x',) into 'x')."""
    entries, unreduced, reduced = spec_fields(spec)
    for part in entries:
        entry = out.entries.add()
        if part is None:
            entry.kind = _P.PARTITION_SPEC_ENTRY_KIND_NONE
        elif part is PartitionSpec.UNCONSTRAINED:
            entry.kind = _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED
        elif isinstance(part, str):
            entry.kind = _P.PARTITION_SPEC_ENTRY_KIND_AXIS
            entry.axes.append(part)
        elif isinstance(part, tuple) and all(isinstance(a, str) for a in part):
            entry.kind = _P.PARTITION_SPEC_ENTRY_KIND_TUPLE
            entry.axes.extend(part)
        else:
            raise EncodeError(f"PartitionSpec entry {part!r} is not None, a str or a tuple of str")
    for name, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if not all(isinstance(a, str) for a in axes):
            raise EncodeError(
                f"PartitionSpec {name} axes must be str, got {sorted(map(repr, axes))}"
            )
        getattr(out, name).extend(sorted(axes))  # str order is code-point order


def check(msg: table_pb2.NamedSharding, ctx: CheckContext) -> None:
    """Checks the mesh reference, the spec against that mesh's axes, then the memory kind."""
    path, refs = ctx.path, ctx.refs
    mesh = refs.message(refs.require(msg, "mesh", f"{path}.mesh", MESH, ctx.index))
    raise_problem(f"{path}.spec", spec_axes_problem(msg.spec, mesh.axis_names, mesh.axis_types))
    check_memory_kind(msg, path)


def lift(msg: table_pb2.NamedSharding, ctx: LiftContext) -> NamedSharding:
    """The NamedSharding on the lifted mesh."""
    mesh = ctx.objects[msg.mesh]
    if not msg.HasField("memory_kind"):  # most: the device's default
        return NamedSharding(mesh, lift_partition_spec(msg.spec))
    kind = lift_memory_kind(msg, mesh.devices.flat[0])
    return NamedSharding(mesh, lift_partition_spec(msg.spec), memory_kind=kind)


def plan(msg: table_pb2.NamedSharding) -> tuple | None:
    """(mesh index, spec bytes, spec parts) of a checked entry on its device's default memory;
    None with a memory kind, which this process's devices are asked for each time."""
    if msg.HasField("memory_kind"):
        return None
    spec = msg.spec
    return (msg.mesh, spec.SerializeToString(deterministic=True), _spec_parts(spec))


def lift_planned(plan: tuple, ctx: LiftContext) -> NamedSharding:
    """The NamedSharding of a plan, on the lifted mesh."""
    at, data, parts = plan
    spec = _LIFTED_SPECS.get(data)
    if spec is None:
        spec = _LIFTED_SPECS[data] = _spec_of(parts)
    return NamedSharding(ctx.objects[at], spec)


# Lifted PartitionSpecs by their message's bytes, held weakly (JAX interns them too; before
# JAX 0.10, where specs cannot be weakly referenced, a bounded dict): a payload sent again
# costs a lookup per spec instead of a walk over its entries.
_LIFTED_SPECS = lifted_specs()


def lift_partition_spec(spec: table_pb2.PartitionSpec) -> PartitionSpec:
    """The PartitionSpec of a checked message; the one lifted before from these bytes, while
    it lives."""
    data = spec.SerializeToString(deterministic=True)
    found = _LIFTED_SPECS.get(data)
    if found is None:
        found = _LIFTED_SPECS[data] = _lift_partition_spec(spec)
    return found


def _lift_partition_spec(spec: table_pb2.PartitionSpec) -> PartitionSpec:
    return _spec_of(_spec_parts(spec))


def _spec_of(parts: tuple) -> PartitionSpec:
    """The PartitionSpec of (partitions, unreduced, reduced)."""
    return make_spec(*parts)


def _spec_parts(spec: table_pb2.PartitionSpec) -> tuple:
    """(partitions, unreduced, reduced) of a checked message, as PartitionSpec takes them."""
    parts: list[Any] = []
    for e in spec.entries:
        if e.kind == _P.PARTITION_SPEC_ENTRY_KIND_NONE:
            parts.append(None)
        elif e.kind == _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
            parts.append(PartitionSpec.UNCONSTRAINED)
        elif e.kind == _P.PARTITION_SPEC_ENTRY_KIND_AXIS:
            parts.append(e.axes[0])
        else:
            parts.append(tuple(e.axes))
    return (tuple(parts), frozenset(spec.unreduced), frozenset(spec.reduced))
