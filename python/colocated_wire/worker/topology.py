"""GetTopology: the worker's JAX job, its process count, this worker's process index, and
every device of the job in jax.devices() order (the same order on every process).

A client that drives many workers as one job checks with it that they are one job: the
same devices everywhere, and each process exactly once.
"""

from __future__ import annotations

import functools

import jax

from colocated_wire._gen.colocated.v1 import service_pb2


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
        )
    return response


def get_topology(
    request: service_pb2.GetTopologyRequest, context
) -> service_pb2.GetTopologyResponse:
    """The servicer's GetTopology (worker_service.ColocatedWorker)."""
    return topology()
