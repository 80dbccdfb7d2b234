"""XLA HloSharding <-> the GspmdSharding message.

JAX's GSPMDSharding is a device list plus an XLA HloSharding. The sharding
goes through XLA's own OpSharding (`hlo_sharding.to_proto()` and
`xc.HloSharding.from_proto`), so every form XLA knows is read the way XLA
reads it. On the wire the tile assignment is the *logical* device order
(positions in the device list): as an iota when one describes it (the
algorithm of iota.py, with offset 0), otherwise explicitly. XLA compares an
iota and the equal explicit assignment as equal, so either reads back as an
equal sharding. Tuple, unreduced and shard-group shardings are refused.
"""

from __future__ import annotations

import numpy as np
from jax._src.lib import xla_client as xc

from colocated.v1 import table_pb2
from colocated_wire.errors import EncodeError
from colocated_wire.iota import find_iota, materialize_iota

_T = xc.OpSharding.Type
TO_WIRE = {
    _T.REPLICATED: table_pb2.SHARDING_TYPE_REPLICATED,
    _T.MAXIMAL: table_pb2.SHARDING_TYPE_MAXIMAL,
    _T.OTHER: table_pb2.SHARDING_TYPE_OTHER,
    _T.MANUAL: table_pb2.SHARDING_TYPE_MANUAL,
}
FROM_WIRE = {v: k for k, v in TO_WIRE.items()}
TILED = frozenset({table_pb2.SHARDING_TYPE_OTHER, table_pb2.SHARDING_TYPE_MAXIMAL})


def _wire_type(t) -> int:
    t = _T(t) if isinstance(t, int) else t
    wire = TO_WIRE.get(t)
    if wire is None:
        raise EncodeError(f"HloSharding type {t} is not supported")
    return wire


def lower_hlo_sharding(hlo: xc.HloSharding, out: table_pb2.GspmdSharding) -> None:
    """Fills everything of `out` but device_list and memory_kind."""
    if hlo.tuple_elements():
        raise EncodeError("tuple HloShardings are not supported")
    op = hlo.to_proto()
    if op.is_shard_group:
        raise EncodeError("shard-group HloShardings are not supported")
    out.type = _wire_type(op.type)
    if out.type in TILED:
        dims = [int(d) for d in op.tile_assignment_dimensions]
        if len(op.iota_reshape_dims):
            ids = materialize_iota(list(op.iota_reshape_dims), list(op.iota_transpose_perm))
        else:
            ids = np.asarray(list(op.tile_assignment_devices), dtype=np.int64)
        ta = out.tile_assignment
        ta.SetInParent()
        ta.dims.extend(dims)
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


def lift_hlo_sharding(msg: table_pb2.GspmdSharding, logical_ids: np.ndarray | None):
    """The HloSharding of a validated message; `logical_ids` is its tile order."""
    op = xc.OpSharding()
    op.type = FROM_WIRE[msg.type]
    if msg.type in TILED:
        op.tile_assignment_dimensions = list(msg.tile_assignment.dims)
        op.tile_assignment_devices = logical_ids.tolist()
    op.replicate_on_last_tile_dim = msg.replicate_on_last_tile_dim
    op.last_tile_dims = [FROM_WIRE[t] for t in msg.last_tile_dims]
    return xc.HloSharding.from_proto(op)
