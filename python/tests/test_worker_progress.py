"""Health tells the truth (worker/progress.py): a real worker process whose calls make no
progress says NOT_SERVING and why, and SERVING again once they finish. The stuck call is
examples.block_until_released; a call of examples.release on one device lets it return.
Every step waits for what the worker writes on stderr, never for time."""

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from jax.sharding import Mesh, SingleDeviceSharding
from test_worker import SDS, X, Y, float_spec, program, request
from test_worker_drain import Worker

from colocated_wire import examples
from colocated_wire._gen.colocated.v1 import service_pb2_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def worker(tmp_path):
    w = Worker(
        tmp_path / "unused-gate",
        *("--allow-module", "colocated_wire.examples", "--unhealthy-after", "1"),
    )
    yield w
    w.process.kill()
    w.process.wait(timeout=300)


def release_request(mesh):
    """examples.release on the mesh's first device alone: it needs no turn of the devices."""
    device = mesh.devices.flat[0]
    spec = SDS((8, 4), np.float32, sharding=SingleDeviceSharding(device))
    return request(program(examples.release, Mesh(np.array([device]), ("x",)), spec), X)


def health_of(channel) -> int:
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status


def test_a_call_running_past_its_deadline_makes_health_not_serving_until_it_ends(worker, mesh_2x4):
    blocking = request(program(examples.block_until_released, mesh_2x4, float_spec(mesh_2x4)), X)
    with grpc.insecure_channel(worker.target) as channel:
        stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
        before = health_of(channel)
        with pytest.raises(grpc.RpcError) as late:
            stub.Execute(blocking, timeout=1.0)
        worker.wait_for("health: NOT_SERVING: a call still runs")
        stuck = health_of(channel)
        stub.Execute(release_request(mesh_2x4), timeout=300)
        worker.wait_for("health: SERVING again")
        after = health_of(channel)
    assert (before, stuck, after) == (SERVING, NOT_SERVING, SERVING)
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "past its deadline, beyond --unhealthy-after (1 s); 1 calls in flight" in (
        worker.stderr()
    )


def test_calls_waiting_behind_one_that_never_ends_make_health_not_serving(worker, mesh_2x4):
    blocking = request(program(examples.block_until_released, mesh_2x4, float_spec(mesh_2x4)), X)
    affine = program(examples.affine, mesh_2x4, *[float_spec(mesh_2x4)] * 3)
    with grpc.insecure_channel(worker.target) as channel:
        stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
        held = stub.Execute.future(blocking, timeout=600)
        worker.wait_for("block_until_released: blocked")
        waiting = stub.Execute.future(request(affine, X, Y, Y), timeout=600)
        worker.wait_for("health: NOT_SERVING: no call has finished")
        stuck = health_of(channel)
        stub.Execute(release_request(mesh_2x4), timeout=300)
        held.result()
        answer = waiting.result()
        worker.wait_for("health: SERVING again")
        after = health_of(channel)
    assert (stuck, after) == (NOT_SERVING, SERVING)
    assert "while 1 calls wait; 2 calls in flight" in worker.stderr()
    got = np.frombuffer(answer.outputs[0].data, np.float32)
    np.testing.assert_array_equal(got, (X * Y + Y).ravel())
