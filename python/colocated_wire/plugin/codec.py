"""JAX's four serialization functions for colocated Python, written with colocated_wire.

`serialize` / `deserialize` stand for JAX's `_serialize` / `_deserialize`,
which must take whatever JAX's own take. What colocated Python ships is the
program tuple `(fun, in_treedef, in_leaves, out_treedef, out_leaves,
devices)`, a ProgramPayload (reading it gives back a `Program`, a tuple of
the same shape, since JAX takes `[0]`), and `(treedef, leaves)` of specs, a
SpecsPayload. Anything else (a Mesh, a list of shardings, a dtype, a
function, the function-and-specialization tuple whose specs or devices are
still None) is a ValuePayload (colocated.v1.2): a pytree whose leaves are
table objects, dtypes, PRNG impls and functions by name where they can be,
so each shared object is written once, and pickles only where they must be.
Reading dispatches on the header's kind. `serialize_specs` /
`deserialize_specs` put a SpecsPayload in JAX's carrier.

Faults come out as the types JAX raises for them (errors.py), and a
value colocated.v1 cannot write is an EncodeError naming where it is.
Under `install(explain=True)` each program written is also shown to
explain.py, which logs why its function specialized again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
from jax import tree_util

from colocated_wire import (
    EncodeError,
    FunctionNotAvailableError,
    LiftError,
    UnloadedFunction,
    deserialize_program,
    deserialize_value,
    serialize_program,
    serialize_value,
)
from colocated_wire import PickleNotAllowedError as PickleNotAllowed
from colocated_wire import deserialize_specs as deserialize_specs_payload
from colocated_wire import serialize_specs as serialize_specs_payload
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.functions import ANY_MODULE
from colocated_wire.limits import DEFAULT_LIMITS
from colocated_wire.payload.header import payload_kind
from colocated_wire.plugin.carrier import from_carrier, to_carrier
from colocated_wire.plugin.errors import (
    PickleNotAllowedError,
    PluginEncodeError,
    PluginEncodeTypeError,
    PluginLiftError,
)
from colocated_wire.plugin.explain import Explainer
from colocated_wire.plugin.explain import logger as explain_logger


@dataclasses.dataclass(frozen=True)
class Trust:
    """What a payload may make this process run: pickles, and imports of these modules."""

    allow_pickle: bool = False
    allowed_modules: frozenset[str] | None = None


trust = Trust()  # set by plugin.install
explainer: Explainer | None = None  # set by plugin.install(explain=True)


def serialize(obj: Any) -> bytes:
    """JAX's `_serialize` of anything: a program tuple, (treedef, specs), or any other value."""
    if _is_program(obj):
        fun, in_treedef, in_leaves, out_treedef, out_leaves, devices = obj
        try:
            data = serialize_program(
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
        if explainer is not None:
            _explain(explainer, obj)
        return data
    if _is_specs(obj):
        return _serialize_specs_bytes(*obj)
    try:
        return serialize_value(obj, allow_pickle=trust.allow_pickle)
    except (EncodeError, TypeError) as e:
        raise _at(getattr(e, "path", None) or "value", e) from e


def _explain(by: Explainer, program: tuple) -> None:
    """Logs why this program's function specialized again; a fault in explaining is logged,
    never raised, since the program itself was written."""
    try:
        by.specialized(program, trust.allow_pickle)
    except Exception as e:  # noqa: BLE001 - a diagnostic must not fail the call
        explain_logger.warning("colocated_wire could not explain a specialization: %r", e)


def _is_program(obj: Any) -> bool:
    """JAX's function-and-specialization tuple once its input specs and devices are known (its
    output specs may not be): what a ProgramPayload holds."""
    return (
        isinstance(obj, tuple)
        and len(obj) == 6
        and isinstance(obj[1], tree_util.PyTreeDef)
        and obj[5] is not None
    )


def _is_specs(obj: Any) -> bool:
    """(treedef, leaves) of specs: a PyTreeDef and a ShapeDtypeStruct for each of its leaves."""
    if not (isinstance(obj, tuple) and len(obj) == 2):
        return False
    treedef, leaves = obj
    return (
        isinstance(treedef, tree_util.PyTreeDef)
        and isinstance(leaves, tuple | list)
        and len(leaves) == treedef.num_leaves
        and all(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in leaves)
    )


def deserialize(data: bytes) -> Any:
    """JAX's `_deserialize`, by the header's kind: a program as JAX's 6-tuple (fun first),
    (treedef, leaves) of specs, or the value a ValuePayload holds."""
    kind = payload_kind(data, DEFAULT_LIMITS)
    if kind == payload_pb2.PAYLOAD_KIND_SPECS:
        return _deserialize_specs_bytes(data)
    if kind == payload_pb2.PAYLOAD_KIND_VALUE:
        return _deserialize_value_bytes(data)
    try:  # a program, or bytes whose fault its reader names
        program = deserialize_program(
            data, allow_pickle=trust.allow_pickle, allowed_modules=_allowed_modules(trust)
        )
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


def _allowed_modules(options: Trust) -> Any:
    """The modules a function by name may come from: a peer trusted with pickles gains nothing
    by naming a function, so with allow_pickle and no list, any."""
    if options.allowed_modules is None and options.allow_pickle:
        return ANY_MODULE
    return options.allowed_modules


def _deserialize_value_bytes(data: bytes) -> Any:
    options = trust
    try:
        return deserialize_value(
            data, allow_pickle=options.allow_pickle, allowed_modules=_allowed_modules(options)
        )
    except PickleNotAllowed as e:
        raise PickleNotAllowedError(str(e)) from e
    except LiftError as e:
        raise PluginLiftError(str(e)) from e


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
