"""The worker's Prometheus metrics, served on `--metrics-port` (off by default).

An operator scrapes what a worker does (calls by method and status code, their latency and
bytes), what it holds (calls and request bytes in flight, calls waiting for the devices'
turn), how its program cache fares and what it refuses, beside its resident memory, without
a log parser. The metrics live in a registry of the worker's own, not prometheus_client's
global one, so that what a function run by name registers there is never served as the
worker's.

Off, the hooks on a call's path cost next to nothing: `observed` hands gRPC the method
handlers as they are, so a call runs no extra frame, clock read, lock or counter, and a
program cache lookup checks one flag. On, they cost about 5 µs a call on a small machine
(two clock reads, its status, and five values under prometheus_client's locks: its count,
its latency's sum and bucket, its bytes each way), which the load bench against an echo
server (`npm run bench`) would show; so only a worker asked to serve metrics pays it. What
happens rarely is counted either way (a refusal, an eviction, a health change), and the
gauges cost no call anything: they read the worker's own counts when scraped
(`set_function`). Each method's series are bound once (`.labels(...)` when the handlers are
made, a status code's on its first call), and a call takes no lock of the worker's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sized
from typing import TYPE_CHECKING

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)

from colocated_wire.worker import log
from colocated_wire.worker.flags import non_negative

if TYPE_CHECKING:
    from colocated_wire.worker.device_turn import DeviceTurn
    from colocated_wire.worker.limits import CallLimits

REGISTRY = CollectorRegistry()
# process_resident_memory_bytes, process_cpu_seconds_total, ... and python_info: read when
# scraped, from /proc and the interpreter.
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

PREFIX = "colocated_worker_"
# A GetVersion answers in about 100 µs; a call may run for a minute.
LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip

CALLS = Counter(
    PREFIX + "calls",
    "Calls answered, by method and gRPC status code",
    ["method", "code"],
    registry=REGISTRY,
)
CALL_SECONDS = Histogram(
    PREFIX + "call_duration_seconds",
    "Time from a call's start to its answer (its whole response stream for ExecuteSharded)",
    ["method"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
REQUEST_BYTES = Counter(
    PREFIX + "request_bytes",
    "Request message bytes received (uncompressed), by method",
    ["method"],
    registry=REGISTRY,
)
RESPONSE_BYTES = Counter(
    PREFIX + "response_bytes",
    "Response message bytes sent (uncompressed), by method",
    ["method"],
    registry=REGISTRY,
)
CALLS_IN_FLIGHT = Gauge(
    PREFIX + "calls_in_flight",
    "Calls admitted and running (LoadProgram, Execute, ExecuteSharded)",
    registry=REGISTRY,
)
BYTES_IN_FLIGHT = Gauge(
    PREFIX + "request_bytes_in_flight",
    "Request bytes of the calls in flight, as counted against --max-inflight-bytes",
    registry=REGISTRY,
)
RUNTIME = Info(
    "colocated_worker_runtime",
    "What the worker runs: colocated-wire, Python, JAX, jaxlib, NumPy and cloudpickle versions,"
    " platform and device kind (as its GetVersion answer says)",
    registry=REGISTRY,
)
SESSIONS_OPEN = Gauge(
    PREFIX + "sessions_open",
    "Session and Relay streams open, each holding one of the --max-sessions places",
    registry=REGISTRY,
)
TURN_WAITING = Gauge(
    PREFIX + "calls_waiting_for_turn",
    "Calls in flight over several devices waiting for a place in flight or for their launch",
    registry=REGISTRY,
)
REFUSALS = Counter(
    PREFIX + "refusals",
    "Calls refused at admission: over --max-concurrent-calls (calls), over"
    " --max-inflight-bytes (bytes), or while shutting down (draining)",
    ["reason"],
    registry=REGISTRY,
)
PROGRAM_CACHE_HITS = Counter(
    PREFIX + "program_cache_hits",
    "Programs found lifted, by handle or by payload digest",
    registry=REGISTRY,
)
PROGRAM_CACHE_MISSES = Counter(
    PREFIX + "program_cache_misses",
    "Programs not held: lifted now, or a handle answered NOT_FOUND",
    registry=REGISTRY,
)
PROGRAM_CACHE_EVICTIONS = Counter(
    PREFIX + "program_cache_evictions",
    "Programs dropped from the cache for newer ones (--program-cache)",
    registry=REGISTRY,
)
DRAINING = Gauge(
    PREFIX + "draining", "1 once the worker is shutting down, else 0", registry=REGISTRY
)
HEALTHY = Gauge(
    PREFIX + "healthy",
    "1 while no call is stuck (worker/progress.py; a drain aside, health says SERVING), else 0",
    registry=REGISTRY,
)
HEALTHY.set(1)

_serving = False  # whether serve() started the HTTP server: the calls are observed only then
# A Session stream counts once, as method "Session", when it ends; each call it carries
# counts as method "SessionCall", so that a group's calls over sessions are seen one by one.
SESSION_CALL = "SessionCall"
_session_calls: MethodMetrics | None = None


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --metrics-port and --metrics-host."""
    parser.add_argument(
        "--metrics-port",
        type=non_negative,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on http://HOST:PORT/metrics; 0 picks a free port"
        " (default: no metrics)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address the metrics are served on (default 127.0.0.1)",
    )


def serve(host: str, port: int | None) -> None:
    """Serves the metrics on host:port when a port is given, and says where on stderr; raises
    ValueError when it cannot bind."""
    global _serving
    if port is None:
        return
    # A `_created` timestamp beside every series doubles each scrape; a counter's reset is
    # process_start_time_seconds, as the worker's counters live as long as its process.
    disable_created_metrics()
    try:
        httpd, _ = start_http_server(port, host, registry=REGISTRY)
    except (OSError, OverflowError) as e:  # in use, an unknown host, a port past 65535
        raise ValueError(f"--metrics-port {port}: cannot serve metrics on {host}: {e}") from e
    _serving = True
    bound = httpd.server_address[1]
    log.say(f"metrics on http://{f'[{host}]' if ':' in host else host}:{bound}/metrics")


def watch(limits: CallLimits, turn: DeviceTurn, sessions: Sized = ()) -> None:
    """Reads the calls and bytes in flight, the sessions open, draining and the calls waiting
    for the turn when scraped, counts the refusals, and says what the worker runs."""
    from colocated_wire.worker.runtime import worker_runtime

    runtime = worker_runtime()
    RUNTIME.info({f.name: value for f, value in runtime.ListFields()})
    CALLS_IN_FLIGHT.set_function(lambda: limits.calls)
    SESSIONS_OPEN.set_function(lambda: len(sessions))
    BYTES_IN_FLIGHT.set_function(lambda: limits.bytes)
    DRAINING.set_function(lambda: limits.draining)
    TURN_WAITING.set_function(lambda: turn.waiting)
    refusals = {reason: REFUSALS.labels(reason) for reason in ("calls", "bytes", "draining")}
    limits.on_refuse(lambda reason: refusals[reason].inc())


def program_lookup(found: bool) -> None:
    """Counts a program cache hit, or a miss, when metrics are served."""
    if _serving:
        (PROGRAM_CACHE_HITS if found else PROGRAM_CACHE_MISSES).inc()


def session_call_ended(code: grpc.StatusCode, seconds: float) -> None:
    """Counts a call on a session that ended with `code` after `seconds`, when metrics are
    served."""
    global _session_calls
    if not _serving:
        return
    if _session_calls is None:  # a race binds the same series twice, harmlessly
        _session_calls = MethodMetrics(SESSION_CALL)
    _session_calls.ended(code, seconds)


def healthy(yes: bool) -> None:
    """Sets the healthy gauge as health turns SERVING or NOT_SERVING."""
    HEALTHY.set(1 if yes else 0)


def observed(methods: dict[str, grpc.RpcMethodHandler]) -> dict[str, grpc.RpcMethodHandler]:
    """The method handlers, each counting its calls, latency and bytes once serve() has
    started; as they are when metrics are off."""
    if not _serving:
        return methods
    return {name: _observed(MethodMetrics(name), handler) for name, handler in methods.items()}


class MethodMetrics:
    """One method's series, bound once: a call only adds to them."""

    def __init__(self, method: str):
        self.method = method
        self.seconds = CALL_SECONDS.labels(method)
        self.request_bytes = REQUEST_BYTES.labels(method)
        self.response_bytes = RESPONSE_BYTES.labels(method)
        self._calls = {grpc.StatusCode.OK: CALLS.labels(method, "OK")}

    def ended(self, code: grpc.StatusCode, seconds: float) -> None:
        """Counts a call that ended with `code` after `seconds`."""
        calls = self._calls.get(code)
        if calls is None:  # a status code's first call; a race binds the same child twice
            calls = self._calls[code] = CALLS.labels(self.method, code.name)
        calls.inc()
        self.seconds.observe(seconds)


def _observed(metrics: MethodMetrics, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """The handler, its behavior timed and its messages' bytes counted."""
    kind = ("stream" if handler.request_streaming else "unary") + (
        "_stream" if handler.response_streaming else "_unary"
    )
    behavior = getattr(handler, kind)
    timed = _timed_stream if handler.response_streaming else _timed_unary
    return handler._replace(
        **{kind: timed(metrics, behavior)},
        request_deserializer=_reading(handler.request_deserializer, metrics.request_bytes),
        response_serializer=_writing(handler.response_serializer, metrics.response_bytes),
    )


def _timed_unary(metrics: MethodMetrics, behavior: Callable) -> Callable:
    def timed(request, context):
        start = time.perf_counter()
        ending = grpc.StatusCode.UNKNOWN  # gRPC's answer to an exception that sets no status
        try:
            response = behavior(request, context)
            ending = grpc.StatusCode.OK
            return response
        finally:
            metrics.ended(status(context, ending), time.perf_counter() - start)

    return timed


def _timed_stream(metrics: MethodMetrics, behavior: Callable) -> Callable:
    def timed(requests, context):
        start = time.perf_counter()
        ending = grpc.StatusCode.UNKNOWN
        try:
            yield from behavior(requests, context)
            ending = grpc.StatusCode.OK
        except GeneratorExit:  # gRPC dropped the response stream: its client cancelled
            ending = grpc.StatusCode.CANCELLED
            raise
        finally:
            metrics.ended(status(context, ending), time.perf_counter() - start)

    return timed


def status(context: grpc.ServicerContext, ending: grpc.StatusCode) -> grpc.StatusCode:
    """The status a call's client got: the one the call set or aborted with; else, when the
    client gave up first, DEADLINE_EXCEEDED or CANCELLED (whatever the work returned); else
    `ending`, how the work ended."""
    code = context.code()
    if code is not None:
        return code
    if context.is_active():
        return ending
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return grpc.StatusCode.CANCELLED


def _reading(deserialize: Callable | None, counter) -> Callable:
    """A request deserializer that first counts the message's bytes (None: gRPC's bytes as
    they are)."""

    def read(data: bytes):
        counter.inc(len(data))
        return data if deserialize is None else deserialize(data)

    return read


def _writing(serialize: Callable | None, counter) -> Callable:
    """A response serializer that counts the bytes it writes (None: the behavior's bytes as
    they are)."""

    def write(message) -> bytes:
        data = message if serialize is None else serialize(message)
        counter.inc(len(data))
        return data

    return write
