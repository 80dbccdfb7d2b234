"""SingleDeviceSharding entries: one device id and a memory kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jax.sharding import SingleDeviceSharding

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.devices import device_for_id
from colocated_wire.entries.device_list import MAX_DEVICE_ID
from colocated_wire.entries.memory_kind import (
    check_memory_kind,
    lift_memory_kind,
    lower_memory_kind,
)
from colocated_wire.entries.problem import Problem, raise_problem, refuse

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext
    from colocated_wire.table.lower_table import LowerContext

TYPE = SingleDeviceSharding


def device_id_problem(device_id: int) -> Problem | None:
    """A device id is an int32."""
    if 0 <= device_id <= MAX_DEVICE_ID:
        return None
    return Problem("invalid-value", f"device id {device_id} is not an int32")


def lower(sharding: SingleDeviceSharding, ctx: LowerContext) -> table_pb2.SingleDeviceSharding:
    """The SingleDeviceSharding message."""
    (device,) = sharding.device_set
    refuse("SingleDeviceSharding", device_id_problem(device.id))
    msg = table_pb2.SingleDeviceSharding(device_id=device.id)
    kind = lower_memory_kind(sharding, device)
    if kind is not None:
        msg.memory_kind = kind
    return msg


def check(msg: table_pb2.SingleDeviceSharding, ctx: CheckContext) -> None:
    """Checks the device id, then the memory kind."""
    raise_problem(f"{ctx.path}.device_id", device_id_problem(msg.device_id))
    check_memory_kind(msg, ctx.path)


def lift(msg: table_pb2.SingleDeviceSharding, ctx: LiftContext) -> SingleDeviceSharding:
    """The SingleDeviceSharding on this process's device of that id."""
    device = device_for_id(msg.device_id)
    return SingleDeviceSharding(device, memory_kind=lift_memory_kind(msg, device))
