"""Decoding a payload sent again: one scan and parse, and entries lifted from their plans.

A good payload is scanned and parsed once (its header read from it), and a
table checked before lifts from plain values kept with it. Neither may change
what a decode returns or which error it raises.
"""

import dataclasses

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire import deserialize_specs, serialize_specs
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DEFAULT_LIMITS

_FIELDS = ("shape", "dtype", "sharding", "weak_type", "manual_axis_type", "is_ref")


def _payload(devices, dtypes=(np.float32, jax.numpy.bfloat16)):
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("a", "b"))
    shardings = [
        NamedSharding(mesh, PartitionSpec("a", "b")),
        NamedSharding(mesh, PartitionSpec(None, ("a", "b"))),
        jax.sharding.SingleDeviceSharding(devices[3]),
        None,
    ]
    leaves = [
        jax.ShapeDtypeStruct((8, 4 * (i + 1)), dtype, sharding=s, weak_type=bool(i % 2))
        for i, s in enumerate(shardings)
        for dtype in dtypes
    ]
    return leaves, serialize_specs(jax.tree_util.tree_structure(leaves), leaves)


def test_a_lifted_leaf_is_what_its_constructor_makes(devices):
    leaves, data = _payload(devices)
    for _ in range(2):  # the second decode lifts from the plans the first made
        _, out = deserialize_specs(data)
        for leaf, got in zip(leaves, out, strict=True):
            made = jax.ShapeDtypeStruct(
                got.shape, got.dtype, sharding=got.sharding, weak_type=got.weak_type
            )
            assert type(got) is jax.ShapeDtypeStruct
            assert [getattr(got, f) for f in _FIELDS] == [getattr(made, f) for f in _FIELDS]
            assert got == made and hash(got) == hash(made) and got == leaf
            assert type(got.shape) is tuple and all(type(d) is int for d in got.shape)


def test_each_entry_stays_its_own_object_when_lifted_again(devices):
    leaves, data = _payload(devices)
    first = deserialize_specs(data)[1]
    again = deserialize_specs(data)[1]
    for out in (first, again):
        # Eight leaves, each its own entry; the two named shardings share one mesh.
        assert len({id(leaf) for leaf in out}) == len(out)
        assert out[0].sharding is out[1].sharding
        assert out[0].sharding.mesh is out[2].sharding.mesh
    assert first[0] is not again[0]  # a new object per decode, as before


def test_the_envelope_still_counts_a_payloads_other_fields_as_unknown(devices):
    _, data = _payload(devices)
    # The envelope sees the table and the specs as two unknown fields: past one, it refuses.
    limits = dataclasses.replace(DEFAULT_LIMITS, max_unknown_fields=1)
    with pytest.raises(DecodeError) as e:
        deserialize_specs(data, limits=limits)
    assert e.value.code == "limit-exceeded"
    deserialize_specs(data, limits=dataclasses.replace(DEFAULT_LIMITS, max_unknown_fields=2))
