"""JAX's four serialization functions for colocated Python, written with colocated_wire.

`serialize` / `deserialize` stand for JAX's `_serialize` / `_deserialize`,
which JAX calls with one thing only: the program tuple `(fun, in_treedef,
in_leaves, out_treedef, out_leaves, devices)` (a ProgramPayload; reading it
gives back a `Program`, a tuple of the same shape, since JAX takes `[0]`).
`serialize_specs` / `deserialize_specs` put a SpecsPayload in JAX's carrier.

Faults come out as the types JAX raises for them (errors.py), and a
value colocated.v1 cannot write is an EncodeError naming where it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax

from colocated_wire import (
    DecodeError,
    EncodeError,
    FunctionNotAvailableError,
    LiftError,
    UnloadedFunction,
    deserialize_program,
    serialize_program,
)
from colocated_wire import deserialize_specs as deserialize_specs_payload
from colocated_wire import serialize_specs as serialize_specs_payload
from colocated_wire.functions import ANY_MODULE
from colocated_wire.plugin.carrier import from_carrier, to_carrier
from colocated_wire.plugin.errors import (
    PickleNotAllowedError,
    PluginEncodeError,
    PluginEncodeTypeError,
    PluginLiftError,
)


@dataclasses.dataclass(frozen=True)
class Trust:
    """What a payload may make this process run: pickles, and imports of these modules."""

    allow_pickle: bool = False
    allowed_modules: frozenset[str] | None = None


trust = Trust()  # set by plugin.install


def serialize(obj: Any) -> bytes:
    """JAX's `_serialize` for what it serializes: a program tuple, or (treedef, leaves)."""
    if isinstance(obj, tuple) and len(obj) == 6:
        fun, in_treedef, in_leaves, out_treedef, out_leaves, devices = obj
        try:
            return serialize_program(
                fun,
                in_treedef,
                in_leaves,
                out_treedef,
                out_leaves,
                devices,
                allow_pickle=trust.allow_pickle,
            )
        except (EncodeError, TypeError) as e:
            path = getattr(e, "path", None)  # a leaf's error names its leaf
            raise _at(path or _part_at_fault(obj, e), e) from e
    if isinstance(obj, tuple) and len(obj) == 2:
        return _serialize_specs_bytes(*obj)
    raise PluginEncodeError("payload", f"a {type(obj).__name__} is not a program or specs")


def deserialize(data: bytes) -> Any:
    """JAX's `_deserialize`: a program as JAX's 6-tuple (fun first), or (treedef, leaves)."""
    options = trust
    allowed = options.allowed_modules
    if allowed is None and options.allow_pickle:
        allowed = ANY_MODULE  # a peer trusted with pickles gains nothing by naming a function
    try:
        program = deserialize_program(
            data, allow_pickle=options.allow_pickle, allowed_modules=allowed
        )
    except DecodeError as e:
        if e.code != "wrong-payload-kind":
            raise
        return _deserialize_specs_bytes(data)
    except LiftError as e:
        raise PluginLiftError(str(e)) from e
    if isinstance(program.fun, UnloadedFunction):
        if program.fun.pickle:
            raise PickleNotAllowedError(
                "the colocated function arrived pickled, and unpickling runs the sender's code:"
                " colocated_wire.plugin.install(allow_pickle=True) trusts the peer, as JAX does"
            )
        raise FunctionNotAvailableError(program.fun.reason)
    return program


def serialize_specs(treedef: Any, leaves: Sequence[Any], devices: Any) -> jax.Array:
    """JAX's `_serialize_specs`: output specs as a SpecsPayload in JAX's carrier."""
    return to_carrier(_serialize_specs_bytes(treedef, leaves), devices)


def deserialize_specs(carrier: jax.Array) -> tuple[Any, tuple[jax.ShapeDtypeStruct, ...]]:
    """JAX's `_deserialize_specs`: (treedef, leaves) of the SpecsPayload in the carrier."""
    return _deserialize_specs_bytes(from_carrier(carrier))


def _serialize_specs_bytes(treedef: Any, leaves: Sequence[Any]) -> bytes:
    try:
        return serialize_specs_payload(treedef, leaves, allow_pickle=trust.allow_pickle)
    except (EncodeError, TypeError) as e:
        raise _at(getattr(e, "path", None) or "specs", e) from e


def _deserialize_specs_bytes(data: bytes) -> tuple[Any, tuple[jax.ShapeDtypeStruct, ...]]:
    try:
        return deserialize_specs_payload(data, allow_pickle=trust.allow_pickle)
    except LiftError as e:
        raise PluginLiftError(str(e)) from e


def _part_at_fault(program: tuple, error: Exception) -> str:
    # Only on failure: encode each specs part alone to name the one that fails.
    _, in_treedef, in_leaves, out_treedef, out_leaves, _ = program
    for path, treedef, leaves in (
        ("input_specs", in_treedef, in_leaves),
        ("output_specs", out_treedef, out_leaves),
    ):
        if treedef is None:
            continue
        try:
            serialize_specs_payload(treedef, leaves, allow_pickle=trust.allow_pickle)
        except (EncodeError, TypeError):
            return path
    # What does not pickle is a TypeError; anything else may be the devices too.
    return "function" if isinstance(error, TypeError) else "program"


def _at(path: str, error: Exception) -> PluginEncodeError:
    kind = PluginEncodeTypeError if isinstance(error, TypeError) else PluginEncodeError
    return kind(path, getattr(error, "detail", None) or str(error))
