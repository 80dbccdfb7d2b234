"""Test setup: JAX on CPU with 1024 host devices, started once per session.

The device count is fixed when JAX first initializes, so it is set here,
before anything imports jax. A 128x8 mesh of 1024 devices is part of the
size test.
"""

import os
import subprocess
import threading
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1024")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import worker_gate  # noqa: E402

from colocated_wire.worker.call_context import CallContext  # noqa: E402


@pytest.fixture(scope="session")
def devices():
    devs = jax.devices()
    assert len(devs) >= 64, "tests need many CPU devices (XLA_FLAGS device count)"
    return devs


@pytest.fixture(scope="session")
def mesh_2x4(devices):
    return jax.sharding.Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


@pytest.fixture
def gate():
    """worker_gate, emptied: a call it holds returns once the test sets `gate.release`."""
    worker_gate.release.clear()
    while worker_gate.entered.acquire(blocking=False):
        pass
    yield worker_gate
    worker_gate.release.set()  # never leave a server thread held


@pytest.fixture
def cancels(monkeypatch):
    """A semaphore released each time the worker has read a `cancel` and cancelled its call."""
    done = threading.Semaphore(0)
    cancel = CallContext.cancel

    def cancelled(self):
        cancel(self)
        done.release()

    monkeypatch.setattr(CallContext, "cancel", cancelled)
    return done


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    """Throwaway TLS files (scripts/test-certs.sh): a CA, a server and a client certificate."""
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory) -> Path:
    """A second CA and certificates it signed, which a worker of `certs` must not trust."""
    return make_certs(tmp_path_factory.mktemp("other-certs"))


def make_certs(folder: Path) -> Path:
    script = Path(__file__).resolve().parents[2] / "scripts" / "test-certs.sh"
    subprocess.run(["bash", str(script), str(folder)], check=True)
    return folder
