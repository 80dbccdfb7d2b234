"""A colocated-Python worker: ColocatedWorkerService over gRPC, on JAX CPU devices.

    python -m colocated_wire.worker --port 0 --devices 8 --allow-module my.module

prints `listening on HOST:PORT` once it serves. On SIGTERM or SIGINT it
drains: health says NOT_SERVING, new calls are refused (UNAVAILABLE), calls in
flight get --grace-period seconds to finish, then it exits 0. While calls make
no progress, health says NOT_SERVING too (worker/progress.py). Importing this
module imports jax, but JAX reads the device count and platform only when
its backend starts, so setting them before the first device query is in time.
With --coordinator, --num-processes and --process-id it joins many workers as
one JAX job first (worker/job.py), and prints `listening on` once all have joined.
Run as a program, it first starts itself again with glibc set to keep freed
memory for the next call (worker/memory.py). Its serving threads share one CPU
(worker/affinity.py), and functions over several devices launch their
computations one call at a time (worker/device_turn.py). --metrics-port serves Prometheus metrics
(worker/metrics.py). --explain says why a function's program was loaded again
(worker/explain.py).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from concurrent import futures
from typing import TYPE_CHECKING

from colocated_wire.diff.nearest import explain_from_env
from colocated_wire.worker import affinity as worker_affinity
from colocated_wire.worker import compression as worker_compression
from colocated_wire.worker import device_turn as worker_device_turn
from colocated_wire.worker import health as worker_health
from colocated_wire.worker import job as worker_job
from colocated_wire.worker import log as worker_log
from colocated_wire.worker import memory as worker_memory
from colocated_wire.worker import metrics as worker_metrics
from colocated_wire.worker import progress as worker_progress
from colocated_wire.worker import tls as worker_tls
from colocated_wire.worker.flags import non_negative, positive
from colocated_wire.worker.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS, DEFAULT_MAX_SESSIONS
from colocated_wire.worker.programs import DEFAULT_CAPACITY

if TYPE_CHECKING:
    import grpc

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
CONTROL_THREADS = 4


def serving_threads(max_calls: int, max_sessions: int) -> int:
    """The server's thread pool: one thread per call slot, one per session place, and
    CONTROL_THREADS that answer GetVersion, health and refusals while every slot is taken.
    gRPC's sync server holds a thread for a Session's whole life, idle or not; without threads
    of their own, idle sessions from a few controllers would take every thread, and every
    other call would wait for one without end."""
    return max_calls + max_sessions + CONTROL_THREADS


def grpc_server(max_calls: int, max_sessions: int) -> grpc.Server:
    """The worker's gRPC server, its pool sized by serving_threads (no handlers yet)."""
    import grpc

    threads = serving_threads(max_calls, max_sessions)
    # gRPC's own cap bounds what waits for a thread. It counts a call until its serving thread
    # has seen it end, which lags the client under load, so a cap of `threads` refused a client
    # that kept exactly --max-concurrent-calls going; the call limit is the real bound.
    return grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads),
        maximum_concurrent_rpcs=2 * threads,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m colocated_wire.worker", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    p.add_argument(
        "--devices", type=int, default=8, help="number of JAX CPU devices (of this process)"
    )
    p.add_argument(
        "--allow-module",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module whose functions may be run by name (repeatable; exact module names)",
    )
    p.add_argument(
        "--allow-function",
        action="append",
        default=[],
        metavar="MODULE.QUALNAME",
        help="one function that may be run by name (repeatable; qualified names)",
    )
    p.add_argument(
        "--allow-pickle", action="store_true", help="run pickled functions (runs peer code!)"
    )
    p.add_argument("--min-version", type=int, default=None, help="oldest colocated.v1 minor")
    p.add_argument("--max-version", type=int, default=None, help="newest colocated.v1 minor")
    p.add_argument(
        "--max-concurrent-calls",
        type=positive,
        default=DEFAULT_MAX_CALLS,
        metavar="N",
        help=f"calls at once; more get RESOURCE_EXHAUSTED (default {DEFAULT_MAX_CALLS})",
    )
    p.add_argument(
        "--max-inflight-bytes",
        type=positive,
        default=DEFAULT_MAX_BYTES,
        metavar="M",
        help="request bytes of the calls in flight; beyond, RESOURCE_EXHAUSTED (default 1 GiB)",
    )
    p.add_argument(
        "--max-sessions",
        type=non_negative,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help="Session and Relay streams open at once, each holding a serving thread while open;"
        f" more get RESOURCE_EXHAUSTED, 0 serves none (default {DEFAULT_MAX_SESSIONS})",
    )
    p.add_argument(
        "--program-cache",
        type=positive,
        default=DEFAULT_CAPACITY,
        metavar="N",
        help=f"lifted programs kept for calls by handle (default {DEFAULT_CAPACITY})",
    )
    p.add_argument(
        "--explain",
        action=argparse.BooleanOptionalAction,
        default=explain_from_env(),
        help="when a function's program is loaded again, say on stderr how it differs from the"
        " nearest cached one (default: COLOCATED_WIRE_EXPLAIN, else off)",
    )
    p.add_argument(
        "--grace-period",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long calls in flight may take to finish (default 30)",
    )
    worker_health.add_flags(p)
    worker_progress.add_flags(p)
    worker_tls.add_flags(p)
    worker_compression.add_flags(p)
    worker_job.add_flags(p)
    worker_memory.add_flags(p)
    worker_affinity.add_flags(p)
    worker_device_turn.add_flags(p)
    worker_metrics.add_flags(p)
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
        relay_tls = worker_tls.relay_files(args, tls)
        relay_credentials = None if relay_tls is None else worker_tls.relay_credentials(relay_tls)
        worker_job.check_flags(args)
        serving_cpu = worker_affinity.serving_cpu(args.serving_cpu)
        worker_metrics.serve(args.metrics_host, args.metrics_port)  # before handlers() below
    except ValueError as e:
        worker_log.say(str(e))
        return 2
    use_cpu_devices(args.devices)
    if args.coordinator is not None:
        worker_log.say(
            f"joining a job of {args.num_processes} processes as"
            f" process {args.process_id} (coordinator {args.coordinator})"
        )
    worker_job.join(args)  # blocks until every process of the job has joined

    import jax

    from colocated_wire.negotiate import DEFAULT_VERSION_RANGE, VersionRange, check_range
    from colocated_wire.worker import service as worker_service
    from colocated_wire.worker.limits import CallLimits
    from colocated_wire.worker.policy import WorkerPolicy
    from colocated_wire.worker.programs import ProgramCache

    versions = VersionRange(
        DEFAULT_VERSION_RANGE.min_version if args.min_version is None else args.min_version,
        DEFAULT_VERSION_RANGE.max_version if args.max_version is None else args.max_version,
    )
    try:
        check_range(versions, "worker")
    except ValueError as e:
        worker_log.say(str(e))
        return 2
    found = len(jax.local_devices())  # starts the backend now, not during the first call
    if found != args.devices:
        worker_log.say(f"JAX has {found} devices, not {args.devices}")
        return 1
    policy = WorkerPolicy(
        versions, frozenset(args.allow_module), args.allow_pickle, frozenset(args.allow_function)
    )
    turn = worker_device_turn.configure(args.device_turn)
    service = worker_service.ColocatedWorker(
        policy,
        CallLimits(args.max_concurrent_calls, args.max_inflight_bytes),
        ProgramCache(policy, args.program_cache, explain=args.explain),
        worker_progress.Progress(args.unhealthy_after, waiting=lambda: turn.waiting),
        args.max_sessions,
        relays=tls is None or relay_credentials is not None,
        relay_credentials=relay_credentials,
    )
    service.limits.on_refuse(service.progress.refused)
    worker_metrics.watch(service.limits, turn, service.sessions)
    server = grpc_server(args.max_concurrent_calls, args.max_sessions)
    server.add_generic_rpc_handlers((worker_service.handlers(service, args.compression),))
    # standard services (health, reflection): helper H
    health = worker_health.add_standard_services(server, reflect=args.reflection)
    port = worker_tls.add_port(server, f"{args.host}:{args.port}", credentials)
    service.limits.on_drain(health.draining)
    service.limits.on_drain(lambda: worker_log.say("draining"))
    with worker_affinity.pinned(serving_cpu):  # the poller starts the pool's threads
        server.start()
    stopping = threading.Event()

    def progress_changed(problem: str | None) -> None:  # so that an orchestrator restarts it
        health.serving(problem is None)
        worker_metrics.healthy(problem is None)
        worker_log.say(f"health: NOT_SERVING: {problem}" if problem else "health: SERVING again")

    worker_progress.watch(service.progress, progress_changed, stopping)
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    worker_log.line(f"listening on {args.host}:{port}", sys.stdout)
    worker_log.say(
        f"{found} CPU devices ({worker_job.describe()},"
        f" {len(jax.devices())} devices in the job), versions {versions},"
        f" functions by name from {policy.describe_allowed()}, pickles"
        f" {'allowed' if policy.allow_pickle else 'refused'}, serving threads on"
        f" {'any CPU' if serving_cpu is None else f'CPU {serving_cpu}'}, {turn.describe()}"
    )
    while not stopping.wait(3600):
        pass
    if service.limits.drain(args.grace_period):
        # Every call has returned; the grace lets their responses reach the clients.
        server.stop(grace=args.grace_period).wait()
        worker_job.leave()
        return 0
    worker_log.say(
        f"{service.limits.calls} calls still running after the"
        f" {args.grace_period} s grace period are cancelled"
    )
    server.stop(grace=None).wait()
    # Their threads may be inside a function that never returns; exiting must not join them.
    sys.stdout.flush()
    os._exit(0)
