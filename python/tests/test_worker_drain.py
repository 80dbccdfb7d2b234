"""SIGTERM on a real worker process: health NOT_SERVING, new calls UNAVAILABLE, the call in
flight finishes, exit 0; past the grace period the call is cut and the exit is still 0.

The call is held by worker_gate.hold on a FIFO the test opens when the call may end, and
every step waits for what the worker writes on stderr, never for time.
"""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import numpy as np
import pytest
import worker_gate
from grpc_health.v1 import health_pb2, health_pb2_grpc
from test_worker import X, float_spec, program, request

from colocated_wire._gen.colocated.v1 import service_pb2_grpc

TESTS = Path(__file__).parent


class Worker:
    """`python -m colocated_wire.worker` with the gate allowed, and its stderr as it comes."""

    def __init__(self, fifo: Path, *flags: str):
        env = {**os.environ, "XLA_FLAGS": "", "WORKER_GATE": str(fifo)}
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
        args = ["--port", "0", "--devices", "8", "--allow-module", "worker_gate", *flags]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "colocated_wire.worker", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self.said = threading.Condition()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        first = self.process.stdout.readline()
        assert first.startswith("listening on "), first + self.stderr()
        self.target = first.split()[-1]

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            with self.said:
                self.lines.append(line)
                self.said.notify_all()
        with self.said:
            self.lines.append("")  # end of stream
            self.said.notify_all()

    def stderr(self) -> str:
        with self.said:
            return "".join(self.lines)

    def wait_for(self, text: str) -> None:
        """Returns once the worker has written `text` on stderr; fails if it exits first."""
        with self.said:
            found = self.said.wait_for(
                lambda: any(text in line for line in self.lines) or "" in self.lines, timeout=300
            )
            assert found and any(text in line for line in self.lines), self.stderr()


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "gate"
    os.mkfifo(path)
    return path


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def open_gate(fifo: Path) -> None:
    """Lets every held call return: opening the FIFO for writing and closing it ends their read."""
    with open(fifo, "wb"):
        pass


def test_sigterm_drains_then_exits_0(fifo, mesh):
    worker = Worker(fifo, "--grace-period", "600")
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    try:
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            health = health_pb2_grpc.HealthStub(channel)
            serving = health.Check(health_pb2.HealthCheckRequest()).status
            held = stub.Execute.future(hold)
            worker.wait_for("worker_gate: holding")
            worker.process.send_signal(signal.SIGTERM)
            worker.wait_for("colocated_wire.worker: draining")
            with pytest.raises(grpc.RpcError) as refused:
                stub.Execute(hold)
            status = health.Check(health_pb2.HealthCheckRequest()).status
            open_gate(fifo)
            result = held.result()
        code = worker.process.wait(timeout=300)
    finally:
        worker.process.kill()
    assert serving == health_pb2.HealthCheckResponse.SERVING
    assert status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert refused.value.details() == "the worker is shutting down and takes no new calls"
    np.testing.assert_array_equal(np.frombuffer(result.outputs[0].data, np.float32), X.ravel())
    assert code == 0, worker.stderr()


def test_a_call_past_the_grace_period_is_cut_and_the_worker_exits_0(fifo, mesh):
    worker = Worker(fifo, "--grace-period", "0")
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    try:
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            held = stub.Execute.future(hold)
            worker.wait_for("worker_gate: holding")
            worker.process.send_signal(signal.SIGTERM)
            code = worker.process.wait(timeout=300)
            error = held.exception()
    finally:
        worker.process.kill()
    assert code == 0, worker.stderr()
    assert "1 calls still running after the 0.0 s grace period are cancelled" in worker.stderr()
    assert error is not None
    assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
