"""ProgramPayload: the function, its input/output specs and its devices.

Everything shares one table, walked in the order of docs/wire-format.md:
the devices, the pickled function's refs, the input leaves, the output
leaves. The public functions mirror what colocated Python ships through
IFRT's CustomCallProgram (fun, in specs, out specs, devices).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

import jax
from jax import tree_util
from jax._src.lib import xla_client as xc

from colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.functions import UnloadedFunction, name_of, resolve_by_name
from colocated_wire.lift import lift_table
from colocated_wire.limits import DEFAULT_LIMITS, DecodeLimits
from colocated_wire.lower import TableBuilder
from colocated_wire.payload import header, parse_payload, to_bytes
from colocated_wire.pickling import pickle_function, unpickle_function
from colocated_wire.provenance import Origin, carry, origin_of, remember, seeded_table
from colocated_wire.specs import lift_specs, lower_specs, validate_specs
from colocated_wire.validate import check_ref, validate_table

_DEVICE_LIST = frozenset({"device_list"})
_ANY_SHARED = frozenset(
    {
        "device_list",
        "mesh",
        "named_sharding",
        "single_device_sharding",
        "gspmd_sharding",
        "array_spec",
    }
)


class Program(NamedTuple):
    fun: Callable
    in_treedef: tree_util.PyTreeDef
    in_leaves: tuple[jax.ShapeDtypeStruct, ...]
    out_treedef: tree_util.PyTreeDef | None
    out_leaves: tuple[jax.ShapeDtypeStruct, ...] | None
    devices: xc.DeviceList


def serialize_program(
    fun: Callable,
    in_treedef: tree_util.PyTreeDef,
    in_leaves: Sequence[jax.ShapeDtypeStruct],
    out_treedef: tree_util.PyTreeDef | None,
    out_leaves: Sequence[jax.ShapeDtypeStruct] | None,
    devices: xc.DeviceList | Sequence[jax.Device],
) -> bytes:
    """Canonical ProgramPayload bytes. Output specs may be None (unknown)."""
    if (out_treedef is None) != (out_leaves is None):
        raise EncodeError("out_treedef and out_leaves are both given or both None")
    if devices is None:
        raise EncodeError("a program needs its devices")
    origin = origin_of(in_leaves, fun, in_treedef, out_treedef, out_leaves, devices)
    builder = seeded_table(origin)
    msg = payload_pb2.ProgramPayload(header=header(payload_pb2.PAYLOAD_KIND_PROGRAM))
    msg.devices = builder.add_devices(devices)
    if origin is not None:  # the decoded function, as it came (its refs keep their indices)
        msg.function.CopyFrom(origin.message.function)
    else:
        _lower_function(fun, builder, msg.function)
    msg.input_specs.CopyFrom(lower_specs(builder, in_treedef, in_leaves))
    if out_treedef is not None:
        msg.output_specs.CopyFrom(lower_specs(builder, out_treedef, out_leaves))
    msg.table.CopyFrom(builder.table)
    msg.table.SetInParent()
    return to_bytes(carry(origin, msg, builder))


def _lower_function(fun: Callable, builder: TableBuilder, out: payload_pb2.Function) -> None:
    if isinstance(fun, UnloadedFunction):
        # Written back as it came: an unknown kind's bytes, or the pickle and its refs.
        if fun.unknown:
            out.MergeFromString(fun.unknown)
            return
        out.pickled.pickle = fun.pickle
        out.pickled.refs.extend(builder.add(obj) for obj in fun.shared)
        out.pickled.SetInParent()
        return
    name = name_of(fun)
    if name is not None:
        out.by_name.module, out.by_name.qualname = name
        return
    data, refs = pickle_function(fun, builder)
    out.pickled.pickle = data
    out.pickled.refs.extend(refs)
    out.pickled.SetInParent()


def deserialize_program(
    data: bytes,
    *,
    allow_pickle: bool = False,
    allowed_modules: Collection[str] | None = None,
    limits: DecodeLimits | None = None,
    max_minor_version: int | None = None,
) -> Program:
    """The Program of ProgramPayload bytes.

    A pickled function is unpickled only if `allow_pickle`; otherwise `fun`
    is an `UnloadedFunction` that raises when called. A function by name is
    imported only from `allowed_modules`; without them, only a module already
    imported resolves (else LiftError).
    """
    limits = limits or DEFAULT_LIMITS
    msg, unknown_fields = parse_payload(
        data,
        payload_pb2.ProgramPayload,
        payload_pb2.PAYLOAD_KIND_PROGRAM,
        limits,
        max_minor_version,
    )
    vt = validate_table(msg.table if msg.HasField("table") else None, limits)
    if not msg.HasField("devices"):
        raise DecodeError("devices", "missing", "a program needs its devices")
    check_ref(msg.devices, "devices", vt, _DEVICE_LIST)
    case = msg.function.WhichOneof("function")
    if case == "by_name":
        for field in ("module", "qualname"):
            if not getattr(msg.function.by_name, field):
                raise DecodeError(f"function.by_name.{field}", "missing", f"{field} is required")
    elif case == "pickled":
        for k, ref in enumerate(msg.function.pickled.refs):
            check_ref(ref, f"function.pickled.refs[{k}]", vt, _ANY_SHARED, allow_unknown=True)
    elif not msg.function.ByteSize():
        # No known kind and no fields of a newer one: nothing to run.
        raise DecodeError("function", "missing", "no known function form (by_name or pickled)")
    if not msg.HasField("input_specs"):
        raise DecodeError("input_specs", "missing", "a program needs its input specs")
    in_shape = validate_specs(msg.input_specs, "input_specs", vt, limits)
    out_shape = None
    if msg.HasField("output_specs"):
        out_shape = validate_specs(msg.output_specs, "output_specs", vt, limits)

    objects = lift_table(vt)
    in_treedef, in_leaves = lift_specs(msg.input_specs, in_shape, objects)
    out_treedef = out_leaves = None
    if out_shape is not None:
        out_treedef, out_leaves = lift_specs(msg.output_specs, out_shape, objects)
    fun = _lift_function(msg.function, case, objects, allow_pickle, allowed_modules)
    devices = objects[msg.devices]
    if unknown_fields:
        returned = (fun, in_treedef, out_treedef, out_leaves, devices)
        in_leaves = remember(in_leaves, Origin(msg, objects, returned))
    return Program(fun, in_treedef, in_leaves, out_treedef, out_leaves, devices)


def _lift_function(fn, case, objects, allow_pickle: bool, allowed_modules) -> Any:
    if case == "by_name":
        return resolve_by_name(fn.by_name.module, fn.by_name.qualname, allowed_modules)
    if case == "pickled":
        shared = tuple(objects[r] for r in fn.pickled.refs)
        if not allow_pickle:
            return UnloadedFunction(
                "the function is pickled and deserialize_program was called without"
                " allow_pickle=True",
                fn.pickled.pickle,
                shared,
            )
        return unpickle_function(fn.pickled.pickle, shared)
    return UnloadedFunction(
        "the payload's function is of a kind this version does not know",
        unknown=fn.SerializeToString(deterministic=True),
    )
