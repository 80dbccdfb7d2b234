"""The gRPC servicer of ColocatedWorkerService: GetVersion and Execute.

It keeps no per-client state: GetVersion applies the negotiation rule to the
client's range, and every Execute names the version it uses, which must lie
in this worker's range.
"""

from __future__ import annotations

import sys
import traceback

import grpc

from colocated_wire._gen.colocated.v1 import service_pb2, service_pb2_grpc
from colocated_wire.negotiate import VersionMismatchError, VersionRange, negotiate_version
from colocated_wire.worker_errors import Refused
from colocated_wire.worker_execute import execute
from colocated_wire.worker_policy import WorkerPolicy


class ColocatedWorker(service_pb2_grpc.ColocatedWorkerServiceServicer):
    """Runs colocated-Python programs on this process's JAX devices, as `policy` allows."""

    def __init__(self, policy: WorkerPolicy):
        self.policy = policy

    def GetVersion(self, request, context):  # noqa: N802 - the generated method name
        client = VersionRange(request.client.min_version, request.client.max_version)
        server = self.policy.versions
        try:
            version = negotiate_version(client, server)
        except VersionMismatchError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return service_pb2.GetVersionResponse(
            server=service_pb2.VersionRange(
                min_version=server.min_version, max_version=server.max_version
            ),
            version=version,
        )

    def Execute(self, request, context):  # noqa: N802 - the generated method name
        try:
            return execute(request, self.policy)
        except Refused as e:
            context.abort(e.code, e.message)
        except Exception as e:  # noqa: BLE001 - a bug here must still answer the call
            traceback.print_exc(file=sys.stderr)
            context.abort(grpc.StatusCode.INTERNAL, f"the worker failed: {type(e).__name__}: {e}")
