"""A Value (colocated.v1.2): any other value JAX's colocated serialization is handed.

JAX's `_serialize` pickles whatever it is given: a Mesh, a list of shardings,
a dtype, a function, the function-and-specialization tuple before its specs
are known. A Value is such a value as a pytree: its containers as JAX
flattens them, written by the tree writer as a Specs' tree is
(entries/treedef.py), and its leaves in order, each in the first form that
fits it:
- a table object (device list, mesh, sharding, ShapeDtypeStruct) is an
  `entry`, added through the table builder as a specs leaf or its sharding
  is, so equal objects are written once;
- a dtype with a wire DType (a key dtype's impl registered by its name) is a
  `dtype`;
- a PRNG impl registered by its name is a `prng_impl` (a PRNGImpl is a
  namedtuple, but a leaf here);
- a module-level function found again by its name is a `function`
  (functions.py);
- anything else is `pickled`, the table objects it holds as references
  (pickling.py), and only where pickles are allowed: elsewhere it is an
  EncodeError naming the option when written, and a PickleNotAllowedError
  when read.
Every leaf is distinct to the tree writer, so a REPEAT stands only for a
subtree without leaves, and a Value has one ValueLeaf per leaf. A leaf of a
kind this version does not know is an UnknownValue, written back as it came.
"""

from __future__ import annotations

import pickle
from collections.abc import Collection
from typing import Any

import numpy as np
from jax import tree_util
from jax._src.random import prng

from colocated_wire._gen.colocated.v1 import payload_pb2, table_pb2
from colocated_wire.entries import ENTRIES, codec_of, treedef
from colocated_wire.entries.array_spec import (
    DTYPE_NAMES,
    DTYPE_SINCE,
    DTYPES,
    STRING_DTYPE,
    check_dims,
    check_key_type,
    dtype_to_wire,
    impl_problem,
    is_registered,
    key_type_problem,
    lift_impl,
    lift_key_dtype,
    lower_impl,
    lower_key_type,
)
from colocated_wire.entries.problem import raise_problem
from colocated_wire.entries.tree_nodes import PICKLE_OPTION, allow_pickles, pickles_allowed
from colocated_wire.errors import (
    DecodeError,
    EncodeError,
    EncodeTypeError,
    LiftError,
    PickleNotAllowedError,
)
from colocated_wire.functions import name_of, resolve_by_name
from colocated_wire.payload import function
from colocated_wire.pickling import VALUE_SHARED_TYPES, pickle_function, unpickle_function
from colocated_wire.schema_version import enum_since, newer_value, refuse_newer, require_version
from colocated_wire.table.check_table import CheckContext
from colocated_wire.table.lift_table import LiftContext
from colocated_wire.table.lower_table import LowerContext
from colocated_wire.unknown import UnknownEntry, UnknownValue

# The minor version that introduced value payloads, read from the schema.
VALUE_SINCE = enum_since(payload_pb2.PayloadKind.DESCRIPTOR)[payload_pb2.PAYLOAD_KIND_VALUE]
# An entry leaf may be any kind of entry, or one of a newer kind.
_ANY_ENTRY = frozenset(ENTRIES)


def flatten(value: Any) -> tuple[list[Any], tree_util.PyTreeDef]:
    """A value's leaves and structure as JAX flattens them, a PRNG impl kept whole as a leaf."""
    return tree_util.tree_flatten(value, is_leaf=_is_impl)


def _is_impl(obj: Any) -> bool:
    return isinstance(obj, prng.PRNGImpl)


# ---- lowering ---------------------------------------------------------------


def lower(value: Any, ctx: LowerContext, path: str = "value") -> tuple[payload_pb2.Value, int]:
    """The Value message, its leaves first in order (their table objects into the table), then
    its tree; and the newest minor version an unknown leaf came in (0: none). A leaf that
    cannot be written is an EncodeError at `path`.leaves[i]."""
    leaves, tree = flatten(value)
    msg = payload_pb2.Value()
    carried = 0
    for i, leaf in enumerate(leaves):
        try:
            lower_leaf(leaf, msg.leaves.add(), ctx)
        except EncodeError as e:
            raise e.under(f"{path}.leaves[{i}]") from e
        if isinstance(leaf, UnknownValue):
            carried = max(carried, leaf.minor_version)
    lowered = treedef.lower(tree, ctx.builder.target_minor_version, f"{path}.treedef")
    tree_msg, _ = treedef.write(lowered, range(len(leaves)))  # distinct: none is left out
    msg.treedef.CopyFrom(tree_msg)
    return msg, carried


def lower_leaf(leaf: Any, out: payload_pb2.ValueLeaf, ctx: LowerContext) -> None:
    """Writes one leaf into `out`, in the first form that fits it (the module's docstring)."""
    builder = ctx.builder
    if isinstance(leaf, UnknownValue):  # as it came
        out.MergeFromString(leaf.leaf_bytes)
    elif isinstance(leaf, UnknownEntry) or codec_of(leaf) is not None:
        out.entry = builder.add(leaf)
    elif (wire := _dtype_to_wire(leaf)) is not None:
        what = f"dtype {DTYPE_NAMES[wire]}"
        refuse_newer(".dtype.dtype", what, DTYPE_SINCE[wire], builder.target_minor_version)
        out.dtype.dtype = wire
        if wire == table_pb2.D_TYPE_KEY:  # its impl registered by its name (_dtype_to_wire)
            out.dtype.key_type.CopyFrom(lower_key_type(leaf))
    elif isinstance(leaf, prng.PRNGImpl) and is_registered(leaf):
        out.prng_impl.CopyFrom(lower_impl(leaf, f"PRNG impl {leaf.name}"))
    elif (name := _function_name(leaf)) is not None:
        out.function.module, out.function.qualname = name
    else:
        _lower_pickled(leaf, out, ctx)


def _dtype_to_wire(leaf: Any) -> int | None:
    """The DType of a dtype that reads back as an equal dtype: numpy's with a wire DType, or a
    key dtype whose impl is registered by its name; None for anything else."""
    if isinstance(leaf, prng.KeyTy):
        return table_pb2.D_TYPE_KEY if is_registered(leaf._impl) else None
    if not isinstance(leaf, np.dtype):
        return None
    if isinstance(leaf, np.dtypes.StringDType) and leaf != STRING_DTYPE:
        return None  # one with an na_object: the wire's string dtype has none
    try:
        return dtype_to_wire(leaf)
    except EncodeError:
        return None


def _function_name(leaf: Any) -> tuple[str, str] | None:
    """(module, qualname) of a function found again by its name, as a program's is."""
    if isinstance(leaf, type) or not callable(leaf):
        return None
    return name_of(leaf)


def _lower_pickled(leaf: Any, out: payload_pb2.ValueLeaf, ctx: LowerContext) -> None:
    """A leaf with no other form, pickled where pickles are allowed; the table objects it holds
    go into the table."""
    what = _describe(leaf)
    if not pickles_allowed():
        raise EncodeError(
            f"{what} has no colocated.v1 form but a pickle; {PICKLE_OPTION}, and sends it pickled"
        )
    try:
        data, refs = pickle_function(leaf, ctx.builder, VALUE_SHARED_TYPES)
    except TypeError as e:  # what does not pickle (JAX's pickle raises TypeError too)
        raise EncodeTypeError(f"{what} cannot be pickled: {e}") from e
    except pickle.PicklingError as e:
        raise EncodeError(f"{what} cannot be pickled: {e}") from e
    out.pickled.pickle = data
    out.pickled.refs.extend(refs)


def _describe(leaf: Any) -> str:
    """A leaf as an error names it."""
    qualname = getattr(leaf, "__qualname__", None)
    if callable(leaf) and isinstance(qualname, str) and not isinstance(leaf, type):
        return f"function {qualname} (not found again by a module-level name)"
    return f"a value of type {type(leaf).__name__}"


# ---- checking ---------------------------------------------------------------


def check(msg: payload_pb2.Value | None, ctx: CheckContext) -> treedef.TreeShape:
    """Checks a value (None: absent): a treedef, then one leaf per leaf of it, each in order;
    returns the treedef's facts."""
    path = ctx.path
    if msg is None:
        raise DecodeError(path, "missing", "a value payload needs its value")
    shape = treedef.check_tree_of(msg, ctx, "a value has")
    for i, leaf in enumerate(msg.leaves):
        check_leaf(leaf, f"{path}.leaves[{i}]", ctx)
    return shape


def check_leaf(leaf: payload_pb2.ValueLeaf, path: str, ctx: CheckContext) -> None:
    """One leaf: its reference, dtype, impl, function name or pickle's references."""
    case = leaf.WhichOneof("leaf")
    if case == "entry":
        ctx.refs.check(leaf.entry, f"{path}.entry", _ANY_ENTRY, allow_unknown=True)
    elif case == "dtype":
        _check_dtype(leaf.dtype, f"{path}.dtype", ctx)
    elif case == "prng_impl":
        impl = leaf.prng_impl
        check_dims(impl.key_shape, f"{path}.prng_impl.key_shape", ctx.limits.max_rank)
        raise_problem(f"{path}.prng_impl.impl", impl_problem(impl.impl))
    elif case == "function":
        function.check_ref(leaf.function, f"{path}.function")
    elif case == "pickled":
        refs_path = f"{path}.pickled.refs"
        ctx.refs.check_all(leaf.pickled.refs, refs_path, _ANY_ENTRY, allow_unknown=True)
    elif not leaf.ByteSize():
        # No known form and no fields of a newer one: nothing to read.
        detail = "no known leaf form (entry, dtype, prng_impl, function or pickled)"
        raise DecodeError(path, "missing", detail)


def _check_dtype(msg: payload_pb2.DTypeValue, path: str, ctx: CheckContext) -> None:
    """A dtype: known (not UNSPECIFIED), of the payload's version, with a key type exactly
    when a key dtype."""
    dtype, minor = msg.dtype, ctx.minor_version
    if dtype not in DTYPES:  # UNSPECIFIED too, as an ArraySpec's (docs/wire-format.md)
        what = f"dtype {dtype}"
        newer = newer_value(f"{path}.dtype", what, minor)
        raise newer or DecodeError(f"{path}.dtype", "unknown-enum", f"unknown {what}")
    require_version(f"{path}.dtype", DTYPE_NAMES[dtype], DTYPE_SINCE[dtype], minor)
    has_key_type = msg.HasField("key_type")
    if has_key_type:
        check_key_type(msg.key_type, f"{path}.key_type", minor, ctx.limits.max_rank)
    raise_problem(f"{path}.key_type", key_type_problem(dtype, has_key_type, "dtype"))


# ---- lifting ----------------------------------------------------------------


def lift(
    msg: payload_pb2.Value,
    ctx: LiftContext,
    allow_pickle: bool,
    allowed_modules: Collection[str] | None,
    allowed_functions: Collection[str] | None = None,
    minor_version: int = 0,
    path: str = "value",
) -> Any:
    """The value of a checked Value: its tree first (nothing is unpickled for a tree that
    cannot be built), then its leaves in order, a REPEAT's leaves the same objects."""
    shape: treedef.TreeShape = ctx.facts
    with allow_pickles(allow_pickle):
        tree = treedef.lift(msg.treedef, ctx)
    objects: list[Any] = ctx.objects
    trust = (allow_pickle, allowed_modules, allowed_functions)
    written = [
        _lift_leaf(leaf, f"{path}.leaves[{i}]", objects, trust, minor_version)
        for i, leaf in enumerate(msg.leaves)
    ]
    return tree_util.tree_unflatten(tree, treedef.leaf_refs(shape, written))


def _lift_leaf(
    leaf: payload_pb2.ValueLeaf, path: str, objects: list[Any], trust: tuple, minor: int
) -> Any:
    """One checked leaf's object; what this process lacks or may not run is a LiftError at
    `path`.<form>."""
    allow_pickle, allowed_modules, allowed_functions = trust
    case = leaf.WhichOneof("leaf")
    try:
        if case == "entry":
            return objects[leaf.entry]
        if case == "dtype":
            value = leaf.dtype
            if value.dtype == table_pb2.D_TYPE_KEY:
                return lift_key_dtype(value.key_type)
            return DTYPES[value.dtype]
        if case == "prng_impl":
            return lift_impl(leaf.prng_impl)
        if case == "function":
            module, qualname = leaf.function.module, leaf.function.qualname
            return resolve_by_name(module, qualname, allowed_modules, allowed_functions)
        if case == "pickled":
            return _unpickle(leaf.pickled, objects, allow_pickle)
    except LiftError as e:
        e.args = (f"{path}.{case}: {e}",)  # the same error, and its fields, at its leaf
        raise
    return UnknownValue(leaf.SerializeToString(deterministic=True), minor)


def _unpickle(msg: payload_pb2.PickledValue, objects: list[Any], allow_pickle: bool) -> Any:
    """Runs a leaf's pickle, only where pickles are allowed; `refs[k]` is its k-th object."""
    if not allow_pickle:
        detail = "the value arrived pickled, and unpickling runs the sender's code"
        raise PickleNotAllowedError(f"{detail}: {PICKLE_OPTION}")
    shared = tuple(objects[r] for r in msg.refs)
    try:
        return unpickle_function(msg.pickle, shared)
    except Exception as e:  # a pickle can raise anything
        raise LiftError(f"the pickled value cannot be loaded: {e}") from e
