"""The carrier JAX's colocated Python uses to send output specs back to the controller.

A worker returns its output specs as the result of a colocated call, so they
must be jax.Arrays of the shapes and dtypes that `_make_specs_for_serialized_specs`
promised. This is `_serialize_specs` / `_deserialize_specs` of
jax/experimental/colocated_python/serialization.py with only the bytes inside
changed, so nothing else in JAX notices. Which carrier this JAX's func.py
expects is found once, at import (jax_compat/colocated_python.py):

- From JAX 0.5: a 0-d array of `np.dtypes.StringDType()` holding the payload
  as base64 text, replicated over the addressable devices on a one-axis mesh
  ("x",).
- JAX 0.4.38: a pair of arrays replicated over all the devices on a one-axis
  mesh ("x",): an int32 scalar, the payload's length, and a uint8 buffer of
  SPECS_BUFFER_BYTES (1 MiB) holding the payload zero-padded. 0.4.38 refuses
  arrays of StringDType (a ShapeDtypeStruct of it still travels in specs), and
  its func.py unpacks the pair. A payload longer than the buffer cannot travel:
  JAX asserts, the plugin raises PluginEncodeError at "specs".
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from colocated_wire.errors import DecodeError
from colocated_wire.jax_compat.colocated_python import SPECS_BUFFER_BYTES
from colocated_wire.plugin.errors import PluginEncodeError

if TYPE_CHECKING:
    from jax._src.lib import xla_client as xc


def _replicated(devices: Any) -> jax.sharding.NamedSharding:
    mesh = jax.sharding.Mesh(tuple(devices), ("x",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())


def _to_string_carrier(data: bytes, devices: xc.DeviceList) -> jax.Array:
    """`data` as base64 text in a 0-d StringDType array replicated on the addressable devices."""
    text = np.array(base64.b64encode(data).decode("ascii"), dtype=np.dtypes.StringDType())
    addressable = devices.addressable_device_list
    shards = [jax.device_put(text, device) for device in addressable]
    return jax.make_array_from_single_device_arrays(
        arrays=shards, sharding=_replicated(addressable), shape=()
    )


def _from_string_carrier(carrier: jax.Array) -> bytes:
    return base64.b64decode(carrier.addressable_shards[0].data.item().encode("ascii"))


def _to_buffer_carrier(data: bytes, devices: xc.DeviceList) -> tuple[jax.Array, jax.Array]:
    """`data` as (its length, a zero-padded uint8 buffer), replicated on all the devices."""
    size = SPECS_BUFFER_BYTES or 0
    if len(data) > size:
        raise PluginEncodeError(
            "specs",
            f"the output specs are {len(data)} bytes, and jax {jax.__version__}'s carrier"
            f" holds at most {size}",
        )
    replicated = _replicated(devices)
    length = np.array(len(data), dtype=np.int32)
    buffer = np.zeros(size, dtype=np.uint8)
    buffer[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return (
        jax.make_array_from_callback((), replicated, lambda _: length),
        jax.make_array_from_callback((size,), replicated, lambda _: buffer),
    )


def _from_buffer_carrier(carrier: tuple[jax.Array, jax.Array]) -> bytes:
    length_array, buffer_array = carrier
    length = int(length_array.addressable_shards[0].data)
    buffer = np.asarray(buffer_array.addressable_shards[0].data).tobytes()
    if not 0 <= length <= len(buffer):
        detail = f"the carrier's length {length} is outside its {len(buffer)}-byte buffer"
        raise DecodeError("payload", "malformed", detail)
    return buffer[:length]


to_carrier: Callable[[bytes, Any], Any]
"""`data` in the carrier this JAX's `_deserialize_specs` reads, over `devices`."""
from_carrier: Callable[[Any], bytes]
"""The bytes a carrier holds (JAX reads the first addressable shard too)."""
if SPECS_BUFFER_BYTES is None:
    to_carrier, from_carrier = _to_string_carrier, _from_string_carrier
else:
    to_carrier, from_carrier = _to_buffer_carrier, _from_buffer_carrier
