"""ExecuteResponse written as its bytes, the counterpart of worker_requests.py.

A small call's answer is a few hundred bytes, and building it as a message
(parsing the SpecsPayload bytes into it, adding the outputs, serializing it
all again) cost more than writing the two fields by hand. The SpecsPayload
goes out as the bytes the writer made, and each output from its buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# ExecuteResponse: output_specs = 1, outputs = 2 (ArrayData, whose data = 1); length-delimited.
_SPECS_TAG = b"\x0a"
_OUTPUT_TAG = b"\x12"
_DATA_TAG = b"\x0a"


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


# ExecuteShardedResponse: output_specs = 1, chunk = 2 (a ShardChunk), end = 3.
SHARDED_END = b"\x18\x01"


def sharded_specs(specs: bytes) -> bytes:
    """The ExecuteShardedResponse that carries the outputs' SpecsPayload."""
    return b"".join((b"\x0a", varint(len(specs)), specs))


def sharded_chunk(
    leaf: int, index: Sequence[tuple[int, int]] | None, offset: int, data: Any, last: bool
) -> bytes:
    """The ExecuteShardedResponse of one ShardChunk, its data copied once (into the answer)."""
    head = []
    if leaf:
        head += (b"\x08", varint(leaf))
    if index is not None:  # ShardIndex: start = 1, stop = 2, packed
        start = b"".join(varint(a) for a, _ in index)
        stop = b"".join(varint(b) for _, b in index)
        packed = b"".join(
            (b"\x0a", varint(len(start)), start, b"\x12", varint(len(stop)), stop) if index else ()
        )
        head += (b"\x12", varint(len(packed)), packed)
    if offset:
        head += (b"\x18", varint(offset))
    size = memoryview(data).nbytes
    tail = b"\x28\x01" if last else b""
    if size:
        head += (b"\x22", varint(size))
    message = sum(len(h) for h in head) + size + len(tail)
    return b"".join((b"\x12", varint(message), *head, data if size else b"", tail))
