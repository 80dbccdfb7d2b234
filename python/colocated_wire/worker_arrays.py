"""Array data on the wire: raw little-endian bytes, row-major, of the global array.

Inputs become jax.Arrays placed with their lifted shardings; outputs become
bytes plus a ShapeDtypeStruct carrying the sharding JAX gave them. Each
element takes its NumPy itemsize (sub-byte types such as int4 one byte).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from colocated_wire.worker_errors import failed_precondition, function_failed, invalid_argument


def wire_dtype(dtype: np.dtype) -> np.dtype:
    """`dtype` in little-endian byte order (a no-op on little-endian hosts)."""
    if sys.byteorder == "little" or dtype.itemsize == 1:
        return dtype
    return dtype.newbyteorder("<")


def place_input(
    index: int, spec: jax.ShapeDtypeStruct, data: bytes, devices: Sequence[jax.Device]
) -> jax.Array:
    """One input's bytes as a jax.Array with the spec's sharding (the first device if none)."""
    if not isinstance(spec.dtype, np.dtype):  # a PRNG key's data is its impl's
        raise invalid_argument(f"inputs[{index}]: dtype {spec.dtype} has no fixed-size wire form")
    dtype = spec.dtype
    if dtype.kind in "OUSV":
        raise invalid_argument(f"inputs[{index}]: dtype {dtype} has no fixed-size wire form")
    want = math.prod(spec.shape) * dtype.itemsize
    if len(data) != want:
        raise invalid_argument(
            f"inputs[{index}]: {len(data)} bytes, but a {describe(spec)} input needs {want}"
        )
    host = np.frombuffer(data, dtype=wire_dtype(dtype)).reshape(spec.shape)
    sharding = spec.sharding or SingleDeviceSharding(devices[0])
    try:
        return jax.device_put(host, sharding)
    except (ValueError, TypeError, RuntimeError) as e:
        raise failed_precondition(f"inputs[{index}]: JAX cannot place it on {sharding}: {e}") from e


def place_inputs(
    specs: Sequence[jax.ShapeDtypeStruct], data: Sequence[bytes], devices: Sequence[jax.Device]
) -> list[jax.Array]:
    """Every input placed; the count must match the program's input leaves."""
    if len(data) != len(specs):
        raise invalid_argument(
            f"inputs: {len(data)} arrays for a program of {len(specs)} input leaves"
        )
    pairs = enumerate(zip(specs, data, strict=True))
    return [place_input(i, spec, d, devices) for i, (spec, d) in pairs]


def as_output(index: int, value: Any) -> jax.Array:
    """An output leaf as a jax.Array; NumPy arrays and scalars are put on the default device."""
    if isinstance(value, jax.Array):
        if not isinstance(value.dtype, np.dtype):  # a PRNG key's data is its impl's
            detail = f"dtype {value.dtype} has no fixed-size wire form"
            raise function_failed(f"output {index}: {detail}")
        return value
    try:
        return jax.numpy.asarray(value)
    except (TypeError, ValueError) as e:
        raise function_failed(
            f"output {index} is a {type(value).__name__}, not an array: {e}"
        ) from e


def output_spec(x: jax.Array) -> jax.ShapeDtypeStruct:
    """The spec a caller needs to read an output: its shape, dtype, sharding and weak type."""
    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding, weak_type=x.weak_type)


def output_bytes(x: jax.Array) -> bytes:
    """The whole (global) array's elements as little-endian bytes."""
    host = np.asarray(x)
    return np.ascontiguousarray(host, dtype=wire_dtype(host.dtype)).tobytes()


def describe(spec: jax.ShapeDtypeStruct) -> str:
    """Like float32[8,4]."""
    return f"{np.dtype(spec.dtype).name}[{','.join(str(d) for d in spec.shape)}]"
