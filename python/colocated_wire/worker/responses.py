"""ExecuteResponse (and the sharded and session answers) written as bytes, the counterpart
of worker/requests.py.

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
    Messages, strings, bytes and packed repeated scalars are length-delimited; the rest
    varints."""
    desc = message.DESCRIPTOR.fields_by_name[field]
    delimited = desc.type in (
        FieldDescriptor.TYPE_MESSAGE,
        FieldDescriptor.TYPE_STRING,
        FieldDescriptor.TYPE_BYTES,
    )
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
    return b"".join(_delimited(_CHUNK_TAG, _chunk(leaf, index, offset, data, last)))


# One output chunk of a session's answer: (leaf, index or None, offset, data, last).
OutputChunk = tuple[int, Sequence[tuple[int, int]] | None, int, Any, bool]


def session_answer(
    call_id: int,
    specs: bytes | None,
    chunks: Sequence[OutputChunk],
    end: bool,
    specs_as_before: bool = False,
) -> bytes:
    """The SessionResponse of one part of a call's answer: the outputs' SpecsPayload (in the
    first part; or `output_specs_as_before` when they are the bytes the session last sent),
    these output chunks, and `end` on the last; each chunk's data copied once."""
    parts = [_SESSION_ID_TAG, varint(call_id)] if call_id else []
    if specs_as_before:
        parts.append(_SESSION_SPECS_AS_BEFORE)
    elif specs is not None:
        parts += (_SESSION_SPECS_TAG, varint(len(specs)), specs)
    for chunk in chunks:
        parts += _delimited(_SESSION_OUTPUT_TAG, _chunk(*chunk))
    if end:
        parts.append(_SESSION_END)
    return b"".join(parts)


def session_status(call_id: int, code: int, message: str) -> bytes:
    """The SessionResponse that ends a call with this status (a gRPC code and its message)."""
    text = message.encode("utf-8", "replace")
    inner = [_STATUS_CODE_TAG, varint(code)] if code else []
    if text:
        inner += (_STATUS_MESSAGE_TAG, varint(len(text)), text)
    parts = [_SESSION_ID_TAG, varint(call_id)] if call_id else []
    parts += _delimited(_SESSION_STATUS_TAG, inner)
    return b"".join(parts)


def _chunk(
    leaf: int, index: Sequence[tuple[int, int]] | None, offset: int, data: Any, last: bool
) -> list:
    """A ShardChunk's bytes as pieces to join: its data as it is, not yet copied."""
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
    if size:
        head += (_DATA_OF_CHUNK_TAG, varint(size), data)
    if last:
        head += (_LAST_TAG, b"\x01")
    return head


def _delimited(tag: bytes, pieces: list) -> list:
    """A length-delimited field of these pieces: its tag, their size, them."""
    return [tag, varint(sum(memoryview(p).nbytes for p in pieces)), *pieces]


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
_SESSION_ID_TAG = _tag(service_pb2.SessionResponse, "id")
_SESSION_SPECS_TAG = _tag(service_pb2.SessionResponse, "output_specs")
_SESSION_OUTPUT_TAG = _tag(service_pb2.SessionResponse, "outputs")
_SESSION_STATUS_TAG = _tag(service_pb2.SessionResponse, "status")
_SESSION_END = _tag(service_pb2.SessionResponse, "end") + b"\x01"
_SESSION_SPECS_AS_BEFORE = _tag(service_pb2.SessionResponse, "output_specs_as_before") + b"\x01"
_STATUS_CODE_TAG = _tag(service_pb2.CallStatus, "code")
_STATUS_MESSAGE_TAG = _tag(service_pb2.CallStatus, "message")
