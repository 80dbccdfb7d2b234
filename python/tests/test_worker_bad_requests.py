"""Requests that are no valid message get INVALID_ARGUMENT naming the message, from every
unary method: gRPC deserializers must not raise (grpcio would answer INTERNAL)."""

import grpc
import pytest
from test_worker import channel_to
from test_worker_limits import ALLOWED

from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker

SERVICE = "/colocated.v1.ColocatedWorkerService/"
NOT_A_MESSAGE = b"\x0a\xff\xff"  # field 1, length-delimited, a length past the end


@pytest.mark.parametrize(
    ("method", "said"),
    [
        ("GetVersion", "not a valid GetVersionRequest"),
        ("GetTopology", "not a valid GetTopologyRequest"),
        ("LoadProgram", "not a valid protobuf message"),
        ("Execute", "not a valid protobuf message"),
    ],
)
def test_bytes_that_are_no_message_are_an_invalid_argument(method, said):
    with channel_to(ColocatedWorker(WorkerPolicy(allowed_modules=ALLOWED))) as channel:
        call = channel.unary_unary(SERVICE + method)
        with pytest.raises(grpc.RpcError) as refused:
            call(NOT_A_MESSAGE, timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert said in refused.value.details()
