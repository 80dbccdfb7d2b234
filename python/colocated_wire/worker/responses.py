"""ExecuteResponse written as its bytes, the counterpart of worker/requests.py.

A small call's answer is a few hundred bytes, and building it as a message
(parsing the SpecsPayload bytes into it, adding the outputs, serializing it
all again) cost more than writing the two fields by hand. The SpecsPayload
goes out as the bytes the writer made, and each output from its buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from colocated_wire._gen.colocated.v1 import service_pb2


def _tag(message: type, field: str) -> bytes:
    """A field's tag (its number and wire type, as one varint), from the schema's descriptors.
    Messages, bytes and packed repeated scalars are length-delimited; the rest varints."""
    desc = message.DESCRIPTOR.fields_by_name[field]
    delimited = desc.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_BYTES)
    delimited |= desc.is_packed
    return varint(desc.number << 3 | (2 if delimited else 0))


def execute_response(specs: bytes, outputs: Sequence[Any]) -> bytes:
    """The ExecuteResponse of this SpecsPayload and these output buffers (bytes-like)."""
    parts = [_SPECS_TAG, varint(len(specs)), specs]
    for data in outputs:
        size = memoryview(data).nbytes
        if size:
            inner = varint(size)
            parts += (_OUTPUT_TAG, varint(1 + len(inner) + size), _DATA_TAG, inner, data)
        else:  # an empty `data` is not written, as protobuf writes an ArrayData of no bytes
            parts += (_OUTPUT_TAG, b"\x00")
    return b"".join(parts)


def varint(value: int) -> bytes:
    """`value` (non-negative) as a protobuf varint."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def sharded_specs(specs: bytes) -> bytes:
    """The ExecuteShardedResponse that carries the outputs' SpecsPayload."""
    return b"".join((_SHARDED_SPECS_TAG, varint(len(specs)), specs))


def sharded_chunk(
    leaf: int, index: Sequence[tuple[int, int]] | None, offset: int, data: Any, last: bool
) -> bytes:
    """The ExecuteShardedResponse of one ShardChunk, its data copied once (into the answer)."""
    head = []
    if leaf:
        head += (_LEAF_TAG, varint(leaf))
    if index is not None:  # packed start and stop, left out when empty
        start = b"".join(varint(a) for a, _ in index)
        stop = b"".join(varint(b) for _, b in index)
        packed = b"".join(
            (_START_TAG, varint(len(start)), start, _STOP_TAG, varint(len(stop)), stop)
            if index
            else ()
        )
        head += (_INDEX_TAG, varint(len(packed)), packed)
    if offset:
        head += (_OFFSET_TAG, varint(offset))
    size = memoryview(data).nbytes
    tail = _LAST_TAG + b"\x01" if last else b""
    if size:
        head += (_DATA_OF_CHUNK_TAG, varint(size))
    message = sum(len(h) for h in head) + size + len(tail)
    return b"".join((_CHUNK_TAG, varint(message), *head, data if size else b"", tail))


_SPECS_TAG = _tag(service_pb2.ExecuteResponse, "output_specs")
_OUTPUT_TAG = _tag(service_pb2.ExecuteResponse, "outputs")
_DATA_TAG = _tag(service_pb2.ArrayData, "data")
_SHARDED_SPECS_TAG = _tag(service_pb2.ExecuteShardedResponse, "output_specs")
_CHUNK_TAG = _tag(service_pb2.ExecuteShardedResponse, "chunk")
_LEAF_TAG = _tag(service_pb2.ShardChunk, "leaf")
_INDEX_TAG = _tag(service_pb2.ShardChunk, "index")
_OFFSET_TAG = _tag(service_pb2.ShardChunk, "offset")
_DATA_OF_CHUNK_TAG = _tag(service_pb2.ShardChunk, "data")
_LAST_TAG = _tag(service_pb2.ShardChunk, "last")
_START_TAG = _tag(service_pb2.ShardIndex, "start")
_STOP_TAG = _tag(service_pb2.ShardIndex, "stop")
SHARDED_END = _tag(service_pb2.ExecuteShardedResponse, "end") + b"\x01"
