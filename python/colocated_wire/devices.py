"""Global device ids to this process's JAX devices.

A device travels as its integer `id`. A worker maps it back to one of its
own CPU devices exactly as jax/experimental/colocated_python/serialization.py
does: CPU devices of the default backend first, then CPU devices of any
backend. An id this process lacks is a `LiftError` naming the id.

The map is built once per process (devices are fixed) as a numpy object
array indexed by id, so a list of ids becomes its devices in one fancy-index
instead of a dict lookup per device.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np
from jax._src import xla_bridge as xb

from colocated_wire.errors import LiftError

if TYPE_CHECKING:
    from jax.sharding import Mesh

# Ids up to this many times the device count index the table directly; sparser ids are
# looked up by binary search in the sorted ids.
_DENSE_FACTOR = 8


class DeviceTable(NamedTuple):
    """This process's CPU devices by id: `devices[k]` has id `ids[k]` (ids sorted), or,
    when dense, `devices[id]` is the device and `present[id]` says whether there is one."""

    ids: np.ndarray
    devices: np.ndarray
    present: np.ndarray | None


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


@functools.cache
def device_table() -> DeviceTable:
    """The id -> device lookup table of `cpu_device_map`, built once."""
    found = cpu_device_map()
    ids = np.array(sorted(found), dtype=np.int64)
    objects = np.empty(len(ids), dtype=object)
    objects[:] = [found[i] for i in ids.tolist()]
    stop = int(ids[-1]) + 1 if len(ids) else 0
    if stop > _DENSE_FACTOR * len(ids) + 1024:
        return DeviceTable(ids, objects, None)
    devices = np.empty(stop, dtype=object)
    devices[ids] = objects
    present = np.zeros(stop, dtype=bool)
    present[ids] = True
    return DeviceTable(ids, devices, present)


def device_for_id(device_id: int) -> jax.Device:
    d = cpu_device_map().get(int(device_id))
    if d is None:
        raise LiftError(f"device id {device_id} is not a CPU device of this process")
    return d


def devices_for_ids(ids: np.ndarray) -> np.ndarray:
    """An object array of the devices of `ids` (int64, any shape), in one vectorized pass."""
    table = device_table()
    if table.present is not None:
        present = table.present
        if ids.size == 0 or int(ids.max()) < len(present):  # checked ids are not negative
            known = present[ids]
        else:
            known = np.zeros(ids.shape, dtype=bool)
            inside = ids < len(present)
            known[inside] = present[ids[inside]]
        _refuse_unknown(ids, known)
        return table.devices[ids]
    at = np.searchsorted(table.ids, ids)
    at[at == len(table.ids)] = 0
    known = table.ids[at] == ids if len(table.ids) else np.zeros(ids.shape, dtype=bool)
    _refuse_unknown(ids, known)
    return table.devices[at]


def _refuse_unknown(ids: np.ndarray, known: np.ndarray) -> None:
    if not known.all():
        missing = ids.reshape(-1)[int(np.flatnonzero(~known.reshape(-1))[0])]
        raise LiftError(f"device id {missing} is not a CPU device of this process")


def ids_key(ids: np.ndarray) -> bytes:
    """A dict key for checked device ids (int32s by then): their bytes. Facts a checked table
    shares across decodes are read-only, so their key is made once (a device list and its mesh
    ask for the same array's)."""
    found = _KEYS.get(id(ids))
    if found is not None and found[0] is ids:
        return found[1]
    key = ids.astype(np.int32).tobytes()
    if not ids.flags.writeable and ids.size <= _KEYED_IDS:
        if len(_KEYS) >= _KEYED_ARRAYS:  # bounded: a full memo is emptied
            _KEYS.clear()
        _KEYS[id(ids)] = (ids, key)  # the array is held, so its id stays its own
    return key


# Keys of read-only id arrays by id(), with the array; at most this many, of this many ids each.
_KEYS: dict[int, tuple[np.ndarray, bytes]] = {}
_KEYED_ARRAYS = 64
_KEYED_IDS = 1 << 16


# A mesh lifted before whose devices, in flat order, have the ids of the key. Held weakly: the
# mesh goes when its last user drops it, and its entry with it.
_MESHES_BY_IDS: weakref.WeakValueDictionary[bytes, Mesh] = weakref.WeakValueDictionary()


def remember_mesh(key: bytes, mesh: Mesh) -> None:
    """Remembers, weakly, that `mesh` holds the devices of `key` (an `ids_key`) in flat order."""
    _MESHES_BY_IDS[key] = mesh


def mesh_holding(key: bytes) -> Mesh | None:
    """A live mesh lifted before whose flat devices are those of `key`, if any."""
    return _MESHES_BY_IDS.get(key)
