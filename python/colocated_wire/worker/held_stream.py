"""What a Session and a Relay share: a stream that holds one of the worker's session places
(--max-sessions), and with it a serving thread, for as long as it is open.

`serve` takes the place or refuses the stream before reading anything, says with the headers
that the stream was taken (a client waits for them to learn whether it may use one at all),
and gives the place back whichever way the stream ends: a half-close, a cancel, a drain, a
failure, gRPC dropping the generator, or a client gone before the headers. A thread of the
stream's own reads its requests, so that the serving thread is free to answer meanwhile.

A kind of stream (worker/session.py, worker/relay.py) is composed with a HeldStream, not
derived from it: it implements StreamKind's four methods, and reads the stream's state
(`changed`, `gone`, `failed`, `read_all`) from the HeldStream it was given.
"""

from __future__ import annotations

import enum
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import grpc

from colocated_wire.worker.errors import Refused, unavailable

if TYPE_CHECKING:
    from colocated_wire.worker.state import WorkerState


class Change(enum.Enum):
    """What happened to a held stream, as its kind hears it."""

    READ_ALL = "the reader has stopped: the client half-closed, or worse"
    FAILED = "the stream failed: it ends once its serving thread sees it"
    GONE = "no one hears the stream any more (cancelled, past its deadline, or ended)"
    DRAINING = "the worker drains: the stream ends once what it carries now is answered"


class StreamKind(Protocol):
    """What a kind of held stream does: the HeldStream does the rest."""

    def take(self, request, count: int) -> bool:
        """The reader's `count`th request; False when it ends the reading."""
        ...

    def responses(self) -> Iterator[bytes]:
        """The stream's response bytes, until it ends (on the serving thread)."""
        ...

    def changed(self, change: Change) -> None:
        """Hears what happened to the stream, on whichever thread saw it."""
        ...

    def stop(self) -> None:
        """The stream is over and its place given back."""
        ...


def serve(
    held: HeldStream, kind: StreamKind, context, refused: Refused | None = None
) -> Iterator[bytes]:
    """The stream's response bytes, from `kind.responses()` once it has a place (none when
    `refused`); then the status `held.ending()` gives (OK when None)."""
    sessions = held.state.sessions
    try:
        if refused is not None:
            raise refused
        if held.state.limits.draining:
            raise unavailable(held.draining)
        sessions.open(held)
    except Refused as e:
        context.abort(e.code, e.message)
    try:
        context.send_initial_metadata(())
        held.start(kind)
        yield from kind.responses()
    finally:
        sessions.close(held)
        kind.stop()
    ending = held.ending()
    if ending is not None:
        context.abort(*ending)


class HeldStream:
    """A stream's state as its reader thread and its serving thread share it: whether the
    reader has read everything, whether the stream is gone (cancelled, past its deadline),
    and the first failure, which ends it. Every change is made under `changed`, notified,
    and told to the stream's kind."""

    def __init__(
        self,
        state: WorkerState,
        context: grpc.ServicerContext,
        requests: Iterator,
        draining: str,
        reader_name: str,
    ):
        self.state = state
        self.context = context
        self.draining = draining  # its UNAVAILABLE status when a drain ends it
        self.changed = threading.Condition()
        self.read_all = False  # the reader has stopped: the client half-closed, or worse
        self.gone = False  # the stream was cancelled or passed its deadline
        self.failed: tuple[grpc.StatusCode, str] | None = None  # why the stream ends
        self._requests = requests
        self._reader_name = reader_name
        self._kind: StreamKind | None = None

    def start(self, kind: StreamKind) -> None:
        """Starts reading the requests into `kind`, and hearing the stream's end."""
        self._kind = kind
        self.context.add_callback(self._stream_ended)
        threading.Thread(target=self._read, name=self._reader_name, daemon=True).start()

    def ending(self) -> tuple[grpc.StatusCode, str] | None:
        """The status that ends the stream when it does not end well; None for OK (or for a
        stream no one hears any more)."""
        with self.changed:
            if self.gone:
                return None
            if self.failed is not None:
                return self.failed
            if not self.read_all and self.state.limits.draining:
                return grpc.StatusCode.UNAVAILABLE, self.draining
            return None

    def fail(self, code: grpc.StatusCode, message: str) -> None:
        """Ends the stream with this status, unless it has already failed."""
        with self.changed:
            if self.failed is None:
                self.failed = (code, message)
            self.changed.notify_all()
        self._tell(Change.FAILED)

    def wake(self) -> None:
        """The worker drains: the stream ends once what it carries now is answered."""
        with self.changed:
            self.changed.notify_all()
        self._tell(Change.DRAINING)

    def _read(self) -> None:
        count = 0
        try:
            for request in self._requests:
                count += 1
                if not self._kind.take(request, count):
                    return
        except grpc.RpcError:  # the client cancelled the stream, or its deadline passed
            self._stream_ended()
        except Exception as e:  # noqa: BLE001 - a bug here must still end the stream
            traceback.print_exc(file=sys.stderr)
            self.fail(grpc.StatusCode.INTERNAL, f"the worker failed: {type(e).__name__}: {e}")
        finally:
            with self.changed:
                self.read_all = True
                self.changed.notify_all()
            self._tell(Change.READ_ALL)

    def _stream_ended(self) -> None:
        """The stream has ended: gRPC's callback, also once the stream ends well."""
        with self.changed:
            self.gone = True
            self.changed.notify_all()
        self._tell(Change.GONE)

    def _tell(self, change: Change) -> None:
        if self._kind is not None:
            self._kind.changed(change)
