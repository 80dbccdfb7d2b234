"""A colocated-Python worker: ColocatedWorkerService over gRPC, on JAX CPU devices.

    python -m colocated_wire.worker --port 0 --devices 8 --allow-module my.module

prints `listening on HOST:PORT` once it serves, and stops cleanly on SIGTERM
or SIGINT. Importing this package imports jax, but JAX reads the device
count and platform only when its backend starts, so setting them before the
first device query is in time.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from concurrent import futures

from colocated_wire import worker_compression, worker_health, worker_tls

MAX_MESSAGE_BYTES = 256 * 1024 * 1024


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m colocated_wire.worker", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    p.add_argument("--devices", type=int, default=8, help="number of JAX CPU devices")
    p.add_argument(
        "--allow-module",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module whose functions may be run by name (repeatable; exact module names)",
    )
    p.add_argument(
        "--allow-pickle", action="store_true", help="run pickled functions (runs peer code!)"
    )
    p.add_argument("--min-version", type=int, default=None, help="oldest colocated.v1 minor")
    p.add_argument("--max-version", type=int, default=None, help="newest colocated.v1 minor")
    p.add_argument("--threads", type=int, default=16, help="calls served at once")
    worker_health.add_flags(p)
    worker_tls.add_flags(p)
    worker_compression.add_flags(p)
    return p.parse_args(argv)


def use_cpu_devices(count: int) -> None:
    """Makes JAX start `count` CPU devices; must run before the first device query."""
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    jax.config.update("jax_platforms", "cpu")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:  # before JAX starts, so that a refusal is immediate
        tls = worker_tls.tls_files(args)
        worker_tls.check_pickle_exposure(args.host, args.allow_pickle, tls)
        credentials = worker_tls.server_credentials(tls)
    except ValueError as e:
        print(f"colocated_wire.worker: {e}", file=sys.stderr)
        return 2
    use_cpu_devices(args.devices)

    import grpc
    import jax

    from colocated_wire._gen.colocated.v1 import service_pb2_grpc
    from colocated_wire.negotiate import DEFAULT_VERSION_RANGE, VersionRange, check_range
    from colocated_wire.worker_policy import WorkerPolicy
    from colocated_wire.worker_service import ColocatedWorker

    versions = VersionRange(
        DEFAULT_VERSION_RANGE.min_version if args.min_version is None else args.min_version,
        DEFAULT_VERSION_RANGE.max_version if args.max_version is None else args.max_version,
    )
    try:
        check_range(versions, "worker")
    except ValueError as e:
        print(f"colocated_wire.worker: {e}", file=sys.stderr)
        return 2
    found = len(jax.devices())  # starts the backend now, not during the first call
    if found != args.devices:
        sys.stderr.write(f"colocated_wire.worker: JAX has {found} devices, not {args.devices}\n")
        return 1
    policy = WorkerPolicy(versions, frozenset(args.allow_module), args.allow_pickle)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.threads),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
        interceptors=[worker_compression.CompressionInterceptor(args.compression)],
    )
    service_pb2_grpc.add_ColocatedWorkerServiceServicer_to_server(ColocatedWorker(policy), server)
    # standard services (health, reflection): helper H
    health = worker_health.add_standard_services(server, reflect=args.reflection)
    port = worker_tls.add_port(server, f"{args.host}:{args.port}", credentials)
    server.start()

    def stop(*_):
        health.draining()
        server.stop(grace=1)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on {args.host}:{port}", flush=True)
    print(
        f"colocated_wire.worker: {found} CPU devices, versions {versions},"
        f" modules {sorted(policy.allowed_modules) or 'none'}, pickles"
        f" {'allowed' if policy.allow_pickle else 'refused'}",
        file=sys.stderr,
        flush=True,
    )
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
