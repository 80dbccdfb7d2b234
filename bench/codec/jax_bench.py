"""The Python half of `npm run bench`: sides (b), (c) and (d2) of each case it is given.

bench/codec/python.ts starts one process per device count, with JAX_PLATFORMS=cpu and
XLA_FLAGS=--xla_force_host_platform_device_count=N already set (JAX reads them once, at
import), and writes a job on stdin: {"deviceCount", "policy", "cases": [{"case",
"deviceIds", "sides"}]}. The cases are the ones test/support/scenarios.ts defines, so every side
encodes the same content. One JSON object per line goes to stdout: "startup", then a
"result" or "error" per case and side. Teardown is skipped (os._exit).
"""

import gc
import hashlib
import json
import lzma
import os
import platform
import statistics
import sys
import time
import traceback
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.colocated_python import serialization
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import training_nodes
from colocated_wire import deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2


def emit(**fields):
    print(json.dumps(fields), flush=True)


def measure(fn, policy):
    """The first (warm-up) result and the median of timed runs; the policy of
    bench/common/measure.ts."""
    start = time.perf_counter()
    result = fn()
    warm = 1
    while warm < policy["warmupRuns"] and (time.perf_counter() - start) * 1e3 < policy["warmupMs"]:
        fn()
        warm += 1
    samples = []
    timed_start = time.perf_counter()
    while len(samples) < policy["minRuns"] or (
        len(samples) < policy["maxRuns"]
        and (time.perf_counter() - timed_start) * 1e3 < policy["budgetMs"]
    ):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return result, {"medianMs": statistics.median(samples), "runs": len(samples)}


def leaf_key(i, leaf_count):
    return f"p{i:0{len(str(leaf_count - 1))}d}"


def build_specs(case, device_ids, devices_by_id):
    """The case's (treedef, leaves) as JAX objects; test/support/build-specs.ts builds the same
    in TypeScript."""
    ids = device_ids if device_ids is not None else range(int(np.prod(case["meshShape"])))
    grid = np.array([devices_by_id[i] for i in ids]).reshape(case["meshShape"])
    mesh = Mesh(grid, tuple(case["axisNames"]))

    def sharding(spec):
        return NamedSharding(
            mesh, PartitionSpec(*(tuple(e) if isinstance(e, list) else e for e in spec))
        )

    specs = case["shardings"]
    if case["tree"] == "nested":
        tree = build_blueprint(case["blueprint"], lambda k: sharding(specs[k]))
        flat, treedef = jax.tree_util.tree_flatten(tree)
        return treedef, flat
    shared = [sharding(spec) for spec in specs]
    # "freshShardings": every leaf gets a NamedSharding of its own, as programs make them.
    fresh = case.get("freshShardings", False)
    dtype = np.dtype(case["dtype"])
    shape = tuple(case["leafShape"])
    leaves = [
        jax.ShapeDtypeStruct(
            shape,
            dtype,
            sharding=sharding(specs[i % len(specs)]) if fresh else shared[i % len(specs)],
        )
        for i in range(case["leafCount"])
    ]
    n = case["leafCount"]
    tree = leaves if case["tree"] == "list" else {leaf_key(i, n): x for i, x in enumerate(leaves)}
    flat, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, flat


def build_blueprint(blueprint, sharding):
    """A nested case's pytree (S5, S6), a leaf's sharding from `sharding` (called once per
    leaf); test/support/build-specs.ts builds the same from the same blueprint."""
    kinds = blueprint["leafKinds"]

    def node_class(name):
        module, _, qualname = name.partition(".")
        assert module == training_nodes.__name__, name
        return getattr(training_nodes, qualname)

    def build(node):
        if node is None:
            return None
        if "leaf" in node:
            kind = kinds[node["leaf"]]
            dtype = getattr(jnp, kind["dtype"])
            return jax.ShapeDtypeStruct(
                tuple(kind["shape"]), dtype, sharding=sharding(kind["sharding"])
            )
        if "list" in node:
            return [build(x) for x in node["list"]]
        if "tuple" in node:
            return tuple(build(x) for x in node["tuple"])
        if "dict" in node:
            return {k: build(v) for k, v in node["dict"].items()}
        if "namedtuple" in node:
            return node_class(node["namedtuple"])(
                **{k: build(v) for k, v in node["fields"].items()}
            )
        data = {k: build(v) for k, v in node["data"].items()}
        return node_class(node["custom"])(**data, **node["meta"])

    return build(blueprint["root"])


def side_functions(side, treedef, leaves):
    """(encode, decode, check) of a side; check compares a decoded value with the input."""
    if side == "b":
        return (
            lambda: serialize_specs(treedef, leaves),
            deserialize_specs,
            lambda out: out[0] == treedef and list(out[1]) == leaves,
        )
    if side == "c":
        return (
            lambda: serialization._serialize((treedef, tuple(leaves))),
            serialization._deserialize,
            lambda out: out[0] == treedef and list(out[1]) == leaves,
        )
    if side == "d2":
        # Each leaf through JAX's own _serialize on its own: its table of equal objects never
        # sees a second leaf, so every leaf carries its full mesh (the cost before dedup).
        return (
            lambda: (
                [serialization._serialize(treedef)]
                + [serialization._serialize(leaf) for leaf in leaves]
            ),
            lambda blobs: [serialization._deserialize(b) for b in blobs],
            lambda out: out[0] == treedef and out[1:] == leaves,
        )
    raise ValueError(f"unknown side {side}")


def parse_limit(treedef, leaves, policy):
    """What no Python reader of the schema can beat on a tree: upb's parse of its payload as 1.2
    writes it (keys in full), plus tree_unflatten of the same tree with its leaves ready."""
    data = serialize_specs(treedef, leaves, target_minor_version=2)
    gc.collect()

    def parse_and_unflatten():
        payload_pb2.SpecsPayload.FromString(data)
        return jax.tree_util.tree_unflatten(treedef, leaves)

    return measure(parse_and_unflatten, policy)[1]


def run_side(case, side, treedef, leaves, policy):
    encode, decode, check = side_functions(side, treedef, leaves)
    gc.collect()
    data, enc = measure(encode, policy)
    gc.collect()
    out, dec = measure(lambda: decode(data), policy)
    if not check(out):
        raise AssertionError("decoding did not give back the treedef and leaves")
    blobs = [data] if isinstance(data, bytes) else data
    result = {"bytes": sum(len(b) for b in blobs), "encode": enc, "decode": dec}
    if side == "b":
        result["sha256"] = hashlib.sha256(data).hexdigest()
        if case["scenario"] not in ("S3", "S4"):
            result["limit"] = {"decode": parse_limit(treedef, leaves, policy)}
    if side in ("b", "c"):
        # What a general-purpose compressor makes of it: the rival a user has in one line.
        result["compressed"] = {
            "zlib9": len(zlib.compress(data, 9)),
            "lzma": len(lzma.compress(data)),
        }
    return result


def main():
    job = json.load(sys.stdin)
    devices = jax.devices()
    if len(devices) != job["deviceCount"]:
        raise SystemExit(f"expected {job['deviceCount']} devices, JAX has {len(devices)}")
    # bench/codec/python.ts times the startup; the thread count says why many devices are costly.
    emit(
        type="startup",
        threads=len(os.listdir("/proc/self/task")),
        jax=jax.__version__,
        python=platform.python_version(),
    )
    devices_by_id = {d.id: d for d in devices}
    for item in job["cases"]:
        case = item["case"]
        treedef, leaves = build_specs(case, item["deviceIds"], devices_by_id)
        for side in item["sides"]:
            try:
                result = run_side(case, side, treedef, leaves, job["policy"])
                emit(type="result", case=case["id"], side=side, **result)
            except Exception as e:  # reported per side; the other sides still run
                traceback.print_exc()
                emit(type="error", case=case["id"], side=side, message=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Tearing down thousands of CPU devices takes longer than the benchmark (65 s for 8,192).
    os._exit(0)
