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
(`specialize(out_specs_fn=...)`) and no PRNG key needs wrapping, and only
from the modules `install(allowed_modules=...)` names (deny by default; with
allow_pickle=True and no list, names resolve from any module, which the
pickles could reach anyway).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Iterator
from typing import Any

import jax

from colocated_wire import plugin_codec
from colocated_wire.jax_support import SUPPORTED_JAX, jax_in_range
from colocated_wire.plugin_errors import (
    PickleNotAllowedError,
    PluginEncodeError,
    PluginEncodeTypeError,
    PluginLiftError,
    UnsupportedJaxError,
)

__all__ = [
    "SUPPORTED_JAX",
    "PickleNotAllowedError",
    "PluginEncodeError",
    "PluginEncodeTypeError",
    "PluginLiftError",
    "UnsupportedJaxError",
    "install",
    "installed",
    "is_installed",
    "uninstall",
]

_NAMES = ("_serialize", "_deserialize", "_serialize_specs", "_deserialize_specs")
_REPLACEMENTS = {
    "_serialize": plugin_codec.serialize,
    "_deserialize": plugin_codec.deserialize,
    "_serialize_specs": plugin_codec.serialize_specs,
    "_deserialize_specs": plugin_codec.deserialize_specs,
}

_lock = threading.Lock()
_originals: dict[tuple[Any, str], Any] = {}  # empty while not installed


def install(*, allow_pickle: bool = False, allowed_modules: Collection[str] | None = None) -> None:
    """Makes colocated Python use colocated_wire for its payloads; again: sets new options."""
    modules = _colocated_python_modules()
    allowed = None if allowed_modules is None else frozenset(allowed_modules)
    with _lock:
        plugin_codec.trust = plugin_codec.Trust(allow_pickle, allowed)
        if not _originals:
            for module in modules:
                for name in _NAMES:
                    _originals[(module, name)] = getattr(module, name)
                    setattr(module, name, _REPLACEMENTS[name])


def uninstall() -> None:
    """Gives JAX its own serialization back; harmless when not installed."""
    with _lock:
        for (module, name), original in _originals.items():
            setattr(module, name, original)
        _originals.clear()
        plugin_codec.trust = plugin_codec.Trust()


def is_installed() -> bool:
    """Whether colocated Python's payloads currently go through colocated_wire."""
    return bool(_originals)


@contextlib.contextmanager
def installed(
    *, allow_pickle: bool = False, allowed_modules: Collection[str] | None = None
) -> Iterator[None]:
    """Installed inside the block; afterwards, as it was before (installed or not, same options)."""
    was_installed, previous = is_installed(), plugin_codec.trust
    install(allow_pickle=allow_pickle, allowed_modules=allowed_modules)
    try:
        yield
    finally:
        if was_installed:
            install(allow_pickle=previous.allow_pickle, allowed_modules=previous.allowed_modules)
        else:
            uninstall()


def _colocated_python_modules() -> tuple[Any, Any]:
    version = jax.__version__
    if not jax_in_range(version):
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
