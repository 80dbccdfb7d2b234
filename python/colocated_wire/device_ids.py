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


def check_iota_layout(io: table_pb2.Iota, path: str, limits: DecodeLimits) -> None:
    """An iota's rank is within the limits and its perm is a permutation of its dims."""
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


def first_repeat(ids: np.ndarray) -> int | None:
    """The index of the first id seen before, or None."""
    uniq, first = np.unique(ids, return_index=True)
    if len(uniq) == len(ids):
        return None
    seen = np.zeros(len(ids), dtype=bool)
    seen[first] = True
    return int(np.flatnonzero(~seen)[0])


def decode_device_ids(msg: table_pb2.DeviceList, path: str, limits: DecodeLimits) -> np.ndarray:
    """Validated int64 ids of a DeviceList message; raises DecodeError."""
    case = msg.WhichOneof("ids")
    if case == "iota":
        ipath = f"{path}.iota"
        if not msg.iota.HasField("iota"):
            raise DecodeError(f"{ipath}.iota", "missing", "an iota device list needs its iota")
        io = msg.iota.iota
        check_iota_layout(io, f"{ipath}.iota", limits)
        size = int(np.prod(list(io.reshape_dims), dtype=object))
        if size > limits.max_devices_per_list:
            raise DecodeError(
                f"{ipath}.iota.reshape_dims",
                "limit-exceeded",
                f"{size} devices exceed the limit of {limits.max_devices_per_list}",
            )
        if size and msg.iota.offset + size - 1 > INT32_MAX:
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
    bad = np.flatnonzero((ids < 0) | (ids > INT32_MAX))
    if len(bad):
        i = int(bad[0])
        raise DecodeError(f"{cpath}[{i}]", "invalid-value", f"device id {ids[i]} is not an int32")
    i = first_repeat(ids)
    if i is not None:
        raise DecodeError(f"{cpath}[{i}]", "duplicate-device", f"device {ids[i]} appears twice")
    return ids
