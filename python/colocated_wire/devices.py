"""Global device ids to this process's JAX devices.

A device travels as its integer `id`. A worker maps it back to one of its
own CPU devices exactly as jax/experimental/colocated_python/serialization.py
does: CPU devices of the default backend first, then CPU devices of any
backend. An id this process lacks is a `LiftError` naming the id.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import jax
import numpy as np
from jax._src import xla_bridge as xb

from colocated_wire.errors import LiftError


@functools.cache
def cpu_device_map() -> dict[int, jax.Device]:
    """Id -> CPU device, computed once per process (devices are fixed)."""
    found: dict[int, jax.Device] = {}

    def collect(devices: Iterable[jax.Device]) -> None:
        for d in devices:
            if d.device_kind == "cpu":
                if d.id in found:
                    raise LiftError(f"two CPU devices have id {d.id}: {found[d.id]} and {d}")
                found[d.id] = d

    collect(xb.local_devices()[0].client._get_all_devices())
    if not found:
        for backend in xb.backends().values():
            collect(backend._get_all_devices())
    return found


def device_for_id(device_id: int) -> jax.Device:
    d = cpu_device_map().get(int(device_id))
    if d is None:
        raise LiftError(f"device id {device_id} is not a CPU device of this process")
    return d


def devices_for_ids(ids: np.ndarray) -> list[jax.Device]:
    table = cpu_device_map()
    out = []
    for i in ids.tolist():
        d = table.get(i)
        if d is None:
            raise LiftError(f"device id {i} is not a CPU device of this process")
        out.append(d)
    return out
