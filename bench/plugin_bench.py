"""The plugin half of `npm run bench`: a colocated call with JAX's own serialization and with
colocated_wire.plugin, side by side.

bench/plugin.ts starts it with JAX_PLATFORMS=cpu and XLA_FLAGS set for the largest mesh and
writes a job on stdin: {"runs", "cases": [{"id", "leafCount", "mesh": [rows, cols]}]}. One
JSON object per line goes to stdout: "startup", then a "result" or "error" per case and side
("jax", "plugin"). Teardown is skipped (os._exit).

The first call of a colocated function specializes it: JAX writes three programs (output
specs and push, the call, pop), runs them in-process on CPU after reading each back, and
the call sends its output specs back in a carrier. That first call is where the payloads
are, so it is timed end to end on a fresh colocated function, after one untimed first call
that pays what a process pays once, and the payloads it wrote are measured. Later calls
reuse the specialization and write nothing: the steady call shows the plugin adds nothing.

The specs are a dict of N leaves over a 2-D mesh, alternating two NamedShardings, as in the
scenarios of bench/scenarios.ts (each leaf is one of two arrays, so a large tree costs
little to build).
"""

import base64
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import colocated_python as cp
from jax.experimental.colocated_python import func
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire import plugin


def emit(**fields):
    print(json.dumps(fields), flush=True)


def identity(tree):
    return tree


class Recorder:
    """The programs and carriers one call wrote, read where the controller meets them.

    `_serialize_specs` is not wrapped: the pickled function that calls it would carry the
    wrapper. Its carrier is read where the controller receives it, `_deserialize_specs`.
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
            self.carriers.append(len(base64.b64decode(text)))
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
    first_call(tree)  # untimed: what the first colocated call of a process pays once
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
        "firstCall": {"medianMs": statistics.median(firsts) * 1e3, "runs": runs},
        "steadyCall": {"medianMs": statistics.median(steady) * 1e3, "runs": runs},
        "programBytes": recorder.programs,
        "carrierBytes": recorder.carriers,
    }


def main() -> None:
    job = json.load(sys.stdin)
    emit(
        type="startup",
        jax=jax.__version__,
        devices=len(jax.devices()),
        python=platform.python_version(),
    )
    for case in job["cases"]:
        tree = make_tree(case["leafCount"], tuple(case["mesh"]))
        for side in ("jax", "plugin"):
            backend = (
                plugin.installed(allow_pickle=True)
                if side == "plugin"
                else contextlib.nullcontext()
            )
            try:
                with backend:
                    emit(type="result", case=case["id"], side=side, **measure(tree, job["runs"]))
            except Exception as e:  # reported per case and side, as jax_bench.py does
                traceback.print_exc(file=sys.stderr)
                emit(type="error", case=case["id"], side=side, message=f"{type(e).__name__}: {e}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
