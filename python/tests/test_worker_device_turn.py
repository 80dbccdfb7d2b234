"""The devices' turn (worker/device_turn.py): functions over several devices launch one call at
a time, at most CALLS_IN_FLIGHT such calls in flight; a call on one device never waits; a call
whose deadline passes while it waits leaves without running. The servicer over a real channel
(a call held by worker_gate.hold), and the protection alone."""

import threading

import grpc
import numpy as np
import pytest
import worker_gate
from jax.sharding import Mesh, SingleDeviceSharding
from test_worker import SDS, X, Y, float_spec, program, refusal, request, served
from test_worker_drain import Worker
from test_worker_limits import ALLOWED

from colocated_wire import examples
from colocated_wire.worker.device_turn import TURN, DeviceTurn, protects
from colocated_wire.worker.errors import Refused
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
        assert svc.state.limits.wait_idle(120)
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


# The protection itself (DeviceTurn), without gRPC or JAX: launches and waits are plain
# functions that record what runs at once, each held by an event until the test lets it go.

MANY = [object(), object()]  # two "devices": the protection applies
TIMEOUT = 120


class Context:
    """A call's context: active until `end()`, which runs its callbacks as gRPC does."""

    def __init__(self) -> None:
        self.active = True
        self.callbacks: list = []

    def is_active(self) -> bool:
        return self.active

    def add_callback(self, callback) -> bool:
        self.callbacks.append(callback)
        return True

    def end(self) -> None:
        self.active = False
        for callback in self.callbacks:
            callback()


class Calls:
    """Calls through one DeviceTurn, each in a thread: what ran, in what order, how many at once."""

    def __init__(self, turn: DeviceTurn) -> None:
        self.turn = turn
        self.changed = threading.Condition()
        self.launched: list[int] = []
        self.launching = 0
        self.most_launching = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.results: dict[int, object] = {}
        self.hold_launch: dict[int, threading.Event] = {}
        self.hold_wait: dict[int, threading.Event] = {}

    def start(self, n: int, context: Context | None = None, hold_launch: bool = False):
        self.hold_launch[n] = threading.Event()
        if not hold_launch:
            self.hold_launch[n].set()
        self.hold_wait[n] = threading.Event()
        thread = threading.Thread(target=self._call, args=(n, context or Context()), daemon=True)
        thread.start()
        return thread

    def _call(self, n: int, context: Context) -> None:
        try:
            self.results[n] = self.turn.run(MANY, context, lambda: self._launch(n), self._wait)
        except Refused as e:
            self.results[n] = e
        with self.changed:
            self.changed.notify_all()

    def _launch(self, n: int) -> int:
        with self.changed:
            self.launched.append(n)
            self.launching += 1
            self.in_flight += 1
            self.most_launching = max(self.most_launching, self.launching)
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.changed.notify_all()
        assert self.hold_launch[n].wait(TIMEOUT)
        with self.changed:
            self.launching -= 1
        return n

    def _wait(self, n: int) -> str:
        assert self.hold_wait[n].wait(TIMEOUT)
        with self.changed:
            self.in_flight -= 1
            self.changed.notify_all()
        return f"call {n}"

    def until(self, what) -> None:
        with self.changed:
            assert self.changed.wait_for(what, TIMEOUT), "never happened"


def test_launches_run_one_at_a_time_first_come_first_served_and_at_most_the_bound_wait():
    calls = Calls(DeviceTurn(calls_in_flight=3))
    threads = []
    for n in range(6):
        threads.append(calls.start(n))
        if n < 3:  # launched, and now waiting for its outputs outside the launch
            calls.until(lambda n=n: len(calls.launched) == n + 1 and calls.launching == 0)
        else:  # no place: waits, in the order it came
            assert calls.turn.wait_for_waiting(n - 2, TIMEOUT)
    assert calls.in_flight == 3 and calls.launched == [0, 1, 2]
    for n in range(6):
        calls.hold_wait[n].set()  # its place goes to the first still waiting, which launches
        threads[n].join(TIMEOUT)
        calls.until(lambda n=n: len(calls.launched) == min(6, n + 4))
    assert calls.launched == list(range(6))
    assert calls.results == {n: f"call {n}" for n in range(6)}
    assert (calls.most_launching, calls.most_in_flight) == (1, 3)
    assert calls.turn.waiting == 0


def test_a_launch_runs_alone_while_places_are_free():
    calls = Calls(DeviceTurn(calls_in_flight=4))
    first = calls.start(0, hold_launch=True)
    calls.until(lambda: calls.launched == [0])
    second = calls.start(1)
    assert calls.turn.wait_for_waiting(1, TIMEOUT)  # for the launch, not for a place
    assert calls.launched == [0]
    calls.hold_launch[0].set()
    calls.until(lambda: calls.launched == [0, 1])
    for n, thread in enumerate((first, second)):
        calls.hold_wait[n].set()
        thread.join(TIMEOUT)
    assert calls.results == {0: "call 0", 1: "call 1"}


def test_a_call_that_ends_while_it_waits_leaves_at_once_and_no_place_is_lost():
    calls = Calls(DeviceTurn(calls_in_flight=1))
    first = calls.start(0)
    calls.until(lambda: calls.launched == [0])
    gone = Context()
    leaving = calls.start(1, gone)
    assert calls.turn.wait_for_waiting(1, TIMEOUT)
    gone.end()
    leaving.join(TIMEOUT)
    assert isinstance(calls.results[1], Refused)
    assert calls.results[1].code == grpc.StatusCode.CANCELLED
    assert "while it waited for a place" in calls.results[1].message
    assert calls.turn.waiting == 0
    calls.hold_wait[0].set()
    first.join(TIMEOUT)
    after = calls.start(2)  # the one place is free again
    calls.hold_wait[2].set()
    after.join(TIMEOUT)
    assert calls.launched == [0, 2]
    assert calls.results[2] == "call 2"


def test_a_call_on_one_device_or_an_unprotected_turn_waits_for_nothing():
    for turn, devices in (
        (DeviceTurn(calls_in_flight=1), [object()]),
        (DeviceTurn(1, False), MANY),
    ):
        calls = Calls(turn)
        held = calls.start(0, hold_launch=True)
        calls.until(lambda calls=calls: calls.launched == [0])
        # Another call runs straight through while the first still launches.
        assert turn.run(devices, Context(), lambda: 7, lambda x: x * 6) == 42
        calls.hold_launch[0].set()
        calls.hold_wait[0].set()
        held.join(TIMEOUT)


@pytest.mark.parametrize(
    ("setting", "jaxlib", "protected"),
    [
        ("auto", "0.10.2", True),
        ("auto", "0.6.2", True),
        ("auto", "0.6.1", False),
        ("auto", "0.5.3", False),
        ("auto", "0.4.38", False),
        ("on", "0.4.38", True),
        ("off", "0.10.2", False),
    ],
)
def test_the_protection_applies_where_the_hang_was_found(setting, jaxlib, protected):
    assert protects(setting, jaxlib) is protected


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ((), "launches over several devices one call at a time, 4 calls in flight"),
        (("--device-turn", "off"), "launches over several devices unprotected"),
    ],
)
def test_a_worker_process_says_how_it_launches_over_several_devices(tmp_path, flags, said):
    worker = Worker(tmp_path / "unused", *flags)
    try:
        worker.wait_for(said)  # in the line said after `listening on`
    finally:
        worker.process.kill()
        worker.process.wait()
