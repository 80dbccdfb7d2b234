"""serialize_specs / deserialize_specs: every entry kind, dtypes, trees, dedup."""

import collections
import dataclasses

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P
from jax_limits import (
    AXIS_SETS,
    CPU_MEMORY_KINDS,
    INTERNED_SPECS,
    ONE_AXIS_TUPLES,
    AxisType,
    mesh_axis_types,
    skip_if,
    typed_mesh,
)
from vector_cases import DTYPE_NAMES

from colocated_wire import DecodeLimits, EncodeError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.table.check_table import check_table
from colocated_wire.table.lift_table import lift_table
from colocated_wire.table.lower_table import TableBuilder

SDS = jax.ShapeDtypeStruct


def roundtrip(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves)
    treedef2, leaves2 = deserialize_specs(data)
    assert treedef2 == treedef
    assert list(leaves2) == leaves
    assert serialize_specs(treedef2, leaves2) == data  # canonical after a round trip
    return data, treedef2, leaves2


def parse(data):
    return payload_pb2.SpecsPayload.FromString(data)


def kinds(data):
    return [e.WhichOneof("kind") for e in parse(data).table.entries]


def test_named_sharding_over_2d_mesh(mesh_2x4):
    s = NamedSharding(mesh_2x4, P("x", None, ("y",)))
    data, _, leaves = roundtrip([SDS((4, 2, 8), jnp.float32, sharding=s)])
    assert kinds(data) == ["device_list", "mesh", "named_sharding", "array_spec"]
    assert leaves[0].sharding == s


def test_3d_mesh_with_transposed_device_order(devices):
    order = np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1)
    mesh = Mesh(np.array(devices[:24])[order], ("a", "b", "c"))
    s = NamedSharding(mesh, P(("a", "c"), "b"))
    data, _, leaves = roundtrip({"w": SDS((8, 3), jnp.bfloat16, sharding=s)})
    dl = parse(data).table.entries[0].device_list
    assert dl.WhichOneof("ids") == "iota"
    assert leaves[0].sharding.mesh.devices.tolist() == mesh.devices.tolist()


def test_irregular_mesh_uses_plain_or_delta(devices):
    ids = [5, 3, 9, 0, 12, 7, 1, 2]
    mesh = Mesh(np.array([devices[i] for i in ids]).reshape(4, 2), ("a", "b"))
    data, _, leaves = roundtrip([SDS((4,), jnp.int8, sharding=NamedSharding(mesh, P("a")))])
    assert parse(data).table.entries[0].device_list.WhichOneof("ids") in ("plain", "delta")


def test_axis_types(devices):
    types = (AxisType.Explicit, AxisType.Manual, AxisType.Auto)
    mesh = typed_mesh(np.array(devices[:8]).reshape(2, 2, 2), ("e", "m", "a"), types)
    data, _, leaves = roundtrip([SDS((2,), jnp.float32, sharding=NamedSharding(mesh, P("e")))])
    assert mesh_axis_types(leaves[0].sharding.mesh) == types
    assert list(parse(data).table.entries[1].mesh.axis_types) == [2, 3, 1]


@skip_if(AXIS_SETS)
def test_partition_spec_forms(devices):
    # Unreduced/reduced need Explicit axes, UNCONSTRAINED an Auto one.
    types = (AxisType.Explicit, AxisType.Explicit, AxisType.Auto)
    mesh = typed_mesh(np.array(devices[:8]).reshape(2, 2, 2), ("x", "y", "z"), types)
    specs = [
        P(),
        P(None),
        P("x"),
        P(("x", "y")),
        P(P.UNCONSTRAINED, "z"),
        P(None, unreduced={"y", "x"}),
        P("x", reduced={"y"}),
    ]
    leaves = [SDS((4, 4), jnp.float32, sharding=NamedSharding(mesh, p)) for p in specs]
    data, _, out = roundtrip(leaves)
    for leaf, p in zip(out, specs, strict=True):
        assert leaf.sharding.spec is p or leaf.sharding.spec == p
    ns = [e.named_sharding for e in parse(data).table.entries if e.HasField("named_sharding")]
    assert len(ns) == len(specs)
    assert ns[0].HasField("spec") and ns[0].spec.ByteSize() == 0  # P() still written
    assert [e.kind for e in ns[1].spec.entries] == [1]  # NONE
    assert [e.kind for e in ns[2].spec.entries] == [2]  # AXIS
    assert [(e.kind, list(e.axes)) for e in ns[3].spec.entries] == [(3, ["x", "y"])]
    assert ns[4].spec.entries[0].kind == 4  # UNCONSTRAINED
    assert list(ns[5].spec.unreduced) == ["x", "y"]  # sorted
    assert list(ns[6].spec.reduced) == ["y"]


def test_jax_canonicalizes_one_tuple_to_axis(mesh_2x4):
    # P(('x',)) is P('x') in JAX 0.10.2 (before, an equal spec), so it is an AXIS entry
    # (JAX 0.4.38 keeps the tuple: jax_compat/partition_spec.py reads it as the axis).
    if ONE_AXIS_TUPLES is None:
        assert tuple(P(("x",))) == ("x",)
    if INTERNED_SPECS is None:
        assert P(("x",)) is P("x")
    s = NamedSharding(mesh_2x4, P(("x",)))
    data, _, _ = roundtrip([SDS((4,), jnp.float32, sharding=s)])
    assert parse(data).table.entries[2].named_sharding.spec.entries[0].kind == 2


@skip_if(CPU_MEMORY_KINDS)
def test_memory_kinds(mesh_2x4, devices):
    leaves = [
        SDS((2,), jnp.float32, sharding=NamedSharding(mesh_2x4, P(), memory_kind="pinned_host")),
        SDS((2,), jnp.float32, sharding=NamedSharding(mesh_2x4, P(), memory_kind="device")),
        SDS((2,), jnp.float32, sharding=SingleDeviceSharding(devices[3])),
        SDS(
            (2,),
            jnp.float32,
            sharding=SingleDeviceSharding(devices[3], memory_kind="unpinned_host"),
        ),
    ]
    _, _, out = roundtrip(leaves)
    assert [leaf.sharding.memory_kind for leaf in out] == [
        "pinned_host",
        "device",
        "device",
        "unpinned_host",
    ]


def test_single_device_sharding(devices):
    data, _, out = roundtrip((SDS((3,), jnp.int32, sharding=SingleDeviceSharding(devices[42])),))
    entry = parse(data).table.entries[0]
    assert entry.single_device_sharding.device_id == 42
    assert out[0].sharding.device_set == {devices[42]}


@pytest.mark.parametrize(
    "text,form",
    [
        ("{devices=[2,4]<=[8]}", "iota"),
        ("{devices=[2,4]<=[4,2]T(1,0)}", "iota"),
        ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "iota"),
        ("{devices=[2,4]3,1,0,2,4,5,6,7}", "explicit"),
        ("{maximal device=3}", "explicit"),
        ("{maximal device=0}", "iota"),
        ("{replicated}", None),
    ],
)
def test_gspmd_sharding(devices, text, form):
    hlo = xc.HloSharding.from_string(text)
    s = sharding_impls.GSPMDSharding(tuple(devices[8:16]), hlo)
    data, _, out = roundtrip([SDS((8, 8), jnp.float32, sharding=s)])
    g = parse(data).table.entries[1].gspmd_sharding
    if form is None:
        assert not g.HasField("tile_assignment")
    else:
        assert g.tile_assignment.WhichOneof("devices") == form
    assert out[0].sharding == s


def test_gspmd_tuple_sharding_is_refused(devices):
    hlo = xc.HloSharding.from_string("{{replicated}, {maximal device=0}}")
    s = sharding_impls.GSPMDSharding(tuple(devices[:2]), hlo)
    with pytest.raises(EncodeError, match="tuple"):
        TableBuilder().add(s)


@pytest.mark.parametrize(
    "text",
    ["{manual}", "{devices=[2,2,2]<=[2,2,2]T(2,1,0) last_tile_dims={manual}}"],
)
def test_gspmd_shardings_jax_cannot_put_on_a_leaf(devices, text):
    # JAX refuses these on a ShapeDtypeStruct; they still travel as table entries
    # (for instance captured by a pickled function).
    s = sharding_impls.GSPMDSharding(tuple(devices[:8]), xc.HloSharding.from_string(text))
    builder = TableBuilder()
    index = builder.add(s)
    table = payload_pb2.SpecsPayload.FromString(
        payload_pb2.SpecsPayload(table=builder.table).SerializeToString()
    ).table
    lifted = lift_table(check_table(table, DecodeLimits()))[index]
    assert lifted._hlo_sharding == s._hlo_sharding
    assert lifted._internal_device_list == s._internal_device_list


# The wire enum's dtypes but string, which numpy names differently.
DTYPES = [name for name in DTYPE_NAMES if name != "string"]


def test_all_dtypes_and_weak_type():
    leaves = [SDS((2, 3), jnp.dtype(name)) for name in DTYPES]
    leaves += [SDS((), jnp.float32, weak_type=True), SDS((1,), np.dtypes.StringDType())]
    _, _, out = roundtrip(leaves)
    assert [str(leaf.dtype) for leaf in out[: len(DTYPES)]] == DTYPES
    assert out[-2].weak_type is True
    assert isinstance(out[-1].dtype, np.dtypes.StringDType)


def test_unsupported_dtype():
    with pytest.raises(EncodeError):
        serialize_specs(jax.tree_util.tree_structure(0), [SDS((1,), np.dtype("<U3"))])


Point = collections.namedtuple("Point", ["x", "y"])


def test_trees():
    a = SDS((1,), jnp.float32)
    tree = (None, [a, {"b": a, "a": (a,), "é": None, "Z": []}], Point(a, [a]), ())
    data, treedef, _ = roundtrip(tree)
    td = parse(data).specs.treedef
    # The str keys sorted by code point, front-coded (no prefix is shared).
    assert (td.key_text, list(td.key_sizes)) == ("Zabé".encode(), [0, 1, 0, 1, 0, 1, 0, 2])
    assert [t.name for t in td.node_types] == [f"{__name__}.Point"]
    # One distinct leaf spec: one table entry.
    assert kinds(data) == ["array_spec"]
    # Its five leaves, written: a leaf copy (1.3) of four would take as many bytes.
    specs = parse(data).specs
    assert (list(specs.leaves), list(specs.leaf_copies)) == ([0] * 5, [])


def test_top_level_leaf_and_empty_tree():
    roundtrip(SDS((1,), jnp.float32))
    data, _, _ = roundtrip(())
    msg = parse(data)
    assert msg.HasField("table") and len(msg.table.entries) == 0  # empty table is written


def test_int_dict_keys_need_1_1_and_keys_without_a_wire_form_need_pickles():
    treedef = jax.tree_util.tree_structure({1: 0})
    with pytest.raises(EncodeError, match=r"dict key 1 needs colocated\.v1\.1") as e:
        serialize_specs(treedef, [SDS((1,), jnp.float32)], target_minor_version=0)
    assert e.value.path == "specs.treedef.kinds[0]"
    with pytest.raises(EncodeError, match="has no wire form.*allow_pickle=True") as e:
        serialize_specs(jax.tree_util.tree_structure({1j: 0}), [SDS((1,), jnp.float32)])
    assert e.value.path == "specs.treedef.kinds[0]"


def test_unknown_namedtuple_is_synthesized():
    data, _, _ = roundtrip([Point(SDS((1,), jnp.float32), None)])
    msg = parse(data)
    msg.specs.treedef.node_types[0].name = "nowhere.module.Pair"
    treedef, _ = deserialize_specs(msg.SerializeToString())
    cls = treedef.children()[0].node_data()[0]
    assert cls.__name__ == "Pair" and cls._fields == ("x", "y")
    # The same name and fields give the same class, so equal payloads give equal trees.
    assert deserialize_specs(msg.SerializeToString())[0] == treedef


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: jax.ShapeDtypeStruct
    b: jax.ShapeDtypeStruct
    name: str = dataclasses.field(metadata={"static": True}, default="layer")


def test_dataclass_node():
    a = SDS((1,), jnp.float32)
    data, treedef, _ = roundtrip({"p": Params(a, a, name="dense")})
    td = parse(data).specs.treedef
    assert list(td.node_data) == [b'j["dense"]']
    assert td.node_types[0].name == f"{__name__}.Params"


def test_dedup_equal_but_distinct_objects(devices):
    mesh1 = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    mesh2 = Mesh(np.array(list(devices[:8]), dtype=object).reshape(2, 4), ("x", "y"))
    s1, s2 = NamedSharding(mesh1, P("x")), NamedSharding(mesh2, P("x"))
    leaves = [SDS((4,), jnp.float32, sharding=s1), SDS((4,), jnp.float32, sharding=s2)]
    data, _, out = roundtrip(leaves)
    assert kinds(data) == ["device_list", "mesh", "named_sharding", "array_spec"]
    assert out[0] is out[1]  # one ArraySpec entry, one object


def test_one_instance_per_entry(mesh_2x4):
    s1 = NamedSharding(mesh_2x4, P("x"))
    s2 = NamedSharding(mesh_2x4, P("y"))
    leaves = [SDS((4, i + 1), jnp.float32, sharding=(s1, s2)[i % 2]) for i in range(6)]
    _, _, out = roundtrip(leaves)
    assert out[0].sharding is out[2].sharding is out[4].sharding
    assert out[1].sharding is out[3].sharding
    assert out[0].sharding.mesh is out[1].sharding.mesh


def test_canonical_bytes_do_not_depend_on_identity(devices):
    def build():
        mesh = Mesh(np.array(devices[:8]).reshape(4, 2), ("a", "b"))
        s = NamedSharding(mesh, P("a", "b"))
        return {
            "x": [SDS((8, 2), jnp.float32, sharding=s)],
            "y": SDS((8, 2), jnp.float32, sharding=NamedSharding(mesh, P("a", "b"))),
        }

    t1, t2 = build(), build()
    l1, d1 = jax.tree_util.tree_flatten(t1)
    l2, d2 = jax.tree_util.tree_flatten(t2)
    assert serialize_specs(d1, l1) == serialize_specs(d2, l2)


def test_golden_bytes_for_small_payload(devices):
    # A fixed byte string: any change here is a wire-format change that the
    # TypeScript side must make identically.
    mesh = Mesh(np.array(devices[:4]).reshape(2, 2), ("x", "y"))
    leaves = [SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x")))]
    data = serialize_specs(jax.tree_util.tree_structure([0]), leaves, target_minor_version=0)
    assert data.hex() == GOLDEN_SMALL
    # Written for a 1.1 reader, only the header's minor version (field 2, 1) is new.
    latest = serialize_specs(jax.tree_util.tree_structure([0]), leaves, target_minor_version=1)
    assert latest.hex() == "0a06080110011801" + GOLDEN_SMALL[len("0a040801180") + 1 :]


GOLDEN_SMALL = (
    "0a0408011801123b0a0a0a0812060a04000102030a1212100800120202021a01781a0179220201010a0d1a0b08"
    "0112070a0508021201780a0a32080a020804100f18021a0c0a070a020401120101120103"
)
