"""The worker's Prometheus metrics (worker/metrics.py), scraped from a real worker process
started with --metrics-port 0 after calls the test makes, and counted exactly.

A call is held by worker_gate.hold until the test opens the FIFO, so a scrape sees it in
flight and a second call is refused for want of a slot; every step waits for what the worker
writes on stderr, never for time.
"""

import os
import signal
import socket
import subprocess
import sys
from urllib.request import urlopen

import grpc
import jaxlib
import numpy as np
import pytest
import worker_gate
from prometheus_client.parser import text_string_to_metric_families
from test_worker import X, Y, float_spec, program, request
from test_worker_drain import Worker, open_gate
from test_worker_progress import release_request
from test_worker_sharded import Req, upload

from colocated_wire import examples
from colocated_wire._gen.colocated.v1 import service_pb2, service_pb2_grpc
from colocated_wire.worker import metrics as worker_metrics
from colocated_wire.worker.runtime import worker_runtime

EXAMPLES = ("--allow-module", "colocated_wire.examples")
METRICS_LINE = "colocated_wire.worker: metrics on "


def metrics_url(worker: Worker) -> str:
    """The address the worker says it serves its metrics on."""
    worker.wait_for(METRICS_LINE)
    said = next(line for line in worker.lines if METRICS_LINE in line)
    return said.split(METRICS_LINE)[1].strip()


class Scrape:
    """One scrape of the metrics, its samples by name and labels."""

    def __init__(self, url: str):
        text = urlopen(url, timeout=60).read().decode()
        self.samples = {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def __call__(self, name: str, **labels: str) -> float:
        """The sample's value; KeyError when the worker does not export it."""
        return self.samples[(name, frozenset(labels.items()))]

    def calls(self) -> dict[tuple[str, str], float]:
        """colocated_worker_calls_total by (method, code), those above 0."""
        return {
            (dict(labels)["method"], dict(labels)["code"]): value
            for (name, labels), value in self.samples.items()
            if name == "colocated_worker_calls_total" and value
        }


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "gate"
    os.mkfifo(path)
    return path


def stopped(worker: Worker) -> None:
    worker.process.kill()
    worker.process.wait(timeout=300)


def test_calls_latency_bytes_cache_and_refusals_are_counted_exactly(fifo, mesh):
    worker = Worker(
        fifo,
        *EXAMPLES,
        *("--max-concurrent-calls", "1", "--program-cache", "1", "--metrics-port", "0"),
    )
    specs = [float_spec(mesh)] * 3
    affine = program(examples.affine, mesh, *specs)
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    sent: dict[str, int] = {}
    received: dict[str, int] = {}

    def unary(method: str, stub, req):
        sent[method] = sent.get(method, 0) + req.ByteSize()
        response = getattr(stub, method)(req)
        received[method] = received.get(method, 0) + response.ByteSize()
        return response

    try:
        url = metrics_url(worker)
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            client = service_pb2.VersionRange(min_version=0, max_version=0)
            unary("GetVersion", stub, service_pb2.GetVersionRequest(client=client))
            unary("GetTopology", stub, service_pb2.GetTopologyRequest())
            load = service_pb2.LoadProgramRequest(version=0, program=affine)
            handle = unary("LoadProgram", stub, load).handle  # a miss
            by_handle = service_pb2.ExecuteRequest(version=0, handle=handle)
            for a in (X, Y, Y):
                by_handle.inputs.add(data=a.tobytes())
            answers = [unary("Execute", stub, by_handle) for _ in range(3)]  # 3 hits
            sharded = [Req(start=service_pb2.ExecuteStart(version=0, handle=handle))]
            sharded += [*upload(specs, [X, Y, Y]), Req(end=True)]
            streamed = list(stub.ExecuteSharded(iter(sharded)))  # a hit
            empty = service_pb2.LoadProgramRequest(version=0)
            with pytest.raises(grpc.RpcError) as no_program:
                stub.LoadProgram(empty)
            unknown = service_pb2.ExecuteRequest(version=0, handle={"digest": bytes(32)})
            with pytest.raises(grpc.RpcError) as not_found:
                stub.Execute(unknown)  # a miss
            held = stub.Execute.future(hold)  # a miss, which evicts affine
            worker.wait_for("worker_gate: holding")
            with pytest.raises(grpc.RpcError) as refused:
                stub.Execute(by_handle)
            while_held = Scrape(url)
            open_gate(fifo)
            released = held.result()
            after = Scrape(url)
    finally:
        stopped(worker)

    assert no_program.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not_found.value.code() == grpc.StatusCode.NOT_FOUND
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    np.testing.assert_array_equal(
        np.frombuffer(answers[0].outputs[0].data, np.float32), (X * Y + Y).ravel()
    )
    assert streamed[-1].WhichOneof("part") == "end"

    assert after.calls() == {
        ("GetVersion", "OK"): 1,
        ("GetTopology", "OK"): 1,
        ("LoadProgram", "OK"): 1,
        ("LoadProgram", "INVALID_ARGUMENT"): 1,
        ("Execute", "OK"): 4,
        ("Execute", "NOT_FOUND"): 1,
        ("Execute", "RESOURCE_EXHAUSTED"): 1,
        ("ExecuteSharded", "OK"): 1,
    }
    seconds = "colocated_worker_call_duration_seconds"
    for method, calls in [
        ("GetVersion", 1),
        ("GetTopology", 1),
        ("LoadProgram", 2),
        ("Execute", 6),
        ("ExecuteSharded", 1),
    ]:
        assert after(f"{seconds}_count", method=method) == calls, method
        assert after(f"{seconds}_bucket", method=method, le="+Inf") == calls, method
        assert after(f"{seconds}_sum", method=method) > 0, method
    assert while_held(f"{seconds}_count", method="Execute") == 5  # the held call is not done

    requests = "colocated_worker_request_bytes_total"
    responses = "colocated_worker_response_bytes_total"
    for method in ("GetVersion", "GetTopology"):
        assert after(requests, method=method) == sent[method], method
        assert after(responses, method=method) == received[method], method
    assert after(requests, method="LoadProgram") == sent["LoadProgram"] + empty.ByteSize()
    assert after(responses, method="LoadProgram") == received["LoadProgram"]
    execute_sent = sent["Execute"] + unknown.ByteSize() + hold.ByteSize() + by_handle.ByteSize()
    assert after(requests, method="Execute") == execute_sent
    assert after(responses, method="Execute") == received["Execute"] + released.ByteSize()
    assert after(requests, method="ExecuteSharded") == sum(r.ByteSize() for r in sharded)
    assert after(responses, method="ExecuteSharded") == sum(r.ByteSize() for r in streamed)

    assert while_held("colocated_worker_calls_in_flight") == 1
    assert while_held("colocated_worker_request_bytes_in_flight") == hold.ByteSize()
    assert after("colocated_worker_calls_in_flight") == 0
    assert after("colocated_worker_request_bytes_in_flight") == 0
    assert after("colocated_worker_calls_waiting_for_turn") == 0
    assert after("colocated_worker_sessions_open") == 0
    # What it runs, all of it in one sample's labels.
    runtime = {f.name: v for f, v in worker_runtime().ListFields()}
    assert runtime["jaxlib"] == jaxlib.__version__
    assert after("colocated_worker_runtime_info", **runtime) == 1
    refusals = "colocated_worker_refusals_total"
    assert after(refusals, reason="calls") == 1
    assert after(refusals, reason="bytes") == after(refusals, reason="draining") == 0
    assert after("colocated_worker_program_cache_hits_total") == 4
    assert after("colocated_worker_program_cache_misses_total") == 3
    assert after("colocated_worker_program_cache_evictions_total") == 1
    assert (after("colocated_worker_draining"), after("colocated_worker_healthy")) == (0, 1)
    assert after("process_resident_memory_bytes") > 0


def test_a_drain_counts_its_refusals_and_says_draining(fifo, mesh):
    worker = Worker(fifo, "--grace-period", "600", "--metrics-port", "0")
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    try:
        url = metrics_url(worker)
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            held = stub.Execute.future(hold)
            worker.wait_for("worker_gate: holding")
            before = Scrape(url)
            worker.process.send_signal(signal.SIGTERM)
            worker.wait_for("colocated_wire.worker: draining")
            with pytest.raises(grpc.RpcError) as refused:
                stub.Execute(hold)
            draining = Scrape(url)
            open_gate(fifo)
            held.result()
        code = worker.process.wait(timeout=300)
    finally:
        worker.process.kill()
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert code == 0, worker.stderr()
    assert before("colocated_worker_draining") == 0
    assert draining("colocated_worker_draining") == 1
    assert draining("colocated_worker_refusals_total", reason="draining") == 1
    assert draining.calls() == {("Execute", "UNAVAILABLE"): 1}  # the held call is still running
    assert draining("colocated_worker_calls_in_flight") == 1
    assert draining("colocated_worker_healthy") == 1  # a drain's refusals are no lack of progress


def test_healthy_follows_health(tmp_path, mesh):
    flags = ("--unhealthy-after", "1", "--metrics-port", "0")
    worker = Worker(tmp_path / "unused-gate", *EXAMPLES, *flags)
    blocking = request(program(examples.block_until_released, mesh, float_spec(mesh)), X)
    try:
        url = metrics_url(worker)
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            with pytest.raises(grpc.RpcError):
                stub.Execute(blocking, timeout=1.0)
            worker.wait_for("health: NOT_SERVING: a call still runs")
            stuck = Scrape(url)
            stub.Execute(release_request(mesh), timeout=300)
            worker.wait_for("health: SERVING again")
            again = Scrape(url)
    finally:
        stopped(worker)
    assert stuck("colocated_worker_healthy") == 0
    assert again("colocated_worker_healthy") == 1


def test_without_metrics_port_the_worker_serves_no_metrics(fifo):
    worker = Worker(fifo)
    try:
        worker.wait_for("CPU devices")  # said after `listening on`, and after any metrics line
    finally:
        stopped(worker)
    assert "metrics on" not in worker.stderr()


def refused_at_start(port: int) -> subprocess.CompletedProcess:
    """A worker started with --metrics-port `port`, which must exit at once."""
    return subprocess.run(
        [sys.executable, "-m", "colocated_wire.worker", "--metrics-port", str(port)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_metrics_port_it_cannot_bind_is_refused_with_status_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        in_use = refused_at_start(port)
    past_the_last = refused_at_start(70000)
    assert in_use.returncode == past_the_last.returncode == 2, in_use.stderr + past_the_last.stderr
    assert f"--metrics-port {port}: cannot serve metrics on 127.0.0.1: " in in_use.stderr
    assert "--metrics-port 70000: cannot serve metrics on 127.0.0.1: " in past_the_last.stderr


class EndedContext:
    """What metrics.status reads of a call's context once its work has returned."""

    def __init__(self, code=None, active=True, remaining=None):
        self._code, self._active, self._remaining = code, active, remaining

    def code(self):
        return self._code

    def is_active(self):
        return self._active

    def time_remaining(self):
        return self._remaining


Code = grpc.StatusCode


@pytest.mark.parametrize(
    ("context", "ending", "counted"),
    [
        (EndedContext(), Code.OK, Code.OK),
        (EndedContext(), Code.UNKNOWN, Code.UNKNOWN),  # an exception that set no status
        (EndedContext(code=Code.NOT_FOUND), Code.UNKNOWN, Code.NOT_FOUND),  # aborted
        (EndedContext(active=False, remaining=0.0), Code.OK, Code.DEADLINE_EXCEEDED),
        (EndedContext(active=False, remaining=5.0), Code.OK, Code.CANCELLED),
        (EndedContext(active=False), Code.OK, Code.CANCELLED),
    ],
)
def test_a_call_counts_with_the_status_its_client_got(context, ending, counted):
    assert worker_metrics.status(context, ending) == counted
