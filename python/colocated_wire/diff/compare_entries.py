"""Table objects compared by value, each pair of entries once: an entry of one payload faces an
entry of the other by what it holds, so a reordered table is no difference, and 10,000 leaves
on 16 shardings cost 16 comparisons. Read from the checked messages and their facts (a device
list's ids); TypeScript: src/diff/compare-entries.ts, over the model."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.diff.describe import (
    axis_set_text,
    change,
    memory_kind_text,
    py_str,
    py_tuple,
    shape_text,
    spec_entries_text,
    thousands,
)
from colocated_wire.diff.device_order import device_order_detail
from colocated_wire.diff.groups import Cause, value_cause
from colocated_wire.diff.payload_diff import DiffDetail
from colocated_wire.diff.read_side import DiffSide
from colocated_wire.entries.array_spec import DTYPE_NAMES
from colocated_wire.entries.enum_names import wire_names
from colocated_wire.entries.gspmd_sharding import TILED

# The names the result gives table objects' kinds, by their entry's oneof case.
KIND_NAMES = {
    "array_spec": "ShapeDtypeStruct",
    "named_sharding": "NamedSharding",
    "single_device_sharding": "SingleDeviceSharding",
    "gspmd_sharding": "GSPMDSharding",
    "mesh": "Mesh",
    "device_list": "DeviceList",
    None: "unknown",
}
_P = table_pb2
_AXIS_TYPES = {v: n.capitalize() for v, n in wire_names(_P.AxisType, "AXIS_TYPE_").items()}
_SHARDING_TYPES = {v: n.lower() for v, n in wire_names(_P.ShardingType, "SHARDING_TYPE_").items()}
# The tags JAX prints for its own PRNG impls (key<fry>); another impl prints as its name.
_KEY_TAGS = {"threefry2x32": "fry", "rbg": "rbg", "unsafe_rbg": "urbg"}


class EntryComparison:
    """The comparisons of one pair of payloads, remembered by pair of entries."""

    def __init__(self, a: DiffSide, b: DiffSide):
        self.a, self.b = a, b
        self._width = b.refs.table_size + 1
        self._array_specs: dict[int, list[Cause]] = {}
        self._shardings: dict[int, list[Cause]] = {}
        self._meshes: dict[int, Cause | None] = {}
        self._values: dict[tuple[int, int], list[Cause]] = {}

    def array_specs(self, ia: int, ib: int) -> list[Cause]:
        """How leaf spec `ia` of A differs from `ib` of B ([] when equal), each pair once."""
        key = ia * self._width + ib
        causes = self._array_specs.get(key)
        if causes is None:
            causes = self._array_specs[key] = self._compare_array_specs(ia, ib)
        return causes

    def shardings(self, sa: int, sb: int) -> list[Cause]:
        """How sharding `sa` of A differs from `sb` of B (-1: none): the sharding's cause, its
        mesh's."""
        key = (sa + 1) * self._width + sb + 1
        causes = self._shardings.get(key)
        if causes is None:
            causes = self._shardings[key] = self._compare_shardings(sa, sb)
        return causes

    def meshes(self, ma: int, mb: int) -> Cause | None:
        """How mesh `ma` of A differs from `mb` of B, or None."""
        key = ma * self._width + mb
        if key not in self._meshes:
            self._meshes[key] = self._compare_meshes(ma, mb)
        return self._meshes[key]

    def entries(self, ia: int, ib: int) -> list[Cause]:
        """How entry `ia` of A differs from `ib` of B, whatever their kinds (a pickle's refs)."""
        ka, kb = _kind(self.a, ia), _kind(self.b, ib)
        if ka != kb:
            return [value_cause("leaf_kind", ka, kb, change(ka, kb))]
        if ka == "ShapeDtypeStruct":
            return self.array_specs(ia, ib)
        if ka == "Mesh":
            mesh = self.meshes(ia, ib)
            return [] if mesh is None else [mesh]
        if ka == "DeviceList":
            detail = device_order_detail("devices", self.a.refs.facts[ia], self.b.refs.facts[ib])
            if detail is None:
                return []
            return [entry_cause("devices", ia, ib, "device list", [detail], ka, kb)]
        return self.shardings(ia, ib)

    def value_leaves(self, ra: int, rb: int) -> list[Cause]:
        """How a value's leaf `ra` of A differs from `rb` of B (PartSide.leaf_refs: an entry, or
        -2 - a written position), each pair once."""
        if ra >= 0 and rb >= 0:
            return self.entries(ra, rb)
        causes = self._values.get((ra, rb))
        if causes is None:
            causes = self._values[(ra, rb)] = self._compare_value_leaves(ra, rb)
        return causes

    def pickle_details(
        self, pa: bytes, pb: bytes, refs_a: list[int], refs_b: list[int]
    ) -> list[DiffDetail]:
        """A pickle's bytes, then how many refs, then each ref compared by value."""
        details = []
        if pa != pb:
            words = change(thousands(len(pa)), f"{thousands(len(pb))} bytes")
            text = f"the pickle differs ({words})"
            details.append(field_detail("pickle", len(pa), len(pb), text))
        if len(refs_a) != len(refs_b):
            na, nb = len(refs_a), len(refs_b)
            details.append(field_detail("refs", na, nb, f"refs {change(str(na), str(nb))}"))
        for i, (ra, rb) in enumerate(zip(refs_a, refs_b, strict=False)):
            causes = self.entries(ra, rb)
            if causes:
                text = f"ref {i}: " + "; ".join(c.text for c in causes)
                details.append(field_detail(f"refs[{i}]", ra, rb, text))
        return details

    def _compare_value_leaves(self, ra: int, rb: int) -> list[Cause]:
        x = None if ra >= 0 else self.a.values[-2 - ra]
        y = None if rb >= 0 else self.b.values[-2 - rb]
        ka = _value_kind(x) if x is not None else _kind(self.a, ra)
        kb = _value_kind(y) if y is not None else _kind(self.b, rb)
        if ka != kb or x is None or y is None:
            return [value_cause("leaf_kind", ka, kb, change(ka, kb))]
        if ka == "dtype":
            da, db = _dtype_text(x.dtype), _dtype_text(y.dtype)
            if da != db:
                return [value_cause("dtype", da, db, f"dtype {change(da, db)}")]
            sa, sb = list(x.dtype.key_type.key_shape), list(y.dtype.key_type.key_shape)
            if sa == sb:
                return []
            text = f"key shape {change(shape_text(sa), shape_text(sb))}"
            return [value_cause("key_shape", sa, sb, text)]
        if ka == "PRNG impl":
            pa, pb = x.prng_impl, y.prng_impl
            ia, ib = _prng_text(pa), _prng_text(pb)
            if ia == ib:
                return []
            json_a = {"name": pa.impl, "keyShape": list(pa.key_shape)}
            json_b = {"name": pb.impl, "keyShape": list(pb.key_shape)}
            return [value_cause("prng_impl", json_a, json_b, f"PRNG impl {change(ia, ib)}")]
        if ka == "function":
            fa = f"{x.function.module}.{x.function.qualname}"
            fb = f"{y.function.module}.{y.function.qualname}"
            if fa == fb:
                return []
            return [value_cause("function", fa, fb, f"function {change(fa, fb)}")]
        if ka == "pickle":
            pa, pb = x.pickled, y.pickled
            details = self.pickle_details(pa.pickle, pb.pickle, list(pa.refs), list(pb.refs))
            if not details:
                return []
            text = ", ".join(["pickle", *(d.text for d in details)])
            cause = value_cause("pickle", len(pa.pickle), len(pb.pickle), text)
            return [Cause(f"pickle|{ra}|{rb}", *cause[1:6], details)]
        ba, bb = x.SerializeToString(), y.SerializeToString()
        if ba == bb:
            return []
        text = "a leaf of a newer minor version: it differs"
        return [value_cause("leaf", len(ba), len(bb), text)]

    def _compare_array_specs(self, ia: int, ib: int) -> list[Cause]:
        x, y = self.a.refs.message(ia), self.b.refs.message(ib)
        if x == y:  # every field equal, its sharding's index too: only the shardings may differ
            sharding = x.sharding if x.HasField("sharding") else -1
            return list(self.shardings(sharding, sharding))
        causes = []
        if list(x.shape) != list(y.shape):
            sa, sb = list(x.shape), list(y.shape)
            causes.append(
                value_cause("shape", sa, sb, f"shape {change(shape_text(sa), shape_text(sb))}")
            )
        da, db = _dtype_text(x), _dtype_text(y)
        if da != db:
            causes.append(value_cause("dtype", da, db, f"dtype {change(da, db)}"))
        elif x.HasField("key_type") and y.HasField("key_type"):
            sa, sb = list(x.key_type.key_shape), list(y.key_type.key_shape)
            if sa != sb:
                text = f"key shape {change(shape_text(sa), shape_text(sb))}"
                causes.append(value_cause("key_shape", sa, sb, text))
        if x.weak_type != y.weak_type:
            text = f"weak_type {change(str(x.weak_type), str(y.weak_type))}"
            causes.append(value_cause("weak_type", x.weak_type, y.weak_type, text))
        sa = x.sharding if x.HasField("sharding") else -1
        sb = y.sharding if y.HasField("sharding") else -1
        causes += self.shardings(sa, sb)
        return causes

    def _compare_shardings(self, sa: int, sb: int) -> list[Cause]:
        if sa < 0 and sb < 0:
            return []
        ka = None if sa < 0 else _kind(self.a, sa)
        kb = None if sb < 0 else _kind(self.b, sb)
        if ka is None or kb is None or ka != kb:
            details = []
            if ka is not None and kb is not None:
                details = [field_detail("type", ka, kb, change(ka, kb))]
            return [entry_cause("sharding", sa, sb, "sharding", details, ka, kb)]
        causes = []
        details = _sharding_details(self.a, sa, self.b, sb, ka)
        if details:
            causes.append(entry_cause("sharding", sa, sb, "sharding", details, ka, kb))
        if ka == "NamedSharding":
            mesh = self.meshes(self.a.refs.message(sa).mesh, self.b.refs.message(sb).mesh)
            if mesh is not None:
                causes.append(mesh)
        return causes

    def _compare_meshes(self, ma: int, mb: int) -> Cause | None:
        x, y = self.a.refs.message(ma), self.b.refs.message(mb)
        details = []
        names_a, names_b = list(x.axis_names), list(y.axis_names)
        if names_a != names_b:
            words = change(_names_text(names_a), _names_text(names_b))
            details.append(field_detail("axis_names", names_a, names_b, f"axis names {words}"))
        sizes_a, sizes_b = list(x.axis_sizes), list(y.axis_sizes)
        if sizes_a != sizes_b:
            text = f"axis sizes {change(shape_text(sizes_a), shape_text(sizes_b))}"
            details.append(field_detail("axis_sizes", sizes_a, sizes_b, text))
        types_a = [_AXIS_TYPES[t] for t in x.axis_types]
        types_b = [_AXIS_TYPES[t] for t in y.axis_types]
        if types_a != types_b:
            text = f"axis types {change(py_tuple(types_a), py_tuple(types_b))}"
            details.append(field_detail("axis_types", types_a, types_b, text))
        ids_a, ids_b = self.a.refs.facts[ma], self.b.refs.facts[mb]
        devices = device_order_detail("devices", ids_a, ids_b, sizes_a, sizes_b)
        if devices is not None:
            details.append(devices)
        if not details:
            return None
        shape_a = {"axisNames": names_a, "axisSizes": sizes_a}
        shape_b = {"axisNames": names_b, "axisSizes": sizes_b}
        return entry_cause("mesh", ma, mb, "mesh", details, shape_a, shape_b)


def _sharding_details(a: DiffSide, sa: int, b: DiffSide, sb: int, kind: str) -> list[DiffDetail]:
    """What differs in two shardings of one type, besides a NamedSharding's mesh."""
    details: list[DiffDetail] = []
    if kind == "unknown":  # entries of a newer minor version: their bytes
        ba = a.refs.entries[sa].SerializeToString(deterministic=True)
        bb = b.refs.entries[sb].SerializeToString(deterministic=True)
        if ba != bb:
            words = change(thousands(len(ba)), f"{thousands(len(bb))} bytes")
            text = f"an entry of a newer minor version, {words}"
            details.append(field_detail("entry", len(ba), len(bb), text))
        return details
    x, y = a.refs.message(sa), b.refs.message(sb)
    if kind != "GSPMDSharding" and x == y:  # what else it refers to is compared apart (a mesh)
        return details
    if kind == "NamedSharding":
        ea, eb = _spec_entries(x.spec), _spec_entries(y.spec)
        if ea != eb:
            text = f"PartitionSpec{change(spec_entries_text(ea), spec_entries_text(eb))}"
            details.append(field_detail("spec", ea, eb, text))
        for role in ("unreduced", "reduced"):
            ra, rb = sorted(getattr(x.spec, role)), sorted(getattr(y.spec, role))
            if ra != rb:
                text = f"{role} {change(axis_set_text(ra), axis_set_text(rb))}"
                details.append(field_detail(f"spec.{role}", ra, rb, text))
    elif kind == "SingleDeviceSharding":
        if x.device_id != y.device_id:
            text = f"device {change(str(x.device_id), str(y.device_id))}"
            details.append(field_detail("device", x.device_id, y.device_id, text))
    else:
        details += _gspmd_details(a, sa, b, sb)
    ma, mb = _memory_kind(x), _memory_kind(y)
    if ma != mb:
        text = f"memory kind {change(memory_kind_text(ma), memory_kind_text(mb))}"
        details.append(field_detail("memory_kind", ma, mb, text))
    return details


def _gspmd_details(a: DiffSide, sa: int, b: DiffSide, sb: int) -> list[DiffDetail]:
    """A GSPMD sharding's fields, in the order of its message."""
    x, y = a.refs.message(sa), b.refs.message(sb)
    details = []
    devices = device_order_detail(
        "devices", a.refs.facts[x.device_list], b.refs.facts[y.device_list]
    )
    if devices is not None:
        details.append(devices)
    ta, tb = _SHARDING_TYPES[x.type], _SHARDING_TYPES[y.type]
    if ta != tb:
        details.append(field_detail("hlo.type", ta, tb, f"type {change(ta, tb)}"))
    dims_a = list(x.tile_assignment.dims) if x.type in TILED else []
    dims_b = list(y.tile_assignment.dims) if y.type in TILED else []
    if dims_a != dims_b:
        text = f"tile dims {change(shape_text(dims_a), shape_text(dims_b))}"
        details.append(field_detail("hlo.tile_dims", dims_a, dims_b, text))
    tiles_a, tiles_b = a.refs.facts[sa], b.refs.facts[sb]
    tiles = device_order_detail(
        "hlo.tile_devices",
        np.zeros(0, np.int64) if tiles_a is None else tiles_a,
        np.zeros(0, np.int64) if tiles_b is None else tiles_b,
    )
    if tiles is not None:
        details.append(dataclasses.replace(tiles, text=f"tile assignment: {tiles.text}"))
    if x.replicate_on_last_tile_dim != y.replicate_on_last_tile_dim:
        ra, rb = x.replicate_on_last_tile_dim, y.replicate_on_last_tile_dim
        text = f"replicate_on_last_tile_dim {change(str(ra), str(rb))}"
        details.append(field_detail("hlo.replicate_on_last_tile_dim", ra, rb, text))
    la = [_SHARDING_TYPES[t] for t in x.last_tile_dims]
    lb = [_SHARDING_TYPES[t] for t in y.last_tile_dims]
    if la != lb:
        text = f"last tile dims {change(py_tuple(la), py_tuple(lb))}"
        details.append(field_detail("hlo.last_tile_dims", la, lb, text))
    return details


def entry_cause(
    cause: str, ia: int, ib: int, noun: str, details: list[DiffDetail], a: Any, b: Any
) -> Cause:
    """A cause naming an entry of each side: "sharding #2 to #5, PartitionSpec(...) to (...)"."""
    head = f"{noun} {change(_entry_text(ia), _entry_text(ib))}"
    text = ", ".join([head, *(d.text for d in details)])
    entries = (None if ia < 0 else ia, None if ib < 0 else ib)
    return Cause(f"{cause}|{ia}|{ib}", cause, text, entries, a, b, tuple(details))


def field_detail(field: str, a: Any, b: Any, text: str) -> DiffDetail:
    return DiffDetail(field, a, b, None, text)


def _names_text(names: list[str]) -> str:
    """Axis names as Python prints a tuple of them: ('data', 'model')."""
    return py_tuple([py_str(n) for n in names])


def _entry_text(index: int) -> str:
    """An entry as the result names it: #2, or none."""
    return "none" if index < 0 else f"#{index}"


def _kind(side: DiffSide, index: int) -> str:
    return KIND_NAMES[side.refs.kinds[index]]


def _value_kind(leaf: Any) -> str:
    """A value leaf's kind (not a table entry), as the result names it."""
    case = leaf.WhichOneof("leaf")
    return {"dtype": "dtype", "prng_impl": "PRNG impl", "function": "function"}.get(
        case, "pickle" if case == "pickled" else "unknown"
    )


def _dtype_text(msg: Any) -> str:
    """A dtype as JAX prints it, of an ArraySpec or a DTypeValue: float32, key<fry>."""
    name = DTYPE_NAMES[msg.dtype]
    if name != "key":
        return name
    impl = msg.key_type.impl
    return f"key<{_KEY_TAGS.get(impl, impl)}>"


def _prng_text(impl: Any) -> str:
    """A PRNG impl and its key shape: threefry2x32 (2,)."""
    return f"{impl.impl} {shape_text(list(impl.key_shape))}"


def _spec_entries(spec: table_pb2.PartitionSpec) -> list[Any]:
    """A PartitionSpec's entries as the result holds them (None, "x", ["x", "y"],
    {"unconstrained": True}), a tuple of one axis that axis and of none None, as JAX has them."""
    out: list[Any] = []
    for e in spec.entries:
        if e.kind == _P.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
            out.append({"unconstrained": True})
        elif e.kind == _P.PARTITION_SPEC_ENTRY_KIND_NONE or not e.axes:
            out.append(None)
        elif e.kind == _P.PARTITION_SPEC_ENTRY_KIND_AXIS or len(e.axes) == 1:
            out.append(e.axes[0])
        else:
            out.append(list(e.axes))
    return out


def _memory_kind(msg: Any) -> str | None:
    """A sharding's memory kind; the default ("device", or none) is None, as JAX has them one."""
    kind = msg.memory_kind if msg.HasField("memory_kind") else None
    return None if kind == "device" else kind
