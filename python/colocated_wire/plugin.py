"""A drop-in backend for jax.experimental.colocated_python: its payloads in colocated.v1.

JAX writes what a colocated call ships (the function with its specialization,
and the output specs a worker sends back) with cloudpickle: no other language
reads it, no version is promised, and reading it runs code. `install()` makes
JAX write and read these payloads with colocated_wire instead, in the very
carriers JAX uses (bytes for the program, a 0-d StringDType array for output
specs, see plugin_carrier.py), so nothing else in JAX changes. Install it in
every process that runs colocated Python: each reads what the others write.

`func.py` imports its serialization functions by name, so they are rebound in
its namespace as well as in `serialization`'s; `uninstall()` puts JAX's back.
The module is private to JAX and changes between versions, so the versions
this was written against are checked at install (SUPPORTED_JAX).

Trust is explicit. JAX's functions are closures and travel pickled, and
unpickling runs the peer's code: a pickled function is loaded only after
`install(allow_pickle=True)`. Without it, only a module-level function sent by
name runs, which is what JAX sends once a call's output specs are known
(`specialize(out_specs_fn=...)`) and no PRNG key needs wrapping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from colocated_wire import (
    DecodeError,
    EncodeError,
    FunctionNotAvailableError,
    LiftError,
    UnloadedFunction,
    deserialize_program,
    deserialize_specs,
    serialize_program,
    serialize_specs,
)
from colocated_wire.plugin_carrier import from_carrier, to_carrier
from colocated_wire.plugin_errors import (
    PickleNotAllowedError,
    PluginEncodeError,
    PluginEncodeTypeError,
    PluginLiftError,
    UnsupportedJaxError,
)

SUPPORTED_JAX = ">=0.10,<0.11"
_SUPPORTED_MAJOR_MINOR = (0, 10)
_NAMES = ("_serialize", "_deserialize", "_serialize_specs", "_deserialize_specs")


@dataclasses.dataclass(frozen=True)
class _Options:
    allow_pickle: bool = False
    allowed_modules: frozenset[str] | None = None


_lock = threading.Lock()
_options: _Options | None = None  # None while not installed
_originals: dict[tuple[Any, str], Any] = {}


def install(*, allow_pickle: bool = False, allowed_modules: Collection[str] | None = None) -> None:
    """Makes colocated Python use colocated_wire for its payloads; again: sets new options."""
    global _options
    modules = _colocated_python_modules()
    allowed = None if allowed_modules is None else frozenset(allowed_modules)
    with _lock:
        if _options is None:
            for module in modules:
                for name in _NAMES:
                    _originals[(module, name)] = getattr(module, name)
                    setattr(module, name, _REPLACEMENTS[name])
        _options = _Options(allow_pickle, allowed)


def uninstall() -> None:
    """Gives JAX its own serialization back; harmless when not installed."""
    global _options
    with _lock:
        for (module, name), original in _originals.items():
            setattr(module, name, original)
        _originals.clear()
        _options = None


def is_installed() -> bool:
    """Whether colocated Python's payloads currently go through colocated_wire."""
    return _options is not None


@contextlib.contextmanager
def installed(
    *, allow_pickle: bool = False, allowed_modules: Collection[str] | None = None
) -> Iterator[None]:
    """Installed inside the block; afterwards, as it was before (installed or not, same options)."""
    previous = _options
    install(allow_pickle=allow_pickle, allowed_modules=allowed_modules)
    try:
        yield
    finally:
        if previous is None:
            uninstall()
        else:
            install(allow_pickle=previous.allow_pickle, allowed_modules=previous.allowed_modules)


def _colocated_python_modules() -> tuple[Any, Any]:
    version = jax.__version__
    try:
        major_minor = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        major_minor = None
    if major_minor != _SUPPORTED_MAJOR_MINOR:
        raise UnsupportedJaxError(
            f"colocated_wire.plugin supports jax {SUPPORTED_JAX}, and this is jax {version}"
        )
    from jax.experimental.colocated_python import func, serialization

    modules = (func, serialization)
    missing = [f"{m.__name__}.{n}" for m in modules for n in _NAMES if not hasattr(m, n)]
    if missing:
        names = ", ".join(missing)
        raise UnsupportedJaxError(f"jax {version} lacks {names}, which the plugin replaces")
    return modules


def _serialize(obj: Any) -> bytes:
    """JAX's `_serialize` for what it serializes: a program tuple, or (treedef, leaves)."""
    if isinstance(obj, tuple) and len(obj) == 6:
        fun, in_treedef, in_leaves, out_treedef, out_leaves, devices = obj
        _refuse_extended_dtypes(in_leaves, "input_specs")
        _refuse_extended_dtypes(out_leaves or (), "output_specs")
        try:
            return serialize_program(fun, in_treedef, in_leaves, out_treedef, out_leaves, devices)
        except (EncodeError, TypeError) as e:
            raise _at(_part_at_fault(obj, e), e) from e
    if isinstance(obj, tuple) and len(obj) == 2:
        return _serialize_specs_bytes(*obj)
    raise PluginEncodeError("payload", f"a {type(obj).__name__} is not a program or specs")


def _deserialize(data: bytes) -> Any:
    """JAX's `_deserialize`: a program as JAX's 6-tuple (fun first), or (treedef, leaves)."""
    options = _options or _Options()
    try:
        program = deserialize_program(
            data, allow_pickle=options.allow_pickle, allowed_modules=options.allowed_modules
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


def _serialize_specs(treedef: Any, leaves: Sequence[Any], devices: Any) -> jax.Array:
    """JAX's `_serialize_specs`: output specs as a SpecsPayload in JAX's carrier."""
    return to_carrier(_serialize_specs_bytes(treedef, leaves), devices)


def _deserialize_specs(carrier: jax.Array) -> tuple[Any, tuple[jax.ShapeDtypeStruct, ...]]:
    """JAX's `_deserialize_specs`: (treedef, leaves) of the SpecsPayload in the carrier."""
    return _deserialize_specs_bytes(from_carrier(carrier))


def _serialize_specs_bytes(treedef: Any, leaves: Sequence[Any]) -> bytes:
    _refuse_extended_dtypes(leaves, "specs")
    try:
        return serialize_specs(treedef, leaves)
    except (EncodeError, TypeError) as e:
        raise _at("specs", e) from e


def _deserialize_specs_bytes(data: bytes) -> tuple[Any, tuple[jax.ShapeDtypeStruct, ...]]:
    try:
        return deserialize_specs(data)
    except LiftError as e:
        raise PluginLiftError(str(e)) from e


def _refuse_extended_dtypes(leaves: Sequence[Any], path: str) -> None:
    # PRNG keys need DTypes of a later schema minor version; until then, a clear refusal.
    for i, leaf in enumerate(leaves):
        dtype = getattr(leaf, "dtype", None)
        if isinstance(dtype, np.dtype) or dtype is None:
            continue
        if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
            raise PluginEncodeError(
                f"{path}.leaves[{i}]",
                f"dtype {dtype} is an extended dtype (a PRNG key); colocated.v1 cannot write it",
            )


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
            serialize_specs(treedef, leaves)
        except (EncodeError, TypeError):
            return path
    # What does not pickle is a TypeError; anything else may be the devices too.
    return "function" if isinstance(error, TypeError) else "program"


def _at(path: str, error: Exception) -> PluginEncodeError:
    kind = PluginEncodeTypeError if isinstance(error, TypeError) else PluginEncodeError
    return kind(path, str(error))


_REPLACEMENTS = {
    "_serialize": _serialize,
    "_deserialize": _deserialize,
    "_serialize_specs": _serialize_specs,
    "_deserialize_specs": _deserialize_specs,
}
