"""A worker says what it runs in its GetVersion answer (worker/runtime.py): a controller
compares its members' before a group forms."""

import platform

import cloudpickle
import jax
import jaxlib
import numpy as np
from test_worker import served
from test_worker_limits import ALLOWED

from colocated_wire import __version__
from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker


def test_the_version_answer_says_what_the_worker_runs():
    with served(ColocatedWorker(WorkerPolicy(allowed_modules=ALLOWED))) as stub:
        answer = stub.GetVersion(service_pb2.GetVersionRequest(), timeout=60)
    assert answer.HasField("runtime")
    runtime = answer.runtime
    assert (runtime.colocated_wire, runtime.python) == (__version__, platform.python_version())
    assert (runtime.jax, runtime.jaxlib) == (jax.__version__, jaxlib.__version__)
    assert (runtime.numpy, runtime.cloudpickle) == (np.__version__, cloudpickle.__version__)
    assert (runtime.platform, runtime.device_kind) == ("cpu", jax.local_devices()[0].device_kind)
