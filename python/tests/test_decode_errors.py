"""Every DecodeError code of docs/wire-format.md, with its path, and the limits."""

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from colocated.v1 import payload_pb2, table_pb2, tree_pb2
from colocated_wire import (
    DecodeError,
    DecodeLimits,
    LiftError,
    deserialize_program,
    deserialize_specs,
    serialize_program,
    serialize_specs,
)

SDS = jax.ShapeDtypeStruct


@pytest.fixture(scope="module")
def base(devices):
    """Entries: 0 device list, 1 mesh, 2 named sharding, 3 array spec,
    4 single-device sharding, 5 array spec, 6 device list, 7 gspmd, 8 array spec."""
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    gspmd = sharding_impls.GSPMDSharding(
        tuple(devices[8:16]), xc.HloSharding.from_string("{devices=[2,4]3,1,0,2,4,5,6,7}")
    )
    tree = {
        "a": SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x"))),
        "b": [SDS((2,), jnp.int8, sharding=SingleDeviceSharding(devices[20]))],
        "c": (SDS((8, 8), jnp.bfloat16, sharding=gspmd), None),
    }
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves)
    kinds = [e.WhichOneof("kind") for e in payload_pb2.SpecsPayload.FromString(data).table.entries]
    assert kinds == [
        "device_list",
        "mesh",
        "named_sharding",
        "array_spec",
        "single_device_sharding",
        "array_spec",
        "device_list",
        "gspmd_sharding",
        "array_spec",
    ]
    return data


def mutate(data, fn):
    msg = payload_pb2.SpecsPayload.FromString(data)
    fn(msg)
    return msg.SerializeToString()


def expect(data, code, path, limits=None):
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, limits=limits)
    assert (info.value.code, info.value.path) == (code, path), str(info.value)
    assert str(info.value).startswith(f"{path}: ")


def E(msg, i):
    return msg.table.entries[i]


def set_plain(msg, i, ids):
    E(msg, i).device_list.plain.ids[:] = ids


CASES = {
    "malformed": (lambda m: None, "malformed", "payload"),
    "no header": (lambda m: m.ClearField("header"), "unsupported-version", "header"),
    "major 2": (
        lambda m: setattr(m.header, "major_version", 2),
        "unsupported-version",
        "header.major_version",
    ),
    "kind": (lambda m: setattr(m.header, "kind", 2), "wrong-payload-kind", "header.kind"),
    "missing mesh device list": (
        lambda m: E(m, 1).mesh.ClearField("device_list"),
        "missing",
        "table[1].mesh.device_list",
    ),
    "missing specs": (lambda m: m.ClearField("specs"), "missing", "specs"),
    "missing treedef": (lambda m: m.specs.ClearField("treedef"), "missing", "specs.treedef"),
    "missing ids": (
        lambda m: E(m, 0).device_list.ClearField("iota"),
        "missing",
        "table[0].device_list.ids",
    ),
    "missing tile assignment": (
        lambda m: E(m, 7).gspmd_sharding.ClearField("tile_assignment"),
        "missing",
        "table[7].gspmd_sharding.tile_assignment",
    ),
    "leaf out of range": (
        lambda m: m.specs.leaves.__setitem__(0, 99),
        "reference-out-of-range",
        "specs.leaves[0]",
    ),
    "sharding out of range": (
        lambda m: setattr(E(m, 3).array_spec, "sharding", 9),
        "reference-out-of-range",
        "table[3].array_spec.sharding",
    ),
    "self reference": (
        lambda m: setattr(E(m, 1).mesh, "device_list", 1),
        "forward-reference",
        "table[1].mesh.device_list",
    ),
    "forward reference": (
        lambda m: setattr(E(m, 3).array_spec, "sharding", 4),
        "forward-reference",
        "table[3].array_spec.sharding",
    ),
    "leaf to a mesh": (
        lambda m: m.specs.leaves.__setitem__(0, 1),
        "wrong-entry-kind",
        "specs.leaves[0]",
    ),
    "named sharding on a device list": (
        lambda m: setattr(E(m, 2).named_sharding, "mesh", 0),
        "wrong-entry-kind",
        "table[2].named_sharding.mesh",
    ),
    "array spec sharding to a mesh": (
        lambda m: setattr(E(m, 3).array_spec, "sharding", 1),
        "wrong-entry-kind",
        "table[3].array_spec.sharding",
    ),
    "dtype": (
        lambda m: setattr(E(m, 3).array_spec, "dtype", 999),
        "unknown-enum",
        "table[3].array_spec.dtype",
    ),
    "dtype unspecified": (
        lambda m: setattr(E(m, 3).array_spec, "dtype", 0),
        "unknown-enum",
        "table[3].array_spec.dtype",
    ),
    "axis type": (
        lambda m: E(m, 1).mesh.axis_types.__setitem__(1, 0),
        "unknown-enum",
        "table[1].mesh.axis_types[1]",
    ),
    "node kind": (
        lambda m: m.specs.treedef.kinds.__setitem__(1, 42),
        "unknown-enum",
        "specs.treedef.kinds[1]",
    ),
    "spec entry kind": (
        lambda m: setattr(E(m, 2).named_sharding.spec.entries[0], "kind", 9),
        "unknown-enum",
        "table[2].named_sharding.spec.entries[0].kind",
    ),
    "sharding type": (
        lambda m: setattr(E(m, 7).gspmd_sharding, "type", 0),
        "unknown-enum",
        "table[7].gspmd_sharding.type",
    ),
    "mesh sizes": (
        lambda m: E(m, 1).mesh.axis_sizes.__setitem__(1, 2),
        "invalid-mesh",
        "table[1].mesh.axis_sizes",
    ),
    "mesh counts": (
        lambda m: E(m, 1).mesh.axis_names.append("z"),
        "invalid-mesh",
        "table[1].mesh",
    ),
    "mesh name repeats": (
        lambda m: E(m, 1).mesh.axis_names.__setitem__(1, "x"),
        "invalid-mesh",
        "table[1].mesh.axis_names[1]",
    ),
    "duplicate device": (
        lambda m: set_plain(m, 0, [0, 1, 2, 3, 4, 5, 6, 3]),
        "duplicate-device",
        "table[0].device_list.plain.ids[7]",
    ),
    "duplicate device delta": (
        lambda m: E(m, 0).device_list.delta.deltas.extend([4, 1, -1]),
        "duplicate-device",
        "table[0].device_list.delta.deltas[2]",
    ),
    "iota perm": (
        lambda m: E(m, 0).device_list.iota.iota.transpose_perm.__setitem__(0, 1),
        "invalid-iota",
        "table[0].device_list.iota.iota.transpose_perm",
    ),
    "iota dims and perm disagree": (
        lambda m: E(m, 0).device_list.iota.iota.transpose_perm.append(1),
        "invalid-iota",
        "table[0].device_list.iota.iota.transpose_perm",
    ),
    "unknown axis": (
        lambda m: E(m, 2).named_sharding.spec.entries[0].axes.__setitem__(0, "q"),
        "unknown-axis",
        "table[2].named_sharding.spec.entries[0].axes[0]",
    ),
    "unknown unreduced axis": (
        lambda m: E(m, 2).named_sharding.spec.unreduced.append("q"),
        "unknown-axis",
        "table[2].named_sharding.spec.unreduced[0]",
    ),
    "repeated axis": (
        lambda m: E(m, 2).named_sharding.spec.entries.add(kind=3, axes=["y", "x"]),
        "repeated-axis",
        "table[2].named_sharding.spec.entries[1].axes[1]",
    ),
    "repeated axis in reduced": (
        lambda m: E(m, 2).named_sharding.spec.reduced.append("x"),
        "repeated-axis",
        "table[2].named_sharding.spec.reduced[0]",
    ),
    "arities": (
        lambda m: m.specs.treedef.arities.append(1),
        "invalid-tree",
        "specs.treedef.arities",
    ),
    "truncated tree": (
        lambda m: m.specs.treedef.kinds.pop(),
        "invalid-tree",
        "specs.treedef.arities[2]",
    ),
    "dict keys unsorted": (
        lambda m: m.specs.treedef.dict_keys.__setitem__(1, 0),
        "invalid-tree",
        "specs.treedef.dict_keys[1]",
    ),
    "leaf count": (lambda m: m.specs.leaves.append(3), "invalid-tree", "specs.leaves"),
    "device id above int32": (
        lambda m: set_plain(m, 0, [0, 1, 2, 3, 4, 5, 6, 2**31]),
        "invalid-value",
        "table[0].device_list.plain.ids[7]",
    ),
    "single device id above int32": (
        lambda m: setattr(E(m, 4).single_device_sharding, "device_id", 2**31),
        "invalid-value",
        "table[4].single_device_sharding.device_id",
    ),
    "dimension above 2**53-1": (
        lambda m: E(m, 3).array_spec.shape.__setitem__(0, 2**53),
        "invalid-value",
        "table[3].array_spec.shape[0]",
    ),
    "empty axis name": (
        lambda m: E(m, 1).mesh.axis_names.__setitem__(0, ""),
        "invalid-value",
        "table[1].mesh.axis_names[0]",
    ),
    "axis entry with two axes": (
        lambda m: E(m, 2).named_sharding.spec.entries[0].axes.append("y"),
        "invalid-value",
        "table[2].named_sharding.spec.entries[0].axes",
    ),
    "tile id beyond the device list": (
        lambda m: E(m, 7).gspmd_sharding.tile_assignment.explicit.ids.__setitem__(0, 8),
        "invalid-value",
        "table[7].gspmd_sharding.tile_assignment.explicit.ids[0]",
    ),
    "iota too large": (
        lambda m: E(m, 0).device_list.iota.iota.reshape_dims.__setitem__(0, 2**31),
        "limit-exceeded",
        "table[0].device_list.iota.iota.reshape_dims",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decode_error(base, name):
    fn, code, path = CASES[name]
    data = b"\x0a\xff" if code == "malformed" else mutate(base, fn)
    expect(data, code, path)


def test_every_code_is_covered():
    from colocated_wire.errors import DECODE_ERROR_CODES

    assert {code for _, code, _ in CASES.values()} == DECODE_ERROR_CODES


def test_program_decode_errors(devices, base):
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    leaves = [SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x")))]
    td = jax.tree_util.tree_structure([0])
    data = serialize_program(lambda x: (x, mesh), td, leaves, None, None, devices[:8])

    def program_error(fn, code, path):
        msg = payload_pb2.ProgramPayload.FromString(data)
        fn(msg)
        with pytest.raises(DecodeError) as info:
            deserialize_program(msg.SerializeToString())
        assert (info.value.code, info.value.path) == (code, path)

    program_error(lambda m: m.ClearField("devices"), "missing", "devices")
    program_error(lambda m: setattr(m, "devices", 1), "wrong-entry-kind", "devices")
    program_error(
        lambda m: m.function.pickled.refs.append(50),
        "reference-out-of-range",
        "function.pickled.refs[1]",
    )
    program_error(lambda m: m.ClearField("input_specs"), "missing", "input_specs")
    program_error(
        lambda m: m.input_specs.leaves.__setitem__(0, 2),
        "wrong-entry-kind",
        "input_specs.leaves[0]",
    )
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data)
    assert (info.value.code, info.value.path) == ("wrong-payload-kind", "header.kind")
    with pytest.raises(DecodeError) as info:
        deserialize_program(base)
    assert (info.value.code, info.value.path) == ("wrong-payload-kind", "header.kind")


def test_limits(base):
    expect(base, "limit-exceeded", "payload", DecodeLimits(max_payload_bytes=10))
    expect(base, "limit-exceeded", "table.entries", DecodeLimits(max_table_entries=3))
    # Counts of repeated fields are checked by the wire scan, before any entry.
    expect(
        base,
        "limit-exceeded",
        "table[7].gspmd_sharding.tile_assignment.explicit.ids",
        DecodeLimits(max_devices_per_list=4),
    )
    expect(base, "limit-exceeded", "table[1].mesh.axis_sizes", DecodeLimits(max_rank=1))
    expect(base, "limit-exceeded", "specs.treedef.kinds", DecodeLimits(max_tree_nodes=5))
    expect(base, "limit-exceeded", "specs.treedef.kinds[2]", DecodeLimits(max_tree_depth=1))
    # Explicit lists are limited too.
    data = mutate(base, lambda m: set_plain(m, 0, list(range(8))))
    expect(
        data, "limit-exceeded", "table[0].device_list.plain.ids", DecodeLimits(max_devices_per_list=4)
    )


def test_deep_tree_within_and_beyond_the_depth_limit():
    leaf = SDS((1,), jnp.float32)
    tree = leaf
    for _ in range(300):  # JAX itself cannot flatten much deeper trees
        tree = [tree]
    data = serialize_specs(jax.tree_util.tree_structure(tree), [leaf])
    assert deserialize_specs(data)[0] == jax.tree_util.tree_structure(tree)
    msg = payload_pb2.SpecsPayload.FromString(data)
    del msg.specs.treedef.kinds[:]
    del msg.specs.treedef.arities[:]
    msg.specs.treedef.kinds.extend([tree_pb2.NODE_KIND_LIST] * 1001 + [tree_pb2.NODE_KIND_LEAF])
    msg.specs.treedef.arities.extend([1] * 1001)
    expect(msg.SerializeToString(), "limit-exceeded", "specs.treedef.kinds[1000]")


def test_huge_iota_is_refused_before_materializing():
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(jax.tree_util.tree_structure(()), []))
    dl = msg.table.entries.add().device_list
    dl.iota.iota.reshape_dims.extend([2**20, 2**20, 2**20])
    dl.iota.iota.transpose_perm.extend([0, 1, 2])
    expect(msg.SerializeToString(), "limit-exceeded", "table[0].device_list.iota.iota.reshape_dims")


def test_unknown_device_id_is_a_lift_error(base):
    data = mutate(base, lambda m: setattr(E(m, 4).single_device_sharding, "device_id", 5000))
    with pytest.raises(LiftError, match="5000"):
        deserialize_specs(data)


def test_table_entry_kinds_must_be_device_lists():
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(jax.tree_util.tree_structure(()), []))
    msg.table.entries.add().array_spec.dtype = table_pb2.D_TYPE_FLOAT32
    m = msg.table.entries.add().mesh
    m.device_list = 0
    expect(msg.SerializeToString(), "wrong-entry-kind", "table[1].mesh.device_list")
