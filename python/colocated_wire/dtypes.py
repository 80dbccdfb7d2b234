"""Element types: the DType enum of the schema and the dtypes JAX uses.

Numbers on the wire are fixed forever (table.proto). JAX names its dtypes
with numpy / ml_dtypes names, so the mapping is by name. `string` is numpy's
variable-width `StringDType()`, the dtype JAX's colocated Python itself uses
for serialized specs (`np.dtypes.StringDType`); numpy's fixed-width `str_`
("<U...") is not a JAX dtype and is refused.
"""

from __future__ import annotations

import numpy as np
from jax import numpy as jnp

from colocated.v1 import table_pb2
from colocated_wire.errors import EncodeError

_NAMES = (
    "bool",
    "int2",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint2",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
    "complex128",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e4m3b11fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
)

STRING_DTYPE = np.dtypes.StringDType()

_TO_WIRE: dict[np.dtype, int] = {
    jnp.dtype(name): table_pb2.DType.Value(f"D_TYPE_{name.upper()}") for name in _NAMES
}
_FROM_WIRE: dict[int, np.dtype] = {v: k for k, v in _TO_WIRE.items()}
_FROM_WIRE[table_pb2.D_TYPE_STRING] = STRING_DTYPE


def dtype_to_wire(dtype) -> int:
    d = np.dtype(dtype)
    if isinstance(d, np.dtypes.StringDType):
        return table_pb2.D_TYPE_STRING
    wire = _TO_WIRE.get(d)
    if wire is None:
        raise EncodeError(f"dtype {d} has no colocated.v1 DType")
    return wire


def dtype_from_wire(value: int) -> np.dtype | None:
    """The dtype of a DType number, or None if unknown (or UNSPECIFIED)."""
    return _FROM_WIRE.get(value)
