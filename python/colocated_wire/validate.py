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
from colocated_wire.device_ids import (
    INT32_MAX,
    check_iota_layout,
    decode_device_ids,
    first_repeat,
)
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
    table: table_pb2.SharedObjectTable | None, limits: DecodeLimits, path: str = "table"
) -> ValidatedTable:
    """Checks every entry in index order; `None` is an absent table."""
    if table is None:
        raise DecodeError(path, "missing", "a payload needs its table")
    n = len(table.entries)
    if n > limits.max_table_entries:
        raise DecodeError(
            f"{path}.entries",
            "limit-exceeded",
            f"{n} entries exceed the limit of {limits.max_table_entries}",
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
            _memory_kind(entry.single_device_sharding, epath)
        elif kind == "gspmd_sharding":
            _gspmd_sharding(entry.gspmd_sharding, epath, vt, i, limits)
        elif kind == "array_spec":
            _array_spec(entry.array_spec, epath, vt, i, limits)
        vt.kinds.append(kind)
    return vt


def _mesh(m: table_pb2.Mesh, path: str, vt: ValidatedTable, i: int, limits) -> None:
    dl = _required_ref(m, "device_list", f"{path}.device_list", vt, {"device_list"}, i)
    sizes, names, types = list(m.axis_sizes), list(m.axis_names), list(m.axis_types)
    if len(sizes) > limits.max_rank:
        raise DecodeError(
            f"{path}.axis_sizes",
            "limit-exceeded",
            f"rank {len(sizes)} exceeds the limit of {limits.max_rank}",
        )
    for k, t in enumerate(types):
        if t not in _AXIS_TYPES:
            raise DecodeError(f"{path}.axis_types[{k}]", "unknown-enum", f"unknown axis type {t}")
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
    count = len(vt.device_ids[dl])
    if int(np.prod(sizes, dtype=object)) != count:
        raise DecodeError(
            f"{path}.axis_sizes", "invalid-mesh", f"sizes {sizes} do not hold {count} devices"
        )
    if count == 0:  # JAX aborts the process on a sharding over an empty mesh
        raise DecodeError(f"{path}.axis_sizes", "invalid-mesh", "a mesh holds no devices")


class _SpecAxes:
    """The axes of one PartitionSpec, checked one at a time in order, as JAX checks them."""

    def __init__(self, mesh: table_pb2.Mesh):
        self.types = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))
        self.used: set[str] = set()

    def axis(self, name: str, path: str, role: str = "partition") -> None:
        if name not in self.types:
            raise DecodeError(path, "unknown-axis", f"the mesh has no axis {name!r}")
        if name in self.used:
            raise DecodeError(path, "repeated-axis", f"axis {name!r} appears twice")
        self.used.add(name)
        if role != "partition" and self.types[name] != table_pb2.AXIS_TYPE_EXPLICIT:
            raise DecodeError(path, "invalid-value", f"{role} axis {name!r} is not Explicit")

    def unconstrained(self, path: str) -> None:
        if table_pb2.AXIS_TYPE_AUTO not in self.types.values():
            raise DecodeError(path, "invalid-value", "UNCONSTRAINED needs a mesh with an Auto axis")


def _named_sharding(s: table_pb2.NamedSharding, path: str, vt: ValidatedTable, i: int) -> None:
    mesh = _required_ref(s, "mesh", f"{path}.mesh", vt, {"mesh"}, i)
    axes = _SpecAxes(vt.table.entries[mesh].mesh)
    spath = f"{path}.spec"
    for j, e in enumerate(s.spec.entries):
        epath = f"{spath}.entries[{j}]"
        bounds = _SPEC_KINDS.get(e.kind)
        if bounds is None:
            raise DecodeError(f"{epath}.kind", "unknown-enum", f"unknown entry kind {e.kind}")
        lo, hi = bounds
        if len(e.axes) < lo or (hi is not None and len(e.axes) > hi):
            raise DecodeError(
                f"{epath}.axes",
                "invalid-value",
                f"{len(e.axes)} axes for a {_P.PartitionSpecEntryKind.Name(e.kind)} entry",
            )
        if e.kind == _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
            axes.unconstrained(epath)
        for k, a in enumerate(e.axes):
            axes.axis(a, f"{epath}.axes[{k}]")
    for field in ("unreduced", "reduced"):
        for k, a in enumerate(getattr(s.spec, field)):
            axes.axis(a, f"{spath}.{field}[{k}]", field)
    _memory_kind(s, path)


def _memory_kind(msg, path: str) -> None:
    if msg.HasField("memory_kind") and not msg.memory_kind:
        raise DecodeError(f"{path}.memory_kind", "invalid-value", "an empty memory kind")


def _gspmd_sharding(g: table_pb2.GspmdSharding, path: str, vt, i: int, limits) -> None:
    dl = _required_ref(g, "device_list", f"{path}.device_list", vt, {"device_list"}, i)
    count = len(vt.device_ids[dl])
    if count == 0:  # JAX aborts the process on an empty GSPMDSharding
        raise DecodeError(f"{path}.device_list", "invalid-value", "a GSPMD sharding has no devices")
    if g.type not in SHARDING_TYPES:
        raise DecodeError(f"{path}.type", "unknown-enum", f"unknown sharding type {g.type}")
    tpath = f"{path}.tile_assignment"
    rank = 0
    if g.type in TILED:
        if not g.HasField("tile_assignment"):
            raise DecodeError(tpath, "missing", "a tiled sharding needs a tile assignment")
        vt.tile_ids[i] = _tile_ids(g.tile_assignment, tpath, g.type, count, limits)
        rank = len(g.tile_assignment.dims)
    elif g.HasField("tile_assignment"):
        raise DecodeError(tpath, "invalid-value", "a replicated or manual sharding has no tiles")
    for k, t in enumerate(g.last_tile_dims):
        if t not in SHARDING_TYPES:
            raise DecodeError(
                f"{path}.last_tile_dims[{k}]", "unknown-enum", f"unknown sharding type {t}"
            )
    _trailing_tile_dims(g, path, rank)
    _memory_kind(g, path)


def _trailing_tile_dims(g: table_pb2.GspmdSharding, path: str, rank: int) -> None:
    """Only OTHER shardings have trailing dims, replicated or typed, not both, at most `rank`.

    XLA refuses or mishandles the rest (too many typed dims run it out of memory).
    """
    other = g.type == table_pb2.SHARDING_TYPE_OTHER
    if g.replicate_on_last_tile_dim:
        rpath = f"{path}.replicate_on_last_tile_dim"
        if not other:
            raise DecodeError(rpath, "invalid-value", "only an OTHER sharding has tile dims")
        if rank == 0:
            raise DecodeError(rpath, "invalid-value", "no tile dim to replicate")
    n = len(g.last_tile_dims)
    if n:
        lpath = f"{path}.last_tile_dims"
        if not other:
            raise DecodeError(lpath, "invalid-value", "only an OTHER sharding has tile dims")
        if g.replicate_on_last_tile_dim:
            raise DecodeError(lpath, "invalid-value", "both replicated and typed last dims")
        if n > rank:
            raise DecodeError(lpath, "invalid-value", f"{n} typed dims among {rank} tile dims")


def _tile_ids(ta: table_pb2.TileAssignment, path: str, kind: int, count: int, limits):
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
    if kind == table_pb2.SHARDING_TYPE_MAXIMAL and size != 1:
        raise DecodeError(f"{path}.dims", "invalid-value", f"a maximal sharding has {size} tiles")
    if kind == table_pb2.SHARDING_TYPE_OTHER and size == 0:
        raise DecodeError(f"{path}.dims", "invalid-value", "a tile assignment has no tiles")
    case = ta.WhichOneof("devices")
    if case == "iota":
        ipath = f"{path}.iota"
        check_iota_layout(ta.iota, ipath, limits)
        isize = int(np.prod(list(ta.iota.reshape_dims), dtype=object))
        if isize != size:
            raise DecodeError(
                f"{ipath}.reshape_dims", "invalid-iota", f"{isize} ids for {size} tiles"
            )
        if size > count:
            raise DecodeError(
                f"{ipath}.reshape_dims", "invalid-value", f"{size} tiles for {count} devices"
            )
        return materialize_iota(list(ta.iota.reshape_dims), list(ta.iota.transpose_perm))
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
        k = first_repeat(ids)
        if k is not None:
            raise DecodeError(f"{ipath}[{k}]", "duplicate-device", f"{ids[k]} appears twice")
        return ids
    raise DecodeError(f"{path}.devices", "missing", "a tile assignment has no devices")


def _array_spec(a: table_pb2.ArraySpec, path: str, vt: ValidatedTable, i: int, limits) -> None:
    if len(a.shape) > limits.max_rank:
        raise DecodeError(
            f"{path}.shape",
            "limit-exceeded",
            f"rank {len(a.shape)} exceeds the limit of {limits.max_rank}",
        )
    for k, d in enumerate(a.shape):
        if d > MAX_DIM:
            raise DecodeError(f"{path}.shape[{k}]", "invalid-value", f"dimension {d} > 2**53-1")
    if dtype_from_wire(a.dtype) is None:
        raise DecodeError(f"{path}.dtype", "unknown-enum", f"unknown dtype {a.dtype}")
    if a.HasField("sharding"):
        spath = f"{path}.sharding"
        check_ref(a.sharding, spath, vt, SHARDING_KINDS, before=i, allow_unknown=True)
        _leaf_sharding(vt.table.entries[a.sharding], len(a.shape), spath)


def _leaf_sharding(entry: table_pb2.Entry, rank: int, path: str) -> None:
    """Whether jax.ShapeDtypeStruct accepts the sharding on an array of this rank."""
    need = 0
    kind = entry.WhichOneof("kind")
    if kind == "named_sharding":
        need = len(entry.named_sharding.spec.entries)
    elif kind == "gspmd_sharding":
        g = entry.gspmd_sharding
        if g.type == table_pb2.SHARDING_TYPE_MANUAL:
            raise DecodeError(path, "invalid-value", "JAX puts no manual sharding on an array")
        if any(t != table_pb2.SHARDING_TYPE_REPLICATED for t in g.last_tile_dims):
            raise DecodeError(path, "invalid-value", "JAX puts no typed tile dims on an array")
        if g.type == table_pb2.SHARDING_TYPE_MAXIMAL:
            need = 1
        elif g.type == table_pb2.SHARDING_TYPE_OTHER:
            trailing = int(g.replicate_on_last_tile_dim) + len(g.last_tile_dims)
            need = len(g.tile_assignment.dims) - trailing
    if rank < need:
        raise DecodeError(path, "invalid-value", f"a sharding of rank {need} on rank {rank}")
