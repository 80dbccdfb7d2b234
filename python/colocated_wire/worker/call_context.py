"""A session's call as its code sees it: what a gRPC context would answer, for one call.

A call on a Session (worker/session.py) is no gRPC call of its own, yet it runs ExecuteSharded's
code, which asks its context whether the call is still wanted, how long it has, and for a
callback when it ends (worker/device_turn.py, worker/job.py, worker/progress.py). A
CallContext answers those for one call: its own deadline within the session's, and its own
cancellation (a `cancel` naming it, or the stream's end).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import grpc


class CallContext:
    """What a call's code asks of its gRPC context, answered for one call of a session: it is
    active until its own deadline passes, the client cancels it, or the stream ends."""

    def __init__(self, stream: grpc.ServicerContext, deadline: float | None):
        self._stream = stream
        self.deadline = deadline  # time.monotonic() seconds, or None for the session's
        self.cancelled = False  # by a `cancel` naming it
        self._ended = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._timer: threading.Timer | None = None

    def is_active(self) -> bool:
        if self._ended or not self._stream.is_active():
            return False
        return self.deadline is None or time.monotonic() < self.deadline

    def time_remaining(self) -> float | None:
        """Seconds to the call's deadline or the session's, whichever is sooner; None if
        neither has one."""
        stream = self._stream.time_remaining()
        if self.deadline is None:
            return stream
        own = max(self.deadline - time.monotonic(), 0.0)
        return own if stream is None else min(own, stream)

    def expired(self) -> bool:
        """Whether the call's own deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Calls `callback()` once the call is no longer wanted (as gRPC calls a context's
        callbacks when its call ends); False, and never called, if it has ended already."""
        with self._lock:
            if self._ended:
                return False
            self._callbacks.append(callback)
            if self.deadline is not None and self._timer is None:  # only a call that waits
                self._timer = threading.Timer(self.deadline - time.monotonic(), self.end)
                self._timer.daemon = True
                self._timer.start()
        return True

    def cancel(self) -> None:
        """The client cancelled the call."""
        self.cancelled = True
        self.end()

    def end(self) -> None:
        """The call is no longer wanted: its callbacks run, once."""
        for callback in self._close():
            callback()

    def close(self) -> None:
        """The call has been answered: its callbacks are dropped, never run."""
        self._close()

    def _close(self) -> list[Callable[[], None]]:
        with self._lock:
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        return callbacks
