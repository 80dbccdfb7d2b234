"""gRPC per-message gzip, negotiated: the client asks for it, the worker's flag allows it.

A client that compresses its own requests (grpc-encoding: gzip, which grpcio
always reads) sends `colocated-compression: gzip` to ask for compressed
responses too. Every gRPC client advertises gzip in grpc-accept-encoding, so
that header cannot say whether this client wants it; the worker compresses
only when asked, and only when `--compression gzip` (the default) allows it.
The payload format itself stays uncompressed.
"""

from __future__ import annotations

import argparse

import grpc

from colocated_wire.worker_health import WORKER_SERVICE

#: The metadata key a client sends to ask for compressed responses; its value names the algorithm.
COMPRESSION_METADATA = "colocated-compression"
ALGORITHMS = {"gzip": grpc.Compression.Gzip}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --compression."""
    parser.add_argument(
        "--compression",
        choices=["gzip", "none"],
        default="gzip",
        help="compress responses with gzip for clients that ask (default), or never",
    )


class CompressionInterceptor(grpc.ServerInterceptor):
    """Sets gzip on the responses of the worker's calls whose client asked for it."""

    def __init__(self, allowed: str):
        self._allowed = ALGORITHMS.get(allowed)

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or self._allowed is None:
            return handler
        if not handler_call_details.method.startswith(f"/{WORKER_SERVICE}/"):
            return handler
        asked = dict(handler_call_details.invocation_metadata or ()).get(COMPRESSION_METADATA)
        if ALGORITHMS.get(asked) != self._allowed:
            return handler
        return with_compression(handler, self._allowed)


def with_compression(handler: grpc.RpcMethodHandler, algorithm: grpc.Compression):
    """The same handler, whose behavior sets `algorithm` on the call before it runs."""
    kind = (
        ("stream" if handler.request_streaming else "unary")
        + "_"
        + ("stream" if handler.response_streaming else "unary")
    )
    behavior = getattr(handler, kind)

    def compressed(request, context):
        context.set_compression(algorithm)
        return behavior(request, context)

    return handler._replace(**{kind: compressed})
