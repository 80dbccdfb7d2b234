"""Execute and LoadProgram requests read from their bytes, without building the program.

The program's payload is kept as the bytes the client sent, so the worker
hashes them for its handle and decodes them once, instead of parsing the
request and serializing the program again to decode it. Input data are views
of the request's bytes, not copies. Only the top-level fields are walked;
the payload itself is judged by the decoder. The requests of the sharded
stream and of a session are read the same way, so that a chunk's data
reaches its shard's buffer with one copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from google.protobuf.message import DecodeError

from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2
from colocated_wire._gen.colocated.v1.service_pb2 import ExecuteStart, ShardIndex
from colocated_wire.worker.errors import Refused, invalid_argument

_VARINT, _FIXED64, _DELIMITED, _FIXED32 = 0, 1, 2, 5


def _numbers(message: type) -> dict[str, int]:
    """A message's field numbers by name, from the schema's descriptors."""
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


_EXECUTE = _numbers(service_pb2.ExecuteRequest)
_SHARDED = _numbers(service_pb2.ExecuteShardedRequest)
_CHUNK = _numbers(service_pb2.ShardChunk)
_SESSION = _numbers(service_pb2.SessionRequest)
_CALL = _numbers(service_pb2.SessionCall)
_HEADER = _numbers(payload_pb2.PayloadEnvelope)["header"]
_MINOR = _numbers(payload_pb2.Header)["minor_version"]
_DATA = _numbers(service_pb2.ArrayData)["data"]
_DIGEST = _numbers(service_pb2.ProgramHandle)["digest"]


@dataclasses.dataclass
class ExecuteCall:
    """An ExecuteRequest (or LoadProgramRequest): version, program bytes or handle, inputs."""

    size: int
    version: int = 0
    program: memoryview | None = None
    handle: bytes | None = None
    inputs: list[memoryview] = dataclasses.field(default_factory=list)


def read_message(kind: type) -> Any:
    """A deserializer of `kind` that gives bad bytes back as the Refused (INVALID_ARGUMENT)
    that answers them: gRPC deserializers must not raise (grpcio answers INTERNAL)."""

    def read(data: bytes) -> Any:
        try:
            return kind.FromString(data)
        except DecodeError as e:
            return invalid_argument(f"request: not a valid {kind.DESCRIPTOR.name} ({e})")

    return read


def read_request(data: bytes) -> ExecuteCall | Refused:
    """The call, or the Refused that answers it: gRPC deserializers must not raise."""
    try:
        return _read(memoryview(data))
    except ValueError as e:
        return invalid_argument(f"request: not a valid protobuf message ({e})")


def _read(data: memoryview) -> ExecuteCall:
    call = ExecuteCall(size=len(data))
    for number, value in _fields(data):
        if number == _EXECUTE["version"] and isinstance(value, int):
            call.version = value
        elif number == _EXECUTE["program"] and isinstance(value, memoryview):
            if call.program is not None:
                raise ValueError("program given twice")
            call.program = value
        elif number == _EXECUTE["inputs"] and isinstance(value, memoryview):
            call.inputs.append(_only_bytes(value, _DATA))
        elif number == _EXECUTE["handle"] and isinstance(value, memoryview):
            call.handle = bytes(_only_bytes(value, _DIGEST))
        elif number in _EXECUTE.values():
            raise ValueError(f"field {number} has the wrong wire type")
    return call


def header_minor_version(payload: bytes | memoryview) -> int:
    """A payload's header.minor_version, read without parsing the payload."""
    minor = 0
    for number, value in _fields(memoryview(payload)):
        if number == _HEADER and isinstance(value, memoryview):
            minor = next((v for n, v in _fields(value) if n == _MINOR and isinstance(v, int)), 0)
    return minor


def _only_bytes(message: memoryview, field: int) -> memoryview:
    """The bytes field `field` (`data` of ArrayData, `digest` of ProgramHandle); empty when
    absent."""
    found = message[:0]
    for number, value in _fields(message):
        if number == field and isinstance(value, memoryview):
            found = value
    return found


def _fields(data: memoryview) -> Iterator[tuple[int, int | memoryview | None]]:
    """(field number, value): a varint's int, a length-delimited slice, None for fixed widths."""
    at, end = 0, len(data)
    while at < end:
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == _VARINT:
            value, at = _varint(data, at)
            yield number, value
        elif wire == _DELIMITED:
            size, at = _varint(data, at)
            if at + size > end:
                raise ValueError(f"field {number} runs past the end")
            yield number, data[at : at + size]
            at += size
        elif wire in (_FIXED64, _FIXED32):
            at += 8 if wire == _FIXED64 else 4
            if at > end:
                raise ValueError(f"field {number} runs past the end")
            yield number, None
        else:
            raise ValueError(f"field {number} has wire type {wire}")


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint is cut short")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


@dataclasses.dataclass
class ChunkView:
    """A ShardChunk read from its bytes: `data` is a view of the request, not a copy."""

    leaf: int = 0
    # The shard's index (start, stop) when the chunk names it (the shard's first chunk).
    index: tuple[list[int], list[int]] | None = None
    offset: int = 0
    data: memoryview = memoryview(b"")
    last: bool = False


@dataclasses.dataclass
class ShardedRequest:
    """An ExecuteShardedRequest: which part it carries ("start", "chunk", "end"), and it.

    A request that is no protobuf message has part "invalid" and says why in `problem`.
    """

    part: str | None = None
    start: Any = None
    chunk: ChunkView | None = None
    problem: str = ""


def read_sharded_request(data: bytes) -> ShardedRequest:
    """A request of the sharded stream; its chunk's data stays in the request's bytes."""
    try:
        return _read_sharded(memoryview(data))
    except (ValueError, DecodeError) as e:
        return ShardedRequest(part="invalid", problem=f"not a valid protobuf message ({e})")


def _read_sharded(data: memoryview) -> ShardedRequest:
    request = ShardedRequest()
    for number, value in _fields(data):
        if number == _SHARDED["start"] and isinstance(value, memoryview):
            request.part, request.chunk = "start", None
            request.start = ExecuteStart.FromString(value)
        elif number == _SHARDED["chunk"] and isinstance(value, memoryview):
            request.part, request.start = "chunk", None
            request.chunk = _read_chunk(value)
        elif number == _SHARDED["end"] and isinstance(value, int):
            request.part, request.start, request.chunk = "end", None, None  # `end: false` too
        elif number in _SHARDED.values():
            raise ValueError(f"field {number} has the wrong wire type")
    return request


def _read_chunk(data: memoryview) -> ChunkView:
    chunk = ChunkView()
    for number, value in _fields(data):
        if number == _CHUNK["leaf"] and isinstance(value, int):
            chunk.leaf = value & 0xFFFFFFFF
        elif number == _CHUNK["index"] and isinstance(value, memoryview):
            index = ShardIndex.FromString(value)
            start, stop = chunk.index or ([], [])
            chunk.index = (start + list(index.start), stop + list(index.stop))
        elif number == _CHUNK["offset"] and isinstance(value, int):
            chunk.offset = value
        elif number == _CHUNK["data"] and isinstance(value, memoryview):
            chunk.data = value
        elif number == _CHUNK["last"] and isinstance(value, int):
            chunk.last = value != 0
        elif number in _CHUNK.values():
            raise ValueError(f"field {number} has the wrong wire type")
    return chunk


@dataclasses.dataclass
class SessionCallView:
    """A SessionCall read from its bytes: its input chunks' data are views of the request."""

    id: int = 0
    start: Any = None
    inputs: list[ChunkView] = dataclasses.field(default_factory=list)
    timeout_ms: int = 0
    job_call_id: str = ""
    # The inputs' data bytes in all.
    input_bytes: int = 0


@dataclasses.dataclass
class SessionRequestView:
    """A SessionRequest: which part it carries ("call" or "cancel"), and it.

    A request that is no protobuf message has part "invalid", says why in `problem`, and
    has in `call_id` the id of its call when that much could be read.
    """

    part: str | None = None
    call: SessionCallView | None = None
    cancel: int = 0
    problem: str = ""
    call_id: int | None = None


def read_session_request(data: bytes) -> SessionRequestView:
    """A request of a session; its chunks' data stay in the request's bytes."""
    view = memoryview(data)
    try:
        return _read_session(view)
    except (ValueError, DecodeError) as e:
        problem = f"not a valid protobuf message ({e})"
        return SessionRequestView(part="invalid", problem=problem, call_id=_call_id_of(view))


def _read_session(data: memoryview) -> SessionRequestView:
    request = SessionRequestView()
    for number, value in _fields(data):
        if number == _SESSION["call"] and isinstance(value, memoryview):
            request.part, request.cancel = "call", 0
            request.call = _read_call(value)
        elif number == _SESSION["cancel"] and isinstance(value, int):
            request.part, request.call, request.cancel = "cancel", None, value
        elif number in _SESSION.values():
            raise ValueError(f"field {number} has the wrong wire type")
    return request


def _read_call(data: memoryview) -> SessionCallView:
    call = SessionCallView()
    for number, value in _fields(data):
        if number == _CALL["id"] and isinstance(value, int):
            call.id = value
        elif number == _CALL["start"] and isinstance(value, memoryview):
            call.start = ExecuteStart.FromString(value)
        elif number == _CALL["inputs"] and isinstance(value, memoryview):
            chunk = _read_chunk(value)
            call.inputs.append(chunk)
            call.input_bytes += len(chunk.data)
        elif number == _CALL["timeout_ms"] and isinstance(value, int):
            call.timeout_ms = value
        elif number == _CALL["job_call_id"] and isinstance(value, memoryview):
            call.job_call_id = str(value, "utf-8")
        elif number in _CALL.values():
            raise ValueError(f"field {number} has the wrong wire type")
    return call


def _call_id_of(data: memoryview) -> int | None:
    """The id of the call a request that is not a valid message carries, if it can be read:
    its call's `id` before the fault."""
    found = None
    try:
        for number, value in _fields(data):
            if number == _SESSION["call"] and isinstance(value, memoryview):
                for inner, id_ in _fields(value):
                    if inner == _CALL["id"] and isinstance(id_, int):
                        found = id_
    except ValueError:
        pass
    return found
