"""How two device orders differ, in the words a reader checks a mesh by: "devices 3 and 5
swapped", "device order iota [16, 64] to [64, 16] transposed". TypeScript:
src/diff/device-order.ts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from colocated_wire.diff.describe import list_text, thousands
from colocated_wire.diff.payload_diff import DiffDetail
from colocated_wire.iota import find_iota


def device_order_detail(
    field: str,
    a: np.ndarray,
    b: np.ndarray,
    shape_a: Sequence[int] | None = None,
    shape_b: Sequence[int] | None = None,
) -> DiffDetail | None:
    """The detail of two device orders under `field` (with the shape each is laid out in, a
    mesh's axis sizes, if any), or None when they are equal."""
    a = np.asarray(a, dtype=np.int64).reshape(-1)
    b = np.asarray(b, dtype=np.int64).reshape(-1)
    n = len(a)
    if n != len(b):
        text = f"{thousands(n)} devices to {thousands(len(b))}"
        return _detail(field, a, b, {"kind": "count"}, text)
    moved = np.flatnonzero(a != b).tolist()
    if not moved:
        return None
    # Ids in place on both sides are in both sets: only the moved ones can be in one alone.
    moved_a, moved_b = a[moved].tolist(), b[moved].tolist()
    in_a, in_b = set(moved_a), set(moved_b)
    removed = [i for i in moved_a if i not in in_b]
    added = [i for i in moved_b if i not in in_a]
    if removed or added:
        return _set_detail(field, a, b, removed, added)
    if len(moved) == 2:
        devices = [moved_a[0], moved_a[1]]
        change = {"kind": "swapped", "devices": devices, "positions": moved}
        return _detail(field, a, b, change, f"devices {devices[0]} and {devices[1]} swapped")
    iota_a, iota_b = _iota_of(a), _iota_of(b)
    if iota_a and iota_b:
        text = f"device order iota {_iota_text(iota_a, shape_a)} to {_iota_text(iota_b, shape_b)}"
        return _detail(field, a, b, {"kind": "iota"}, text)
    p = moved[0]
    order_a = f"iota {_iota_text(iota_a, shape_a)}" if iota_a else "an irregular order"
    order_b = f"iota {_iota_text(iota_b, shape_b)}" if iota_b else "an irregular order"
    text = (
        f"device order {order_a} to {order_b}: {thousands(len(moved))} of {thousands(n)} "
        f"positions differ (first {p}: device {a[p]} to {b[p]})"
    )
    change = {"kind": "reordered", "positions": len(moved), "first": p}
    return _detail(field, a, b, change, text)


def _set_detail(
    field: str, a: np.ndarray, b: np.ndarray, removed: list[int], added: list[int]
) -> DiffDetail:
    """Devices on one side only: "devices 4, 5 removed, devices 12, 13 added"."""
    out, into = sorted(removed), sorted(added)
    words = [
        f"{'device' if len(ids) == 1 else 'devices'} {list_text([str(i) for i in ids])} {what}"
        for ids, what in ((out, "removed"), (into, "added"))
        if ids
    ]
    change = {
        "kind": "set",
        "removed": out[:8],
        "added": into[:8],
        "removedCount": len(out),
        "addedCount": len(into),
    }
    return _detail(field, a, b, change, ", ".join(words))


def _detail(field: str, a: np.ndarray, b: np.ndarray, change: Any, text: str) -> DiffDetail:
    return DiffDetail(field, _summary(a), _summary(b), change, text)


def _summary(ids: np.ndarray) -> dict[str, Any]:
    """A device order in the result: its count, and its iota form if it has one."""
    iota = _iota_of(ids)
    form = None
    if iota:
        dims, perm, offset = iota
        form = {"reshapeDims": dims, "transposePerm": perm, "offset": offset}
    return {"count": len(ids), "iota": form}


def _iota_of(ids: np.ndarray) -> tuple[list[int], list[int], int] | None:
    """The ids' iota form, offset by their first id (an iota starts at 0), or None."""
    if len(ids) == 0:
        return None
    offset = int(ids[0])
    found = find_iota(ids - offset)
    if found is None:
        return None
    dims, perm = found
    return [int(d) for d in dims], [int(p) for p in perm], offset


def _iota_text(iota: tuple[list[int], list[int], int], shape: Sequence[int] | None) -> str:
    """An iota in words, by the shape it lays the ids out in: "[16, 64]" (in order, in a mesh of
    that shape), "[64, 16] transposed" (arange(1024).reshape(16, 64).T), "[8, 4, 2] transposed
    (2, 0, 1)", and "from 8" after an offset."""
    dims, perm, offset = iota
    identity = perm == list(range(len(perm)))
    if identity:
        laid = list(shape) if shape is not None else dims
    else:
        laid = [dims[p] for p in perm]
    text = "[" + ", ".join(map(str, laid)) + "]"
    if not identity:
        text += " transposed" if len(perm) == 2 else f" transposed ({', '.join(map(str, perm))})"
    return f"{text} from {offset}" if offset else text
