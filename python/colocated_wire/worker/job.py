"""The JAX job a worker belongs to: the flags that join it to many workers as one job, and
what a call does differently when the job has more than one process.

    --coordinator HOST:PORT --num-processes N --process-id I

make this worker process I of a job of N, through JAX's own multi-process runtime
(jax.distributed, gloo collectives on CPU); process 0 also runs the coordinator at
HOST:PORT, which every process must reach. Without the flags the worker is a job of one
process, as before. Every process sees every device of the job (jax.devices(), global ids)
and holds only its own (jax.local_devices()). A program names global devices; a member
receives, places and returns only the shards of its own devices, and every member runs the
same function (SPMD), so JAX's collectives join the members' shards.
"""

from __future__ import annotations

import argparse
import re
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import grpc
import jax
import numpy as np
from jax import tree_util
from jax._src import distributed
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire.worker import log
from colocated_wire.worker.errors import Refused, failed_precondition, invalid_argument

# The gRPC metadata key that names one call of a job, the same on every member's stream.
CALL_ID_KEY = "colocated-call-id"
_CALL_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# How long members wait for each other when the call has no deadline.
DEFAULT_WAIT_SECONDS = 300.0
# One function at a time per member, so that every member launches the job's computations
# in one order (JAX's multi-process runtime needs the same order on every process).
_one_at_a_time = threading.Lock()
T = TypeVar("T")


def add_flags(p: argparse.ArgumentParser) -> None:
    """--coordinator, --num-processes and --process-id: all three, or none."""
    p.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        help="the JAX job's coordinator (process 0 serves it); joins a multi-process job",
    )
    p.add_argument(
        "--num-processes",
        type=int,
        metavar="N",
        help="the processes of the job (with --coordinator)",
    )
    p.add_argument(
        "--process-id",
        type=int,
        metavar="I",
        help="this worker's process, 0 to N-1 (with --coordinator)",
    )
    p.add_argument(
        "--heartbeat-timeout",
        type=int,
        default=100,
        metavar="SECONDS",
        help="with --coordinator: how soon the others end once a member has died (default 100)",
    )


def check_flags(args: argparse.Namespace) -> None:
    """Raises ValueError unless the job flags are all given and consistent, or all absent."""
    given = {
        "--coordinator": args.coordinator,
        "--num-processes": args.num_processes,
        "--process-id": args.process_id,
    }
    missing = [flag for flag, value in given.items() if value is None]
    if len(missing) == len(given):
        return
    if missing:
        raise ValueError(
            "--coordinator, --num-processes and --process-id join a job together;"
            f" missing {', '.join(missing)}"
        )
    host, _, port = args.coordinator.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--coordinator {args.coordinator!r} is not HOST:PORT")
    if args.heartbeat_timeout < 1:
        raise ValueError(f"--heartbeat-timeout must be at least 1 s, not {args.heartbeat_timeout}")
    if args.num_processes < 1:
        raise ValueError(f"--num-processes must be at least 1, not {args.num_processes}")
    if not 0 <= args.process_id < args.num_processes:
        raise ValueError(
            f"--process-id {args.process_id} is outside 0 to {args.num_processes - 1}"
            f" (--num-processes {args.num_processes})"
        )


def join(args: argparse.Namespace) -> None:
    """Joins the job the flags name (if any); blocks until every process has joined. Must run
    before JAX's backend starts: the CPU collectives are chosen with it."""
    if args.coordinator is None:
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
        # Exactly where the others reach it (JAX's default is every interface): the
        # coordinator's service has no TLS and no authentication.
        coordinator_bind_address=args.coordinator,
        heartbeat_timeout_seconds=args.heartbeat_timeout,
    )


def leave() -> None:
    """Leaves the job after the worker has drained. JAX's shutdown waits for every process
    of the job to leave too, so a member stopped alone waits for the others."""
    if jax.process_count() == 1:
        return
    log.say("leaving the job; waiting for its other processes to stop too")
    jax.distributed.shutdown()


def describe() -> str:
    """Like "process 1 of 2", or "one process" for a job of one."""
    if jax.process_count() == 1:
        return "one process"
    return f"process {jax.process_index()} of {jax.process_count()}"


def held_here() -> str:
    """For a message about a shard: " held by this worker (process 1 of 2)", or nothing in a
    job of one process."""
    return "" if jax.process_count() == 1 else f" held by this worker ({describe()})"


def own_shards(shards: dict) -> dict:
    """The shards (index -> devices) that this process holds, each with only its own devices;
    in a job of one process, all of them."""
    if jax.process_count() == 1:
        return shards
    me = jax.process_index()
    mine = {
        index: [d for d in devices if d.process_index == me] for index, devices in shards.items()
    }
    return {index: devices for index, devices in mine.items() if devices}


def run_together(context: grpc.ServicerContext, work: Callable[[], T]) -> T:
    """Runs `work` (the call's function) once every member of the job is ready to run it;
    the call is named by its metadata `colocated-call-id` (run_named)."""
    if jax.process_count() == 1:
        return work()
    call_id = dict(context.invocation_metadata()).get(CALL_ID_KEY)
    return run_named(context, work, call_id, f"metadata {CALL_ID_KEY}")


def run_named(
    context: grpc.ServicerContext, work: Callable[[], T], call_id: str | None, where: str
) -> T:
    """Runs `work` (the call's function) once every member of the job is ready to run it.

    In a job of one process, at once. In a job of many, only if the call is named (`call_id`,
    the same on every member; `where` says where the call carried it): the member takes its
    turn (one function at a time), then waits at a JAX barrier of that name for the other
    members. A member that refused the call never arrives, so the others refuse it too
    (ABORTED) instead of waiting forever inside a collective. An unnamed call runs without
    waiting. `context` gives the call's deadline (a session's call is no gRPC call, but
    answers for its own).
    """
    if jax.process_count() == 1:
        return work()
    if call_id is None:
        return job_wide(work())
    if not _CALL_ID.fullmatch(call_id):
        raise invalid_argument(f"{where}: {call_id[:40]!r} is not 1-128 letters, digits or ._:-")
    if not _one_at_a_time.acquire(timeout=_wait(context)):
        raise aborted(f"call {call_id}: another call of the job still runs on {describe()}")
    try:
        wait = _wait(context)
        try:
            distributed.global_state.client.wait_at_barrier(
                f"colocated-call/{call_id}", max(int(wait * 1000), 1)
            )
        except Exception as e:  # noqa: BLE001 - JAX raises its runtime error on a timeout
            raise aborted(
                f"call {call_id}: not every member of the job was ready to run it within"
                f" {wait:.3g} s ({describe()}): {str(e).splitlines()[0]}"
            ) from e
        return job_wide(work())
    finally:
        _one_at_a_time.release()


def job_wide(result: T) -> T:
    """The function's result with its process-local outputs made the job's: a host value (a
    NumPy array, a Python number) or an uncommitted array (made without a device, as
    `jnp.zeros(3)`) becomes an array replicated over every device of the job, so every member
    describes it the same way and returns it once. Outputs computed from the job's arrays
    are committed to their devices and stay as they are."""
    replicated = None

    def one(leaf):
        nonlocal replicated
        if isinstance(leaf, jax.Array) and leaf.committed:
            return leaf
        try:
            local = jax.numpy.asarray(leaf)
        except (TypeError, ValueError):
            return leaf  # not an array: the outputs' check names it
        if not isinstance(local.dtype, np.dtype):
            return leaf  # a PRNG key: the outputs' check refuses it
        if replicated is None:
            mesh = Mesh(np.array(jax.devices()), ("job",))
            replicated = NamedSharding(mesh, PartitionSpec())
        host = np.asarray(local)
        return jax.make_array_from_callback(host.shape, replicated, lambda index: host[index])

    return tree_util.tree_map(one, result)


def _wait(context: grpc.ServicerContext) -> float:
    """Seconds to wait for the other members: short of the call's deadline, so that the
    caller hears why rather than DEADLINE_EXCEEDED."""
    remaining = context.time_remaining()
    return DEFAULT_WAIT_SECONDS if remaining is None else max(0.8 * remaining, 0.0)


def aborted(message: str) -> Refused:
    """The members of a job did not run a call together; none of them ran it."""
    return Refused(grpc.StatusCode.ABORTED, message)


def check_unary(devices: Sequence[jax.Device]) -> None:
    """The unary call holds whole arrays, so it runs only programs on this process's devices."""
    if jax.process_count() == 1:
        return
    me = jax.process_index()
    other = next((d for d in devices if d.process_index != me), None)
    if other is not None:
        raise failed_precondition(
            f"the program runs on devices of other processes of this worker's job (device"
            f" {other.id} is process {other.process_index}'s; this worker is {describe()}):"
            " call every member with ExecuteSharded, each with its own devices' shards"
        )
