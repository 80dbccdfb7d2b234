"""A call's host arrays put on their devices, with as little per-call overhead as JAX allows.

jax.device_put is general: it flattens pytrees, resolves shardings and formats,
and binds a primitive, about 75 µs of Python per array on these machines, more
than a small program's function costs. An input that goes whole to one device
(a SingleDeviceSharding) as a NumPy array of a canonical dtype needs none of
that: jax.device_put ends in pxla.batched_device_put with the array's abstract
value, and this calls it directly, so the array is the same (value, aval,
sharding, committed). Anything else takes jax.device_put. The private entry
points are checked once, at import; if a JAX upgrade moves them, every input
takes jax.device_put, slower but the same.

A small input on a CPU device goes as a copy through JAX's DLPack import
instead. Both make the same array, but batched_device_put releases the GIL
once and the DLPack import does not. With many calls at once, each release
hands the GIL to another thread and back, which cost more than the work: the
worker's CPU per call at 64 calls at once fell by about 13% (docs/performance-journal.md).
The copy is the array's own memory (numpy refuses to export the request's
read-only bytes, and a donating function may write into its input), so only
inputs up to COPIED_BYTES take it.

A program whose inputs all go that way has it decided when it is loaded
(direct_put, arrays.direct_puts): its calls then only copy and import, with no
check of dtype, sharding or size left to make.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from colocated_wire.worker.inputs import wire_dtype


def _batched_device_put():
    """JAX's pxla.batched_device_put and core.ShapedArray, if they have the expected form."""
    try:
        from jax._src.core import ShapedArray
        from jax._src.interpreters.pxla import batched_device_put
    except ImportError:
        return None
    params = list(inspect.signature(batched_device_put).parameters)
    return (
        (batched_device_put, ShapedArray)
        if params[:4] == ["aval", "sharding", "xs", "devices"]
        else None
    )


def _dlpack_import():
    """JAX's import of a DLPack capsule as an array, if it has the expected form."""
    try:
        from jax._src.lib import _jax, jaxlib_extension_version
        from jax._src.typing import DLDeviceType
    except ImportError:
        return None
    put = getattr(_jax, "dlpack_managed_tensor_to_buffer", None)
    if put is None or jaxlib_extension_version < 467:  # from 467, it takes the device type too
        return None
    return put, int(DLDeviceType.kDLCPU)


_DIRECT = _batched_device_put()
_DLPACK = _dlpack_import()
# Up to this size an input is copied to go through DLPack; the copy costs less than a GIL handoff.
COPIED_BYTES = 64 << 10
_canonical: dict[np.dtype, bool] = {}


def is_canonical(dtype: np.dtype) -> bool:
    """Whether JAX keeps this dtype as is (float64 becomes float32 unless x64 is on)."""
    known = _canonical.get(dtype)
    if known is None:
        known = _canonical[dtype] = jax.dtypes.canonicalize_dtype(dtype) == dtype
    return known


def placed_directly(host: object, sharding: jax.sharding.Sharding) -> jax.Array | None:
    """`host` on its one device the way jax.device_put would put it, or None when this
    input needs jax.device_put (not a plain NumPy array, many devices, a dtype JAX changes)."""
    if _DIRECT is None or type(host) is not np.ndarray or not goes_directly(host.dtype, sharding):
        return None
    device = next(iter(sharding.device_set))
    if copied_through_dlpack(host.dtype, host.nbytes, device):
        return dlpack_copy(host, device)
    put, shaped_array = _DIRECT
    return put(shaped_array(host.shape, host.dtype), sharding, [host], [device])


def goes_directly(dtype: np.dtype, sharding: jax.sharding.Sharding) -> bool:
    """Whether a host array of this dtype needs none of jax.device_put to go to `sharding`:
    one device, and a dtype JAX keeps as it is (not float0, which JAX keeps on the host)."""
    return (
        type(sharding) is SingleDeviceSharding
        and dtype != jax.dtypes.float0
        and is_canonical(dtype)
    )


def copied_through_dlpack(dtype: np.dtype, nbytes: int, device: jax.Device) -> bool:
    """Whether placed_directly puts a host array of this dtype and size on `device` as a copy
    through DLPack."""
    return (
        _DLPACK is not None
        and nbytes <= COPIED_BYTES
        and dtype.kind in "biufc"  # what DLPack carries: not bfloat16, float8 or int4
        and device.platform == "cpu"
    )


def dlpack_copy(host: np.ndarray, device: jax.Device) -> jax.Array:
    """A copy of `host`, the array's own memory, imported on `device` through DLPack."""
    put, cpu = _DLPACK
    return put(np.array(host).__dlpack__(), device, None, None, cpu)


class DirectPut:
    """One input's bytes on its one CPU device as placed_directly puts them, with every check
    made once, when the program is loaded (direct_put): a call only copies and imports."""

    __slots__ = ("_device", "_dtype", "_shape")

    def __init__(self, dtype: np.dtype, shape: tuple[int, ...], device: jax.Device) -> None:
        self._dtype = dtype
        self._shape = shape
        self._device = device

    def __call__(self, data: bytes | memoryview) -> jax.Array:
        """The input's bytes (already checked against its size) as a jax.Array."""
        host = np.frombuffer(data, self._dtype).reshape(self._shape)
        return dlpack_copy(host, self._device)


def direct_put(
    dtype: object, shape: Sequence[int], sharding: jax.sharding.Sharding
) -> DirectPut | None:
    """How an input of this spec goes to its device, decided once, or None when a call must
    decide (placed_directly) or it needs jax.device_put."""
    if (
        not isinstance(dtype, np.dtype)  # a PRNG key's dtype, say
        or wire_dtype(dtype) != dtype  # a big-endian host's: the general path swaps it
        or not goes_directly(dtype, sharding)
    ):
        return None
    device = next(iter(sharding.device_set))
    nbytes = math.prod(shape) * dtype.itemsize
    if not copied_through_dlpack(dtype, nbytes, device):
        return None
    return DirectPut(dtype, tuple(shape), device)


def place(hosts: Sequence[object], shardings: Sequence[jax.sharding.Sharding]) -> list[jax.Array]:
    """Every host value on its sharding: directly where it can, the rest in one jax.device_put."""
    placed = [placed_directly(h, s) for h, s in zip(hosts, shardings, strict=True)]
    rest = [i for i, x in enumerate(placed) if x is None]
    if rest:
        others = jax.device_put([hosts[i] for i in rest], [shardings[i] for i in rest])
        for i, x in zip(rest, others, strict=True):
            placed[i] = x
    return placed
