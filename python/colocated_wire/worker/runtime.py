"""What this worker runs, for its GetVersion answer and its metrics.

The people who run colocated Python on pods fight version skew first: one host with another
jaxlib shows itself only when a collective fails. So every worker says its colocated-wire,
Python, JAX, jaxlib, NumPy and cloudpickle versions, its platform and its device kind, and a
controller compares them before a group forms (src/rpc/group/group-runtime.ts).
"""

from __future__ import annotations

import functools
import platform

import cloudpickle
import jax
import jaxlib
import numpy

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire._version import __version__


@functools.cache
def worker_runtime() -> service_pb2.WorkerRuntime:
    """This process's runtime, read once (after JAX's backend has started)."""
    devices = jax.local_devices()
    return service_pb2.WorkerRuntime(
        colocated_wire=__version__,
        python=platform.python_version(),
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
        numpy=numpy.__version__,
        cloudpickle=cloudpickle.__version__,
        platform=jax.default_backend(),
        device_kind=devices[0].device_kind if devices else "",
    )
