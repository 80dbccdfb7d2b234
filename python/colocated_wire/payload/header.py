"""The Header, read first: the wire scan, then the header, then the whole payload.

Every payload starts with a Header (field 1) naming the major version and
the payload kind. A reader first decodes the bytes as a `PayloadEnvelope`
(just the header) and refuses an absent header, another major version, a
minor version above an agreed maximum, and another kind, before it parses
the rest.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION
from colocated_wire.wire_scan import check_wire

KIND_NAMES = {
    payload_pb2.PAYLOAD_KIND_SPECS: "SpecsPayload",
    payload_pb2.PAYLOAD_KIND_PROGRAM: "ProgramPayload",
}


def header(kind: int, minor_version: int = SCHEMA_MINOR_VERSION) -> payload_pb2.Header:
    """The header this writer writes for a payload kind, of the minor version it targets."""
    return payload_pb2.Header(
        major_version=SCHEMA_MAJOR_VERSION, minor_version=minor_version, kind=kind
    )


def _parse(cls: type[Message], data: bytes) -> Message:
    msg = cls()
    try:
        msg.ParseFromString(data)
    except (ProtobufDecodeError, ValueError, RuntimeError) as e:
        raise DecodeError("payload", "malformed", f"not a valid {cls.__name__} ({e})") from e
    return msg


def check_header(h: payload_pb2.Header | None, kind: int, max_minor_version: int | None) -> None:
    """The header is there, of this major version, a minor version within reach, and `kind`."""
    if h is None:
        raise DecodeError("header", "unsupported-version", "no header: not a colocated.v1 payload")
    if h.major_version != SCHEMA_MAJOR_VERSION:
        raise DecodeError(
            "header.major_version",
            "unsupported-version",
            f"schema major version {h.major_version}; this reader reads {SCHEMA_MAJOR_VERSION}",
        )
    if max_minor_version is not None and h.minor_version > max_minor_version:
        raise DecodeError(
            "header.minor_version",
            "unsupported-version",
            f"minor version {h.minor_version} is newer than the agreed {max_minor_version}",
        )
    if h.kind != kind:
        got = KIND_NAMES.get(h.kind, f"kind {h.kind}")
        raise DecodeError(
            "header.kind", "wrong-payload-kind", f"the payload is a {got}, not {KIND_NAMES[kind]}"
        )


def parse_payload(
    data: bytes,
    cls: type[Message],
    kind: int,
    limits: DecodeLimits,
    max_minor_version: int | None = None,
) -> tuple[Message, int]:
    """The parsed payload, after the wire scan and the header check, and its count of unknown
    fields (fields of a newer minor version, which deserializing then remembers)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"a payload is bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) > limits.max_payload_bytes:
        raise DecodeError(
            "payload",
            "limit-exceeded",
            f"{len(data)} bytes exceed the limit of {limits.max_payload_bytes}",
        )
    # The wire scan comes first, so nothing is built of what the limits refuse. Most payloads
    # are good: they are scanned and parsed once, and their header read from the payload (its
    # field 1, as in the envelope). Bad bytes take the reader's order, envelope first, so they
    # fail with the very error they always did.
    try:
        unknown_fields = check_wire(data, cls.DESCRIPTOR, limits)
        msg = _parse(cls, data)
    except DecodeError:
        return _parse_in_order(data, cls, kind, limits, max_minor_version)
    # The envelope's scan counts the payload's other fields as unknown: past the limit, it fails.
    if len(cls.DESCRIPTOR.fields) - 1 + unknown_fields > limits.max_unknown_fields:
        return _parse_in_order(data, cls, kind, limits, max_minor_version)
    check_header(msg.header if msg.HasField("header") else None, kind, max_minor_version)
    return msg, unknown_fields


def _parse_in_order(
    data: bytes,
    cls: type[Message],
    kind: int,
    limits: DecodeLimits,
    max_minor_version: int | None,
) -> tuple[Message, int]:
    """The envelope's scan, its header's check, then the payload's scan and parse."""
    check_wire(data, payload_pb2.PayloadEnvelope.DESCRIPTOR, limits)
    envelope = _parse(payload_pb2.PayloadEnvelope, data)
    check_header(envelope.header if envelope.HasField("header") else None, kind, max_minor_version)
    unknown_fields = check_wire(data, cls.DESCRIPTOR, limits)
    return _parse(cls, data), unknown_fields
