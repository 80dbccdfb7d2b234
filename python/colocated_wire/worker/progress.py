"""Whether the worker's calls make progress, for its health.

A worker can be alive and useless: a function that never returns keeps its
call's slot and the devices' turn, and every later call waits or is refused.
gRPC's health service would still say SERVING, and an orchestrator would keep
sending it traffic. So a watchdog thread looks at the calls in flight every
second or so and calls the worker stuck when a call still runs more than
`--unhealthy-after` seconds past its deadline, or when no call has finished
for that long while other calls wait (for the devices' turn, or refused for
want of a slot). A call that merely runs long is not stuck. Health then says NOT_SERVING and the
log says why; once calls finish again, SERVING. A drain's NOT_SERVING is
final (worker/health.py).
"""

from __future__ import annotations

import argparse
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import grpc

from colocated_wire.worker.flags import positive_seconds

DEFAULT_UNHEALTHY_AFTER = 60.0


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --unhealthy-after."""
    parser.add_argument(
        "--unhealthy-after",
        type=positive_seconds,
        default=DEFAULT_UNHEALTHY_AFTER,
        metavar="SECONDS",
        help="health says NOT_SERVING when a call still runs this long past its deadline, or"
        f" no call has finished for this long while calls wait (default"
        f" {DEFAULT_UNHEALTHY_AFTER:g})",
    )


class Progress:
    """The calls in flight, their deadlines and the last time one finished."""

    def __init__(
        self,
        unhealthy_after: float = DEFAULT_UNHEALTHY_AFTER,
        waiting: Callable[[], int] = lambda: 0,
    ):
        self.unhealthy_after = unhealthy_after
        self._waiting = waiting  # calls admitted but waiting (for the devices' turn)
        self._refused = 0  # calls refused for want of a slot since a call last finished
        self._lock = threading.Lock()
        self._deadlines: dict[int, float] = {}  # call number -> its deadline (monotonic)
        self._numbers = itertools.count()
        self._last_finish = time.monotonic()

    @contextmanager
    def track(self, context: grpc.ServicerContext) -> Iterator[None]:
        """Counts the call in flight for the block; its deadline from the call's context."""
        remaining = context.time_remaining()
        now = time.monotonic()
        deadline = float("inf") if remaining is None else now + remaining
        with self._lock:
            number = next(self._numbers)
            if not self._deadlines:
                self._last_finish = now  # an idle worker has nothing to finish
            self._deadlines[number] = deadline
        try:
            yield
        finally:
            with self._lock:
                del self._deadlines[number]
                self._last_finish = time.monotonic()
                self._refused = 0

    def refused(self, reason: str) -> None:
        """Counts a call refused at admission for want of a slot ("calls" or "bytes"): one that
        waits, in its client. A drain's refusals ("draining") wait for nothing here."""
        if reason == "draining":
            return
        with self._lock:
            self._refused += 1

    def problem(self, now: float | None = None) -> str | None:
        """Why the calls make no progress, or None when they do."""
        now = time.monotonic() if now is None else now
        with self._lock:
            in_flight = len(self._deadlines)
            oldest = min(self._deadlines.values(), default=float("inf"))
            idle = now - self._last_finish
            refused = self._refused
        waiting = self._waiting() + refused
        late = now - oldest
        if late > self.unhealthy_after:
            return (
                f"a call still runs {late:.0f} s past its deadline, beyond --unhealthy-after"
                f" ({self.unhealthy_after:g} s); {in_flight} calls in flight"
            )
        if in_flight and waiting and idle > self.unhealthy_after:
            return (
                f"no call has finished for {idle:.0f} s, beyond --unhealthy-after"
                f" ({self.unhealthy_after:g} s), while {waiting} calls wait; {in_flight} calls"
                " in flight"
            )
        return None


def watch(
    progress: Progress, on_change: Callable[[str | None], None], stop: threading.Event
) -> threading.Thread:
    """Starts a daemon thread that calls `on_change(problem)` whenever `progress.problem()`
    turns from None to a reason or back, until `stop` is set."""

    def loop() -> None:
        interval = min(1.0, progress.unhealthy_after / 4)
        before: str | None = None
        while not stop.wait(interval):
            problem = progress.problem()
            if (problem is None) != (before is None):
                on_change(problem)
            before = problem

    thread = threading.Thread(target=loop, name="colocated-wire-progress", daemon=True)
    thread.start()
    return thread
