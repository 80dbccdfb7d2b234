"""One call at a time runs its function on several devices of this process.

XLA's CPU client (jaxlib 0.10) can deadlock when several threads dispatch
computations that span several devices. It runs such computations one at a
time, each after the one launched before it has finished, and it launches each
device's part on a pool thread that first takes one of the device's 32
in-flight slots. Launches of different threads interleave on the pool, so a
computation may find its device's slots all held by computations launched
after it, which wait for it to finish: a cycle, and every call stops for good.
Measured with plain JAX (no gRPC, no pinning): 64 threads running `x * scale +
shift` over 8 CPU devices hung in 2 of 3 runs, 24 threads in 1 of 2, and 16
threads (two computations each in flight, 32 in all) in none. A function's
own computations cannot form the cycle, since one thread launches them in
order, so a call whose program spans several devices takes this process's
one turn to run its function and wait for its outputs. Nothing is lost by it:
XLA would run those computations one after another anyway. A call on one
device runs without a turn, as its computations run on its own thread.

A call waits for the turn only while its client still waits for it: one
cancelled or past its deadline leaves the queue at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import grpc
import jax

from colocated_wire.worker.errors import cancelled

T = TypeVar("T")


class DeviceTurn:
    """The one turn of this process for functions on several devices, taken first come first
    served."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held = False
        self.waiting = 0

    def run(
        self, devices: Sequence[jax.Device], context: grpc.ServicerContext, work: Callable[[], T]
    ) -> T:
        """`work()` in this process's turn when `devices` are several, else at once."""
        if len(devices) < 2:
            return work()
        self._take(context)
        try:
            return work()
        finally:
            with self._changed:
                self._held = False
                self._changed.notify()

    def _take(self, context: grpc.ServicerContext) -> None:
        with self._changed:
            if self._held:
                context.add_callback(self._wake_all)  # a call that ends stops waiting
                self.waiting += 1
                self._changed.notify_all()  # for wait_for_waiting
                try:
                    while self._held and context.is_active():
                        self._changed.wait()
                finally:
                    self.waiting -= 1
                    self._changed.notify_all()
                if self._held:
                    self._changed.notify()  # pass on the wake-up this call will not use
                    raise cancelled(
                        "the call was cancelled or passed its deadline while it waited for its"
                        " turn to run on several devices"
                    )
            self._held = True

    def wait_for_waiting(self, count: int, timeout: float) -> bool:
        """Waits until `count` calls wait for the turn; False if `timeout` seconds pass first."""
        with self._changed:
            return self._changed.wait_for(lambda: self.waiting == count, timeout)

    def _wake_all(self) -> None:
        with self._changed:
            self._changed.notify_all()


# The process's turn: XLA's pool and its slots are the process's.
TURN = DeviceTurn()
