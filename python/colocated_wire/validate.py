"""Validation: every check of docs/wire-format.md, before anything is lifted.

A payload comes from a peer that is not trusted. Each index, count and size
is checked here, in one pass over the table in index order (and, within an
entry, in field-number order), and the first problem is raised as a
`DecodeError` with its path and code. Nothing large is materialized before
its size has passed the limits. What validation computes anyway (the device
ids of each list) is kept for lifting, which can then trust its input.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from colocated.v1 import table_pb2
from colocated_wire.device_ids import INT32_MAX, decode_device_ids
from colocated_wire.dtypes import dtype_from_wire
from colocated_wire.errors import DecodeError
from colocated_wire.gspmd import FROM_WIRE as SHARDING_TYPES
from colocated_wire.gspmd import TILED
from colocated_wire.iota import materialize_iota
from colocated_wire.limits import DecodeLimits

MAX_DIM = 2**53 - 1
SHARDING_KINDS = frozenset({"named_sharding", "single_device_sharding", "gspmd_sharding"})
_AXIS_TYPES = frozenset(
    {table_pb2.AXIS_TYPE_AUTO, table_pb2.AXIS_TYPE_EXPLICIT, table_pb2.AXIS_TYPE_MANUAL}
)
_P = table_pb2
_SPEC_KINDS = {
    _P.PARTITION_SPEC_ENTRY_KIND_NONE: (0, 0),
    _P.PARTITION_SPEC_ENTRY_KIND_AXIS: (1, 1),
    _P.PARTITION_SPEC_ENTRY_KIND_TUPLE: (0, None),
    _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED: (0, 0),
}


@dataclasses.dataclass
class ValidatedTable:
    table: table_pb2.SharedObjectTable
    kinds: list[str | None]  # oneof case per entry; None for a kind unknown here
    device_ids: dict[int, np.ndarray]  # per DeviceList entry
    tile_ids: dict[int, np.ndarray]  # per tiled GspmdSharding entry: logical ids


def check_ref(
    value: int,
    path: str,
    vt: ValidatedTable,
    kinds: frozenset[str],
    *,
    before: int | None = None,
    allow_unknown: bool = False,
) -> None:
    """A reference is in range, backwards (inside the table) and of an allowed kind."""
    n = len(vt.table.entries)
    if value >= n:
        raise DecodeError(
            path, "reference-out-of-range", f"entry {value} is not in a table of {n} entries"
        )
    if before is not None and value >= before:
        raise DecodeError(
            path, "forward-reference", f"entry {before} refers to entry {value}, not before it"
        )
    kind = vt.kinds[value]
    if kind in kinds or (kind is None and allow_unknown):
        return
    want = " or ".join(sorted(kinds))
    raise DecodeError(
        path, "wrong-entry-kind", f"entry {value} is a {kind or 'unknown'}, not {want}"
    )


def _required_ref(msg, field: str, path: str, vt, kinds, before: int) -> int:
    if not msg.HasField(field):
        raise DecodeError(path, "missing", f"{field} is required")
    value = getattr(msg, field)
    check_ref(value, path, vt, kinds, before=before)
    return value


def validate_table(
    table: table_pb2.SharedObjectTable, limits: DecodeLimits, path: str = "table"
) -> ValidatedTable:
    n = len(table.entries)
    if n > limits.table_entries:
        raise DecodeError(
            path, "limit-exceeded", f"{n} entries exceed the limit of {limits.table_entries}"
        )
    vt = ValidatedTable(table, [], {}, {})
    for i, entry in enumerate(table.entries):
        kind = entry.WhichOneof("kind")
        epath = f"{path}[{i}].{kind}"
        if kind == "device_list":
            vt.device_ids[i] = decode_device_ids(entry.device_list, epath, limits)
        elif kind == "mesh":
            _mesh(entry.mesh, epath, vt, i, limits)
        elif kind == "named_sharding":
            _named_sharding(entry.named_sharding, epath, vt, i)
        elif kind == "single_device_sharding":
            if entry.single_device_sharding.device_id > INT32_MAX:
                raise DecodeError(f"{epath}.device_id", "invalid-value", "device id exceeds int32")
        elif kind == "gspmd_sharding":
            _gspmd_sharding(entry.gspmd_sharding, epath, vt, i, limits)
        elif kind == "array_spec":
            _array_spec(entry.array_spec, epath, vt, i)
        vt.kinds.append(kind)
    return vt


def _mesh(m: table_pb2.Mesh, path: str, vt: ValidatedTable, i: int, limits) -> None:
    dl = _required_ref(m, "device_list", f"{path}.device_list", vt, {"device_list"}, i)
    sizes, names, types = list(m.axis_sizes), list(m.axis_names), list(m.axis_types)
    if len(sizes) > limits.mesh_rank:
        raise DecodeError(
            f"{path}.axis_sizes",
            "limit-exceeded",
            f"rank {len(sizes)} exceeds the limit of {limits.mesh_rank}",
        )
    if not len(sizes) == len(names) == len(types):
        raise DecodeError(
            path,
            "invalid-mesh",
            f"{len(sizes)} sizes, {len(names)} names and {len(types)} types disagree",
        )
    for k, name in enumerate(names):
        if not name:
            raise DecodeError(f"{path}.axis_names[{k}]", "invalid-value", "empty axis name")
        if name in names[:k]:
            raise DecodeError(f"{path}.axis_names[{k}]", "invalid-mesh", f"axis {name!r} repeats")
    for k, t in enumerate(types):
        if t not in _AXIS_TYPES:
            raise DecodeError(f"{path}.axis_types[{k}]", "unknown-enum", f"unknown axis type {t}")
    count = len(vt.device_ids[dl])
    if int(np.prod(sizes, dtype=object)) != count:
        raise DecodeError(
            f"{path}.axis_sizes", "invalid-mesh", f"sizes {sizes} do not hold {count} devices"
        )


def _named_sharding(s: table_pb2.NamedSharding, path: str, vt: ValidatedTable, i: int) -> None:
    mesh = _required_ref(s, "mesh", f"{path}.mesh", vt, {"mesh"}, i)
    names = set(vt.table.entries[mesh].mesh.axis_names)
    seen: set[str] = set()

    def axis(name: str, apath: str) -> None:
        if name not in names:
            raise DecodeError(apath, "unknown-axis", f"the mesh has no axis {name!r}")
        if name in seen:
            raise DecodeError(apath, "repeated-axis", f"axis {name!r} appears twice")
        seen.add(name)

    spath = f"{path}.spec"
    for j, e in enumerate(s.spec.entries):
        bounds = _SPEC_KINDS.get(e.kind)
        if bounds is None:
            raise DecodeError(
                f"{spath}.entries[{j}].kind", "unknown-enum", f"unknown entry kind {e.kind}"
            )
        lo, hi = bounds
        if len(e.axes) < lo or (hi is not None and len(e.axes) > hi):
            raise DecodeError(
                f"{spath}.entries[{j}].axes",
                "invalid-value",
                f"{len(e.axes)} axes for a {_P.PartitionSpecEntryKind.Name(e.kind)} entry",
            )
        for k, a in enumerate(e.axes):
            axis(a, f"{spath}.entries[{j}].axes[{k}]")
    for field in ("unreduced", "reduced"):
        for k, a in enumerate(getattr(s.spec, field)):
            axis(a, f"{spath}.{field}[{k}]")


def _gspmd_sharding(g: table_pb2.GspmdSharding, path: str, vt, i: int, limits) -> None:
    dl = _required_ref(g, "device_list", f"{path}.device_list", vt, {"device_list"}, i)
    if g.type not in SHARDING_TYPES:
        raise DecodeError(f"{path}.type", "unknown-enum", f"unknown sharding type {g.type}")
    tpath = f"{path}.tile_assignment"
    if g.type in TILED:
        if not g.HasField("tile_assignment"):
            raise DecodeError(tpath, "missing", "a tiled sharding needs a tile assignment")
        vt.tile_ids[i] = _tile_ids(g.tile_assignment, tpath, len(vt.device_ids[dl]), limits)
    elif g.HasField("tile_assignment"):
        raise DecodeError(tpath, "invalid-value", "a replicated or manual sharding has no tiles")
    for k, t in enumerate(g.last_tile_dims):
        if t not in SHARDING_TYPES:
            raise DecodeError(
                f"{path}.last_tile_dims[{k}]", "unknown-enum", f"unknown sharding type {t}"
            )


def _tile_ids(ta: table_pb2.TileAssignment, path: str, count: int, limits) -> np.ndarray:
    size = 1
    for d in ta.dims:
        size *= d
    if size > limits.devices_per_list:
        raise DecodeError(
            f"{path}.dims", "limit-exceeded", f"{size} tiles exceed {limits.devices_per_list}"
        )
    case = ta.WhichOneof("devices")
    if case == "iota":
        dims, perm = list(ta.iota.reshape_dims), list(ta.iota.transpose_perm)
        if len(dims) != len(perm) or sorted(perm) != list(range(len(perm))):
            raise DecodeError(f"{path}.iota.transpose_perm", "invalid-iota", "not a permutation")
        isize = int(np.prod(dims, dtype=object))
        if isize != size:
            raise DecodeError(
                f"{path}.iota.reshape_dims", "invalid-iota", f"{isize} ids for {size} tiles"
            )
        if size > count:
            raise DecodeError(
                f"{path}.iota.reshape_dims", "invalid-value", f"{size} tiles for {count} devices"
            )
        return materialize_iota(dims, perm)
    if case == "explicit":
        ids = np.asarray(ta.explicit.ids, dtype=np.int64)
        ipath = f"{path}.explicit.ids"
        if len(ids) != size:
            raise DecodeError(ipath, "invalid-value", f"{len(ids)} ids for {size} tiles")
        bad = np.flatnonzero(ids >= count)
        if len(bad):
            raise DecodeError(
                f"{ipath}[{bad[0]}]", "invalid-value", f"no position {ids[bad[0]]} in {count}"
            )
        if len(np.unique(ids)) != len(ids):
            raise DecodeError(ipath, "duplicate-device", "a logical device appears twice")
        return ids
    raise DecodeError(f"{path}.devices", "missing", "a tile assignment has no devices")


def _array_spec(a: table_pb2.ArraySpec, path: str, vt: ValidatedTable, i: int) -> None:
    for k, d in enumerate(a.shape):
        if d > MAX_DIM:
            raise DecodeError(f"{path}.shape[{k}]", "invalid-value", f"dimension {d} > 2**53-1")
    if dtype_from_wire(a.dtype) is None:
        raise DecodeError(f"{path}.dtype", "unknown-enum", f"unknown dtype {a.dtype}")
    if a.HasField("sharding"):
        check_ref(a.sharding, f"{path}.sharding", vt, SHARDING_KINDS, before=i, allow_unknown=True)
