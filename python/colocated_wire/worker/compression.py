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


class CompressedWhenAsked(grpc.GenericRpcHandler):
    """A service's method handlers, each with a twin that gzips its responses, chosen per call
    by the client's `colocated-compression` metadata.

    A generic handler, not a server interceptor: it sees only the worker's own methods (not
    health or reflection), and no interceptor pipeline wraps every call's lookup.
    """

    def __init__(self, service: str, methods: dict[str, grpc.RpcMethodHandler], allowed: str):
        self._plain = {f"/{service}/{name}": handler for name, handler in methods.items()}
        algorithm = ALGORITHMS.get(allowed)
        self._asks = allowed if algorithm is not None else None
        self._compressed = (
            {}
            if algorithm is None
            else {path: with_compression(h, algorithm) for path, h in self._plain.items()}
        )

    def service(self, handler_call_details):
        """The call's handler (its gzip twin when asked and allowed); None for other methods."""
        method = handler_call_details.method
        if self._asks is not None:
            for key, value in handler_call_details.invocation_metadata or ():
                if key == COMPRESSION_METADATA:
                    if value == self._asks:
                        return self._compressed.get(method)
                    break
        return self._plain.get(method)


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
