"""The program's function: by name, pickled, or of a kind from a newer minor version.

How a function is named and resolved is functions.py; how a pickle keeps its
shared objects in the table is pickling.py. This module writes, checks and
lifts the `Function` message.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.entries import ENTRIES
from colocated_wire.errors import DecodeError
from colocated_wire.functions import UnloadedFunction, name_of, resolve_by_name
from colocated_wire.pickling import pickle_function, unpickle_function
from colocated_wire.table.check_table import CheckContext
from colocated_wire.table.lift_table import LiftContext
from colocated_wire.table.lower_table import LowerContext

_ANY_SHARED = frozenset(ENTRIES)


def lower(fun: Callable, ctx: LowerContext) -> payload_pb2.Function:
    """`fun` by name if it can be found again by it, else pickled: the pickle's shared objects
    go into the table."""
    out = payload_pb2.Function()
    builder = ctx.builder
    if isinstance(fun, UnloadedFunction):
        # Written back as it came: an unknown kind's bytes, or the pickle and its refs.
        if fun.unknown:
            out.MergeFromString(fun.unknown)
            return out
        out.pickled.pickle = fun.pickle
        out.pickled.refs.extend(builder.add(obj) for obj in fun.shared)
        out.pickled.SetInParent()
        return out
    name = name_of(fun)
    if name is not None:
        out.by_name.module, out.by_name.qualname = name
        return out
    data, refs = pickle_function(fun, builder)
    out.pickled.pickle = data
    out.pickled.refs.extend(refs)
    out.pickled.SetInParent()
    return out


def check(fn: payload_pb2.Function, ctx: CheckContext) -> None:
    """Checks a function: a named one names its module and qualname, a pickled one refers to
    the table."""
    path = ctx.path
    case = fn.WhichOneof("function")
    if case == "by_name":
        check_ref(fn.by_name, f"{path}.by_name")
    elif case == "pickled":
        rpath = f"{path}.pickled.refs"
        ctx.refs.check_all(fn.pickled.refs, rpath, _ANY_SHARED, allow_unknown=True)
    elif not fn.ByteSize():
        # No known kind and no fields of a newer one: nothing to run.
        raise DecodeError(path, "missing", "no known function form (by_name or pickled)")


def check_ref(ref: payload_pb2.FunctionRef, path: str) -> None:
    """A function by name names both its module and its qualname."""
    for field in ("module", "qualname"):
        if not getattr(ref, field):
            raise DecodeError(f"{path}.{field}", "missing", f"{field} is required")


def lift(
    fn: payload_pb2.Function,
    ctx: LiftContext,
    allow_pickle: bool,
    allowed_modules: Collection[str] | None,
    allowed_functions: Collection[str] | None = None,
    writer: payload_pb2.Writer | None = None,
) -> Any:
    """The callable; an UnloadedFunction when it may not or cannot be loaded here, which keeps
    the pickle's `writer` (its payload's header's, 1.3) to write it again with."""
    objects: list[Any] = ctx.objects
    case = fn.WhichOneof("function")
    if case == "by_name":
        by_name = fn.by_name
        return resolve_by_name(by_name.module, by_name.qualname, allowed_modules, allowed_functions)
    if case == "pickled":
        shared = tuple(objects[r] for r in fn.pickled.refs)
        if not allow_pickle:
            return UnloadedFunction(
                "the function is pickled and deserialize_program was called without"
                " allow_pickle=True",
                fn.pickled.pickle,
                shared,
                writer=_copied(writer),
            )
        return unpickle_function(fn.pickled.pickle, shared)
    return UnloadedFunction(
        "the payload's function is of a kind this version does not know",
        unknown=fn.SerializeToString(deterministic=True),
    )


def _copied(writer: payload_pb2.Writer | None) -> payload_pb2.Writer | None:
    """A Writer message of its own, not a view into the payload that goes when it goes."""
    if writer is None:
        return None
    copy = payload_pb2.Writer()
    copy.CopyFrom(writer)
    return copy
