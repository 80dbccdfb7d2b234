"""The devices' turn (worker/device_turn.py): one call at a time runs its function on several
devices; a call on one device never waits; a call whose deadline passes while it waits leaves
without running. The servicer over a real channel, a call held by worker_gate.hold."""

import grpc
import numpy as np
import worker_gate
from jax.sharding import Mesh, SingleDeviceSharding
from test_worker import SDS, X, Y, float_spec, program, refusal, request, served
from test_worker_limits import ALLOWED

from colocated_wire import examples
from colocated_wire.worker.device_turn import TURN
from colocated_wire.worker.limits import CallLimits
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import ProgramCache
from colocated_wire.worker.service import ColocatedWorker


def service() -> ColocatedWorker:
    policy = WorkerPolicy(allowed_modules=ALLOWED)
    return ColocatedWorker(policy, CallLimits(), ProgramCache(policy, 8))


def assert_floats(data: bytes, want: np.ndarray) -> None:
    np.testing.assert_array_equal(np.frombuffer(data, np.float32), want.ravel())


def held(stub, gate, req):
    """Starts a call that the gate holds, and returns its future once it is inside."""
    future = stub.Execute.future(req)
    assert gate.entered.acquire(timeout=120), "the held call never reached the function"
    return future


def test_a_call_over_several_devices_waits_for_the_turn_and_leaves_when_cancelled(
    mesh_2x4, gate, capfd
):
    hold = program(worker_gate.hold, mesh_2x4, float_spec(mesh_2x4))
    affine = program(examples.affine, mesh_2x4, *[float_spec(mesh_2x4)] * 3)
    svc = service()
    with served(svc, threads=8) as stub:
        first = held(stub, gate, request(hold, X))
        late = stub.Execute.future(request(affine, X, Y, Y), timeout=600)
        assert TURN.wait_for_waiting(1, 120), "the second call never waited for the turn"
        late.cancel()
        assert TURN.wait_for_waiting(0, 120), "the cancelled call kept waiting"
        gate.release.set()
        assert_floats(first.result().outputs[0].data, X)
        assert svc.limits.wait_idle(120)
        after = stub.Execute(request(affine, X, Y, Y))  # the turn is free again
    assert late.cancelled()
    # It left the queue when its client stopped waiting, and never ran.
    assert "cancelled or passed its deadline while it waited for its turn" in capfd.readouterr().err
    assert_floats(after.outputs[0].data, X * Y + Y)


def test_a_call_on_one_device_runs_while_the_turn_is_held(mesh_2x4, gate):
    hold = program(worker_gate.hold, mesh_2x4, float_spec(mesh_2x4))
    device = mesh_2x4.devices.flat[0]
    spec = SDS((8, 4), np.float32, sharding=SingleDeviceSharding(device))
    single = program(examples.affine, Mesh(np.array([device]), ("x",)), spec, spec, spec)
    with served(service(), threads=8) as stub:
        first = held(stub, gate, request(hold, X))
        got = stub.Execute(request(single, X, Y, Y), timeout=120)  # no turn needed
        gate.release.set()
        first.result()
    assert_floats(got.outputs[0].data, X * Y + Y)


def test_a_function_that_fails_gives_the_turn_back(mesh_2x4):
    fail = program(examples.fail, mesh_2x4, float_spec(mesh_2x4))
    affine = program(examples.affine, mesh_2x4, *[float_spec(mesh_2x4)] * 3)
    with served(service(), threads=8) as stub:
        e = refusal(stub, request(fail, X))
        got = stub.Execute(request(affine, X, Y, Y), timeout=120)
    assert e.code() == grpc.StatusCode.UNKNOWN
    assert_floats(got.outputs[0].data, X * Y + Y)
