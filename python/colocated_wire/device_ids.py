"""Device id lists on the wire: iota, plain or delta, whichever is smallest.

Lowering tries the three encodings and keeps the one whose `DeviceList`
message is the shortest (ties: iota, plain, delta), so a regular order of a
million devices is a few bytes and an irregular one costs no more than
listing its ids. Decoding checks sizes before it materializes anything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from colocated.v1 import table_pb2
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.iota import find_iota, materialize_iota
from colocated_wire.limits import DecodeLimits

INT32_MAX = 2**31 - 1


def lower_device_ids(ids: Sequence[int] | np.ndarray) -> table_pb2.DeviceList:
    """The canonical DeviceList message for these global device ids."""
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    if len(arr) and (arr.min() < 0 or arr.max() > INT32_MAX):
        raise EncodeError("device ids must be in [0, 2**31 - 1]")
    if len(np.unique(arr)) != len(arr):
        raise EncodeError("a device list holds a device twice")
    plain = table_pb2.DeviceList()
    plain.plain.ids.extend(arr.tolist())
    plain.plain.SetInParent()
    if len(arr) == 0:
        return plain
    candidates = []
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
    delta = table_pb2.DeviceList()
    delta.delta.deltas.extend(np.diff(arr, prepend=0).tolist())
    delta.delta.SetInParent()
    candidates += [plain, delta]
    return min(candidates, key=lambda m: m.ByteSize())  # min keeps the first on ties


def decode_device_ids(msg: table_pb2.DeviceList, path: str, limits: DecodeLimits) -> np.ndarray:
    """Validated int64 ids of a DeviceList message; raises DecodeError."""
    case = msg.WhichOneof("ids")
    if case == "iota":
        ipath = f"{path}.iota"
        io = msg.iota.iota
        dims, perm = list(io.reshape_dims), list(io.transpose_perm)
        if len(dims) != len(perm):
            raise DecodeError(
                f"{ipath}.iota.transpose_perm",
                "invalid-iota",
                f"{len(perm)} perm entries for {len(dims)} reshape dims",
            )
        if sorted(perm) != list(range(len(perm))):
            raise DecodeError(
                f"{ipath}.iota.transpose_perm", "invalid-iota", f"{perm} is not a permutation"
            )
        size = 1
        for d in dims:
            size *= d
        if size > limits.devices_per_list:
            raise DecodeError(
                f"{ipath}.iota.reshape_dims",
                "limit-exceeded",
                f"{size} devices exceed the limit of {limits.devices_per_list}",
            )
        if size and msg.iota.offset + size - 1 > INT32_MAX:
            raise DecodeError(f"{ipath}.offset", "invalid-value", "device ids exceed 2**31 - 1")
        return materialize_iota(dims, perm) + msg.iota.offset
    if case == "plain":
        ids = np.asarray(msg.plain.ids, dtype=np.int64)
        cpath = f"{path}.plain.ids"
    elif case == "delta":
        if len(msg.delta.deltas) > limits.devices_per_list:
            ids = np.empty(len(msg.delta.deltas))
        else:
            ids = np.cumsum(np.asarray(msg.delta.deltas, dtype=np.int64))
        cpath = f"{path}.delta.deltas"
    else:
        raise DecodeError(f"{path}.ids", "missing", "a device list has no ids")
    if len(ids) > limits.devices_per_list:
        raise DecodeError(
            cpath,
            "limit-exceeded",
            f"{len(ids)} devices exceed the limit of {limits.devices_per_list}",
        )
    bad = np.flatnonzero((ids < 0) | (ids > INT32_MAX))
    if len(bad):
        i = int(bad[0])
        raise DecodeError(f"{cpath}[{i}]", "invalid-value", f"device id {ids[i]} is not an int32")
    uniq, first = np.unique(ids, return_index=True)
    if len(uniq) != len(ids):
        seen = np.zeros(len(ids), dtype=bool)
        seen[first] = True
        i = int(np.flatnonzero(~seen)[0])
        raise DecodeError(f"{cpath}[{i}]", "duplicate-device", f"device {ids[i]} appears twice")
    return ids
