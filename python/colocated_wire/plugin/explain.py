"""`install(explain=True)`: one log record each time colocated Python specializes a function
again, saying how the new specialization differs from the nearest earlier one.

Each specialization compiles a program, and without `specialize(out_specs_fn=...)` its first
call waits for a round trip to learn the output specs; a function that keeps specializing
(a sharding that changes between steps, a dtype promoted somewhere, a key added to a dict of
inputs) is slow for a reason that is hard to see. JAX hands `_serialize` every program it
compiles, so this is the one hook that is the same on every supported JAX: the user's
function comes with its input specs and devices, once per specialization. JAX's own helper
programs (the ones that learn the output specs and fetch the result) are closures defined
in func.py, and are skipped; its PRNG wrapper is looked through to the function it wraps.

Per function (by identity, held weakly where it can be) the last KEPT_PER_FUNCTION
specializations are kept as small payloads (diff/nearest.py: specs and devices, never the
function), for the last KEPT_FUNCTIONS functions. When explain is off there is no Explainer,
and the codec pays one `is None` per program.

The record is a WARNING on the `colocated_wire` logger, as JAX's own
`jax_explain_cache_misses` records are: the user asked for it, and INFO is hidden by
Python's default logging, so an INFO record would look like no re-specialization at all.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import weakref
from typing import Any

from colocated_wire.diff.nearest import nearest, specialization, summary

logger = logging.getLogger("colocated_wire")

KEPT_PER_FUNCTION = 4
KEPT_FUNCTIONS = 64


@dataclasses.dataclass
class _Seen:
    """A function's latest specializations: their numbers and bytes, oldest first."""

    ref: Any  # a weakref to the function, or None where it takes none
    name: str
    count: int = 0
    kept: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=KEPT_PER_FUNCTION)
    )


class Explainer:
    """Remembers each function's specializations, and logs why a new one was needed."""

    def __init__(self, jax_module: Any):
        self._jax_globals = vars(jax_module)  # func.py: its closures are JAX's helpers
        self._seen: collections.OrderedDict[int, _Seen] = collections.OrderedDict()
        self._lock = threading.Lock()

    def specialized(self, program: tuple, allow_pickle: bool) -> None:
        """Called with each program tuple JAX serializes; logs if its function was seen."""
        fun = self._user_function(program[0])
        if fun is None:
            return
        _, in_treedef, in_leaves, _, _, devices = program
        new = specialization(in_treedef, in_leaves, None, None, devices, allow_pickle=allow_pickle)
        with self._lock:
            seen = self._entry(fun)
            seen.count += 1
            number, earlier = seen.count, list(seen.kept)
            if not any(data == new for _, data in earlier):
                seen.kept.append((number, new))
        if earlier:
            logger.warning("%s", explanation(seen.name, number, new, earlier))

    def _user_function(self, fun: Any) -> Any:
        """The function the user gave colocated_python, or None for one of JAX's helpers."""
        while getattr(fun, "__globals__", None) is self._jax_globals:
            fun = getattr(fun, "__wrapped__", None)  # the PRNG wrapper wraps the function
        return fun

    def _entry(self, fun: Any) -> _Seen:
        """The function's record, made anew when its id now names another object."""
        key = id(fun)
        seen = self._seen.get(key)
        name = function_name(fun)
        if seen is not None and not (seen.ref() is fun if seen.ref else seen.name == name):
            seen = None
        if seen is None:
            seen = self._seen[key] = _Seen(_weak(fun), name)
            while len(self._seen) > KEPT_FUNCTIONS:
                self._seen.popitem(last=False)
        self._seen.move_to_end(key)
        return seen


def explanation(name: str, number: int, new: bytes, earlier: list[tuple[int, bytes]]) -> str:
    """The record's text: the function, and the diff from its nearest earlier specialization."""
    index, d = nearest(new, [data for _, data in earlier])
    old = earlier[index][0]
    first = f"colocated_python specialized {name} again: "
    if d.same:
        return (
            f"{first}specialization {number} has the same input specs and devices as"
            f" specialization {old}\n  a new colocated_python() or specialize() callable has"
            " a cache of its own, and jax.clear_caches() empties them"
        )
    lines = summary(d, (f"specialization {old}", f"specialization {number}"))
    lines[0] = first + lines[0]
    return "\n".join(lines)


def function_name(fun: Any) -> str:
    """module.qualname of a function, or of a callable object's type."""
    named = fun if hasattr(fun, "__qualname__") else type(fun)
    module = getattr(named, "__module__", None) or "?"
    return f"{module}.{getattr(named, '__qualname__', '?')}"


def _weak(fun: Any) -> Any:
    try:
        return weakref.ref(fun)
    except TypeError:  # identified by id and name alone
        return None
