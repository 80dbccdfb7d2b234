"""`--explain`: one line on stderr when the worker loads a program of a function it already
holds a program of, saying how the new program differs from the nearest of them.

The program cache is keyed by the SHA-256 of the payload's bytes, so a client whose specs
change from call to call (a sharding, a dtype, a key of the inputs' dict) makes the worker
lift program after program of one function, each a miss. The cached programs of the same
function (by name, or a pickled function by its module and qualified name) are compared by
their specs, devices and payload writers (diff/nearest.py), never by their functions'
pickles; when those are the same, the functions or only the bytes differ, and the line says
so. Nothing is kept for this: the specializations are written from the lifted programs at the
miss, for the KEPT most recent programs of the function alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from colocated_wire.diff.nearest import nearest, specialization, summary
from colocated_wire.functions import UnloadedFunction
from colocated_wire.worker import log

# The most recent cached programs of the function that a new one is compared with.
KEPT = 4


def same_function(new: Any, cached: Iterable[Any]) -> list[Any]:
    """The KEPT most recent cached programs of `new`'s function (not `new`), oldest first."""
    key = function_key(new.program.fun)
    found = []
    for loaded in reversed(list(cached)):
        if loaded.digest != new.digest and function_key(loaded.program.fun) == key:
            found.append(loaded)
            if len(found) == KEPT:
                break
    return found[::-1]


def function_key(fun: Any) -> str:
    """What makes two programs' functions the same one: module.qualname (of a callable
    object's type where it has none)."""
    if isinstance(fun, UnloadedFunction):  # never cached: lifting refuses it
        return f"unloaded {id(fun)}"
    named = fun if hasattr(fun, "__qualname__") else type(fun)
    return f"{getattr(named, '__module__', '?')}.{getattr(named, '__qualname__', '?')}"


def say_miss(new: Any, cached: list[Any], allow_pickle: bool) -> None:
    """Writes the line: the function, and the diff from its nearest cached program. A fault
    in explaining is written instead, never raised: the program itself was loaded."""
    try:
        text = explanation(new, cached, allow_pickle)
    except Exception as e:  # noqa: BLE001 - a diagnostic must not fail the call
        text = f"could not explain the program of {function_key(new.program.fun)}: {e!r}"
    log.say(text)


def explanation(new: Any, cached: list[Any], allow_pickle: bool) -> str:
    """The function, and the diff of specs and devices from the nearest of `cached`."""
    earlier = [_specialization(c, allow_pickle) for c in cached]
    index, d = nearest(_specialization(new, allow_pickle), earlier)
    old, this = (
        f"cached program {_short(cached[index].digest)}",
        f"new program {_short(new.digest)}",
    )
    first = f"loaded another program of {function_key(new.program.fun)}: "
    if d.same:
        return (
            f"{first}{this} has the same specs and devices as {old}\n  their functions differ"
            " (a pickle, or what it captures), or only their bytes (a schema version, a table's"
            " order)"
        )
    lines = summary(d, (old, this))
    lines[0] = first + lines[0]
    return "\n".join(lines)


def _specialization(loaded: Any, allow_pickle: bool) -> bytes:
    """The program's specs and devices, and the writer its payload named: a client that now
    runs another Python, JAX or colocated-wire shows as a writer change."""
    p = loaded.program
    return specialization(
        p.in_treedef,
        p.in_leaves,
        p.out_treedef,
        p.out_leaves,
        p.devices,
        allow_pickle=allow_pickle,
        writer=loaded.writer,
    )


def _short(digest: bytes) -> str:
    return f"{digest.hex()[:12]}…"
