"""The worker's standard gRPC services: grpc.health.v1.Health and server reflection.

Load balancers probe Health, and `grpcurl` or `buf curl` read the schema through
reflection, so neither needs the .proto files at hand. Health says SERVING from
start, NOT_SERVING while calls make no progress (worker/progress.py), and
NOT_SERVING for good once the worker drains.
"""

from __future__ import annotations

import argparse

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from colocated_wire._gen.colocated.v1 import service_pb2

WORKER_SERVICE = service_pb2.DESCRIPTOR.services_by_name["ColocatedWorkerService"].full_name
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
# The names health answers for: "" is the whole server, as load balancers ask.
SERVED = ("", WORKER_SERVICE)
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds the flag that turns reflection off (health is always on)."""
    parser.add_argument(
        "--no-reflection",
        dest="reflection",
        action="store_false",
        help="do not serve gRPC server reflection (served by default)",
    )


class WorkerHealth:
    """The Health servicer's state: SERVING, or NOT_SERVING while stuck or once draining."""

    def __init__(self, servicer: health.HealthServicer):
        self._servicer = servicer

    def serving(self, yes: bool) -> None:
        """Says SERVING or NOT_SERVING for the server and every service; a no-op once draining."""
        status = health_pb2.HealthCheckResponse.SERVING if yes else _NOT_SERVING
        for name in SERVED:
            self._servicer.set(name, status)

    def draining(self) -> None:
        """Says NOT_SERVING for the server and every service, and never SERVING again."""
        self._servicer.enter_graceful_shutdown()


def add_standard_services(server: grpc.Server, reflect: bool) -> WorkerHealth:
    """Registers Health (SERVING) and, if `reflect`, reflection of every service served."""
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    for name in SERVED:
        servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    if reflect:
        names = (WORKER_SERVICE, HEALTH_SERVICE, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server)
    return WorkerHealth(servicer)
