"""How a program's function travels: by name, or pickled.

A module-level function that its module hands back by name
(`getattr(import_module(f.__module__), qualname) is f`, no `<locals>`, not
`__main__`) is sent as a FunctionRef: small, readable in any language, and
resolvable on a worker without unpickling. A name from a payload may name
anything, `posix.system` or `builtins.exec` as well, so resolving one is
denied by default: it needs an explicit allow-list of modules
(`allowed_modules`) or of qualified function names (`allowed_functions`,
such as `my.module.step`). Only those modules are imported, and only for
names the lists admit.

Anything else (lambdas, closures, partials, functions of `__main__`) is
cloudpickled. A pickled function is loaded only with `allow_pickle=True`;
otherwise the program's function slot holds an `UnloadedFunction`, which
keeps the pickle and raises `FunctionNotAvailableError` when called, while
the rest of the payload is lifted as usual.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from colocated_wire.errors import FunctionNotAllowedError, FunctionNotAvailableError, LiftError

if TYPE_CHECKING:
    from colocated_wire._gen.colocated.v1 import payload_pb2


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
    module: str,
    qualname: str,
    allowed_modules: Collection[str] | None = None,
    allowed_functions: Collection[str] | None = None,
) -> Callable:
    """The function a FunctionRef names, if an allow-list admits it (none: nothing is)."""
    name = f"{module}.{qualname}"
    if not module or not qualname or "<" in qualname:
        raise LiftError(f"function {module!r}.{qualname!r} is not a module-level name")
    if allowed_modules is None and allowed_functions is None:
        raise FunctionNotAllowedError(
            f"function {name}: resolving a function by name needs an allow-list; pass"
            f" allowed_modules={{{module!r}}} or allowed_functions={{{name!r}}}",
            module,
            qualname,
        )
    if module not in (allowed_modules or ()) and name not in (allowed_functions or ()):
        raise FunctionNotAllowedError(
            f"function {name}: module {module!r} is not allowed"
            " (allowed_modules or allowed_functions)",
            module,
            qualname,
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


class _AnyModule:
    """An allow-list admitting every module: for a process that already runs its peer's
    pickles, to which a name adds nothing."""

    def __contains__(self, module: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ANY_MODULE"


ANY_MODULE: Any = _AnyModule()


@dataclasses.dataclass(frozen=True, eq=False)
class UnloadedFunction:
    """A function that was not loaded; calling it raises with the reason."""

    reason: str
    pickle: bytes = b""
    shared: tuple[Any, ...] = ()
    # The `Function` message of a kind from a newer minor version, written back unchanged.
    unknown: bytes = b""
    # Who wrote the pickle, the Writer message its payload carried (1.3): written again with
    # it, unchanged, as this process did not write it.
    writer: payload_pb2.Writer | None = None

    def __call__(self, *args, **kwargs):
        raise FunctionNotAvailableError(self.reason)
