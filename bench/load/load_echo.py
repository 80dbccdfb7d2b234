"""A plain gRPC echo server: the limit the load bench holds the worker against.

Same grpcio, same thread count, allocator and message limit as the worker, and no work at all:
a unary Echo returns the request's bytes as they came, and a streaming EchoStream
returns each chunk as it came. It compresses its answers with gzip when the client
asks, as the worker does. Prints `listening on HOST:PORT` once it serves.

    .venv/bin/python bench/load/load_echo.py --threads 16
"""

from __future__ import annotations

import argparse
import signal
import sys
from concurrent import futures

import grpc

from colocated_wire.worker import memory
from colocated_wire.worker.compression import ALGORITHMS, COMPRESSION_METADATA
from colocated_wire.worker.main import MAX_MESSAGE_BYTES

SERVICE = "colocated.bench.Echo"


def compress_if_asked(context) -> None:
    """gzip on the answer when the client asks for it, as the worker does."""
    asked = dict(context.invocation_metadata() or ()).get(COMPRESSION_METADATA)
    if asked in ALGORITHMS:
        context.set_compression(ALGORITHMS[asked])


def echo(request: bytes, context) -> bytes:
    compress_if_asked(context)
    return request


def echo_stream(requests, context):
    compress_if_asked(context)
    yield from requests


def main(argv: list[str] | None = None) -> int:
    memory.restart_with_allocator(memory.AUTO, memory.DEFAULT_RETAINED_BYTES)  # as the worker
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--threads", type=int, default=16)
    args = p.parse_args(argv)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.threads),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    # No (de)serializers: bytes in, the same bytes out.
    methods = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "EchoStream": grpc.stream_stream_rpc_method_handler(echo_stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(grace=None))
    print(f"listening on {args.host}:{port}", flush=True)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
