"""Which handler a call gets (worker_compression.CompressedWhenAsked): the gzip twin only when
the client asks and the worker allows it, and nothing for a method the service does not have.

The byte counts on the wire are tested through a real worker in test/worker-compression.test.ts.
"""

import grpc
import pytest

from colocated_wire.worker.compression import COMPRESSION_METADATA, CompressedWhenAsked
from colocated_wire.worker.health import WORKER_SERVICE as SERVICE


class Details(grpc.HandlerCallDetails):
    def __init__(self, method: str, metadata: tuple = ()):
        self.method = method
        self.invocation_metadata = metadata


class Context:
    """Records what a behavior set on its call."""

    compression = None

    def set_compression(self, algorithm):
        self.compression = algorithm


def echo(request, context):
    return request


def handlers(allowed: str) -> CompressedWhenAsked:
    return CompressedWhenAsked(
        SERVICE, {"Execute": grpc.unary_unary_rpc_method_handler(echo)}, allowed
    )


def compression_of(handler) -> grpc.Compression | None:
    """What the handler's behavior sets on a call, checking that it still answers."""
    context = Context()
    assert handler.unary_unary(b"request", context) == b"request"
    return context.compression


@pytest.mark.parametrize(
    ("allowed", "metadata", "expected"),
    [
        ("gzip", ((COMPRESSION_METADATA, "gzip"),), grpc.Compression.Gzip),
        ("gzip", (("x-other", "gzip"), (COMPRESSION_METADATA, "gzip")), grpc.Compression.Gzip),
        ("gzip", (), None),
        ("gzip", ((COMPRESSION_METADATA, "zstd"),), None),
        ("gzip", ((COMPRESSION_METADATA, "zstd"), (COMPRESSION_METADATA, "gzip")), None),
        ("none", ((COMPRESSION_METADATA, "gzip"),), None),
    ],
)
def test_the_gzip_twin_answers_only_a_client_that_asks_a_worker_that_allows(
    allowed, metadata, expected
):
    handler = handlers(allowed).service(Details(f"/{SERVICE}/Execute", metadata))
    assert handler is not None
    assert compression_of(handler) == expected


@pytest.mark.parametrize("allowed", ["gzip", "none"])
def test_a_method_of_another_service_is_not_this_handlers(allowed):
    asked = ((COMPRESSION_METADATA, "gzip"),)
    assert handlers(allowed).service(Details("/grpc.health.v1.Health/Check", asked)) is None
    assert handlers(allowed).service(Details(f"/{SERVICE}/Missing", asked)) is None
