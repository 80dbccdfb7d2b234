"""Health and reflection, on an in-process server over a real channel.

test/buf-curl.test.ts calls the real worker process through reflection with buf curl.
"""

import contextlib
from concurrent import futures

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from colocated_wire.worker.health import HEALTH_SERVICE, WORKER_SERVICE, add_standard_services

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@contextlib.contextmanager
def served(reflect=True):
    """(health state, channel) of a server with the standard services only."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    health = add_standard_services(server, reflect=reflect)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield health, channel
    finally:
        server.stop(grace=None)


def check(channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service)).status


@pytest.mark.parametrize("service", ["", WORKER_SERVICE])
def test_health_is_serving_for_the_server_and_the_worker_service(service):
    with served() as (_, channel):
        assert check(channel, service) == SERVING


def test_health_of_an_unknown_service_is_not_found():
    with served() as (_, channel), pytest.raises(grpc.RpcError) as e:
        check(channel, "no.such.Service")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("service", ["", WORKER_SERVICE])
def test_draining_says_not_serving(service):
    with served() as (health, channel):
        health.draining()
        assert check(channel, service) == NOT_SERVING


def test_a_watcher_sees_serving_then_not_serving_when_the_worker_drains():
    with served() as (health, channel):
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service=""))
        assert next(watch).status == SERVING
        health.draining()
        assert next(watch).status == NOT_SERVING
        watch.cancel()


def test_reflection_lists_the_worker_health_and_reflection_services():
    with served() as (_, channel):
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert services == {
        WORKER_SERVICE,
        HEALTH_SERVICE,
        "grpc.reflection.v1alpha.ServerReflection",
    }


def test_reflection_gives_the_worker_service_with_its_methods_and_messages():
    with served() as (_, channel):
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        service = pool.FindServiceByName(WORKER_SERVICE)
        execute = service.methods_by_name["Execute"]
        assert execute.input_type.full_name == "colocated.v1.ExecuteRequest"
        program = execute.input_type.fields_by_name["program"].message_type
        assert program.full_name == "colocated.v1.ProgramPayload"
        assert "GetVersion" in service.methods_by_name


def test_without_reflection_the_reflection_service_is_unimplemented():
    with served(reflect=False) as (_, channel), pytest.raises(grpc.RpcError) as e:
        list(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
