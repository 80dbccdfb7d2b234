"""Relay: one stream that carries a controller's sessions with other members of its job.

A controller of a large job pays for every connection it keeps, in what each costs to touch:
with a thousand members, their streams', sockets' and HTTP/2 sessions' state no longer fits a
core's cache, and a member's call cost the controller twice as much at 1,024 members as at 64
(docs/performance-journal.md, wave 13). With relays it keeps one stream per relaying member,
each carrying the sessions of a few dozen members: the relaying member opens a Session to each
child it is given (itself too), at once, once the child's GetTopology has shown it a process of
the same JAX job (a relay dials the targets its controller names: it must not be a way to reach
other services), and says which the children took, so that the controller knows at connect which
members serve one; it forwards each SessionRequest's bytes unread, so every child's worker
checks and runs its calls as it would from the controller, and their answers go back as written.
The relay reads no payload, so a newer schema's fields pass through it.

The relay holds a serving thread for as long as it is open, as a session does, so it takes a
session place (--max-sessions). A thread reads the controller's requests and hands each one's
messages, at once, to an asyncio loop (one per worker, in a thread of its own) on which the
children's sessions are grpc.aio calls: forwarding a message and reading an answer cost no
thread hand-off of their own, where a call per child in gRPC's threaded API cost two a message
(docs/performance-journal.md, wave 14). The answers collect in one list, which the stream's
thread sends, several answers a message when they come at once. A child's session that ends (its
worker died, drained or refused it) is reported with its status, and a later message naming the
child's next session opens another. When the controller half-closes, the children's sessions are
half-closed and the relay ends once they have; a drain does the same and then ends the relay
UNAVAILABLE; a cancel cancels them.
"""

from __future__ import annotations

import asyncio
import threading
from asyncio import FIRST_COMPLETED
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import grpc
import grpc.aio
from google.protobuf.message import DecodeError

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker import held_stream, topology
from colocated_wire.worker.errors import Refused
from colocated_wire.worker.held_stream import Change, HeldStream
from colocated_wire.worker.limits import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from colocated_wire.worker.state import WorkerState

_SERVICE = service_pb2.DESCRIPTOR.services_by_name["ColocatedWorkerService"]
# Method paths as gRPC writes them, from the generated service descriptor.
SESSION_METHOD = f"/{_SERVICE.full_name}/{_SERVICE.methods_by_name['Session'].name}"
TOPOLOGY_METHOD = f"/{_SERVICE.full_name}/{_SERVICE.methods_by_name['GetTopology'].name}"
_CLOSE = object()  # ends a child session's requests: a half-close
# The UNAVAILABLE status of a relay a drain ends, and the refusal of a worker without relays.
DRAINING = "the worker is shutting down: its relay ended after its children's current calls"
NO_RELAYS = "this worker serves no relays"
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]
_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def relay_loop() -> asyncio.AbstractEventLoop:
    """The worker's one loop for its relays' children, started at the first relay."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="colocated-wire-relay-loop", daemon=True
            ).start()
            _loop = loop
        return _loop


def read_relay_request(data: bytes) -> service_pb2.RelayRequest | str:
    """A RelayRequest, or what is wrong with its bytes (answered INVALID_ARGUMENT)."""
    try:
        return service_pb2.RelayRequest.FromString(data)
    except DecodeError as e:
        return f"not a RelayRequest: {e}"


def serve(
    state: WorkerState, requests: Iterator[service_pb2.RelayRequest | str], context
) -> Iterator[bytes]:
    """Relay: RelayResponse bytes as the children answer, until the controller half-closes
    and every child session has ended (OK), the stream breaks, or the worker drains
    (UNAVAILABLE). Refused as a session is when every session place is taken, or when the
    worker serves no relays."""
    held = HeldStream(state, context, requests, DRAINING, "colocated-wire-relay")
    refused = None if state.relays else Refused(grpc.StatusCode.UNIMPLEMENTED, NO_RELAYS)
    return held_stream.serve(held, Relay(held), context, refused)


class RelayedSession:
    """One Session to a child, a grpc.aio call on the relays' loop, opened once the child has
    been found a process of this worker's job: a task writes what the relay forwards to it,
    another reads its answers into the relay."""

    def __init__(self, relay: Relay, child: int, number: int, member: Member):
        self.child = child
        self.number = number
        self.ended = False
        self._writes: asyncio.Queue = asyncio.Queue()  # held until the session opens
        self._call: grpc.aio.StreamStreamCall | None = None
        self._writer: asyncio.Task | None = None
        loop = asyncio.get_running_loop()
        self._cancelled = loop.create_future()  # set by a cancel while the child is checked
        # Kept: the loop holds only weak references to its tasks.
        self._run_task = loop.create_task(self._run(relay, member))

    def send(self, message: bytes) -> None:
        self._writes.put_nowait(message)

    def close(self) -> None:
        """Half-closes the session: the child answers the calls it has, then ends it. One
        still waiting for its child's check ends at once: nothing was sent to the child."""
        self._writes.put_nowait(_CLOSE)
        self._stop_checking()

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
        self._stop_checking()

    def _stop_checking(self) -> None:
        if self._call is None and not self._cancelled.done():
            self._cancelled.set_result(None)

    async def _run(self, relay: Relay, member: Member) -> None:
        code, details = grpc.StatusCode.OK, ""
        try:
            # Not `await member.checked`: a cancel would cancel the check, which other
            # sessions of the child share.
            await asyncio.wait((member.checked, self._cancelled), return_when=FIRST_COMPLETED)
            if self._cancelled.done():
                raise asyncio.CancelledError
            problem = member.checked.result()
            if problem is not None:
                code, details = problem
            else:
                # Bytes both ways: no serializer, so each message passes as it was written.
                self._call = member.channel.stream_stream(SESSION_METHOD)()
                self._writer = asyncio.get_running_loop().create_task(self._write())
                code, details = await self._read(relay)
        except grpc.RpcError as e:
            code, details = e.code(), e.details() or ""
        except asyncio.CancelledError:
            code, details = grpc.StatusCode.CANCELLED, "the relay ended"
        self._writes.put_nowait(_CLOSE)  # the writer stops too
        relay.ended(self, code, details)

    async def _write(self) -> None:
        try:
            while (message := await self._writes.get()) is not _CLOSE:
                await self._call.write(message)
            await self._call.done_writing()
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # the call has ended: its reader reports how

    async def _read(self, relay: Relay) -> tuple[grpc.StatusCode, str]:
        await self._call.initial_metadata()
        if not self._call.done():  # headers, and the call goes on: the worker took it
            relay.taken(self)
        while (message := await self._call.read()) is not grpc.aio.EOF:
            relay.answered(self, message)
        return await self._call.code(), await self._call.details() or ""


class Member:
    """A child's target as the relay reaches it: its channel, and whether it is a process of
    this worker's job, asked once (GetTopology) before anything is forwarded to it. A relay
    dials whatever targets its controller names: so that it cannot be pointed at a service
    that is not a worker of its job, such a target gets one empty GetTopology and no more."""

    def __init__(self, target: str, credentials: grpc.ChannelCredentials | None):
        self.channel = (
            grpc.aio.insecure_channel(target, _CHANNEL_OPTIONS)
            if credentials is None
            else grpc.aio.secure_channel(target, credentials, _CHANNEL_OPTIONS)
        )
        self.checked = asyncio.get_running_loop().create_task(self._check(target))

    async def _check(self, target: str) -> tuple[grpc.StatusCode, str] | None:
        try:
            answer = await self.channel.unary_unary(TOPOLOGY_METHOD)(b"")
        except grpc.RpcError as e:
            detail = f"{target} did not answer GetTopology: {e.code().name}: {e.details() or ''}"
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return e.code(), detail  # unreached, as its session would have been
            # Not the child's own refusal of a session (UNIMPLEMENTED, RESOURCE_EXHAUSTED).
            return grpc.StatusCode.FAILED_PRECONDITION, detail
        problem = topology.not_of_this_job(answer)
        if problem is None:
            return None
        detail = f"{target} is not a process of the relaying worker's JAX job: {problem}"
        return grpc.StatusCode.FAILED_PRECONDITION, detail


class Relay:
    """One relay stream (a StreamKind): a thread reads the controller's requests and hands
    their messages to the loop, which forwards them and collects the answers; the stream's
    thread sends them."""

    def __init__(self, held: HeldStream):
        self._held = held
        self._loop = relay_loop()
        self._targets: dict[int, str] = {}  # the reader's
        self._members: dict[str, Member] = {}  # the loop's, from here on
        self._sessions: dict[int, RelayedSession] = {}  # each child's latest session
        self._open = 0  # child sessions not yet ended
        self._out: list[
            service_pb2.RelayedMessage | service_pb2.RelayedEnd | service_pb2.RelayedTaken
        ] = []
        self._closed = False  # the children's sessions were half-closed: no more opens

    # The reader's side.

    def take(self, request: service_pb2.RelayRequest | str, count: int) -> bool:
        problem = self._hand_over(request, count)
        if problem is not None:
            self._held.fail(grpc.StatusCode.INVALID_ARGUMENT, problem)
        return problem is None

    def _hand_over(self, request: service_pb2.RelayRequest | str, count: int) -> str | None:
        """Takes the children a request names and hands its messages to the loop; what is
        wrong with it, if anything (then nothing of it is forwarded)."""
        if isinstance(request, str):
            return f"request {count}: {request}"
        messages: list[tuple[int, int, str, bytes | None]] = []
        # Each child is a process of the job, with a device at least: no job has more.
        devices = len(topology.topology().devices)
        for i, child in enumerate(request.children):
            known = self._targets.get(child.child)
            if not child.target:
                return f"request {count}: children[{i}] (child {child.child}) has no target"
            if known is not None and known != child.target:
                return (
                    f"request {count}: children[{i}] names child {child.child} {child.target},"
                    f" which was given as {known}"
                )
            if known is None and len(self._targets) == devices:
                return (
                    f"request {count}: children[{i}] is one more than the job's {devices} devices"
                )
            if known is None:  # its first session opens at once: the controller waits for it
                messages.append((child.child, 0, child.target, None))
            self._targets[child.child] = child.target
        for i, message in enumerate(request.messages):
            target = self._targets.get(message.child)
            if target is None:
                return f"request {count}: messages[{i}] is to child {message.child}, never given"
            messages.append((message.child, message.session, target, message.message))
        if messages:
            self._loop.call_soon_threadsafe(self._forward, messages)
        return None

    # The loop's side.

    def _forward(self, messages: list[tuple[int, int, str, bytes | None]]) -> None:
        """Each message to its child's session, the one it names opened if it is newer (a
        message of None only opens it). A message to a session that ended is dropped: the end
        that the controller hears (or has heard) fails the calls it carried."""
        for child, number, target, message in messages:
            session = self._sessions.get(child)
            if session is None or number > session.number:
                session = self._open_session(child, number, target)
                if session is None:
                    return  # the relay is ending: its stream's end fails every call
            if message is not None and number == session.number and not session.ended:
                session.send(message)

    def _open_session(self, child: int, number: int, target: str) -> RelayedSession | None:
        with self._held.changed:
            if self._closed:
                return None
            self._open += 1
        old = self._sessions.get(child)
        if old is not None:
            old.close()  # the controller has moved on from it: it ended, or it ends now
        member = self._members.get(target)
        if member is None:
            member = Member(target, self._held.state.relay_credentials)
            self._members[target] = member
        session = RelayedSession(self, child, number, member)
        self._sessions[child] = session
        return session

    def answered(self, session: RelayedSession, message: bytes) -> None:
        item = service_pb2.RelayedMessage(
            child=session.child, session=session.number, message=message
        )
        with self._held.changed:
            self._out.append(item)
            self._held.changed.notify_all()

    def taken(self, session: RelayedSession) -> None:
        item = service_pb2.RelayedTaken(child=session.child, session=session.number)
        with self._held.changed:
            self._out.append(item)
            self._held.changed.notify_all()

    def ended(self, session: RelayedSession, code: grpc.StatusCode, details: str) -> None:
        status = service_pb2.CallStatus(code=code.value[0], message=details)
        item = service_pb2.RelayedEnd(child=session.child, session=session.number, status=status)
        session.ended = True
        with self._held.changed:
            self._open -= 1
            self._out.append(item)
            self._held.changed.notify_all()

    def _each_session(self, act: Callable[[RelayedSession], None]) -> None:
        for session in list(self._sessions.values()):
            if not session.ended:
                act(session)

    async def _shut(self) -> None:
        self._each_session(RelayedSession.cancel)
        for member in list(self._members.values()):
            member.checked.cancel()
            await member.channel.close()

    # Any thread's side.

    def changed(self, change: Change) -> None:
        """A failed stream, or one no one hears, cancels the children's sessions (after a
        good end, every one has ended); once the reader has stopped, or the worker drains,
        they are half-closed, so that the relay ends once their current calls are answered."""
        if change in (Change.FAILED, Change.GONE):
            self._cancel_children()
        else:
            self._close_children()

    def _close_children(self) -> None:
        with self._held.changed:
            self._closed = True
            self._held.changed.notify_all()
        self._loop.call_soon_threadsafe(self._each_session, RelayedSession.close)

    def _cancel_children(self) -> None:
        with self._held.changed:
            self._closed = True
        self._loop.call_soon_threadsafe(self._each_session, RelayedSession.cancel)

    # The stream's side.

    def responses(self) -> Iterator[bytes]:
        """Whatever the children answered, a message at a time, until the relay ends."""
        while True:
            with self._held.changed:
                while not self._out and not self._over():
                    self._held.changed.wait()
                if self._held.gone or self._held.failed is not None or not self._out:
                    return
                out, self._out = self._out, []
            response = service_pb2.RelayResponse()
            for item in out:
                if isinstance(item, service_pb2.RelayedMessage):
                    response.messages.append(item)
                elif isinstance(item, service_pb2.RelayedEnd):
                    response.ends.append(item)
                else:
                    response.taken.append(item)
            yield response.SerializeToString()

    def _over(self) -> bool:
        held = self._held
        if held.gone or held.failed is not None:
            return True
        ending = held.read_all or held.state.limits.draining
        return ending and self._closed and self._open == 0

    def stop(self) -> None:
        """The relay's stream is over: every child session is cancelled, its channels closed."""
        asyncio.run_coroutine_threadsafe(self._shut(), self._loop)
