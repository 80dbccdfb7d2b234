"""Decoding: bytes -> the wire scan and the header -> check (messages only) -> lift.

Nothing is lifted before everything is checked: the table entry by entry,
then the payload's parts in field order. Lifting then builds JAX objects
from checked messages and the facts their checks returned. The public
functions mirror `_deserialize_specs` of
jax/experimental/colocated_python/serialization.py, what colocated Python
ships through IFRT's CustomCallProgram, and `_deserialize` of anything else
(a value, colocated.v1.2).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

import jax
from google.protobuf.message import Message
from jax import tree_util
from jax._src.lib import xla_client as xc

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.entries import treedef
from colocated_wire.entries.device_list import DEVICE_LIST
from colocated_wire.entries.tree_nodes import allow_pickles
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DEFAULT_LIMITS, DecodeLimits
from colocated_wire.payload import function, specs, value, writer
from colocated_wire.payload.header import parse_payload
from colocated_wire.provenance import Origin, remember
from colocated_wire.table.check_table import CheckContext, check_table
from colocated_wire.table.lift_table import LiftContext, lift_table


class Program(NamedTuple):
    fun: Callable
    in_treedef: tree_util.PyTreeDef
    in_leaves: tuple[jax.ShapeDtypeStruct, ...]
    out_treedef: tree_util.PyTreeDef | None
    out_leaves: tuple[jax.ShapeDtypeStruct, ...] | None
    devices: xc.DeviceList


def deserialize_specs(
    data: bytes,
    *,
    limits: DecodeLimits | None = None,
    max_minor_version: int | None = None,
    allow_pickle: bool = False,
) -> tuple[tree_util.PyTreeDef, tuple[jax.ShapeDtypeStruct, ...]]:
    """(treedef, leaves) of SpecsPayload bytes; raises DecodeError on bad bytes. What a tree
    holds pickled (1.1) is loaded only if `allow_pickle` (else a LiftError)."""
    checked, unknown_fields = checked_specs(data, limits, max_minor_version, allow_pickle)

    # The table's objects anew; the tree, immutable, as its checked shape last lifted it.
    msg, refs, shape, take = checked
    objects = lift_table(refs)
    tree = _lift_tree(shape, allow_pickle)
    leaves = take(objects)
    if unknown_fields:
        leaves = remember(leaves, Origin(msg, objects, (tree,)))
    return tree, leaves


def _check_specs(
    data: bytes, limits: DecodeLimits | None, max_minor_version: int | None, allow_pickle: bool
) -> tuple[CheckedSpecs, bool]:
    """Every check of SpecsPayload bytes, and whether they hold fields of a newer version."""
    msg, unknown_fields, refs, at = _checked_table(
        data,
        payload_pb2.SpecsPayload,
        payload_pb2.PAYLOAD_KIND_SPECS,
        limits,
        max_minor_version,
        allow_pickle,
    )
    shape = specs.check(_part(msg, "specs"), at("specs"))
    take = _getter(specs.leaf_refs(msg.specs, shape))
    return CheckedSpecs(msg, refs, shape, take), unknown_fields


def _lift_tree(shape: treedef.TreeShape, allow_pickle: bool) -> tree_util.PyTreeDef:
    """A checked tree's PyTreeDef; the pickles it holds are loaded only if `allow_pickle`."""
    if not shape.pickled:
        return treedef.lift_shape(shape)
    with allow_pickles(allow_pickle):
        return treedef.lift_shape(shape)


class CheckedSpecs(NamedTuple):
    """A specs payload that passed every check: what lifting it again needs."""

    msg: payload_pb2.SpecsPayload
    refs: Any
    shape: Any
    leaves: Callable[[list[Any]], tuple[Any, ...]]  # the table's objects to the leaves


# (bytes, limits, max_minor_version, allow_pickle): how a payload was read.
_Key = tuple[bytes, DecodeLimits | None, int | None, bool]

# Specs payloads checked before, by their bytes and how they were read: a program sends the
# same specs on every call, and checking is a pure function of these. Only the objects are
# lifted again. Bounded: payloads past _CACHED_PAYLOAD_BYTES are not kept, a cache that would
# pass _CACHED_PAYLOADS entries or _CACHE_BUDGET bytes is emptied (clear() is safe under
# threads; the byte count is a bound, not an account), and one with fields of a newer version
# is not kept. The default limits are keyed as None: hashing a DecodeLimits costs more than the
# rest of the lookup.
_CHECKED_SPECS: dict[_Key, CheckedSpecs] = {}
_CACHED_PAYLOADS = 64
_CACHED_PAYLOAD_BYTES = 1 << 18
_CACHE_BUDGET = 1 << 22
_cached_bytes = 0


def _limits_key(limits: DecodeLimits | None) -> DecodeLimits | None:
    """The limits as the cache's key holds them: None for the default ones (equal limits, one
    entry, as before)."""
    return None if limits is None or limits == DEFAULT_LIMITS else limits


def checked_specs(
    data: bytes,
    limits: DecodeLimits | None = None,
    max_minor_version: int | None = None,
    allow_pickle: bool = False,
) -> tuple[CheckedSpecs, bool]:
    """SpecsPayload bytes checked as deserialize_specs checks them (and the diff reads them:
    diff/read_side.py): as checked before, or checked now and kept. Returns them and whether
    they hold fields of a newer version (such a payload is not kept); raises DecodeError."""
    key = None
    if type(data) is bytes and len(data) <= _CACHED_PAYLOAD_BYTES:
        key = (data, _limits_key(limits), max_minor_version, allow_pickle)
        checked = _CHECKED_SPECS.get(key)
        if checked is not None:
            return checked, False
    checked, unknown_fields = _check_specs(data, limits, max_minor_version, allow_pickle)
    if key is not None and not unknown_fields:
        _keep(key, checked)
    return checked, unknown_fields


def _keep(key: _Key, checked: CheckedSpecs) -> None:
    """Keeps a checked payload, emptying the cache first if it would pass its bounds."""
    global _cached_bytes
    size = len(key[0])
    if len(_CHECKED_SPECS) >= _CACHED_PAYLOADS or _cached_bytes + size > _CACHE_BUDGET:
        _CHECKED_SPECS.clear()
        _cached_bytes = 0
    _CHECKED_SPECS[key] = checked
    _cached_bytes += size


def _getter(refs: Sequence[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The objects at `refs`, as a tuple, in one C call."""
    if len(refs) == 0:
        return lambda objects: ()
    if len(refs) == 1:
        only = refs[0]
        return lambda objects: (objects[only],)
    return operator.itemgetter(*refs)


def deserialize_program(
    data: bytes,
    *,
    allow_pickle: bool = False,
    allowed_modules: Collection[str] | None = None,
    allowed_functions: Collection[str] | None = None,
    limits: DecodeLimits | None = None,
    max_minor_version: int | None = None,
) -> Program:
    """The Program of ProgramPayload bytes.

    A pickled function (and what the specs' trees hold pickled) is unpickled only if
    `allow_pickle`; otherwise `fun`
    is an `UnloadedFunction` that raises when called. A function by name
    resolves only if `allowed_modules` names its module or `allowed_functions`
    its qualified name (`module.qualname`); without either, none does
    (FunctionNotAllowedError, a LiftError).
    """
    msg, unknown_fields, refs, at = _checked_table(
        data,
        payload_pb2.ProgramPayload,
        payload_pb2.PAYLOAD_KIND_PROGRAM,
        limits,
        max_minor_version,
        allow_pickle,
    )
    # The parts in field order: devices, function, input specs, output specs.
    if not msg.HasField("devices"):
        raise DecodeError("devices", "missing", "a program needs its devices")
    refs.check(msg.devices, "devices", DEVICE_LIST)
    function.check(msg.function, at("function"))
    in_shape = specs.check(_part(msg, "input_specs"), at("input_specs"))
    out_shape = None
    if msg.HasField("output_specs"):
        out_shape = specs.check(msg.output_specs, at("output_specs"))

    objects = lift_table(refs)
    with allow_pickles(allow_pickle):
        in_treedef, in_leaves = specs.lift(msg.input_specs, LiftContext(objects, in_shape))
        out_treedef = out_leaves = None
        if out_shape is not None:
            out_ctx = LiftContext(objects, out_shape)
            out_treedef, out_leaves = specs.lift(msg.output_specs, out_ctx)
    named = msg.header.writer if msg.header.HasField("writer") else None
    fun = function.lift(
        msg.function,
        LiftContext(objects, None),
        allow_pickle,
        allowed_modules,
        allowed_functions,
        named,
    )
    devices = objects[msg.devices]
    if unknown_fields:
        returned = (fun, in_treedef, out_treedef, out_leaves, devices)
        in_leaves = remember(in_leaves, Origin(msg, objects, returned))
    return Program(fun, in_treedef, in_leaves, out_treedef, out_leaves, devices)


def deserialize_value(
    data: bytes,
    *,
    allow_pickle: bool = False,
    allowed_modules: Collection[str] | None = None,
    allowed_functions: Collection[str] | None = None,
    limits: DecodeLimits | None = None,
    max_minor_version: int | None = None,
) -> Any:
    """The value of ValuePayload bytes (colocated.v1.2), each shared object one instance.

    What arrived pickled (a leaf, or what its tree holds) is unpickled only if
    `allow_pickle`; otherwise it is a PickleNotAllowedError (a LiftError). A
    function by name resolves only if `allowed_modules` names its module or
    `allowed_functions` its qualified name (FunctionNotAllowedError otherwise).
    A value payload needs 1.2: its header, and a reader agreed on an older
    version, refuse it (payload/header.py).
    """
    msg, _, refs, at = _checked_table(
        data,
        payload_pb2.ValuePayload,
        payload_pb2.PAYLOAD_KIND_VALUE,
        limits,
        max_minor_version,
        allow_pickle,
    )
    minor = msg.header.minor_version
    shape = value.check(_part(msg, "value"), at("value"))

    objects = lift_table(refs)
    lift_ctx = LiftContext(objects, shape)
    return value.lift(msg.value, lift_ctx, allow_pickle, allowed_modules, allowed_functions, minor)


def _checked_table(
    data: bytes,
    message_type: type,
    kind: int,
    limits: DecodeLimits | None,
    max_minor_version: int | None,
    allow_pickle: bool,
) -> tuple[Any, bool, Any, Callable[[str], CheckContext]]:
    """The first steps every payload takes: scan and parse (header first), refuse pickles this
    process cannot read if it would unpickle them, then check the table. Returns the message,
    whether it has unknown fields, the table's references, and the check context of a part at
    its path."""
    limits = limits or DEFAULT_LIMITS
    msg, unknown_fields = parse_payload(data, message_type, kind, limits, max_minor_version)
    if allow_pickle:
        writer.check_pickles(msg)
    minor = msg.header.minor_version
    refs = check_table(msg.table if msg.HasField("table") else None, limits, minor)

    def at(path: str) -> CheckContext:
        return CheckContext(refs.table_size, path, refs, limits, minor)

    return msg, unknown_fields, refs, at


def _part(msg: Message, field: str) -> Message | None:
    """A message field, or None when it is absent."""
    return getattr(msg, field) if msg.HasField(field) else None
