"""ExecuteSharded on an in-process server over a real channel: shards in, shards out, and
every way a stream can break."""

import contextlib
import threading
from concurrent import futures

import grpc
import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import deserialize_specs, examples, serialize_program
from colocated_wire._gen.colocated.v1 import service_pb2, service_pb2_grpc
from colocated_wire.worker.arrays import index_of
from colocated_wire.worker.limits import MAX_MESSAGE_BYTES
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker, handlers
from colocated_wire.worker.sharded import ALIGNMENT, MAX_CHUNK_BYTES, aligned_buffer

SDS = jax.ShapeDtypeStruct
Req = service_pb2.ExecuteShardedRequest


@contextlib.contextmanager
def worker():
    """A stub for a worker allowing colocated_wire.examples, served in-process."""
    service = ColocatedWorker(WorkerPolicy(allowed_modules=frozenset({"colocated_wire.examples"})))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)],  # as the worker
    )
    server.add_generic_rpc_handlers((handlers(service),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield service_pb2_grpc.ColocatedWorkerServiceStub(channel)
    finally:
        server.stop(grace=None)
    limits = service.state.limits
    assert (limits.calls, limits.bytes) == (0, 0), "a call held on to its slot"


@pytest.fixture(scope="module")
def mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def start(fun, *specs) -> Req:
    leaves, treedef = jax.tree_util.tree_flatten((tuple(specs), {}))
    devices = list(specs[0].sharding.mesh.devices.flat)
    data = serialize_program(fun, treedef, leaves, None, None, devices, target_minor_version=0)
    req = Req()
    req.start.version = 0
    req.start.program.MergeFromString(data)
    return req


def chunk(leaf, offset, data, index=None, last=False) -> Req:
    req = Req()
    req.chunk.leaf = leaf
    req.chunk.offset = offset
    req.chunk.data = bytes(data)
    req.chunk.last = last
    if index is not None:
        req.chunk.index.start.extend(a for a, _ in index)
        req.chunk.index.stop.extend(b for _, b in index)
        req.chunk.index.SetInParent()
    return req


def shards_of(spec, value):
    """Each distinct shard of `value` under the spec's sharding: (index, bytes)."""
    seen = {}
    for slices in spec.sharding.devices_indices_map(spec.shape).values():
        index = index_of(slices, spec.shape)
        seen.setdefault(index, np.ascontiguousarray(value[slices]).tobytes())
    return list(seen.items())


def upload(specs, values, size=1 << 20):
    """Every leaf's distinct shards in chunks of at most `size` bytes, in order."""
    for leaf, (spec, value) in enumerate(zip(specs, values, strict=True)):
        for index, data in shards_of(spec, value):
            offsets = range(0, max(len(data), 1), size)
            for k, at in enumerate(offsets):
                first = index if k == 0 else None
                yield chunk(leaf, at, data[at : at + size], first, k == len(offsets) - 1)


def call(stub, fun, specs, values, size=1 << 20):
    """(output specs, output arrays, chunks sent, chunks received) of one call."""
    requests = [start(fun, *specs), *upload(specs, values, size), Req(end=True)]
    responses = list(stub.ExecuteSharded(iter(requests)))
    assert responses[0].WhichOneof("part") == "output_specs"
    assert responses[-1].WhichOneof("part") == "end"
    _, leaves = deserialize_specs(responses[0].output_specs.SerializeToString())
    outputs = assemble(leaves, (r.chunk for r in responses[1:-1]))
    return leaves, outputs, len(requests) - 2, len(responses) - 2


def assemble(leaves, chunks) -> list[np.ndarray]:
    """Each output array from its shards' chunks, checked: each shard once, in order, whole."""
    outputs = [np.zeros(s.shape, s.dtype) for s in leaves]
    filled = [np.zeros(s.shape, bool) for s in leaves]
    index = received = None
    for c in chunks:
        if c.HasField("index"):
            index = tuple(slice(a, b) for a, b in zip(c.index.start, c.index.stop, strict=True))
            received = b""
        assert c.offset == len(received)
        received += c.data
        if c.last:
            out = outputs[c.leaf]
            assert not filled[c.leaf][index].any(), "a shard arrived twice"
            out[index] = np.frombuffer(received, out.dtype).reshape(out[index].shape)
            filled[c.leaf][index] = True
    assert all(f.all() for f in filled)
    return outputs


X = np.arange(32, dtype=np.float32).reshape(8, 4) - 10
Y = np.full((8, 4), 0.5, np.float32)


def spec(mesh, *partition, shape=(8, 4), dtype=np.float32):
    return SDS(shape, dtype, sharding=NamedSharding(mesh, P(*partition)))


def test_summarize_by_shard(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    with worker() as stub:
        leaves, outputs, sent, received = call(stub, examples.summarize, specs, [X, Y])
    # 8 shards of x, and y's 2 distinct shards (each on 4 devices) once each.
    assert sent == 8 + 2
    names = ["count_positive", "doubled", "positive", "row_sums", "sum"]
    out = dict(zip(names, outputs, strict=True))
    np.testing.assert_array_equal(out["doubled"], X * 2)
    np.testing.assert_array_equal(out["sum"], X + Y)
    np.testing.assert_array_equal(out["positive"], X > 0)
    assert out["count_positive"] == (X > 0).sum()
    assert leaves[1].sharding == NamedSharding(mesh, P("x", "y"))
    assert received >= 8  # the doubled output's 8 shards at least


def test_tens_of_mib_in_many_small_chunks(mesh):
    x = np.random.default_rng(0).standard_normal((2048, 2048), np.float32)  # 16 MiB
    specs = [
        spec(mesh, "x", "y", shape=x.shape),
        spec(mesh, shape=()),
        spec(mesh, "y", shape=(2048,)),
    ]
    shift = np.arange(2048, dtype=np.float32)
    scale = np.float32(3)
    with worker() as stub:
        _, [out], sent, received = call(
            stub, examples.affine, specs, [x, scale, shift], size=64 << 10
        )
    np.testing.assert_array_equal(out, x * 3 + shift)
    assert sent == 8 * (2 << 20) // (64 << 10) + 1 + 4  # x in 64 KiB chunks, scale once, shift's 4
    assert received == 8 * 2  # 2 MiB shards in 1 MiB chunks


def refused(stub, requests) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        list(stub.ExecuteSharded(iter(requests)))
    return e.value


def _faults(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    go = start(examples.summarize, *specs)
    good = list(upload(specs, [X, Y]))
    a = ((0, 4), (0, 1))  # x's first shard: 4x1 float32, 16 bytes
    return {
        "gap": (
            [go, chunk(0, 0, b"\0" * 8, a), chunk(0, 12, b"\0" * 4, last=True)],
            "inputs[0] shard [0:4,0:1] at offset 12: the chunk leaves a gap"
            " (the shard has 8 bytes so far)",
        ),
        "overlap": (
            [go, chunk(0, 0, b"\0" * 8, a), chunk(0, 4, b"\0" * 12, last=True)],
            "inputs[0] shard [0:4,0:1] at offset 4: the chunk overlaps bytes already received"
            " (the shard has 8 bytes so far)",
        ),
        "overrun": (
            [go, chunk(0, 0, b"\0" * 20, a, last=True)],
            "inputs[0] shard [0:4,0:1] at offset 0: 20 bytes run past the shard's end (16 bytes)",
        ),
        "last_too_soon": (
            [go, chunk(0, 0, b"\0" * 8, a, last=True)],
            "inputs[0] shard [0:4,0:1] at offset 0: marked last with 8 of the shard's 16 bytes",
        ),
        "unknown_shard": (
            [go, chunk(0, 0, b"\0" * 16, ((0, 4), (0, 2)), last=True)],
            "inputs[0] shard [0:4,0:2]: not a shard of the",
        ),
        "replicated_twice": (
            [go, *good[:8], good[8], good[8]],
            "inputs[1] shard [0:4,0:4]: sent twice",
        ),
        "no_index": (
            [go, chunk(0, 0, b"\0" * 16, last=True)],
            "inputs[0] chunk at offset 0: no shard is open"
            " (a shard's first chunk carries its index)",
        ),
        "new_shard_before_last": (
            [go, chunk(0, 0, b"\0" * 8, a), chunk(0, 0, b"\0" * 16, ((0, 4), (1, 2)))],
            "inputs[0] shard [0:4,1:2]: starts before shard [0:4,0:1] ended"
            " (8 of 16 bytes, no chunk marked last)",
        ),
        "leaf_out_of_range": (
            [go, chunk(2, 0, b"", a)],
            "chunk 1: leaf 2, but the program has 2 input leaves",
        ),
        "missing_shard": (
            [go, *good[:9], Req(end=True)],
            "inputs[1] shard [4:8,0:4]: never sent (1 of the leaf's 2 shards arrived)",
        ),
        "unfinished_at_end": (
            [go, chunk(0, 0, b"\0" * 8, a), Req(end=True)],
            "inputs[0] shard [0:4,0:1]: unfinished at `end` (8 of 16 bytes, no chunk marked last)",
        ),
        "truncated": (
            [go, *good[:3]],
            "the input stream ended without `end` after 3 chunks",
        ),
        "truncated_mid_shard": (
            [go, chunk(0, 0, b"\0" * 8, a)],
            "the input stream ended without `end` after 1 chunks; inputs[0] shard [0:4,0:1]"
            " has 8 of 16 bytes",
        ),
        "no_start": ([chunk(0, 0, b"", a)], "request 0: the stream must begin with `start`"),
        "empty": ([], "the input stream ended before `start`"),
        "second_start": ([go, go], "request 1: start after start"),
    }


FAULTS = [
    "gap", "overlap", "overrun", "last_too_soon", "unknown_shard", "replicated_twice", "no_index",
    "new_shard_before_last", "leaf_out_of_range", "missing_shard", "unfinished_at_end",
    "truncated", "truncated_mid_shard", "no_start", "empty", "second_start",
]  # fmt: skip


def test_every_fault_is_invalid_argument_naming_where_and_the_worker_keeps_serving(mesh):
    faults = _faults(mesh)
    assert sorted(faults) == sorted(FAULTS)
    with worker() as stub:
        for name in FAULTS:
            requests, text = faults[name]
            e = refused(stub, requests)
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, name
            assert e.details().startswith(text), (name, e.details())
        _, outputs, _, _ = call(
            stub, examples.summarize, [spec(mesh, "x", "y"), spec(mesh)], [X, Y]
        )
    np.testing.assert_array_equal(outputs[1], X * 2)


def test_a_client_that_cancels_mid_upload_stops_the_call_and_the_worker_serves_on(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    sent_some, hold = threading.Event(), threading.Event()

    def stalled():
        yield start(examples.summarize, *specs)
        yield from list(upload(specs, [X, Y]))[:3]
        sent_some.set()
        hold.wait()

    with worker() as stub:
        responses = stub.ExecuteSharded(stalled())
        assert sent_some.wait(timeout=60)
        responses.cancel()
        with pytest.raises(grpc.RpcError) as e:
            list(responses)
        hold.set()
        assert e.value.code() == grpc.StatusCode.CANCELLED
        _, outputs, _, _ = call(stub, examples.summarize, specs, [X, Y])
    np.testing.assert_array_equal(outputs[1], X * 2)


def test_a_chunk_over_the_limit_is_refused(mesh):
    big = spec(mesh, shape=(MAX_CHUNK_BYTES // 4 + 4,))
    whole = ((0, MAX_CHUNK_BYTES // 4 + 4),)
    with worker() as stub:
        e = refused(
            stub, [start(examples.fail, big), chunk(0, 0, b"\0" * (MAX_CHUNK_BYTES + 1), whole)]
        )
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details().startswith(f"inputs[0]: a chunk of {MAX_CHUNK_BYTES + 1} bytes, over")


def test_a_loaded_program_runs_by_handle_and_an_unknown_handle_is_not_found(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    by_payload = start(examples.summarize, *specs)
    load = service_pb2.LoadProgramRequest(version=0, program=by_payload.start.program)
    by_handle, unknown = Req(), Req()
    with worker() as stub:
        handle = stub.LoadProgram(load).handle
        by_handle.start.version = unknown.start.version = 0
        by_handle.start.handle.CopyFrom(handle)
        unknown.start.handle.digest = bytes(32)
        requests = [by_handle, *upload(specs, [X, Y]), Req(end=True)]
        responses = list(stub.ExecuteSharded(iter(requests)))
        e = refused(stub, [unknown, Req(end=True)])
    assert responses[-1].WhichOneof("part") == "end"
    assert e.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("size", [1, 63, 4096, 3 << 20])
def test_a_shard_buffer_is_aligned_for_jax_to_take_it_without_a_copy(size):
    buffer = aligned_buffer(size)
    assert (buffer.nbytes, buffer.dtype, buffer.ctypes.data % ALIGNMENT) == (size, np.uint8, 0)
