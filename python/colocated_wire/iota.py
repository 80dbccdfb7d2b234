"""XLA's "iota" form of a regular order of integers.

`arange(prod(reshape_dims)).reshape(reshape_dims).transpose(perm).flatten()`
describes any row-major order of a mesh, transposed or not, with a few
integers, so a million-device list costs bytes instead of megabytes. Many
iotas give the same order; `find_iota` is the algorithm of
docs/wire-format.md ("Device lists"), which TypeScript implements step by
step alike, so both languages choose the same one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def materialize_iota(reshape_dims: Sequence[int], transpose_perm: Sequence[int]) -> np.ndarray:
    """The flat int64 order an iota describes. The caller checks its size first."""
    size = int(np.prod(np.asarray(reshape_dims, dtype=np.int64)))
    a = np.arange(size, dtype=np.int64).reshape(tuple(int(d) for d in reshape_dims))
    return a.transpose(tuple(int(p) for p in transpose_perm)).reshape(-1)


def find_iota(q: Sequence[int] | np.ndarray) -> tuple[list[int], list[int]] | None:
    """Returns `(reshape_dims, transpose_perm)` whose iota is exactly `q`, or None.

    `q` must already have its offset removed (the caller subtracts min(ids)).
    """
    q = np.asarray(q, dtype=np.int64).reshape(-1)
    n = len(q)
    if n == 0:
        return None
    if n == 1:
        return ([1], [0]) if q[0] == 0 else None
    dims: list[tuple[int, int]] = []  # (size, stride), innermost first
    cur = q
    while len(cur) > 1:
        s = int(cur[1] - cur[0])
        if s <= 0:
            return None
        ramp = np.arange(len(cur), dtype=np.int64) * s
        mismatch = np.flatnonzero(cur != cur[0] + ramp)
        length = int(mismatch[0]) if len(mismatch) else len(cur)
        if len(cur) % length:
            return None
        blocks = cur.reshape(-1, length)
        if not np.array_equal(blocks, blocks[:, :1] + ramp[:length]):
            return None
        dims.append((length, s))
        cur = blocks[:, 0]
    if cur[0] != 0:
        return None
    out = dims[::-1]  # outermost first
    by_stride = sorted(range(len(out)), key=lambda k: -out[k][1])
    expected = 1
    for k in reversed(by_stride):  # smallest stride first
        size, stride = out[k]
        if stride != expected:
            return None
        expected = stride * size
    reshape_dims = [out[k][0] for k in by_stride]
    position = {k: pos for pos, k in enumerate(by_stride)}
    perm = [position[k] for k in range(len(out))]
    if not np.array_equal(materialize_iota(reshape_dims, perm), q):
        return None
    return reshape_dims, perm
