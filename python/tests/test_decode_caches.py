"""Decoding's caches by bytes: a tree or a table checked before, messages scanned clean before,
partition specs lifted before.

A cache hit must give what a first decode gives: the same errors under other limits, the
same classes once a module appears, and an equal tree.
"""

import collections
import gc
import sys
import types
import weakref

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire import deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2, table_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DEFAULT_LIMITS, DecodeLimits
from colocated_wire.table import check_table

SDS = jax.ShapeDtypeStruct


def encode(tree) -> bytes:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return serialize_specs(treedef, leaves)


def test_a_plain_tree_decoded_again_is_the_same_treedef():
    data = encode([SDS((2, 3), jnp.float32)] * 7)
    first, _ = deserialize_specs(data)
    again, _ = deserialize_specs(data)
    assert again is first
    assert first == jax.tree_util.tree_structure([0] * 7)


def test_a_tree_checked_before_is_judged_again_under_other_limits():
    data = encode([[[SDS((1,), jnp.float32)]]])
    deserialize_specs(data)  # checked under the default limits, now cached
    with pytest.raises(DecodeError) as depth:
        deserialize_specs(data, limits=DecodeLimits(max_tree_depth=2))
    assert (depth.value.path, depth.value.code) == ("specs.treedef.kinds[2]", "limit-exceeded")
    with pytest.raises(DecodeError) as nodes:
        deserialize_specs(data, limits=DecodeLimits(max_tree_nodes=3))
    assert (nodes.value.path, nodes.value.code) == ("specs.treedef.kinds", "limit-exceeded")


def test_a_message_scanned_clean_before_is_counted_again_under_other_limits():
    data = encode(SDS((1, 2, 3), jnp.float32))
    deserialize_specs(data)  # the array spec entry is small: remembered as clean
    with pytest.raises(DecodeError) as rank:
        deserialize_specs(data, limits=DecodeLimits(max_rank=2))
    assert (rank.value.path, rank.value.code) == ("table[0].array_spec.shape", "limit-exceeded")
    assert "more than 2 values" in rank.value.detail  # from the scan, not from the entry's check


def test_a_namedtuple_is_looked_up_again_at_every_decode():
    Pair = collections.namedtuple("Pair", ["x", "y"])
    Pair.__module__ = "later_module"
    data = encode([Pair(SDS((1,), jnp.float32), None)])
    msg = payload_pb2.SpecsPayload.FromString(data)
    assert msg.specs.treedef.node_types[0].name == "later_module.Pair"

    synthesized = deserialize_specs(data)[0].children()[0].node_data()[0]
    assert synthesized is not Pair  # its module is not imported yet
    module = types.ModuleType("later_module")
    module.Pair = Pair
    sys.modules["later_module"] = module
    try:
        found = deserialize_specs(data)[0].children()[0].node_data()[0]
    finally:
        del sys.modules["later_module"]
    assert found is Pair


def _sharded_tree(devices, order):
    """Ten leaves on fresh NamedShardings over a 4x4 mesh in a seeded order of 16 devices."""
    ids = np.random.default_rng(order).permutation(16)
    mesh = Mesh(np.array([devices[i] for i in ids]).reshape(4, 4), ("x", "y"))
    specs = [PartitionSpec("x", "y"), PartitionSpec(None, "y"), PartitionSpec()]
    return [
        SDS((8, 8, 2), jnp.float32, sharding=NamedSharding(mesh, specs[i % 3])) for i in range(10)
    ]


def test_a_table_checked_before_gives_what_a_first_check_gives(devices):
    leaves = _sharded_tree(devices, 21)
    data = encode(leaves)
    msg = payload_pb2.SpecsPayload.FromString(data)
    assert (msg.SerializeToString(), 0) not in check_table._CHECKED  # a key no table has
    first = check_table.check_table(msg.table, DEFAULT_LIMITS)
    again = check_table.check_table(payload_pb2.SpecsPayload.FromString(data).table, DEFAULT_LIMITS)
    assert again.kinds == first.kinds and again.kinds is not first.kinds
    assert len(again.facts) == len(first.facts)
    for a, b in zip(first.facts, again.facts, strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)
    ids = [f for f in again.facts if isinstance(f, np.ndarray)]
    assert ids and not any(f.flags.writeable for f in ids)  # shared by later decodes: read-only
    treedef, out = deserialize_specs(data)
    again_treedef, again_out = deserialize_specs(data)
    assert list(out) == list(again_out) == leaves and treedef == again_treedef
    # Each decode lifts its own shardings and leaves; the mesh is JAX's one (interned).
    assert out[0] is not again_out[0] and out[0].sharding is not again_out[0].sharding
    assert out[0].sharding.mesh is again_out[0].sharding.mesh is leaves[0].sharding.mesh


def test_a_table_checked_before_is_judged_again_under_other_limits(devices):
    data = encode(_sharded_tree(devices, 22))
    deserialize_specs(data)  # checked under the default limits, now cached
    with pytest.raises(DecodeError) as few:
        deserialize_specs(data, limits=DecodeLimits(max_devices_per_list=15))
    assert few.value.code == "limit-exceeded"
    assert few.value.path.startswith("table[0].device_list")
    with pytest.raises(DecodeError) as rank:
        deserialize_specs(data, limits=DecodeLimits(max_rank=2))
    assert (rank.value.path, rank.value.code) == ("table[3].array_spec.shape", "limit-exceeded")
    assert deserialize_specs(data)[1][0].shape == (8, 8, 2)  # and still fine under the defaults


def test_a_table_checked_before_is_judged_again_under_another_minor_version(devices):
    leaves = _sharded_tree(devices, 23)
    msg = payload_pb2.SpecsPayload.FromString(encode(leaves))
    refs = check_table.check_table(msg.table, DEFAULT_LIMITS, 1)
    assert check_table.check_table(msg.table, DEFAULT_LIMITS, 0).kinds == refs.kinds
    # A dtype of 1.1 in a table: allowed under 1.1, refused under 1.0 though cached.
    msg.table.entries[-1].array_spec.dtype = table_pb2.D_TYPE_INT1
    check_table.check_table(msg.table, DEFAULT_LIMITS, 1)
    with pytest.raises(DecodeError) as old:
        check_table.check_table(msg.table, DEFAULT_LIMITS, 0)
    assert old.value.code == "unsupported-version"


def test_a_large_message_scanned_clean_before_is_counted_again_under_other_limits():
    # Specs of over 64 bytes: 300 leaf references, distinct, so no leaf copy (1.3) shortens them.
    tree = [SDS((i + 1,), jnp.float32) for i in range(300)]
    data = encode(tree)
    deserialize_specs(data)  # scanned clean under the default limits, now remembered
    with pytest.raises(DecodeError) as nodes:
        deserialize_specs(data, limits=DecodeLimits(max_tree_nodes=100))
    assert nodes.value.code == "limit-exceeded"
    assert nodes.value.path.startswith("specs.")
    assert "more than 100 values" in nodes.value.detail  # from the scan


def test_a_lifted_partition_spec_is_found_again_and_not_kept_alive(devices):
    mesh = Mesh(np.array(devices[:4]).reshape(2, 2), ("a", "b"))
    spec = PartitionSpec(("b", "a"), unreduced=frozenset())
    data = encode([SDS((4,), jnp.float32, sharding=NamedSharding(mesh, spec))])
    out = deserialize_specs(data)[1][0]
    assert out.sharding.spec == spec
    assert deserialize_specs(data)[1][0].sharding.spec is out.sharding.spec
    found = weakref.ref(out.sharding.spec)
    del out, spec
    jax.clear_caches()
    gc.collect()
    assert found() is None


def test_the_table_cache_is_bounded_by_the_bytes_and_ids_it_holds(devices, monkeypatch):
    data = encode(_sharded_tree(devices, 24))
    table = payload_pb2.SpecsPayload.FromString(data).table
    limits = DecodeLimits(max_rank=7)  # a key no other test uses
    key = (table.SerializeToString(deterministic=True), limits, 0)
    held = len(key[0]) + 16 * 8  # the table's bytes and its 16 ids (int64)
    monkeypatch.setattr(check_table, "_CHECKED", {})
    monkeypatch.setattr(check_table, "_held", 0)
    monkeypatch.setattr(check_table, "_BUDGET", 4 * held - 1)  # too big to keep
    check_table.check_table(table, limits)
    assert check_table._CHECKED == {} and check_table._held == 0
    monkeypatch.setattr(check_table, "_BUDGET", 4 * held)
    check_table.check_table(table, limits)
    assert list(check_table._CHECKED) == [key] and check_table._held == held
    check_table._CHECKED[("other", limits, 0)] = check_table._CHECKED[key]
    monkeypatch.setattr(check_table, "_held", 3 * held + 1)  # the next one does not fit
    check_table.check_table(table, DecodeLimits(max_rank=6))
    assert len(check_table._CHECKED) == 1 and check_table._held == held  # emptied, then kept


def _sharded_specs(devices) -> bytes:
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    spec = SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec("x", "y")))
    return encode({f"layers.{i}.w": spec for i in range(12)})


def test_a_specs_payload_decoded_again_is_lifted_anew_and_equal():
    data = _sharded_specs(jax.devices())
    first_tree, first = deserialize_specs(data)
    again_tree, again = deserialize_specs(bytes(bytearray(data)))
    assert again_tree == first_tree
    assert again == first
    assert len({id(leaf) for leaf in again}) == 1  # the table's one spec, shared by every leaf
    assert again[0] is not first[0]


def test_a_specs_payload_checked_before_is_judged_again_by_other_limits_and_versions():
    data = _sharded_specs(jax.devices())
    deserialize_specs(data)
    with pytest.raises(DecodeError) as e:
        deserialize_specs(data, limits=DecodeLimits(max_tree_nodes=5))
    assert e.value.code == "limit-exceeded"
    with pytest.raises(DecodeError) as e:
        deserialize_specs(data, max_minor_version=2)
    assert (e.value.path, e.value.code) == ("header.minor_version", "unsupported-version")
    deserialize_specs(bytearray(data))  # not kept by bytes (bytearray is not hashable): read anew
