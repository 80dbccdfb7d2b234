"""The vectors of TypeScript's makeMesh: jax.make_mesh's device order (jax/_src/mesh_utils.py)
for synthetic TPU slices, GPUs and CPUs, and JAX's error where a shape does not fit.

    .venv/bin/python python/tests/make_mesh_vectors.py > test/vectors/make_mesh.json

test_make_mesh_vectors.py checks that this JAX still makes the committed file.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import sys

from jax._src import mesh_utils

# (device kind, chips along x, y, z, cores a chip, mesh shapes); JAX's make_mesh splits
# physical axes for v5e alone.
SLICES = [
    ("TPU v2", (2, 2, 1), 2, [(8,), (2, 4), (4, 2), (1, 8)]),
    ("TPU v3", (4, 4, 1), 2, [(32,), (4, 8), (8, 4), (2, 16), (2, 2, 8), (3, 10)]),
    ("TPU v4", (2, 2, 1), 1, [(4,), (2, 2), (1, 4)]),
    ("TPU v4", (2, 2, 2), 1, [(8,), (2, 4), (4, 2), (2, 2, 2)]),
    ("TPU v4", (4, 4, 4), 1, [(64,), (4, 16), (16, 4), (8, 8), (2, 32), (4, 4, 4), (2, 2, 16)]),
    ("TPU v4", (4, 4, 8), 1, [(128,), (8, 16), (16, 8), (4, 32), (32, 4), (2, 64)]),
    ("TPU v4 lite", (2, 2, 1), 1, [(4,), (2, 2)]),
    ("TPU v5 lite", (2, 2, 1), 1, [(4,), (2, 2), (4, 1)]),
    ("TPU v5 lite", (2, 4, 1), 1, [(8,), (2, 4), (4, 2)]),
    ("TPU v5 lite", (4, 4, 1), 1, [(16,), (4, 4), (2, 8), (8, 2), (2, 2, 4)]),
    ("TPU v5 lite", (8, 8, 1), 1, [(64,), (8, 8), (4, 16), (16, 4), (2, 32), (2, 2, 16)]),
    ("TPU v5 lite", (16, 16, 1), 1, [(256,), (16, 16), (8, 32), (4, 64), (2, 8, 16)]),
    ("TPU v5p", (2, 2, 1), 1, [(4,), (2, 2)]),
    ("TPU v5p", (2, 2, 2), 1, [(8,), (2, 4), (2, 2, 2)]),
    ("TPU v5p", (2, 2, 2), 2, [(16,), (2, 8), (4, 4), (2, 2, 4)]),
    ("TPU v5p", (4, 4, 4), 1, [(64,), (4, 16), (16, 4), (8, 8)]),
    ("TPU v6 lite", (2, 2, 1), 1, [(4,), (2, 2)]),
    ("TPU v6 lite", (2, 4, 1), 1, [(8,), (4, 2)]),
    ("TPU v6 lite", (4, 4, 1), 1, [(16,), (4, 4), (2, 8), (8, 2)]),
    ("TPU v6 lite", (8, 8, 1), 1, [(64,), (8, 8), (4, 16), (2, 32)]),
    ("TPU7x", (2, 2, 1), 2, [(8,), (2, 4), (4, 2)]),
    ("TPU7x", (2, 2, 2), 2, [(16,), (2, 8), (4, 4)]),
    ("TPU7x", (2, 2, 4), 2, [(32,), (4, 8), (8, 4)]),
    ("TPU7x", (4, 4, 4), 2, [(128,), (8, 16), (16, 8)]),
]


@dataclasses.dataclass(frozen=True)
class FakeDevice:
    """What mesh_utils reads of a jax.Device."""

    id: int
    platform: str
    device_kind: str
    coords: tuple[int, ...]
    core_on_chip: int


def tpu_slice(kind: str, bounds: tuple[int, int, int], cores: int) -> list[FakeDevice]:
    """A slice's devices in jax.devices() order: by z, then y, x and the core, ids from 0."""
    x, y, z = bounds
    order = itertools.product(range(z), range(y), range(x), range(cores))
    return [
        FakeDevice(i, "tpu", kind, (cx, cy, cz), core) for i, (cz, cy, cx, core) in enumerate(order)
    ]


def make_mesh_ids(shape: tuple[int, ...], devices: list[FakeDevice]) -> list[int] | str:
    """jax.make_mesh's device ids in mesh order, as sharding_impls.make_mesh picks them; or
    the message of the error JAX raises."""
    try:
        size = math.prod(shape)
        if size > len(devices):
            raise ValueError(
                f"Number of devices {len(devices)} must be >= the product "
                f"of mesh_shape {tuple(shape)}"
            )
        chosen = devices[:size]
        split = chosen[0].device_kind in (mesh_utils._TPU_V5_LITE, mesh_utils._TPU_V5E)
        mesh = mesh_utils.create_device_mesh(shape, chosen, allow_split_physical_axes=split)
        return [d.id for d in mesh.flat]
    except (ValueError, NotImplementedError, AssertionError) as e:
        return f"{type(e).__name__}: {e}"


def describe(d: FakeDevice) -> dict:
    return {
        "id": d.id,
        "platform": d.platform,
        "kind": d.device_kind,
        "coords": list(d.coords),
        "coreOnChip": d.core_on_chip,
    }


def cases() -> list[dict]:
    out = []
    for kind, bounds, cores, shapes in SLICES:
        devices = tpu_slice(kind, bounds, cores)
        for shape in shapes:
            out.append(
                {
                    "devices": [describe(d) for d in devices],
                    "shape": list(shape),
                    "want": make_mesh_ids(shape, devices),
                }
            )
    # Fewer devices asked for than given: the first ones, as make_mesh takes them.
    v4 = tpu_slice("TPU v4", (2, 2, 2), 1)
    out.append(
        {"devices": [describe(d) for d in v4], "shape": [2, 2], "want": make_mesh_ids((2, 2), v4)}
    )
    # GPUs sort by id; CPUs keep the order given.
    gpus = [FakeDevice(i, "gpu", "NVIDIA H100 80GB HBM3", (), 0) for i in (3, 1, 2, 0, 7, 5, 6, 4)]
    cpus = [FakeDevice(i, "cpu", "cpu", (), 0) for i in (3, 1, 2, 0, 7, 5, 6, 4)]
    for devices in (gpus, cpus):
        for shape in ((8,), (2, 4), (16,)):
            out.append(
                {
                    "devices": [describe(d) for d in devices],
                    "shape": list(shape),
                    "want": make_mesh_ids(shape, devices),
                }
            )
    return out


if __name__ == "__main__":
    import jax

    json.dump({"jax": jax.__version__, "cases": cases()}, sys.stdout, indent=None)
    sys.stdout.write("\n")
