"""Limits, cancellation, drain, and no leak after faulty calls: the servicer over a real channel.

A call is held inside the worker by worker_gate.hold until the test sets
worker_gate.release, so every test decides exactly when a call ends.
"""

import gc
import threading
from concurrent import futures

import grpc
import jax
import numpy as np
import pytest
import worker_gate
from test_worker import X, Y, float_spec, program, refusal, request, served

from colocated_wire import examples
from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker import execute as worker_execute
from colocated_wire.worker.limits import CallLimits
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import ProgramCache
from colocated_wire.worker.service import ColocatedWorker

ALLOWED = frozenset({"colocated_wire.examples", "worker_gate"})


class Watched(ColocatedWorker):
    """The worker, telling the test when a call's client has gone (cancelled)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gone = threading.Event()

    def Execute(self, call, context):  # noqa: N802
        context.add_callback(self.gone.set)
        return super().Execute(call, context)


def service(capacity=8, **limits) -> Watched:
    policy = WorkerPolicy(allowed_modules=ALLOWED)
    return Watched(policy, CallLimits(**limits), ProgramCache(policy, capacity))


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def held_inside(stub, gate, req):
    """Starts a call that the gate holds, and returns its future once it is inside."""
    held = stub.Execute.future(req)
    assert gate.entered.acquire(timeout=120), "the held call never reached the function"
    return held


def floats(response) -> np.ndarray:
    return np.frombuffer(response.outputs[0].data, np.float32)


def test_a_call_beyond_max_concurrent_calls_is_refused_at_once(mesh, gate):
    hold = program(worker_gate.hold, mesh, float_spec(mesh))
    affine = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    svc = service(max_calls=1)
    with served(svc) as stub:
        held = held_inside(stub, gate, request(hold, X))
        e = refusal(stub, request(affine, X, Y, Y))
        gate.release.set()
        np.testing.assert_array_equal(floats(held.result()), X.ravel())
        got = stub.Execute(request(affine, X, Y, Y))  # the slot is free again
    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert e.details() == (
        "the worker is running 1 calls, its limit (--max-concurrent-calls); retry later"
    )
    np.testing.assert_array_equal(floats(got), (X * Y + Y).ravel())


def test_bytes_beyond_max_inflight_bytes_are_refused_at_once(mesh, gate):
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    affine = request(program(examples.affine, mesh, *[float_spec(mesh)] * 3), X, Y, Y)
    svc = service(max_bytes=hold.ByteSize() + affine.ByteSize() - 1)
    with served(svc) as stub:
        alone = stub.Execute(affine)  # fits on its own
        held = held_inside(stub, gate, hold)
        e = refusal(stub, affine)
        gate.release.set()
        held.result()
    np.testing.assert_array_equal(floats(alone), (X * Y + Y).ravel())
    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert e.details() == (
        f"{affine.ByteSize()} more bytes would pass the worker's limit of"
        f" {svc.state.limits.max_bytes} bytes in flight (--max-inflight-bytes;"
        f" {hold.ByteSize()} in flight now)"
    )
    assert (svc.state.limits.calls, svc.state.limits.bytes) == (0, 0)


def test_a_cancelled_call_stops_before_its_outputs(mesh, gate, monkeypatch):
    described = []
    monkeypatch.setattr(worker_execute, "describe_outputs", lambda *a: described.append(a))
    svc = service()
    with served(svc) as stub:
        held = held_inside(
            stub, gate, request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
        )
        held.cancel()
        assert svc.gone.wait(120), "the worker never saw the cancellation"
        gate.release.set()
        assert svc.state.limits.wait_idle(120)
    assert held.cancelled()
    assert described == []  # the work stopped after the function, before reading outputs
    assert (svc.state.limits.calls, svc.state.limits.bytes) == (0, 0)


def test_a_drain_refuses_new_calls_and_waits_for_those_in_flight(mesh, gate):
    hold = program(worker_gate.hold, mesh, float_spec(mesh))
    svc = service()
    draining = threading.Event()
    svc.state.limits.on_drain(draining.set)
    with served(svc) as stub, futures.ThreadPoolExecutor(1) as pool:
        held = held_inside(stub, gate, request(hold, X))
        drained = pool.submit(svc.state.limits.drain, 600)
        assert draining.wait(120)
        e = refusal(stub, request(hold, X))
        version = stub.GetVersion(service_pb2.GetVersionRequest(client=svc_range()))
        assert not drained.done()  # still waiting for the held call
        gate.release.set()
        assert drained.result() is True
        np.testing.assert_array_equal(floats(held.result()), X.ravel())
    assert e.code() == grpc.StatusCode.UNAVAILABLE
    assert e.details() == "the worker is shutting down and takes no new calls"
    assert version.version == 1


def test_a_drain_past_its_grace_period_says_so(mesh, gate):
    hold = program(worker_gate.hold, mesh, float_spec(mesh))
    svc = service()
    with served(svc) as stub:
        held = held_inside(stub, gate, request(hold, X))
        assert svc.state.limits.drain(0) is False
        assert svc.state.limits.calls == 1
        gate.release.set()
        held.result()
    assert svc.state.limits.wait_idle(120)


def svc_range() -> service_pb2.VersionRange:
    return service_pb2.VersionRange(min_version=0, max_version=1)


def test_a_thousand_faulty_calls_leave_nothing_behind(mesh):
    """Counts what stays after the calls: programs kept, calls and bytes held, jax.Arrays alive,
    objects the garbage collector tracks. None may grow with the number of calls."""
    capacity = 4
    svc = service(capacity=capacity, max_bytes=4096)
    specs = [jax.ShapeDtypeStruct((8, n + 1), np.float32) for n in range(2 * capacity)]
    programs = [program(examples.fail, mesh, spec) for spec in specs]
    big = np.zeros(4096, np.uint8)
    corrupt = service_pb2.ExecuteRequest(version=0)
    corrupt.program.header.major_version = 7
    denied = program(examples.fail, mesh, float_spec(mesh))
    denied.function.by_name.module = "posix"
    denied.function.by_name.qualname = "system"

    def faulty(i: int) -> service_pb2.ExecuteRequest:
        prog = programs[i % len(programs)]
        shape = specs[i % len(specs)].shape
        kind = i % 6
        if kind == 0:  # loads (evicting another), then the function raises on placed arrays
            return request(prog, np.ones(shape, np.float32))
        if kind == 1:  # wrong input size
            return request(prog, np.ones(3, np.float32))
        if kind == 2:  # unknown handle
            return service_pb2.ExecuteRequest(handle=service_pb2.ProgramHandle(digest=bytes(32)))
        if kind == 3:
            return corrupt
        if kind == 4:
            return request(denied, X)
        return request(prog, big)  # over --max-inflight-bytes

    codes = set()
    with served(svc) as stub:

        def run(calls: range) -> None:
            for i in calls:
                codes.add(refusal(stub, faulty(i)).code())

        run(range(120))  # every kind and every program once, so caches are warm
        gc.collect()
        arrays, objects = len(jax.live_arrays()), len(gc.get_objects())
        run(range(120, 1120))
        gc.collect()
        grown = len(gc.get_objects()) - objects
        assert len(jax.live_arrays()) == arrays
    assert codes == {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    assert len(svc.state.programs) == capacity
    assert (svc.state.limits.calls, svc.state.limits.bytes) == (0, 0)
    assert grown < 200, f"{grown} more tracked objects after 1,000 faulty calls"
