"""GetTopology: the worker's JAX job, its process count, this worker's process index, and
every device of the job in jax.devices() order (the same order on every process).

A client that drives many workers as one job checks with it that they are one job: the
same devices everywhere, and each process exactly once. A relay (worker/relay.py) checks with
it that a child it is told to reach is a process of its own job before it forwards anything.
"""

from __future__ import annotations

import functools

import jax
from google.protobuf.message import DecodeError

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker.errors import Refused


@functools.cache
def topology() -> service_pb2.GetTopologyResponse:
    """This process's answer, built once (a job's devices are fixed once JAX has started)."""
    response = service_pb2.GetTopologyResponse(
        process_count=jax.process_count(), process_index=jax.process_index()
    )
    for device in jax.devices():
        response.devices.add(
            id=device.id,
            process_index=device.process_index,
            platform=device.platform,
            kind=device.device_kind,
            coords=list(getattr(device, "coords", None) or ()),
            core_on_chip=getattr(device, "core_on_chip", None) or 0,
        )
    return response


def get_topology(
    request: service_pb2.GetTopologyRequest | Refused, context
) -> service_pb2.GetTopologyResponse:
    """The servicer's GetTopology (worker_service.ColocatedWorker)."""
    if isinstance(request, Refused):
        context.abort(request.code, request.message)
    return topology()


def not_of_this_job(answer: bytes) -> str | None:
    """What tells a peer's GetTopology answer from this process's job (another process count,
    other devices, or no answer at all), or None when the peer is a process of it."""
    try:
        peer = service_pb2.GetTopologyResponse.FromString(answer)
    except DecodeError as e:
        return f"its GetTopology answer does not decode: {e}"
    own = topology()
    if peer.process_count != own.process_count:
        return (
            f"it is in a job of {peer.process_count} processes,"
            f" this worker in one of {own.process_count}"
        )
    if peer.process_index >= own.process_count:
        return f"it says it is process {peer.process_index} of {own.process_count}"
    # Fields of a newer schema are not the job's devices: what this version knows is compared.
    peer.DiscardUnknownFields()
    peer.process_index = own.process_index
    if peer.SerializeToString(deterministic=True) != _own_bytes():
        return f"it lists other devices ({len(peer.devices)}, this job {len(own.devices)})"
    return None


@functools.cache
def _own_bytes() -> bytes:
    return topology().SerializeToString(deterministic=True)
