"""Which minor version of colocated.v1 introduced a construct, read from the schema.

proto/colocated/v1/version.proto declares the `since` option of enum values
and the `field_since` option of fields; a construct without it is from 1.0.
An encoder writes a construct only when the minor version it targets is at
least its `since`; a decoder refuses one whose `since` is above the payload
header's minor version. src/schema-version.ts reads the same options.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, EnumDescriptor

from colocated_wire._gen.colocated.v1 import version_pb2
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION


def enum_since(enum: EnumDescriptor) -> dict[int, int]:
    """The minor version that introduced each value of an enum, by number."""
    return {v.number: v.GetOptions().Extensions[version_pb2.since] for v in enum.values}


def field_since(message: Descriptor, field: str) -> int:
    """The minor version that introduced a field of a message."""
    return message.fields_by_name[field].GetOptions().Extensions[version_pb2.field_since]


def version_name(minor: int) -> str:
    """The version a construct needs, as errors name it: colocated.v1.1 for minor version 1."""
    return f"colocated.v{SCHEMA_MAJOR_VERSION}.{minor}"


def refuse_newer(path: str, what: str, needs: int, target: int) -> None:
    """Refuses to write a construct of a newer minor version than the encoder targets."""
    if needs > target:
        raise EncodeError(f"{what} needs {version_name(needs)}; the target is 1.{target}", path)


def require_version(path: str, what: str, needs: int, header: int) -> None:
    """Refuses a construct of a newer minor version than the payload's header says."""
    if needs > header:
        detail = f"{what} needs {version_name(needs)}; the header says 1.{header}"
        raise DecodeError(path, "unsupported-version", detail)


def newer_value(path: str, what: str, header: int) -> DecodeError | None:
    """An enum value this decoder does not know, in a payload of a newer minor version than it
    reads: the value is that version's, so the error names it."""
    if header <= SCHEMA_MINOR_VERSION:
        return None
    detail = f"{what} needs {version_name(header)} (this decoder reads 1.{SCHEMA_MINOR_VERSION})"
    return DecodeError(path, "unsupported-version", detail)


def check_target(target: int | None) -> int:
    """The minor version an encoder writes: `target`, or the latest when None."""
    if target is None:
        return SCHEMA_MINOR_VERSION
    latest = SCHEMA_MINOR_VERSION
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target <= latest:
        detail = f"target minor version {target}: this encoder writes 1.0 to 1.{latest}"
        raise EncodeError(detail, "header.minor_version")
    return target


def header_minor_version(target_minor_version: int | None, carried: int) -> int:
    """The header's minor version: the target. A decoded payload of a newer minor version,
    carried through with its unknown fields, keeps its version when no target is given; an
    older target cannot be promised what it holds (its reader refuses the newer header)."""
    target = check_target(target_minor_version)
    if carried <= target:
        return target
    if target_minor_version is None:
        return carried
    detail = f"carries fields of {version_name(carried)}; the target is 1.{target}"
    raise EncodeError(detail, "header.minor_version")
