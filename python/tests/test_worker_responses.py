"""Responses written by hand (Execute, ExecuteSharded): the bytes protobuf writes."""

import numpy as np
import pytest

from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2
from colocated_wire.worker.responses import (
    SHARDED_END,
    execute_response,
    sharded_chunk,
    sharded_specs,
    varint,
)

SIZES = [[], [0], [1, 127, 128], [300, 0, 16384], [70000]]


@pytest.mark.parametrize("sizes", SIZES)
def test_the_bytes_are_protobufs(sizes):
    specs = payload_pb2.SpecsPayload(header=payload_pb2.Header(minor_version=1))
    specs_bytes = specs.SerializeToString()
    data = [np.arange(n, dtype=np.uint8).tobytes() for n in sizes]
    want = service_pb2.ExecuteResponse(output_specs=specs)
    want.outputs.extend(service_pb2.ArrayData(data=d) for d in data)
    views = [memoryview(np.frombuffer(d, np.uint8)) for d in data]
    assert execute_response(specs_bytes, views) == want.SerializeToString()


def test_empty_specs_are_still_present():
    got = service_pb2.ExecuteResponse.FromString(execute_response(b"", [b"\x01"]))
    assert got.HasField("output_specs")
    assert [o.data for o in got.outputs] == [b"\x01"]


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**21, 2**35, 2**64 - 1])
def test_varint(value):
    # ShardChunk.offset is a uint64, field 3.
    assert service_pb2.ShardChunk.FromString(b"\x18" + varint(value)).offset == value
    written = service_pb2.ShardChunk(offset=value).SerializeToString()  # 0 is not written
    assert varint(value) == (written[1:] if value else b"\x00")


INDEXES = [None, (), ((0, 4), (2, 300))]


@pytest.mark.parametrize("leaf", [0, 3, 200])
@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("offset", [0, 1 << 20])
@pytest.mark.parametrize("size", [0, 5, 200])
@pytest.mark.parametrize("last", [False, True])
def test_sharded_chunks_are_protobufs(leaf, index, offset, size, last):
    data = np.arange(size, dtype=np.uint8)
    chunk = service_pb2.ShardChunk(leaf=leaf, offset=offset, data=data.tobytes(), last=last)
    if index is not None:
        chunk.index.start.extend(a for a, _ in index)
        chunk.index.stop.extend(b for _, b in index)
        chunk.index.SetInParent()
    want = service_pb2.ExecuteShardedResponse(chunk=chunk).SerializeToString()
    assert sharded_chunk(leaf, index, offset, memoryview(data), last) == want


def test_sharded_specs_and_end_are_protobufs():
    specs = payload_pb2.SpecsPayload(header=payload_pb2.Header(minor_version=1))
    want = service_pb2.ExecuteShardedResponse(output_specs=specs).SerializeToString()
    assert sharded_specs(specs.SerializeToString()) == want
    assert SHARDED_END == service_pb2.ExecuteShardedResponse(end=True).SerializeToString()
