"""A colocated call with JAX's own serialization and with colocated_wire.plugin, side by side.

Run: `.venv/bin/python bench/plugin_bench.py [--runs N]` (not part of `npm run bench` yet).

The first call of a colocated function specializes it: JAX writes three programs (output
specs and push, the call, pop), runs them in-process on CPU after reading each back, and
the call sends its output specs back in a carrier. That first call is where the payloads
are, so it is timed end to end on a fresh colocated function, and the payloads it wrote
are measured. Later calls reuse the specialization and write nothing: the steady call is
timed to show that the plugin adds nothing there.

The specs are a dict of N leaves over a 2-D mesh, alternating two NamedShardings, as in
the scenarios of docs and bench/scenarios.ts (each leaf is one of two arrays, so a large
tree costs little to build).
"""

import argparse
import contextlib
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1024")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import colocated_python as cp  # noqa: E402
from jax.experimental.colocated_python import func  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

from colocated_wire import plugin  # noqa: E402

SCENARIOS = ((1, (2, 4)), (1_000, (8, 8)), (1_000, (32, 32)), (10_000, (32, 32)))


def identity(tree):
    return tree


class Recorder:
    """Sizes of the programs and carriers one call wrote, read where JAX calls the names.

    `_serialize_specs` is not wrapped: the pickled function that calls it would carry the
    wrapper. Its carrier is measured where the controller reads it, `_deserialize_specs`.
    """

    def __init__(self):
        self.programs: list[int] = []
        self.carriers: list[int] = []

    def __enter__(self):
        self._serialize, self._deserialize_specs = func._serialize, func._deserialize_specs

        def serialize(obj):
            data = self._serialize(obj)
            self.programs.append(len(data))
            return data

        def deserialize_specs(carrier):
            text = carrier.addressable_shards[0].data.item()
            self.carriers.append(len(text) * 3 // 4)  # base64 text of that many bytes
            return self._deserialize_specs(carrier)

        func._serialize, func._deserialize_specs = serialize, deserialize_specs
        return self

    def __exit__(self, *exc):
        func._serialize, func._deserialize_specs = self._serialize, self._deserialize_specs


def make_tree(n_leaves: int, mesh_shape: tuple[int, int]) -> dict:
    devices = np.array(jax.devices()[: mesh_shape[0] * mesh_shape[1]]).reshape(mesh_shape)
    mesh = Mesh(devices, ("x", "y"))
    rows = NamedSharding(mesh, PartitionSpec("x"))
    cols = NamedSharding(mesh, PartitionSpec(None, "y"))
    a = jax.device_put(jnp.zeros(mesh_shape, jnp.float32), rows)
    b = jax.device_put(jnp.ones(mesh_shape, jnp.float32), cols)
    return {f"leaf{i:05d}": a if i % 2 == 0 else b for i in range(n_leaves)}


def first_call(tree):
    f = cp.colocated_python(identity)
    with Recorder() as recorder:
        start = time.perf_counter()
        jax.block_until_ready(f(tree))
        elapsed = time.perf_counter() - start
    return elapsed, recorder, f


def measure(tree, runs: int) -> dict:
    firsts, recorder, f = [], None, None
    for _ in range(runs):
        elapsed, recorder, f = first_call(tree)
        firsts.append(elapsed)
    steady = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(f(tree))
        steady.append(time.perf_counter() - start)
    return {
        "first_ms": statistics.median(firsts) * 1e3,
        "steady_ms": statistics.median(steady) * 1e3,
        "programs": recorder.programs,
        "carriers": recorder.carriers,
    }


def _size(n: int) -> str:
    return f"{n / 1e3:,.1f} KB" if n >= 1e4 else f"{n:,} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per side (median)")
    runs = parser.parse_args().runs
    print(f"jax {jax.__version__}, {len(jax.devices())} CPU devices, median of {runs} runs")
    print()
    print("| leaves | devices | side | first call | steady call | programs (3) | output specs |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for n_leaves, mesh_shape in SCENARIOS:
        tree = make_tree(n_leaves, mesh_shape)
        for side in ("jax", "colocated_wire"):
            backend = plugin.installed(allow_pickle=True) if side != "jax" else None
            with backend or contextlib.nullcontext():
                r = measure(tree, runs)
            programs = " + ".join(_size(n) for n in r["programs"])
            carriers = " + ".join(_size(n) for n in r["carriers"])
            print(
                f"| {n_leaves:,} | {mesh_shape[0] * mesh_shape[1]:,} | {side} |"
                f" {r['first_ms']:,.1f} ms | {r['steady_ms']:,.2f} ms | {programs} | {carriers} |"
            )


if __name__ == "__main__":
    main()
