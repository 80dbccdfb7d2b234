"""ArraySpec entries: a ShapeDtypeStruct's shape, dtype, weak_type and sharding reference.

Numbers on the wire are fixed forever (table.proto). JAX names its dtypes
with numpy / ml_dtypes names, so the DType enum maps to them by name.
`string` is numpy's variable-width `StringDType()`, the dtype JAX's
colocated Python itself uses for serialized specs; numpy's fixed-width
`str_` ("<U...") is not a JAX dtype and is refused. `float0` is
`jax.dtypes.float0`. `key` is a PRNG key array's extended dtype (`key<fry>`):
its `key_type` names the impl, which lifting finds by name in jax.random's
registry, where `jax.random.key(0, impl=name)` finds it.

The dtypes of schema 1.1 (their `since` option) are written only when the
encoder targets 1.1 or later, and read only from a payload whose header
says so (schema_version.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from google.protobuf.message import Message
from jax import numpy as jnp
from jax._src import sharding_impls
from jax._src.random import prng
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries.enum_names import wire_names
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import DecodeError, EncodeError, LiftError
from colocated_wire.jax_compat.spec_identity import spec_key
from colocated_wire.schema_version import (
    enum_since,
    field_since,
    newer_value,
    refuse_newer,
    require_version,
)
from colocated_wire.unknown import UnknownEntry

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = jax.ShapeDtypeStruct
MAX_DIM = 2**53 - 1
STRING_DTYPE = np.dtypes.StringDType()
DTYPE_NAMES = {v: n.lower() for v, n in wire_names(table_pb2.DType, "D_TYPE_").items()}
_NOT_NUMPY = {"string": STRING_DTYPE, "float0": jax.dtypes.float0, "key": None}
# None for `key`: a key dtype is built from the entry's key_type.
DTYPES: dict[int, np.dtype | None] = {
    v: _NOT_NUMPY[n] if n in _NOT_NUMPY else jnp.dtype(n) for v, n in DTYPE_NAMES.items()
}
_DTYPES_TO_WIRE = {d: v for v, d in DTYPES.items() if d is not None and d is not STRING_DTYPE}
DTYPE_SINCE = enum_since(table_pb2.DType.DESCRIPTOR)
KEY_TYPE_SINCE = field_since(table_pb2.ArraySpec.DESCRIPTOR, "key_type")
# A reference to an array spec; to a leaf's sharding, which may be of a newer kind too.
ARRAY_SPEC = frozenset({"array_spec"})
SHARDING = frozenset({"named_sharding", "single_device_sharding", "gspmd_sharding"})
# A leaf's sharding: what the table writes as a sharding entry, or one of a newer kind.
_SHARDING_TYPES = (NamedSharding, SingleDeviceSharding, sharding_impls.GSPMDSharding, UnknownEntry)


def shape_problem(shape: Sequence[Any]) -> Problem | None:
    """Dimensions are ints in [0, 2**53-1]; `at` is the dimension."""
    for k, d in enumerate(shape):
        if not isinstance(d, int) or not 0 <= d <= MAX_DIM:
            return Problem("invalid-value", f"dimension {d!r} is not in [0, 2**53-1]", f"[{k}]")
    return None


def leaf_sharding_problem(kind: str | None, sharding: Message | None, rank: int) -> Problem | None:
    """Whether jax.ShapeDtypeStruct accepts a sharding entry on an array of this rank."""
    need = 0
    if kind == "named_sharding":
        need = len(sharding.spec.entries)
    elif kind == "gspmd_sharding":
        if sharding.type == table_pb2.SHARDING_TYPE_MANUAL:
            return Problem("invalid-value", "JAX puts no manual sharding on an array")
        if any(t != table_pb2.SHARDING_TYPE_REPLICATED for t in sharding.last_tile_dims):
            return Problem("invalid-value", "JAX puts no typed tile dims on an array")
        if sharding.type == table_pb2.SHARDING_TYPE_MAXIMAL:
            need = 1
        elif sharding.type == table_pb2.SHARDING_TYPE_OTHER:
            trailing = int(sharding.replicate_on_last_tile_dim) + len(sharding.last_tile_dims)
            need = len(sharding.tile_assignment.dims) - trailing
    if rank < need:
        return Problem("invalid-value", f"a sharding of rank {need} on rank {rank}")
    return None


def dtype_to_wire(dtype: Any) -> int:
    """The DType number of a dtype; EncodeError (at ".dtype") if the wire has none."""
    if isinstance(dtype, prng.KeyTy):
        return table_pb2.D_TYPE_KEY
    if isinstance(dtype, np.dtypes.StringDType):
        return table_pb2.D_TYPE_STRING
    try:
        wire = _DTYPES_TO_WIRE.get(np.dtype(dtype))
    except TypeError:  # not a numpy dtype: another extended dtype, or no dtype at all
        wire = None
    if wire is None:
        raise EncodeError(f"dtype {dtype} has no colocated.v1 DType", ".dtype")
    return wire


def key_type_problem(dtype: int, has_key_type: bool, what: str = "array") -> Problem | None:
    """A key type belongs to a key array (or a key dtype: `what`), which needs one."""
    if dtype == table_pb2.D_TYPE_KEY and not has_key_type:
        return Problem("missing", f"a key {what} needs its key type")
    if dtype != table_pb2.D_TYPE_KEY and has_key_type:
        return Problem("invalid-value", f"a {DTYPE_NAMES[dtype]} {what} has no key type")
    return None


def impl_problem(impl: str) -> Problem | None:
    """A key impl has a name: JAX's impls all have one."""
    return None if impl else Problem("invalid-value", "a key impl needs a name")


def is_registered(impl: prng.PRNGImpl) -> bool:
    """Whether jax.random finds this very impl by its name, as a reader must."""
    return prng.prngs.get(impl.name) is impl and impl_problem(impl.name) is None


def lower_impl(impl: prng.PRNGImpl, what: str) -> table_pb2.KeyType:
    """A PRNG impl by the name jax.random finds it by, and its key shape; one not registered
    by its name is an EncodeError at ".impl", since a reader could not find it."""
    if not is_registered(impl):
        raise EncodeError(
            f"{what}: the PRNG impl {impl.name!r} is not registered by that name"
            " (jax._src.random.prng.register_prng), so a reader cannot find it",
            ".impl",
        )
    return table_pb2.KeyType(impl=impl.name, key_shape=impl.key_shape)


def lower_key_type(dtype: prng.KeyTy) -> table_pb2.KeyType:
    """A key dtype's impl by the name jax.random finds it by, and its key shape."""
    try:
        return lower_impl(dtype._impl, f"dtype {dtype}")
    except EncodeError as e:
        raise e.under(".key_type") from e


def lift_impl(key_type: table_pb2.KeyType) -> prng.PRNGImpl:
    """The registered impl of that name and key shape; else LiftError."""
    impl = prng.prngs.get(key_type.impl)
    if impl is None:
        raise LiftError(f"the PRNG impl {key_type.impl!r} is not registered in this process")
    if tuple(impl.key_shape) != tuple(key_type.key_shape):
        raise LiftError(
            f"the PRNG impl {key_type.impl!r} has key shape {tuple(impl.key_shape)} here,"
            f" not {tuple(key_type.key_shape)}"
        )
    return impl


def lift_key_dtype(key_type: table_pb2.KeyType) -> prng.KeyTy:
    """The key dtype of a registered impl of that name and key shape; else LiftError."""
    return prng.KeyTy(lift_impl(key_type))


def key(spec: jax.ShapeDtypeStruct, ctx: LowerContext) -> tuple:
    """What makes two leaves one entry, known before a message is built. A NamedSharding over
    a Mesh is named by what it is made of, so a leaf equal to one before it (most are, each with
    a fresh sharding) adds nothing; any other sharding is added and named by its index."""
    sharding = spec.sharding
    if isinstance(sharding, NamedSharding) and isinstance(mesh := sharding.mesh, Mesh):
        # By identity: the builder keeps the leaf, so its mesh and spec, alive. JAX >= 0.10
        # interns PartitionSpecs, so equal specs are one object (before, spec_key is the spec
        # itself); an equal mesh or spec that is another object misses here and meets its twin
        # by value once lowered.
        of: Any = (id(mesh), spec_key(sharding.spec), sharding.memory_kind)
    else:
        of = _add_sharding(sharding, ctx)
    return (of, spec.shape, spec.dtype, bool(spec.weak_type))


def add_leaves(leaves: Sequence[Any], ctx: LowerContext, out: list[int]) -> None:
    """Adds each leaf to the table, appending its index to `out` as it goes (so a failure is at
    leaf len(out)). A leaf whose parts -- its NamedSharding's mesh and spec objects, memory
    kind, shape, dtype and weak_type -- are those of a leaf before it is that leaf's entry,
    found with one lookup: a program's leaves are many, mostly equal, each with a fresh
    sharding. Any other leaf goes through the builder."""
    builder = ctx.builder
    by_parts, add, append = builder.leaves, builder.add, out.append
    for leaf in leaves:
        sharding = leaf.sharding
        if type(sharding) is not NamedSharding or type(mesh := sharding.mesh) is not Mesh:
            append(add(leaf))
            continue
        # The first leaf of these parts is kept by the builder, and with it its mesh and spec.
        spec, kind = sharding.spec, sharding.memory_kind
        parts = (id(mesh), spec_key(spec), kind, leaf.shape, leaf.dtype, leaf.weak_type)
        try:
            index = by_parts.get(parts)
        except TypeError:  # an unhashable part, which lowering refuses
            append(add(leaf))
            continue
        if index is None:
            index = by_parts[parts] = _add_leaf(leaf, sharding, ctx)
        append(index)


# ArraySpec entries lowered before, by what their bytes are made of: the sharding's index and
# entry bytes, the shape (of ints), the dtype, weak_type and the target. A program writes the
# same leaves on every call; each is lowered once. Bounded: a full cache is emptied.
_LOWERED: dict[tuple, bytes] = {}
_LOWERED_MAX = 4096


def _add_leaf(leaf: jax.ShapeDtypeStruct, sharding: NamedSharding, ctx: LowerContext) -> int:
    """A leaf not in this payload yet: its entry's bytes from a payload before, if any."""
    builder = ctx.builder
    dtype, shape = leaf.dtype, leaf.shape
    if dtype not in _DTYPES_TO_WIRE or not all(type(d) is int for d in shape):
        return builder.add(leaf)  # keys, strings, odd dims: lowered (or refused) each time
    at = builder.add(sharding)
    key = (at, builder.entry_bytes[at], shape, dtype, bool(leaf.weak_type))
    key += (builder.target_minor_version,)
    found = _LOWERED.get(key)
    if found is not None:
        builder.hold(leaf)  # add_leaves keys it by its mesh's and spec's ids
        return builder.add_entry_bytes(found)
    index = builder.add(leaf)
    if len(_LOWERED) >= _LOWERED_MAX:
        _LOWERED.clear()
    _LOWERED[key] = builder.entry_bytes[index]
    return index


def _add_sharding(sharding: Any, ctx: LowerContext) -> int | None:
    """A leaf's sharding added to the table (None: it has none); its index."""
    if sharding is not None and not isinstance(sharding, _SHARDING_TYPES):
        raise EncodeError(f"ShapeDtypeStruct sharding {type(sharding).__name__} is not supported")
    return None if sharding is None else ctx.builder.add(sharding)


def lower(spec: jax.ShapeDtypeStruct, ctx: LowerContext) -> table_pb2.ArraySpec:
    """The ArraySpec message; its sharding is added to the table first."""
    index = _add_sharding(spec.sharding, ctx)
    shape, dtype, weak_type = spec.shape, spec.dtype, bool(spec.weak_type)
    msg = table_pb2.ArraySpec()
    refuse(f"shape {shape}", shape_problem(shape))
    if index is not None:
        msg.sharding = index
        entry = ctx.builder.table.entries[index]
        kind = entry.WhichOneof("kind")
        problem = leaf_sharding_problem(kind, kind and getattr(entry, kind), len(shape))
        refuse("ShapeDtypeStruct sharding", problem)
    msg.shape.extend(int(d) for d in shape)
    wire = msg.dtype = dtype_to_wire(dtype)
    target = ctx.builder.target_minor_version
    refuse_newer(".dtype", f"dtype {DTYPE_NAMES[wire]}", DTYPE_SINCE[wire], target)
    msg.weak_type = weak_type
    if wire == table_pb2.D_TYPE_KEY:
        refuse_newer(".key_type", "key_type", KEY_TYPE_SINCE, target)
        msg.key_type.CopyFrom(lower_key_type(dtype))
    return msg


def check(msg: table_pb2.ArraySpec, ctx: CheckContext) -> None:
    """Checks the rank, the dimensions, the dtype and its version, the sharding reference, the
    key type, then the sharding's fit."""
    path, limits, minor = ctx.path, ctx.limits, ctx.minor_version
    check_dims(msg.shape, f"{path}.shape", limits.max_rank)
    dtype = msg.dtype
    if dtype not in DTYPES:
        what = f"dtype {dtype}"
        newer = newer_value(f"{path}.dtype", what, minor)
        raise newer or DecodeError(f"{path}.dtype", "unknown-enum", f"unknown {what}")
    require_version(f"{path}.dtype", DTYPE_NAMES[dtype], DTYPE_SINCE[dtype], minor)
    kind = sharding = None
    if msg.HasField("sharding"):
        refs = ctx.refs
        spath = f"{path}.sharding"
        s = refs.check(msg.sharding, spath, SHARDING, before=ctx.index, allow_unknown=True)
        kind = refs.kinds[s]
        sharding = None if kind is None else refs.message(s)
    has_key_type = msg.HasField("key_type")
    if has_key_type:
        check_key_type(msg.key_type, f"{path}.key_type", minor, limits.max_rank)
    raise_problem(f"{path}.key_type", key_type_problem(dtype, has_key_type))
    if msg.HasField("sharding"):
        raise_problem(f"{path}.sharding", leaf_sharding_problem(kind, sharding, len(msg.shape)))


def check_key_type(key_type: table_pb2.KeyType, path: str, minor: int, max_rank: int) -> None:
    """A key type at `path`: its version, its key shape's rank and dims, then its impl."""
    require_version(path, "key_type", KEY_TYPE_SINCE, minor)
    check_dims(key_type.key_shape, f"{path}.key_shape", max_rank)
    raise_problem(f"{path}.impl", impl_problem(key_type.impl))


def check_dims(dims: Sequence[int], path: str, max_rank: int) -> None:
    """A shape's rank is within the limit and its dims are sizes."""
    if len(dims) > max_rank:
        detail = f"rank {len(dims)} exceeds the limit of {max_rank}"
        raise DecodeError(path, "limit-exceeded", detail)
    raise_problem(path, shape_problem(dims))


def lift(msg: table_pb2.ArraySpec, ctx: LiftContext) -> jax.ShapeDtypeStruct:
    """The ShapeDtypeStruct on the lifted sharding, if any."""
    planned = plan(msg)
    if planned is not None:
        return lift_planned(planned, ctx)
    sharding = ctx.objects[msg.sharding] if msg.HasField("sharding") else None
    dtype = lift_key_dtype(msg.key_type)
    return jax.ShapeDtypeStruct(tuple(msg.shape), dtype, sharding=sharding, weak_type=msg.weak_type)


def plan(msg: table_pb2.ArraySpec) -> tuple | None:
    """(shape, dtype, sharding index or None, weak_type) of a checked entry; None for a key
    array, whose dtype is found in this process's registry each time."""
    dtype = DTYPES[msg.dtype]
    if dtype is None:
        return None
    sharding = msg.sharding if msg.HasField("sharding") else None
    return (tuple(msg.shape), dtype, sharding, msg.weak_type)


def lift_planned(plan: tuple, ctx: LiftContext) -> jax.ShapeDtypeStruct:
    """The ShapeDtypeStruct of a plan, on the lifted sharding, if any."""
    shape, dtype, at, weak_type = plan
    sharding = None if at is None else ctx.objects[at]
    if _SLOT_SETTERS and (sharding is None or type(sharding) in _CHECKED_SHARDINGS):
        return _checked_spec(shape, dtype, sharding, weak_type)
    return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding, weak_type=weak_type)


# What jax.ShapeDtypeStruct's constructor validates of a numpy dtype and a sharding of these
# types the check has proved (leaf_sharding_problem: a NamedSharding's spec is no longer than
# the rank; a single device fits any), and building one field by field costs a fifth of it.
# Only while JAX's fields are the ones known here; any other layout, and any other sharding
# (a GSPMDSharding's rank is JAX's to judge), goes through the constructor.
_SLOTS = ("shape", "dtype", "_sharding", "_dll", "weak_type", "manual_axis_type", "is_ref")
_SLOT_SETTERS = (
    tuple(getattr(TYPE, name).__set__ for name in _SLOTS)
    if tuple(getattr(TYPE, "__slots__", ())) == _SLOTS
    else ()
)
_CHECKED_SHARDINGS = frozenset({NamedSharding, SingleDeviceSharding})


def _checked_spec(
    shape: tuple[int, ...], dtype: np.dtype, sharding: Any, weak_type: bool
) -> jax.ShapeDtypeStruct:
    """The ShapeDtypeStruct its constructor makes of these checked parts."""
    spec = object.__new__(TYPE)
    shape_, dtype_, sharding_, dll, weak, manual, is_ref = _SLOT_SETTERS
    shape_(spec, shape)
    dtype_(spec, dtype)
    sharding_(spec, sharding)
    dll(spec, None)
    weak(spec, weak_type)
    manual(spec, None)
    is_ref(spec, False)
    return spec
