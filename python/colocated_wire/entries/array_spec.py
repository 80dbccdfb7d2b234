"""ArraySpec entries: a ShapeDtypeStruct's shape, dtype, weak_type and sharding reference.

Numbers on the wire are fixed forever (table.proto). JAX names its dtypes
with numpy / ml_dtypes names, so the DType enum maps to them by name.
`string` is numpy's variable-width `StringDType()`, the dtype JAX's
colocated Python itself uses for serialized specs; numpy's fixed-width
`str_` ("<U...") is not a JAX dtype and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from google.protobuf.message import Message
from jax import numpy as jnp
from jax._src import sharding_impls
from jax.sharding import NamedSharding, SingleDeviceSharding

from colocated.v1 import table_pb2
from colocated_wire.entries.enum_names import wire_names
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.unknown import UnknownEntry

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = jax.ShapeDtypeStruct
MAX_DIM = 2**53 - 1
STRING_DTYPE = np.dtypes.StringDType()
DTYPES: dict[int, np.dtype] = {
    v: STRING_DTYPE if n == "STRING" else jnp.dtype(n.lower())
    for v, n in wire_names(table_pb2.DType, "D_TYPE_").items()
}
_DTYPES_TO_WIRE = {d: v for v, d in DTYPES.items() if d is not STRING_DTYPE}
# A reference to an array spec; to a leaf's sharding, which may be of a newer kind too.
ARRAY_SPEC = frozenset({"array_spec"})
SHARDING = frozenset({"named_sharding", "single_device_sharding", "gspmd_sharding"})
# A leaf's sharding: what the table writes as a sharding entry, or one of a newer kind.
_SHARDING_TYPES = (NamedSharding, SingleDeviceSharding, sharding_impls.GSPMDSharding, UnknownEntry)


def shape_problem(shape: Sequence[Any]) -> Problem | None:
    """Dimensions are ints in [0, 2**53-1]; `at` is the dimension."""
    for k, d in enumerate(shape):
        if not isinstance(d, int) or not 0 <= d <= MAX_DIM:
            return Problem("invalid-value", f"dimension {d!r} is not in [0, 2**53-1]", f"[{k}]")
    return None


def leaf_sharding_problem(kind: str | None, sharding: Message | None, rank: int) -> Problem | None:
    """Whether jax.ShapeDtypeStruct accepts a sharding entry on an array of this rank."""
    need = 0
    if kind == "named_sharding":
        need = len(sharding.spec.entries)
    elif kind == "gspmd_sharding":
        if sharding.type == table_pb2.SHARDING_TYPE_MANUAL:
            return Problem("invalid-value", "JAX puts no manual sharding on an array")
        if any(t != table_pb2.SHARDING_TYPE_REPLICATED for t in sharding.last_tile_dims):
            return Problem("invalid-value", "JAX puts no typed tile dims on an array")
        if sharding.type == table_pb2.SHARDING_TYPE_MAXIMAL:
            need = 1
        elif sharding.type == table_pb2.SHARDING_TYPE_OTHER:
            trailing = int(sharding.replicate_on_last_tile_dim) + len(sharding.last_tile_dims)
            need = len(sharding.tile_assignment.dims) - trailing
    if rank < need:
        return Problem("invalid-value", f"a sharding of rank {need} on rank {rank}")
    return None


def dtype_to_wire(dtype: Any) -> int:
    """The DType number of a dtype; EncodeError if the wire has none."""
    d = np.dtype(dtype)
    if isinstance(d, np.dtypes.StringDType):
        return table_pb2.D_TYPE_STRING
    wire = _DTYPES_TO_WIRE.get(d)
    if wire is None:
        raise EncodeError(f"dtype {d} has no colocated.v1 DType")
    return wire


def key(spec: jax.ShapeDtypeStruct, ctx: LowerContext) -> tuple:
    """What makes two leaves one entry, known before a message is built; adds the sharding."""
    sharding = spec.sharding
    if sharding is not None and not isinstance(sharding, _SHARDING_TYPES):
        raise EncodeError(f"ShapeDtypeStruct sharding {type(sharding).__name__} is not supported")
    index = None if sharding is None else ctx.builder.add(sharding)
    return (index, spec.shape, spec.dtype, bool(spec.weak_type))


def lower(spec: jax.ShapeDtypeStruct, ctx: LowerContext) -> table_pb2.ArraySpec:
    """The ArraySpec message; its sharding is added to the table first (see key)."""
    index, shape, dtype, weak_type = key(spec, ctx)
    msg = table_pb2.ArraySpec()
    refuse(f"shape {shape}", shape_problem(shape))
    if index is not None:
        msg.sharding = index
        entry = ctx.builder.table.entries[index]
        kind = entry.WhichOneof("kind")
        problem = leaf_sharding_problem(kind, kind and getattr(entry, kind), len(shape))
        refuse("ShapeDtypeStruct sharding", problem)
    msg.shape.extend(int(d) for d in shape)
    msg.dtype = dtype_to_wire(dtype)
    msg.weak_type = weak_type
    return msg


def check(msg: table_pb2.ArraySpec, ctx: CheckContext) -> None:
    """Checks the rank, the dimensions, the dtype, then the sharding reference and its rank."""
    path, limits = ctx.path, ctx.limits
    if len(msg.shape) > limits.max_rank:
        raise DecodeError(
            f"{path}.shape",
            "limit-exceeded",
            f"rank {len(msg.shape)} exceeds the limit of {limits.max_rank}",
        )
    raise_problem(f"{path}.shape", shape_problem(msg.shape))
    if msg.dtype not in DTYPES:
        raise DecodeError(f"{path}.dtype", "unknown-enum", f"unknown dtype {msg.dtype}")
    if msg.HasField("sharding"):
        spath = f"{path}.sharding"
        refs = ctx.refs
        s = refs.check(msg.sharding, spath, SHARDING, before=ctx.index, allow_unknown=True)
        kind = refs.kinds[s]
        sharding = None if kind is None else refs.message(s)
        raise_problem(spath, leaf_sharding_problem(kind, sharding, len(msg.shape)))


def lift(msg: table_pb2.ArraySpec, ctx: LiftContext) -> jax.ShapeDtypeStruct:
    """The ShapeDtypeStruct on the lifted sharding, if any."""
    sharding = ctx.objects[msg.sharding] if msg.HasField("sharding") else None
    return jax.ShapeDtypeStruct(
        tuple(msg.shape), DTYPES[msg.dtype], sharding=sharding, weak_type=msg.weak_type
    )
