"""Which slice of a global array each device holds, as JAX computes it.

Each case is a real JAX sharding and a global shape; `vectors()` records its
SpecsPayload (one leaf) and JAX's `shard_shape` and `devices_indices_map`, or
the kind of error JAX raises. test/shard-indices.test.ts checks that
src/shard-indices.ts gives the same from the lifted sharding, and
test_shard_indices.py that the committed file is what JAX gives now.

    python tests/shard_index_cases.py   # rewrites test/vectors/shard_indices.json
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

if __name__ == "__main__":  # before JAX starts: the cases need 16 CPU devices
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=16")

import jax
import numpy as np
from jax._src.lib import xla_client as xc
from jax._src.sharding_impls import GSPMDSharding
from jax.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import serialize_specs

VECTORS = Path(__file__).resolve().parents[2] / "test" / "vectors" / "shard_indices.json"

# JAX's exception, by the kind src/shard-indices.ts names.
ERROR_KINDS = {
    "IndivisibleError": "indivisible",
    "IndexError": "rank",
    "NotImplementedError": "unsupported",
    "AssertionError": "rank",  # a tiling of another rank (the only assertion a leaf reaches)
}

OTHER, REPLICATED, MAXIMAL = (
    xc.OpSharding.Type.OTHER,
    xc.OpSharding.Type.REPLICATED,
    xc.OpSharding.Type.MAXIMAL,
)


def _hlo(kind, dims=(), ids=(), replicate_last=False, last_tile_dims=()):
    op = xc.OpSharding()
    op.type = kind
    op.tile_assignment_dimensions = list(dims)
    op.tile_assignment_devices = list(ids)
    op.replicate_on_last_tile_dim = replicate_last
    op.last_tile_dims = list(last_tile_dims)
    return xc.HloSharding.from_proto(op)


def cases(devices) -> list[tuple[str, object, tuple[int, ...]]]:
    """(name, sharding, global shape) for every case."""
    d8 = np.array(devices[:8])
    m24 = Mesh(d8.reshape(2, 4), ("x", "y"))
    shuffled = Mesh(d8[[5, 2, 7, 0, 3, 6, 1, 4]].reshape(4, 2), ("a", "b"))
    m222 = Mesh(d8.reshape(2, 2, 2), ("a", "b", "c"))
    m8 = Mesh(d8, ("x",))
    with_one = Mesh(d8.reshape(2, 1, 4), ("x", "one", "y"))
    m44 = Mesh(np.array(devices[:16])[::-1].reshape(4, 4), ("r", "c"))
    explicit = Mesh(d8.reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    manual = Mesh(d8.reshape(2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Manual))
    manual_one = Mesh(d8.reshape(8, 1), ("x", "m"), axis_types=(AxisType.Explicit, AxisType.Manual))

    def named(mesh, *spec, **sets):
        return NamedSharding(mesh, P(*spec, **sets))

    dl = tuple(devices[8:16])
    dl4 = tuple(devices[:4])
    return [
        ("named_2x4_xy", named(m24, "x", "y"), (8, 4)),
        ("named_2x4_yx", named(m24, "y", "x"), (8, 4)),
        ("named_2x4_x_replicated_y", named(m24, "x"), (8, 4)),
        ("named_2x4_y_only", named(m24, None, "y"), (6, 8)),
        ("named_2x4_fully_replicated", named(m24), (3, 5)),
        ("named_2x4_tuple_xy", named(m24, ("x", "y")), (16, 2)),
        ("named_2x4_tuple_yx", named(m24, ("y", "x")), (16, 2)),
        ("named_2x4_tuple_last_dim", named(m24, None, ("y", "x")), (3, 8)),
        ("named_2x4_rank3_gap", named(m24, "x", None, "y"), (2, 3, 4)),
        ("named_2x4_unconstrained", named(m24, P.UNCONSTRAINED, "y"), (8, 4)),
        ("named_2x4_scalar", named(m24), ()),
        ("named_2x4_large_dims", named(m24, "x", "y"), (1 << 20, 4096)),
        ("named_shuffled_devices", named(shuffled, "a", "b"), (8, 4)),
        ("named_shuffled_b_only", named(shuffled, "b"), (4, 2)),
        ("named_2x2x2_ac_b", named(m222, ("a", "c"), "b"), (8, 4)),
        ("named_2x2x2_c_a_partial", named(m222, "c", None, "a"), (2, 3, 4)),
        ("named_2x2x2_b_only", named(m222, None, "b"), (5, 4)),
        ("named_1d_8", named(m8, "x"), (64,)),
        ("named_size_one_axis", named(with_one, ("one", "y"), "x"), (4, 6)),
        ("named_size_one_axis_past_rank", named(with_one, "x", None, "one"), (4, 6)),
        ("named_4x4_reversed", named(m44, "c", "r"), (12, 8)),
        ("named_4x4_partial", named(m44, None, "r"), (3, 4)),
        ("named_explicit_reduced", named(explicit, "x", reduced={"y"}), (8, 4)),
        ("uneven_named_dim0", named(m24, "x", "y"), (7, 4)),
        ("uneven_named_dim1", named(m24, "x", "y"), (8, 6)),
        ("uneven_named_tuple", named(m24, ("x", "y")), (12,)),
        ("error_spec_past_rank", named(m24, "x", "y"), (8,)),
        ("error_unreduced", named(explicit, "x", unreduced={"y"}), (8, 4)),
        ("error_manual_axis", named(manual, "x"), (8, 4)),
        ("named_manual_axis_of_size_one", named(manual_one, "x"), (8, 4)),
        ("single_device", SingleDeviceSharding(devices[3]), (5, 3)),
        ("single_device_scalar", SingleDeviceSharding(devices[0]), ()),
        ("gspmd_replicated", GSPMDSharding(dl, _hlo(REPLICATED)), (8, 4)),
        ("gspmd_maximal", GSPMDSharding(dl, _hlo(MAXIMAL, (), (3,))), (8,)),
        ("gspmd_tiled", GSPMDSharding(dl, _hlo(OTHER, (4, 2), (3, 1, 0, 2, 7, 5, 6, 4))), (8, 8)),
        (
            "gspmd_replicate_last",
            GSPMDSharding(dl, _hlo(OTHER, (2, 2, 2), (0, 2, 4, 6, 1, 3, 5, 7), True)),
            (8, 8),
        ),
        (
            "gspmd_last_tile_dims_replicated",
            GSPMDSharding(dl4, _hlo(OTHER, (2, 1, 2), (3, 1, 2, 0), last_tile_dims=[REPLICATED])),
            (8, 4),
        ),
        ("gspmd_one_tile", GSPMDSharding(dl4[:1], _hlo(OTHER, (1, 1), (0,))), (3, 3)),
        ("uneven_gspmd", GSPMDSharding(dl, _hlo(OTHER, (4, 2), tuple(range(8)))), (6, 8)),
        ("error_gspmd_rank", GSPMDSharding(dl, _hlo(OTHER, (4, 2), tuple(range(8)))), (8,)),
    ]


def expected(sharding, shape: tuple[int, ...]) -> dict:
    """JAX's answer: the shard shape and each device's [start, stop), or the error kind."""
    try:
        shard_shape = sharding.shard_shape(shape)
        index_map = sharding.devices_indices_map(shape)
    except Exception as e:  # noqa: BLE001 - the vector records which error JAX raises
        return {"error": ERROR_KINDS[type(e).__name__]}
    devices = []
    for device, index in index_map.items():
        ranges = [s.indices(n)[:2] for s, n in zip(index, shape, strict=True)]
        devices.append(
            {"device": device.id, "start": [a for a, _ in ranges], "stop": [b for _, b in ranges]}
        )
    return {"shardShape": list(shard_shape), "devices": devices}


def specs_payload(sharding, shape: tuple[int, ...]) -> str:
    """One float32 leaf with this sharding, as base64 SpecsPayload bytes. JAX refuses a leaf
    whose rank the sharding does not fit, so such a leaf gets the first rank that fits (its
    shape does not matter: the test maps the case's shape)."""
    for rank in range(len(shape), 9):
        try:
            leaf_shape = shape if rank == len(shape) else (1,) * rank
            leaf = jax.ShapeDtypeStruct(leaf_shape, np.float32, sharding=sharding)
            break
        except ValueError:
            continue
    _, treedef = jax.tree_util.tree_flatten(leaf)
    # For a 1.1 reader: all a sharding needs, and the file stays as it is when 1.x grows.
    return base64.b64encode(serialize_specs(treedef, [leaf], target_minor_version=1)).decode()


def vectors(devices) -> dict:
    """The whole file's content."""
    return {
        "generator": "python/tests/shard_index_cases.py",
        "cases": [
            {"name": name, "shape": list(shape), "specs": specs_payload(s, shape)}
            | expected(s, shape)
            for name, s, shape in cases(devices)
        ],
    }


def dumps(content: dict) -> str:
    return json.dumps(content, indent=1) + "\n"


if __name__ == "__main__":
    VECTORS.write_text(dumps(vectors(jax.devices())))
    print(f"wrote {VECTORS}", file=sys.stderr)
