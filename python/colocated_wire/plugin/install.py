"""install() and uninstall(): JAX's colocated_python serialization functions rebound to
colocated_wire's (codec.py), in `func`'s namespace as well as `serialization`'s, since
func.py imports them by name (which of them it imports depends on the JAX version:
jax_compat/colocated_python.py). `explain` switches explain.py's log records on or off."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Iterator
from typing import Any

import jax

from colocated_wire.diff.nearest import explain_from_env
from colocated_wire.jax_support import SUPPORTED_JAX, jax_in_range
from colocated_wire.plugin import codec as plugin_codec
from colocated_wire.plugin import explain as plugin_explain
from colocated_wire.plugin.errors import UnsupportedJaxError

_REPLACEMENTS = {
    "_serialize": plugin_codec.serialize,
    "_deserialize": plugin_codec.deserialize,
    "_serialize_specs": plugin_codec.serialize_specs,
    "_deserialize_specs": plugin_codec.deserialize_specs,
}

_lock = threading.Lock()
_originals: dict[tuple[Any, str], Any] = {}  # empty while not installed


def install(
    *,
    allow_pickle: bool = False,
    allowed_modules: Collection[str] | None = None,
    explain: bool | None = None,
) -> None:
    """Makes colocated Python use colocated_wire for its payloads; again: sets new options.
    `explain` logs why a function specializes again (explain.py); None reads
    COLOCATED_WIRE_EXPLAIN."""
    bindings = _colocated_python_bindings()
    allowed = None if allowed_modules is None else frozenset(allowed_modules)
    if explain is None:
        explain = explain_from_env()
    with _lock:
        plugin_codec.trust = plugin_codec.Trust(allow_pickle, allowed)
        if not explain:
            plugin_codec.explainer = None
        elif plugin_codec.explainer is None:  # kept when on already: it holds the history
            plugin_codec.explainer = plugin_explain.Explainer(_jax_func_module())
        if not _originals:
            for module, name in bindings:
                _originals[(module, name)] = getattr(module, name)
                setattr(module, name, _REPLACEMENTS[name])


def uninstall() -> None:
    """Gives JAX its own serialization back; harmless when not installed."""
    with _lock:
        for (module, name), original in _originals.items():
            setattr(module, name, original)
        _originals.clear()
        plugin_codec.trust = plugin_codec.Trust()
        plugin_codec.explainer = None


def is_installed() -> bool:
    """Whether colocated Python's payloads currently go through colocated_wire."""
    return bool(_originals)


@contextlib.contextmanager
def installed(
    *,
    allow_pickle: bool = False,
    allowed_modules: Collection[str] | None = None,
    explain: bool | None = None,
) -> Iterator[None]:
    """Installed inside the block; afterwards, as it was before (installed or not, same options)."""
    was_installed, previous = is_installed(), plugin_codec.trust
    explainer = plugin_codec.explainer
    install(allow_pickle=allow_pickle, allowed_modules=allowed_modules, explain=explain)
    try:
        yield
    finally:
        if was_installed:
            options = {"allow_pickle": previous.allow_pickle, "explain": explainer is not None}
            install(allowed_modules=previous.allowed_modules, **options)
            plugin_codec.explainer = explainer  # and its history
        else:
            uninstall()


def _jax_func_module() -> Any:
    from jax.experimental.colocated_python import func

    return func


def _colocated_python_bindings() -> tuple[tuple[Any, str], ...]:
    version = jax.__version__
    if not jax_in_range(version):
        raise UnsupportedJaxError(
            f"colocated_wire.plugin supports jax {SUPPORTED_JAX}, and this is jax {version}"
        )
    from colocated_wire.jax_compat import colocated_python

    missing = colocated_python.missing()
    if missing:
        names = ", ".join(missing)
        raise UnsupportedJaxError(f"jax {version} lacks {names}, which the plugin replaces")
    return colocated_python.BINDINGS
