"""The default limits admit what JAX builds; the corpus (test_corpus.py) has what they refuse."""

import jax
import pytest
from jax import numpy as jnp

from colocated_wire import DecodeError, DecodeLimits, deserialize_specs, serialize_specs


def test_a_tree_as_deep_as_jax_flattens_decodes():
    leaf = jax.ShapeDtypeStruct((1,), jnp.float32)
    tree = leaf
    for _ in range(300):  # JAX itself cannot flatten much deeper trees
        tree = [tree]
    treedef = jax.tree_util.tree_structure(tree)
    treedef_back, leaves = deserialize_specs(serialize_specs(treedef, [leaf]))
    assert (treedef_back, leaves) == (treedef, (leaf,))


def test_the_depth_limit_admits_a_tree_exactly_that_deep():
    leaves = [jax.ShapeDtypeStruct((1,), jnp.float32)]
    tree = [leaves]  # two lists around a leaf
    data = serialize_specs(jax.tree_util.tree_structure(tree), leaves)
    assert deserialize_specs(data, limits=DecodeLimits(max_tree_depth=2))[1] == tuple(leaves)
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, limits=DecodeLimits(max_tree_depth=1))
    assert (info.value.code, info.value.path) == ("limit-exceeded", "specs.treedef.kinds[1]")
