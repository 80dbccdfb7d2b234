"""Array data on the wire: raw little-endian bytes, row-major, of the global array.

Inputs become jax.Arrays placed with their lifted shardings; outputs become
bytes plus a ShapeDtypeStruct carrying the sharding JAX gave them. Each
element takes its NumPy itemsize (sub-byte types such as int4 one byte).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from colocated_wire.worker.errors import failed_precondition, function_failed, invalid_argument
from colocated_wire.worker.inputs import (
    default_sharding,
    host_output,
    host_value,
    is_float0,
    wire_dtype,
    wire_form,
    wire_item_bytes,
)
from colocated_wire.worker.job import own_shards
from colocated_wire.worker.placement import DirectPut, direct_put, place

# A shard's place in the global array: per dimension, (start, stop).
Index = tuple[tuple[int, int], ...]


def place_input(
    index: int, spec: jax.ShapeDtypeStruct, data: bytes, devices: Sequence[jax.Device]
) -> jax.Array:
    """One input's bytes as a jax.Array with the spec's sharding (the first device if none)."""
    host, sharding = host_input(spec, data, devices)
    try:
        return jax.device_put(host, sharding)
    except (ValueError, TypeError, RuntimeError) as e:
        raise failed_precondition(f"inputs[{index}]: JAX cannot place it on {sharding}: {e}") from e


def host_input(
    spec: jax.ShapeDtypeStruct, data: bytes, devices: Sequence[jax.Device]
) -> tuple[Any, jax.sharding.Sharding]:
    """One input's bytes (checked by worker_inputs.InputCheck) as a host value (a view, not a
    copy) and the sharding it goes to."""
    return host_value(spec.dtype, spec.shape, data), input_sharding(spec, devices)


def input_sharding(spec: jax.ShapeDtypeStruct, devices: Sequence[jax.Device]) -> jax.Sharding:
    """The spec's sharding; the program's first device for an input that names none."""
    return spec.sharding or SingleDeviceSharding(devices[0])


def shard_devices(
    where: str, spec: jax.ShapeDtypeStruct, devices: Sequence[jax.Device]
) -> tuple[jax.sharding.Sharding, dict[Index, list[jax.Device]]]:
    """The spec's sharding (the first device if none) and each distinct shard's devices, as
    JAX's devices_indices_map gives them."""
    sharding = input_sharding(spec, devices)
    try:
        index_map = sharding.devices_indices_map(tuple(spec.shape))
    except (ValueError, NotImplementedError, AssertionError, IndexError) as e:
        raise failed_precondition(f"{where}: JAX cannot shard it with {sharding}: {e}") from e
    shards: dict[Index, list[jax.Device]] = {}
    for device, slices in index_map.items():
        shards.setdefault(index_of(slices, spec.shape), []).append(device)
    return sharding, shards


def index_of(slices: Sequence[slice], shape: Sequence[int]) -> Index:
    """JAX's index (slices, None for a whole dimension) as (start, stop) per dimension."""
    return tuple(s.indices(n)[:2] for s, n in zip(slices, shape, strict=True))


def shard_shape(index: Index) -> tuple[int, ...]:
    return tuple(stop - start for start, stop in index)


def item_bytes(where: str, spec: jax.ShapeDtypeStruct) -> int:
    """Bytes per element on the wire (worker_inputs.wire_item_bytes), or INVALID_ARGUMENT."""
    item = wire_item_bytes(spec.dtype)
    if item is None:
        raise invalid_argument(f"{where}: dtype {spec.dtype} has no fixed-size wire form")
    return item


def put_shard(
    where: str, spec: jax.ShapeDtypeStruct, index: Index, data: np.ndarray, devices
) -> list[jax.Array]:
    """One shard's bytes on every device that holds it, as single-device arrays (none for float0,
    which no device holds: the whole input is placed at once)."""
    if is_float0(spec):
        return []
    host = host_value(spec.dtype, shard_shape(index), data)
    try:
        return place([host] * len(devices), [SingleDeviceSharding(d) for d in devices])
    except (ValueError, TypeError, RuntimeError) as e:
        raise failed_precondition(f"{where}: JAX cannot put a shard on {devices}: {e}") from e


def assemble(
    where: str,
    spec: jax.ShapeDtypeStruct,
    sharding: jax.sharding.Sharding,
    singles: Sequence[jax.Array],
) -> jax.Array:
    """The global array from the single-device arrays of all its shards."""
    try:
        # The dtype, for a member of a many-process job that holds none of the shards.
        return jax.make_array_from_single_device_arrays(
            tuple(spec.shape), sharding, singles, dtype=spec.dtype
        )
    except (ValueError, TypeError, RuntimeError) as e:
        raise failed_precondition(f"{where}: JAX cannot place it on {sharding}: {e}") from e


def output_shards(x: jax.Array | jax.ShapeDtypeStruct) -> Iterator[tuple[Index, memoryview]]:
    """Each distinct shard of an output that this process holds (a replicated one once) and its
    little-endian bytes (a PRNG key's key data); a float0 output's shards have none."""
    if is_float0(x):  # as_output's spec: no data, but the caller still waits for every shard
        _, shards = shard_devices("outputs", x, ())
        for index in own_shards(shards):
            yield index, memoryview(b"")
        return
    seen: set[Index] = set()
    for shard in x.addressable_shards:
        # A key array's shard index also spans its key data's trailing dimensions.
        index = index_of(shard.index[: len(x.shape)], x.shape)
        if index in seen:
            continue
        seen.add(index)
        yield index, wire_view(host_output(shard.data))


def direct_puts(
    specs: Sequence[jax.ShapeDtypeStruct], devices: Sequence[jax.Device]
) -> tuple[DirectPut, ...] | None:
    """How each input goes to its device, decided when the program is loaded; None unless
    every input goes directly (worker/placement.py)."""
    if not devices:  # a spec without a sharding has no device to go to: the call says so
        return None
    puts = tuple(
        direct_put(spec.dtype, spec.shape, input_sharding(spec, devices)) for spec in specs
    )
    return None if any(put is None for put in puts) else puts


def place_inputs(
    specs: Sequence[jax.ShapeDtypeStruct],
    data: Sequence[bytes],
    devices: Sequence[jax.Device],
    direct: Sequence[DirectPut] | None = None,
) -> list[jax.Array]:
    """Every input placed, its data already checked against its spec (InputCheck); with the
    specs' `direct_puts`, without deciding again how."""
    if direct is not None:
        with contextlib.suppress(ValueError, TypeError, RuntimeError):  # the rest names it
            return [put(d) for put, d in zip(direct, data, strict=True)]
    placed = [host_input(spec, d, devices) for spec, d in zip(specs, data, strict=True)]
    try:  # JAX's per-call overhead paid once for all inputs, or not at all (worker/placement.py)
        return place([h for h, _ in placed], [s for _, s in placed])
    except (ValueError, TypeError, RuntimeError):
        # One at a time, so that the refusal names the input JAX cannot place.
        return [
            place_input(i, spec, d, devices)
            for i, (spec, d) in enumerate(zip(specs, data, strict=True))
        ]


def as_output(index: int, value: Any) -> jax.Array:
    """An output leaf as a jax.Array; NumPy arrays and scalars are put on the default device."""
    if is_float0(value):  # no bytes, and no device holds it: its spec on the default device
        return jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=default_sharding())
    if isinstance(value, jax.Array):
        if wire_form(value.dtype) is None:
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
    weak_type = getattr(x, "weak_type", False)  # a PRNG key array has none
    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding, weak_type=weak_type)


def output_bytes(x: jax.Array) -> memoryview:
    """The whole (global) array's elements as little-endian bytes: a view of the host copy."""
    return wire_view(host_output(x))  # a PRNG key's key data


def wire_view(host: np.ndarray) -> memoryview:
    """A host array's elements as little-endian bytes, row-major: a view, copied only to
    reorder them (float0's none)."""
    if host.dtype.itemsize == 0:
        return memoryview(b"")
    host = np.ascontiguousarray(host, dtype=wire_dtype(host.dtype))
    return memoryview(host.reshape(-1).view(np.uint8))
