"""The per-process caches of meshes, shardings and device lists (issue 18).

A cached lowering writes the bytes a fresh one writes, a lifted mesh is found
again without changing what a payload shares, ids map to devices as the
per-id map says, and no cache keeps a JAX object alive.
"""

import gc
import weakref

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire import deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2, table_pb2
from colocated_wire.devices import cpu_device_map, devices_for_ids
from colocated_wire.entries import array_spec, named_sharding
from colocated_wire.entries import mesh as mesh_entry
from colocated_wire.entries.array_spec import add_leaves
from colocated_wire.entries.device_list import lower_device_ids
from colocated_wire.errors import EncodeError, LiftError
from colocated_wire.limits import DEFAULT_LIMITS
from colocated_wire.table.check_table import check_table
from colocated_wire.table.lift_table import lift_table
from colocated_wire.table.lower_table import LowerContext, TableBuilder

SPECS = [("x", "y"), (None, "y"), ("x", None), ("y", None), ()]


def _mesh(devices, order):
    """A mesh over 16 devices in `order` (a seed, or None for in order), unlike other tests'."""
    ids = np.arange(16) if order is None else np.random.default_rng(order).permutation(16)
    return Mesh(np.array([devices[i] for i in ids]).reshape(4, 4), ("x", "y"))


def _leaves(mesh):
    """Fresh NamedShardings, one per leaf, five distinct specs."""
    return [
        jax.ShapeDtypeStruct((8, 8), np.float32, sharding=NamedSharding(mesh, PartitionSpec(*s)))
        for s in SPECS * 4
    ]


@pytest.mark.parametrize("order", [None, 7, 8])
def test_a_cached_lowering_writes_the_bytes_of_a_fresh_one(devices, order):
    mesh = _mesh(devices, order)
    assert mesh not in mesh_entry._LOWERED  # the first lowering is a fresh one
    leaves = _leaves(mesh)
    treedef = jax.tree_util.tree_structure(leaves)
    fresh = serialize_specs(treedef, leaves)
    assert mesh in mesh_entry._LOWERED and len(named_sharding._LOWERED[mesh]) == len(SPECS)
    assert serialize_specs(treedef, leaves) == fresh
    assert serialize_specs(treedef, _leaves(mesh)) == fresh
    out_treedef, out = deserialize_specs(fresh)
    assert out_treedef == treedef and list(out) == leaves
    assert len({id(x.sharding) for x in out}) == len(SPECS)


def test_leaves_keyed_by_their_shardings_parts_write_what_shared_shardings_write(devices):
    # A leaf's key names a NamedSharding by its mesh and spec objects: equal leaves over
    # another (equal) mesh object are still one entry, and the same spec on another mesh is not.
    meshes = [_mesh(devices, 5), Mesh(np.array(_mesh(devices, 5).devices), ("x", "y"))]
    other = _mesh(devices, 6)
    shared = [NamedSharding(m, PartitionSpec(*s)) for m in (meshes[0], other) for s in SPECS]
    mixed = [
        jax.ShapeDtypeStruct((8, 8), np.float32, sharding=NamedSharding(mesh, sh.spec))
        for i, sh in enumerate(shared * 3)
        for mesh in [sh.mesh if sh.mesh is other else meshes[i % 2]]
    ]
    plain = [jax.ShapeDtypeStruct((8, 8), np.float32, sharding=sh) for sh in shared * 3]
    treedef = jax.tree_util.tree_structure(plain)
    data = serialize_specs(treedef, plain)
    assert serialize_specs(treedef, mixed) == data
    # Per mesh: a device list, the mesh, five shardings, five leaves.
    assert len(payload_pb2.SpecsPayload.FromString(data).table.entries) == 2 * (2 + 2 * len(SPECS))


def test_lifting_again_finds_the_mesh_and_keeps_entries_distinct(devices):
    mesh = _mesh(devices, 9)
    ids = [d.id for d in mesh.devices.flat]
    device_list = table_pb2.Entry(device_list=lower_device_ids(ids))
    axes = table_pb2.Mesh(axis_sizes=[4, 4], axis_names=["x", "y"], axis_types=[1, 1])
    table = table_pb2.SharedObjectTable()
    table.entries.extend([device_list, device_list])
    for k in range(2):
        table.entries.add().mesh.CopyFrom(axes)
        table.entries[2 + k].mesh.device_list = k
    first = lift_table(check_table(table, DEFAULT_LIMITS))
    again = lift_table(check_table(table, DEFAULT_LIMITS))
    for objects in (first, again):
        assert objects[0] is not objects[1]  # two entries, two device lists, as always
        assert list(objects[0]) == list(objects[1]) == list(mesh.devices.flat)
        assert objects[2] is objects[3] is mesh  # JAX interns meshes
    assert again[0] is mesh._internal_device_list  # found again through the mesh


def test_devices_for_ids_is_the_per_id_map(devices):
    table = cpu_device_map()
    ids = np.random.default_rng(3).integers(0, len(devices), size=(5, 7))
    got = devices_for_ids(ids)
    assert got.shape == ids.shape
    assert all(a is table[i] for a, i in zip(got.flat, ids.flat, strict=True))
    with pytest.raises(LiftError, match=f"device id {10**6} is not a CPU device"):
        devices_for_ids(np.array([0, 10**6, 10**6 + 1]))


def test_no_cache_keeps_a_jax_object_alive(devices):
    # Axis names no other test uses: JAX interns PartitionSpecs, so a P("x", "y") would be the
    # very object that shardings alive elsewhere in the process (another test's) hold.
    names = ("kept_x", "kept_y")

    def use_once():
        mesh = Mesh(_mesh(devices, 11).devices, names)
        leaves = [
            jax.ShapeDtypeStruct(
                (8, 8), np.float32, sharding=NamedSharding(mesh, PartitionSpec(*s))
            )
            for s in [names, (None, names[1]), ()] * 4
        ]
        treedef = jax.tree_util.tree_structure(leaves)
        data = serialize_specs(treedef, leaves)
        serialize_specs(treedef, leaves)
        _, out = deserialize_specs(data)
        deserialize_specs(data)
        assert out[0].sharding.mesh is mesh
        assert mesh in mesh_entry._LOWERED and mesh in named_sharding._LOWERED
        return [weakref.ref(mesh), weakref.ref(leaves[0].sharding.spec)]

    refs = use_once()
    jax.clear_caches()  # JAX's own caches of shardings hold their meshes
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_leaves_found_by_their_parts_get_the_indices_one_add_each_gives(devices):
    mesh = _mesh(devices, 12)
    single = jax.sharding.SingleDeviceSharding(devices[3])
    kinds = [
        dict(shape=(8, 8), dtype=np.float32),
        dict(shape=(8, 8), dtype=jnp.bfloat16),
        dict(shape=(8, 4), dtype=np.float32),
        dict(shape=(8, 8), dtype=np.float32, weak_type=True),
    ]
    leaves = [
        jax.ShapeDtypeStruct(**kind, sharding=sharding)
        for i in range(3)
        for kind in kinds
        for sharding in (
            NamedSharding(mesh, PartitionSpec(*SPECS[i])),
            NamedSharding(mesh, PartitionSpec(*SPECS[i]), memory_kind="pinned_host"),
            single,
            None,
        )
    ]
    fast, one_by_one = TableBuilder(), TableBuilder()
    indices: list[int] = []
    add_leaves(leaves, LowerContext(fast), indices)
    assert indices == [one_by_one.add(leaf) for leaf in leaves]
    assert fast.table.SerializeToString() == one_by_one.table.SerializeToString()
    assert len(set(indices)) == 3 * 2 * len(kinds) + 2 * len(kinds)  # 3 specs, 2 memory kinds


def test_a_leaf_that_does_not_lower_is_named_by_its_position(devices):
    mesh = _mesh(devices, 13)
    good = [
        jax.ShapeDtypeStruct((8, 8), np.float32, sharding=NamedSharding(mesh, PartitionSpec()))
        for _ in range(4)
    ]
    bad = jax.ShapeDtypeStruct((8, 8), np.dtype("U4"), sharding=good[0].sharding)
    leaves = [*good, bad]
    with pytest.raises(EncodeError) as e:
        serialize_specs(jax.tree_util.tree_structure(leaves), leaves)
    assert "specs.leaves[4].dtype" in str(e.value)


def test_a_leaf_that_is_not_a_shape_dtype_struct_is_named_and_a_subclass_is_one():
    class Struct(jax.ShapeDtypeStruct):
        __slots__ = ()

    leaves = [jax.ShapeDtypeStruct((2,), np.float32), Struct((2,), np.float32)]
    treedef = jax.tree_util.tree_structure(leaves)
    assert serialize_specs(treedef, leaves) == serialize_specs(treedef, [leaves[0]] * 2)
    with pytest.raises(EncodeError, match="leaf 1 is a int, not a ShapeDtypeStruct"):
        serialize_specs(treedef, [leaves[0], 3])


def test_a_leaf_lowered_before_writes_the_bytes_of_a_fresh_one(devices, monkeypatch):
    mesh = _mesh(devices, 14)
    leaves = _leaves(mesh) + [
        jax.ShapeDtypeStruct((8, 8), jnp.bfloat16, sharding=NamedSharding(mesh, PartitionSpec()))
    ]
    treedef = jax.tree_util.tree_structure(leaves)
    monkeypatch.setattr(array_spec, "_LOWERED", {})
    fresh = {t: serialize_specs(treedef, leaves, target_minor_version=t) for t in (0, 1)}
    assert len(array_spec._LOWERED) == 2 * (len(SPECS) + 1)  # per target
    for t in (0, 1):
        assert (
            serialize_specs(treedef, _leaves(mesh) + leaves[-1:], target_minor_version=t)
            == (fresh[t])
        )
    # A dimension that is not an int is refused, even where an equal int one was cached.
    odd = jax.ShapeDtypeStruct((np.int64(8), 8), np.float32, sharding=leaves[0].sharding)
    with pytest.raises(EncodeError, match=r"specs\.leaves\[0\]\.shape|dimension"):
        serialize_specs(jax.tree_util.tree_structure([odd]), [odd])


def test_a_leaf_of_a_newer_dtype_is_refused_for_an_older_target_after_a_newer_one(devices):
    mesh = _mesh(devices, 15)
    sharding = NamedSharding(mesh, PartitionSpec())
    leaves = [jax.ShapeDtypeStruct((4,), jax.dtypes.float0, sharding=sharding)]  # since 1.1
    treedef = jax.tree_util.tree_structure(leaves)
    serialize_specs(treedef, leaves, target_minor_version=1)
    with pytest.raises(EncodeError, match="dtype"):
        serialize_specs(treedef, leaves, target_minor_version=0)
