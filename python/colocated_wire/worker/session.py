"""Session: one long-lived stream that carries many calls, each one message each way.

A controller of many workers (a WorkerGroup of up to 1,024 members) pays on its own CPU for
every stream it opens: a call of its own per member is a stream's start, metadata and end on
every member, and that cost, not the worker's, bounds how fast the group calls. So it opens
one Session per member and sends each call as one SessionCall (ExecuteSharded's start,
every input shard as one chunk marked last, and the end implied); the worker answers with
SessionResponse parts tagged with the call's id: a small answer is one message (the output
specs, every output chunk and `end`), a larger one several, and a refused call one `status`.

A call runs the same code as ExecuteSharded (worker/sharded.py): admitted against the
worker's limits, its inputs checked and assembled by InputShards, its function run in the
devices' turn and together with the job's other members. What that code asks of a call's
gRPC context a CallContext (worker/call_context.py) answers for the call: its own deadline
(`timeout_ms`) within the session's, and its own cancellation (a `cancel` naming it, or the
stream's end). A thread reads the requests, so that a `cancel` reaches the call it names
while that call runs; the calls run one at a time, in order, on the stream's thread, since a
session carries one caller's calls.
A refusal ends that call alone, with its status, and the session goes on. A drain (SIGTERM)
ends every session after its current call (UNAVAILABLE), so that the worker neither cuts a
call short nor waits on a client's idle stream.

gRPC's server holds one of its threads for a session as long as the stream is open, idle or
not, so at most --max-sessions are open at once (Sessions), and the server has a thread for
each beyond those of the calls (worker/main.py): idle sessions cannot take the threads that
GetVersion, health and Execute need. One more is refused at once with RESOURCE_EXHAUSTED,
before it reads a request; with --max-sessions 0, with UNIMPLEMENTED.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc

from colocated_wire.worker import affinity, held_stream, metrics
from colocated_wire.worker.call_context import CallContext
from colocated_wire.worker.device_turn import TURN
from colocated_wire.worker.errors import (
    Refused,
    cancelled,
    invalid_argument,
)
from colocated_wire.worker.execute import check_active, output_specs_payload
from colocated_wire.worker.held_stream import Change, HeldStream
from colocated_wire.worker.job import run_named
from colocated_wire.worker.requests import (
    SessionCallView,
    SessionRequestView,
    ShardedRequest,
)
from colocated_wire.worker.responses import OutputChunk, session_answer, session_status
from colocated_wire.worker.sharded import (
    MAX_CHUNK_BYTES,
    OUTPUT_CHUNK_BYTES,
    chunk_parts,
    describe,
    each_shard,
    resolve,
    run_sharded,
)

if TYPE_CHECKING:
    from colocated_wire.worker.state import WorkerState

# The UNAVAILABLE status of a session a drain ends.
DRAINING = "the worker is shutting down and takes no new calls"
# The most output bytes one SessionResponse carries: an answer this small is one message.
ANSWER_BYTES = 4 * OUTPUT_CHUNK_BYTES
_END = ShardedRequest(part="end")


def serve(state: WorkerState, requests: Iterator[SessionRequestView], context) -> Iterator[bytes]:
    """Session: SessionResponse bytes, each call's answer in turn, until the client
    half-closes (OK), the stream breaks, or the worker drains (UNAVAILABLE, after the
    current call). A session beyond --max-sessions is refused before it reads anything
    (RESOURCE_EXHAUSTED; UNIMPLEMENTED with none)."""
    held = HeldStream(state, context, requests, DRAINING, "colocated-wire-session")
    return held_stream.serve(held, Session(held), context)


class Call:
    """A call read from the session: its id, what it carries, its context, and the refusal
    that answers it when it is refused as it is read."""

    __slots__ = ("id", "view", "context", "refusal", "read_at")

    def __init__(
        self,
        call_id: int,
        view: SessionCallView | None,
        context: CallContext,
        refusal: Refused | None,
    ):
        self.id = call_id
        self.view = view
        self.context = context
        self.refusal = refusal
        self.read_at = time.perf_counter()  # a call's latency counts from when it is read


class Session:
    """One session's calls (a StreamKind): a thread reads them into a queue, the stream's
    thread runs them."""

    def __init__(self, held: HeldStream):
        self._held = held
        self._pending: deque[Call] = deque()
        self._running: Call | None = None
        self._last_id = -1
        self._last_specs: bytes | None = None  # the output specs this session sent last

    def responses(self) -> Iterator[bytes]:
        """Each call's answer, in turn."""
        while (call := self.next_call()) is not None:
            yield from self.answer(call)

    # The reader's side.

    def take(self, request: SessionRequestView, count: int) -> bool:
        """Queues a call or cancels one; False when the request ends the session."""
        if request.part == "call":
            self._queue(request.call.id, request.call, None)
        elif request.part == "cancel":
            self._cancel(request.cancel)
        elif request.part == "invalid" and request.call_id is not None:
            refusal = invalid_argument(f"request {count}: {request.problem}")
            self._queue(request.call_id, None, refusal)
        else:
            problem = request.problem if request.part == "invalid" else "neither a call nor cancel"
            self._held.fail(grpc.StatusCode.INVALID_ARGUMENT, f"request {count}: {problem}")
            return False
        return True

    def _queue(self, call_id: int, view: SessionCallView | None, refusal: Refused | None) -> None:
        now = time.monotonic()  # a call's time counts from when it is read
        if refusal is None and call_id <= self._last_id:
            refusal = invalid_argument(
                f"call {call_id}: its id is not above the session's previous call {self._last_id}"
                " (a session's call ids increase and are never reused)"
            )
        self._last_id = max(self._last_id, call_id)
        timeout = min(view.timeout_ms / 1000, threading.TIMEOUT_MAX) if view is not None else 0
        deadline = now + timeout if timeout else None
        call = Call(call_id, view, CallContext(self._held.context, deadline), refusal)
        with self._held.changed:
            self._pending.append(call)
            self._held.changed.notify_all()

    def _cancel(self, call_id: int) -> None:
        with self._held.changed:
            running = self._running
            if running is not None and running.id == call_id:
                found = running
            else:
                found = next((c for c in self._pending if c.id == call_id), None)
        if found is not None:  # an id of a call answered, or never sent: nothing to stop
            found.context.cancel()

    def changed(self, change: Change) -> None:
        """When no one hears the stream any more, its running call stops; the other changes
        the stream's thread sees by itself (HeldStream notifies it)."""
        if change is not Change.GONE:
            return
        with self._held.changed:
            running = self._running
        if running is not None:
            running.context.end()

    def stop(self) -> None:
        """Nothing to stop: the calls ran on the stream's thread."""

    # The stream's side.

    def next_call(self) -> Call | None:
        """The next call to run, once there is one; None when the session ends: the client
        half-closed, the stream broke or was refused, or the worker drains."""
        limits = self._held.state.limits
        with self._held.changed:
            self._running = None
            while True:
                if self._held.gone:
                    return None
                if self._pending:  # while draining too: admission answers it UNAVAILABLE
                    self._running = self._pending.popleft()
                    return self._running
                if self._held.read_all or self._held.failed is not None or limits.draining:
                    return None
                self._held.changed.wait()

    def answer(self, call: Call) -> Iterator[bytes]:
        """The call's answer: its parts, or the status that refuses it; counted as one
        SessionCall in the worker's metrics, with the status its client got."""
        context = call.context
        code = grpc.StatusCode.UNKNOWN
        try:
            if call.refusal is not None:
                raise call.refusal
            if context.cancelled:
                raise cancelled("the client cancelled the call before it ran")
            yield from self._run(call)
            code = grpc.StatusCode.OK
        except Refused as e:
            code, message = self._status(call, e.code, e.message)
            if self._held.context.is_active():
                yield session_status(call.id, code.value[0], message)
            else:
                code = metrics.status(self._held.context, grpc.StatusCode.CANCELLED)
        except GeneratorExit:  # gRPC dropped the stream: its client cancelled it
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception as e:  # noqa: BLE001 - a bug here must still answer the call
            traceback.print_exc(file=sys.stderr)
            failed = f"the worker failed: {type(e).__name__}: {e}"
            code, message = self._status(call, grpc.StatusCode.INTERNAL, failed)
            yield session_status(call.id, code.value[0], message)
        finally:
            context.close()
            metrics.session_call_ended(code, time.perf_counter() - call.read_at)

    def _run(self, call: Call) -> Iterator[bytes]:
        """ExecuteSharded's code path on the call's requests, within the worker's limits; the
        last part leaves once the call's slot is free."""
        state, context, view = self._held.state, call.context, call.view
        requests = call_requests(view)
        job_call_id = view.job_call_id or None
        last = None
        with (
            state.limits.admit(0) as slot,
            state.progress.track(context),
            affinity.spread(),
        ):
            name, result, version = run_sharded(
                iter(requests),
                lambda start: resolve(state, start),
                slot.reserve,
                lambda step: check_active(context, step),
                lambda devices, launch, wait: run_named(
                    context,
                    lambda: TURN.run(devices, context, launch, wait),
                    job_call_id,
                    "job_call_id",
                ),
            )
            outputs, specs = output_specs_payload(name, result, version)
            as_before = specs == self._last_specs
            for part in answer_parts(call.id, name, outputs, specs, as_before):
                check_active(context, "sending its outputs")
                if last is not None:
                    self._last_specs = specs  # as the client will have them, from this part on
                    yield last
                last = part
        self._last_specs = specs
        yield last

    def _status(
        self, call: Call, code: grpc.StatusCode, message: str
    ) -> tuple[grpc.StatusCode, str]:
        """A refused call's status; a call the client cancelled is CANCELLED, one past its own
        deadline DEADLINE_EXCEEDED, as the call's own status would have been."""
        context = call.context
        if context.cancelled and code != grpc.StatusCode.CANCELLED:
            code, message = grpc.StatusCode.CANCELLED, f"the client cancelled the call ({message})"
        elif code == grpc.StatusCode.CANCELLED and not context.cancelled and context.expired():
            code = grpc.StatusCode.DEADLINE_EXCEEDED
        return code, message


def call_requests(call: SessionCallView) -> list[ShardedRequest]:
    """The ExecuteSharded requests a session's call stands for: its start, its chunks, the
    end. Raises INVALID_ARGUMENT for a call a session does not carry."""
    if call.input_bytes > MAX_CHUNK_BYTES:
        raise invalid_argument(
            f"inputs: {call.input_bytes} bytes in all, over the worker's limit of"
            f" {MAX_CHUNK_BYTES} bytes for a call on a session; send larger inputs by"
            " ExecuteSharded"
        )
    if call.start is None:
        raise invalid_argument("start: the call carries no `start`")
    requests = [ShardedRequest(part="start", start=call.start)]
    for k, chunk in enumerate(call.inputs):
        if chunk.index is None or not chunk.last:
            if chunk.index is None:
                where = f"inputs[{chunk.leaf}] chunk {k + 1}: carries no index"
            else:
                starts, stops = chunk.index
                index = tuple(zip(starts, stops, strict=False))
                where = f"inputs[{chunk.leaf}] shard {describe(index)}: not marked last"
            raise invalid_argument(
                f"{where} (on a session, each shard is one chunk: its index, all its bytes,"
                " marked last)"
            )
        requests.append(ShardedRequest(part="chunk", chunk=chunk))
    requests.append(_END)
    return requests


def answer_parts(
    call_id: int, name: str, outputs: list, specs: bytes, as_before: bool = False
) -> Iterator[bytes]:
    """The SessionResponse parts of a call's outputs (and their SpecsPayload `specs`): one
    with the specs, every chunk and `end` when they come to at most ANSWER_BYTES; else parts
    of at most ANSWER_BYTES of chunks each, the specs in the first and `end` on the last.
    `as_before`: the specs are what the session sent last, so the first part says so instead
    of sending them again."""
    part: list[OutputChunk] = []
    size = 0
    for leaf, index, data in each_shard(name, outputs):
        for chunk in chunk_parts(leaf, index, data):
            nbytes = len(chunk[3])
            if part and size + nbytes > ANSWER_BYTES:
                yield session_answer(call_id, specs, part, end=False, specs_as_before=as_before)
                specs, part, size, as_before = None, [], 0, False
            part.append(chunk)
            size += nbytes
    yield session_answer(call_id, specs, part, end=True, specs_as_before=as_before)
