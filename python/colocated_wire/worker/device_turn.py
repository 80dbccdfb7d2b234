"""Functions over several devices launch their computations one call at a time, and at most
CALLS_IN_FLIGHT such calls have computations in flight: XLA's CPU client cannot hang on them.

Why (XLA's `xla/pjrt/cpu/cpu_client.cc`, names as in openxla/xla;
bench/load/xla_cpu_deadlock.py reproduces it with plain JAX, and docs/performance-journal.md
has its runs on each supported jaxlib):

1. `PjRtCpuExecutable::Execute`, for a computation over several devices, first takes its place
   in one client-wide chain, on the calling thread under the client's mutex
   (`GetLastCollectiveLaunchEvent`: `last_launch = std::move(last_collective_launch_event_);
   last_collective_launch_event_ = count_down.AsRef();`), then schedules one task a device on
   the client's pool ("XLAPjRtCpuClient", `max(cores, devices)` threads) and waits until every
   task has returned (`mu.Await(absl::Condition(&done_running))`).
2. Each task first takes one of its device's in-flight slots, blocking its pool thread while
   none is free (`device_->max_inflight_computations_semaphore().ScopedAcquire(1)`; 32 slots,
   `max_inflight_computations_per_device = 32`), and only then adds the chain's previous
   computation as a dependency (`input_deps.AddEvent(last_collective_launch_event_.first)`):
   a computation runs once the one before it in the chain has finished on every device, and
   its slot is given back when it has run.
3. Chain order is the order of the calling threads; slot order is the order in which the
   pool runs the tasks. When several threads launch at once the two differ, and once a
   device's 32 slots are held by computations later in the chain than one whose task still
   waits for a slot, that computation never runs and neither do the 32: every call stops for
   good. Plain JAX, `x * scale + shift` over 8 CPU devices: 64 threads hang within a few
   hundred calls (bench/load/xla_cpu_deadlock.py), 16 threads (at most 32 computations in flight)
   never did.

So only the launch must be serialized: a call that launches alone returns from each
`Execute` only after all its tasks hold their slots, so slot order is chain order on every
device and the cycle of 3 cannot form. Waiting for the outputs needs no turn (XLA runs the
chain one computation at a time whoever waits). One more hang remains possible without a
bound: when every device's slots are full, the launching call's tasks block up to one pool
thread a device, and a pool of no more threads than devices (8 devices on 2 cores here) then
has none left to run the chain. Hence the bound: a call holds one of CALLS_IN_FLIGHT places
from before its launch until its outputs are ready, so at most CALLS_IN_FLIGHT × m
computations are in flight, below 32 slots for functions of m ≤ 32 / CALLS_IN_FLIGHT
computations (affine 2, the examples' summarize 6), and no task ever waits for a slot.

A call on one device takes no turn: XLA runs it on the calling thread, outside the chain.
A call waits for a place or the launch only while its client still waits for it: one
cancelled or past its deadline leaves the queue at once. Places are given first come, first
served, each waiter woken alone (no wake-up of every waiter per hand-off).
"""

from __future__ import annotations

import argparse
import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, TypeVar

import grpc

from colocated_wire.worker.errors import cancelled

if TYPE_CHECKING:
    import jax

T = TypeVar("T")
R = TypeVar("R")

# Calls over several devices with computations in flight: 4 calls of 8 computations fill a
# device's 32 slots (XLA's max_inflight_computations_per_device).
CALLS_IN_FLIGHT = 4


class Places:
    """`size` places, given first come, first served to calls whose clients still wait."""

    def __init__(self, size: int, what: str, counted: threading.Condition) -> None:
        self._lock = threading.Lock()
        self._free = size
        self._queue: deque[threading.Event] = deque()
        self._given: set[threading.Event] = set()
        self._what = what
        self.waiting = 0
        self._counted = counted  # notified when `waiting` changes

    def take(self, context: grpc.ServicerContext) -> None:
        """Returns holding a place; raises Refused(CANCELLED) if the call ends first."""
        with self._lock:
            if self._free and not self._queue:
                self._free -= 1
                return
            turn = threading.Event()
            self._queue.append(turn)
            self._count(+1)
        if not context.add_callback(turn.set):  # a call that ends stops waiting
            turn.set()  # it has ended already
        while True:
            turn.wait()
            with self._lock:
                if turn in self._given:
                    self._given.discard(turn)
                    self._count(-1)
                    return
                if not context.is_active():
                    self._queue.remove(turn)
                    self._count(-1)
                    raise cancelled(
                        "the call was cancelled or passed its deadline while it waited for"
                        f" {self._what}"
                    )
                turn.clear()  # woken by another call's end on a shared context

    def give(self) -> None:
        """Gives a place back: to the first waiter, if any."""
        with self._lock:
            if self._queue:
                turn = self._queue.popleft()
                self._given.add(turn)
                turn.set()
            else:
                self._free += 1

    def _count(self, change: int) -> None:
        with self._counted:
            self.waiting += change
            self._counted.notify_all()


class DeviceTurn:
    """The process's protection of XLA's CPU client: one launch at a time, and at most
    CALLS_IN_FLIGHT calls over several devices with computations in flight."""

    def __init__(self, calls_in_flight: int = CALLS_IN_FLIGHT, protect: bool = True) -> None:
        self.protect = protect
        self._places = calls_in_flight
        self._counted = threading.Condition()
        self._in_flight = Places(
            calls_in_flight, "a place among the calls on several devices", self._counted
        )
        self._launch = Places(1, "its turn to launch on several devices", self._counted)

    def describe(self) -> str:
        """For the worker's start-up line."""
        if not self.protect:
            return "launches over several devices unprotected"
        return f"launches over several devices one call at a time, {self._places} calls in flight"

    @property
    def waiting(self) -> int:
        """Calls waiting for a place or for their launch."""
        return self._in_flight.waiting + self._launch.waiting

    def run(
        self,
        devices: Sequence[jax.Device],
        context: grpc.ServicerContext,
        launch: Callable[[], R],
        wait: Callable[[R], T],
    ) -> T:
        """`wait(launch())`, with `launch` alone in the process when `devices` are several."""
        if len(devices) < 2 or not self.protect:
            return wait(launch())
        self._in_flight.take(context)
        try:
            self._launch.take(context)
            try:
                launched = launch()
            finally:
                self._launch.give()
            return wait(launched)
        finally:
            self._in_flight.give()

    def wait_for_waiting(self, count: int, timeout: float) -> bool:
        """Waits until `count` calls wait for a place or a launch; False if `timeout` passes."""
        with self._counted:
            return self._counted.wait_for(lambda: self.waiting == count, timeout)


AUTO, ON, OFF = "auto", "on", "off"
# The oldest jaxlib whose CPU client can hang: bench/load/xla_cpu_deadlock.py hung in every
# unprotected run on 0.6.2 to 0.10.2, and in none on 0.4.38, 0.5.3, 0.6.0 or 0.6.1
# (bench/load/xla_cpu_deadlock.md).
FIRST_WITH_THE_HANG = (0, 6, 2)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --device-turn."""
    parser.add_argument(
        "--device-turn",
        choices=[AUTO, ON, OFF],
        default=AUTO,
        help="launch functions over several devices one call at a time, at most"
        f" {CALLS_IN_FLIGHT} such calls in flight: 'auto' (default) on the jaxlib versions"
        " whose CPU client can hang without it, 'on' or 'off'",
    )


def has_the_hang(jaxlib_version: str) -> bool:
    """Whether this jaxlib's CPU client can hang on concurrent launches (module docstring)."""
    release = tuple(int(p) for p in re.findall(r"\d+", jaxlib_version)[:3])
    return release >= FIRST_WITH_THE_HANG


def protects(setting: str, jaxlib_version: str) -> bool:
    """Whether --device-turn `setting` protects XLA's CPU client on this jaxlib."""
    return setting == ON or (setting == AUTO and has_the_hang(jaxlib_version))


def configure(setting: str) -> DeviceTurn:
    """The process's protection, on or off as --device-turn `setting` says for this jaxlib."""
    TURN.protect = protects(setting, version("jaxlib"))
    return TURN


# The process's protection: XLA's pool and its slots are the process's.
TURN = DeviceTurn(protect=protects(AUTO, version("jaxlib")))
