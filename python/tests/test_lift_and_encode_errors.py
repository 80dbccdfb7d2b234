"""Refusals that are not a bad payload, so not in the corpus (test_corpus.py).

A payload can be valid and still name what this worker lacks (a LiftError), and
a JAX object can be one the format refuses to write (an EncodeError).
"""

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import EncodeError, LiftError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2


def test_a_device_this_worker_lacks_is_a_lift_error(devices):
    leaf = jax.ShapeDtypeStruct((2,), jnp.int8, sharding=SingleDeviceSharding(devices[20]))
    msg = payload_pb2.SpecsPayload.FromString(
        serialize_specs(jax.tree_util.tree_structure([0]), [leaf])
    )
    (entry,) = [e for e in msg.table.entries if e.HasField("single_device_sharding")]
    entry.single_device_sharding.device_id = 5000
    with pytest.raises(LiftError, match="5000"):
        deserialize_specs(msg.SerializeToString())


def test_a_mesh_of_no_devices_is_not_written(devices):
    # The corpus's invalid-mesh--no-devices cannot be written from JAX objects either.
    mesh = Mesh(np.empty((0, 4), dtype=object), ("x", "y"))
    leaf = jax.ShapeDtypeStruct((4,), jnp.float32, sharding=NamedSharding(mesh, P()))
    with pytest.raises(EncodeError, match="no devices"):
        serialize_specs(jax.tree_util.tree_structure([0]), [leaf])
