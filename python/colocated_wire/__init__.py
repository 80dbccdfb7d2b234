"""colocated_wire: a versioned protobuf wire format for JAX colocated-Python payloads.

The public API mirrors jax/experimental/colocated_python/serialization.py so
that a worker can swap it in: programs, specs, and any other value (1.2).
Data flows one way (docs/layout.md):
encode.py lowers a model into table entries and payload parts, then bytes;
decode.py scans the bytes and reads the header, checks the messages, then
lifts them. Each entry kind has its `lower`, `check` and `lift` in
entries/<kind>.py; table/ walks the table and dispatches by kind.
docs/wire-format.md is the spec.
"""

from colocated_wire._version import __version__
from colocated_wire.jax_support import SUPPORTED_JAX, check_jax

check_jax()  # before anything imports jax: a JAX outside the tested range fails here, by name

from colocated_wire.decode import (
    Program,
    deserialize_program,
    deserialize_specs,
    deserialize_value,
)
from colocated_wire.diff import diff
from colocated_wire.encode import serialize_program, serialize_specs, serialize_value
from colocated_wire.errors import (
    DecodeError,
    EncodeError,
    FunctionNotAllowedError,
    FunctionNotAvailableError,
    LiftError,
    PickleNotAllowedError,
)
from colocated_wire.functions import UnloadedFunction
from colocated_wire.limits import DecodeLimits
from colocated_wire.payload.writer import Writer, describe_writer, payload_writer, this_writer
from colocated_wire.unknown import UnknownEntry, UnknownValue
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION

__all__ = [
    "SCHEMA_MAJOR_VERSION",
    "SCHEMA_MINOR_VERSION",
    "SUPPORTED_JAX",
    "__version__",
    "DecodeError",
    "DecodeLimits",
    "EncodeError",
    "FunctionNotAllowedError",
    "FunctionNotAvailableError",
    "LiftError",
    "PickleNotAllowedError",
    "Program",
    "UnknownEntry",
    "UnknownValue",
    "UnloadedFunction",
    "Writer",
    "describe_writer",
    "deserialize_program",
    "deserialize_specs",
    "deserialize_value",
    "diff",
    "payload_writer",
    "serialize_program",
    "serialize_specs",
    "serialize_value",
    "this_writer",
]
