"""Encoding: JAX objects -> lowered into one table and the payload's parts -> canonical bytes.

The public functions mirror `_serialize_specs` of
jax/experimental/colocated_python/serialization.py, what colocated Python
ships through IFRT's CustomCallProgram (fun, in specs, out specs, devices),
and `_serialize` of anything else (a value, colocated.v1.2).
Writing always uses `SerializeToString(deterministic=True)`: the Python
runtime writes known fields in field-number order and repeated scalars
packed, which with the lowering's canonical choices gives canonical bytes.
The very objects a decode returned give back a payload of a newer minor
version with all it held (provenance.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
from google.protobuf.message import Message
from jax import tree_util
from jax._src.lib import xla_client as xc

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.entries.tree_nodes import allow_pickles
from colocated_wire.errors import EncodeError
from colocated_wire.functions import UnloadedFunction
from colocated_wire.payload import function, specs, value
from colocated_wire.payload.header import header
from colocated_wire.payload.writer import AUTO, Writer, header_writer
from colocated_wire.provenance import Origin, carry, kept_indices, origin_of, seeded_table
from colocated_wire.schema_version import check_target, header_minor_version, refuse_newer
from colocated_wire.table.lower_table import LowerContext, TableBuilder


def serialize_specs(
    treedef: tree_util.PyTreeDef,
    leaves: Sequence[jax.ShapeDtypeStruct],
    *,
    target_minor_version: int | None = None,
    allow_pickle: bool = False,
    writer: Writer | Literal["auto"] | None = AUTO,
) -> bytes:
    """Canonical SpecsPayload bytes for a pytree of ShapeDtypeStructs, readable by a reader of
    `target_minor_version` (default: the latest); anything newer is an EncodeError. What a
    tree holds without a wire form (1.1) is pickled only if `allow_pickle`. The header names
    `writer` (1.3; by default this process, when the payload holds a pickle)."""
    with allow_pickles(allow_pickle):
        return _serialize_specs(treedef, leaves, target_minor_version, writer)


def _serialize_specs(
    treedef: tree_util.PyTreeDef,
    leaves: Sequence[jax.ShapeDtypeStruct],
    target_minor_version: int | None,
    writer: Writer | Literal["auto"] | None,
) -> bytes:
    target = check_target(target_minor_version)
    origin = origin_of(leaves, treedef)
    minor = header_minor_version(target_minor_version, _carried(origin))
    builder = seeded_table(origin, target)
    message = specs.lower(treedef, leaves, LowerContext(builder))
    if kept_indices(origin, builder):  # carried: its tree as written (1.1 may shorten it)
        message = origin.message.specs
    payload = payload_pb2.SpecsPayload(
        header=header(payload_pb2.PAYLOAD_KIND_SPECS, minor), table=builder.table, specs=message
    )
    return _written(carry(origin, payload, builder), writer, origin)


def serialize_program(
    fun: Callable,
    in_treedef: tree_util.PyTreeDef,
    in_leaves: Sequence[jax.ShapeDtypeStruct],
    out_treedef: tree_util.PyTreeDef | None,
    out_leaves: Sequence[jax.ShapeDtypeStruct] | None,
    devices: xc.DeviceList | Sequence[jax.Device],
    *,
    target_minor_version: int | None = None,
    allow_pickle: bool = False,
    writer: Writer | Literal["auto"] | None = AUTO,
) -> bytes:
    """Canonical ProgramPayload bytes. Output specs may be None (unknown). The payload is for
    a reader of `target_minor_version` (default: the latest); anything newer is an EncodeError.
    What the specs' trees hold without a wire form (1.1) is pickled only if `allow_pickle`.
    The header names `writer` (1.3; by default this process, when the payload holds a pickle).

    The table is filled in the order of docs/wire-format.md: the devices, the
    pickled function's refs, the input leaves, the output leaves.
    """
    with allow_pickles(allow_pickle):
        return _serialize_program(
            fun,
            in_treedef,
            in_leaves,
            out_treedef,
            out_leaves,
            devices,
            target_minor_version,
            writer,
        )


def _serialize_program(
    fun: Callable,
    in_treedef: tree_util.PyTreeDef,
    in_leaves: Sequence[jax.ShapeDtypeStruct],
    out_treedef: tree_util.PyTreeDef | None,
    out_leaves: Sequence[jax.ShapeDtypeStruct] | None,
    devices: xc.DeviceList | Sequence[jax.Device],
    target_minor_version: int | None,
    writer: Writer | payload_pb2.Writer | Literal["auto"] | None,
) -> bytes:
    if (out_treedef is None) != (out_leaves is None):
        raise EncodeError("out_treedef and out_leaves are both given or both None")
    if devices is None:
        raise EncodeError("a program needs its devices")
    target = check_target(target_minor_version)
    if writer == AUTO and isinstance(fun, UnloadedFunction) and fun.pickle:
        writer = fun.writer  # the pickle's own writer, or none: this process did not write it
    origin = origin_of(in_leaves, fun, in_treedef, out_treedef, out_leaves, devices)
    minor = header_minor_version(target_minor_version, _carried(origin))
    builder = seeded_table(origin, target)
    ctx = LowerContext(builder)
    msg = payload_pb2.ProgramPayload(header=header(payload_pb2.PAYLOAD_KIND_PROGRAM, minor))
    msg.devices = builder.add_devices(devices)
    if origin is not None:  # the decoded function, as it came (its refs keep their indices)
        msg.function.CopyFrom(origin.message.function)
    else:
        msg.function.CopyFrom(function.lower(fun, ctx))
    msg.input_specs.CopyFrom(specs.lower(in_treedef, in_leaves, ctx, "input_specs"))
    if out_treedef is not None:
        msg.output_specs.CopyFrom(specs.lower(out_treedef, out_leaves, ctx, "output_specs"))
    if kept_indices(origin, builder):  # carried: its trees as written (1.1 may shorten them)
        msg.input_specs.CopyFrom(origin.message.input_specs)
        if out_treedef is not None:
            msg.output_specs.CopyFrom(origin.message.output_specs)
    msg.table.CopyFrom(builder.table)
    msg.table.SetInParent()
    return _written(carry(origin, msg, builder), writer, origin)


def serialize_value(
    obj: Any,
    *,
    allow_pickle: bool = False,
    target_minor_version: int | None = None,
    writer: Writer | Literal["auto"] | None = AUTO,
) -> bytes:
    """Canonical ValuePayload bytes (colocated.v1.2) for anything else JAX's colocated Python
    serializes (a Mesh, shardings, dtypes, a function, ...), so that each shared object is
    written once and nothing is pickled that has a form of its own. For a reader of
    `target_minor_version` (default: the latest; before 1.2, an EncodeError). What has no
    form but a pickle is pickled only if `allow_pickle`. The header names `writer` (1.3; by
    default this process, when the payload holds a pickle)."""
    with allow_pickles(allow_pickle):
        return _serialize_value(obj, target_minor_version, writer)


def _serialize_value(
    obj: Any, target_minor_version: int | None, writer: Writer | Literal["auto"] | None
) -> bytes:
    target = check_target(target_minor_version)
    refuse_newer("header.kind", "a value payload", value.VALUE_SINCE, target)
    builder = TableBuilder(target)
    message, carried = value.lower(obj, LowerContext(builder))
    minor = header_minor_version(target_minor_version, carried)
    payload = payload_pb2.ValuePayload(
        header=header(payload_pb2.PAYLOAD_KIND_VALUE, minor), table=builder.table, value=message
    )
    payload.table.SetInParent()  # a value without table objects has an empty table
    return _written(payload, writer, None)


def _written(
    payload: Message,
    writer: Writer | payload_pb2.Writer | Literal["auto"] | None,
    origin: Origin | None,
) -> bytes:
    """The payload's bytes, its header naming its writer: a carried payload's own when the
    default is asked for and it named one (the objects are as decoded), else header_writer's."""
    carried = origin is not None and origin.message.header.HasField("writer")
    if writer == AUTO and carried:
        written = origin.message.header.writer
    else:
        written = header_writer(writer, payload, payload.header.minor_version)
    if written is not None:
        payload.header.writer.CopyFrom(written)
    return payload.SerializeToString(deterministic=True)


def _carried(origin: Origin | None) -> int:
    """The minor version of the decoded payload whose objects are written again (0: none)."""
    return 0 if origin is None else origin.message.header.minor_version
