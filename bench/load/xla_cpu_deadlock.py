"""XLA's CPU client hangs when many threads run computations over several devices.

A plain-JAX reproducer (no gRPC, no colocated_wire) and the report an upstream XLA
issue needs. Each run is a fresh process: `--threads` threads each call
`x * scale + shift` (two eager computations over 8 CPU devices, as
colocated_wire.examples.affine) and wait for the result, `--calls` times; a run in
which no call ends for `--stall` seconds is hung, and is killed. `--protect launch`
runs each call's function under one lock (its computations are launched one call
at a time; the wait for the result is not under the lock): the worker's protection
(python/colocated_wire/worker/device_turn.py).

    .venv/bin/python bench/load/xla_cpu_deadlock.py --runs 5          # hang rate, no protection
    .venv/bin/python bench/load/xla_cpu_deadlock.py --runs 5 --protect launch

Exit status 0 when no protected run hung or any unprotected one did (what the worker
relies on); 1 otherwise. The last line is JSON, for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

DEVICES = 8


def one_run(threads: int, calls: int, protect: str, stall: float) -> None:
    """The body of one run, in its own process: prints 'ok N' or 'hung N' (calls ended)."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    import threading

    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    on = NamedSharding(mesh, PartitionSpec("x", "y"))
    x, scale, shift = (jax.device_put(np.full((8, 4), v, np.float32), on) for v in (1, 2, 3))

    def affine(x, scale, shift):
        return x * scale + shift

    jax.block_until_ready(affine(x, scale, shift))
    launch = threading.Lock()
    ended = [0]

    def call() -> None:
        if protect == "launch":
            with launch:
                out = affine(x, scale, shift)
        else:
            out = affine(x, scale, shift)
        jax.block_until_ready(out)

    def thread() -> None:
        for _ in range(calls):
            call()
            ended[0] += 1

    pool = [threading.Thread(target=thread, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    seen, since = -1, time.monotonic()
    while any(t.is_alive() for t in pool):
        time.sleep(0.5)
        if ended[0] != seen:
            seen, since = ended[0], time.monotonic()
        elif time.monotonic() - since > stall:
            print(f"hung {ended[0]}", flush=True)
            os._exit(0)  # the stuck threads never return
    print(f"ok {ended[0]}", flush=True)
    os._exit(0)


def versions() -> dict[str, str]:
    """What an upstream report names: JAX, jaxlib, Python, the machine."""
    import jax
    import jaxlib

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--calls", type=int, default=500, help="calls a thread")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--protect", choices=["none", "launch", "both"], default="both")
    p.add_argument("--stall", type=float, default=20.0, help="seconds without a call ending")
    p.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.run:
        one_run(a.threads, a.calls, a.protect, a.stall)
    modes = ["none", "launch"] if a.protect == "both" else [a.protect]
    found = {"versions": versions(), "threads": a.threads, "calls_a_thread": a.calls}
    for mode in modes:
        hung = 0
        for i in range(a.runs):
            argv = [sys.executable, __file__, "--run", "--protect", mode]
            argv += ["--threads", str(a.threads), "--calls", str(a.calls), "--stall", str(a.stall)]
            out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout.split()
            if not out:
                raise SystemExit(f"run {i} ({mode}) printed nothing")
            hung += out[0] == "hung"
            print(f"{mode}: run {i + 1} of {a.runs}: {out[0]} after {out[1]} calls", flush=True)
        found[mode] = {"runs": a.runs, "hung": hung}
    print(json.dumps(found))
    protected_ok = found.get("launch", {"hung": 0})["hung"] == 0
    return 0 if protected_ok else 1


if __name__ == "__main__":
    sys.exit(main())
