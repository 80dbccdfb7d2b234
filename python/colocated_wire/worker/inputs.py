"""A call's input data checked against the program's input specs, before any is placed.

The count must match the input leaves, each leaf's dtype must have a
fixed-size wire form, and each array's bytes must be its shape's element
count times its itemsize. The expectations are worked out once, when the
program is loaded; a call only compares lengths, and nothing reaches a
device until every input passes.

Two dtypes that are not plain NumPy travel too. A PRNG key array
(key<fry>, key<rbg>, ...) travels as its key data: uint32, little-endian,
of shape `shape + key_shape` (what `jax.random.key_data` gives), and is
wrapped again with its impl (`jax.random.wrap_key_data`). float0 has no
bytes at all: an input is zero bytes, and so is an output.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax._src.random import prng

from colocated_wire.decode import Program
from colocated_wire.worker.errors import invalid_argument

_KEY_DATA = np.dtype("<u4")  # every PRNG impl's key data is uint32


@dataclasses.dataclass(frozen=True)
class InputCheck:
    """Per input leaf: its bytes and how it prints, or why it has no wire form."""

    sizes: tuple[int, ...]
    described: tuple[str, ...]
    problems: tuple[str | None, ...]

    def check(self, data: Sequence[bytes | memoryview]) -> None:
        """Raises INVALID_ARGUMENT naming the first input that does not fit its spec."""
        if len(data) != len(self.sizes):
            raise invalid_argument(
                f"inputs: {len(data)} arrays for a program of {len(self.sizes)} input leaves"
            )
        for i, (d, want) in enumerate(zip(data, self.sizes, strict=True)):
            if self.problems[i] is not None:
                raise invalid_argument(f"inputs[{i}]: {self.problems[i]}")
            if len(d) != want:
                raise invalid_argument(
                    f"inputs[{i}]: {len(d)} bytes, but a {self.described[i]} input needs {want}"
                )


def input_check(program: Program) -> InputCheck:
    """What the program's input specs expect of a call's data."""
    sizes, described, problems = [], [], []
    for spec in program.in_leaves:
        dtype = spec.dtype
        item = wire_item_bytes(dtype)
        problems.append(None if item is not None else f"dtype {dtype} has no fixed-size wire form")
        sizes.append(math.prod(spec.shape) * (item or 0))
        name = np.dtype(dtype).name if isinstance(dtype, np.dtype) else str(dtype)
        described.append(f"{name}[{','.join(str(d) for d in spec.shape)}]")
    return InputCheck(tuple(sizes), tuple(described), tuple(problems))


def wire_form(dtype: Any) -> tuple[np.dtype, int] | None:
    """(element dtype on the wire, elements per array element) of a dtype, or None when it has
    no fixed-size form (strings, objects): a PRNG key is its uint32 key data."""
    if isinstance(dtype, prng.KeyTy):
        return _KEY_DATA, math.prod(dtype._impl.key_shape)
    if not isinstance(dtype, np.dtype):
        return None
    if dtype == jax.dtypes.float0:
        return dtype, 1  # itemsize 0: no bytes
    # Strings, objects and raw or structured voids have no fixed size. ml_dtypes' types
    # (bfloat16, int4, float8_*, ...) are of kind "V" too, but each has its own scalar type.
    return None if dtype.kind in "OUS" or dtype.type is np.void else (dtype, 1)


def host_value(dtype: Any, shape: Sequence[int], data: bytes | memoryview) -> Any:
    """Bytes already checked against their size as a host value of `shape`, ready for
    jax.device_put: a view of them, a PRNG key array around its key data, or float0's zeros."""
    if isinstance(dtype, prng.KeyTy):
        impl = dtype._impl
        key_data = np.frombuffer(data, _KEY_DATA).reshape(*shape, *impl.key_shape)
        return jax.random.wrap_key_data(key_data, impl=impl.name)
    if dtype == jax.dtypes.float0:
        return np.zeros(shape, jax.dtypes.float0)
    return np.frombuffer(data, wire_dtype(dtype)).reshape(shape)


def wire_dtype(dtype: np.dtype) -> np.dtype:
    """`dtype` in little-endian byte order (a no-op on little-endian hosts)."""
    if sys.byteorder == "little" or dtype.itemsize == 1:
        return dtype
    return dtype.newbyteorder("<")


def wire_item_bytes(dtype: Any) -> int | None:
    """Bytes of one element on the wire (a PRNG key's key data, float0's none), or None."""
    form = wire_form(dtype)
    return None if form is None else form[0].itemsize * form[1]


def is_float0(value: Any) -> bool:
    return getattr(value, "dtype", None) == jax.dtypes.float0


def default_sharding() -> jax.sharding.Sharding:
    return jax.sharding.SingleDeviceSharding(jax.local_devices()[0])


def host_output(x: Any) -> np.ndarray:
    """An output's elements on the host as they travel: a PRNG key array's key data, and
    nothing of a float0 output (as_output gives its spec)."""
    if is_float0(x):
        return np.zeros((0,), jax.dtypes.float0)
    if isinstance(x.dtype, prng.KeyTy):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)
