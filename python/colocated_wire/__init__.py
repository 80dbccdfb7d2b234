"""colocated_wire: a versioned protobuf wire format for JAX colocated-Python payloads.

The public API mirrors jax/experimental/colocated_python/serialization.py so
that a worker can swap it in. Data flows one way: model -> lower (lower.py,
treedef.py) -> table and messages -> bytes, and bytes -> validate
(validate.py) -> lift (lift.py) -> model. docs/wire-format.md is the spec.
"""

from colocated_wire.errors import (
    DecodeError,
    EncodeError,
    FunctionNotAvailableError,
    LiftError,
)
from colocated_wire.functions import UnloadedFunction
from colocated_wire.limits import DecodeLimits
from colocated_wire.program import Program, deserialize_program, serialize_program
from colocated_wire.specs import deserialize_specs, serialize_specs
from colocated_wire.unknown import UnknownEntry
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION

__all__ = [
    "SCHEMA_MAJOR_VERSION",
    "SCHEMA_MINOR_VERSION",
    "DecodeError",
    "DecodeLimits",
    "EncodeError",
    "FunctionNotAvailableError",
    "LiftError",
    "Program",
    "UnknownEntry",
    "UnloadedFunction",
    "deserialize_program",
    "deserialize_specs",
    "serialize_program",
    "serialize_specs",
]
