"""How a program's function travels: by name, or pickled.

A module-level function that its module hands back by name
(`getattr(import_module(f.__module__), qualname) is f`, no `<locals>`, not
`__main__`) is sent as a FunctionRef: small, readable in any language, and
resolvable on a worker without unpickling. Importing a module runs its
top-level code, so a name from an untrusted payload imports nothing by
default: it resolves only in modules this process has already imported. A
worker that names `allowed_modules` may import those, and only those.

Anything else (lambdas, closures, partials, functions of `__main__`) is
cloudpickled. A pickled function is loaded only with `allow_pickle=True`;
otherwise the program's function slot holds an `UnloadedFunction`, which
keeps the pickle and raises `FunctionNotAvailableError` when called, while
the rest of the payload is lifted as usual.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable, Collection
from typing import Any

from colocated_wire.errors import FunctionNotAvailableError, LiftError


def name_of(fun: Callable) -> tuple[str, str] | None:
    """(module, qualname) if `fun` can be found again by that name."""
    module = getattr(fun, "__module__", None)
    qualname = getattr(fun, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module == "__main__" or "<" in qualname:
        return None
    try:
        found = _resolve(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        return None
    return (module, qualname) if found is fun else None


def _resolve(obj: Any, qualname: str) -> Any:
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_by_name(
    module: str, qualname: str, allowed_modules: Collection[str] | None = None
) -> Callable:
    """The function a FunctionRef names; only allowed modules, or imported ones, are searched."""
    if allowed_modules is not None and module not in allowed_modules:
        raise LiftError(f"function {module}.{qualname}: module {module!r} is not allowed")
    if not module or not qualname or "<" in qualname:
        raise LiftError(f"function {module!r}.{qualname!r} is not a module-level name")
    if allowed_modules is None and module not in sys.modules:
        raise LiftError(
            f"function {module}.{qualname}: module {module!r} is not imported, and"
            " importing runs code: pass allowed_modules to let it be imported"
        )
    try:
        fun = _resolve(importlib.import_module(module), qualname)
    except (ImportError, AttributeError) as e:
        raise LiftError(f"function {module}.{qualname} cannot be found: {e}") from e
    if not callable(fun):
        raise LiftError(f"{module}.{qualname} is not callable")
    # The name must be the function's own: `allowed.os.system` reaches os from an allowed module.
    if getattr(fun, "__module__", None) != module or getattr(fun, "__qualname__", None) != qualname:
        raise LiftError(f"function {module}.{qualname} is not defined there but reached through it")
    return fun


@dataclasses.dataclass(frozen=True, eq=False)
class UnloadedFunction:
    """A function that was not loaded; calling it raises with the reason."""

    reason: str
    pickle: bytes = b""
    shared: tuple[Any, ...] = ()
    # The `Function` message of a kind from a newer minor version, written back unchanged.
    unknown: bytes = b""

    def __call__(self, *args, **kwargs):
        raise FunctionNotAvailableError(self.reason)
