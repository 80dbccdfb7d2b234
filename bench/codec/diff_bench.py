"""The Python half of the diff bench (bench/codec/diff.ts): `colocated_wire.diff(a, b)` of payload
pairs, beside `deserialize_specs` of both, on the bytes TypeScript wrote.

bench/codec/python.ts starts it with JAX on as many CPU devices as the payloads' mesh (decoding
lifts onto them; the diff needs none) and writes a job on stdin: {"policy", "pairs": [{"id",
"a", "b"}]}, the payloads as base64. One JSON object per line goes to stdout: "startup", then a
"result" or "error" per pair. Teardown is skipped (os._exit), as in jax_bench.py.
"""

import base64
import gc
import json
import os
import platform
import sys
import traceback

import jax

from colocated_wire import deserialize_specs, diff
from jax_bench import emit, measure


def run_pair(a: bytes, b: bytes, policy: dict) -> dict:
    gc.collect()
    _, decode_both = measure(lambda: (deserialize_specs(a), deserialize_specs(b)), policy)
    gc.collect()
    result, timing = measure(lambda: diff(a, b), policy)
    return {"decodeBoth": decode_both, "diff": timing, "differingLeaves": result.differing_leaves}


def main() -> None:
    job = json.load(sys.stdin)
    emit(type="startup", jax=jax.__version__, python=platform.python_version())
    for pair in job["pairs"]:
        a, b = base64.b64decode(pair["a"]), base64.b64decode(pair["b"])
        try:
            emit(type="result", id=pair["id"], **run_pair(a, b, job["policy"]))
        except Exception as e:  # reported per pair; the others still run
            traceback.print_exc()
            emit(type="error", id=pair["id"], message=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
