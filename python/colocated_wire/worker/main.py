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
Run as a program, it first starts itself again with tcmalloc, or glibc set to
keep freed memory for the next call (worker/memory.py). Its serving threads share one CPU
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
from colocated_wire.worker import (
    affinity,
    compression,
    device_turn,
    health,
    job,
    log,
    memory,
    metrics,
    progress,
    tls,
)
from colocated_wire.worker.flags import non_negative, positive
from colocated_wire.worker.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_CALLS,
    DEFAULT_MAX_SESSIONS,
    MAX_MESSAGE_BYTES,
)
from colocated_wire.worker.programs import DEFAULT_CAPACITY

if TYPE_CHECKING:
    import grpc

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
    health.add_flags(p)
    progress.add_flags(p)
    tls.add_flags(p)
    compression.add_flags(p)
    job.add_flags(p)
    memory.add_flags(p)
    affinity.add_flags(p)
    device_turn.add_flags(p)
    metrics.add_flags(p)
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
        tls_paths = tls.tls_files(args)
        tls.check_pickle_exposure(args.host, args.allow_pickle, tls_paths)
        credentials = tls.server_credentials(tls_paths)
        relay_tls = tls.relay_files(args, tls_paths)
        relay_credentials = None if relay_tls is None else tls.relay_credentials(relay_tls)
        job.check_flags(args)
        serving_cpu = affinity.serving_cpu(args.serving_cpu)
        metrics.serve(args.metrics_host, args.metrics_port)  # before handlers() below
    except ValueError as e:
        log.say(str(e))
        return 2
    use_cpu_devices(args.devices)
    if args.coordinator is not None:
        log.say(
            f"joining a job of {args.num_processes} processes as"
            f" process {args.process_id} (coordinator {args.coordinator})"
        )
    job.join(args)  # blocks until every process of the job has joined

    import jax

    from colocated_wire.negotiate import DEFAULT_VERSION_RANGE, VersionRange, check_range
    from colocated_wire.worker.limits import CallLimits
    from colocated_wire.worker.policy import WorkerPolicy
    from colocated_wire.worker.programs import ProgramCache
    from colocated_wire.worker.service import ColocatedWorker, handlers

    versions = VersionRange(
        DEFAULT_VERSION_RANGE.min_version if args.min_version is None else args.min_version,
        DEFAULT_VERSION_RANGE.max_version if args.max_version is None else args.max_version,
    )
    try:
        check_range(versions, "worker")
    except ValueError as e:
        log.say(str(e))
        return 2
    found = len(jax.local_devices())  # starts the backend now, not during the first call
    if found != args.devices:
        log.say(f"JAX has {found} devices, not {args.devices}")
        return 1
    policy = WorkerPolicy(
        versions, frozenset(args.allow_module), args.allow_pickle, frozenset(args.allow_function)
    )
    turn = device_turn.configure(args.device_turn)
    service = ColocatedWorker(
        policy,
        CallLimits(args.max_concurrent_calls, args.max_inflight_bytes),
        ProgramCache(policy, args.program_cache, explain=args.explain),
        progress.Progress(args.unhealthy_after, waiting=lambda: turn.waiting),
        args.max_sessions,
        relays=tls_paths is None or relay_credentials is not None,
        relay_credentials=relay_credentials,
    )
    state = service.state
    state.limits.on_refuse(state.progress.refused)
    metrics.watch(state.limits, turn, state.sessions)
    server = grpc_server(args.max_concurrent_calls, args.max_sessions)
    server.add_generic_rpc_handlers((handlers(service, args.compression),))
    # The standard services: health and reflection.
    standard = health.add_standard_services(server, reflect=args.reflection)
    port = tls.add_port(server, f"{args.host}:{args.port}", credentials)
    state.limits.on_drain(standard.draining)
    state.limits.on_drain(lambda: log.say("draining"))
    with affinity.pinned(serving_cpu):  # the poller starts the pool's threads
        server.start()
    stopping = threading.Event()

    def progress_changed(problem: str | None) -> None:  # so that an orchestrator restarts it
        standard.serving(problem is None)
        metrics.healthy(problem is None)
        log.say(f"health: NOT_SERVING: {problem}" if problem else "health: SERVING again")

    progress.watch(state.progress, progress_changed, stopping)
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    log.line(f"listening on {args.host}:{port}", sys.stdout)
    log.say(
        f"{found} CPU devices ({job.describe()},"
        f" {len(jax.devices())} devices in the job), versions {versions},"
        f" functions by name from {policy.describe_allowed()}, pickles"
        f" {'allowed' if policy.allow_pickle else 'refused'}, serving threads on"
        f" {'any CPU' if serving_cpu is None else f'CPU {serving_cpu}'}, {turn.describe()},"
        f" {memory.describe()}"
    )
    while not stopping.wait(3600):
        pass
    if state.limits.drain(args.grace_period):
        # Every call has returned; the grace lets their responses reach the clients.
        server.stop(grace=args.grace_period).wait()
        job.leave()
        return 0
    log.say(
        f"{state.limits.calls} calls still running after the"
        f" {args.grace_period} s grace period are cancelled"
    )
    server.stop(grace=None).wait()
    # Their threads may be inside a function that never returns; exiting must not join them.
    sys.stdout.flush()
    os._exit(0)
