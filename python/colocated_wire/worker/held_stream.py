"""What a Session and a Relay share: a stream that holds one of the worker's session places
(--max-sessions), and with it a serving thread, for as long as it is open.

`serve` takes the place or refuses the stream before reading anything, says with the headers
that the stream was taken (a client waits for them to learn whether it may use one at all),
and gives the place back whichever way the stream ends: a half-close, a cancel, a drain, a
failure, gRPC dropping the generator, or a client gone before the headers. A thread of the
stream's own reads its requests, so that the serving thread is free to answer meanwhile.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc

from colocated_wire.worker.errors import Refused, unavailable

if TYPE_CHECKING:
    from colocated_wire.worker.state import WorkerState


def serve(state: WorkerState, held: HeldStream, context) -> Iterator[bytes]:
    """The stream's response bytes, from `held.responses()` once it has a place; then the
    status `held.ending()` gives (OK when None)."""
    try:
        held.admit()
        if state.limits.draining:
            raise unavailable(held.draining)
        state.sessions.open(held)
    except Refused as e:
        context.abort(e.code, e.message)
    try:
        context.send_initial_metadata(())
        held.start()
        yield from held.responses()
    finally:
        state.sessions.close(held)
        held.stop()
    ending = held.ending()
    if ending is not None:
        context.abort(*ending)


class HeldStream:
    """A stream's state as its reader thread and its serving thread share it: whether the
    reader has read everything, whether the stream is gone (cancelled, past its deadline),
    and the first failure, which ends it."""

    draining = "the worker is shutting down"  # its UNAVAILABLE status when a drain ends it
    reader_name = "colocated-wire-stream"

    def __init__(self, state: WorkerState, context: grpc.ServicerContext, requests: Iterator):
        self._state = state
        self._stream = context
        self._requests = requests
        self._changed = threading.Condition()
        self._read_all = False  # the reader has stopped: the client half-closed, or worse
        self._gone = False  # the stream was cancelled or passed its deadline
        self._failed: tuple[grpc.StatusCode, str] | None = None  # why the stream ends

    def admit(self) -> None:
        """Raises Refused when the worker serves no such stream."""

    def start(self) -> None:
        self._stream.add_callback(self._stream_ended)
        threading.Thread(target=self._read, name=self.reader_name, daemon=True).start()

    def responses(self) -> Iterator[bytes]:
        """The stream's response bytes, until it ends."""
        raise NotImplementedError

    def stop(self) -> None:
        """The stream is over and its place given back."""

    def wake(self) -> None:
        """The worker drains: the stream ends once what it carries now is answered."""

    def ending(self) -> tuple[grpc.StatusCode, str] | None:
        """The status that ends the stream when it does not end well; None for OK (or for a
        stream no one hears any more)."""
        with self._changed:
            if self._gone:
                return None
            if self._failed is not None:
                return self._failed
            if not self._read_all and self._state.limits.draining:
                return grpc.StatusCode.UNAVAILABLE, self.draining
            return None

    # The reader's side.

    def _read(self) -> None:
        count = 0
        try:
            for request in self._requests:
                count += 1
                if not self._take(request, count):
                    return
        except grpc.RpcError:  # the client cancelled the stream, or its deadline passed
            self._stream_ended()
        except Exception as e:  # noqa: BLE001 - a bug here must still end the stream
            traceback.print_exc(file=sys.stderr)
            self._fail(grpc.StatusCode.INTERNAL, f"the worker failed: {type(e).__name__}: {e}")
        finally:
            with self._changed:
                self._read_all = True
                self._changed.notify_all()
            self._read_ended()

    def _take(self, request, count: int) -> bool:
        """Takes the `count`th request; False when it ends the stream."""
        raise NotImplementedError

    def _read_ended(self) -> None:
        """The reader has stopped."""

    # Any thread's side.

    def _fail(self, code: grpc.StatusCode, message: str) -> None:
        """Ends the stream with this status, unless it has already failed."""
        with self._changed:
            if self._failed is None:
                self._failed = (code, message)
            self._changed.notify_all()
        self._on_failed()

    def _stream_ended(self) -> None:
        """The stream has ended: gRPC's callback, also once the stream ends well."""
        with self._changed:
            self._gone = True
            self._changed.notify_all()
        self._on_gone()

    def _on_failed(self) -> None:
        """The stream has failed: it ends once its serving thread sees it."""

    def _on_gone(self) -> None:
        """No one hears the stream any more: stop what it has started."""
