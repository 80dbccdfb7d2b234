"""Specs: a pytree of ShapeDtypeStruct leaves, and the SpecsPayload.

A Specs message is a TreeDef plus one table reference per leaf. The same
message appears on its own (SpecsPayload, what a worker returns as output
specs) and twice inside a ProgramPayload, always against the payload's one
table. The public functions mirror `_serialize_specs`/`_deserialize_specs`
of jax/experimental/colocated_python/serialization.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax import tree_util

from colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.lift import lift_table
from colocated_wire.limits import DEFAULT_LIMITS, DecodeLimits
from colocated_wire.lower import TableBuilder
from colocated_wire.payload import header, parse_payload, to_bytes
from colocated_wire.provenance import Origin, carry, origin_of, remember, seeded_table
from colocated_wire.treedef import TreeShape, lift_treedef, lower_treedef, validate_treedef
from colocated_wire.validate import ValidatedTable, check_ref, validate_table

_ARRAY_SPEC = frozenset({"array_spec"})


def lower_specs(
    builder: TableBuilder,
    treedef: tree_util.PyTreeDef,
    leaves: Sequence[jax.ShapeDtypeStruct],
) -> payload_pb2.Specs:
    leaves = list(leaves)
    if treedef.num_leaves != len(leaves):
        raise EncodeError(f"the treedef has {treedef.num_leaves} leaves but {len(leaves)} given")
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            raise EncodeError(f"leaf {i} is a {type(leaf).__name__}, not a ShapeDtypeStruct")
    msg = payload_pb2.Specs(treedef=lower_treedef(treedef))
    msg.leaves.extend(builder.add(leaf) for leaf in leaves)
    return msg


def validate_specs(
    msg: payload_pb2.Specs, path: str, vt: ValidatedTable, limits: DecodeLimits
) -> TreeShape:
    if not msg.HasField("treedef"):
        raise DecodeError(f"{path}.treedef", "missing", "specs have no treedef")
    shape = validate_treedef(msg.treedef, f"{path}.treedef", limits)
    if len(msg.leaves) != shape.num_leaves:
        raise DecodeError(
            f"{path}.leaves",
            "invalid-tree",
            f"{len(msg.leaves)} leaves for a tree of {shape.num_leaves}",
        )
    for i, ref in enumerate(msg.leaves):
        check_ref(ref, f"{path}.leaves[{i}]", vt, _ARRAY_SPEC)
    return shape


def lift_specs(msg: payload_pb2.Specs, shape: TreeShape, objects: list):
    return lift_treedef(shape), tuple(objects[i] for i in msg.leaves)


def serialize_specs(treedef: tree_util.PyTreeDef, leaves: Sequence[jax.ShapeDtypeStruct]) -> bytes:
    """Canonical SpecsPayload bytes for a pytree of ShapeDtypeStructs.

    The very (treedef, leaves) that `deserialize_specs` returned give back a
    payload of a newer minor version with all it held (provenance.py).
    """
    origin = origin_of(leaves, treedef)
    builder = seeded_table(origin)
    specs = lower_specs(builder, treedef, leaves)
    payload = payload_pb2.SpecsPayload(
        header=header(payload_pb2.PAYLOAD_KIND_SPECS), table=builder.table, specs=specs
    )
    return to_bytes(carry(origin, payload, builder))


def deserialize_specs(
    data: bytes, *, limits: DecodeLimits | None = None, max_minor_version: int | None = None
) -> tuple[tree_util.PyTreeDef, tuple[jax.ShapeDtypeStruct, ...]]:
    """(treedef, leaves) of SpecsPayload bytes; raises DecodeError on bad bytes."""
    limits = limits or DEFAULT_LIMITS
    msg, unknown_fields = parse_payload(
        data, payload_pb2.SpecsPayload, payload_pb2.PAYLOAD_KIND_SPECS, limits, max_minor_version
    )
    vt = validate_table(msg.table if msg.HasField("table") else None, limits)
    if not msg.HasField("specs"):
        raise DecodeError("specs", "missing", "the payload has no specs")
    shape = validate_specs(msg.specs, "specs", vt, limits)
    objects = lift_table(vt)
    treedef, leaves = lift_specs(msg.specs, shape, objects)
    if unknown_fields:
        leaves = remember(leaves, Origin(msg, objects, (treedef,)))
    return treedef, leaves
