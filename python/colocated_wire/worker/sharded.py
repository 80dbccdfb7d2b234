"""ExecuteSharded: inputs arrive shard by shard in bounded chunks, outputs leave the same way.

The client's stream is `start` (version and program), then each input leaf's
distinct shards (a replicated shard once, however many devices hold it), each
in chunks whose first names the shard's index and whose last is marked, then
`end`. Each shard is assembled in one buffer of its own size and put on its
devices as soon as it is complete, so no message and no host copy of a global
array exists. A chunk that breaks these rules
(an unknown leaf or shard, a shard sent twice, an offset that overlaps or
leaves a gap, bytes past the shard's end, a shard cut short) is refused with
INVALID_ARGUMENT naming the leaf, the shard and the offset; a stream that
stops without `end` is INVALID_ARGUMENT too, and a client that cancels ends
the call (CANCELLED) without running anything.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import grpc
import jax
import numpy as np

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.decode import Program
from colocated_wire.worker import affinity
from colocated_wire.worker.arrays import (
    Index,
    assemble,
    item_bytes,
    output_shards,
    place_inputs,
    put_shard,
    shard_devices,
)
from colocated_wire.worker.device_turn import TURN
from colocated_wire.worker.errors import Refused, function_failed, invalid_argument
from colocated_wire.worker.execute import (
    call_arguments,
    check_active,
    check_version,
    finished,
    output_specs_payload,
    run,
)
from colocated_wire.worker.inputs import is_float0
from colocated_wire.worker.job import held_here, own_shards, run_together
from colocated_wire.worker.requests import ChunkView, ShardedRequest
from colocated_wire.worker.responses import SHARDED_END, sharded_chunk, sharded_specs

if TYPE_CHECKING:
    from colocated_wire.worker.state import WorkerState

# The largest chunk the worker takes, and the size of the chunks it sends.
MAX_CHUNK_BYTES = 4 << 20
OUTPUT_CHUNK_BYTES = 1 << 20

# Resolves `start` to the program's function name and the lifted program; raises Refused.
Resolve = Callable[[service_pb2.ExecuteStart], tuple[str, Program]]
# Counts bytes against the worker's in-flight limit as shard buffers are made.
Reserve = Callable[[int], None]
# Runs the function (`work`) on the program's devices when its time comes.
# (devices, launch, wait) -> wait(launch()): how a call runs its function and waits for it.
Together = Callable[[Sequence[jax.Device], Callable[[], Any], Callable[[Any], Any]], Any]


def serve(state: WorkerState, requests, context) -> Iterator[bytes]:
    """ExecuteSharded: admitted against the
    worker's limits for the whole stream, each shard's bytes counted as its buffer is made;
    a refusal becomes the call's status."""
    try:
        with (
            state.limits.admit(0) as slot,
            state.progress.track(context),
            affinity.spread(),
        ):
            yield from execute_sharded(
                requests,
                lambda start: resolve(state, start),
                slot.reserve,
                lambda step: check_active(context, step),
                # A job's members run it together, each in its turn (worker/device_turn.py).
                lambda devices, launch, wait: run_together(
                    context, lambda: TURN.run(devices, context, launch, wait)
                ),
            )
    except Refused as e:
        context.abort(e.code, e.message)
    except Exception as e:  # noqa: BLE001 - a bug here must still answer the call
        traceback.print_exc(file=sys.stderr)
        context.abort(grpc.StatusCode.INTERNAL, f"the worker failed: {type(e).__name__}: {e}")


def resolve(state: WorkerState, start: service_pb2.ExecuteStart) -> tuple[str, Program]:
    """The program `start` names, by handle (NOT_FOUND if unknown) or by payload."""
    check_version(start.version, state.policy)
    if start.HasField("handle"):
        loaded = state.programs.get(start.handle.digest, start.version)
    elif start.HasField("program"):
        loaded = state.programs.load(start.program.SerializeToString(), start.version)
    else:
        raise invalid_argument("start: carries neither a program nor a handle")
    return loaded.name, loaded.program


def execute_sharded(
    requests: Iterator[ShardedRequest],
    resolve: Resolve,
    reserve: Reserve = lambda nbytes: None,
    check: Callable[[str], None] = lambda step: None,
    together: Together = lambda devices, launch, wait: wait(launch()),
) -> Iterator[bytes]:
    """The response stream of one call (ExecuteShardedResponse bytes): output specs, output
    chunks, end. Raises Refused."""
    name, result, version = run_sharded(requests, resolve, reserve, check, together)
    yield from stream_outputs(name, result, version)


def run_sharded(
    requests: Iterator[ShardedRequest],
    resolve: Resolve,
    reserve: Reserve = lambda nbytes: None,
    check: Callable[[str], None] = lambda step: None,
    together: Together = lambda devices, launch, wait: wait(launch()),
) -> tuple[str, object, int]:
    """Takes one call's requests and runs its function: (its name, its result, the call's
    version). Raises Refused. A session's call (worker/session.py) runs here too."""
    start = _first(requests)
    name, program = resolve(start)
    inputs = InputShards(program, reserve)
    for request in _rest(requests, inputs):
        part = request.part
        if part == "chunk":
            inputs.add(request.chunk)
        elif part == "end":
            break
        elif part == "invalid":
            raise invalid_argument(f"request {inputs.chunks + 1}: {request.problem}")
        else:
            raise invalid_argument(f"request {inputs.chunks + 1}: {part or 'nothing'} after start")
    else:
        raise invalid_argument(
            f"the input stream ended without `end` after {inputs.chunks} chunks{inputs.pending()}"
        )
    check("placing the inputs")
    arrays = inputs.place()
    check("running the function")
    args, kwargs = call_arguments(program, arrays)
    result = together(
        program.devices,
        lambda: run(name, program.fun, args, kwargs),
        lambda launched: finished(name, launched),
    )
    return name, result, start.version


def _first(requests: Iterator[ShardedRequest]) -> service_pb2.ExecuteStart:
    for request in _rest(requests, None):
        if request.part == "invalid":
            raise invalid_argument(f"request 0: {request.problem}")
        if request.part != "start":
            raise invalid_argument("request 0: the stream must begin with `start`")
        return request.start
    raise invalid_argument("the input stream ended before `start`")


def _rest(
    requests: Iterator[ShardedRequest], inputs: InputShards | None
) -> Iterator[ShardedRequest]:
    """The requests; a cancelled call (the iterator raises RpcError) becomes CANCELLED."""
    try:
        yield from requests
    except grpc.RpcError as e:
        done = "" if inputs is None else f" after {inputs.chunks} chunks"
        message = f"the client cancelled the call{done}"
        raise Refused(grpc.StatusCode.CANCELLED, message) from e


class Shard:
    """One shard being assembled: its buffer and how many bytes have arrived."""

    def __init__(self, index: Index, size: int, devices: list[jax.Device]):
        self.index = index
        self.data = aligned_buffer(size)
        self.filled = 0
        self.devices = devices


# JAX's CPU client takes a host buffer as the device's own, without a copy, when it is aligned to
# this; a shard's buffer is then copied once in all, as its chunks arrive.
ALIGNMENT = 64


def aligned_buffer(size: int) -> np.ndarray:
    """An uninitialized buffer of `size` bytes whose start is aligned to ALIGNMENT."""
    raw = np.empty(size + ALIGNMENT, np.uint8)
    at = -raw.ctypes.data % ALIGNMENT
    return raw[at : at + size]


class InputShards:
    """Checks each chunk against the program's input specs and assembles the shards."""

    def __init__(self, program: Program, reserve: Reserve):
        self.program = program
        self.reserve = reserve
        self.chunks = 0
        self.leaves = []
        for i, spec in enumerate(program.in_leaves):
            where = f"inputs[{i}]"
            itemsize = item_bytes(where, spec)
            sharding, shards = shard_devices(where, spec, program.devices)
            shards = own_shards(shards)  # a member of a many-process job: its devices' shards
            self.leaves.append((spec, itemsize, sharding, shards))
        self.done: list[dict[Index, list[jax.Array]]] = [{} for _ in self.leaves]
        self.open: list[Shard | None] = [None for _ in self.leaves]

    def add(self, chunk: ChunkView) -> None:
        """Takes one chunk; raises Refused (INVALID_ARGUMENT) if it breaks the rules."""
        self.chunks += 1
        leaf, data = chunk.leaf, chunk.data  # data: a view of the request's bytes
        if leaf >= len(self.leaves):
            raise invalid_argument(
                f"chunk {self.chunks}: leaf {leaf}, but the program has"
                f" {len(self.leaves)} input leaves"
            )
        if len(data) > MAX_CHUNK_BYTES:
            raise invalid_argument(
                f"inputs[{leaf}]: a chunk of {len(data)} bytes, over the worker's limit"
                f" of {MAX_CHUNK_BYTES} bytes per chunk"
            )
        shard = self._shard_of(leaf, chunk)
        where = f"inputs[{leaf}] shard {describe(shard.index)} at offset {chunk.offset}"
        if chunk.offset != shard.filled:
            how = (
                "overlaps bytes already received" if chunk.offset < shard.filled else "leaves a gap"
            )
            raise invalid_argument(
                f"{where}: the chunk {how} (the shard has {shard.filled} bytes so far)"
            )
        end = shard.filled + len(data)
        if end > len(shard.data):
            raise invalid_argument(
                f"{where}: {len(data)} bytes run past the shard's end ({len(shard.data)} bytes)"
            )
        shard.data[shard.filled : end] = np.frombuffer(data, np.uint8)  # the one copy
        shard.filled = end
        if chunk.last:
            if end != len(shard.data):
                raise invalid_argument(
                    f"{where}: marked last with {end} of the shard's {len(shard.data)} bytes"
                )
            # On its devices at once: the host buffer goes, so the host holds one shard per leaf.
            spec = self.leaves[leaf][0]
            where = f"inputs[{leaf}]"
            self.done[leaf][shard.index] = put_shard(
                where, spec, shard.index, shard.data, shard.devices
            )
            self.open[leaf] = None

    def _shard_of(self, leaf: int, chunk: ChunkView) -> Shard:
        """The shard this chunk belongs to: a new one if it carries an index, else the open one."""
        current = self.open[leaf]
        if chunk.index is None:
            if current is None:
                raise invalid_argument(
                    f"inputs[{leaf}] chunk at offset {chunk.offset}: no shard is open"
                    " (a shard's first chunk carries its index)"
                )
            return current
        spec, itemsize, _, shards = self.leaves[leaf]
        starts, stops = chunk.index
        index = tuple(zip(starts, stops, strict=False))
        named = f"inputs[{leaf}] shard {describe(index)}"
        if current is not None:
            raise invalid_argument(
                f"{named}: starts before shard {describe(current.index)} ended"
                f" ({current.filled} of {len(current.data)} bytes, no chunk marked last)"
            )
        if len(starts) != len(stops) or index not in shards:
            some = ", ".join(describe(i) for i in list(shards)[:4])
            raise invalid_argument(
                f"{named}: not a shard of the {spec.sharding or 'unsharded'} input of shape"
                f" {tuple(spec.shape)}{held_here()}"
                f" (its shards: {some}{', ...' if len(shards) > 4 else ''})"
            )
        if index in self.done[leaf]:
            raise invalid_argument(f"{named}: sent twice")
        if chunk.offset != 0:
            raise invalid_argument(f"{named}: its first chunk is at offset {chunk.offset}, not 0")
        size = itemsize * int(np.prod([stop - start for start, stop in index], dtype=np.int64))
        self.reserve(size)
        shard = self.open[leaf] = Shard(index, size, shards[index])
        return shard

    def pending(self) -> str:
        """What is still missing, for the message of a stream cut short."""
        for leaf, shard in enumerate(self.open):
            if shard is not None:
                return (
                    f"; inputs[{leaf}] shard {describe(shard.index)} has {shard.filled}"
                    f" of {len(shard.data)} bytes"
                )
        return ""

    def place(self) -> list[jax.Array]:
        """Every input as a jax.Array, once every shard of every leaf is complete."""
        arrays = []
        for leaf, (spec, _, sharding, shards) in enumerate(self.leaves):
            if (shard := self.open[leaf]) is not None:
                raise invalid_argument(
                    f"inputs[{leaf}] shard {describe(shard.index)}: unfinished at `end`"
                    f" ({shard.filled} of {len(shard.data)} bytes, no chunk marked last)"
                )
            done = self.done[leaf]
            missing = [i for i in shards if i not in done]
            if missing:
                raise invalid_argument(
                    f"inputs[{leaf}] shard {describe(missing[0])}: never sent"
                    f" ({len(done)} of the leaf's {len(shards)} shards arrived)"
                )
            singles = [x for i in shards for x in done[i]]
            if is_float0(spec):  # no bytes and no device holds it: placed whole, as Execute does
                arrays.append(place_inputs([spec], [b""], self.program.devices)[0])
            else:
                arrays.append(assemble(f"inputs[{leaf}]", spec, sharding, singles))
            done.clear()
        return arrays


def stream_outputs(name: str, result: object, version: int) -> Iterator[bytes]:
    """The outputs' SpecsPayload, then each output's distinct shards in chunks, then end."""
    outputs, payload = output_specs_payload(name, result, version)
    yield sharded_specs(payload)
    for leaf, index, data in each_shard(name, outputs):
        yield from chunks(leaf, index, data)
    yield SHARDED_END


def each_shard(name: str, outputs: list) -> Iterator[tuple[int, Index, memoryview]]:
    """(leaf, index, bytes) of each output's distinct shards that this process holds."""
    for leaf, x in enumerate(outputs):
        try:
            shards = list(output_shards(x))
        except Exception as e:  # noqa: BLE001 - JAX reports a failed computation on readback
            raise function_failed(f"{name} failed computing its outputs: {e}") from e
        for index, data in shards:
            yield leaf, index, data


def chunks(
    leaf: int, index: Index, data: memoryview, size: int = OUTPUT_CHUNK_BYTES
) -> Iterable[bytes]:
    """One shard's bytes in chunks of at most `size`, each copied once, into its message; the
    first names the index."""
    for chunk in chunk_parts(leaf, index, data, size):
        yield sharded_chunk(*chunk)


def chunk_parts(
    leaf: int, index: Index, data: memoryview, size: int = OUTPUT_CHUNK_BYTES
) -> Iterable[tuple[int, Index | None, int, memoryview, bool]]:
    """One shard's bytes cut in chunks of at most `size` (views, not copies): (leaf, the index
    on the first, offset, data, last)."""
    offsets = range(0, max(len(data), 1), size)
    last = len(offsets) - 1
    for k, offset in enumerate(offsets):
        yield leaf, index if k == 0 else None, offset, data[offset : offset + size], k == last


def describe(index: Index) -> str:
    """[start:stop,...], as TypeScript's describeIndex writes it."""
    return "[" + ",".join(f"{start}:{stop}" for start, stop in index) + "]"
