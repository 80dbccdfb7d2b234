"""The load bench's programs run in-process: the JAX work of a worker's call, without gRPC.

Each call does what the worker does with an Execute of the same program: places its input
bytes (worker/arrays.place_inputs), runs the function, waits for its outputs and reads them
back as the response's specs and bytes (worker/execute.describe_outputs), with the worker's
allocator (worker/memory.py). One thread gives the serial rate; `--threads N` runs N threads
under the worker's own protection of XLA's CPU client (worker/device_turn.TURN), as its calls
would. Prints one JSON object a line per program and thread count: calls, seconds, calls/s
and ms a call.

    .venv/bin/python bench/load/load_inprocess.py --calls 3000 --threads 1 8 64
    .venv/bin/python bench/load/load_inprocess.py --program '8 devices'   # 1 thread, and 4
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

from colocated_wire.worker import memory

memory.restart_with_allocator(memory.AUTO, memory.DEFAULT_RETAINED_BYTES)  # as the worker's
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402 - after the flags above
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding  # noqa: E402

from colocated_wire import examples  # noqa: E402
from colocated_wire.version import SCHEMA_MINOR_VERSION  # noqa: E402
from colocated_wire.worker.arrays import direct_puts, place_inputs  # noqa: E402
from colocated_wire.worker.device_turn import CALLS_IN_FLIGHT  # noqa: E402
from colocated_wire.worker.execute import describe_outputs, run_on_devices  # noqa: E402

WARM_UP_CALLS = 300


class AlwaysActive:
    """A context whose call is always wanted: the in-process calls have no client."""

    def is_active(self) -> bool:
        return True

    def add_callback(self, callback) -> bool:
        return True


def programs() -> dict[str, tuple[list[jax.ShapeDtypeStruct], list[jax.Device]]]:
    """The load bench's programs (bench/load/load-calls.ts): affine on one device, and on the 2x4
    mesh of 8 devices with every input float32[8, 4] sharded over both axes."""
    devices = jax.devices()
    one = SingleDeviceSharding(devices[0])
    mesh = Mesh(np.array(devices).reshape(2, 4), ("x", "y"))
    over8 = NamedSharding(mesh, PartitionSpec("x", "y"))
    small = [jax.ShapeDtypeStruct(s, np.float32, sharding=one) for s in ((8, 4), (), ())]
    many = [jax.ShapeDtypeStruct((8, 4), np.float32, sharding=over8)] * 3
    return {"one device": (small, devices[:1]), "8 devices": (many, devices)}


def inputs(specs: list[jax.ShapeDtypeStruct]) -> list[bytes]:
    return [np.full(s.shape, 2, np.float32).tobytes() for s in specs]


def calls_at(threads: int, calls: int, specs, devices) -> dict:
    data = inputs(specs)
    context = AlwaysActive()
    direct = direct_puts(specs, devices)

    def one() -> None:  # as worker/execute.execute
        arrays = place_inputs(specs, data, devices, direct)
        result = run_on_devices("affine", examples.affine, tuple(arrays), {}, devices, context)
        describe_outputs("affine", result, SCHEMA_MINOR_VERSION)

    for _ in range(WARM_UP_CALLS):
        one()
    left = [calls]
    lock = threading.Lock()

    def loop() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            one()

    pool = [threading.Thread(target=loop) for _ in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - started
    return {
        "threads": threads,
        "calls": calls,
        "seconds": seconds,
        "callsPerSecond": calls / seconds,
        "msPerCall": 1000 * seconds / calls,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, CALLS_IN_FLIGHT],
        help="thread counts (default: 1, and as many as the protection lets run at once)",
    )
    p.add_argument("--program", choices=["one device", "8 devices", "both"], default="both")
    a = p.parse_args()
    for name, (specs, devices) in programs().items():
        if a.program not in ("both", name):
            continue
        for threads in a.threads:
            row = calls_at(threads, a.calls, specs, devices)
            print(json.dumps({"program": name, **row}), flush=True)


if __name__ == "__main__":
    main()
