"""Decoding's caches by bytes: a tree checked before, and small messages scanned clean before.

A cache hit must give what a first decode gives: the same errors under other limits, the
same classes once a module appears, and an equal tree.
"""

import collections
import sys
import types

import jax
import pytest
from jax import numpy as jnp

from colocated_wire import deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits

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
