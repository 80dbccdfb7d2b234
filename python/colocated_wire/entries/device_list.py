"""DeviceList entries: global device ids, as iota, plain or delta, whichever is smallest.

Lowering tries the three encodings and keeps the one whose `DeviceList`
message is the shortest (ties: iota, plain, delta), so a regular order of a
million devices is a few bytes and an irregular one costs no more than
listing its ids. Checking sizes a list before it materializes the ids, and
returns them (int64) as the facts that lifting maps to this process's devices.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import jax
import numpy as np
from jax._src.lib import xla_client as xc

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.devices import devices_for_ids, ids_key, mesh_holding
from colocated_wire.entries.problem import Problem, raise_problem, refuse
from colocated_wire.errors import DecodeError
from colocated_wire.iota import find_iota, materialize_iota
from colocated_wire.limits import DecodeLimits

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = xc.DeviceList
MAX_DEVICE_ID = 2**31 - 1  # JAX and IFRT device ids are int32
# A reference to a device list.
DEVICE_LIST = frozenset({"device_list"})


def first_repeat(ids: np.ndarray) -> int | None:
    """The position of the first id seen before, or None."""
    if not has_repeat(ids):
        return None
    _, first = np.unique(ids, return_index=True)
    seen = np.zeros(len(ids), dtype=bool)
    seen[first] = True
    return int(np.flatnonzero(~seen)[0])


def has_repeat(ids: np.ndarray) -> bool:
    """Whether an id appears twice: a mark per id where the ids are dense, else a sort."""
    if len(ids) < 2:
        return False
    low, top = int(ids.min()), int(ids.max())
    if top - low < 8 * len(ids) + 1024:
        marks = np.zeros(top - low + 1, dtype=bool)
        marks[ids - low if low else ids] = True
        return int(np.count_nonzero(marks)) != len(ids)
    ordered = np.sort(ids)
    return bool((ordered[1:] == ordered[:-1]).any())


def distinct_ids_problem(ids: np.ndarray, stop: int, what: str) -> Problem | None:
    """Ids are in [0, stop) first, then distinct; `at` is the position."""
    bad = np.flatnonzero((ids < 0) | (ids >= stop))
    if len(bad):
        i = int(bad[0])
        return Problem("invalid-value", f"{what} {ids[i]} is not in [0, {stop})", f"[{i}]")
    i = first_repeat(ids)
    if i is not None:
        return Problem("duplicate-device", f"{what} {ids[i]} appears twice", f"[{i}]")
    return None


def device_ids_problem(ids: np.ndarray) -> Problem | None:
    """Device ids are int32s first, then distinct; `at` is the position."""
    return distinct_ids_problem(ids, MAX_DEVICE_ID + 1, "device id")


def lower(devices: Iterable[jax.Device], ctx: LowerContext) -> table_pb2.DeviceList:
    """The DeviceList message of a DeviceList (or any iterable of devices)."""
    return lower_device_ids([d.id for d in devices])


def lower_device_ids(ids: Iterable[int] | np.ndarray) -> table_pb2.DeviceList:
    """The canonical DeviceList message for these global device ids."""
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    refuse("device list", device_ids_problem(arr))
    candidates = []
    if len(arr):
        offset = int(arr.min())
        iota = find_iota(arr - offset)
        if iota is not None:
            msg = table_pb2.DeviceList()
            msg.iota.offset = offset
            msg.iota.iota.reshape_dims.extend(iota[0])
            msg.iota.iota.transpose_perm.extend(iota[1])
            msg.iota.iota.SetInParent()
            # Plain and delta cost at least one byte per id: a smaller iota wins.
            if msg.ByteSize() < len(arr):
                return msg
            candidates.append(msg)
    plain = table_pb2.DeviceList()
    plain.plain.ids.extend(arr.tolist())
    plain.plain.SetInParent()
    if len(arr) == 0:
        return plain
    delta = table_pb2.DeviceList()
    delta.delta.deltas.extend(np.diff(arr, prepend=0).tolist())
    delta.delta.SetInParent()
    candidates += [plain, delta]
    return min(candidates, key=lambda m: m.ByteSize())  # min keeps the first on ties


def check(msg: table_pb2.DeviceList, ctx: CheckContext) -> np.ndarray:
    """Checks a DeviceList message, sizing an iota before writing it out; its facts are the
    ids (int64)."""
    path, limits = ctx.path, ctx.limits
    case = msg.WhichOneof("ids")
    if case == "iota":
        ipath = f"{path}.iota"
        if not msg.iota.HasField("iota"):
            raise DecodeError(f"{ipath}.iota", "missing", "an iota device list needs its iota")
        io = msg.iota.iota
        size = check_iota_layout(io, f"{ipath}.iota", limits)
        if size > limits.max_devices_per_list:
            raise DecodeError(
                f"{ipath}.iota.reshape_dims",
                "limit-exceeded",
                f"{size} devices exceed the limit of {limits.max_devices_per_list}",
            )
        if size and msg.iota.offset + size - 1 > MAX_DEVICE_ID:
            raise DecodeError(f"{ipath}.offset", "invalid-value", "device ids exceed 2**31 - 1")
        # Distinct and in range by construction.
        return materialize_iota(list(io.reshape_dims), list(io.transpose_perm)) + msg.iota.offset
    if case == "plain":
        cpath = f"{path}.plain.ids"
        count = len(msg.plain.ids)
    elif case == "delta":
        cpath = f"{path}.delta.deltas"
        count = len(msg.delta.deltas)
    else:
        raise DecodeError(f"{path}.ids", "missing", "a device list has no ids")
    if count > limits.max_devices_per_list:
        raise DecodeError(
            cpath,
            "limit-exceeded",
            f"{count} devices exceed the limit of {limits.max_devices_per_list}",
        )
    if case == "plain":
        ids = np.asarray(msg.plain.ids, dtype=np.int64)
    else:
        ids = np.cumsum(np.asarray(msg.delta.deltas, dtype=np.int64))
    raise_problem(cpath, device_ids_problem(ids))
    return ids


def check_iota_layout(io: table_pb2.Iota, path: str, limits: DecodeLimits) -> int:
    """An iota's rank is within the limits and its perm a permutation; returns its size."""
    dims, perm = io.reshape_dims, io.transpose_perm
    if len(dims) > limits.max_rank:
        raise DecodeError(
            f"{path}.reshape_dims",
            "limit-exceeded",
            f"{len(dims)} dims exceed the limit of {limits.max_rank}",
        )
    if len(dims) != len(perm):
        raise DecodeError(
            f"{path}.transpose_perm",
            "invalid-iota",
            f"{len(perm)} perm entries for {len(dims)} reshape dims",
        )
    if sorted(perm) != list(range(len(perm))):
        raise DecodeError(
            f"{path}.transpose_perm", "invalid-iota", f"{list(perm)} is not a permutation"
        )
    return int(np.prod(list(dims), dtype=object))


def lift(msg: table_pb2.DeviceList, ctx: LiftContext) -> xc.DeviceList:
    """This process's devices of the checked ids: the device list of a mesh lifted before
    with these devices, unless this table already holds it, else a new one."""
    return lift_planned((), ctx)


def plan(msg: table_pb2.DeviceList) -> tuple:
    """Nothing: a device list is lifted from its check's facts, its ids."""
    return ()


def lift_planned(plan: tuple, ctx: LiftContext) -> xc.DeviceList:
    """The device list of the checked ids (see `lift`)."""
    ids = ctx.facts
    mesh = mesh_holding(ids_key(ids))
    if mesh is not None:
        found = mesh._internal_device_list  # JAX's own, made once per mesh
        if id(found) not in ctx.lifted_ids:  # each entry of a table is its own object
            return found
    return xc.DeviceList(tuple(devices_for_ids(ids)))
