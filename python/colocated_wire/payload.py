"""Top-level payload framing: bytes <-> message, and the Header check.

Every payload starts with a Header (field 1) naming the major version and
the payload kind. Reading refuses an absent header, another major version
and another kind before it looks at anything else. Writing always uses
`SerializeToString(deterministic=True)`: the Python runtime writes known
fields in field-number order and repeated scalars packed, which together
with the lowering's canonical choices gives canonical bytes.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION

KIND_NAMES = {
    payload_pb2.PAYLOAD_KIND_SPECS: "SpecsPayload",
    payload_pb2.PAYLOAD_KIND_PROGRAM: "ProgramPayload",
}


_CLASSES = {
    payload_pb2.PAYLOAD_KIND_SPECS: payload_pb2.SpecsPayload,
    payload_pb2.PAYLOAD_KIND_PROGRAM: payload_pb2.ProgramPayload,
}


def _parse(cls: type[Message], data) -> Message | None:
    msg = cls()
    try:
        msg.ParseFromString(bytes(data))
    except (ProtobufDecodeError, ValueError, RuntimeError):
        return None
    return msg


def header(kind: int) -> payload_pb2.Header:
    return payload_pb2.Header(
        major_version=SCHEMA_MAJOR_VERSION, minor_version=SCHEMA_MINOR_VERSION, kind=kind
    )


def to_bytes(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def parse_payload(data: bytes, cls: type[Message], kind: int, limits: DecodeLimits) -> Message:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"a payload is bytes, not {type(data).__name__}")
    if len(data) > limits.payload_bytes:
        raise DecodeError(
            "payload",
            "limit-exceeded",
            f"{len(data)} bytes exceed the limit of {limits.payload_bytes}",
        )
    msg = _parse(cls, data)
    if msg is None:
        # Another payload kind may fail to parse as this one (a string field
        # here is a message there). Say so, as a reader that does not check
        # UTF-8 (TypeScript) would, rather than call the bytes malformed.
        for other_kind, other in _CLASSES.items():
            if other_kind != kind:
                found = _parse(other, data)
                if found is not None and found.header.kind == other_kind:
                    msg = found
                    break
        if msg is None:
            raise DecodeError("payload", "malformed", f"the bytes are not a {cls.__name__}")
    if not msg.HasField("header"):
        raise DecodeError("header", "unsupported-version", "the payload has no header")
    if msg.header.major_version != SCHEMA_MAJOR_VERSION:
        raise DecodeError(
            "header.major_version",
            "unsupported-version",
            f"major version {msg.header.major_version}, this reader reads {SCHEMA_MAJOR_VERSION}",
        )
    if msg.header.kind != kind:
        got = KIND_NAMES.get(msg.header.kind, f"kind {msg.header.kind}")
        raise DecodeError(
            "header.kind", "wrong-payload-kind", f"the payload is a {got}, not {KIND_NAMES[kind]}"
        )
    return msg
