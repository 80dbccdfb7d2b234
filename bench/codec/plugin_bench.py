"""The plugin half of `npm run bench`: a colocated call with JAX's own serialization and with
colocated_wire.plugin, side by side.

bench/codec/plugin.ts starts it with JAX_PLATFORMS=cpu and XLA_FLAGS set for the largest mesh and
writes a job on stdin: {"runs", "cases": [{"id", "leafCount", "mesh": [rows, cols], "fresh"}]}.
One JSON object per line goes to stdout: "startup" (with the JAX version and where
colocated_wire was imported from, which must be the working tree's python/), then a "result"
or "error" per case and side ("jax", "plugin"). Teardown is skipped (os._exit). It runs under
every JAX the P cases are measured with (bench/codec/plugin-versions.ts), so it uses only what
JAX 0.6 to 0.10 all have.

The first call of a colocated function specializes it: JAX writes three programs (output
specs and push, the call, pop), runs them in-process on CPU after reading each back, and
the call sends its output specs back in a carrier. That first call is where the payloads
are, so it is timed end to end on a fresh colocated function, after one untimed first call
that pays what a process pays once, and the payloads it wrote are measured. Later calls
reuse the specialization and write nothing: the steady call shows the plugin adds nothing.

Before JAX 0.8 the CPU client compiles no colocated program ("PjRtCompiler requires an
HloProgram"), and colocated Python falls back to running the function in process: the
programs are still written, but nothing reads them back (func.py has no `_deserialize`).
There the bench reads each first call's programs back itself with `serialization._deserialize`
(JAX's, or the plugin's once installed), as a worker would, timed apart from the call
("readBack").

The specs are a dict of N leaves over a 2-D mesh, alternating two NamedShardings, as in the
scenarios of test/support/scenarios.ts (each leaf is one of two arrays, so a large tree costs
little to build). A "fresh" case gives every leaf a NamedSharding (and PartitionSpec) of its
own, equal to the others but not the same object, as arrays a program computed hold them:
pickle's memo writes an object once only when the very same object comes again, and JAX 0.8's
table of shared objects writes equal ones once (what "fresh" shows across versions).
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
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import colocated_python as cp
from jax.experimental.colocated_python import func, serialization
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import colocated_wire
from colocated_wire import plugin

# Whether this JAX reads its programs back in a colocated call on CPU (0.8 on); if not, the
# bench does (module docstring).
READS_BACK = hasattr(func, "_deserialize")


def emit(**fields):
    print(json.dumps(fields), flush=True)


def identity(tree):
    return tree


def fresh_identity():
    """`identity` as a new function object, pickled to the same bytes. Before JAX 0.8 a
    specialization is cached for the process by the function's value (FunctionInfo), so a new
    colocated_python of the same function would reuse it and write nothing."""
    return types.FunctionType(identity.__code__, identity.__globals__, identity.__name__)


class Recorder:
    """The programs and carriers one call wrote, read where the controller meets them.

    `_serialize_specs` is not wrapped: the pickled function that calls it would carry the
    wrapper. Its carrier is read where the controller receives it, `_deserialize_specs`.
    """

    def __init__(self):
        self.payloads: list[bytes] = []
        self.carriers: list[int] = []

    @property
    def programs(self) -> list[int]:
        return [len(p) for p in self.payloads]

    def __enter__(self):
        self._serialize, self._deserialize_specs = func._serialize, func._deserialize_specs

        def serialize(obj):
            data = self._serialize(obj)
            self.payloads.append(data)
            return data

        def deserialize_specs(carrier):
            text = carrier.addressable_shards[0].data.item()
            self.carriers.append(len(base64.b64decode(text)))
            return self._deserialize_specs(carrier)

        func._serialize, func._deserialize_specs = serialize, deserialize_specs
        return self

    def __exit__(self, *exc):
        func._serialize, func._deserialize_specs = self._serialize, self._deserialize_specs


def make_tree(n_leaves: int, mesh_shape: tuple[int, int], fresh: bool) -> dict:
    devices = np.array(jax.devices()[: mesh_shape[0] * mesh_shape[1]]).reshape(mesh_shape)
    mesh = Mesh(devices, ("x", "y"))
    specs = (PartitionSpec("x"), PartitionSpec(None, "y"))
    a = jax.device_put(jnp.zeros(mesh_shape, jnp.float32), NamedSharding(mesh, specs[0]))
    b = jax.device_put(jnp.ones(mesh_shape, jnp.float32), NamedSharding(mesh, specs[1]))

    def leaf(i: int) -> jax.Array:
        x = (a, b)[i % 2]
        if not fresh:
            return x
        # The same buffers under a sharding of its own: no copy, so a large tree stays cheap.
        sharding = NamedSharding(mesh, PartitionSpec(*specs[i % 2]))
        shards = [s.data for s in x.addressable_shards]
        return jax.make_array_from_single_device_arrays(x.shape, sharding, shards)

    return {f"leaf{i:05d}": leaf(i) for i in range(n_leaves)}


def first_call(tree):
    f = cp.colocated_python(fresh_identity())
    with Recorder() as recorder:
        start = time.perf_counter()
        jax.block_until_ready(f(tree))
        elapsed = time.perf_counter() - start
    return elapsed, recorder, f


def read_back(payloads: list[bytes]) -> float:
    """Reads the programs back as a worker would (JAX before 0.8 does not on CPU)."""
    start = time.perf_counter()
    for data in payloads:
        serialization._deserialize(data)
    return time.perf_counter() - start


def timing(seconds: list[float]) -> dict:
    return {"medianMs": statistics.median(seconds) * 1e3, "runs": len(seconds)}


def measure(tree, runs: int) -> dict:
    first_call(tree)  # untimed: what the first colocated call of a process pays once
    firsts, reads, recorder, f = [], [], None, None
    for _ in range(runs):
        elapsed, recorder, f = first_call(tree)
        firsts.append(elapsed)
        if not READS_BACK:
            reads.append(read_back(recorder.payloads))
    steady = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(f(tree))
        steady.append(time.perf_counter() - start)
    return {
        "firstCall": timing(firsts),
        "steadyCall": timing(steady),
        **({"readBack": timing(reads)} if reads else {}),
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
        package=os.path.dirname(colocated_wire.__file__),
    )
    for case in job["cases"]:
        tree = make_tree(case["leafCount"], tuple(case["mesh"]), case.get("fresh", False))
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
