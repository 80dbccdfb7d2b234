"""Writes a ProgramPayload whose function is pickled, for the TypeScript RPC tests.

    .venv/bin/python python/tests/pickled_program.py OUT OFFSET

The function is the closure `lambda x: x + offset` on float32[8,4] sharded
P("x", "y") over a 2x4 mesh of devices 0..7, called as f(x).
"""

import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from colocated_wire import serialize_program  # noqa: E402


def pickled_program(offset: float) -> bytes:
    """The payload of a closure over `offset`, which only cloudpickle can carry."""
    devices = jax.devices()[:8]
    mesh = Mesh(np.array(devices).reshape(2, 4), ("x", "y"))
    spec = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
    leaves, treedef = jax.tree_util.tree_flatten(((spec,), {}))
    # Version 1.0, which every worker of the RPC tests reads.
    fun = lambda x: x + offset  # noqa: E731
    return serialize_program(fun, treedef, leaves, None, None, devices, target_minor_version=0)


if __name__ == "__main__":
    out, offset = sys.argv[1], float(sys.argv[2])
    with open(out, "wb") as f:
        f.write(pickled_program(offset))
