"""The gRPC servicer of ColocatedWorkerService: GetVersion, LoadProgram and Execute (and
ExecuteSharded, Session and Relay, in worker/sharded.py, worker/session.py and worker/relay.py).

It keeps no per-client state: GetVersion applies the negotiation rule to the
client's range, and every call names the version it uses, which must lie in
this worker's range. What it keeps is shared by every client: the programs
it lifted (by the digest of their bytes) and the calls and bytes in flight.
Execute and LoadProgram are read from their bytes (worker/requests.py), so
a program's payload is hashed and decoded as the client sent it.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

import grpc

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.negotiate import VersionMismatchError, VersionRange, negotiate_version
from colocated_wire.worker import log, metrics
from colocated_wire.worker.compression import CompressedWhenAsked
from colocated_wire.worker.errors import Refused, invalid_argument
from colocated_wire.worker.execute import check_version, execute
from colocated_wire.worker.health import WORKER_SERVICE
from colocated_wire.worker.limits import DEFAULT_MAX_SESSIONS, CallLimits, Sessions
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import ProgramCache
from colocated_wire.worker.progress import Progress
from colocated_wire.worker.relay import read_relay_request
from colocated_wire.worker.relay import serve as serve_relay
from colocated_wire.worker.requests import (
    ExecuteCall,
    read_message,
    read_request,
    read_session_request,
    read_sharded_request,
)
from colocated_wire.worker.runtime import worker_runtime
from colocated_wire.worker.session import serve as serve_session
from colocated_wire.worker.sharded import serve as serve_sharded
from colocated_wire.worker.state import WorkerState
from colocated_wire.worker.topology import get_topology


class ColocatedWorker:
    """Runs colocated-Python programs on this process's JAX devices, as `policy` allows."""

    def __init__(
        self,
        policy: WorkerPolicy,
        limits: CallLimits | None = None,
        programs: ProgramCache | None = None,
        progress: Progress | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        relays: bool = True,
        relay_credentials: grpc.ChannelCredentials | None = None,
    ):
        self.state = WorkerState(
            policy=policy,
            limits=CallLimits() if limits is None else limits,
            programs=ProgramCache(policy) if programs is None else programs,
            progress=Progress() if progress is None else progress,
            sessions=Sessions(max_sessions),
            relays=relays and max_sessions > 0,
            relay_credentials=relay_credentials,
        )
        # A drain ends each session after its current call: an idle one must not hold it up.
        self.state.limits.on_drain(self.state.sessions.drain)

    def GetVersion(self, request, context):  # noqa: N802 - the generated method name
        if isinstance(request, Refused):
            context.abort(request.code, request.message)
        client = VersionRange(request.client.min_version, request.client.max_version)
        server = self.state.policy.versions
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
            # So that a client keeps its own calls within them, rather than be refused.
            limits=service_pb2.WorkerLimits(
                max_concurrent_calls=self.state.limits.max_calls,
                max_inflight_bytes=self.state.limits.max_bytes,
            ),
            sessions=self.state.sessions.limit > 0,  # --max-sessions 0: as a worker without them
            relays=self.state.relays,
            runtime=worker_runtime(),
        )

    def LoadProgram(self, call: ExecuteCall | Refused, context):  # noqa: N802
        def load(call: ExecuteCall) -> service_pb2.LoadProgramResponse:
            check_version(call.version, self.state.policy)
            if call.program is None:
                raise invalid_argument("program: the request carries no program")
            loaded = self.state.programs.load(call.program, call.version)
            return service_pb2.LoadProgramResponse(
                handle=service_pb2.ProgramHandle(digest=loaded.digest)
            )

        return self.answer(call, context, load)

    def Execute(self, call: ExecuteCall | Refused, context):  # noqa: N802
        return self.answer(
            call, context, lambda c: execute(c, self.state.policy, self.state.programs, context)
        )

    def answer(self, call: ExecuteCall | Refused, context, work: Callable[[ExecuteCall], object]):
        """Runs `work` within the limits; a Refused (or a bug) becomes the call's status."""
        answered = False  # a cell that gRPC's thread reads: cheaper than an Event each call

        def on_end() -> None:  # gRPC has seen the call end: said so when the work still runs
            if not answered:
                log.say("a call ended before its answer")

        context.add_callback(on_end)
        try:
            if isinstance(call, Refused):
                raise call
            with self.state.limits.admit(call.size), self.state.progress.track(context):
                return work(call)
        except Refused as e:
            if e.code == grpc.StatusCode.CANCELLED:
                log.say(f"{e.message}; its work stopped")
            context.abort(e.code, e.message)
        except Exception as e:  # noqa: BLE001 - a bug here must still answer the call
            traceback.print_exc(file=sys.stderr)
            context.abort(grpc.StatusCode.INTERNAL, f"the worker failed: {type(e).__name__}: {e}")
        finally:
            answered = True


def handlers(service: ColocatedWorker, compression: str = "none") -> grpc.GenericRpcHandler:
    """The service's methods for `server.add_generic_rpc_handlers`, answering with
    `compression` ("gzip" or "none") the clients that ask for it."""
    methods = {
        "GetVersion": grpc.unary_unary_rpc_method_handler(
            service.GetVersion,
            request_deserializer=read_message(service_pb2.GetVersionRequest),
            response_serializer=service_pb2.GetVersionResponse.SerializeToString,
        ),
        "LoadProgram": grpc.unary_unary_rpc_method_handler(
            service.LoadProgram,
            request_deserializer=read_request,
            response_serializer=service_pb2.LoadProgramResponse.SerializeToString,
        ),
        "Execute": grpc.unary_unary_rpc_method_handler(
            service.Execute,
            request_deserializer=read_request,  # answered with its bytes (worker/responses.py)
        ),
        "GetTopology": grpc.unary_unary_rpc_method_handler(
            get_topology,
            request_deserializer=read_message(service_pb2.GetTopologyRequest),
            response_serializer=service_pb2.GetTopologyResponse.SerializeToString,
        ),
        "ExecuteSharded": grpc.stream_stream_rpc_method_handler(
            lambda requests, context: serve_sharded(service.state, requests, context),
            # Both ways as bytes: a chunk's data is copied once each way (worker/requests.py,
            # worker/responses.py).
            request_deserializer=read_sharded_request,
        ),
        "Session": grpc.stream_stream_rpc_method_handler(
            lambda requests, context: serve_session(service.state, requests, context),
            # As ExecuteSharded's: a chunk's data is copied once each way.
            request_deserializer=read_session_request,
        ),
        "Relay": grpc.stream_stream_rpc_method_handler(
            lambda requests, context: serve_relay(service.state, requests, context),
            request_deserializer=read_relay_request,
        ),
    }
    return CompressedWhenAsked(WORKER_SERVICE, metrics.observed(methods), compression)
