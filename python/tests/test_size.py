"""Size: 1,000 leaves over a 128x8 mesh of 1,024 devices, against JAX's pickle."""

import jax
import numpy as np
from jax.experimental.colocated_python import serialization
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import deserialize_specs, serialize_specs


def test_thousand_leaves_fit_in_4kb(devices):
    assert len(devices) >= 1024
    mesh = Mesh(np.array(devices[:1024]).reshape(128, 8), ("data", "model"))
    shardings = (NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P(None, "model")))
    leaves = [
        jax.ShapeDtypeStruct((1024, 512), np.float32, sharding=shardings[i % 2])
        for i in range(1000)
    ]
    treedef = jax.tree_util.tree_structure(leaves)
    ours = serialize_specs(treedef, leaves)
    theirs = serialization._serialize((treedef, leaves))
    print(f"\ncolocated-wire: {len(ours)} bytes; JAX _serialize: {len(theirs)} bytes")
    assert len(ours) < 4096
    assert len(ours) * 10 < len(theirs)
    treedef2, leaves2 = deserialize_specs(ours)
    assert treedef2 == treedef and list(leaves2) == leaves
