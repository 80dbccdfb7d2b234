"""The threads that serve calls kept on one CPU, so that handing a call between them is cheap.

A call passes between several Python threads (gRPC's poller, the pool thread
that runs it), and JAX gives up the GIL several times a call, each time to
another serving thread when calls run at once. Only the thread holding the
GIL runs Python, so spreading these threads over CPUs buys them no
parallelism; it only makes every hand-off a wake-up on another CPU (an
inter-processor interrupt, and a VM exit on a virtual machine), which cost
the worker about a third of its calls per second at 8 calls at once.

Only threads started after the pin inherit it: the main thread pins itself
while it starts the server, so gRPC's poller and the pool threads it starts
share the one CPU, and XLA's threads, started with the backend before, keep
every CPU for the programs' work. A sharded call's stream takes the CPUs back
while it copies its shards (spread). Threads and processes that a function
starts inherit the one CPU; `--serving-cpu off` leaves every thread as it was.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

AUTO = "auto"
OFF = "off"

# The CPUs the pinned threads had before, which spread() gives back; None until a pin. The
# threads a pin starts outlive its block, so this does too.
_before_pin: set[int] | None = None


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --serving-cpu."""
    parser.add_argument(
        "--serving-cpu",
        default=AUTO,
        metavar="CPU",
        help="the CPU that the threads serving calls share: a CPU number, 'auto' (one of this"
        " process's CPUs, chosen by its pid so that workers on one host spread) or 'off'"
        " (default auto; Linux only)",
    )


def choose_cpu(setting: str, allowed: set[int], pid: int) -> int | None:
    """The CPU `setting` names among `allowed`, or None for no pin; ValueError if it names none."""
    if setting == OFF:
        return None
    if setting == AUTO:
        if len(allowed) < 2:
            return None  # one CPU already: nothing to gain
        ordered = sorted(allowed)
        return ordered[pid % len(ordered)]
    try:
        cpu = int(setting)
    except ValueError:
        message = f"--serving-cpu: {setting!r} is not a CPU number, 'auto' or 'off'"
        raise ValueError(message) from None
    if cpu not in allowed:
        usable = ", ".join(map(str, sorted(allowed)))
        raise ValueError(f"--serving-cpu: CPU {cpu} is not one this process may use: {usable}")
    return cpu


def serving_cpu(setting: str) -> int | None:
    """The CPU for this process's serving threads (see choose_cpu); None where Linux's
    per-thread affinity is missing and the setting is auto or off."""
    if not hasattr(os, "sched_setaffinity"):
        if setting in (AUTO, OFF):
            return None
        raise ValueError("--serving-cpu: this platform cannot pin threads; use auto or off")
    return choose_cpu(setting, os.sched_getaffinity(0), os.getpid())


@contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    """Runs the block with the calling thread (and every thread it starts) on `cpu`."""
    global _before_pin
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)  # pid 0: the calling thread alone
    _before_pin = before
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def spread() -> Iterator[None]:
    """Runs the block on the CPUs the serving threads had before the pin: for a stream of bulk
    data, whose copies gain from a CPU of their own more than its few hand-offs lose."""
    before = _before_pin
    if before is None:
        yield
        return
    pinned_to = os.sched_getaffinity(0)
    thread = threading.get_native_id()
    os.sched_setaffinity(0, before)
    try:
        yield
    finally:  # a generator closed by another thread must not pin that one
        with suppress(ProcessLookupError):  # the thread has ended
            os.sched_setaffinity(thread, pinned_to)
