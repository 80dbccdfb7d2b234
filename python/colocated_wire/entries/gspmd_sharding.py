"""GspmdSharding entries: a device list reference plus an XLA HloSharding.

The sharding goes through XLA's own OpSharding (`hlo_sharding.to_proto()`
and `xc.HloSharding.from_proto`), so every form XLA knows is read the way
XLA reads it. On the wire the tile assignment is the *logical* device order
(positions in the device list): as an iota when one describes it (the
algorithm of iota.py, with offset 0), otherwise explicitly. XLA compares an
iota and the equal explicit assignment as equal, so either reads back as an
equal sharding. Tuple, unreduced and shard-group shardings are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries.device_list import (
    DEVICE_LIST,
    check_iota_layout,
    distinct_ids_problem,
)
from colocated_wire.entries.enum_names import wire_names
from colocated_wire.entries.memory_kind import (
    check_memory_kind,
    lift_memory_kind,
    lower_memory_kind,
)
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.iota import find_iota, materialize_iota
from colocated_wire.jax_compat.gspmd import maximal_tile_dims
from colocated_wire.limits import DecodeLimits

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = sharding_impls.GSPMDSharding
_T = xc.OpSharding.Type
SHARDING_TYPES = {
    v: _T.__members__[n] for v, n in wire_names(table_pb2.ShardingType, "SHARDING_TYPE_").items()
}
_SHARDING_TYPES_TO_WIRE = {t: v for v, t in SHARDING_TYPES.items()}
TILED = frozenset({table_pb2.SHARDING_TYPE_OTHER, table_pb2.SHARDING_TYPE_MAXIMAL})


def gspmd_devices_problem(count: int) -> Problem | None:
    """A GSPMD sharding has devices: JAX aborts the process on an empty device list."""
    if count > 0:
        return None
    return Problem("invalid-value", "a GSPMD sharding has no devices")


def tile_count_problem(kind: int, size: int) -> Problem | None:
    """A maximal sharding tiles one device, any other tiled sharding at least one."""
    if kind == table_pb2.SHARDING_TYPE_MAXIMAL and size != 1:
        return Problem("invalid-value", f"a maximal sharding has {size} tiles")
    if kind == table_pb2.SHARDING_TYPE_OTHER and size == 0:
        return Problem("invalid-value", "a tile assignment has no tiles")
    return None


def logical_ids_problem(ids: np.ndarray, count: int) -> Problem | None:
    """A tile assignment's logical devices are positions in a list of `count`, distinct."""
    return distinct_ids_problem(ids, count, "logical device")


def trailing_tile_dims_problem(
    kind: int, rank: int, replicate_on_last_tile_dim: bool, last_tile_dim_count: int
) -> Problem | None:
    """Only OTHER shardings have trailing dims, replicated or typed, not both, at most `rank`.

    XLA refuses or mishandles the rest (too many typed dims run it out of memory).
    """
    other = kind == table_pb2.SHARDING_TYPE_OTHER
    if replicate_on_last_tile_dim:
        at = ".replicate_on_last_tile_dim"
        if not other:
            return Problem("invalid-value", "only an OTHER sharding has tile dims", at)
        if rank == 0:
            return Problem("invalid-value", "no tile dim to replicate", at)
    if last_tile_dim_count:
        at = ".last_tile_dims"
        if not other:
            return Problem("invalid-value", "only an OTHER sharding has tile dims", at)
        if replicate_on_last_tile_dim:
            return Problem("invalid-value", "both replicated and typed last dims", at)
        if last_tile_dim_count > rank:
            detail = f"{last_tile_dim_count} typed dims among {rank} tile dims"
            return Problem("invalid-value", detail, at)
    return None


def lower(sharding: sharding_impls.GSPMDSharding, ctx: LowerContext) -> table_pb2.GspmdSharding:
    """The GspmdSharding message; its device list is added to the table first."""
    devices = sharding._internal_device_list
    msg = table_pb2.GspmdSharding(device_list=ctx.builder.add(devices))
    refuse("GSPMDSharding", gspmd_devices_problem(len(devices)))
    _lower_hlo_sharding(sharding._hlo_sharding, msg, len(devices))
    kind = lower_memory_kind(sharding, sharding._device_assignment[0])
    if kind is not None:
        msg.memory_kind = kind
    return msg


def _wire_type(t) -> int:
    t = _T(t) if isinstance(t, int) else t
    wire = _SHARDING_TYPES_TO_WIRE.get(t)
    if wire is None:
        raise EncodeError(f"HloSharding type {t} is not supported")
    return wire


def _lower_hlo_sharding(hlo: xc.HloSharding, out: table_pb2.GspmdSharding, count: int) -> None:
    """Fills everything of `out` but device_list and memory_kind."""
    if hlo.tuple_elements():
        raise EncodeError("tuple HloShardings are not supported")
    op = hlo.to_proto()
    if op.is_shard_group:
        raise EncodeError("shard-group HloShardings are not supported")
    out.type = _wire_type(op.type)
    rank = 0
    if out.type in TILED:
        dims = [int(d) for d in op.tile_assignment_dimensions]
        if out.type == table_pb2.SHARDING_TYPE_MAXIMAL:
            dims = maximal_tile_dims(dims)
        if len(op.iota_reshape_dims):
            ids = materialize_iota(list(op.iota_reshape_dims), list(op.iota_transpose_perm))
        else:
            ids = np.asarray(list(op.tile_assignment_devices), dtype=np.int64)
        refuse("GSPMDSharding", tile_count_problem(out.type, len(ids)))
        refuse("GSPMDSharding", logical_ids_problem(ids, count))
        ta = out.tile_assignment
        ta.SetInParent()
        ta.dims.extend(dims)
        rank = len(dims)
        iota = find_iota(ids) if len(ids) else None
        if iota is not None:
            ta.iota.reshape_dims.extend(iota[0])
            ta.iota.transpose_perm.extend(iota[1])
            ta.iota.SetInParent()
        else:
            ta.explicit.ids.extend(ids.tolist())
            ta.explicit.SetInParent()
    out.replicate_on_last_tile_dim = bool(op.replicate_on_last_tile_dim)
    out.last_tile_dims.extend(_wire_type(t) for t in op.last_tile_dims)
    problem = trailing_tile_dims_problem(
        out.type, rank, out.replicate_on_last_tile_dim, len(out.last_tile_dims)
    )
    refuse("GSPMDSharding", problem)


def check(msg: table_pb2.GspmdSharding, ctx: CheckContext) -> np.ndarray | None:
    """Checks in field order, sizing the tile assignment before writing it out; the facts
    are the logical ids of a tiled sharding."""
    path, refs = ctx.path, ctx.refs
    dl = refs.require(msg, "device_list", f"{path}.device_list", DEVICE_LIST, ctx.index)
    count = len(refs.facts[dl])
    raise_problem(f"{path}.device_list", gspmd_devices_problem(count))
    if msg.type not in SHARDING_TYPES:
        raise DecodeError(f"{path}.type", "unknown-enum", f"unknown sharding type {msg.type}")
    tpath = f"{path}.tile_assignment"
    rank = 0
    logical_ids = None
    if msg.type in TILED:
        if not msg.HasField("tile_assignment"):
            raise DecodeError(tpath, "missing", "a tiled sharding needs a tile assignment")
        ta = msg.tile_assignment
        logical_ids = _check_tile_assignment(ta, tpath, msg.type, count, ctx.limits)
        rank = len(msg.tile_assignment.dims)
    elif msg.HasField("tile_assignment"):
        raise DecodeError(tpath, "invalid-value", "a replicated or manual sharding has no tiles")
    for k, t in enumerate(msg.last_tile_dims):
        if t not in SHARDING_TYPES:
            raise DecodeError(
                f"{path}.last_tile_dims[{k}]", "unknown-enum", f"unknown sharding type {t}"
            )
    problem = trailing_tile_dims_problem(
        msg.type, rank, msg.replicate_on_last_tile_dim, len(msg.last_tile_dims)
    )
    raise_problem(path, problem)
    check_memory_kind(msg, path)
    return logical_ids


def _check_tile_assignment(
    ta: table_pb2.TileAssignment, path: str, kind: int, count: int, limits: DecodeLimits
) -> np.ndarray:
    dims = list(ta.dims)
    if len(dims) > limits.max_rank:
        raise DecodeError(
            f"{path}.dims", "limit-exceeded", f"{len(dims)} dims exceed {limits.max_rank}"
        )
    size = int(np.prod(dims, dtype=object))
    if size > limits.max_devices_per_list:
        raise DecodeError(
            f"{path}.dims", "limit-exceeded", f"{size} tiles exceed {limits.max_devices_per_list}"
        )
    raise_problem(f"{path}.dims", tile_count_problem(kind, size))
    case = ta.WhichOneof("devices")
    if case == "iota":
        ipath = f"{path}.iota"
        isize = check_iota_layout(ta.iota, ipath, limits)
        if isize != size:
            raise DecodeError(
                f"{ipath}.reshape_dims", "invalid-iota", f"{isize} ids for {size} tiles"
            )
        if size > count:
            raise DecodeError(
                f"{ipath}.reshape_dims", "invalid-value", f"{size} tiles for {count} devices"
            )
        # Distinct positions below the size, so within the device list.
        return materialize_iota(list(ta.iota.reshape_dims), list(ta.iota.transpose_perm))
    if case == "explicit":
        ids = np.asarray(ta.explicit.ids, dtype=np.int64)
        ipath = f"{path}.explicit.ids"
        if len(ids) != size:
            raise DecodeError(ipath, "invalid-value", f"{len(ids)} ids for {size} tiles")
        raise_problem(ipath, logical_ids_problem(ids, count))
        return ids
    raise DecodeError(f"{path}.devices", "missing", "a tile assignment has no devices")


def lift(msg: table_pb2.GspmdSharding, ctx: LiftContext) -> sharding_impls.GSPMDSharding:
    """The GSPMDSharding on the lifted device list; the facts are its tile order."""
    op = xc.OpSharding()
    op.type = SHARDING_TYPES[msg.type]
    if msg.type in TILED:
        op.tile_assignment_dimensions = list(msg.tile_assignment.dims)
        op.tile_assignment_devices = ctx.facts.tolist()
    op.replicate_on_last_tile_dim = msg.replicate_on_last_tile_dim
    op.last_tile_dims = [SHARDING_TYPES[t] for t in msg.last_tile_dims]
    hlo = xc.HloSharding.from_proto(op)
    devices = ctx.objects[msg.device_list]
    kind = lift_memory_kind(msg, devices[0])
    return sharding_impls.GSPMDSharding(devices, hlo, memory_kind=kind)
