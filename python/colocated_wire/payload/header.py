"""The Header, read first: the wire scan, then the header, then the whole payload.

Every payload starts with a Header (field 1) naming the major version and
the payload kind. A reader first decodes the bytes as a `PayloadEnvelope`
(just the header) and refuses an absent header, another major version, a
kind newer than the header's minor version or the agreed maximum (a value
payload needs 1.2), a minor version above the agreed maximum, and another
kind, before it parses the rest.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits
from colocated_wire.payload import writer
from colocated_wire.schema_version import enum_since, require_version, version_name
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION
from colocated_wire.wire_scan import scan_wire

KIND_NAMES = {
    payload_pb2.PAYLOAD_KIND_SPECS: "SpecsPayload",
    payload_pb2.PAYLOAD_KIND_PROGRAM: "ProgramPayload",
    payload_pb2.PAYLOAD_KIND_VALUE: "ValuePayload",
}
# The minor version that introduced each payload kind (a value payload: 1.2).
KIND_SINCE = enum_since(payload_pb2.PayloadKind.DESCRIPTOR)


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


def payload_kind(data: bytes, limits: DecodeLimits) -> int | None:
    """The kind a payload's header names, to choose its reader; None when it cannot be read
    (the reader chosen then says why). Read from the header alone when it comes first, as
    every writer puts it, else from the envelope."""
    if not isinstance(data, bytes | bytearray | memoryview) or len(data) > limits.max_payload_bytes:
        return None
    data = bytes(data)
    size = data[1] if len(data) > 1 and data[0] == 0x0A else 0x80  # field 1, one-byte length
    try:
        if size < 0x80 and 2 + size <= len(data):
            return _parse(payload_pb2.Header, data[2 : 2 + size]).kind
        scan_wire(data, payload_pb2.PayloadEnvelope.DESCRIPTOR, limits)
        envelope = _parse(payload_pb2.PayloadEnvelope, data)
    except DecodeError:
        return None
    return envelope.header.kind if envelope.HasField("header") else None


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
    # A kind newer than the version at hand is named with the version it needs.
    since = KIND_SINCE.get(h.kind, 0)
    what = f"a {_kind_word(h.kind)} payload"
    require_version("header.kind", what, since, h.minor_version)
    if max_minor_version is not None and since > max_minor_version:
        detail = f"{what} needs {version_name(since)}; the agreed version is 1.{max_minor_version}"
        raise DecodeError("header.kind", "unsupported-version", detail)
    if max_minor_version is not None and h.minor_version > max_minor_version:
        raise DecodeError(
            "header.minor_version",
            "unsupported-version",
            f"minor version {h.minor_version} is newer than the agreed {max_minor_version}",
        )
    writer.check(h)
    if h.kind != kind:
        got = KIND_NAMES.get(h.kind, f"kind {h.kind}")
        raise DecodeError(
            "header.kind", "wrong-payload-kind", f"the payload is a {got}, not {KIND_NAMES[kind]}"
        )


def _kind_word(kind: int) -> str:
    """A payload kind as errors name it: PAYLOAD_KIND_VALUE is "value"."""
    name = payload_pb2.PayloadKind.Name(kind) if kind in KIND_SINCE else f"KIND_{kind}"
    return name.removeprefix("PAYLOAD_KIND_").lower()


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
        unknown_fields = scan_wire(data, cls.DESCRIPTOR, limits)
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
    scan_wire(data, payload_pb2.PayloadEnvelope.DESCRIPTOR, limits)
    envelope = _parse(payload_pb2.PayloadEnvelope, data)
    check_header(envelope.header if envelope.HasField("header") else None, kind, max_minor_version)
    unknown_fields = scan_wire(data, cls.DESCRIPTOR, limits)
    return _parse(cls, data), unknown_fields
