"""How much the worker takes on at once, and how it stops.

At most `max_calls` calls and `max_bytes` request bytes are in flight; a call
beyond either is refused at once with RESOURCE_EXHAUSTED, so nothing waits in
a queue that grows without bound. A drain (on SIGTERM) refuses new calls with
UNAVAILABLE and waits, up to a grace period, for the calls in flight.
Only the colocated calls are counted (Execute, LoadProgram, ExecuteSharded, and
each call on a Session while it runs): GetVersion and the standard services keep
answering during a drain. The sessions open at once are limited apart, by
--max-sessions (Sessions): an idle one holds no call slot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import grpc

from colocated_wire.worker.errors import Refused, resource_exhausted, unavailable

if TYPE_CHECKING:
    from colocated_wire.worker.held_stream import HeldStream

DEFAULT_MAX_CALLS = 16
DEFAULT_MAX_BYTES = 1 << 30
DEFAULT_MAX_SESSIONS = 8
# The largest message the worker's server, and a relay's channels to its children, take or send.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class CallLimits:
    """Counts the calls and bytes in flight; admits a call only within both limits."""

    def __init__(self, max_calls: int = DEFAULT_MAX_CALLS, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_calls < 1 or max_bytes < 1:
            raise ValueError(f"limits must be positive: {max_calls} calls, {max_bytes} bytes")
        self.max_calls = max_calls
        self.max_bytes = max_bytes
        self.calls = 0
        self.bytes = 0
        self.draining = False
        self._changed = threading.Condition()
        self._on_drain: list[Callable[[], None]] = []
        self._on_refuse: list[Callable[[str], None]] = []

    @contextmanager
    def admit(self, nbytes: int) -> Iterator[Slot]:
        """Holds one call slot and `nbytes` for the block; raises Refused when over a limit."""
        with self._changed:
            if self.draining:
                self._refusing("draining")
                raise unavailable("the worker is shutting down and takes no new calls")
            if self.calls >= self.max_calls:
                self._refusing("calls")
                raise resource_exhausted(
                    f"the worker is running {self.calls} calls, its limit"
                    " (--max-concurrent-calls); retry later"
                )
            if self.bytes + nbytes > self.max_bytes:
                self._refusing("bytes")
            self._take_bytes(nbytes)
            self.calls += 1
        slot = Slot(self, nbytes)
        try:
            yield slot
        finally:
            with self._changed:
                self.calls -= 1
                self.bytes -= slot.held
                self._changed.notify_all()

    def _take_bytes(self, nbytes: int) -> None:
        """Adds `nbytes` to the bytes in flight, or raises; the caller holds the lock."""
        if self.bytes + nbytes > self.max_bytes:
            raise resource_exhausted(
                f"{nbytes} more bytes would pass the worker's limit of {self.max_bytes} bytes"
                f" in flight (--max-inflight-bytes; {self.bytes} in flight now)"
            )
        self.bytes += nbytes

    def on_refuse(self, callback: Callable[[str], None]) -> None:
        """Calls `callback(reason)` ("calls", "bytes" or "draining") for each call refused at
        admission."""
        self._on_refuse.append(callback)

    def _refusing(self, reason: str) -> None:
        for callback in self._on_refuse:
            callback(reason)

    def on_drain(self, callback: Callable[[], None]) -> None:
        """Calls `callback()` once when a drain starts (health turns NOT_SERVING there)."""
        self._on_drain.append(callback)

    def drain(self, grace_seconds: float) -> bool:
        """Refuses new calls and waits for those in flight; True if all ended within the grace."""
        with self._changed:
            started = not self.draining
            self.draining = True
        if started:
            for callback in self._on_drain:
                callback()
        return self.wait_idle(grace_seconds)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Waits until no call is in flight; False if `timeout` seconds pass first."""
        with self._changed:
            return self._changed.wait_for(lambda: self.calls == 0, timeout=timeout)


class Slot:
    """One admitted call's share of the limits; a stream reserves its bytes as they come."""

    def __init__(self, limits: CallLimits, held: int):
        self._limits = limits
        self.held = held

    def reserve(self, nbytes: int) -> None:
        """Counts `nbytes` more against --max-inflight-bytes; raises Refused beyond it."""
        with self._limits._changed:
            self._limits._take_bytes(nbytes)
            self.held += nbytes

    def release(self, nbytes: int) -> None:
        """Gives back `nbytes` of what this call holds."""
        nbytes = min(nbytes, self.held)
        with self._limits._changed:
            self._limits.bytes -= nbytes
            self.held -= nbytes
            self._limits._changed.notify_all()


class Sessions:
    """The sessions open on the worker, relays (worker/relay.py) among them: at most `limit`
    at once (--max-sessions), since each holds one of the server's threads for as long as it
    is open, idle or not (the pool has one thread for each place: worker/main.py); and so
    that a drain ends each after its current call."""

    def __init__(self, limit: int = DEFAULT_MAX_SESSIONS) -> None:
        if limit < 0:
            raise ValueError(f"the session limit must be at least 0, not {limit}")
        self.limit = limit
        self._changed = threading.Condition()
        self._open: set[HeldStream] = set()

    def open(self, session: HeldStream) -> None:
        """Takes a place for `session`; raises Refused at once when every place is taken
        (RESOURCE_EXHAUSTED), or when the worker serves no sessions (UNIMPLEMENTED, as a
        worker without the method answers). Every open is followed by a close."""
        with self._changed:
            if self.limit == 0:
                raise Refused(
                    grpc.StatusCode.UNIMPLEMENTED,
                    "this worker serves no sessions (--max-sessions 0); call ExecuteSharded",
                )
            if len(self._open) >= self.limit:
                sessions = "session" if self.limit == 1 else "sessions"
                raise resource_exhausted(
                    f"this worker serves at most {self.limit} {sessions} at once"
                    " (--max-sessions); call ExecuteSharded"
                )
            self._open.add(session)

    def close(self, session: HeldStream) -> None:
        """Gives back the place `session` took."""
        with self._changed:
            self._open.discard(session)
            self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return len(self._open)

    def wait_at_most(self, count: int, timeout: float | None = None) -> bool:
        """Waits until at most `count` sessions are open; False if `timeout` seconds pass
        first."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._open) <= count, timeout=timeout)

    def drain(self) -> None:
        """Wakes every session (the worker's drain has begun): an idle one ends at once, a
        busy one after its call."""
        with self._changed:
            sessions = list(self._open)
        for session in sessions:
            session.wake()
